"""The parametric bootstrap of a histogram release: replicate releases
(`dpmodels.mechanisms.simulation`) placed on the model's cells
(`CellDesign`), refitted by the model's batched refit, and summarized
as a `DPInference`.  See
`dpmodels.inference` for the method."""

from __future__ import annotations

import time
import warnings
from collections.abc import Callable, Sequence
from typing import Any, Literal

import numpy as np
import pandas as pd
from scipy import sparse

from ..core.noise import make_rng
from ..domain.axes import Domain, whole_number_bins
from ..mechanisms.histogram import PrivateHistogram
from ..mechanisms.simulation import ReleaseSimulator
from .intervals import DEFAULT_INTERVAL, INTERVALS, BinningCheck, DPInference

__all__ = ["DEFAULT_N_BOOT", "DEFAULT_N_REFIT", "CellDesign", "parametric_bootstrap"]

#: Replicates on which the representatives are refitted (see
#: `parametric_bootstrap()`); the others are extended from them.
DEFAULT_N_REFIT = 50

#: Default number of bootstrap replicates: the Monte Carlo error of the
#: standard error is about 1/sqrt(2B) = 5% of it, and of the bias estimate
#: 1/sqrt(B) = 7% of the standard error (docs/inference-methods.md).
DEFAULT_N_BOOT = 200


class CellDesign:
    """Design rows (``X``, ``y``) of the model's marginal cells, built on
    demand for the cells replicate releases produce.

    A cell stands for its rows through one or more *points* (see
    `dpmodels.domain.representatives`): one at the bin midpoints, or the
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
        frame of points of the marginal (as `PrivateHistogram.marginal()`
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
        self._frames: list[pd.DataFrame] = []  # the points' frames, in point order
        self._stored: pd.DataFrame | None = None  # their concatenation
        self._slopes: list | Literal[False] | None = None  # per frame, see _design_slopes

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
            self._frames.append(frame)
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

    def _points(self) -> tuple[np.ndarray, np.ndarray]:
        """``(X, y)`` of the stored points (`rows()` stores them)."""
        if self.X is None or self.y is None:
            raise TypeError("the design holds no points yet: rows() adds the cells' points")
        return self.X, self.y

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
        X, y = self._points()
        return X[pts], y[pts], W[owner] * self.point_share[pts][:, None]

    def _design_slopes(self) -> list[np.ndarray] | None:
        """Where the design is affine in the continuous variables across every
        point's cell, the slopes ``d[y, X] / d x_k`` at each point (one
        ``(points, 1 + p)`` array per continuous axis of the marginal); else
        None.

        Within its cell, a point's design row is then the stored row plus
        ``sum_k slope_k (x_k - x_k_stored)`` exactly (up to rounding): a
        replicate's refitted points need no new design build.  Checked, not
        assumed (`_slopes_of()`): the design is built at each cell's centre
        with one variable at a time moved to the cell's edges, and every stored
        point's row must equal the centre's row plus those slopes times its
        offsets (an interaction between two variables fails at the points).
        ``price ~ size + C(county)`` or ``standardize(x)`` pass; ``log(x)``,
        ``x1:x2`` or a spline do not (the replicates' designs are built).
        Points added later (cells new to the design) are checked as they come.
        """
        if self._slopes is False:
            return None
        cont = [i for i, a in enumerate(self.sub.axes) if a.kind == "continuous"]
        if not cont or self.X is None:
            return None
        parts = self._slopes or []
        done = sum(len(f) for f in self._frames[:len(parts)])
        for frame in self._frames[len(parts):]:
            part = self._slopes_of(frame, cont, slice(done, done + len(frame)))
            if part is None:
                self._slopes = False
                return None
            parts.append(part)
            done += len(frame)
        self._slopes = parts
        return [np.concatenate([part[k] for part in parts]) for k in range(len(cont))]

    def _slopes_of(self, frame: pd.DataFrame, cont: list[int], at: slice):
        """`_design_slopes()` of the stored points ``at`` (their frame ``frame``).

        Built per cell, not per point: each cell's design at its centre with
        one variable at a time moved to the cell's lower and upper edges (one
        build of ``2 d`` rows per cell).  The design is affine across the cell
        when every stored point's row equals the centre's row plus the edge
        slopes times the point's offsets from the centre; a point's slopes are
        its cell's."""
        X, y = self._points()
        base = np.column_stack([y[at], X[at]])
        tol = 1e-9 * (np.abs(base).max(axis=0) + 1.0)
        cell = self.point_cell[at]
        first = np.flatnonzero(np.r_[True, cell[1:] != cell[:-1]])  # each cell's first point
        owner = np.cumsum(np.r_[False, cell[1:] != cell[:-1]])  # each point's cell, 0-based
        codes = self.sub.decode(self.cell_ids[cell[first]])
        centre = frame.iloc[first].reset_index(drop=True)
        edges = {}
        for i in cont:
            ax = self.sub.axes[i]
            lo = ax.to_values(ax.edges[codes[i]])
            hi = ax.to_values(ax.edges[codes[i] + 1])
            edges[ax.name] = (lo, hi)
            centre[ax.name] = (lo + hi) / 2.0
        moved = [centre.assign(**{name: e}) for name, pair in edges.items() for e in pair]
        with np.errstate(all="ignore"), warnings.catch_warnings():
            # at an edge a transform may be undefined (log 0): the check fails, silently
            warnings.simplefilter("ignore")
            X, y, valid = self._build(pd.concat(moved, ignore_index=True))
            rows = np.column_stack([y, X]).reshape(len(moved), first.size, -1)
            pred = np.zeros_like(base)
            slopes = []
            for k, (name, (lo, hi)) in enumerate(edges.items()):
                b_lo, b_hi = rows[2 * k], rows[2 * k + 1]
                slope = (b_hi - b_lo) / np.where(hi > lo, hi - lo, 1.0)[:, None]
                # the centre's row from this variable's line, and the point's offset along it
                pred += slope[owner] * (frame[name].to_numpy(float) - (lo + hi)[owner] / 2.0)[:, None]
                slopes.append(slope[owner])
            centre_row = (rows[0] + rows[1]) / 2.0
            off = np.abs(centre_row[owner] + pred - base)
        if not (np.asarray(valid, bool).all() and np.all(off <= tol)):
            return None
        return slopes

    def _moved(self, slopes, rows: np.ndarray, points):
        """Design rows ``(X, y)`` of ``points`` (a
        `CellPoints` of the cell rows
        ``rows``, in the stored order, moved) from the stored rows and the
        slopes; None when the points do not match the stored ones one to one."""
        n = self._npoints[rows]
        cell = np.asarray(points.cell, dtype=np.int64)
        if not np.array_equal(np.bincount(cell, minlength=rows.size), n):
            return None
        offset = np.arange(cell.size) - np.repeat(np.cumsum(n) - n, n)
        pts = self._first[rows][cell] + offset
        X, y = self._points()
        if self._stored is None or len(self._stored) != X.shape[0]:
            self._stored = pd.concat(self._frames, ignore_index=True)
        out = np.empty((pts.size, 1 + X.shape[1]))
        out[:, 0] = y[pts]
        out[:, 1:] = X[pts]
        cont = [a.name for a in self.sub.axes if a.kind == "continuous"]
        for name, slope in zip(cont, slopes):
            moved = np.asarray(points.values[name], float)
            step = slope[pts]  # times the point's move, in place
            step *= (moved - self._stored[name].to_numpy(float)[pts])[:, None]
            out += step
        return out[:, 1:], out[:, 0]

    def refit_each(self, W: np.ndarray, refit: Callable, start: np.ndarray):
        """Refit every replicate with its own representatives.

        The representer is a function of the histogram it is fitted on (a
        density fitted to the counts, or the neighbours' counts), so each
        replicate's points are placed by a representer refitted on that
        replicate -- as the point estimate's were on the release -- and the
        replicates carry the variability of that fit.  ``W`` is the
        ``(n_rows, b)`` replicate counts of the cell rows; ``start`` is one
        start for all (``(k,)``) or one per replicate (``(b, k)``: e.g. the
        same replicates' fixed-points estimates, close to the optimum).
        """
        rep = self.representer
        starts = np.broadcast_to(np.asarray(start, dtype=float),
                                 (W.shape[1], np.shape(start)[-1]))
        est = np.full((W.shape[1], starts.shape[1]), np.nan)
        ok = np.zeros(W.shape[1], bool)
        slopes = self._design_slopes()
        frames, which = [], []
        replicates = []  # (j, rows, ids, counts) of the non-empty replicates
        for j in range(W.shape[1]):
            rows = np.flatnonzero(W[:, j])
            if rows.size == 0:
                continue
            order = np.argsort(self.cell_ids[rows])
            rows = rows[order]
            replicates.append((j, rows, self.cell_ids[rows], W[rows, j]))
        # every replicate's representer, the one-step density fits computed together
        owns = type(rep).refitted(rep, self.sub, [(ids, counts) for _, _, ids, counts in replicates])
        for (j, rows, ids, counts), own in zip(replicates, owns):
            if slopes is not None and own.method == rep.method:
                points = own.points(ids, counts)
                moved = self._moved(slopes, rows, points)
                if moved is not None:  # the design rows follow the points (affine design)
                    e, o = refit(*moved, points.weights[:, None], starts[j])
                    est[j], ok[j] = e[0], o[0]
                    continue
            pts = own.frame(ids, counts, "__w__")
            pts.attrs = {}
            frames.append(pts)
            which.append(j)
        if not frames:
            return est, ok
        # one design build for every replicate's points (the formula acts row by row)
        sizes = [len(f) for f in frames]
        points = pd.concat(frames, ignore_index=True)
        w = points.pop("__w__").to_numpy(float)
        X, y, valid = self._build(points)
        w = np.where(valid, w, 0.0)
        bounds = np.concatenate([[0], np.cumsum(sizes)])
        for j, a, b in zip(which, bounds[:-1], bounds[1:]):
            e, o = refit(X[a:b], y[a:b], w[a:b, None], starts[j])
            est[j], ok[j] = e[0], o[0]
        return est, ok



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
    flags_explain_failures: bool = True,
    no_information_why: str = "",
) -> DPInference:
    """Bootstrap ``refit`` over replicate releases of ``release``.

    ``uninformative`` marks coefficients the release says nothing about
    (`dpmodels.inference.information`): their SE is infinite; ``no_information_why``
    says why, for the summary (`DPInference.no_information_why`).
    ``flags_explain_failures``: see `DPInference.flags_explain_failures`.

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
    housing benchmark (``docs/inference-methods.md``).

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
        Default interval type (see `DPInference.conf_int()`).
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
    # the release's own mechanism, simulated; for the histogram with a deconvolved
    # population also the smooth one (the population model is uncertain: half of B
    # from each, and per coefficient the larger error, DPInference.parts)
    sims = release.simulators(population)
    share = int(n_boot) // len(sims)
    sizes = [int(n_boot) - share * (len(sims) - 1)] + [share] * (len(sims) - 1)
    refits = [-(-int(n_refit) // len(sims))] * len(sims)
    runs = [_replicates(sim, design, refit, params, rng, b, r, label)
            for sim, b, r in zip(sims, sizes, refits)]
    seeded = random_state is not None
    whole = tuple((ax.name, *ax.bound_pair, (ax.bound_pair[1] - ax.bound_pair[0]) / ax.bin_count)
                  for ax in design.sub.axes if whole_number_bins(ax))
    common: dict[str, Any] = dict(params=params, interval=interval, seeded=seeded,
                  uninformative=uninformative, whole_number_bins=whole,
                  flags_explain_failures=flags_explain_failures,
                  no_information_why=no_information_why)
    if len(runs) == 1:
        est, n_failed, target, description = runs[0]
        inf = DPInference(replicates=est, n_boot=int(n_boot), n_failed=n_failed,
                          simulation=description, target=target, **common)
    else:
        parts = tuple(DPInference(params=params, replicates=est, n_boot=b, n_failed=nf,
                                  interval=interval, simulation=desc, target=target,
                                  judge_failures=False)
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
    fixed, ok_pairs, pair_at = [], [], []
    refitted: list[np.ndarray] = []
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
            if used.size:
                est, ok = refit(*design.expand(used, W[used]), params)
            else:  # no cell survived the threshold in any replicate: nothing to fit
                est, ok = np.full((size, np.size(params)), np.nan), np.zeros(size, bool)
            r = (min(size, n_refit - sum(len(e) for e in refitted))
                 if design.representer and used.size else 0)
            if r > 0:  # the same replicates with refitted representatives
                est_r, ok_r = design.refit_each(W[:, :r], refit, np.where(ok[:r, None], est[:r], params))
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
