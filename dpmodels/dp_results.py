"""Results classes' side of the noise-aware covariance: under
``cov_type="dp"`` the results own the bootstrap's covariance, standard
errors, tests and intervals (:class:`DPInferenceResultsMixin`), attached by
:func:`attach_dp_inference`."""

from __future__ import annotations

import numpy as np

from .intervals import DPInference

__all__ = ["DPInferenceResultsMixin", "attach_dp_inference"]


class DPInferenceResultsMixin:
    """Mixin for the Freq* results: when a :class:`DPInference` is attached
    (``cov_type == "dp"``), ``bse``, ``tvalues``, ``pvalues`` and
    ``conf_int`` come from it; otherwise statsmodels' own.

    These are members of the results class itself, so the covariance is the
    results' own (as linearmodels' results take their covariance estimator's
    output) and nothing depends on statsmodels' private result cache."""

    dp_inference: DPInference | None = None

    def _dp_active(self) -> bool:
        return self.dp_inference is not None and getattr(self, "cov_type", None) == "dp"

    def _dp_shape(self, flat: np.ndarray) -> np.ndarray:
        shape = np.shape(self.params)
        return flat.reshape(shape, order="F") if len(shape) == 2 else flat

    @property
    def bse(self):
        """Standard errors; under cov_type "dp", the bootstrap's."""
        if self._dp_active():
            return self._dp_shape(self.dp_inference.se)
        return super().bse

    def cov_params(self, r_matrix=None, column=None, scale=None, cov_p=None, other=None):
        """Covariance of the estimates (statsmodels' signature); under cov_type
        "dp", the bootstrap's covariance is the one every contrast uses."""
        if cov_p is None and self._dp_active():
            cov_p = self.dp_inference.cov
        return super().cov_params(r_matrix=r_matrix, column=column, scale=scale, cov_p=cov_p,
                                  other=other)

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
    """Make ``inference`` the covariance of the results ``res`` (a dpmodels
    results class with :class:`DPInferenceResultsMixin`, or its wrapper).

    The results own it from then on: their ``bse``, ``cov_params``,
    ``tvalues``, ``pvalues`` and ``conf_int`` read it (no statsmodels cache
    is touched: those members are the mixin's, not cached values)."""
    inner = getattr(res, "_results", res)
    if not isinstance(inner, DPInferenceResultsMixin):
        raise TypeError(f"{type(inner).__name__} cannot carry a dp covariance: its class "
                        "does not derive from DPInferenceResultsMixin")
    inner.dp_inference = inference
    inner.cov_type = "dp"
    inner.cov_kwds = {"n_boot": inference.n_boot, "interval": inference.interval,
                      "description": "parametric bootstrap of the release"}
    inner.use_t = False
