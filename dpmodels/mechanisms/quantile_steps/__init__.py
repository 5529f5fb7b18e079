"""The quantile-steps release: a private quantile regression by a least-squares
step and a few Newton steps of the check loss, each from noisy statistics.

Quantile regression has no finite sufficient statistics, but a Newton step
of the check loss ``sum rho_tau(y - x'b)`` from a point b needs only two sums
over the rows: the score ``s(b) = sum (tau - 1[y < x'b]) x`` and a kernel
estimate of the information ``H(b) = sum 1[|y - x'b| < h] x x' / (2h)`` (Powell's
sandwich middle, the uniform kernel).  Both are bounded per row once the rows
are, so each step is released with exact discrete Laplace noise by the
machinery of `dpmodels.mechanisms.newton` (same quantization, same sensitivity).
The estimate is the zero of the noisy score: the bandwidth only sets how fast
the steps get there, not where they go.

Mechanism (epsilon-DP, delta = 0, replace-one neighbours, public n)
------------------------------------------------------------------
1. **Public design space** of the right-hand side (as `dpmodels.mechanisms.newton`)
   and the response scaled by its public range to ``y~`` in [-1, 1].
2. **Centres and scales (10% of epsilon)** and **radius (5%)** of the
   design, as the Newton release; ``x~ = (1, v)``.
3. **Least-squares step (20%)**: from ``b = 0``, weights 1 and residuals
   ``y~``: the release is ``sum x~ x~'`` and ``sum y~ x~`` (a Newton step's
   statistics), so ``b_1`` is the private least-squares fit and the first
   statistic carries the design's count, mean and covariance.
4. **Level counts (3%, only when the design has 0/1 columns)**: the noisy
   number of rows and of rows with a 1 in each 0/1 column, for the
   information diagnostic (a declared level with no rows); replace-one L1
   sensitivity ``max(2g + u, 1 + g + u)``, g the exclusive groups of dummies
   and u the other 0/1 columns (`level_sensitivity()`).
5. **Residual histogram (5%)**: the counts of ``r = y~ - x~'b_1`` on a public
   symmetric grid (geometric, 2 edges per octave, from 2**-8 to 4);
   replace-one L1 sensitivity 2.  Post-processing reads from it, for every
   quantile tau, the start (``b_1`` with its intercept moved by the
   residuals' tau-quantile) and the bandwidth h (the half-width around that
   quantile holding a public share of the rows: the Hall-Sheather rate, raised
   where the information's noise would swamp fewer rows; `band_share()`).
6. **Quantile steps (the rest, split equally over the quantiles, and within
   one quantile 15% / 25% / 60% over three steps)**: weights
   ``1[|y~ - x~'b| < h]`` and residuals ``tau - 1[y~ < x~'b]``, released as
   the Newton release's step (`dpmodels.mechanisms.newton.noisy_step()`).  The update
   ``b + H^-1 s`` (H floored at the noise's operator norm) is post-processing.

The parts of epsilon add up to epsilon (PRIVACY.md rule 8); every quantity
the later stages use (bandwidths, starts) is read from earlier noisy
statistics and public inputs only.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import ClassVar

import numpy as np
import pandas as pd
import patsy
from scipy import stats

from ...core.accountant import Accountant
from ...core.budget import exact_parts
from ...core.errors import DomainError, DPModelsError
from ...core.exact import discrete_laplace, discrete_laplace_variance
from ...core.report import MomentsReport
from ...data.clipping import CLIP_SHARE, clipping_axes
from ...data.clipping import split_label as clip_split_label
from ...domain.formula import caller_namespace
from ...output.documents import SavedParts, float_out, floats_out
from .. import moments as _moments_module  # its CENTRE_SQUARES, read at release time
from ..moments import (
    _NO_NA,
    RADIUS_SHARE,
    SCALE_SHARE,
    DesignSpace,
    Passes,
    ScaledRows,
    _RowPasses,
    clipped_rows,
    describe_axis,
    design_space,
    location_counts,
    moments_out,
    public_inputs,
    published_frame,
    scaled_ball,
    space_out,
    unit_epsilon,
)
from ..newton import (
    LEVELS,
    NOISELESS,
    _floored,
    _newton_bound,
    _quantum,
    check_split,
    design_moments,
    newton_update,
    noisy_step,
    scaled_params,
    warn_not_private,
)
from ..pipeline import released_outside, run_release

__all__ = ["PrivateQuantileSteps", "release_quantile_steps", "QUANTILE_STEP_SHARES",
           "quantile_split",
           "band_share", "score_step"]

#: Shares of epsilon after the scale and radius stages (SCALE_SHARE, RADIUS_SHARE).
LS_SHARE = 0.20
RESIDUAL_SHARE = 0.05
#: Noisy row counts of every 0/1 design column (and of all rows), for the
#: information diagnostic only (not spent when the design has none).
LEVEL_SHARE = 0.03
#: How one quantile's part is shared by its steps: the first steps only need to
#: come close (they start from the least-squares fit moved to the residuals'
#: quantile); the last decides the estimate's noise.
QUANTILE_STEP_SHARES = (0.1, 0.15, 0.25, 0.5)
#: The residual grid: magnitudes 4 * 2**(-k/2), k = 0..20 (4 down to 2**-8),
#: mirrored; the outer bins hold everything beyond +-4.  Coarse on purpose: a
#: band's count adds the noise of every bin it spans.
_GRID_TOP, _GRID_STEPS, _PER_OCTAVE = 4.0, 21, 2
#: The band around the quantile holds at least this share of the rows (at most
#: MAX_BAND), and enough rows that its information is NOISE_ROWS times its noise.
MIN_BAND, MAX_BAND, NOISE_ROWS = 0.02, 0.5, 10.0
#: Each step goes this fraction of the way its Newton step points: the band's
#: density, read at a point short of the solution, underestimates the curvature.
STEP_LENGTH = 0.7
#: The band count's floor (rows): a noisy count below it is taken as this.
MIN_BAND_ROWS = 1.0


def residual_edges() -> np.ndarray:
    """The public residual grid (increasing)."""
    mags = _GRID_TOP * 2.0 ** (-np.arange(_GRID_STEPS) / _PER_OCTAVE)
    return np.concatenate([-mags, mags[::-1]])


def _score_statistics(rows: _RowPasses, space: DesignSpace, offsets, scales, radius, b,
                      tau: float, h: float):
    """Exact integer statistics of one quantile step at ``b``: ``G g`` times the
    number of rows with ``|y~ - x~'b| < h``, and ``sum k e`` with ``k = round(x~
    g)``, ``e = round((tau - 1[y~ < x~'b]) G)``.  A row adds at most ``G g`` to
    the first and ``G A`` (A: `dpmodels.mechanisms.newton._newton_bound()`) to the
    second in L1, so replace-one changes the vector by at most ``2 G (g + A)``."""
    g = _quantum(radius)
    _, A = _newton_bound(radius, space, offsets, scales, g)
    chunk = max(1, (2**53 - 1) // int(LEVELS * (A + g + 1)))
    c, sc = 0, [0] * (space.q + 1)
    for U, y in rows.pairs(chunk):
        V = clipped_rows(U, offsets, scales, radius)
        Xt = np.column_stack([np.ones(V.shape[0]), V])
        r = y - Xt @ b
        e = np.rint((tau - (r < 0)) * LEVELS)
        c += int(np.count_nonzero(np.abs(r) < h))
        sc = [x + int(v) for x, v in zip(sc, np.rint(Xt * g).T @ e)]
    return c * LEVELS * g, np.array(sc, dtype=object)  # (added element-wise over partitions)


def score_sensitivity(radius, space: DesignSpace, offsets, scales) -> tuple[int, int]:
    """``(g, Delta)`` of a quantile step's statistics (see `_score_statistics()`)."""
    g = _quantum(radius)
    _, A = _newton_bound(radius, space, offsets, scales, g)
    return g, math.ceil(2.0 * LEVELS * (g + A) * (1 + 1e-12)) + 1


def score_step(passes: Passes, space: DesignSpace, offsets, scales, radius, b, tau: float,
               h: float, eps_t: float, bits):
    """One released quantile step: ``(band rows, score, (var_rows, var_score),
    Delta, g)`` with exact discrete Laplace noise of scale ``Delta / eps_t``."""
    c, sc = passes.run(lambda rows: _score_statistics(rows, space, offsets, scales, radius,
                                                      b, tau, h))
    g, delta = score_sensitivity(radius, space, offsets, scales)
    eps_unit = unit_epsilon(eps_t, delta / 2.0)
    z = discrete_laplace(bits, eps_unit, 1 + len(sc))
    unit = float(LEVELS * g)
    rows_in = (int(c) + int(z[0])) / unit
    score = np.array([int(x) + int(e) for x, e in zip(sc, z[1:])], float) / unit
    var = discrete_laplace_variance(eps_unit) / unit**2
    return rows_in, score, (var, var), delta, g


def least_squares_family(eta: np.ndarray, y: np.ndarray):
    """Weights 1 and residuals ``y - eta`` (clipped to [-1, 1] by the step)."""
    return np.ones_like(eta), y - eta


def band_share(n: float, tau: float, noise_rows: float) -> float:
    """The share of the rows within the bandwidth: twice the Hall-Sheather
    bandwidth in probability units at ``n`` (alpha 0.05), raised to
    ``noise_rows / n`` (rows the information's noise needs), clipped to
    [MIN_BAND, MAX_BAND]."""
    z = stats.norm.ppf(tau)
    hs = (n ** (-1.0 / 3.0) * stats.norm.ppf(0.975) ** (2.0 / 3.0)
          * (1.5 * stats.norm.pdf(z) ** 2 / (2.0 * z * z + 1.0)) ** (1.0 / 3.0))
    return float(min(max(2.0 * hs, noise_rows / max(n, 1.0), MIN_BAND), MAX_BAND))


def start_and_bandwidth(counts: np.ndarray, edges: np.ndarray, tau: float, share: float,
                        var_bin: float) -> tuple[float, float, float, float]:
    """From noisy residual counts (post-processing): the residuals'
    ``tau``-quantile, the smallest half-width h around it holding ``share`` of
    the rows (on the piecewise-linear CDF through the grid's edges, the outer
    bins at the outer edges), the rows within that band and the variance of
    that number (``var_bin`` per bin it spans)."""
    c = np.maximum(np.asarray(counts, float), 0.0)
    total = c.sum()
    if total <= 0:
        return 0.0, _GRID_TOP / 2.0, 0.0, math.inf
    cdf = (np.concatenate([[0.0], np.cumsum(c[1:-1])]) + c[0]) / total
    keep = np.concatenate([[True], np.diff(cdf) > 0])  # strictly increasing for interp
    qt = float(np.interp(tau, cdf[keep], edges[keep]))
    hs = _GRID_TOP * 2.0 ** (-np.arange(8 * _GRID_STEPS + 1)[::-1] / (4 * _PER_OCTAVE))
    mass = np.interp(qt + hs, edges, cdf) - np.interp(qt - hs, edges, cdf)
    ok = np.flatnonzero(mass >= share)
    i = int(ok[0]) if ok.size else hs.size - 1
    spanned = 1 + int(np.count_nonzero((edges > qt - hs[i]) & (edges < qt + hs[i])))
    return qt, float(hs[i]), float(mass[i] * total), spanned * var_bin


def gram_of(H: np.ndarray, var_h: float) -> np.ndarray:
    """``E x~ x~'`` from the least-squares step's noisy ``sum x~ x~'`` (batched):
    eigenvalues floored at the noise's operator norm, divided by the count."""
    k = H.shape[-1]
    count = np.maximum(H[..., 0, 0], 1.0)[..., None, None]
    return _floored(H, 2.0 * math.sqrt(k) * math.sqrt(var_h)) / count


#: Smallest noise variance an inverse-variance weight uses: at a large epsilon the
#: discrete Laplace variance underflows to 0 (the noise is 0 with overwhelming
#: probability), and 1/0 would stop the release after its charge.
_MIN_VARIANCE = 1e-300


@dataclass(frozen=True)
class BandCount:
    """The rows within a quantile's band: every noisy count of them so far,
    inverse-variance weighted (the residual histogram's at the start, then
    each step's, near the same point); floored at two of its SDs and at
    MIN_BAND_ROWS.  Works on arrays (the bootstrap's replicates)."""

    weight_sum: np.ndarray
    weighted: np.ndarray

    @classmethod
    def of(cls, rows, var) -> BandCount:
        var = np.maximum(np.asarray(var, float), _MIN_VARIANCE)
        return cls(1.0 / var, np.asarray(rows, float) / var)

    def add(self, rows, var: float) -> BandCount:
        var = np.maximum(var, _MIN_VARIANCE)
        return BandCount(self.weight_sum + 1.0 / var, self.weighted + np.asarray(rows) / var)

    @property
    def rows(self):
        est = self.weighted / self.weight_sum
        return np.maximum(np.maximum(est, 2.0 / np.sqrt(self.weight_sum)), MIN_BAND_ROWS)


def quantile_update(b, gram, rows, h: float, score):
    """One quantile step's update (batched): ``b + STEP_LENGTH H^-1 score``
    with ``H = rows / (2h) gram``."""
    f = np.asarray(rows, float)[..., None, None] / (2.0 * h)
    return newton_update(b, f * gram / STEP_LENGTH, score, 0.0)


@dataclass(frozen=True, eq=False)
class PrivateQuantileSteps(ScaledRows):
    """A private quantile regression released as noisy Newton steps of the
    check loss (`dpmodels.mechanisms.quantile_steps`), for one or more quantiles.

    Attributes
    ----------
    space : DesignSpace
        The right-hand side's public design (no response coordinate).
    quantiles : tuple of float
    beta : ndarray, (m, q + 1)
        Each quantile's estimate in scaled coordinates ``(1, v)`` and scaled
        response ``y~ = (y - y_centre) / y_half``.
    density : ndarray, (m,)
        Each quantile's residual density at its quantile (scaled response
        units), from its last step's band count: ``rows in band / (2 h n)``.
    ls_information : ndarray, (q + 1, q + 1)
        The least-squares step's noisy ``sum x~ x~'``; every quantile step's
        information is ``band rows / (2h)`` times `gram_of()` it.
    band_prior_var : ndarray, (m,)
        Variance of each quantile's band count read from the residual
        histogram (the first term of `BandCount`).
    score, start : ndarray
        Each quantile's last noisy score ``(m, q+1)`` at ``start`` (the
        previous iterate).
    bandwidth : ndarray, (m,)
        Each quantile's h in scaled response units.
    steps : tuple
        Per quantile, the noise variances ``(band count, score entry)`` of
        each of its steps.
    ls_beta : ndarray
        The least-squares step's estimate (every quantile's start before the
        shift).
    ls_noise : tuple of float
        Noise variances of the least-squares step's entries.
    residual_counts, residual_edges : ndarray
        The released residual histogram and its public grid.
    level_counts : ndarray
        Noisy number of rows, then of rows with a 1 in each 0/1 design
        column (empty without such columns); ``level_noise_var`` the variance
        of the noise on each.
    moments : tuple
        ``(count, mean, cov)`` of v from the least-squares step's information.
    offsets, scales : ndarray
    radius : float
    y_centre, y_half : float
        The response's public scaling.
    report : MomentsReport
    """

    #: The release's kind in a saved file (`dpmodels.front.saved`).
    saved_kind: ClassVar[str] = "quantile-steps"

    space: DesignSpace
    quantiles: tuple
    beta: np.ndarray
    density: np.ndarray
    ls_information: np.ndarray
    band_prior_var: np.ndarray
    score: np.ndarray
    start: np.ndarray
    bandwidth: np.ndarray
    steps: tuple
    ls_beta: np.ndarray
    ls_noise: tuple
    residual_counts: np.ndarray
    residual_edges: np.ndarray
    level_counts: np.ndarray
    level_noise_var: float
    moments: tuple
    offsets: np.ndarray
    scales: np.ndarray
    radius: float
    y_centre: float
    y_half: float
    report: MomentsReport

    def saved_parts(self) -> SavedParts:
        """What `save()` writes: the file's release type, the public domain,
        the report and the released values (read back by this folder's
        ``codec.read``)."""
        return SavedParts(self.saved_kind, self.space.domain, self.report, {
            "design": space_out(self.space, False),
            "quantiles": floats_out(self.quantiles), "beta": floats_out(self.beta),
            "density": floats_out(self.density), "ls_information": floats_out(self.ls_information),
            "band_prior_var": floats_out(self.band_prior_var), "score": floats_out(self.score),
            "start": floats_out(self.start), "bandwidth": floats_out(self.bandwidth),
            "steps": [[floats_out(s) for s in per_q] for per_q in self.steps],
            "ls_beta": floats_out(self.ls_beta), "ls_noise": floats_out(self.ls_noise),
            "residual_counts": [int(c) for c in np.asarray(self.residual_counts).tolist()],
            "residual_edges": floats_out(self.residual_edges),
            "level_counts": floats_out(self.level_counts),
            "level_noise_var": float_out(self.level_noise_var),
            "moments": moments_out(self.moments), "offsets": floats_out(self.offsets),
            "scales": floats_out(self.scales), "radius": float_out(self.radius),
            "y_centre": float_out(self.y_centre), "y_half": float_out(self.y_half)})

    def fit_count(self) -> float:
        """The number of rows a fit weighs: the least-squares step's noisy count
        (its information's intercept entry), or, where the noise swamped it (not
        above the number of parameters + 1), the released count of all rows of
        the level counts when there is one, at most the public n.
        Post-processing of released statistics and public n; the report's
        "Noisy rows"."""
        count = float(self.moments[0])
        if count > self.space.constant.size + 1 or not self.level_counts.size:
            return count
        return min(max(count, float(self.level_counts[0])), float(self.report.n))

    def index(self, tau: float) -> int:
        """Position of quantile ``tau`` in `quantiles` (an error naming
        the released ones when it was not released)."""
        for i, t in enumerate(self.quantiles):
            if math.isclose(float(tau), t, rel_tol=0.0, abs_tol=1e-12):
                return i
        shown = ", ".join(f"{t:g}" for t in self.quantiles)
        raise DPModelsError(
            f"q={tau!r} was not released: this release answers q in [{shown}] only. Pass "
            f"every quantile you need to dp_quantreg(..., q=[...]) (epsilon is split between "
            "them), or use method='histogram', which answers any q")

    def design_params(self, beta: np.ndarray) -> np.ndarray:
        """Coefficients on the design's columns, in the response's units, from
        scaled ones (batched)."""
        out = self.y_half * scaled_params(self.space, self.offsets, self.scales, beta)
        out[..., self.space.constant] += self.y_centre
        return out

    def __repr__(self) -> str:
        shown = ", ".join(f"{t:g}" for t in self.quantiles)
        return (f"PrivateQuantileSteps({self.space.formula!r}, q=[{shown}], "
                f"epsilon={self.report.epsilon:g}, q_columns={self.space.q})")


def _quantiles(q) -> tuple[float, ...]:
    values = [q] if np.ndim(q) == 0 else list(q)
    if not values:
        raise DPModelsError("q is empty: give one quantile or a list of them")
    out: list[float] = []
    for v in values:
        try:
            t = float(v)
        except (TypeError, ValueError):
            raise DPModelsError(f"q must be numbers strictly between 0 and 1, got {v!r}") from None
        if not 0.0 < t < 1.0:
            raise DPModelsError(f"q must be strictly between 0 and 1, got {v!r}")
        if any(math.isclose(t, u, abs_tol=1e-12) for u in out):
            raise DPModelsError(f"q={v!r} is given twice")
        out.append(t)
    return tuple(out)


def _residual_counts(rows: _RowPasses, offsets, scales, radius, b, edges,
                     space: DesignSpace | None = None):
    """The residual histogram at ``b``; with ``space``, also `_level_counts()`
    in the same pass over the rows: ``(residual counts[, level counts])``."""
    counts = np.zeros(edges.size + 1, np.int64)
    levels = None if space is None else np.zeros(1 + int(space.dummy.sum()), np.int64)
    for U, y in rows.pairs():
        V = clipped_rows(U, offsets, scales, radius)
        r = y - (b[0] + V @ b[1:])
        counts += np.bincount(np.searchsorted(edges, r, side="right"),
                              minlength=edges.size + 1)
        if levels is not None:
            assert space is not None  # levels are counted with a space only
            levels += _level_chunk(U, space)
    return (counts,) if levels is None else (counts, levels)


def _level_chunk(U: np.ndarray, space: DesignSpace) -> np.ndarray:
    return np.concatenate([[U.shape[0]], np.rint(U[:, space.dummy]).astype(np.int64).sum(0)])


def _level_counts(rows: _RowPasses, space: DesignSpace):
    """The number of complete rows, then of rows with a 1 in each 0/1 column."""
    counts = np.zeros(1 + int(space.dummy.sum()), np.int64)
    for U, _ in rows.pairs():
        counts += _level_chunk(U, space)
    return (counts,)


def level_sensitivity(space: DesignSpace) -> int:
    """The replace-one L1 sensitivity of `_level_counts()`.  A complete
    row adds 1 to the total, 1 to at most one dummy of each of the g
    exclusive groups and 1 to each of the u other dummies; a row with a
    missing value adds nothing.  Two complete rows differ by at most 2g + u
    (the total cancels; a group moves its 1 from one dummy to another), a
    complete and a missing one by at most 1 + g + u."""
    g = len(space.exclusive)
    u = int(space.dummy.sum()) - sum(len(grp) for grp in space.exclusive)
    return max(2 * g + u, 1 + g + u)


def _noise_sd_rows(radius, space, offsets, scales, eps_t: float) -> float:
    """SD of the noise on a quantile step's band count, in rows."""
    g, delta = score_sensitivity(radius, space, offsets, scales)
    return math.sqrt(discrete_laplace_variance(unit_epsilon(eps_t, delta / 2.0))) / (LEVELS * g)


def _response_values(space, frame: pd.DataFrame) -> np.ndarray:
    """The response column of ``space``'s design on ``frame`` (a module-level
    function: the row passes that call it are shipped to Dask workers by
    reference, without patsy's unpicklable objects)."""
    with np.errstate(all="ignore"):
        (ym,) = patsy.build_design_matrices([space.infos[0]], frame, NA_action=_NO_NA)
    return np.asarray(ym, float)[:, 0]


def quantile_split(epsilon: float, quantiles: int, levels: bool, clips: bool
                   ) -> tuple[float, float, float, float, float, float, list[float]]:
    """The parts of a private quantile-steps release: ``(scales, radius,
    least-squares step, residuals, level counts, outside counts, [each Newton
    step of one quantile])``, in exact arithmetic at most ``epsilon`` in all
    (every quantile's steps are a part of its own; a step's part is the
    smallest over the quantiles).  ``levels``: the design has 0/1 columns;
    ``clips``: a variable can clip.  Public inputs only; the loader rebuilds a
    saved release's split with it (`dpmodels.front.saved`)."""
    eps_s, eps_r = epsilon * SCALE_SHARE, epsilon * RADIUS_SHARE
    eps_ls, eps_res = epsilon * LS_SHARE, epsilon * RESIDUAL_SHARE
    eps_lv = epsilon * LEVEL_SHARE if levels else 0.0
    eps_c = epsilon * CLIP_SHARE if clips else 0.0
    eps_q = (epsilon - eps_s - eps_r - eps_ls - eps_res - eps_lv - eps_c) / quantiles
    steps = [eps_q * share for share in QUANTILE_STEP_SHARES]
    fitted = exact_parts(epsilon, [eps_s, eps_r, eps_ls, eps_res, eps_lv, eps_c]
                         + steps * quantiles)
    eps_s, eps_r, eps_ls, eps_res, eps_lv, eps_c = fitted[:6]
    steps = [min(fitted[6 + t * len(steps) + i] for t in range(quantiles))
             for i in range(len(steps))]
    return eps_s, eps_r, eps_ls, eps_res, eps_lv, eps_c, steps


def release_quantile_steps(
    data,
    *,
    formula: str,
    q=0.5,
    epsilon: float,
    bounds=None,
    levels=None,
    n: int | None = None,
    random_state=None,
    accountant: Accountant | None = None,
    missing: str = "drop",
    namespace: Mapping[str, object] | None = None,
    domain_check=None,
    chunk_rows: int = 1 << 16,
) -> PrivateQuantileSteps:
    """Release an epsilon-DP quantile regression at one or more quantiles by
    noisy Newton steps of the check loss (see the module notes).

    Parameters
    ----------
    data : pandas.DataFrame, mapping, Dask or Polars DataFrame
    formula : str
        A patsy formula with an intercept and one numeric response.
    q : float or sequence of float
        The quantile(s), strictly between 0 and 1; with several, the
        quantile steps' part of epsilon is split equally between them.
    epsilon, bounds, levels, n, random_state, accountant, missing
        As `dpmodels.mechanisms.moments.release_moments()`.
    namespace : mapping, optional
        Names the formula may use besides columns.
    domain_check : callable, optional
        Called with the public domain before anything is read.
    chunk_rows : int
        Rows per chunk of each pass (memory only).

    Returns
    -------
    PrivateQuantileSteps

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> rng = np.random.default_rng(0)
    >>> x = rng.uniform(0, 1, 20_000)
    >>> df = pd.DataFrame({"x": x, "y": 1 + 2 * x + rng.laplace(0, 0.5, 20_000)})
    >>> rel = release_quantile_steps(df, formula="y ~ x", q=0.5, epsilon=1.0,
    ...                              bounds={"x": (0, 1), "y": (-5, 8)}, random_state=0)
    >>> [round(float(b), 1) for b in rel.design_params(rel.beta[0])]
    [1.0, 2.0]
    """
    if namespace is None:
        namespace = caller_namespace(1)
    taus = _quantiles(q)
    pub = public_inputs(data, formula=formula, epsilon=epsilon, bounds=bounds, levels=levels,
                        n=n, random_state=random_state, accountant=accountant,
                        missing=missing, namespace=namespace, domain_check=domain_check)
    data, epsilon, domain, fv = pub.data, pub.epsilon, pub.domain, pub.fv
    names, n_public, n_source = fv.names, pub.n, pub.n_source
    private = math.isfinite(epsilon)
    if not private:
        warn_not_private("the quantile steps")
    full = design_space(formula, domain, namespace, response=True,
                        centre_squares=_moments_module.CENTRE_SQUARES)
    response_axis = [domain.axis(r) for r in fv.response]
    if any(a.kind == "discrete" for a in response_axis):
        raise DomainError(f"dp_quantreg needs a continuous response; {fv.response[0]!r} is "
                          "declared discrete")
    space = design_space(formula, domain, namespace, response=False,
                         centre_squares=_moments_module.CENTRE_SQUARES)
    if not (space.constant.sum() == 1 and np.all(space.constant_values[space.constant] == 1)):
        raise DPModelsError(
            "method='newton' needs a formula with an intercept (the scaled rows are centred); "
            "use method='histogram' for a model without one")
    y_centre, y_half = float(full.centre[-1]), float(full.half[-1])
    clip_axes = clipping_axes(domain)  # variables that can clip: their outside counts
    if private:
        eps_s, eps_r, eps_ls, eps_res, eps_lv, eps_c, eps_steps = quantile_split(
            epsilon, len(taus), bool(space.dummy.any()), bool(clip_axes))
        check_split(epsilon, [eps_s, eps_r, eps_ls, eps_res] + [eps_lv] * bool(eps_lv)
                    + eps_steps + [eps_c] * bool(clip_axes), f"over {len(taus)} quantile(s)")
    else:  # the same pipeline without its noise (NOT private): every stage exact
        eps_s = eps_r = eps_ls = eps_res = NOISELESS
        eps_lv = NOISELESS if space.dummy.any() else 0.0
        eps_c, eps_steps = math.inf, [NOISELESS] * len(QUANTILE_STEP_SHARES)
    # ---- the rows: every check happens in the first pass ------------------------------
    # (the response's design is read from the DesignSpace, which pickles to Dask
    # workers; patsy's own DesignInfo does not)
    def make_rows(frame: pd.DataFrame) -> _RowPasses:
        published, valid = published_frame(frame, domain, missing)
        y = np.zeros(len(published))
        if valid.any():
            y[valid] = np.clip((_response_values(full, published[valid]) - y_centre) / y_half,
                               -1.0, 1.0)
        return _RowPasses(space, published, valid, chunk_rows, y=y)


    def read():
        passes = Passes(data, space, domain, missing, chunk_rows, rows=make_rows, outside=clip_axes)
        return passes, passes.run(lambda rows: (location_counts(rows, space)[1], rows.outside))

    def measure(first, bits, budget: str):
        passes, (loc_counts, outside_exact) = first
        k = space.q + 1
        offsets, scales, radius, clipped, split = scaled_ball(
            passes, space, loc_counts, eps_s, eps_r, n_public, epsilon, bits, extra_dimensions=1)

        H_ls, score, ls_noise, delta, g = noisy_step(passes, space, offsets, scales, radius,
                                                  np.zeros(k), eps_ls, bits,
                                                  least_squares_family, 1.0)
        moments = design_moments(H_ls)
        ls_beta = newton_update(np.zeros(k), H_ls, score,
                                2.0 * math.sqrt(k) * math.sqrt(ls_noise[0]))
        split.append((f"least-squares step (L1 sensitivity {delta:.4g} in units of "
                      f"1/({LEVELS} {g}**2))", eps_ls))

        edges = residual_edges()
        exact_counts = passes.run(lambda rows: _residual_counts(
            rows, offsets, scales, radius, ls_beta, edges, space if eps_lv else None))
        res_counts = exact_counts[0]
        noisy_res = res_counts + discrete_laplace(bits, eps_res, res_counts.size)
        split.append(("residual histogram at the least-squares fit (L1 sensitivity 2)", eps_res))

        level_counts, level_var = np.zeros(0), 0.0
        if eps_lv:
            exact = exact_counts[1]
            delta = level_sensitivity(space)
            eps_unit = unit_epsilon(eps_lv, delta / 2.0)
            level_counts = (exact + discrete_laplace(bits, eps_unit, exact.size)).astype(float)
            level_var = discrete_laplace_variance(eps_unit)
            split.append((f"row counts of the 0/1 columns and of all rows (L1 sensitivity "
                          f"{delta})", eps_lv))

        share_rows = NOISE_ROWS * _noise_sd_rows(radius, space, offsets, scales, eps_steps[-1])
        count = moments[0]
        gram = gram_of(H_ls, ls_noise[0])
        betas, dens, scores, starts, widths, steps, priors = [], [], [], [], [], [], []
        var_bin = discrete_laplace_variance(eps_res)
        for tau in taus:
            shift, h, band, var_band = start_and_bandwidth(
                noisy_res, edges, tau, band_share(count, tau, share_rows), var_bin)
            b = ls_beta.copy()
            b[0] += shift
            noise = []
            band_state = BandCount.of(band, var_band)
            for t, eps_t in enumerate(eps_steps):
                rows_in, score, var, delta, g = score_step(passes, space, offsets, scales, radius,
                                                           b, tau, h, eps_t, bits)
                band_state = band_state.add(rows_in, var[0])
                noise.append(var)
                start = b
                b = quantile_update(b, gram, band_state.rows, h, score)
                split.append((f"q={tau:g} step {t + 1} (band {h * y_half:.4g}; L1 sensitivity "
                              f"{delta:.4g} in units of 1/({LEVELS} {g}))", eps_t))
            betas.append(b)
            dens.append(band_state.rows / (2.0 * h * count))
            priors.append(var_band)
            scores.append(score)
            starts.append(start)
            widths.append(h)
            steps.append(tuple(noise))
        shown = ", ".join(f"{t:g}" for t in taus)
        if clip_axes and private:
            split.append((clip_split_label(len(clip_axes)), eps_c))
        outside = released_outside(outside_exact, clip_axes, n_public, eps_c, bits)
        mechanism = (f"quantile regression (q = {shown}) by a least-squares step and noisy "
                     "Newton steps of the check loss (rows centred and scaled privately, "
                     "clipped to an L1 ball of private radius, quantized; exact discrete "
                     "Laplace on the least-squares step's moments, the residual histogram and "
                     "each quantile step's band count and score)")
        if not private:
            mechanism = (f"none: the quantile steps' pipeline without its noise (q = {shown}: a "
                         f"least-squares step and {len(QUANTILE_STEP_SHARES)} Newton steps of the "
                         "check loss with a kernel band, on exact statistics of rows centred and "
                         "scaled on binned locations, clipped to an L1 ball, quantized)")
        report = MomentsReport(
            epsilon=epsilon, private=private, mechanism=mechanism,
            split=tuple(split) if private else (), n=n_public, n_source=n_source,
            variables=tuple((a.name, describe_axis(a)) for a in domain.axes),
            columns=space.exog_names + (full.endog_name,), radius=radius, clipped_rows=clipped,
            noisy_rows=moments[0], seeded=bits.seeded, budget=budget, outside_bounds=outside)
        rel = PrivateQuantileSteps(
            space, taus, np.array(betas), np.array(dens), H_ls, np.array(priors), np.array(scores),
            np.array(starts),
            np.array(widths), tuple(steps), ls_beta, ls_noise, noisy_res, edges, level_counts,
            level_var, moments, offsets, scales, radius, y_centre, y_half, report)
        # the report's "Noisy rows" is the count the fit weighs, never a swamped entry's floor
        return replace(rel, report=replace(report, noisy_rows=rel.fit_count()))

    return run_release(epsilon=epsilon, label=f"quantile steps of {list(names)}",
                       accountant=accountant, random_state=random_state, read=read,
                       measure=measure)
