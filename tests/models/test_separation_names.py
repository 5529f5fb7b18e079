"""The separation warning names every coefficient it leaves without an interval: on a
(quasi-)separated histogram release, dp_mnlogit's and dp_logit's
SeparationWarning named only the coefficients along the diverging direction,
while the dp bootstrap, whose replicate refits diverge as well, reported an
infinite interval for (up to) every coefficient.  Every coefficient with an
infinite standard error / unbounded interval must be named by a warning that
says why, in the histogram's terms; no finite interval is newly named."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

import dpmodels as dpm
from dpmodels.core.errors import ReleaseWarning, SeparationWarning
from dpmodels.inference.intervals import DPInference
from tests.support.separation import (
    MN_BOUNDS,
    MN_FORMULA,
    MN_LEVELS,
    NO_BINNING,
    UNMEASURED,
    _check_every_infinite_interval_is_named,
    _fit,
    _logit_flat,
    _mn_flat,
    _resample,
    anes96,  # noqa: F401  (a module fixture)
    names_in,
)


# the benchmark's anes96_mnlogit case (benchmarks/real_validity.py CASES)
@pytest.mark.parametrize("seed", [0, 3, 8, 12])
def test_mnlogit_separated_release_names_every_infinite_interval(anes96, seed):
    res, caught = _fit(dpm.dp_mnlogit, MN_FORMULA, _resample(anes96, seed), epsilon=0.3,
                       bounds=MN_BOUNDS, levels=MN_LEVELS, random_state=seed,
                       fit_seed=1000 + seed, fit_kw=NO_BINNING)
    assert res.separation  # the released cells are separated
    names, width, se = _mn_flat(res)
    msg = _check_every_infinite_interval_is_named(names, width, se, caught)
    # the reason, in the histogram's terms, and the category of the cause
    assert "released cells are (quasi-)separated" in msg
    assert "maximum likelihood estimate diverges along a direction involving" in msg
    assert "infinite" in msg and "unbounded" in msg
    assert all(names_in(msg.split("involving", 1)[1], nm) for nm in res.separation)
    cat = next(w.category for w in caught if str(w.message).startswith(UNMEASURED))
    assert issubclass(cat, SeparationWarning)
    # the summary says the same
    notes = " ".join(res.summary().as_text().split())
    assert "could not measure the error of" in notes and "(quasi-)separated" in notes


def test_mnlogit_finite_release_has_no_unmeasured_warning(anes96):
    # resample 2: not separated, 16 of 200 refits fail (resample 1, used before,
    # has 103 of 200 failed: the bootstrap measures nothing there, see
    # tests/inference/test_unmeasured_everywhere.py)
    res, caught = _fit(dpm.dp_mnlogit, MN_FORMULA, _resample(anes96, 2), epsilon=0.3,
                       bounds=MN_BOUNDS, levels=MN_LEVELS, random_state=2, fit_seed=1002,
                       fit_kw=NO_BINNING)
    assert 0 < res._results.dp_inference.n_failed <= 100
    _, width, se = _mn_flat(res)
    assert np.all(np.isfinite(width)) and np.all(np.isfinite(se))
    assert not any(str(w.message).startswith(UNMEASURED) for w in caught)


def test_mnlogit_without_the_separation_check_still_names_them(anes96):
    """separation="ignore": no SeparationWarning, but the infinite intervals are
    named by a ReleaseWarning saying how many replicate releases could be refitted."""
    df = _resample(anes96, 8)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        res = dpm.dp_mnlogit(MN_FORMULA, df, epsilon=0.3, bounds=MN_BOUNDS, levels=MN_LEVELS,
                             random_state=8).fit(random_state=1008, separation="ignore",
                                                 **NO_BINNING)
    caught = [w for w in caught if issubclass(w.category, ReleaseWarning)]
    names, width, se = _mn_flat(res)
    msg = _check_every_infinite_interval_is_named(names, width, se, caught)
    assert "replicate releases could be refitted" in msg
    assert not any(issubclass(w.category, SeparationWarning) for w in caught)


def test_logit_separated_release_names_every_infinite_interval():
    rng = np.random.default_rng(15)
    n = 300
    x = rng.uniform(0, 10, n)
    g = rng.integers(0, 3, n)
    y = (rng.random(n) < 1 / (1 + np.exp(-(-3 + 0.6 * x + 0.5 * g)))).astype(np.int64)
    df = pd.DataFrame({"y": y, "x": x, "g": g})
    res, caught = _fit(dpm.dp_logit, "y ~ x + C(g)", df, epsilon=0.3, bounds={"x": (0, 10)},
                       levels={"y": [0, 1], "g": [0, 1, 2]}, method="histogram",
                       random_state=15, fit_seed=15)
    assert res.separation
    names, width, se = _logit_flat(res)
    msg = _check_every_infinite_interval_is_named(names, width, se, caught)
    assert "released cells are (quasi-)separated" in msg and "diverge" in msg


def test_unmeasured_message_names_all_and_says_why():
    reps = np.random.default_rng(0).normal(size=(50, 8))
    reps[:, [1, 7]] = np.nan
    inf = DPInference(params=np.arange(8.0), replicates=reps, n_boot=50, n_failed=0,
                      uninformative=np.eye(8, dtype=bool)[2], unmeasured_why="a reason")
    names = [f"b{i}" for i in range(8)]
    assert inf.unmeasured.tolist() == [i in (1, 7) for i in range(8)]  # b2: flagged apart
    msg = inf.unmeasured_message(names)
    assert msg.startswith(f"{UNMEASURED} b1, b7 (a reason)") and "infinite" in msg
    assert "b7" not in inf.unmeasured_message(names, limit=1)
    assert any("b1, b7 (a reason)" in ln for ln in inf.notes(names))
