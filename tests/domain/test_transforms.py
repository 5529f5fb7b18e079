"""patsy's stateful transforms in dp_* formulas.

``center``, ``standardize`` and ``scale`` are memorized on the release with
each cell point weighted by its count, so that at epsilon=inf they equal
statsmodels on the data the cells stand for (the raw data when every
variable is discrete; the expanded cells otherwise).  Spline bases whose
knots or bounds patsy would compute from the frame it is given, and other
stateful transforms, are refused before anything is released.
"""

from __future__ import annotations

import importlib
import warnings

import numpy as np
import pandas as pd
import patsy
import pytest
import statsmodels.formula.api as smf
from patsy.state import stateful_transform

import dpmodels as dpm
from dpmodels.core.errors import DPModelsError

INF = float("inf")
LEVELS = {"k": [1, 2, 3, 4], "g": ["a", "b", "c"], "y": list(range(-6, 30)), "yb": [0, 1],
          "yc": [0, 1, 2]}


@pytest.fixture(scope="module")
def frame() -> pd.DataFrame:
    rng = np.random.default_rng(31)
    n = 2_000
    k = rng.integers(1, 5, n)
    g = rng.choice(["a", "b", "c"], n, p=[0.5, 0.3, 0.2])
    y = (2 + 3 * k - 2 * (g == "b") + rng.integers(-4, 5, n)).astype(np.int64)
    yb = (rng.random(n) < 1 / (1 + np.exp(-(k - 2.5)))).astype(np.int64)
    yc = np.minimum(rng.integers(0, 2, n) + (k > 2), 2).astype(np.int64)
    x = rng.uniform(0, 10, n)
    return pd.DataFrame({"y": y, "yb": yb, "yc": yc, "k": k, "g": g, "x": x})


def _exact(factory, formula, data, **kw):
    with pytest.warns(dpm.NotPrivateWarning):
        return factory(formula, data, epsilon=INF, levels=LEVELS, **kw)


@pytest.mark.parametrize("formula", [
    "y ~ center(k) + C(g)",
    "y ~ standardize(k) + C(g)",
    "y ~ scale(k, ddof=1) + C(g)",
    "y ~ standardize(k, center=False) + C(g)",
    "y ~ center(k) + I(center(k) ** 2) + C(g)",
    "center(y) ~ k + C(g)",
    "y ~ center(np.log(k)) + C(g)",
])
def test_ols_equals_statsmodels_on_the_raw_data(frame, formula):
    """All variables discrete: the cells are the data, the fit must be statsmodels'."""
    model = _exact(dpm.dp_ols, formula, frame)
    res = model.fit(cov_type="naive")
    ref = smf.ols(formula, frame).fit()
    np.testing.assert_allclose(res.params, ref.params, rtol=1e-8, atol=1e-8)
    np.testing.assert_allclose(res.bse, ref.bse, rtol=1e-8, atol=1e-8)
    new = frame.sample(50, random_state=0)
    np.testing.assert_allclose(res.predict(new), ref.predict(new), rtol=1e-8, atol=1e-8)


def test_center_changes_the_intercept_only(frame):
    plain = _exact(dpm.dp_ols, "y ~ k", frame).fit(cov_type="naive")
    centred = _exact(dpm.dp_ols, "y ~ center(k)", frame).fit(cov_type="naive")
    assert centred.params["center(k)"] == pytest.approx(plain.params["k"], rel=1e-10)
    mean_k = frame["k"].mean()
    assert centred.params["Intercept"] == pytest.approx(
        plain.params["Intercept"] + plain.params["k"] * mean_k, rel=1e-10)


@pytest.mark.parametrize("name, factory, reference, formula, fit_kw, ref_kw", [
    ("logit", dpm.dp_logit, smf.logit, "yb ~ standardize(k) + C(g)", {}, {"disp": 0}),
    ("mnlogit", dpm.dp_mnlogit, smf.mnlogit, "yc ~ center(k) + C(g)", {}, {"disp": 0}),
    ("quantreg", dpm.dp_quantreg, smf.quantreg, "y ~ scale(k) + C(g)", {"q": 0.5},
     {"q": 0.5, "p_tol": 1e-12, "max_iter": 5000}),
])
def test_other_models_equal_statsmodels(frame, name, factory, reference, formula, fit_kw, ref_kw):
    res = _exact(factory, formula, frame).fit(cov_type="naive", **fit_kw)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ref = reference(formula, frame).fit(**ref_kw)
    tol = 1e-6 if name == "quantreg" else 1e-8  # statsmodels' QuantReg is an IRLS approximation
    np.testing.assert_allclose(np.asarray(res.params), np.asarray(ref.params), rtol=tol, atol=tol)


def test_continuous_variable_equals_statsmodels_on_the_expanded_cells(frame):
    """A binned variable: the fit equals statsmodels on the data set in which
    each released cell point appears ``count`` times."""
    formula = "y ~ standardize(x) + center(k)"
    model = _exact(dpm.dp_ols, formula, frame, bounds={"x": (0, 10)}, bins=8,
                   representatives="midpoint")
    res = model.fit(cov_type="naive")
    cells = model.cells
    counts = cells[model.count_column].to_numpy().astype(int)
    expanded = cells.loc[cells.index.repeat(counts)].reset_index(drop=True)
    ref = smf.ols(formula, expanded).fit()
    np.testing.assert_allclose(res.params, ref.params, rtol=1e-8, atol=1e-8)
    np.testing.assert_allclose(res.bse, ref.bse, rtol=1e-8, atol=1e-8)


@pytest.mark.parametrize("representatives", ["density", "midpoint"])
def test_center_is_the_weighted_mean_of_the_release(frame, representatives):
    """On a private release with any representatives: center(x) is x minus
    the count-weighted mean of the fit's cell points."""
    rel = dpm.release(frame, formula="y ~ x", epsilon=1.0, bounds={"x": (0, 10)},
                      levels=LEVELS, bins=6, random_state=4)
    model = dpm.dp_ols("y ~ center(x)", rel, representatives=representatives)
    w = model.weights
    c = float(np.sum(w * model.cells["x"].to_numpy()) / np.sum(w))
    got = model.fit(cov_type="naive").params
    want = dpm.dp_ols(f"y ~ I(x - {c!r})", rel, representatives=representatives).fit(
        cov_type="naive").params
    np.testing.assert_allclose(got.to_numpy(), want.to_numpy(), rtol=1e-9, atol=1e-9)


def test_bootstrap_and_predict_run_with_a_weighted_transform(frame):
    model = dpm.dp_ols("y ~ center(k) + C(g)", frame, epsilon=1.0, levels=LEVELS,
                       random_state=2)
    res = model.fit(n_boot=20, random_state=3)
    assert np.all(np.isfinite(res.bse)) and np.all(res.bse > 0)
    assert np.all(np.isfinite(res.predict(frame.head(10))))


def test_bs_with_public_knots_and_bounds_is_allowed_and_exact(frame):
    formula = "y ~ bs(k, knots=[2.5], lower_bound=1, upper_bound=4, degree=2)"
    res = _exact(dpm.dp_ols, formula, frame).fit(cov_type="naive")
    ref = smf.ols(formula, frame).fit()
    np.testing.assert_allclose(res.params, ref.params, rtol=1e-8, atol=1e-8)


def test_a_plain_function_named_center_is_left_alone(frame):
    def center(v):
        return v - 2.0

    with pytest.warns(dpm.NotPrivateWarning):
        model = dpm.dp_ols("y ~ center(k)", frame, epsilon=INF, levels=LEVELS,
                           eval_env={"center": center})
    res = model.fit(cov_type="naive")
    assert res.params["Intercept"] == pytest.approx(
        smf.ols("y ~ I(k - 2.0)", frame).fit().params["Intercept"], rel=1e-10)


class _Own:
    """A user-defined stateful transform (centres on the frame's maximum)."""

    def memorize_chunk(self, x):
        self.top = np.max(x)

    def memorize_finish(self):
        pass

    def transform(self, x):
        return np.asarray(x) - self.top


own = stateful_transform(_Own)


@pytest.mark.parametrize("formula, match", [
    ("y ~ bs(x, df=4)", r"bs\(\)"),
    ("y ~ bs(x, knots=[5], lower_bound=0)", r"bs\(\)"),
    ("y ~ cr(x, df=4)", r"cr\(\)"),
    ("y ~ cc(x, df=4)", r"cc\(\)"),
    ("y ~ te(cr(x, df=3), cc(k, df=3))", r"te\(\)"),
    ("y ~ I(bs(x, df=4))", r"bs\(\)"),
    ("y ~ patsy.center(x)", r"patsy\.center"),
    ("y ~ patsy.builtins.standardize(x)", r"standardize"),
    ("y ~ own(x)", r"own\(\).*stateful"),
])
def test_other_stateful_transforms_are_refused_before_the_release(frame, monkeypatch, formula,
                                                                  match):
    release_module = importlib.import_module("dpmodels.mechanisms.histogram")

    def refuse(*args, **kwargs):
        raise AssertionError("rows were counted")

    monkeypatch.setattr(release_module, "count_cells", refuse)
    acct = dpm.Accountant(1.0)
    for factory in (dpm.dp_ols, dpm.dp_quantreg):
        with pytest.raises(DPModelsError, match=match):
            factory(formula, frame, epsilon=1.0, levels=LEVELS, bounds={"x": (0, 10)},
                    accountant=acct, random_state=0)
    assert acct.spent == 0
    # refused on an existing release too (nothing to spend there, but the fit would be wrong)
    monkeypatch.undo()
    rel = dpm.release(frame, formula="y ~ x + k", epsilon=1.0, bounds={"x": (0, 10)},
                      levels=LEVELS, bins=4, random_state=0)
    with pytest.raises(DPModelsError, match=match):
        dpm.dp_ols(formula, rel)
    assert patsy  # the formulas above resolve the module through this namespace


def test_standardize_without_variance_is_a_clear_error(frame):
    one = frame.assign(k=1)
    model = _exact(dpm.dp_ols, "y ~ standardize(k)", one)
    with pytest.raises(DPModelsError, match="variance"):
        model.fit(cov_type="naive")


def test_a_transform_at_a_density_point_beyond_a_bound_is_read_at_the_bound(monkeypatch):
    # Found by benchmarks/speed.py --only goals (issue 28): dp_quantreg's default fit of
    # price ~ size + np.log(size + 1) + ... crashed ("SVD did not converge") in the binning
    # diagnostic: on coarser bins the density representatives put points of the lowest
    # size bin below 0, where log(size + 1) is NaN.  Those rows are now built with size
    # clipped to its public bounds (the data's values lie within them); without that step
    # the same fit fails.
    import dpmodels.models.base as base

    df = dpm.datasets.housing(n=20_000, seed=3)
    args = ("price ~ size + np.log(size + 1) + year + C(county)", df)
    kw = dict(epsilon=1, bounds={"price": (1e5, 9e5), "size": (0, 3000)},
              levels={"county": [f"County{i}" for i in range(1, 7)], "year": [1, 2, 3, 4]},
              random_state=0)
    seen = []
    real = base._inside_bounds
    monkeypatch.setattr(base, "_inside_bounds", lambda *a: seen.append(int(a[5].sum()))
                        or real(*a))
    res = dpm.dp_quantreg(*args, **kw).fit(random_state=0, q=0.5)
    assert seen and max(seen) > 0
    assert np.all(np.isfinite(res.params))
    monkeypatch.setattr(base, "_inside_bounds", lambda infos, frame, X, y, valid, off, dom:
                        (X, y, valid))
    with pytest.raises(np.linalg.LinAlgError):
        dpm.dp_quantreg(*args, **kw).fit(random_state=0, q=0.5)
