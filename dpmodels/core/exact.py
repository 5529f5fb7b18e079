"""Exact samplers of the geometric and discrete Laplace laws.

Every draw of a release goes through `geometric()`: a variable ``G`` on
{0, 1, 2, ...} with ``P(G >= j) = rho**j`` for a rate ``0 < rho < 1`` known
through its logarithm (`LogRate`).  From it:

* the discrete Laplace ``Z = G1 - G2`` with ``rho = q = exp(-epsilon/2)``
  (`discrete_laplace()`): ``P(Z = z) = (1-q)/(1+q) q**|z|``;
* its tail law ``Z | Z >= k = k + G`` for ``k >= 0`` (memorylessness), by
  rejection for ``k < 0`` (`discrete_laplace_tail()`);
* the positions of the successes among N independent Bernoulli(p) trials,
  as geometric gaps with ``rho = 1 - p`` (`bernoulli_positions()`): the
  empty cells of a sparse release that cross the threshold.

Why exact (PRIVACY.md rule 1)
-----------------------------
``G = floor(log(U) / log(rho))`` for U uniform on (0, 1).  U is a *real*
number given by an unbounded stream of random bits: its binary exponent
(the count of leading zero bits, unbounded) and then as many mantissa bits as
a decision needs.  The sampler never rounds the law: it decides ``floor``
from an *enclosure* of ``log(U) / log(rho)``.

* Fast path (numpy, vectorized): one 64-bit word gives the exponent and 52
  mantissa bits, so U lies in a known interval of relative width 2**-53;
  float64 arithmetic (``log`` within one ulp, a few roundings) gives an
  interval for ``x = log(U) / log(rho)`` that is widened by a relative margin
  of 1e-12, a thousand times the worst rounding error.  When that interval
  holds no integer, ``floor(x)`` is known exactly.
* Slow path (the rest, probability about 1e-12 per draw at epsilon = 1):
  rigorous interval arithmetic at arbitrary precision (mpmath's ``libmpi``,
  outward rounding), drawing 64 more bits of U and raising the precision
  until the enclosure of x holds no integer.  ``x`` is irrational with
  probability one, so this ends with probability one, and the result is
  ``floor(x)`` exactly.

The support is unbounded: U can be arbitrarily small (every leading zero
word adds 12 to the exponent and is followed by fresh bits), so every
integer has positive probability.  Results are held in int64: a draw of
2**62 or more raises ``OverflowError`` - for the epsilons a release accepts
(`MIN_EPSILON`) that has probability below 1e-900 per draw.  No input
makes the sampler loop without end (numpy's ``Generator.geometric`` does
for a few top uniform values, and has a bounded support).

Speed: one word and one ``log`` per geometric draw; about 12 million
discrete Laplace draws per second on one core from a seeded generator, 9
million from ``os.urandom`` (``benchmarks/noise.py``).
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field

import numpy as np
from mpmath.libmp import (
    from_float,
    from_int,
    from_man_exp,
    fzero,
    mpf_abs,
    mpf_add,
    mpf_cmp,
    mpf_floor,
    mpf_mul,
    mpf_neg,
    mpf_shift,
    mpf_sub,
    to_float,
    to_int,
)
from mpmath.libmp.libmpi import mpi_add, mpi_div, mpi_exp, mpi_log, mpi_mul, mpi_sub

from .randomness import RandomBits, random_source

__all__ = ["LogRate", "geometric", "discrete_laplace", "discrete_laplace_tail",
           "bernoulli_positions", "uniform_below", "MIN_EPSILON", "MAX_DRAW",
           "geometric_fast"]

#: Smallest epsilon a release accepts: below it the noise (scale 2/epsilon)
#: can no longer be held in 64-bit counts with certainty for every cell of the
#: largest domain (P(|Z| >= 2**62) < 1e-900 per cell at 1e-15).
MIN_EPSILON = 1e-15
#: Largest magnitude of a draw; beyond it ``OverflowError`` (see module docstring).
MAX_DRAW = 2**62

_TWO52 = np.uint64(1 << 52)
_LN2 = math.log(2.0)
#: Relative widening of the float64 enclosures (rounding errors are < 1e-14).
_FAST_MARGIN = 1e-12
#: Starting precision (bits) of the slow path.
_SLOW_PREC = 128


def _mpf_of(x: float):
    return from_float(float(x))


@dataclass(frozen=True)
class LogRate:
    """``log(rho)`` of a geometric law, ``0 < rho < 1``, as enclosures.

    ``lo <= log(rho) <= hi <= 0`` in float64, and `enclose()` an interval
    of any precision (mpmath raw intervals).  Build it with `of_q()` or
    `no_cross()`.  ``hi`` is negative unless ``log(rho)`` lies closer to 0
    than the smallest subnormal float (``no_cross()`` at a huge epsilon,
    e.g. OUE's bits at epsilon >= 745), where it is ``-0.0``: the fast path
    then decides nothing (``log U / hi`` is infinite) and `enclose()`, whose
    exponents are unbounded, decides exactly.
    """

    lo: float
    hi: float
    _exact: tuple | None = None  # the exact value when it is a float (log q = -eps/2)
    _parts: tuple | None = field(default=None, repr=False)  # (epsilon, k) of no_cross

    @classmethod
    def of_q(cls, epsilon: float) -> LogRate:
        """``rho = q = exp(-epsilon/2)``: ``log rho = -epsilon/2``, exact in float64."""
        v = -float(epsilon) / 2.0
        if not (v < 0 and math.isfinite(v)) or v * -2.0 != float(epsilon):
            raise ValueError(f"epsilon={epsilon!r} has no exact half in float64")
        exact = mpf_neg(mpf_shift(_mpf_of(epsilon), -1))
        return cls(v, v, (exact, exact))

    @classmethod
    def no_cross(cls, epsilon: float, k: int) -> LogRate:
        """``rho = P(Z < k) = 1 - P(Z >= k)`` for the discrete Laplace Z of
        scale ``2/epsilon``: the probability that an empty cell stays below the
        integer threshold k."""
        tmp = cls(-1.0, -1.0, None, (float(epsilon), int(k)))
        lo_hi = tmp.enclose(80)
        lo, hi = to_float(lo_hi[0]), to_float(lo_hi[1])
        # outward: the conversions round to nearest.  A log closer to 0 than the
        # smallest subnormal float (q = exp(-epsilon/2) below 5e-324) has no negative
        # float above it: hi is then -0.0 (the enclosure holds; see the class notes)
        lo = math.nextafter(lo, -math.inf)
        hi = math.nextafter(hi, math.inf)
        if hi >= 0.0:
            hi = -0.0
        return cls(lo, hi, None, (float(epsilon), int(k)))

    def enclose(self, prec: int) -> tuple:
        """An interval holding ``log(rho)``, of relative width about 2**-prec."""
        if self._exact is not None:
            return self._exact
        assert self._parts is not None  # every rate holds its exact value or its parts
        epsilon, k = self._parts
        return _enclose_no_cross(epsilon, k, prec)


@functools.lru_cache(maxsize=1024)
def _enclose_no_cross(epsilon: float, k: int, prec: int) -> tuple:
    """`LogRate.enclose()` of ``no_cross(epsilon, k)``: a pure function of its
    arguments, kept (a sparse release's gap sampler asks it again for every
    draw its fast path leaves undecided: about 11 per release of a 2e12-cell
    domain, half of such a release's time)."""
    wp = prec + 32
    while True:
        iv = _log_no_cross(epsilon, k, wp)
        lo, hi = iv
        width = mpf_sub(hi, lo, 64, "u")
        if mpf_cmp(hi, fzero) < 0 and mpf_cmp(mpf_shift(width, prec), mpf_abs(hi)) <= 0:
            return iv
        wp *= 2


def _log_no_cross(epsilon: float, k: int, wp: int) -> tuple:
    """Interval of ``log P(Z < k)`` at working precision ``wp``."""
    e = _mpf_of(epsilon)
    half = mpf_neg(mpf_shift(e, -1))  # -epsilon/2, exact
    half_iv = (half, half)
    one = (from_int(1), from_int(1))
    q = mpi_exp(half_iv, wp)
    log1pq = mpi_log(mpi_add(one, q, wp), wp)
    if k <= 0:
        # P(Z < k) = P(Z >= 1 - k) = q**(1-k) / (1 + q)
        kk = from_int(1 - k)
        return mpi_sub(mpi_mul((kk, kk), half_iv, wp), log1pq, wp)
    # P(Z < k) = 1 - q**k / (1 + q)
    kk = from_int(k)
    qk = mpi_exp(mpi_mul((kk, kk), half_iv, wp), wp)
    p = mpi_div(qk, mpi_add(one, q, wp), wp)
    if mpf_cmp(p[1], from_man_exp(1, -wp)) <= 0:
        # p <= 2**-wp: 1 - p is 1 at this precision, and log(1 - p) would need
        # about -log2(p) bits (a large epsilon: p = exp(-k epsilon / 2)).  Enclose it
        # instead by -p - p**2 <= log(1 - p) <= -p (0 < p <= 1/2), exact at any size.
        p_lo, p_hi = p
        lo = mpf_neg(mpf_add(p_hi, mpf_mul(p_hi, p_hi, wp, "u"), wp, "u"))
        return lo, mpf_neg(p_lo)
    return mpi_log(mpi_sub(one, p, wp), wp)


# ---- the geometric sampler --------------------------------------------------------------


def _uniform_parts(bits: RandomBits, size: int) -> tuple[np.ndarray, np.ndarray]:
    """``(E, V)``: U = 2**-E * (V + Y) / 2**53 with V a 53-bit integer
    >= 2**41 and Y uniform on [0, 1) still unread.

    A word w gives V = w >> 11 when its first 12 bits are not all zero
    (w >= 2**52); otherwise U < 2**-12, U = 2**-12 U' with U' uniform and
    independent of what was read, and fresh words are drawn for U' (so E is
    unbounded, a multiple of 12)."""
    w = bits.words(size)
    E = np.zeros(size, np.int64)
    small = np.flatnonzero(w < _TWO52)
    if small.size:
        w = w.copy()
        while small.size:
            E[small] += 12
            w[small] = bits.words(small.size)
            small = small[w[small] < _TWO52]
    return E, w >> np.uint64(11)


def geometric(source, rate: LogRate, size: int, *, cap: int | None = None) -> np.ndarray:
    """``size`` independent draws of G with ``P(G >= j) = rho**j``, exactly.

    Parameters
    ----------
    source : RandomBits, numpy Generator, int or None
        Where the random words come from (`dpmodels.core.randomness.random_source()`).
    rate : LogRate
        ``log(rho)``.
    size : int
    cap : int, optional
        Return ``min(G, cap)`` (lets a caller draw gaps that may be
        astronomically long).  Without it a draw of `MAX_DRAW` or more
        raises ``OverflowError``.

    Returns
    -------
    numpy.ndarray of int64

    Examples
    --------
    >>> g = geometric(0, LogRate.of_q(1.0), 100_000)
    >>> bool(abs(g.mean() - 1 / (math.exp(0.5) - 1)) < 0.02)   # E[G] = q / (1 - q)
    True
    """
    bits = random_source(source)
    size = int(size)
    if size <= 0:
        return np.zeros(0, np.int64)
    E, V = _uniform_parts(bits, size)
    out, decided = geometric_fast(E, V, rate, cap)
    if not decided.all():
        for i in np.flatnonzero(~decided):
            out[i] = _slow_geometric(bits, rate, int(E[i]), int(V[i]), cap)
    return out


def geometric_fast(E: np.ndarray, V: np.ndarray, rate: LogRate,
                   cap: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """The fast path of `geometric()` on uniforms already read:
    ``U = 2**-E (V + Y) / 2**53`` (``V`` 53-bit, ``Y`` unread; see
    `_uniform_parts()`).  Returns ``(out, decided)``: ``out[i]`` is the
    draw (``min(G, cap)`` with a cap) wherever ``decided[i]``; the others
    need `_slow_geometric()` with more bits of their U."""
    u = V.astype(np.float64) * 2.0**-53  # exact: U lies in [u, u + 2**-53) * 2**-E
    L = np.log(u)
    if E.any():
        L -= E * _LN2  # both terms <= 0: no cancellation
    # enclosure of log U: [L, L + 2**-53 / u], widened for rounding
    L_lo = L * (1.0 + _FAST_MARGIN) - 1e-300
    L_hi = np.minimum(L * (1.0 - _FAST_MARGIN) + (2.0**-53 * (1.0 + _FAST_MARGIN)) / u, 0.0)
    with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
        x_min = L_hi / rate.lo * (1.0 - _FAST_MARGIN)
        x_max = L_lo / rate.hi * (1.0 + _FAST_MARGIN)
        f_min, f_max = np.floor(x_min), np.floor(x_max)
    limit = float(MAX_DRAW) if cap is None else float(cap)
    decided = (f_min == f_max) & (f_max < limit)
    out = np.where(decided, f_min, 0.0).astype(np.int64)
    if cap is not None:
        over = ~decided & (x_min >= float(cap))  # certainly >= cap
        out[over] = int(cap)
        decided |= over
    return out, decided


def _slow_geometric(bits: RandomBits, rate: LogRate, E: int, V: int, cap: int | None) -> int:
    """floor(log U / log rho) by rigorous interval arithmetic, reading more
    bits of U (and raising the precision) until the enclosure decides."""
    extra, nwords, prec = 0, 0, _SLOW_PREC
    while True:
        num = (V << (64 * nwords)) + extra
        exp = -(53 + 64 * nwords) - E
        U = (from_man_exp(num, exp), from_man_exp(num + 1, exp))
        X = mpi_div(mpi_log(U, prec), rate.enclose(prec), prec)
        lo, hi = to_int(mpf_floor(X[0])), to_int(mpf_floor(X[1]))
        if cap is not None and lo >= cap:
            return int(cap)
        if lo == hi:
            if cap is not None:
                return int(min(lo, cap))
            if lo >= MAX_DRAW:
                raise OverflowError(
                    "a geometric draw exceeded 2**62 (probability below 1e-900 for the "
                    "epsilons a release accepts)")
            return int(lo)
        extra = (extra << 64) | int(bits.words(1)[0])
        nwords += 1
        prec += 64


# ---- the laws built on it ----------------------------------------------------------------


def discrete_laplace(source, epsilon: float, size: int) -> np.ndarray:
    """``size`` exact draws of the discrete Laplace law of scale ``2/epsilon``:
    ``P(Z = z) = (1-q)/(1+q) q**|z|``, ``q = exp(-epsilon/2)``, as the
    difference of two independent geometric variables.

    Examples
    --------
    >>> z = discrete_laplace(1, 1.0, 5)
    >>> z.dtype, z.shape
    (dtype('int64'), (5,))
    """
    size = int(size)
    g = geometric(source, LogRate.of_q(epsilon), 2 * size)
    return g[:size] - g[size:]


def discrete_laplace_variance(epsilon: float) -> float:
    """Variance of `discrete_laplace()` with this ``epsilon``:
    ``2 q / (1 - q)**2``, ``q = exp(-epsilon/2)``."""
    rate = math.exp(-epsilon / 2.0)
    return 2.0 * rate / math.expm1(-epsilon / 2.0) ** 2


def discrete_laplace_tail(source, epsilon: float, k: int, size: int) -> np.ndarray:
    """``size`` exact draws of Z given ``Z >= k``: ``k + G`` for ``k >= 0``
    (memorylessness), by rejection from the full law for ``k < 0`` (where the
    event has probability above 1/2)."""
    bits = random_source(source)
    size, k = int(size), int(k)
    if size <= 0:
        return np.zeros(0, np.int64)
    if k >= 0:
        return k + geometric(bits, LogRate.of_q(epsilon), size)
    out = np.empty(size, np.int64)
    filled = 0
    while filled < size:
        draw = discrete_laplace(bits, epsilon, 2 * (size - filled) + 8)
        draw = draw[draw >= k][: size - filled]
        out[filled:filled + draw.size] = draw
        filled += draw.size
    return out


def bernoulli_positions(source, rate: LogRate, n_trials: int) -> np.ndarray:
    """Sorted positions (uint64) of the successes among ``n_trials``
    independent Bernoulli trials with failure probability ``rho``
    (``log rho`` = ``rate``): the failures before each success are
    independent geometric gaps.  O(successes) time, whatever ``n_trials``.

    Examples
    --------
    >>> pos = bernoulli_positions(3, LogRate.no_cross(1.0, 60), 10**15)  # about 58 successes
    >>> bool(pos.size > 0 and pos.max() < 10**15)
    True
    """
    bits = random_source(source)
    n_trials = int(n_trials)
    if n_trials <= 0:
        return np.zeros(0, np.uint64)
    p_est = -math.expm1(rate.hi)  # P(success), a little low: only sizes the batches
    found = []
    nxt = 0  # first position not yet decided
    while nxt < n_trials:
        remaining = n_trials - nxt
        batch = int(min(max(16.0, 1.1 * remaining * p_est + 16.0), float(1 << 22)))
        gaps = geometric(bits, rate, batch, cap=remaining)  # <= remaining: no overflow below
        steps = gaps.astype(np.uint64) + np.uint64(1)
        # Successes are read in order.  The prefix whose (float) running sum stays
        # below the end is summed exactly in uint64 (no overflow: it is < 2**64);
        # the next gap, if any, is added in Python ints; later gaps are discarded
        # unread, a choice that depends only on gaps already used.
        approx = np.cumsum(steps.astype(np.float64))
        cut = int(np.searchsorted(approx, remaining * (1.0 + 1e-9) + 4.0, side="right"))
        ends = np.cumsum(steps[:cut], dtype=np.uint64)  # success i at nxt + ends[i] - 1
        inside = ends <= np.uint64(remaining)
        found.append(np.uint64(nxt) + ends[inside] - np.uint64(1))
        if not inside.all():
            break
        done = int(ends[-1]) if cut else 0
        if cut < steps.size:
            end = done + int(steps[cut])
            if end > remaining:
                break
            found.append(np.array([nxt + end - 1], np.uint64))
            done = end
        nxt += done
    return np.concatenate(found) if found else np.zeros(0, np.uint64)


def uniform_below(bits: RandomBits, bound: int, size: int) -> np.ndarray:
    """``size`` independent, exactly uniform integers in ``[0, bound)`` (uint64)
    from 64-bit words (the one uniform sampler of every mechanism: the local
    channels' proposals, the selection's candidates, the smoothed sample's
    rows and cells): a word below the largest multiple of ``bound`` that
    fits in 64 bits is kept (``w % bound``), the others are redrawn.

    Examples
    --------
    >>> from dpmodels.core.randomness import random_source
    >>> u = uniform_below(random_source(0), 6, 10_000)
    >>> int(u.max()), sorted(set(u.tolist())) == list(range(6))
    (5, True)
    """
    bound, size = int(bound), int(size)
    if not 1 <= bound <= 1 << 64:
        raise ValueError(f"bound must be in [1, 2**64], got {bound}")
    if size <= 0:
        return np.zeros(0, np.uint64)
    if bound == 1:
        return np.zeros(size, np.uint64)
    if bound & (bound - 1) == 0:  # a power of two: the top bits of a word
        return bits.words(size) >> np.uint64(64 - (bound.bit_length() - 1))
    limit = np.uint64(((1 << 64) // bound) * bound)  # < 2**64: bound is not a power of 2
    out = np.empty(size, np.uint64)
    pending = np.arange(size)
    while pending.size:
        w = bits.words(pending.size)
        ok = w < limit
        out[pending[ok]] = w[ok] % np.uint64(bound)
        pending = pending[~ok]
    return out
