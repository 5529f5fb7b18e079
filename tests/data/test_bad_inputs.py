"""A corpus of bad inputs: every one is refused with a dpmodels error naming
the argument or variable, before the accountant is charged, before any row
is counted and before any noise is drawn, and the caller's data is left as
it was.  Each case runs through ``dpmodels.mechanisms.histogram`` and the four dp_*
functions where it applies; no numpy, pandas or patsy exception may escape.
"""

from __future__ import annotations

import importlib
import re
import warnings

import numpy as np
import pandas as pd
import patsy  # noqa: F401  (the formula "y ~ patsy.center(x)" resolves it)
import pytest

import dpmodels as dpm
from dpmodels.core.errors import DPModelsError, DPModelsTypeError, ReleaseWarning
from tests.support.bad_inputs import (
    BOUNDS,
    CASES,
    FRAME,
    LEVELS,
    RESPONSE,
    Case,
)

release_module = importlib.import_module("dpmodels.mechanisms.histogram")


@pytest.fixture
def guard(monkeypatch):
    """Fail the test if a row is counted or a noise entry point is called."""
    calls = []

    def refuse(name):
        def fn(*args, **kwargs):
            calls.append(name)
            raise AssertionError(f"{name} was called before the bad input was refused")
        return fn

    for name in ("count_cells", "noisy_threshold_sparse", "noisy_signed_dense"):
        monkeypatch.setattr(release_module, name, refuse(name))
    return calls


def _call(entry: str, case: Case, data, kw: dict):
    formula = case.formula
    if isinstance(formula, str):
        formula = formula.format(resp=RESPONSE[entry])
    if entry == "release":
        if formula is not None:
            kw = dict(kw, formula=formula)
        return dpm.release(data, **kw)
    factory = {"ols": dpm.dp_ols, "logit": dpm.dp_logit, "quantreg": dpm.dp_quantreg,
               "mnlogit": dpm.dp_mnlogit}[entry]
    return factory(formula, data, **kw)


PARAMS = [pytest.param(entry, case, id=f"{case.id}-{entry}")
          for case in CASES for entry in case.entries]


def test_corpus_is_large():
    assert len(CASES) >= 100
    assert len({c.id for c in CASES}) == len(CASES)


@pytest.mark.parametrize("entry, case", PARAMS)
def test_bad_input_refused_before_anything_is_spent(entry, case, guard):
    data = case.data(FRAME.copy()) if case.data is not None else FRAME.copy()
    before = data.copy(deep=True) if isinstance(data, pd.DataFrame) else None
    acct = dpm.Accountant(10.0)
    rng = np.random.default_rng(3)
    state = rng.bit_generator.state
    kw = dict(epsilon=1.0, bounds=BOUNDS, levels=LEVELS, bins=4, random_state=rng,
              accountant=acct)
    kw.update(case.kw)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ReleaseWarning)
        with pytest.raises(DPModelsError) as info:
            _call(entry, case, data, kw)
    err = info.value
    assert isinstance(err, (ValueError, TypeError))
    if case.type_error:
        assert isinstance(err, DPModelsTypeError) and isinstance(err, TypeError), repr(err)
    assert re.search(case.match, str(err)), f"{case.match!r} not in: {err}"
    assert guard == []
    assert acct.spent == 0 and acct.ledger == ()
    assert rng.bit_generator.state == state
    if before is not None:
        pd.testing.assert_frame_equal(data, before)


def test_unhashable_values_in_a_column_are_a_dpmodels_error():
    """Found only while counting (values are not looked at before): still a
    dpmodels error naming the column, with nothing charged or drawn."""
    data = FRAME.assign(g=[["a"]] * len(FRAME))
    before = data.copy(deep=True)
    acct = dpm.Accountant(1.0)
    rng = np.random.default_rng(0)
    state = rng.bit_generator.state
    for call in (lambda: dpm.release(data, columns=["g"], epsilon=1.0, levels=LEVELS,
                                     accountant=acct, random_state=rng),
                 lambda: dpm.dp_ols("y ~ C(g)", data, epsilon=1.0, levels=LEVELS, bounds=BOUNDS,
                                    accountant=acct, random_state=rng)):
        with pytest.raises(DPModelsTypeError, match="'g'"):
            call()
    assert acct.spent == 0 and rng.bit_generator.state == state
    pd.testing.assert_frame_equal(data, before)


def test_edge_values_that_are_valid_are_accepted():
    """The checks are not stricter than the documented rules: numpy scalars,
    arrays, ranges, pandas Index, and a shared codebook with keys of columns
    the formula does not use."""
    rel = dpm.release(
        FRAME, formula="y ~ x + C(k)", epsilon=np.float64(1.0), threshold=np.float64(2.0),
        bounds={"y": np.array([0.0, 10.0]), "x": [np.int64(0), 10]},
        levels={"k": range(1, 4), "g": pd.Index(["a", "b", "c"]), "yb": np.array([0, 1])},
        bins={"x": np.int64(3), "y": 2}, n=np.int64(len(FRAME)), random_state=np.int64(5),
        threshold_A=1, max_spurious_cells=10**30)
    assert rel.report.n == len(FRAME) and rel.report.domain_cells == 2 * 3 * 3
    one = dpm.release(FRAME, columns="x", epsilon=1, bounds={"x": (0, 10)}, bins=1,
                      random_state=0, threshold="zero")
    assert one.report.domain_cells == 1
    wide = dpm.release(FRAME, columns=["x"], epsilon=1.0, bounds={"x": (-1e307, 1e307)},
                       bins=4, random_state=np.random.default_rng(0))
    assert wide.report.domain_cells == 4


def test_declared_n_far_from_the_rows_warns_and_changes_nothing_published():
    kw = dict(columns=["x", "g"], epsilon=1.0, bounds=BOUNDS, levels=LEVELS, bins=4,
              random_state=11)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ReleaseWarning)
        near = dpm.release(FRAME, n=2 * len(FRAME), **kw)  # a factor 2: no warning
        dpm.release(FRAME, n=len(FRAME) // 2, **kw)
    for far in (2 * len(FRAME) + 1, len(FRAME) // 2 - 1, 10**6):
        with pytest.warns(ReleaseWarning, match=rf"n={far:,}.*{len(FRAME)} rows"):
            warned = dpm.release(FRAME, n=far, **kw)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ReleaseWarning)
            quiet = dpm.release(FRAME, n=far, **kw)
        assert warned.report == quiet.report
        np.testing.assert_array_equal(warned.cell_ids, quiet.cell_ids)
        np.testing.assert_array_equal(warned.counts, quiet.counts)
        assert warned.report.n == far
    assert near.report.n == 2 * len(FRAME)
    # through a model too
    with pytest.warns(ReleaseWarning, match="declared n"):
        dpm.dp_ols("y ~ x", FRAME, epsilon=1.0, bounds=BOUNDS, bins=3, n=10**5, random_state=0)


def test_an_existing_release_with_another_epsilon_is_a_dpmodels_error():
    rel = dpm.release(FRAME, formula="y ~ x", epsilon=1.0, bounds=BOUNDS, bins=3, random_state=0)
    with pytest.raises(DPModelsError, match="epsilon"):
        dpm.dp_ols("y ~ x", rel, epsilon=2.0)
    with pytest.raises(DPModelsTypeError, match="already a release"):
        dpm.release(rel, formula="y ~ x", epsilon=1.0, bounds=BOUNDS)


def test_error_classes():
    assert issubclass(DPModelsTypeError, DPModelsError)
    assert issubclass(DPModelsTypeError, TypeError) and issubclass(DPModelsTypeError, ValueError)
    from dpmodels.core.errors import DomainTypeError

    assert issubclass(DomainTypeError, dpm.DomainError) and issubclass(DomainTypeError, TypeError)


@pytest.mark.parametrize("factory,option", [
    ("dp_ols", {"select": 1}), ("dp_ols", {"blocks": 10}), ("dp_logit", {"param_bounds": (-1, 1)}),
    ("dp_quantreg", {"gamma": 0.5}), ("dp_mnlogit", {"bias_correction": "firth"}),
    ("dp_ols", {"treshold_A": 0.5}),
])
@pytest.mark.parametrize("method", ["auto", "histogram"])
def test_an_option_no_release_takes_is_refused_before_any_spend(factory, option, method):
    """An option that belongs to another mechanism (or a typo) is an error naming
    it, on every path (it was ignored by the moments and Newton releases and a
    bare TypeError on the histogram's), before the accountant is charged."""
    rng = np.random.default_rng(0)
    df = pd.DataFrame({"x": rng.uniform(0, 1, 200), "y": rng.uniform(0, 1, 200),
                       "b": rng.integers(0, 2, 200), "c": rng.integers(0, 3, 200)})
    response = {"dp_logit": "b", "dp_mnlogit": "c"}.get(factory, "y")
    acct = dpm.Accountant(5.0)
    with pytest.raises(dpm.DPModelsError, match=next(iter(option))):
        getattr(dpm, factory)(f"{response} ~ x", df, epsilon=1.0, accountant=acct,
                              bounds={"x": (0, 1), "y": (0, 1)},
                              levels={"b": [0, 1], "c": [0, 1, 2]}, method=method, **option)
    assert acct.spent == 0


@pytest.mark.parametrize("factory", ["dp_ols", "dp_logit", "dp_quantreg", "dp_mnlogit"])
def test_an_unknown_method_names_every_method_the_family_takes(factory):
    """A misspelt method lists the routed ones too (sample-aggregate)."""
    df = pd.DataFrame({"x": [0.1, 0.5], "y": [0.2, 0.3], "c": [0, 1]})
    response = "c" if factory in ("dp_logit", "dp_mnlogit") else "y"
    with pytest.raises(dpm.DPModelsError, match="sample-aggregate"):
        getattr(dpm, factory)(f"{response} ~ x", df, epsilon=1.0, method="sample_aggregate",
                              bounds={"x": (0, 1), "y": (0, 1)}, levels={"c": [0, 1]})
