"""The noisy-Newton release: a private logistic regression by a few Newton
steps, each from noisy sufficient statistics of the current step.

A binary response has no finite sufficient statistics, but one Newton step
of the log-likelihood from a point b needs only two sums over the rows:
the information ``H(b) = sum p(1-p) x x'`` and the score ``g(b) = sum (y -
p) x``, with ``p = 1/(1 + exp(-x'b))``.  Both are bounded per row once the
rows are, so each step can be released with exact discrete Laplace noise,
and the next step starts from the released update (Huang et al. 2018's
approximate sufficient statistics are the first step from 0; the following
steps remove the Taylor approximation's bias).

Mechanism (epsilon-DP, delta = 0, replace-one neighbours, public n)
------------------------------------------------------------------
1. **Public design space** of the right-hand side
   (`dpmodels.mechanisms.moments.design_space()` with ``response=False``): design
   columns, their public ranges; rows clamped to them, scaled to ``u``.  The
   response is coded 1 for its last declared level (as ``dp_logit``).
2. **Centres and scales (10% of epsilon)** and **radius (5%)**, exactly as
   the moments release (`dpmodels.mechanisms.moments`): ``v = (u - c) / s`` shrunk
   into the L1 ball of radius R; the intercept coordinate is 1, so
   ``x~ = (1, v)`` has ``||x~||_1 <= 1 + R``.
3. **Newton steps (the rest, split 10% / 10% / 20% / 60% over four steps).**
   From ``b_0 = 0``, step t quantizes ``k = round(x~ g)``, the weight
   ``a = round(4 p(1-p) G)`` in ``[0, G]`` and the residual ``e = round((y - p)
   G)`` in ``[-G, G]`` (``G = 2**8``), and releases the integer vector
   ``(sum a k_i k_j  (i <= j), w_g sum e k)``.  Per row its L1 norm is at most
   ``G F + w_g G A`` with A the bound on ``||k||_1`` and F the bound on
   ``sum_{i<=j} |k_i k_j|`` of `dpmodels.mechanisms.moments.moments_sensitivity()`;
   replace-one: ``Delta = 2 (G F + w_g G A)`` (a row with a missing value
   contributes nothing).  Noise: exact discrete Laplace of scale
   ``Delta / epsilon_t``.  The update ``b_t = b_{t-1} + H^-1 g`` (H's
   eigenvalues floored at the noise's operator norm, the step's L1 length
   capped at 10 in scaled units) is post-processing.

Only the last step's statistics are published with the release (with its
noise law, for the bootstrap); the earlier steps' are consumed by the
iteration.  The parts of epsilon add up to epsilon (PRIVACY.md rule 8).
"""

from __future__ import annotations

import math
import sys
import warnings
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import ClassVar

import numpy as np
import pandas as pd

from ...core.accountant import Accountant
from ...core.budget import exact_parts
from ...core.errors import DomainError, DPModelsError, NotPrivateWarning
from ...core.exact import MIN_EPSILON, discrete_laplace, discrete_laplace_variance
from ...core.keywords import checked_keywords
from ...core.report import MomentsReport
from ...data.clipping import CLIP_SHARE, clipping_axes
from ...data.clipping import split_label as clip_split_label
from ...data.counting import undeclared_error
from ...domain.formula import caller_namespace, user_stacklevel
from ...output.documents import SavedParts, float_out, floats_out
from .. import moments as _moments_module  # its CENTRE_SQUARES, read at release time
from ..moments import (
    RADIUS_SHARE,
    SCALE_SHARE,
    DesignSpace,
    Passes,
    ScaledRows,
    _RowPasses,
    clipped_rows,
    describe_axis,
    design_space,
    largest_squares,
    location_counts,
    moments_out,
    public_inputs,
    published_frame,
    row_units,
    scaled_ball,
    space_out,
    unit_epsilon,
)
from ..pipeline import released_outside, run_release

__all__ = ["PrivateNewton", "release_newton", "STEP_SHARES", "MIN_STEP_EPSILON", "check_split",
           "NOISELESS", "warn_not_private"]

#: How the Newton steps share their part of epsilon: the first steps only need
#: to come close (from b = 0, three steps are not enough at 8 covariates); the
#: last decides the estimate's noise (benchmarks/peers.py --logit).
STEP_SHARES = (0.1, 0.1, 0.2, 0.6)
#: The logit clips less than least squares (a clipped row keeps its response, so
#: clipping attenuates the slopes): this times the moments' clip fraction.
CLIP_SCALE = 1.0
#: Levels of the quantized weights p(1-p) and residuals y - p.
LEVELS = 2**8
#: Quantization: the radius sits at about this many units (products of k stay
#: below 2**28, times LEVELS 2**36: float64 sums of 2**16 rows are exact).
NEWTON_UNITS = 2**14
#: Largest L1 length of one Newton step, in scaled units (a guard against a
#: noise-swamped first step; the public bound of a sensible logit slope).
MAX_STEP = 10.0


#: The noise parameter each stage of a Newton-type release takes at ``epsilon = inf``
#: (not private): the exact sampler's scale ``2 / NOISELESS`` draws 0, so every stage
#: runs as it does under privacy, on exact statistics.
NOISELESS = sys.float_info.max


def warn_not_private(what: str) -> None:
    """The `NotPrivateWarning` of a Newton-type release at ``epsilon = inf``."""
    warnings.warn(
        f"epsilon=inf: {what} run without noise on EXACT statistics, NOT differentially "
        "private; use them only to check the pipeline you will run at a finite epsilon (not "
        "statsmodels' fit: the rows are clipped and quantized and the steps are few)",
        NotPrivateWarning, stacklevel=user_stacklevel())


@dataclass(frozen=True, eq=False)
class PrivateNewton(ScaledRows):
    """A private logistic regression released as noisy Newton steps.

    Attributes
    ----------
    space : DesignSpace
        The right-hand side's public design (no response coordinate).
    beta : ndarray, (q + 1,)
        The estimate in scaled coordinates ``(1, v)``.
    information, score : ndarray
        The last step's noisy information ``H`` ((q+1, q+1)) and score, at
        ``start`` (the previous step's estimate).
    start : ndarray
    noise_var : tuple of float
        Variance of the noise on each entry of ``H`` and of the score.
    moments : tuple
        ``(count, mean, cov)`` of v read from the first step's information
        (taken at b = 0, where every weight is 1/4).
    offsets, scales : ndarray
    radius : float
    report : MomentsReport
    step_noise : tuple of (float, float)
        The noise variances (information entry, score entry) of every step.
    """

    #: The release's kind in a saved file (`dpmodels.front.saved`).
    saved_kind: ClassVar[str] = "newton"

    space: DesignSpace
    beta: np.ndarray
    information: np.ndarray
    score: np.ndarray
    start: np.ndarray
    noise_var: tuple
    moments: tuple
    offsets: np.ndarray
    scales: np.ndarray
    radius: float
    report: MomentsReport
    step_noise: tuple = ()

    def saved_parts(self) -> SavedParts:
        """What `save()` writes: the file's release type, the public domain,
        the report and the released values (read back by this folder's
        ``codec.read``)."""
        return SavedParts(self.saved_kind, self.space.domain, self.report, {
            "design": space_out(self.space, False), "beta": floats_out(self.beta),
            "information": floats_out(self.information), "score": floats_out(self.score),
            "start": floats_out(self.start), "noise_var": floats_out(self.noise_var),
            "moments": moments_out(self.moments), "offsets": floats_out(self.offsets),
            "scales": floats_out(self.scales), "radius": float_out(self.radius),
            "step_noise": [floats_out(s) for s in self.step_noise]})

    def design_params(self, beta: np.ndarray) -> np.ndarray:
        """Coefficients on the design's columns from scaled ones (batched)."""
        return scaled_params(self.space, self.offsets, self.scales, beta)

    def fit_count(self) -> float:
        """The number of rows a fit weighs: the first step's noisy information at
        b = 0 read as a count (four times its intercept entry), or, where the
        noise swamped that one (not above the number of parameters + 1), the
        count of the pooled design moments (`world_moments()`: the later steps
        carry most of epsilon), at most the public n.  Post-processing of
        released statistics and public n; the report's "Noisy rows"."""
        count = float(self.moments[0])
        if count > self.space.constant.size + 1:
            return count
        pooled = float(self.world_moments()[0][0])
        return min(max(count, pooled), float(self.report.n))

    def world_moments(self) -> tuple[tuple, float]:
        """The design the bootstrap's worlds read: ``((count, mean, cov), sd)``,
        the moments of v and the noise SD of an entry of the ``sum (1, v)(1, v)'``
        they come from.  The first step's (four times its information, at
        b = 0) pooled entry by entry, inverse-variance weighted, with the last
        step's information over its mean weight (``information[0, 0]`` over
        the count, at most 1/4), which carries less noise when the later steps
        have more of epsilon (fair's logit at epsilon 1: entry noise SD 3,197
        against 524).  Post-processing of released statistics."""
        count, mean, cov = self.moments
        v_first = 16.0 * (self.step_noise[0][0] if self.step_noise else self.noise_var[0])
        w = min(float(self.information[0, 0]) / max(count, 1.0), 0.25)  # p(1-p) <= 1/4
        if len(self.step_noise) < 2 or not w > 0.0:
            return self.moments, math.sqrt(v_first)
        k = mean.size + 1
        first = np.empty((k, k))
        first[0, 0], first[0, 1:], first[1:, 0] = count, count * mean, count * mean
        first[1:, 1:] = count * (cov + np.outer(mean, mean))
        v_last = self.noise_var[0] / w**2
        total = v_first + v_last
        if not total > 0.0:  # noiseless steps (epsilon ~ inf): either reading
            return design_moments((first + self.information / w) / 2.0), 0.0
        pooled = (v_last * first + v_first * self.information / w) / total
        return design_moments(pooled), math.sqrt(v_first * v_last / total)

    def __repr__(self) -> str:
        return (f"PrivateNewton({self.space.formula!r}, epsilon={self.report.epsilon:g}, "
                f"q={self.space.q}, radius={self.radius:.3g})")


#: The smallest part of epsilon a Newton-type release spends on one stage.  A
#: step's L1 sensitivity is at most about 4 * LEVELS * NEWTON_UNITS**2 (~2**38,
#: whatever the radius: the quantum g scales with it), so the noise scale stays
#: below ~2**55 and the exact geometric sampler's 2**62 limit is never near.
MIN_STEP_EPSILON = 1e-5


def check_split(epsilon: float, parts, what: str = "") -> None:
    """Refuse, before any budget is spent, an epsilon whose smallest part is
    below MIN_STEP_EPSILON."""
    if min(parts) < max(MIN_STEP_EPSILON, MIN_EPSILON):
        raise DPModelsError(
            f"epsilon={epsilon!r} is too small to split{' ' + what if what else ''}: its "
            f"smallest part would be {min(parts):.3g}, below {MIN_STEP_EPSILON:g}; use a "
            "larger epsilon (or fewer quantiles)")


def scaled_params(space: DesignSpace, offsets, scales, beta: np.ndarray) -> np.ndarray:
    """Coefficients on the design's columns from coefficients on the scaled
    rows ``(1, v)``, ``v = (u - offsets) / scales`` (batched over leading axes)."""
    beta = np.asarray(beta, float)
    centre = space.centre + space.half * offsets
    half = space.half * scales
    out = np.empty(beta.shape[:-1] + (space.constant.size,))
    slopes = beta[..., 1:] / half
    out[..., ~space.constant] = slopes
    out[..., space.constant] = (beta[..., 0] - slopes @ centre)[..., None]
    if space.transform is not None:  # coefficients on z = A x: A' beta on x
        out = out @ space.transform
    return out


def _quantum(radius: float) -> int:
    return int(2 ** max(0, math.floor(math.log2(NEWTON_UNITS / (1.0 + radius)))))


def logit_family(eta: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The logit's step weights and residuals: ``(4 p (1 - p), y - p)`` (in
    [0, 1] and [-1, 1]; `LOGIT_WEIGHT` undoes the 4)."""
    p = 1.0 / (1.0 + np.exp(-eta))
    return 4.0 * p * (1.0 - p), y - p


#: The information's unit for `logit_family()`'s weights (H = sum p(1-p) x x').
LOGIT_WEIGHT = 0.25


def _step_statistics(rows: _RowPasses, space: DesignSpace, offsets, scales, radius, b,
                     family=logit_family):
    """Exact integer statistics of one Newton step at ``b`` and their scale
    (quantum g, sum weight w_g, sensitivity Delta).

    ``family(eta, y)`` gives each row's weight in [0, 1] and residual in
    [-1, 1] at the linear predictor ``eta = (1, v)'b``; whatever it is, a
    row's quantized contribution obeys the bound of `step_scale()`."""
    q = space.q
    g, w_g, delta = step_scale(radius, space, offsets, scales)
    _, A = _newton_bound(radius, space, offsets, scales, g)
    iu = np.triu_indices(q + 1)
    chunk = max(1, (2**53 - 1) // int(LEVELS * (A * A + 1)))
    h, s = [0] * iu[0].size, [0] * (q + 1)
    for U, y in rows.pairs(chunk):
        V = clipped_rows(U, offsets, scales, radius)
        Xt = np.column_stack([np.ones(V.shape[0]), V])
        weight, resid = family(Xt @ b, y)
        a = np.rint(np.clip(weight, 0.0, 1.0) * LEVELS)
        e = np.rint(np.clip(resid, -1.0, 1.0) * LEVELS)
        K = np.rint(Xt * g)
        hh = (K.T @ (a[:, None] * K))[iu]
        ss = K.T @ e
        h = [x + int(v) for x, v in zip(h, hh)]
        s = [x + int(v) for x, v in zip(s, ss)]
    return (np.array(h, dtype=object), np.array([w_g * x for x in s], dtype=object),
            g, w_g, delta)


def step_scale(radius: float, space: DesignSpace, offsets, scales) -> tuple[int, int, int]:
    """``(g, w_g, Delta)`` of a step: the quantum, the score's weight and the
    replace-one L1 sensitivity ``2 (G F + w_g G A)`` (see the module notes)."""
    g = _quantum(radius)
    F, A = _newton_bound(radius, space, offsets, scales, g)
    w_g = max(1, round(A))
    return g, w_g, math.ceil(2.0 * (LEVELS * F + w_g * LEVELS * A) * (1 + 1e-12)) + 1


def _newton_bound(radius: float, space: DesignSpace, offsets, scales, g: int):
    """(F, A) for the rows ``k = round((1, v) g)``: A bounds ``||k||_1`` and F
    bounds ``sum_{i<=j} |k_i k_j|`` (see `dpmodels.mechanisms.moments.moments_sensitivity()`,
    whose argument is repeated here with the intercept's unit g added)."""
    units = row_units(space, g * (1.0 + np.abs(offsets)) / scales + 0.5)
    A = g + min(radius * g + space.q / 2.0, float(np.sum(units)))
    Q = largest_squares(units + [float(g)], A)
    return (A * A + Q) / 2.0, math.ceil(A * (1 + 1e-12))


def _decode(h, s, g, w_g, q, weight: float = LOGIT_WEIGHT):
    """The information and score from a step's integers (``weight``: the
    information's value of a quantized weight of 1)."""
    iu = np.triu_indices(q + 1)
    H = np.zeros((q + 1, q + 1))
    H[iu] = np.array(h, float) * weight / (LEVELS * g * g)
    H = H + np.triu(H, 1).T
    score = np.array(s, float) / (w_g * LEVELS * g)
    return H, score


def _floored(H: np.ndarray, floor: float) -> np.ndarray:
    H = (H + np.swapaxes(H, -1, -2)) / 2.0
    lam, V = np.linalg.eigh(H)
    return (V * np.maximum(lam, floor)[..., None, :]) @ np.swapaxes(V, -1, -2)


def newton_update(b, H, score, floor):
    """``b + H^-1 score`` with H floored and the step's L1 length capped (batched)."""
    step = np.linalg.solve(_floored(H, floor), score[..., None])[..., 0]
    length = np.abs(step).sum(axis=-1, keepdims=True)
    return b + step * np.minimum(1.0, MAX_STEP / np.maximum(length, 1e-300))


def noisy_step(passes: Passes, space: DesignSpace, offsets, scales, radius, b, eps_t: float,
               bits, family=logit_family, weight: float = LOGIT_WEIGHT):
    """One released step: the step statistics at ``b`` over every row, exact
    discrete Laplace noise of scale ``Delta / eps_t`` on each integer, decoded.

    Returns ``(H, score, (var_H, var_score), Delta, g)``: the noisy
    information and score and the variance of the noise on an entry of each."""
    h, s = passes.run(lambda rows: _step_statistics(
        rows, space, offsets, scales, radius, b, family)[:2])
    g, w_g, delta = step_scale(radius, space, offsets, scales)
    eps_unit = unit_epsilon(eps_t, delta / 2.0)
    z = discrete_laplace(bits, eps_unit, len(h) + len(s))
    h = [int(x) + int(e) for x, e in zip(h, z[:len(h)])]
    s = [int(x) + int(e) for x, e in zip(s, z[len(h):])]
    H, score = _decode(h, s, g, w_g, space.q, weight)
    var = discrete_laplace_variance(eps_unit)
    noise_var = (var * (weight / (LEVELS * g * g)) ** 2, var / (w_g * LEVELS * g) ** 2)
    return H, score, noise_var, delta, g


def design_moments(H: np.ndarray) -> tuple[float, np.ndarray, np.ndarray]:
    """``(count, mean, cov)`` of v from a released ``sum (1, v)(1, v)'``."""
    count = max(H[0, 0], 1.0)
    mean = H[0, 1:] / count
    return count, mean, H[1:, 1:] / count - np.outer(mean, mean)


def check_binary_levels(axis) -> None:
    """Refuse a binary response whose declared levels are numbers other than
    0/1 (which one is the event?): a `DomainError`
    naming the variable, raised from the declaration alone (before any row
    is read).  Non-numeric levels code their last declared level 1."""
    levels = axis.levels
    numeric = all(isinstance(v, (int, float, np.integer, np.floating))
                  and not isinstance(v, (bool, np.bool_)) for v in levels)
    if numeric and set(levels) != {0, 1}:
        raise DomainError(
            f"the numeric response {axis.name!r} has declared levels {list(levels)}; "
            "dp_logit needs 0/1 (1 = the event): recode it, or make it a string or "
            "Categorical variable (its last declared level is then coded 1)")


def binary_response(axis, values) -> tuple[np.ndarray, np.ndarray]:
    check_binary_levels(axis)
    codes, missing, undeclared = axis.codes(values)
    if undeclared.any():
        raise undeclared_error(axis.name, pd.unique(np.asarray(values)[undeclared])[:5])
    levels = axis.levels
    numeric = all(isinstance(v, (int, float, np.integer, np.floating))
                  and not isinstance(v, (bool, np.bool_)) for v in levels)
    one = levels.index(1) if numeric else len(levels) - 1
    return (codes == one).astype(float), missing


@checked_keywords
def release_newton(
    data,
    *,
    formula: str,
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
) -> PrivateNewton:
    """Release an epsilon-DP logistic regression by noisy Newton steps (see
    the module notes).

    The formula's left-hand side is one variable with two declared levels
    (or 0/1, or bool); 1 is its last declared level.

    Parameters
    ----------
    data : pandas.DataFrame, mapping of str to array-like, or an engine's frame
        Raw rows, read once per step, never modified.
    formula : str
        A patsy formula with a binary response.
    epsilon : float
        Privacy parameter (> 0), split between the steps; ``inf`` releases
        the exact steps (NOT private).
    bounds : dict of str to (low, high), optional
        Public bounds of each continuous variable.
    levels : dict of str to list, optional
        Public level sets of the discrete variables (the response's two).
    n : int, optional
        The public number of rows (default: rows handed in).
    random_state : None, int or Generator
        None draws from the OS's secure entropy.
    accountant : Accountant, optional
        Charged with ``epsilon`` before any row is read.
    missing : {"drop", "raise"}
        What to do with rows with a missing value.
    namespace : mapping, optional
        Names the formula may use besides columns.
    domain_check : callable, optional
        Called with the public domain before anything is read.
    chunk_rows : int
        Rows per chunk of each pass (memory only).

    Returns
    -------
    PrivateNewton

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> rng = np.random.default_rng(0)
    >>> x = rng.normal(size=20_000).clip(-4, 4)
    >>> df = pd.DataFrame({"x": x, "y": (rng.random(20_000) < 1 / (1 + np.exp(-x))).astype(int)})
    >>> rel = release_newton(df, formula="y ~ x", epsilon=1.0, bounds={"x": (-4, 4)},
    ...                      levels={"y": [0, 1]}, random_state=0)
    >>> [round(float(b), 1) + 0.0 for b in rel.design_params(rel.beta)]
    [0.0, 1.0]
    """
    if namespace is None:
        namespace = caller_namespace(1)
    pub = public_inputs(data, formula=formula, epsilon=epsilon, bounds=bounds, levels=levels,
                        n=n, random_state=random_state, accountant=accountant,
                        missing=missing, namespace=namespace, domain_check=domain_check)
    data, epsilon, domain, fv = pub.data, pub.epsilon, pub.domain, pub.fv
    names, n_public, n_source = fv.names, pub.n, pub.n_source
    response = fv.response[0] if len(fv.response) == 1 else None
    if response is None or domain.axis(response).kind != "discrete":
        raise DomainError("method='newton' needs a binary response with declared levels")
    space = design_space(formula, domain, namespace, response=False,
                         centre_squares=_moments_module.CENTRE_SQUARES)
    if not (space.constant.sum() == 1 and np.all(space.constant_values[space.constant] == 1)):
        raise DPModelsError(
            "method='newton' needs a formula with an intercept (the scaled rows are centred); "
            "use method='histogram' for a model without one")
    private = math.isfinite(epsilon)
    clip_axes = clipping_axes(domain)  # variables that can clip: their outside counts
    if private:
        eps_c = epsilon * CLIP_SHARE if clip_axes else 0.0
        eps_s, eps_r = epsilon * SCALE_SHARE, epsilon * RADIUS_SHARE
        eps_steps = [(epsilon - eps_c - eps_s - eps_r) * share for share in STEP_SHARES]
        eps_c, eps_s, eps_r, *eps_steps = exact_parts(epsilon,
                                                      [eps_c, eps_s, eps_r, *eps_steps])
        check_split(epsilon, [eps_s, eps_r] + eps_steps + ([eps_c] if clip_axes else []))
    else:  # the same pipeline without its noise (NOT private): every stage exact
        eps_c, eps_s, eps_r, eps_steps = math.inf, NOISELESS, NOISELESS, [NOISELESS] * len(
            STEP_SHARES)
        warn_not_private("the Newton steps")
    # ---- the rows: every check happens in the first pass ------------------------------
    def make_rows(frame: pd.DataFrame) -> _RowPasses:
        published, valid = published_frame(frame, domain, missing)
        y, y_missing = binary_response(domain.axis(response), frame[response])
        return _RowPasses(space, published, valid & ~y_missing, chunk_rows, y=y)


    def read():
        passes = Passes(data, space, domain, missing, chunk_rows, rows=make_rows, outside=clip_axes)
        return passes, passes.run(lambda rows: (location_counts(rows, space)[1], rows.outside))

    def measure(first, bits, budget: str):
        passes, (loc_counts, outside_exact) = first
        q = space.q
        offsets, scales, radius, clipped, split = scaled_ball(
            passes, space, loc_counts, eps_s, eps_r, n_public, epsilon, bits, CLIP_SCALE,
            extra_dimensions=1)
        b = np.zeros(q + 1)
        moments, step_noise = None, []
        for t, eps_t in enumerate(eps_steps):
            H, score, noise_var, delta, g = noisy_step(passes, space, offsets, scales, radius, b,
                                                       eps_t, bits)
            floor = 2.0 * math.sqrt(q + 1) * math.sqrt(noise_var[0])
            if not private:  # no noise: a floor at rounding level keeps a flat direction solvable
                floor = 1e-12 * max(float(np.max(np.abs(np.diag(H)))), 1e-300)
            if t == 0:  # at b = 0 every weight is 1/4: H = (1/4) sum (1, v)(1, v)'
                moments = design_moments(4.0 * H)
            step_noise.append(noise_var)
            start = b
            b = newton_update(b, H, score, floor)
            split.append((f"Newton step {t + 1} (L1 sensitivity {delta:.4g} in units of "
                          f"1/({LEVELS} {g}**2))", eps_t))
        assert moments is not None  # recorded at the first step (STEP_SHARES is not empty)
        if clip_axes and private:
            split.append((clip_split_label(len(clip_axes)), eps_c))
        outside = released_outside(outside_exact, clip_axes, n_public, eps_c, bits)
        mechanism = ("logistic regression by noisy Newton steps (rows centred and scaled "
                     "privately, clipped to an L1 ball of private radius, quantized; exact "
                     "discrete Laplace on each step's information and score)")
        if not private:
            mechanism = (f"none: the Newton steps' pipeline without its noise ({len(STEP_SHARES)} "
                         "Newton steps from b = 0 on exact statistics of rows centred and scaled "
                         "on binned locations, clipped to an L1 ball, quantized)")
        report = MomentsReport(
            epsilon=epsilon, private=private, mechanism=mechanism,
            split=tuple(split) if private else (), n=n_public, n_source=n_source,
            variables=tuple((a.name, describe_axis(a)) for a in domain.axes),
            columns=space.exog_names + (response,), radius=radius, clipped_rows=clipped,
            noisy_rows=moments[0], seeded=bits.seeded, budget=budget, outside_bounds=outside)
        rel = PrivateNewton(space, b, H, score, start, noise_var, moments, offsets, scales,
                            radius, report, tuple(step_noise))
        # the report's "Noisy rows" is the count the fit weighs, never a swamped entry's floor
        return replace(rel, report=replace(report, noisy_rows=rel.fit_count()))

    return run_release(epsilon=epsilon, label=f"Newton steps of {list(names)}",
                       accountant=accountant, random_state=random_state, read=read,
                       measure=measure)
