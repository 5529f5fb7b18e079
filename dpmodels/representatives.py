"""Cell representatives: the weighted points a model is fitted on.

Lei (2011, Algorithm 1) stands every released cell for ``count`` rows at the
cell's midpoint.  The rows inside a bin are neither centred on its midpoint
nor piled on one point: on a smooth density they lean towards the denser
neighbour and fill the bin.  Regression needs both: least squares uses every
cell's within-cell mean *and* covariance of the continuous variables, and
midpoints get both wrong by O(h^2) in the bin width h (Sheppard's
correction is the textbook case).  Lei's exact-integration objective (§3,
eq. 6) integrates the model over a density inside every cell; this module
supplies that density.

Methods (the ``representatives=`` argument of the dp_* models):

``"midpoint"``
    One row per released cell at its bin midpoints (Lei's Algorithm 1).
``"shift"``
    One row per cell, moved along each continuous axis to the within-bin
    mean of the linear density whose slope is the central difference of the
    two neighbouring cells' counts (zero outside the domain or when not
    released), clipped so that the density stays non-negative.
``"sheppard"``
    Half the shift.  On a smooth density the shift lowers every squared
    variable's weighted sum by twice Sheppard's correction ``N h^2 / 12``
    while leaving first moments and cross products alone (its effect on them
    telescopes to the domain edges); half of it applies the correction once.
``"density"`` (the default)
    A smooth density is fitted to the release, separately for each
    combination of the discrete variables' levels (a *group*), and every
    released cell is represented by ``2**d`` points that carry equal shares
    of its count and reproduce the fitted density's mean and covariance
    inside the cell (``d`` continuous variables).  See :func:`fit_density`.
    With more than :data:`DENSITY_MAX_DIM` continuous variables (or a very
    large fit) it falls back to ``"sheppard"``.

:class:`Representer` holds the fitted within-cell distributions and places
the points of any cell of the model's domain, e.g. of a simulated replicate
release in a parametric bootstrap, the same way.

All methods are post-processing of the release (PRIVACY.md rule 6): they
read the released cell ids and counts and the public domain, epsilon,
threshold and n, never a raw row.  With no continuous variable in the
model every method returns
:meth:`~dpmodels.release.PrivateHistogram.marginal` unchanged, so fits of
discrete-only formulas are untouched.  The counts stay the release's: only
the positions of the rows inside each cell change, and the weights of a
cell's points add up to its count.

How the default was chosen, with the measurements: ``docs/accuracy.md``.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from scipy.special import gammaln

from .domain import Domain

__all__ = [
    "REPRESENTATIVES",
    "DEFAULT_REPRESENTATIVES",
    "CellPoints",
    "DensityFit",
    "MarginalCells",
    "Representer",
    "cell_frame",
    "cell_points",
    "representer_for",
    "check_representatives",
    "density_family",
    "density_feasible",
    "equal_weight_points",
    "fit_density",
    "marginal_cells",
    "shift_offsets",
]

#: The available methods, by name.
REPRESENTATIVES = ("midpoint", "shift", "sheppard", "density")
#: The method the dp_* models use unless told otherwise (chosen by
#: ``benchmarks/accuracy.py``; see ``docs/accuracy.md``).
DEFAULT_REPRESENTATIVES = "density"

#: Gauss-Legendre points per bin and continuous axis used to integrate the
#: fitted density over a cell, by number of continuous variables (the work
#: grows as points**d per cell).
_QUAD_POINTS = {1: 8, 2: 5, 3: 4}
_QUAD_POINTS_MANY = 2
#: The edge terms of the "beta" family need this many bins on every
#: continuous axis (5 coefficients per axis); coarser grids use "quad".
BETA_MIN_BINS = 8
#: Prior precision (log-likelihood units; a group of N rows carries about N)
#: of a group fit's non-constant coefficients around the pooled fit.
_GROUP_PRIOR = 1.0
#: Ridge of the pooled fit's non-constant coefficients towards 0, and of the
#: edge coefficients of the "beta" family towards 0.
_POOLED_PRIOR = 1e-3
_EDGE_PRIOR = 1.0
#: The density fit is used for at most this many continuous variables, and
#: while its work (cells x quadrature points x coefficients) stays below
#: _DENSITY_MAX_WORK; beyond, "density" falls back to "sheppard".
DENSITY_MAX_DIM = 3
_DENSITY_MAX_WORK = 2e8
_EM_ITER = 40
_NEWTON_ITER = 40


def check_representatives(method) -> str:
    """Validate a ``representatives=`` argument; returns it."""
    if not isinstance(method, str) or method not in REPRESENTATIVES:
        raise ValueError(
            f"representatives must be one of {list(REPRESENTATIVES)}, got {method!r}"
        )
    return method


# ---------------------------------------------------------------------------------------
# the marginal release
# ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class MarginalCells:
    """A release marginalized to some variables: the sub-domain, its sorted
    cell ids with a non-zero summed count, and those counts."""

    domain: Domain
    ids: np.ndarray
    counts: np.ndarray


def marginal_cells(release, variables: Sequence[str]) -> MarginalCells:
    """The cells of ``release.marginal(variables)``, with their ids.

    Same cells, in the same order, with the same counts as
    :meth:`~dpmodels.release.PrivateHistogram.marginal`.
    """
    variables = list(dict.fromkeys(variables))
    dom = release.domain
    idx = [dom.names.index(v) for v in variables]
    sub = Domain(tuple(dom.axes[i] for i in idx))
    ids = np.asarray(release.cell_ids, dtype=np.uint64)
    counts = np.asarray(release.counts, dtype=np.int64)
    if variables == list(dom.names):
        keep = counts != 0
        return MarginalCells(sub, ids[keep], counts[keep])
    codes = dom.decode(ids)
    sub_ids = sub.encode([codes[i] for i in idx]) if idx else np.zeros(ids.size, np.uint64)
    uniq, inv = np.unique(sub_ids, return_inverse=True)
    sums = np.bincount(inv, weights=counts, minlength=uniq.size).astype(np.int64)
    keep = sums != 0
    return MarginalCells(sub, uniq[keep], sums[keep])


# ---------------------------------------------------------------------------------------
# points
# ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class CellPoints:
    """Weighted points standing for the cells of a (marginal) release.

    Attributes
    ----------
    domain : Domain
        The domain of the cells.
    ids : numpy.ndarray
        The cells' ids (sorted, uint64).
    cell : numpy.ndarray
        For each point, the position of its cell in ``ids``.
    values : dict of str to numpy.ndarray
        Each continuous variable's value at each point.
    weights : numpy.ndarray
        Each point's share of its cell's count (the shares of a cell add up
        to its count).
    """

    domain: Domain
    ids: np.ndarray
    cell: np.ndarray
    values: dict
    weights: np.ndarray
    method: str = "midpoint"


def density_feasible(domain: Domain, n_cells: int) -> bool:
    """Whether the ``"density"`` fit is used for ``n_cells`` listed cells of
    ``domain`` (at most :data:`DENSITY_MAX_DIM` continuous variables and a
    bounded amount of work); otherwise ``"density"`` falls back to
    ``"sheppard"``.  Depends on the public domain and the number of released
    cells only."""
    sizes = [a.size for a in domain.axes if a.kind == "continuous"]
    d = len(sizes)
    if d == 0 or d > DENSITY_MAX_DIM:
        return d == 0
    q = _QUAD_POINTS.get(d, _QUAD_POINTS_MANY)
    p = 1 + d + d * (d + 1) // 2 + (2 * d if density_family(sizes) == "beta" else 0)
    grid = math.prod(sizes)
    active = min(n_cells * (1 + 2 * d), grid * max(1, n_cells))
    return active * q**d * p <= _DENSITY_MAX_WORK


def cell_points(domain: Domain, ids, counts, *, method: str = DEFAULT_REPRESENTATIVES,
                epsilon: float = math.inf, threshold: float | None = None,
                n: int | None = None) -> CellPoints:
    """Representative points of the cells ``ids`` of ``domain`` whose released
    (noisy) counts are ``counts``.

    Parameters
    ----------
    domain : Domain
    ids, counts : array_like
        Sorted cell ids and their counts; cells not listed were not released.
    method : {"midpoint", "shift", "sheppard", "density"}
    epsilon : float
        The release's epsilon (``inf``: exact counts).
    threshold : float or None
        The release's threshold t (cells whose noisy count was below it are
        not listed); None for a signed (unthresholded) release.
    n : int, optional
        The public row count (sets the censoring level of a signed release
        in the density fit).

    Returns
    -------
    CellPoints
    """
    rep = Representer(domain, ids, counts, method=method, epsilon=epsilon,
                      threshold=threshold, n=n)
    return rep.points(rep.ids, rep.counts)


def representer_for(release, variables: Sequence[str],
                    method: str = DEFAULT_REPRESENTATIVES) -> "Representer | None":
    """The :class:`Representer` a model over ``variables`` uses, fitted on
    ``release``; None when its cells are the plain marginal (``"midpoint"``,
    or no continuous variable among ``variables``)."""
    check_representatives(method)
    variables = list(dict.fromkeys(variables))
    dom = release.domain
    if method == "midpoint" or not any(dom.axis(v).kind == "continuous" for v in variables):
        return None
    return Representer.from_release(release, variables, method)


def cell_frame(release, variables: Sequence[str], method: str = DEFAULT_REPRESENTATIVES,
               representer: "Representer | None" = None) -> pd.DataFrame:
    """The frame a model over ``variables`` is fitted on: one row per
    representative point, each variable's value and the point's weight in
    the release's count column.

    For ``"midpoint"``, or when no variable is continuous, this is exactly
    ``release.marginal(variables)``.  ``representer``: the one of
    :func:`representer_for` if already at hand (it is fitted otherwise).

    Examples
    --------
    >>> import dpmodels as dpm
    >>> from dpmodels.representatives import cell_frame
    >>> df = dpm.datasets.housing(n=5000, seed=1)
    >>> rel = dpm.release(df, columns=["price", "size"], epsilon=1.0,
    ...                   bounds={"price": (1e5, 9e5), "size": (0, 3000)}, bins=6,
    ...                   random_state=0)
    >>> frame = cell_frame(rel, ["price", "size"])
    >>> len(frame) == 4 * len(rel.cells)  # 2**2 points per released cell
    True
    >>> bool(abs(frame["count"].sum() - rel.counts.sum()) < 1e-6)
    True
    """
    variables = list(dict.fromkeys(variables))
    rep = representer if representer is not None else representer_for(release, variables, method)
    if rep is None:
        return release.marginal(variables)
    frame = rep.frame(rep.ids, rep.counts, release.count_column)
    del frame.attrs["cell"]
    return frame


class Representer:
    """Representative points for any cell of a model's marginal domain, with
    the within-cell distributions fitted once on one release.

    :func:`cell_frame` uses it for the release's own cells.  It also places
    the points of cells of *another* histogram on the same domain -- e.g. the
    simulated replicate releases of a parametric bootstrap -- with the same,
    fixed within-cell distributions: the density fitted to the release (a
    group absent from it gets the pooled fit), or the release's neighbour
    counts for "shift" and "sheppard" (no shift for a cell the release does
    not list).  A bootstrap that refits on replicate cells then sees them as
    the point estimate saw the release's cells.

    Parameters
    ----------
    domain : Domain
        The (marginal) domain.
    ids, counts : array_like
        The release's cells in that domain (sorted ids) and their counts;
        :meth:`from_release` takes them from a release and the model's
        variables (as :func:`marginal_cells`).
    method : {"midpoint", "shift", "sheppard", "density"}
    epsilon, threshold, n
        The release's epsilon, threshold (None: signed) and public n.
    start : Representer, optional
        A representer of the same domain whose density fit starts this one's
        iterations (the bootstrap refits on replicates of one release).
    one_step : bool
        With ``start``: a one-step density fit from it (see :func:`fit_density`).

    Attributes
    ----------
    domain : Domain
    ids, counts : numpy.ndarray
    method : str
        The method in use ("density" falls back to "sheppard" beyond
        :data:`DENSITY_MAX_DIM` continuous variables or a work bound, and
        every method is "midpoint" without continuous variables).
    """

    def __init__(self, domain: Domain, ids, counts, *, method: str = DEFAULT_REPRESENTATIVES,
                 epsilon: float = math.inf, threshold: float | None = None,
                 n: int | None = None, start: "Representer | None" = None,
                 one_step: bool = False):
        check_representatives(method)
        self.domain = domain
        self.ids = np.asarray(ids, dtype=np.uint64)
        self.counts = np.asarray(counts)
        self._cont = [i for i, a in enumerate(domain.axes) if a.kind == "continuous"]
        if not self._cont or self.ids.size == 0:
            method = "midpoint"
        if method == "density" and not density_feasible(domain, self.ids.size):
            method = "sheppard"
        self.method = method
        self.epsilon, self.threshold, self.n = epsilon, threshold, n
        self._fit = None
        if method == "density":
            warm = start._fit if start is not None and start.domain == domain else None
            self._fit = fit_density(domain, self.ids, self.counts, epsilon=epsilon,
                                    threshold=threshold, n=n, start=warm,
                                    one_step=one_step)

    @classmethod
    def from_release(cls, release, variables: Sequence[str],
                     method: str = DEFAULT_REPRESENTATIVES) -> "Representer":
        """Fitted on ``release`` marginalized to ``variables``."""
        marg = marginal_cells(release, variables)
        rep = release.report
        return cls(marg.domain, marg.ids, marg.counts, method=method, epsilon=rep.epsilon,
                   threshold=rep.threshold, n=rep.n)

    def coarsened(self, factor: int, axes: Sequence[str]) -> "Representer":
        """The same method fitted on the release with the bins of the
        continuous ``axes`` merged in groups of ``factor`` (bins ``f j`` to
        ``f j + f - 1``): the binning diagnostic of the dp bootstrap refits
        the model on it.  An axis whose bin count is not a multiple of
        ``factor`` is extended past its upper bound by the missing bins
        (empty), so that every coarse bin is ``factor`` bins wide.  The
        counts of merged cells are summed; nothing else changes."""
        factor = int(factor)
        dom = self.domain
        codes = [np.asarray(c).copy() for c in dom.decode(self.ids)]
        new_axes = []
        for i, ax in enumerate(dom.axes):
            if ax.kind == "continuous" and ax.name in axes:
                new_axes.append(ax.coarsened(factor))
                codes[i] = codes[i] // factor
            else:
                new_axes.append(ax)
        coarse = Domain(tuple(new_axes))
        uniq, inv = np.unique(coarse.encode(codes), return_inverse=True)
        sums = np.bincount(inv, weights=self.counts, minlength=uniq.size)
        keep = sums != 0
        return Representer(coarse, uniq[keep], sums[keep], method=self.method,
                           epsilon=self.epsilon, threshold=self.threshold, n=self.n)

    def points(self, ids, counts) -> CellPoints:
        """The points of the cells ``ids`` (sorted ids of :attr:`domain`) whose
        counts are ``counts``: each cell's points carry shares of its count."""
        ids = np.asarray(ids, dtype=np.uint64)
        w = np.asarray(counts, dtype=float)
        dom = self.domain
        codes = dom.decode(ids)
        one = np.arange(ids.size)
        if self.method == "midpoint":
            values = {dom.axes[i].name: dom.axes[i].to_values(dom.axes[i].representatives()[codes[i]])
                      for i in self._cont}
            return CellPoints(dom, ids, one, values, w, "midpoint")
        if self.method in ("shift", "sheppard"):
            frac = 1.0 if self.method == "shift" else 0.5
            values = {}
            for i in self._cont:
                ax = dom.axes[i]
                off = frac * _shift_at(dom, self.ids, self.counts, ids, i)
                values[ax.name] = ax.to_values(ax.representatives()[codes[i]] + off * ax.width)
            return CellPoints(dom, ids, one, values, w, self.method)
        if ids.size == self.ids.size and np.array_equal(ids, self.ids):
            mean, cov = self._fit.mean, self._fit.cov
        else:
            mean, cov = self._fit.moments(ids)
        pts, share = equal_weight_points(mean, cov)
        values = {}
        for j, i in enumerate(self._cont):
            ax = dom.axes[i]
            lo, hi = ax.coord_bounds
            values[ax.name] = ax.to_values((lo + (pts[:, :, j] + 1.0) / 2.0 * (hi - lo)).reshape(-1))
        return CellPoints(dom, ids, np.repeat(one, share.size), values,
                          (w[:, None] * share[None, :]).reshape(-1), "density")

    def frame(self, ids, counts, count_column: str = "count") -> pd.DataFrame:
        """The points of :meth:`points` as a model frame: each variable's value
        and the point's weight in ``count_column``.  ``frame.attrs["cell"]``
        holds each row's position in ``ids``."""
        pts = self.points(ids, counts)
        codes = self.domain.decode(pts.ids)
        out = {}
        for i, ax in enumerate(self.domain.axes):
            if ax.kind == "continuous":
                out[ax.name] = pts.values[ax.name]
            else:
                out[ax.name] = ax.column(codes[i][pts.cell])
        frame = pd.DataFrame(out)
        frame[count_column] = pts.weights
        frame.attrs["representatives"] = pts.method
        frame.attrs["cell"] = pts.cell
        return frame


# ---------------------------------------------------------------------------------------
# "shift" and "sheppard": a linear density from the two neighbours
# ---------------------------------------------------------------------------------------


def _counts_at(sid: np.ndarray, counts: np.ndarray, target: np.ndarray) -> np.ndarray:
    """Count of each ``target`` id in the sorted ids ``sid`` (0 if not listed)."""
    if sid.size == 0:
        return np.zeros(target.size)
    pos = np.clip(np.searchsorted(sid, target), 0, sid.size - 1)
    return np.where(sid[pos] == target, counts[pos], 0).astype(float)


def _shift_at(domain: Domain, ref_ids, ref_counts, ids, axis: int) -> np.ndarray:
    """:func:`shift_offsets` of the cells ``ids`` computed from the reference
    histogram (``ref_ids``, ``ref_counts``): its count for each cell (0 if not
    listed) and its neighbours' counts."""
    sid = np.asarray(ref_ids, dtype=np.uint64).astype(np.int64)
    ref_counts = np.asarray(ref_counts)
    ids = np.asarray(ids, dtype=np.uint64)
    at = ids.astype(np.int64)
    c = np.maximum(_counts_at(sid, ref_counts, at), 0.0)
    code = domain.decode(ids)[axis]
    nb = []
    for step in (-1, 1):
        inside = (code + step >= 0) & (code + step < domain.axes[axis].size)
        found = _counts_at(sid, ref_counts, at + step * int(domain.strides[axis]))
        nb.append(np.where(inside, np.maximum(found, 0.0), 0.0))
    s = np.clip((nb[1] - nb[0]) / 2.0, -2.0 * c, 2.0 * c)
    return np.where(c > 0, s / (12.0 * np.where(c > 0, c, 1.0)), 0.0)


def shift_offsets(domain: Domain, ids, counts, axis: int) -> np.ndarray:
    """Within-bin mean, in bin widths from the midpoint, of the linear density
    ``c + s u`` on ``u in [-1/2, 1/2]`` along ``axis``.

    ``c`` is the cell's count and ``s`` the central difference
    ``(c[+1] - c[-1]) / 2`` of its neighbours' counts, clipped to
    ``|s| <= 2 c`` so that the density is non-negative; the mean is
    ``s / (12 c)``, at most 1/6 of a bin.  Negative counts count as 0, and so
    do neighbours outside the domain or not released.
    """
    return _shift_at(domain, ids, counts, ids, axis)


# ---------------------------------------------------------------------------------------
# "density"
# ---------------------------------------------------------------------------------------


def equal_weight_points(mean, cov) -> tuple[np.ndarray, np.ndarray]:
    """``2**d`` equally weighted points per cell with the given mean and covariance.

    The points are ``mean + A s`` for every ``s`` in ``{-1, +1}**d``, with
    ``A`` the symmetric square root of ``cov`` (negative eigenvalues taken
    as 0).  The ``s`` have mean 0 and identity covariance, so the points'
    mean is ``mean`` and their covariance ``A A' = cov`` exactly.

    Parameters
    ----------
    mean : array_like, shape (cells, d)
    cov : array_like, shape (cells, d, d)

    Returns
    -------
    points : numpy.ndarray, shape (cells, 2**d, d)
    shares : numpy.ndarray, shape (2**d,)
        Each point's share of its cell's count (``2**-d``).
    """
    mean = np.asarray(mean, float)
    cov = np.asarray(cov, float)
    d = mean.shape[1]
    lam, vec = np.linalg.eigh(cov)
    root = np.einsum("cij,cj,ckj->cik", vec, np.sqrt(np.maximum(lam, 0.0)), vec)
    signs = np.array(list(itertools.product((-1.0, 1.0), repeat=d)))
    pts = mean[:, None, :] + np.einsum("cij,pj->cpi", root, signs)
    return pts, np.full(signs.shape[0], 1.0 / signs.shape[0])


def density_family(sizes: Sequence[int]) -> str:
    """The log-density family used for a grid of ``sizes`` bins per continuous
    axis: ``"beta"`` when every axis has at least :data:`BETA_MIN_BINS` bins,
    else ``"quad"``.  A function of the public bin counts only."""
    return "beta" if sizes and min(sizes) >= BETA_MIN_BINS else "quad"


class _Basis:
    """Coordinates ``u in [-1, 1]`` (the public bounds mapped to -1 and 1)
    on the continuous axes' grid, Gauss-Legendre points inside every cell,
    and the log-density's basis at those points.

    ``"quad"``: 1, u_a, u_a u_b (a <= b) -- a multivariate normal density
    truncated to the box.  ``"beta"``: the same plus ``log(1 + u_a)`` and
    ``log(1 - u_a)`` for every axis -- powers of the distance to each bound,
    so that densities that vanish like a power at a bound (gamma-like) or
    stay positive up to it (truncation) are in the family.
    """

    def __init__(self, sizes: Sequence[int], family: str):
        self.sizes = tuple(int(k) for k in sizes)
        self.d = d = len(self.sizes)
        self.family = family
        q = _QUAD_POINTS.get(d, _QUAD_POINTS_MANY)
        x, w = np.polynomial.legendre.leggauss(q)
        self.qx, qw = x / 2.0, w / 2.0  # on [-1/2, 1/2]; weights add up to 1
        self.qidx = np.array(list(itertools.product(range(q), repeat=d)))  # (Q^d, d)
        self.qweight = np.prod(qw[self.qidx], axis=1)  # (Q^d,), adds up to 1
        self.terms = [()] + [(a,) for a in range(d)] + [
            (a, b) for a in range(d) for b in range(a, d)]
        self.n_poly = len(self.terms)
        self.p = self.n_poly + (2 * d if family == "beta" else 0)
        # prior precision of each coefficient beyond the group prior
        self.ridge = np.zeros(self.p)
        self.ridge[self.n_poly:] = _EDGE_PRIOR

    def points(self, codes: np.ndarray) -> np.ndarray:
        """Quadrature points, shape (cells, Q^d, d), of the cells with integer
        grid codes ``codes`` (cells, d)."""
        k = np.asarray(self.sizes, float)
        centre = (codes + 0.5)[:, None, :] + self.qx[self.qidx][None, :, :]
        return centre / k * 2.0 - 1.0

    def design(self, u: np.ndarray) -> np.ndarray:
        """Basis at the points ``u`` (..., d): shape (..., p)."""
        cols = []
        for t in self.terms:
            term = np.ones(u.shape[:-1])
            for a in t:
                term = term * u[..., a]
            cols.append(term)
        if self.family == "beta":
            for a in range(self.d):  # centred so that the columns vanish at u = 0
                cols.append(np.log1p(u[..., a]))
                cols.append(np.log1p(-u[..., a]))
        return np.stack(cols, axis=-1)


def _dl_log_cdf_below(k: np.ndarray, epsilon: float) -> np.ndarray:
    """``log P(Z < k)`` for integer ``k`` and the release's noise Z (discrete
    Laplace, ``P(Z = z)`` proportional to ``exp(-epsilon |z| / 2)``)."""
    logq = -epsilon / 2.0
    log1pq = math.log1p(math.exp(logq))
    k = np.asarray(k, float)
    # P(Z >= k) = q^k / (1 + q) for k >= 1;  P(Z < k) = q^(1 - k) / (1 + q) for k <= 0
    upper = np.log1p(-np.exp(np.maximum(k, 1.0) * logq - log1pq))
    lower = (1.0 - np.minimum(k, 0.0)) * logq - log1pq
    return np.where(k >= 1, upper, lower)


def _censored_means(mu: np.ndarray, k: int, epsilon: float) -> np.ndarray:
    """``E[n | n + Z < k]`` for ``n ~ Poisson(mu)`` and the release's noise Z:
    the expected true count of a cell that was not released."""
    if mu.size == 0:
        return np.zeros(0)
    tail = int(math.ceil(2.0 * math.log(1e8) / epsilon))
    # the posterior's mode is near max(mu q, k) (q = exp(-epsilon / 2)): cover it widely
    peak = float(np.max(mu)) * math.exp(-epsilon / 2.0)
    top = max(int(k) + tail, int(math.ceil(peak + 10.0 * math.sqrt(peak) + 10.0)), 1)
    stride = max(1, top // 4000)
    nn = np.arange(0, top + 1, stride, dtype=float)
    lmu = np.log(np.maximum(mu, 1e-300))[:, None]
    logp = nn[None, :] * lmu - np.maximum(mu, 1e-300)[:, None] - gammaln(nn + 1.0)[None, :]
    logp = logp + _dl_log_cdf_below(k - nn, epsilon)[None, :]
    logp -= logp.max(axis=1, keepdims=True)
    p = np.exp(logp)
    return (p * nn[None, :]).sum(axis=1) / p.sum(axis=1)


def _intensity(X: np.ndarray, w: np.ndarray, theta: np.ndarray) -> np.ndarray:
    """Point masses ``w_q exp(x_q' theta)`` (cells, Q)."""
    return w * np.exp(np.minimum(X @ theta, 700.0))


def _poisson_fit(y, X, w, theta, prior_mean, prec, iters=_NEWTON_ITER):
    """Penalized Poisson maximum likelihood of the log-linear intensity.

    Cell c has expected count ``mu_c = sum_q w_q exp(X_cq theta)``; maximizes
    ``sum_c y_c log mu_c - mu_c - 1/2 sum_j prec_j (theta_j - prior_mean_j)^2``
    by Fisher scoring with step halving, starting at ``theta``.
    """
    p = X.shape[2]

    def objective(th):
        f = _intensity(X, w, th)
        mu = f.sum(axis=1)
        ll = np.sum(np.where(y > 0, y * np.log(np.maximum(mu, 1e-300)), 0.0) - mu)
        return ll - 0.5 * np.sum(prec * (th - prior_mean) ** 2), f

    obj, f = objective(theta)
    for _ in range(iters):
        mu = np.maximum(f.sum(axis=1), 1e-300)
        A = np.einsum("cq,cqp->cp", f, X)  # d mu / d theta
        grad = ((y / mu - 1.0)[:, None] * A).sum(axis=0) - prec * (theta - prior_mean)
        info = (A / mu[:, None]).T @ A + np.diag(prec) + 1e-9 * np.eye(p)
        try:
            step = np.linalg.solve(info, grad)
        except np.linalg.LinAlgError:  # pragma: no cover - the ridge keeps it regular
            step = np.linalg.lstsq(info, grad, rcond=None)[0]
        t = 1.0
        while True:
            cand = theta + t * step
            new, f_new = objective(cand)
            if new >= obj - 1e-12 * abs(obj) or t < 1e-6:
                break
            t /= 2.0
        if new < obj:
            break
        theta, obj, f = cand, new, f_new
        if np.max(np.abs(t * step)) < 1e-8:
            break
    return theta


def _fit_censored(obs, released, X, w, k, epsilon, theta, prior_mean, prec, warm=False):
    """The log-linear fit when cells that were not released are censored
    observations (noisy count below ``k``): EM, whose E-step sets their
    count to ``E[n | n + Z < k]`` under the current fit.  ``warm``: ``theta``
    is a fit already (the first E-step uses it)."""
    y = np.where(released, np.maximum(obs, 0.0), 0.0).astype(float)
    censored = ~released
    if k is None or not censored.any():
        return _poisson_fit(y, X, w, theta, prior_mean, prec,
                            iters=1 if warm == "one-step" else _NEWTON_ITER)
    if warm:
        y[censored] = _censored_means(_intensity(X, w, theta).sum(axis=1)[censored], k, epsilon)
        if warm == "one-step":
            return _poisson_fit(y, X, w, theta, prior_mean, prec, iters=1)
    else:
        y[censored] = k / 4.0
    for _ in range(_EM_ITER):
        theta = _poisson_fit(y, X, w, theta, prior_mean, prec, iters=2)
        mu = _intensity(X, w, theta).sum(axis=1)
        new = _censored_means(mu[censored], k, epsilon)
        change = np.max(np.abs(new - y[censored]))
        y[censored] = new
        if change < 1e-3 * max(1.0, k):
            break
    return _poisson_fit(y, X, w, theta, prior_mean, prec)


def _with_neighbours(pos: np.ndarray, sizes: Sequence[int]) -> np.ndarray:
    """Sorted grid positions of the cells ``pos`` and of their neighbours one
    bin away along each axis (inside the grid)."""
    sizes = tuple(sizes)
    codes = np.stack(np.unravel_index(pos, sizes), axis=1)
    out = [pos]
    for a, k in enumerate(sizes):
        for step in (-1, 1):
            c = codes.copy()
            c[:, a] += step
            ok = (c[:, a] >= 0) & (c[:, a] < k)
            out.append(np.ravel_multi_index(tuple(c[ok].T), sizes))
    return np.unique(np.concatenate(out))


@dataclass(frozen=True)
class DensityFit:
    """The fitted density of every group, and its moments inside each listed cell.

    Attributes
    ----------
    family : str
        "quad" or "beta" (see :func:`density_family`).
    mean : numpy.ndarray, shape (cells, d)
        Within-cell mean of the continuous variables of the listed cells, in
        coordinates ``u in [-1, 1]`` of the public bounds, continuous axes in
        domain order.
    cov : numpy.ndarray, shape (cells, d, d)
        Within-cell covariance, same coordinates.
    groups : int
        Number of groups (combinations of discrete levels) fitted.
    """

    family: str
    mean: np.ndarray
    cov: np.ndarray
    groups: int
    domain: Domain = field(repr=False, default=None)
    thetas: dict = field(repr=False, default_factory=dict)
    pooled: np.ndarray = field(repr=False, default=None)

    def moments(self, ids) -> tuple[np.ndarray, np.ndarray]:
        """Within-cell mean and covariance of any cells ``ids`` of the domain
        under the fitted densities (a group that had no released cell gets
        the pooled fit)."""
        ids = np.asarray(ids, dtype=np.uint64)
        codes = self.domain.decode(ids)
        cont, sizes, gkey = _layout(self.domain, codes)
        basis = _Basis(sizes, self.family)
        mean = np.zeros((ids.size, basis.d))
        cov = np.zeros((ids.size, basis.d, basis.d))
        ccodes = np.stack([codes[i] for i in cont], axis=1)
        for key in np.unique(gkey):
            sel = np.flatnonzero(gkey == key)
            theta = self.thetas.get(int(key), self.pooled)
            mean[sel], cov[sel] = _cell_moments(basis, ccodes[sel], theta)
        return mean, cov


def _layout(domain: Domain, codes):
    """Continuous axes, their sizes, and each cell's group key (the discrete
    levels, mixed radix)."""
    cont = [i for i, a in enumerate(domain.axes) if a.kind == "continuous"]
    disc = [i for i, a in enumerate(domain.axes) if a.kind != "continuous"]
    sizes = [domain.axes[i].size for i in cont]
    if disc:
        gkey = np.ravel_multi_index(tuple(codes[i] for i in disc),
                                    [domain.axes[i].size for i in disc]).astype(np.int64)
    else:
        gkey = np.zeros(len(codes[0]) if codes else 0, np.int64)
    return cont, sizes, gkey


def _cell_moments(basis: "_Basis", ccodes: np.ndarray, theta: np.ndarray):
    """Mean and covariance inside the cells with grid codes ``ccodes`` of the
    density ``exp(basis' theta)``."""
    U = basis.points(ccodes)
    eta = basis.design(U) @ theta
    f = basis.qweight * np.exp(eta - eta.max(axis=1, keepdims=True))
    f = f / f.sum(axis=1, keepdims=True)
    m = np.einsum("cq,cqa->ca", f, U)
    dev = U - m[:, None, :]
    return m, np.einsum("cq,cqa,cqb->cab", f, dev, dev)


def fit_density(domain: Domain, ids, counts, *, epsilon: float = math.inf,
                threshold: float | None = None, n: int | None = None,
                start: DensityFit | None = None, one_step: bool = False) -> DensityFit:
    """Fit the ``"density"`` representatives' model to a release.

    The model.  Within each group (a combination of the discrete variables'
    levels) the rows' continuous variables have a density whose log is a
    linear combination of a few functions of ``u`` (each variable mapped
    from its public bounds to [-1, 1]): 1, every ``u_a`` and every product
    ``u_a u_b`` -- a multivariate normal truncated to the box -- and, on grids
    of at least :data:`BETA_MIN_BINS` bins per axis, ``log(1 + u_a)`` and
    ``log(1 - u_a)`` for power-law behaviour at the bounds.  The expected
    count of a cell is the density's integral over it (Gauss-Legendre).

    The fit.  Poisson maximum likelihood on the group's released counts.
    The group's cells that were not released, and that border a released
    one, are censored observations: their noisy count was below the
    threshold; EM replaces their count by its conditional expectation given
    that (under the Poisson model and the release's own discrete Laplace
    noise), so the fit learns where mass is absent instead of seeing zeros.
    Every group's coefficients are shrunk towards the fit of all groups
    pooled with a prior of precision 1 (one row's worth of likelihood),
    which only matters for groups with very few rows.  A signed release is
    treated, for this fit only, as thresholded at Lei's enhanced threshold
    ``0.5 log(n) / epsilon``; with ``epsilon=inf`` unlisted cells are exact
    zeros.

    The output: for every listed cell, the fitted density's mean and
    covariance inside the cell.  The release's counts are not changed.

    Parameters
    ----------
    domain : Domain
    ids, counts : array_like
        Sorted cell ids of ``domain`` and their released counts.
    epsilon, threshold, n
        As in :func:`cell_points`.
    start : DensityFit, optional
        A fit on the same domain to start the iterations from (same
        optimum, fewer iterations).
    one_step : bool
        With ``start``: one E-step and one Fisher-scoring step from it (Le
        Cam's one-step estimator: the same first-order variability as the
        full fit when the start is close; the bootstrap's replicates).

    Returns
    -------
    DensityFit
    """
    ids = np.asarray(ids, dtype=np.uint64)
    counts = np.asarray(counts, float)
    codes = domain.decode(ids)
    cont, sizes, gkey = _layout(domain, codes)
    family = density_family(sizes)
    basis = _Basis(sizes, family)
    d, p = basis.d, basis.p
    if not math.isfinite(epsilon):
        k = None
    elif threshold is not None:
        k = max(int(math.ceil(threshold)), 1)
    else:
        k = max(int(math.ceil(0.5 * math.log(max(n or 2, 2)) / epsilon)), 1)
    released = counts >= k if k is not None else counts > 0
    positive = np.maximum(counts, 0.0)
    cpos = np.ravel_multi_index(tuple(codes[i] for i in cont), sizes).astype(np.int64)

    def setup(pos_listed, rel_mask, values):
        """Active cells (listed cells and the neighbours of released ones),
        their observed counts, released mask and basis."""
        seed = pos_listed[rel_mask] if rel_mask.any() else pos_listed
        act = np.union1d(_with_neighbours(np.unique(seed), sizes), pos_listed)
        at = np.searchsorted(act, pos_listed)
        obs = np.zeros(act.size)
        np.add.at(obs, at[rel_mask], values[rel_mask])
        rmask = np.zeros(act.size, bool)
        rmask[at[rel_mask]] = True
        acodes = np.stack(np.unravel_index(act, sizes), axis=1)
        return at, obs, rmask, acodes

    # pooled over the groups: the prior of each group fit
    at, obs, rmask, acodes = setup(cpos, released, positive)
    X = basis.design(basis.points(acodes))
    w = np.broadcast_to(basis.qweight, X.shape[:2])
    theta0 = np.zeros(p)
    theta0[0] = math.log(max(obs.sum(), 1.0) / max(obs.size, 1))
    prec = basis.ridge + _POOLED_PRIOR
    prec[0] = 0.0
    warm = (("one-step" if one_step else True) if start is not None and start.family == family
            else False)
    if warm:
        theta0 = start.pooled.copy()
    pooled = _fit_censored(obs, rmask, X, w, k, epsilon, theta0, np.zeros(p), prec, warm)
    total = max(obs.sum(), 1.0)

    mean = np.zeros((ids.size, d))
    cov = np.zeros((ids.size, d, d))
    order = np.argsort(gkey, kind="stable")
    cuts = np.flatnonzero(np.diff(gkey[order])) + 1
    groups = np.split(order, cuts)
    prec = basis.ridge + _GROUP_PRIOR
    prec[0] = 0.0
    thetas = {}
    for members in groups:
        at, obs, rmask, acodes = setup(cpos[members], released[members], positive[members])
        U = basis.points(acodes)
        X = basis.design(U)
        w = np.broadcast_to(basis.qweight, X.shape[:2])
        key = int(gkey[members[0]])
        if warm and key in start.thetas:
            th0 = start.thetas[key].copy()
        else:
            th0 = pooled.copy()
            th0[0] += math.log(max(obs.sum(), 1.0) / total)
        prior = pooled.copy()
        theta = _fit_censored(obs, rmask, X, w, k, epsilon, th0, prior, prec, warm)
        thetas[key] = theta
        eta = X[at] @ theta
        f = w[at] * np.exp(eta - eta.max(axis=1, keepdims=True))
        f = f / f.sum(axis=1, keepdims=True)
        Uc = U[at]
        m = np.einsum("cq,cqa->ca", f, Uc)
        dev = Uc - m[:, None, :]
        mean[members] = m
        cov[members] = np.einsum("cq,cqa,cqb->cab", f, dev, dev)
    return DensityFit(family, mean, cov, len(groups), domain, thetas, pooled)
