"""Least squares on a coarsely binned response.

With the histogram named, the synthetic grid's cont5 at n = 2e3, epsilon 1
cuts y into 3 bins over a range 13 of its SDs wide: 87% of the released mass
in one bin, slopes estimated at 0.0-0.16 against 1, and intervals that
excluded them (27% coverage) because the bootstrap and the merged-bin refits
are as coarse as the estimate.  The slopes' factor is now computed from a
normal fitted to the response's released bins and carried in the standard
errors; at a factor that may be 0 the coefficients are declared unmeasured.
"""

import warnings

import numpy as np
import pytest
import statsmodels.formula.api as smf
from scipy import stats

import dpmodels as dpm
from dpmodels.core.errors import NotPrivateWarning, ReleaseWarning
from dpmodels.inference.rounding import fit_binned_normal, response_rounding, slope_factor


from tests.support.benchmark_cases import load_benchmark

SCENARIO = load_benchmark("validity").SCENARIOS["cont5"]
DATA = SCENARIO["draw"](np.random.default_rng(0), 20_000)
FULL = smf.ols(SCENARIO["formula"], DATA).fit().params
SLOPES = [f"x{j}" for j in range(1, 5)]  # x5's coefficient is 0


def test_the_slope_factor_is_the_rounded_normal_covariance():
    """lambda = Cov(y, y~) / Var(y) against a simulation of 2e6 normal draws
    (Monte Carlo SD of the ratio under 0.002 here; tolerance 4 SDs)."""
    rng = np.random.default_rng(5)
    edges = np.linspace(-10.25, 11.25, 4)
    points = (edges[:-1] + edges[1:]) / 2
    for mu, sigma in [(0.5, 1.6), (0.5, 3.0), (3.0, 1.0)]:
        y = rng.normal(mu, sigma, 2_000_000)
        rounded = points[np.clip(np.searchsorted(edges, y) - 1, 0, 2)]
        simulated = np.cov(y, rounded)[0, 1] / y.var()
        assert slope_factor(mu, sigma, edges, points) == pytest.approx(simulated, abs=0.008)


def test_the_binned_normal_fit_recovers_mean_and_sd():
    edges = np.linspace(0.0, 8.0, 6)
    cdf = stats.norm.cdf(edges[1:-1], 3.1, 0.9)
    counts = 1e5 * np.diff(np.concatenate([[0.0], cdf, [1.0]]))
    mu, sigma = fit_binned_normal(edges, counts)
    assert mu == pytest.approx(3.1, abs=1e-3) and sigma == pytest.approx(0.9, abs=1e-3)


def _fit(bins_y, kw=None, **fit_kw):
    bins = {"y": bins_y, **{f"x{j}": 10 for j in range(1, 6)}}
    kw = dict(SCENARIO["kw"], **(kw or {}))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model = dpm.dp_ols(SCENARIO["formula"], DATA, epsilon=np.inf, bins=bins,
                           method="histogram", **kw)
        res = model.fit(random_state=0, n_boot=100, **fit_kw)
    told = [str(w.message) for w in caught
            if issubclass(w.category, ReleaseWarning) and not issubclass(w.category,
                                                                          NotPrivateWarning)]
    return model, res, told


def test_three_bins_attenuate_and_the_interval_carries_it():
    model, res, _ = _fit(3)
    bound = response_rounding(model.release, "y")
    # the failure exists: every slope comes out near 0.27 of the full-data one, and the
    # fitted normal's factor says so (exact binned table: only the binning is wrong)
    ratios = (res.params / FULL)[SLOPES]
    assert ratios.between(0.15, 0.4).all(), ratios
    assert bound.factor == pytest.approx(ratios.mean(), abs=0.05)
    # the standard errors carry the factor: sqrt(se^2 + (a b)^2) / (1 - a)
    check = res.dp_inference.binning
    assert check.rounding == bound
    widened = np.sqrt(np.diag(check.rounding.widened(np.eye(1), np.ones(1), np.zeros(1, bool),
                                                     np.zeros(1), np.ones(1, bool))))
    a = bound.bound
    assert widened[0] == pytest.approx(np.sqrt(1 + a ** 2) / (1 - a))
    ci = res.conf_int()
    covered = (ci[0] <= FULL) & (FULL <= ci[1])
    assert covered[SLOPES].all(), ci.assign(full=FULL)
    assert "binned coarsely for least squares" in str(res.summary())


def test_enough_bins_leave_the_fit_alone():
    """8 bins: the response's SD is 0.6 of a bin, the factor within 0.01 of 1,
    and the summary says nothing about it."""
    model, res, _ = _fit(8)
    bound = response_rounding(model.release, "y")
    assert abs(bound.factor - 1.0) < 0.01
    assert "binned coarsely" not in str(res.summary())
    assert np.all(np.isfinite(res.bse))


@pytest.mark.parametrize("bounds, occupied", [((-40.0, 41.0), 1), ((-26.5, 54.5), 2)])
def test_a_response_in_one_or_two_of_its_bins_measures_nothing(bounds, occupied):
    """3 bins 27 wide: every row of y (SD 1.6) falls in the middle bin, or,
    with an edge at its mean, in two bins.  One value makes every slope 0;
    two place the edge but not the spread, so any factor fits.  No
    coefficient is measured: infinite standard errors and a warning naming
    the response and the bins to ask for."""
    model, res, told = _fit(3, kw={"bounds": dict(SCENARIO["kw"]["bounds"], y=bounds)})
    bound = response_rounding(model.release, "y")
    assert bound.unmeasured and bound.occupied == occupied
    assert np.all(np.isinf(res.bse)) and np.all(res.pvalues == 1.0)
    msg = [m for m in told if "binned too coarsely" in m]
    assert msg and f"sit in {occupied} of its 3 bins" in msg[0] and "bins={'y':" in msg[0]
    assert "x1" in msg[0]


def test_two_bins_are_left_to_the_other_checks():
    """2 bins: the shares say where the edge sits, not the spread; no bound."""
    model, _, _ = _fit(2)
    assert response_rounding(model.release, "y") is None


def test_the_normal_fit_never_lets_a_numpy_warning_reach_the_user():
    """Released mass piled in one end bin sends the optimizer to large SDs;
    ``sigma ** 2`` overflowed there and numpy's "overflow encountered in
    scalar power" reached the command line (found on a randhie release)."""
    edges = np.linspace(0.0, 4.615, 6)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        mu, sigma = fit_binned_normal(edges, np.array([500.0, 0.0, 0.0, 0.0, 5.0]))
    assert np.isfinite(mu) and sigma > 0


def test_the_summary_gives_the_rounding_as_the_reason():
    """Every row of y in one of its 5 bins (30 wide; y's SD is 1.6): the
    summary's no-information line says the response is binned too coarsely,
    not the threshold's spurious cells (the stock reason it fell back to),
    and its R-squared of a constant response is NaN without numpy's divide
    warning."""
    model, res, told = _fit(5, kw={"bounds": dict(SCENARIO["kw"]["bounds"], y=(-40.0, 110.0))})
    bound = response_rounding(model.release, "y")
    assert bound.unmeasured and bound.occupied == 1
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        text = str(res.summary())
    note = [ln for ln in text.splitlines() if "carries no information" in ln]
    assert note and "binned too coarsely" in note[0]
    assert "spurious cells alone" not in note[0]
