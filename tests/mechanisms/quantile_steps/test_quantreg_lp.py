"""The hot-started batch quantile-regression solver
(:func:`dpmodels.models.quantreg_lp.refit_quantreg_batch`) against one scipy
``linprog`` per column (:func:`dpmodels.models.quantreg_lp.solve_check_loss`,
the reference): the same estimates where the optimum is unique, an objective
no worse everywhere, the reference's skips (no weight, deficient rank), the
fallback, and the independence of a column's result from the others."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from dpmodels.models import quantreg_lp
from dpmodels.models.quantreg_lp import (_full_rank, check_loss, refit_quantreg_batch,
                                         solve_check_loss)

C, P, B = 2000, 5, 30
#: Estimates are compared in the units the LP works in (coefficient k times
#: max|x_k| / max|y|): HiGHS's feasibility tolerances are 1e-7 there, and two
#: correct solves of a unique optimum agree to rounding (~1e-14), while a
#: wrong vertex is off by far more than 1e-6.
COEF_TOL = 1e-6
#: The duality-gap test both solvers pass certifies the objective to 1e-8
#: (relative); a non-optimal vertex is off by far more.
OBJ_RTOL = 1e-8


def refit_quantreg(X, y, W, start, q):
    """The reference: one cold scipy linprog per column (the solver the batch replaced)."""
    out = np.full((W.shape[1], X.shape[1]), np.nan)
    ok = np.zeros(W.shape[1], bool)
    for j in range(W.shape[1]):
        pos = W[:, j] > 0
        if not pos.any() or np.linalg.matrix_rank(X[pos]) < X.shape[1]:
            continue
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                out[j], _ = solve_check_loss(y[pos], X[pos], W[pos, j], q)
            except RuntimeError:
                continue
        ok[j] = True
    return out, ok


def _design(seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Intercept, a 0/1 factor column, two continuous covariates and a
    3-level ordinal one; continuous (all distinct) response."""
    rng = np.random.default_rng(seed)
    dummy = (rng.random(C) < 0.3).astype(float)
    x1 = rng.normal(size=C) * 10.0
    x2 = rng.gamma(2.0, 50.0, size=C)
    x3 = rng.integers(0, 3, size=C).astype(float)
    X = np.column_stack([np.ones(C), dummy, x1, x2, x3])
    y = X @ [100.0, -25.0, 3.0, 0.5, 7.0] + rng.standard_t(3, size=C) * (5.0 + 10.0 * dummy)
    assert np.unique(y).size == C
    return X, y


def _weights(seed: int = 1, integer: bool = False) -> np.ndarray:
    """Poisson(1) resampling counts (about 37% zeros), jittered to
    non-integer values unless ``integer`` (exact weight ties make the optimum
    non-unique; the jitter makes it unique almost surely)."""
    rng = np.random.default_rng(seed)
    W = rng.poisson(1.0, size=(C, B)).astype(float)
    if not integer:
        W *= rng.uniform(0.5, 1.5, size=W.shape)
    return W


def _reference(X, y, W, q):
    out = np.full((W.shape[1], X.shape[1]), np.nan)
    for j in range(W.shape[1]):
        w = W[:, j]
        pos = w > 0
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            out[j] = solve_check_loss(y[pos], X[pos], w[pos], q)[0]
    return out


def _objectives(X, y, W, est, q):
    return np.array([check_loss(y - X @ est[j], W[:, j], q) for j in range(W.shape[1])])


def _lp_units(X, y):
    """Coefficient k in the LP's units is beta_k * max|x_k| / max|y|."""
    return np.max(np.abs(X), axis=0) / np.max(np.abs(y))


@pytest.mark.parametrize("q", [0.25, 0.5, 0.9])
def test_matches_reference_and_skips(q):
    X, y = _design()
    W = _weights()
    zero, deficient = 7, 19
    W[:, zero] = 0.0
    W[X[:, 1] == 1.0, deficient] = 0.0  # the factor column is 0 on every weighted row
    stats = {}
    est, ok = refit_quantreg_batch(X, y, W, None, q, stats=stats)

    assert est.shape == (B, P) and ok.shape == (B,) and ok.dtype == bool
    expected_ok = np.ones(B, bool)
    expected_ok[[zero, deficient]] = False
    np.testing.assert_array_equal(ok, expected_ok)
    assert np.isnan(est[~ok]).all() and np.isfinite(est[ok]).all()
    # every solvable column was solved (and verified) by the hot-started model
    assert stats == {"solved": B - 2, "near": 0, "fallback": 0, "failed": 0, "skipped": 2,
                     "iterations": stats["iterations"]}

    cols = np.flatnonzero(ok)
    ref = _reference(X, y, W[:, cols], q)
    units = _lp_units(X, y)
    np.testing.assert_array_less(np.abs(est[cols] - ref) * units, COEF_TOL)
    obj_new = _objectives(X, y, W[:, cols], est[cols], q)
    obj_ref = _objectives(X, y, W[:, cols], ref, q)
    np.testing.assert_array_less(obj_new, obj_ref * (1 + OBJ_RTOL))


def test_same_contract_as_refit_quantreg_with_ties():
    """Integer weights (the optimum may be an interval): the same ok mask as
    refit_quantreg and an objective no worse for every column."""
    X, y = _design(2)
    W = _weights(3, integer=True)
    W[:, 4] = 0.0
    W[X[:, 4] != 1.0, 11] = 0.0  # only level 1 of x3: collinear with the intercept
    W[:, 12] = 0.0
    W[:3, 12] = 1.0  # fewer rows than columns
    est, ok = refit_quantreg_batch(X, y, W, None, 0.5)
    ref, ok_ref = refit_quantreg(X, y, W, None, 0.5)
    np.testing.assert_array_equal(ok, ok_ref)
    assert ok.sum() == B - 3
    np.testing.assert_array_equal(np.isnan(est), np.isnan(ref))
    obj_new = _objectives(X, y, W[:, ok], est[ok], 0.5)
    obj_ref = _objectives(X, y, W[:, ok], ref[ok], 0.5)
    np.testing.assert_array_less(obj_new, obj_ref * (1 + OBJ_RTOL))
    np.testing.assert_array_less(obj_ref, obj_new * (1 + OBJ_RTOL))


def test_column_result_independent_of_the_others():
    """Every column starts from the first column's basis and nothing else:
    reordering the other columns or solving a column alone with the first
    one gives the same bits."""
    X, y = _design()
    W = _weights()
    est, ok = refit_quantreg_batch(X, y, W, None, 0.5)
    order = np.r_[0, 1 + np.random.default_rng(5).permutation(B - 1)]
    est_perm, ok_perm = refit_quantreg_batch(X, y, W[:, order], None, 0.5)
    np.testing.assert_array_equal(ok_perm, ok[order])
    np.testing.assert_array_equal(est_perm, est[order])
    for j in (3, 17, B - 1):
        pair, _ = refit_quantreg_batch(X, y, W[:, [0, j]], None, 0.5)
        np.testing.assert_array_equal(pair[1], est[j])


def test_fallback_on_gap_and_on_failure(monkeypatch):
    X, y = _design()
    W = _weights()[:, :6]
    W[:, 2] = 0.0
    # every verification fails: every column is re-solved by the reference itself
    monkeypatch.setattr(quantreg_lp, "GAP_RTOL", -1.0)
    stats = {}
    est, ok = refit_quantreg_batch(X, y, W, None, 0.5, stats=stats)
    assert stats["solved"] == 0 and stats["fallback"] == 5 and stats["failed"] == 0
    assert stats["skipped"] == 1
    cols = np.flatnonzero(ok)
    np.testing.assert_array_equal(cols, [0, 1, 3, 4, 5])
    np.testing.assert_array_equal(est[cols], _reference(X, y, W[:, cols], 0.5))

    def broken(*args, **kwargs):
        raise RuntimeError("the quantile regression linear program failed")

    monkeypatch.setattr(quantreg_lp, "solve_check_loss", broken)
    est, ok = refit_quantreg_batch(X, y, W, None, 0.5, stats=stats)
    assert not ok.any() and np.isnan(est).all()
    assert stats["failed"] == 5


def test_nothing_to_solve():
    X, y = _design()
    est, ok = refit_quantreg_batch(X, y, np.zeros((C, 3)), None, 0.5)
    assert est.shape == (3, P) and np.isnan(est).all() and not ok.any()
    est, ok = refit_quantreg_batch(X, y, np.zeros((C, 0)), None, 0.5)
    assert est.shape == (0, P) and ok.shape == (0,)


def test_bad_inputs():
    X, y = _design()
    W = _weights()[:, :2]
    with pytest.raises(ValueError, match="q must be"):
        refit_quantreg_batch(X, y, W, None, 1.0)
    with pytest.raises(ValueError, match="must agree"):
        refit_quantreg_batch(X, y[:-1], W, None, 0.5)


@pytest.mark.parametrize("near", [1e-13, 1e-6, None])
def test_rank_certificate_agrees_with_matrix_rank(monkeypatch, near):
    """The batched certificate plus its matrix_rank fallback gives
    matrix_rank's answer: for a nearly collinear pair of columns that
    matrix_rank calls deficient (1e-13) or full (1e-6), which the certificate
    leaves to matrix_rank, and for well-conditioned, badly scaled columns,
    which it decides alone."""
    rng = np.random.default_rng(7)
    n, b = 400, 12
    x1 = rng.normal(size=n)
    cols = [np.ones(n), x1, 1e4 * rng.normal(size=n), (rng.random(n) < 0.1) * 1.0]
    if near is not None:
        cols.append(x1 + near * rng.normal(size=n))
    X = np.column_stack(cols)
    p = X.shape[1]
    pos = rng.random((n, b)) < 0.5
    pos[X[:, 3] == 1.0, 1] = False  # the dummy is 0 on every positive row
    pos[:, 2] = False
    pos[:3, 2] = True  # fewer rows than columns
    expected = np.array([np.linalg.matrix_rank(X[pos[:, j]]) == p for j in range(b)])

    calls = []
    matrix_rank = np.linalg.matrix_rank
    monkeypatch.setattr(np.linalg, "matrix_rank", lambda A, *a, **k: calls.append(1) or
                        matrix_rank(A, *a, **k))
    full = _full_rank(X, pos, np.max(np.abs(X), axis=0))
    np.testing.assert_array_equal(full, expected)
    assert not full[1] and not full[2]
    if near is None:
        assert full.sum() == b - 2
        assert len(calls) == 1  # only the dummy-less column (column 2 has too few rows)
    else:
        assert full.sum() == (b - 2 if near == 1e-6 else 0)
        assert len(calls) == b - 1  # undecided by the certificate


@pytest.mark.parametrize("q", [0.25, 0.5, 0.9])
def test_single_fit_on_a_band_around_a_close_start(q):
    """One column with a close start (the estimate on slightly moved rows, as
    the refitted-representatives replicates have) is solved on a band and
    gives the full program's optimum."""
    X, y = _design(3)
    w = _weights(4)[:, :1]
    start, _ = refit_quantreg_batch(X, y, w, None, q)
    rng = np.random.default_rng(5)
    X2 = X.copy()
    X2[:, 2:4] *= 1.0 + 0.01 * rng.standard_normal((C, 2))
    y2 = y + 0.5 * rng.standard_normal(C)
    stats = {}
    est, ok = refit_quantreg_batch(X2, y2, w, start[0], q, stats=stats)
    ref, ok_ref = _reference(X2, y2, w, q), True
    assert ok[0] and stats["near"] == 1
    scale = np.abs(X2).max(axis=0) / np.abs(y2).max()
    assert np.max(np.abs((est[0] - ref[0]) * scale)) < COEF_TOL


def test_band_rejects_a_far_start():
    """From a start far from the optimum the band's solution is not verified:
    _solve_near says None (never a wrong answer), and the batch solves in full."""
    from dpmodels.models.quantreg_lp import _solve_near

    X, y = _design(6)
    w = _weights(7)[:, 0]
    pos = w > 0
    far = np.array([0.0, 500.0, -40.0, 5.0, -60.0])
    assert _solve_near(X[pos], y[pos], w[pos], 0.5, far) is None
    stats = {}
    est, ok = refit_quantreg_batch(X, y, w[:, None], far, 0.5, stats=stats)
    ref = _reference(X, y, w[:, None], 0.5)
    assert ok[0] and stats["near"] == 0
    scale = np.abs(X).max(axis=0) / np.abs(y).max()
    assert np.max(np.abs((est[0] - ref[0]) * scale)) < COEF_TOL


def test_replicates_from_the_point_estimate_on_bands():
    """Bootstrap-like columns with the unweighted estimate as start: the
    columns the band settles equal the reference, the others are solved in full."""
    X, y = _design(8)
    W = _weights(9)
    start, _ = refit_quantreg_batch(X, y, np.ones((C, 1)), None, 0.5)
    stats = {}
    est, ok = refit_quantreg_batch(X, y, W, start[0], 0.5, stats=stats)
    ref = _reference(X, y, W, 0.5)
    assert ok.all() and stats["near"] > 0
    assert stats["near"] + stats["solved"] + stats["fallback"] == B
    scale = _lp_units(X, y)
    assert np.max(np.abs((est - ref) * scale)) < COEF_TOL
