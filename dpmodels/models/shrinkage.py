"""How much of a change in each true coefficient a private estimator keeps.

A release whose noise swamps some direction of the design (an eigenvalue
floor, a Newton step the noise keeps short) pulls the estimate towards its
start along that direction.  A parametric bootstrap built on the pulled
estimate cannot see how much was lost: its worlds are already pulled.  The
*keep* of coefficient c is the derivative of the estimator's expected value
in the true value of c, measured by finite differences between bootstrap
worlds that differ only in c, under common random numbers (each world replays
the same draws).  A keep of 1 is an unbiased estimator; a keep below
`SHRINK_MIN` means the release says (almost) nothing about c: any change
in c barely moves the estimate, and c is reported without information
(infinite interval, a warning naming it).  Between the two, what was lost,
``b (1 / keep - 1)``, is carried as a shift of unknown sign.

Post-processing only: the worlds are built from the release and public
inputs.  Used by the moments OLS, the noisy-Newton logit and the quantile
steps (their bootstraps replay the whole release, so ``replay`` below is
theirs).
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Callable, Iterable

import numpy as np

__all__ = ["NULL_KEEP", "SEED_BITS", "SHRINK_MIN", "SHRINK_REPS", "calibrate", "keep_shares",
           "paired", "signed_shift", "world_seed"]

#: A coefficient the estimator keeps less than this share of (the derivative of
#: its expected estimate in its true value) is one the release carries no
#: information about: the noise absorbs the rest.
SHRINK_MIN = 0.1
#: A singular value of the keeps' matrix K below this share of the largest is a
#: direction the estimator does not respond to at all (numerically 0: the finite
#: differences are exact 0 there, e.g. a world with no rows at a level, whose
#: released share was noise below 0); each coefficient loading on it by more
#: than NULL_LOADING is flagged.  Found on fair's logit at epsilon 1 (n = 6,366):
#: replicates with SD 5e-15 for a dummy whose world column was empty, a zero-width
#: interval, and finite intervals missing the truth in 6 of 30 releases.
NULL_KEEP = 1e-8
NULL_LOADING = 1e-6
#: Replicates of the finite differences (common random numbers).
SHRINK_REPS = 200
#: Newton steps of calibrate's m(theta) = b: none.  Moving the estimate by the
#: worlds' pull was measured to do harm where the worlds' pull is their own
#: model error: on benchmarks/validity.py's logit4 (40 releases) the raw Newton
#: estimate was within 1-2 replicate SDs of the truth while the moved one was
#: 4-12 SDs off, and the lowest coverage fell from 95-100% to 88-90% (n = 2,000,
#: epsilon 1; n = 20,000, epsilon 0.3); on fair's logit and Engel's curve the
#: moves bought nothing (fair x1: 91% and 96% either way; Engel x1: 100% without,
#: 90-93% with).  The worlds still flag what the release cannot locate and widen
#: the replicates by K^-1 (below).  A world model that reproduced the real
#: design's pull could raise this again.
CALIBRATION_STEPS = 0
#: The largest pull (in replicate SDs of the release's own replay) calibrate
#: undoes.  A 95% interval whose centre is off by a quarter of a pull of 2 SDs
#: (the worlds' model error, as measured on fair's logit: 30-100% of the pull)
#: still covers about 94% of the time; beyond it every coefficient is flagged.
PULL_TRUSTED = 2.0
#: calibrate moves the estimate only if some coefficient's pull exceeds this
#: many Monte Carlo standard errors of the worlds' mean (otherwise it would
#: add the worlds' own error to an estimate the noise did not pull).
PULL_Z = 3.0


def keep_shares(replay: Callable[[np.ndarray], np.ndarray], params: np.ndarray,
                coords: Iterable[int], base: np.ndarray | None = None) -> np.ndarray:
    """The keep of each coefficient in ``coords`` (1 elsewhere).

    Parameters
    ----------
    replay : callable
        ``replay(theta)`` returns the replicate estimates ``(B, k)`` (design
        coordinates, NaN rows for failed replicates) of the world whose true
        coefficients are ``theta``; every call must use the same random draws.
    params : ndarray, (k,)
        The estimate: the world every difference starts from.
    coords : iterable of int
        The coefficients to measure.
    base : ndarray, optional
        ``replay(params)``, when the caller has it.

    Returns
    -------
    ndarray, (k,)

    Examples
    --------
    >>> import numpy as np
    >>> z = np.random.default_rng(0).normal(size=(200, 2))
    >>> keep = keep_shares(lambda t: 0.5 * t + 0.1 * z, np.array([1.0, 2.0]), [0, 1])
    >>> [round(float(v), 6) for v in keep]
    [0.5, 0.5]
    """
    params = np.asarray(params, float)
    base = replay(params) if base is None else base
    return np.diag(_jacobian(replay, params, coords, base))


def _jacobian(replay: Callable[[np.ndarray], np.ndarray], params: np.ndarray,
              coords: Iterable[int], base: np.ndarray) -> np.ndarray:
    """The derivative of the replay's mean in the coefficients ``coords``
    (the identity's columns elsewhere), by finite differences of one
    replicate SD from ``params`` (``base = replay(params)``)."""
    centre, sd = np.nanmean(base, axis=0), np.nanstd(base, axis=0)
    K = np.eye(params.size)
    for c in coords:
        # a step of one replicate SD: the noise's pull is a kink, not a slope
        step = sd[c] if sd[c] > 1e-9 * (abs(params[c]) + 1.0) else abs(params[c]) + 1.0
        theta = np.array(params)
        theta[c] += step
        K[:, c] = (np.nanmean(replay(theta), axis=0) - centre) / step
    return K


def _null_directions(K: np.ndarray) -> np.ndarray:
    """The coefficients along a direction the estimator does not respond to
    at all: right singular vectors of K with a singular value below
    NULL_KEEP of the largest (a world without rows at a level: its
    coefficient moves nothing), each coefficient with a loading above
    NULL_LOADING on one.  The gain rule cannot see these: the pseudo-inverse
    drops the direction, and the world's replicates do not spread along it."""
    if K.size == 0:
        return np.zeros(0, bool)
    _, s, Vt = np.linalg.svd(K)
    null = s < NULL_KEEP * max(float(s.max()), 1.0)
    return np.any(np.abs(Vt[null]) > NULL_LOADING, axis=0)


#: Significant bits of the estimate that seed the worlds (`world_seed`): far
#: above the last-bit differences between BLAS kernels (a solve or an
#: eigendecomposition differs by a few ulps, 2**-52 relative, from one
#: processor's kernel to another's), far below any printed digit.
SEED_BITS = 30


def world_seed(beta: np.ndarray) -> int:
    """A 63-bit seed that is a function of the estimate ``beta`` to
    `SEED_BITS` bits relative to its largest entry.

    The worlds' draws must be a function of the release alone (one release,
    one estimate and one set of intervals), and the same on every machine.
    Hashing the estimate's bytes made them a function of its last bits,
    which differ between BLAS kernels: on the Newton page's example, one
    processor's kernel and another's gave other worlds, and standard errors
    0.2% apart (5% for a quantile-steps interval), from the same seeds.
    The estimate is rounded on a grid of 2**-SEED_BITS of its scale (a power
    of two) first; a last-bit difference then moves the seed only if it
    straddles a grid point, about one chance in 2**(SEED_BITS - 52 + 3).

    Examples
    --------
    >>> b = np.array([0.1, -2.5, 3.0])
    >>> world_seed(b) == world_seed(b * (1 + 2**-50)) == world_seed(b + 1e-15)
    True
    >>> world_seed(b) == world_seed(b * 1.001)
    False
    """
    beta = np.asarray(beta, float) + 0.0  # -0.0 -> 0.0
    finite = np.isfinite(beta)
    top = float(np.max(np.abs(beta[finite]), initial=0.0))
    exponent = math.frexp(top)[1] if top > 0 else 0
    grid = np.where(finite, np.rint(np.ldexp(np.where(finite, beta, 0.0), SEED_BITS - exponent)),
                    0.0)
    text = ",".join(f"{int(v)}" if ok else repr(float(x))
                    for v, x, ok in zip(grid, beta, finite))
    return int.from_bytes(hashlib.sha256(f"{exponent};{text}".encode()).digest()[:8],
                          "little") >> 1


def calibrate(replay: Callable[[np.ndarray, int, int], np.ndarray],
              design_params: Callable[[np.ndarray], np.ndarray], beta: np.ndarray, B: int,
              rng, known: np.ndarray | None = None,
              trusted: float = PULL_TRUSTED) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The pull of an iterative release on its estimate, measured by indirect
    inference on its replay: the coefficients it cannot locate, and
    replicates widened by what it loses.

    ``m(theta)``, the mean of the replayed release in the world whose design
    coefficients are theta, is measured with common random numbers; its
    Jacobian K at the release's estimate b by finite differences (one
    replicate SD per coefficient: every coefficient, so that a pull along a
    direction shared by several, a factor's dummies and the intercept, shows
    as such).  Where the pull ``b - m(b)`` exceeds the worlds' Monte Carlo
    error (PULL_Z), the estimate would solve ``m(theta) = b`` (CALIBRATION_STEPS
    Newton steps with K from b; none by default, see CALIBRATION_STEPS: the
    estimate stays b); the replicates of the world at the estimate are mapped
    to it by ``K^-1`` (their spread widened by what the release loses).  A coefficient
    whose replicate error that map
    multiplies more than ``1 / SHRINK_MIN``-fold (K nearly singular along it:
    the release's estimate barely moves with it) is one the release cannot
    locate: it keeps b and is flagged.  A release whose replay pulls some
    coefficient by more than PULL_TRUSTED replicate SDs has every coefficient
    flagged: its estimate is then mostly the steps' bias, and undoing that
    would rest on the worlds (Gaussian covariates) reproducing the real
    design's pull to a fraction of the noise.  (Holding such a coefficient at b and
    calibrating the others given it would be wrong for every coefficient
    correlated with it: on Engel's curve it cut coverage to 67%.)

    Parameters
    ----------
    replay : callable
        ``replay(beta_pop, seed, n)``: n replicate estimates (design
        coordinates; a row with a non-finite value is a failure) of the release replayed in the
        world whose coefficients, in the release's own coordinates, are
        ``beta_pop``; the same seed must give the same draws.
    design_params : callable
        The release's (affine) map from its coordinates to the design's.
    beta : ndarray
        The release's estimate in its own coordinates.
    B : int
        Replicates of the returned bootstrap (0: the estimate only, as a fit
        without the dp covariance needs; the estimate does not depend on B).
    rng : numpy Generator
        Seeds the returned replicates (the worlds of the estimate are seeded
        by the release itself: one release, one estimate).
    known : ndarray of bool, optional
        Coefficients already known to carry no information (a level with no
        rows): held at b in every world and left out of K, whose inverse
        they would otherwise blow up.
    trusted : float
        The largest pull, in replicate SDs, that is undone (PULL_TRUSTED; inf
        where the worlds are the true law, as in the example).

    Returns
    -------
    params, replicates, flags : ndarray
        The calibrated estimate (b where flagged), ``(B, k)`` replicates of
        it, and the coefficients flagged here (not ``known``).

    Examples
    --------
    >>> import numpy as np
    >>> def replay(beta, seed, n):  # keeps half of the first coefficient, 5% of the second
    ...     z = np.random.default_rng(seed).normal(size=(n, 2))
    ...     return np.array([0.5, 0.05]) * beta + 0.01 * z
    >>> est, reps, flags = calibrate(replay, lambda b: b, np.array([1.0, 2.0]), 500,
    ...                              np.random.default_rng(0), trusted=np.inf)
    >>> [round(float(v), 2) for v in est], flags.tolist()
    ([1.0, 2.0], [False, True])
    >>> round(float(reps[:, 0].std()), 2)  # the replicates' 0.01 over the keep of 1/2
    0.02
    """
    beta = np.asarray(beta, float)
    b = design_params(beta)
    # the worlds' draws are a function of the release alone, so the estimate is too
    # (every fit of one release gives the same params); the returned replicates use rng
    s_world = world_seed(beta)
    s_reps = int(rng.integers(0, 2**63 - 1))
    D = (design_params(np.eye(beta.size)) - design_params(np.zeros(beta.size))).T

    def world(theta, seed, n):  # a replicate with a non-finite coefficient failed
        reps = replay(beta + np.linalg.solve(D, theta - b), seed, n)
        return np.where(np.all(np.isfinite(reps), axis=1, keepdims=True), reps, np.nan)

    base = world(b, s_world, SHRINK_REPS)
    m0, sd = np.nanmean(base, axis=0), np.nanstd(base, axis=0)
    free = np.ones(b.size, bool) if known is None else ~np.asarray(known, bool)
    idx = np.flatnonzero(free)
    K = _jacobian(lambda theta: world(theta, s_world, SHRINK_REPS), b, idx, base)
    K = np.where(np.isfinite(K), K, 0.0)
    Kinv = np.linalg.pinv(K[np.ix_(idx, idx)]) if idx.size else np.zeros((0, 0))
    # a coefficient whose error K^-1 multiplies more than 1 / SHRINK_MIN-fold is
    # one the release cannot locate; the inverse is taken over every coefficient
    # at once, so a direction it cannot locate flags each coefficient along it
    with np.errstate(divide="ignore", invalid="ignore"):
        gain = np.nanstd((base - m0)[:, idx] @ Kinv.T, axis=0) / sd[idx]
    flags = np.zeros(b.size, bool)
    flags[idx] = ~(gain <= 1.0 / SHRINK_MIN) | _null_directions(K[np.ix_(idx, idx)])
    # a release its own replay pulls by more than PULL_TRUSTED replicate SDs is one
    # whose estimate is mostly the steps' bias: undoing it would rest on the worlds
    # reproducing that bias to a fraction of the noise, which nothing checks
    with np.errstate(divide="ignore", invalid="ignore"):
        pull = np.abs(b - m0)[idx] / sd[idx]
    if idx.size and not np.all(pull <= trusted):
        flags[idx] = True
    theta, m = np.array(b), m0
    # no pull beyond the Monte Carlo error of the worlds' means: b stands as it is
    mc = sd / np.sqrt(max(int(np.sum(np.all(np.isfinite(base), axis=1))), 1))
    pulled = idx.size and np.any(np.abs(b - m0)[idx] > PULL_Z * mc[idx]) and not flags[idx].all()
    for _ in range(CALIBRATION_STEPS if pulled else 0):
        theta[idx] = theta[idx] + Kinv @ (b - m)[idx]
        m = np.nanmean(world(theta, s_world, SHRINK_REPS), axis=0)
    flags |= free & ~np.isfinite(theta)
    if B == 0:  # the estimate only (cov_type "naive"): no replicates to replay
        return np.where(flags, b, theta), np.empty((0, b.size)), flags
    reps = world(theta, s_reps, B)
    mapped = np.array(reps)
    mapped[:, idx] = theta[idx] + (reps[:, idx] - np.nanmean(reps[:, idx], axis=0)) @ Kinv.T
    return np.where(flags, b, theta), np.where(flags, b, mapped), flags


def signed_shift(reps: np.ndarray, shift: np.ndarray, rng) -> np.ndarray:
    """The replicates moved by ``shift`` with a random sign each: a bias of
    unknown sign carried as spread about the estimate."""
    return reps + shift * rng.choice([-1.0, 1.0], size=(reps.shape[0], 1))


def paired(draw: Callable[[int], np.ndarray], B: int) -> np.ndarray:
    """B replicate draws of a law symmetric about 0, in antithetic pairs
    (``x`` and ``-x``): the replicates' mean then carries no first-order
    Monte Carlo error, so a replay's mean differs from the estimate only by
    the estimator's own pull (``draw(n)`` gives n draws along axis 0).

    Examples
    --------
    >>> x = paired(lambda n: np.random.default_rng(0).normal(size=(n, 2)), 5)
    >>> x.shape, bool(np.allclose(x[:2], -x[3:5]))
    ((5, 2), True)
    """
    x = draw((B + 1) // 2)
    return np.concatenate([x, -x])[:B]
