"""Coefficients the release carries no information about (dpmodels.inference.information):
an infinite standard error, p = 1, an unbounded interval and a warning naming
them, never a precise-looking significant estimate.

The calibration test checks the spurious-mass law the rule rests on: over
releases of a level no row has, the mass behind its dummy has the mean and
standard deviation the module computes (5 standard errors of the Monte Carlo
mean; the SD within 15%, about 5 SE of a sample SD from 300 draws).
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pandas as pd
import pytest

import dpmodels as dpm
from dpmodels.core.errors import ReleaseWarning
from dpmodels.inference.information import Z_INFO, column_information

N = 20_000
BOUNDS = {"y": (-5.0, 15.0), "x": (0.0, 10.0)}


@pytest.fixture(scope="module")
def frame():
    rng = np.random.default_rng(0)
    g = rng.choice(["a", "b", "c"], N)
    x = rng.uniform(0, 10, N)
    y = 1 + 0.5 * x + (g == "b") * 1.0 + rng.normal(size=N)
    return pd.DataFrame({"y": y, "x": x, "g": g, "yb": (y > 4).astype(int)})


def _fit(factory, formula, df, levels, **fit_kw):
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        model = factory(formula, df, epsilon=1.0, bounds=BOUNDS, levels=levels, random_state=1)
        res = model.fit(n_boot=40, random_state=0, **fit_kw)
    return model, res, [str(w.message) for w in rec if issubclass(w.category, ReleaseWarning)]


@pytest.mark.parametrize("name", ["ols", "logit", "quantreg"])
def test_a_declared_level_without_rows_gets_no_significance(frame, name):
    factory, formula, extra = {
        "ols": (dpm.dp_ols, "y ~ x + C(g)", {}),
        "logit": (dpm.dp_logit, "yb ~ x + C(g)", {"yb": [0, 1]}),
        "quantreg": (dpm.dp_quantreg, "y ~ x + C(g)", {}),
    }[name]
    levels = {"g": ["a", "b", "c", "d"], **extra}
    model, res, warned = _fit(factory, formula, frame, levels)
    d = "C(g)[T.d]"
    assert math.isinf(res.bse[d]) and res.pvalues[d] == 1.0 and res.tvalues[d] == 0.0
    lo, hi = np.asarray(res.conf_int().loc[d])
    assert lo == -np.inf and hi == np.inf
    assert any(d in msg and "no information" in msg for msg in warned), warned
    assert "no information about C(g)[T.d]" in str(res.summary())
    # every coefficient backed by rows keeps a finite interval
    others = [c for c in res.params.index if c != d]
    assert np.isfinite(np.asarray(res.bse[others], float)).all()
    assert np.isfinite(np.asarray(res.conf_int().loc[others], float)).all()


def test_populated_levels_and_slopes_are_not_flagged(frame):
    _, res, warned = _fit(dpm.dp_ols, "y ~ x + C(g)", frame, {"g": ["a", "b", "c"]})
    assert res.dp_inference.uninformative is None
    assert not any("no information" in m for m in warned)
    assert np.isfinite(res.bse).all()


def test_a_release_of_almost_nothing_is_all_noise():
    rng = np.random.default_rng(3)
    df = pd.DataFrame({"y": rng.uniform(0, 10, 3), "x": rng.uniform(0, 10, 3)})
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        model = dpm.dp_ols("y ~ x", df, epsilon=1.0, bounds={"y": (0, 10), "x": (0, 10)},
                           bins=30, n=2_000, threshold=3, random_state=2)
        res = model.fit(n_boot=30, random_state=0)
    # 3 real rows against ~900 cells x P(Z >= 3) of spurious cells: nothing is known
    assert np.isinf(res.bse).all() and (res.pvalues == 1.0).all()
    assert any("no information" in str(w.message) for w in rec)


def test_exact_release_has_no_spurious_cells(frame):
    with pytest.warns(dpm.NotPrivateWarning):
        model = dpm.dp_ols("y ~ x + C(g)", frame, epsilon=float("inf"), bounds=BOUNDS,
                           levels={"g": ["a", "b", "c", "d"]}, bins=8)
    res = model.fit(cov_type="naive")
    assert column_information(model.release, model.variables, model._design_builder(res), 5) is None


def test_spurious_mass_law_is_calibrated(frame):
    """Mass behind an empty level's dummy over 300 releases: mean and SD as computed."""
    df = frame.iloc[:4000]
    levels = {"g": ["a", "b", "c", "d"]}
    masses, info = [], None
    for seed in range(300):
        model = dpm.dp_ols("y ~ x + C(g)", df, epsilon=1.0, bounds=BOUNDS, levels=levels,
                           bins=12, random_state=seed, representatives="midpoint")
        res = model.fit(cov_type="naive")
        info = column_information(model.release, model.variables, model._design_builder(res),
                                  len(res.params))
        j = list(res.params.index).index("C(g)[T.d]")
        masses.append(info.mass[j])
        expected, sd = info.spurious[j], info.sd[j]
        spurious_sd = math.sqrt(info.spurious_var[j])
    masses = np.asarray(masses)
    # the empty level's cells are all empty: S_j is the exact mean and the spurious law's
    # SD the exact SD of the mass there (the rule's sd adds the released cells' noise on top)
    assert abs(masses.mean() - expected) <= 5 * masses.std(ddof=1) / math.sqrt(masses.size)
    assert 0.85 <= masses.std(ddof=1) / spurious_sd <= 1.15
    assert sd >= spurious_sd
    # the rule flags that level in (almost) every release: mass < S + Z_INFO sd
    assert np.mean(masses - expected < Z_INFO * sd) >= 0.99
