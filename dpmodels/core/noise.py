"""Noise mechanisms: the discrete Laplace distribution and the sparse
thresholded histogram of Vinterbo (2012, §2.1).

Everything here sees only cell identifiers and exact counts (never raw rows)
and public inputs: epsilon, the domain size and the threshold.

The noise is the two-sided geometric ("discrete Laplace") distribution with
``P(Z = z) = (1 - q) / (1 + q) * q**|z|`` and ``q = exp(-epsilon / 2)``,
the integer analogue of Laplace noise of scale ``2 / epsilon``.  Adding it to
every cell of a histogram whose L1 sensitivity is 2 (replace-one neighbours)
is epsilon-differentially private.

The release's draws are exact (`dpmodels.core.exact`: unbounded support, no
float rounding in the law, from the OS's secure generator by default,
`dpmodels.core.randomness`).  ``discrete_laplace_pmf`` and
``discrete_laplace_sf`` evaluate the law in float64 for reports, thresholds
and tests.  ``simulate_*`` are fast float64 approximations of the same laws
for post-processing (the parametric bootstrap's replicate releases), never
for a release.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .exact import LogRate, bernoulli_positions, discrete_laplace, discrete_laplace_tail
from .randomness import make_rng, random_source

__all__ = [
    "make_rng",
    "discrete_laplace",
    "discrete_laplace_pmf",
    "discrete_laplace_sf",
    "discrete_laplace_tail",
    "simulate_discrete_laplace",
    "simulate_discrete_laplace_tail",
    "NoisyCells",
    "noisy_threshold_sparse",
    "noisy_signed_dense",
]


def _q(epsilon: float) -> float:
    return math.exp(-epsilon / 2.0)


def discrete_laplace_pmf(z, epsilon: float) -> np.ndarray:
    """Probability mass ``P(Z = z)`` (in float64)."""
    q = _q(epsilon)
    z = np.abs(np.asarray(z, dtype=float))
    return (1.0 - q) / (1.0 + q) * q**z


def discrete_laplace_sf(k: int, epsilon: float) -> float:
    """``P(Z >= k)`` for an integer k (in float64)."""
    q = _q(epsilon)
    if k >= 0:
        return q**k / (1.0 + q)
    return 1.0 - q ** (1 - k) / (1.0 + q)


def _simulate_geometric(rng: np.random.Generator, epsilon: float, size) -> np.ndarray:
    """floor(log(V) / log q), V uniform on (0, 1]: a float64 approximation of
    the geometric law (bounded support), for simulations only."""
    v = 1.0 - rng.random(size)
    return np.floor(np.log(v) / (-epsilon / 2.0)).astype(np.int64)


def simulate_discrete_laplace(rng: np.random.Generator, epsilon: float, size) -> np.ndarray:
    """Fast float64 draws of the discrete Laplace law for post-processing
    simulations (the bootstrap); NOT exact and NOT for a release."""
    return _simulate_geometric(rng, epsilon, size) - _simulate_geometric(rng, epsilon, size)


def simulate_discrete_laplace_tail(rng: np.random.Generator, epsilon: float, k: int,
                                   size: int) -> np.ndarray:
    """Fast float64 draws of Z given ``Z >= k`` (``k >= 0``) for simulations."""
    if k < 0:
        return discrete_laplace_tail(rng, epsilon, k, size)
    return int(k) + _simulate_geometric(rng, epsilon, size)


@dataclass(frozen=True)
class NoisyCells:
    """Cell identifiers (sorted, uint64) and their released integer counts."""

    ids: np.ndarray
    counts: np.ndarray


def _empty_rank_to_id(ranks: np.ndarray, observed: np.ndarray) -> np.ndarray:
    """Ids of the empty cells of given ranks (0-based, in id order) among the
    cells of [0, m) that are not ``observed`` (sorted, unique): the number of
    empty cells before ``observed[j]`` is ``observed[j] - j``."""
    if observed.size == 0 or ranks.size == 0:
        return ranks.astype(np.uint64)
    before = observed.astype(np.uint64) - np.arange(observed.size, dtype=np.uint64)
    return ranks.astype(np.uint64) + np.searchsorted(before, ranks, side="right").astype(np.uint64)


def noisy_threshold_sparse(
    source,
    epsilon: float,
    ids: np.ndarray,
    counts: np.ndarray,
    m: int,
    k: int,
) -> NoisyCells:
    """Perturb every one of the ``m`` cells and keep those whose noisy count is
    at least the integer threshold ``k``, in time O(n' + released cells).

    ``ids``/``counts`` are the n' observed (non-empty) cells, ids sorted.  The
    observed cells are perturbed directly.  Each of the ``m - n'`` empty
    cells crosses the threshold independently with probability
    ``p = P(Z >= k)``: the crossing ones are found by geometric gaps between
    successes (`bernoulli_positions()`, exact, no
    binomial in float64) and given values from the law of Z given Z >= k.
    The output has exactly the distribution of "perturb all m cells, then
    keep those >= k".  ``source``: see `dpmodels.core.randomness.random_source()`.
    """
    bits = random_source(source)
    ids = np.asarray(ids, dtype=np.uint64)
    counts = np.asarray(counts, dtype=np.int64)
    if ids.size > 1 and not bool(np.all(ids[1:] > ids[:-1])):
        raise ValueError("observed cell ids must be sorted and unique")
    noisy = counts + discrete_laplace(bits, epsilon, counts.size)
    keep = noisy >= k
    obs_ids, obs_counts = ids[keep], noisy[keep]
    ranks = bernoulli_positions(bits, LogRate.no_cross(epsilon, k), int(m) - ids.size)
    new_ids = _empty_rank_to_id(ranks, ids)
    new_counts = discrete_laplace_tail(bits, epsilon, k, ranks.size)
    all_ids = np.concatenate([obs_ids, new_ids])
    all_counts = np.concatenate([obs_counts, new_counts]).astype(np.int64)
    order = np.argsort(all_ids, kind="stable")
    return NoisyCells(all_ids[order], all_counts[order])


def noisy_signed_dense(
    source,
    epsilon: float,
    ids: np.ndarray,
    counts: np.ndarray,
    m: int,
) -> NoisyCells:
    """Perturb all ``m`` cells and keep the signed noisy counts (Lei's
    Algorithm 1).  Cells whose noisy count is exactly zero carry no weight
    and are left out.  Memory is O(m): only for domains that fit."""
    full = np.zeros(m, dtype=np.int64)
    full[np.asarray(ids, dtype=np.int64)] = counts
    full += discrete_laplace(random_source(source), epsilon, m)
    nz = np.flatnonzero(full)
    return NoisyCells(nz.astype(np.uint64), full[nz])
