"""dp_mnlogit and FreqMNLogit: equivalence with the expanded data, exactness
at epsilon=inf, statsmodels names, predict, summaries, separation, input
errors before any noise, and free fits on an existing release."""

from __future__ import annotations

import re
import warnings

import numpy as np
import pandas as pd
import pytest
import statsmodels.api as sm
import statsmodels.formula.api as smf

import dpmodels as dpm
from dpmodels.core.errors import SeparationError, SeparationWarning
from dpmodels.models.discrete import FreqMNLogit
from dpmodels.front.api import dp_mnlogit
from dpmodels.models.mnlogit import DPMNLogit

LEVELS = {"m": [0, 1, 2], "k": [1, 2, 3, 4], "g": ["a", "b", "c"], "ms": ["p", "q", "r"]}
SPECIES = ["setosa", "versicolor", "virginica"]
FLOWER_BOUNDS = {"length": (4, 8), "width": (0, 3)}


@pytest.fixture
def multi_frame() -> pd.DataFrame:
    """Only discrete variables: epsilon=inf must reproduce smf.mnlogit exactly."""
    rng = np.random.default_rng(31)
    n = 4_000
    g = rng.choice(["a", "b", "c"], size=n, p=[0.5, 0.3, 0.2])
    k = rng.integers(1, 5, size=n)
    b = rng.random(n) < 0.4
    eta = np.column_stack([np.zeros(n), -0.5 + 0.3 * k - 0.6 * (g == "b"),
                           0.5 - 0.4 * k + 0.5 * b])
    p = np.exp(eta) / np.exp(eta).sum(1, keepdims=True)
    m = (rng.random(n)[:, None] > p.cumsum(1)).sum(1)
    return pd.DataFrame({"m": m, "k": k, "g": g, "b": b, "ms": np.array(["p", "q", "r"])[m]})


def _flowers(n: int, seed: int) -> pd.DataFrame:
    """Iris-like synthetic data: three species, two continuous measurements."""
    rng = np.random.default_rng(seed)
    species = rng.choice(3, size=n)
    length = rng.normal(np.array([5.0, 5.9, 6.6])[species], 0.5)
    width = rng.normal(np.array([0.8, 1.3, 1.8])[species], 0.3)
    return pd.DataFrame({"species": np.array(SPECIES)[species],
                         "length": np.clip(length, 4, 7.999), "width": np.clip(width, 0, 2.999)})


def _inf_fit(formula, data, **kw):
    with pytest.warns(dpm.NotPrivateWarning):
        return dp_mnlogit(formula, data, epsilon=float("inf"), **kw).fit(cov_type="naive")


def _cells(seed=0, cells=90, J=3):
    rng = np.random.default_rng(seed)
    X = sm.add_constant(np.column_stack([rng.integers(0, 4, cells), rng.normal(size=cells)]))
    y = rng.integers(0, J, size=cells)
    w = rng.integers(1, 12, size=cells).astype(float)
    return X, y, w


def _without_date(text: str) -> list[str]:
    return [re.sub(r"(Date|Time):\s+\S.*?(?=\s{2,}|$)", r"\1:", line) for line in text.splitlines()]


# ---- FreqMNLogit: frequency weights == expanded data --------------------------------------

@pytest.mark.parametrize("J", [2, 3, 5])
def test_freq_mnlogit_equals_expanded_data(J):
    X, y, w = _cells(seed=J, J=J)
    res = FreqMNLogit(y, X, weights=w).fit(disp=0)
    wi = w.astype(int)
    ref = sm.MNLogit(np.repeat(y, wi), np.repeat(X, wi, axis=0)).fit(disp=0)
    np.testing.assert_allclose(res.params, ref.params, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(res.bse, ref.bse, rtol=1e-9)
    np.testing.assert_allclose(res.tvalues, ref.tvalues, rtol=1e-8, atol=1e-12)
    np.testing.assert_allclose(res.conf_int(), ref.conf_int(), rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(res.cov_params(), ref.cov_params(), rtol=1e-9, atol=1e-14)
    for attr in ("nobs", "df_resid", "df_model", "llf", "aic", "bic"):
        np.testing.assert_allclose(getattr(res, attr), getattr(ref, attr), rtol=1e-12, err_msg=attr)
    for attr in ("llnull", "prsquared", "llr", "llr_pvalue"):
        np.testing.assert_allclose(getattr(res, attr), getattr(ref, attr), rtol=1e-7, err_msg=attr)
    shares = np.bincount(y, weights=w, minlength=J) / w.sum()
    np.testing.assert_allclose(res.llnull, w.sum() * np.sum(shares * np.log(shares)), rtol=1e-12)
    pred = res.predict()
    np.testing.assert_allclose(np.repeat(pred, wi, axis=0), ref.predict(), rtol=1e-9)
    np.testing.assert_array_equal(res.pred_table(), ref.pred_table())
    assert res.nobs == w.sum() and res.df_resid == w.sum() - 3 * (J - 1)
    b = np.random.default_rng(1).normal(scale=0.3, size=3 * (J - 1))
    for fn in ("loglike", "score", "hessian"):
        np.testing.assert_allclose(getattr(res.model, fn)(b), getattr(ref.model, fn)(b),
                                   rtol=1e-10, atol=1e-9, err_msg=fn)
    np.testing.assert_allclose(res.model.score_obs(b).sum(0), ref.model.score(b), rtol=1e-10)
    ours, theirs = res.summary(title="T"), ref.summary(title="T")
    assert _without_date(ours.tables[0].as_text()) == _without_date(theirs.tables[0].as_text())
    assert ours.tables[1].as_text() == theirs.tables[1].as_text()


def test_freq_mnlogit_ylevels_name_the_equations_as_statsmodels():
    X, y, w = _cells(seed=4)
    labels = np.array(["p", "q", "r"])
    wi = w.astype(int)
    res = FreqMNLogit(pd.Series(y, name="kind"), X, weights=w, ylevels=labels).fit(disp=0)
    ref = sm.MNLogit(pd.Series(np.repeat(labels[y], wi), name="kind"),
                     np.repeat(X, wi, axis=0)).fit(disp=0)
    assert res.model.data.cov_names.equals(ref.model.data.cov_names)
    assert res.summary().tables[1].as_text() == ref.summary().tables[1].as_text()
    np.testing.assert_allclose(res.params, ref.params, rtol=1e-9)


def test_freq_mnlogit_weights_keyword_and_negative_weights():
    X, y, w = _cells()
    df = pd.DataFrame({"y": y, "a": X[:, 1], "z": X[:, 2]})
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # MNLogit itself warns "unknown kwargs ['weights']"
        res = FreqMNLogit.from_formula("y ~ a + z", df, weights=w).fit(disp=0)
    ref = smf.mnlogit("y ~ a + z", df.loc[df.index.repeat(w.astype(int))]).fit(disp=0)
    np.testing.assert_allclose(res.params, ref.params, rtol=1e-9)
    w[0] = -2
    with pytest.raises(ValueError, match="weights"):
        FreqMNLogit(y, X, weights=w)


# ---- epsilon = inf reproduces smf.mnlogit ------------------------------------------------

@pytest.mark.parametrize(
    "formula",
    ["m ~ k + C(g) + b", "m ~ C(k) + C(g, Treatment('b'))", "m ~ k * b", "m ~ np.log(k) + C(g)"],
)
def test_inf_epsilon_reproduces_smf_mnlogit(multi_frame, formula):
    res = _inf_fit(formula, multi_frame, levels=LEVELS)
    ref = smf.mnlogit(formula, multi_frame).fit(disp=0)
    assert res.params.index.equals(ref.params.index)
    assert res.params.columns.equals(ref.params.columns)
    assert res.model.data.cov_names.equals(ref.model.data.cov_names)
    np.testing.assert_allclose(res.params, ref.params, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(res.bse, ref.bse, rtol=1e-6)
    for attr in ("nobs", "df_resid", "df_model", "llf", "aic", "bic"):
        np.testing.assert_allclose(getattr(res, attr), getattr(ref, attr), rtol=1e-9, err_msg=attr)
    for attr in ("llnull", "prsquared", "llr_pvalue"):
        np.testing.assert_allclose(getattr(res, attr), getattr(ref, attr), rtol=1e-6, err_msg=attr)
    np.testing.assert_allclose(res.predict(multi_frame), ref.predict(multi_frame), rtol=1e-8)
    assert res.separation == ()
    assert "NOT PRIVATE" in str(res.summary())


def test_string_and_categorical_responses(multi_frame):
    X = smf.mnlogit("m ~ k + C(g)", multi_frame).exog
    ref = sm.MNLogit(multi_frame["ms"], X).fit(disp=0)
    res = _inf_fit("ms ~ k + C(g)", multi_frame, levels=LEVELS)
    np.testing.assert_allclose(res.params, ref.params, rtol=1e-8)
    np.testing.assert_allclose(res.bse, ref.bse, rtol=1e-8)
    assert list(res.model.data.cov_names) == [(y, x) for y in ("q", "r")
                                              for x in res.params.index]
    assert "ms=q" in res.summary().as_text()
    # a Categorical declared by its dtype keeps its category order: base level "r"
    df = multi_frame.assign(mc=pd.Categorical(multi_frame["ms"], categories=["r", "p", "q"]))
    res = _inf_fit("mc ~ k + C(g)", df, levels={**LEVELS, "mc": "dtype"})
    ref = sm.MNLogit(df["mc"], X).fit(disp=0)
    np.testing.assert_allclose(res.params, ref.params, rtol=1e-8)
    assert "mc=p" in res.summary().as_text() and "base level 'r'" in res.summary().as_text()


def test_iris_like_binned_predictors_equal_mnlogit_on_bin_midpoints():
    df = _flowers(3_000, seed=1)
    res = _inf_fit("species ~ length + width", df, bounds=FLOWER_BOUNDS,
                   levels={"species": SPECIES}, bins=8, representatives="midpoint")
    mid = df.copy()
    for col, (lo, hi) in FLOWER_BOUNDS.items():
        width = (hi - lo) / 8
        mid[col] = lo + (np.floor((df[col] - lo) / width) + 0.5) * width
    ref = sm.MNLogit(mid["species"], sm.add_constant(mid[["length", "width"]])).fit(disp=0)
    np.testing.assert_allclose(res.params, ref.params, rtol=1e-6)
    np.testing.assert_allclose(res.bse, ref.bse, rtol=1e-6)


def test_iris_like_private_fit_classifies_like_the_raw_fit():
    df = _flowers(60_000, seed=2)
    res = dp_mnlogit("species ~ length + width", df, epsilon=1.0, bounds=FLOWER_BOUNDS,
                     levels={"species": SPECIES}, bins=12, random_state=0).fit()
    ref = sm.MNLogit(df["species"], sm.add_constant(df[["length", "width"]])).fit(disp=0)
    test = _flowers(5_000, seed=3)
    probs = np.asarray(res.predict(test))
    assert probs.shape == (5_000, 3)
    accuracy = np.mean(np.array(SPECIES)[probs.argmax(1)] == test["species"])
    ref_acc = np.mean(np.array(SPECIES)[np.asarray(
        ref.predict(sm.add_constant(test[["length", "width"]]))).argmax(1)] == test["species"])
    assert accuracy > ref_acc - 0.03, (accuracy, ref_acc)


# ---- names, predict, summaries on a private release ---------------------------------------

@pytest.mark.parametrize("formula", ["m ~ x + C(g)", "m ~ np.log(x) + I(x**2)", "m ~ x:C(g)",
                                     "m ~ x*g"])
def test_parameter_names_match_statsmodels(formula):
    rng = np.random.default_rng(6)
    n = 8_000
    x = rng.uniform(0.5, 10, n)
    g = rng.choice(["lo", "mid", "hi"], n)
    m = np.where(rng.random(n) < 0.3, 0, np.where(x + rng.normal(0, 2, n) > 5, 1, 2))
    df = pd.DataFrame({"m": m, "x": x, "g": g})
    res = dp_mnlogit(formula, df, epsilon=1.0, bounds={"x": (0, 10)},
                     levels={"m": [0, 1, 2], "g": ["lo", "mid", "hi"]}, bins=6,
                     random_state=0).fit(separation="ignore")
    ref = smf.mnlogit(formula, df).fit(disp=0)
    assert res.params.index.equals(ref.params.index)
    assert res.params.columns.equals(ref.params.columns)
    assert res.model.data.cov_names.equals(ref.model.data.cov_names)
    assert res.model.endog_names == ref.model.endog_names


def test_predict_probabilities_and_summary_formats():
    df = _flowers(20_000, seed=4)
    model = dp_mnlogit("species ~ length + width", df, epsilon=1.0, bounds=FLOWER_BOUNDS,
                       levels={"species": SPECIES}, bins=10, random_state=5)
    assert isinstance(model, DPMNLogit)
    res = model.fit()
    probs = np.asarray(res.predict(df.iloc[:40]))
    assert probs.shape == (40, 3)
    assert np.all((probs >= 0) & (probs <= 1))
    np.testing.assert_allclose(probs.sum(axis=1), 1.0, rtol=1e-12)
    assert res.nobs == model.release.report.noisy_total
    assert res.df_resid == res.nobs - 6
    # the cells' likelihoods are refused on a private fit (tests/contracts/test_results_contract.py)
    assert not hasattr(res, "prsquared") and not hasattr(res, "llf")
    smry = res.summary()
    text, html, latex = smry.as_text(), smry.as_html(), smry.as_latex()
    for rendered in (text, html, latex):
        assert "Differential privacy" in rendered
        assert "species=versicolor" in rendered
        assert "LL-Null" in rendered
    assert "DP MNLogit Regression Results" in text
    assert res.conf_int().shape == (6, 2)


def test_fit_on_release_is_free(multi_frame):
    acct = dpm.Accountant(1.0)
    rel = dpm.release(multi_frame, formula="ms ~ k + C(g)", epsilon=1.0, levels=LEVELS,
                      random_state=1, accountant=acct)
    res = dp_mnlogit("ms ~ k + C(g)", rel).fit()
    again = dp_mnlogit("ms ~ k + C(g)", rel, accountant=acct).fit()
    np.testing.assert_array_equal(res.params, again.params)
    sub = dp_mnlogit("ms ~ k", rel).fit()
    assert sub.nobs == rel.report.noisy_total
    assert acct.spent == pytest.approx(1.0)
    with pytest.raises(dpm.DomainError, match="'k'"):
        dp_mnlogit("ms ~ C(k)", dpm.release(multi_frame, formula="ms ~ k", epsilon=1.0,
                                            bounds={"k": (0, 5)}, levels=LEVELS, bins=5,
                                            random_state=0))


# ---- bad inputs: refused before any noise ------------------------------------------------

@pytest.mark.parametrize(
    ("formula", "kw", "error", "match"),
    [
        ("m ~ k", dict(levels={"m": [0], "k": [1, 2, 3, 4]}), dpm.DomainError, "'m'.*single"),
        ("m ~ k", dict(bounds={"m": (0, 2)}, levels={"k": [1, 2, 3, 4]}), dpm.DomainError,
         "'m'.*continuous"),
        ("C(m) ~ k", dict(levels={"m": [0, 1, 2], "k": [1, 2, 3, 4]}), dpm.DPModelsError,
         "single variable"),
        ("m ~ k", dict(levels={"m": [0, 1, 2], "k": [1, 2, 3, 4]}, threshold=None),
         dpm.DPModelsError, "threshold"),
        ("ms ~ k", dict(levels={"ms": ["p", "q"], "k": [1, 2, 3, 4]}),
         dpm.UndeclaredLevelError, "'ms'"),
    ],
)
def test_bad_inputs_raise_before_noise(multi_frame, formula, kw, error, match):
    rng = np.random.default_rng(0)
    state = rng.bit_generator.state
    acct = dpm.Accountant(5.0)
    with pytest.raises(error, match=match) as info:
        dp_mnlogit(formula, multi_frame, epsilon=1.0, random_state=rng, accountant=acct, **kw)
    assert isinstance(info.value, ValueError)
    assert rng.bit_generator.state == state
    assert acct.spent == 0


# ---- empty levels and separation -------------------------------------------------------------

def test_response_level_without_released_cells_is_left_out(multi_frame):
    levels = {**LEVELS, "ms": ["p", "q", "r", "s"]}
    with pytest.warns(dpm.ReleaseWarning, match="'s'"):
        with pytest.warns(dpm.NotPrivateWarning):
            res = dp_mnlogit("ms ~ k", multi_frame, epsilon=float("inf"), levels=levels).fit()
    ref = smf.mnlogit("m ~ k", multi_frame).fit(disp=0)
    np.testing.assert_allclose(res.params, ref.params, rtol=1e-8)
    assert "left out (no released cell): 's'" in res.summary().as_text()
    df = multi_frame.assign(ms="p")
    df.loc[df.index[:4], "ms"] = "q"
    model = dp_mnlogit("ms ~ k", df, epsilon=1.0, levels=LEVELS, threshold=30, random_state=0)
    with pytest.raises(SeparationError, match="every released cell has ms = 'p'"):
        model.fit()


def test_separation_warns_or_raises(multi_frame):
    df = multi_frame.copy()
    df.loc[df["g"] == "c", "ms"] = "p"
    with pytest.warns(dpm.NotPrivateWarning):
        model = dp_mnlogit("ms ~ k + C(g)", df, epsilon=float("inf"), levels=LEVELS)
    with pytest.warns(SeparationWarning, match=r"C\(g\)\[T\.c\] \(ms=q\)"):
        res = model.fit()
    assert set(res.separation) <= {"C(g)[T.c] (ms=q)", "C(g)[T.c] (ms=r)"}
    assert (res.params.loc["C(g)[T.c]"] < -10).all()
    assert "Separation" in res.summary().as_text()
    with pytest.raises(SeparationError):
        model.fit(separation="raise")


def test_batched_refit_matches_statsmodels_for_few_and_many_replicates():
    """refit_mnlogit forms the Hessian's pair weights in one array for a few
    replicates and pair by pair for many: both give statsmodels' MLE of each
    weight column."""
    import statsmodels.api as sm

    from dpmodels.models.mnlogit import _PAIRS_AT_ONCE, refit_mnlogit

    rng = np.random.default_rng(4)
    C, J = 300, 4
    X = np.column_stack([np.ones(C), rng.normal(size=C), rng.normal(size=C)])
    eta = X @ rng.normal(scale=0.7, size=(3, J - 1))
    prob = np.exp(np.column_stack([np.zeros(C), eta]))
    prob /= prob.sum(axis=1, keepdims=True)
    y = np.array([rng.choice(J, p=row) for row in prob], dtype=float)
    W = rng.poisson(3.0, size=(C, _PAIRS_AT_ONCE + 3)).astype(float)
    start = np.zeros(3 * (J - 1))
    many, ok_many = refit_mnlogit(X, y, W, start, J)
    few, ok_few = refit_mnlogit(X, y, W[:, :2], start, J)
    assert ok_many.all() and ok_few.all()
    np.testing.assert_allclose(few, many[:2], rtol=1e-8, atol=1e-10)
    for j in (0, 1, W.shape[1] - 1):
        ref = sm.MNLogit(np.repeat(y, W[:, j].astype(int)),
                         np.repeat(X, W[:, j].astype(int), axis=0)).fit(disp=0, tol=1e-12)
        np.testing.assert_allclose(many[j], np.asarray(ref.params).T.ravel(), rtol=1e-6,
                                   atol=1e-8)
