"""dp_quantreg: quantile regression on a private histogram.

A released cell with noisy count w stands for w identical rows, so the fit
must be that of the *expanded* data set in which each cell appears w times.
`FreqQuantReg` gives exactly what statsmodels'
`QuantReg` gives on that
expanded data, without expanding it:

* the estimate minimizes the frequency-weighted check loss
  ``sum_i w_i rho_q(y_i - x_i'b)``, solved exactly as a linear program;
* n is the total count, and every data-dependent piece of QuantReg's
  bandwidth, sparsity and covariance (the residual quartiles, the standard
  deviation of the response, the kernel sum, ``X'X`` and ``X'DX``) is the
  weighted version that equals the expanded one.

Quantile regression needs non-negative weights (the check loss is not convex
otherwise), so signed releases (``threshold=None``) are refused before
anything is released.

A quantile of a binned response is only known to within a bin: when the
fitted plane is held by released cells of one response bin (e.g. flat
through the middle bin's midpoint), `DPQuantReg.fit()` names the
coefficients that bin fixes and does not report a precision for them; see
its Notes.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, fields
from functools import cached_property, partial
from typing import Any

import numpy as np
from numpy.linalg import pinv
from scipy.stats import norm
from statsmodels.base import wrapper as wrap
from statsmodels.regression.linear_model import RegressionModel, RegressionResultsWrapper
from statsmodels.regression.quantile_regression import (
    QuantReg,
    QuantRegResults,
    bofinger,
    chamberlain,
    hall_sheather,
    kernels,
)
from statsmodels.tools._decorators import cache_readonly
from statsmodels.tools.validation import string_like

from ..core.errors import ReleaseWarning
from ..core.keywords import checked_keywords
from ..domain.formula import formula_variables, user_stacklevel
from ..inference.dp_results import DPInferenceResultsMixin, attach_dp_inference, quiet_refusals
from ..inference.intervals import DPInference
from ..inference.summary import add_privacy_block, add_privacy_block2, inference_notes
from .base import DPModel, dp_options
from .quantreg_lp import check_loss, refit_quantreg_batch, solve_check_loss

__all__ = ["FreqQuantReg", "FreqQuantRegResults", "DPQuantReg"]

_BANDWIDTHS = {"hsheather": hall_sheather, "bofinger": bofinger, "chamberlain": chamberlain}

#: A residual within this relative distance of zero is an exact zero of the
#: LP solution (an interpolated cell); see `FreqQuantReg.fit()`, Notes.
_ZERO_RTOL = 1e-9

#: A coefficient is *unresolved* (fixed by the binning of the response, not
#: estimated) when the fitted plane passes through points that all lie in one
#: bin of the response, hold at least this share of the total count, and
#: determine that coefficient; see `_unresolved_coefficients()`.
_UNRESOLVED_SHARE = 0.05


class FreqQuantReg(QuantReg):
    """Quantile regression where ``weights`` are frequencies (counts).

    The results equal those of
    `QuantReg` on the
    data set in which row ``i`` appears ``weights[i]`` times: the same
    estimate, bandwidth, sparsity, covariance, ``nobs`` (the total weight)
    and degrees of freedom.

    Parameters
    ----------
    endog : array_like
        Response, one value per cell.
    exog : array_like
        Design matrix, one row per cell.
    weights : array_like, optional
        Non-negative frequency of each row (default: all 1).  Rows of zero
        weight do not exist in the expanded data and have no effect.
    missing : str
        As in statsmodels ("none", "drop" or "raise").
    hasconst : bool, optional
        As in statsmodels.

    Examples
    --------
    >>> import numpy as np
    >>> import statsmodels.api as sm
    >>> from statsmodels.regression.quantile_regression import QuantReg
    >>> from dpmodels.models.quantreg import FreqQuantReg
    >>> rng = np.random.default_rng(0)
    >>> X = sm.add_constant(rng.normal(size=(40, 1)))
    >>> y = X @ [1.0, 2.0] + rng.standard_t(3, size=40)
    >>> w = rng.integers(1, 6, size=40)
    >>> res = FreqQuantReg(y, X, weights=w).fit(q=0.5)
    >>> expanded = QuantReg(np.repeat(y, w), np.repeat(X, w, axis=0))
    >>> ref = expanded.fit(q=0.5, p_tol=1e-12, max_iter=5000)  # IRLS, run to its limit
    >>> bool(np.allclose(res.params, ref.params, rtol=1e-5))
    True
    >>> bool(np.allclose(res.bse, ref.bse, rtol=1e-5))
    True
    >>> float(res.nobs), float(ref.nobs), int(w.sum())
    (129.0, 129.0, 129)
    """

    weights: np.ndarray  # RegressionModel.__init__ stores it; initialize checks it

    def __init__(self, endog, exog, weights=None, missing: str = "none", hasconst=None, **kwargs):
        self._check_kwargs(kwargs)
        if weights is None:
            weights = np.ones(len(endog))
        weights = np.asarray(weights, dtype=float)
        if weights.ndim == 0:
            weights = np.repeat(weights, len(endog))
        weights = weights.reshape(-1)
        # QuantReg.__init__ refuses extra keywords, so go straight to RegressionModel
        RegressionModel.__init__(
            self, endog, exog, missing=missing, hasconst=hasconst, weights=weights, **kwargs
        )

    def initialize(self):
        w = np.asarray(self.weights, dtype=float)
        if w.shape != (self.exog.shape[0],):
            raise ValueError(
                f"weights must have one entry per row ({self.exog.shape[0]}), got shape {w.shape}"
            )
        if not np.all(np.isfinite(w)):
            raise ValueError("frequency weights must be finite")
        if np.any(w < 0):
            raise ValueError(
                "frequency weights must be non-negative: the check loss of quantile regression "
                "with negative weights is not convex (use thresholded counts)"
            )
        if w.sum() <= 0:
            raise ValueError("frequency weights sum to zero: there is nothing to fit")
        self.weights = w
        super().initialize()
        self.nobs = float(w.sum())
        self.rank = int(np.linalg.matrix_rank(self.wexog))
        self.df_model = float(self.rank - self.k_constant)
        self.df_resid = self.nobs - self.rank

    def whiten(self, x):
        """Scale rows by sqrt(weight), so that ``wexog.T @ wexog`` is the
        expanded ``X'X`` (used for eigenvalues and the condition number)."""
        x = np.asarray(x)
        root = np.sqrt(self.weights)
        return x * root if x.ndim == 1 else root[:, None] * x

    def fit(
        self,
        q: float = 0.5,
        vcov: str = "robust",
        kernel: str = "epa",
        bandwidth: str = "hsheather",
        max_iter: int | None = None,
        p_tol: float | None = None,
        **kwargs,
    ) -> RegressionResultsWrapper:
        """Solve the weighted check-loss problem exactly and compute QuantReg's
        covariance for the expanded data.

        Parameters
        ----------
        q : float
            Quantile, strictly between 0 and 1.
        vcov : {"robust", "iid"}
            As in `QuantReg.fit`.
        kernel : {"epa", "biw", "cos", "gau", "par"}
            Kernel of the sparsity estimate.
        bandwidth : {"hsheather", "bofinger", "chamberlain"}
            Bandwidth rule, evaluated at n = total weight.
        max_iter, p_tol : optional
            Accepted for compatibility with ``QuantReg.fit`` and ignored: the
            linear program is solved to optimality, not iterated.
        **kwargs
            Accepted for compatibility, ignored.

        Returns
        -------
        RegressionResultsWrapper
            Wrapping `FreqQuantRegResults`, with ``q``, ``bandwidth``,
            ``sparsity``, ``iterations`` (simplex iterations) and
            ``objective`` (the weighted check loss at the estimate).

        Notes
        -----
        The estimate minimizes ``sum_i w_i rho_q(y_i - x_i'b)`` with
        ``rho_q(u) = u (q - 1[u < 0])``, the expanded data's objective.  It is
        found from the dual linear program (Koenker 2005, §6.2)

            max_d  y'd   s.t.  X'd = 0,  -(1 - q) w_i <= d_i <= q w_i,

        with ``p`` equality rows and one bounded variable per cell, solved by
        HiGHS' simplex; ``b`` is the vector of multipliers of the equality
        rows.  The answer is a vertex: it interpolates ``p`` cells exactly.
        When the minimizer is not unique (common when the response is
        binned), any vertex of the optimal set may be returned; the objective
        value is the same.

        With ``n = sum(w)`` and residuals ``e``, everything else follows
        ``QuantReg.fit`` on the expanded data: the quartiles of ``e`` and the
        standard deviation of ``y`` are those of the expanded sample (same
        interpolation as `scipy.stats.scoreatpercentile()`),
        ``f = sum w K(e/h) / (n h)``, "iid" is ``q(1-q)/f^2 (X'WX)^+`` and
        "robust" is ``(X'WX)^+ X'WDX (X'WX)^+`` with ``D = q^2/f^2`` where
        ``e > 0`` and ``(1-q)^2/f^2`` elsewhere.

        Residuals of the interpolated cells are exactly zero and so fall in
        the "elsewhere" branch.  statsmodels' iterative solver leaves them
        small (about 1e-7 to 1e-5) and of arbitrary sign, so for
        ``q != 0.5`` its "robust" standard errors on the expanded data depend
        on rounding; binned responses put many cells, with large counts, on
        the fitted plane, which can move them by a few percent.  The two
        agree when statsmodels' signs are negative, and always agree for
        "iid" and for ``q = 0.5``.
        """
        if not 0 < q < 1:
            raise ValueError("q must be strictly between 0 and 1")
        kernel_name = string_like(kernel, "kernel", options=tuple(kernels), lower=False)
        bw_name = string_like(bandwidth, "bandwidth", options=tuple(_BANDWIDTHS), lower=False)
        vcov = string_like(vcov, "vcov", options=("robust", "iid"), lower=False)

        endog, exog, w = self.endog, self.exog, self.weights
        params, n_iter = solve_check_loss(endog, exog, w, q)
        if self.rank < exog.shape[1]:
            # same fitted values, minimum norm: the solution in the row space of X, as
            # QuantReg's pinv-based iterations give
            params = pinv(self.wexog) @ (self.wexog @ params)
        resid = _exact_resid(endog, exog, params)

        cov, h, fhat0 = _quantreg_cov(
            resid, endog, exog, w, q, kernels[kernel_name], _BANDWIDTHS[bw_name], vcov
        )
        res = FreqQuantRegResults(self, params, normalized_cov_params=cov)
        res.q = q
        res.iterations = n_iter
        res.sparsity = 1.0 / fhat0 if fhat0 != 0 else np.inf
        res.bandwidth = h
        res.history = None
        res.objective = check_loss(resid, w, q)
        res.vcov_type, res.kernel_name, res.bandwidth_name = vcov, kernel_name, bw_name
        return FreqQuantRegResultsWrapper(res)


class FreqQuantRegResults(DPInferenceResultsMixin, QuantRegResults):
    """statsmodels `QuantRegResults` of a dp quantile regression, equal to
    those of ``QuantReg`` on the expanded data set (each released cell
    repeated ``count`` times), or computed from noisy quantile steps.

    Every statsmodels attribute and method works; those that would ignore
    the privacy noise are dp-aware or refused (`DPInferenceResultsMixin`).

    Attributes
    ----------
    privacy : ReleaseReport or None
        The privacy report of the release the fit was made on (a `PrivacyReport`, or a
        `MomentsReport` for quantile steps);
        None for a fit made without a release.
    release
        The release the fit was made on (`PrivateHistogram`, `PrivateQuantileSteps` or a local release).
    dp_inference : DPInference or None
        Under ``cov_type="dp"`` (the default), the parametric bootstrap that
        gives ``bse``, ``cov_params()``, ``tvalues``, ``pvalues`` and
        ``conf_int()`` (`dpmodels.inference.intervals.DPInference`: replicates,
        intervals, the binning check); None under ``cov_type="naive"``.
    cov_type : str
        "dp" or "nonrobust" (the naive covariance).
    q : float
        The quantile fitted.
    unresolved : numpy.ndarray of bool or None
        Mask over ``params`` of the coefficients that the release's binning
        of the response fixes rather than estimates (None when not checked).
    unresolved_message : str or None
        The warning that names them.
    """

    privacy: Any = None
    release: Any = None
    objective = np.nan
    #: Boolean mask over ``params`` of the coefficients the release's binning of
    #: the response fixes rather than estimates (set by `DPQuantReg.fit()`;
    #: None when not checked), and the warning that names them.
    unresolved = None
    unresolved_message = None

    @cache_readonly
    def nobs(self):
        return float(self.model.nobs)

    @cache_readonly
    def prsquared(self):
        """Koenker-Machado pseudo R-squared of the expanded data."""
        q, w, endog = self.q, self.model.weights, self.model.endog
        loss = check_loss(self.resid, w, q)
        null = check_loss(endog - _weighted_percentile(endog, w, 100 * q), w, q)
        return 1.0 - loss / null

    def _summary_title(self, title):
        if title is not None:
            return title
        return ("DP " if self.privacy is not None else "") + \
            "QuantReg Regression Results (frequency-weighted cells)"

    def _summary_notes(self) -> list[str]:
        what = "the noisy total of the released cells" if self.privacy is not None else \
            "the total weight"
        notes = [f"Quantile q = {self.q:g}. Cells are weighted by their counts; nobs and degrees "
                 f"of freedom are those of {what}."]
        if self.unresolved_message:
            notes.append("WARNING: " + self.unresolved_message)
        return notes + inference_notes(self)

    def summary(self, yname=None, xname=None, title=None, alpha=0.05):
        """QuantReg-layout summary of the expanded data, plus the privacy block.

        Parameters
        ----------
        yname : str, optional
            Name of the response (default: the model's).
        xname : list of str, optional
            Names of the coefficients (default: the model's).
        title : str, optional
            Title of the table (default: one naming the dp mechanism).
        alpha : float
            1 - the level of the intervals shown (default 0.05).

        Returns
        -------
        statsmodels.iolib.summary.Summary
        """
        with quiet_refusals(self):  # a refused statistic reads n/a
            smry = QuantRegResults.summary(self, yname=yname, xname=xname,
                                           title=self._summary_title(title), alpha=alpha)
        return add_privacy_block(smry, self.privacy, self._summary_notes(), results=self)

    def summary2(self, yname=None, xname=None, title=None, alpha=0.05, float_format="%.4f"):
        """statsmodels' ``summary2`` layout with the notes and privacy block of
        `summary()` (no residual diagnostics, as ``summary()``: the cells'
        residuals are not a sample of rows).

        Parameters
        ----------
        yname : str, optional
            Name of the response (default: the model's).
        xname : list of str, optional
            Names of the coefficients (default: the model's).
        title : str, optional
            Title of the table (default: one naming the dp mechanism).
        alpha : float
            1 - the level of the intervals shown (default 0.05).
        float_format : str
            Format of the numbers (default "%.4f").

        Returns
        -------
        statsmodels.iolib.summary2.Summary
        """
        from statsmodels.iolib import summary2

        smry = summary2.Summary()
        with quiet_refusals(self):  # a refused statistic reads n/a
            smry.add_base(results=self, alpha=alpha, float_format=float_format, xname=xname,
                          yname=yname, title=self._summary_title(title))
        return add_privacy_block2(smry, self.privacy, self._summary_notes(), results=self)


class FreqQuantRegResultsWrapper(RegressionResultsWrapper):
    """statsmodels' wrapper around `FreqQuantRegResults` (its own ``conf_int``)."""


wrap.populate_wrapper(FreqQuantRegResultsWrapper, FreqQuantRegResults)


def _weighted_percentile(a: np.ndarray, w: np.ndarray, per: float) -> float:
    """`scipy.stats.scoreatpercentile()` (linear interpolation) of the
    sample in which ``a[i]`` appears ``w[i]`` times."""
    order = np.argsort(a, kind="stable")
    a_sorted = a[order]
    cum = np.cumsum(w[order])
    idx = per / 100.0 * (cum[-1] - 1.0)
    lo = math.floor(idx)

    def at(k: float) -> float:  # the k-th (0-based) value of the expanded sorted sample
        return float(a_sorted[min(int(np.searchsorted(cum, k, side="right")), a_sorted.size - 1)])

    if lo == idx:
        return at(lo)
    return at(lo) * (lo + 1 - idx) + at(lo + 1) * (idx - lo)


def _exact_resid(endog, exog, params) -> np.ndarray:
    """``endog - exog @ params`` with the residuals of interpolated rows (within
    `_ZERO_RTOL` of zero, relative to the terms) set to exactly 0."""
    resid = endog - exog @ params
    tol = _ZERO_RTOL * (np.abs(endog) + np.abs(exog) @ np.abs(params))
    return np.where(np.abs(resid) <= tol, 0.0, resid)


def _unresolved_coefficients(exog, w, resid, groups, share: float = _UNRESOLVED_SHARE):
    """Coefficients fixed by interpolated points of one group (one bin of the response).

    A point with zero residual lies on the fitted plane.  When the points of
    one group (e.g. the cells of one bin of a binned response) that lie on
    the plane hold at least ``share`` of the total weight, the plane is held
    there by them: every coefficient ``j`` whose unit vector is in the row
    space of those points' design rows is *determined* by their responses --
    that is, by where the representative points sit inside the bin -- and
    not by how the counts are spread over the bins.  In the extreme case the
    points all have one response ``c`` (one bin midpoint) and span the
    design: the plane is flat, every slope is exactly 0 and the intercept is
    ``c``.  A heavy group on the plane also means the same plane is the fit of
    every quantile level within about ``share`` of ``q``.

    Parameters
    ----------
    exog : ndarray (n, p)
    w : ndarray (n,)
        Non-negative weights.
    resid : ndarray (n,)
        Residuals, exactly 0 on the plane (`_exact_resid()`).
    groups : ndarray (n,)
        Group label of each row (the response bin).
    share : float
        Minimum share of the total weight of a group's points on the plane.

    Returns
    -------
    mask : ndarray of bool (p,)
        The unresolved coefficients.
    found : list of (label, share, mask)
        Each group that fixes some coefficient, heaviest first.
    """
    p = exog.shape[1]
    mask = np.zeros(p, bool)
    found: list[tuple[Any, float, np.ndarray]] = []
    total = float(np.sum(w))
    on = np.flatnonzero((resid == 0) & (w > 0))
    if on.size == 0 or not total > 0:
        return mask, found
    labels, inv = np.unique(groups[on], return_inverse=True)
    weight = np.bincount(inv, weights=w[on], minlength=labels.size)
    for g in np.flatnonzero(weight >= share * total):
        Xg = exog[on[inv == g]]
        scale = np.max(np.abs(Xg), axis=0)  # e_j in the row space is scale-invariant
        _, sv, vt = np.linalg.svd(Xg / np.where(scale > 0, scale, 1.0), full_matrices=False)
        rank = int(np.sum(sv > max(Xg.shape) * np.finfo(float).eps * 1e3 * sv[0])) if sv[0] > 0 else 0
        # e_j is in the row space iff its projection onto it has unit length
        fixed = (1.0 - np.sum(vt[:rank] ** 2, axis=0) < 1e-8) & (scale > 0)
        if fixed.any():
            mask |= fixed
            found.append((labels[g], float(weight[g] / total), fixed))
    found.sort(key=lambda t: -t[1])
    return mask, found


def _quantreg_cov(resid, endog, exog, w, q, kernel, bandwidth, vcov):
    """QuantReg's bandwidth, sparsity and covariance for the expanded data."""
    n = float(w.sum())
    iqre = _weighted_percentile(resid, w, 75) - _weighted_percentile(resid, w, 25)
    ybar = np.sum(w * endog) / n
    sd = math.sqrt(np.sum(w * (endog - ybar) ** 2) / n)
    hq = bandwidth(n, q)
    with np.errstate(all="ignore"):
        h = min(sd, iqre / 1.34) * (norm.ppf(q + hq) - norm.ppf(q - hq))
        fhat0 = float(np.sum(w * kernel(resid / h)) / (n * h))
    if not (np.isfinite(fhat0) and fhat0 > 0):
        warnings.warn(
            f"the sparsity estimate is not finite and positive (bandwidth h={h:.3g}): "
            "standard errors are undefined", RuntimeWarning, stacklevel=user_stacklevel(),
        )
    xtwx_inv = pinv(exog.T @ (w[:, None] * exog))
    with np.errstate(all="ignore"):
        if vcov == "robust":
            d = np.where(resid > 0, (q / fhat0) ** 2, ((1 - q) / fhat0) ** 2)
            cov = xtwx_inv @ (exog.T @ ((w * d)[:, None] * exog)) @ xtwx_inv
        else:
            cov = (1.0 / fhat0) ** 2 * q * (1 - q) * xtwx_inv
    return cov, h, fhat0


_NO_INFORMATION_NOTE = "WARNING: the release carries no information about "


@dataclass(frozen=True, eq=False)
class _QuantRegDPInference(DPInference):
    """`DPInference` in which the coefficients the
    response's binning fixes (``unresolved``) have, like those the release
    carries no information about, an infinite standard error, z = 0, p = 1
    and an unbounded interval: every bootstrap replicate is held on the same
    bin, so the replicates' spread (about 0) says nothing about them.  The
    summary explains them apart from the no-information ones."""

    unresolved: np.ndarray | None = None
    #: the release's own no-information mask (`DPModel._uninformative()`)
    no_information: np.ndarray | None = None

    @classmethod
    def wrap(cls, inference: DPInference, unresolved: np.ndarray) -> _QuantRegDPInference:
        own = inference.uninformative
        merged = np.asarray(unresolved, bool).copy()
        if own is not None:
            merged |= np.asarray(own, bool)
        kw = {f.name: getattr(inference, f.name) for f in fields(DPInference) if f.init}
        kw["uninformative"] = merged
        return cls(**kw, unresolved=np.asarray(unresolved, bool), no_information=own)

    def notes(self, names: Sequence[str] | None = None) -> list[str]:
        lines = super().notes(names)
        # the release's no-information line lists the unresolved coefficients too: say
        # it for the release's own ones only (the unresolved ones have their own note)
        base = {f.name: getattr(self, f.name) for f in fields(DPInference) if f.init}
        base["uninformative"] = self.no_information
        own = [ln for ln in DPInference(**base).notes(names)
               if ln.startswith(_NO_INFORMATION_NOTE)]
        out = []
        for ln in lines:
            if ln.startswith(_NO_INFORMATION_NOTE):
                out.extend(own)
            else:
                out.append(ln)
        return out


class DPQuantReg(DPModel):
    """Differentially private quantile regression: QuantReg on the released
    cells, each cell's representative weighted by its noisy count.

    Any number of quantiles can be fitted from the one release at no extra
    privacy cost.  See `dp_quantreg()` for the parameters.
    """

    _name = "DP QuantReg"
    response_phase = True
    _allows_signed = False

    @classmethod
    def from_call(cls, call) -> DPQuantReg:
        """The histogram model of a ``dp_quantreg`` call; its fits default to the
        call's first quantile."""
        model = super().from_call(call)
        model.default_q = call.quantiles[0]
        return model

    @cached_property
    def _model(self) -> FreqQuantReg:
        """The frequency-weighted QuantReg on the cells, built once and shared by every fit."""
        w = self.weights
        if self.cells.empty or w.sum() <= 0:
            raise ValueError(
                "the release has no cells with positive total count for this formula: "
                "use a larger epsilon, fewer bins or a lower threshold"
            )
        return self._formula_model(FreqQuantReg, self.cells, weights=w.astype(float))

    #: fit()'s default quantile (dp_quantreg's ``q``).
    default_q = 0.5

    @checked_keywords
    def fit(self, q: float | None = None, vcov: str = "robust", kernel: str = "epa",
            bandwidth: str = "hsheather", *, cov_type: str = "dp", n_boot: int | None = None,
            random_state=None, cov_kwds: dict | None = None,
            **kwargs) -> RegressionResultsWrapper:
        """Fit quantile ``q``; returns statsmodels QuantReg results (with
        ``.privacy``) whose estimates equal QuantReg on the data set in which
        each cell appears ``count`` times.

        Parameters
        ----------
        q : float, optional
            Quantile, strictly between 0 and 1 (default: dp_quantreg's ``q``,
            else 0.5).
        vcov : {"robust", "iid"}
            The naive covariance's form, as in ``QuantReg.fit`` (cov_type
            "naive" only).
        kernel : {"epa", "biw", "cos", "gau", "par"}
            The naive covariance's kernel, as in ``QuantReg.fit``.
        bandwidth : {"hsheather", "bofinger", "chamberlain"}
            The naive covariance's bandwidth rule, as in ``QuantReg.fit``.
        cov_type : {"dp", "naive"}
            "dp" (default): standard errors, z statistics, p-values and
            intervals from a parametric bootstrap of the release, each
            replicate solved exactly (see `dpmodels.inference`); the
            interval is the plain normal one (estimate -/+ z SE), not
            bias-corrected;
            "naive": QuantReg's ``vcov`` covariance of the expanded data,
            which treats the noisy counts as real rows.
        n_boot : int, optional
            Bootstrap replicates B (default 200).
        random_state : None, int or Generator
            Makes the bootstrap reproducible (None: OS secure entropy).
        cov_kwds : dict, optional
            ``n_boot``, ``random_state``, ``interval``, ``binning_check``;
            see `DPOLS.fit()`.
        **kwargs
            Passed to statsmodels' ``QuantReg.fit`` (``max_iter``,
            ``p_tol``).

        Returns
        -------
        RegressionResultsWrapper
            With ``unresolved``: a boolean mask over ``params`` of the
            coefficients the binning of the response fixes rather than
            estimates (None when the response is not one binned variable).

        Notes
        -----
        On a coarsely binned response many released cells share one response
        value (a bin midpoint, or nearly: every spurious cell sits on its
        midpoint), and the exact minimizer of the check loss can be a plane
        through a large share of them -- e.g. flat, with every slope exactly
        0, when the quantile falls inside the middle bin.  That is the right
        answer for the cells but says nothing about the coefficients it
        fixes: when the cells on the fitted plane that lie in one bin of the
        response hold at least 5% of the noisy total and determine some
        coefficients, those are named in a
        `ReleaseWarning` and in the summary, and
        under cov_type "dp" their standard errors are infinite (every
        bootstrap replicate is held on the same bin, so the replicates'
        spread does not measure them).
        """
        kind, opts = dp_options(cov_type, n_boot, random_state, cov_kwds, allow_nonrobust=False)
        q = self.default_q if q is None else q
        model = self._model
        if model.nobs <= model.exog.shape[1]:
            warnings.warn("the noisy total is not larger than the number of parameters",
                          ReleaseWarning, stacklevel=user_stacklevel())
        with warnings.catch_warnings():
            if kind == "dp":  # the kernel SEs are replaced: their undefined sparsity is moot
                warnings.filterwarnings("ignore", "the sparsity estimate is not finite",
                                        RuntimeWarning)
            res = model.fit(q=q, vcov=vcov, kernel=kernel, bandwidth=bandwidth, **kwargs)
        res._results.privacy = self.privacy
        res._results.release = self.release
        unresolved, message = self._unresolved(res, q)
        res._results.unresolved = unresolved
        res._results.unresolved_message = message
        if message:
            warnings.warn(message, ReleaseWarning, stacklevel=user_stacklevel())
        if kind == "dp":
            inference = self._dp_inference(res, partial(refit_quantreg_batch, q=q),
                                           np.asarray(res.params), opts,
                                           label=f"DP QuantReg (q={q:g}) bootstrap")
            if unresolved is not None and unresolved.any():
                attach_dp_inference(res, _QuantRegDPInference.wrap(inference, unresolved))
        return res

    def _response_bins(self, model: FreqQuantReg):
        """``(axis, codes)``: the response's axis and the bin of each of the
        model's rows, when the formula's response reads exactly one variable
        and it is continuous (binned); else None.  A discrete response's ties
        are the data's own, not the release's."""
        response = formula_variables(self.formula, self.release.domain.names,
                                     self.namespace).response
        if len(response) != 1:
            return None
        axis = self.release.domain.axis(response[0])
        if axis.kind != "continuous":
            return None
        values = self.cells[response[0]]
        labels = getattr(model.data, "row_labels", None)
        if labels is not None:
            values = values.loc[labels]
        if len(values) != model.exog.shape[0]:  # pragma: no cover - rows do not line up
            return None
        return axis, axis.codes(values.to_numpy())[0]

    def _unresolved(self, res, q: float) -> tuple[np.ndarray | None, str | None]:
        """The coefficients the response's binning fixes (see
        `_unresolved_coefficients()`) and the warning naming them."""
        model = res.model
        found = self._response_bins(model)
        if found is None:
            return None, None
        axis, codes = found
        params = np.asarray(res.params, dtype=float)
        resid = _exact_resid(model.endog, model.exog, params)
        mask, groups = _unresolved_coefficients(model.exog, model.weights, resid, codes)
        if not mask.any():
            return mask, None
        names = [str(nm) for nm in model.exog_names]
        flagged = [nm for nm, m in zip(names, mask) if m]
        code, share, _ = groups[0]
        lo, hi = axis.to_values(axis.edges[[int(code), int(code) + 1]])
        on = (resid == 0) & (model.weights > 0) & (codes == code)
        ys = model.endog[on]
        where = (f"every one at {model.endog_names} = {ys[0]:.6g}" if np.ptp(ys) == 0 else
                 f"{model.endog_names} from {ys.min():.6g} to {ys.max():.6g}")
        slopes = [j for j, nm in enumerate(names) if mask[j] and nm != "Intercept"]
        flat = " (every slope among them is 0)" if slopes and np.all(params[slopes] == 0) else ""
        message = (
            f"DP QuantReg (q={q:g}): {', '.join(flagged)} are fixed by the binning of "
            f"{axis.name}, not estimated: the fitted plane passes through released cells that "
            f"hold {share:.1%} of the noisy total and all lie in one bin of {axis.name}, "
            f"[{lo:.6g}, {hi:.6g}] ({where}), so these coefficients are set by where the "
            f"cells' representative points sit inside that bin{flat}. The release cannot "
            "resolve them: treat them as undetermined (with cov_type='dp' their standard "
            f"errors are infinite). Use more bins for {axis.name}, fewer variables or a larger "
            "epsilon.")
        return mask, message

    def fit_many(self, qs: Iterable[float], **kwargs) -> dict[float, RegressionResultsWrapper]:
        """Fit several quantiles from the one release (no extra budget).

        Parameters
        ----------
        qs : iterable of float
            Quantiles, each strictly between 0 and 1.
        **kwargs
            Passed to `fit()`.

        Returns
        -------
        dict of float to results
            One results object per quantile, keyed by ``q``.
        """
        qs = [float(q) for q in qs]
        if not qs:
            raise ValueError("qs is empty: give at least one quantile")
        for q in qs:
            if not 0 < q < 1:
                raise ValueError(f"every q must be strictly between 0 and 1, got {q!r}")
        return {q: self.fit(q=q, **kwargs) for q in qs}
