"""Models fitted on a sample-and-aggregate release (:mod:`dpmodels.aggregate`).

Results
-------
The estimate is the release's noisy average of clamped block estimates.  It
is handed to statsmodels as the exact fit of public points: the design of the
formula's public grid (:func:`dpmodels.moments._grid_frame`, the declared
bounds and levels) with responses on the fitted plane, so ``params`` are the
release's and ``predict``, ``conf_int``, ``t_test`` and ``summary`` work.  Fit
statistics are not released: ``prsquared``, ``sparsity``, ``bandwidth`` are NaN,
``nobs`` is the public n.

Standard errors (cov_type "dp")
-------------------------------
Analytic, post-processing of the release: ``unit**2 h**2 (s_u**2 / k + noise
variance)`` per coefficient (see :mod:`dpmodels.aggregate`).  The noise is
(discrete) Laplace, heavier-tailed than a normal: the standard error is
raised so that the normal 95% interval ``estimate -/+ 1.96 SE`` has the 95%
coverage of the exact law ``N(0, spread / k) + Laplace(noise)``
(:func:`laplace_normal_factor`; at most ``3.00 / (1.96 sqrt 2) = 1.08``,
when the noise dominates).  Covariances between coefficients are not
released: the covariance is diagonal, so single-coefficient tests are right
and joint tests (``f_test``, ``wald_test`` of several) treat the estimates as
independent.  One centre (the estimate) for every test
(:class:`~dpmodels.models.moments_ols.MomentsInference`).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from functools import cached_property

import numpy as np
import pandas as pd
import patsy
from scipy import integrate, optimize, stats

from ..aggregate import PrivateAggregate, release_aggregate
from ..errors import DPModelsError
from ..moments import _grid_frame
from ..summary import add_privacy_block
from .base import dp_options
from .moments_ols import MOMENTS_INTERVAL, FormulaReleaseModel, MomentsInference
from .quantreg import FreqQuantReg, FreqQuantRegResults, FreqQuantRegResultsWrapper

__all__ = ["DPSampleAggregateQuantReg", "SampleAggregateQuantRegResults", "AggregateInference",
           "laplace_normal_factor"]

#: Public points the results are fitted through, at most (the grid's first rows).
_GRID_POINTS = 2000


def laplace_normal_factor(sd_normal: float, sd_laplace: float, level: float = 0.95) -> float:
    """``q / (z sqrt(var))``: the factor by which the standard deviation of
    ``N(0, sd_normal**2) + Laplace(sd_laplace)`` must be raised for the normal
    interval of ``level`` to have that coverage (``q`` its exact quantile).

    Examples
    --------
    >>> round(laplace_normal_factor(0.0, 1.0), 3)
    1.081
    >>> laplace_normal_factor(1.0, 0.0)
    1.0
    """
    total = math.hypot(sd_normal, sd_laplace)
    if sd_laplace <= 0 or total == 0:
        return 1.0
    b = sd_laplace / math.sqrt(2.0)
    tail = (1.0 - level) / 2.0
    if sd_normal <= 1e-9 * sd_laplace:
        q = -b * math.log(2.0 * tail)
    else:
        def sf(x):  # P(N + L > x), L Laplace(b): integrate over L's density
            f = lambda l: stats.norm.sf((x - l) / sd_normal) * math.exp(-abs(l) / b) / (2 * b)
            lim = 50.0 * b + abs(x)
            return integrate.quad(f, -lim, lim, points=[0.0, x], limit=200)[0] - tail
        q = optimize.brentq(sf, 0.0, 10.0 * total)
    return max(1.0, q / (stats.norm.isf(tail) * total))


@dataclass(frozen=True, eq=False)
class AggregateInference(MomentsInference):
    """The sample-and-aggregate release's own covariance (no replicates): the
    released variance per coefficient, raised for the Laplace noise's tails
    (:func:`laplace_normal_factor`); diagonal."""

    variance: np.ndarray | None = None
    se_description = ("block spread / k plus the known noise variance, raised for the "
                      "Laplace noise's tails")

    # the released variance is the spread; with no bias and no binning shift the base
    # class's mean squared error, covariance and standard errors are that spread
    @cached_property
    def spread(self) -> np.ndarray:
        return np.diag(np.asarray(self.variance, float))

    @cached_property
    def bias(self) -> np.ndarray:
        return np.zeros(self.params.size)

    def notes(self, names=None) -> list[str]:
        return [
            "Covariance type dp: from the sample-and-aggregate release (post-processing): "
            f"standard errors are the {self.se_description}; intervals are normal "
            "(estimate -/+ z SE), z statistics and p-values use the same centre and SE. "
            "Covariances between coefficients are not released (diagonal covariance): joint "
            "tests treat the estimates as independent."]


class SampleAggregateQuantRegResults(FreqQuantRegResults):
    """QuantReg results of a sample-and-aggregate release: the estimate and its
    standard errors are released; fit statistics are not (NaN)."""

    source = "sample-aggregate"

    @property
    def nobs(self):
        return float(self.release.report.n)

    @property
    def prsquared(self):
        return np.nan

    @property
    def sparsity(self):
        return np.nan

    @property
    def bandwidth(self):
        return np.nan

    def summary(self, yname=None, xname=None, title=None, alpha=0.05):
        """QuantReg-layout summary with the privacy block."""
        if title is None:
            title = "DP QuantReg Regression Results (sample-and-aggregate)"
        smry = super(FreqQuantRegResults, self).summary(yname=yname, xname=xname, title=title,
                                                        alpha=alpha)
        rel = self.release
        notes = [f"Quantile q = {self.q:g}. The estimate is the noisy average of QuantReg fits "
                 f"on {rel.blocks} disjoint blocks of rows, each clamped to its range; nobs is "
                 "the public n; fit statistics (pseudo R-squared, bandwidth, sparsity) are not "
                 "released."]
        if self.dp_inference is not None and self.cov_type == "dp":
            notes += self.dp_inference.notes()
        return add_privacy_block(smry, self.privacy, notes)


class DPSampleAggregateQuantReg(FormulaReleaseModel):
    """Differentially private quantile regression by sample-and-aggregate.

    Built by :func:`dpmodels.dp_quantreg` with ``method="sample-aggregate"``.
    The release is made for one quantile ``q`` (given when the model is
    built); see :mod:`dpmodels.aggregate`.
    """

    _name = "DP QuantReg (sample-and-aggregate)"
    method = "sample-aggregate"
    _release_type = PrivateAggregate
    _release_fn = staticmethod(release_aggregate)

    def __init__(self, formula: str, data, *, epsilon=None, bounds=None, levels=None, n=None,
                 random_state=None, accountant=None, missing="drop", namespace=None,
                 domain_check=None, q: float = 0.5, blocks=None, param_bounds=None):
        self.formula = formula
        if isinstance(data, PrivateAggregate):
            if data.space.formula != formula or data.estimator != "quantreg":
                raise DPModelsError(
                    f"this release was made for {data.estimator} of {data.space.formula!r}; a "
                    f"sample-and-aggregate release answers its own formula only")
            self.release, self.budget_spent = data, 0.0
        else:
            self.release = release_aggregate(
                data, formula=formula, epsilon=epsilon, estimator="quantreg", q=q,
                blocks=blocks, param_bounds=param_bounds, bounds=bounds, levels=levels, n=n,
                random_state=random_state, accountant=accountant, missing=missing,
                namespace=namespace, domain_check=domain_check)
            self.budget_spent = self.release.report.epsilon

    def fit(self, q: float | None = None, *, cov_type: str = "dp", n_boot=None, random_state=None,
            cov_kwds: dict | None = None, **kwargs):
        """The released estimate as statsmodels QuantReg results (with ``.privacy``).

        Parameters
        ----------
        q : float, optional
            Must be the release's quantile (a new quantile needs a new release).
        cov_type : {"dp", "naive"}
            "dp" (default): the release's standard errors (block spread and
            noise).  "naive": the block spread alone (ignores the noise).
        n_boot, random_state, cov_kwds
            Accepted for the common interface; nothing is simulated.
        **kwargs
            QuantReg's ``vcov``, ``kernel``, ``bandwidth``: ignored (no naive
            QuantReg covariance is computed from the rows).

        Examples
        --------
        >>> import numpy as np, pandas as pd, dpmodels as dpm
        >>> rng = np.random.default_rng(0)
        >>> df = pd.DataFrame({"x": rng.uniform(-1, 1, 20_000)})
        >>> df["y"] = 1 + 2 * df["x"] + rng.laplace(size=20_000).clip(-5, 5)
        >>> res = dpm.dp_quantreg("y ~ x", df, epsilon=1.0, bounds={"x": (-1, 1), "y": (-6, 8)},
        ...                       method="sample-aggregate", random_state=0).fit(q=0.5)
        >>> [round(float(b)) for b in res.params], bool(np.all(res.bse > 0))
        ([1, 2], True)
        """
        rel = self.release
        if q is not None and float(q) != rel.q:
            raise DPModelsError(f"this release is for q = {rel.q:g}; q = {q!r} needs a new "
                                "release (dp_quantreg(..., method='sample-aggregate', q=...))")
        kind, opts = dp_options(cov_type, n_boot, random_state, cov_kwds,
                                default_interval=MOMENTS_INTERVAL)
        t0 = time.perf_counter()
        space = rel.space
        grid = _grid_frame(space.formula, space.domain).iloc[:_GRID_POINTS]
        (X,) = patsy.build_design_matrices([space.infos[1]], grid)
        X = np.asarray(X, float)
        params = np.asarray(rel.params, float)
        exog = pd.DataFrame(X, columns=list(space.exog_names))
        endog = pd.Series(X @ params, name=space.endog_name)
        model = FreqQuantReg(endog, exog, weights=np.ones(len(X)))
        model.formula = self.formula
        model.data.model_spec = space.infos[1]
        model.df_resid = float(rel.report.n - params.size)  # public n, not the grid points
        noise = np.asarray(rel.noise_var, float)
        spread = np.maximum(np.asarray(rel.variance, float) - noise, 0.0)
        if kind == "dp":
            factor = np.array([laplace_normal_factor(math.sqrt(s), math.sqrt(v))
                               for s, v in zip(spread, noise)])
            variance = np.asarray(rel.variance, float) * factor**2
        else:
            variance = spread
        inner = SampleAggregateQuantRegResults(model, params, normalized_cov_params=np.diag(
            variance), scale=1.0)
        inner.q = rel.q
        inner.privacy, inner.release = rel.report, rel
        inner.cov_type = "naive"
        if kind == "dp":
            inference = AggregateInference(
                params=params, replicates=np.empty((0, params.size)), n_boot=0, n_failed=0,
                interval=opts["interval"], simulation="none (analytic)",
                seeded=False, elapsed=time.perf_counter() - t0, target=params,
                variance=variance)
            inner.dp_inference = inference
            inner.cov_type = "dp"
            inner.cov_kwds = {"description": "sample-and-aggregate release"}
            inner.use_t = False
            inner.cov_params_default = inference.cov
        return FreqQuantRegResultsWrapper(inner)
