"""Where inside its bins a binned covariate's rows sit (``BinningCheck.position``).

The histogram counts rows in a bin, not where they are in it.  A covariate
whose density changes steeply across its coarse bins (randhie's ``disea``:
public bound 100, 90% of the rows in the first of 5 bins) gets a slope the
representatives cannot place, and the merged-bin refits do not see it.
"""

import math
import warnings

import numpy as np
import pandas as pd
import pytest
import statsmodels.formula.api as smf

import dpmodels as dpm
from dpmodels.inference.binning import position_range

N = 40_000
SLOPE = 0.3


def _data(x: np.ndarray, rng) -> pd.DataFrame:
    return pd.DataFrame({"x": x, "y": 1.0 + SLOPE * x + rng.normal(0.0, 1.0, x.size)})


def _fit(df: pd.DataFrame, upper: float):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # epsilon = inf: not private (the exact check)
        model = dpm.dp_ols("y ~ x", df, epsilon=math.inf, method="histogram",
                           bounds={"x": (0.0, upper), "y": (-4.0, float(df["y"].max()) + 2.0)},
                           bins={"x": 5, "y": 20}, random_state=1)
        return model.fit(random_state=2, n_boot=100)


def test_a_covariate_piled_into_its_first_bin_gets_an_interval_that_holds_its_slope():
    rng = np.random.default_rng(11)
    # disea's shape: a gamma with mean 11 and sd 5.6 under a public bound of 100
    df = _data(np.minimum(rng.gamma(4.0, 2.8, N), 100.0), rng)
    full = smf.ols("y ~ x", df).fit().params["x"]
    res = _fit(df, 100.0)
    check = res.dp_inference.binning
    i = list(res.params.index).index("x")
    # the failure exists: the exact binned table (epsilon = inf) attenuates the slope by
    # a fifth, further than the merged-bin refits, the placement and the spread reach
    # (1.96 times their root sum of squares falls short of the miss)
    miss = full - res.params["x"]
    assert miss > 0.15 * full
    others = (res.dp_inference.spread_se[i] ** 2 + res.dp_inference.bias[i] ** 2
              + sum(s[i] ** 2 for s in check.shifts))
    assert 1.96 * math.sqrt(others) < miss
    # the rows' places in the bins carry it: the interval holds the full-data slope
    assert check.position[i] > 0.5 * miss
    # (then scaled for the response's rounding to its bins, which only widens)
    assert res.bse["x"] ** 2 >= (others + check.diagonal[i]) * (1 - 1e-9)
    lo, hi = res.conf_int().loc["x"]
    assert lo < full < hi


def test_level_counts_leave_the_interval_alone():
    rng = np.random.default_rng(12)
    df = _data(rng.uniform(0.0, 50.0, N), rng)
    res = _fit(df, 50.0)
    check = res.dp_inference.binning
    i = list(res.params.index).index("x")
    # equal counts in every bin: every place the counts allow is the representatives'
    # own, give or take the counts' sampling wobble
    assert check.position[i] < 0.1 * res.bse["x"]


@pytest.mark.parametrize("counts, b, expect", [
    ([10.0, 10.0, 10.0, 10.0], 2, (2.5, 2.5)),  # level counts: the representatives' place
    ([0.0, 40.0, 5.0], 1, (1.0, 2.0)),  # an empty neighbour: the whole bin
    ([40.0, 0.0], 0, (0.0, 1.0)),  # at the edge, beside an empty bin
])
def test_position_range_cases(counts, b, expect):
    lo, hi = position_range(np.array(counts), b, b + 0.5)
    assert (lo, hi) == pytest.approx(expect)


def test_position_range_follows_the_exponential_through_the_counts():
    from scipy.integrate import quad

    # counts falling by e^-2 a bin on both sides: the density exp(-2 t) inside the bin
    c = np.array([np.exp(2.0), 1.0, np.exp(-2.0)])
    lo, hi = position_range(c, 1, 1.5)
    mean = quad(lambda t: t * np.exp(-2.0 * t), 0, 1)[0] / quad(lambda t: np.exp(-2.0 * t), 0, 1)[0]
    assert lo == pytest.approx(1.0 + mean, abs=1e-9)
    assert hi == 1.5  # the representatives' place, the other end
