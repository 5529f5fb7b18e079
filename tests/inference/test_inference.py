"""Noise-aware inference (cov_type="dp"): the parametric bootstrap of the
release is post-processing (a function of the release and public inputs
only), reproducible with a seed, wider than the naive intervals where the
noise matters, and covers the population coefficient at its nominal rate."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pandas as pd
import pytest
from scipy import stats

import dpmodels as dpm
from dpmodels.inference import DPInference, ReleaseSimulator
from dpmodels.core.noise import discrete_laplace_sf

from tests.conftest import HOUSING_BOUNDS, HOUSING_FORMULA, HOUSING_LEVELS, MIXED_BOUNDS, MIXED_LEVELS


def _linear(rng, n):
    x = rng.uniform(0, 10, n)
    g = rng.choice(np.array(["a", "b", "c"]), n, p=[0.4, 0.35, 0.25])
    y = 1 + 0.5 * x + 1.0 * (g == "b") - 1.0 * (g == "c") + rng.normal(0, 1.5, n)
    return pd.DataFrame({"y": y, "x": x, "g": g})


LIN_KW = dict(bounds={"y": (-6.0, 12.0), "x": (0.0, 10.0)}, levels={"g": ["a", "b", "c"]})


# ---- post-processing: the bootstrap sees the release only ---------------------------------

def test_bootstrap_depends_on_the_release_only(mixed_frame):
    """Two different raw data sets with the same exact cell counts give the same
    release (same seed) and then bit-identical bootstrap output; a fit on the
    release object itself gives it too."""
    kw = dict(epsilon=1.0, bounds=MIXED_BOUNDS, levels=MIXED_LEVELS, bins=8, random_state=3)
    other = mixed_frame.copy()
    # move every value within its bin and shuffle the rows: other raw data, same counts
    for col in ("x", "y"):
        lo, hi = MIXED_BOUNDS[col]
        w = (hi - lo) / 8
        code = np.clip(np.floor((other[col] - lo) / w), 0, 7)
        other[col] = lo + (code + np.random.default_rng(1).uniform(0.05, 0.95, len(other))) * w
    other = other.sample(frac=1.0, random_state=2).reset_index(drop=True)
    assert not np.allclose(other["x"].sort_values(), mixed_frame["x"].sort_values())
    a = dpm.dp_ols("y ~ x + C(g)", mixed_frame, **kw)
    b = dpm.dp_ols("y ~ x + C(g)", other, **kw)
    np.testing.assert_array_equal(a.release.cell_ids, b.release.cell_ids)
    np.testing.assert_array_equal(a.release.counts, b.release.counts)
    ra, rb = a.fit(random_state=5), b.fit(random_state=5)
    rc = dpm.dp_ols("y ~ x + C(g)", a.release).fit(random_state=5)
    for r in (rb, rc):
        np.testing.assert_array_equal(r.dp_inference.replicates, ra.dp_inference.replicates)
        np.testing.assert_array_equal(r.bse, ra.bse)
        np.testing.assert_array_equal(r.conf_int(), ra.conf_int())
    assert str(ra.summary().tables[1]) == str(rb.summary().tables[1])


def test_seed_makes_the_bootstrap_reproducible(mixed_frame):
    model = dpm.dp_logit("b ~ x + C(g)", mixed_frame.assign(b=(mixed_frame["y"] > 5).astype(int)),
                         epsilon=1.0, bounds={"x": (0, 10)}, levels={**MIXED_LEVELS, "b": [0, 1]},
                         bins=6, random_state=0)
    r1, r2 = model.fit(random_state=11), model.fit(random_state=11)
    r3 = model.fit(random_state=12)
    np.testing.assert_array_equal(r1.bse, r2.bse)
    np.testing.assert_array_equal(r1.pvalues, r2.pvalues)
    assert not np.array_equal(r1.bse, r3.bse)
    np.testing.assert_array_equal(r1.params, r3.params)  # the estimate is the release's
    r4 = model.fit(cov_kwds={"random_state": 11})
    np.testing.assert_array_equal(r1.bse, r4.bse)


def test_replicate_releases_follow_the_mechanism():
    """Spurious (empty-cell) releases per replicate: Binomial(m - |S|, P(Z >= k))."""
    rng = np.random.default_rng(0)
    n = 5_000
    df = pd.DataFrame({"x": rng.normal(5, 1, n), "y": rng.normal(5, 1, n)})
    rel = dpm.release(df, columns=["x", "y"], epsilon=0.5, bounds={"x": (0, 10), "y": (0, 10)},
                      bins=40, random_state=1)
    sim = ReleaseSimulator(rel, population="release")
    assert sim.k == math.ceil(rel.report.threshold) and sim.n == n
    np.testing.assert_array_equal(sim.support, rel.cell_ids[rel.counts > 0])
    chunk = sim.simulate(np.random.default_rng(2), 400)
    assert chunk.support_counts.shape == (400, sim.support.size)
    kept = chunk.support_counts[chunk.support_counts != 0]
    assert kept.min() >= sim.k
    assert not np.isin(chunk.extra_ids, sim.support).any()
    assert chunk.extra_ids.max() < rel.domain.size and chunk.extra_counts.min() >= sim.k
    per_rep = np.bincount(chunk.extra_rep, minlength=400)
    # the cells' noise is at the cells' part of epsilon (the rest counts the rows
    # outside the bounds): the release's law, which the replicates must follow
    assert rel.report.noise_epsilon < 0.5 and sim.epsilon == rel.report.noise_epsilon
    p = discrete_laplace_sf(sim.k, rel.report.noise_epsilon)
    mean, var = (sim.m - sim.support.size) * p, (sim.m - sim.support.size) * p * (1 - p)
    assert abs(per_rep.mean() - mean) < 4 * math.sqrt(var / 400)
    # each replicate's ids are distinct
    for r in range(5):
        ids = chunk.extra_ids[chunk.extra_rep == r]
        assert np.unique(ids).size == ids.size
    # population="smooth" adds smoothed tails on unreleased cells, at most k each
    smooth = ReleaseSimulator(rel, population="smooth")
    assert np.isin(rel.cell_ids, smooth.support).all() and smooth.hidden > 0
    assert smooth.p_hat.sum() == pytest.approx(1.0)
    tails = ~np.isin(smooth.support, rel.cell_ids)
    assert np.all(smooth.p_hat[tails] * smooth.p_hat.size > 0)
    total = rel.counts.sum() + smooth.hidden
    assert np.all(smooth.p_hat[tails] * total <= sim.k + 1e-9)


def test_default_population_removes_spurious_cells_and_restores_hidden_mass():
    """The deconvolved population (dpmodels.mechanisms.population) against the true counts: the
    released cells' expected mass matches their true mass within the noise of their sum,
    the spurious cells (true count 0) lose almost all their released mass, the unreleased
    cells get some of the mass the threshold hid, and the cell-wise L1 error falls."""
    rng = np.random.default_rng(0)
    n = 5_000
    df = pd.DataFrame({"x": rng.normal(5, 1, n), "y": rng.normal(5, 1, n)})
    true = np.zeros(1600)
    bx = np.clip((df.x / 10 * 40).astype(int), 0, 39)
    by = np.clip((df.y / 10 * 40).astype(int), 0, 39)
    np.add.at(true, (bx * 40 + by).to_numpy(), 1)
    for eps in (0.5, 1.0):
        rel = dpm.release(df, columns=["x", "y"], epsilon=eps, bounds={"x": (0, 10), "y": (0, 10)},
                          bins=40, random_state=1)
        sim = ReleaseSimulator(rel)
        assert sim.deconvolved and sim.removed > 0 and sim.hidden > 0
        expected = np.zeros(1600)
        expected[sim.support.astype(int)] = sim.p_hat * (rel.counts.sum() - sim.removed + sim.hidden)
        released = np.zeros(1600)
        released[rel.cell_ids.astype(int)] = rel.counts
        on = released > 0
        q = math.exp(-eps / 2)
        noise_sd = math.sqrt(on.sum() * 2 * q / (1 - q) ** 2)  # sd of the released cells' noise sum
        assert abs(expected[on].sum() - true[on].sum()) < 3 * noise_sd
        spurious = on & (true == 0)
        assert spurious.sum() > 20  # the test has spurious cells to remove
        assert expected[spurious].sum() < 0.1 * released[spurious].sum()
        assert 0 < expected[~on].sum() <= true[~on].sum()
        assert np.abs(expected - true).sum() < 0.7 * np.abs(released - true).sum()
        assert "attributed to noise" in sim.describe()


# ---- the covariance plugs into the results ------------------------------------------------

def _rounded(inf, variances):
    """``variances`` widened by the response's rounding bound, as the covariance is."""
    ok = np.ones(variances.size, bool)
    return np.diag(inf.binning.rounded(np.diag(variances), inf.params, ok))


def test_dp_is_the_default_and_drives_bse_tests_and_intervals(housing_small):
    model = dpm.dp_ols(HOUSING_FORMULA, housing_small, epsilon=1.0, bounds=HOUSING_BOUNDS,
                       levels=HOUSING_LEVELS, bins=10, random_state=7)
    res = model.fit(random_state=0, n_boot=120)
    naive = model.fit(cov_type="naive")
    alias = model.fit(cov_type="nonrobust")
    np.testing.assert_array_equal(naive.bse, alias.bse)
    inf = res.dp_inference
    assert isinstance(inf, DPInference) and inf.n_boot == 120
    assert res.cov_type == "dp" and naive.cov_type == "nonrobust"
    np.testing.assert_allclose(res.bse, inf.se)
    np.testing.assert_allclose(res.cov_params().to_numpy(), inf.cov)
    # one centre: the estimate; the covariance is the mean squared error: by default two
    # bootstraps, from the deconvolved and the smooth population (half of B each), and
    # per coefficient the larger of their spread^2 + bias^2; plus the binning shifts
    assert len(inf.parts) == 2 and [p.n_boot for p in inf.parts] == [60, 60]
    assert inf.replicates.shape[0] == sum(p.n_ok for p in inf.parts)
    each = [np.diag(np.cov(p.replicates, rowvar=False)) + p.bias ** 2 for p in inf.parts]
    shifts2 = sum(shift ** 2 for shift in inf.binning.shifts) + inf.binning.diagonal
    # (then widened for price's rounding to its bins: dpmodels.inference.rounding)
    np.testing.assert_allclose(np.diag(inf.cov), _rounded(inf, np.max(each, axis=0) + shifts2))
    assert np.all(np.linalg.eigvalsh(inf.cov) > -1e-9 * np.abs(inf.cov).max())
    pick = np.argmax(each, axis=0)
    np.testing.assert_allclose(inf.bias, [inf.parts[j].bias[i] for i, j in enumerate(pick)])
    # one population: spread plus the bias and the binning shifts, each an outer product
    one = model.fit(random_state=0, n_boot=120, cov_kwds={"population": "smooth"}).dp_inference
    assert not one.parts
    mse = np.cov(one.replicates, rowvar=False) + np.outer(one.bias, one.bias)
    for shift in one.binning.shifts:
        mse += np.outer(shift, shift)
    mse += np.diag(one.binning.diagonal)  # the covariates' places in their bins, alone
    np.testing.assert_allclose(one.cov, one.binning.rounded(mse, one.params,
                                                            np.ones(mse.shape[0], bool)))
    np.testing.assert_allclose(res.tvalues, res.params / inf.se)
    np.testing.assert_allclose(res.pvalues, 2 * stats.norm.sf(np.abs(res.tvalues)))
    ci = res.conf_int(0.1)
    z = stats.norm.ppf(0.95)
    center = res.params.to_numpy()
    np.testing.assert_allclose(ci.to_numpy(), np.column_stack([center - z * inf.se,
                                                               center + z * inf.se]))
    assert list(ci.index) == list(res.params.index)
    # t_test, wald_test and conf_int read the same centre and covariance
    tt = res.t_test(np.eye(len(res.params)))
    np.testing.assert_allclose(np.asarray(tt.tvalue).ravel(), res.tvalues)
    np.testing.assert_allclose(np.asarray(tt.conf_int(alpha=0.1)), ci.to_numpy())
    wt = res.wald_test(np.eye(len(res.params))[[-1]], scalar=True)
    assert float(wt.statistic) == pytest.approx(float(res.tvalues.iloc[-1]) ** 2)
    # bc-normal: the estimate minus the bootstrap bias, the replicates' spread only
    bc = res.conf_int(0.1, method="bc-normal").to_numpy()
    sd = np.sqrt(np.diag(inf.spread))  # pooled within the two populations' replicates
    np.testing.assert_allclose(bc, np.column_stack([center - inf.bias - z * sd,
                                                    center - inf.bias + z * sd]))
    for method in ("normal", "basic", "percentile"):
        other = res.conf_int(0.05, method=method)
        assert other.shape == (8, 2) and np.all(other.iloc[:, 0] < other.iloc[:, 1])
    text = res.summary().as_text()
    assert "Covariance Type:                   dp" in text
    assert "B = 120 replicates" in text and "P>|z|" in text
    naive_text = naive.summary().as_text()
    assert "Covariance type naive" in naive_text and "nonrobust" in naive_text
    with pytest.raises(ValueError, match="cov_type"):
        model.fit(cov_type="HC0")
    with pytest.raises(ValueError, match="dp"):
        model.fit(cov_type="naive", n_boot=50)
    with pytest.raises(ValueError, match="cov_kwds"):
        model.fit(cov_kwds={"nboot": 3})


def test_dp_standard_errors_exceed_naive_at_small_epsilon():
    df = _linear(np.random.default_rng(4), 2_000)
    model = dpm.dp_ols("y ~ x + C(g)", df, epsilon=0.1, random_state=1, **LIN_KW)
    res, naive = model.fit(random_state=2), model.fit(cov_type="naive")
    assert np.all(res.bse > 1.5 * naive.bse), (res.bse, naive.bse)
    lo, hi = res.conf_int().to_numpy().T
    nlo, nhi = naive.conf_int().to_numpy().T
    assert np.all(hi - lo > nhi - nlo)


def test_epsilon_inf_gives_the_sampling_bootstrap(discrete_frame):
    with pytest.warns(dpm.NotPrivateWarning):
        model = dpm.dp_ols("y ~ k + C(g) + b", discrete_frame, epsilon=float("inf"),
                           levels={"y": list(range(-10, 30)), "k": [1, 2, 3, 4],
                                   "g": ["a", "b", "c"]})
    res, naive = model.fit(random_state=0, n_boot=400), model.fit(cov_type="naive")
    assert "sampling only" in res.summary().as_text()
    # no noise: the bootstrap of the rows; homoscedastic data, so close to the OLS errors
    np.testing.assert_allclose(res.bse, naive.bse, rtol=0.2)
    np.testing.assert_allclose(res.dp_inference.bias, 0, atol=0.2 * naive.bse.max())


@pytest.mark.parametrize("name", ["ols", "logit", "quantreg", "mnlogit"])
def test_all_models_give_finite_dp_errors_and_say_so(name, mixed_frame):
    df = mixed_frame.assign(b=(mixed_frame["y"] > 5).astype(int),
                            c=pd.cut(mixed_frame["y"], [-99, 4, 7, 99], labels=["lo", "mid", "hi"]))
    kw = dict(epsilon=1.0, bounds=MIXED_BOUNDS, bins=6, random_state=0)
    levels = {**MIXED_LEVELS, "b": [0, 1], "c": ["lo", "mid", "hi"]}
    fit_kw = dict(random_state=1, n_boot=60)
    if name == "ols":
        res = dpm.dp_ols("y ~ x + C(g)", df, levels=levels, **kw).fit(**fit_kw)
    elif name == "logit":
        res = dpm.dp_logit("b ~ x + C(g)", df, levels=levels, **kw).fit(**fit_kw)
    elif name == "quantreg":
        res = dpm.dp_quantreg("y ~ x + C(g)", df, levels=levels, **kw).fit(q=0.3, **fit_kw)
    else:
        res = dpm.dp_mnlogit("c ~ x", df, levels=levels, epsilon=1.0, bounds={"x": (0, 10)},
                             bins=6, random_state=0).fit(**fit_kw)
    inf = res.dp_inference
    assert inf.n_failed == 0 and inf.n_ok == 60
    bse = np.asarray(res.bse)
    assert bse.shape == np.shape(res.params) and np.all(np.isfinite(bse)) and np.all(bse > 0)
    assert np.all(np.isfinite(np.asarray(res.pvalues)))
    ci = np.asarray(res.conf_int())
    assert np.all(np.isfinite(ci))
    if name == "mnlogit":  # statsmodels' layout: one row per (equation, parameter)
        assert ci.shape == (4, 2)
        naive_ci = res.model.fit(disp=0).conf_int()
        assert naive_ci.shape == (4, 2) and list(naive_ci.index) == list(res.conf_int().index)
        np.testing.assert_allclose(np.asarray(res.bse).ravel(order="F"), inf.se)
    text = res.summary().as_text()
    assert "Covariance type dp" in text and "B = 60 replicates" in text


def test_marginal_fit_simulates_the_joint_release(housing_small):
    """A model on a marginal of a larger release: the replicates are releases of
    the full joint histogram (thresholded there), then marginalized."""
    rel = dpm.release(housing_small, formula=HOUSING_FORMULA, epsilon=1.0, bounds=HOUSING_BOUNDS,
                      levels=HOUSING_LEVELS, bins=10, random_state=1)
    res = dpm.dp_ols("price ~ size", rel).fit(random_state=0, n_boot=80)
    assert "2,400 domain cells" in res.summary().as_text()
    assert np.all(np.isfinite(res.bse)) and np.all(res.bse > 0)


def _core_mse_diag(inf):
    """spread^2 + bias^2 per coefficient; with two populations the larger of theirs."""
    if inf.parts:
        return np.max([np.var(p.replicates, axis=0, ddof=1) + p.bias ** 2 for p in inf.parts],
                      axis=0)
    return inf.spread_se ** 2 + inf.bias ** 2


def test_binning_warning_fires_when_bins_are_coarse_against_the_noise():
    rng = np.random.default_rng(8)
    n = 100_000
    x = rng.uniform(0, 10, n)
    df = pd.DataFrame({"x": x, "y": 1 + 0.5 * x + rng.normal(0, 0.3, n)})
    kw = dict(epsilon=3.0, bounds={"y": (-6.0, 12.0), "x": (0.0, 10.0)}, random_state=0)
    # y bins 2.25 wide against a residual sd of 0.3: midpoints distort the slope by more
    # than the noise of epsilon = 3 (at epsilon 1 this seed's replicates are heavy-tailed
    # enough that the spread rivals the shift)
    res = dpm.dp_ols("y ~ x", df, bins={"y": 8, "x": 20}, **kw).fit(random_state=0, n_boot=60)
    inf = res.dp_inference
    assert inf.binning.flagged[1]
    assert "binning may bias Intercept, x" in res.summary().as_text()
    # the shifts widen the default interval: se^2 = spread^2 + bias^2 + shifts^2 (spread^2 +
    # bias^2: the larger of the two populations' bootstraps)
    expected = (_core_mse_diag(inf) + sum(v ** 2 for v in inf.binning.shifts)
                + inf.binning.diagonal)
    np.testing.assert_allclose(inf.se ** 2, _rounded(inf, expected))
    assert inf.se[1] > 1.1 * inf.spread_se[1]
    lo, hi = res.conf_int().loc["x"]
    assert lo < 0.5 < hi  # the population slope, which the spread alone misses here
    off = dpm.dp_ols("y ~ x", df, bins={"y": 8, "x": 20}, **kw).fit(
        random_state=0, n_boot=60, cov_kwds={"binning_check": False})
    assert off.dp_inference.binning is None
    assert "binning" not in off.summary().as_text().lower()
    few = dpm.dp_ols("y ~ x", df, bins={"y": 4, "x": 20}, **kw).fit(random_state=0, n_boot=60)
    check = few.dp_inference.binning
    # 4 bins: merged in groups of 2 only, the order unknown, taken as r = 1: the bias
    # is the whole move to bins twice as wide
    assert check.variables == ("y", "x") and check.unchecked == ()
    np.testing.assert_allclose(check.shift, check.coarse_params - few.params.to_numpy())
    assert check.placement_method == "midpoint"
    two = dpm.dp_ols("y ~ x", df, bins={"y": 2, "x": 20}, **kw).fit(random_state=0, n_boot=60)
    assert two.dp_inference.binning.unchecked == ("y",)
    assert "Fewer than 3 bins for y" in two.summary().as_text()


# ---- coverage of the population coefficient ---------------------------------------------

@pytest.mark.slow
def test_coverage_of_the_slope_at_epsilon_one():
    """200 data sets of a linear model (n = 2000, epsilon = 1): the number of 95%
    intervals covering the true slope is Binomial(200, 0.95) if the intervals
    are exact; accept the central 99.9% region of that law."""
    reps, true_slope = 200, 0.5
    lo_ok, hi_ok = stats.binom.ppf([0.0005, 0.9995], reps, 0.95)
    rng = np.random.default_rng(20240601)
    covered = covered_naive = 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for _ in range(reps):
            df = _linear(rng, 2_000)
            model = dpm.dp_ols("y ~ x + C(g)", df, epsilon=1.0, random_state=rng, **LIN_KW)
            res = model.fit(random_state=rng)
            lo, hi = res.conf_int().loc["x"]
            covered += lo <= true_slope <= hi
            nlo, nhi = model.fit(cov_type="naive").conf_int().loc["x"]
            covered_naive += nlo <= true_slope <= nhi
    assert lo_ok <= covered <= hi_ok, (covered, lo_ok, hi_ok)
    assert covered_naive < lo_ok  # the naive intervals are far too narrow here


def test_whole_number_bin_edges_get_a_note_naming_the_centred_bounds():
    """A count cut into unit bins with edges on whole numbers sits on the bins' left
    edges (a bias the coarsening check cannot see): the summary says so and names the
    bounds that centre the bins; centred bounds, wide bins and log scales get no note."""
    from dpmodels.domain.axes import Axis, whole_number_bins

    assert whole_number_bins(Axis("v", "continuous", bounds=(0.0, 100.0), bins=100))
    assert whole_number_bins(Axis("v", "continuous", bounds=(0.0, 100.0), bins=50))
    assert not whole_number_bins(Axis("v", "continuous", bounds=(-0.5, 99.5), bins=100))
    assert not whole_number_bins(Axis("v", "continuous", bounds=(1e5, 9e5), bins=10))
    assert not whole_number_bins(Axis("v", "continuous", bounds=(1.0, 101.0), bins=100,
                                      scale="log"))
    rng = np.random.default_rng(3)
    n = 5_000
    df = pd.DataFrame({"visits": rng.poisson(4, n).clip(0, 30), "x": rng.uniform(0, 1, n)})
    text = {}
    for lo in (0.0, -0.5):
        res = dpm.dp_ols("visits ~ x", df, epsilon=1.0, bounds={"visits": (lo, lo + 30), "x": (0, 1)},
                         bins={"visits": 30, "x": 5}, method="histogram",
                         random_state=0).fit(random_state=0, n_boot=40)
        text[lo] = res.summary().as_text()
    assert "declare bounds (-0.5, 29.5) to centre the bins" in " ".join(text[0.0].split())
    assert "centre the bins" not in text[-0.5]


@pytest.mark.parametrize("interval", ["normal", "bc-normal", "percentile", "basic"])
def test_an_unmeasured_error_is_no_information_never_nan(interval):
    """issue 26 (dp_mnlogit on anes96 printed NaN standard errors): a coefficient
    whose replicates could not measure its error (a NaN variance, here a column
    of failed refits, or a single replicate) gets an infinite SE, an unbounded
    interval and p = 1, like an uninformative one; the others are untouched."""
    from dpmodels.inference.intervals import DPInference

    rng = np.random.default_rng(0)
    reps = rng.normal([1.0, 2.0, 3.0], 0.1, size=(50, 3))
    reps[:, 1] = np.nan  # the refits of the second coefficient all failed
    inf = DPInference(params=np.array([1.0, 2.0, 3.0]), replicates=reps, n_boot=50,
                      n_failed=0, interval=interval)
    se, ci, p = inf.se, inf.conf_int(), inf.pvalues
    assert not np.isnan(se).any() and not np.isnan(ci).any() and not np.isnan(p).any()
    assert se[1] == np.inf and tuple(ci[1]) == (-np.inf, np.inf) and p[1] == 1.0
    assert np.all(np.isfinite(se[[0, 2]])) and np.all(np.isfinite(ci[[0, 2]]))
    one = DPInference(params=np.array([1.0, 2.0]), replicates=reps[:1, [0, 2]], n_boot=50,
                      n_failed=49, interval=interval)
    assert np.all(one.se == np.inf) and np.all(one.pvalues == 1.0)
    assert np.all(one.conf_int() == [[-np.inf, np.inf]] * 2)
