"""Sample-and-aggregate results have the statsmodels API a user reaches for."""

from __future__ import annotations

import pickle
import warnings

import numpy as np
import pandas as pd
import pytest
from scipy import stats

import dpmodels as dpm
from dpmodels.core.errors import DPModelsError


@pytest.fixture(scope="module")
def frame():
    rng = np.random.default_rng(0)
    n = 8000
    df = pd.DataFrame({"x": rng.uniform(0, 1, n), "z": rng.uniform(0, 1, n)})
    df["y"] = 1 + 2 * df.x + rng.normal(0, 0.1, n)
    df["t"] = (rng.random(n) < 1 / (1 + np.exp(-(2 * df.x - 1)))).astype(int)
    df["k"] = rng.integers(0, 3, n)
    return df


def _fit(fn, formula, df, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn(formula, df, method="sample-aggregate", param_bounds=(-5, 5), random_state=0,
                  **kw).fit()


@pytest.fixture(scope="module")
def ols(frame):
    return _fit(dpm.dp_ols, "y ~ x + z", frame, epsilon=1.0,
                bounds={"x": (0, 1), "z": (0, 1), "y": (-1, 4)})


def test_t_wald_and_f_tests_use_the_released_covariance(ols):
    b, se = ols.params.to_numpy(), ols.bse.to_numpy()
    t = ols.t_test("x = 2")
    assert t.effect[0] == pytest.approx(b[1] - 2)
    assert t.sd.ravel()[0] == pytest.approx(se[1])
    assert float(t.pvalue) == pytest.approx(2 * stats.norm.sf(abs(b[1] - 2) / se[1]))
    # the same hypothesis as a matrix, and a joint one by hand
    assert float(ols.t_test(np.array([[0, 1, 0]]), [2]).pvalue) == pytest.approx(float(t.pvalue))
    w = ols.wald_test("x = 0, z = 0")
    by_hand = (b[1] / se[1]) ** 2 + (b[2] / se[2]) ** 2
    assert float(w.statistic) == pytest.approx(by_hand)
    assert float(w.pvalue) == pytest.approx(stats.chi2.sf(by_hand, 2))
    f = ols.f_test(np.eye(3)[1:])
    assert float(f.fvalue) == pytest.approx(by_hand / 2)
    assert f.df_num == 2 and f.df_denom == ols.release.report.blocks - 3
    with pytest.raises(DPModelsError, match="3 parameters"):
        ols.t_test(np.eye(2))


def test_get_prediction_summary_frame(ols, frame):
    new = frame.iloc[:5]
    sf = ols.get_prediction(new).summary_frame(alpha=0.1)
    np.testing.assert_allclose(sf["mean"], ols.predict(new))
    X = np.column_stack([np.ones(5), new.x, new.z])
    np.testing.assert_allclose(sf["mean_se"], np.sqrt((X**2) @ ols.bse.to_numpy() ** 2))
    z = stats.norm.isf(0.05)
    np.testing.assert_allclose(sf["mean_ci_upper"] - sf["mean"], z * sf["mean_se"])


def test_logit_prediction_goes_through_the_link_and_mnlogit_says_where_to_look(frame):
    lg = _fit(dpm.dp_logit, "t ~ x", frame, epsilon=2.0, bounds={"x": (0, 1)},
              levels={"t": [0, 1]})
    sf = lg.get_prediction(frame.iloc[:4]).summary_frame()
    np.testing.assert_allclose(sf["mean"], lg.predict(frame.iloc[:4]))
    assert ((0 < sf["mean_ci_lower"]) & (sf["mean_ci_lower"] < sf["mean"])
            & (sf["mean"] < sf["mean_ci_upper"]) & (sf["mean_ci_upper"] < 1)).all()
    mn = _fit(dpm.dp_mnlogit, "k ~ x", frame, epsilon=2.0, bounds={"x": (0, 1)},
              levels={"k": [0, 1, 2]})
    with pytest.raises(DPModelsError, match="predict"):
        mn.get_prediction(frame.iloc[:4])


def test_save_load_and_summary2(ols, tmp_path):
    from statsmodels.iolib.smpickle import load_pickle

    path = tmp_path / "sa.pickle"
    ols.save(path)
    for back in (type(ols).load(path), load_pickle(path)):
        pd.testing.assert_series_equal(back.params, ols.params)
        np.testing.assert_array_equal(np.asarray(back.conf_int()), np.asarray(ols.conf_int()))
    text = ols.summary2().as_text()
    assert "DP OLS (sample-and-aggregate)" in text and "Differential privacy" in text
    for name, lo in zip(["Intercept", "x", "z"], ols.conf_int()[0]):
        assert name in text and f"{lo:.4f}" in text
    assert pickle.loads(pickle.dumps(ols)).summary().as_text()


def test_mnlogit_columns_are_named_by_the_levels_as_the_histogram_routes(frame):
    """params, bse, tvalues and pvalues of a sample-and-aggregate MNLogit carry
    one column per non-base level named by it, as the histogram route's do and
    as its own conf_int's rows (they were labelled 0, 1)."""
    df = frame.assign(kk=frame.k.map({0: "lo", 1: "mid", 2: "hi"}))
    levels = {"kk": ["lo", "mid", "hi"]}
    sa = _fit(dpm.dp_mnlogit, "kk ~ x", df, epsilon=2.0, bounds={"x": (0, 1)}, levels=levels)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        hist = dpm.dp_mnlogit("kk ~ x", df, epsilon=2.0, bounds={"x": (0, 1)}, levels=levels,
                              method="histogram", random_state=0).fit(n_boot=20, random_state=0)
    want = list(hist.params.columns)
    for table in (sa.params, sa.bse, sa.tvalues, sa.pvalues):
        assert list(table.columns) == want
    assert list(sa.conf_int().index.get_level_values(0).unique()) == want
