"""The moments OLS's floor with the residual apart (`FLOOR_RESIDUAL_APART`, off by
default): the whole ``[x y]`` matrix raised to the floor attenuates the slopes of a
tight fit; floored apart, the slopes are those of the floored covariates' block."""

import numpy as np
import pytest

import dpmodels.models.moments_ols as mo


def _moments(n, C, mu):
    """Sums and second moments of n rows with mean mu and covariance C."""
    return n * mu, n * (C + np.outer(mu, mu))


# two covariates and a response with R-squared 0.999: residual variance 1e-3 * 2
C_TIGHT = np.array([[1.0, 0.3, 1.3],
                    [0.3, 1.0, 1.3],
                    [1.3, 1.3, 2.6 * (1 + 1e-3)]])
MU = np.array([0.1, -0.2, 0.05])


@pytest.fixture
def apart(monkeypatch):
    monkeypatch.setattr(mo, "FLOOR_RESIDUAL_APART", True)


def test_default_floors_the_whole_matrix_and_attenuates_a_tight_fit():
    assert mo.FLOOR_RESIDUAL_APART is False
    sums, second = _moments(1000.0, C_TIGHT, MU)
    floor = 0.2
    _, C = mo._scaled_cov(1000.0, sums, second, floor)
    lam = np.linalg.eigvalsh(C)
    assert lam.min() == pytest.approx(floor)
    slopes = np.linalg.solve(C[:2, :2], C[:2, 2])
    assert np.all(slopes < 0.95)  # 1 and 1 without the floor: the residual's floor takes >5%


def test_apart_keeps_the_slopes_of_the_floored_block(apart):
    sums, second = _moments(1000.0, C_TIGHT, MU)
    floor = 0.2  # below both covariates' eigenvalues (0.7, 1.3): the block is not raised
    mu, C = mo._scaled_cov(1000.0, sums, second, floor)
    np.testing.assert_allclose(mu, MU)
    np.testing.assert_allclose(np.linalg.solve(C[:2, :2], C[:2, 2]), [1.0, 1.0], rtol=1e-9)
    np.testing.assert_allclose(C[:2, :], C_TIGHT[:2, :], rtol=1e-9)
    # the residual variance (2.6e-3) is raised to the floor: positive definite
    resid = C[2, 2] - C[:2, 2] @ np.linalg.solve(C[:2, :2], C[:2, 2])
    assert resid == pytest.approx(floor)
    assert np.linalg.eigvalsh(C).min() > 0


def test_apart_raises_a_covariate_block_below_the_floor(apart):
    Cx = np.array([[1.0, 0.95, 1.95], [0.95, 1.0, 1.95], [1.95, 1.95, 3.9 * (1 + 1e-3)]])
    sums, second = _moments(500.0, Cx, MU)
    floor = 0.2  # the block's small eigenvalue, 0.05, is raised to it
    _, C = mo._scaled_cov(500.0, sums, second, floor)
    assert np.linalg.eigvalsh(C[:2, :2]).min() == pytest.approx(floor)
    lam, V = np.linalg.eigh(Cx[:2, :2])
    expected = (V / np.maximum(lam, floor)) @ V.T @ Cx[:2, 2]
    np.testing.assert_allclose(np.linalg.solve(C[:2, :2], C[:2, 2]), expected, rtol=1e-9)


def test_apart_leaves_a_loose_fit_to_the_whole_floor(apart, monkeypatch):
    loose = np.array([[1.0, 0.3, 0.5], [0.3, 1.0, 0.2], [0.5, 0.2, 2.0]])
    sums, second = _moments(1000.0, loose, MU)
    _, C_apart = mo._scaled_cov(1000.0, sums, second, 0.2)
    monkeypatch.setattr(mo, "FLOOR_RESIDUAL_APART", False)
    _, C_whole = mo._scaled_cov(1000.0, sums, second, 0.2)
    np.testing.assert_array_equal(C_apart, C_whole)


def test_apart_is_batched_per_replicate(apart):
    s1, m1 = _moments(1000.0, C_TIGHT, MU)
    loose = np.array([[1.0, 0.3, 0.5], [0.3, 1.0, 0.2], [0.5, 0.2, 2.0]])
    s2, m2 = _moments(1000.0, loose, MU)
    _, batch = mo._scaled_cov(np.array([1000.0, 1000.0]), np.stack([s1, s2]),
                              np.stack([m1, m2]), 0.2)
    for k, (s, m) in enumerate([(s1, m1), (s2, m2)]):
        np.testing.assert_allclose(batch[k], mo._scaled_cov(1000.0, s, m, 0.2)[1], rtol=1e-12)


def test_joint_keeps_the_whole_floor_for_the_bare_estimate(apart):
    sums, second = _moments(1000.0, C_TIGHT, MU)
    _, C = mo._scaled_cov(1000.0, sums, second, 0.2, joint=True)
    assert np.linalg.eigvalsh(C).min() == pytest.approx(0.2)
