"""The population the histogram's parametric bootstrap resamples.

The bootstrap (``dpmodels.inference``) re-runs the release's mechanism on a
population estimated from the release alone (post-processing).  The released
noisy counts are not that population: some released cells are *spurious*
(empty cells whose noise crossed the threshold) and every unreleased cell may
hide up to ``k - 1`` rows.  Treating the release as the population makes the
bootstrap reproduce the spurious cells as real rows, so the bias it measures
is the bias relative to a contaminated world and misses the spurious cells'
pull on the estimate (issue 12: a rare level's coefficient 5x its value with
a 3-SE interval).

Three populations, chosen by ``cov_kwds={"population": ...}``:

* ``"deconvolved"`` (default): the expected *true* count of every domain
  cell given the release, under a prior whose mean is a log-linear model of
  the cells (a geometric law: over-dispersed, so that a cell the smooth
  model misses is kept at its released count rather than pulled to the
  model; a Poisson prior collapsed such cells), fitted by EM to the
  release's own likelihood -- released cells
  through the discrete Laplace law of their noisy count, unreleased cells
  through "noisy count below the threshold".  A released cell far from the
  data with a count near the threshold is most likely spurious and gets an
  expected true count near 0; a large released count keeps its value; an
  unreleased cell next to the data gets the mass the threshold hid.
* ``"smooth"``: the released counts kept as they are, plus the expected counts
  of a log-linear model fitted to the released counts on the unreleased
  cells, capped at the threshold (the population before this module).
* ``"release"``: the released non-negative counts, zero elsewhere.

Features of the log-linear model: a quadratic in the continuous axes' bin
positions, and each discrete level's indicator alone and times each
continuous position (`cell_features()`).
"""

from __future__ import annotations

import math

import numpy as np

from ..core.noise import discrete_laplace_pmf
from ..domain.axes import Domain

__all__ = ["POPULATIONS", "complement_ids", "cell_features", "poisson_loglinear", "smooth_tails",
           "deconvolved_counts", "Deconvolution"]

POPULATIONS = ("deconvolved", "smooth", "release")

#: Largest domain for which the smooth tails are evaluated on every unreleased
#: cell; above it unreleased cells get probability zero.
SMOOTH_MAX_CELLS = 1 << 21
#: Largest domain deconvolved (the EM touches every cell every iteration);
#: above it the population falls back to ``"smooth"``.
DECONVOLVE_MAX_CELLS = 1 << 17
#: Released counts above this are kept as they are: their noise (scale
#: 2/epsilon) is small against them and the prior barely moves them.
DECONVOLVE_CAP = 60
_EM_ITER = 60
_EM_TOL = 1e-4


def cell_features(domain: Domain, ids: np.ndarray) -> np.ndarray:
    """Log-linear features of cells: a quadratic in the continuous axes' bin
    positions (scaled to [-1/2, 1/2]), and for each discrete axis its level
    indicators, alone and times each continuous position."""
    codes = domain.decode(ids)
    cont = [(c + 0.5) / a.bin_count - 0.5 for c, a in zip(codes, domain.axes)
            if a.kind == "continuous"]
    cols = [np.ones(ids.size)] + cont
    cols += [u * v for i, u in enumerate(cont) for v in cont[i:]]
    for c, a in zip(codes, domain.axes):
        if a.kind != "discrete":
            continue
        for level in range(1, a.size):
            ind = (c == level).astype(float)
            cols.append(ind)
            cols += [ind * u for u in cont]
    return np.column_stack(cols)


def poisson_loglinear(F: np.ndarray, y: np.ndarray, beta: np.ndarray | None = None,
                      maxiter: int = 50) -> np.ndarray | None:
    """Poisson log-linear MLE of (possibly fractional) counts ``y`` on features
    ``F`` by IRLS, started at ``beta`` (a small ridge keeps it defined).
    None when it fails."""
    if beta is None:
        beta = np.zeros(F.shape[1])
        beta[0] = math.log(max(float(y.mean()), 1e-9))
    beta = np.array(beta, dtype=float)
    ridge = 1e-6 * np.eye(F.shape[1]) * max(float(y.sum()), 1.0)
    for _ in range(maxiter):
        mu = np.exp(np.clip(F @ beta, -50, 50))
        info = F.T @ (mu[:, None] * F) + ridge
        try:
            step = np.linalg.solve(info, F.T @ (y - mu))
        except np.linalg.LinAlgError:
            return None
        beta += step
        if np.max(np.abs(step)) < 1e-8:
            break
    return beta if np.all(np.isfinite(beta)) else None


def complement_ids(support: np.ndarray, index: np.ndarray) -> np.ndarray:
    """The ``index``-th (0-based) integers not in the sorted unique ``support``."""
    shifted = support.astype(np.int64) - np.arange(support.size, dtype=np.int64)
    idx = np.asarray(index, dtype=np.int64)
    return (idx + np.searchsorted(shifted, idx, side="right")).astype(np.uint64)


def smooth_tails(domain: Domain, ids: np.ndarray, mass: np.ndarray, k: int):
    """Expected counts of the unreleased cells under a log-linear model of the
    released ones, capped at the threshold; cells below 1e-3 dropped.
    Returns (cell ids, counts)."""
    m = int(domain.size)
    none = (np.zeros(0, np.uint64), np.zeros(0))
    if m > SMOOTH_MAX_CELLS or m - ids.size <= 0 or ids.size < 3:
        return none
    F = cell_features(domain, ids)
    if F.shape[1] >= ids.size:
        return none
    beta = poisson_loglinear(F, mass)
    if beta is None:
        return none
    out = complement_ids(ids, np.arange(m - ids.size))
    mu = np.minimum(np.exp(np.clip(cell_features(domain, out) @ beta, -50, 50)), float(k))
    keep = mu > 1e-3
    return out[keep], mu[keep]


def _discrete_laplace_cdf(j: np.ndarray, epsilon: float) -> np.ndarray:
    """``P(Z <= j)`` for integer ``j`` (noise of the release's law)."""
    q = math.exp(-epsilon / 2.0)
    j = np.asarray(j, dtype=float)
    return np.where(j >= 0, 1.0 - q ** (j + 1.0) / (1.0 + q), q ** (-j) / (1.0 + q))


class Deconvolution:
    """The deconvolved population of a thresholded release (module docstring).

    Attributes
    ----------
    ids : ndarray of uint64
        Every domain cell, sorted.
    expected : ndarray
        Expected true count of each cell given the release.
    iterations : int
        EM iterations run.
    removed : float
        Released rows the model attributes to noise (released total minus
        the expected true count of the released cells, where positive).
    added : float
        Expected rows on unreleased cells (the mass the threshold hid).
    """

    def __init__(self, domain: Domain, cell_ids: np.ndarray, counts: np.ndarray,
                 epsilon: float, k: int, n: int | None = None):
        m = int(domain.size)
        ids = np.arange(m, dtype=np.uint64)
        cell_ids = np.asarray(cell_ids, dtype=np.uint64)
        y = np.zeros(m)
        at = np.searchsorted(ids, cell_ids)
        y[at] = np.asarray(counts, dtype=float)
        released = np.zeros(m, dtype=bool)
        released[at] = True
        small = released & (y <= DECONVOLVE_CAP)
        hidden = ~released
        # candidate true counts of the cells whose posterior is computed
        # prior: geometric with mean lam, P(x) ~ (lam / (1 + lam))**x
        # (a true count is at most the public n: at a tiny epsilon the threshold k is
        # far above it, and the candidates would not fit in memory)
        top = DECONVOLVE_CAP + max(k, 0) + 40
        xs = np.arange(0, top if n is None else min(top, int(n) + 1), dtype=float)
        log_lik_small = np.log(np.maximum(
            discrete_laplace_pmf(y[small][:, None] - xs[None, :], epsilon), 1e-300))
        log_lik_hidden = np.log(np.maximum(_discrete_laplace_cdf(k - 1 - xs, epsilon), 1e-300))

        F = cell_features(domain, ids)
        expected = np.where(released, np.maximum(y, 0.0), 0.0)
        beta = poisson_loglinear(F, expected)
        it = 0
        if beta is not None:
            for it in range(1, _EM_ITER + 1):  # noqa: B007 (it counts the iterations run)
                lam = np.exp(np.clip(F @ beta, -50, 50))
                new = expected.copy()
                for mask, log_lik in ((small, log_lik_small), (hidden, log_lik_hidden[None, :])):
                    if not mask.any():
                        continue
                    log_ratio = (np.log(np.maximum(lam[mask], 1e-300)) - np.log1p(lam[mask]))
                    lp = xs[None, :] * log_ratio[:, None] + log_lik
                    lp -= lp.max(axis=1, keepdims=True)
                    w = np.exp(lp)
                    new[mask] = (w @ xs) / w.sum(axis=1)
                change = np.max(np.abs(new - expected))
                expected = new
                nxt = poisson_loglinear(F, expected, beta, maxiter=3)
                if nxt is None:
                    break
                beta = nxt
                if change < _EM_TOL:
                    break
        self.ids = ids
        self.expected = expected
        self.iterations = it
        self.removed = float(max(np.maximum(y[released], 0).sum() - expected[released].sum(), 0.0))
        self.added = float(expected[hidden].sum())


def deconvolved_counts(domain: Domain, cell_ids: np.ndarray, counts: np.ndarray,
                       epsilon: float, k: int, n: int | None = None) -> Deconvolution | None:
    """The deconvolved population, or None when the domain is too large for
    it (the caller falls back to the smooth tails).  ``n`` (public) bounds
    every cell's true count."""
    if int(domain.size) > DECONVOLVE_MAX_CELLS:
        return None
    return Deconvolution(domain, cell_ids, counts, epsilon, k, n)
