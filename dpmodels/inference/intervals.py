"""The bootstrap's answer: standard errors, bias, intervals and p-values
from the replicate estimates (`DPInference`), and the binning
diagnostic's (`BinningCheck`).  Pure arithmetic on replicates; no
release, no data."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING

import numpy as np
from scipy import stats

if TYPE_CHECKING:  # the rounding bound is read, not built, here
    from .rounding import RoundingBound

__all__ = ["DPInference", "BinningCheck", "INTERVALS", "DEFAULT_INTERVAL", "COV_TYPES",
           "BINNING_WARN_RATIO", "BINNING_MIN_BINS", "BINNING_MIN_BINS_ONE",
           "resolve_cov_type", "largest_move"]

#: Interval types `DPInference.conf_int()` computes.
INTERVALS = ("bc-normal", "normal", "basic", "percentile")
DEFAULT_INTERVAL = "normal"

#: cov_type names accepted at the DP model layer.
COV_TYPES = ("dp", "naive", "nonrobust")

#: A coefficient's binning diagnostic fires when its estimated binning bias
#: (Richardson extrapolation from fits on bins 2 and 4 times as wide)
#: exceeds this many (dp) standard errors (a bias of 0.5 SE takes a 95%
#: interval to 92%).
BINNING_WARN_RATIO = 0.5
#: Continuous variables with at least this many bins get both coarse fits
#: (bins merged in groups of 2 and of 4) and the Richardson extrapolation.
BINNING_MIN_BINS = 8
#: Variables with fewer bins than `BINNING_MIN_BINS` but at least this
#: many get the groups-of-2 fit only; the order of the bias is then unknown and
#: the conservative one is taken (r = 1: the bias at the released bins is as
#: large as the move to bins twice as wide).  On ``fair`` resampled to 63,660
#: rows at epsilon 1 (3 bins per variable) ``age`` was estimated at +0.034
#: against -0.036 with SE 0.031, unchecked; merging its bins moves it by 0.044.
#: Fewer bins than this cannot be coarsened (2 bins would leave 1):
#: ``unchecked``.
BINNING_MIN_BINS_ONE = 3


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


def largest_move(shift: np.ndarray, alone: np.ndarray | None) -> np.ndarray:
    """Per coefficient the largest in size (with its sign) of the joint move
    ``shift`` and the rows of ``alone``; non-finite moves count as 0."""
    cand = np.atleast_2d(np.asarray(shift, float))
    if alone is not None and len(alone):
        cand = np.vstack([cand, np.asarray(alone, float)])
    cand = np.nan_to_num(cand, nan=0.0, posinf=0.0, neginf=0.0)
    return cand[np.argmax(np.abs(cand), axis=0), np.arange(cand.shape[1])]


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
    extrapolation with an estimated order).  When a coarsened variable has
    fewer than ``BINNING_MIN_BINS`` bins (so no groups of 4) the order is
    unknown and r = 1 is taken: the bias is ``|d1|``.  Variables with fewer
    than ``BINNING_MIN_BINS_ONE`` bins cannot be coarsened (``unchecked``).
    The same extrapolation with one variable's bins merged at a time gives
    ``alone``, one move per variable: the joint move is the sum of the
    variables' moves, which can cancel there and not in the estimate; the
    interval carries the largest of them (`bias`).

    ``placement``: the estimate with other representatives of the same
    cells (bin midpoints in place of the fitted within-cell density, or the
    neighbour shift in place of midpoints) minus the estimate.  The
    representatives correct the midpoints' O(h**2) error; how much they
    move the estimate bounds what is left of it on a smooth density
    (docs/inference.md measures it on housing with 3 bins: the estimate's
    error was 0.45-0.75 of this shift).  It is what covers variables too
    coarse for the Richardson check.

    Both enter the default ("normal") interval as shifts of unknown sign
    (`DPInference.mse`); ``ratio`` is the larger over the dp spread SE.

    Attributes
    ----------
    variables : tuple of str
        The continuous variables whose bins were coarsened.
    coarse_params : numpy.ndarray
        The estimate refitted on bins twice as wide.
    shift : numpy.ndarray
        Estimated binning bias per coefficient (signed as ``d1``).
    ratio : numpy.ndarray
        The largest of the shifts per coefficient over its dp standard error;
        the warning is issued above `threshold`.
    unchecked : tuple of str
        Variables with too few bins to coarsen.
    threshold : float
        The ratio above which the binning warning is issued.
    placement : numpy.ndarray or None
        The move of the estimate under other within-cell representatives.
    placement_method : str
        Which representatives ``placement`` compared with.
    spurious : numpy.ndarray or None
        The move when the threshold's expected spurious rows are taken out.
    alone : numpy.ndarray or None
        The Richardson bias with each variable's bins merged alone (one row
        per variable).
    phase : numpy.ndarray or None
        Quantile regression: the largest move when the response's points are
        moved within their bins.
    rounding : RoundingBound or None
        Least squares: what rounding the response to its bins can do to the
        slopes.
    constant, means : numpy.ndarray or None
        The design's constant columns and count-weighted column means, used
        with ``rounding``.
    position : numpy.ndarray or None
        Per coefficient, the largest move when the covariates' points go to
        either end of the range their released counts allow.
    bins : tuple of int
        The released bins of each of ``variables`` (empty when unknown).
    """

    variables: tuple[str, ...]
    coarse_params: np.ndarray  # fit on bins twice as wide
    shift: np.ndarray  # estimated binning bias (signed as d1)
    ratio: np.ndarray  # max(|bias|, |placement|, |phase|, position) / se
    unchecked: tuple[str, ...] = ()
    threshold: float = BINNING_WARN_RATIO
    placement: np.ndarray | None = None
    placement_method: str = ""
    #: The estimate with the threshold's expected spurious rows taken out
    #: (negative weights spread uniformly over the domain: the first-order
    #: correction of the contamination) minus the estimate; a shift of unknown
    #: sign like the others.  On ``fair`` x10 at epsilon 3 the 18% of
    #: spurious rows at ``religious = 4`` moved its contrast by +0.30 (1.6 SE);
    #: this refit moved it by -0.28.  Not in ``ratio`` (not a binning warning).
    spurious: np.ndarray | None = None
    #: The Richardson bias with each variable's bins merged alone (one row per
    #: variable of ``variables``; empty with one variable).  The joint refit
    #: sums the variables' biases, and they can cancel in it: on randhie
    #: (epsilon = inf, 5 bins each) merging all bins moved ``disea`` by
    #: -0.0008, merging only the response's by -0.0048, while the estimate was
    #: 0.0074 below the full-data fit.  See `bias`.
    alone: np.ndarray | None = None
    #: Quantile regression: the largest move of the estimate when the
    #: response's points are moved within their bins (the grid shifted by a
    #: quarter, half and three quarters of a bin; the points spread evenly);
    #: None for the other models.  A binned quantile is a step function of the
    #: covariates: on the synthetic median4 (n = 2e4, epsilon 3, 7 bins) the
    #: slopes came out 0.05, 0.04 and -0.03 against 1, 0.7 and -0.5 with every
    #: replicate and every merged-bin refit as flat; these refits moved them by
    #: 1.19, 0.66 and -0.47.  A shift of unknown sign like the others.
    phase: np.ndarray | None = None
    #: Least squares: what rounding the response to its bins can do to the
    #: slopes (`RoundingBound`), with the design's
    #: constant columns and count-weighted column means; None for the other
    #: models or a response that is not binned.
    rounding: RoundingBound | None = None
    constant: np.ndarray | None = None
    means: np.ndarray | None = None
    #: Where inside their bins the covariates' rows sit: per coefficient, the
    #: sum over the continuous covariates' bins of the largest move of the
    #: estimate when a bin's points go to either end of the range its and its
    #: neighbours' released counts allow
    #: (`position_range()`); None without a continuous
    #: covariate.  A bound of unknown sign for each coefficient alone, so it
    #: enters the mean squared error on the diagonal (`diagonal`).  On
    #: randhie at ten times its size (epsilon 3) it took ``disea``'s coverage
    #: from 0% to 90% (benchmarks/covariate_positions.py, 10 releases) and from
    #: 20% to 65% on the real-data benchmark's seeds (20 releases).
    position: np.ndarray | None = None
    #: The released bins of each of `variables` (empty when unknown), from which
    #: `suggested_bins` scales.
    bins: tuple[int, ...] = ()

    def suggested_bins(self) -> dict[str, int]:
        """Bins per variable to try first against the binning bias, for the
        warning's advice.

        The Richardson bias and the midpoints' placement error are of order
        ``h**2`` in the bin width ``h``, so bias ``r`` standard errors above
        `threshold` asks about ``sqrt(r / threshold)`` times the bins, for
        every variable checked (the placement and position shifts belong to no
        one variable).  A first try, not a guarantee: the standard errors grow
        with the number of cells and the shifts are noisy.  On the demo's
        housing data at epsilon 1 it named 45 to 47 bins each at n = 250,070 (10
        bins, 9.8 to 11 SE; 40 bins each warned in none of 3 seeds), and 20 each at
        n = 20,000 (5 bins, 7.3 SE; 19 bins left 0.69 SE, 30 bins none).
        """
        if not self.bins or len(self.bins) != len(self.variables):
            return {}
        ratio = np.asarray(self.ratio, float)
        ratio = ratio[np.isfinite(ratio)]
        worst = float(ratio.max()) if ratio.size else 0.0
        if not worst > self.threshold:
            return {}
        factor = math.sqrt(worst / self.threshold)
        return {v: int(math.ceil(b * factor)) for v, b in zip(self.variables, self.bins)}

    @property
    def diagonal(self) -> np.ndarray | None:
        """What the check adds to each coefficient's variance alone (the
        squared `position` bound; non-finite -> 0), or None."""
        if self.position is None:
            return None
        return np.nan_to_num(np.asarray(self.position, float), nan=0.0, posinf=0.0,
                             neginf=0.0) ** 2

    def rounded(self, cov: np.ndarray, params: np.ndarray, ok: np.ndarray) -> np.ndarray:
        """``cov`` widened by `rounding` (its ``widened``); unchanged without it."""
        if self.rounding is None:
            return cov
        # BinningDiagnostic._rounding sets the three together
        assert self.constant is not None and self.means is not None
        return self.rounding.widened(cov, params, self.constant, self.means, ok)

    @property
    def bias(self) -> np.ndarray:
        """The binning bias the interval carries: per coefficient the largest
        in size of the joint extrapolation (`shift`) and each variable's
        alone (`alone`), with its sign.  The joint move is the sum of
        the variables' moves; where they cancel, the bias is taken as at least
        the largest of them, not their sum of squares (the joint move already
        holds them once)."""
        return largest_move(self.shift, self.alone)

    @property
    def flagged(self) -> np.ndarray:
        return np.isfinite(self.ratio) & (self.ratio > self.threshold)

    @property
    def shifts(self) -> list[np.ndarray]:
        """The shift vectors the default interval carries (non-finite -> 0)."""
        out = [self.bias]
        for extra in (self.placement, self.spurious, self.phase):
            if extra is not None:
                out.append(np.nan_to_num(np.asarray(extra, float), nan=0.0, posinf=0.0,
                                         neginf=0.0))
        return out


#: The notes name a coarsely binned response from this rounding bound on
#: (`RoundingBound`; the slopes' factor 5% from 1).
ROUNDING_NOTE = 0.05

#: Above this share of replicates that could not be fitted, the bootstrap
#: measures no coefficient's error (`DPInference.mostly_failed`).  On
#: anes96's multinomial logit at epsilon 0.3 (benchmarks/real_validity.py), the
#: releases with 122 to 198 of 200 failed refits gave finite intervals up to
#: 430,000 wide from their survivors.
MAX_FAILED_SHARE = 0.5


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
        Default interval type of `conf_int()`.
    simulation : str
        What each replicate simulates.
    seeded : bool
        True when a ``random_state`` made the bootstrap reproducible.
    elapsed : float
        Seconds spent.
    binning : BinningCheck or None
        The check of the binning's bias (histogram releases), None when not
        made.
    uninformative : numpy.ndarray of bool or None
        Coefficients the release carries no information about: infinite
        standard error, z = 0, p = 1, interval (-inf, inf).
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
    #: (`dpmodels.inference.information`): infinite SE, z = 0, p = 1, interval (-inf, inf).
    uninformative: np.ndarray | None = None
    #: Continuous variables of the model binned one or two units wide with edges
    #: on whole numbers (`dpmodels.domain.axes.whole_number_bins()`): a note.
    whole_number_bins: tuple = ()
    #: The bootstraps of several populations (``population="deconvolved"``: the
    #: deconvolved and the smooth one, half of B each); empty for one population.
    #: The MSE is then the larger per coefficient (`mse`).
    parts: tuple = ()
    #: Why the release carries no information about a flagged coefficient, in the
    #: mechanism's own terms (the summary's warning); "" is the histogram's reason.
    no_information_why: str = ""
    #: Why the bootstrap could not measure the error of the coefficients in
    #: `unmeasured`, in the mechanism's own terms; "" for the generic reason.
    unmeasured_why: str = ""
    #: Apply `mostly_failed` (False for the parts of a pooled bootstrap:
    #: the rule is the whole's, on all its replicates).
    judge_failures: bool = True
    #: The `uninformative` flags include coefficients with (next to) no
    #: rows behind them, along which refits fail (`mostly_failed` then
    #: spares the others); False when every flag has another reason (a level
    #: the spurious cells dominate still has rows).
    flags_explain_failures: bool = True

    @property
    def se_description(self) -> str:
        """What the standard errors measure, for the summary's notes."""
        if self.interval != "normal":
            return "replicates' spread"
        what = "the bootstrap's bias"
        if self.binning is not None:
            what += " and the binning check's shifts"
            if self.binning.rounding is not None:
                what += ", scaled for the response's rounding to its bins"
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
        if self.mostly_failed:  # no coefficient's error is measured (mostly_failed)
            cov = np.full_like(cov, np.nan)
            np.fill_diagonal(cov, np.inf)
        elif self.uninformative is not None and self.uninformative.any():
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
        (`BinningCheck`); the check's bound on the covariates' places
        in their bins adds to each coefficient's variance alone
        (`BinningCheck.diagonal`).  A shift whose sign the data cannot pin
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
        if self.binning is not None and self.binning.diagonal is not None:
            cov[ok, ok] += self.binning.diagonal[ok]
        if self.binning is not None:  # least squares on a coarsely binned response
            cov = self.binning.rounded(cov, self.params, ok)
        return cov

    @property
    def cov(self) -> np.ndarray:
        """The covariance every test reads (``bse``, ``cov_params``,
        ``t_test``, ``wald_test``, ``f_test``): `mse` under the
        default "normal" interval (one centre, the estimate), the spread
        under the other intervals."""
        return self.mse if self.interval == "normal" else self.spread

    def _se_for(self, method: str) -> np.ndarray:
        with np.errstate(invalid="ignore"):
            se = np.sqrt(np.diag(self.mse if method == "normal" else self.spread))
        return np.where(np.isnan(se), np.inf, se)

    @property
    def se(self) -> np.ndarray:
        """Standard errors of the default interval (the square root of `cov`)."""
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
        """Coefficients the release tells nothing about: flagged by the release
        (``uninformative``), or whose error the bootstrap could not measure
        (a NaN variance: too few replicates fitted, or a non-finite estimate).
        Their SE is infinite, their interval unbounded, p = 1; a NaN standard
        error never reaches the user."""
        none = (np.zeros(self.params.size, bool) if self.uninformative is None
                else np.asarray(self.uninformative, bool).copy())
        if self.mostly_failed:
            return np.ones(self.params.size, bool)
        with np.errstate(invalid="ignore"):
            d = np.diag(self.mse if self.interval == "normal" else self.spread)
        return none | np.isnan(d) | ~np.isfinite(np.asarray(self.params, float))

    @property
    def mostly_failed(self) -> bool:
        """More than `MAX_FAILED_SHARE` of the replicates could not be
        fitted: the ones that could are a selected few (releases whose cells
        happen not to be separated), whose spread understates the error, so
        the bootstrap measures no coefficient's error.  Not when the release
        itself flags coefficients without information (a declared level with
        no rows): the refits then fail along those, which are reported as
        such, and the others' errors are measured as before."""
        flagged = (self.uninformative is not None and bool(np.any(self.uninformative))
                   and self.flags_explain_failures)
        return (self.judge_failures and self.n_failed > MAX_FAILED_SHARE * self.n_boot
                and not flagged)

    @property
    def unmeasured(self) -> np.ndarray:
        """Coefficients with an infinite standard error that the release did not
        flag (`uninformative`): the bootstrap could not measure their error."""
        flagged = (np.zeros(self.params.size, bool) if self.uninformative is None
                   else np.asarray(self.uninformative, bool))
        return (self._no_information() | ~np.isfinite(self.se)) & ~flagged

    def unmeasured_message(self, names: Sequence[str] | None = None,
                           limit: int | None = None) -> str:
        """The sentence naming the `unmeasured` coefficients and why
        (`unmeasured_why`); "" for none.  The summary's warning, and the text
        of the models' warning.

        Parameters
        ----------
        names : sequence of str, optional
            The coefficients' names (default: their positions).
        limit : int, optional
            Name only the first ``limit`` (default: all), then "and N more".

        Returns
        -------
        str
        """
        idx = np.flatnonzero(self.unmeasured)
        if not idx.size:
            return ""
        cut = idx if limit is None else idx[:limit]
        shown = ", ".join(str(names[i]) if names is not None else str(i) for i in cut)
        if cut.size < idx.size:
            shown += f" and {idx.size - cut.size} more"
        why = self.unmeasured_why or (
            f"only {self.n_ok} of {self.n_boot} replicates fitted, a selected few whose spread "
            "understates the error; use a larger epsilon or a simpler model"
            if self.mostly_failed else
            f"{self.n_ok} of {self.n_boot} replicates fitted; use a larger epsilon or a "
            "simpler model")
        return (f"the bootstrap could not measure the error of {shown} ({why}): their standard "
                "errors are infinite and their intervals unbounded (z = 0, p = 1)")

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
            `mse` (spread, bootstrap bias and binning shifts); "bc-normal":
            ``params - bias -/+ z sd`` with ``sd`` the replicates' spread;
            "basic": ``2 params - q(1 - alpha/2),
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
        elif self.n_ok < 2:  # the bootstrap measured nothing: no information
            return np.tile([-np.inf, np.inf], (self.params.size, 1))
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
        """Lines for the summary.

        Parameters
        ----------
        names : sequence of str, optional
            The coefficients' names, for the lines that name some.

        Returns
        -------
        list of str
        """
        lines = [
            f"Covariance type dp: parametric bootstrap of the release (post-processing), "
            f"B = {self.n_boot} replicates ({self.simulation}); standard errors are the "
            f"{self.se_description}, intervals are " + self.describe_interval()
            + "; z statistics and p-values use the same center and SE.",
        ]
        flagged = (np.zeros(self.params.size, bool) if self.uninformative is None
                   else np.asarray(self.uninformative, bool))

        def shown(idx):
            out = [str(names[i]) if names is not None else str(i) for i in idx[:6]]
            return ", ".join(out) + ("" if idx.size <= 6 else f" and {idx.size - 6} more")

        none = np.flatnonzero(flagged)
        if none.size:
            lines.append(
                "WARNING: the release carries no information about " + shown(none) + ": "
                + (self.no_information_why or
                   "the noisy count behind them is not above what the threshold's spurious "
                   "cells alone put there, so their estimates are noise (a declared level "
                   "without rows, or whose rows the threshold removed; use a larger epsilon, "
                   "fewer bins or fewer variables)")
                + ". Their standard errors are infinite and their intervals unbounded.")
        lost = self.unmeasured_message(names, limit=6)
        if lost:
            lines.append("WARNING: " + lost + ".")
        with np.errstate(divide="ignore", invalid="ignore"):
            shift = np.abs(self.bias) / self.se
        big = np.flatnonzero(np.isfinite(shift) & (shift > 1.0))
        if self.interval == "bc-normal" and big.size:
            named = [str(names[i]) if names is not None else str(i) for i in big[:6]]
            more = "" if big.size <= 6 else f" and {big.size - 6} more"
            lines.append(
                "The bootstrap puts the bias of the thresholded release at more than one standard "
                f"error for {', '.join(named)}{more} (up to {float(np.nanmax(shift)):.2g} SE): "
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
            named = [str(names[i]) if names is not None else str(i) for i in idx[:6]]
            more = "" if idx.size <= 6 else f" and {idx.size - 6} more"
            worst = float(np.nanmax(self.binning.ratio))
            carried = ("their standard errors and intervals carry these shifts as uncertainty "
                       "of unknown sign, so they are wider" if self.interval == "normal" else
                       f"the {self.interval} intervals do not include them and may undercover "
                       "(the default \"normal\" interval does)")
            more_bins = self.binning.suggested_bins()
            action = (
                "To remove it, refit with more bins"
                + (f" (try bins={more_bins!r} first: the bias falls about with the square of "
                   "the bin width, the noise grows with the number of cells; check that this "
                   "warning is gone)" if more_bins else "")
                + ", or on a release that does not bin: method=\"moments\" (dp_ols), "
                "method=\"newton\" (dp_logit, dp_quantreg) or method=\"sample-aggregate\" "
                "(every model).")
            lines.append(
                "WARNING: binning may bias " + ", ".join(named) + more + f" by up to {worst:.2g} "
                "standard errors (refits with the bins merged in groups of 2 and 4, or of 2 "
                "with fewer than 8 bins, every variable's at once and each alone, or with "
                f"{self.binning.placement_method or 'other'} representatives"
                + (", or with the response's points moved within their bins"
                   if self.binning.phase is not None else "") + "): " + carried
                + ". " + action)
        bound = self.binning.rounding if self.binning is not None else None
        if (bound is not None and bound.bound >= ROUNDING_NOTE and not bound.unmeasured
                and self.interval == "normal"):
            lines.append(
                f"{bound.variable} is binned coarsely for least squares: a normal fitted to its "
                f"released bins has a standard deviation of {bound.spread:.2f} bins, at which "
                f"rounding it to its bins scales the slopes by about {bound.factor:.2f}. The "
                f"standard errors carry a factor anywhere in [{1 - bound.bound:.2f}, "
                f"{1 + bound.bound:.2f}] (dpmodels.inference.rounding); more bins for {bound.variable} "
                f"(e.g. bins={{{bound.variable!r}: {bound.suggested_bins()}}}) or tighter bounds "
                "remove it.")
        for name, lo, hi, width in self.whole_number_bins:
            lines.append(
                f"{name} is cut into bins {width:g} wide with edges on whole "
                f"numbers: if {name} takes whole values (a count), each value sits on its bin's "
                "left edge and the fit places it inside the bin, a bias the binning check cannot "
                f"see; declare bounds ({lo - 0.5:g}, {hi - 0.5:g}) to centre the bins on them.")
        if self.binning is not None and self.binning.unchecked:
            lines.append(
                f"Fewer than {BINNING_MIN_BINS_ONE} bins for {', '.join(self.binning.unchecked)}: "
                "too few to coarsen, so their binning is measured only by the other "
                "representatives' shift.")
        return lines
