"""The discrete Laplace sampler and its tail sampler against their exact laws
(PRIVACY.md, "How we check it": unit tests of the sampler).

Statistical checks and their false-failure rates
------------------------------------------------
* Chi-square goodness-of-fit checks reject at p < ALPHA = 1e-3 against the
  exact pmf (no estimated parameters; tails pooled so every expected count is
  >= 5).  For a correct sampler each such check fails for 0.1% of seeds; the
  seeds are fixed, so the outcome here is deterministic, and over the 15
  chi-square checks of this file at most 1.5% of seed choices would produce a
  false failure (union bound).
* Moment checks allow 5 standard errors computed from the exact law (exact
  variance and exact fourth moment), i.e. a two-sided false-failure rate of
  5.7e-7 each by the normal approximation (N = 200k).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from dpmodels.core.noise import (
    discrete_laplace,
    discrete_laplace_pmf,
    discrete_laplace_sf,
    discrete_laplace_tail,
    make_rng,
)

from tests.support.audit_tools import (
    ALPHA,
    chisquare_integers,
    conditional_probs,
    dl_central_moment,
    dl_pmf,
    dl_sf,
    folded_probs,
)

N_DRAWS = 200_000
EPSILONS = [0.1, 1.0, 3.0]


def _support_halfwidth(epsilon: float, n: int) -> int:
    # Beyond |z| = L the expected count n * q**L / (1 + q) is < 1e-3: those
    # tails are folded into the end categories anyway, this only bounds the
    # number of categories.
    return int(math.ceil((2.0 / epsilon) * math.log(1e3 * n))) + 1


# --------------------------------------------------------------------------
# exact pmf / sf
# --------------------------------------------------------------------------
@pytest.mark.parametrize("epsilon", [0.01, 0.1, 1.0, 3.0, 10.0])
def test_pmf_is_the_two_sided_geometric_law(epsilon):
    q = math.exp(-epsilon / 2)
    z = np.arange(-40, 41)
    expected = (1 - q) / (1 + q) * q ** np.abs(z)
    np.testing.assert_allclose(discrete_laplace_pmf(z, epsilon), expected, rtol=1e-12)
    # Symmetric, ratio of neighbours exp(-epsilon/2): scale 2/epsilon.
    p = discrete_laplace_pmf(np.arange(0, 10), epsilon)
    np.testing.assert_allclose(p[1:] / p[:-1], q, rtol=1e-12)
    # Sums to one (closed form of the tails beyond |z| = 40 added).
    tail = 2 * (1 - q) / (1 + q) * q**41 / (1 - q)
    assert math.isclose(discrete_laplace_pmf(z, epsilon).sum() + tail, 1.0, rel_tol=1e-12)


@pytest.mark.parametrize("epsilon", EPSILONS + [10.0])
def test_sf_equals_summed_pmf(epsilon):
    for k in range(-25, 40):
        lib, ref = discrete_laplace_sf(k, epsilon), dl_sf(k, epsilon)
        assert math.isclose(lib, ref, rel_tol=1e-10, abs_tol=1e-15), (k, lib, ref)
    # P(Z >= k) + P(Z <= k - 1) = 1 and symmetry P(Z >= k) = P(Z <= -k).
    for k in range(-5, 6):
        assert math.isclose(
            discrete_laplace_sf(k, epsilon) + discrete_laplace_sf(1 - k, epsilon), 1.0, rel_tol=1e-12
        )


# --------------------------------------------------------------------------
# the sampler
# --------------------------------------------------------------------------
def test_sampler_shape_dtype_and_reproducibility():
    a = discrete_laplace(np.random.default_rng(1), 1.0, 1000)
    b = discrete_laplace(np.random.default_rng(1), 1.0, 1000)
    assert a.shape == (1000,) and a.dtype == np.int64
    np.testing.assert_array_equal(a, b)
    assert discrete_laplace(np.random.default_rng(1), 1.0, 0).shape == (0,)


@pytest.mark.parametrize("epsilon", EPSILONS)
def test_sampler_chisquare_against_exact_pmf(epsilon):
    rng = np.random.default_rng(20240601 + int(epsilon * 1000))
    z = discrete_laplace(rng, epsilon, N_DRAWS)
    L = _support_halfwidth(epsilon, N_DRAWS)
    # Expected probabilities from the library's pmf on the interior, tails
    # folded into the end points with the summed-pmf tail probabilities.
    probs = discrete_laplace_pmf(np.arange(-L, L + 1), epsilon)
    probs[0] = dl_sf(L, epsilon)
    probs[-1] = dl_sf(L, epsilon)
    np.testing.assert_allclose(probs, folded_probs(-L, L, epsilon), rtol=1e-10)
    res = chisquare_integers(z, -L, probs)
    assert res.dof >= 8, res  # the test has resolution (eps=3 still has ~9 groups)
    assert res.pvalue > ALPHA, f"epsilon={epsilon}: {res}"


@pytest.mark.parametrize("epsilon", EPSILONS)
def test_sampler_mean_and_variance(epsilon):
    rng = np.random.default_rng(7_000 + int(epsilon * 1000))
    z = discrete_laplace(rng, epsilon, N_DRAWS).astype(np.float64)
    n = z.size
    q = math.exp(-epsilon / 2)
    var = 2 * q / (1 - q) ** 2
    # The closed form agrees with the moment summed from the pmf.
    assert math.isclose(var, dl_central_moment(2, epsilon), rel_tol=1e-9)
    mu4 = dl_central_moment(4, epsilon)
    # Mean: standard error sqrt(var / n) (exact variance).
    se_mean = math.sqrt(var / n)
    assert abs(z.mean()) <= 5 * se_mean, (z.mean(), se_mean)
    # Sample variance (divisor n-1): exact Var(s^2) = mu4/n - var^2 (n-3)/(n(n-1)).
    se_var = math.sqrt(mu4 / n - var**2 * (n - 3) / (n * (n - 1)))
    s2 = z.var(ddof=1)
    assert abs(s2 - var) <= 5 * se_var, (s2, var, se_var)


# --------------------------------------------------------------------------
# the tail sampler
# --------------------------------------------------------------------------
@pytest.mark.parametrize("epsilon", [0.3, 1.0, 3.0])
@pytest.mark.parametrize("k", [0, 3, 7, -2])
def test_tail_sampler_chisquare_against_conditional_pmf(epsilon, k):
    rng = np.random.default_rng(31_337 + 100 * k + int(epsilon * 10))
    z = discrete_laplace_tail(rng, epsilon, k, N_DRAWS)
    assert z.dtype == np.int64 and z.shape == (N_DRAWS,)
    assert z.min() >= k
    hi = k + _support_halfwidth(epsilon, N_DRAWS) + 2
    probs = conditional_probs(k, hi, epsilon)
    res = chisquare_integers(z, k, probs)
    assert res.dof >= 5, res
    assert res.pvalue > ALPHA, f"epsilon={epsilon}, k={k}: {res}"
    # And the exact conditional law is pmf(z) / P(Z >= k) with the library's own functions.
    zz = np.arange(k, k + 5)
    np.testing.assert_allclose(
        probs[:5], discrete_laplace_pmf(zz, epsilon) / discrete_laplace_sf(k, epsilon), rtol=1e-10
    )


@pytest.mark.parametrize("k", [-3, 0, 5])
def test_tail_sampler_edge_sizes(k):
    rng = np.random.default_rng(5)
    out = discrete_laplace_tail(rng, 1.0, k, 0)
    assert out.shape == (0,) and out.dtype == np.int64
    out = discrete_laplace_tail(rng, 1.0, k, 1)
    assert out.shape == (1,) and out.dtype == np.int64 and out[0] >= k


# --------------------------------------------------------------------------
# randomness source (rule 7)
# --------------------------------------------------------------------------
def test_make_rng():
    g = np.random.default_rng(3)
    assert make_rng(g) is g
    a = make_rng(123).integers(0, 2**62, size=4)
    b = make_rng(123).integers(0, 2**62, size=4)
    np.testing.assert_array_equal(a, b)
    # Unseeded generators come from fresh OS entropy: two of them differ
    # (a coincidence of four 62-bit draws has probability ~2**-248).
    u = make_rng(None).integers(0, 2**62, size=4)
    v = make_rng(None).integers(0, 2**62, size=4)
    assert isinstance(make_rng(None), np.random.Generator)
    assert not np.array_equal(u, v)
    for bad in (True, 1.5, "7", np.random.RandomState(0)):
        with pytest.raises(TypeError):
            make_rng(bad)


def test_pmf_helper_matches_library():
    # The independent reference used throughout the tests equals the library's pmf.
    z = np.arange(-30, 31)
    for eps in EPSILONS:
        np.testing.assert_allclose(dl_pmf(z, eps), discrete_laplace_pmf(z, eps), rtol=1e-12)
