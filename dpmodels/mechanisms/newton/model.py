"""dp_logit by noisy Newton steps (`dpmodels.mechanisms.newton`): the estimate, a
statsmodels ``Logit`` results object, and the parametric bootstrap of the
whole iteration for its standard errors.

Results
-------
The estimate is the release's last Newton iterate mapped to the design's
columns (the same under every ``cov_type``;
`calibrate()`, below, measures the steps'
pull but does not move the estimate).  It is handed to statsmodels as the maximum-likelihood fit of
``2q`` weighted points that carry the released mean and covariance of the
design (from the first step's information) with responses
``p = 1/(1 + exp(-x'b))`` at the estimate: their score is 0 there, so
statsmodels' Newton solver returns the estimate itself and every method
(``predict``, ``conf_int``, ``t_test``, ``summary``) works.  The
log-likelihood is not released: ``llf``, ``llnull``, ``prsquared``,
``llr_pvalue``, ``aic`` and ``bic`` are refused (`ResultsRefusedError`, n/a in
the summary), and so are ``pred_table()``, ``fittedvalues`` and the residuals
of those points (`dpmodels.inference.dp_results.CONTRACTS`).

Standard errors (cov_type "dp")
-------------------------------
A parametric bootstrap of the whole iteration (`DPNewtonLogit._replay()`):
on a population of Gaussian covariates (the released mean and covariance,
a factor's dummies exclusive, an interaction's column the product of its
parts' (`structured_design()`), rows clipped as the
release clipped its own)
with logistic responses, every replicate runs the Newton steps from 0 with
the score's sampling error and each step's noise.  Where the noise keeps the
steps short, the iterate is pulled towards 0 by more than a bootstrap built
on it can see: ``calibrate`` measures the pull on worlds that differ in
each coefficient, widens the replicates by what the steps lose of each
(``K^-1``), flags the coefficients it cannot locate, and reports a release
pulled beyond PULL_TRUSTED replicate SDs without information.  (Moving the
estimate by the worlds' pull was measured to do harm: see
``shrinkage.CALIBRATION_STEPS``.)  The replicates'
mean squared deviation from the estimate is the covariance
(`MomentsInference`: one centre for every
test).  (Re-simulating only the last step under-covered at small n epsilon:
59-63% at n = 2,000, epsilon <= 1, in benchmarks/validity.py's logit4; without
the calibration, fair's logit in benchmarks/real_validity.py covered 0-52%.)
"""

from __future__ import annotations

import math
import time
import warnings

import numpy as np
import pandas as pd
from statsmodels.discrete.discrete_model import BinaryResultsWrapper

from ...core.keywords import checked_keywords
from ...core.randomness import make_rng
from ...domain.formula import formula_variables
from ...inference.dp_results import attach_dp_inference
from ...mechanisms.newton import PrivateNewton, _floored, newton_update, release_newton
from ...models.base import FormulaReleaseModel, dp_options
from ...models.discrete import FreqLogit, FreqLogitResults
from ...models.logit import DPLogit
from ...models.pickling import SpaceRecipe, keep_design
from ...models.shrinkage import SHRINK_MIN, calibrate, paired
from ...models.worlds import (
    NEWTON_SIM_ROWS,
    clipped_like,
    deflated_moments,
    representative_design,
    structured_design,
    sym_laplace,
)
from ..moments.model import (
    INFO_SDS,
    MOMENTS_INTERVAL,
    MOMENTS_N_BOOT,
    SWAMPED_ADVICE,
    MomentsInference,
    check_noisy_rows,
    swamped_reason,
    warn_uninformative,
)

__all__ = ["DPNewtonLogit", "NewtonLogitResults"]


class NewtonLogitResults(FreqLogitResults):
    """Logit results of a noisy-Newton release (`DPNewtonLogit`): as
    `FreqLogitResults`, but the likelihood is not released, so ``llf``,
    ``llnull``, ``llr``, ``llr_pvalue``, ``prsquared``, ``aic`` and ``bic``
    are refused (`dpmodels.inference.dp_results.ResultsRefusedError`; NaN to
    statsmodels' own code, n/a in the summary), as are ``pred_table()`` and
    the per-point members (`dpmodels.inference.dp_results.CONTRACTS`).

    Attributes
    ----------
    source : str
        "newton".
    """

    source = "newton"

    @property
    def llf(self):
        return np.nan

    @property
    def llnull(self):
        return np.nan

    @property
    def llr(self):
        return np.nan

    @property
    def llr_pvalue(self):
        return np.nan

    @property
    def prsquared(self):
        return np.nan

    @property
    def aic(self):
        return np.nan

    @property
    def bic(self):
        return np.nan


class DPNewtonLogit(FormulaReleaseModel):
    """Differentially private logistic regression by noisy Newton steps.

    Built by `dpmodels.dp_logit()` with ``method="newton"`` (or when
    ``method="auto"`` chooses it); see `dpmodels.mechanisms.newton`.
    """

    _name = "DP Logit (Newton)"
    method = "newton"
    _release_type = PrivateNewton
    _release_fn = staticmethod(release_newton)
    release: PrivateNewton

    @classmethod
    def call_options(cls, call) -> dict:
        """dp_logit's checks of the response (`DPLogit.check_response()`) on the
        public domain, before any row is read."""
        env = call.namespace
        return {"domain_check": lambda domain: DPLogit.check_response(
            call.formula, domain, formula_variables(call.formula, domain.names, env))}

    @checked_keywords
    def fit(self, cov_type: str = "dp", *, n_boot: int | None = None, random_state=None,
            cov_kwds: dict | None = None):
        """The released estimate as statsmodels ``Logit`` results (with
        ``.privacy``; ``.dp_inference`` under cov_type "dp").

        Parameters
        ----------
        cov_type : {"dp", "naive"}
            "dp" (default): parametric bootstrap of the whole iteration, the
            replicates widened by what the steps lose (see the module notes).
            "naive": the inverse information of the representative points
            (ignores the privacy noise).
        n_boot : int, optional
            Bootstrap replicates (default 1000).
        random_state : None, int or Generator
            Makes the bootstrap reproducible (None: OS secure entropy).
        cov_kwds : dict, optional
            ``n_boot``, ``random_state``, ``interval``.

        Returns
        -------
        BinaryResultsWrapper
            `NewtonLogitResults`.

        Examples
        --------
        >>> import numpy as np, pandas as pd, dpmodels as dpm
        >>> rng = np.random.default_rng(0)
        >>> X = rng.normal(size=(50_000, 3)).clip(-4, 4)
        >>> eta = 0.5 + X @ [1.0, -1.0, 0.5]
        >>> df = pd.DataFrame(X, columns=["a", "b", "c"])
        >>> df["y"] = (rng.random(50_000) < 1 / (1 + np.exp(-eta))).astype(int)
        >>> res = dpm.dp_logit("y ~ a + b + c", df, epsilon=1.0, levels={"y": [0, 1]},
        ...                    bounds={v: (-4, 4) for v in "abc"}, method="newton",
        ...                    random_state=0).fit(random_state=0)
        >>> [round(float(v), 1) for v in res.params]
        [0.5, 1.0, -1.0, 0.5]
        """
        kind, opts = dp_options(cov_type, n_boot, random_state, cov_kwds,
                                default_interval=MOMENTS_INTERVAL)
        if n_boot is None and "n_boot" not in (cov_kwds or {}):
            opts["n_boot"] = MOMENTS_N_BOOT
        rel = self.release
        space = rel.space
        count = self._count()
        k = space.constant.size
        swamped = not check_noisy_rows(count, k)
        t0 = time.perf_counter()
        if swamped:  # nothing to calibrate: the estimate as released, no coefficient located
            params = rel.design_params(rel.beta)
            reps, flags = np.empty((0, k)), np.ones(k, bool)
        else:
            params, reps, flags = self._calibrated(opts, replicates=kind == "dp")
        X = representative_design(rel)
        q = X.shape[0] // 2
        with np.errstate(over="ignore"):  # exp(-eta) -> inf: y -> 0, as it should
            y = 1.0 / (1.0 + np.exp(-(X @ params)))
        exog = pd.DataFrame(X, columns=list(space.exog_names))
        model = FreqLogit(pd.Series(y, name=space.endog_name), exog,
                          weights=np.full(2 * q, count / (2 * q)))
        model.formula = self.formula
        model.data.model_spec = space.infos[1]
        keep_design(model, SpaceRecipe(space))  # pickles: the space rebuilds its design
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                fitted = model.fit(start_params=params, method="newton", maxiter=50, disp=0)
            except np.linalg.LinAlgError:  # flat likelihood at the points: keep the estimate
                fitted = model.fit(start_params=params, method="bfgs", maxiter=0, disp=0)
        inner = NewtonLogitResults(model, fitted._results)
        inner.privacy, inner.release = rel.report, rel
        res = BinaryResultsWrapper(inner)
        why_swamped = swamped_reason(
            "the count read from the Newton steps' noisy information on the intercept",
            count, k) if swamped else ""
        if swamped:
            warn_uninformative(space.exog_names, flags, reason=why_swamped)
        if swamped and kind != "dp":  # naive: no covariance either (the noise swamped it)
            inner.normalized_cov_params = np.diag(np.full(k, np.inf))
        if kind == "dp":
            attach_dp_inference(res, MomentsInference.of(
                params, reps, opts, t0, flags if swamped else self._uninformative(flags),
                "the Newton steps replayed on populations of Gaussian covariates (the "
                "released mean and covariance, interactions the products of their parts, clipped "
                "as the release clipped) with logistic "
                "responses: the score's sampling error and each step's noise; the replicates "
                "are widened by what the replayed steps lose of each coefficient (the "
                "inverse of their measured response to it)",
                why=why_swamped + SWAMPED_ADVICE if swamped else (
                    "the noisy information of the Newton steps (sum p(1-p) x x') on their "
                    "columns is within the steps' noise, or the noise keeps the steps so short "
                    f"that they keep less than {SHRINK_MIN:.0%} of any change in them, so the "
                    "release cannot locate them; use a larger epsilon, fewer levels or fewer "
                    "covariates")))
        return res

    def _count(self) -> float:
        """The number of rows the fit weighs (`PrivateNewton.fit_count()`)."""
        return self.release.fit_count()

    def _uninformative(self, shrunk: np.ndarray | None = None, warn: bool = True) -> np.ndarray:
        """Columns whose noisy information is within INFO_SDS noise SDs of
        nothing (and then the intercept, if one is a continuous column), or
        (``shrunk``, design order) those calibrate cannot locate."""
        rel, space = self.release, self.release.space
        sd_h = math.sqrt(rel.noise_var[0])
        diag = np.diag(rel.information)[1:]
        flags = np.zeros(space.constant.size, bool)
        weak = diag < INFO_SDS * sd_h
        flags[np.flatnonzero(~space.constant)] = weak
        # the intercept is b_0 minus the slopes times the columns' centres: a slope
        # the release cannot locate leaves it unknown too (a 0/1 column flagged here
        # has next to no rows, its centre is 0: as the moments OLS's rule)
        if np.any(weak & ~space.dummy):
            flags[space.constant] = True
        flags = space.carried(flags)  # a centred square's flag reaches its column's
        absorbed = np.zeros_like(flags) if shrunk is None else np.asarray(shrunk, bool)
        flags = flags | absorbed
        if warn:
            warn_uninformative(space.exog_names, flags, flags & absorbed)
        return flags

    def _replay(self, b_pop: np.ndarray, seed: int, B: int) -> np.ndarray:
        """The release replayed B times on the bootstrap population whose true
        scaled coefficients are ``b_pop``: the design coefficients of every
        replicate's last step.  ``seed`` fixes every draw, so worlds that differ
        only in ``b_pop`` share their random numbers."""
        rel = self.release
        rng = make_rng(seed)
        k = rel.beta.size
        count = self._count()
        moments, entry_sd = rel.world_moments()
        Xu = structured_design(rel, NEWTON_SIM_ROWS, rng,
                               deflated_moments(moments, rel.space.dummy, entry_sd))
        # responses from the unclipped rows; the steps see them clipped as the
        # release clipped its own (its noisy clipped share)
        Xt = clipped_like(Xu, rel.report.clipped_rows / max(count, 1.0))
        per_row = count / NEWTON_SIM_ROWS
        with np.errstate(over="ignore"):
            p_pop = 1.0 / (1.0 + np.exp(-(Xu @ b_pop)))
        fisher = per_row * (Xt.T * (p_pop * (1.0 - p_pop))) @ Xt
        xi = paired(lambda n: rng.standard_normal((n, k)), B) @ np.linalg.cholesky(
            _floored(fisher, 1e-9)).T
        target = per_row * (p_pop @ Xt)
        b = np.zeros((B, k))
        # every replicate's H is one product with the rows' x_i x_j (i <= j: H is symmetric)
        iu, ju = np.triu_indices(k)
        pairs = Xt[:, iu] * Xt[:, ju]
        H = np.empty((B, k, k))
        for var_h, var_s in rel.step_noise:
            if not b.any():  # the first step, from 0: every probability 1/2 (as computed)
                P = np.full((B, Xt.shape[0]), 0.5)
            else:  # 1 / (1 + exp(-b'x)), in place (fresh large arrays cost page faults)
                P = b @ Xt.T
                np.negative(P, out=P)
                with np.errstate(over="ignore"):
                    np.exp(P, out=P)
                P += 1.0
                np.reciprocal(P, out=P)
            V = np.subtract(1.0, P)
            V *= P
            upper = per_row * (V @ pairs)
            H[:, iu, ju] = upper
            H[:, ju, iu] = upper
            Hn = H + paired(lambda n: sym_laplace(rng, var_h, (n, k, k)), B)  # noqa: B023 (called at once)
            score = (target - per_row * (P @ Xt) + xi
                     + paired(lambda n: rng.laplace(0.0, math.sqrt(var_s / 2.0), (n, k)), B))  # noqa: B023
            b = newton_update(b, Hn, score, 2.0 * math.sqrt(k) * math.sqrt(var_h))
        return rel.design_params(b)

    def _calibrated(self, opts: dict, replicates: bool = True
                    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The estimate (the release's own), its replicates (none
        unless ``replicates``) and the coefficients the release cannot locate
        (`calibrate()` on `_replay()`)."""
        rel = self.release
        B = int(opts["n_boot"]) if replicates else 0
        return calibrate(self._replay, rel.design_params, rel.beta, B,
                         make_rng(opts["random_state"]), self._uninformative(warn=False))
