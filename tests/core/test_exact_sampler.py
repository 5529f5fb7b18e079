"""The exact sampler (dpmodels.core.exact) and the randomness source (PRIVACY.md
rules 1 and 7): the law in the far tail, unbounded support, agreement of the
fast float64 path with the rigorous slow path draw by draw, the gaps that place
the spurious cells, and the secure default.

Chi-square checks reject at p < ALPHA = 1e-3 against exact laws computed
independently (tests/support/audit_tools.py); seeds are fixed.  Draw-by-draw checks
compare with values computed here in exact rational/interval arithmetic.
"""

from __future__ import annotations

import math
from fractions import Fraction

import mpmath
import numpy as np
import pandas as pd
import pytest

import dpmodels as dpm
import dpmodels.core.exact as exact
import dpmodels.core.randomness as randomness
from dpmodels.core.budget import split_epsilon
from dpmodels.data.clipping import CLIP_SHARE
from dpmodels.core.exact import (
    MIN_EPSILON,
    LogRate,
    bernoulli_positions,
    discrete_laplace,
    discrete_laplace_tail,
    geometric,
)
from dpmodels.core.noise import noisy_threshold_sparse
from dpmodels.core.randomness import SecureBits, SeededBits

from tests.support.audit_tools import ALPHA, chisquare_integers, conditional_probs, dl_sf


class ScriptedBits:
    """A word source that first returns given words, then a seeded stream
    (to place U exactly where a test needs it)."""

    seeded = True

    def __init__(self, script, seed=0):
        self.script = [np.uint64(w) for w in script]
        self.rest = SeededBits(np.random.default_rng(seed))

    def words(self, size):
        out = np.empty(size, np.uint64)
        take = min(size, len(self.script))
        out[:take] = self.script[:take]
        del self.script[:take]
        out[take:] = self.rest.words(size - take)
        return out


def exact_floor(E: int, V: int, log_rho) -> int:
    """floor(log(U) / log(rho)) for U in [V, V+1) * 2**-(53+E) when that
    interval decides it (checked), with mpmath at 400 digits."""
    with mpmath.workdps(400):
        lo = mpmath.log(mpmath.mpf(V) * mpmath.mpf(2) ** -(53 + E)) / log_rho
        hi = mpmath.log(mpmath.mpf(V + 1) * mpmath.mpf(2) ** -(53 + E)) / log_rho
        assert mpmath.floor(lo) == mpmath.floor(hi), "the test's U does not decide G"
        return int(mpmath.floor(lo))


# --------------------------------------------------------------------------
# the law, including its far tail
# --------------------------------------------------------------------------
@pytest.mark.parametrize("epsilon,k", [(2.0, 37), (2.0, 200), (0.5, 0), (1.0, 500)])
def test_tail_law_far_beyond_the_old_bounded_support(epsilon, k):
    """numpy's geometric never exceeded 36 at epsilon = 2; the tail law Z | Z >= k
    is k + G for every k, so draws far beyond it follow the conditional pmf."""
    z = discrete_laplace_tail(10 + k, epsilon, k, 100_000)
    assert z.min() >= k
    hi = k + int(math.ceil(2 / epsilon * math.log(1e8))) + 2
    res = chisquare_integers(z, k, conditional_probs(k, hi, epsilon))
    assert res.dof >= 5 and res.pvalue > ALPHA, res


@pytest.mark.parametrize("epsilon", [1e-6, 0.05, 2.0, 8.0])
def test_full_law_chisquare_over_a_wide_range_of_epsilon(epsilon):
    z = discrete_laplace(7, epsilon, 200_000)
    L = int(math.ceil(2 / epsilon * math.log(1e3 * z.size))) + 1
    if L > 60:  # a coarse grid of the same law: bins of equal width on [-L, L]
        edges = np.unique(np.linspace(-L, L + 1, 61).astype(np.int64))
        q = math.exp(-epsilon / 2)  # P(Z < e) in closed form (summing the pmf is too long here)
        cdf = np.array([1 - q**e / (1 + q) if e >= 0 else q ** (1 - e) / (1 + q) for e in edges])
        probs = np.diff(np.concatenate([[0.0], cdf, [1.0]]))
        observed = np.bincount(np.searchsorted(edges, z, side="right"), minlength=probs.size)
        from tests.support.audit_tools import pooled_chisquare

        res = pooled_chisquare(observed, probs)
    else:
        from tests.support.audit_tools import folded_probs

        res = chisquare_integers(z, -L, folded_probs(-L, L, epsilon))
    assert res.dof >= 1 and res.pvalue > ALPHA, res


def test_unbounded_support_from_a_tiny_uniform():
    """U below 2**-1200 (a hundred leading zero words): G is the exact
    floor(log U / log q), far beyond what 53 uniform bits can give."""
    eps = 2.0
    V = (1 << 52) + 12345
    bits = ScriptedBits([0] * 100 + [V << 11 | 5])
    g = geometric(bits, LogRate.of_q(eps), 1)
    E = 100 * 12
    assert g[0] == exact_floor(E, V, mpmath.mpf(-eps / 2)) > 800


def test_draw_of_2_62_or_more_raises_instead_of_wrapping():
    bits = ScriptedBits([0] * 400 + [1 << 63])  # U < 2**-4800: G ~ 3300 / 5e-16
    with pytest.raises(OverflowError):
        geometric(bits, LogRate.of_q(MIN_EPSILON), 1)
    bits = ScriptedBits([0] * 400 + [1 << 63])
    assert geometric(bits, LogRate.of_q(MIN_EPSILON), 1, cap=10**18)[0] == 10**18


@pytest.mark.parametrize("rate", [LogRate.of_q(1.0), LogRate.of_q(0.01), LogRate.of_q(30.0),
                                  LogRate.no_cross(1.0, 7), LogRate.no_cross(0.2, 0),
                                  LogRate.no_cross(1.0, -3)],
                         ids=["q eps=1", "q eps=0.01", "q eps=30", "no-cross k=7",
                              "no-cross k=0", "no-cross k=-3"])
def test_fast_path_equals_the_rigorous_slow_path_draw_by_draw(rate, monkeypatch):
    """Same words, every draw decided twice: by float64 enclosures and by
    interval arithmetic alone (the fast path disabled)."""
    fast = geometric(SeededBits(np.random.default_rng(11)), rate, 3000)
    monkeypatch.setattr(exact, "_FAST_MARGIN", 1e6)  # no fast decision is possible
    slow = geometric(SeededBits(np.random.default_rng(11)), rate, 3000)
    np.testing.assert_array_equal(fast, slow)


@pytest.mark.parametrize("epsilon", [1.0, 0.01])
def test_fast_path_decides_exactly_near_integer_boundaries(epsilon):
    """Uniforms one 2**-53 step either side of q**j (where rounding could flip
    the floor): every draw equals the exact value computed in 400 digits."""
    rate = LogRate.of_q(epsilon)
    script, want = [], []
    j_max = int(12 * math.log(2) / (epsilon / 2))  # q**j >= 2**-12: one word holds U
    for j in np.unique(np.linspace(1, j_max, 40).astype(int)):
        with mpmath.workdps(60):
            V = int(mpmath.floor(mpmath.exp(-int(j) * mpmath.mpf(epsilon) / 2) * mpmath.mpf(2) ** 53))
        for VV in (V - 1, V + 1):  # U in [VV, VV + 1) * 2**-53 lies just below / above q**j
            script.append(VV << 11)
            want.append(exact_floor(0, VV, mpmath.mpf(-epsilon / 2)))
        assert want[-2:] == [j, j - 1]  # just below q**j: G = j; just above: G = j - 1
    got = geometric(ScriptedBits(script), rate, len(script))
    np.testing.assert_array_equal(got, want)


def test_uniform_parts_leading_zero_words():
    """A first word below 2**52 means U < 2**-12: the exponent grows by 12 and
    fresh words are read (the law of U is kept)."""
    w = (1 << 51) | 7
    E, V = exact._uniform_parts(ScriptedBits([w, w, 1 << 63]), 1)
    assert E[0] == 24 and V[0] == (1 << 63) >> 11


# --------------------------------------------------------------------------
# the gaps that place the spurious cells
# --------------------------------------------------------------------------
def test_bernoulli_positions_count_and_uniformity():
    eps, k, N = 1.0, 3, 200_000
    p = dl_sf(k, eps)
    counts, hist = [], np.zeros(20)
    for seed in range(40):
        pos = bernoulli_positions(seed, LogRate.no_cross(eps, k), N)
        assert pos.dtype == np.uint64 and np.all(np.diff(pos.astype(np.int64)) > 0)
        assert pos.size == 0 or int(pos.max()) < N
        counts.append(pos.size)
        hist += np.bincount((pos.astype(np.int64) * 20) // N, minlength=20)
    # total successes ~ Binomial(40 N, p): within 5 standard deviations
    total, mean = sum(counts), 40 * N * p
    assert abs(total - mean) <= 5 * math.sqrt(mean * (1 - p)), (total, mean)
    res = chisquare_integers(np.repeat(np.arange(20), hist.astype(np.int64)), 0, np.full(20, 0.05))
    assert res.pvalue > ALPHA, res


def test_bernoulli_positions_in_a_domain_of_2_63_cells():
    N = 2**63 - 1
    rate = LogRate.no_cross(1.0, 80)  # p ~ 2.6e-18: about 24 successes
    pos = bernoulli_positions(5, rate, N)
    assert 0 < pos.size < 200 and int(pos.max()) < N
    assert np.all(np.diff(pos) > 0)
    assert bernoulli_positions(5, LogRate.no_cross(1000.0, 1), N).size <= 1


def test_spurious_cells_never_land_on_observed_cells():
    ids = np.array([0, 1, 2, 5, 6, 9], np.uint64)
    counts = np.full(ids.size, 1000, np.int64)
    seen = np.zeros(10, np.int64)
    for seed in range(300):
        out = noisy_threshold_sparse(seed, 1.0, ids, counts, 10, 1)
        new = np.setdiff1d(out.ids, ids)
        seen[new.astype(np.int64)] += 1
    assert seen[ids.astype(np.int64)].sum() == 0
    # each empty cell (3, 4, 7, 8) crosses independently with P(Z >= 1)
    p = dl_sf(1, 1.0)
    for c in (3, 4, 7, 8):
        assert abs(seen[c] - 300 * p) <= 5 * math.sqrt(300 * p * (1 - p)), seen


# --------------------------------------------------------------------------
# epsilon limits and randomness (rule 7)
# --------------------------------------------------------------------------
def test_log_rates_are_exact_or_enclosing():
    r = LogRate.of_q(0.3)
    assert r.lo == r.hi == -0.15
    for eps, k in ((1.0, 7), (0.01, 3), (5.0, -2), (1000.0, 1)):
        r = LogRate.no_cross(eps, k)
        with mpmath.workdps(80):
            q = mpmath.exp(-mpmath.mpf(eps) / 2)
            sf = q**k / (1 + q) if k >= 0 else 1 - q ** (1 - k) / (1 + q)
            truth = mpmath.log1p(-sf) if k >= 0 else mpmath.log(q ** (1 - k) / (1 + q))
            assert r.lo <= truth <= r.hi < 0, (eps, k, r, truth)


@pytest.mark.parametrize("epsilon", [1e-16, 5e-300, 2.0**-60])
def test_epsilon_below_the_exact_limit_is_refused_before_anything(epsilon):
    acct = dpm.Accountant(1.0)
    df = pd.DataFrame({"x": np.arange(10.0)})
    with pytest.raises(ValueError, match="epsilon"):
        dpm.release(df, columns=["x"], epsilon=epsilon, bounds={"x": (0, 10)}, bins=2,
                    accountant=acct)
    assert acct.spent == 0


def _smallest_accepted_with_bounds() -> float:
    """The public rule: with a variable of finite bounds, CLIP_SHARE of epsilon goes
    to the outside counts, and that part must reach MIN_EPSILON."""
    eps = MIN_EPSILON / CLIP_SHARE
    while split_epsilon(eps, [CLIP_SHARE, None])[0] < MIN_EPSILON:  # float rounding
        eps = float(np.nextafter(eps, math.inf))
    return eps


def test_smallest_accepted_epsilon_releases_exact_int64_counts():
    df = pd.DataFrame({"x": np.arange(100.0), "g": ["a", "b", "c", "d"] * 25})
    # no variable can clip: all of epsilon goes to the cells, MIN_EPSILON is accepted
    rel = dpm.release(df, columns=["g"], levels={"g": ["a", "b", "c", "d"]}, epsilon=MIN_EPSILON,
                      threshold=0.0, random_state=1)
    assert rel.counts.dtype == np.int64
    assert rel.report.noisy_total == sum(int(c) for c in rel.counts)
    # a bounded variable: the smallest accepted epsilon is MIN_EPSILON / CLIP_SHARE
    eps = _smallest_accepted_with_bounds()
    kw = dict(columns=["x"], bounds={"x": (0, 100)}, bins=3, threshold=0.0, random_state=1)
    acct = dpm.Accountant(1.0)
    rel = dpm.release(df, epsilon=eps, accountant=acct, **kw)
    assert rel.counts.dtype == np.int64
    assert rel.report.noisy_total == sum(int(c) for c in rel.counts)
    assert acct.spent == eps
    # one float below is refused, before any charge
    acct = dpm.Accountant(1.0)
    with pytest.raises(dpm.DPModelsError, match="too small to split"):
        dpm.release(df, epsilon=float(np.nextafter(eps, 0.0)), accountant=acct, **kw)
    assert acct.spent == 0 and not acct.ledger


def test_default_release_reads_the_os_secure_generator(monkeypatch):
    calls = []
    real = randomness.os.urandom

    def spy(n):
        calls.append(n)
        return real(n)

    monkeypatch.setattr(randomness.os, "urandom", spy)
    df = pd.DataFrame({"x": np.arange(50.0)})
    rel = dpm.release(df, columns=["x"], epsilon=1.0, bounds={"x": (0, 50)}, bins=4)
    assert calls and sum(calls) >= 8 * 2 * 4  # two geometric draws per observed cell
    assert rel.report.seeded is False and "secure" in str(rel.report)
    calls.clear()
    rel = dpm.release(df, columns=["x"], epsilon=1.0, bounds={"x": (0, 50)}, bins=4,
                      random_state=3)
    assert not calls and rel.report.seeded is True and "seeded" in str(rel.report)


def test_seeded_releases_are_reproducible_and_secure_ones_differ():
    df = pd.DataFrame({"x": np.arange(500.0)})
    kw = dict(columns=["x"], epsilon=1.0, bounds={"x": (0, 500)}, bins=50, threshold=0.0)
    a = dpm.release(df, random_state=9, **kw)
    b = dpm.release(df, random_state=np.random.default_rng(9), **kw)
    np.testing.assert_array_equal(a.counts, b.counts)
    c, d = dpm.release(df, **kw), dpm.release(df, **kw)
    # 50 cells of noise of scale 2 agreeing by chance: probability < 1e-20
    assert not (np.array_equal(c.cell_ids, d.cell_ids) and np.array_equal(c.counts, d.counts))
    assert SecureBits().words(4).dtype == np.uint64


@pytest.mark.parametrize("bad", [True, 1.5, "7", -1, np.random.RandomState(0)])
def test_bad_random_state_is_refused(bad):
    with pytest.raises((TypeError, ValueError)):
        randomness.random_source(bad)


def test_fraction_check_of_the_documented_min_epsilon():
    """At MIN_EPSILON a draw of 2**62 has probability q**(2**62) < 1e-900."""
    log10_p = -float(Fraction(MIN_EPSILON) / 2 * 2**62) / math.log(10)
    assert log10_p < -900


@pytest.mark.parametrize("epsilon, k", [(200.0, 1), (1e3, 3), (1e6, 1), (1e300, 2)])
def test_no_cross_returns_and_encloses_at_a_large_epsilon(epsilon, k):
    """issue 25, finding 6: at a large epsilon P(Z >= k) is below any working
    precision, and the enclosure of log(1 - P(Z >= k)) doubled its precision
    without end (the histogram release did not return above epsilon ~1e5).  It
    now returns at once, and its interval holds the value (checked against
    mpmath at 400 digits where that can resolve it)."""
    import mpmath

    from dpmodels.core.exact import LogRate

    rate = LogRate.no_cross(epsilon, k)
    assert rate.lo <= rate.hi <= 0  # -0.0 when |log rho| < 5e-324 (issue 43, audit item 9)
    with mpmath.workdps(1000):  # (mpf of the raw interval, exactly)
        lo, hi = (mpmath.mpf(v) for v in rate.enclose(80))
        assert lo <= hi < 0 and (hi - lo) <= abs(hi) * mpmath.mpf(2) ** -80
    if epsilon <= 1e3:
        with mpmath.workdps(1000):
            q = mpmath.exp(-mpmath.mpf(epsilon) / 2)
            exact = mpmath.log(1 - q**k / (1 + q))
            assert lo <= exact <= hi
            assert mpmath.mpf(rate.lo) <= exact  # the float lower bound holds too
