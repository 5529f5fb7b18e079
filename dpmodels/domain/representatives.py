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
    inside the cell (``d`` continuous variables).  See `fit_density()`.
    With more than `DENSITY_MAX_DIM` continuous variables (or a very
    large fit) it falls back to ``"sheppard"``.

`Representer` holds the fitted within-cell distributions and places
the points of any cell of the model's domain, e.g. of a simulated replicate
release in a parametric bootstrap, the same way.

All methods are post-processing of the release (PRIVACY.md rule 6): they
read the released cell ids and counts and the public domain, epsilon,
threshold and n, never a raw row.  With no continuous variable in the
model every method returns
`marginal()` unchanged, so fits of
discrete-only formulas are untouched.  The counts stay the release's: only
the positions of the rows inside each cell change, and the weights of a
cell's points add up to its count.

How the default was chosen, with the measurements: ``docs/accuracy.md``.
"""

from __future__ import annotations

import functools
import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
from scipy.special import gammaln

from ..core.report import noise_epsilon
from .axes import Domain

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
#: Sizes, in float64 numbers: the basis tables of a whole grid are kept (see
#: _grid_tables) up to _GRID_TABLE_MAX; groups are fitted side by side while
#: the basis at their active cells stays below _BATCH_MAX (about a core's
#: cache: larger batches run slower); the censored E-step works on blocks of
#: _CENSORED_CHUNK numbers; a fit keeps what one-step fits from it start
#: with (DensityFit._start_tables) up to _START_TABLE_MAX.
_GRID_TABLE_MAX = 2**21
_BATCH_MAX = 2**19
_CENSORED_CHUNK = 2**20
_START_TABLE_MAX = 2**21


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
    `marginal()`.
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
    ``domain`` (at most `DENSITY_MAX_DIM` continuous variables and a
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
                    method: str = DEFAULT_REPRESENTATIVES) -> Representer | None:
    """The `Representer` a model over ``variables`` uses, fitted on
    ``release``; None when its cells are the plain marginal (``"midpoint"``,
    or no continuous variable among ``variables``)."""
    check_representatives(method)
    variables = list(dict.fromkeys(variables))
    dom = release.domain
    if method == "midpoint" or not any(dom.axis(v).kind == "continuous" for v in variables):
        return None
    return Representer.from_release(release, variables, method)


def cell_frame(release, variables: Sequence[str], method: str = DEFAULT_REPRESENTATIVES,
               representer: Representer | None = None) -> pd.DataFrame:
    """The frame a model over ``variables`` is fitted on: one row per
    representative point, each variable's value and the point's weight in
    the release's count column.

    For ``"midpoint"``, or when no variable is continuous, this is exactly
    ``release.marginal(variables)``.  ``representer``: the one of
    `representer_for()` if already at hand (it is fitted otherwise).

    Examples
    --------
    >>> import dpmodels as dpm
    >>> from dpmodels.domain.representatives import cell_frame
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

    `cell_frame()` uses it for the release's own cells.  It also places
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
        `from_release()` takes them from a release and the model's
        variables (as `marginal_cells()`).
    method : {"midpoint", "shift", "sheppard", "density"}
    epsilon, threshold, n
        The release's epsilon, threshold (None: signed) and public n.
    start : Representer, optional
        A representer of the same domain whose density fit starts this one's
        iterations (the bootstrap refits on replicates of one release).
    one_step : bool
        With ``start``: a one-step density fit from it (see `fit_density()`).

    Attributes
    ----------
    domain : Domain
    ids, counts : numpy.ndarray
    method : str
        The method in use ("density" falls back to "sheppard" beyond
        `DENSITY_MAX_DIM` continuous variables or a work bound, and
        every method is "midpoint" without continuous variables).
    """

    _fit: DensityFit | None  # set when method is "density"

    def __init__(self, domain: Domain, ids, counts, *, method: str = DEFAULT_REPRESENTATIVES,
                 epsilon: float = math.inf, threshold: float | None = None,
                 n: int | None = None, start: Representer | None = None,
                 one_step: bool = False):
        self._setup(domain, ids, counts, method, epsilon, threshold, n)
        if self.method == "density":
            warm = start._fit if start is not None and start.domain == domain else None
            self._fit = fit_density(domain, self.ids, self.counts, epsilon=epsilon,
                                    threshold=threshold, n=n, start=warm,
                                    one_step=one_step)

    def _setup(self, domain, ids, counts, method, epsilon, threshold, n):
        """Everything but the density fit (``_fit`` None)."""
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

    @classmethod
    def refitted(cls, start: Representer, domain: Domain, cells) -> list[Representer]:
        """``cls(domain, ids, counts, method=start.method, epsilon=start.epsilon,
        threshold=start.threshold, n=start.n, start=start, one_step=True)`` for
        every ``(ids, counts)`` of ``cells`` (e.g. the bootstrap's replicates),
        the same to the last bit, with the one-step density fits computed
        together (`fit_density_one_step_many()`)."""
        out, dense = [], []
        for ids, counts in cells:
            rep = cls.__new__(cls)
            rep._setup(domain, ids, counts, start.method, start.epsilon, start.threshold,
                       start.n)
            if rep.method == "density":
                dense.append(rep)
            out.append(rep)
        if dense:
            warm = start._fit if start.domain == domain else None
            fits = fit_density_one_step_many(
                domain, [(rep.ids, rep.counts) for rep in dense], epsilon=start.epsilon,
                threshold=start.threshold, n=start.n, start=warm)
            for rep, fit in zip(dense, fits):
                rep._fit = fit
        return out

    @classmethod
    def from_release(cls, release, variables: Sequence[str],
                     method: str = DEFAULT_REPRESENTATIVES) -> Representer:
        """Fitted on ``release`` marginalized to ``variables``."""
        marg = marginal_cells(release, variables)
        rep = release.report
        return cls(marg.domain, marg.ids, marg.counts, method=method, epsilon=noise_epsilon(rep),
                   threshold=rep.threshold, n=rep.n)

    def coarsened(self, factor: int, axes: Sequence[str]) -> Representer:
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
        """The points of the cells ``ids`` (sorted ids of `domain`) whose
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
        fit = self._fit
        assert fit is not None  # the remaining method, "density", is fitted on construction
        if ids.size == self.ids.size and np.array_equal(ids, self.ids):
            mean, cov = fit.mean, fit.cov
        else:
            mean, cov = fit.moments(ids)
        pts, share = equal_weight_points(mean, cov)
        values = {}
        for j, i in enumerate(self._cont):
            ax = dom.axes[i]
            lo, hi = ax.coord_bounds
            values[ax.name] = ax.to_values((lo + (pts[:, :, j] + 1.0) / 2.0 * (hi - lo)).reshape(-1))
        return CellPoints(dom, ids, np.repeat(one, share.size), values,
                          (w[:, None] * share[None, :]).reshape(-1), "density")

    def frame(self, ids, counts, count_column: str = "count") -> pd.DataFrame:
        """The points of `points()` as a model frame: each variable's value
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
    """`shift_offsets()` of the cells ``ids`` computed from the reference
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
    if d == 0:  # one point per cell
        return mean[:, None, :].copy(), np.ones(1)
    lam, vec = np.linalg.eigh(cov)
    s = np.sqrt(np.maximum(lam, 0.0))
    # root = V diag(s) V' and the points' offsets root s, summed over j in order
    # (elementwise: faster than the generic einsum on these small trailing axes)
    root = (vec[:, :, None, 0] * s[:, None, None, 0]) * vec[:, None, :, 0]
    for j in range(1, d):
        root = root + (vec[:, :, None, j] * s[:, None, None, j]) * vec[:, None, :, j]
    signs = np.array(list(itertools.product((-1.0, 1.0), repeat=d)))
    off = root[:, None, :, 0] * signs[None, :, None, 0]
    for j in range(1, d):
        off = off + root[:, None, :, j] * signs[None, :, None, j]
    return mean[:, None, :] + off, np.full(signs.shape[0], 1.0 / signs.shape[0])


def density_family(sizes: Sequence[int]) -> str:
    """The log-density family used for a grid of ``sizes`` bins per continuous
    axis: ``"beta"`` when every axis has at least `BETA_MIN_BINS` bins,
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

    Grid cells are also addressed by their flat position in the grid (C
    order of the continuous axes); `points_at()` and `design_at()`
    read the points and the basis of such cells off tables of the whole grid
    (built once per grid and family, see `_grid_tables()`).
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

    def codes(self, pos: np.ndarray) -> np.ndarray:
        """Grid codes (cells, d) of the flat grid positions ``pos``."""
        return np.stack(np.unravel_index(np.asarray(pos, np.int64), self.sizes), axis=1)

    def points_at(self, pos: np.ndarray) -> np.ndarray:
        """`points()` of the cells at flat grid positions ``pos``."""
        tables = _grid_tables(self.sizes, self.family)
        return tables[0][pos] if tables is not None else self.points(self.codes(pos))

    def design_at(self, pos: np.ndarray) -> np.ndarray:
        """``design(points(...))`` of the cells at flat grid positions ``pos``:
        shape (cells, Q^d, p)."""
        tables = _grid_tables(self.sizes, self.family)
        return tables[1][pos] if tables is not None else self.design(self.points(self.codes(pos)))


@functools.lru_cache(maxsize=16)
def _basis(sizes: tuple, family: str) -> _Basis:
    """The `_Basis` of a grid and family (built once; not to be modified)."""
    return _Basis(sizes, family)


@functools.lru_cache(maxsize=8)
def _grid_tables(sizes: tuple, family: str):
    """Quadrature points ``U`` (cells, Q^d, d) and basis ``X`` (cells, Q^d, p)
    of every cell of the grid, by flat position (read-only arrays); None when
    ``X`` would hold more than `_GRID_TABLE_MAX` numbers (the callers
    then compute the cells they need)."""
    basis = _basis(sizes, family)
    n_cells = math.prod(sizes)
    if n_cells * basis.qweight.size * basis.p > _GRID_TABLE_MAX:
        return None
    U = basis.points(basis.codes(np.arange(n_cells)))
    X = basis.design(U)
    U.setflags(write=False)
    X.setflags(write=False)
    return U, X


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


@functools.lru_cache(maxsize=64)
def _censored_grid(k: int, epsilon: float, stride: int, length: int):
    """The grid ``n = 0, stride, ..., (length - 1) stride`` of
    `_censored_means()`, and ``log n!`` and ``log P(Z < k - n)`` on it as
    rows (1, length); read-only."""
    nn = np.arange(0, (length - 1) * stride + 1, stride, dtype=float)
    out = (nn, gammaln(nn + 1.0)[None, :], _dl_log_cdf_below(k - nn, epsilon)[None, :])
    for a in out:
        a.setflags(write=False)
    return out


def _censored_means(mu: np.ndarray, k: int, epsilon: float, group=None, memo=None) -> np.ndarray:
    """``E[n | n + Z < k]`` for ``n ~ Poisson(mu)`` and the release's noise Z:
    the expected true count of a cell that was not released.

    The expectation is a sum over ``n = 0, s, 2 s, ..., top``: ``top`` covers
    the posterior's mode, near ``max(mu q, k)`` (``q = exp(-epsilon / 2)``),
    widely for the largest ``mu`` of the cell's ``group`` (non-negative ints,
    one per cell; default: all cells in one group), and the stride ``s``
    keeps a group's grid to about 4000 points.  Every group's means are
    those of a call with its cells alone.

    ``memo``: ``(store, keys)``, a dict the caller keeps and an int per cell
    naming its ``mu`` (the same name, the same ``mu`` at every call): a
    cell's mean is a function of its ``mu`` and its grid, and is read off
    ``store`` when it was computed before.
    """
    mu = np.asarray(mu, float)
    if mu.size == 0:
        return np.zeros(0)
    if group is None:
        group_max = np.full(mu.size, np.max(mu))
    else:
        group = np.asarray(group, np.int64)
        gmax = np.full(group.max() + 1, -np.inf)
        np.maximum.at(gmax, group, mu)
        group_max = gmax[group]
    tail = int(math.ceil(2.0 * math.log(1e8) / epsilon))
    # the posterior's mode is near max(mu q, k): cover it widely
    peak = group_max * math.exp(-epsilon / 2.0)
    if not np.all(peak < 2.0**52):  # grids beyond exact integers (or none): group by group
        out = np.empty(mu.size)
        for g in np.unique(group) if group is not None else [None]:
            cells = slice(None) if g is None else group == g
            out[cells] = _censored_means_of_group(mu[cells], k, epsilon)
        return out
    top = np.maximum(max(int(k) + tail, 1), np.ceil(peak + 10.0 * np.sqrt(peak) + 10.0))
    top = top.astype(np.int64)
    stride = np.maximum(1, top // 4000)
    length = top // stride + 1  # the cell's grid: n = j s for j < length
    out = np.empty(mu.size)
    # the cells by grid (stride, then length), in runs of one grid
    if np.all(stride == stride[0]) and np.all(length == length[0]):
        runs: list[Any] = [np.arange(mu.size)]
    else:
        order = np.lexsort((length, stride))
        runs = np.split(order, np.flatnonzero(np.diff(stride[order]) | np.diff(length[order])) + 1)
    runs = [((int(stride[run[0]]), int(length[run[0]])), run) for run in runs]
    if memo is not None:  # the means known already
        store, keys = memo
        for grid, run in runs:
            known = store.get((k, epsilon) + grid, {})
            out[run] = [known.get(key, np.nan) for key in keys[run].tolist()]
        runs = [(grid, run[np.isnan(out[run])]) for grid, run in runs]
    # runs of one stride and lengths within a factor 2 are evaluated together, on the
    # longest one's grid, in blocks of at most _CENSORED_CHUNK numbers
    pieces = [(grid, run[i:i + step]) for grid, run in runs
              for step in [max(1, _CENSORED_CHUNK // grid[1])] for i in range(0, run.size, step)]
    block, size = [], 0
    for n, (grid, run) in enumerate(pieces):
        block.append((grid, run))
        size += run.size * grid[1]
        following = pieces[n + 1][0] if n + 1 < len(pieces) else None
        if (following is None or following[0] != grid[0] or following[1] >= 2 * block[0][0][1]
                or size + pieces[n + 1][1].size * following[1] > _CENSORED_CHUNK):
            rows = np.concatenate([run for _, run in block])
            out[rows] = _censored_batch(mu[rows], [(g[1], r.size) for g, r in block], k, epsilon,
                                        grid[0])
            block, size = [], 0
    if memo is not None:
        for grid, run in runs:
            store.setdefault((k, epsilon) + grid, {}).update(zip(keys[run].tolist(),
                                                                out[run].tolist()))
    return out


def _censored_means_of_group(mu: np.ndarray, k: int, epsilon: float) -> np.ndarray:
    """`_censored_means()` of one group's cells, in Python integers (any
    ``mu``; the grid of a ``mu`` beyond 2**52 has no exact float ``top``)."""
    tail = int(math.ceil(2.0 * math.log(1e8) / epsilon))
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


def _censored_batch(mu, runs, k: int, epsilon: float, stride: int) -> np.ndarray:
    """`_censored_means()` of cells whose grids have the stride ``stride``
    and, run by run, the lengths of ``runs`` (``(length, cells)`` pairs,
    increasing lengths): each cell's terms beyond its own grid set to 0 and
    its sums taken over its own grid."""
    nn, log_prior, log_below = _censored_grid(k, epsilon, stride, runs[-1][0])
    m = np.maximum(mu, 1e-300)[:, None]
    logp = nn[None, :] * np.log(m)  # - m - log_prior + log_below, in place
    logp -= m
    logp -= log_prior
    logp += log_below
    ends = np.cumsum([size for _, size in runs]).tolist()
    for (n_len, size), end in zip(runs, ends):
        logp[end - size:end, n_len:] = -np.inf
    logp -= logp.max(axis=1, keepdims=True)
    p = np.exp(logp, out=logp)
    pn = p * nn[None, :]
    out = np.empty(mu.size)
    for (n_len, size), end in zip(runs, ends):
        out[end - size:end] = pn[end - size:end, :n_len].sum(axis=1) / p[end - size:end, :n_len].sum(axis=1)
    return out


# ---- the log-linear fit, for several groups at once --------------------------------------
#
# Every group's density is fitted on its own active cells (its listed cells and
# the neighbours of its released ones).  The fits are independent, and run
# side by side: the active cells of all groups are concatenated group by group
# (a _Cells), per-cell quantities are computed for all of them in one go, and
# every group keeps its own step length and its own stopping rule.  The sums
# over a group's cells are taken over that group's slice alone, in the order a
# fit of the group by itself takes them: the fits' stopping rules act on
# differences near rounding level, and a group's fit does not depend, to the
# last bit, on which groups it is fitted with.


@dataclass(frozen=True)
class _Cells:
    """The active cells of several groups, concatenated group by group.

    ``pos``: each cell's flat grid position (sorted within its group);
    ``seg``: its group (0, 1, ..., non-decreasing); ``starts``: the first
    cell of every group, and the number of cells; ``X``: the basis at the
    quadrature points (cells, Q, p); ``w``: the quadrature weights (Q,).
    Every group has at least one cell.
    """

    pos: np.ndarray
    seg: np.ndarray
    starts: np.ndarray
    X: np.ndarray
    w: np.ndarray

    @classmethod
    def build(cls, basis: _Basis, pos: np.ndarray, starts: np.ndarray) -> _Cells:
        sizes = np.diff(starts)
        return cls(pos, np.repeat(np.arange(sizes.size), sizes), starts,
                   basis.design_at(pos), basis.qweight)

    @property
    def groups(self) -> int:
        return self.starts.size - 1

    @property
    def bounds(self) -> list[tuple[int, int]]:
        """First and past-the-last cell of every group."""
        return list(zip(self.starts[:-1].tolist(), self.starts[1:].tolist()))

    def sums(self, a: np.ndarray) -> np.ndarray:
        """Per-group sums of ``a`` (cells, ...) over the group's cells: (groups, ...)."""
        if self.groups == 1:
            return a.sum(axis=0)[None]
        return np.array([a[lo:hi].sum(axis=0) for lo, hi in self.bounds])

    def take(self, groups: np.ndarray) -> tuple[_Cells, np.ndarray]:
        """The cells of ``groups`` (increasing indices), and their positions here."""
        lo, hi = self.starts[groups], self.starts[groups + 1]
        starts = np.concatenate([[0], np.cumsum(hi - lo)])
        at = np.repeat(lo - starts[:-1], hi - lo) + np.arange(starts[-1])
        return (_Cells(self.pos[at], np.repeat(np.arange(groups.size), hi - lo), starts,
                       self.X[at], self.w), at)

    def predict(self, theta: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The log-density ``eta = x_q' theta_g`` at every cell's quadrature
        points and the point masses ``w_q exp(eta)`` (both (cells, Q));
        ``theta``: (groups, p)."""
        eta = (self.X @ theta[self.seg][:, :, None])[..., 0]
        f = np.minimum(eta, 700.0)
        np.exp(f, out=f)
        f *= self.w
        return eta, f


def _solve(info: np.ndarray, grad: np.ndarray) -> np.ndarray:
    """``info[g]^-1 grad[g]`` for every group g."""
    try:
        return np.linalg.solve(info, grad[:, :, None])[:, :, 0]
    except np.linalg.LinAlgError:  # pragma: no cover - the ridge keeps it regular
        out = np.empty_like(grad)
        for g in range(grad.shape[0]):
            try:
                out[g] = np.linalg.solve(info[g], grad[g])
            except np.linalg.LinAlgError:
                out[g] = np.linalg.lstsq(info[g], grad[g], rcond=None)[0]
        return out


def _poisson_fit(y, cells: _Cells, theta, prior_mean, prec, iters=_NEWTON_ITER, at_start=None,
                 fit=None):
    """Penalized Poisson maximum likelihood of the log-linear intensity, for
    every group of ``cells`` separately.

    Cell c of group g has expected count ``mu_c = sum_q w_q exp(X_cq theta_g)``;
    maximizes ``sum_{c in g} y_c log mu_c - mu_c - 1/2 sum_j prec_j (theta_gj -
    prior_mean_gj)^2`` by Fisher scoring with step halving, starting at
    ``theta_g`` (``theta``, ``prior_mean``: (groups, p)).  Each group halves
    its own step until its own objective does not decrease, and stops on its
    own (after ``iters`` steps, a failed step, or a step below 1e-8).

    Returns the fitted ``theta`` and ``cells.predict`` at it.  ``at_start``:
    ``cells.predict(theta)`` if at hand, possibly with a third element, the
    derivative ``d mu / d theta`` of every cell (cells, p).  ``fit``: the
    groups to fit (a mask; default all), the others keep their ``theta``.
    """
    theta = np.array(theta, float)
    prior_mean = np.asarray(prior_mean, float)
    ridge, jitter = np.diag(prec), 1e-9 * np.eye(theta.shape[1])

    def objective(part, yp, th, prior, pred=None):
        eta, f = part.predict(th) if pred is None else pred
        mu = f.sum(axis=1)
        ll = np.where(yp > 0, yp * np.log(np.maximum(mu, 1e-300)), 0.0) - mu
        return part.sums(ll) - 0.5 * np.sum(prec * (th - prior) ** 2, axis=1), eta, f

    # The groups in play (grp, in cells), their cells (sub; idx: where in cells), and
    # which of them still iterate (live).  Stopped groups stay in play, their
    # results unused, until they hold half of the cells: then the rest moves to a
    # smaller sub (copying a group's basis costs about as much as computing it).
    grp, sub, ys, idx = np.arange(cells.groups), cells, y, np.arange(y.size)
    live = np.ones(cells.groups, bool) if fit is None else np.array(fit, bool)
    obj, eta, f = objective(sub, ys, theta, prior_mean, None if at_start is None else at_start[:2])
    A = None if at_start is None or len(at_start) < 3 else at_start[2]
    # the groups' results once they leave play
    eta_out: np.ndarray | None = None
    f_out: np.ndarray | None = None

    for _ in range(iters):
        if not live.any():
            break
        th, prior = theta[grp], prior_mean[grp]
        mu = np.maximum(f.sum(axis=1), 1e-300)
        if A is None:
            A = np.einsum("cq,cqp->cp", f, sub.X)  # d mu / d theta
        grad = sub.sums((ys / mu - 1.0)[:, None] * A) - prec * (th - prior)
        B = A / mu[:, None]
        if sub.groups == 1:
            info = (B.T @ A)[None] + ridge + jitter
        else:
            info = np.array([B[lo:hi].T @ A[lo:hi] for lo, hi in sub.bounds]) + ridge + jitter
        step = _solve(info, grad)
        A = None
        # step halving, every group on its own
        t = np.ones(grp.size)
        new, eta_new, f_new = obj.copy(), np.empty_like(eta), np.empty_like(f)
        todo = np.flatnonzero(live)
        while True:
            if todo.size == grp.size:
                cand = th + t[:, None] * step
            else:
                cand = th.copy()
                cand[todo] += t[todo, None] * step[todo]
            part, at = _part(sub, todo)
            if part is sub:  # all groups computed, todo's kept
                o, e, ff = objective(sub, ys, cand, prior)
                new[todo] = o[todo]
                if isinstance(at, slice):
                    eta_new, f_new = e, ff
                else:
                    eta_new[at], f_new[at] = e[at], ff[at]
            else:
                new[todo], eta_new[at], f_new[at] = objective(part, ys[at], cand[todo],
                                                              prior[todo])
            done = (new[todo] >= obj[todo] - 1e-12 * np.abs(obj[todo])) | (t[todo] < 1e-6)
            if done.all():
                break
            todo = todo[~done]
            t[todo] /= 2.0
        moved = live & ~(new < obj)  # a group whose objective went down stops where it was
        theta[grp[moved]] = th[moved] + t[moved, None] * step[moved]
        obj = np.where(moved, new, obj)
        cell_moved = moved[sub.seg]
        if cell_moved.all():
            eta, f = eta_new, f_new
        else:
            eta = np.where(cell_moved[:, None], eta_new, eta)
            f = np.where(cell_moved[:, None], f_new, f)
        live = moved & ~(np.max(np.abs(t[:, None] * step), axis=1) < 1e-8)
        if live.any() and 2 * np.count_nonzero(live[sub.seg]) < ys.size:
            if eta_out is None or f_out is None:  # (None together)
                eta_out, f_out = np.empty_like(eta), np.empty_like(f)
            eta_out[idx], f_out[idx] = eta, f
            keep = np.flatnonzero(live)
            sub, at = sub.take(keep)
            grp, ys, idx, eta, f, obj = grp[keep], ys[at], idx[at], eta[at], f[at], obj[keep]
            live = live[keep]
    if eta_out is None or f_out is None:  # (None together)
        return theta, (eta, f)
    eta_out[idx], f_out[idx] = eta, f
    return theta, (eta_out, f_out)


def _part(cells: _Cells, groups: np.ndarray):
    """The cells to compute ``groups`` on: all of ``cells`` (and a mask of the
    groups' cells) while they hold at least half of them, else a copy of
    theirs (and where those are in ``cells``)."""
    if groups.size == cells.groups:
        return cells, slice(None)
    mine = np.zeros(cells.groups, bool)
    mine[groups] = True
    mask = mine[cells.seg]
    if 2 * np.count_nonzero(mask) >= mask.size:
        return cells, mask
    return cells.take(groups)


def _fit_censored(obs, released, cells: _Cells, k, epsilon, theta, prior_mean, prec, warm=False,
                  at_start=None, memo=None):
    """The log-linear fit of every group of ``cells`` when cells that were
    not released are censored observations (noisy count below ``k``): EM,
    whose E-step sets their count to ``E[n | n + Z < k]`` under the current
    fit.  ``warm``: ``theta`` is a fit already (the first E-step uses it).
    ``at_start``: as in `_poisson_fit()`; ``memo``: ``(store, keys)`` for
    the first E-step (see `_censored_means()`; a key per cell).  Returns
    the fitted ``theta`` (groups, p) and ``cells.predict`` at it."""
    y = np.where(released, np.maximum(obs, 0.0), 0.0).astype(float)
    censored = ~released
    theta = np.array(theta, float)
    prior_mean = np.asarray(prior_mean, float)
    if k is None:
        em = np.zeros(cells.groups, bool)
    else:
        em = np.logical_or.reduceat(censored, cells.starts[:-1])

    def plain_fit(part, at, th, prior):  # no censored cell: a plain Poisson fit
        return _poisson_fit(y[at], part, th, prior, prec,
                            iters=1 if warm == "one-step" else _NEWTON_ITER,
                            at_start=_rows(at_start, at))

    def em_fit(part, at, th, prior):
        return _em_fit(y[at], censored[at], part, k, epsilon, th, prior, prec, warm,
                       _rows(at_start, at), None if memo is None else (memo[0], memo[1][at]))

    if em.all() or not em.any():
        fit = em_fit if em.all() else plain_fit
        return fit(cells, slice(None), theta, prior_mean)
    eta = np.empty((cells.X.shape[0], cells.X.shape[1]))
    f = np.empty_like(eta)
    for fit, groups in ((plain_fit, np.flatnonzero(~em)), (em_fit, np.flatnonzero(em))):
        part, at = cells.take(groups)
        theta[groups], (eta[at], f[at]) = fit(part, at, theta[groups], prior_mean[groups])
    return theta, (eta, f)


def _rows(arrays, at):
    """``arrays`` (a tuple, or None) at the rows ``at``."""
    if arrays is None or isinstance(at, slice):
        return arrays
    return tuple(a[at] for a in arrays)


def _em_fit(y, censored, cells: _Cells, k, epsilon, theta, prior_mean, prec, warm,
            at_start=None, memo=None):
    """`_fit_censored()` of groups that all have censored cells (``y``: the
    released counts, 0 elsewhere)."""
    y = np.array(y, float)

    def e_step(part, yp, cens, f, memo=None):  # in place on yp
        yp[cens] = _censored_means(f.sum(axis=1)[cens], k, epsilon, part.seg[cens],
                                   None if memo is None else (memo[0], memo[1][cens]))

    if warm:
        pred = cells.predict(theta) if at_start is None else at_start
        e_step(cells, y, censored, pred[1], memo)
        if warm == "one-step":
            return _poisson_fit(y, cells, theta, prior_mean, prec, iters=1, at_start=pred)
    else:
        y[censored] = k / 4.0
        pred = None
    theta = np.array(theta, float)
    # The groups in play (grp), their cells (part; at: where in cells), which of them
    # still iterate (live), and the prediction at the groups' current theta; as in
    # _poisson_fit, stopped groups leave play when they hold half of the cells.
    grp, part, at = np.arange(cells.groups), cells, np.arange(y.size)
    live = np.ones(cells.groups, bool)
    eta_all: np.ndarray | None = None
    f_all: np.ndarray | None = None
    for _ in range(_EM_ITER):
        theta[grp], pred = _poisson_fit(y[at], part, theta[grp], prior_mean[grp], prec,
                                        iters=2, at_start=pred, fit=live)
        before = y[at]
        yp = before.copy()
        e_step(part, yp, censored[at] & live[part.seg], pred[1])
        y[at] = yp
        change = np.maximum.reduceat(np.abs(yp - before), part.starts[:-1])
        live &= ~(change < 1e-3 * max(1.0, k))
        if not live.any():
            break
        if 2 * np.count_nonzero(live[part.seg]) < at.size:
            if eta_all is None or f_all is None:  # (None together)
                eta_all, f_all = np.empty_like(pred[0]), np.empty_like(pred[1])
            eta_all[at], f_all[at] = pred
            keep = np.flatnonzero(live)
            part, sel = part.take(keep)
            grp, at, live = grp[keep], at[sel], live[keep]
            pred = (pred[0][sel], pred[1][sel])
    if eta_all is not None and f_all is not None:  # (None together)
        assert pred is not None  # every EM iteration (at least one) predicts
        eta_all[at], f_all[at] = pred
        pred = (eta_all, f_all)
    return _poisson_fit(y, cells, theta, prior_mean, prec, at_start=pred)


def _active_cells(sizes, group, n_groups, pos, released, values):
    """The cells every group is fitted on: its listed cells and, one bin away
    along each continuous axis (inside the grid), the neighbours of its
    released cells (of all its listed cells if none was released).

    ``group`` (0 .. n_groups - 1), ``pos`` (flat grid position), ``released``
    and ``values`` describe the listed cells.  Returns the active cells' flat
    positions, sorted by group and position, the first cell of every group
    (and their number), each listed cell's place among them, their observed
    counts (the released values, summed over listed cells sharing a place)
    and whether they hold a released count.
    """
    n_grid = math.prod(sizes)
    key = group.astype(np.int64) * n_grid + pos
    any_released = np.zeros(n_groups, bool)
    any_released[group[released]] = True
    seed = key[released | ~any_released[group]]
    seed_codes = np.unravel_index(seed % n_grid, sizes)
    parts = [key, seed]
    for a, stride in enumerate(np.cumprod((1,) + tuple(sizes[:0:-1]))[::-1]):
        parts.append(seed[seed_codes[a] > 0] - stride)
        parts.append(seed[seed_codes[a] < sizes[a] - 1] + stride)
    active = _sorted_unique(np.concatenate(parts), n_groups * n_grid)
    at = np.searchsorted(active, key)
    starts = np.searchsorted(active, np.arange(n_groups + 1, dtype=np.int64) * n_grid)
    obs = np.bincount(at[released], weights=values[released], minlength=active.size)
    rmask = np.zeros(active.size, bool)
    rmask[at[released]] = True
    return active % n_grid, starts, at, obs, rmask


def _sorted_unique(keys: np.ndarray, space: int) -> np.ndarray:
    """``np.unique(keys)`` for keys in ``[0, space)`` (by a mask when the
    space is small)."""
    if space > 16 * keys.size + 4096:
        return np.unique(keys)
    mask = np.zeros(space, bool)
    mask[keys] = True
    return np.flatnonzero(mask)


def _from_start(tables, row, pos):
    """What the fit of cells at grid positions ``pos`` starts with, read off a
    start's tables (`DensityFit._start_tables`; ``row``: the cells'
    rows in them): ``(eta, f, A)`` at the cells, and the E-step's memo
    ``(store, keys)``.  ``(None, None)`` without tables."""
    if tables is None:
        return None, None
    n_grid = tables[1].shape[1]
    return tuple(a[row, pos] for a in tables[1:4]), (tables[4], row * n_grid + pos)


def _batches(starts: np.ndarray, per_cell: int) -> list[np.ndarray]:
    """Consecutive groups fitted together: at most `_BATCH_MAX` numbers
    in the basis of their active cells (a group beyond it alone)."""
    out, first = [], 0
    for g in range(1, starts.size):
        if g - 1 > first and (starts[g] - starts[first]) * per_cell > _BATCH_MAX:
            out.append(np.arange(first, g - 1))
            first = g - 1
    out.append(np.arange(first, starts.size - 1))
    return out


@dataclass(frozen=True)
class DensityFit:
    """The fitted density of every group, and its moments inside each listed cell.

    Attributes
    ----------
    family : str
        "quad" or "beta" (see `density_family()`).
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
    domain: Domain | None = field(repr=False, default=None)
    thetas: dict = field(repr=False, default_factory=dict)
    pooled: np.ndarray | None = field(repr=False, default=None)

    def moments(self, ids) -> tuple[np.ndarray, np.ndarray]:
        """Within-cell mean and covariance of any cells ``ids`` of the domain
        under the fitted densities (a group that had no released cell gets
        the pooled fit)."""
        ids = np.asarray(ids, dtype=np.uint64)
        domain, pooled = self.domain, self.pooled
        if domain is None or pooled is None:
            raise ValueError("this DensityFit was made without its domain or pooled fit")
        codes = domain.decode(ids)
        cont, sizes, gkey = _layout(domain, codes)
        basis = _basis(tuple(sizes), self.family)
        if ids.size == 0:
            return np.zeros((0, basis.d)), np.zeros((0, basis.d, basis.d))
        keys, inv = np.unique(gkey, return_inverse=True)
        theta = np.stack([self.thetas.get(int(key), pooled) for key in keys])
        pos = np.ravel_multi_index(tuple(codes[i] for i in cont), sizes)
        return _cell_moments(basis, pos, theta[inv])

    @functools.cached_property
    def _start_tables(self):
        """Where a one-step fit from this one starts, at every cell of the grid:
        ``(row, eta, f, A, memo)`` with ``eta`` and ``f`` the log-density and
        point masses (`_Cells.predict()`) and ``A`` their derivative in
        theta, shapes (rows, cells, Q), (rows, cells, Q), (rows, cells, p), of
        the pooled fit (row 0) and of the group of key ``g`` (``row[g]``), and
        the censored means computed from them so far (``row * cells + cell``
        names a ``mu``; see `_censored_means()`).  The bootstrap's
        replicates read these off instead of computing them again.  None when
        the grid's basis is not tabulated or they would be too large.
        """
        if self.domain is None:
            return None
        sizes = tuple(a.size for a in self.domain.axes if a.kind == "continuous")
        tables = _grid_tables(sizes, self.family)
        keys = sorted(self.thetas)
        if tables is None:
            return None
        X, w = tables[1], _basis(sizes, self.family).qweight
        n_cells, q, p = X.shape
        if (len(keys) + 1) * n_cells * (2 * q + p) > _START_TABLE_MAX:
            return None
        eta = np.stack([X @ th for th in [self.pooled] + [self.thetas[g] for g in keys]])
        f = w * np.exp(np.minimum(eta, 700.0))
        A = np.stack([np.einsum("cq,cqp->cp", fr, X) for fr in f])
        return {g: i + 1 for i, g in enumerate(keys)}, eta, f, A, {}

    def __getstate__(self):  # the one-step tables are a cache: not pickled
        state = dict(self.__dict__)
        state.pop("_start_tables", None)
        return state


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


def _cell_moments(basis: _Basis, pos: np.ndarray, theta: np.ndarray, eta=None):
    """Mean and covariance inside the cells at flat grid positions ``pos`` of
    the densities ``exp(basis' theta_c)`` (``theta``: one row per cell;
    ``eta``: the log-densities at the cells' quadrature points, if at hand)."""
    if eta is None:
        eta = (basis.design_at(pos) @ theta[:, :, None])[..., 0]
    # in place: fresh large arrays cost page faults
    f = np.subtract(eta, eta.max(axis=1, keepdims=True))
    np.exp(f, out=f)
    f *= basis.qweight
    f /= f.sum(axis=1, keepdims=True)
    U = basis.points_at(pos)
    mean = np.einsum("cq,cqa->ca", f, U)
    # the covariance sum_q f_cq dev_cqa dev_cqb, summed over q in order (as
    # np.einsum("cq,cqa,cqb->cab", ...) does), on (Q, cells) slices
    fT = np.ascontiguousarray(f.T)
    devT = np.ascontiguousarray(U.transpose(2, 1, 0)) - mean.T[:, None, :]  # (d, Q, cells)
    d = devT.shape[0]
    cov = np.empty((pos.size, d, d))
    for a in range(d):
        fa = fT * devT[a]
        for b in range(d):
            cov[:, a, b] = (fa * devT[b]).sum(axis=0)
    return mean, cov


def _censoring_threshold(epsilon: float, threshold: float | None, n: int | None) -> int | None:
    """The count below which a cell was not released, for the density fit's
    censoring: None without noise; a signed release is treated as thresholded
    at Lei's enhanced threshold ``0.5 log(n) / epsilon``."""
    if not math.isfinite(epsilon):
        return None
    if threshold is not None:
        return max(int(math.ceil(threshold)), 1)
    return max(int(math.ceil(0.5 * math.log(max(n or 2, 2)) / epsilon)), 1)


def _one_step_tables(start: DensityFit | None, sizes, family):
    """The start fit's grid tables when a one-step fit on ``sizes`` can read its
    first steps off them (same family and continuous grid); else None."""
    if (start is None or not sizes or start.family != family or start.domain is None
            or tuple(sizes) != tuple(a.size for a in start.domain.axes
                                     if a.kind == "continuous")):
        return None
    return start._start_tables


def _fit_side_by_side(basis, apos, starts, obs, rmask, k, epsilon, theta, prior, prec, warm,
                      tables, row):
    """`_fit_censored()` of every group (``starts``: their slices of the
    active cells ``apos``) in batches that bound the basis's memory; returns
    the fitted ``theta`` (groups, p) and the log-densities (cells, Q)."""
    eta = np.empty((apos.size, basis.qweight.size))
    for b in _batches(starts, basis.qweight.size * basis.p):
        lo, hi = starts[b[0]], starts[b[-1] + 1]
        cells = _Cells.build(basis, apos[lo:hi], starts[b[0]:b[-1] + 2] - lo)
        rows = row if row is None or np.isscalar(row) else row[lo:hi]
        at_start, memo = _from_start(tables, rows, apos[lo:hi])
        theta[b], (eta[lo:hi], _) = _fit_censored(obs[lo:hi], rmask[lo:hi], cells, k, epsilon,
                                                  theta[b], prior[b], prec, warm, at_start,
                                                  memo)
    return theta, eta


def fit_density(domain: Domain, ids, counts, *, epsilon: float = math.inf,
                threshold: float | None = None, n: int | None = None,
                start: DensityFit | None = None, one_step: bool = False) -> DensityFit:
    """Fit the ``"density"`` representatives' model to a release.

    The model.  Within each group (a combination of the discrete variables'
    levels) the rows' continuous variables have a density whose log is a
    linear combination of a few functions of ``u`` (each variable mapped
    from its public bounds to [-1, 1]): 1, every ``u_a`` and every product
    ``u_a u_b`` -- a multivariate normal truncated to the box -- and, on grids
    of at least `BETA_MIN_BINS` bins per axis, ``log(1 + u_a)`` and
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
        As in `cell_points()`.
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
    basis = _basis(tuple(sizes), family)
    p = basis.p
    k = _censoring_threshold(epsilon, threshold, n)
    released = counts >= k if k is not None else counts > 0
    positive = np.maximum(counts, 0.0)
    cpos = np.ravel_multi_index(tuple(codes[i] for i in cont), sizes).astype(np.int64)
    warm = (("one-step" if one_step else True) if start is not None and start.family == family
            else False)
    # a one-step fit on the start's grid reads its first steps off the start
    tables = _one_step_tables(start, sizes, family) if warm == "one-step" else None

    # pooled over the groups: the prior of each group fit
    apos, starts, _, obs, rmask = _active_cells(sizes, np.zeros(ids.size, np.int64), 1, cpos,
                                                released, positive)
    theta0 = np.zeros(p)
    theta0[0] = math.log(max(obs.sum(), 1.0) / max(obs.size, 1))
    prec = basis.ridge + _POOLED_PRIOR
    prec[0] = 0.0
    if warm:
        assert start is not None and start.pooled is not None  # warm: a start of this family
        theta0 = start.pooled.copy()
    at_start, memo = _from_start(tables, 0, apos)
    pooled = _fit_censored(obs, rmask, _Cells.build(basis, apos, starts), k, epsilon,
                           theta0[None, :], np.zeros((1, p)), prec, warm, at_start, memo)[0][0]
    total = max(obs.sum(), 1.0)

    # the groups (ascending keys), fitted side by side
    keys, group = np.unique(gkey, return_inverse=True)
    apos, starts, at, obs, rmask = _active_cells(sizes, group, keys.size, cpos, released,
                                                 positive)
    prec = basis.ridge + _GROUP_PRIOR
    prec[0] = 0.0
    theta = np.tile(pooled, (keys.size, 1))
    for g, key in enumerate(keys.tolist()):
        if warm and start is not None and key in start.thetas:
            theta[g] = start.thetas[key]
        else:
            theta[g, 0] += math.log(max(obs[starts[g]:starts[g + 1]].sum(), 1.0) / total)
    prior = np.tile(pooled, (keys.size, 1))
    if (tables is not None and start is not None
            and not all(key in start.thetas for key in keys.tolist())):
        tables = None  # (a group the start has not fitted)
    row = None if tables is None else np.repeat([tables[0][key] for key in keys.tolist()],
                                                np.diff(starts))
    theta, eta = _fit_side_by_side(basis, apos, starts, obs, rmask, k, epsilon, theta, prior,
                                   prec, warm, tables, row)
    thetas = {key: theta[g].copy() for g, key in enumerate(keys.tolist())}
    mean, cov = _cell_moments(basis, cpos, theta[group], eta[at])
    return DensityFit(family, mean, cov, keys.size, domain, thetas, pooled)


def fit_density_one_step_many(domain: Domain, cells, *, epsilon: float = math.inf,
                              threshold: float | None = None, n: int | None = None,
                              start: DensityFit | None = None) -> list[DensityFit]:
    """`fit_density()` ``(domain, ids, counts, ..., start=start,
    one_step=True)`` of every ``(ids, counts)`` of ``cells`` (the bootstrap's
    replicates of one release), computed together: the replicates' pooled
    fits are the groups of one side-by-side fit, and their (replicate, group)
    pairs those of another.  Every fit is the one `fit_density()` returns,
    to the last bit (a group's fit does not depend on which groups it is
    fitted with); a replicate the batch does not cover (no start tables, a
    group the start has not fitted, no cell) is fitted by `fit_density()`.
    """
    cells = [(np.asarray(ids, dtype=np.uint64), np.asarray(counts, float)) for ids, counts in cells]
    out: list = [None] * len(cells)

    def single(r):
        return fit_density(domain, cells[r][0], cells[r][1], epsilon=epsilon,
                           threshold=threshold, n=n, start=start, one_step=True)

    cont = [i for i, a in enumerate(domain.axes) if a.kind == "continuous"]
    sizes = [domain.axes[i].size for i in cont]
    family = density_family(sizes) if sizes else None
    tables = _one_step_tables(start, sizes, family)
    k = _censoring_threshold(epsilon, threshold, n)
    if tables is not None and k is not None:
        # the E-step's grids of means beyond 2**52 go group by group (see
        # _censored_means): such fits are not batched
        top = float(np.max(tables[2].sum(axis=2))) * math.exp(-epsilon / 2.0)
        if not top < 2.0**51:
            tables = None
    if tables is None:
        return [single(r) for r in range(len(cells))]
    # _one_step_tables found tables: a start fitted on this continuous grid
    assert start is not None and start.pooled is not None and family is not None

    basis = _basis(tuple(sizes), family)
    p = basis.p
    batch, per = [], []  # the batched replicates, and what each brings
    for r, (ids, counts) in enumerate(cells):
        if ids.size == 0:
            out[r] = single(r)
            continue
        codes = domain.decode(ids)
        _, _, gkey = _layout(domain, codes)
        keys, group = np.unique(gkey, return_inverse=True)
        if not all(key in start.thetas for key in keys.tolist()):
            out[r] = single(r)
            continue
        released = counts >= k if k is not None else counts > 0
        cpos = np.ravel_multi_index(tuple(codes[i] for i in cont), sizes).astype(np.int64)
        batch.append(r)
        per.append((keys, group.astype(np.int64), cpos, released, np.maximum(counts, 0.0)))
    if not batch:
        return out
    R = len(batch)
    cpos = np.concatenate([x[2] for x in per])
    released = np.concatenate([x[3] for x in per])
    positive = np.concatenate([x[4] for x in per])
    listed = np.array([x[2].size for x in per])

    # the pooled fits: one group per replicate
    rep_of = np.repeat(np.arange(R), listed)
    apos, starts, _, obs, rmask = _active_cells(sizes, rep_of, R, cpos, released, positive)
    prec = basis.ridge + _POOLED_PRIOR
    prec[0] = 0.0
    pooled, _ = _fit_side_by_side(basis, apos, starts, obs, rmask, k, epsilon,
                                  np.tile(start.pooled, (R, 1)), np.zeros((R, p)), prec,
                                  "one-step", tables, 0)

    # the groups of every replicate, side by side
    first = np.concatenate([[0], np.cumsum([x[0].size for x in per])])
    pair = np.concatenate([x[1] + first[i] for i, x in enumerate(per)])
    keys = np.concatenate([x[0] for x in per])
    apos, starts, at, obs, rmask = _active_cells(sizes, pair, keys.size, cpos, released,
                                                 positive)
    prec = basis.ridge + _GROUP_PRIOR
    prec[0] = 0.0
    theta = np.stack([start.thetas[key] for key in keys.tolist()])
    prior = pooled[np.repeat(np.arange(R), np.diff(first))]
    row = np.repeat([tables[0][key] for key in keys.tolist()], np.diff(starts))
    theta, eta = _fit_side_by_side(basis, apos, starts, obs, rmask, k, epsilon, theta, prior,
                                   prec, "one-step", tables, row)
    cfirst = np.concatenate([[0], np.cumsum(listed)])
    for i, r in enumerate(batch):
        g0, g1, c0, c1 = first[i], first[i + 1], cfirst[i], cfirst[i + 1]
        thetas = {key: theta[g0 + g].copy() for g, key in enumerate(per[i][0].tolist())}
        mean, cov = _cell_moments(basis, cpos[c0:c1], theta[pair[c0:c1]], eta[at[c0:c1]])
        out[r] = DensityFit(family, mean, cov, int(g1 - g0), domain, thetas,
                            pooled[i].copy())
    return out
