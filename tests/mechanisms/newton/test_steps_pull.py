"""The Newton-type releases' pull towards their start, on real data.

The noisy-Newton logit and the quantile steps stop after a few steps whose
information the noise can swamp; their estimate is then pulled towards the
start, and a bootstrap built on the pulled estimate reported it with narrow,
confidently wrong intervals (benchmarks/real_validity.py on fair: coverage
0% and significant wrong signs in up to 53% of releases at epsilon 3; engel:
coverage 10-82%).  ``models/shrinkage.calibrate`` undoes the pull by indirect
inference on the replayed release and reports the coefficients it cannot
locate without information.

The truth here is the non-private fit of the same formula on the same rows,
so each release's only randomness is the privacy noise; the goals are the
benchmark's (coverage 90%, wrong-sign significance 2.5%) and the bounds the
99.9% binomial quantiles of (release, coefficient) pairs under them.  An
infinite interval covers and is never significant.
"""

from __future__ import annotations

import importlib.util
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import statsmodels.formula.api as smf
from scipy import stats

import dpmodels as dpm
from dpmodels.models.shrinkage import calibrate


def _benchmark_cases() -> dict:
    """The real-data cases of benchmarks/real_validity.py (formula, codebook
    bounds and levels, loader): the test holds the benchmark's own analyses."""
    path = Path(__file__).resolve().parents[3] / "benchmarks" / "real_validity.py"
    spec = importlib.util.spec_from_file_location("real_validity_cases", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.CASES


CASES = _benchmark_cases()
FAIR, ENGEL = CASES["fair_logit"], CASES["engel_quantreg"]


def _scores(fits, truth: np.ndarray) -> tuple[int, int, int]:
    """(pairs, pairs not covering the truth, pairs significant with the wrong sign)."""
    missed = wrong = pairs = 0
    for res in fits:
        ci = np.asarray(res.conf_int(), float)
        lo, hi = ci[:, 0], ci[:, 1]
        pairs += truth.size
        missed += int(np.sum(~((lo <= truth) & (truth <= hi))))
        wrong += int(np.sum(((lo > 0) & (truth < 0)) | ((hi < 0) & (truth > 0))))
    return pairs, missed, wrong


def _bound(pairs: int, rate: float) -> int:
    return int(stats.binom.ppf(0.999, pairs, rate))


@pytest.mark.slow
def test_the_newton_logit_is_not_confidently_wrong_on_fair():
    """Six releases of the fair logit (18 coefficients, n = 6,366) at epsilon
    3.  Before the calibration 69 of these 108 pairs missed and 7 were
    significant with the wrong sign (library at 17e4760); undoing every
    pull left 31 missing (the Gaussian worlds do not reproduce fair's pull);
    with PULL_TRUSTED these releases, pulled 5-7 replicate SDs by their own
    replay, report every coefficient without information."""
    df = FAIR["loader"]()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        truth = smf.logit(FAIR["formula"], df).fit(disp=0).params.to_numpy()
        fits = [dpm.dp_logit(FAIR["formula"], df, epsilon=3.0, bounds=FAIR["bounds"],
                             levels=FAIR["levels"], method="newton", random_state=s)
                .fit(random_state=s, n_boot=300) for s in range(6)]
    pairs, missed, wrong = _scores(fits, truth)
    assert missed <= _bound(pairs, 0.10), (missed, pairs)
    assert wrong <= _bound(pairs, 0.025), (wrong, pairs)


def test_the_newton_logits_finite_intervals_hold_on_fair_at_epsilon_1():
    """Eight releases of the fair logit at epsilon 1, where the real steps keep
    -60% to +30% of each coefficient.  The worlds read the design from the
    first step's noisy moments (entry SD 0.56) and kept 80-90% (their design
    had up to four times fair's information), so the intervals they left
    finite were the steps' bias: at 3dcd9c0, 55 of 72 finite intervals over 50
    resampled releases missed (here, as in the benchmark: resamples of the real
    rows, the truth the full data's fit; 4 of 5 finite ones missed at 3dcd9c0).
    The pooled and deflated world
    (models/worlds.deflated_moments) must leave finite only intervals that
    miss at most at a 10% rate (99.9% binomial bound over the finite ones)."""
    full = FAIR["loader"]()
    rng = np.random.default_rng(26)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        truth = smf.logit(FAIR["formula"], full).fit(disp=0).params.to_numpy()
        fits = []
        for s in range(8):  # plasmode: the benchmark's resamples of the real rows
            df = full.iloc[rng.integers(0, len(full), len(full))].reset_index(drop=True)
            try:
                fits.append(dpm.dp_logit(FAIR["formula"], df, epsilon=1.0, bounds=FAIR["bounds"],
                                         levels=FAIR["levels"], method="newton", random_state=s)
                            .fit(random_state=s, n_boot=300))
            except dpm.DPModelsError as exc:  # a degenerate release says so: no interval
                assert "degenerate" in str(exc)
    finite = missed = 0
    for res in fits:
        ci = np.asarray(res.conf_int(), float)
        ok = np.isfinite(ci).all(axis=1)
        finite += int(ok.sum())
        missed += int(np.sum(ok & ~((ci[:, 0] <= truth) & (truth <= ci[:, 1]))))
    assert missed <= _bound(finite, 0.10), (missed, finite)


def test_the_quantile_steps_cover_on_engel():
    """Twenty releases of Engel's curve (n = 235) at epsilon 1; before the
    calibration 24 of these 40 pairs missed the non-private median
    regression (library at 17e4760)."""
    df = ENGEL["loader"]()
    truth = smf.quantreg(ENGEL["formula"], df).fit(q=0.5).params.to_numpy()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fits = [dpm.dp_quantreg(ENGEL["formula"], df, epsilon=1.0, bounds=ENGEL["bounds"],
                                method="newton", random_state=s).fit(random_state=s, n_boot=300)
                for s in range(20)]
    pairs, missed, wrong = _scores(fits, truth)
    assert missed <= _bound(pairs, 0.10), (missed, pairs)
    assert wrong <= _bound(pairs, 0.025), (wrong, pairs)


def test_calibrate_keeps_the_estimate_widens_and_flags_what_it_cannot_locate():
    """A replay that keeps half of each of two coefficients and only a 1/50
    share of the third: the estimate stays the release's (CALIBRATION_STEPS =
    0: moving it by the worlds' pull was measured to do harm), the replicates
    of the first two are widened to what the release loses (0.01 / 0.5), the
    third is flagged; one release gives one estimate."""
    from dpmodels.models.shrinkage import CALIBRATION_STEPS

    assert CALIBRATION_STEPS == 0

    def replay(beta, seed, n):
        z = np.random.default_rng(seed).normal(size=(n, 3))
        mean = np.array([0.5 * beta[0], 0.5 * beta[1], 0.02 * beta[2]])
        return mean + 0.01 * z

    b = np.array([1.0, 2.0, 0.3])
    est, reps, flags = calibrate(replay, lambda v: v, b, 400, np.random.default_rng(0),
                                 trusted=np.inf)
    assert flags.tolist() == [False, False, True]
    np.testing.assert_array_equal(est, b)
    np.testing.assert_allclose(reps[:, :2].std(axis=0), [0.02, 0.02], rtol=0.2)
    np.testing.assert_allclose(reps[:, :2].mean(axis=0), b[:2], atol=0.01)
    again = calibrate(replay, lambda v: v, b, 400, np.random.default_rng(1), trusted=np.inf)[0]
    np.testing.assert_array_equal(again, est)
    # the same pull is 50 replicate SDs: beyond PULL_TRUSTED, every coefficient is flagged
    est, _, flags = calibrate(replay, lambda v: v, b, 400, np.random.default_rng(0))
    assert flags.all() and np.array_equal(est, b)


def test_the_newton_logit_reports_its_own_estimate_on_logit4():
    """benchmarks/validity.py's logit4 at n = 20,000, epsilon 0.3: the releases of
    seeds 1, 6, 8, 9 and 11 are ones the worlds pull by 1-2 replicate SDs.  Moving
    their estimates by that pull put them 4-12 SDs off the truth (the raw
    iterates were within 1-2), and over 40 releases the lowest coverage fell to
    88-90% (95-100% without).  The estimate is now the release's own iterate,
    and its errors stay within the reported standard errors."""
    spec = importlib.util.spec_from_file_location(
        "validity_bench", Path(__file__).resolve().parents[3] / "benchmarks" / "validity.py")
    V = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(V)
    truth = np.array([-0.5, 0.7, 1.0, -0.5, 0.0])
    fits = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for seed in (1, 6, 8, 9, 11):
            df = V.draw_logit4(np.random.default_rng(1000 + seed), 20_000)
            model = dpm.dp_logit("y ~ x1 + x2 + x3 + C(d)", df, epsilon=0.3,
                                 bounds=V.COV4_BOUNDS, levels={"y": [0, 1], "d": ["no", "yes"]},
                                 method="newton", random_state=seed)
            res = model.fit(random_state=seed, n_boot=300)
            own = model.release.design_params(model.release.beta)
            np.testing.assert_allclose(np.asarray(res.params), own, rtol=1e-10, atol=1e-12)
            fits.append(res)
    pairs, missed, wrong = _scores(fits, truth)
    assert missed <= _bound(pairs, 0.10) and wrong <= _bound(pairs, 0.025), (missed, wrong)


def test_the_bootstrap_design_keeps_a_factors_dummies_exclusive():
    from dpmodels.models.worlds import gaussian_design

    mean = np.array([0.1, 0.3, 0.2, 0.0])
    cov = np.diag([0.09, 0.21, 0.16, 1.0])
    X = gaussian_design((100.0, mean, cov), np.array([1, 1, 1, 0], bool), 20_000,
                        np.random.default_rng(0), ((0, 1, 2),))
    assert X[:, 1:4].sum(axis=1).max() == 1.0
    # each level's share within 3 binomial sds of the released one
    sd = np.sqrt(mean[:3] * (1 - mean[:3]) / 20_000)
    assert np.all(np.abs(X[:, 1:4].mean(axis=0) - mean[:3]) < 3 * sd + 1e-3)


def _count_replays(model):
    """Record the replicate count of every replay the model's fit asks for (the
    model's own method, wrapped on this instance only)."""
    sizes, replay = [], model._replay

    def counted(*args):
        sizes.append(args[-1])
        return replay(*args)

    model._replay = counted
    return sizes


def test_a_naive_fit_gives_the_dp_estimate_without_the_bootstrap():
    """One release, one estimate: the calibrated params are the same under
    cov_type "naive" and "dp"; the naive fit replays the calibration's worlds
    (SHRINK_REPS each) but never the n_boot bootstrap replicates, which only
    the dp covariance reads (before, every naive fit replayed them too)."""
    from dpmodels.models.shrinkage import SHRINK_REPS

    rng = np.random.default_rng(4)
    n = 4000
    x = rng.uniform(-1, 1, n)
    df = pd.DataFrame({"x": x, "y": (rng.random(n) < 1 / (1 + np.exp(-(0.3 + x)))).astype(int),
                       "z": 1 + x + rng.laplace(0, 0.5, n)})
    logit = dpm.dp_logit("y ~ x", df, epsilon=1.0, bounds={"x": (-1, 1)},
                         levels={"y": [0, 1]}, method="newton", random_state=0)
    quant = dpm.dp_quantreg("z ~ x", df.clip(-4, 6), epsilon=1.0, method="newton",
                            bounds={"x": (-1, 1), "z": (-4, 6)}, random_state=0)
    for model in (logit, quant):
        sizes = _count_replays(model)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            naive = model.fit(cov_type="naive")
            assert sizes and set(sizes) == {SHRINK_REPS}
            del sizes[:]
            dp = model.fit(n_boot=300, random_state=1)
        assert 300 in sizes
        np.testing.assert_array_equal(np.asarray(naive.params), np.asarray(dp.params))
