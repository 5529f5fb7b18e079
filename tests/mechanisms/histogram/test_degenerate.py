"""Degenerate releases are reported as such: a noisy row count not
above the parameter count is never fitted into a summary that looks normal
(anes96, Newton logit at epsilon 1 printed 'No. Observations: 1',
'Df Residuals: -17'), and numpy's overflow warnings do not reach the user.
Since issue 44 such a release is not refused after its budget is spent: every
coefficient is reported without information, with a warning."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
import statsmodels.api as sm

import dpmodels as dpm
from dpmodels.mechanisms.moments.model import check_noisy_rows

#: from the ANES 1996 codebook: 7-point scales, age of adults, 24 income brackets
BOUNDS = {"logpopul": (-2.31, 9.0), "age": (18, 100), "income": (1, 24), "educ": (1, 7),
          "TVnews": (0, 7), "selfLR": (1, 7), "ClinLR": (1, 7), "DoleLR": (1, 7)}
FORMULA = "vote ~ logpopul + TVnews + selfLR + ClinLR + DoleLR + age + educ + income"


def test_check_noisy_rows():
    """A judgement, never a refusal: it runs after the budget is spent (issue 44)."""
    assert check_noisy_rows(11.0, 9)
    for bad in (10.0, 1.0, -5.0):
        assert not check_noisy_rows(bad, 9)


@pytest.mark.parametrize("seed", range(6))
def test_a_newton_logit_fit_is_never_degenerate_looking(seed):
    data = sm.datasets.anes96.load_pandas().data
    _degenerate_or_honest(lambda: dpm.dp_logit(
        FORMULA, data, epsilon=1.0, bounds=BOUNDS, levels={"vote": [0, 1]}, method="newton",
        random_state=seed).fit(n_boot=100, random_state=seed))


def _degenerate_or_honest(fit) -> None:
    """``fit()`` never raises after the spend (issue 44): it gives results whose
    noisy total exceeds the parameters, or, where the noise swamped the count,
    results with every standard error infinite, a warning saying so and
    never a negative "Df Residuals"; never a NaN standard error or a
    RuntimeWarning."""
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        res = fit()
        text = res.summary().as_text()
    assert not np.isnan(np.asarray(res.bse)).any()
    assert not [w for w in rec if issubclass(w.category, RuntimeWarning)]
    if res.nobs > len(res.params) + 1:
        assert res.df_resid > 0
        return
    assert np.isinf(np.asarray(res.bse)).all()
    assert any("noise swamped" in str(w.message) for w in rec)
    assert "Df Residuals: -" not in " ".join(text.split())


@pytest.mark.parametrize("fn, method", [(dpm.dp_ols, "moments"), (dpm.dp_ols, "histogram"),
                                        (dpm.dp_quantreg, "newton"),
                                        (dpm.dp_quantreg, "histogram")])
@pytest.mark.parametrize("seed", range(3))
def test_twelve_rows_are_degenerate_or_an_honest_fit(fn, method, seed):
    """12 rows, 4 parameters, epsilon 0.3, on every route of least squares and
    quantile regression: a degenerate refusal, or a fit whose noisy total
    exceeds the parameters, with no NaN standard error and no numpy or
    kernel-sparsity RuntimeWarning (the histogram's median regression warned
    that its naive sparsity was undefined, under the dp covariance that
    replaces it)."""
    rng = np.random.default_rng(seed)
    df = pd.DataFrame(rng.uniform(0, 1, (12, 3)), columns=["x1", "x2", "x3"])
    df["y"] = df.x1 + rng.normal(0, 0.3, 12)
    bounds = {"y": (-2, 3), "x1": (0, 1), "x2": (0, 1), "x3": (0, 1)}
    _degenerate_or_honest(lambda: fn("y ~ x1 + x2 + x3", df, epsilon=0.3, bounds=bounds,
                                     method=method, random_state=seed).fit(n_boot=50,
                                                                           random_state=seed))
