"""The models and results of ``method="sample-aggregate"`` (all four ``dp_*``
functions): a `PrivateSampleAggregate`
release presented as statsmodels presents a fit.

The estimate, its standard errors and intervals are post-processing of the
release (`dpmodels.mechanisms.sample_aggregate`, "Standard errors"): ``params``,
``bse``, ``tvalues``, ``pvalues``, ``conf_int``, ``cov_params``,
``summary()`` and ``summary2()`` (with the privacy block), ``predict`` and
``get_prediction`` on new rows through the public design, ``t_test``,
``wald_test`` and ``f_test`` (normal / chi-squared / F approximations with
``cov_params``), ``save`` and ``load``.  Names come from the formula's public
design; ``nobs`` is the public n.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import patsy
from statsmodels.iolib.summary import Summary
from statsmodels.iolib.table import SimpleTable
from statsmodels.iolib.tableformatting import fmt_2cols, fmt_params

from ...core.errors import DPModelsError, DPModelsTypeError
from ...core.keywords import checked_keywords
from ...inference.dp_results import install_contract
from ...inference.summary import add_privacy_block, add_privacy_block2
from ...mechanisms.sample_aggregate import PrivateSampleAggregate, release_sample_aggregate

__all__ = ["DPSampleAggregate", "SampleAggregateResults"]

_NAMES = {"ols": "DP OLS", "logit": "DP Logit", "quantreg": "DP QuantReg",
          "mnlogit": "DP MNLogit"}


class DPSampleAggregate:
    """A ``dp_*`` model on a sample-and-aggregate release.

    Built by ``dp_ols``, ``dp_logit``, ``dp_quantreg`` and ``dp_mnlogit``
    with ``method="sample-aggregate"``; the release is made from raw rows
    (spending epsilon) or taken as given (a `PrivateSampleAggregate`
    of the same family and formula: no budget spent).

    Attributes
    ----------
    family : str
        "ols", "logit", "quantreg" or "mnlogit".
    formula : str
        The model's formula.
    release : PrivateSampleAggregate
        The release the model is fitted on.
    method : str
        "sample-aggregate".
    budget_spent : float
        The epsilon this model's construction spent (0 on an existing
        release).
    """

    method = "sample-aggregate"

    def __init__(self, family: str, formula: str, data: PrivateSampleAggregate):
        """The model of a released sample-and-aggregate fit: nothing is read or
        spent.  To release from raw rows, call the ``dp_*`` function with
        ``method="sample-aggregate"`` (or `from_formula()`)."""
        if not isinstance(data, PrivateSampleAggregate):
            raise DPModelsTypeError(
                f"DPSampleAggregate(family, formula, data) fits on a release (a "
                f"PrivateSampleAggregate), got {type(data).__name__}: to release from raw rows "
                "call the dp_* function with method='sample-aggregate' or "
                "DPSampleAggregate.from_formula(family, formula, data, epsilon=...)")
        if data.formula != formula or data.family != family:
            raise DPModelsError(
                f"this release is a {data.family} fit of {data.formula!r}; it answers that "
                f"model only (got {family} {formula!r})")
        self.family, self.formula = family, formula
        self.release, self.budget_spent = data, 0.0

    @classmethod
    def from_call(cls, call) -> DPSampleAggregate:
        """The model of a ``dp_*`` call with ``method="sample-aggregate"`` (or a
        sample-aggregate release as data), its options checked first."""
        options = dict(call.options)
        blocks = options.pop("blocks", None)
        param_bounds = options.pop("param_bounds", None)
        bias_correction = options.pop("bias_correction", "auto")
        missing = options.pop("missing", "drop")
        if options:
            raise DPModelsError(
                f"method='sample-aggregate' does not take {sorted(options)[0]!r}; its options "
                "are blocks=, param_bounds=, bias_correction= and missing=")
        if call.bins != "auto" or call.threshold != "enhanced":
            raise DPModelsError("bins= and threshold= are options of the histogram release; "
                                "method='sample-aggregate' does not take them")
        return cls.from_formula(
            call.family, call.formula, call.data, epsilon=call.epsilon, bounds=call.bounds,
            levels=call.levels, n=call.n, q=call.q, blocks=blocks, param_bounds=param_bounds,
            bias_correction=bias_correction, random_state=call.random_state,
            accountant=call.accountant, missing=missing, namespace=call.namespace)

    @classmethod
    def from_formula(cls, family: str, formula: str, data, *, epsilon=None, bounds=None,
                     levels=None, n=None, q=None, blocks=None, param_bounds=None,
                     bias_correction="auto", random_state=None, accountant=None,
                     missing="drop", namespace=None) -> DPSampleAggregate:
        """Release the sample-and-aggregate fit of ``formula`` from the raw rows
        ``data`` (spending ``epsilon``), then build the model on it; on a
        release, the model on it (nothing spent).

        Parameters
        ----------
        family : {"ols", "logit", "quantreg", "mnlogit"}
            The statsmodels model fitted on each block.
        formula : str
            A patsy formula.
        data : pandas.DataFrame, mapping, engine frame or PrivateSampleAggregate
            Raw rows (one release, spending ``epsilon``) or a release of this
            family and formula (nothing spent).
        epsilon : float, optional
            Privacy parameter of the release (required for raw rows).
        bounds : dict of str to (low, high), optional
            Public bounds of each continuous variable.
        levels : dict of str to list, optional
            Public level sets of the discrete variables.
        n : int, optional
            The public number of rows (default: the rows handed in).
        q : float, optional
            The quantile (quantreg only).
        blocks : int, optional
            The number of blocks k (default: `dpmodels.mechanisms.sample_aggregate.default_blocks()`).
        param_bounds : (low, high) or dict, optional
            Public range of the coefficients, for all or per coefficient (without
            it a private range is released on part of epsilon).
        bias_correction : {"auto", "firth", "split-half", None}
            The blocks' bias correction: "auto" (default) is "firth" for the
            logit, none for the others; "split-half", the delete-half
            jackknife (any family).
        random_state : None, int or Generator
            The release's randomness (None: OS secure entropy).
        accountant : Accountant, optional
            Charged with ``epsilon`` before anything is read.
        missing : {"drop", "raise"}
            What to do with rows with a missing value.
        namespace : mapping, optional
            Where the formula's names are looked up.

        Returns
        -------
        DPSampleAggregate
        """
        if isinstance(data, PrivateSampleAggregate):
            return cls(family, formula, data)
        rel = release_sample_aggregate(
            data, family=family, formula=formula, epsilon=epsilon, bounds=bounds,
            levels=levels, n=n, q=q, blocks=blocks, param_bounds=param_bounds,
            bias_correction=bias_correction, random_state=random_state,
            accountant=accountant, missing=missing, namespace=namespace)
        model = cls(family, formula, rel)
        model.budget_spent = rel.report.epsilon
        return model

    @property
    def privacy(self):
        """The privacy report of the release."""
        return self.release.report

    @property
    def exog_names(self) -> list[str]:
        """The design's column names, as statsmodels' ``model.exog_names``."""
        return list(self.release.exog_names)

    @property
    def endog_names(self) -> str:
        """The response's name, as statsmodels' ``model.endog_names``."""
        return self.release.endog_name

    @checked_keywords
    def fit(self, q=None, cov_type: str = "dp", **kwargs) -> SampleAggregateResults:
        """The results of the release (post-processing: no budget, no noise).

        Parameters
        ----------
        q : float, optional
            quantreg: must be the quantile the blocks were fitted at.
        cov_type : {"dp", "naive"}
            Both give the release's standard errors (sampling and noise); the
            argument is accepted for symmetry with the other dp_* models.
        **kwargs
            statsmodels' ``fit`` options ``disp``, ``cov_kwds``,
            ``random_state``, ``n_boot``, ``max_iter``, ``p_tol``: accepted
            and ignored (the blocks were fitted when the release was made);
            any other is refused.

        Returns
        -------
        SampleAggregateResults

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

    ``bse``, ``tvalues``, ``pvalues`` and ``conf_int()`` use the law of the
    sampling error plus the Laplace noise (see `dpmodels.mechanisms.sample_aggregate`).

    Attributes
    ----------
    params : pandas.Series or pandas.DataFrame
        The released estimates, named by the public design (mnlogit: a
        DataFrame, one column per non-base level, as statsmodels' MNLogit).
    bse : pandas.Series or pandas.DataFrame
        Standard errors: the sampling error of the block average and the
        Laplace noise together.
    tvalues : pandas.Series or pandas.DataFrame
        Estimate over standard error.
    pvalues : pandas.Series or pandas.DataFrame
        Two-sided p-values under the same law.
    privacy : SampleAggregateReport
        The release's privacy report.
    release : PrivateSampleAggregate
        The release the results were made from.
    model : DPSampleAggregate
        The model that was fitted.
    nobs : int
        The public number of rows.
    cov_type : str
        "dp" (the only one).
    q : float or None
        The quantile (quantile regression), else None.
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
        # columns named by the non-base levels, as the histogram route's MNLogit
        return pd.DataFrame(flat.reshape(-1, K).T, index=list(rel.exog_names),
                            columns=[str(v) for v in rel.ynames[1:]])

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
        one by one; see the module notes of `dpmodels.mechanisms.sample_aggregate`)."""
        names = list(self.release.names)
        return pd.DataFrame(np.diag(self.release.bse**2), index=names, columns=names)

    def conf_int(self, alpha: float = 0.05):
        """``1 - alpha`` intervals: the estimate plus or minus the quantile of
        the normal-plus-Laplace law of its error.

        Parameters
        ----------
        alpha : float
            1 - the level of the intervals (default 0.05).

        Returns
        -------
        pandas.DataFrame
            Lower and upper bounds, one row per coefficient.
        """
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
        last level (logit) or of each level (mnlogit).

        Parameters
        ----------
        exog : pandas.DataFrame
            New rows with the formula's variables (required: the results hold no
            raw rows).

        Returns
        -------
        pandas.Series or pandas.DataFrame
        """
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

    # ---- tests of linear hypotheses ---------------------------------------------------
    def _constraint(self, r_matrix, q_matrix=None):
        """``(R, q)`` of a hypothesis: a string such as ``"x = 0, z = 1"`` (names
        as in ``release.names``), a matrix, or a (matrix, values) pair."""
        names = list(self.release.names)
        if isinstance(r_matrix, str) or (isinstance(r_matrix, (list, tuple))
                                         and r_matrix and isinstance(r_matrix[0], str)):
            from patsy.constraint import linear_constraint

            lc = linear_constraint(r_matrix, names)
            return lc.coefs, lc.constants[:, 0]
        if isinstance(r_matrix, tuple) and len(r_matrix) == 2 and q_matrix is None:
            r_matrix, q_matrix = r_matrix
        R = np.atleast_2d(np.asarray(r_matrix, float))
        if R.shape[1] != len(names):
            raise DPModelsError(f"the hypothesis matrix has {R.shape[1]} columns; the model has "
                                f"{len(names)} parameters ({', '.join(names)})")
        q = np.zeros(R.shape[0]) if q_matrix is None else np.asarray(q_matrix, float).ravel()
        return R, q

    def _wald(self, r_matrix, q_matrix=None):
        R, q = self._constraint(r_matrix, q_matrix)
        effect = R @ self.release.params - q
        cov = R @ np.diag(self.release.bse**2) @ R.T
        return R, effect, cov

    def t_test(self, r_matrix, q_matrix=None):
        """z tests of each row of a linear hypothesis ``R params = q``.

        The variance of ``R params`` comes from `cov_params()` (the
        sampling error plus the noise's variance, each coordinate bounded on
        its own); the z statistic is referred to the normal law, an
        approximation of the normal-plus-Laplace law that
        `conf_int()` and ``pvalues`` use exactly for one coefficient.

        Parameters
        ----------
        r_matrix : str, array_like or tuple
            The hypothesis: a string such as ``"x = 0, z = 1"`` (names as in
            ``release.names``), a matrix R, or a pair (R, q).
        q_matrix : array_like, optional
            The values q (default 0).

        Returns
        -------
        statsmodels.stats.contrast.ContrastResults

        Examples
        --------
        >>> import numpy as np, pandas as pd, dpmodels as dpm
        >>> rng = np.random.default_rng(0)
        >>> df = pd.DataFrame({"x": rng.uniform(0, 1, 4000)})
        >>> df["y"] = 1 + 2 * df["x"] + rng.normal(0, 0.1, 4000)
        >>> res = dpm.dp_ols("y ~ x", df, epsilon=1.0, bounds={"x": (0, 1), "y": (-1, 4)},
        ...                  method="sample-aggregate", param_bounds=(-5, 5),
        ...                  random_state=0).fit()
        >>> t = res.t_test("x = 2")
        >>> bool(abs(t.effect[0]) < 4 * t.sd[0])
        True
        """
        from statsmodels.stats.contrast import ContrastResults

        _, effect, cov = self._wald(r_matrix, q_matrix)
        sd = np.sqrt(np.diag(cov))
        with np.errstate(divide="ignore", invalid="ignore"):
            z = effect / sd
        return ContrastResults(effect=effect, sd=sd, statistic=z, df_denom=None,
                               distribution="norm")

    def wald_test(self, r_matrix, q_matrix=None, scalar: bool = True):
        """The chi-squared Wald test of a joint linear hypothesis ``R params =
        q`` with `cov_params()` (see `t_test()` for the law).

        Parameters
        ----------
        r_matrix : str, array_like or tuple
            The hypothesis: a string such as ``"x = 0, z = 1"`` (names as in
            ``release.names``), a matrix R, or a pair (R, q).
        q_matrix : array_like, optional
            The values q (default 0).
        scalar : bool
            statsmodels' option (the statistic is always a scalar here).

        Returns
        -------
        statsmodels.stats.contrast.ContrastResults
        """
        from statsmodels.stats.contrast import ContrastResults

        R, effect, cov = self._wald(r_matrix, q_matrix)
        stat = float(effect @ np.linalg.pinv(cov) @ effect)
        # (statsmodels' own chi2 Wald results carry the degrees of freedom as df_denom)
        return ContrastResults(statistic=stat, df_denom=R.shape[0], distribution="chi2",
                               dist_args=(R.shape[0],))

    def f_test(self, r_matrix, q_matrix=None):
        """The Wald statistic over its degrees of freedom, referred to F with
        the blocks' degrees of freedom (k blocks minus the parameters) in the
        denominator: the spread behind the standard errors is estimated from
        the k blocks.

        Parameters
        ----------
        r_matrix : str, array_like or tuple
            The hypothesis: a string such as ``"x = 0, z = 1"`` (names as in
            ``release.names``), a matrix R, or a pair (R, q).
        q_matrix : array_like, optional
            The values q (default 0).

        Returns
        -------
        statsmodels.stats.contrast.ContrastResults
        """
        from scipy import stats
        from statsmodels.stats.contrast import ContrastResults

        R, effect, cov = self._wald(r_matrix, q_matrix)
        J = R.shape[0]
        F = float(effect @ np.linalg.pinv(cov) @ effect) / J
        den = max(self.release.report.blocks - len(self.release.names), 1)
        return ContrastResults(F=F, df_num=J, df_denom=den,
                               pvalue=float(stats.f.sf(F, J, den)), distribution="F")

    # ---- prediction with intervals ---------------------------------------------------
    def get_prediction(self, exog=None):
        """Predictions on new rows with standard errors and intervals of the
        mean (``.summary_frame(alpha)``: mean, mean_se, mean_ci_lower,
        mean_ci_upper): ``x' params`` with variance ``x' cov x`` (OLS,
        quantreg), and its logistic transform, interval ends included (logit).
        A multinomial logit's class probabilities: `predict()`.

        Parameters
        ----------
        exog : pandas.DataFrame
            New rows with the formula's variables (required: the results hold no
            raw rows).

        Returns
        -------
        PredictionResults
            With ``summary_frame(alpha)`` and ``conf_int(alpha)``.
        """
        from statsmodels.regression._prediction import PredictionResults

        rel = self.release
        if rel.family == "mnlogit":
            raise DPModelsError("get_prediction is not available for a multinomial logit: "
                                "predict(exog) gives the class probabilities")
        if exog is None:
            raise DPModelsError("get_prediction needs new rows (exog=DataFrame): the results "
                                "hold no raw rows")
        with np.errstate(all="ignore"):
            (X,) = patsy.build_design_matrices([rel.space.infos[1]], exog)
        X = np.asarray(X, float)
        var = np.einsum("ij,j,ij->i", X, rel.bse**2, X)
        link = None
        if rel.family == "logit":
            from statsmodels.genmod.families import links

            link = links.Logit()
        return _SAPrediction(X @ rel.params, var, link, getattr(exog, "index", None),
                             PredictionResults)

    # ---- saving -------------------------------------------------------------------------
    def save(self, fname, remove_data: bool = False) -> None:
        """Pickle the results to ``fname`` (they hold the release and public
        inputs only); ``load`` or statsmodels' ``load_pickle`` reads them back.

        Parameters
        ----------
        fname : str or path
            Where to write the pickle.
        remove_data : bool
            statsmodels' option; nothing to remove here (no raw rows are held).
        """
        import pickle

        with open(fname, "wb") as fh:
            pickle.dump(self, fh)

    @classmethod
    def load(cls, fname) -> SampleAggregateResults:
        import pickle

        with open(fname, "rb") as fh:
            return pickle.load(fh)

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
        elif rel.failed_share >= 0.01:
            notes.append(f"About {rel.failed_share:.0%} of the blocks could not be fitted: the "
                         "estimate is the fitted blocks' mean (the failed ones' share, released "
                         "with the mean, taken out) and its errors are scaled to them.")
        if rel.family != "ols":
            notes.append("Not counted: the clamping bias (a range that cuts the blocks' "
                         "estimates unevenly) and the blocks' own small-sample bias.")
        return notes

    def summary(self, alpha: float = 0.05):
        """Summary tables (text, HTML, LaTeX) with the privacy block.

        Parameters
        ----------
        alpha : float
            1 - the level of the intervals (default 0.05).

        Returns
        -------
        statsmodels.iolib.summary.Summary

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

    def summary2(self, alpha: float = 0.05):
        """statsmodels' ``summary2`` layout: the model, the coefficient table
        (intervals from the exact law, as `conf_int()`), the privacy block
        and the notes.

        Parameters
        ----------
        alpha : float
            1 - the level of the intervals (default 0.05).

        Returns
        -------
        statsmodels.iolib.summary2.Summary
        """
        from statsmodels.iolib.summary2 import Summary as Summary2


        rel = self.release
        hw = rel.half_width(alpha)
        with np.errstate(divide="ignore", invalid="ignore"):
            z = rel.params / rel.bse
        table = pd.DataFrame({"Coef.": rel.params, "Std.Err.": rel.bse, "z": z,
                              "P>|z|": rel.pvalues(), f"[{alpha / 2:g}": rel.params - hw,
                              f"{1 - alpha / 2:g}]": rel.params + hw}, index=list(rel.names))
        smry = Summary2()
        smry.add_dict({"Model:": _NAMES[rel.family] + " (sample-and-aggregate)",
                       "Dependent Variable:": str(rel.endog_name),
                       "No. Observations:": f"{self.nobs:,}", "Blocks:": f"{rel.report.blocks:,}"})
        smry.add_df(table, float_format="%.4f")
        return add_privacy_block2(smry, rel.report, self._notes())

    def __repr__(self) -> str:
        return f"<SampleAggregateResults {self.release.family} {self.release.formula!r}>"


class _SAPrediction:
    """Predictions of a sample-and-aggregate fit with the normal-approximation
    intervals of the mean (linear predictor, through the link's inverse)."""

    def __init__(self, eta, var, link, index, _base):
        self.eta, self.var, self.link, self.index = eta, var, link, index

    @property
    def predicted_mean(self) -> np.ndarray:
        return self.eta if self.link is None else self.link.inverse(self.eta)

    @property
    def se_mean(self) -> np.ndarray:
        sd = np.sqrt(self.var)
        return sd if self.link is None else sd * np.abs(self.link.inverse_deriv(self.eta))

    def conf_int(self, alpha: float = 0.05) -> np.ndarray:
        from scipy import stats

        z = stats.norm.isf(alpha / 2)
        sd = np.sqrt(self.var)
        lo, hi = self.eta - z * sd, self.eta + z * sd
        if self.link is not None:
            lo, hi = self.link.inverse(lo), self.link.inverse(hi)
        return np.column_stack([lo, hi])

    def summary_frame(self, alpha: float = 0.05) -> pd.DataFrame:
        ci = self.conf_int(alpha)
        return pd.DataFrame({"mean": self.predicted_mean, "mean_se": self.se_mean,
                             "mean_ci_lower": ci[:, 0], "mean_ci_upper": ci[:, 1]},
                            index=self.index)


install_contract(SampleAggregateResults)  # its table of dpmodels.inference.dp_results.CONTRACTS
