"""statsmodels' model comparisons and row diagnostics on dp results: dp-aware (a Wald
test with the dp covariance) or refused with
the reason; never the naive statistic of the cells without saying so, and
never across two releases."""

from __future__ import annotations

import re
import warnings

import numpy as np
import pandas as pd
import pytest
import statsmodels.api as sm

import dpmodels as dpm
from dpmodels.core.errors import DPModelsError

BOUNDS = {"y": (-5.0, 15.0), "x": (0.0, 10.0), "z": (0.0, 10.0)}


@pytest.fixture(scope="module")
def fits():
    rng = np.random.default_rng(21)
    n = 20_000
    df = pd.DataFrame({"x": rng.uniform(0, 10, n), "z": rng.uniform(0, 10, n)})
    df["y"] = 1 + 0.5 * df.x + rng.normal(0, 1.5, n)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rel = dpm.release(df, formula="y ~ x + z", epsilon=1.0, bounds=BOUNDS, random_state=4)
        small_m, large_m = dpm.dp_ols("y ~ x", rel), dpm.dp_ols("y ~ x + z", rel)
        small, large = small_m.fit(), large_m.fit()
        naive = (small_m.fit(cov_type="naive"), large_m.fit(cov_type="naive"))
        other = dpm.dp_ols("y ~ x + z", df, epsilon=1.0, bounds=BOUNDS, random_state=5).fit()
        moments = dpm.dp_ols("y ~ x + z", df, epsilon=1.0, bounds=BOUNDS, method="moments",
                             random_state=6).fit()
    return small, large, other, moments, naive


def test_compare_f_test_is_the_dp_wald_test(fits):
    small, large, *_ = fits
    F, p, df_diff = large.compare_f_test(small)
    wald = large.f_test("z = 0")  # the dp covariance (cov_params is the bootstrap's)
    assert df_diff == 1
    assert F == pytest.approx(float(np.squeeze(wald.fvalue)), rel=1e-12)
    assert p == pytest.approx(float(wald.pvalue), rel=1e-12)
    # and not the classical F of the cells' residual sums of squares
    naive = (small.ssr - large.ssr) / large.scale
    assert abs(F - naive) > 1e-6 * max(1.0, abs(naive))


def test_two_releases_are_refused(fits):
    small, _, other, *_ = fits
    for call in (lambda: other.compare_f_test(small), lambda: other.compare_lr_test(small),
                 lambda: sm.stats.anova_lm(small, other)):
        with pytest.raises(DPModelsError, match="release"):
            call()


def test_anova_of_several_models_is_refused_with_the_alternative(fits):
    small, large, *_ = fits
    with pytest.raises(DPModelsError, match="compare_f_test"):
        sm.stats.anova_lm(small, large)


def test_anova_type_1_is_refused_and_types_2_3_use_the_dp_covariance(fits):
    _, _, _, res, _ = fits
    with pytest.raises(DPModelsError, match="typ=2"):
        sm.stats.anova_lm(res)
    for typ in (2, 3):
        table = sm.stats.anova_lm(res, typ=typ)
        for term in ("x", "z"):
            wald = res.f_test(f"{term} = 0")
            assert table.loc[term, "PR(>F)"] == pytest.approx(float(wald.pvalue), rel=1e-9)


def test_likelihood_comparisons_and_row_diagnostics_are_refused(fits):
    small, large, *_ = fits
    with pytest.raises(DPModelsError, match="compare_f_test"):
        large.compare_lr_test(small)
    with pytest.raises(DPModelsError, match="compare_f_test"):
        large.compare_lm_test(small)
    with pytest.raises(DPModelsError, match="rows"):
        large.get_influence()
    with pytest.raises(DPModelsError, match="rows"):
        large.outlier_test()


def test_naive_fits_keep_statsmodels_comparisons(fits):
    s_naive, l_naive = fits[-1]
    F, p, df_diff = l_naive.compare_f_test(s_naive)
    classical = (s_naive.ssr - l_naive.ssr) / l_naive.scale
    assert df_diff == 1 and F == pytest.approx(classical, rel=1e-9)
    assert sm.stats.anova_lm(s_naive, l_naive).loc[1, "F"] == pytest.approx(classical, rel=1e-9)


@pytest.fixture(scope="module")
def partly_measured():
    """A moments fit of housing (n = 3,000, epsilon 0.3) in which the release
    does not measure two county contrasts (infinite SEs).  (At epsilon 1 the
    release now measures them all: its residual is floored apart.)"""
    df = dpm.datasets.housing(n=3000, seed=0)
    levels = {"county": [f"County{i}" for i in range(1, 7)], "year": [1, 2, 3, 4]}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = dpm.dp_ols("price ~ size + C(year) + C(county)", df, epsilon=0.3,
                         bounds={"price": (1e5, 9e5), "size": (0, 3000)}, levels=levels,
                         method="moments", random_state=0).fit(random_state=0)
    lost = [nm for nm in res.params.index if np.isinf(res.bse[nm])]
    assert lost and len(lost) < len(res.params) - 1
    return res, lost


def test_tests_use_the_measured_coefficients_and_never_give_nan(partly_measured):
    """The model F (summary header) and f_test over every slope test the same
    null with the measured slopes' evidence (F over their rank; before: NaN
    in the summary and statsmodels' "asymptotically non-normal" error); a
    t_test of an unmeasured coefficient is z = 0, p = 1 with an unbounded
    interval (before: NaN), and an F test of unmeasured ones only is F = 0,
    p = 1 (before: NaN), without statsmodels' warnings about their rank."""
    res, lost = partly_measured
    slopes = [nm for nm in res.params.index if nm != "Intercept"]
    measured = [nm for nm in slopes if nm not in lost]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # statsmodels' rank warning is about the lost ones
        every = res.f_test(", ".join(f"{nm} = 0" for nm in slopes))
        none = res.f_test(", ".join(f"{nm} = 0" for nm in lost))
    only = res.f_test(", ".join(f"{nm} = 0" for nm in measured))
    assert int(every.df_num) == len(measured)
    assert float(np.squeeze(every.fvalue)) == pytest.approx(float(np.squeeze(only.fvalue)))
    # by hand: the measured block of the dp covariance
    cov = res.cov_params().loc[measured, measured].to_numpy()
    b = res.params[measured].to_numpy()
    assert float(np.squeeze(only.fvalue)) == pytest.approx(
        b @ np.linalg.solve(cov, b) / len(measured), rel=1e-8)
    assert res.fvalue == pytest.approx(float(np.squeeze(only.fvalue)))
    assert res.f_pvalue == pytest.approx(float(only.pvalue))
    assert "nan" not in str(res.summary()).split("Prob (F-statistic):")[1].split()[0]
    frame = res.t_test(f"{lost[0]} = 0").summary_frame()
    assert np.isinf(frame["std err"].iloc[0]) and frame["P>|z|"].iloc[0] == 1.0
    assert np.isinf(frame["Conf. Int. Upp."].iloc[0])
    assert float(np.squeeze(none.fvalue)) == 0.0 and float(none.pvalue) == 1.0


def test_statistics_the_release_does_not_give_read_n_a(partly_measured):
    """The moments give no residuals (omnibus, Jarque-Bera, Durbin-Watson):
    the summary says n/a where statsmodels printed numpy's nan."""
    res, _ = partly_measured
    text = str(res.summary())
    assert "Durbin-Watson:" in text and "n/a" in text.split("Durbin-Watson:")[1].split()[0]
    assert not re.search(r"\bnan\b", text, re.IGNORECASE)
