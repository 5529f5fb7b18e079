"""Budget splits add up, in exact arithmetic: the parts a mechanism reports, as the
rationals the floats are, sum
to at most the caller's epsilon, and to within a few ulps of it."""

from __future__ import annotations

import math
import warnings
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest

import dpmodels as dpm
from dpmodels.core.budget import exact_parts, parts_fit, split_epsilon


def _exact_sum(parts) -> Fraction:
    return sum((Fraction(float(p)) for p in parts), Fraction(0))


def test_exact_parts_over_many_epsilons():
    rng = np.random.default_rng(2025)
    epsilons = np.concatenate([10 ** rng.uniform(-3, 3, 10_000), [3.0, 1.0, 0.3, 0.1]])
    overshoot_before = 0
    for eps in epsilons:
        eps = float(eps)
        s, r = eps * 0.1, eps * 0.05
        naive = [s, r] + [(eps - s - r) * w for w in (0.1, 0.1, 0.2, 0.6)]
        overshoot_before += not parts_fit(eps, naive)
        parts = exact_parts(eps, naive)
        total = _exact_sum(parts)
        assert total <= Fraction(eps)
        # within a few ulps: nothing is wasted
        assert Fraction(eps) - total <= 8 * Fraction(math.ulp(eps))
        assert all(abs(a - b) <= 4 * math.ulp(b) for a, b in zip(parts, naive))
    assert overshoot_before > 1_000  # the float split does overshoot: the check can fail


def test_split_epsilon_takes_the_remainder_last():
    parts = split_epsilon(3.0, [0.1, 0.05, None])
    assert parts_fit(3.0, parts) and parts[:2] == [3.0 * 0.1, 3.0 * 0.05]
    with pytest.raises(ValueError):
        exact_parts(math.inf, [1.0])


@pytest.fixture(scope="module")
def frame() -> pd.DataFrame:
    rng = np.random.default_rng(3)
    n = 2_000
    x, z = rng.uniform(0, 10, n), rng.uniform(0, 10, n)
    return pd.DataFrame({"x": x, "z": z, "y": 1 + 0.5 * x + rng.normal(0, 1, n),
                         "yb": (rng.random(n) < 1 / (1 + np.exp(2 - 0.4 * x))).astype(int),
                         "g": rng.choice(["a", "b"], n)})


BOUNDS = {"x": (0.0, 10.0), "z": (0.0, 10.0), "y": (-5.0, 15.0)}
LEVELS = {"yb": [0, 1], "g": ["a", "b"]}
RELEASES = {
    "moments": lambda df, e: dpm.dp_ols("y ~ x + z", df, epsilon=e, bounds=BOUNDS,
                                        method="moments", random_state=1).release.report,
    "newton": lambda df, e: dpm.dp_logit("yb ~ x + z", df, epsilon=e, bounds=BOUNDS,
                                         levels=LEVELS, method="newton",
                                         random_state=1).release.report,
    "quantile-steps": lambda df, e: dpm.dp_quantreg("y ~ x + z + C(g)", df, epsilon=e,
                                                    bounds=BOUNDS, levels=LEVELS,
                                                    method="newton",
                                                    random_state=1).release.report,
    "sample-aggregate": lambda df, e: dpm.dp_ols("y ~ x", df, epsilon=e, bounds=BOUNDS,
                                                 method="sample-aggregate",
                                                 param_bounds=(-20, 20),
                                                 random_state=1).release.report,
    "projected": lambda df, e: dpm.dp_logit("yb ~ x + z", df, epsilon=e, bounds=BOUNDS,
                                            levels=LEVELS, select=1, random_state=1).privacy,
}


@pytest.mark.parametrize("name", list(RELEASES))
@pytest.mark.parametrize("epsilon", [3.0, 0.7, 1.9])
def test_every_release_reports_parts_that_add_up_exactly(frame, name, epsilon):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        report = RELEASES[name](frame, epsilon)
    parts = [e for _, e in report.split]
    assert parts, "the report lists its parts"
    assert _exact_sum(parts) <= Fraction(epsilon), (name, epsilon, report.split)
    assert Fraction(epsilon) - _exact_sum(parts) <= Fraction(epsilon) * Fraction(1, 10**9)
