"""The binning check merges each continuous variable's bins alone, as well as
all of them at once (issue 26, "Honest answers on real analyses").

The joint refit sums the variables' binning biases, and they can cancel in it:
on statsmodels' ``randhie`` (the benchmark's formula, epsilon = inf, 5 bins a
variable) merging every variable's bins moves ``disea`` by less than a tenth of
how far its estimate sits from the full-data fit, while merging the
response's bins alone moves it by most of that distance.  The default
interval now carries the largest of the joint and the single-variable moves.
"""

import warnings

import numpy as np
import pandas as pd
import statsmodels.formula.api as smf

import dpmodels as dpm
from dpmodels.errors import ReleaseWarning

FORMULA = ("np.log1p(mdvis) ~ lncoins + C(idp) + lpi + fmde + physlm + disea"
           " + C(health) + lncoins:physlm")
BOUNDS = {"mdvis": (0.0, 100.0), "lncoins": (0.0, np.log(101.0)), "lpi": (0.0, 8.0),
          "fmde": (0.0, 8.3), "physlm": (0.0, 1.0), "disea": (0.0, 100.0)}
LEVELS = {"idp": [0, 1], "health": ["excellent", "good", "fair", "poor"]}


def _randhie() -> pd.DataFrame:
    from statsmodels.datasets import randhie

    df = randhie.load_pandas().data
    out = df[["mdvis", "lncoins", "lpi", "fmde", "physlm", "disea"]].astype(float).copy()
    out["idp"] = df["idp"].astype(np.int64)
    health = np.full(len(df), "excellent", dtype=object)
    for col, lab in (("hlthg", "good"), ("hlthf", "fair"), ("hlthp", "poor")):
        health[df[col].to_numpy() == 1] = lab
    out["health"] = health
    return out


def test_each_variables_binning_is_a_shift_where_the_joint_refit_cancels():
    df = _randhie()
    full = smf.ols(FORMULA, df).fit().params
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ReleaseWarning)
        res = dpm.dp_ols(FORMULA, df, epsilon=np.inf, bounds=BOUNDS, levels=LEVELS, bins=5,
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
    np.testing.assert_allclose(inf.se ** 2, spread2 + sum(v ** 2 for v in check.shifts))
    lo, hi = res.conf_int().loc["disea"]
    assert lo < full["disea"] < hi
