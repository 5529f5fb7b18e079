"""dp_ols on noisy moments: least squares from a `PrivateMoments`
release, with a parametric bootstrap of that release for its standard errors.

Estimate (post-processing)
--------------------------
From the noisy count N, sums S and second moments M of the scaled rows v
(`dpmodels.mechanisms.moments`): mean ``mu = S/N`` and covariance ``C = M/N - mu mu'``.
``C`` is symmetrized and its eigenvalues are raised to the noise floor
``2 sqrt(q) sd(M)/N`` (the typical operator norm of the noise matrix: a
public number), which keeps it positive definite and acts as a ridge in the
directions the noise swamps (the private ridge of AdaSSP, here free: it reads
only the release).  Where the fit is tight (R-squared near 1) the residual
direction lies far below the floor, and raising it with the rest attenuates
every slope as measurement error does; there, when the response's own spread
is measured, the covariates' block and the residual are floored apart
(`floors_apart()`, decided once per release).  Mapped back to
design units, the OLS coefficients solve the normal equations of these
moments.  The statsmodels results are those of a frequency-weighted least
squares on ``2q`` points that carry exactly these moments (``mu +- sqrt(q)
L_j``, ``L L' = C``, weight ``N / 2q`` each), so every
statsmodels statistic (R-squared, scale, F) is that of the moments.

Standard errors (cov_type "dp")
-------------------------------
A parametric bootstrap of the release (Ferrando, Wang & Sheldon 2022, for
sufficient statistics): the bootstrap population is the estimated Gaussian
``(mu, C)`` with N rows; each replicate draws the sample moments from their
exact Gaussian law (mean normal, scatter Wishart with N - 1 degrees of
freedom), adds noise of the release's law to every released entry, and
re-runs the same estimator.  The replicates' spread covers sampling, the
privacy noise and the estimator's nonlinearity (the floor); their mean
minus the estimate is the bias, which the default "normal" interval carries
as a shift of unknown sign (`mse`).

Coefficients the floor absorbs
------------------------------
Where the floor binds on the covariates (small n * epsilon, rare levels, many
covariates) it can swallow a coefficient whole: the estimate barely moves
whatever the true value, and the bootstrap, built on that shrunk estimate,
cannot see how much was lost.  ``_shrinkage`` measures, per coefficient, the
share of a change in the true value that the expected estimate keeps (finite
differences over bootstrap worlds that differ only in that coefficient, under
common random numbers); below ``SHRINK_MIN`` (a tenth) the coefficient is
reported as carrying no information (infinite standard error, p = 1, a
``ReleaseWarning`` naming it), as a level with no rows is.  Above it, what
the floor took is carried as a shift of unknown sign
(``_shrinkage_shift``): ``b (1/keep - 1)`` for each slope (the coefficient
whose expected estimate is b, minus b) and, through the columns' means, the
intercept's share of it.
"""

from __future__ import annotations

import math
import time
import warnings

import numpy as np
import pandas as pd
from scipy import stats

from ...core.errors import ReleaseWarning
from ...core.keywords import checked_keywords
from ...core.randomness import make_rng
from ...domain.formula import user_stacklevel
from ...inference.dp_results import attach_dp_inference
from ...inference.intervals import DPInference
from ...mechanisms.moments import DesignSpace, PrivateMoments, release_moments
from ...models.base import FormulaReleaseModel, dp_options
from ...models.linear import FreqWLS
from ...models.pickling import SpaceRecipe, keep_design
from ...models.shrinkage import SHRINK_MIN, SHRINK_REPS, keep_shares, signed_shift

__all__ = ["DPMomentsOLS", "ols_from_moments", "noise_floor"]

#: Default interval: centred on the estimate, as every test (see MomentsInference).
MOMENTS_INTERVAL = "normal"
#: Default bootstrap replicates: each costs a q x q solve, so B is large.
MOMENTS_N_BOOT = 1000
#: A design column is information-free when its noisy mass (sum, or sum of
#: squares about the mean) is below this many noise standard deviations.
INFO_SDS = 3.0
#: The eigenvalue floor in units of the noise matrix's typical operator norm.
FLOOR_FACTOR = 1.0
#: Floor the residual apart (`floors_apart()`, `_scaled_cov()`): where the
#: residual variance is below the floor and the response's own spread is
#: measured, raise the covariates' block and the residual to the floor, not the
#: whole ``[v y]`` matrix, whose floor attenuates the slopes of a tight fit as
#: measurement error does.  Decided once per release, so every bootstrap
#: replicate and world runs the same estimator.  benchmarks/residual_floor.py
#: (benchmarks/results/residual_floor.md): co2 (n = 2,225, ``co2 ~ year +
#: C(month)``) power 0% -> 15% at epsilon 1 and 6% -> 19% at 3; no interval
#: more on the wrong side of the truth on the synthetic grid.  Without the
#: measured-response condition (RESPONSE_SDS) it let 7 of 1,600 of randhie's
#: intervals exclude 0 on the wrong side (the whole floor: 1): a response the
#: noise swamped has its noisy cross moments taken for slopes.
FLOOR_RESIDUAL_APART = True
#: ... and only where the response's released variance is this many noise SDs
#: (of a second-moment entry over the count) above 0.
RESPONSE_SDS = 4.0
#: The floor of the "bare" estimate the floor's shift is measured against.
FLOOR_TINY = 1e-12
#: Weight of the floor's shift in the replicates (see DPMomentsOLS._bootstrap).
FLOOR_BIAS_WEIGHT = 1.0
#: Gaussian rows on which the clipping's shift of the estimate is measured, and
#: the largest factor it is scaled up by (DPMomentsOLS._clip_shift).
CLIP_SIM_ROWS = 20_000
CLIP_SCALE_MAX = 10.0
#: The shrinkage is measured only where the floor may bind on the covariates:
#: the released covariates' covariance has an eigenvalue below this many floors
#: (above it the floor moves the slopes by about a floor over that eigenvalue,
#: a few percent: only the residual's direction is raised).
SHRINK_BINDS = 20.0
#: The covariates' and residual's covariance of the shrinkage's worlds is the
#: released one, its eigenvalues raised to this share of the floor only.
SHRINK_POPULATION_FLOOR = 0.01


def noise_floor(moments: PrivateMoments) -> float:
    """The eigenvalue floor of the scaled covariance: ``2 sqrt(q) sd(M) / N``."""
    sd_m = math.sqrt(moments.noise_var[2])
    return FLOOR_FACTOR * 2.0 * math.sqrt(moments.space.q) * sd_m / max(moments.count, 1.0)


def _raw_cov(count, sums, second):
    """Mean and (symmetrized) covariance of the scaled rows ``[v y]`` from
    released quantities, unregularized (batched)."""
    count = np.maximum(np.asarray(count, float), 1.0)
    mu = sums / count[..., None]
    C = second / count[..., None, None] - mu[..., :, None] * mu[..., None, :]
    return mu, (C + np.swapaxes(C, -1, -2)) / 2.0


def _block_floored(C, floor):
    """The covariates' block of ``C`` with its eigenvalues raised to
    ``floor``, and the fitted variance ``C_xy' C_xx^-1 C_xy`` through it
    (batched)."""
    lam, V = np.linalg.eigh(C[..., :-1, :-1])
    lam = np.maximum(lam, floor)
    Vt = np.swapaxes(V, -1, -2)
    rotated = (Vt @ C[..., :-1, -1][..., None])[..., 0]  # C_xy in the eigenbasis of C_xx
    return (V * lam[..., None, :]) @ Vt, np.sum(rotated * rotated / lam, axis=-1)


def _scaled_cov(count, sums, second, floor, apart: bool = False):
    """Mean and floor-regularized covariance of the scaled rows ``[v y]``
    (batched): the whole matrix with its eigenvalues raised to ``floor``; or,
    ``apart`` (`floors_apart()`, decided once per release), the covariates'
    block with its eigenvalues raised, the cross moments as released and the
    response's variance the fitted part ``C_xy' C_xx^-1 C_xy`` plus the
    residual variance raised to the floor (positive definite; the slopes are
    those of the floored block: the residual direction, far below the floor
    where R-squared is near 1, is not floored into them)."""
    mu, C = _raw_cov(count, sums, second)
    if np.all(np.asarray(floor) == 0):  # exact moments (epsilon=inf): nothing to floor, and
        return mu, C                    # an eigendecomposition would only add rounding
    if not apart:
        lam, V = np.linalg.eigh(C)
        return mu, (V * np.maximum(lam, floor)[..., None, :]) @ np.swapaxes(V, -1, -2)
    Cxx, fitted = _block_floored(C, floor)
    out = np.array(C)
    out[..., :-1, :-1] = Cxx
    out[..., -1, -1] = fitted + np.maximum(C[..., -1, -1] - fitted, floor)
    return mu, out


def floors_apart(C, floor) -> np.ndarray:
    """Whether `_scaled_cov()` floors the residual apart for the (batched)
    scaled covariance ``C``: `FLOOR_RESIDUAL_APART`, the residual variance
    (covariates' block floored) below the floor, where the whole-matrix floor
    attenuates the slopes, and the response's own spread measured (its
    released variance RESPONSE_SDS noise SDs above 0; the floor is ``2
    sqrt(q) FLOOR_FACTOR`` of them): a response the noise swamped keeps the
    whole floor, which keeps its cross moments out of the slopes."""
    C = np.asarray(C, float)
    if not FLOOR_RESIDUAL_APART:
        return np.zeros(C.shape[:-2], bool)
    _, fitted = _block_floored(C, floor)
    sd = floor / (2.0 * math.sqrt(C.shape[-1]) * FLOOR_FACTOR)  # a second moment's noise SD / N
    measured = C[..., -1, -1] >= RESPONSE_SDS * sd
    return (C[..., -1, -1] - fitted < floor) & measured


def _design_moments(moments: PrivateMoments, mu_v, C_v):
    """Scaled mean/covariance -> the design's (non-constant columns, then y)."""
    half = moments.half
    mu = moments.centre + half * mu_v
    C = C_v * half[:, None] * half[None, :]
    return mu, C


def ols_from_moments(space: DesignSpace, mu, C) -> np.ndarray:
    """OLS coefficients (design order) from the mean and covariance of the
    non-constant design columns and the response (batched over leading axes).

    Solves ``E[x x'] b = E[x y]`` with the constant columns (the intercept)
    at their value.
    """
    mu, C = np.asarray(mu, float), np.asarray(C, float)
    batch = mu.shape[:-1]
    p = space.constant.size
    nc = np.flatnonzero(~space.constant)
    const = np.flatnonzero(space.constant)
    # first and second moments of the full row x (design order), with y last
    m = np.empty(batch + (p + 1,))
    m[..., nc] = mu[..., :-1]
    m[..., const] = space.constant_values[const]
    m[..., p] = mu[..., -1]
    full = np.zeros(batch + (p + 1, p + 1))
    idx = np.concatenate([nc, [p]])
    full[..., idx[:, None], idx[None, :]] = C
    G = full + m[..., :, None] * m[..., None, :]
    Gxx, Gxy = G[..., :p, :p], G[..., :p, p]
    return np.linalg.lstsq(Gxx, Gxy, rcond=None)[0] if not batch else \
        (np.linalg.pinv(Gxx, hermitian=True) @ Gxy[..., None])[..., 0]


def ols_from_scaled(moments: PrivateMoments, mu_v, C_v) -> np.ndarray | None:
    """OLS coefficients (design order, batched) solved in the scaled, centred
    coordinates ``v`` of the release, then mapped to design units: the slopes
    ``b_v = C_xx^-1 C_xy`` (the covariance of the scaled rows, well conditioned
    whatever the design's units and offsets), ``slope_j = b_v,j half_y /
    half_j`` and the intercept ``mean_y - sum_j slope_j mean_j``.  The normal
    equations of the uncentred Gram matrix in design units lose about
    ``log10(cond)`` digits (NIST's Longley: 8 of 16); this loses few.  None
    when the design has no intercept column of value 1 (then
    `ols_from_moments()`)."""
    space = moments.space
    const = np.flatnonzero(space.constant)
    if const.size != 1 or space.constant_values[const[0]] != 1:
        return None
    mu_v, C_v = np.asarray(mu_v, float), np.asarray(C_v, float)
    Cxx, Cxy = C_v[..., :-1, :-1], C_v[..., :-1, -1]
    if mu_v.ndim == 1:
        b_v = np.linalg.lstsq(Cxx, Cxy, rcond=None)[0]
    else:  # (a pseudo-inverse, as ols_from_moments: a singular replicate does not raise)
        b_v = (np.linalg.pinv(Cxx, hermitian=True) @ Cxy[..., None])[..., 0]
    half, centre = moments.half, moments.centre
    slopes = b_v * half[-1] / half[:-1]
    mean = centre + half * mu_v
    out = np.empty(mu_v.shape[:-1] + (space.constant.size,))
    out[..., np.flatnonzero(~space.constant)] = slopes
    out[..., const[0]] = mean[..., -1] - np.sum(slopes * mean[..., :-1], axis=-1)
    return out


def estimate(moments: PrivateMoments, count, sums, second, floor,
             apart: bool = False) -> np.ndarray:
    """The estimator, applied to (batched) released quantities (``apart``:
    see `_scaled_cov()`)."""
    mu_v, C_v = _scaled_cov(count, sums, second, floor, apart)
    scaled = ols_from_scaled(moments, mu_v, C_v)
    if scaled is not None:
        return scaled
    mu, C = _design_moments(moments, mu_v, C_v)
    return ols_from_moments(moments.space, mu, C)


def _as_released(space: DesignSpace, sums, second):
    """Sampled moments as the release shapes them: exclusive dummies' products
    0, a dummy's square its sum (batched)."""
    second = np.array(second, dtype=float)
    i, j = np.triu_indices(space.q)
    released = np.zeros((space.q, space.q), bool)
    ri, rj = space.released_pairs
    released[ri, rj] = released[rj, ri] = True
    zero = ~released & ~np.eye(space.q, dtype=bool)
    second[..., zero] = 0.0
    d = np.flatnonzero(space.dummy)
    second[..., d, d] = sums[..., d]
    return second


def _column_means(mom: PrivateMoments) -> np.ndarray:
    """The noisy means of the non-constant design columns, in design units."""
    return mom.centre[:-1] + mom.half[:-1] * (mom.sums[:-1] / max(mom.count, 1.0))


def _noise_draws(mom: PrivateMoments, rng, B: int):
    """B draws of the release's noise (discrete Laplace of huge scale ~ Laplace):
    the noisy count, the noise of the sums and the symmetric noise of the
    released second moments (zero on the pairs not released)."""
    var_n, var_s, var_m = mom.noise_var
    q = mom.space.q
    count = float(mom.count) + rng.laplace(0.0, math.sqrt(var_n / 2.0), B)
    e_s = rng.laplace(0.0, math.sqrt(var_s / 2.0), (B, q))
    i, j = mom.space.released_pairs
    E = np.zeros((B, q, q))
    E[:, i, j] = rng.laplace(0.0, math.sqrt(var_m / 2.0), (B, i.size))
    return count, e_s, E + np.swapaxes(np.triu(E, 1), -1, -2)


def _points(space: DesignSpace, count: float, mu_v: np.ndarray, C_v: np.ndarray,
            centre: np.ndarray, half: np.ndarray):
    """``2q`` weighted rows of ``[X y]`` whose weighted moments are those of the
    scaled rows' ``(mu_v, C_v)`` mapped to design units (``x = centre + half v``).
    The square root of the covariance is taken on the scaled rows: in design
    units an eigendecomposition loses ``log10`` of the columns' variance ratio
    in digits (NIST's Longley: 8)."""
    q = mu_v.size
    lam, V = np.linalg.eigh(C_v)
    L = V * np.sqrt(np.maximum(lam, 0.0))
    pts_v = np.concatenate([mu_v + math.sqrt(q) * L.T, mu_v - math.sqrt(q) * L.T])
    pts = centre + half * pts_v
    X = np.empty((2 * q, space.constant.size))
    X[:, ~space.constant] = pts[:, :-1]
    X[:, space.constant] = space.constant_values[space.constant]
    return X, pts[:, -1], np.full(2 * q, count / (2 * q))


def check_noisy_rows(count: float, n_params: int) -> bool:
    """True when a release's noisy count (the number of rows a fit weighs, read
    from noisy statistics) is larger than the number of parameters + 1; False
    when the noise swamped it (a summary would show ``Noisy total: 1`` and
    negative residual degrees of freedom).  Never raises: the budget is spent
    by then, so a swamped release is fitted with every coefficient reported
    without information (`warn_swamped()`), not refused.  Post-processing:
    the release stays valid and its report public."""
    return bool(count > n_params + 1)


def swamped_reason(what: str, count: float, n_params: int) -> str:
    """Why a swamped release (`check_noisy_rows()` False) locates no
    coefficient, in the mechanism's own terms: ``what`` names the noisy
    statistic (a noisy row count, or a noisy information entry: never called a
    number of rows when it is not one)."""
    return (f"{what} ({count:.3g}) is not larger than the number of parameters + 1 "
            f"({n_params + 1}): the noise swamped it, so the release cannot locate any "
            "coefficient")


#: What to do about a swamped release (the summary's note ends with it).
SWAMPED_ADVICE = "; use a larger epsilon, more data or fewer covariates"


def warn_uninformative(names, flags: np.ndarray, shrunk: np.ndarray | None = None,
                       reason: str = "") -> None:
    """The ReleaseWarning naming the coefficients the release says nothing about
    (``shrunk``: those the noise floor absorbs, named apart; ``reason``: why,
    for those not absorbed, in place of "the noisy mass behind them is within
    the noise")."""
    if flags.any():
        shrunk = np.zeros(len(flags), bool) if shrunk is None else np.asarray(shrunk, bool)
        within = [nm for nm, f, r in zip(names, flags, shrunk) if f and not r]
        absorbed = [nm for nm, r in zip(names, shrunk) if r]
        why = []
        if within:
            why.append(f"{', '.join(within)}: "
                       + (reason or "the noisy mass behind them is within the noise"))
        if absorbed:
            why.append(f"{', '.join(absorbed)}: the estimate keeps less than "
                       f"{SHRINK_MIN:.0%} of any change in them (the noise floor absorbs it)")
        warnings.warn(
            f"the release carries no information about {'; '.join(why)}. Their standard "
            "errors are set to infinity (p = 1, unbounded intervals); use a larger epsilon, "
            "fewer levels or fewer covariates",
            ReleaseWarning, stacklevel=user_stacklevel())


class MomentsInference(DPInference):
    """The bootstrap of a moments release, with one centre for everything:
    the estimate.  The covariance is the replicates' mean squared deviation
    from the estimate (their spread plus the bootstrap bias, outer product),
    so ``bse``, ``conf_int`` ("normal", the default), ``tvalues``, ``pvalues``,
    ``t_test``, ``wald_test`` and ``f_test`` agree and carry the estimator's
    bias (the eigenvalue floor at small epsilon) as uncertainty."""

    @classmethod
    def of(cls, params, reps, opts: dict, t0: float, uninformative: np.ndarray,
           simulation: str, why: str = "") -> MomentsInference:
        """From the replicates (rows with a non-finite value count as failed);
        ``why`` says, in the mechanism's terms, why a flagged coefficient has
        no information (the summary's warning)."""
        ok = np.all(np.isfinite(reps), axis=1)
        return cls(params=params, replicates=reps[ok], n_boot=int(opts["n_boot"]),
                   n_failed=int((~ok).sum()), interval=opts["interval"], simulation=simulation,
                   seeded=opts["random_state"] is not None, elapsed=time.perf_counter() - t0,
                   target=params, uninformative=uninformative if uninformative.any() else None,
                   no_information_why=why)


class DPMomentsOLS(FormulaReleaseModel):
    """Differentially private OLS from noisy moments of the design.

    Built by `dpmodels.dp_ols()` when ``method="moments"`` (or when
    ``method="auto"`` chooses it).  See `dpmodels.mechanisms.moments` for the
    release and `dpmodels.mechanisms.moments.model` for the estimate.
    """

    _name = "DP OLS (moments)"
    method = "moments"
    _release_type = PrivateMoments
    _release_fn = staticmethod(release_moments)
    release: PrivateMoments

    @checked_keywords
    def fit(self, cov_type: str = "dp", *, n_boot: int | None = None, random_state=None,
            cov_kwds: dict | None = None):
        """Least squares on the released moments; statsmodels regression
        results with ``.privacy`` (and ``.dp_inference`` under cov_type "dp").

        Parameters
        ----------
        cov_type : {"dp", "naive"}
            "dp" (default): parametric bootstrap of the release (sampling and
            privacy noise).  "naive": statsmodels' OLS covariance of the
            moments, as if they were exact.
        n_boot : int, optional
            Bootstrap replicates (default 1000; each is a small solve).
        random_state : None, int or Generator
            Makes the bootstrap reproducible.
        cov_kwds : dict, optional
            ``n_boot``, ``random_state``, ``interval`` ("normal", the default:
            centred on the estimate like ``t_test``; or "bc-normal", "basic",
            "percentile").

        Examples
        --------
        >>> import numpy as np, pandas as pd, dpmodels as dpm
        >>> rng = np.random.default_rng(1)
        >>> X = rng.normal(size=(20_000, 4)).clip(-4, 4)
        >>> df = pd.DataFrame(X, columns=["a", "b", "c", "d"])
        >>> df["y"] = 1 + X @ [1.0, -0.5, 0.25, 2.0] + rng.normal(size=20_000)
        >>> b = {c: (-4, 4) for c in "abcd"} | {"y": (-20, 20)}
        >>> res = dpm.dp_ols("y ~ a + b + c + d", df, epsilon=1.0, bounds=b,
        ...                  method="moments", random_state=0).fit(random_state=0)
        >>> [round(v) for v in res.params]
        [1, 1, 0, 0, 2]
        """
        kind, opts = dp_options(cov_type, n_boot, random_state, cov_kwds,
                                default_interval=MOMENTS_INTERVAL)
        if n_boot is None and "n_boot" not in (cov_kwds or {}):
            opts["n_boot"] = MOMENTS_N_BOOT
        mom = self.release
        space = mom.space
        k = space.constant.size
        swamped = not check_noisy_rows(mom.count, k)
        count = max(float(mom.count), k + 2.0)  # (swamped: the points' weight only)
        floor = noise_floor(mom)
        apart = self._apart(floor)  # one estimator for the fit, its replicates and worlds
        mu_v, C_v = _scaled_cov(count, mom.sums, mom.second, floor, apart=apart)
        X, y, w = _points(space, count, mu_v, C_v, mom.centre, mom.half)
        A = space.transform  # the release's columns z = A x (centred squares) or None
        X = space.design_rows(X)  # on the design's own columns: WLS gives A' beta_z
        exog = pd.DataFrame(X, columns=list(space.exog_names))
        endog = pd.Series(y, name=space.endog_name)
        model = FreqWLS(endog, exog, weights=w)
        model.nobs = float(mom.count)  # the weights sum to it up to rounding
        model.formula = self.formula
        model.data.model_spec = space.infos[1]
        keep_design(model, SpaceRecipe(space))  # pickles: the space rebuilds its design
        res = model.fit()
        res._results.privacy = mom.report
        res._results.release = mom
        res._results.source = "moments"
        if swamped:  # the noise swamped the count: no coefficient is located
            why = swamped_reason("the noisy number of rows of the moments", mom.count, k)
            flags = np.ones(k, bool)
            warn_uninformative(space.exog_names, flags, reason=why)
            res._results.normalized_cov_params = np.diag(np.full(k, np.inf))
            res._results.scale = 1.0  # (negative residual degrees of freedom: no scale)
            for stat in ("llf", "aic", "bic"):  # (a count that may be below 1: none)
                res._results._cache[stat] = np.nan
            if kind == "dp":
                attach_dp_inference(res, MomentsInference.of(
                    np.asarray(res.params), np.empty((0, k)), opts, time.perf_counter(), flags,
                    "none: the noise swamped the release's count", why=why + SWAMPED_ADVICE))
            return res
        if kind == "dp" and mom.report.private:
            params = np.asarray(res.params)
            inference = self._bootstrap(params if A is None else np.linalg.solve(A.T, params),
                                        floor, opts, apart)
            attach_dp_inference(res, inference)
        # (epsilon=inf: no privacy noise, and the moments are the data's own: the exact
        # check is statsmodels' classical OLS covariance, not a bootstrap's estimate of it)
        return res

    def _clip_shift(self, mu_v: np.ndarray, C_v: np.ndarray, rng) -> np.ndarray:
        """How far shrinking the rows into the L1 ball moves the estimate, on
        CLIP_SIM_ROWS Gaussian rows of the released mean and covariance
        (post-processing).  That population is already shrunk, so it is clipped
        less often than the data were: the shift is scaled by the ratio of the
        release's noisy clipped fraction to the simulated one (at most
        CLIP_SCALE_MAX)."""
        mom, space = self.release, self.release.space
        if not math.isfinite(mom.radius):
            return np.zeros(space.constant.size)
        Z = mu_v + rng.standard_normal((CLIP_SIM_ROWS, space.q)) @ np.linalg.cholesky(C_v).T
        norm = np.abs(Z).sum(axis=1)
        clipped = norm > mom.radius
        if not clipped.any():
            return np.zeros(space.constant.size)
        V = Z * np.where(clipped, mom.radius / norm, 1.0)[:, None]

        def fit(rows):
            m = rows.mean(axis=0)
            mu, C = _design_moments(mom, m, np.cov(rows, rowvar=False, bias=True))
            return ols_from_moments(space, mu, C)

        actual = max(mom.report.clipped_rows, 0.0) / max(mom.count, 1.0)
        scale = min(CLIP_SCALE_MAX, max(1.0, actual / clipped.mean()))
        shift = scale * (fit(V) - fit(Z))
        return np.where(np.isfinite(shift), shift, 0.0)

    def _apart(self, floor: float) -> bool:
        """Whether the release's fit floors the residual apart (`floors_apart()`
        on its own moments): decided once, so every replicate and world of its
        bootstrap runs the same estimator."""
        mom = self.release
        return bool(floor > 0 and floors_apart(_raw_cov(mom.count, mom.sums, mom.second)[1],
                                               floor))

    def _floor_shift(self, params: np.ndarray, floor: float) -> np.ndarray:
        """The estimate minus the "bare" one, whose whole ``[v y]`` matrix has its
        eigenvalues raised only to the rounding level (not floored apart: a
        covariates' block the noise left indefinite stays invertible there
        through the response's direction): how far the noise floor moved it (0
        where it does not bind)."""
        mom = self.release
        bare = estimate(mom, mom.count, mom.sums, mom.second, FLOOR_TINY)
        shift = params - bare
        return np.where(np.isfinite(shift), shift, 0.0)

    # ---- inference -------------------------------------------------------------------------
    def _uninformative(self, shrunk: np.ndarray | None = None) -> np.ndarray:
        """Design columns whose noisy mass is within INFO_SDS noise sds of nothing,
        or (``shrunk``, design order) that the noise floor absorbs."""
        mom, space = self.release, self.release.space
        sd_s, sd_m = math.sqrt(mom.noise_var[1]), math.sqrt(mom.noise_var[2])
        flags = np.zeros(space.constant.size, bool)
        if sd_m == 0:
            return flags
        mu = mom.sums / max(mom.count, 1.0)
        spread = np.diag(mom.second) - max(mom.count, 1.0) * mu**2
        dummy = space.dummy
        weak = np.where(dummy[:-1], mom.sums[:-1] < INFO_SDS * sd_s,
                        spread[:-1] < INFO_SDS * sd_m)
        if shrunk is not None:
            weak = weak | np.asarray(shrunk, bool)[~space.constant]
        flags[np.flatnonzero(~space.constant)] = weak
        # the intercept is the response's mean minus sum_j b_j mean_j: a slope the
        # release says nothing about leaves it unknown too, unless that column's
        # mean is within the noise of 0 (a dummy flagged as weak always is)
        mean_sd = sd_s * mom.half[:-1] / max(mom.count, 1.0)
        mean = _column_means(mom)
        if np.any(weak & ~dummy[:-1] & (np.abs(mean) > INFO_SDS * mean_sd)):
            flags[space.constant] = True
        flags = space.carried(flags)  # a centred square's flag reaches its column's
        warn_uninformative(space.exog_names, flags,
                           None if shrunk is None else flags & np.asarray(shrunk, bool))
        return flags

    def _shrinkage(self, params: np.ndarray, floor: float, rng,
                   apart: bool) -> np.ndarray | None:
        """How much of a change in each true coefficient the estimate keeps: the
        diagonal of the derivative of the expected estimate in the coefficients,
        by finite differences under common random numbers (SHRINK_REPS replicate
        releases of the bootstrap's law, post-processing).  ``None`` where the
        floor cannot bind on the covariates (SHRINK_BINDS).

        The worlds differ only in the response's regression on the covariates:
        the covariates' covariance and the residual variance are the released
        ones with the floor left out (raised to SHRINK_POPULATION_FLOOR of it):
        worlds built on the floored covariance spread more than the data, and
        the floor binds less there than it did on the release."""
        mom, space = self.release, self.release.space
        N, q = float(mom.count), space.q
        # the worlds' covariates (the whole floor, a rounding-level one); their estimator: apart
        mu_v, C_v = _scaled_cov(N, mom.sums, mom.second, SHRINK_POPULATION_FLOOR * floor)
        if not floor > 0 or np.linalg.eigvalsh(C_v[:-1, :-1])[0] >= SHRINK_BINDS * floor:
            return None
        B = SHRINK_REPS
        z = rng.standard_normal((B, q))
        W = np.reshape(stats.wishart(df=max(N - 1.0, float(q)), scale=np.eye(q))
                       .rvs(size=B, random_state=rng), (B, q, q))
        count, e_s, E = _noise_draws(mom, rng, B)
        nc, const = np.flatnonzero(~space.constant), np.flatnonzero(space.constant)
        half, centre = mom.half, mom.centre
        Cxx, Cxy = C_v[:-1, :-1], C_v[:-1, -1]
        s2 = max(float(C_v[-1, -1] - Cxy @ np.linalg.lstsq(Cxx, Cxy, rcond=None)[0]), 0.0)

        def replicates(theta):
            # the Gaussian world whose response has design coefficients theta
            gamma = theta[nc] * half[:-1] / half[-1]
            C = np.array(C_v)
            C[:-1, -1] = C[-1, :-1] = Cxx @ gamma
            C[-1, -1] = gamma @ Cxx @ gamma + s2
            mu = np.array(mu_v)
            mu[-1] = (theta[const] @ space.constant_values[const] + theta[nc] @ centre[:-1]
                      - centre[-1]) / half[-1] + gamma @ mu_v[:-1]
            lam, V = np.linalg.eigh(C)
            root = V * np.sqrt(np.maximum(lam, 0.0))
            mean = mu + z @ root.T / math.sqrt(N)
            sums = N * mean + e_s
            second = root @ W @ root.T + N * mean[:, :, None] * mean[:, None, :]
            reps = estimate(mom, count, sums, _as_released(space, sums, second) + E, floor,
                            apart=apart)
            return np.where(np.isfinite(reps), reps, np.nan)

        return keep_shares(replicates, params, nc)

    def _shrinkage_shift(self, params: np.ndarray, keep: np.ndarray) -> np.ndarray:
        """What the floor took from the estimate, as a shift: each slope's
        ``b (1/keep - 1)`` (the coefficient whose expected estimate is b, minus
        b), and the intercept's through the columns' means."""
        mom, space = self.release, self.release.space
        nc, const = np.flatnonzero(~space.constant), np.flatnonzero(space.constant)
        k = np.clip(keep, SHRINK_MIN, 1.0)
        shift = np.zeros(params.size)
        shift[nc] = params[nc] * (1.0 / k[nc] - 1.0)
        if const.size:
            shift[const] = -(shift[nc] @ _column_means(mom)) / const.size
        return np.where(np.isfinite(shift), shift, 0.0)

    def _bootstrap(self, params: np.ndarray, floor: float, opts: dict,
                   apart: bool) -> DPInference:
        t0 = time.perf_counter()
        mom, space = self.release, self.release.space
        B = int(opts["n_boot"])
        rng = make_rng(opts["random_state"])
        N = float(mom.count)
        q = space.q
        mu_v, C_v = _scaled_cov(N, mom.sums, mom.second, max(floor, 1e-12), apart=apart)
        # sampling: the mean is normal, the scatter Wishart (exact for Gaussian rows)
        chol = np.linalg.cholesky(C_v / N)
        mean = mu_v + rng.standard_normal((B, q)) @ chol.T
        dof = max(N - 1.0, float(q))
        scatter = stats.wishart(df=dof, scale=C_v).rvs(size=B, random_state=rng)
        scatter = np.reshape(scatter, (B, q, q))
        sums = N * mean
        second = scatter + N * mean[:, :, None] * mean[:, None, :]
        count = np.full(B, N)
        if mom.noise_var[2] > 0:  # the release's noise on every entry
            count, e_s, E = _noise_draws(mom, rng, B)
            sums = sums + e_s
            second = _as_released(space, sums, second) + E
        reps = estimate(mom, count, sums, second, floor, apart=apart)
        # the floor's own pull on the estimate is a bias the bootstrap population (built
        # from the floored estimate) cannot see: carry it as uncertainty, |shift| wider
        shift = FLOOR_BIAS_WEIGHT * self._floor_shift(params, floor) + self._clip_shift(
            mu_v, C_v, rng)
        reps = signed_shift(reps, shift, rng)
        keep = self._shrinkage(params, floor, rng, apart)
        shrunk = None if keep is None else ~(keep >= SHRINK_MIN)
        if keep is not None:
            lost = self._shrinkage_shift(params, keep)
            reps = signed_shift(reps, lost, rng)
        if space.transform is not None:  # coefficients of z = A x: A' beta on x
            params, reps = params @ space.transform, reps @ space.transform
        return MomentsInference.of(
            params, reps, opts, t0, self._uninformative(shrunk),
            "Gaussian population with the released mean and covariance, Wishart scatter, "
            "the release's noise on every entry",
            why="the noisy moments behind them (their rows' count, for a 0/1 column, or their "
                "spread in the released second moments) are within the moments' noise, or the "
                "eigenvalue floor of the noisy Gram matrix absorbs any change in them; use a "
                "larger epsilon, fewer levels or fewer covariates")

