"""dp_logit and FreqLogit: equivalence with the expanded data, exactness at
epsilon=inf, statsmodels names, predict, summaries, separation, input errors
before any noise, and free fits on an existing release."""

from __future__ import annotations

import re
import warnings

import numpy as np
import pandas as pd
import pytest
import statsmodels.api as sm
import statsmodels.formula.api as smf
from statsmodels.tools.sm_exceptions import PerfectSeparationError, PerfectSeparationWarning

import dpmodels as dpm
from dpmodels.core.errors import SeparationError, SeparationWarning, SingularDesignError
from dpmodels.models.discrete import FreqLogit, separation_direction
from dpmodels.front.api import dp_logit
from dpmodels.models.logit import DPLogit

from tests.conftest import HOUSING_LEVELS

LEVELS = {"y": [0, 1], "k": [1, 2, 3, 4], "g": ["a", "b", "c"], "ys": ["no", "yes"]}
MIXED_BOUNDS = {"x": (0, 10)}
MIXED_LEVELS = {"y": [0, 1], "g": ["lo", "mid", "hi"]}
HOUSING_F = "y ~ size + year + C(county)"


@pytest.fixture
def binary_frame() -> pd.DataFrame:
    """Only discrete variables: epsilon=inf must reproduce smf.logit exactly."""
    rng = np.random.default_rng(21)
    n = 3_000
    g = rng.choice(["a", "b", "c"], size=n, p=[0.5, 0.3, 0.2])
    k = rng.integers(1, 5, size=n)
    b = rng.random(n) < 0.4
    eta = -1.0 + 0.5 * k - 0.8 * (g == "b") + 0.6 * b
    y = (rng.random(n) < 1 / (1 + np.exp(-eta))).astype(np.int64)
    return pd.DataFrame({"y": y, "k": k, "g": g, "b": b, "ys": np.where(y == 1, "yes", "no")})


@pytest.fixture
def mixed_binary() -> pd.DataFrame:
    rng = np.random.default_rng(5)
    n = 6_000
    x = rng.uniform(0.5, 10, size=n)
    g = rng.choice(["lo", "mid", "hi"], size=n)
    eta = -2 + 0.4 * x + 0.8 * (g == "hi")
    y = (rng.random(n) < 1 / (1 + np.exp(-eta))).astype(np.int64)
    return pd.DataFrame({"y": y, "x": x, "g": g})


@pytest.fixture(scope="module")
def housing_binary() -> pd.DataFrame:
    df = dpm.datasets.housing(n=20_000, seed=3)
    df["y"] = (df["price"] > 500_000).astype(np.int64)
    return df


def _inf_fit(formula, data, **kw):
    with pytest.warns(dpm.NotPrivateWarning):
        return dp_logit(formula, data, epsilon=float("inf"), **kw).fit(cov_type="naive")


def _cells(seed=0, cells=80):
    rng = np.random.default_rng(seed)
    X = sm.add_constant(np.column_stack([rng.integers(0, 4, cells), rng.normal(size=cells)]))
    y = (rng.random(cells) < 1 / (1 + np.exp(-(X @ [-0.3, 0.4, 1.0])))).astype(float)
    w = rng.integers(1, 12, size=cells).astype(float)
    return X, y, w


def _without_date(text: str) -> list[str]:
    return [re.sub(r"(Date|Time):\s+\S.*?(?=\s{2,}|$)", r"\1:", line) for line in text.splitlines()]


# ---- FreqLogit: frequency weights == expanded data ----------------------------------------

def test_freq_logit_equals_expanded_data():
    X, y, w = _cells()
    res = FreqLogit(y, X, weights=w).fit(disp=0)
    wi = w.astype(int)
    ref = sm.Logit(np.repeat(y, wi), np.repeat(X, wi, axis=0)).fit(disp=0)
    np.testing.assert_allclose(res.params, ref.params, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(res.bse, ref.bse, rtol=1e-10)
    np.testing.assert_allclose(res.tvalues, ref.tvalues, rtol=1e-9)
    np.testing.assert_allclose(res.conf_int(), ref.conf_int(), rtol=1e-10, atol=1e-12)
    for attr in ("nobs", "df_resid", "df_model", "llf", "aic", "bic"):
        np.testing.assert_allclose(getattr(res, attr), getattr(ref, attr), rtol=1e-12, err_msg=attr)
    # statsmodels fits its null model numerically (Nelder-Mead + BFGS): ~1e-10 relative
    for attr in ("llnull", "prsquared", "llr", "llr_pvalue"):
        np.testing.assert_allclose(getattr(res, attr), getattr(ref, attr), rtol=1e-8, err_msg=attr)
    p = np.sum(w * y) / w.sum()
    exact_null = np.sum(w * (y * np.log(p) + (1 - y) * np.log(1 - p)))
    np.testing.assert_allclose(res.llnull, exact_null, rtol=1e-13)
    np.testing.assert_allclose(np.repeat(res.predict(), wi), ref.predict(), rtol=1e-10)
    np.testing.assert_array_equal(res.pred_table(), ref.pred_table())
    assert res.nobs == w.sum() and res.df_resid == w.sum() - 3
    # derivatives at an arbitrary point, not only at the optimum
    b = np.array([0.2, -0.1, 0.5])
    for fn in ("loglike", "score", "hessian"):
        np.testing.assert_allclose(getattr(res.model, fn)(b), getattr(ref.model, fn)(b),
                                   rtol=1e-10, err_msg=fn)
    np.testing.assert_allclose(res.model.score_obs(b).sum(0), ref.model.score(b), rtol=1e-10)
    np.testing.assert_allclose(res.model.loglikeobs(b).sum(), ref.model.loglike(b), rtol=1e-12)
    # the summary is statsmodels' Logit summary of the expanded data (+ notes)
    ours = res.summary(title="T")
    theirs = ref.summary(title="T")
    assert _without_date(ours.tables[0].as_text()) == _without_date(theirs.tables[0].as_text())
    assert ours.tables[1].as_text() == theirs.tables[1].as_text()


def test_freq_logit_from_formula_and_weights_keyword():
    X, y, w = _cells(seed=3)
    df = pd.DataFrame({"y": y, "a": X[:, 1], "z": X[:, 2]})
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no "unknown kwargs ['weights']" ValueWarning
        res = FreqLogit.from_formula("y ~ a + z", df, weights=w).fit(disp=0)
    ref = smf.logit("y ~ a + z", df.loc[df.index.repeat(w.astype(int))]).fit(disp=0)
    assert list(res.params.index) == list(ref.params.index)
    np.testing.assert_allclose(res.params, ref.params, rtol=1e-10)
    np.testing.assert_allclose(res.predict(df.iloc[:5]), ref.predict(df.iloc[:5]), rtol=1e-10)


def test_freq_logit_refuses_negative_weights_and_robust_cov():
    X, y, w = _cells()
    w[4] = -1.0
    with pytest.raises(ValueError, match="weights"):
        FreqLogit(y, X, weights=w)
    w[4] = 1.0
    with pytest.raises(NotImplementedError, match="nonrobust"):
        FreqLogit(y, X, weights=w).fit(disp=0, cov_type="HC0")


def test_separation_direction_finds_quasi_separation():
    X = sm.add_constant(np.column_stack([np.repeat([0.0, 1.0], 6), np.tile([1.0, 2, 3], 4)]))
    y = np.tile([0, 1], 6)
    assert separation_direction(X, y, 2) is None
    y_q = y.copy()
    y_q[X[:, 1] == 1] = 1  # the level x1 = 1 has only y = 1
    B = separation_direction(X, y_q, 2)
    assert B is not None and B[1, 0] > 0


# ---- epsilon = inf reproduces smf.logit ----------------------------------------------------

@pytest.mark.parametrize(
    "formula",
    [
        "y ~ k + C(g) + b",
        "y ~ C(k) + C(g, Treatment('b'))",
        "y ~ k * C(g)",
        "y ~ k:C(g) + b - 1",
        "y ~ np.log(k) + I(k**2)",
    ],
)
def test_inf_epsilon_reproduces_smf_logit(binary_frame, formula):
    res = _inf_fit(formula, binary_frame, levels=LEVELS)
    ref = smf.logit(formula, binary_frame).fit(disp=0)
    assert list(res.params.index) == list(ref.params.index)
    assert res.model.endog_names == ref.model.endog_names
    np.testing.assert_allclose(res.params, ref.params, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(res.bse, ref.bse, rtol=1e-6)
    for attr in ("nobs", "df_resid", "df_model", "llf", "aic", "bic"):
        np.testing.assert_allclose(getattr(res, attr), getattr(ref, attr), rtol=1e-9, err_msg=attr)
    for attr in ("llnull", "prsquared", "llr_pvalue"):
        np.testing.assert_allclose(getattr(res, attr), getattr(ref, attr), rtol=1e-6, err_msg=attr)
    np.testing.assert_allclose(res.predict(binary_frame), ref.predict(binary_frame), rtol=1e-8)
    assert res.separation == ()
    assert res.privacy.private is False
    assert "NOT PRIVATE" in str(res.summary())


def test_string_bool_and_categorical_responses(binary_frame):
    df = binary_frame.assign(flag=binary_frame["y"] == 1,
                             yc=pd.Categorical(binary_frame["ys"], categories=["yes", "no"]))
    ref = smf.logit("y ~ k + C(g)", df).fit(disp=0)
    # string factor: 1 = last level in sorted order ("yes")
    res = _inf_fit("ys ~ k + C(g)", df, levels=LEVELS)
    np.testing.assert_allclose(res.params, ref.params, rtol=1e-8)
    assert res.model.endog_names == "ys"
    assert "ys = 1 for 'yes', 0 for 'no'" in res.summary().as_text()
    # bool: 1 = True
    res = _inf_fit("flag ~ k + C(g)", df, levels=LEVELS)
    np.testing.assert_allclose(res.params, ref.params, rtol=1e-8)
    # Categorical declared by its dtype: category order kept, 1 = its last category ("no")
    res = _inf_fit("yc ~ k + C(g)", df, levels={**LEVELS, "yc": "dtype"})
    np.testing.assert_allclose(res.params, -ref.params, rtol=1e-8)
    assert "yc = 1 for 'no', 0 for 'yes'" in res.summary().as_text()


# ---- names, predict, summaries on a private release -------------------------------------

@pytest.mark.parametrize(
    "formula",
    [
        "y ~ x + C(g)",
        "y ~ C(g, Treatment('mid')) + x",
        "y ~ np.log(x) + I(x**2)",
        "y ~ x:C(g)",
        "y ~ x*g",
        "Q('y') ~ x",
    ],
)
def test_parameter_names_match_statsmodels(mixed_binary, formula):
    res = dp_logit(formula, mixed_binary, epsilon=1.0, bounds=MIXED_BOUNDS, levels=MIXED_LEVELS,
                   bins=6, random_state=0).fit()
    ref = smf.logit(formula, mixed_binary).fit(disp=0)
    assert list(res.params.index) == list(ref.params.index)
    assert res.model.endog_names == ref.model.endog_names
    assert res.privacy.private


def test_predict_probabilities_and_summary_formats(housing_binary):
    levels = {**HOUSING_LEVELS, "y": [0, 1]}
    model = dp_logit(HOUSING_F, housing_binary, epsilon=1.0, bounds={"size": (0, 3000)},
                     levels=levels, bins=10, random_state=7)
    assert isinstance(model, DPLogit)
    res = model.fit()
    new = housing_binary.iloc[:50]
    p = np.asarray(res.predict(new))
    assert p.shape == (50,) and np.all((p > 0) & (p < 1))
    X = np.column_stack([np.ones(50)] + [(new["county"] == f"County{i}").astype(float)
                                         for i in range(2, 7)] + [new["size"], new["year"]])
    np.testing.assert_allclose(p, 1 / (1 + np.exp(-X @ res.params.to_numpy())), rtol=1e-10)
    np.testing.assert_allclose(res.predict(new, which="linear"), X @ res.params.to_numpy(),
                               rtol=1e-10)
    assert res.nobs == model.release.report.noisy_total
    assert res.df_resid == res.nobs - 8
    assert np.all(np.isfinite(res.bse)) and np.all(res.bse > 0)
    # the cells' likelihoods are refused on a private fit (tests/contracts/test_results_contract.py)
    assert not hasattr(res, "prsquared") and not hasattr(res, "llf")
    smry = res.summary()
    text, html, latex = smry.as_text(), smry.as_html(), smry.as_latex()
    for rendered in (text, html, latex):
        assert "Differential privacy" in rendered
        assert "Pseudo R-squ." in rendered
        assert "LL-Null" in rendered
    assert "DP Logit Regression Results" in text and "Logit" in html
    assert "epsilon = 1" in text
    assert model.release.report is res.privacy


def test_fit_on_release_is_free(housing_binary):
    levels = {**HOUSING_LEVELS, "y": [0, 1]}
    acct = dpm.Accountant(1.0)
    rel = dpm.release(housing_binary, formula=HOUSING_F, epsilon=1.0, bounds={"size": (0, 3000)},
                      levels=levels, bins=10, random_state=1, accountant=acct)
    assert acct.spent == pytest.approx(1.0)
    full = dp_logit(HOUSING_F, rel).fit()
    again = dp_logit(HOUSING_F, rel, accountant=acct).fit()
    np.testing.assert_array_equal(full.params, again.params)
    sub = dp_logit("y ~ size", rel).fit()  # marginalized: post-processing
    assert sub.nobs == rel.report.noisy_total
    assert acct.spent == pytest.approx(1.0)
    assert full.privacy is rel.report
    with pytest.raises(dpm.BudgetExceededError):
        dp_logit(HOUSING_F, housing_binary, epsilon=0.5, bounds={"size": (0, 3000)},
                 levels=levels, accountant=acct)


def test_release_with_continuous_or_signed_response_is_refused(housing_binary):
    rel = dpm.release(housing_binary, formula="price ~ size", epsilon=1.0,
                      bounds={"price": (1e5, 9e5), "size": (0, 3000)}, bins=5, random_state=0)
    with pytest.raises(dpm.DomainError, match="'price'"):
        dp_logit("price ~ size", rel)
    signed = dpm.release(housing_binary, formula="y ~ size", epsilon=1.0,
                         bounds={"size": (0, 3000)}, levels={"y": [0, 1]}, bins=5,
                         threshold=None, random_state=0)
    with pytest.raises(dpm.DPModelsError, match="threshold"):
        dp_logit("y ~ size", signed)


# ---- bad inputs: refused before any noise ------------------------------------------------

@pytest.mark.parametrize(
    ("formula", "kw", "error", "match"),
    [
        ("y ~ x", dict(bounds={"x": (0, 10), "y": (0, 1)}), dpm.DomainError, "'y'.*continuous"),
        ("y ~ x", dict(levels={"y": [0, 1, 2]}), dpm.DomainError, "'y'.*dp_mnlogit"),
        ("y ~ x", dict(levels={"y": [1, 2]}), dpm.DomainError, "'y'.*0/1"),
        ("y ~ x", dict(levels={"y": [1]}), dpm.DomainError, "'y'.*single"),
        ("g ~ x", dict(levels={"g": ["lo", "mid", "hi"]}), dpm.DomainError, "'g'.*three|'g'.*3"),
        ("I(1 - y) ~ x", dict(levels={"y": [0, 1]}), dpm.DPModelsError, "single variable"),
        ("C(y) ~ x", dict(levels={"y": [0, 1]}), dpm.DPModelsError, "single variable"),
        ("y ~ x", dict(levels={"y": [0, 1]}, threshold=None), dpm.DPModelsError, "threshold"),
        # string levels on an int column: refused from the dtype, before anything is counted
        ("y ~ x", dict(levels={"y": ["no", "yes"]}), dpm.DomainError, "'y'.*cannot hold"),
        ("y ~ x", dict(), dpm.DomainError, "'y'"),
    ],
)
def test_bad_inputs_raise_before_noise(mixed_binary, formula, kw, error, match):
    kw = {"bounds": MIXED_BOUNDS, **kw}
    rng = np.random.default_rng(0)
    state = rng.bit_generator.state
    acct = dpm.Accountant(5.0)
    with pytest.raises(error, match=match) as info:
        dp_logit(formula, mixed_binary, epsilon=1.0, random_state=rng, accountant=acct, **kw)
    assert isinstance(info.value, ValueError)
    assert rng.bit_generator.state == state
    assert acct.spent == 0


# ---- separation, empty classes and singular designs -------------------------------------

def _separated(binary_frame):
    df = binary_frame.copy()
    df.loc[df["g"] == "c", "y"] = 0  # level c: no event at all
    return df


def test_quasi_separation_warns_and_still_fits(binary_frame):
    df = _separated(binary_frame)
    with pytest.warns(SeparationWarning, match=r"C\(g\)\[T\.c\]") as rec:
        with pytest.warns(dpm.NotPrivateWarning):
            res = dp_logit("y ~ k + C(g)", df, epsilon=float("inf"), levels=LEVELS).fit()
    assert issubclass(rec[0].category, PerfectSeparationWarning)
    assert res.separation == ("C(g)[T.c]",)
    assert res.params["C(g)[T.c]"] < -10
    assert np.isfinite(res.params["k"]) and abs(res.params["k"]) < 5
    text = res.summary().as_text()
    assert "Separation" in text and "C(g)[T.c]" in text
    with pytest.warns(dpm.NotPrivateWarning):
        model = dp_logit("y ~ k + C(g)", df, epsilon=float("inf"), levels=LEVELS)
    with pytest.raises(SeparationError, match=r"C\(g\)\[T\.c\]") as info:
        model.fit(separation="raise")
    assert isinstance(info.value, PerfectSeparationError)
    assert isinstance(info.value, dpm.DPModelsError)


def test_complete_separation_does_not_crash(binary_frame):
    df = binary_frame.assign(y=(binary_frame["k"] > 2).astype(np.int64))
    with pytest.warns(dpm.NotPrivateWarning):
        model = dp_logit("y ~ k + C(g)", df, epsilon=float("inf"), levels=LEVELS)
    with pytest.warns(SeparationWarning):
        res = model.fit()
    assert not res.mle_retvals["converged"] or abs(res.params["k"]) > 10
    assert "Complete Separation" in res.summary().as_text()


def test_separation_created_by_the_noisy_threshold():
    rng = np.random.default_rng(8)
    n = 6_000
    g = rng.choice(["a", "b", "c"], size=n, p=[0.45, 0.45, 0.1])
    y = (rng.random(n) < 0.5).astype(np.int64)
    c_idx = np.flatnonzero(g == "c")
    y[c_idx] = 0
    y[c_idx[:3]] = 1  # 3 events in level c: far below the threshold of 40
    df = pd.DataFrame({"y": y, "g": g})
    ref = smf.logit("y ~ C(g)", df).fit(disp=0)
    assert np.isfinite(ref.params).all()  # the raw data are not separated
    with pytest.warns(SeparationWarning, match=r"C\(g\)\[T\.c\]"):
        res = dp_logit("y ~ C(g)", df, epsilon=1.0, levels={"y": [0, 1], "g": LEVELS["g"]},
                       threshold=40, random_state=0).fit()
    assert res.separation == ("C(g)[T.c]",)


def test_response_with_a_single_released_value_raises(binary_frame):
    df = binary_frame.copy()
    df["y"] = 0
    df.loc[df.index[:5], "y"] = 1
    model = dp_logit("y ~ k", df, epsilon=1.0, levels=LEVELS, threshold=30, random_state=0)
    with pytest.raises(SeparationError, match="no released cell has y = 1"):
        model.fit()


def test_factor_level_without_released_cells(binary_frame):
    """The naive fit refuses, naming the column; the default (dp) fit gives it
    an infinite SE and a warning (tests/mechanisms/histogram/test_absent_levels.py)."""
    df = binary_frame[binary_frame["g"] != "c"]
    with pytest.warns(dpm.NotPrivateWarning):
        model = dp_logit("y ~ k + C(g)", df, epsilon=float("inf"), levels=LEVELS)
    with pytest.raises(SingularDesignError, match=r"C\(g\)\[T\.c\]") as info:
        model.fit(cov_type="naive")
    assert isinstance(info.value, np.linalg.LinAlgError)
    with pytest.warns(dpm.ReleaseWarning, match=r"C\(g\)\[T\.c\] is not identified"):
        res = model.fit(random_state=0)
    assert np.isinf(res.bse["C(g)[T.c]"]) and np.isfinite(res.bse.drop("C(g)[T.c]")).all()


# ---- the housing data ---------------------------------------------------------------------

def test_housing_logit_is_close_to_the_raw_fit():
    df = dpm.datasets.housing(n=250_070, seed=0)
    df["y"] = (df["price"] > 500_000).astype(np.int64)
    levels = {**HOUSING_LEVELS, "y": [0, 1]}
    bounds = {"price": (1e5, 9e5), "size": (0, 3000)}
    res = dp_logit(HOUSING_F, df, epsilon=1.0, bounds=bounds, levels=levels, bins=30,
                   random_state=0).fit()
    ref = smf.logit(HOUSING_F, df).fit(disp=0)
    assert res.mle_retvals["converged"] and res.separation == ()
    rel_err = np.abs(res.params / ref.params - 1)
    assert rel_err.max() < 0.15, rel_err


def test_the_dp_summary_tests_the_model_with_the_dp_covariance(mixed_binary):
    """Under cov_type="dp" the summary's header shows the joint Wald test of
    every slope with the bootstrap's covariance, not statsmodels' LLR p-value
    (the likelihood ratio of the noisy cells as if they were rows: 1e-100 and
    smaller where the dp test says far less).  It is the same test as
    ``wald_test`` on those coefficients; the naive summary keeps the LLR."""
    model = dp_logit("y ~ x + C(g)", mixed_binary, epsilon=0.3, bounds=MIXED_BOUNDS,
                     levels=MIXED_LEVELS, random_state=2)
    res = model.fit(random_state=0)
    text = str(res.summary())
    assert "Wald p-value (dp)" in text and "LLR p-value" not in text
    slopes = [nm for nm in res.params.index if nm != "Intercept"]
    assert np.isfinite(res.bse[slopes]).all()
    wald = res.wald_test(", ".join(f"{nm} = 0" for nm in slopes), scalar=True)
    assert res.dp_wald_pvalue() == pytest.approx(float(wald.pvalue), rel=1e-6, abs=1e-300)
    assert f"{res.dp_wald_pvalue():#6.4g}" in text
    assert "LLR p-value" in str(model.fit(cov_type="naive").summary())
