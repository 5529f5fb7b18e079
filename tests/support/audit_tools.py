"""Statistical helpers shared by the mechanism tests and the privacy audit.

Everything here is written from first principles (the discrete Laplace pmf
``P(Z = z) = (1 - q) / (1 + q) * q**|z|`` with ``q = exp(-epsilon / 2)``)
and deliberately does not call :mod:`dpmodels.core.noise`, so that the tests
compare the library against an independent reference.

Contents
--------
* exact laws: :func:`dl_pmf`, :func:`dl_sf`, :func:`folded_probs`,
  :func:`conditional_probs`;
* goodness of fit: :func:`pooled_chisquare`, :func:`chisquare_integers`,
  :func:`two_sample_chisquare`;
* Clopper-Pearson bounds: :func:`cp_lower`, :func:`cp_upper`;
* the empirical privacy audit of PRIVACY.md ("How we check it"):
  :func:`collect_watched`, :func:`exact_event_probability`,
  :func:`privacy_audit`, :func:`tightness_margin`, :func:`format_audit`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from scipy import stats

#: Significance level of every individual goodness-of-fit check.  Under a
#: correct implementation each such check fails for a fraction ALPHA of the
#: seeds; the seeds are fixed, so the outcome is deterministic.
ALPHA = 1e-3

#: Value standing for "the cell is not in the release" in audit arrays.
ABSENT = np.iinfo(np.int64).min


# --------------------------------------------------------------------------
# exact laws of the discrete Laplace distribution
# --------------------------------------------------------------------------
def dl_q(epsilon: float) -> float:
    return math.exp(-epsilon / 2.0)


def dl_pmf(z, epsilon: float) -> np.ndarray:
    """Exact ``P(Z = z)``, written independently of the library."""
    q = dl_q(epsilon)
    z = np.abs(np.asarray(z, dtype=np.float64))
    return (1.0 - q) / (1.0 + q) * np.exp(z * math.log(q))


def _sum_horizon(epsilon: float) -> int:
    # q**L = exp(-L * epsilon / 2) <= exp(-45): the mass beyond the horizon
    # is below 1e-19, far below double precision of the sums taken here.
    return int(math.ceil(90.0 / epsilon)) + 10


def dl_sf(k: int, epsilon: float) -> float:
    """``P(Z >= k)`` by summing the pmf (not the library's closed form)."""
    k = int(k)
    L = _sum_horizon(epsilon)
    if k <= 0:
        # 1 - P(Z <= k - 1) = 1 - P(Z >= 1 - k) (symmetry): sum the small side.
        z = np.arange(1 - k, 1 - k + L)
        return 1.0 - math.fsum(dl_pmf(z, epsilon))
    z = np.arange(k, k + L)
    return math.fsum(dl_pmf(z, epsilon))


def dl_cdf(k: int, epsilon: float) -> float:
    """``P(Z <= k)``."""
    return dl_sf(-int(k), epsilon)


def folded_probs(lo: int, hi: int, epsilon: float, shift: int = 0) -> np.ndarray:
    """Probabilities of ``shift + Z`` on the integers ``lo..hi`` with the two
    tails folded into the end points: ``P(<= lo)``, ``P(lo+1)``, ...,
    ``P(>= hi)``.  Sums to 1."""
    z = np.arange(lo, hi + 1) - shift
    p = dl_pmf(z, epsilon)
    p[0] = dl_cdf(lo - shift, epsilon)
    p[-1] = dl_sf(hi - shift, epsilon)
    return p


def conditional_probs(k: int, hi: int, epsilon: float, shift: int = 0) -> np.ndarray:
    """Law of ``V = shift + Z`` given ``V >= k`` on ``k..hi`` (``P(V >= hi | V >= k)``
    folded into the last point)."""
    z = np.arange(k, hi + 1) - shift
    p = dl_pmf(z, epsilon)
    p[-1] = dl_sf(hi - shift, epsilon)
    return p / dl_sf(k - shift, epsilon)


def dl_central_moment(order: int, epsilon: float) -> float:
    """``E[Z**order]`` by summation over the whole (numerically relevant) support."""
    L = _sum_horizon(epsilon) * 2
    z = np.arange(-L, L + 1, dtype=np.float64)
    return math.fsum(dl_pmf(z, epsilon) * z**order)


# --------------------------------------------------------------------------
# goodness of fit
# --------------------------------------------------------------------------
def _pool(expected: np.ndarray, min_expected: float) -> list[tuple[int, int]]:
    """Groups of adjacent categories (half-open index ranges) whose expected
    counts are all >= min_expected: greedy from the left, the leftover merged
    into the last group."""
    groups, start, acc = [], 0, 0.0
    for i, e in enumerate(expected):
        acc += e
        if acc >= min_expected:
            groups.append((start, i + 1))
            start, acc = i + 1, 0.0
    if start < len(expected):
        if groups:
            groups[-1] = (groups[-1][0], len(expected))
        else:
            groups.append((start, len(expected)))
    return groups


@dataclass(frozen=True)
class ChiSquare:
    statistic: float
    dof: int
    pvalue: float

    def __str__(self) -> str:
        return f"chi2={self.statistic:.2f}, dof={self.dof}, p={self.pvalue:.3g}"


def pooled_chisquare(observed: np.ndarray, probs: np.ndarray, min_expected: float = 5.0) -> ChiSquare:
    """Pearson goodness of fit of category counts against exact probabilities
    (no estimated parameters), adjacent categories pooled so that every
    expected count is at least ``min_expected``."""
    observed = np.asarray(observed, dtype=np.float64)
    probs = np.asarray(probs, dtype=np.float64)
    assert observed.shape == probs.shape
    assert abs(probs.sum() - 1.0) < 1e-9, probs.sum()
    n = observed.sum()
    groups = _pool(n * probs, min_expected)
    o = np.array([observed[a:b].sum() for a, b in groups])
    e = np.array([n * probs[a:b].sum() for a, b in groups])
    stat = float(((o - e) ** 2 / e).sum())
    dof = len(groups) - 1
    assert dof >= 1, "too few categories for a chi-square test"
    return ChiSquare(stat, dof, float(stats.chi2.sf(stat, dof)))


def chisquare_integers(values: np.ndarray, lo: int, probs: np.ndarray) -> ChiSquare:
    """Goodness of fit of integer samples against ``probs`` on ``lo..lo+len-1``
    whose end categories hold the folded tails (values are clipped into the
    range accordingly)."""
    hi = lo + len(probs) - 1
    v = np.clip(np.asarray(values, dtype=np.int64), lo, hi) - lo
    counts = np.bincount(v, minlength=len(probs))
    return pooled_chisquare(counts, probs)


def two_sample_chisquare(a: np.ndarray, b: np.ndarray) -> ChiSquare:
    """Chi-square test of homogeneity of two integer samples (same law?),
    adjacent values pooled so that every expected cell count is >= 5."""
    a = np.asarray(a, dtype=np.int64)
    b = np.asarray(b, dtype=np.int64)
    lo = int(min(a.min(), b.min()))
    hi = int(max(a.max(), b.max()))
    ca = np.bincount(a - lo, minlength=hi - lo + 1).astype(np.float64)
    cb = np.bincount(b - lo, minlength=hi - lo + 1).astype(np.float64)
    total = ca + cb
    # The smaller expected entry of each column is total * min(na, nb) / (na + nb).
    frac = min(a.size, b.size) / (a.size + b.size)
    groups = _pool(total * frac, 5.0)
    table = np.array([[ca[s:e].sum() for s, e in groups], [cb[s:e].sum() for s, e in groups]])
    if table.shape[1] < 2:
        return ChiSquare(0.0, 0, 1.0)
    stat, p, dof, _ = stats.chi2_contingency(table, correction=False)
    return ChiSquare(float(stat), int(dof), float(p))


# --------------------------------------------------------------------------
# Clopper-Pearson bounds
# --------------------------------------------------------------------------
def cp_lower(x: int, n: int, alpha: float) -> float:
    """One-sided (1 - alpha) Clopper-Pearson lower bound of a binomial p."""
    return 0.0 if x == 0 else float(stats.beta.ppf(alpha, x, n - x + 1))


def cp_upper(x: int, n: int, alpha: float) -> float:
    """One-sided (1 - alpha) Clopper-Pearson upper bound of a binomial p."""
    return 1.0 if x == n else float(stats.beta.ppf(1.0 - alpha, x + 1, n - x))


def _log(x: float) -> float:
    return math.log(x) if x > 0 else -math.inf


# --------------------------------------------------------------------------
# the empirical privacy audit
# --------------------------------------------------------------------------
#: A release function: (data, seed) -> (sorted cell ids, released counts).
ReleaseFn = Callable[[object, int], tuple[np.ndarray, np.ndarray]]
#: An event on the released values of the watched cells: a vectorized
#: predicate on an (R, w) int64 array (ABSENT where a cell was not released).
Event = Callable[[np.ndarray], np.ndarray]


def watched_values(ids: np.ndarray, counts: np.ndarray, cells: Sequence[int]) -> np.ndarray:
    """Released value of each watched cell, ABSENT where it was not released."""
    ids = np.asarray(ids, dtype=np.uint64)
    cells = np.asarray(cells, dtype=np.uint64)
    pos = np.searchsorted(ids, cells)
    out = np.full(cells.size, ABSENT, dtype=np.int64)
    ok = pos < ids.size
    ok[ok] = ids[pos[ok]] == cells[ok]
    out[ok] = np.asarray(counts)[pos[ok]]
    return out


def collect_watched(release_fn: ReleaseFn, data, seeds: Sequence[int], cells: Sequence[int]) -> np.ndarray:
    """Run ``release_fn(data, seed)`` once per seed; (R, w) watched values."""
    out = np.empty((len(seeds), len(cells)), dtype=np.int64)
    for r, seed in enumerate(seeds):
        ids, counts = release_fn(data, int(seed))
        out[r] = watched_values(ids, counts, cells)
    return out


def exact_event_probability(
    event: Event, exact_counts: Sequence[int], k: int | None, epsilon: float,
    zmax: int | None = None,
) -> float:
    """Exact probability of ``event`` for the correct mechanism: each watched
    cell, with exact count c, independently released with value ``c + Z`` if
    ``c + Z >= k`` and absent otherwise (``k=None``: the signed release, absent
    exactly when ``c + Z == 0``).  Summed over the grid |z| <= zmax (the
    neglected mass is below ``2 * q**zmax``)."""
    if zmax is None:
        zmax = int(math.ceil(70.0 / epsilon))  # q**zmax <= exp(-35)
    z = np.arange(-zmax, zmax + 1)
    w = dl_pmf(z, epsilon)
    grids = np.meshgrid(*([z] * len(exact_counts)), indexing="ij")
    weights = np.ones(grids[0].shape)
    vals = []
    for c, g in zip(exact_counts, grids):
        v = c + g
        kept = (v != 0) if k is None else (v >= k)
        vals.append(np.where(kept, v, ABSENT).ravel())
        weights = weights * w[g + zmax]
    values = np.stack(vals, axis=1)
    return float(np.sum(weights.ravel()[event(values)]))


@dataclass(frozen=True)
class LossBound:
    """A lower confidence bound on ``log(P_num(E) / P_den(E))``."""

    event: str
    direction: str  # "D/D'" or "D'/D"
    x_num: int
    x_den: int
    R: int
    lower_bound: float
    # Filled in by the caller when the exact law is known:
    theory: float | None = None
    margin: float | None = None


@dataclass(frozen=True)
class AuditResult:
    R: int
    alpha_each: float
    family_alpha: float
    bounds: tuple[LossBound, ...]

    @property
    def max_lower_bound(self) -> float:
        return max(b.lower_bound for b in self.bounds)

    def best(self) -> LossBound:
        return max(self.bounds, key=lambda b: b.lower_bound)


def loss_lower_bound(x_num: int, x_den: int, R: int, alpha_each: float) -> float:
    """Lower bound of ``log(p_num / p_den)`` from one Clopper-Pearson lower
    bound of the numerator and one upper bound of the denominator, each at
    level ``1 - alpha_each``: it exceeds the true value with probability at
    most ``2 * alpha_each`` (union bound; no independence needed)."""
    return _log(cp_lower(x_num, R, alpha_each)) - _log(cp_upper(x_den, R, alpha_each))


def privacy_audit(
    release_fn: ReleaseFn,
    data_D,
    data_Dp,
    cells: Sequence[int],
    events: Mapping[str, Event],
    R: int,
    seed_base: int,
    family_alpha: float = 1e-3,
) -> AuditResult:
    """The audit of PRIVACY.md: R releases of each neighbouring data set (with
    disjoint seeds), and for every event both lower confidence bounds
    ``log P_D(E)/P_D'(E)`` and ``log P_D'(E)/P_D(E)``.

    Bonferroni: there are ``2 * len(events)`` bounds, each using two one-sided
    Clopper-Pearson bounds at level ``alpha_each = family_alpha / (4 *
    len(events))``, so with probability >= 1 - family_alpha *no* bound
    exceeds its true privacy loss (hence none exceeds epsilon for an
    epsilon-DP mechanism).
    """
    seeds_D = np.arange(R, dtype=np.int64) + seed_base
    seeds_Dp = np.arange(R, dtype=np.int64) + seed_base + 10 * R + 1  # disjoint
    vD = collect_watched(release_fn, data_D, seeds_D, cells)
    vDp = collect_watched(release_fn, data_Dp, seeds_Dp, cells)
    alpha_each = family_alpha / (4 * len(events))
    bounds = []
    for name, ev in events.items():
        xD = int(np.count_nonzero(ev(vD)))
        xDp = int(np.count_nonzero(ev(vDp)))
        bounds.append(LossBound(name, "D/D'", xD, xDp, R, loss_lower_bound(xD, xDp, R, alpha_each)))
        bounds.append(LossBound(name, "D'/D", xDp, xD, R, loss_lower_bound(xDp, xD, R, alpha_each)))
    return AuditResult(R, alpha_each, family_alpha, tuple(bounds))


def tightness_margin(p_num: float, p_den: float, R: int, alpha_each: float, z_fluct: float) -> float:
    """How far below the true loss ``log(p_num / p_den)`` the audit's lower
    bound may fall for a correct mechanism.

    Two parts:
    * the width the Clopper-Pearson bounds themselves take off, evaluated
      exactly at the expected counts ``R * p``:
      ``log p_num - log CP_lower(R p_num)`` and ``log CP_upper(R p_den) - log p_den``;
    * the sampling fluctuation of ``log p_num_hat - log p_den_hat`` about its
      mean: by the delta method its standard deviation is
      ``sqrt((1 - p_num) / (R p_num) + (1 - p_den) / (R p_den))`` (the two
      samples are independent); ``z_fluct`` of those.
    """
    xn = int(round(R * p_num))
    xd = int(round(R * p_den))
    width = (_log(p_num) - _log(cp_lower(xn, R, alpha_each))) + (
        _log(cp_upper(xd, R, alpha_each)) - _log(p_den)
    )
    sd = math.sqrt((1 - p_num) / (R * p_num) + (1 - p_den) / (R * p_den))
    return width + z_fluct * sd


def format_audit(title: str, result: AuditResult, epsilon: float) -> str:
    lines = [
        f"{title}: R={result.R} per data set, epsilon={epsilon:g}, "
        f"family alpha={result.family_alpha:g} (each CP bound at {1 - result.alpha_each:.7f})",
        f"  {'event':<28} {'dir':<5} {'x_num':>6} {'x_den':>6} {'LB':>8} {'theory':>8} {'margin':>7}",
    ]
    for b in sorted(result.bounds, key=lambda b: -b.lower_bound):
        th = "" if b.theory is None else f"{b.theory:8.4f}"
        mg = "" if b.margin is None else f"{b.margin:7.4f}"
        lines.append(
            f"  {b.event:<28} {b.direction:<5} {b.x_num:>6} {b.x_den:>6} {b.lower_bound:8.4f} {th:>8} {mg:>7}"
        )
    return "\n".join(lines)
