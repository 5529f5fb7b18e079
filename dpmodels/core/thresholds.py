"""``threshold="auto"``: a threshold that grows with the domain.

With Lei's enhanced threshold ``t = A log(n) / epsilon`` an empty cell is
released with probability ``P(Z >= t)``, about ``n**(-A/2) / 2`` whatever
epsilon: the expected number of spurious (pure-noise) cells,
``m P(Z >= t)``, grows linearly with the domain size m (Vinterbo 2012,
eq. 7).  For 2e9 cells and n = 1e6 that is about 4e7 cells of noise, forty
times the data.

The auto rule keeps the *expected spurious mass* - the number of spurious
cells times the expected count of each - a small fixed fraction of the
public n, and never goes below the enhanced threshold:

    q = exp(-epsilon / 2)
    P(Z >= k) = q**k / (1 + q)                    (k >= 0)
    E[Z | Z >= k] = k + q / (1 - q)                (the tail is k + a geometric)
    mass(k) = m * P(Z >= k) * (k + q / (1 - q))
    k_auto = the smallest integer k >= ceil(A log(n) / epsilon) with
             mass(k) <= AUTO_SPURIOUS_FRACTION * n
             and m * P(Z >= k) <= max_spurious_cells

It depends on (m, n, epsilon, A) only - public inputs (PRIVACY.md rule 4).
``mass(k)`` is decreasing in k for k >= 1, so ``k_auto`` is found by a
logarithmic estimate and a few unit steps.

Why a fraction of n: the spurious cells enter the fit as weighted
observations spread uniformly over the domain; their weight relative to the
n real rows is what biases the estimates (towards the centre of the domain,
like a contamination of that size).  ``AUTO_SPURIOUS_FRACTION = 0.01`` bounds
that contamination by 1%.  When the enhanced threshold already meets it
(small domains, as in Lei's housing example at epsilon = 1), auto *is* the
enhanced threshold; it differs only where the domain is large compared with
n.  The price of a higher threshold is truncation: a true cell with count c
survives with probability P(Z >= k - c), so cells holding fewer than about k
rows are mostly lost.  See ``docs/scaling.md``.
"""

from __future__ import annotations

import math

__all__ = ["AUTO_SPURIOUS_FRACTION", "auto_threshold", "spurious_mass", "enhanced_cut"]

#: Bound on the expected spurious mass, as a fraction of the public n.
AUTO_SPURIOUS_FRACTION = 0.01


def _log_q(epsilon: float) -> float:
    return -epsilon / 2.0


def _log_sf(k: int, epsilon: float) -> float:
    """log P(Z >= k), k >= 0."""
    lq = _log_q(epsilon)
    return k * lq - math.log1p(math.exp(lq))


def _tail_mean(k: int, epsilon: float) -> float:
    """E[Z | Z >= k] = k + q / (1 - q), k >= 0."""
    q = math.exp(_log_q(epsilon))
    return k + q / -math.expm1(_log_q(epsilon))


def spurious_mass(k: int, m: int, epsilon: float) -> float:
    """Expected total count of the spurious cells at integer cut ``k`` (k >= 0):
    ``m * P(Z >= k) * E[Z | Z >= k]`` (an upper bound: the empty cells are
    at most m)."""
    return math.exp(math.log(m) + _log_sf(k, epsilon)) * _tail_mean(k, epsilon)


def enhanced_cut(n: int, epsilon: float, A: float) -> int:
    """Lei's enhanced threshold as an integer cut: ceil(A log(n) / epsilon)."""
    return math.ceil(A * math.log(n) / epsilon)


def auto_threshold(
    m: int, n: int, epsilon: float, A: float, *, fraction: float = AUTO_SPURIOUS_FRACTION,
    max_spurious_cells: float = math.inf,
) -> int:
    """The integer cut of ``threshold="auto"`` (see the module docstring).

    Examples
    --------
    Lei's housing domain (2,400 cells, n = 250,070): the enhanced cut at
    epsilon = 1; a 2e9-cell domain with n = 1e6 needs a much higher one.

    >>> auto_threshold(2400, 250_070, 1.0, 0.5), enhanced_cut(250_070, 1.0, 0.5)
    (7, 7)
    >>> auto_threshold(2 * 10**9, 10**6, 1.0, 0.5)
    31
    """
    if not (0 < fraction) or not math.isfinite(epsilon) or epsilon <= 0:
        raise ValueError("auto_threshold needs fraction > 0 and a finite epsilon > 0")
    k0 = max(enhanced_cut(n, epsilon, A), 1)
    budget = fraction * n
    log_budget = math.log(budget)
    log_cells_cap = math.log(max_spurious_cells) if math.isfinite(max_spurious_cells) else math.inf

    def ok(k: int) -> bool:
        log_cells = math.log(m) + _log_sf(k, epsilon)
        return (log_cells + math.log(_tail_mean(k, epsilon)) <= log_budget
                and log_cells <= log_cells_cap)

    if ok(k0):
        return k0
    # log mass(k) falls by at least epsilon/2 - 1/(k + q/(1-q)) per unit step: start
    # from the estimate that ignores the slowly growing tail mean, then walk.
    excess = math.log(m) + _log_sf(k0, epsilon) + math.log(_tail_mean(k0, epsilon)) - log_budget
    if math.isfinite(log_cells_cap):
        excess = max(excess, math.log(m) + _log_sf(k0, epsilon) - log_cells_cap)
    k = k0 + max(0, math.floor(excess / (epsilon / 2.0)))
    while not ok(k):
        k += 1
    while k - 1 >= k0 and ok(k - 1):
        k -= 1
    return k
