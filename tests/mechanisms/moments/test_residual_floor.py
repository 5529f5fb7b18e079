"""The moments OLS floors the residual apart where the fit is tight
(`floors_apart()`): the whole ``[x y]`` matrix raised to the noise floor
attenuates the slopes when R-squared is near 1; the covariates' block and the
residual raised apart keep them.  A response the noise swamped keeps the whole
floor."""

import math

import numpy as np
import pandas as pd
import pytest

import dpmodels as dpm
import dpmodels.mechanisms.moments.model as mo


def _moments(n, C, mu):
    """Sums and second moments of n rows with mean mu and covariance C."""
    return n * mu, n * (C + np.outer(mu, mu))


# two covariates and a response with R-squared 0.999
C_TIGHT = np.array([[1.0, 0.3, 1.3],
                    [0.3, 1.0, 1.3],
                    [1.3, 1.3, 2.6 * (1 + 1e-3)]])
C_LOOSE = np.array([[1.0, 0.3, 0.5], [0.3, 1.0, 0.2], [0.5, 0.2, 2.0]])
MU = np.array([0.1, -0.2, 0.05])
FLOOR = 0.2


def test_the_whole_floor_attenuates_a_tight_fit():
    sums, second = _moments(1000.0, C_TIGHT, MU)
    _, C = mo._scaled_cov(1000.0, sums, second, FLOOR)
    assert np.linalg.eigvalsh(C).min() == pytest.approx(FLOOR)
    slopes = np.linalg.solve(C[:2, :2], C[:2, 2])
    assert np.all(slopes < 0.95)  # 1 and 1 without the floor


def test_apart_keeps_the_slopes_of_the_floored_block():
    sums, second = _moments(1000.0, C_TIGHT, MU)
    mu, C = mo._scaled_cov(1000.0, sums, second, FLOOR, apart=True)
    np.testing.assert_allclose(mu, MU)
    np.testing.assert_allclose(np.linalg.solve(C[:2, :2], C[:2, 2]), [1.0, 1.0], rtol=1e-9)
    np.testing.assert_allclose(C[:2, :], C_TIGHT[:2, :], rtol=1e-9)
    resid = C[2, 2] - C[:2, 2] @ np.linalg.solve(C[:2, :2], C[:2, 2])
    assert resid == pytest.approx(FLOOR)  # 2.6e-3 raised to the floor
    assert np.linalg.eigvalsh(C).min() > 0


def test_apart_raises_a_covariate_block_below_the_floor():
    Cx = np.array([[1.0, 0.95, 1.95], [0.95, 1.0, 1.95], [1.95, 1.95, 3.9 * (1 + 1e-3)]])
    sums, second = _moments(500.0, Cx, MU)
    _, C = mo._scaled_cov(500.0, sums, second, FLOOR, apart=True)
    assert np.linalg.eigvalsh(C[:2, :2]).min() == pytest.approx(FLOOR)  # 0.05 raised
    lam, V = np.linalg.eigh(Cx[:2, :2])
    expected = (V / np.maximum(lam, FLOOR)) @ V.T @ Cx[:2, 2]
    np.testing.assert_allclose(np.linalg.solve(C[:2, :2], C[:2, 2]), expected, rtol=1e-9)


def test_which_releases_floor_apart():
    sd = FLOOR / (2 * math.sqrt(3) * mo.FLOOR_FACTOR)  # a second moment's noise SD over N
    assert mo.FLOOR_RESIDUAL_APART is True
    assert mo.floors_apart(C_TIGHT, FLOOR)
    assert not mo.floors_apart(C_LOOSE, FLOOR)  # residual 1.7: the whole floor does not bind
    # a response whose released variance is within RESPONSE_SDS noise SDs of 0: swamped
    swamped = C_TIGHT * (mo.RESPONSE_SDS * sd * 0.9 / C_TIGHT[2, 2])
    assert not mo.floors_apart(swamped, FLOOR)
    assert mo.floors_apart(C_TIGHT * (mo.RESPONSE_SDS * sd * 1.1 / C_TIGHT[2, 2]), FLOOR)
    np.testing.assert_array_equal(mo.floors_apart(np.stack([C_TIGHT, C_LOOSE, swamped]), FLOOR),
                                  [True, False, False])


def test_the_switch_turns_it_off(monkeypatch):
    monkeypatch.setattr(mo, "FLOOR_RESIDUAL_APART", False)
    assert not mo.floors_apart(C_TIGHT, FLOOR)


def test_apart_is_batched():
    s1, m1 = _moments(1000.0, C_TIGHT, MU)
    s2, m2 = _moments(1000.0, C_LOOSE, MU)
    _, batch = mo._scaled_cov(np.array([1000.0, 1000.0]), np.stack([s1, s2]),
                              np.stack([m1, m2]), FLOOR, apart=True)
    for k, (s, m) in enumerate([(s1, m1), (s2, m2)]):
        np.testing.assert_allclose(batch[k], mo._scaled_cov(1000.0, s, m, FLOOR, apart=True)[1],
                                   rtol=1e-12)


def test_on_exact_moments_the_apart_estimate_is_least_squares():
    """An epsilon = inf release's exact moments, estimated with a floor of 0.2:
    the whole floor attenuates a tight regression's slopes, floored apart they
    are statsmodels' (the floor does not bind on these covariates)."""
    rng = np.random.default_rng(5)
    n = 4000
    df = pd.DataFrame({"x1": rng.uniform(0, 10, n), "x2": rng.uniform(0, 10, n)})
    df["y"] = 1 + 2 * df.x1 - df.x2 + rng.normal(0, 0.1, n)
    with pytest.warns(dpm.NotPrivateWarning):
        model = dpm.dp_ols("y ~ x1 + x2", df, epsilon=float("inf"), method="moments",
                           bounds={"x1": (0, 10), "x2": (0, 10), "y": (-15, 25)})
    rel = model.release
    import statsmodels.formula.api as smf

    exact = smf.ols("y ~ x1 + x2", df).fit().params.to_numpy()
    mu = rel.sums / rel.count
    C = rel.second / rel.count - np.outer(mu, mu)
    assert mo.floors_apart((C + C.T) / 2, FLOOR)
    apart = mo.estimate(rel, rel.count, rel.sums, rel.second, FLOOR, apart=True)
    whole = mo.estimate(rel, rel.count, rel.sums, rel.second, FLOOR)
    np.testing.assert_allclose(apart, exact, rtol=1e-6)
    assert abs(whole[1] - 2) > 0.05 and abs(whole[2] + 1) > 0.05  # attenuated
