"""Logit and multinomial logit with frequency weights, as statsmodels results.

A released cell with noisy count ``w`` stands for ``w`` identical rows.  The
maximum likelihood fit must therefore be that of the expanded data set, in
which each cell appears ``w`` times:

* log-likelihood, score and Hessian are the weighted sums
  ``sum_i w_i l_i``, ``sum_i w_i s_i`` and ``sum_i w_i H_i``, so the
  estimates and ``cov_params = inv(-H)`` are those of the expanded data;
* ``nobs = sum(w)`` and ``df_resid = nobs - number of parameters``, which
  makes AIC, BIC and the summary's counts those of the expanded data;
* the null (constant-only) model of the pseudo R-squared and the LR test is
  fitted with the same weights.

statsmodels' `Logit` and
`MNLogit` take no weights
(``MNLogit`` only warns about and then ignores ``weights=``), so the
weighting lives in `FreqLogit` and `FreqMNLogit`, which keep
every other behaviour of the statsmodels classes (formulas, ``predict``,
``summary``, Wald tests).

The weights must be non-negative: with negative (signed) counts the
log-likelihood is no longer concave and its maximum need not exist.

Per-observation methods (``loglikeobs``, ``score_obs``, ``score_factor``,
``hessian_factor``) return a cell's total contribution, ``w_i`` times that of
one of its rows, so that they sum to ``loglike``, ``score`` and ``hessian``.
Sandwich (robust) covariances would need the unweighted contributions and are
therefore refused.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd
from scipy import sparse, stats
from scipy.optimize import linprog
from scipy.special import logsumexp
from statsmodels.base import wrapper as wrap
from statsmodels.base.model import LikelihoodModel
from statsmodels.discrete.discrete_model import (
    BinaryResultsWrapper,
    DiscreteModel,
    Logit,
    LogitResults,
    MNLogit,
    MultinomialResults,
    MultinomialResultsWrapper,
)
from statsmodels.iolib.summary import Summary
from statsmodels.tools._decorators import cache_readonly

from ..inference.dp_results import DPInferenceResultsMixin, quiet_refusals
from ..inference.summary import add_privacy_block, add_privacy_block2, inference_notes

__all__ = [
    "FreqLogit",
    "FreqLogitResults",
    "FreqMNLogit",
    "FreqMNLogitResults",
    "separation_direction",
]


if TYPE_CHECKING:
    #: to the type checker, the (untyped) statsmodels class this mixin is mixed into
    _Model = Any
else:
    _Model = object


class _FreqWeights(_Model):
    """Mixin for statsmodels discrete models: frequency weights ``weights``.

    The subclass provides ``_score_factor0`` and ``_hessian_factor0``, the
    unweighted derivatives of one row's log-likelihood with respect to its
    linear predictor(s): ``(n,)``/``(n,)`` for a binary model,
    ``(n, J-1)``/``(n, J-1, J-1)`` for a multinomial one.
    """

    weights: np.ndarray
    df_resid: float  # statsmodels' initialize sets it (rows - parameters); corrected here

    def _check_kwargs(self, kwargs, keys_extra=None, **kw):
        # statsmodels warns about (and drops) init keywords it does not know.
        return super()._check_kwargs(kwargs, [*(keys_extra or ()), "weights"], **kw)

    def initialize(self):
        super().initialize()
        n_rows = self.exog.shape[0]
        w = getattr(self, "weights", None)
        w = np.ones(n_rows) if w is None else np.asarray(w, dtype=float)
        if w.shape != (n_rows,):
            raise ValueError(
                f"weights must be one count per row ({n_rows} rows), got shape {w.shape}"
            )
        if not np.all(np.isfinite(w)) or np.any(w < 0):
            raise ValueError(
                "frequency weights must be finite and >= 0: with negative (signed) counts the "
                "log-likelihood is not concave and the fit is not defined"
            )
        self.weights = w
        self.nobs = float(w.sum())
        # statsmodels counts rows; the expanded data set has sum(w) of them.
        self.df_resid = float(self.df_resid + self.nobs - n_rows)

    def _weigh(self, arr: np.ndarray) -> np.ndarray:
        """Multiply per-row arrays (any trailing shape) by the weights."""
        return self.weights.reshape((-1,) + (1,) * (np.ndim(arr) - 1)) * arr

    def loglike(self, params):
        """Log-likelihood of the expanded data, ``sum_i w_i l_i(params)``."""
        return float(np.sum(self.loglikeobs(params)))

    def score(self, params):
        """Score of the expanded data, ``sum_i w_i s_i(params)``."""
        sf = self._weigh(self._score_factor0(params))
        return np.ravel(sf.T @ self.exog)

    def loglike_and_score(self, params):
        """Log-likelihood and score (for optimizers that take both)."""
        return self.loglike(params), self.score(params)

    def score_obs(self, params):
        """Each cell's contribution to the score: ``w_i`` times one row's."""
        return self._weigh(super().score_obs(params))

    def score_factor(self, params):
        """Each cell's contribution to d loglike / d linear predictor."""
        return self._weigh(self._score_factor0(params))

    def hessian_factor(self, params):
        """Each cell's contribution to d2 loglike / d linear predictor^2."""
        return self._weigh(self._hessian_factor0(params))

    def hessian(self, params):
        """Hessian of the expanded data, ``sum_i w_i H_i(params)``."""
        hf = self.hessian_factor(params)
        X = self.exog
        if hf.ndim == 1:
            return (X.T * hf) @ X
        m, k = hf.shape[1], X.shape[1]
        H = np.empty((m, k, m, k))
        for j in range(m):
            for i in range(j, m):
                block = (X.T * hf[:, j, i]) @ X
                H[j, :, i, :] = block
                H[i, :, j, :] = block.T
        return H.reshape(m * k, m * k)

    def _null_start_params(self) -> np.ndarray:
        """MLE of the constant-only model: log odds of the weighted class shares."""
        if isinstance(self, Logit):  # endog in [0, 1]
            y = np.asarray(self.endog, dtype=float)
            counts = np.array([np.sum(self.weights * (1 - y)), np.sum(self.weights * y)])
        else:
            counts = np.bincount(self.endog, weights=self.weights, minlength=int(self.J))
        with np.errstate(divide="ignore"):
            logodds = np.log(counts[1:]) - np.log(counts[0])
        return np.where(np.isfinite(logodds), logodds, 0.0)

    def _null_model(self):
        """The constant-only model with the same weights (and offset, if any)."""
        kwds = {"weights": self.weights}
        if getattr(self, "offset", None) is not None:
            kwds["offset"] = self.offset
        return type(self)(self.endog, np.ones((self.exog.shape[0], 1)), **kwds)

    def _check_cov_type(self, kwargs):
        cov_type = kwargs.get("cov_type", "nonrobust")
        if cov_type != "nonrobust":
            raise NotImplementedError(
                f"cov_type={cov_type!r} is not available for frequency-weighted cells; use "
                "cov_type='nonrobust' (the covariance of the expanded data)"
            )


class _FreqResults(DPInferenceResultsMixin):
    """Mixin for the results: expanded-data ``nobs``, weighted null model,
    weighted prediction table, summary with the privacy block."""

    #: `PrivacyReport` of the release, when fitted on one.
    privacy: Any = None
    release: Any = None
    #: Names of the parameters along a separating direction (empty: none
    #: found), or None when the fit did not look for separation.
    separation: tuple[str, ...] | None = None
    #: Text telling how the response was coded, when it was (e.g. "y = 1 for 'yes'").
    response_coding: str | None = None
    _model_label = ""

    def _set_freq_nobs(self):
        self.nobs = float(self.model.nobs)

    @cache_readonly
    def llnull(self):
        """Log-likelihood of the constant-only model fitted with the same
        frequency weights (the null model of the expanded data)."""
        model = self.model
        options = dict(getattr(self, "_optim_kwds_null", {}) or {})
        start = options.pop("start_params", model._null_start_params())
        options = {"method": "newton", "maxiter": 100, "disp": 0, **options}
        res_null = model._null_model().fit(start_params=start, **options)
        if getattr(self, "_attach_nullmodel", False) is not False:
            self.res_null = res_null
        return float(res_null.llf)

    def get_margeff(self, *args, **kwargs):
        """Not available: statsmodels averages marginal effects over rows,
        which here are cells, not observations."""
        raise NotImplementedError(
            "marginal effects of frequency-weighted cells are not implemented (statsmodels "
            "would average over cells instead of observations)"
        )

    def _weighted_pred_table(self, actual, predicted, bins):
        return np.histogram2d(actual, predicted, bins=bins, weights=self.model.weights)[0]

    def summary(self, yname=None, xname=None, title=None, alpha=0.05, yname_list=None):
        """Summary in the statsmodels layout of the model, on the expanded
        data, with the privacy block when fitted on a release.

        Parameters
        ----------
        yname, xname, title, alpha, yname_list
            As in statsmodels' ``DiscreteResults.summary``.

        Returns
        -------
        dpmodels.inference.summary.DPSummary
            Renders with ``as_text()``, ``as_html()`` and ``as_latex()``.
        """
        with quiet_refusals(self):  # a refused statistic reads n/a
            top_left = [
                ("Dep. Variable:", None),
                ("Model:", [self._model_label]),
                ("Method:", [self.method]),
                ("Date:", None),
                ("Time:", None),
                ("converged:", [f"{self.mle_retvals['converged']}"]),
                ("Covariance Type:", [self.cov_type]),
            ]
            top_right = [
                ("No. Observations:", None),
                ("Df Residuals:", None),
                ("Df Model:", None),
                ("Pseudo R-squ.:", [f"{self.prsquared:#6.4g}"]),
                ("Log-Likelihood:", None),
                ("LL-Null:", [f"{self.llnull:#8.5g}"]),
                ("LLR p-value:", [f"{self.llr_pvalue:#6.4g}"]),
            ]
            if self.cov_type == "dp":  # the likelihood ratio of noisy cells is not a test
                top_right[-1] = ("Wald p-value (dp):", [f"{self.dp_wald_pvalue():#6.4g}"])
            smry = Summary()
            yname, yname_list = self._get_endog_name(yname, yname_list)
            smry.add_table_2cols(self, gleft=top_left, gright=top_right, yname=yname,
                                 xname=xname, title=self._summary_title(title))
            smry.add_table_params(self, yname=yname_list, xname=xname, alpha=alpha,
                                  use_t=self.use_t)
        notes = self._summary_notes()
        return add_privacy_block(smry, self.privacy, notes, results=self)

    def dp_wald_pvalue(self) -> float:
        """p-value of the joint Wald test that every coefficient but the
        constant(s) is 0, with the results' covariance (under the dp
        covariance: the bootstrap's, noise included), over the coefficients
        whose variance is finite (an unmeasured one adds no evidence).  NaN
        when none is.  Shown in the dp summary in place of statsmodels' LLR
        p-value, the likelihood ratio of the noisy cells as if they were rows.

        Examples
        --------
        >>> import numpy as np, pandas as pd, dpmodels as dpm
        >>> rng = np.random.default_rng(0)
        >>> x = rng.uniform(0, 1, 2000)
        >>> df = pd.DataFrame({"x": x, "y": (rng.random(2000) < x).astype(int)})
        >>> res = dpm.dp_logit("y ~ x", df, epsilon=3.0, bounds={"x": (0, 1)},
        ...                    levels={"y": [0, 1]}, method="histogram",
        ...                    random_state=0).fit(random_state=1)
        >>> bool(res.dp_wald_pvalue() < 1e-6)
        True
        """
        test = self.measured_wald()
        return float("nan") if test is None else float(stats.chi2.sf(*test))

    def _summary_title(self, title):
        if title is not None:
            return title
        newton = getattr(self, "source", "cells") == "newton"
        return (("DP " if self.privacy is not None else "") + self._model_label
                + " Regression Results "
                + ("(noisy Newton steps)" if newton else "(frequency-weighted cells)"))

    def _summary_notes(self) -> list[str]:
        newton = getattr(self, "source", "cells") == "newton"
        notes = [] if newton else list(getattr(self, "_separation_etext", []))
        if self.separation:
            notes.append(
                "Separation: the likelihood keeps increasing along a direction involving "
                f"{', '.join(self.separation)}; these estimates and their standard errors "
                "are not identified."
            )
        if self.response_coding:
            notes.append(f"Response coding: {self.response_coding}.")
        if newton:
            notes.append("Fitted by noisy Newton steps of the likelihood: nobs is the noisy "
                         "number of rows; the log-likelihood is not released (n/a).")
        elif self.privacy is None:
            notes.append("Rows weighted by their frequencies: nobs and degrees of freedom are "
                         "those of the expanded data.")
        else:
            notes.append("Fitted on released histogram cells weighted by their noisy counts; "
                         "nobs and degrees of freedom are those of the noisy total.")
        return notes + inference_notes(self)

    def summary2(self, alpha=0.05, float_format="%.4f", **kwargs):
        """statsmodels' ``summary2`` layout with the notes and privacy block of
        `summary()`."""
        with quiet_refusals(self):  # a refused statistic reads n/a
            title = self._summary_title(kwargs.pop("title", None))
            smry = super().summary2(alpha=alpha, float_format=float_format, **kwargs)
            smry.add_title(title)  # (statsmodels' would name the helper class, "FreqLogit")
        return add_privacy_block2(smry, self.privacy, self._summary_notes(), results=self)


class FreqLogit(_FreqWeights, Logit):
    """Logit model whose ``weights`` are frequencies (counts of identical rows).

    Estimates, standard errors, log-likelihoods, information criteria and
    summary equal those of `statsmodels.discrete.discrete_model.Logit`
    on the data set in which row ``i`` appears ``weights[i]`` times.

    Parameters
    ----------
    endog : array_like
        0/1 response, one value per row.
    exog : array_like
        Design matrix (add a constant yourself, or use ``from_formula``).
    weights : array_like, optional
        Non-negative frequency of each row (default 1).
    **kwargs
        As for ``Logit`` (``offset``, ``missing``, ``check_rank``).

    Examples
    --------
    >>> import numpy as np, statsmodels.api as sm
    >>> X = sm.add_constant(np.array([0.0, 0.0, 1.0, 1.0, 2.0, 2.0]))
    >>> y = np.array([0, 1, 0, 1, 0, 1])
    >>> w = np.array([30, 10, 20, 20, 10, 30])
    >>> res = FreqLogit(y, X, weights=w).fit(disp=0)
    >>> ref = sm.Logit(np.repeat(y, w), np.repeat(X, w, axis=0)).fit(disp=0)
    >>> bool(np.allclose(res.params, ref.params) and np.allclose(res.bse, ref.bse))
    True
    >>> res.nobs, res.df_resid
    (120.0, 118.0)
    """

    def _linpred(self, params):
        return self.predict(params, which="linear")

    def _score_factor0(self, params):
        return self.endog - self.cdf(self._linpred(params))

    def _hessian_factor0(self, params):
        p = self.cdf(self._linpred(params))
        return -p * (1 - p)

    def loglikeobs(self, params):
        """Each cell's log-likelihood, ``w_i * log Lambda(q_i x_i'b)``
        (computed without overflow for large linear predictors)."""
        q = 2 * self.endog - 1
        return -self.weights * np.logaddexp(0.0, -q * self._linpred(params))

    def fit(self, start_params=None, method="newton", maxiter=35, full_output=1, disp=1,
            callback=None, **kwargs):
        """Maximum likelihood fit; see ``statsmodels Logit.fit``.  Only
        ``cov_type="nonrobust"`` is available."""
        self._check_cov_type(kwargs)
        mlefit = DiscreteModel.fit(self, start_params=start_params, method=method,
                                   maxiter=maxiter, full_output=full_output, disp=disp,
                                   callback=callback, **kwargs)
        return FreqLogitResultsWrapper(FreqLogitResults(self, mlefit))


class FreqLogitResults(_FreqResults, LogitResults):
    """statsmodels `LogitResults` of a dp logit fit, equal to those of
    ``Logit`` on the expanded data set (each released cell repeated
    ``count`` times).

    Every statsmodels attribute and method works; those that would ignore
    the privacy noise are dp-aware or refused (`DPInferenceResultsMixin`).
    ``llnull`` (and so ``llr``, ``prsquared``) is that of the constant-only
    model with the same frequency weights; ``pred_table()`` counts the
    expanded data.

    Attributes
    ----------
    privacy : ReleaseReport or None
        The privacy report of the release the fit was made on (a `PrivacyReport`, or a
        `MomentsReport` for noisy Newton steps);
        None for a fit made without a release.
    release
        The release the fit was made on (`PrivateHistogram`, `PrivateNewton` or a local release).
    dp_inference : DPInference or None
        Under ``cov_type="dp"`` (the default), the parametric bootstrap that
        gives ``bse``, ``cov_params()``, ``tvalues``, ``pvalues`` and
        ``conf_int()`` (`dpmodels.inference.intervals.DPInference`: replicates,
        intervals, the binning check); None under ``cov_type="naive"``.
    cov_type : str
        "dp" or "nonrobust" (the naive covariance).
    separation : tuple of str or None
        Names of the parameters along a separating direction of the released
        cells (empty: none found), or None when the fit did not look
        (``separation="ignore"``).
    response_coding : str or None
        How the response was coded as 0/1, when it was (e.g. "y = 1 for 'yes'").
    """

    _model_label = "Logit"

    def __init__(self, model, mlefit, cov_type="nonrobust", cov_kwds=None, use_t=None):
        super().__init__(model, mlefit, cov_type=cov_type, cov_kwds=cov_kwds, use_t=use_t)
        self._set_freq_nobs()
        # statsmodels' separation diagnostic, counted over observations, not cells.
        w = model.weights
        close = np.abs(model.endog - model.cdf(self.fittedvalues)) < 1e-4
        frac = float(np.sum(w * close) / w.sum()) if w.sum() > 0 else 0.0
        etext = []
        if np.all(close[w > 0]):
            etext.append("Complete Separation: every observation is perfectly predicted; the "
                         "maximum likelihood estimator does not exist and the parameters are "
                         "not identified.")
        elif frac > 0.1:
            etext.append(f"Possibly complete quasi-separation: a fraction {frac:4.2f} of "
                         "observations can be perfectly predicted; some parameters may not be "
                         "identified.")
        self._separation_etext = etext

    def pred_table(self, threshold=0.5):
        """Prediction table of the expanded data: ``[i, j]`` counts
        observations with response ``i`` predicted as ``j``.

        Parameters
        ----------
        threshold : float
            Predicted probability above which a row is predicted 1 (default 0.5).

        Returns
        -------
        numpy.ndarray
        """
        pred = np.asarray(self.predict() > threshold, dtype=float)
        return self._weighted_pred_table(self.model.endog, pred, np.array([0, 0.5, 1]))


class FreqMNLogit(_FreqWeights, MNLogit):
    """Multinomial logit whose ``weights`` are frequencies (counts of
    identical rows).

    Estimates, standard errors, log-likelihoods, information criteria and
    summary equal those of `statsmodels.discrete.discrete_model.MNLogit`
    on the data set in which row ``i`` appears ``weights[i]`` times.

    Parameters
    ----------
    endog : array_like
        Category of each row (numbers, strings or integer codes).
    exog : array_like
        Design matrix.
    weights : array_like, optional
        Non-negative frequency of each row (default 1).
    ylevels : sequence, optional
        When ``endog`` holds integer codes, the level each code stands for;
        the levels then name the equations (``y=level``) as statsmodels
        would name them for ``endog`` holding the levels themselves.
    **kwargs
        As for ``MNLogit``.

    Examples
    --------
    >>> import numpy as np, statsmodels.api as sm
    >>> X = sm.add_constant(np.repeat([0.0, 1.0, 2.0], 3))
    >>> y = np.tile([0, 1, 2], 3)
    >>> w = np.array([20, 10, 5, 10, 10, 10, 5, 10, 20])
    >>> res = FreqMNLogit(y, X, weights=w).fit(disp=0)
    >>> ref = sm.MNLogit(np.repeat(y, w), np.repeat(X, w, axis=0)).fit(disp=0)
    >>> bool(np.allclose(res.params, ref.params) and np.allclose(res.bse, ref.bse))
    True
    >>> res.nobs, res.df_resid
    (100.0, 96.0)
    """

    _ynames_map: dict[int, Any]  # statsmodels' MNLogit._handle_data sets it: code -> name

    def __init__(self, endog, exog, weights=None, ylevels=None, check_rank=True, **kwargs):
        self._ylevels = None if ylevels is None else tuple(ylevels)
        if weights is not None:
            kwargs["weights"] = weights
        super().__init__(endog, exog, check_rank=check_rank, **kwargs)

    def _handle_data(self, endog, exog, missing, hasconst, **kwargs):
        data = super()._handle_data(endog, exog, missing, hasconst, **kwargs)
        if self._ylevels is not None:
            self._ynames_map = {i: self._ylevels[int(code)] for i, code in self._ynames_map.items()}
        return data

    def _probs(self, params):
        params = np.asarray(params).reshape(self.K, -1, order="F")
        return self.cdf(self.exog @ params)

    def _score_factor0(self, params):
        return self.wendog[:, 1:] - self._probs(params)[:, 1:]

    def _hessian_factor0(self, params):
        p = self._probs(params)[:, 1:]
        hf = p[:, :, None] * p[:, None, :]
        idx = np.arange(p.shape[1])
        hf[:, idx, idx] -= p
        return hf  # p_j p_l - 1(j=l) p_j: d2 log p_y / d eta_j d eta_l

    def loglikeobs(self, params):
        """Each cell's log-likelihood contributions, ``w_i * d_ij * log p_ij``
        (``n x J``; computed with a stable log-softmax)."""
        params = np.asarray(params).reshape(self.K, -1, order="F")
        xb = np.column_stack([np.zeros(self.exog.shape[0]), self.exog @ params])
        logprob = xb - logsumexp(xb, axis=1, keepdims=True)
        return self._weigh(self.wendog * logprob)

    def fit(self, start_params=None, method="newton", maxiter=35, full_output=1, disp=1,
            callback=None, **kwargs):
        """Maximum likelihood fit; see ``statsmodels MNLogit.fit``.  Only
        ``cov_type="nonrobust"`` is available."""
        self._check_cov_type(kwargs)
        if start_params is None:
            start_params = np.zeros(self.K * (self.J - 1))
        if callback is None:
            def callback(params, *args):
                return None
        mlefit = LikelihoodModel.fit(self, start_params=np.asarray(start_params),
                                     method=method, maxiter=maxiter, full_output=full_output,
                                     disp=disp, callback=callback, **kwargs)
        mlefit.params = mlefit.params.reshape(self.K, -1, order="F")
        return FreqMNLogitResultsWrapper(FreqMNLogitResults(self, mlefit))


class FreqMNLogitResults(_FreqResults, MultinomialResults):
    """statsmodels `MultinomialResults` of a dp multinomial logit fit,
    equal to those of ``MNLogit`` on the expanded data set (each released
    cell repeated ``count`` times).  ``params`` has one column per non-base
    level of the response, as statsmodels'.

    Every statsmodels attribute and method works; those that would ignore
    the privacy noise are dp-aware or refused (`DPInferenceResultsMixin`).

    Attributes
    ----------
    privacy : ReleaseReport or None
        The privacy report of the release the fit was made on (a `PrivacyReport`);
        None for a fit made without a release.
    release
        The release the fit was made on (a `PrivateHistogram` or a local release).
    dp_inference : DPInference or None
        Under ``cov_type="dp"`` (the default), the parametric bootstrap that
        gives ``bse``, ``cov_params()``, ``tvalues``, ``pvalues`` and
        ``conf_int()`` (`dpmodels.inference.intervals.DPInference`: replicates,
        intervals, the binning check); None under ``cov_type="naive"``.
    cov_type : str
        "dp" or "nonrobust" (the naive covariance).
    separation : tuple of str or None
        Names of the parameters along a separating direction (empty: none
        found), or None when the fit did not look.
    response_coding : str or None
        How the response's levels were coded, when they were.
    """

    _model_label = "MNLogit"

    def __init__(self, model, mlefit):
        super().__init__(model, mlefit)
        self._set_freq_nobs()

    @cache_readonly
    def fittedvalues(self):
        """Linear predictors of the non-base classes at each released cell,
        one column per equation (statsmodels' own wrapper cannot label
        MNLogit's: it raises on pandas data)."""
        fitted = np.asarray(self.model.exog) @ np.asarray(self.params)
        ynames = getattr(self.model, "_ynames_map", {})
        index = getattr(self.model.data, "row_labels", None)
        return pd.DataFrame(fitted, index=index,
                            columns=[ynames.get(j, j) for j in range(1, fitted.shape[1] + 1)])

    def pred_table(self):
        """``J x J`` prediction table of the expanded data."""
        ju = self.model.J - 1
        bins = np.concatenate(([0], np.linspace(0.5, ju - 0.5, ju), [ju]))
        return self._weighted_pred_table(self.model.endog, self.predict().argmax(1), bins)


class FreqLogitResultsWrapper(BinaryResultsWrapper):
    """statsmodels' wrapper around `FreqLogitResults` (its own ``conf_int``)."""


wrap.populate_wrapper(FreqLogitResultsWrapper, FreqLogitResults)


class FreqMNLogitResultsWrapper(MultinomialResultsWrapper):
    """statsmodels' wrapper around `FreqMNLogitResults` (its own ``conf_int``;
    ``fittedvalues`` labelled by the results)."""

    _wrap_attrs = {k: v for k, v in MultinomialResultsWrapper._wrap_attrs.items()
                   if k != "fittedvalues"}


wrap.populate_wrapper(FreqMNLogitResultsWrapper, FreqMNLogitResults)


def separation_direction(exog: np.ndarray, classes: np.ndarray, n_classes: int,
                         tol: float = 1e-7) -> np.ndarray | None:
    """A direction along which a (multinomial) logit likelihood increases forever.

    Looks for ``B`` (``k x (J-1)``, the base class's coefficients fixed at 0)
    with ``x_i'(b_{y_i} - b_c) >= 0`` for every row ``i`` and class
    ``c != y_i``, not all of them 0.  Such a ``B`` exists exactly when the
    data are completely or quasi-completely separated (Albert & Anderson
    1984), i.e. when the maximum likelihood estimate does not exist.  It is
    found by a linear program (maximize the sum of those margins in the box
    ``|B| <= 1``, columns of ``exog`` scaled to max 1), as in Konis (2007).

    Parameters
    ----------
    exog : ndarray, (n, k)
        Design matrix (rows with zero weight left out).
    classes : ndarray of int, (n,)
        Class index of each row, in ``0 .. n_classes - 1`` (0/1 for a logit).
    n_classes : int
    tol : float
        Margins sums below this count as 0.

    Returns
    -------
    ndarray (k, n_classes - 1) or None
        The direction (in units of the original columns, up to scale), or
        None when the data are not separated.

    Examples
    --------
    >>> X = np.column_stack([np.ones(4), [0.0, 1.0, 2.0, 3.0]])
    >>> separation_direction(X, np.array([0, 0, 1, 1]), 2) is not None
    True
    >>> separation_direction(X, np.array([0, 1, 0, 1]), 2) is None
    True
    """
    X = np.asarray(exog, dtype=float)
    y = np.asarray(classes, dtype=int)
    n, k = X.shape
    m = n_classes - 1
    if n == 0 or m < 1:
        return None
    scale = np.abs(X).max(axis=0)
    scale[scale == 0] = 1.0
    Xs = X / scale
    # One margin row per (observation, other class c): x_i'(b_{y_i} - b_c) >= 0,
    # with b_0 = 0; variables are B's columns 1..J-1 stacked (k each).
    rows, cols, vals = [], [], []
    r = 0
    ar = np.arange(n)
    for c in range(n_classes):
        sel = ar[y != c]
        if sel.size == 0:
            continue
        row_ids = r + np.arange(sel.size)
        r += sel.size
        for sign, cls in ((1.0, y[sel]), (-1.0, np.full(sel.size, c))):
            keep = cls > 0
            rr = np.repeat(row_ids[keep], k)
            cc = ((cls[keep] - 1)[:, None] * k + np.arange(k)).ravel()
            vv = (sign * Xs[sel[keep]]).ravel()
            rows.append(rr)
            cols.append(cc)
            vals.append(vv)
    A = sparse.csr_matrix((np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))),
                          shape=(r, k * m))
    objective = -np.asarray(A.sum(axis=0)).ravel()
    res = linprog(objective, A_ub=-A, b_ub=np.zeros(r), bounds=(-1.0, 1.0), method="highs")
    if res.status != 0 or -res.fun <= tol * max(1.0, np.sqrt(r)):
        return None
    x = np.where(np.abs(res.x) > 1e-6, res.x, 0.0)
    return x.reshape(m, k).T / scale[:, None]
