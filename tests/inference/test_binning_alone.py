"""The binning check merges each continuous variable's bins alone, as well as
all of them at once.

The joint refit sums the variables' binning biases, and they can cancel in it:
on statsmodels' ``randhie`` (the benchmark's formula, epsilon = inf, 5 bins a
variable) merging every variable's bins moves ``disea`` by less than a tenth of
how far its estimate sits from the full-data fit, while merging the
response's bins alone moves it by most of that distance.  The default
interval now carries the largest of the joint and the single-variable moves.
"""

import warnings

import numpy as np
import statsmodels.formula.api as smf

import dpmodels as dpm
from dpmodels.core.errors import ReleaseWarning

from tests.support.benchmark_cases import load_benchmark

def _randhie_case():
    """The real-data benchmark's randhie case: (data, formula, bounds, levels)."""
    bench = load_benchmark("real_validity")
    case = bench.CASES["randhie_ols"]
    return bench.load_randhie(), case["formula"], case["bounds"], case["levels"]


def test_each_variables_binning_is_carried_where_the_joint_refit_cancels():
    df, formula, bounds, levels = _randhie_case()
    full = smf.ols(formula, df).fit().params
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ReleaseWarning)
        res = dpm.dp_ols(formula, df, epsilon=np.inf, bounds=bounds, levels=levels, bins=5,
                         representatives="sheppard", method="histogram").fit(
            random_state=2, n_boot=60)
    inf = res.dp_inference
    check = inf.binning
    i = list(res.params.index).index("disea")
    miss = res.params["disea"] - full["disea"]
    # epsilon = inf: the release is the exact binned table, so the estimate's distance from
    # the full-data fit is binning bias alone (about a quarter of the coefficient)
    assert abs(miss) > 0.2 * abs(full["disea"])
    # the joint refit does not see it ...
    assert abs(check.shift[i]) < 0.2 * abs(miss)
    # ... the response's bins merged alone do
    assert check.alone.shape == (len(check.variables), res.params.size)
    assert abs(check.alone[check.variables.index("mdvis"), i]) > 0.5 * abs(miss)
    # the interval carries, per coefficient, the largest of the joint and single-variable moves
    moves = np.vstack([check.shift, check.alone])
    np.testing.assert_allclose(np.abs(check.bias), np.nanmax(np.abs(moves), axis=0))
    assert check.bias[i] == check.alone[check.variables.index("mdvis"), i]
    # (the carried bias, the placement, the threshold's spurious rows if any)
    assert len(check.shifts) == 2 + (check.spurious is not None)
    spread2 = np.max([np.var(p.replicates, axis=0, ddof=1) + p.bias ** 2 for p in inf.parts],
                     axis=0) if inf.parts else inf.spread_se ** 2 + inf.bias ** 2
    # (+ the covariates' places in their bins, coefficient by coefficient)
    carried = spread2 + sum(v ** 2 for v in check.shifts) + check.diagonal
    # (then widened for the response's rounding to its 5 bins: dpmodels.inference.rounding)
    carried = np.diag(check.rounded(np.diag(carried), inf.params, np.ones(carried.size, bool)))
    np.testing.assert_allclose(inf.se ** 2, carried)
    lo, hi = res.conf_int().loc["disea"]
    assert lo < full["disea"] < hi
