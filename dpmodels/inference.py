"""Noise-aware inference for the dp_* models: a parametric bootstrap of the
release, computed from the release and public inputs only.

The mechanism (discrete Laplace noise of scale 2/epsilon on every cell of the
public domain, then the public threshold) and the public n are known.  So the
sampling distribution of any estimate fitted on a release can be simulated
without the data (Ferrando, Wang & Sheldon 2022):

1. **population**: the released non-negative counts, normalized, are the
   estimate ``p_hat`` of the population cell probabilities (unreleased
   cells get probability zero; see ``docs/inference.md`` for why no floor);
2. **sampling**: a replicate true histogram is ``Multinomial(n, p_hat)``
   over the released cells, with the public n;
3. **mechanism**: the law of the mechanism of :mod:`dpmodels.mechanisms`
   is applied to the replicate: noise on every one of the domain's m cells
   (the released ones directly, the other ``m - |S|`` empty ones through
   the sparse construction of Vinterbo §2.1: a binomial number of them cross
   the threshold, uniformly placed, with tail values), the same threshold.
   A simulation only needs the law, not an exact or secure sampler: it
   uses the fast float64 draws ``simulate_*`` of :mod:`dpmodels.mechanisms`;
4. **refit**: the model is refitted on the replicate release, marginalized
   to the formula's variables exactly as the original fit was.

The spread of the replicate estimates around the estimate from the release
estimates the spread of that estimate around its target, sampling and
privacy noise together; their mean minus the estimate estimates the bias of
thresholding.  Nothing here reads raw rows: the input is a
:class:`~dpmodels.release.PrivateHistogram` (PRIVACY.md rule 6: post-processing
is free).

Refits are vectorized across replicates where the model allows: OLS solves
all replicates' weighted normal equations at once; logit and multinomial
logit take damped Newton steps from the point estimate for all replicates at
once; quantile regression solves one exact linear program per replicate.
"""

from __future__ import annotations

import math
import time
import warnings
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np
import pandas as pd
from scipy import sparse, stats
from scipy.special import expit, logsumexp

from .domain import Domain, whole_number_bins
from .mechanisms import (discrete_laplace_sf, make_rng, simulate_discrete_laplace,
                         simulate_discrete_laplace_tail)
from .population import POPULATIONS, deconvolved_counts, smooth_tails
from .release import PrivateHistogram

__all__ = [
    "DEFAULT_N_BOOT",
    "DEFAULT_N_REFIT",
    "INTERVALS",
    "COV_TYPES",
    "ReleaseSimulator",
    "ReplicateChunk",
    "CellDesign",
    "DPInference",
    "BinningCheck",
    "parametric_bootstrap",
    "resolve_cov_type",
    "DPInferenceResultsMixin",
]

#: Replicates on which the representatives are refitted (see
#: :func:`parametric_bootstrap`); the others are extended from them.
DEFAULT_N_REFIT = 50

#: Default number of bootstrap replicates: the Monte Carlo error of the
#: standard error is about 1/sqrt(2B) = 5% of it, and of the bias estimate
#: 1/sqrt(B) = 7% of the standard error (docs/inference.md).
DEFAULT_N_BOOT = 200

#: Interval types :meth:`DPInference.conf_int` computes.
INTERVALS = ("bc-normal", "normal", "basic", "percentile")
DEFAULT_INTERVAL = "normal"

#: cov_type names accepted at the DP model layer.
COV_TYPES = ("dp", "naive", "nonrobust")

#: A coefficient's binning diagnostic fires when its estimated binning bias
#: (Richardson extrapolation from fits on bins 2 and 4 times as wide)
#: exceeds this many (dp) standard errors (a bias of 0.5 SE takes a 95%
#: interval to 92%).
BINNING_WARN_RATIO = 0.5
#: Continuous variables with fewer bins than this are not coarsened (merging
#: groups of 4 would leave 1 bin); the summary says their binning is unchecked.
BINNING_MIN_BINS = 8

#: Replicates per vectorized chunk are limited so that a chunk's dense
#: arrays hold about this many numbers.
_CHUNK_ELEMENTS = 4_000_000


def resolve_cov_type(cov_type: str, *, allow_nonrobust: bool = True) -> str:
    """Normalize the DP layer's ``cov_type``: "dp" or "naive"."""
    if not isinstance(cov_type, str):
        raise TypeError(f"cov_type must be a string, got {type(cov_type).__name__}")
    name = cov_type.lower()
    if name == "dp":
        return "dp"
    if name == "naive" or (allow_nonrobust and name == "nonrobust"):
        return "naive"
    choices = '"dp" (default) or "naive"' + (' (alias "nonrobust")' if allow_nonrobust else "")
    raise ValueError(f"cov_type must be {choices}, got {cov_type!r}")


# ---------------------------------------------------------------------------
# 1-3: replicate releases
# ---------------------------------------------------------------------------


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


def _complement_ids(support: np.ndarray, index: np.ndarray) -> np.ndarray:
    """The ``index``-th (0-based) integers not in the sorted unique ``support``."""
    shifted = support.astype(np.int64) - np.arange(support.size, dtype=np.int64)
    idx = np.asarray(index, dtype=np.int64)
    return (idx + np.searchsorted(shifted, idx, side="right")).astype(np.uint64)


@dataclass(frozen=True)
class ReleaseSimulator:
    """Simulates releases by the mechanism of ``release`` from the population
    estimated by ``release`` itself.

    Parameters
    ----------
    release : PrivateHistogram
    population : {"deconvolved", "smooth", "release"}
        The population resampled (``dpmodels.population``): "deconvolved"
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
                                             self.release.counts, float(rep.epsilon), k)
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
        object.__setattr__(self, "epsilon", float(rep.epsilon))
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
                ids.append(_complement_ids(self.support, j))
                vals.append(z[r, j])
        else:
            noisy = np.where(noisy >= self.k, noisy, 0)
            if n_out > 0:
                p_cross = discrete_laplace_sf(self.k, self.epsilon)
                n_new = rng.binomial(n_out, p_cross, size=size)
                for r in np.flatnonzero(n_new):
                    idx = rng.choice(n_out, size=int(n_new[r]), replace=False)
                    reps.append(np.full(idx.size, r, np.int64))
                    ids.append(_complement_ids(self.support, idx))
                    vals.append(simulate_discrete_laplace_tail(rng, self.epsilon, self.k, idx.size))
        if reps:
            return ReplicateChunk(noisy, np.concatenate(reps), np.concatenate(ids),
                                  np.concatenate(vals).astype(np.int64))
        return ReplicateChunk(noisy, empty, np.zeros(0, np.uint64), empty)


# ---------------------------------------------------------------------------
# 4: the model's design on replicate cells
# ---------------------------------------------------------------------------


class CellDesign:
    """Design rows (``X``, ``y``) of the model's marginal cells, built on
    demand for the cells replicate releases produce.

    A cell stands for its rows through one or more *points* (see
    :mod:`dpmodels.representatives`): one at the bin midpoints, or the
    ``2**d`` points of the ``"density"`` representatives, each carrying a
    share of the cell's count.  The bootstrap places a replicate's cells
    exactly as the point estimate placed the release's cells, so that the
    replicates and the estimate are the same function of their histograms.

    Parameters
    ----------
    domain : Domain
        The release's full domain.
    variables : sequence of str
        The model's variables (the marginal the model is fitted on).
    build : callable
        ``build(frame) -> (X, y, valid)``: the model's design rows for a
        frame of points of the marginal (as :meth:`PrivateHistogram.marginal`
        makes them, without the count column); ``valid`` marks rows the
        model can use (e.g. a response level the fitted model does not have).
    representer : Representer, optional
        Places the points of any cell of the marginal (fitted on the
        release); None: one point per cell at its bin midpoints.
    """

    def __init__(self, domain: Domain, variables: Sequence[str], build: Callable,
                 representer=None):
        self.domain = domain
        idx = [domain.names.index(v) for v in variables]
        self._axes_idx = idx
        self.sub = Domain(tuple(domain.axes[i] for i in idx))
        if representer is not None and tuple(representer.domain.names) != self.sub.names:
            raise ValueError("the representer's domain is not the model's marginal domain")
        self.representer = representer
        self._build = build
        self._known = np.zeros(0, np.uint64)  # sorted marginal ids
        self._row_of_known = np.zeros(0, np.int64)
        self.X: np.ndarray | None = None  # one row per point
        self.y: np.ndarray | None = None
        self.point_cell = np.zeros(0, np.int64)  # each point's cell row
        self.point_share = np.zeros(0)  # each point's share of its cell's count
        self._first = np.zeros(0, np.int64)  # each cell row's first point
        self._npoints = np.zeros(0, np.int64)  # each cell row's number of points
        self.valid = np.zeros(0, bool)  # per cell row: every point usable
        self.cell_ids = np.zeros(0, np.uint64)  # each cell row's marginal id

    def marginal_ids(self, full_ids: np.ndarray) -> np.ndarray:
        codes = self.domain.decode(np.asarray(full_ids, dtype=np.uint64))
        return self.sub.encode([codes[i] for i in self._axes_idx])

    def _points_frame(self, new: np.ndarray):
        """Points of the marginal cells ``new``: (frame, cell position, share)."""
        if self.representer is None:
            return self.sub.frame(new), np.arange(new.size), np.ones(new.size)
        pts = self.representer.frame(new, np.ones(new.size), "__share__")
        cell = np.asarray(pts.attrs["cell"], dtype=np.int64)
        share = pts["__share__"].to_numpy(float)
        frame = pts.drop(columns=["__share__"])
        frame.attrs = {}
        return frame, cell, share

    def rows(self, full_ids: np.ndarray) -> np.ndarray:
        """Cell row of each full-domain cell id (rows are added as needed)."""
        sub_ids = self.marginal_ids(full_ids)
        if sub_ids.size == 0:
            return np.zeros(0, np.int64)
        uniq, inv = np.unique(sub_ids, return_inverse=True)
        pos = np.searchsorted(self._known, uniq)
        pos_c = np.minimum(pos, max(self._known.size - 1, 0))
        found = (self._known[pos_c] == uniq) if self._known.size else np.zeros(uniq.size, bool)
        new = uniq[~found]
        if new.size:
            frame, cell, share = self._points_frame(new)
            X, y, valid_pt = self._build(frame)
            start = self.n_rows
            first_pt = 0 if self.X is None else self.X.shape[0]
            self.X = X if self.X is None else np.vstack([self.X, X])
            self.y = y if self.y is None else np.concatenate([self.y, y])
            self.point_cell = np.concatenate([self.point_cell, start + cell])
            self.point_share = np.concatenate([self.point_share, share])
            npts = np.bincount(cell, minlength=new.size)
            first = first_pt + np.concatenate([[0], np.cumsum(npts)[:-1]])
            self._first = np.concatenate([self._first, first])
            self._npoints = np.concatenate([self._npoints, npts])
            ok = np.bincount(cell, weights=~np.asarray(valid_pt, bool), minlength=new.size) == 0
            self.valid = np.concatenate([self.valid, ok])
            self.cell_ids = np.concatenate([self.cell_ids, new])
            known = np.concatenate([self._known, new])
            rows = np.concatenate([self._row_of_known, start + np.arange(new.size)])
            order = np.argsort(known, kind="stable")
            self._known, self._row_of_known = known[order], rows[order]
        pos = np.searchsorted(self._known, uniq)
        return self._row_of_known[pos][inv]

    @property
    def n_rows(self) -> int:
        """Number of cell rows (the rows of the count matrices ``W``)."""
        return int(self.valid.size)

    def expand(self, cells: np.ndarray, W: np.ndarray):
        """The points of the cell rows ``cells`` and their replicate weights.

        ``W`` is ``(len(cells), b)``: each listed cell's count in each
        replicate.  Returns ``(X, y, W_points)`` with every point's weight its
        share of its cell's count.
        """
        cells = np.asarray(cells, dtype=np.int64)
        n = self._npoints[cells]
        owner = np.repeat(np.arange(cells.size), n)
        offset = np.arange(owner.size) - np.repeat(np.cumsum(n) - n, n)
        pts = self._first[cells][owner] + offset
        return self.X[pts], self.y[pts], W[owner] * self.point_share[pts][:, None]

    def refit_each(self, W: np.ndarray, refit: Callable, start: np.ndarray):
        """Refit every replicate with its own representatives.

        The representer is a function of the histogram it is fitted on (a
        density fitted to the counts, or the neighbours' counts), so each
        replicate's points are placed by a representer refitted on that
        replicate -- as the point estimate's were on the release -- and the
        replicates carry the variability of that fit.  ``W`` is the
        ``(n_rows, b)`` replicate counts of the cell rows.
        """
        rep = self.representer
        est = np.full((W.shape[1], np.asarray(start).size), np.nan)
        ok = np.zeros(W.shape[1], bool)
        for j in range(W.shape[1]):
            rows = np.flatnonzero(W[:, j])
            if rows.size == 0:
                continue
            order = np.argsort(self.cell_ids[rows])
            ids, counts = self.cell_ids[rows][order], W[rows, j][order]
            own = type(rep)(self.sub, ids, counts, method=rep.method, epsilon=rep.epsilon,
                            threshold=rep.threshold, n=rep.n, start=rep, one_step=True)
            pts = own.frame(ids, counts, "__w__")
            w = pts["__w__"].to_numpy(float)
            frame = pts.drop(columns=["__w__"])
            frame.attrs = {}
            X, y, valid = self._build(frame)
            e, o = refit(X, y, np.where(valid, w, 0.0)[:, None], start)
            est[j], ok[j] = e[0], o[0]
        return est, ok


# ---------------------------------------------------------------------------
# refits, vectorized across replicates
# ---------------------------------------------------------------------------


def _outer_rows(X: np.ndarray) -> np.ndarray:
    """Row-wise outer products, flattened: ``(C, p*p)``."""
    return (X[:, :, None] * X[:, None, :]).reshape(X.shape[0], -1)


def _full_rank(A: np.ndarray, tol: float = 1e-10) -> np.ndarray:
    """Which of the stacked symmetric matrices ``A`` (b, p, p) have full rank
    (eigenvalues of the unit-diagonal rescaling, in absolute value)."""
    d = np.sqrt(np.abs(np.einsum("bii->bi", A)))
    ok = np.all(d > 0, axis=1) & np.all(np.isfinite(A), axis=(1, 2))
    d = np.where(d > 0, d, 1.0)
    As = A / d[:, :, None] / d[:, None, :]
    As = np.where(np.isfinite(As), As, 0.0)
    eig = np.abs(np.linalg.eigvalsh(As))
    return ok & (eig.min(axis=1) > tol * np.maximum(eig.max(axis=1), 1.0))


def _solve(A: np.ndarray, c: np.ndarray, ok: np.ndarray) -> np.ndarray:
    out = np.full(c.shape, np.nan)
    if ok.any():
        out[ok] = np.linalg.solve(A[ok], c[ok][..., None])[..., 0]
    return out


def refit_ols(X, y, W, start):
    """Weighted least squares of every column of ``W`` (C, b): ``(b, p)``
    estimates and a mask of replicates with a full-rank design."""
    A = (W.T @ _outer_rows(X)).reshape(W.shape[1], X.shape[1], X.shape[1])
    c = W.T @ (X * y[:, None])
    ok = _full_rank(A)
    return _solve(A, c, ok), ok


def _newton(X, W, start, grad_hess, loglik, maxiter=50, tol=1e-8):
    """Damped Newton ascent for all replicates at once.

    ``grad_hess(theta) -> (g (b, k), I (b, k, k))`` with ``I`` minus the
    Hessian; ``loglik(theta) -> (b,)``.  Starts every replicate at ``start``;
    a step that lowers the log-likelihood is halved (up to 30 times).
    Returns the estimates and a mask of converged replicates.
    """
    b = W.shape[1]
    theta = np.repeat(np.asarray(start, float)[None, :], b, axis=0)
    ll = loglik(theta)
    active = np.ones(b, bool)
    converged = np.zeros(b, bool)
    failed = np.zeros(b, bool)
    for _ in range(maxiter):
        idx = np.flatnonzero(active)
        if idx.size == 0:
            break
        g, info = grad_hess(theta[idx], idx)
        ok = _full_rank(info)
        step = np.zeros_like(g)
        step[ok] = np.linalg.solve(info[ok], g[ok][..., None])[..., 0]
        failed[idx[~ok]] = True
        active[idx[~ok]] = False
        idx, step = idx[ok], step[ok]
        if idx.size == 0:
            break
        t = np.ones(idx.size)
        new = theta[idx] + step
        ll_new = loglik(new, idx)
        for _ in range(30):
            worse = ~(ll_new >= ll[idx] - 1e-12 * np.abs(ll[idx]))
            if not worse.any():
                break
            t[worse] /= 2.0
            new[worse] = theta[idx[worse]] + t[worse, None] * step[worse]
            ll_new[worse] = loglik(new[worse], idx[worse])
        theta[idx] = new
        ll[idx] = ll_new
        small = np.max(np.abs(t[:, None] * step) / (1.0 + np.abs(new)), axis=1) < tol
        converged[idx[small]] = True
        active[idx[small]] = False
    ok = converged & ~failed & np.all(np.isfinite(theta), axis=1)
    theta[~ok] = np.nan
    return theta, ok


def refit_logit(X, y, W, start):
    """Frequency-weighted logit MLE for every column of ``W`` (C, b)."""
    XX = _outer_rows(X)
    p = X.shape[1]

    def loglik(theta, idx=None):
        Wb = W if idx is None else W[:, idx]
        eta = X @ theta.T
        return np.sum(Wb * (y[:, None] * eta - np.logaddexp(0.0, eta)), axis=0)

    def grad_hess(theta, idx):
        Wb = W[:, idx]
        mu = expit(X @ theta.T)
        g = (X.T @ (Wb * (y[:, None] - mu))).T
        info = ((Wb * mu * (1.0 - mu)).T @ XX).reshape(idx.size, p, p)
        return g, info

    return _newton(X, W, start, grad_hess, loglik)


def refit_mnlogit(X, y, W, start, n_classes: int):
    """Frequency-weighted multinomial logit MLE for every column of ``W``.

    ``y`` holds class codes 0..J-1; parameters are flattened equation by
    equation (statsmodels' order of ``cov_params``).
    """
    C, p = X.shape
    J1 = n_classes - 1
    Y = np.zeros((C, n_classes))
    Y[np.arange(C), y.astype(np.int64)] = 1.0
    XX = _outer_rows(X)

    def eta_of(theta):  # theta (b, J1*p) -> eta (C, b, J1)
        b = theta.shape[0]
        B = theta.reshape(b, J1, p).transpose(2, 0, 1).reshape(p, b * J1)
        return (X @ B).reshape(C, b, J1)

    def logprob(theta):
        eta = eta_of(theta)
        full = np.concatenate([np.zeros(eta.shape[:2] + (1,)), eta], axis=2)
        return full - logsumexp(full, axis=2, keepdims=True)

    def loglik(theta, idx=None):
        Wb = W if idx is None else W[:, idx]
        return np.einsum("cb,cj,cbj->b", Wb, Y, logprob(theta))

    def grad_hess(theta, idx):
        b = idx.size
        Wb = W[:, idx]
        P = np.exp(logprob(theta))[:, :, 1:]  # (C, b, J1)
        R = (Wb[:, :, None] * (Y[:, None, 1:] - P)).reshape(C, b * J1)
        g = (X.T @ R).reshape(p, b, J1).transpose(1, 2, 0).reshape(b, J1 * p)
        F = -P[:, :, :, None] * P[:, :, None, :]
        ar = np.arange(J1)
        F[:, :, ar, ar] += P
        F *= Wb[:, :, None, None]
        H = (F.reshape(C, b * J1 * J1).T @ XX).reshape(b, J1, J1, p, p)
        info = H.transpose(0, 1, 3, 2, 4).reshape(b, J1 * p, J1 * p)
        return g, info

    return _newton(X, W, start, grad_hess, loglik)


def refit_quantreg(X, y, W, start, q: float):
    """Exact weighted quantile regression (dual LP) of every column of ``W``."""
    from .models.quantreg import _solve_check_loss

    b = W.shape[1]
    out = np.full((b, X.shape[1]), np.nan)
    ok = np.zeros(b, bool)
    for j in range(b):
        w = W[:, j]
        pos = w > 0
        if not pos.any():
            continue
        Xp = X[pos]
        if np.linalg.matrix_rank(Xp) < X.shape[1]:
            continue
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                params, _ = _solve_check_loss(y[pos], Xp, w[pos], q)
            except RuntimeError:
                continue
        out[j], ok[j] = params, True
    return out, ok


# ---------------------------------------------------------------------------
# the result object
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class BinningCheck:
    """Binning diagnostic: how far the estimate moves when the bins or the
    rows' places inside them change, two shifts the bootstrap cannot see
    (its population is binned as the release is).

    ``shift`` (Richardson): the same model fitted on the same release with
    the bins of every continuous variable merged in groups of 2 and of 4.
    If the binning bias of a coefficient behaves like ``c h**r`` in the bin
    width ``h``, the fits on bins 2 and 4 times as wide give
    ``d1 = b(2h) - b(h) = (2**r - 1) b(h)`` and ``d2 = b(4h) - b(2h) = 2**r d1``,
    so ``2**r = |d2 / d1|`` (clamped to [2, 16], i.e. r in [1, 4]) and the
    bias at the released bins is ``|d1| / (2**r - 1)`` (Richardson
    extrapolation with an estimated order).  Variables with fewer than
    ``BINNING_MIN_BINS`` bins cannot be coarsened (``unchecked``).

    ``placement``: the estimate with other representatives of the same
    cells (bin midpoints in place of the fitted within-cell density, or the
    neighbour shift in place of midpoints) minus the estimate.  The
    representatives correct the midpoints' O(h**2) error; how much they
    move the estimate bounds what is left of it on a smooth density
    (docs/inference.md measures it on housing with 3 bins: the estimate's
    error was 0.45-0.75 of this shift).  It is what covers variables too
    coarse for the Richardson check.

    Both enter the default ("normal") interval as shifts of unknown sign
    (:attr:`DPInference.mse`); ``ratio`` is the larger over the dp spread SE.
    """

    variables: tuple[str, ...]
    coarse_params: np.ndarray  # fit on bins twice as wide
    shift: np.ndarray  # estimated binning bias (signed as d1)
    ratio: np.ndarray  # max(|shift|, |placement|) / se
    unchecked: tuple[str, ...] = ()
    threshold: float = BINNING_WARN_RATIO
    placement: np.ndarray | None = None
    placement_method: str = ""

    @property
    def flagged(self) -> np.ndarray:
        return np.isfinite(self.ratio) & (self.ratio > self.threshold)

    @property
    def shifts(self) -> list[np.ndarray]:
        """The shift vectors the default interval carries (non-finite -> 0)."""
        out = [np.nan_to_num(np.asarray(self.shift, float), nan=0.0, posinf=0.0, neginf=0.0)]
        if self.placement is not None:
            out.append(np.nan_to_num(np.asarray(self.placement, float), nan=0.0, posinf=0.0,
                                     neginf=0.0))
        return out


@dataclass(frozen=True, eq=False)
class DPInference:
    """Bootstrap inference from a release: standard errors, intervals and
    tests that include the privacy noise, thresholding and sampling.

    Attributes
    ----------
    params : ndarray
        The estimate from the release (flattened; for a multinomial logit
        equation by equation, as statsmodels' ``cov_params``).
    target : ndarray or None
        The estimand of the bootstrap world: the model fitted on the
        estimated population (``params`` when that is the release itself).
    replicates : ndarray, (B_ok, k)
        Estimates from the replicate releases that could be fitted.
    n_boot : int
        Replicates drawn (B).
    n_failed : int
        Replicates whose refit failed (rank-deficient released design, no
        convergence, separation): left out.
    interval : str
        Default interval type of :meth:`conf_int`.
    simulation : str
        What each replicate simulates.
    seeded : bool
        True when a ``random_state`` made the bootstrap reproducible.
    elapsed : float
        Seconds spent.
    binning : BinningCheck or None
    """

    params: np.ndarray
    replicates: np.ndarray
    n_boot: int
    n_failed: int
    interval: str = DEFAULT_INTERVAL
    simulation: str = ""
    seeded: bool = False
    elapsed: float = 0.0
    binning: BinningCheck | None = None
    target: np.ndarray | None = None
    #: Coefficients the release carries no information about
    #: (:mod:`dpmodels.information`): infinite SE, z = 0, p = 1, interval (-inf, inf).
    uninformative: np.ndarray | None = None
    #: Continuous variables of the model binned one or two units wide with edges
    #: on whole numbers (:func:`dpmodels.domain.whole_number_bins`): a note.
    whole_number_bins: tuple = ()
    #: The bootstraps of several populations (``population="deconvolved"``: the
    #: deconvolved and the smooth one, half of B each); empty for one population.
    #: The MSE is then the larger per coefficient (:attr:`mse`).
    parts: tuple = ()

    @property
    def se_description(self) -> str:
        """What the standard errors measure, for the summary's notes."""
        if self.interval != "normal":
            return "replicates' spread"
        what = "the bootstrap's bias"
        if self.binning is not None:
            what += " and the binning check's shifts"
        return f"root mean squared error of the estimate (the replicates' spread plus {what})"

    @property
    def n_ok(self) -> int:
        return int(self.replicates.shape[0])

    @cached_property
    def spread(self) -> np.ndarray:
        """Covariance of the replicate estimates (their spread around their mean)."""
        k = self.params.size
        if self.parts:  # pooled within each population's replicates
            dof = sum(p.n_ok - 1 for p in self.parts if p.n_ok >= 2)
            cov = (sum((p.n_ok - 1) * np.atleast_2d(np.cov(p.replicates, rowvar=False))
                       for p in self.parts if p.n_ok >= 2) / dof
                   if dof > 0 else np.full((k, k), np.nan))
        elif self.n_ok < 2:
            cov = np.full((k, k), np.nan)
        else:
            cov = np.atleast_2d(np.cov(self.replicates, rowvar=False))
        return self._mark_uninformative(cov)

    def _mark_uninformative(self, cov: np.ndarray) -> np.ndarray:
        if self.uninformative is not None and self.uninformative.any():
            u = np.asarray(self.uninformative, bool)
            cov[u, :] = np.nan
            cov[:, u] = np.nan
            cov[u, u] = np.inf
        return cov

    @cached_property
    def mse(self) -> np.ndarray:
        """Mean squared error matrix of the estimate: the spread, plus each
        shift the estimate may carry, as a shift of unknown sign (outer
        product): the bootstrap's bias (mean replicate minus the bootstrap
        world's estimand) and the binning check's shifts
        (:class:`BinningCheck`).  A shift whose sign the data cannot pin
        down (the bootstrap's bias estimate had the wrong sign on housing
        with 40 bins) is uncertainty, not a correction: interval
        ``estimate -/+ z sqrt(mse)`` covers ``estimate - b`` for any ``b``
        up to the shift's size (at least 95% for a bias of one SE)."""
        cov = np.array(self.spread, dtype=float)
        ok = np.isfinite(np.diag(cov))
        if self.parts:
            cov = self._mark_uninformative(self._parts_mse())
            shifts = []
        else:
            shifts = [np.nan_to_num(self.bias, nan=0.0)]
        if self.binning is not None:
            shifts.extend(self.binning.shifts)
        for v in shifts:
            cov[np.ix_(ok, ok)] += np.outer(v, v)[np.ix_(ok, ok)]
        return cov

    @property
    def cov(self) -> np.ndarray:
        """The covariance every test reads (``bse``, ``cov_params``,
        ``t_test``, ``wald_test``, ``f_test``): :attr:`mse` under the
        default "normal" interval (one centre, the estimate), the spread
        under the other intervals."""
        return self.mse if self.interval == "normal" else self.spread

    def _se_for(self, method: str) -> np.ndarray:
        return np.sqrt(np.diag(self.mse if method == "normal" else self.spread))

    @property
    def se(self) -> np.ndarray:
        """Standard errors of the default interval (the square root of :attr:`cov`)."""
        return self._se_for(self.interval)

    @property
    def spread_se(self) -> np.ndarray:
        """The replicates' standard deviations."""
        return self._se_for("spread")

    @cached_property
    def bias(self) -> np.ndarray:
        """Mean replicate minus the estimate: the thresholding/noise bias as
        the bootstrap sees it (binning bias is invisible to it)."""
        if self.parts:  # the bias of the population whose MSE is the larger
            pick = self._parts_pick()
            return np.array([self.parts[j].bias[i] for i, j in enumerate(pick)])
        if self.n_ok < 1:
            return np.full(self.params.size, np.nan)
        target = self.params if self.target is None else self.target
        return self.replicates.mean(axis=0) - target

    def _parts_each_mse(self) -> list[np.ndarray]:
        return [np.array(p.spread, float) + np.outer(np.nan_to_num(p.bias, nan=0.0),
                                                     np.nan_to_num(p.bias, nan=0.0))
                for p in self.parts]

    def _parts_pick(self) -> np.ndarray:
        """Per coefficient, the part whose mean squared error is the larger."""
        diags = np.array([np.nan_to_num(np.diag(m), nan=-np.inf) for m in self._parts_each_mse()])
        return np.argmax(diags, axis=0)

    def _parts_mse(self) -> np.ndarray:
        """The parts' MSE matrices joined: per coefficient the larger variance
        (the population model is uncertain, so the larger error is the honest
        one), with the parts' average correlations."""
        each = self._parts_each_mse()
        # a part whose replicates mostly failed (NaN spread) does not vote
        d = np.fmax.reduce([np.diag(m) for m in each], axis=0)
        corr = []
        for m in each:
            if not np.all(np.isfinite(np.diag(m))):
                continue
            sd = np.sqrt(np.clip(np.diag(m), 0, None))
            with np.errstate(invalid="ignore", divide="ignore"):
                c = m / np.outer(sd, sd)
            corr.append(np.where(np.isfinite(c), c, 0.0))
        r = np.mean(corr, axis=0) if corr else np.eye(d.size)
        np.fill_diagonal(r, 1.0)
        sd = np.sqrt(np.clip(d, 0, None))
        return r * np.outer(sd, sd)

    @property
    def center(self) -> np.ndarray:
        """Center of the default interval and of the z statistics."""
        return self.params - self.bias if self.interval == "bc-normal" else self.params

    def _no_information(self) -> np.ndarray:
        if self.uninformative is None:
            return np.zeros(self.params.size, bool)
        return np.asarray(self.uninformative, bool)

    @property
    def tvalues(self) -> np.ndarray:
        """z statistics for H0: coefficient = 0, consistent with the default interval
        (0 for a coefficient the release carries no information about)."""
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(self._no_information(), 0.0, self.center / self.se)

    @property
    def pvalues(self) -> np.ndarray:
        if self.interval in ("basic", "percentile"):
            return np.where(self._no_information(), 1.0, self._boot_pvalues())
        return 2.0 * stats.norm.sf(np.abs(self.tvalues))

    def _boot_pvalues(self) -> np.ndarray:
        # the smallest alpha whose interval excludes 0
        out = np.empty(self.params.size)
        target = self.params if self.target is None else self.target
        for j in range(self.params.size):
            r = self.replicates[:, j] - target[j] + self.params[j]
            if self.interval == "basic":
                r = 2 * self.params[j] - r
            frac = min(np.mean(r <= 0), np.mean(r >= 0))
            out[j] = min(1.0, 2.0 * frac) if r.size else np.nan
        return out

    def conf_int(self, alpha: float = 0.05, method: str | None = None) -> np.ndarray:
        """``(k, 2)`` intervals of level ``1 - alpha``.

        Parameters
        ----------
        alpha : float
        method : {"bc-normal", "normal", "basic", "percentile"}, optional
            "normal" (default): ``params -/+ z se`` with ``se`` from
            :attr:`mse` (spread, bootstrap bias and binning shifts); "bc-normal":
            ``params - bias -/+ z sd`` with ``sd`` the replicates' spread; "basic": ``2 params - q(1 - alpha/2),
            2 params - q(alpha/2)``; "percentile": ``q(alpha/2), q(1 - alpha/2)``;
            ``q`` are the replicates' quantiles moved by ``params - target``
            (the bootstrap world's estimand is the fit on the estimated
            population, ``target``, which is ``params`` when that population
            is the release itself).
        """
        method = self.interval if method is None else method
        if method not in INTERVALS:
            raise ValueError(f"method must be one of {INTERVALS}, got {method!r}")
        if not 0 < alpha < 1:
            raise ValueError(f"alpha must be in (0, 1), got {alpha!r}")
        none = self._no_information()
        if method in ("normal", "bc-normal"):
            z = stats.norm.ppf(1 - alpha / 2)
            c = self.params - (self.bias if method == "bc-normal" else 0.0)
            se = self._se_for(method)
            ci = np.column_stack([c - z * se, c + z * se])
        elif self.n_ok < 2:
            return np.full((self.params.size, 2), np.nan)
        else:
            lo, hi = np.quantile(self.replicates, [alpha / 2, 1 - alpha / 2], axis=0)
            target = self.params if self.target is None else self.target
            if method == "basic":  # the law of (estimate - target), reflected
                ci = np.column_stack([self.params + target - hi, self.params + target - lo])
            else:
                ci = np.column_stack([self.params + lo - target, self.params + hi - target])
        ci[none] = (-np.inf, np.inf)
        return ci

    def describe_interval(self) -> str:
        return {
            "bc-normal": "bias-corrected normal (estimate - bootstrap bias -/+ z * bootstrap SE)",
            "normal": "normal (estimate -/+ z * SE)",
            "basic": "basic bootstrap (2 * estimate - replicate quantiles)",
            "percentile": "bootstrap percentile",
        }[self.interval]

    def notes(self, names: Sequence[str] | None = None) -> list[str]:
        """Lines for the summary."""
        lines = [
            f"Covariance type dp: parametric bootstrap of the release (post-processing), "
            f"B = {self.n_boot} replicates ({self.simulation}); standard errors are the "
            f"{self.se_description}, intervals are " + self.describe_interval()
            + "; z statistics and p-values use the same center and SE.",
        ]
        none = np.flatnonzero(self._no_information())
        if none.size:
            shown = [str(names[i]) if names is not None else str(i) for i in none[:6]]
            more = "" if none.size <= 6 else f" and {none.size - 6} more"
            lines.append(
                "WARNING: the release carries no information about " + ", ".join(shown) + more
                + ": the noisy count behind them is not above what the threshold's spurious "
                "cells alone put there, so their estimates are noise. Their standard errors "
                "are infinite and their intervals unbounded (a declared level without rows, or "
                "whose rows the threshold removed; use a larger epsilon, fewer bins or fewer "
                "variables).")
        with np.errstate(divide="ignore", invalid="ignore"):
            shift = np.abs(self.bias) / self.se
        big = np.flatnonzero(np.isfinite(shift) & (shift > 1.0))
        if self.interval == "bc-normal" and big.size:
            shown = [str(names[i]) if names is not None else str(i) for i in big[:6]]
            more = "" if big.size <= 6 else f" and {big.size - 6} more"
            lines.append(
                "The bootstrap puts the bias of the thresholded release at more than one standard "
                f"error for {', '.join(shown)}{more} (up to {float(np.nanmax(shift)):.2g} SE): "
                "their intervals and z statistics are centred on the estimate minus that bias, "
                "and may exclude the estimate itself.")
        if self.n_failed:
            share = self.n_failed / max(self.n_boot, 1)
            lines.append(
                f"{self.n_failed} of {self.n_boot} replicates could not be fitted (rank-deficient "
                "or separated replicate release) and were left out"
                + (": standard errors are unreliable." if share > 0.1 else "."))
        if self.binning is not None and self.binning.flagged.any():
            idx = np.flatnonzero(self.binning.flagged)
            shown = [str(names[i]) if names is not None else str(i) for i in idx[:6]]
            more = "" if idx.size <= 6 else f" and {idx.size - 6} more"
            worst = float(np.nanmax(self.binning.ratio))
            carried = ("their standard errors and intervals carry these shifts as uncertainty "
                       "of unknown sign, so they are wider" if self.interval == "normal" else
                       f"the {self.interval} intervals do not include them and may undercover "
                       "(the default \"normal\" interval does)")
            lines.append(
                "WARNING: binning may bias " + ", ".join(shown) + more + f" by up to {worst:.2g} "
                "standard errors (refits with the bins merged in groups of 2 and 4, or with "
                f"{self.binning.placement_method or 'other'} representatives): " + carried
                + ". Use more bins (more data or a larger epsilon) or a design less sensitive "
                "to binning.")
        for name, lo, hi, width in self.whole_number_bins:
            lines.append(
                f"{name} is cut into bins {width:g} wide with edges on whole "
                f"numbers: if {name} takes whole values (a count), each value sits on its bin's "
                "left edge and the fit places it inside the bin, a bias the binning check cannot "
                f"see; declare bounds ({lo - 0.5:g}, {hi - 0.5:g}) to centre the bins on them.")
        if self.binning is not None and self.binning.unchecked:
            lines.append(
                f"Fewer than {BINNING_MIN_BINS} bins for {', '.join(self.binning.unchecked)}: "
                "too few to coarsen, so their binning is measured only by the other "
                "representatives' shift.")
        return lines


# ---------------------------------------------------------------------------
# the driver
# ---------------------------------------------------------------------------


def _progress(total: int, desc: str):
    try:
        from tqdm.auto import tqdm
    except ImportError:  # pragma: no cover - tqdm is a dependency
        return None
    return tqdm(total=total, desc=desc, unit="rep", disable=None, delay=1.0, leave=False)


def _extend_refits(est: np.ndarray, ok: np.ndarray, fixed: np.ndarray, refitted: np.ndarray,
                   ok_pairs: np.ndarray, pair_at: np.ndarray
                   ) -> tuple[np.ndarray, np.ndarray, str]:
    """Replicates with refitted representatives: the refitted ones as they
    are (``pair_at``: their positions), the others predicted from their
    fixed-points estimates by the per-coefficient regression on the pairs,
    plus the pairs' residuals in turn.  Returns the replicates, their ok
    mask and a note."""
    F, R = fixed[ok_pairs], refitted[ok_pairs]
    if F.shape[0] < 3:
        return est, ok, "; representatives held at the release's (too few refits)"
    Fc, Rc = F - F.mean(axis=0), R - R.mean(axis=0)
    var = (Fc**2).sum(axis=0)
    b = np.where(var > 0, (Fc * Rc).sum(axis=0) / np.where(var > 0, var, 1.0), 1.0)
    a = R.mean(axis=0) - b * F.mean(axis=0)
    resid = R - (a + b * F)
    out = a + b * est
    out = out + resid[np.arange(est.shape[0]) % resid.shape[0]]
    out[pair_at[ok_pairs]] = R
    ok = ok.copy()
    ok[pair_at[~ok_pairs]] = False
    n = est.shape[0]
    note = (f"; representatives refitted on {F.shape[0]} replicates, extended to the "
            f"other {n - F.shape[0]} by regression on the fixed-points refits")
    return out, ok, note


def parametric_bootstrap(
    release: PrivateHistogram,
    design: CellDesign,
    refit: Callable,
    params: np.ndarray,
    *,
    n_boot: int = DEFAULT_N_BOOT,
    random_state=None,
    interval: str = DEFAULT_INTERVAL,
    label: str = "dp bootstrap",
    binning: Callable[[np.ndarray], BinningCheck | None] | None = None,
    population: str = "deconvolved",
    n_refit: int = DEFAULT_N_REFIT,
    uninformative: np.ndarray | None = None,
) -> DPInference:
    """Bootstrap ``refit`` over replicate releases of ``release``.

    ``uninformative`` marks coefficients the release says nothing about
    (:mod:`dpmodels.information`): their SE is infinite.

    When the design places cells through a representer fitted to the
    release (``"density"``, ``"shift"``, ``"sheppard"``), the estimate
    depends on the histogram twice: through the counts and through the
    points the representer fits to them.  Every replicate is refitted with
    the release's points held fixed (fast, vectorized), and the first
    ``n_refit`` replicates are refitted again with a representer refitted on
    the replicate itself (a one-step density fit from the release's).  The
    paired estimates give, per coefficient, the regression ``refitted = a +
    b fixed + e``; every other replicate becomes ``a + b fixed`` plus a
    residual vector ``e`` of the pairs, taken in turn (a regression estimator
    of the refitted replicates' law, as in control variates).  Holding the
    points fixed alone would understate the standard errors by 5-28% on the
    housing benchmark (``docs/inference.md``).

    Parameters
    ----------
    release : PrivateHistogram
    design : CellDesign
        Builds the model's design rows for replicate cells.
    refit : callable
        ``refit(X, y, W, start) -> (estimates (b, k), ok (b,))`` with ``W``
        the ``(C, b)`` replicate counts of the design rows.
    params : ndarray
        The estimate from the release (flattened), the refits' start.
    n_boot : int
        Number of replicates B.
    random_state : None, int or Generator
        None: the OS's secure entropy.
    interval : str
        Default interval type (see :meth:`DPInference.conf_int`).
    binning : callable, optional
        ``binning(se) -> BinningCheck``, run after the bootstrap.
    n_refit : int
        Replicates refitted with their own representatives (all of them when
        ``n_refit >= n_boot``).
    """
    if isinstance(n_boot, bool) or not isinstance(n_boot, (int, np.integer)) or n_boot < 2:
        raise ValueError(f"n_boot must be an int >= 2, got {n_boot!r}")
    if interval not in INTERVALS:
        raise ValueError(f"interval must be one of {INTERVALS}, got {interval!r}")
    t0 = time.perf_counter()
    rng = make_rng(random_state)
    params = np.asarray(params, dtype=float).ravel()
    sims = [ReleaseSimulator(release, population=population)]
    if population == "deconvolved" and sims[0].deconvolved:
        # the population model is uncertain: half of B from the smooth population
        # too, and per coefficient the larger error (DPInference.parts)
        sims.append(ReleaseSimulator(release, population="smooth"))
    share = int(n_boot) // len(sims)
    sizes = [int(n_boot) - share * (len(sims) - 1)] + [share] * (len(sims) - 1)
    refits = [-(-int(n_refit) // len(sims))] * len(sims)
    runs = [_replicates(sim, design, refit, params, rng, b, r, label)
            for sim, b, r in zip(sims, sizes, refits)]
    seeded = random_state is not None
    whole = tuple((ax.name, *ax.bounds, (ax.bounds[1] - ax.bounds[0]) / ax.bins)
                  for ax in design.sub.axes if whole_number_bins(ax))
    common = dict(params=params, interval=interval, seeded=seeded,
                  uninformative=uninformative, whole_number_bins=whole)
    if len(runs) == 1:
        est, n_failed, target, description = runs[0]
        inf = DPInference(replicates=est, n_boot=int(n_boot), n_failed=n_failed,
                          simulation=description, target=target, **common)
    else:
        parts = tuple(DPInference(params=params, replicates=est, n_boot=b, n_failed=nf,
                                  interval=interval, simulation=desc, target=target)
                      for (est, nf, target, desc), b in zip(runs, sizes))
        description = (f"{runs[0][3]}; and {sizes[1]} of the {int(n_boot)} replicates from the "
                       f"smooth population ({runs[1][3].split('population: ', 1)[-1]}); per "
                       "coefficient the larger mean squared error of the two")
        inf = DPInference(replicates=np.vstack([p.replicates for p in parts]),
                          n_boot=int(n_boot), n_failed=sum(p.n_failed for p in parts),
                          simulation=description, parts=parts, **common)
    check = binning(inf.spread_se) if binning is not None else None
    object.__setattr__(inf, "binning", check)
    object.__setattr__(inf, "elapsed", time.perf_counter() - t0)
    return inf


def _replicates(sim: ReleaseSimulator, design: CellDesign, refit: Callable, params: np.ndarray,
                rng: np.random.Generator, n_boot: int, n_refit: int, label: str):
    """``n_boot`` replicate releases from ``sim`` refitted: (the successful
    replicate estimates, the number that failed, the bootstrap world's
    estimand or None, the simulation's description)."""
    support_rows = design.rows(sim.support)
    target = None
    if sim.hidden > 0 or sim.removed > 0:  # the bootstrap world's estimand: the fit on the population
        w_pop = np.zeros((design.n_rows, 1))
        np.add.at(w_pop[:, 0], support_rows, sim.p_hat * sim.n)
        w_pop[~design.valid] = 0.0
        est, ok = refit(*design.expand(np.arange(design.n_rows), w_pop), params)
        target = est[0] if ok[0] else None
    estimates, oks = [], []
    fixed, refitted, ok_pairs, pair_at = [], [], [], []
    n_refit = min(int(n_refit), int(n_boot))
    bar = _progress(int(n_boot), label)
    done = 0
    try:
        while done < n_boot:
            size = min(sim.chunk_size(n_boot), n_boot - done)
            chunk = sim.simulate(rng, size)
            extra_rows = design.rows(chunk.extra_ids)
            C = design.n_rows
            agg = sparse.csr_matrix(
                (np.ones(support_rows.size), (support_rows, np.arange(support_rows.size))),
                shape=(C, support_rows.size))
            W = np.asarray(agg @ chunk.support_counts.T.astype(float))
            if extra_rows.size:
                np.add.at(W, (extra_rows, chunk.extra_rep), chunk.extra_counts.astype(float))
            W[~design.valid] = 0.0
            used = np.flatnonzero(W.any(axis=1))  # cells released in some replicate
            est, ok = refit(*design.expand(used, W[used]), params)
            r = min(size, n_refit - sum(len(e) for e in refitted)) if design.representer else 0
            if r > 0:  # the same replicates with refitted representatives
                est_r, ok_r = design.refit_each(W[:, :r], refit, params)
                refitted.append(est_r)
                fixed.append(est[:r])
                pair_at.append(done + np.arange(r))
                ok_pairs.append(ok_r & ok[:r])
            estimates.append(est)
            oks.append(ok)
            done += size
            if bar is not None:
                bar.update(size)
    finally:
        if bar is not None:
            bar.close()
    est = np.vstack(estimates)
    ok = np.concatenate(oks) & np.all(np.isfinite(est), axis=1)
    description = sim.describe()
    if refitted:
        est, ok, note = _extend_refits(est, ok, np.vstack(fixed), np.vstack(refitted),
                                       np.concatenate(ok_pairs), np.concatenate(pair_at))
        description += note
    return est[ok], int((~ok).sum()), target, description


def coarsen_frame(frame: pd.DataFrame, domain: Domain, variables: Sequence[str], factor: int = 2
                  ) -> tuple[pd.DataFrame, tuple[str, ...], tuple[str, ...]]:
    """The cell frame with each continuous variable's bins merged in groups of
    ``factor`` (bins ``f j .. f j + f - 1``; a short last group stays short),
    values at the merged bins' midpoints.  Returns the frame, the variables
    coarsened and the continuous variables left alone (fewer than
    ``BINNING_MIN_BINS`` bins)."""
    out = frame.copy()
    done, skipped = [], []
    for name in variables:
        axis = domain.axis(name)
        if axis.kind != "continuous":
            continue
        if axis.bins < BINNING_MIN_BINS:
            skipped.append(name)
            continue
        e = axis.edges  # on the axis's scale, as the codes
        lo = axis.coord_bounds[0]
        coord = axis.to_coord(out[name].to_numpy(float))
        code = np.clip(np.floor((coord - lo) / axis.width), 0, axis.bins - 1)
        c = code.astype(np.int64) // factor
        out[name] = axis.to_values((e[factor * c] + e[np.minimum(factor * c + factor, axis.bins)]) / 2.0)
        done.append(name)
    return out, tuple(done), tuple(skipped)


# ---------------------------------------------------------------------------
# results classes
# ---------------------------------------------------------------------------


class DPInferenceResultsMixin:
    """Mixin for the Freq* results: when a :class:`DPInference` is attached
    (``cov_type == "dp"``), ``bse``, ``tvalues``, ``pvalues`` and
    ``conf_int`` come from it; otherwise statsmodels' own."""

    dp_inference: DPInference | None = None

    def _dp_active(self) -> bool:
        return self.dp_inference is not None and getattr(self, "cov_type", None) == "dp"

    def _dp_shape(self, flat: np.ndarray) -> np.ndarray:
        shape = np.shape(self.params)
        return flat.reshape(shape, order="F") if len(shape) == 2 else flat

    @property
    def tvalues(self):
        """z statistics; under cov_type "dp", those of the default interval's center."""
        if self._dp_active():
            return self._dp_shape(self.dp_inference.tvalues)
        return super().tvalues

    @property
    def pvalues(self):
        """Two-sided p-values; under cov_type "dp", from the bootstrap."""
        if self._dp_active():
            return self._dp_shape(self.dp_inference.pvalues)
        return super().pvalues

    def _dp_no_information(self) -> bool:
        return self._dp_active() and bool(self.dp_inference._no_information().any())

    @property
    def fvalue(self):
        """F statistic; NaN when a coefficient has no information (infinite SE)."""
        return np.nan if self._dp_no_information() else super().fvalue

    @property
    def f_pvalue(self):
        return np.nan if self._dp_no_information() else super().f_pvalue

    def plot_coefficients(self, ax=None, *, nonprivate=None, alpha=0.05, naive=True):
        """Forest plot of the estimates with their dp and naive intervals (a
        matplotlib Figure); see :func:`dpmodels.plots.plot_coefficients`."""
        from .plots import plot_coefficients

        return plot_coefficients(self, ax, nonprivate=nonprivate, alpha=alpha, naive=naive)

    def conf_int(self, alpha=0.05, cols=None, **kwargs):
        """Confidence intervals; under cov_type "dp", the bootstrap intervals
        (``method=`` one of "bc-normal", "normal", "basic", "percentile")."""
        if not self._dp_active():
            return super().conf_int(alpha=alpha, cols=cols, **kwargs) if cols is not None \
                else super().conf_int(alpha=alpha, **kwargs)
        ci = self.dp_inference.conf_int(alpha, method=kwargs.pop("method", None))
        if len(np.shape(self.params)) == 2:  # multinomial: (J-1, K, 2), as statsmodels
            K, J1 = np.shape(self.params)
            return ci.reshape(J1, K, 2)
        if cols is not None:
            ci = ci[np.asarray(cols)]
        return ci


def attach_dp_inference(res, inference: DPInference) -> None:
    """Make ``inference`` the covariance of the statsmodels results ``res``."""
    inner = getattr(res, "_results", res)
    inner.dp_inference = inference
    inner.cov_type = "dp"
    inner.cov_kwds = {"n_boot": inference.n_boot, "interval": inference.interval,
                      "description": "parametric bootstrap of the release"}
    inner.use_t = False
    inner.cov_params_default = inference.cov
    cache = getattr(inner, "_cache", None)
    if isinstance(cache, dict):
        for key in ("bse", "tvalues", "pvalues", "fvalue", "f_pvalue"):
            cache.pop(key, None)
