"""Refusals that must come before the charge:
a formula whose design is singular over the whole declared domain, and a
binary response whose numeric levels are not 0/1, through every mechanism
that reads the design; a clear DPModelsError naming the term or variable,
nothing charged, no noise drawn."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

import dpmodels as dpm
from dpmodels.core.errors import DomainError, DPModelsError

BOUNDS = {"y": (0.0, 10.0), "x": (0.0, 10.0), "z": (0.0, 10.0)}


@pytest.fixture(scope="module")
def frame() -> pd.DataFrame:
    rng = np.random.default_rng(5)
    n = 3_000
    return pd.DataFrame({"y": rng.uniform(0, 10, n), "x": rng.uniform(0, 10, n),
                         "z": rng.uniform(0, 10, n), "y02": 2 * rng.integers(0, 2, n),
                         "yab": rng.choice(["a", "b"], n), "ytf": rng.random(n) < 0.4,
                         "yc": rng.integers(0, 3, n)})


SINGULAR = [
    ("ols", "sample-aggregate", "y ~ x + I(0*x)", r"I\(0 \* x\).*zero"),
    ("ols", "moments", "y ~ x + z + I(0*x)", r"I\(0 \* x\)"),
    ("ols", "sample-aggregate", "y ~ x + I(2*x)", r"linear combinations"),
    ("logit", "newton", "ytf ~ x + z + I(x + z)", r"linear combinations"),
    ("quantreg", "newton", "y ~ x + z + I(0*z)", r"I\(0 \* z\)"),
    ("logit", "sample-aggregate", "ytf ~ x + I(3*x)", r"linear combinations"),
]


def _factory(family):
    return {"ols": dpm.dp_ols, "logit": dpm.dp_logit, "quantreg": dpm.dp_quantreg,
            "mnlogit": dpm.dp_mnlogit}[family]


@pytest.mark.parametrize("family, method, formula, match", SINGULAR)
def test_a_singular_design_is_refused_before_the_charge(frame, family, method, formula, match):
    acct = dpm.Accountant(5.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(DPModelsError, match=match):
            _factory(family)(formula, frame, epsilon=1.0, bounds=BOUNDS, method=method,
                             accountant=acct, random_state=1)
    assert acct.spent == 0 and acct.ledger == ()


@pytest.mark.parametrize("method", ["sample-aggregate", "newton", "histogram"])
def test_numeric_response_levels_other_than_0_1_are_refused_clearly(frame, method):
    acct = dpm.Accountant(5.0)
    with pytest.raises(DomainError, match=r"'y02'.*\[0, 2\].*0/1"):
        dpm.dp_logit("y02 ~ x + z", frame, epsilon=1.0, bounds=BOUNDS, levels={"y02": [0, 2]},
                     method=method, accountant=acct, random_state=1)
    assert acct.spent == 0


@pytest.mark.parametrize("response, levels", [("yab", ["a", "b"]), ("ytf", [False, True])])
def test_non_numeric_binary_responses_code_the_last_level_one(frame, response, levels):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = dpm.dp_logit(f"{response} ~ x", frame, epsilon=1e3, bounds=BOUNDS,
                           levels={response: levels}, method="sample-aggregate",
                           param_bounds=(-10, 10), random_state=1).fit()
    assert np.all(np.isfinite(res.params))


def test_mnlogit_sample_aggregate_with_string_levels(frame):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        df = frame.assign(ys=frame.yc.map({0: "lo", 1: "mid", 2: "hi"}))
        res = dpm.dp_mnlogit("ys ~ x", df, epsilon=1e3, bounds=BOUNDS,
                             levels={"ys": ["lo", "mid", "hi"]}, method="sample-aggregate",
                             param_bounds=(-10, 10), random_state=1).fit()
    assert np.all(np.isfinite(np.asarray(res.params)))


def test_mnlogit_sample_aggregate_conf_int_is_statsmodels_shaped(frame):
    """issue 26 (found by the real-data benchmark): dp_mnlogit's sample-and-aggregate
    conf_int was a 3-D array; it is the histogram route's (and statsmodels') frame:
    rows (response level, coefficient), columns lower / upper."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        kw = dict(epsilon=1.0, bounds=BOUNDS, levels={"yc": [0, 1, 2]}, random_state=1)
        sa = dpm.dp_mnlogit("yc ~ x", frame, method="sample-aggregate",
                            param_bounds=(-10, 10), **kw).fit()
        hist = dpm.dp_mnlogit("yc ~ x", frame, **kw).fit(n_boot=20)
    ci, ref = sa.conf_int(), hist.conf_int()
    assert isinstance(ci, pd.DataFrame)
    assert list(ci.columns) == list(ref.columns) and list(ci.index) == list(ref.index)
    assert ci.index.names == ref.index.names
    assert np.all(ci["lower"] <= ci["upper"])
    # the interval of each coefficient is centred on its estimate (params: exog x equation)
    centre = (ci["lower"] + ci["upper"]).to_numpy() / 2
    assert np.allclose(centre, np.asarray(sa.params, float).T.ravel())
