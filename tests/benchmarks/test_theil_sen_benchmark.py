"""benchmarks/theil_sen.py: a small fast run of the DP
Theil-Sen baseline benchmark, and checks of the mechanism itself: it recovers a
strong slope on a large sample, its exponential-mechanism sampler never leaves
[-S, S] and draws the intervals with the exact probabilities, and one replaced
row moves the slope utility by at most the number of matchings."""

from __future__ import annotations

import math

import numpy as np
import pytest

from tests.support.benchmark_cases import load_benchmark


@pytest.fixture(scope="module")
def ts():
    return load_benchmark("theil_sen")


def test_quick_run_table(ts, tmp_path):
    out = tmp_path / "theil_sen_quick.md"
    res = ts.main(["--quick", "--out", str(out)])
    text = out.read_text()
    assert "Command: `python benchmarks/theil_sen.py --quick" in text
    for col in ("power % (held)", "finite %", "median width ratio", "worst cover %",
                "wrong sign %", "refused (after charge)", "reps", "s/rep",
                "TS own-estimand worst cover %"):
        assert col in text, col
    summ = res["summary"]
    assert set(summ["method"]) == {"auto", "dp-theil-sen"}
    assert (summ["reps"] == 2).all()
    ts_row = summ[summ["method"] == "dp-theil-sen"].iloc[0]
    assert ts_row["finite"] == 1.0 and ts_row["refused"] == 0
    # the validity check ran first and is in the file
    chk = res["check"]
    assert len(chk) == 2 and chk["cover"].notna().all() and (chk["reps"] == 4).all()
    assert "The baseline's own validity" in text and "worst per-coefficient coverage" in text
    assert (out.parent / "theil_sen_quick_rows.csv.gz").exists()


def test_recovers_a_strong_slope(ts):
    """n = 5000, eps = 50: the privacy noise is negligible (the rank error of the
    slope median is about 4 / (eps_slope n) in quantile, 3e-5), so the error is
    the sampling error of a median of pair slopes.  For one matching of x ~
    U(0, 1) and N(0, 1) errors, the pair slope's noise (e_j - e_i) / dx has
    density g(0) = E|dx| / (2 sqrt(pi)) = 1 / (6 sqrt(pi)) at 0, so the median
    of n / 2 of them has SE 1 / (2 g(0) sqrt(n / 2)); K matchings do no worse.
    The level median of y - b (x - c) has SE sqrt(pi / 2) / sqrt(n), plus c
    times the slope's error.  Four SEs each."""
    rng = np.random.default_rng(20220)
    n, eps, a, b = 5000, 50.0, 1.0, 2.0
    x = rng.uniform(0, 1, n)
    y = a + b * x + rng.standard_normal(n)
    dom = ts.Domain(0.0, 1.0, -5.0, 8.0)
    est, lo, hi, _ = ts.dp_theil_sen(dom, x, y, eps, rng, n_boot=100)
    g0 = 1.0 / (6.0 * math.sqrt(math.pi))
    se_b = 1.0 / (2.0 * g0 * math.sqrt(n / 2))
    se_a = math.sqrt(math.pi / 2) / math.sqrt(n) + dom.c * se_b
    assert abs(est[1] - b) < 4 * se_b, (est, se_b)
    assert abs(est[0] - a) < 4 * se_a, (est, se_a)
    # the bootstrap interval is a proper interval around the estimate, excluding 0
    assert np.all(lo < est) and np.all(est < hi) and lo[1] > 0


def test_sampler_never_leaves_the_range(ts):
    rng = np.random.default_rng(3)
    S = 2.5
    B, m = 400, 41
    v = rng.standard_cauchy((B, m)) * 50  # most values far outside [-S, S]
    v[rng.random((B, m)) < 0.3] = np.nan  # skipped pairs
    v[:5] = np.nan  # rows with no value at all: uniform on [-S, S]
    v[5:10] = 7.0  # all tied outside the range: clipped to S, zero-length intervals
    for eps in (0.01, 1.0, 100.0):
        out = ts.exp_median(v, -S, S, eps, 3.0, rng)
        assert out.shape == (B,)
        assert np.all(np.isfinite(out)) and np.all(out >= -S) and np.all(out <= S)
    # the slope release through the whole procedure, small n and epsilon
    dom = ts.Domain(0.0, 1.0, 0.0, 1.0)
    x = rng.choice([0.0, 0.5, 1.0], (200, 7))
    y = rng.random((200, 7))
    _, slope = ts.ts_point(dom, x, y, 0.05, rng)
    assert np.all(slope >= -dom.S) and np.all(slope <= dom.S)


def test_sampler_draws_the_exact_distribution(ts):
    """Values 0.1, 0.2, 0.5 in [-1, 1]: intervals of length 1.1, 0.1, 0.3, 0.5
    with utilities -1.5, -0.5, -0.5, -1.5 (m = 3); eps = 2, sensitivity 1."""
    rng = np.random.default_rng(11)
    N = 60_000
    out = ts.exp_median(np.tile([0.5, 0.1, 0.2, np.nan], (N, 1)), -1.0, 1.0, 2.0, 1.0, rng)
    lengths = np.array([1.1, 0.1, 0.3, 0.5])
    u = -np.abs(np.arange(4) - 1.5)
    p = lengths * np.exp(2.0 * u / 2.0)
    p /= p.sum()
    got = np.histogram(out, [-1.0, 0.1, 0.2, 0.5, 1.0])[0] / N
    se = np.sqrt(p * (1 - p) / N)
    assert np.all(np.abs(got - p) < 5 * se), (got, p)
    # uniform within an interval: the first interval's draws have mean -0.45
    first = out[out < 0.1]
    assert abs(first.mean() + 0.45) < 5 * (1.1 / math.sqrt(12 * len(first)))


def _utility(slopes, S, grid):
    s = np.clip(slopes[~np.isnan(slopes)], -S, S)
    below = (s[None, :] < grid[:, None]).sum(1)
    return -np.abs(below - len(s) / 2)


def test_one_row_moves_the_utility_by_at_most_k(ts):
    """Replace-one neighbours with the same matchings (the randomness is not the
    data's): the slope utility moves by at most K anywhere in [-S, S], also when
    the replaced row creates or removes tied-x pairs (skipped slopes)."""
    rng = np.random.default_rng(5)
    dom = ts.Domain(0.0, 1.0, 0.0, 1.0, k=4)
    grid = np.linspace(-dom.S, dom.S, 2001)
    worst = 0.0
    for t in range(60):
        n = int(rng.integers(6, 40))
        x = rng.choice(np.linspace(0, 1, 5), n)  # many ties: skipped pairs
        y = rng.random(n)
        x2, y2 = x.copy(), y.copy()
        i = int(rng.integers(n))
        x2[i], y2[i] = rng.choice([0.0, 1.0, x[(i + 1) % n]]), rng.choice([0.0, 1.0])
        s1 = ts.matched_slopes(x[None], y[None], dom.k, dom.gap, np.random.default_rng(t))[0]
        s2 = ts.matched_slopes(x2[None], y2[None], dom.k, dom.gap, np.random.default_rng(t))[0]
        assert np.sum(np.isnan(s1) != np.isnan(s2)) + np.sum(
            (s1 != s2) & ~np.isnan(s1) & ~np.isnan(s2)) <= dom.k
        worst = max(worst, float(np.abs(_utility(s1, dom.S, grid)
                                        - _utility(s2, dom.S, grid)).max()))
    assert 0 < worst <= dom.k
