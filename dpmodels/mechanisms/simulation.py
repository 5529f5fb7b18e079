"""Replicate releases: the law of the histogram mechanism applied to an
estimated population (steps 1-3 of `dpmodels.inference`).

The population is the release's own estimate of the true cell counts
(`dpmodels.mechanisms.population`); a replicate true histogram is a multinomial
draw of the public n over it, and a replicate release is that histogram
through the mechanism's law (`dpmodels.core.noise`: discrete Laplace
noise on every cell of the public domain, the same threshold; the empty
cells through Vinterbo's sparse construction).  A simulation only needs the
law, not an exact or secure sampler.  Nothing here reads raw rows: the input
is a `PrivateHistogram` (PRIVACY.md rule 6).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from ..core.noise import discrete_laplace_sf, simulate_discrete_laplace, simulate_discrete_laplace_tail
from ..core.report import noise_epsilon
from .population import POPULATIONS, complement_ids, deconvolved_counts, smooth_tails

if TYPE_CHECKING:  # pragma: no cover - typing only
    from .histogram import PrivateHistogram

__all__ = ["ReplicateChunk", "ReleaseSimulator"]

#: Replicates per vectorized chunk are limited so that a chunk's dense
#: arrays hold about this many numbers.
_CHUNK_ELEMENTS = 4_000_000


@dataclass(frozen=True)
class ReplicateChunk:
    """A block of ``b`` replicate releases of the full domain.

    ``support_counts[j, i]`` is replicate ``j``'s released count of the
    population cell ``support[i]`` (0 when not released); the other released
    cells (outside the support: spurious cells) are listed as
    ``(extra_rep, extra_ids, extra_counts)``.
    """

    support_counts: np.ndarray  # (b, |S|) int64
    extra_rep: np.ndarray  # int64
    extra_ids: np.ndarray  # uint64, full-domain cell ids
    extra_counts: np.ndarray  # int64

    @property
    def size(self) -> int:
        return int(self.support_counts.shape[0])


@dataclass(frozen=True)
class ReleaseSimulator:
    """Simulates releases by the mechanism of ``release`` from the population
    estimated by ``release`` itself.

    Parameters
    ----------
    release : PrivateHistogram
    population : {"deconvolved", "smooth", "release"}
        The population resampled (``dpmodels.mechanisms.population``): "deconvolved"
        (default) the expected true count of every cell given the release
        (spurious cells removed, the mass the threshold hid restored);
        "smooth" the released counts plus smoothed tails on unreleased cells,
        capped at the threshold; "release" the released non-negative counts.
        Without a threshold (signed release, epsilon = inf) all three are the
        released counts.

    Attributes
    ----------
    support : ndarray
        Cells of positive population probability (uint64 ids).
    p_hat : ndarray
        Their estimated population probabilities.
    n : int
        The public number of rows.
    epsilon : float
    k : int or None
        Integer threshold (keep noisy counts >= k); None for a signed
        (unthresholded) release or for epsilon = inf.
    hidden : float
        Mass (in rows) the population puts on unreleased cells.
    removed : float
        Released rows the deconvolution attributes to noise (0 otherwise).
    """

    release: PrivateHistogram
    population: str = "deconvolved"
    support: np.ndarray = field(init=False)
    p_hat: np.ndarray = field(init=False)
    n: int = field(init=False)
    epsilon: float = field(init=False)
    k: int | None = field(init=False)
    hidden: float = field(init=False)
    removed: float = field(init=False)
    deconvolved: bool = field(init=False)

    def __post_init__(self):
        if self.population not in POPULATIONS:
            raise ValueError(f"population must be one of {POPULATIONS}, got {self.population!r}")
        rep = self.release.report
        counts = np.asarray(self.release.counts, dtype=np.int64)
        pos = counts > 0
        ids = np.asarray(self.release.cell_ids, dtype=np.uint64)[pos]
        mass = counts[pos].astype(float)
        if mass.sum() <= 0:
            raise ValueError("the release has no cell with a positive count: nothing to resample")
        k = None if (not rep.private or rep.threshold is None) else int(math.ceil(rep.threshold))
        hidden, removed = 0.0, 0.0
        deconvolved = None
        if self.population == "deconvolved" and k is not None and k > 0:
            deconvolved = deconvolved_counts(self.release.domain, self.release.cell_ids,
                                             self.release.counts, noise_epsilon(rep), k,
                                             int(rep.n))
        if deconvolved is not None:
            keep = deconvolved.expected > 1e-3
            ids, mass = deconvolved.ids[keep], deconvolved.expected[keep]
            hidden, removed = deconvolved.added, deconvolved.removed
        elif self.population in ("smooth", "deconvolved") and k is not None and k > 0:
            extra_ids, extra_mass = smooth_tails(self.release.domain, ids, mass, k)
            if extra_ids.size:
                hidden = float(extra_mass.sum())
                order = np.argsort(np.concatenate([ids, extra_ids]), kind="stable")
                ids = np.concatenate([ids, extra_ids])[order]
                mass = np.concatenate([mass, extra_mass])[order]
        object.__setattr__(self, "support", ids)
        object.__setattr__(self, "p_hat", mass / mass.sum())
        object.__setattr__(self, "n", int(rep.n))
        object.__setattr__(self, "epsilon", noise_epsilon(rep))
        object.__setattr__(self, "k", k)
        object.__setattr__(self, "hidden", hidden)
        object.__setattr__(self, "removed", removed)
        object.__setattr__(self, "deconvolved", deconvolved is not None)

    @property
    def m(self) -> int:
        return int(self.release.domain.size)

    @property
    def private(self) -> bool:
        return bool(self.release.report.private)

    @property
    def signed(self) -> bool:
        return self.private and self.k is None

    def describe(self) -> str:
        if not self.private:
            return "sampling only (epsilon = inf: no noise)"
        what = f"sampling + discrete Laplace noise on all {self.m:,} domain cells"
        if self.k is not None:
            what += f" + threshold {self.k}"
            if self.deconvolved:
                what += (f"; population: expected true counts given the release "
                         f"({self.removed:,.0f} released rows attributed to noise, "
                         f"{self.hidden:,.0f} rows restored on unreleased cells)")
            elif self.population != "release":
                what += f"; population: released counts + {self.hidden:,.0f} rows of smoothed tails"
        return what

    def chunk_size(self, n_boot: int) -> int:
        width = self.support.size + (self.m if self.signed else 0)
        return int(max(1, min(n_boot, _CHUNK_ELEMENTS // max(width, 1))))

    def simulate(self, rng: np.random.Generator, size: int) -> ReplicateChunk:
        """Draw ``size`` replicate releases."""
        S = self.support.size
        truth = rng.multinomial(self.n, self.p_hat, size=size).astype(np.int64)
        empty = np.zeros(0, np.int64)
        if not self.private:
            return ReplicateChunk(truth, empty, np.zeros(0, np.uint64), empty)
        noisy = truth + simulate_discrete_laplace(rng, self.epsilon, size * S).reshape(size, S)
        n_out = self.m - S
        reps, ids, vals = [], [], []
        if self.k is None:  # signed release (Lei's Algorithm 1): every cell kept, zeros dropped
            if n_out > 0:
                z = simulate_discrete_laplace(rng, self.epsilon, size * n_out).reshape(size, n_out)
                r, j = np.nonzero(z)
                reps.append(r.astype(np.int64))
                ids.append(complement_ids(self.support, j))
                vals.append(z[r, j])
        else:
            noisy = np.where(noisy >= self.k, noisy, 0)
            if n_out > 0:
                p_cross = discrete_laplace_sf(self.k, self.epsilon)
                n_new = rng.binomial(n_out, p_cross, size=size)
                for row in np.flatnonzero(n_new):
                    idx = rng.choice(n_out, size=int(n_new[row]), replace=False)
                    reps.append(np.full(idx.size, row, np.int64))
                    ids.append(complement_ids(self.support, idx))
                    vals.append(simulate_discrete_laplace_tail(rng, self.epsilon, self.k, idx.size))
        if reps:
            return ReplicateChunk(noisy, np.concatenate(reps), np.concatenate(ids),
                                  np.concatenate(vals).astype(np.int64))
        return ReplicateChunk(noisy, empty, np.zeros(0, np.uint64), empty)
