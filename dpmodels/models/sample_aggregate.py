"""The models and results of ``method="sample-aggregate"`` (all four ``dp_*``
functions): a :class:`~dpmodels.sample_aggregate.PrivateSampleAggregate`
release presented as statsmodels presents a fit.

The estimate, its standard errors and intervals are post-processing of the
release (:mod:`dpmodels.sample_aggregate`, "Standard errors"): ``params``,
``bse``, ``tvalues``, ``pvalues``, ``conf_int``, ``cov_params``,
``summary()`` (with the privacy block), ``predict`` on new rows through the
public design.  Names come from the formula's public design; ``nobs`` is
the public n.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import patsy
from statsmodels.iolib.summary import Summary
from statsmodels.iolib.table import SimpleTable
from statsmodels.iolib.tableformatting import fmt_2cols, fmt_params

from ..errors import DPModelsError
from ..sample_aggregate import PrivateSampleAggregate, release_sample_aggregate
from ..summary import add_privacy_block

__all__ = ["DPSampleAggregate", "SampleAggregateResults"]

_NAMES = {"ols": "DP OLS", "logit": "DP Logit", "quantreg": "DP QuantReg",
          "mnlogit": "DP MNLogit"}


class DPSampleAggregate:
    """A ``dp_*`` model on a sample-and-aggregate release.

    Built by ``dp_ols``, ``dp_logit``, ``dp_quantreg`` and ``dp_mnlogit``
    with ``method="sample-aggregate"``; the release is made from raw rows
    (spending epsilon) or taken as given (a :class:`PrivateSampleAggregate`
    of the same family and formula: no budget spent).
    """

    method = "sample-aggregate"

    def __init__(self, family: str, formula: str, data, *, epsilon=None, bounds=None,
                 levels=None, n=None, q=None, blocks=None, param_bounds=None,
                 bias_correction="auto", random_state=None, accountant=None, missing="drop",
                 namespace=None):
        self.family, self.formula = family, formula
        if isinstance(data, PrivateSampleAggregate):
            if data.formula != formula or data.family != family:
                raise DPModelsError(
                    f"this release is a {data.family} fit of {data.formula!r}; it answers that "
                    f"model only (got {family} {formula!r})")
            self.release, self.budget_spent = data, 0.0
        else:
            self.release = release_sample_aggregate(
                data, family=family, formula=formula, epsilon=epsilon, bounds=bounds,
                levels=levels, n=n, q=q, blocks=blocks, param_bounds=param_bounds,
                bias_correction=bias_correction, random_state=random_state,
                accountant=accountant, missing=missing, namespace=namespace)
            self.budget_spent = self.release.report.epsilon

    @property
    def privacy(self):
        """The privacy report of the release."""
        return self.release.report

    @property
    def exog_names(self) -> list[str]:
        return list(self.release.exog_names)

    @property
    def endog_names(self) -> str:
        return self.release.endog_name

    def fit(self, q=None, cov_type: str = "dp", **kwargs) -> "SampleAggregateResults":
        """The results of the release (post-processing: no budget, no noise).

        Parameters
        ----------
        q : float, optional
            quantreg: must be the quantile the blocks were fitted at.
        cov_type : {"dp", "naive"}
            Both give the release's standard errors (sampling and noise); the
            argument is accepted for symmetry with the other dp_* models.

        Examples
        --------
        >>> import numpy as np, pandas as pd, dpmodels as dpm
        >>> rng = np.random.default_rng(0)
        >>> df = pd.DataFrame({"x": rng.uniform(0, 1, 4000)})
        >>> df["y"] = 1 + 2 * df["x"] + rng.normal(0, 0.1, 4000)
        >>> res = dpm.dp_ols("y ~ x", df, epsilon=1.0, bounds={"x": (0, 1), "y": (-1, 4)},
        ...                  method="sample-aggregate", param_bounds=(-5, 5),
        ...                  random_state=0).fit()
        >>> list(res.params.index), [round(v) for v in res.params]
        (['Intercept', 'x'], [1, 2])
        """
        if cov_type not in ("dp", "naive", "nonrobust"):
            raise DPModelsError(f"cov_type must be 'dp' or 'naive', got {cov_type!r}")
        for key in kwargs:
            if key not in ("disp", "cov_kwds", "random_state", "n_boot", "max_iter", "p_tol"):
                raise DPModelsError(f"fit() of a sample-aggregate model does not take {key!r}")
        rel = self.release
        if q is not None and (rel.q is None or abs(float(q) - rel.q) > 1e-12):
            raise DPModelsError(
                f"the blocks were fitted at q={rel.q}; a sample-aggregate release answers its "
                f"own quantile only: pass q= to dp_quantreg (got fit(q={q}))")
        return SampleAggregateResults(self, rel)

    def __repr__(self) -> str:
        return (f"DPSampleAggregate({self.family!r}, {self.formula!r}, "
                f"epsilon={self.release.report.epsilon:g}, blocks={self.release.blocks})")


class SampleAggregateResults:
    """statsmodels-like results of a sample-and-aggregate release.

    ``params`` is a Series named by the public design (mnlogit: a DataFrame,
    one column per non-base level, as statsmodels' MNLogit), ``bse``,
    ``tvalues`` (estimate over standard error), ``pvalues`` and
    ``conf_int`` use the law of the sampling error plus the Laplace noise
    (see :mod:`dpmodels.sample_aggregate`); ``privacy`` is the release's
    report.
    """

    def __init__(self, model: DPSampleAggregate, release: PrivateSampleAggregate):
        self.model = model
        self.release = release
        self.privacy = release.report
        self.nobs = release.report.n
        self.cov_type = "dp"
        self.q = release.q

    # ---- shapes ---------------------------------------------------------------------
    def _shape(self, flat) -> pd.Series | pd.DataFrame:
        rel = self.release
        flat = np.asarray(flat, float)
        if rel.family != "mnlogit":
            return pd.Series(flat, index=list(rel.exog_names))
        K = len(rel.exog_names)
        return pd.DataFrame(flat.reshape(-1, K).T, index=list(rel.exog_names),
                            columns=list(range(len(rel.ynames) - 1)))

    @property
    def params(self):
        return self._shape(self.release.params)

    @property
    def bse(self):
        return self._shape(self.release.bse)

    @property
    def tvalues(self):
        with np.errstate(divide="ignore", invalid="ignore"):
            return self._shape(self.release.params / self.release.bse)

    @property
    def pvalues(self):
        return self._shape(self.release.pvalues())

    def cov_params(self) -> pd.DataFrame:
        """Diagonal covariance (the working coordinates' errors are bounded
        one by one; see the module notes of :mod:`dpmodels.sample_aggregate`)."""
        names = list(self.release.names)
        return pd.DataFrame(np.diag(self.release.bse**2), index=names, columns=names)

    def conf_int(self, alpha: float = 0.05):
        """``1 - alpha`` intervals: the estimate plus or minus the quantile of
        the normal-plus-Laplace law of its error."""
        rel = self.release
        hw = rel.half_width(alpha)
        lo, hi = rel.params - hw, rel.params + hw
        if rel.family != "mnlogit":
            return pd.DataFrame({0: lo, 1: hi}, index=list(rel.exog_names))
        # as statsmodels' (and the histogram route's) MNLogit: rows (response level,
        # coefficient), columns lower / upper
        index = pd.MultiIndex.from_product([[str(v) for v in rel.ynames[1:]], list(rel.exog_names)],
                                           names=[rel.endog_name, None])
        return pd.DataFrame({"lower": lo, "upper": hi}, index=index)

    # ---- prediction -----------------------------------------------------------------
    def predict(self, exog=None):
        """Predictions on new rows (a DataFrame with the formula's variables):
        the linear predictor (OLS, quantreg), the probability of the response's
        last level (logit) or of each level (mnlogit)."""
        if exog is None:
            raise DPModelsError("predict needs new rows (exog=DataFrame): the results hold "
                                "no raw rows")
        info = self.release.space.infos[1]
        with np.errstate(all="ignore"):
            (X,) = patsy.build_design_matrices([info], exog, return_type="dataframe")
        X = np.asarray(X, float)
        theta = self.release.params
        fam = self.release.family
        if fam in ("ols", "quantreg"):
            return pd.Series(X @ theta, index=getattr(exog, "index", None))
        if fam == "logit":
            return pd.Series(1.0 / (1.0 + np.exp(-(X @ theta))), index=getattr(exog, "index", None))
        K = X.shape[1]
        eta = np.column_stack([np.zeros(X.shape[0]), X @ theta.reshape(-1, K).T])
        eta -= eta.max(axis=1, keepdims=True)
        prob = np.exp(eta)
        return pd.DataFrame(prob / prob.sum(axis=1, keepdims=True),
                            index=getattr(exog, "index", None))

    # ---- presentation ---------------------------------------------------------------
    def _notes(self) -> list[str]:
        rel = self.release
        notes = [f"Sample-and-aggregate over {rel.report.blocks:,} blocks: standard errors "
                 "combine the blocks' spread (a private upper estimate) and the known "
                 "Laplace noise; intervals use their exact sum law."]
        if rel.no_information:
            notes.append(f"WARNING: about {rel.failed_share:.0%} of the blocks could not be "
                         "fitted: the release carries no information about any coefficient "
                         "(infinite standard errors, unbounded intervals). Use fewer, larger "
                         "blocks.")
        elif rel.failed_share > 0:
            notes.append(f"About {rel.failed_share:.0%} of the blocks could not be fitted: the "
                         "estimate is the fitted blocks' mean (the failed ones' share, released "
                         "with the mean, taken out) and its errors are scaled to them.")
        if rel.family != "ols":
            notes.append("Not counted: the clamping bias (a range that cuts the blocks' "
                         "estimates unevenly) and the blocks' own small-sample bias.")
        return notes

    def summary(self, alpha: float = 0.05):
        """Summary tables (text, HTML, LaTeX) with the privacy block.

        Examples
        --------
        >>> import numpy as np, pandas as pd, dpmodels as dpm
        >>> rng = np.random.default_rng(0)
        >>> df = pd.DataFrame({"x": rng.uniform(0, 1, 4000)})
        >>> df["y"] = 1 + 2 * df["x"] + rng.normal(0, 0.1, 4000)
        >>> res = dpm.dp_ols("y ~ x", df, epsilon=1.0, bounds={"x": (0, 1), "y": (-1, 4)},
        ...                  method="sample-aggregate", random_state=0).fit()
        >>> "Differential privacy" in res.summary().as_text()
        True
        """
        rel = self.release
        rep = rel.report
        top = [("Dep. Variable:", str(rel.endog_name)),
               ("Model:", _NAMES[rel.family] + (f" (q={rel.q:g})" if rel.q is not None else "")),
               ("Method:", "sample-and-aggregate"),
               ("No. Observations:", f"{self.nobs}"),
               ("Blocks:", f"{rep.blocks:,}"),
               ("Covariance Type:", "dp (sampling + noise)")]
        smry = Summary()
        smry.tables.append(SimpleTable([[v] for _, v in top], stubs=[k for k, _ in top],
                                       title=f"{_NAMES[rel.family]} Regression Results",
                                       txt_fmt=fmt_2cols))
        ci = np.column_stack([rel.params - rel.half_width(alpha), rel.params + rel.half_width(alpha)])
        with np.errstate(divide="ignore", invalid="ignore"):
            z = rel.params / rel.bse
        pv = rel.pvalues()
        rows = [[f"{c:.4g}", f"{s:.3g}", f"{t:.3f}", f"{pp:.3f}", f"{a:.4g}", f"{b:.4g}"]
                for c, s, t, pp, a, b in zip(rel.params, rel.bse, z, pv, ci[:, 0], ci[:, 1])]
        smry.tables.append(SimpleTable(
            rows, headers=["coef", "std err", "z", "P>|z|", f"[{alpha / 2:g}", f"{1 - alpha / 2:g}]"],
            stubs=list(rel.names), txt_fmt=fmt_params))
        return add_privacy_block(smry, rep, self._notes())

    def __repr__(self) -> str:
        return f"<SampleAggregateResults {self.release.family} {self.release.formula!r}>"
