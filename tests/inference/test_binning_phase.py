"""Quantile regression's binning check moves the response's points within
their bins.

A quantile of a binned response is a step function of the covariates.  On the
synthetic grid's median4 shape (n = 20,000, 7 bins a variable), where the
conditional medians of almost every covariate pattern fall in one response
bin, the median regression on the cells is flat: slopes near 0 against 1,
0.7 and -0.5, every bootstrap replicate as flat, and merging bins (the
Richardson refits) leaves it flat, so the intervals excluded the truth in
every data set.  The check now refits with the response's grid shifted by a
quarter, a half and three quarters of a bin and with its points spread over
the bin, and carries the largest move.  At epsilon = inf the release is the
exact binned table, so every error here is binning.
"""

import warnings

import numpy as np
import pandas as pd
import statsmodels.formula.api as smf

import dpmodels as dpm
from dpmodels.core.errors import NotPrivateWarning, ReleaseWarning

from tests.support.benchmark_cases import load_benchmark

SCENARIO = load_benchmark("validity").SCENARIOS["median4"]
DATA = SCENARIO["draw"](np.random.default_rng(0), 20_000)
SLOPES = ["C(d)[T.yes]", "x1", "x2"]


def _fit(fn, **fit_kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ReleaseWarning)
        warnings.simplefilter("ignore", NotPrivateWarning)
        model = fn(SCENARIO["formula"], DATA, epsilon=np.inf, bins=7, method="histogram",
                   **SCENARIO["kw"])
        return model.fit(random_state=0, **fit_kw)


def test_a_flat_binned_median_is_caught_by_moving_the_response_within_its_bins():
    res = _fit(dpm.dp_quantreg, q=0.5)
    full = smf.quantreg(SCENARIO["formula"], DATA).fit(q=0.5).params
    check = res.dp_inference.binning
    # the failure exists on this data: the binned median's slopes are under a
    # tenth of the full-data ones, and the merged-bin refits do not see it
    for name in SLOPES:
        assert abs(res.params[name]) < 0.1 * abs(full[name]), name
        i = list(res.params.index).index(name)
        assert abs(check.bias[i]) < 0.1 * abs(full[name] - res.params[name]), name
    # the moved refits see at least half of each slope's miss, with its sign ...
    phase = check.phase
    assert phase is not None
    for name in SLOPES:
        i = list(res.params.index).index(name)
        miss = full[name] - res.params[name]
        assert np.sign(phase[i]) == np.sign(miss) and abs(phase[i]) > 0.5 * abs(miss), name
    # ... carried as a shift: SE^2 = spread^2 + bias^2 + the shifts' squares (+ the
    # covariates' places in their bins, coefficient by coefficient)
    inf = res.dp_inference
    assert any(np.array_equal(s, phase) for s in check.shifts)
    spread2 = np.max([np.var(p.replicates, axis=0, ddof=1) + p.bias ** 2 for p in inf.parts],
                     axis=0) if inf.parts else inf.spread_se ** 2 + inf.bias ** 2
    np.testing.assert_allclose(inf.se ** 2, spread2 + sum(v ** 2 for v in check.shifts)
                               + check.diagonal)
    # and every interval holds the population coefficient (the scenario's truth; x3's
    # full-data estimate, 0.021, is its own sampling error away from 0)
    truth = pd.Series(SCENARIO["truth"]).reindex(res.params.index)
    ci = res.conf_int()
    assert ((ci[0] <= truth) & (truth <= ci[1])).all(), ci.assign(truth=truth)


def test_least_squares_skips_it():
    """A cell's mean is the same wherever its points sit in the bin, so the
    least-squares fit does not run the moved refits."""
    res = _fit(dpm.dp_ols)
    assert res.dp_inference.binning.phase is None
