"""Hot-started batch solver for many weighted quantile regressions on one design.

The bootstrap of `dp_quantreg()` refits the
quantile regression once per replicate: for every column ``w`` of a weight
matrix ``W`` (one replicate's non-negative counts of the released cells) it
needs

    beta(w) = argmin_b  sum_i w_i rho_q(y_i - x_i'b),
    rho_q(u) = u (q - 1[u < 0]).

This is post-processing of a release: ``X`` and ``y`` are the released
cells' representatives and ``W`` are replicate counts simulated from the
release, so no raw data is read here and nothing here costs privacy.

The linear program
------------------
As `solve_check_loss()`, every fit solves the
dual of the check-loss problem,

    minimize  -y'a   subject to   X'a = 0,   -(1 - q) w_i <= a_i <= q w_i,

whose equality constraints' multipliers are ``-beta``.  Weak duality: for
every feasible ``a`` and every ``b``, ``y'a = (y - Xb)'a = sum_i r_i a_i``
with ``r_i a_i <= w_i rho_q(r_i)`` on the box, so
``y'a <= sum_i w_i rho_q(y_i - x_i'b)``, with equality at the optima; the gap
between the two checks a solution.  The costs ``-y`` and the matrix ``X'``
are the same for every replicate: only the columns' bounds depend on ``w``.

Why another replicate's basis is a hot start
--------------------------------------------
A simplex basis ``B`` (``p`` of the ``a_i``) fixes the row prices
``pi = B^-T c_B`` and the reduced costs ``d = c - X pi``: both are functions
of the costs, the matrix and ``B`` only, never of the bounds.  A basis is
dual feasible when every non-basic ``a_i`` sits at the bound its reduced
cost points to (lower when ``d_i > 0``, upper when ``d_i < 0``), and every
``a_i`` here is boxed (finite lower and upper bounds), so that can always be
arranged by moving non-basic variables from bound to bound.  The optimal
basis of one replicate is therefore dual feasible for every other one; only
the basic values ``x_B = B^-1 (0 - N x_N)`` move with the bounds and may
break them, which is what the dual simplex repairs, in a few pivots when
the replicates are close to one another (about 7 on a 9,320 x 8 design,
against about 35 from scratch).  Rescaling a replicate's
bounds by a positive factor (``w / max w``, as the reference does) scales
``x`` and leaves ``B``, ``pi`` and ``d`` unchanged, so that rescaling costs
the hot start nothing.

`refit_quantreg_batch()` keeps one HiGHS model (`highspy`) for all
replicates: the response is scaled by ``max |y|`` and each design column by
its largest ``|x|`` once for the whole batch (so the costs and the matrix never
change) and each replicate's weights by their maximum, as the reference
scales them.  The first replicate is solved cold (dual simplex); every other
one is solved by the dual simplex from the first one's optimal basis, with
nothing else kept from the solves in between, so a replicate's estimate
depends on its own weights and that basis only: not on the order of the
replicates, on how they are batched, or on a failed solve before it.
(Starting from the previous replicate's basis instead is as fast, within
the measurement's noise, but makes the last bits of every estimate depend on
the order; see `refit_quantreg_batch()`, Notes.)

A fit with a good start (the bootstrap's replicates start from the point
estimate; its refitted-representatives replicates from the same replicate's
fixed-points estimate) is solved on a band first (`_solve_near()`, Portnoy and Koenker's 1997
"globbing"): the rows whose residual at the start is far from zero keep its
sign at the optimum, so their ``a_i`` sit at their bounds and leave the
program as a constant right-hand side; only the band's ``a_i`` remain.  The
band's solution is the full program's when every row outside the band has
the residual sign it was fixed with and the duality gap closes (checked;
else the full program is solved).

Every solution is checked as the reference checks it: the model status must
be optimal and the check loss of the returned ``beta`` must equal the dual
objective within the reference's relative tolerance.  A replicate failing
either is solved again, from scratch, by
`solve_check_loss()`.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
from scipy.optimize import linprog
from statsmodels.tools.sm_exceptions import ConvergenceWarning

from ..domain.formula import user_stacklevel

__all__ = ["refit_quantreg_batch", "solve_check_loss", "check_loss"]

#: The duality-gap tolerance of `solve_check_loss()`:
#: ``|primal - dual| <= GAP_RTOL * max(|primal|, |dual|, GAP_FLOOR * y_scale * sum w)``.
GAP_RTOL = 1e-8
GAP_FLOOR = 1e-6

#: Safety factor on `numpy.linalg.matrix_rank()`'s tolerance in the cheap
#: full-rank certificate (`_full_rank()`).
_RANK_SAFETY = 10.0

#: Rows per chunk when accumulating the replicates' Gram matrices (bounds the
#: memory of the ``rows x p (p + 1) / 2`` products).
_GRAM_CHUNK_ELEMENTS = 1 << 22

_EPS = float(np.finfo(float).eps)



#: Rows kept in the band of `_solve_near()`: ``max(_BAND_MIN_PER_PARAM p,
#: _BAND_SQRT sqrt(p C))`` (Portnoy and Koenker's order ``sqrt(p n)``).
_BAND_MIN_PER_PARAM = 30
_BAND_SQRT = 3.0


def check_loss(resid: np.ndarray, w: np.ndarray, q: float) -> float:
    """``sum w rho_q(resid)``."""
    return float(np.sum(w * np.where(resid < 0, (q - 1.0) * resid, q * resid)))


def solve_check_loss(endog, exog, w, q) -> tuple[np.ndarray, int]:
    """Minimize ``sum w rho_q(y - X b)`` exactly (dual LP, HiGHS)."""
    pos = w > 0
    y, X, wp = endog[pos], exog[pos], w[pos]
    p = X.shape[1]
    # positive rescalings leave the minimizer equivariant and help the solver's tolerances
    y_scale = float(np.max(np.abs(y))) or 1.0
    x_scale = np.max(np.abs(X), axis=0)
    x_scale[x_scale == 0] = 1.0
    ws = wp / wp.max()
    res = linprog(
        -y / y_scale, A_eq=(X / x_scale).T, b_eq=np.zeros(p),
        bounds=np.column_stack([-(1.0 - q) * ws, q * ws]), method="highs",
    )
    if res.status != 0:
        raise RuntimeError(f"the quantile regression linear program failed: {res.message}")
    params = -np.asarray(res.eqlin.marginals) * y_scale / x_scale
    primal = check_loss(y - X @ params, wp, q)
    dual = float(-res.fun) * y_scale * wp.max()
    # relative to the objective, or to the data's scale when the fit interpolates every
    # cell (objective 0, e.g. a response whose released cells all share one bin)
    if abs(primal - dual) > 1e-8 * max(abs(primal), abs(dual), 1e-6 * y_scale * wp.sum()):
        warnings.warn(
            f"quantile regression LP: duality gap {primal - dual:.3g} (objective {primal:.6g}); "
            "the estimate may be inaccurate", ConvergenceWarning, stacklevel=user_stacklevel(),
        )
    return params, int(res.nit)


def _gap_ok(primal: float, dual: float, floor: float) -> bool:
    """The reference's duality-gap test (see `GAP_RTOL`)."""
    return (np.isfinite(primal) and np.isfinite(dual)
            and abs(primal - dual) <= GAP_RTOL * max(abs(primal), abs(dual), floor))


def _solve_near(X: np.ndarray, y: np.ndarray, w: np.ndarray, q: float,
                start: np.ndarray) -> np.ndarray | None:
    """The weighted ``q``-quantile regression of positive weights ``w``, solved
    on the band of rows whose residual at ``start`` is closest to zero; None
    when the band's solution is not verified optimal for all rows.

    Rows above the band are fixed at ``a_i = q w_i`` and rows below at
    ``a_i = -(1 - q) w_i`` (their residual signs at ``start``); the band's
    program is ``min -y_B'a_B`` subject to ``X_B'a_B = -X_F'a_F`` and the
    band's boxes.  Its solution ``beta`` is optimal for all rows when every
    fixed row's residual at ``beta`` has its sign (complementary slackness),
    which the duality-gap test of the full problem confirms.
    """
    import highspy

    C, p = X.shape
    m = int(max(_BAND_MIN_PER_PARAM * p, _BAND_SQRT * np.sqrt(p * C)))
    if m >= C or not np.all(np.isfinite(start)):
        return None
    r = y - X @ start
    band = np.zeros(C, bool)
    band[np.argpartition(np.abs(r), m)[:m]] = True
    a_fixed = np.where(r > 0, q * w, -(1.0 - q) * w)
    a_fixed[band] = 0.0
    y_scale = float(np.max(np.abs(y))) or 1.0
    x_scale = np.max(np.abs(X), axis=0)
    x_scale[x_scale == 0] = 1.0
    w_scale = float(w.max())
    Z = X / x_scale
    rhs = -(Z.T @ a_fixed) / w_scale
    wb = w[band] / w_scale
    h = _new_highs(highspy)
    if not _load_model(highspy, h, -y[band] / y_scale, Z[band], -(1.0 - q) * wb, q * wb, rhs):
        return None
    h.run()
    if h.getModelStatus() != highspy.HighsModelStatus.kOptimal:
        return None
    sol = h.getSolution()
    beta = -np.asarray(sol.row_dual) * y_scale / x_scale
    a = a_fixed.copy()
    a[band] = np.asarray(sol.col_value) * w_scale
    floor = GAP_FLOOR * float(np.abs(y).max()) * float(w.sum())
    if not _gap_ok(check_loss(y - X @ beta, w, q), float(y @ a), floor):
        return None
    return beta


def _full_rank(X: np.ndarray, pos: np.ndarray, x_scale: np.ndarray) -> np.ndarray:
    """Whether the rows ``X[pos[:, j]]`` have full column rank, for every ``j``.

    The answer is that of ``np.linalg.matrix_rank(X[pos[:, j]]) == p`` (the
    reference's test), obtained from one batched symmetric eigenvalue
    computation wherever it is certain, and from ``matrix_rank`` itself
    elsewhere.

    Parameters
    ----------
    X : ndarray, shape (C, p)
        Design.
    pos : ndarray of bool, shape (C, b)
        Rows with positive weight, per column.
    x_scale : ndarray, shape (p,)
        Positive column scales of ``X`` (largest ``|x|``, 1 for a zero column).

    Returns
    -------
    ndarray of bool, shape (b,)

    Notes
    -----
    ``matrix_rank`` calls ``X_p`` (the ``n`` positive-weight rows) of full
    rank when ``s_min > s_max max(n, p) eps`` (singular values).  With
    ``Z = X D^-1`` (``D = diag(x_scale)``), ``G = Z_p'Z_p`` is computed for
    every column at once as ``pos' [z_k z_l]`` (one matrix product over the
    rows' pairwise products) and its eigenvalues by one batched
    `numpy.linalg.eigvalsh()`.  Since ``X_p = Z_p D``,
    ``s_min(X_p) / s_max(X_p) >= sqrt(l_min / l_max) min(D) / max(D)``; the
    computed Gram and eigenvalues are within ``e = 2 (C + p) p eps trace(G)``
    (in spectral norm) of the exact ones, so ``sqrt((l_min - e) / (l_max + e))
    min(D) / max(D) > 10 max(C, p) eps`` certifies full rank.  The rest (the
    rank-deficient columns and the few ill-conditioned ones) go to
    ``matrix_rank``, so the semantics are exactly the reference's.
    """
    C, p = X.shape
    b = pos.shape[1]
    if b == 0 or p == 0:
        return np.ones(b, bool)
    Z = X / x_scale
    iu, ju = np.triu_indices(p)
    step = max(1, _GRAM_CHUNK_ELEMENTS // (iu.size + b))
    acc = np.zeros((b, iu.size))
    for r0 in range(0, C, step):
        Zc = Z[r0:r0 + step]
        acc += pos[r0:r0 + step].T.astype(float) @ (Zc[:, iu] * Zc[:, ju])
    G = np.empty((b, p, p))
    G[:, iu, ju] = acc
    G[:, ju, iu] = acc
    lam = np.linalg.eigvalsh(G)
    err = 2.0 * (C + p) * p * _EPS * np.trace(G, axis1=1, axis2=2)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.sqrt(np.maximum(lam[:, 0] - err, 0.0) / (lam[:, -1] + err))
    ratio = np.nan_to_num(ratio) * (x_scale.min() / x_scale.max())
    full = ratio > _RANK_SAFETY * max(C, p) * _EPS
    counts = pos.sum(axis=0)
    for j in np.flatnonzero(~full & (counts >= p)):
        full[j] = np.linalg.matrix_rank(X[pos[:, j]]) == p
    return full


def _load_model(highspy: Any, h: Any, cost: np.ndarray, Z: np.ndarray,
                lower: np.ndarray, upper: np.ndarray, rhs: np.ndarray | None = None) -> bool:
    """Pass the dual LP (costs ``cost``, matrix ``Z'``, bounds, ``Z'a = rhs``,
    default 0) to ``h``."""
    C, p = Z.shape
    lp = highspy.HighsLp()
    lp.num_col_ = C
    lp.num_row_ = p
    lp.col_cost_ = cost
    lp.col_lower_ = lower
    lp.col_upper_ = upper
    lp.row_lower_ = np.zeros(p) if rhs is None else rhs
    lp.row_upper_ = np.zeros(p) if rhs is None else rhs
    # column i of the constraint matrix X' is row i of the design: its non-zeros
    rows, cols = np.nonzero(Z)
    start = np.zeros(C + 1, dtype=np.int32)
    np.cumsum(np.bincount(rows, minlength=C), out=start[1:])
    lp.a_matrix_.format_ = highspy.MatrixFormat.kColwise
    lp.a_matrix_.num_col_ = C
    lp.a_matrix_.num_row_ = p
    lp.a_matrix_.start_ = start
    lp.a_matrix_.index_ = cols.astype(np.int32)
    lp.a_matrix_.value_ = Z[rows, cols]
    return h.passModel(lp) == highspy.HighsStatus.kOk


def _new_highs(highspy: Any) -> Any:
    """A silent HiGHS instance.

    ``highspy.Highs()`` installs its Python callbacks at construction, and
    that prints HiGHS's banner on stdout once per process, before any option
    can be set; the extension's own class (``highspy._Highs``, exported by the
    package) does not, and has every method used here.
    """
    cls = getattr(highspy, "_Highs", None) or highspy.Highs
    h = cls()
    h.setOptionValue("output_flag", False)
    # presolve only slows the one cold solve (measured 22 against 36 ms on 9,320 x 8);
    # the hot-started solves skip it anyway
    h.setOptionValue("presolve", "off")
    return h


def refit_quantreg_batch(
    X: np.ndarray,
    y: np.ndarray,
    W: np.ndarray,
    start: np.ndarray | None,
    q: float,
    *,
    stats: dict[str, Any] | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Exact weighted quantile regression of every column of ``W``, hot-started.

    The same contract and results as one cold scipy ``linprog`` per column
    (`solve_check_loss()`), from one HiGHS model whose
    dual simplex starts each column
    from the first solved column's optimal basis (see the module docstring).

    Parameters
    ----------
    X : ndarray, shape (C, p)
        Design, one row per cell.
    y : ndarray, shape (C,)
        Response.
    W : ndarray, shape (C, b)
        Non-negative weights, one column per fit (zeros allowed: a row of
        weight 0 is absent from that fit).
    start : ndarray or None
        A close start (the point estimate for replicates of the same
        release, or a replicate's own estimate on slightly moved points):
        every column is first solved on the band of rows nearest to it
        (`_solve_near()`, verified optimal for all rows); the columns it
        does not settle are solved in full, hot-started from the first of
        them's optimal basis.  None: all in full.
    q : float
        Quantile, strictly between 0 and 1.
    stats : dict, optional
        If given, filled with ``"solved"`` (columns solved by the batch
        model), ``"near"`` (single columns solved on a band around ``start``),
        ``"fallback"`` (columns re-solved by ``solve_check_loss``
        after a non-optimal status or a duality gap), ``"failed"`` (columns
        whose fallback failed too), ``"skipped"`` (columns without positive
        weight or of deficient rank) and ``"iterations"`` (simplex
        iterations of the batch model).

    Returns
    -------
    estimates : ndarray, shape (b, p)
        ``argmin_beta sum_i W[i, j] rho_q(y_i - X_i beta)`` in row ``j``;
        NaN where ``ok`` is False.
    ok : ndarray of bool, shape (b,)
        False for a column with no positive weight, whose positive-weight
        rows have rank below ``p``, or whose linear program failed.

    Raises
    ------
    ValueError
        If the shapes disagree or ``q`` is not in (0, 1).

    Notes
    -----
    The rank test is `numpy.linalg.matrix_rank()` on the positive-weight
    rows, as in the reference, but certified for most columns at once by a
    batched eigenvalue computation (`_full_rank()`).

    Every column after the first one the model solves starts from that
    column's optimal basis (``clearSolver`` then ``setBasis``), not from
    the previous column's.  On 100 bootstrap replicates of a 9,320 x 8
    design the two took about as many simplex iterations (first basis
    against previous basis, in total: 687 against 756 at q = 0.5, 605-1149
    against 657-914 over q in {0.1, 0.25, 0.5, 0.9} and two column orders)
    and the same time within noise (minimum of 20 runs: 5.75 against
    5.53 ms per column, rank test and cold first solve included, against
    about 44 ms for one ``linprog`` each), but only the first-basis start gives
    every column the same bits whatever the order of the columns or the
    size of the batch (100/100 columns bit-identical under a permutation,
    against 1/100 from the previous basis).  Until a column is solved and
    verified, every column starts cold.

    Where the optimum is not unique (a coefficient free over an interval),
    the returned minimizer may differ from the reference's; its check loss
    is the same (both pass the duality-gap test).

    Examples
    --------
    >>> import numpy as np
    >>> from dpmodels.models.quantreg_lp import refit_quantreg_batch
    >>> rng = np.random.default_rng(0)
    >>> X = np.column_stack([np.ones(200), rng.normal(size=200)])
    >>> y = X @ [1.0, 2.0] + rng.standard_t(3, size=200)
    >>> W = rng.poisson(1.0, size=(200, 3)).astype(float)
    >>> W[:, 2] = 0.0
    >>> est, ok = refit_quantreg_batch(X, y, W, None, 0.5)
    >>> ok.tolist()
    [True, True, False]
    >>> bool(np.isnan(est[2]).all())
    True
    """
    X = np.asarray(X, dtype=float)
    y = np.asarray(y, dtype=float).reshape(-1)
    W = np.asarray(W, dtype=float)
    if X.ndim != 2 or W.ndim != 2 or not (X.shape[0] == y.shape[0] == W.shape[0]):
        raise ValueError(
            f"X (C, p), y (C,) and W (C, b) must agree: got {X.shape}, {y.shape}, {W.shape}"
        )
    if not 0.0 < q < 1.0:
        raise ValueError(f"q must be strictly between 0 and 1, got {q}")
    C, p = X.shape
    b = W.shape[1]
    out = np.full((b, p), np.nan)
    ok = np.zeros(b, bool)
    counts = {"solved": 0, "near": 0, "fallback": 0, "failed": 0, "skipped": 0, "iterations": 0}
    if stats is not None:
        stats.clear()
        stats.update(counts)

    pos = W > 0
    x_scale = np.max(np.abs(X), axis=0) if C else np.ones(p)
    x_scale[x_scale == 0] = 1.0
    todo = np.asarray(pos.any(axis=0))  # W is 2-D (checked above): an array per column
    if b == 1 and todo[0]:  # one column: matrix_rank itself is cheaper than the batched test
        todo[0] = np.linalg.matrix_rank(X[pos[:, 0]]) == p
    elif todo.any():
        todo[todo] = _full_rank(X, pos[:, todo], x_scale)
    cols = np.flatnonzero(todo)
    counts["skipped"] = b - cols.size
    if start is not None and cols.size:  # from a close start: each column on its band first
        st = np.asarray(start, float).reshape(-1)
        left = []
        for j in cols:
            pj = pos[:, j]
            params = _solve_near(X[pj], y[pj], W[pj, j], q, st)
            if params is None:
                left.append(j)
                continue
            out[j], ok[j] = params, True
            counts["near"] += 1
        cols = np.asarray(left, dtype=np.int64)
    if cols.size == 0:
        if stats is not None:
            stats.update(counts)
        return out, ok

    import highspy

    y_scale = float(np.max(np.abs(y))) or 1.0
    Z = X / x_scale
    abs_y = np.abs(y)

    def bounds(w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        ws = w / w.max()
        return -(1.0 - q) * ws, q * ws

    h = _new_highs(highspy)
    lower, upper = bounds(W[:, cols[0]])
    loaded = _load_model(highspy, h, -y / y_scale, Z, lower, upper)
    optimal = highspy.HighsModelStatus.kOptimal
    basis0 = None  # the optimal basis of the first column the model solved

    for j in cols:
        w = W[:, j]
        pj = pos[:, j]
        params = None
        if loaded:
            lo, up = bounds(w)
            changed = np.flatnonzero((lo != lower) | (up != upper))
            if changed.size:
                h.changeColsBounds(changed.size, changed.astype(np.int32), lo[changed], up[changed])
            lower, upper = lo, up
            if basis0 is not None:
                # forget the previous column's solve entirely, then hot-start from basis0
                h.clearSolver()
                h.setBasis(basis0)
            h.run()
            counts["iterations"] += int(h.getInfo().simplex_iteration_count)
            if h.getModelStatus() == optimal:
                sol = h.getSolution()
                beta = -np.asarray(sol.row_dual) * y_scale / x_scale
                # y'a in the data's units (the model's a is scaled by 1 / max w)
                dual = float(np.dot(y, sol.col_value)) * float(w.max())
                primal = check_loss(y - X @ beta, w, q)
                floor = GAP_FLOOR * float(abs_y[pj].max()) * float(w.sum())
                if np.all(np.isfinite(beta)) and _gap_ok(primal, dual, floor):
                    params = beta
                    counts["solved"] += 1
                    if basis0 is None:
                        basis0 = h.getBasis()
            if basis0 is None:
                h.clearSolver()  # no hot start yet: the next column starts cold
        if params is None:
            counts["fallback"] += 1
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                try:
                    params, _ = solve_check_loss(y[pj], X[pj], w[pj], q)
                except RuntimeError:
                    counts["failed"] += 1
                    continue
        out[j], ok[j] = params, True
    if stats is not None:
        stats.update(counts)
    return out, ok
