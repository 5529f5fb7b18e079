"""dp_quantreg: frequency-weight equivalence with QuantReg on the expanded
data, exactness at epsilon=inf, parameter names, several quantiles from one
release, summaries, and refusal of signed counts before any noise."""

from __future__ import annotations

import time
import warnings

import numpy as np
import pandas as pd
import pytest
from scipy import sparse
from scipy.optimize import linprog
import statsmodels.api as sm
import statsmodels.formula.api as smf
from scipy import stats
from statsmodels.regression.quantile_regression import QuantReg, hall_sheather, kernels
from statsmodels.tools.sm_exceptions import ConvergenceWarning

import dpmodels as dpm
from dpmodels.core.errors import ReleaseWarning
from dpmodels.front.api import dp_quantreg
from dpmodels.models.quantreg import DPQuantReg, FreqQuantReg

from tests.conftest import HOUSING_BOUNDS, HOUSING_FORMULA, HOUSING_LEVELS, MIXED_BOUNDS, MIXED_LEVELS

QS = [0.1, 0.25, 0.5, 0.75, 0.9]
# statsmodels' IRLS only approaches the LP vertex; run it to its limit for references
TIGHT = dict(p_tol=1e-12, max_iter=5000)


def _check_loss(resid, q, w=None):
    w = np.ones_like(resid) if w is None else w
    return float(np.sum(w * np.where(resid < 0, (q - 1) * resid, q * resid)))


def _vertex(y, X, params):
    """The exact LP vertex near an IRLS solution: solve for the rank(X) rows
    (greedily independent) with the smallest residuals."""
    resid = np.abs(y - X @ params)
    chosen: list[int] = []
    rank = np.linalg.matrix_rank(X)
    for i in np.argsort(resid, kind="stable"):
        if np.linalg.matrix_rank(X[chosen + [i]]) == len(chosen) + 1:
            chosen.append(i)
            if len(chosen) == rank:
                break
    return np.linalg.lstsq(X[chosen], y[chosen], rcond=None)[0]


def _expanded_cov(y, X, params, q, vcov="robust"):
    """statsmodels' QuantReg.fit covariance lines, on plain (expanded) arrays,
    evaluated at ``params`` with exactly-zero residuals where the fit
    interpolates."""
    e = y - X @ params
    e[np.abs(e) <= 1e-9 * (np.abs(y) + np.abs(X) @ np.abs(params))] = 0.0
    n = len(y)
    iqre = stats.scoreatpercentile(e, 75) - stats.scoreatpercentile(e, 25)
    h = hall_sheather(n, q)
    h = min(np.std(y), iqre / 1.34) * (stats.norm.ppf(q + h) - stats.norm.ppf(q - h))
    fhat0 = 1.0 / (n * h) * np.sum(kernels["epa"](e / h))
    xtxi = np.linalg.pinv(X.T @ X)
    if vcov == "robust":
        d = np.where(e > 0, (q / fhat0) ** 2, ((1 - q) / fhat0) ** 2)
        return xtxi @ (X.T * d) @ X @ xtxi
    return (1.0 / fhat0) ** 2 * q * (1 - q) * xtxi


@pytest.fixture
def cells():
    """Continuous cells with integer counts: the quantile fits are unique."""
    rng = np.random.default_rng(0)
    m = 150
    X = sm.add_constant(rng.normal(size=(m, 2)))
    y = X @ [1.0, 2.0, -1.0] + (1 + 0.5 * np.abs(X[:, 1])) * rng.standard_t(4, size=m)
    w = rng.integers(1, 10, size=m)
    return y, X, w


@pytest.mark.parametrize("q", QS)
def test_freq_quantreg_equals_expanded_data(cells, q):
    y, X, w = cells
    Y, XX = np.repeat(y, w), np.repeat(X, w, axis=0)
    res = FreqQuantReg(y, X, weights=w).fit(q=q)
    ref = QuantReg(Y, XX).fit(q=q, **TIGHT)
    # the estimate: exactly the LP vertex statsmodels' iterations converge to
    np.testing.assert_allclose(res.params, _vertex(Y, XX, ref.params), rtol=1e-9)
    np.testing.assert_allclose(res.params, ref.params, rtol=1e-5)
    assert res.objective <= _check_loss(Y - XX @ ref.params, q) * (1 + 1e-12)
    np.testing.assert_allclose(res.objective, _check_loss(Y - XX @ res.params, q), rtol=1e-12)
    for attr in ("nobs", "df_resid", "df_model"):
        assert getattr(res, attr) == getattr(ref, attr), attr
    assert res.nobs == w.sum()
    np.testing.assert_allclose(res.bandwidth, ref.bandwidth, rtol=1e-5)
    np.testing.assert_allclose(res.sparsity, ref.sparsity, rtol=1e-5)
    np.testing.assert_allclose(res.prsquared, ref.prsquared, rtol=1e-5)
    np.testing.assert_allclose(res.condition_number, ref.condition_number, rtol=1e-9)
    # "iid" covariance: no ambiguity, statsmodels' own value
    res_iid = FreqQuantReg(y, X, weights=w).fit(q=q, vcov="iid")
    ref_iid = QuantReg(Y, XX).fit(q=q, vcov="iid", **TIGHT)
    np.testing.assert_allclose(res_iid.bse, ref_iid.bse, rtol=1e-5)
    # "robust": statsmodels' formula on the expanded data at the exact solution
    for vcov, r in (("robust", res), ("iid", res_iid)):
        np.testing.assert_allclose(r.cov_params(), _expanded_cov(Y, XX, r.params, q, vcov),
                                   rtol=1e-9, atol=0)
    if q == 0.5:  # the sign convention at zero residuals does not matter at the median
        np.testing.assert_allclose(res.bse, ref.bse, rtol=1e-5)
    np.testing.assert_allclose(res.tvalues, res.params / res.bse, rtol=1e-12)
    assert res.use_t == ref.use_t
    np.testing.assert_allclose(res.conf_int(), np.column_stack(
        [res.params - stats.t.ppf(0.975, res.df_resid) * res.bse,
         res.params + stats.t.ppf(0.975, res.df_resid) * res.bse]), rtol=1e-10)


@pytest.mark.parametrize("kernel", ["epa", "biw", "cos", "gau", "par"])
@pytest.mark.parametrize("bandwidth", ["hsheather", "bofinger", "chamberlain"])
def test_kernels_and_bandwidths_match_expanded_data(cells, kernel, bandwidth):
    y, X, w = cells
    res = FreqQuantReg(y, X, weights=w).fit(q=0.5, kernel=kernel, bandwidth=bandwidth)
    ref = QuantReg(np.repeat(y, w), np.repeat(X, w, axis=0)).fit(
        q=0.5, kernel=kernel, bandwidth=bandwidth, **TIGHT)
    np.testing.assert_allclose(res.bandwidth, ref.bandwidth, rtol=1e-5)
    np.testing.assert_allclose(res.bse, ref.bse, rtol=1e-5)


def test_zero_weight_rows_and_rank_deficiency():
    rng = np.random.default_rng(1)
    m = 100
    x = rng.normal(size=m)
    X = np.column_stack([np.ones(m), x, 2 * x])  # collinear: rank 2
    y = 1 + x + rng.normal(size=m)
    w = rng.integers(0, 4, size=m)
    res = FreqQuantReg(y, X, weights=w).fit(q=0.3)
    ref = QuantReg(np.repeat(y, w), np.repeat(X, w, axis=0)).fit(q=0.3, **TIGHT)
    assert res.df_resid == ref.df_resid == w.sum() - 2
    # minimum-norm solution, as statsmodels' pinv iterations
    np.testing.assert_allclose(res.params, ref.params, rtol=1e-5)
    with pytest.raises(ValueError, match="non-negative"):
        FreqQuantReg(y, X, weights=np.where(np.arange(m) == 3, -1, w))


# ---- epsilon = inf reproduces smf.quantreg -------------------------------------------

INF_LEVELS = {"y": list(range(-600, 1401)), "k": [1, 2, 3, 4], "g": ["a", "b", "c"]}


@pytest.fixture
def spread_frame() -> pd.DataFrame:
    """Discrete variables only, with a response of many levels: quantile
    regression solutions are unique (n*q is not an integer)."""
    rng = np.random.default_rng(11)
    n = 2_999
    g = rng.choice(["a", "b", "c"], size=n, p=[0.5, 0.3, 0.2])
    k = rng.integers(1, 5, size=n)
    b = rng.random(n) < 0.4
    y = 40 * (2 + 3 * k - 4 * (g == "b") + 1.5 * b) + 40 * rng.standard_t(5, size=n)
    return pd.DataFrame({"y": np.clip(np.round(y), -600, 1400).astype(np.int64),
                         "k": k, "g": g, "b": b})


@pytest.mark.filterwarnings("ignore::statsmodels.tools.sm_exceptions.IterationLimitWarning")
@pytest.mark.parametrize("formula", ["y ~ k + C(g) + b", "y ~ C(k) + C(g, Treatment('b'))",
                                     "y ~ np.log(k) + I(k**2)"])
def test_inf_epsilon_reproduces_smf_quantreg(spread_frame, formula):
    with pytest.warns(dpm.NotPrivateWarning):
        model = dp_quantreg(formula, spread_frame, epsilon=float("inf"), levels=INF_LEVELS,
                            threshold=None)  # exact counts are not signed: allowed
    y = spread_frame["y"].to_numpy(float)
    n_unique = 0
    for q in QS:
        res = model.fit(q=q, cov_type="naive")
        ref = smf.quantreg(formula, spread_frame).fit(q=q, **TIGHT)
        assert list(res.params.index) == list(ref.params.index)
        assert res.nobs == ref.nobs and res.df_resid == ref.df_resid
        X = ref.model.exog
        # the minimum: the same objective, ours exact, statsmodels' IRLS a hair above
        ref_loss = _check_loss(ref.resid.to_numpy(), q)
        assert res.objective <= ref_loss * (1 + 1e-12)
        np.testing.assert_allclose(res.objective, ref_loss, rtol=1e-7)
        # the minimizer: the vertex statsmodels' iterations head for
        vertex = _vertex(y, X, ref.params.to_numpy())
        scale = np.abs(vertex).max()
        np.testing.assert_allclose(res.params, vertex, rtol=1e-9, atol=1e-12 * scale)
        np.testing.assert_allclose(res.cov_params(), _expanded_cov(y, X, res.params.to_numpy(), q),
                                   rtol=1e-9)
        # where the minimizer is unique, IRLS is close to it and the standard errors agree
        # (binned/discrete data can have a flat optimal face: then IRLS stops inside it)
        if not np.allclose(res.params, ref.params, rtol=1e-5, atol=1e-5 * scale):
            continue
        n_unique += 1
        np.testing.assert_allclose(res.sparsity, ref.sparsity, rtol=1e-5)
        ref_iid = smf.quantreg(formula, spread_frame).fit(q=q, vcov="iid", **TIGHT)
        np.testing.assert_allclose(model.fit(q=q, vcov="iid", cov_type="naive").bse, ref_iid.bse,
                                   rtol=1e-5)
        if q == 0.5:
            np.testing.assert_allclose(res.bse, ref.bse, rtol=1e-5)
    assert n_unique >= 4
    assert res.privacy.private is False
    assert "NOT PRIVATE" in str(res.summary())


# ---- the DP model ---------------------------------------------------------------------

@pytest.mark.parametrize(
    "formula",
    ["y ~ x + C(g)", "y ~ C(g, Treatment('mid')) + x", "y ~ np.log(x) + I(x**2)", "y ~ x:C(g)",
     "y ~ x - 1", "np.log(y + 10) ~ x"],
)
def test_parameter_names_match_statsmodels(mixed_frame, formula):
    res = dp_quantreg(formula, mixed_frame, epsilon=1.0, bounds=MIXED_BOUNDS,
                      levels=MIXED_LEVELS, bins=6, random_state=0).fit(q=0.25)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ref = smf.quantreg(formula, mixed_frame).fit(q=0.25)
    assert list(res.params.index) == list(ref.params.index)
    assert res.model.endog_names == ref.model.endog_names
    assert np.isfinite(res.params).all() and np.isfinite(res.bse).all()


def test_housing_release_several_quantiles(housing_small):
    # midpoint cells: one row per released cell with its integer count (checked below);
    # 7 bins: on coarser grids the median's LP has ties and statsmodels' reference on the
    # expanded rows stops at its iteration limit
    model = dp_quantreg(HOUSING_FORMULA, housing_small, epsilon=1.0, bounds=HOUSING_BOUNDS,
                        levels=HOUSING_LEVELS, random_state=7, representatives="midpoint",
                        bins=7)
    assert isinstance(model, DPQuantReg)
    start = time.perf_counter()
    many = model.fit_many(QS, cov_type="naive")
    elapsed = time.perf_counter() - start
    assert elapsed < 5.0, elapsed  # ~0.1 s here; statsmodels on raw rows takes seconds
    assert list(many) == QS
    for q, res in many.items():
        assert res.q == q
        assert res.nobs == model.privacy.noisy_total
        assert res.df_resid == res.nobs - 8 and res.df_model == 7
        assert res.privacy is model.privacy and res.release is model.release
        again = model.fit(q=q, cov_type="naive")
        np.testing.assert_array_equal(again.params, res.params)
        np.testing.assert_array_equal(again.bse, res.bse)
    # quantile fits are ordered at a typical design point
    new = housing_small.iloc[:200]
    preds = np.column_stack([many[q].predict(new) for q in QS])
    assert np.mean(np.all(np.diff(preds, axis=1) >= 0, axis=1)) > 0.9
    # frequency weights: the exact minimum of the check loss on the expanded cells
    # (an LP on the expanded rows); statsmodels' IRLS on those rows gets no lower, and
    # where it reaches the same minimum it finds the same coefficients and errors
    res = many[0.5]
    w = model.weights
    y_x, X_x = np.repeat(res.model.endog, w), np.repeat(res.model.exog, w, axis=0)

    def check_loss(b):
        r = y_x - X_x @ np.asarray(b)
        return float(np.sum(r * (0.5 - (r < 0))))

    n_x, p_x = X_x.shape
    lp = linprog(np.concatenate([np.zeros(p_x), np.full(2 * n_x, 0.5)]),
                 A_eq=sparse.hstack([sparse.csr_matrix(X_x), sparse.eye(n_x), -sparse.eye(n_x)]),
                 b_eq=y_x, bounds=[(None, None)] * p_x + [(0, None)] * (2 * n_x), method="highs")
    assert lp.status == 0
    assert check_loss(res.params) == pytest.approx(lp.fun, rel=1e-9)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # IterationLimitWarning on tied LPs
        ref = QuantReg(y_x, X_x).fit(q=0.5)
    assert check_loss(res.params) <= check_loss(ref.params) * (1 + 1e-9)
    if check_loss(ref.params) <= lp.fun * (1 + 1e-9):
        np.testing.assert_allclose(res.params, ref.params, rtol=1e-5)
        np.testing.assert_allclose(res.bse, ref.bse, rtol=1e-5)
    with pytest.raises(ValueError, match="between 0 and 1"):
        model.fit_many([0.5, 1.0])
    with pytest.raises(ValueError, match="between 0 and 1"):
        model.fit(q=0.0)


def test_predict_conf_int_and_summary_formats(housing_small):
    model = dp_quantreg(HOUSING_FORMULA, housing_small, epsilon=1.0, bounds=HOUSING_BOUNDS,
                        levels=HOUSING_LEVELS, bins=10, random_state=7)
    res = model.fit(q=0.75, n_boot=60)
    new = housing_small.iloc[:25]
    pred = res.predict(new)
    X = np.column_stack([np.ones(25)] + [(new["county"] == f"County{i}").astype(float)
                                         for i in range(2, 7)] + [new["size"], new["year"]])
    np.testing.assert_allclose(pred, X @ res.params.to_numpy(), rtol=1e-10)
    ci = res.conf_int(0.1)
    assert ci.shape == (8, 2) and (ci[0] < ci[1]).all()
    assert np.all((res.pvalues >= 0) & (res.pvalues <= 1))
    smry = res.summary()
    text, html, latex = smry.as_text(), smry.as_html(), smry.as_latex()
    for rendered in (text, html, latex):
        assert "Differential privacy" in rendered
        assert "Released cells" in rendered
        assert "QuantReg" in rendered
    for label in ("Pseudo R-squared", "Bandwidth", "Sparsity", "No. Observations"):
        assert label in text
    assert "q = 0.75" in text
    assert "Noisy total:" in text and f"{model.privacy.noisy_total:,.1f}" in text


def test_fit_on_release_is_free(housing_small):
    acct = dpm.Accountant(1.0)
    rel = dpm.release(housing_small, formula=HOUSING_FORMULA, epsilon=1.0, bounds=HOUSING_BOUNDS,
                      levels=HOUSING_LEVELS, bins=10, random_state=1, accountant=acct)
    assert acct.spent == pytest.approx(1.0)
    model = dp_quantreg(HOUSING_FORMULA, rel, accountant=acct)
    assert model.budget_spent == 0.0
    # the budget is the point here, not the standard errors: no bootstrap
    many = model.fit_many([0.1, 0.5, 0.9], cov_type="naive")
    sub = dp_quantreg("price ~ size", rel).fit(q=0.5, cov_type="naive")
    assert sub.nobs == rel.report.noisy_total
    assert acct.spent == pytest.approx(1.0)
    assert all(r.privacy is rel.report for r in many.values())
    with pytest.raises(dpm.BudgetExceededError):
        dp_quantreg(HOUSING_FORMULA, housing_small, epsilon=0.5, bounds=HOUSING_BOUNDS,
                    levels=HOUSING_LEVELS, accountant=acct)


def test_signed_counts_refused_before_any_noise(mixed_frame):
    rng = np.random.default_rng(0)
    state = rng.bit_generator.state
    acct = dpm.Accountant(2.0)
    with pytest.raises(ValueError, match="threshold=None"):
        dp_quantreg("y ~ x + C(g)", mixed_frame, epsilon=1.0, bounds=MIXED_BOUNDS,
                    levels=MIXED_LEVELS, bins=8, threshold=None, random_state=rng, accountant=acct)
    assert rng.bit_generator.state == state
    assert acct.spent == 0
    # a signed release made elsewhere is refused too (it may carry negative cells)
    signed = dpm.release(mixed_frame, formula="y ~ x + C(g)", epsilon=1.0, bounds=MIXED_BOUNDS,
                         levels=MIXED_LEVELS, bins=8, threshold=None, random_state=4)
    with pytest.raises(ValueError, match="signed"):
        dp_quantreg("y ~ x + C(g)", signed)
    # OLS still accepts signed counts
    assert np.isfinite(dpm.dp_ols("y ~ x + C(g)", signed).fit().params).all()


# ---- a coarsely binned response: coefficients fixed by one bin are flagged ------------

COARSE_X = ["x1", "x2", "x3", "x4"]
COARSE_FORMULA = "y ~ " + " + ".join(COARSE_X)
COARSE_BETA = np.array([1.0, -0.5, 0.75, 0.25])
COARSE_BOUNDS = {"y": (-15.0, 17.0)} | {x: (-4.0, 4.0) for x in COARSE_X}


def _coarse_frame(n: int) -> pd.DataFrame:
    rng = np.random.default_rng(0)
    X = rng.normal(size=(n, 4)).clip(-4, 4)
    df = pd.DataFrame(X, columns=COARSE_X)
    df["y"] = 1 + X @ COARSE_BETA + rng.normal(size=n)
    return df


@pytest.mark.filterwarnings("ignore:the sparsity estimate:RuntimeWarning")
@pytest.mark.parametrize("bins, epsilon, n", [(3, 1.0, 5_000), (5, 3.0, 20_000)])
def test_coefficients_fixed_by_one_response_bin_are_flagged(bins, epsilon, n):
    """Regression (benchmark: 8 covariates, n = 1e5, bins="auto" giving 3 or 5 bins): the
    median plane came out flat -- intercept 1, every slope 0 -- with no warning and
    bootstrap standard errors of about 1e-4.  With an odd number of bins the middle bin of
    y is centred on 1, the centre of its bounds and the median of y; with more than 3
    continuous variables every cell is one point, and the spurious cells sit on their bin
    midpoints, so a large share of the count has y exactly 1 (or within a small shift of
    it), spread over every x.  The flat plane through those cells is the exact minimizer
    of the check loss on the released cells -- not a solver failure -- but it says nothing
    about the slopes, and the fit must say so."""
    df = _coarse_frame(n)
    model = dp_quantreg(COARSE_FORMULA, df, epsilon=epsilon, bounds=COARSE_BOUNDS, bins=bins,
                        random_state=0, method="histogram")
    assert model.representer.method == "sheppard"  # the benchmark's points (> 3 continuous)
    names = "Intercept, x1, x2, x3, x4"
    with pytest.warns(ReleaseWarning, match=f"{names} are fixed by the binning of y") as rec:
        res = model.fit(q=0.5, cov_type="naive")
    assert not [w for w in rec if issubclass(w.category, ConvergenceWarning)]
    # the symptom: a flat plane inside the middle bin of y
    lo, hi = np.linspace(-15.0, 17.0, bins + 1)[[bins // 2, bins // 2 + 1]]
    assert lo < res.params["Intercept"] < hi
    assert np.all(np.abs(res.params[COARSE_X]) < 0.01)
    # ... which the released cells prefer to the true plane: the data, not the solver
    X, y, w = res.model.exog, res.model.endog, res.model.weights
    truth = np.concatenate([[1.0], COARSE_BETA])
    assert res.objective <= _check_loss(y - X @ truth, 0.5, w)
    assert res.unresolved.tolist() == [True] * 5
    assert "fixed by the binning of y" in str(res.summary())

    # cov_type="dp": every replicate is held on the same bin, so the bootstrap spread is
    # about 0; the flagged coefficients get infinite standard errors instead
    with pytest.warns(ReleaseWarning, match="fixed by the binning of y"):
        dp = model.fit(q=0.5, n_boot=20, random_state=1)
    assert np.all(np.isinf(dp.bse))
    assert np.all(dp.pvalues == 1.0)
    ci = dp.conf_int()
    assert np.all(np.isneginf(ci[0])) and np.all(np.isposinf(ci[1]))
    text = str(dp.summary())
    assert "fixed by the binning of y" in text
    assert "carries no information" not in text  # not the spurious-cells reason

    # the remedy the warning names: more bins for y resolve the slopes
    finer = dp_quantreg(COARSE_FORMULA, df, epsilon=epsilon, bounds=COARSE_BOUNDS,
                        bins={"y": 30} | {x: 3 for x in COARSE_X}, random_state=0,
                        method="histogram")
    with warnings.catch_warnings():
        warnings.simplefilter("error", ReleaseWarning)
        fine = finer.fit(q=0.5, cov_type="naive")
    assert not fine.unresolved.any()
    assert np.all(np.sign(fine.params[COARSE_X]) == np.sign(COARSE_BETA))
    assert fine.params["x1"] > 0.5


def test_constant_response_has_no_duality_gap_warning():
    # every row on the fitted plane: objective 0, where a purely relative duality-gap
    # test flagged rounding (~1e-14) as a possibly inaccurate estimate
    rng = np.random.default_rng(0)
    X = sm.add_constant(rng.normal(size=(30, 2)))
    y = np.full(30, 1.7)
    for _ in range(10):
        w = rng.integers(1, 50, size=30)
        with warnings.catch_warnings():
            warnings.simplefilter("error", ConvergenceWarning)
            warnings.simplefilter("ignore", RuntimeWarning)  # sparsity undefined: no spread
            res = FreqQuantReg(y, X, weights=w).fit(q=0.3)
        np.testing.assert_allclose(res.params, [1.7, 0.0, 0.0], atol=1e-12)
