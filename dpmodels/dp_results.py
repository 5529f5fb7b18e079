"""Results classes' side of the noise-aware covariance: under
``cov_type="dp"`` the results own the bootstrap's covariance, standard
errors, tests and intervals (`DPInferenceResultsMixin`), attached by
`attach_dp_inference()`."""

from __future__ import annotations

import warnings
from typing import TYPE_CHECKING, Any

import numpy as np
from scipy import stats

from .errors import DPModelsError, ReleaseWarning
from .formula import user_stacklevel
from .intervals import DPInference
from .plots import plot_coefficients

__all__ = ["DPInferenceResultsMixin", "attach_dp_inference"]


def _contrast_cov(R: np.ndarray, V: np.ndarray) -> np.ndarray:
    """``R V R'`` for a covariance with coefficients of infinite variance (the
    release does not measure them): a contrast that involves one has an
    infinite variance and no covariance with the others (statsmodels' plain
    product would give NaN from 0 * inf); the rest is the finite product."""
    lost = ~np.isfinite(np.diag(V))
    finite = np.where(np.isfinite(V), V, 0.0)
    finite[lost, :] = 0.0
    finite[:, lost] = 0.0
    out = R @ finite @ R.T
    touched = np.any(R[:, lost] != 0, axis=1)
    if touched.any():
        out[touched, :] = 0.0
        out[:, touched] = 0.0
        out[touched, touched] = np.inf
    return out


if TYPE_CHECKING:
    #: to the type checker, the (untyped) statsmodels class this mixin is mixed into
    _Results = Any
else:
    _Results = object


class DPInferenceResultsMixin(_Results):
    """The dp-aware members of every dpmodels results class (OLS, logit,
    multinomial logit, quantile regression).

    When a `DPInference` is attached (``cov_type == "dp"``, the default of
    every ``fit()``), ``bse``, ``cov_params()``, ``tvalues``, ``pvalues`` and
    ``conf_int()`` come from the parametric bootstrap of the release, and so
    does every test built on them (``t_test``, ``f_test``, ``wald_test``,
    ``wald_test_terms``, ``anova_lm(res, typ=2)``); otherwise statsmodels'
    own.  statsmodels members that would ignore the privacy noise (likelihood
    ratio and LM comparisons, influence and outlier statistics) are refused
    with the dp-aware alternative.

    These are members of the results class itself, so the covariance is the
    results' own (as linearmodels' results take their covariance estimator's
    output) and nothing depends on statsmodels' private result cache.

    Attributes
    ----------
    dp_inference : DPInference or None
        The bootstrap behind the standard errors under ``cov_type="dp"``;
        None under ``cov_type="naive"``.
    """

    dp_inference: DPInference | None = None

    def _dp_active(self) -> bool:
        return self._active_inference() is not None

    def _active_inference(self) -> DPInference | None:
        """The attached inference when cov_type "dp" uses it, else None."""
        if getattr(self, "cov_type", None) != "dp":
            return None
        return self.dp_inference

    def _dp_shape(self, flat: np.ndarray) -> np.ndarray:
        shape = np.shape(self.params)
        return flat.reshape(shape, order="F") if len(shape) == 2 else flat

    @property
    def bse(self):
        """Standard errors; under cov_type "dp", the bootstrap's."""
        if (inference := self._active_inference()) is not None:
            return self._dp_shape(inference.se)
        return super().bse

    def cov_params(self, r_matrix=None, column=None, scale=None, cov_p=None, other=None):
        """Covariance of the estimates (statsmodels' signature); under cov_type
        "dp", the bootstrap's covariance is the one every contrast uses.

        Parameters
        ----------
        r_matrix : array_like, optional
            Contrasts: the covariance of ``r_matrix @ params``.  Under cov_type
            "dp", a contrast that involves a coefficient the release does not
            measure (infinite variance) has an infinite variance.
        column : int or sequence of int, optional
            The covariance of these coefficients only.
        scale : float, optional
            statsmodels' scale (ignored under cov_type "dp").
        cov_p : array_like, optional
            A covariance to use instead of the results' own.
        other : array_like, optional
            statsmodels' cross-covariance with ``r_matrix``.

        Returns
        -------
        pandas.DataFrame or numpy.ndarray
            As statsmodels (labelled when the fit was on a DataFrame).
        """
        if cov_p is None and (inference := self._active_inference()) is not None:
            cov_p = inference.cov
            if r_matrix is not None and column is None and other is None:
                return _contrast_cov(np.atleast_2d(np.asarray(r_matrix, float)),
                                     np.asarray(cov_p, float))
        return super().cov_params(r_matrix=r_matrix, column=column, scale=scale, cov_p=cov_p,
                                  other=other)

    @property
    def tvalues(self):
        """z statistics; under cov_type "dp", those of the default interval's center."""
        if (inference := self._active_inference()) is not None:
            return self._dp_shape(inference.tvalues)
        return super().tvalues

    @property
    def pvalues(self):
        """Two-sided p-values; under cov_type "dp", from the bootstrap."""
        if (inference := self._active_inference()) is not None:
            return self._dp_shape(inference.pvalues)
        return super().pvalues

    def _dp_no_information(self) -> bool:
        inference = self._active_inference()
        return inference is not None and bool(inference._no_information().any())

    def wald_test(self, r_matrix, cov_p=None, invcov=None, use_f=None, df_constraints=None,
                  scalar=True):
        """statsmodels' Wald test (``f_test`` calls it); under cov_type "dp",
        with the bootstrap's covariance, in which a coefficient the release
        does not measure (infinite variance) adds no evidence: the test uses
        the restrictions' measured part, with statsmodels' degrees of freedom
        (conservative).  A restriction on unmeasured coefficients only has a
        statistic of 0 and p = 1.

        Parameters
        ----------
        r_matrix : str, array_like or tuple
            The restrictions, as statsmodels (e.g. ``"x1 = 0, x2 = 0"``).
        cov_p : array_like, optional
            A covariance to use instead of the results' own.
        invcov : array_like, optional
            The inverse of the restrictions' covariance, if known.
        use_f : bool, optional
            F rather than chi-squared distribution (statsmodels' default).
        df_constraints : int, optional
            Degrees of freedom of the restrictions.
        scalar : bool
            Return scalar statistics (statsmodels' option).

        Returns
        -------
        statsmodels.stats.contrast.ContrastResults
        """
        quiet = False
        if cov_p is None and invcov is None and self._dp_active():
            full = np.asarray(self.cov_params(), float)
            lost = ~np.isfinite(full)
            if lost.any():  # statsmodels forms R V R': 0 * inf would make it NaN
                cov_p = np.where(lost, 0.0, full)
                quiet = self._touches(r_matrix, ~np.isfinite(np.diag(full)))
        with warnings.catch_warnings():
            if quiet:  # the rank statsmodels finds short is the unmeasured coefficients'
                warnings.filterwarnings("ignore", "covariance of constraints does not have "
                                        "full rank")
                warnings.filterwarnings("ignore", "invalid value encountered", RuntimeWarning)
            res = super().wald_test(r_matrix, cov_p=cov_p, invcov=invcov, use_f=use_f,
                                    df_constraints=df_constraints, scalar=scalar)
        dof = res.df_num if res.distribution == "F" else res.df_denom  # set on every F result
        if cov_p is not None and invcov is None and self._dp_active() and int(dof) == 0:
            # every restriction is on unmeasured coefficients: no evidence against it
            res.statistic = 0.0
            if res.distribution == "F":
                res.fvalue = 0.0
            res.pvalue = 1.0
        return res

    def _touches(self, r_matrix, lost: np.ndarray) -> bool:
        """Whether the restrictions ``r_matrix`` involve a coefficient in ``lost``."""
        try:
            from patsy import DesignInfo

            R = np.atleast_2d(DesignInfo(list(self.model.data.cov_names))
                              .linear_constraint(r_matrix).coefs)
        except Exception:  # noqa: BLE001  (a form statsmodels parses its own way)
            return False
        return R.shape[1] == lost.size and bool(np.any(R[:, lost] != 0))

    def measured_wald(self) -> tuple[float, int] | None:
        """The Wald statistic that every coefficient but the constant(s) is 0,
        with the results' covariance (under cov_type "dp", the bootstrap's),
        over the coefficients whose variance is finite, and its degrees of
        freedom; None when there is none.  A coefficient with an infinite
        variance adds no evidence, so this tests the same null hypothesis with
        the evidence the release has (a valid test, with less power)."""
        params = np.asarray(self.params, float).ravel(order="F")
        cov = np.asarray(self.cov_params(), float)
        k = int(self.model.exog.shape[1])
        const = np.zeros(k, bool)
        idx = getattr(self.model.data, "const_idx", None)
        if idx is not None:
            const[np.atleast_1d(idx)] = True
        keep = ~np.tile(const, params.size // k) & np.isfinite(np.diag(cov)) & np.isfinite(params)
        if not keep.any():
            return None
        V = cov[np.ix_(keep, keep)]
        rank = int(np.linalg.matrix_rank(V))
        if rank == 0:
            return None
        b = params[keep]
        return float(b @ np.linalg.pinv(V) @ b), rank

    @property
    def fvalue(self):
        """F statistic that every slope is 0; under cov_type "dp" with
        coefficients the release does not measure (infinite SE), over the
        measured ones (`measured_wald()`), NaN when none is."""
        if not self._dp_no_information():
            return super().fvalue
        test = self.measured_wald()
        return np.nan if test is None else test[0] / test[1]

    @property
    def f_pvalue(self):
        """p-value of `fvalue` (F with the residual degrees of freedom)."""
        if not self._dp_no_information():
            return super().f_pvalue
        test = self.measured_wald()
        return np.nan if test is None else float(
            stats.f.sf(test[0] / test[1], test[1], self.df_resid))

    # ---- statsmodels' comparisons and diagnostics on dp results ------------------------
    #
    # statsmodels computes these from the fitted rows: here those are released cells
    # weighted by noisy counts, whose residual sums of squares and likelihoods do not
    # carry the privacy noise.  Each is dp-aware (a Wald test with the dp covariance) or
    # refused with the reason; none returns the naive statistic silently.

    def _same_release(self, other, what: str) -> None:
        other = getattr(other, "_results", other)
        if getattr(other, "privacy", None) is not self.privacy:
            raise DPModelsError(
                f"{what} compares two fits of ONE release: these come from different releases "
                "(different noise, each charged), so no test between them is valid. Release "
                "once and fit both formulas on it: rel = dpm.release(df, formula=<the larger "
                "formula>, ...); dp_ols(small, rel), dp_ols(large, rel)")

    def compare_f_test(self, restricted):
        """Test the nested ``restricted`` fit against this one: under cov_type
        "dp", the Wald F test, with this fit's dp covariance, that the
        coefficients absent from ``restricted`` are 0 (the residual sums of
        squares of released cells do not carry the privacy noise, so the
        classical F is not used).  Both fits must come from one release.

        Parameters
        ----------
        restricted : results
            The smaller fit, made on the same release (its coefficients a
            proper subset of this fit's).

        Returns
        -------
        tuple of (float, float, int)
            (F, p-value, df_diff), as statsmodels.

        Raises
        ------
        DPModelsError
            When the two fits come from different releases or are not nested.
        """
        self._same_release(restricted, "compare_f_test")
        if not self._dp_active():
            return super().compare_f_test(getattr(restricted, "_results", restricted))
        R = self._restriction_of(restricted, "compare_f_test")
        test = self.f_test(R)
        return float(np.squeeze(test.fvalue)), float(test.pvalue), int(test.df_num)

    def _restriction_of(self, restricted, what: str) -> np.ndarray:
        names = list(self.model.exog_names)
        small = list(getattr(restricted, "model", restricted).exog_names)
        if not set(small) <= set(names) or len(small) >= len(names):
            raise DPModelsError(
                f"{what}: the restricted fit's coefficients {small} must be a proper subset of "
                f"this fit's {names} (nested models, the larger one first)")
        extra = [i for i, nm in enumerate(names) if nm not in small]
        return np.eye(len(names))[extra]

    def compare_lr_test(self, restricted, large_sample=False):
        """Refused under cov_type "dp": the likelihood of released cells
        weighted by noisy counts is not the likelihood of the rows, and a
        likelihood ratio from it ignores the privacy noise.  Use
        `compare_f_test()` (a Wald test with the dp covariance) or
        ``wald_test``.

        Parameters
        ----------
        restricted : results
            The smaller fit, made on the same release.
        large_sample : bool
            statsmodels' option (under cov_type "naive" only).

        Raises
        ------
        DPModelsError
            Under cov_type "dp", always; otherwise when the fits come from
            different releases.
        """
        self._same_release(restricted, "compare_lr_test")
        if not self._dp_active():
            return super().compare_lr_test(getattr(restricted, "_results", restricted),
                                           large_sample=large_sample)
        raise DPModelsError(
            "compare_lr_test compares likelihoods of the released cells, which do not carry the "
            "privacy noise; under cov_type='dp' use res.compare_f_test(restricted) or "
            "res.wald_test(...), which use the dp covariance")

    def compare_lm_test(self, restricted, demean=True, use_lr=False):
        """Refused under cov_type "dp" (see `compare_lr_test()`).

        Parameters
        ----------
        restricted : results
            The smaller fit, made on the same release.
        demean : bool
            statsmodels' option (under cov_type "naive" only).
        use_lr : bool
            statsmodels' option (under cov_type "naive" only).

        Raises
        ------
        DPModelsError
            Under cov_type "dp", always; otherwise when the fits come from
            different releases.
        """
        self._same_release(restricted, "compare_lm_test")
        if not self._dp_active():
            return super().compare_lm_test(getattr(restricted, "_results", restricted),
                                           demean=demean, use_lr=use_lr)
        raise DPModelsError(
            "compare_lm_test uses the released cells' residuals, which do not carry the privacy "
            "noise; under cov_type='dp' use res.compare_f_test(restricted) or res.wald_test(...)")

    def get_influence(self, *args, **kwargs):
        """Refused: influence, leverage and outlier statistics are properties
        of individual rows, and a dp fit has no rows (only released cells
        weighted by noisy counts); computing them would need the raw data.

        Parameters
        ----------
        *args, **kwargs
            statsmodels' arguments (ignored).

        Raises
        ------
        DPModelsError
            Always.
        """
        raise DPModelsError(
            "get_influence measures each row's influence on the fit; a dp fit is made on released "
            "cells weighted by noisy counts, not on rows, so no row's influence can be "
            "computed from it (and publishing it would need the raw data)")

    def outlier_test(self, *args, **kwargs):
        """Refused, as `get_influence()`: a dp fit has released cells, not rows.

        Parameters
        ----------
        *args, **kwargs
            statsmodels' arguments (ignored).

        Raises
        ------
        DPModelsError
            Always.
        """
        raise DPModelsError(
            "outlier_test tests each row's residual; a dp fit has released cells weighted by "
            "noisy counts, not rows, so there are no rows to test")

    def plot_coefficients(self, ax=None, *, nonprivate=None, alpha=0.05, naive=True,
                          scale="auto"):
        """Forest plot of the estimates with their dp and naive intervals (a
        matplotlib Figure); see `dpmodels.plots.plot_coefficients()`.

        Parameters
        ----------
        ax : matplotlib Axes, optional
            Where to draw (default: a new figure).
        nonprivate : pandas Series, dict, array or DataFrame, optional
            The analyst's own non-private estimates, drawn as diamonds
            (matched by coefficient name; see
            `dpmodels.plots.plot_coefficients()`).
        alpha : float
            1 - the intervals' level (default 0.05).
        naive : bool
            Also draw the naive intervals (which ignore the privacy noise).
        scale : {"auto", "shared", "each"}
            One x axis for every coefficient ("shared"), one row per
            coefficient on its own range ("each"), or chosen from the
            coefficients' extents ("auto", default).

        Returns
        -------
        matplotlib.figure.Figure
        """
        return plot_coefficients(self, ax, nonprivate=nonprivate, alpha=alpha, naive=naive,
                                 scale=scale)

    def conf_int(self, alpha=0.05, cols=None, **kwargs):
        """Confidence intervals; under cov_type "dp", the bootstrap intervals.

        Parameters
        ----------
        alpha : float
            1 - the intervals' level (default 0.05: 95% intervals).
        cols : array_like, optional
            The coefficients (positions) to return.
        **kwargs
            ``method=``: the bootstrap interval under cov_type "dp", one of
            "normal", "bc-normal", "basic", "percentile" (default: the fit's
            ``cov_kwds["interval"]``); otherwise passed to statsmodels.

        Returns
        -------
        pandas.DataFrame or numpy.ndarray
            Lower and upper bounds, one row per coefficient (multinomial
            logit: one block per equation, as statsmodels).
        """
        inference = self._active_inference()
        if inference is None:
            return super().conf_int(alpha=alpha, cols=cols, **kwargs) if cols is not None \
                else super().conf_int(alpha=alpha, **kwargs)
        ci = inference.conf_int(alpha, method=kwargs.pop("method", None))
        if len(np.shape(self.params)) == 2:  # multinomial: (J-1, K, 2), as statsmodels
            K, J1 = np.shape(self.params)
            return ci.reshape(J1, K, 2)
        if cols is not None:
            ci = ci[np.asarray(cols)]
        return ci


def attach_dp_inference(res, inference: DPInference, *, warn: bool = True) -> None:
    """Make ``inference`` the covariance of the results ``res`` (a dpmodels
    results class with `DPInferenceResultsMixin`, or its wrapper).

    The results own it from then on: their ``bse``, ``cov_params``,
    ``tvalues``, ``pvalues`` and ``conf_int`` read it (no statsmodels cache
    is touched: those members are the mixin's, not cached values).

    Every mechanism's results pass through here, so here is where a
    coefficient whose error the bootstrap could not measure (infinite SE,
    unbounded interval, p = 1; `DPInference.unmeasured`) is named in a
    `ReleaseWarning` with the reason
    (`DPInference.unmeasured_message()`), unless ``warn`` is False (a
    model that names them itself, in its own words)."""
    inner = getattr(res, "_results", res)
    if not isinstance(inner, DPInferenceResultsMixin):
        raise TypeError(f"{type(inner).__name__} cannot carry a dp covariance: its class "
                        "does not derive from DPInferenceResultsMixin")
    inner.dp_inference = inference
    inner.cov_type = "dp"
    inner.cov_kwds = {"n_boot": inference.n_boot, "interval": inference.interval,
                      "description": "parametric bootstrap of the release"}
    inner.use_t = False
    if warn and inference.unmeasured.any():
        # (the multinomial logits, whose parameters are by equation, name their own)
        names = getattr(getattr(inner, "model", None), "exog_names", None)
        names = list(names) if names is not None and len(names) == inference.params.size else None
        warnings.warn(inference.unmeasured_message(names), ReleaseWarning,
                      stacklevel=user_stacklevel())
