"""Noise mechanisms: the discrete Laplace distribution and the sparse
thresholded histogram of Vinterbo (2012, §2.1).

Everything here sees only cell identifiers and exact counts (never raw rows)
and public inputs: epsilon, the domain size and the threshold.

The noise is the two-sided geometric ("discrete Laplace") distribution with
``P(Z = z) = (1 - q) / (1 + q) * q**|z|`` and ``q = exp(-epsilon / 2)``,
the integer analogue of Laplace noise of scale ``2 / epsilon``.  Adding it to
every cell of a histogram whose L1 sensitivity is 2 (replace-one neighbours)
is epsilon-differentially private.
"""

from __future__ import annotations

import math
import secrets
from dataclasses import dataclass

import numpy as np

__all__ = [
    "make_rng",
    "discrete_laplace",
    "discrete_laplace_pmf",
    "discrete_laplace_sf",
    "discrete_laplace_tail",
    "NoisyCells",
    "noisy_threshold_sparse",
    "noisy_signed_dense",
]

#: Below this many domain cells the complement of the observed cells is
#: enumerated; above it, positions are drawn by rejection.
_DENSE_COMPLEMENT_LIMIT = 1 << 22


def make_rng(random_state: None | int | np.random.Generator) -> np.random.Generator:
    """Return a numpy Generator.

    ``None`` seeds a PCG64 generator with 128 bits from the operating
    system's secure entropy source (:mod:`secrets`); an int or a Generator
    makes the run reproducible (tests, docs).
    """
    if isinstance(random_state, np.random.Generator):
        return random_state
    if random_state is None:
        return np.random.Generator(np.random.PCG64(secrets.randbits(128)))
    if isinstance(random_state, (int, np.integer)) and not isinstance(random_state, bool):
        return np.random.default_rng(int(random_state))
    raise TypeError(
        "random_state must be None (secure entropy), an int seed or a numpy Generator; "
        f"got {type(random_state).__name__}"
    )


def _q(epsilon: float) -> float:
    return math.exp(-epsilon / 2.0)


def discrete_laplace(rng: np.random.Generator, epsilon: float, size: int) -> np.ndarray:
    """Draw ``size`` discrete Laplace variables of scale ``2 / epsilon``.

    The difference of two independent geometric variables on {0, 1, ...}
    with success probability ``1 - q`` is two-sided geometric with parameter q.
    """
    p = -math.expm1(-epsilon / 2.0)  # 1 - q, accurate for small epsilon
    g1 = rng.geometric(p, size=size)
    g2 = rng.geometric(p, size=size)
    return (g1 - g2).astype(np.int64)


def discrete_laplace_pmf(z, epsilon: float) -> np.ndarray:
    """Exact probability mass ``P(Z = z)``."""
    q = _q(epsilon)
    z = np.abs(np.asarray(z, dtype=float))
    return (1.0 - q) / (1.0 + q) * q**z


def discrete_laplace_sf(k: int, epsilon: float) -> float:
    """Exact ``P(Z >= k)`` for an integer k."""
    q = _q(epsilon)
    if k >= 0:
        return q**k / (1.0 + q)
    return 1.0 - q ** (1 - k) / (1.0 + q)


def discrete_laplace_tail(
    rng: np.random.Generator, epsilon: float, k: int, size: int
) -> np.ndarray:
    """Draw ``size`` values of Z given ``Z >= k``.

    For ``k >= 0`` the conditional law is ``k`` plus a geometric variable on
    {0, 1, ...} with success probability ``1 - q`` (memorylessness).  For
    ``k < 0`` the event has probability above 1/2 and rejection is used.
    """
    if size == 0:
        return np.zeros(0, dtype=np.int64)
    if k >= 0:
        p = -math.expm1(-epsilon / 2.0)
        return k + rng.geometric(p, size=size).astype(np.int64) - 1
    out = np.empty(size, dtype=np.int64)
    filled = 0
    while filled < size:
        draw = discrete_laplace(rng, epsilon, 2 * (size - filled) + 8)
        draw = draw[draw >= k][: size - filled]
        out[filled : filled + draw.size] = draw
        filled += draw.size
    return out


@dataclass(frozen=True)
class NoisyCells:
    """Cell identifiers (sorted, uint64) and their released integer counts."""

    ids: np.ndarray
    counts: np.ndarray


def _sample_complement(
    rng: np.random.Generator, m: int, exclude: np.ndarray, size: int
) -> np.ndarray:
    """Uniform sample without replacement of ``size`` ids in [0, m) \\ exclude.

    ``exclude`` is sorted and unique.  Small domains enumerate the complement;
    large ones draw uniform ids, drop excluded and repeated ones, and keep
    the first ``size`` distinct survivors in draw order (which is a uniform
    sample without replacement).
    """
    if size == 0:
        return np.zeros(0, dtype=np.uint64)
    crowded = 4 * (size + exclude.size) > m and m <= 16 * _DENSE_COMPLEMENT_LIMIT
    if m <= _DENSE_COMPLEMENT_LIMIT or crowded:
        mask = np.ones(m, dtype=bool)
        mask[exclude.astype(np.int64)] = False
        candidates = np.flatnonzero(mask).astype(np.uint64)
        return rng.choice(candidates, size=size, replace=False)
    draws = np.zeros(0, dtype=np.uint64)
    while True:
        extra = rng.integers(0, m, size=int(1.1 * size) + 16, dtype=np.uint64)
        draws = np.concatenate([draws, extra])
        pos = np.searchsorted(exclude, draws)
        pos = np.minimum(pos, max(exclude.size - 1, 0))
        hit = (exclude[pos] == draws) if exclude.size else np.zeros(draws.size, bool)
        kept = draws[~hit]
        _, first = np.unique(kept, return_index=True)
        if first.size >= size:
            return kept[np.sort(first)[:size]]
        draws = kept[np.sort(first)]


def noisy_threshold_sparse(
    rng: np.random.Generator,
    epsilon: float,
    ids: np.ndarray,
    counts: np.ndarray,
    m: int,
    k: int,
) -> NoisyCells:
    """Perturb every one of the ``m`` cells and keep those whose noisy count is
    at least the integer threshold ``k``, in time O(n' + released cells).

    ``ids``/``counts`` are the n' observed (non-empty) cells.  The observed
    cells are perturbed directly.  Of the ``m - n'`` empty cells, the number
    that cross the threshold is Binomial(m - n', P(Z >= k)); that many
    positions are drawn uniformly among the empty cells and given values
    from the law of Z given Z >= k.  The output has exactly the distribution
    of "perturb all m cells, then keep those >= k".
    """
    noisy = counts + discrete_laplace(rng, epsilon, counts.size)
    keep = noisy >= k
    obs_ids, obs_counts = ids[keep], noisy[keep]
    n_empty = m - ids.size
    p = discrete_laplace_sf(k, epsilon)
    n_new = int(rng.binomial(n_empty, p)) if n_empty > 0 else 0
    new_ids = _sample_complement(rng, m, ids, n_new)
    new_counts = discrete_laplace_tail(rng, epsilon, k, n_new)
    all_ids = np.concatenate([obs_ids.astype(np.uint64), new_ids.astype(np.uint64)])
    all_counts = np.concatenate([obs_counts, new_counts]).astype(np.int64)
    order = np.argsort(all_ids, kind="stable")
    return NoisyCells(all_ids[order], all_counts[order])


def noisy_signed_dense(
    rng: np.random.Generator,
    epsilon: float,
    ids: np.ndarray,
    counts: np.ndarray,
    m: int,
) -> NoisyCells:
    """Perturb all ``m`` cells and keep the signed noisy counts (Lei's
    Algorithm 1).  Cells whose noisy count is exactly zero carry no weight
    and are left out.  Memory is O(m): only for domains that fit."""
    full = np.zeros(m, dtype=np.int64)
    full[ids.astype(np.int64)] = counts
    full += discrete_laplace(rng, epsilon, m)
    nz = np.flatnonzero(full)
    return NoisyCells(nz.astype(np.uint64), full[nz])
