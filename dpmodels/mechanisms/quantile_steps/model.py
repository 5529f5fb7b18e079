"""dp_quantreg by noisy Newton steps of the check loss
(`dpmodels.mechanisms.quantile_steps`): the estimate, statsmodels ``QuantReg``
results, and a parametric bootstrap that replays the whole iteration.

Results
-------
The estimate is the release's last iterate for the quantile, mapped to the
design's columns and the response's units (the same under every
``cov_type``; `calibrate()` measures the
steps' pull on the replay below but does not move the estimate).  It is handed to statsmodels as
the results of a frequency-weighted QuantReg on ``4q`` points that carry
the released mean and covariance of the design, each with a response above
and one below the fitted plane (weights ``1 - tau`` and ``tau``: the check
loss's subgradient is 0 at the estimate), so ``predict``, ``conf_int``,
``t_test`` and ``summary`` work.  The check loss itself is not released:
``prsquared`` and ``objective`` are refused (`ResultsRefusedError`, n/a in the
summary), as are the residuals and sums of squares of those points.  ``bandwidth`` is the release's
band (response units) and ``sparsity`` ``1 / density`` at the quantile.

Standard errors (cov_type "dp")
-------------------------------
A parametric bootstrap of the whole iteration: a population of Gaussian
covariates (the least-squares step's mean and covariance; an interaction's
column the product of its parts', `structured_design()`)
whose responses
are the fitted plane plus asymmetric-Laplace errors with the released
density at the quantile (tau-quantile 0, so the plane is the population's
quantile regression).  Every replicate runs the least-squares step, the start
at the residuals' quantile and the damped quantile steps with the score's
sampling error (``tau (1 - tau) sum x x'``, one draw shared by the steps),
the band counts' and scores' noise of each step's law.  The population's
rows are clipped as the release clipped its rows (the release's noisy clipped
share, on the L1 norm), with responses from the unclipped rows, so the
replicates carry the clipping's pull on the slopes; the replicates' mean
squared deviation from the estimate is the covariance (one centre for every
test, `MomentsInference`).  The errors'
law is homoscedastic: under strong heteroscedasticity the sampling part is
that of the iid covariance, as statsmodels' ``vcov="iid"``.  Where the noise
keeps the steps short, ``calibrate`` measures their pull on worlds that
differ in each coefficient, widens the replicates by what the steps lose
(``K^-1``), flags the coefficients it cannot locate, and reports a release
pulled beyond PULL_TRUSTED replicate SDs without information; a factor's
dummies stay exclusive in the population.
"""

from __future__ import annotations

import math
import time

import numpy as np
import pandas as pd
from statsmodels.tools._decorators import cache_readonly

from ...core.keywords import checked_keywords
from ...core.randomness import make_rng
from ...inference.dp_results import attach_dp_inference
from ...inference.summary import inference_notes
from ...mechanisms.newton import newton_update
from ...mechanisms.quantile_steps import (
    BandCount,
    PrivateQuantileSteps,
    gram_of,
    quantile_update,
    release_quantile_steps,
)
from ...models.base import FormulaReleaseModel, dp_options
from ...models.pickling import SpaceRecipe, keep_design
from ...models.quantreg import FreqQuantReg, FreqQuantRegResults, FreqQuantRegResultsWrapper
from ...models.shrinkage import SHRINK_MIN, calibrate, paired
from ...models.worlds import (
    NEWTON_SIM_ROWS,
    clipped_like,
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

__all__ = ["DPNewtonQuantReg", "NewtonQuantRegResults"]


class NewtonQuantRegResults(FreqQuantRegResults):
    """Quantile-regression results of a quantile-steps release
    (`DPNewtonQuantReg`): as `FreqQuantRegResults`, but the check loss is
    not released, so ``prsquared`` is refused (n/a in the summary), as are
    ``objective`` and the per-point members (`dpmodels.inference.dp_results.CONTRACTS`).

    Attributes
    ----------
    source : str
        "newton".
    """

    source = "newton"

    @cache_readonly
    def prsquared(self):
        return np.nan

    def _summary_title(self, title):
        return "DP QuantReg Regression Results (noisy Newton steps)" if title is None else title

    def _summary_notes(self) -> list[str]:
        return [f"Quantile q = {self.q:g}. nobs is the noisy number of complete rows; the "
                "check loss is not released (Pseudo R-squared: n/a)."] + inference_notes(self)


def _ald_cdf(u, tau: float, sigma: float):
    """CDF of the asymmetric Laplace law with tau-quantile 0 and density
    ``tau (1 - tau) / sigma`` at 0."""
    u = np.asarray(u, float)
    below = u < 0
    # one exponential per point: exp(u (1 - tau) / sigma) below 0, exp(-u tau / sigma) above
    e = np.abs(u)
    np.negative(e, out=e)
    e *= np.where(below, 1.0 - tau, tau)
    e /= sigma
    np.exp(e, out=e)
    return np.where(below, tau * e, 1.0 - (1.0 - tau) * e)


def _ald_draw(rng, tau: float, sigma: float, size: int) -> np.ndarray:
    above = rng.random(size) >= tau
    e = rng.standard_exponential(size)
    return np.where(above, sigma * e / tau, -sigma * e / (1.0 - tau))


class DPNewtonQuantReg(FormulaReleaseModel):
    """Differentially private quantile regression by noisy Newton steps of the
    check loss.

    Built by `dpmodels.dp_quantreg()` with ``method="newton"`` (or when
    ``method="auto"`` chooses it); see `dpmodels.mechanisms.quantile_steps`.  The
    release answers the quantiles it was made for (``q=`` of
    ``dp_quantreg``).
    """

    _name = "DP QuantReg (Newton)"
    method = "newton"
    _release_type = PrivateQuantileSteps
    _release_fn = staticmethod(release_quantile_steps)
    release: PrivateQuantileSteps

    @classmethod
    def call_options(cls, call) -> dict:
        """The call's quantiles (``q=`` of dp_quantreg): the release answers those."""
        return {"q": call.quantiles}

    @property
    def quantiles(self) -> tuple:
        """The quantiles the release answers."""
        return self.release.quantiles

    @checked_keywords
    def fit(self, q: float | None = None, vcov: str = "robust", kernel: str = "epa",
            bandwidth: str = "hsheather", *, cov_type: str = "dp", n_boot: int | None = None,
            random_state=None, cov_kwds: dict | None = None, **kwargs):
        """The released estimate at quantile ``q`` as statsmodels ``QuantReg``
        results (with ``.privacy``; ``.dp_inference`` under cov_type "dp").

        Parameters
        ----------
        q : float, optional
            A released quantile (default: the first one released).
        vcov, kernel, bandwidth
            Accepted as in ``QuantReg.fit``; the naive covariance is
            ``tau (1 - tau) / (n f^2) (E x x')^-1`` with the released density
            f and design moments (the release's information is ``f X'X``, so
            "robust" and "iid" coincide).
        cov_type : {"dp", "naive"}
            "dp" (default): parametric bootstrap of the whole iteration.
        n_boot : int, optional
            Bootstrap replicates (default 1000).
        random_state : None, int or Generator
            Makes the bootstrap reproducible (None: OS secure entropy).
        cov_kwds : dict, optional
            ``n_boot``, ``random_state``, ``interval``.
        **kwargs
            statsmodels' ``QuantReg.fit`` options (``max_iter``, ``p_tol``,
            ...): accepted and ignored, the estimate is the release's.

        Returns
        -------
        RegressionResultsWrapper
            `NewtonQuantRegResults`.

        Examples
        --------
        >>> import numpy as np, pandas as pd, dpmodels as dpm
        >>> rng = np.random.default_rng(0)
        >>> X = rng.uniform(-1, 1, size=(50_000, 3))
        >>> df = pd.DataFrame(X, columns=["a", "b", "c"])
        >>> df["y"] = 1 + X @ [1.0, -0.5, 0.0] + rng.laplace(0, 0.5, 50_000)
        >>> model = dpm.dp_quantreg("y ~ a + b + c", df, epsilon=1.0, method="newton",
        ...                         bounds={"a": (-1, 1), "b": (-1, 1), "c": (-1, 1),
        ...                                 "y": (-4, 6)}, random_state=0)
        >>> res = model.fit(random_state=0)
        >>> [round(float(v), 1) + 0.0 for v in res.params]
        [1.0, 1.0, -0.5, 0.0]
        >>> res.q
        0.5
        """
        kind, opts = dp_options(cov_type, n_boot, random_state, cov_kwds,
                                default_interval=MOMENTS_INTERVAL)
        if n_boot is None and "n_boot" not in (cov_kwds or {}):
            opts["n_boot"] = MOMENTS_N_BOOT
        rel = self.release
        i = 0 if q is None else rel.index(q)
        tau = rel.quantiles[i]
        space = rel.space
        count = self._count()
        k = space.constant.size
        swamped = not check_noisy_rows(count, k)
        t0 = time.perf_counter()
        if swamped:  # nothing to calibrate: the estimate as released, no coefficient located
            params = rel.design_params(rel.beta[i])
            reps, flags = np.empty((0, k)), np.ones(k, bool)
        else:
            params, reps, flags = calibrate(
                lambda beta, seed, n: self._replay(i, beta, seed, n), rel.design_params,
                rel.beta[i], int(opts["n_boot"]) if kind == "dp" else 0,  # naive: the estimate
                make_rng(opts["random_state"]), self._uninformative(warn=False))
        X = representative_design(rel)
        m = X.shape[0] // 2
        fitted = X @ params
        spread = rel.y_half / max(float(rel.density[i]), 1e-12)
        X2 = np.concatenate([X, X])
        y2 = np.concatenate([fitted + spread, fitted - spread])
        w2 = np.concatenate([np.full(2 * m, 1.0 - tau), np.full(2 * m, tau)]) * count / (2 * m)
        model = FreqQuantReg(pd.Series(y2, name=space.endog_name),
                             pd.DataFrame(X2, columns=list(space.exog_names)), weights=w2)
        model.formula = self.formula
        model.data.model_spec = space.infos[1]
        keep_design(model, SpaceRecipe(space))  # pickles: the space rebuilds its design
        why_swamped = swamped_reason(
            "the noisy number of rows of the least-squares step", self._count(), k) if swamped else ""
        res = NewtonQuantRegResults(
            model, np.asarray(params), normalized_cov_params=(
                np.diag(np.full(k, np.inf)) if swamped else self._naive_cov(i)))
        if swamped:
            warn_uninformative(space.exog_names, flags, reason=why_swamped)
        res.q, res.iterations, res.history = tau, len(rel.steps[i]), None
        res.bandwidth = float(rel.bandwidth[i] * rel.y_half)
        res.sparsity = spread
        res.vcov_type, res.kernel_name, res.bandwidth_name = "iid", "uniform", "release"
        res.privacy, res.release = rel.report, rel
        wrapped = FreqQuantRegResultsWrapper(res)
        if kind == "dp":
            attach_dp_inference(wrapped, MomentsInference.of(
                params, reps, opts, t0, flags if swamped else self._uninformative(flags),
                f"the least-squares step and the quantile steps (q={tau:g}) replayed on "
                "populations of Gaussian covariates (the released mean and covariance; "
                "interactions the products of their parts) with "
                "asymmetric-Laplace errors of the released density: the scores' sampling error "
                "and each step's noise; the replicates are widened by what the replayed steps "
                "lose of each coefficient (the inverse of their measured response to it)",
                why=why_swamped + SWAMPED_ADVICE if swamped else (
                    "the noisy count of rows with a 1 in their 0/1 column (or at the factor's "
                    "base level) is within the noise of the released level counts, or the noise "
                    "keeps the quantile steps so short that they keep less than a tenth of any "
                    f"change in them (an error multiplied more than {1 / SHRINK_MIN:.0f}-fold); "
                    "use a larger epsilon or fewer levels or covariates")))
        return wrapped

    def _count(self) -> float:
        """The number of rows the fit weighs (`PrivateQuantileSteps.fit_count()`)."""
        return self.release.fit_count()

    def fit_many(self, qs=None, **kwargs) -> dict:
        """Results for several released quantiles (default: all of them), keyed by q.

        Parameters
        ----------
        qs : iterable of float, optional
            Released quantiles (default: every one released).  A quantile that
            was not released is refused: releasing it would spend more budget.
        **kwargs
            Passed to `fit()`.

        Returns
        -------
        dict of float to results
        """
        qs = self.release.quantiles if qs is None else [float(q) for q in qs]
        return {q: self.fit(q=q, **kwargs) for q in qs}

    def _jacobian(self) -> np.ndarray:
        rel = self.release
        k = rel.beta.shape[1]
        return (rel.design_params(np.eye(k)) - rel.design_params(np.zeros(k))).T

    def _naive_cov(self, i: int) -> np.ndarray:
        rel = self.release
        tau, count = rel.quantiles[i], self._count()
        gram = gram_of(rel.ls_information, rel.ls_noise[0])
        f = max(float(rel.density[i]), 1e-12)
        C = tau * (1.0 - tau) / (count * f * f) * np.linalg.inv(gram)
        J = self._jacobian()
        return J @ C @ J.T

    def _uninformative(self, pulled: np.ndarray | None = None, warn: bool = True) -> np.ndarray:
        """0/1 columns the release says nothing about: too few rows with a 1,
        or with a 0 (for a factor's dummies: too few rows at its base level),
        within INFO_SDS noise SDs of the released level counts.  Continuous
        columns are not flagged here: their information comes from the
        quantile steps' scores, which the bootstrap replays (judged by the
        least-squares step's noise instead, 85-95% of median4's slopes were
        flagged at n = 2e3, epsilon 1, where their unflagged intervals covered
        in 97-100% of data sets at 8-10 times the non-private width)."""
        rel, space = self.release, self.release.space
        flags = np.zeros(space.constant.size, bool)
        if rel.level_counts.size:
            sd = math.sqrt(rel.level_noise_var)
            total, ones = rel.level_counts[0], rel.level_counts[1:]
            dummies = np.flatnonzero(space.dummy)
            bad = dict(zip(dummies, ones < INFO_SDS * sd))
            grouped = {j for g in space.exclusive for j in g}
            for j, c in zip(dummies, ones):
                if j not in grouped and total - c < INFO_SDS * math.sqrt(2.0) * sd:
                    bad[j] = True
            for g in space.exclusive:
                base = total - sum(ones[list(dummies).index(j)] for j in g)
                if base < INFO_SDS * math.sqrt(1.0 + len(g)) * sd:
                    bad.update({j: True for j in g})
            coords = np.flatnonzero(~space.constant)
            for j, b in bad.items():
                flags[coords[j]] = b
        absorbed = np.zeros_like(flags) if pulled is None else np.asarray(pulled, bool)
        flags = flags | absorbed
        if warn:
            warn_uninformative(space.exog_names, flags, flags & absorbed)
        return flags

    def _replay(self, i: int, beta: np.ndarray, seed: int, B: int) -> np.ndarray:
        """The release replayed B times on the bootstrap population (see the
        module notes) whose plane, in the release's scaled coordinates, is
        ``beta``: the design coefficients of every replicate's last step.
        ``seed`` fixes every draw (common random numbers across worlds)."""
        rel = self.release
        rng = make_rng(seed)
        tau, h = rel.quantiles[i], float(rel.bandwidth[i])
        k = beta.size
        count = self._count()
        M = NEWTON_SIM_ROWS
        Xu = structured_design(rel, M, rng)
        Xt = clipped_like(Xu, rel.report.clipped_rows / max(count, 1.0))
        per_row = count / M
        sigma = tau * (1.0 - tau) / max(float(rel.density[i]), 1e-12)
        # responses from the unclipped rows; the release sees the clipped ones
        plane = Xu @ beta
        y = np.clip(plane + _ald_draw(rng, tau, sigma, M), -1.0, 1.0)
        # the least-squares step: exact population sums, the sums' sampling error, noise
        gram_pop = per_row * Xt.T @ Xt
        ls_pop = np.linalg.lstsq(Xt, y, rcond=None)[0]
        meat = per_row * (Xt.T * (y - Xt @ ls_pop) ** 2) @ Xt
        var_h, var_s = rel.ls_noise
        H = gram_pop + paired(lambda n: sym_laplace(rng, var_h, (n, k, k)), B)
        score = (per_row * Xt.T @ y
                 + paired(lambda n: rng.multivariate_normal(np.zeros(k), meat, n,
                                                            method="eigh"), B)
                 + paired(lambda n: rng.laplace(0.0, math.sqrt(var_s / 2.0), (n, k)), B))
        b = newton_update(np.zeros((B, k)), H, score, 2.0 * math.sqrt(k) * math.sqrt(var_h))
        gram = gram_of(H, var_h)
        # the start: the residuals' quantile at the least-squares fit; the band's first count
        resid = y - b @ Xt.T
        b[:, 0] += np.quantile(resid, tau, axis=1)
        d = b @ Xt.T - plane
        band0 = per_row * (_ald_cdf(d + h, tau, sigma) - _ald_cdf(d - h, tau, sigma)).sum(1)
        prior = float(rel.band_prior_var[i])
        state = BandCount.of(
            band0 + paired(lambda n: rng.normal(0.0, math.sqrt(prior), n), B), prior)
        xi = paired(lambda n: rng.multivariate_normal(
            np.zeros(k), tau * (1.0 - tau) * gram_pop, n, method="eigh"), B)
        for var_c, var_s in rel.steps[i]:
            d = b @ Xt.T - plane
            band = per_row * (_ald_cdf(d + h, tau, sigma) - _ald_cdf(d - h, tau, sigma)).sum(1)
            state = state.add(
                band + paired(lambda n: rng.laplace(0.0, math.sqrt(var_c / 2.0), n), B),  # noqa: B023
                var_c)
            score = (per_row * (tau - _ald_cdf(d, tau, sigma)) @ Xt + xi
                     + paired(lambda n: rng.laplace(0.0, math.sqrt(var_s / 2.0), (n, k)), B))  # noqa: B023
            b = quantile_update(b, gram, state.rows, h, score)
        return rel.design_params(b)

    def __repr__(self) -> str:
        shown = ", ".join(f"{t:g}" for t in self.release.quantiles)
        return (f"DPNewtonQuantReg({self.formula!r}, q=[{shown}], "
                f"epsilon={self.release.report.epsilon:g})")
