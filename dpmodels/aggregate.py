"""The sample-and-aggregate release (Smith 2008, after Nissim, Raskhodnikova & Smith 2007).

Split the rows into k disjoint blocks, fit the model's own (non-private)
estimator on each block with statsmodels, clamp every block estimate
coordinate-wise to a public or privately chosen range, average, add noise.
Whatever the estimator does on a block, one row can only change that one
block's (clamped) estimate, so the noise needed does not depend on the
estimator: any statsmodels fit, here median / quantile regression
(``QuantReg``), can be made private.  Smith shows the average of k block
estimates plus noise has the law of the full-data MLE as n grows (with k
growing and the blocks' bias corrected); the price at finite n is the noise,
of order ``p * range / (k epsilon)`` per coordinate.

Mechanism (epsilon-DP, delta = 0, replace-one neighbours, public n)
------------------------------------------------------------------
1. **Public design.**  The formula's design is built by patsy with the design
   information of :func:`dpmodels.moments.design_space` (read on a public grid
   of the declared bounds and levels), so its columns, names and coding never
   depend on the data.  Continuous values are clipped to their bounds and
   discrete values matched to their declared levels (per-row maps).
2. **Blocks.**  The n row *positions* are shuffled by the release's random
   source and cut into k blocks of ``floor(n/k)`` or ``ceil(n/k)`` rows; a row
   with a missing value is dropped inside its block.  The partition depends
   on n, k and the random bits only, so changing one row changes one block.
   k defaults to :func:`default_blocks` (public n, the number of coefficients
   p and epsilon).
3. **Standardized coordinates.**  Each coefficient is expressed as ``t_j =
   (theta_j - centre_j) / unit_j`` with public ``centre_j`` and ``unit_j``
   (:func:`natural_units`): a slope is measured in response half-ranges per
   half-range of its column, the intercept from the response's centre.
   ``|t_j| <= 1`` is the natural range of a coefficient whose fitted plane
   stays inside the declared bounds.
4. **Range (RANGE_SHARE of epsilon, only without ``param_bounds``).**
   One round per entry of RANGE_BINS, each with an equal share: one histogram
   per coordinate of the k block values ``t_j`` on equal bins (values outside go
   to the edge bins), exact discrete Laplace noise of scale ``2 p / eps_l``
   on every bin (a changed block moves one count in each of the p
   histograms: L1 sensitivity 2p).  The range is the longest run of bins
   The range is the two adjacent bins with the largest noisy sum, widened by
   one bin on each side, if that sum reaches ``2 (2 p / eps_l) log(bins)``
   (:func:`range_from_counts`).  The first
   round's grid is ``[-RANGE_L, RANGE_L]``; each later round's grid is the
   previous range (a finer grid where the block estimates are).  A round
   that keeps no bin leaves the previous range.  This is Smith's widened,
   Winsorized mean: its grid is public (declared bounds -> units, fixed
   constants), later grids are post-processing of released counts.
   With ``param_bounds`` the range is the caller's (public) and all of
   epsilon goes to step 5.
5. **Clamped mean (the rest).**  ``u = clip((t - c) / h, -1, 1)`` with ``c, h``
   the range's centre and half-width (a block whose fit failed takes
   ``u = 0``, the range centre), quantized ``K = round(u G)`` with ``G =
   2**16``, and the integer vector ``(A sum_b K_bj, sum_b K_bj**2)`` (j = 1..p,
   ``A = SUM_WEIGHT G``) is released with exact discrete Laplace noise,
   ``P(z) ~ exp(-eps_m |z| / Delta)``.  Replace-one changes one block: each
   ``K_j`` by at most 2G and each ``K_j**2`` by at most ``G**2``, so
   ``Delta = p (2 A G + G**2)`` (:func:`mean_sensitivity`).

The estimate is ``theta = centre + unit (c + h mean(u))``.  Its variance
(post-processing) is ``unit**2 h**2 (s_u**2 / k + noise variance)``: the
noise variance is known exactly; the block spread ``s_u**2`` is the released
second moment minus the squared mean, raised by one standard deviation of
its own noise (an upper estimate: honest intervals when k epsilon is small).
Covariances between coefficients are not released (only each coordinate's
moments): the covariance matrix is diagonal.

``epsilon=inf`` releases the exact average of the block estimates (no noise,
no quantization, clamped only to ``param_bounds`` when given; NOT private).
The parts of epsilon add up to epsilon (PRIVACY.md rule 8) and the report
states them.  Tests: ``tests/test_sample_aggregate.py``.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import pandas as pd
import patsy

from .accountant import Accountant
from .errors import DomainError, DPModelsError, NotPrivateWarning
from .exact import MIN_EPSILON, discrete_laplace
from .formula import caller_namespace, user_stacklevel
from .moments import (
    DesignSpace,
    _describe,
    _published_frame,
    _to_pandas,
    _unit_epsilon,
    design_space,
    public_inputs,
)
from .randomness import random_source
from .report import AggregateReport

__all__ = ["PrivateAggregate", "release_aggregate", "default_blocks", "natural_units",
           "mean_sensitivity", "mean_statistics", "ESTIMATORS", "RANGE_SHARE"]

#: The block estimators by name: what each fits on a block.
ESTIMATORS = ("quantreg", "logit")
#: Share of epsilon spent on the private range (when ``param_bounds`` is not given).
RANGE_SHARE = 0.4
#: Bins of each round's histograms (one round per entry): a coarse grid over
#: the natural range, then a zoom into the range found.
RANGE_BINS = (16, 16)
RANGE_LEVELS = len(RANGE_BINS)
#: The first round's grid: ``|t| <= RANGE_L`` in natural units.
RANGE_L = 4.0
#: Quantization of the clamped coordinates u in [-1, 1]: K = round(u G).
QUANTUM = 2**16
#: Weight of the sums against the squares (in units of G): the squares get
#: ``1 / (2 SUM_WEIGHT + 1)`` of the sensitivity (the spread needs less precision).
SUM_WEIGHT = 4
#: The block spread is raised by this many standard deviations of its noise.
SPREAD_Z = 1.0
#: Default blocks: at least MIN_ROWS_PER_COEF rows per coefficient in a block,
#: at most BLOCKS_NOISE * p**2 / epsilon**2 blocks (beyond that the noise is a
#: small part of the variance and larger blocks have less small-sample bias),
#: and at most MAX_BLOCKS (run time: one statsmodels fit per block).
MIN_ROWS_PER_COEF = 10
BLOCKS_NOISE = 200.0
MAX_BLOCKS = 5000
#: ... and at least MIN_BLOCKS (when n allows): the standard error reads the
#: spread of the block estimates, which needs enough of them.
MIN_BLOCKS = 100
#: The natural scale of a logit coefficient: log-odds per half-range of its column.
LOGIT_UNIT = 4.0


def default_blocks(n: int, p: int, epsilon: float) -> int:
    """The default number of blocks, from public n, p and epsilon only.

    ``k = min(n // (MIN_ROWS_PER_COEF p), max(ceil(BLOCKS_NOISE p**2 /
    epsilon**2), MIN_BLOCKS), MAX_BLOCKS)``, at least 1.  The noise's share of the aggregate's variance
    falls like ``p**2 / (k epsilon**2)`` while blocks of few rows are less
    efficient and more biased; ``benchmarks/sample_aggregate.py`` measures the
    trade-off.

    Examples
    --------
    >>> default_blocks(20_000, 5, 1.0)
    400
    >>> default_blocks(1_000_000, 9, 1.0)
    5000
    """
    cap = (max(math.ceil(BLOCKS_NOISE * p * p / epsilon**2), MIN_BLOCKS)
           if math.isfinite(epsilon) else MIN_BLOCKS)
    return int(max(1, min(n // (MIN_ROWS_PER_COEF * p), cap, MAX_BLOCKS)))


def natural_units(space: DesignSpace, estimator: str) -> tuple[np.ndarray, np.ndarray]:
    """``(centre, unit)`` per coefficient (design order), from the public design only.

    A non-constant column j with half-range ``h_j`` has ``centre 0`` and
    ``unit = s / h_j``, s the response's half-range (LOGIT_UNIT log-odds for a
    logit); a constant column (the intercept) is centred on the response's
    centre (0 for a logit) with ``unit = s (1 + sum_j |c_j| / h_j)`` (the
    intercept is the fit at 0, which is ``sum_j |c_j| / h_j`` half-ranges from
    the columns' centres c_j).

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> from dpmodels.domain import build_domain
    >>> dom = build_domain(["y", "x"], {"y": np.dtype(float), "x": np.dtype(float)},
    ...                    discrete=(), bounds={"y": (0, 10), "x": (0, 2)}, levels={},
    ...                    bins=2, n=10, epsilon=1.0, data_columns=["y", "x"], scales={})
    >>> natural_units(design_space("y ~ x", dom, {}), "quantreg")
    (array([5., 0.]), array([10.,  5.]))
    """
    nc = ~space.constant
    if estimator == "logit":
        s, yc = LOGIT_UNIT, 0.0
        centre_x, half_x = space.centre, space.half
    else:
        s, yc = float(space.half[-1]), float(space.centre[-1])
        centre_x, half_x = space.centre[:-1], space.half[:-1]
    centre = np.zeros(space.constant.size)
    unit = np.empty(space.constant.size)
    unit[nc] = s / half_x
    reach = 1.0 + float(np.sum(np.abs(centre_x) / half_x))
    centre[space.constant] = yc
    unit[space.constant] = s * reach
    return centre, unit


def mean_sensitivity(p: int) -> int:
    """Replace-one L1 sensitivity of the released vector ``(A sum K, sum K**2)``:
    ``p (2 A G + G**2)`` with ``A = SUM_WEIGHT G`` (a changed block moves each
    ``K_j`` in [-G, G] by at most 2G and each ``K_j**2`` in [0, G**2] by at most G**2).

    Examples
    --------
    >>> mean_sensitivity(1) == 9 * 2**32
    True
    """
    G = QUANTUM
    return p * (2 * SUM_WEIGHT * G * G + G * G)


def mean_statistics(u: np.ndarray) -> tuple[int, ...]:
    """The exact integer vector of step 5 from the clamped block values ``u``
    ((k, p), in [-1, 1]): ``(A sum_b K_bj for j, then sum_b K_bj**2 for j)``
    as Python integers, ``K = round(u G)``.

    Examples
    --------
    >>> import numpy as np
    >>> mean_statistics(np.array([[0.5], [-1.0]]))[1] == 2**30 + 2**32
    True
    """
    K = np.rint(np.clip(np.asarray(u, float), -1.0, 1.0) * QUANTUM).astype(np.int64)
    A = SUM_WEIGHT * QUANTUM
    sums = [A * int(v) for v in K.sum(axis=0)]
    squares = [sum(int(x) * int(x) for x in col) for col in K.T]
    return tuple(sums + squares)


def _laplace_var(eps_unit: float) -> float:
    """Variance of the discrete Laplace of :func:`~dpmodels.exact.discrete_laplace`."""
    r = math.exp(-eps_unit / 2.0)
    return 2.0 * r / math.expm1(-eps_unit / 2.0) ** 2


@dataclass(frozen=True, eq=False)
class PrivateAggregate:
    """A sample-and-aggregate release: the noisy average of clamped block estimates.

    Attributes
    ----------
    space : DesignSpace
        The formula's public design.
    estimator : str
        "quantreg" or "logit".
    q : float or None
        The quantile (quantreg).
    params : ndarray, (p,)
        The estimate in design units (design order).
    variance : ndarray, (p,)
        Its variance per coefficient (block spread / k + the known noise variance).
    noise_var : ndarray, (p,)
        The noise's share of ``variance`` (known exactly).
    lo, hi : ndarray, (p,)
        The clamping range of each coefficient (design units).
    blocks : int
    block_rows : tuple of int
        Smallest and largest number of rows in a block (before missing values).
    range_source : str
        "param_bounds", "private" or "none".
    report : AggregateReport
    """

    space: DesignSpace
    estimator: str
    q: float | None
    params: np.ndarray
    variance: np.ndarray
    noise_var: np.ndarray
    lo: np.ndarray
    hi: np.ndarray
    blocks: int
    block_rows: tuple
    range_source: str
    report: AggregateReport

    @property
    def privacy(self) -> AggregateReport:
        return self.report

    @property
    def cov(self) -> np.ndarray:
        """Diagonal covariance of ``params`` (covariances are not released)."""
        return np.diag(self.variance)

    def __repr__(self) -> str:
        return (f"PrivateAggregate({self.space.formula!r}, {self.estimator}, "
                f"epsilon={self.report.epsilon:g}, blocks={self.blocks})")


# ---- arguments ----------------------------------------------------------------------------


def _check_args(estimator, q, blocks, param_bounds):
    if not isinstance(estimator, str) or estimator not in ESTIMATORS:
        raise DPModelsError(f"estimator must be one of {ESTIMATORS}, got {estimator!r}")
    if estimator == "quantreg":
        if isinstance(q, bool) or not isinstance(q, (int, float, np.integer, np.floating)) \
                or not 0 < float(q) < 1:
            raise DPModelsError(f"q must be a number strictly between 0 and 1, got {q!r}")
    if blocks is not None and (isinstance(blocks, bool)
                               or not isinstance(blocks, (int, np.integer)) or blocks < 1):
        raise DPModelsError(f"blocks must be a positive int or None, got {blocks!r}")
    if param_bounds is not None and not isinstance(param_bounds, (Mapping, tuple, list)):
        raise DPModelsError("param_bounds must be a (low, high) pair or a dict of coefficient "
                            f"name to (low, high), got {type(param_bounds).__name__}")


def _pair(name: str, value) -> tuple[float, float]:
    try:
        lo, hi = (float(v) for v in value)
    except (TypeError, ValueError):
        raise DPModelsError(f"param_bounds[{name!r}] must be a (low, high) pair of numbers, "
                            f"got {value!r}") from None
    if not (math.isfinite(lo) and math.isfinite(hi) and lo < hi):
        raise DPModelsError(f"param_bounds[{name!r}] must be finite with low < high, "
                            f"got {value!r}")
    return lo, hi


def resolve_param_bounds(param_bounds, names) -> tuple[np.ndarray, np.ndarray] | None:
    """``(lo, hi)`` arrays in design order from ``param_bounds`` (None: not given).

    Examples
    --------
    >>> resolve_param_bounds((-1, 1), ["Intercept", "x"])
    (array([-1., -1.]), array([1., 1.]))
    """
    if param_bounds is None:
        return None
    names = list(names)
    if isinstance(param_bounds, Mapping):
        unknown = [k for k in param_bounds if k not in names]
        if unknown:
            raise DPModelsError(f"param_bounds names {unknown} are not coefficients of the "
                                f"formula; its coefficients are {names}")
        missing = [nm for nm in names if nm not in param_bounds]
        if missing:
            raise DPModelsError(f"param_bounds has no range for {missing}: give every "
                                "coefficient a public range, or leave param_bounds out (a "
                                "private range is then estimated)")
        pairs = [_pair(nm, param_bounds[nm]) for nm in names]
    else:
        pair = _pair("all", param_bounds)
        pairs = [pair] * len(names)
    return np.array([a for a, _ in pairs]), np.array([b for _, b in pairs])


# ---- block fits -------------------------------------------------------------------------


def _design(space: DesignSpace, frame: pd.DataFrame, estimator: str, y_logit):
    from .moments import _NO_NA

    with np.errstate(all="ignore"):
        if estimator == "logit":
            (X,) = patsy.build_design_matrices([space.infos[1]], frame, NA_action=_NO_NA)
            return np.asarray(X, float), y_logit
        y, X = patsy.build_design_matrices(list(space.infos), frame, NA_action=_NO_NA)
    return np.asarray(X, float), np.asarray(y, float)[:, 0]


def _fit_block(X: np.ndarray, y: np.ndarray, estimator: str, q: float | None) -> np.ndarray:
    """One block's statsmodels estimate (NaN when it fails)."""
    p = X.shape[1]
    bad = np.full(p, np.nan)
    if X.shape[0] <= p or not (np.all(np.isfinite(X)) and np.all(np.isfinite(y))):
        return bad
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            if estimator == "quantreg":
                from statsmodels.regression.quantile_regression import QuantReg

                params = QuantReg(y, X).fit(q=q, max_iter=2000).params
            else:
                params = logit_block(X, y)
        except Exception:  # noqa: BLE001 - a singular block, separation, no convergence
            return bad
    params = np.asarray(params, float)
    return params if np.all(np.isfinite(params)) else bad


def logit_block(X: np.ndarray, y: np.ndarray) -> np.ndarray:
    """A logit block estimate with the first-order bias correction (Firth's
    penalized likelihood, equivalent to subtracting the O(1/m) bias of the MLE:
    Smith's bias-corrected block estimator); finite under separation."""
    beta = np.zeros(X.shape[1])
    for _ in range(50):
        p = 1.0 / (1.0 + np.exp(-(X @ beta)))
        w = p * (1.0 - p)
        info = (X.T * w) @ X
        inv = np.linalg.inv(info)
        h = np.einsum("ij,jk,ik->i", X * w[:, None], inv, X)  # leverages of W^1/2 X
        score = X.T @ (y - p + h * (0.5 - p))
        step = inv @ score
        beta = beta + step
        if np.max(np.abs(step)) < 1e-8:
            return beta
    raise np.linalg.LinAlgError("no convergence")


# ---- the range search ---------------------------------------------------------------------


def range_from_counts(noisy: np.ndarray, lo: float, hi: float, scale: float
                      ) -> tuple[float, float] | None:
    """The range read from one coordinate's noisy histogram on equal bins over
    ``[lo, hi]`` (post-processing): the two adjacent bins with the largest
    noisy sum, widened by one bin on each side; None (keep the previous range)
    when that sum is below ``2 scale log(bins)``, which the noise of scale
    ``scale`` alone reaches with probability about ``bins**-2``.

    Examples
    --------
    >>> import numpy as np
    >>> range_from_counts(np.array([0, 0, 50, 80, 0, 0, 0, 0]), -4.0, 4.0, 5.0)
    (-3.0, 1.0)
    """
    B = noisy.size
    width = (hi - lo) / B
    pairs = noisy[:-1] + noisy[1:]
    best = int(np.argmax(pairs))
    if pairs[best] < 2.0 * scale * math.log(B):
        return None
    return lo + (best - 1) * width, lo + (best + 3) * width


def _histograms(t: np.ndarray, lo: np.ndarray, hi: np.ndarray, bins: int) -> np.ndarray:
    """(p, bins) exact counts of each coordinate's block values on equal bins
    over [lo_j, hi_j] (values outside in the edge bins)."""
    k, p = t.shape
    codes = np.floor((t - lo) / (hi - lo) * bins)
    codes = np.clip(np.nan_to_num(codes, nan=bins // 2), 0, bins - 1).astype(np.int64)
    offset = np.arange(p) * bins
    return np.bincount((codes + offset).ravel(), minlength=p * bins).reshape(p, bins)


# ---- the release --------------------------------------------------------------------------


def release_aggregate(
    data,
    *,
    formula: str,
    epsilon: float,
    estimator: str = "quantreg",
    q: float | None = 0.5,
    blocks: int | None = None,
    param_bounds=None,
    bounds=None,
    levels=None,
    n: int | None = None,
    random_state=None,
    accountant: Accountant | None = None,
    missing: str = "drop",
    namespace: Mapping[str, object] | None = None,
    domain_check=None,
) -> PrivateAggregate:
    """Release an epsilon-DP sample-and-aggregate estimate (see the module notes).

    Parameters
    ----------
    data : pandas.DataFrame, mapping of str to array-like, or polars.DataFrame
        Raw rows (in memory), read once, never modified.
    formula : str
        A patsy formula (numeric response for quantreg; a binary one for logit).
    epsilon : float
        Privacy parameter (> 0); ``inf`` releases the exact average of the
        block estimates (NOT private).
    estimator : {"quantreg", "logit"}
        The block estimator: statsmodels ``QuantReg`` at quantile ``q``, or a
        bias-corrected (Firth) logit.
    q : float
        The quantile (quantreg).
    blocks : int, optional
        Number of blocks k (default :func:`default_blocks`).
    param_bounds : (low, high) or dict of str to (low, high), optional
        A public range per coefficient (design names, e.g. ``"C(d)[T.yes]"``);
        without it a range is estimated privately with RANGE_SHARE of epsilon.
    bounds, levels, n, random_state, accountant, missing, namespace, domain_check
        As for :func:`dpmodels.moments.release_moments`.

    Returns
    -------
    PrivateAggregate

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> rng = np.random.default_rng(0)
    >>> df = pd.DataFrame({"x": rng.uniform(-1, 1, 20_000)})
    >>> df["y"] = 1 + 2 * df["x"] + rng.laplace(size=20_000).clip(-5, 5)
    >>> rel = release_aggregate(df, formula="y ~ x", epsilon=1.0,
    ...                         bounds={"x": (-1, 1), "y": (-6, 8)}, random_state=0)
    >>> rel.blocks, [round(float(b)) for b in rel.params]
    (1000, [1, 2])
    """
    if namespace is None:
        namespace = caller_namespace(1)
    _check_args(estimator, q, blocks, param_bounds)
    pub = public_inputs(data, formula=formula, epsilon=epsilon, bounds=bounds, levels=levels,
                        n=n, random_state=random_state, accountant=accountant,
                        missing=missing, namespace=namespace, domain_check=domain_check)
    data, epsilon, domain, fv = pub.data, pub.epsilon, pub.domain, pub.fv
    n_public = pub.n
    response = None
    if estimator == "logit":
        response = fv.response[0] if len(fv.response) == 1 else None
        if response is None or domain.axis(response).kind != "discrete":
            raise DomainError("the logit block estimator needs a binary response with "
                              "declared levels")
    space = design_space(formula, domain, namespace, response=estimator != "logit")
    names = space.exog_names
    p = len(names)
    user_range = resolve_param_bounds(param_bounds, names)
    private = math.isfinite(epsilon)
    k = int(blocks) if blocks is not None else default_blocks(n_public, p, epsilon)
    if n_public // k <= p:
        raise DPModelsError(
            f"blocks={k} leaves {n_public // k} rows per block for {p} coefficients: use "
            f"at most {max(n_public // (p + 1), 1)} blocks (or more data)")
    eps_range = epsilon * RANGE_SHARE if private and user_range is None else 0.0
    eps_mean = epsilon - eps_range if private else math.inf
    eps_round = eps_range / RANGE_LEVELS
    if private:
        parts = [_unit_epsilon(eps_mean, mean_sensitivity(p) / 2.0)]
        if eps_range:
            parts.append(_unit_epsilon(eps_round, p))
        if min(parts + [eps_mean]) < MIN_EPSILON:
            raise DPModelsError(f"epsilon={epsilon!r} is too small to split (parts below "
                                f"{MIN_EPSILON:g})")
    label = f"sample-and-aggregate {estimator} of {formula!r}"
    if accountant is not None:
        accountant.check(epsilon, label)
    if not private:
        warnings.warn(
            "epsilon=inf: the average of the block estimates is EXACT and NOT differentially "
            "private. Use it only to check results against the non-private fit.",
            NotPrivateWarning, stacklevel=user_stacklevel())

    # ---- the rows (every check of the values happens here, before the budget) ----------
    frame = _to_pandas(data)
    published, valid = _published_frame(frame, domain, missing)
    y_logit = None
    if estimator == "logit":
        from .newton import _binary_response

        y_logit, y_missing = _binary_response(domain.axis(response), frame[response])
        if y_missing.any() and missing == "raise":
            from .histogram import missing_error

            raise missing_error(response)
        valid = valid & ~y_missing
    X, y = _design(space, published, estimator, y_logit)

    budget = "no accountant"
    if accountant is not None:
        accountant.spend(epsilon, label)
        budget = (f"charged epsilon={epsilon:g}; accountant: {accountant.spent:g} of "
                  f"{accountant.total_epsilon:g} spent")
    bits = random_source(random_state)
    rows = len(frame)
    order = np.argsort(bits.words(rows), kind="stable")  # a uniform random partition
    parts_idx = np.array_split(order, k)
    theta = np.empty((k, p))
    for b, idx in enumerate(parts_idx):
        idx = idx[valid[idx]]
        theta[b] = _fit_block(X[idx], y[idx], estimator, q)
    failed = int((~np.all(np.isfinite(theta), axis=1)).sum())

    centre, unit = natural_units(space, estimator)
    t = (theta - centre) / unit  # failed blocks: NaN rows
    split = []
    if user_range is not None:
        lo_t, hi_t = (user_range[0] - centre) / unit, (user_range[1] - centre) / unit
        range_source = "param_bounds"
    elif private:
        lo_t, hi_t = np.full(p, -RANGE_L), np.full(p, RANGE_L)
        eps_unit = _unit_epsilon(eps_round, p)
        scale = 2.0 * p / eps_round
        for level, bins in enumerate(RANGE_BINS):
            counts = _histograms(t, lo_t, hi_t, bins)
            noisy = counts + discrete_laplace(bits, eps_unit, counts.size).reshape(counts.shape)
            for j in range(p):
                found = range_from_counts(noisy[j], lo_t[j], hi_t[j], scale)
                if found is not None:
                    lo_t[j], hi_t[j] = found
            split.append((f"range round {level + 1} ({bins}-bin histogram of each "
                          f"coefficient's block values, L1 sensitivity {2 * p})", eps_round))
        range_source = "private"
    else:
        lo_t, hi_t = np.full(p, -np.inf), np.full(p, np.inf)
        range_source = "none"

    if private:
        c, h = (lo_t + hi_t) / 2.0, (hi_t - lo_t) / 2.0
        u = np.clip((t - c) / h, -1.0, 1.0)
        u = np.where(np.isfinite(u), u, 0.0)
        stats = mean_statistics(u)
        delta = mean_sensitivity(p)
        eps_unit = _unit_epsilon(eps_mean, delta / 2.0)
        z = discrete_laplace(bits, eps_unit, 2 * p)
        noisy = [s + int(e) for s, e in zip(stats, z)]
        G, A = QUANTUM, SUM_WEIGHT * QUANTUM
        mean_u = np.array([v / (A * G * k) for v in noisy[:p]])
        second_u = np.array([v / (G * G * k) for v in noisy[p:]])
        zvar = _laplace_var(eps_unit)
        var_mean_u = np.full(p, zvar / (A * G * k) ** 2)
        sd_second = math.sqrt(zvar) / (G * G * k)
        spread = np.clip(second_u - mean_u**2 + SPREAD_Z * sd_second, 0.0, 1.0)
        mean_u = np.clip(mean_u, -1.0, 1.0)
        t_hat = c + h * mean_u
        var_t = h**2 * (spread / k + var_mean_u)
        noise_t = h**2 * var_mean_u
        split.append((f"clamped mean and spread (L1 sensitivity {delta} in units of "
                      f"1/{G}, 1/{G}**2)", eps_mean))
        mechanism = ("sample-and-aggregate: statsmodels fits on k disjoint blocks, clamped "
                     "coordinate-wise, noisy average (exact discrete Laplace)")
    else:
        tt = np.clip(t, lo_t, hi_t)
        tt = np.where(np.isfinite(tt), tt, np.where(np.isfinite((lo_t + hi_t) / 2.0),
                                                    (lo_t + hi_t) / 2.0, 0.0))
        t_hat = tt.mean(axis=0)
        var_t = tt.var(axis=0, ddof=1) / k if k > 1 else np.full(p, np.nan)
        noise_t = np.zeros(p)
        mechanism = "none (exact average of the block estimates)"
    params = centre + unit * t_hat
    variance = unit**2 * var_t
    lo, hi = centre + unit * lo_t, centre + unit * hi_t
    sizes = [len(ix) for ix in parts_idx]
    report = AggregateReport(
        epsilon=epsilon, private=private, mechanism=mechanism, split=tuple(split),
        n=n_public, n_source=pub.n_source,
        variables=tuple((a.name, _describe(a)) for a in domain.axes),
        estimator=("QuantReg, q = %g" % q) if estimator == "quantreg" else
        "logit, bias-corrected (Firth)",
        blocks=k, block_rows=(min(sizes), max(sizes)), range_source=range_source,
        ranges=tuple((nm, float(a), float(b)) for nm, a, b in zip(names, lo, hi)),
        seeded=bits.seeded, budget=budget)
    del failed  # data-dependent: never published
    return PrivateAggregate(space, estimator, float(q) if estimator == "quantreg" else None,
                            params, variance, unit**2 * noise_t, lo, hi, k,
                            (min(sizes), max(sizes)), range_source, report)
