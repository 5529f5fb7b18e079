"""A declared factor level that no released cell holds (the threshold removed
its cells, or the data have none) never silently changes what a coefficient
means.  Before, a factor declared with numeric levels (statsmodels' data sets
code them so: anes96's educ 1-7, fair's occupation 1-6) was coded by the levels
the released cells happened to hold: without ``educ = 1`` the reference moved
to 2 and ``C(educ)[T.3]`` printed "educ 3 against 2" under the declared
name ("against 1"); on anes96 at epsilon 1 (projected logit) it came out
-4.16 with p = 0.043 against a population +1.08.  Now the design is the one the
declaration defines: the coefficients the released cells do not identify get
infinite standard errors and a warning naming them and the absent level (OLS,
quantile regression, and the logit families' default dp fit; their naive fit
refuses with the same reason)."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

import dpmodels as dpm
from dpmodels.core.errors import ReleaseWarning, SingularDesignError
from dpmodels.inference.information import absent_levels

INF = float("inf")
LEVELS = [1, 2, 3, 4]


def _frame(n=1200, seed=0, absent=1, strings=False):
    rng = np.random.default_rng(seed)
    g = rng.choice([lv for lv in LEVELS if lv != absent], n)
    x = rng.uniform(0, 1, n)
    y = 1.0 + 0.5 * g + 2.0 * x + rng.normal(0, 0.5, n)
    v = (rng.random(n) < 1 / (1 + np.exp(-(g - 2.5) + x))).astype(int)
    df = pd.DataFrame({"y": y, "x": x, "g": g, "v": v})
    if strings:
        df["g"] = df["g"].map(lambda k: f"L{k}")
    return df


def _levels(strings):
    return [f"L{k}" for k in LEVELS] if strings else LEVELS


def _fit(fn, formula, df, eps, strings=False, **kw):
    lv = {"g": _levels(strings), **({"v": [0, 1]} if "v" in df else {})}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model = fn(formula, df, epsilon=eps, bounds={"y": (0, 6), "x": (0, 1)}, levels=lv,
                   bins=4, method="histogram", random_state=3, **kw)
        res = model.fit(random_state=4)
    return model, res, [str(w.message) for w in caught if issubclass(w.category, ReleaseWarning)]


@pytest.mark.parametrize("fn", [dpm.dp_ols, dpm.dp_quantreg])
@pytest.mark.parametrize("strings", [False, True])
def test_an_absent_reference_level_keeps_the_declared_names_and_is_not_identified(fn, strings):
    df = _frame(absent=1, strings=strings)
    model, res, said = _fit(fn, "y ~ x + C(g)", df, INF, strings)
    ref = "L1" if strings else "1"
    tag = (lambda k: f"T.L{k}") if strings else (lambda k: f"T.{k}")
    # the declared coding: contrasts against level 1, all of them named
    assert list(res.params.index) == ["Intercept"] + [f"C(g)[{tag(k)}]" for k in (2, 3, 4)] \
        + ["x"]
    assert absent_levels(model.release, model.variables) == [f"g = {ref}"]
    loose = ["Intercept"] + [f"C(g)[{tag(k)}]" for k in (2, 3, 4)]
    assert np.isinf(res.bse[loose]).all()
    assert (res.pvalues[loose] == 1).all()
    text = " ".join(said)
    assert "not identified" in text and f"no released cell has g = {ref}" in text
    assert all(nm in text for nm in loose)


@pytest.mark.parametrize("strings", [False, True])
def test_an_absent_other_level_is_named_not_dropped(strings):
    df = _frame(absent=3, strings=strings)
    model, res, said = _fit(dpm.dp_ols, "y ~ x + C(g)", df, INF, strings)
    name = "C(g)[T.L3]" if strings else "C(g)[T.3]"
    assert name in res.params.index and np.isinf(res.bse[name])
    # the other contrasts keep their meaning (against level 1): near the truth 0.5 (k - 1)
    for k in (2, 4):
        other = f"C(g)[T.L{k}]" if strings else f"C(g)[T.{k}]"
        assert abs(res.params[other] - 0.5 * (k - 1)) < 0.2
    assert any("not identified" in w and name in w for w in said)


@pytest.mark.parametrize("fn", [dpm.dp_logit, dpm.dp_mnlogit])
def test_the_logit_families_flag_the_absent_reference_level(fn):
    """The dp fit flags what the cells leave unidentified and measures the
    rest (before: SingularDesignError); the naive fit, which has no
    covariance to give them, refuses naming the level."""
    df = _frame(absent=1)
    model, res, said = _fit(fn, "v ~ x + C(g)", df, INF)
    names = ["Intercept", "C(g)[T.2]", "C(g)[T.3]", "C(g)[T.4]"]
    bse = pd.DataFrame(res.bse)
    assert np.isinf(bse.loc[names].to_numpy()).all()
    assert np.isfinite(bse.loc["x"].to_numpy()).all()
    assert any("not identified" in w and "no released cell has g = 1" in w for w in said)
    assert res.dp_inference.n_failed == 0
    with pytest.raises(SingularDesignError, match="no released cell has g = 1"):
        model.fit(cov_type="naive")


@pytest.mark.parametrize("fn", [dpm.dp_logit, dpm.dp_mnlogit])
def test_an_absent_level_leaves_the_identified_coefficients_as_without_it(fn):
    """With g = 3 declared but absent, every other coefficient is the fit of the
    declaration without level 3 (the same cells; the likelihood is flat only
    along the level's dummy), and their bootstrap errors match to Monte Carlo
    error of 200 replicates (sd of an SE estimate ~ SE / sqrt(2 * 200) = 5%)."""
    df = _frame(absent=3)
    _, res, said = _fit(fn, "v ~ x + C(g)", df, INF)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ref = fn("v ~ x + C(g)", df, epsilon=INF, bounds={"y": (0, 6), "x": (0, 1)},
                 levels={"g": [1, 2, 4], "v": [0, 1]}, bins=4, method="histogram",
                 random_state=3).fit(random_state=4)
    kept = ["Intercept", "C(g)[T.2]", "C(g)[T.4]", "x"]
    params, bse = pd.DataFrame(res.params), pd.DataFrame(res.bse)
    np.testing.assert_allclose(params.loc[kept].to_numpy(),
                               pd.DataFrame(ref.params).loc[kept].to_numpy(), atol=1e-6)
    assert np.isinf(bse.loc["C(g)[T.3]"].to_numpy()).all()
    ratio = bse.loc[kept].to_numpy() / pd.DataFrame(ref.bse).loc[kept].to_numpy()
    assert np.all(np.abs(ratio - 1) < 4 * 0.05), ratio
    assert any("C(g)[T.3]" in w and "not identified" in w for w in said)


def test_newton_steps_only_along_the_flat_directions_the_estimate_had():
    """batched_newton with the estimate's flat directions: a replicate flat
    along them keeps the start's component there and maximizes the rest; a
    replicate flat along a new direction fails, as without them."""
    from dpmodels.core.batched import support_projectors
    from dpmodels.models.logit import refit_logit

    rng = np.random.default_rng(0)
    # cells: intercept, a dummy for level B, a dummy for level C, a slope
    level = np.repeat([0, 1, 2], 8)
    x = np.tile(np.linspace(-1, 1, 8), 3)
    X = np.column_stack([np.ones(24), level == 1, level == 2, x]).astype(float)
    y = np.tile([0.0, 1.0], 12)
    W = rng.integers(5, 30, size=(24, 3)).astype(float)
    W[level == 2, 0] = 0  # replicate 0: level C absent (the estimate's flat direction)
    W[level == 2, 1] = 0  # replicate 1: the same
    W[level == 1, 1] = 0  # ... and level B absent too: a new flat direction
    main = support_projectors(X, W[:, :1])[0]
    start = np.array([0.1, 0.2, 0.7, -0.3])
    theta, ok = refit_logit(X, y, W, start, flat_directions=main)
    assert ok.tolist() == [True, False, True]
    assert theta[0, 2] == pytest.approx(0.7)  # level C's dummy: the start's
    # the rest maximizes the likelihood of the cells it weighs
    from statsmodels.discrete.discrete_model import Logit
    keep = W[:, 0] > 0
    sm = Logit(np.repeat(y[keep], W[keep, 0].astype(int)),
               np.repeat(X[keep][:, [0, 1, 3]], W[keep, 0].astype(int), axis=0)).fit(disp=0)
    np.testing.assert_allclose(theta[0, [0, 1, 3]], sm.params, atol=1e-6)
    theta_old, ok_old = refit_logit(X, y, W, start)
    assert ok_old.tolist() == [False, False, True]
    np.testing.assert_allclose(theta[2], theta_old[2])


def test_a_threshold_that_removes_the_reference_level_leaves_it_unidentified():
    """At a private epsilon: the reference level's 6 rows of 3,000 fall under the
    threshold, no spurious cell lands there (this seed), and the contrasts that
    would have silently been against level 2 are unbounded and named."""
    rng = np.random.default_rng(5)
    n = 3000
    g = np.where(np.arange(n) < 6, 1, rng.choice([2, 3, 4], n))
    x = rng.uniform(0, 1, n)
    df = pd.DataFrame({"y": 1.0 + 0.5 * g + 2.0 * x + rng.normal(0, 0.5, n), "x": x, "g": g})
    model, res, said = _fit(dpm.dp_ols, "y ~ x + C(g)", df, 1.0)
    assert absent_levels(model.release, model.variables) == ["g = 1"]
    assert list(res.params.index)[:4] == ["Intercept", "C(g)[T.2]", "C(g)[T.3]", "C(g)[T.4]"]
    assert np.isinf(res.bse[["Intercept", "C(g)[T.2]", "C(g)[T.3]", "C(g)[T.4]"]]).all()
    assert np.isfinite(res.bse["x"])
    assert any("no released cell has g = 1" in w for w in said)
