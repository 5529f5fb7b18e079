"""Sample-and-aggregate when blocks cannot be fitted.

A block whose fit fails takes the range's centre.  On fair's logit (18
coefficients, default blocks of about 180 rows) 94-100% of the blocks failed:
the released mean was the centre (about 0) plus noise, the blocks' spread
(mostly centres) was small, and at 10x the data's size the intervals excluded
every true coefficient (benchmarks/real_validity.py: 0% coverage at epsilon 3).
The number of failed blocks is now released with the mean; the fitted blocks'
mean is recovered from it, and a release with most blocks failed carries no
information."""

from __future__ import annotations

import importlib.util
import math
import warnings
from pathlib import Path

import numpy as np
import pytest
import pandas as pd

import dpmodels as dpm
from dpmodels.mechanisms import sample_aggregate as sa
from dpmodels.core.errors import ReleaseWarning


def _rare_level_frame(n: int = 6000) -> pd.DataFrame:
    rng = np.random.default_rng(0)
    df = pd.DataFrame({"x": rng.uniform(0, 1, n), "g": np.where(rng.random(n) < 0.03, "r", "c")})
    df["y"] = 1 + 2 * df.x + 3 * (df.g == "r") + rng.normal(0, 0.5, n)
    return df


KW = dict(family="ols", formula="y ~ x + C(g)", bounds={"x": (0, 1), "y": (-5, 10)},
          levels={"g": ["c", "r"]}, blocks=100, param_bounds=(-10, 10), namespace={})


def test_the_fitted_blocks_mean_is_recovered_from_the_released_failures():
    """A 3% level is absent from about a fifth of 100 blocks of 60 rows (their
    fits fail).  The exact (epsilon=inf) release averages the fitted blocks;
    at epsilon 1000, with the same partition, the private estimate equals it
    within 5 noise SDs, where the old mean (failed blocks at the range's centre
    0) is off by the failed share times the estimate."""
    df = _rare_level_frame()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        exact = sa.release_sample_aggregate(df, epsilon=math.inf, random_state=1, **KW)
        rel = sa.release_sample_aggregate(df, epsilon=1000.0, random_state=1, **KW)
    assert 0.1 < exact.failed_share < 0.4 and not rel.no_information
    assert abs(rel.failed_share - exact.failed_share) < 0.02
    tol = 5 * math.sqrt(2) * rel.noise_scale  # working = coefficients under param_bounds
    assert np.all(np.abs(rel.params - exact.params) <= tol)
    uncorrected = (1 - exact.failed_share) * exact.params  # the centre is 0
    assert np.all(np.abs(uncorrected - exact.params)[1:] > 10 * tol[1:])


def _fair_case():
    path = Path(__file__).resolve().parents[3] / "benchmarks" / "real_validity.py"
    spec = importlib.util.spec_from_file_location("real_validity_cases", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.CASES["fair_logit"]


@pytest.mark.parametrize("eps", [1.0, 3.0])
def test_a_release_whose_blocks_mostly_fail_carries_no_information(eps):
    """fair's logit with the default blocks: every coefficient unbounded, p = 1,
    and a warning that says why and what to do (before: finite intervals about
    a mean of failed blocks' centres; at epsilon 1, ``C(religious)[T.4] =
    +39.8, p = 0.013`` against the non-private -1.245)."""
    case = _fair_case()
    df = case["loader"]()
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        res = dpm.dp_logit(case["formula"], df, epsilon=eps, bounds=case["bounds"],
                           levels=case["levels"], method="sample-aggregate",
                           random_state=0).fit()
    rel = res.release
    assert rel.no_information and rel.failed_share > sa.MAX_FAILED_BLOCKS
    ci = np.asarray(res.conf_int(), float)
    assert np.all(~np.isfinite(ci)) and np.all(np.asarray(res.bse) == np.inf)
    assert np.all(np.asarray(res.pvalues) == 1.0)
    msg = [str(w.message) for w in rec if issubclass(w.category, ReleaseWarning)
           and "could not be fitted" in str(w.message)]
    assert len(msg) == 1 and "no information about any coefficient" in msg[0]
    assert all(name in msg[0] for name in res.params.index)  # each one named
    assert "fewer, larger blocks" in msg[0]
    assert "could not be fitted" in " ".join(res.summary().as_text().split())


def test_the_multinomial_no_information_warning_names_coefficients_as_the_others_do():
    """``x (y=1)``, as every other multinomial warning names a coefficient (it
    said ``x[1]``, which no summary shows)."""
    rng = np.random.default_rng(3)
    n = 600
    df = pd.DataFrame({"x": rng.uniform(0, 1, n), "y": rng.choice([0, 1, 2], n)})
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        dpm.dp_mnlogit("y ~ x", df, epsilon=0.5, bounds={"x": (0, 1)},
                       levels={"y": [0, 1, 2]}, method="sample-aggregate", random_state=1)
    said = [str(w.message) for w in caught if issubclass(w.category, ReleaseWarning)
            and "no information about any coefficient" in str(w.message)]
    assert said, "expected the no-information warning at this epsilon and n"
    for name in ("Intercept (y=1)", "x (y=1)", "Intercept (y=2)", "x (y=2)"):
        assert name in said[0]
    assert "x[1]" not in said[0]
