"""Least squares with frequency weights, as statsmodels results.

A released cell with noisy count w stands for w identical rows.  The fit
must therefore be that of the expanded data set: nobs = sum(w),
df_resid = sum(w) - rank, scale = sum(w e^2) / df_resid, and the Gaussian
log-likelihood of sum(w) observations.  statsmodels' WLS treats weights as
precisions (nobs = number of rows, a log|W| term in the likelihood), so
this module adjusts exactly those pieces and keeps everything else of
`statsmodels.regression.linear_model.RegressionResults`.

Signed weights (Lei's Algorithm 1, no threshold) are supported through the
normal equations X'WX b = X'Wy, which stay well defined when a few cells
carry negative counts.
"""

from __future__ import annotations

import sys
from types import FrameType
from typing import Any

import numpy as np
from statsmodels.base import wrapper as wrap
from statsmodels.regression.linear_model import (
    WLS,
    RegressionResults,
    RegressionResultsWrapper,
)
from statsmodels.tools._decorators import cache_readonly, cache_writable
from statsmodels.tools.tools import pinv_extended

from ..core.errors import DPModelsError
from ..core.weighted_stats import weighted_jarque_bera, weighted_omni_normtest
from ..inference.dp_results import DPInferenceResultsMixin, quiet_refusals
from ..inference.summary import add_privacy_block, add_privacy_block2, inference_notes

__all__ = ["FreqWLS", "FreqRegressionResults", "FreqRegressionResultsWrapper"]


class FreqWLS(WLS):
    """Weighted least squares where ``weights`` are frequencies (counts).

    Parameters
    ----------
    endog, exog : array_like
    weights : array_like
        Frequency of each row; may be negative for signed noisy counts.
    """

    def whiten(self, x):
        x = np.asarray(x)
        root = np.sqrt(np.abs(self.weights))
        return x * root if x.ndim == 1 else root[:, None] * x

    def initialize(self):
        super().initialize()
        self.nobs = float(np.sum(self.weights))

    @property
    def signed(self) -> bool:
        return bool(np.any(self.weights < 0))

    def loglike(self, params):
        """Gaussian log-likelihood of the expanded data (concentrated in sigma^2)."""
        resid = self.endog - self.exog @ params
        ssr = float(np.sum(self.weights * resid**2))
        n = self.nobs
        return -n / 2.0 * (np.log(2 * np.pi * ssr / n) + 1.0)

    def fit(self, cov_type="nonrobust", cov_kwds=None, use_t=None, **kwargs):
        """Fit by least squares on the expanded data (no expansion is made)."""
        if cov_type != "nonrobust":
            raise NotImplementedError(
                f"cov_type={cov_type!r} is not available for frequency-weighted cells; "
                "use cov_type='nonrobust'"
            )
        # solved in a well-conditioned basis Z (X = Z A): see _conditioning
        Z, A_inv = _conditioning(np.asarray(self.exog, float))
        if self.signed:
            ztwz = Z.T @ (self.weights[:, None] * Z)
            ztwy = Z.T @ (self.weights * self.endog)
            eig = np.linalg.eigvalsh(ztwz)
            tol = eig.max() * max(ztwz.shape) * np.finfo(float).eps
            self.rank = int(np.sum(np.abs(eig) > tol))
            inv_z = np.linalg.pinv(ztwz, hermitian=True)
            self.normalized_cov_params = A_inv @ inv_z @ A_inv.T
            xtwx = self.exog.T @ (self.weights[:, None] * self.exog)
            self.wexog_singular_values = np.sqrt(np.sort(np.abs(np.linalg.eigvalsh(xtwx)))[::-1])
            self.pinv_wexog = None
            beta = A_inv @ (inv_z @ ztwy)
        else:
            pinv_wz, singular_z = pinv_extended(self.whiten(Z))
            pinv_wexog = A_inv @ pinv_wz
            self.pinv_wexog = pinv_wexog
            self.normalized_cov_params = pinv_wexog @ pinv_wexog.T
            # (the design's own singular values: statsmodels' condition number)
            self.wexog_singular_values = np.linalg.svd(self.wexog, compute_uv=False)
            self.rank = int(np.linalg.matrix_rank(np.diag(singular_z)))
            beta = pinv_wexog @ self.wendog
        self._df_model = float(self.rank - self.k_constant)
        self.df_resid = self.nobs - self.rank
        res = FreqRegressionResults(
            self, beta, normalized_cov_params=self.normalized_cov_params,
            cov_type=cov_type, cov_kwds=cov_kwds, use_t=use_t, **kwargs,
        )
        return FreqRegressionResultsWrapper(res)


def _conditioning(X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(Z, A^-1)`` with ``X = Z A``: every non-constant column centred at
    the middle of its range and divided by its half-range (when the design
    has a constant column to absorb the centres; else only scaled), so that
    least squares on ``Z`` is well conditioned whatever the units and
    offsets of the covariates (a year near 2000 beside an income near 1e5;
    NIST's Longley).  The coefficients on X are ``A^-1`` times those on Z,
    exactly in exact arithmetic.  Everything here is read from the fitted
    rows (released cells or points carrying released moments):
    post-processing."""
    k = X.shape[1]
    if X.shape[0] == 0:
        return X, np.eye(k)
    lo, hi = X.min(axis=0), X.max(axis=0)
    const = np.flatnonzero((lo == hi) & (lo != 0))
    varying = lo != hi
    half = np.where(varying, (hi - lo) / 2.0, 1.0)
    centre = np.where(varying & (const.size > 0), (hi + lo) / 2.0, 0.0)
    c0 = const[0] if const.size else None
    Z = (X - centre) / half
    A_inv = np.diag(1.0 / half)
    if c0 is not None:
        # X_j = Z_c0 * (centre_j / value_c0) + Z_j * half_j  (Z_c0 = value_c0)
        Z[:, c0] = X[:, c0]
        value = X[0, c0]
        A_inv[c0, :] -= centre / half / value
        A_inv[c0, c0] = 1.0
    return Z, A_inv


def _read_by_anova_of_models() -> bool:
    """True when the reader of ``ssr`` is statsmodels' ``anova_lm`` itself,
    which reads it directly only when it compares several models (through the
    results wrapper's attribute lookup, and a comprehension's frame in Python
    3.11; the single-model tables read it from ``anova2_lm_single`` etc.)."""
    frame: FrameType | None = sys._getframe(2)
    for _ in range(4):
        if frame is None:
            return False
        module = frame.f_globals.get("__name__")
        if module == "statsmodels.stats.anova":
            return frame.f_code.co_name in ("anova_lm", "<listcomp>")
        if module != "statsmodels.base.wrapper":
            return False
        frame = frame.f_back
    return False


class FreqRegressionResults(DPInferenceResultsMixin, RegressionResults):
    """statsmodels `RegressionResults` of a dp OLS fit, equal to those of
    OLS on the expanded data set (each released cell's representative
    repeated ``count`` times), or computed from released moments.

    Every statsmodels attribute and method works; those that would ignore
    the privacy noise are dp-aware or refused (`DPInferenceResultsMixin`).

    Attributes
    ----------
    privacy : ReleaseReport or None
        The privacy report of the release the fit was made on (a `PrivacyReport` for a
        histogram, a `MomentsReport` for noisy moments);
        None for a fit made without a release.
    release
        The release the fit was made on (`PrivateHistogram` or `PrivateMoments`).
    dp_inference : DPInference or None
        Under ``cov_type="dp"`` (the default), the parametric bootstrap that
        gives ``bse``, ``cov_params()``, ``tvalues``, ``pvalues`` and
        ``conf_int()`` (`dpmodels.inference.intervals.DPInference`: replicates,
        intervals, the binning check); None under ``cov_type="naive"``.
    cov_type : str
        "dp" or "nonrobust" (the naive covariance).
    source : str
        What the fit was made on: "cells" (a histogram) or "moments".
    """

    privacy: Any = None
    release: Any = None
    #: What the fit was made on: "cells" (a histogram) or "moments".
    source = "cells"

    @cache_readonly
    def nobs(self):
        return float(self.model.nobs)

    @cache_readonly
    def _cells_ssr(self):
        return float(np.sum(self.model.weights * self.resid**2))

    @property
    def ssr(self):
        """Weighted residual sum of squares of the cells (descriptive).  Under
        cov_type "dp", statsmodels' ``anova_lm`` of several models, which would
        difference these into an F statistic without the privacy noise, is refused
        with the dp-aware alternative (`compare_f_test()`)."""
        if self._dp_active() and _read_by_anova_of_models():
            raise DPModelsError(
                "anova_lm(small, large) differences the models' residual sums of squares, which "
                "do not carry the privacy noise; under cov_type='dp' use "
                "large.compare_f_test(small) (a Wald test with the dp covariance; both fits on "
                "one release), or anova_lm(res, typ=2) / typ=3 on one fit")
        return self._cells_ssr

    @property
    def effects(self):
        """statsmodels' orthogonal effects; refused under cov_type "dp": they
        give anova_lm's type 1 (sequential) sums of squares, which do not carry
        the privacy noise."""
        if self._dp_active():
            raise DPModelsError(
                "anova_lm(res) (type 1, sequential sums of squares) reads the cells' effects, "
                "which do not carry the privacy noise; under cov_type='dp' use "
                "anova_lm(res, typ=2) or typ=3 (their F tests use the dp covariance), or "
                "res.wald_test_terms()")
        return super().effects

    @cache_readonly
    def uncentered_tss(self):
        return float(np.sum(self.model.weights * self.model.endog**2))

    @cache_readonly
    def rsquared(self):
        """statsmodels' R-squared; NaN, without numpy's divide warning, when
        every released cell has the same response (a total sum of squares of 0)."""
        with np.errstate(divide="ignore", invalid="ignore"):
            return float(RegressionResults.rsquared.func(self))

    @cache_readonly
    def rsquared_adj(self):
        """statsmodels' adjusted R-squared (NaN as `rsquared` is)."""
        with np.errstate(divide="ignore", invalid="ignore"):
            return float(RegressionResults.rsquared_adj.func(self))

    @cache_writable()
    def scale(self):
        return self.ssr / self.df_resid

    @cache_readonly
    def llf(self):
        return self.model.loglike(self.params)

    def _diagnostic_cache(self) -> dict:
        """Residual diagnostics of the expanded data (NaN on moments, which do not
        release residuals, and on the cells of a private release, whose tests
        would ignore the privacy noise); Durbin-Watson is NaN (cells have no order)."""
        cache = self.__dict__.setdefault("_summary_cache", {})
        w = self.model.weights
        if "jarque_bera" not in cache:
            privacy = self.privacy
            private = privacy is not None and bool(getattr(privacy, "private", True))
            if np.all(w > 0) and self.source != "moments" and not private:
                cache["jarque_bera"] = weighted_jarque_bera(self.resid, w)
                cache["omni_normtest"] = weighted_omni_normtest(self.resid, w)
            else:
                cache["jarque_bera"] = (np.nan,) * 4
                cache["omni_normtest"] = (np.nan, np.nan)
            cache["durbin_watson"] = np.nan
        return cache

    @property
    def diagn(self) -> dict:
        """statsmodels' dict of the summary's diagnostics, always the
        summary's values: the condition number and smallest eigenvalue of the
        released design, and the residual normality tests (omnibus,
        Jarque-Bera, skew, kurtosis) of the expanded data at ``epsilon=inf``,
        NaN ("n/a" in the summary) on a private release or on moments, whose
        tests would ignore the privacy noise (`_diagnostic_cache()`).

        statsmodels sets ``diagn`` on the instance when ``summary()`` runs;
        here it is a member of the class, so ``dir(res)`` is the same before
        and after a summary and the privacy-aware values cannot be replaced
        by statsmodels' tests of the cells."""
        cache = self._diagnostic_cache()
        jb, jbpv, skew, kurtosis = cache["jarque_bera"]
        omni, omnipv = cache["omni_normtest"]
        return dict(condno=self.condition_number, mineigval=np.asarray(self.eigenvals)[-1],
                    jb=jb, jbpv=jbpv, skew=skew, kurtosis=kurtosis, omni=omni, omnipv=omnipv)

    @diagn.setter
    def diagn(self, value) -> None:
        """statsmodels' ``summary()`` assigns (and then updates) its dict; the
        property above gives the same statistics from the same cache, the
        refused ones NaN, so the assignment is not kept."""

    def _summary_title(self, title):
        if title is not None:
            return title
        return ("DP " if self.privacy is not None else "") + "OLS Regression Results " + (
            "(noisy moments)" if self.source == "moments" else "(frequency-weighted cells)")

    def _summary_notes(self) -> list[str]:
        notes = (["Fitted on released moments of the design; nobs is the noisy number of rows; "
                  "residual diagnostics (omnibus, skew, kurtosis, Jarque-Bera) are not "
                  "available from moments."] if self.source == "moments" else
                 ["Fitted on released histogram cells weighted by their noisy counts; "
                  "nobs and degrees of freedom are those of the noisy total."])
        if self.privacy is not None and self.privacy.private:
            notes.append("The log-likelihood, AIC, BIC" + (
                "" if self.source == "moments" else " and the residual normality tests "
                "(omnibus, skew, kurtosis, Jarque-Bera)") + " of the released "
                + ("moments" if self.source == "moments" else "cells")
                + " do not carry the privacy noise: not given (n/a); use res.wald_test or "
                "res.compare_f_test.")
        return notes + inference_notes(self)

    def summary(self, yname=None, xname=None, title=None, alpha=0.05, slim=False):
        """OLS-layout summary of the expanded data, plus the privacy block.

        Residual diagnostics (omnibus, skew, kurtosis, Jarque-Bera) are those
        of the expanded data at ``epsilon=inf`` and n/a on a private release
        (they would ignore the privacy noise), as are the log-likelihood, AIC
        and BIC (`dpmodels.inference.dp_results.CONTRACTS`); Durbin-Watson is left out
        (cells have no order).

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
        slim : bool
            statsmodels' short layout.

        Returns
        -------
        statsmodels.iolib.summary.Summary
        """
        self._diagnostic_cache()
        with quiet_refusals(self):  # a refused statistic reads n/a
            smry = super().summary(yname=yname, xname=xname, title=self._summary_title(title),
                                   alpha=alpha, slim=slim)
        return add_privacy_block(smry, self.privacy, self._summary_notes(), results=self)

    def summary2(self, yname=None, xname=None, title=None, alpha=0.05, float_format="%.4f"):
        """statsmodels' ``summary2`` layout with the same residual diagnostics,
        notes and privacy block as `summary()`.

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

        Examples
        --------
        >>> import numpy as np, pandas as pd, dpmodels as dpm
        >>> rng = np.random.default_rng(0)
        >>> df = pd.DataFrame({"x": rng.uniform(0, 10, 5000)})
        >>> df["y"] = 1 + 0.5 * df["x"] + rng.normal(size=5000)
        >>> res = dpm.dp_ols("y ~ x", df, epsilon=1.0, bounds={"x": (0, 10), "y": (-10, 20)},
        ...                  random_state=0).fit(random_state=0)
        >>> "Differential privacy" in str(res.summary2())
        True
        """
        from statsmodels.iolib import summary2

        cache = self._diagnostic_cache()
        jb, jbpv, skew, kurtosis = cache["jarque_bera"]
        omni, omnipv = cache["omni_normtest"]

        def f(v):
            return "n/a" if not np.isfinite(v) else f"{v:.3f}"

        diagnostic = {"Omnibus:": f(omni), "Prob(Omnibus):": f(omnipv), "Skew:": f(skew),
                      "Kurtosis:": f(kurtosis), "Jarque-Bera (JB):": f(jb), "Prob(JB):": f(jbpv),
                      "Condition No.:": f"{self.condition_number:.0f}"}
        smry = summary2.Summary()
        with quiet_refusals(self):  # a refused statistic reads n/a
            smry.add_base(results=self, alpha=alpha, float_format=float_format, xname=xname,
                          yname=yname, title=self._summary_title(title))
        smry.add_dict(diagnostic)
        return add_privacy_block2(smry, self.privacy, self._summary_notes(), results=self)


class FreqRegressionResultsWrapper(RegressionResultsWrapper):
    """statsmodels' wrapper (pandas labels) around `FreqRegressionResults`,
    whose own wrapped methods (``conf_int``) are used."""


wrap.populate_wrapper(FreqRegressionResultsWrapper, FreqRegressionResults)
