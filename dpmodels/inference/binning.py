"""The binning diagnostic of the dp bootstrap: how far the estimate moves
when the continuous variables' bins are merged, and when the same cells are
represented by other points.

The estimate is refitted on the release with each continuous variable's bins
merged in groups of 2 and 4 (the same representatives, fitted on the coarser
cells); Richardson extrapolation of the two moves estimates the binning bias
of the estimate itself.  With fewer than 8 bins (but at least 3) only the
groups of 2 are fitted and the bias is taken as large as that move (the
conservative order r = 1).  The same is done with one variable's bins merged
at a time: the response's and a covariate's binning biases can cancel in the
joint refit and not in the estimate, so the bias carried is the largest of the
joint and the single-variable moves.
A second refit places the release's cells at other
representatives (midpoints for fitted ones, neighbour shifts for midpoints):
the placement's share of the estimate.  For quantile regression a third set
moves the response's points within their bins (the grid shifted by a quarter,
a half and three quarters of a bin, and the points spread evenly over the bin):
where the edges fall decides a binned quantile's slopes.  A fourth moves each
covariate bin's points to where the bin's and its neighbours' released counts
say its rows could sit (`BinningDiagnostic._position_fit()`): the release
counts rows in a bin, not where they are in it.  All are reported in
units of the bootstrap's standard errors
(`BinningCheck`).
Post-processing of the release only.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import pandas as pd

from ..domain.axes import Domain
from ..domain.representatives import Representer, representer_for
from .information import EXACT_CELLS, columns_varying, marginal_frame, released_design, spurious_law
from .intervals import BINNING_MIN_BINS, BINNING_MIN_BINS_ONE, BinningCheck, largest_move
from .rounding import RoundingBound

__all__ = ["BinningDiagnostic", "coarse_columns", "coarsen_frame", "position_range"]

#: The shifts of the response's grid, in bins, the phase check refits at.
PHASES = (0.25, 0.5, 0.75)
#: Points per bin of the phase check's evenly spread response.
SPREAD_POINTS = 8


class BinningDiagnostic:
    """``diagnostic(se) -> BinningCheck | None`` for a model fitted on a
    release's cells.

    Parameters
    ----------
    release : PrivateHistogram
    variables : sequence of str
        The model's variables.
    cells : pandas.DataFrame
        The model's cell frame (the points and ``count_column``).
    count_column : str
    representer : Representer or None
        The representatives the estimate used (None: midpoints).
    build : callable
        ``build(frame) -> (X, y, valid)``, the model's design on new points.
    refit : callable
        The model's batched refit, ``refit(X, y, W, start)``.
    start : ndarray
        The estimate (flattened).
    response : sequence of str
        The response's variables (the formula's left-hand side).
    phase : bool
        Also refit with the continuous response's points moved within their
        bins (`_phase_fit()`): for models whose estimate is not a linear
        function of the response (quantile regression).
    rounding : RoundingBound or None
        Least squares on a continuous response: what its rounding to bins
        can do (`response_rounding()`), carried by the
        check.
    """

    def __init__(self, release, variables: Sequence[str], cells: pd.DataFrame,
                 count_column: str, representer, build: Callable, refit: Callable,
                 start: np.ndarray, response: Sequence[str] = (), phase: bool = False,
                 rounding: RoundingBound | None = None):
        self.release, self.variables = release, tuple(variables)
        self.response, self.phase, self.rounding = tuple(response), phase, rounding
        self.cells, self.count_column = cells, count_column
        self.representer, self.build, self.refit = representer, build, refit
        self.start = np.asarray(start, dtype=float)

    def __call__(self, se: np.ndarray) -> BinningCheck | None:
        theta2, done, skipped = self._coarse_fit(2)
        if not done and not skipped:
            return None
        bias = self._richardson(theta2, done)
        # each variable coarsened alone: the response's and a covariate's binning
        # bias can cancel in the joint refit and not in the estimate
        alone = np.array([self._richardson(self._coarse_fit(2, (v,))[0], (v,)) for v in done]
                         if len(done) > 1 else np.empty((0, self.start.size)))
        placement, other = self._placement_fit()
        phase = self._phase_fit()
        position = self._position_fit()
        with np.errstate(invalid="ignore"):
            ratio = np.fmax(np.abs(largest_move(bias, alone)), np.abs(placement))
            for extra in (phase, position):
                if extra is not None:
                    ratio = np.fmax(ratio, np.abs(extra))
            ratio = ratio / se
        rounding, constant, means = self._rounding()
        return BinningCheck(done, theta2, bias, ratio, unchecked=skipped,
                            placement=placement, placement_method=other,
                            spurious=self._spurious_fit(), alone=alone, phase=phase,
                            rounding=rounding, constant=constant, means=means,
                            position=position,
                            bins=tuple(self.release.domain.axis(v).bins for v in done))

    def _rounding(self):
        """The `rounding` bound, the design's constant columns and the
        count-weighted column means; (None, None, None) without a bound or
        when it is 0."""
        bound = self.rounding
        if bound is None or not bound.bound > 0:
            return None, None, None
        X, _, valid = self.build(self.cells.drop(columns=[self.count_column]))
        X = np.asarray(X, float)
        w = np.where(valid, self.cells[self.count_column].to_numpy(float), 0.0)
        k = X.shape[1]
        if self.start.size != k or not w.sum() > 0:
            return None, None, None
        constant = np.all(X == X[:1], axis=0)
        means = (w[:, None] * X).sum(axis=0) / w.sum()
        return bound, constant, means

    def _richardson(self, theta2: np.ndarray, done: Sequence[str]) -> np.ndarray:
        """The binning bias of the estimate from its move ``theta2 - start``
        to bins twice as wide along ``done`` (Richardson extrapolation; the
        order from groups of 4 when every variable of ``done`` has the bins
        for them, otherwise the conservative r = 1)."""
        domain = self.release.domain
        both = bool(done) and all(domain.axis(v).bins >= BINNING_MIN_BINS for v in done)
        theta4 = (self._coarse_fit(4, done)[0] if both
                  else np.full(self.start.size, np.nan))
        d1, d2 = theta2 - self.start, theta4 - theta2
        with np.errstate(divide="ignore", invalid="ignore"):
            rate = np.clip(np.abs(d2) / np.abs(d1), 2.0, 16.0)
            rate = np.where(np.isfinite(rate), rate, 4.0 if both else 2.0)
            return d1 / (rate - 1.0)

    def _spurious_fit(self) -> np.ndarray | None:
        """The estimate with the expected spurious rows of the threshold taken
        out, minus the estimate (`BinningCheck.spurious`); None without
        a threshold or for a marginal domain too large to enumerate."""
        law = spurious_law(self.release.report)
        domain = self.release.domain
        if law is None or Domain(tuple(domain.axis(v) for v in self.variables)).size > EXACT_CELLS:
            return None
        p, mu = law[:2]
        every, per_row = marginal_frame(domain, self.variables)
        cells = self.cells.drop(columns=[self.count_column])
        frame = pd.concat([cells, every[cells.columns]], ignore_index=True)
        weights = np.concatenate([self.cells[self.count_column].to_numpy(float),
                                  np.full(len(every), -p * mu * per_row)])
        return self._fit(frame, weights) - self.start

    def _fit(self, frame: pd.DataFrame, weights: np.ndarray) -> np.ndarray:
        """The estimate on the points ``frame`` with ``weights`` (NaN if it failed)."""
        X, y, valid = self.build(frame)
        est, ok = self.refit(X, y, np.where(valid, weights.astype(float), 0.0)[:, None],
                             self.start)
        return est[0] if ok[0] else np.full(self.start.size, np.nan)

    def _coarse_fit(self, factor: int, along: Sequence[str] | None = None):
        """The estimate on bins ``factor`` times as wide along ``along``
        (default: every variable): (estimate, variables coarsened, continuous
        variables left alone)."""
        coarse, done, skipped = coarsen_frame(self.cells, self.release.domain,
                                              self.variables if along is None else along, factor)
        if not done:
            return np.full(self.start.size, np.nan), done, skipped
        weights = self.cells[self.count_column].to_numpy()
        if self.representer is not None:  # the same representatives, coarser bins
            rep = self.representer.coarsened(factor, done)
            coarse = rep.frame(rep.ids, rep.counts, self.count_column)
            coarse.attrs = {}
            weights = coarse[self.count_column].to_numpy()
        return self._fit(coarse.drop(columns=[self.count_column]), weights), done, skipped

    def _phase_fit(self) -> np.ndarray | None:
        """The largest move of the estimate (per coefficient, with its sign)
        when the continuous response's points are moved within their bins:
        the grid shifted by `PHASES` of a bin, and every point spread
        evenly over its bin (`SPREAD_POINTS` points); None when the
        check does not apply (no continuous response, or ``phase=False``).

        A quantile of a binned response is a step function of the covariates:
        where the conditional quantiles of most covariate patterns fall in
        one response bin, the median regression on the cells is flat, its
        bootstrap replicates are flat too, and merging bins (the Richardson
        refits) leaves it flat.  Where the grid's edges fall decides the
        slopes; these refits measure how much
        (benchmarks/results/real_validity_passes.md, eighth pass).  A mean
        keeps every cell's mean under these moves, so the least-squares
        models skip it.
        """
        names = [v for v in self.response if self.release.domain.axis(v).kind == "continuous"]
        if not self.phase or not names:
            return None
        moves = [self._moved_fit(names, [(t - 0.5, t), (t + 0.5, 1.0 - t)]) for t in PHASES]
        spread = [((j + 0.5) / SPREAD_POINTS, 1.0 / SPREAD_POINTS) for j in range(SPREAD_POINTS)]
        moves.append(self._moved_fit(names, spread))
        return largest_move(moves[0], np.array(moves[1:]))

    def _moved_fit(self, names: Sequence[str], places: Sequence[tuple[float, float]]
                   ) -> np.ndarray:
        """The estimate with every point of the variables ``names`` replaced
        by points at ``(offset, share)``: the bin's lower edge plus
        ``offset`` bins, carrying ``share`` of the point's count; minus the
        estimate.  (A grid shifted by ``t`` of a bin, under the even
        allocation within bins: ``t`` of a point's count at the centre of the
        shifted bin over ``[e, e + t h]``, offset ``t - 1/2``, and ``1 - t``
        at the next one's, ``t + 1/2``.)"""
        domain = self.release.domain
        frame = self.cells.drop(columns=[self.count_column])
        weights = self.cells[self.count_column].to_numpy(float)
        lower = {}
        for name in names:
            axis = domain.axis(name)
            lower[name] = axis.edges[axis.codes(frame[name].to_numpy(float))[0]]
        parts = []
        for offset, _ in places:
            part = frame.copy()
            for name in names:
                axis = domain.axis(name)
                part[name] = axis.to_values(lower[name] + offset * axis.width)
            parts.append(part)
        shares = np.concatenate([share * weights for _, share in places])
        return self._fit(pd.concat(parts, ignore_index=True), shares) - self.start

    def _position_fit(self) -> np.ndarray | None:
        """Per coefficient, the sum over the continuous covariates' bins of
        the largest move of the estimate when one bin's points are moved
        (rigidly, along that covariate) to either end of
        `position_range()`; None without a continuous covariate.

        The release counts the rows of a bin, not where they sit inside it;
        the representatives assume a smooth density.  Real covariates are
        often not smooth at the scale of a bin: randhie's ``disea`` (public
        bound 100, 90% of the rows in the first of 5 bins) has its second
        bin's rows at 25.3 on average against the midpoint 30, and at ten
        times the data's size the slope came out at 0.72 of the truth with
        every interval missing it (benchmarks/results/real_validity_passes.md,
        tenth pass).  Where
        the counts fall steeply from a bin to its neighbour the range
        reaches far from the midpoint; where they are level it is narrow.
        A bound of unknown sign per coefficient
        (`position`).
        """
        domain = self.release.domain
        frame = self.cells.drop(columns=[self.count_column])
        weights = self.cells[self.count_column].to_numpy(float)
        positive = np.clip(weights, 0.0, None)
        bound, any_covariate = np.zeros(self.start.size), False
        for name in dict.fromkeys(self.variables):
            axis = domain.axis(name)
            if name in self.response or axis.kind != "continuous":
                continue
            any_covariate = True
            coord = axis.to_coord(frame[name].to_numpy(float))
            lo, width = axis.coord_bounds[0], axis.width
            code = np.clip(np.floor((coord - lo) / width), 0, axis.bins - 1).astype(np.int64)
            counts = np.bincount(code, weights=positive, minlength=axis.bins)
            part = frame.copy()  # the other columns stay; this one is set per move
            for b in np.flatnonzero(counts > 0):
                rows = code == b
                here = float(np.average(coord[rows], weights=positive[rows]))
                low, high = position_range(counts, int(b), (here - lo) / width)
                moves = []
                for place in (lo + low * width, lo + high * width):
                    if abs(place - here) <= 1e-9 * width:
                        continue
                    moved = coord.copy()
                    moved[rows] += place - here
                    part[name] = axis.to_values(moved)
                    moves.append(np.abs(self._fit(part, weights) - self.start))
                if moves:
                    bound += np.nan_to_num(np.fmax.reduce(moves), nan=0.0, posinf=0.0)
        return bound if any_covariate else None

    def _placement_fit(self):
        """The estimate with other representatives of the same cells, minus it."""
        rep = self.representer
        if rep is None:  # midpoints (or no continuous variable): the neighbour shift
            other = "shift"
            alt = representer_for(self.release, self.variables, other)
            if alt is None:
                return np.full(self.start.size, np.nan), other
        else:
            other = "shift" if rep.method == "midpoint" else "midpoint"
            alt = Representer(rep.domain, rep.ids, rep.counts, method=other)
        frame = alt.frame(alt.ids, alt.counts, self.count_column)
        frame.attrs = {}
        weights = frame[self.count_column].to_numpy(float)
        return self._fit(frame.drop(columns=[self.count_column]), weights) - self.start, other


def _exponential_mean(slope: float) -> float:
    """Mean (in bins, from the bin's lower edge) of the density proportional
    to ``exp(slope * t)`` on ``[0, 1]``."""
    if np.isinf(slope):
        return 1.0 if slope > 0 else 0.0
    if abs(slope) < 1e-6:
        return 0.5 + slope / 12.0
    return 1.0 - 1.0 / slope + 1.0 / np.expm1(slope)


def position_range(counts: np.ndarray, b: int, here: float) -> tuple[float, float]:
    """Where the mean of bin ``b``'s rows can plausibly be, in bins from the
    grid's lower edge: the smallest and largest of ``here`` (the
    representatives' mean, in the same units) and the means of the
    exponential densities through the bin's released count and either
    neighbour's (``log(c[b+1] / c[b])`` per bin to the right, ``log(c[b] /
    c[b-1])`` to the left).  A neighbour with no released rows says the
    variable may stop or pile up at the bin's edge: the range is then the
    whole bin.  A bin at the domain's edge has one neighbour, and nothing
    says how the density behaves on its other side: the mirror image of the
    neighbour's exponential is taken as well (the density may rise from the
    edge as steeply as it falls towards the neighbour; randhie's ``disea``
    has its mode inside the first of its bins).  Where the counts are level
    the range is narrow; where they change steeply it is wide, however the
    representatives placed the rows.

    Measured with ``benchmarks/covariate_positions.py``
    (benchmarks/results/real_validity_passes.md, tenth pass).

    Examples
    --------
    >>> position_range(np.array([100.0, 100.0, 100.0]), 1, 1.5)
    (1.5, 1.5)
    >>> lo, hi = position_range(np.array([900.0, 100.0, 3.0]), 1, 1.5)
    >>> bool(1.2 < lo < 1.3 and hi == 1.5)
    True
    >>> position_range(np.array([50.0, 0.0, 50.0]), 0, 0.5)
    (0.0, 1.0)
    >>> lo, hi = position_range(np.array([900.0, 100.0]), 0, 0.5)  # an edge bin
    >>> bool(abs(lo + hi - 1.0) < 1e-12 and 0.3 < lo < 0.35)
    True
    """
    left = float(b)
    places = [here]
    inside = [nb for nb in (b - 1, b + 1) if 0 <= nb < counts.size]
    for neighbour in inside:
        if counts[neighbour] <= 0:
            places += [left, left + 1.0]
            continue
        side = 1.0 if neighbour > b else -1.0
        slope = side * float(np.log(counts[neighbour] / counts[b]))
        places.append(left + _exponential_mean(slope))
        if len(inside) == 1:  # the domain's edge on the other side: its mirror image too
            places.append(left + _exponential_mean(-slope))
    return min(places), max(places)


def coarsen_frame(frame: pd.DataFrame, domain: Domain, variables: Sequence[str], factor: int = 2
                  ) -> tuple[pd.DataFrame, tuple[str, ...], tuple[str, ...]]:
    """The cell frame with each continuous variable's bins merged in groups of
    ``factor`` (bins ``f j .. f j + f - 1``; a short last group stays short),
    values at the merged bins' midpoints.  Returns the frame, the variables
    coarsened and the continuous variables left alone (fewer than
    ``BINNING_MIN_BINS_ONE`` bins)."""
    out = frame.copy()
    done, skipped = [], []
    for name in variables:
        axis = domain.axis(name)
        if axis.kind != "continuous":
            continue
        bins = axis.bin_count
        if bins < BINNING_MIN_BINS_ONE:
            skipped.append(name)
            continue
        e = axis.edges  # on the axis's scale, as the codes
        lo = axis.coord_bounds[0]
        coord = axis.to_coord(out[name].to_numpy(float))
        code = np.clip(np.floor((coord - lo) / axis.width), 0, bins - 1)
        c = code.astype(np.int64) // factor
        out[name] = axis.to_values((e[factor * c] + e[np.minimum(factor * c + factor, bins)]) / 2.0)
        done.append(name)
    return out, tuple(done), tuple(skipped)


def coarse_columns(release, variables: Sequence[str], build: Callable,
                   n_columns: int) -> tuple[tuple[str, ...], np.ndarray]:
    """The continuous covariates of a model cut into fewer than
    ``BINNING_MIN_BINS_ONE`` bins, and the design columns their binning can
    move unmeasured: every column that varies with such a variable, and the
    constant columns (the Intercept absorbs the shift of the binned values).
    A response in 2 bins is left to the other checks: on
    ``dpm.datasets.housing`` (n = 2,000, epsilon 1, ``price`` in 2 bins) every
    interval covered in 30 releases.

    Two bins make a slope out of a dichotomy, and no refit on the release can
    say how far that is from the slope of the variable itself (merging the
    bins leaves one).  On statsmodels' ``fair`` at its own size and epsilon
    3 (``bins="auto"``: 2 bins for age, yrs_married, children and educ; 30
    releases) the intervals of ``np.log(yrs_married)`` held 0% of the time,
    ``age`` 60% and ``educ`` 63%; on ``anes96`` (2 bins for six variables)
    ``ClinLR`` 60%.  Post-processing: the public domain and the released
    cells.
    """
    domain = release.domain
    candidates = tuple(v for v in dict.fromkeys(variables)
                       if domain.axis(v).kind == "continuous"
                       and domain.axis(v).bins < BINNING_MIN_BINS_ONE)
    flagged = np.zeros(n_columns, bool)
    coarse: list[str] = []
    if not candidates:
        return (), flagged
    cells, _, X, y = released_design(release, variables, build)
    if X is None or X.shape[1] != n_columns:  # no cell (a mismatch is a bug elsewhere)
        return (), flagged
    for v in candidates:
        axis = domain.axis(v)
        points = axis.to_values(axis.representatives())
        coord = axis.to_coord(cells[v].to_numpy(float))
        code = np.clip(np.floor((coord - axis.coord_bounds[0]) / axis.width), 0, axis.bins - 1)
        values = points[(code.astype(np.int64) + 1) % axis.bins] if axis.bins > 1 else (
            cells[v].to_numpy(float) + axis.width)
        varies, _ = columns_varying(build, cells, X, y, v, values)
        if varies.any():  # a covariate (the response varies no column)
            coarse.append(v)
            flagged |= varies
    if flagged.any():
        flagged |= np.all(X == X[:1], axis=0)
    return tuple(coarse), flagged
