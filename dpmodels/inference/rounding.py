"""Least squares on a binned response: how far rounding the response to its
bins can move the slopes, from the response's released marginal.

Fitting on the cells replaces each row's response ``y`` by a point ``y~`` of
its bin; the slopes then estimate ``Cov(x, y~)`` where the analyst wants
``Cov(x, y)``.  When ``y`` spreads over several bins the rounding error is
nearly independent of everything (Sheppard's regime) and the slopes are
unbiased; when ``y`` sits mostly in one bin they are not, and no refit on
the release can show it: the merged-bin refits and the bootstrap's replicates
are as coarse as the estimate.  On the synthetic cont5 shape (n = 2e4,
``y`` in 3 bins 7.2 wide, SD 1.6) the exact binned table gave every slope
0.26 of its value.

For ``(x, y)`` jointly normal, ``E[x | y]`` is linear in ``y``, so every slope
is multiplied by one factor ``lambda = Cov(y, y~) / Var(y)``; for a normal
``y`` with mean ``mu`` and SD ``sigma`` binned at edges ``e_k`` with points
``m_k``, ``lambda = sum_k m_k (phi(z_k) - phi(z_k+1)) / sigma`` with ``z_k =
(e_k - mu) / sigma`` (`slope_factor()` truncates it to the declared
bounds, where the response lives).  The normal is fitted to the response's
released marginal (interval-censored maximum likelihood on the bins,
truncated to the bounds, after the threshold's expected pure-noise rows are
taken out), so the bin shares place it against the grid's edges: on cont5
the exact table gives 0.28 (3 bins) and 0.88 (5 bins) against the 0.26 and
0.86 measured.
The interval carries ``a``, the largest ``|1 - lambda|`` over the normals
within two standard errors of the fit (the counts' sampling, the cells'
noise and the spurious cells' variance as an overdispersion of the binned
likelihood), as a relative move of unknown sign
(`RoundingBound.widened()`), not a correction: the normal is a model.
A response whose released mass sits in one bin measures no slope.  In two
bins the shares place the edge against the mean but say nothing of the
spread (``lambda = h phi(z) / sigma`` for any sigma), so a response with at
least 3 bins whose released mass (the spurious rows taken out) sits in two of
them measures no slope either: on cont5 at n = 2e3, epsilon 1 (3 bins) 3 of
10 releases were so, and their intervals, without the bound, excluded the
slopes.  A response cut into 2 bins in all is left to the other checks (on
``dpm.datasets.housing``, n = 2,000, epsilon 1, ``price`` in 2 bins, every
interval covered in 30 releases; `coarse_columns()`).

Post-processing of the release only.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import optimize, stats

from .information import marginal_frame, spurious_law

__all__ = ["RoundingBound", "fit_binned_normal", "response_rounding", "rounded_mean_shift",
           "slope_factor"]


def _truncated(mu: float, sigma: float, edges: np.ndarray):
    """A normal ``N(mu, sigma^2)`` truncated to ``[edges[0], edges[-1]]``: the
    bins' probabilities, ``E[(y - mu) 1{y in bin k}]``, the mean and the
    variance.  A sigma the optimizer tries far out gives infinities, never a
    numpy warning (which would reach the user)."""
    sigma = np.float64(sigma)
    with np.errstate(over="ignore", invalid="ignore", divide="ignore", under="ignore"):
        z = (np.asarray(edges, float) - mu) / sigma
        cdf, pdf = stats.norm.cdf(z), stats.norm.pdf(z)
        total = max(float(cdf[-1] - cdf[0]), 1e-300)
        p = np.diff(cdf) / total
        part = sigma * (pdf[:-1] - pdf[1:]) / total
        mean = mu + float(part.sum())
        zpdf = np.where(np.isfinite(z), z * pdf, 0.0)
        second = sigma ** 2 * (1.0 + (zpdf[0] - zpdf[-1]) / total)
        var = second - (mean - mu) ** 2
    return p, part, mean, float(max(var, 0.0)) if not np.isnan(var) else 0.0


def _binned_nll(theta: np.ndarray, edges: np.ndarray, counts: np.ndarray) -> float:
    """Minus the log-likelihood of ``(mu, log sigma)`` for counts on bins."""
    with np.errstate(over="ignore"):
        sigma = np.exp(np.float64(theta[1]))
    p = _truncated(theta[0], sigma, edges)[0]
    return -float((counts * np.log(np.clip(p, 1e-300, None))).sum())


def fit_binned_normal(edges: np.ndarray, counts: np.ndarray) -> tuple[float, float]:
    """Maximum-likelihood ``(mu, sigma)`` of a normal truncated to the outer
    edges (the declared bounds: the response lives within them) from counts
    on the bins of ``edges``.

    Examples
    --------
    >>> import numpy as np
    >>> from dpmodels.inference.rounding import fit_binned_normal
    >>> mu, sigma = fit_binned_normal(np.array([0.0, 1, 2, 3]), np.array([16.0, 68, 16]))
    >>> round(mu, 3), round(sigma, 2)
    (1.5, 0.5)
    """
    edges = np.asarray(edges, float)
    counts = np.asarray(counts, float)
    if not counts.sum() > 0:
        return float("nan"), 0.0
    width = float(np.mean(np.diff(edges)))
    mids = (edges[:-1] + edges[1:]) / 2.0
    mean = float((counts * mids).sum() / counts.sum())
    sd = float(np.sqrt(max((counts * (mids - mean) ** 2).sum() / counts.sum(), width ** 2 / 12)))

    best = optimize.minimize(_binned_nll, [mean, math.log(sd)], args=(edges, counts),
                             method="Nelder-Mead",
                             options={"xatol": 1e-6 * width, "fatol": 1e-9, "maxiter": 2000})
    return float(best.x[0]), float(math.exp(best.x[1]))


def slope_factor(mu: float, sigma: float, edges: np.ndarray, points: np.ndarray) -> float:
    """``lambda = Cov(y, y~) / Var(y)`` for ``y`` normal ``(mu, sigma^2)``
    truncated to the outer edges and rounded to ``points`` (one per bin of
    ``edges``).

    Examples
    --------
    >>> import numpy as np
    >>> from dpmodels.inference.rounding import slope_factor
    >>> e = np.linspace(0.0, 10.0, 11)
    >>> round(slope_factor(5.3, 1.0, e, (e[:-1] + e[1:]) / 2), 4)
    1.0
    >>> round(slope_factor(5.5, 0.3, e, (e[:-1] + e[1:]) / 2), 2)  # 1 - 2 exp(-2 pi^2 0.09)
    0.66
    """
    if not sigma > 0:
        return 0.0
    p, part, mean, var = _truncated(mu, sigma, edges)
    if not var > 0:
        return 0.0
    cov = float((np.asarray(points, float) * (part - (mean - mu) * p)).sum())
    return float(cov / var)


def rounded_mean_shift(mu: float, sigma: float, edges: np.ndarray, points: np.ndarray) -> float:
    """``|E[y~] - E[y]|`` for the truncated normal of `slope_factor()`."""
    p, _, mean, _ = _truncated(mu, sigma, edges)
    return abs(float((np.asarray(points, float) * p).sum()) - mean)


@dataclass(frozen=True)
class RoundingBound:
    """What rounding the continuous response to its bins can do to a
    least-squares fit on the cells (module docstring)."""

    variable: str
    bins: int
    #: The fitted normal's SD, in bins.
    spread: float
    #: ``lambda`` of the fitted normal: the slopes' factor.
    factor: float
    #: ``|E[y~] - mu|`` of the fitted normal, on the response's binned scale.
    mean_shift: float
    #: ``a``: every slope may be scaled by a factor in ``[1 - a, 1 + a]``: the
    #: largest ``|1 - lambda|`` over the normals within two standard errors of
    #: the fit (`response_rounding()`).
    bound: float
    #: Bins holding released rows once the expected spurious rows are out.
    occupied: int = 0

    @property
    def unmeasured(self) -> bool:
        """True when the factor may be 0: the slopes are not measured."""
        return not self.bound < 1.0

    def suggested_bins(self) -> int:
        """Bins that would make the response's SD about 0.6 of a bin (where
        the factor is within 0.2% of 1)."""
        return int(math.ceil(self.bins * 0.6 / max(self.spread, 0.1)))

    def widened(self, cov: np.ndarray, params: np.ndarray, constant: np.ndarray,
                means: np.ndarray, ok: np.ndarray) -> np.ndarray:
        """``cov`` with each standard error ``se`` of the coefficients ``ok``
        made ``sqrt(se^2 + r^2) / (1 - a)``: ``r = a |b|`` for a slope ``b``,
        and for the constant columns the mean shift plus ``a sum_j |mean_j
        b_j|`` (the intercept moves with the slopes times the covariates'
        means).  The estimate of ``lambda b`` carries ``r`` as a shift of
        unknown sign, added in quadrature like the binning check's others
        (`mse`), and dividing by ``1 -
        a`` scales the interval to ``b`` for the smallest factor."""
        a = self.bound
        if not a > 0 or self.unmeasured:
            return cov
        params = np.asarray(params, float)
        r = a * np.abs(params)
        tilt = a * float(np.nansum(np.abs(np.where(constant, 0.0, means * params))))
        r = np.where(constant, self.mean_shift + tilt, r)
        out = np.array(cov, dtype=float)
        se = np.sqrt(np.clip(np.diag(out), 0.0, None))
        new = np.sqrt(se ** 2 + r ** 2) / (1.0 - a)
        scale = np.where(ok & (se > 0) & np.isfinite(se), new / np.where(se > 0, se, 1.0), 1.0)
        out *= np.outer(scale, scale)
        zero = ok & ~(se > 0)
        out[zero, zero] = new[zero] ** 2
        return out


def response_rounding(release, response: str) -> RoundingBound | None:
    """The `RoundingBound` of ``response`` in ``release``; None for a
    response that is not binned (a factor or a class) or is cut into 2 bins
    (module docstring)."""
    axis = release.domain.axis(response)
    if axis.kind != "continuous" or axis.bins < 2:
        return None
    marg = release.marginal([response])
    counts = np.clip(marg[release.count_column].to_numpy(float), 0.0, None)
    code = axis.codes(marg[response].to_numpy(float))[0]
    per_bin = np.bincount(code, weights=counts, minlength=axis.bins)
    law = spurious_law(release.report)
    if law is not None:  # the threshold's expected pure-noise rows, spread over the bins
        _, per_row = marginal_frame(release.domain, [response])
        per_bin = np.clip(per_bin - law[0] * law[1] * per_row, 0.0, None)
    edges = np.asarray(axis.edges, float)
    occupied = int(np.count_nonzero(per_bin > 0))
    if occupied <= 1:  # one value of the response: every slope is 0 whatever the data's
        return RoundingBound(response, axis.bins, 0.0, 0.0, math.inf, math.inf, occupied)
    if occupied == 2:  # the shares place the edge against the mean, not the spread
        if axis.bins == 2:  # left to the other checks (module docstring)
            return None
        return RoundingBound(response, axis.bins, 0.0, math.nan, math.inf, math.inf, occupied)
    mu, sigma = fit_binned_normal(edges, per_bin)
    points = (edges[:-1] + edges[1:]) / 2.0
    factor = slope_factor(mu, sigma, edges, points)
    if not sigma > 0:
        return RoundingBound(response, axis.bins, 0.0, factor, math.inf, math.inf, occupied)
    shift = rounded_mean_shift(mu, sigma, edges, points)
    # the fit's own error: the counts vary by sampling, the cells' noise and the spurious
    # cells (an overdispersion of the multinomial likelihood's covariance)
    spread = per_bin.sum()
    if law is not None:
        spread += float(release.cell_ids.size) * law[3] + axis.bins * per_row * max(
            law[0] * law[2] - (law[0] * law[1]) ** 2, 0.0)
    over = max(spread / per_bin.sum(), 1.0)
    se = over ** 0.5 * _fit_errors(edges, per_bin, mu, sigma)
    if not np.all(np.isfinite(se)):  # a flat likelihood: the fit pins nothing
        return RoundingBound(response, axis.bins, sigma / axis.width, factor, shift, math.inf,
                             occupied)
    grid = [(mu + i * 2.0 * se[0], sigma * math.exp(j * 2.0 * se[1]))
            for i in (-1, 0, 1) for j in (-1, 0, 1)]
    bound = max(abs(1.0 - slope_factor(m, sd, edges, points)) for m, sd in grid)
    return RoundingBound(response, axis.bins, sigma / axis.width, factor, shift, bound, occupied)


def _fit_errors(edges: np.ndarray, counts: np.ndarray, mu: float, sigma: float) -> np.ndarray:
    """Standard errors of ``(mu, log sigma)`` from the binned likelihood's
    observed information (central differences)."""

    def nll(theta):
        return _binned_nll(theta, edges, counts)

    theta = np.array([mu, math.log(sigma)])
    steps = np.array([1e-3 * sigma, 1e-3])
    hess = np.empty((2, 2))
    for i in range(2):
        for j in range(2):
            ei, ej = np.eye(2)[i] * steps[i], np.eye(2)[j] * steps[j]
            hess[i, j] = (nll(theta + ei + ej) - nll(theta + ei - ej) - nll(theta - ei + ej)
                          + nll(theta - ei - ej)) / (4 * steps[i] * steps[j])
    try:
        cov = np.linalg.inv(hess)
    except np.linalg.LinAlgError:
        return np.array([math.inf, math.inf])
    d = np.diag(cov)
    return np.sqrt(np.where(d > 0, d, math.inf))
