"""dp_ols' ``method="auto"`` does not cut a continuous covariate into fewer than
3 bins: where ``bins="auto"`` would (small n * epsilon, several continuous
variables beside a factor), it takes the moments, which keep the covariate
whole (`dpmodels.front.methods.coarse_covariates`).

With 2 bins the histogram's fit flags the covariate's own coefficient, but the
columns correlated with it take over its effect with finite intervals: on
statsmodels' grunfeld (n = 220, epsilon 3) every firm's interval was shifted by
the log-value effect (benchmarks/results/power.md, worst per-firm coverage 20%).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import dpmodels as dpm
from dpmodels.domain.axes import auto_bins
from dpmodels.front.methods import MIN_COVARIATE_BINS, choose_ols_method, coarse_covariates

FORMULA = "np.log(invest) ~ np.log(value) + np.log(capital) + C(firm)"
BOUNDS = {"invest": (0.1, 10000.0), "value": (1.0, 50000.0), "capital": (0.1, 20000.0)}


@pytest.fixture(scope="module")
def grunfeld():
    from statsmodels.datasets import grunfeld

    df = grunfeld.load_pandas().data
    out = df[["invest", "value", "capital"]].astype(float).copy()
    out["firm"] = df["firm"].astype(str).to_numpy(dtype=object)
    return out, {"firm": sorted(out["firm"].unique())}


def test_grunfeld_at_its_own_n_takes_the_moments(grunfeld):
    df, levels = grunfeld
    assert auto_bins(len(df), 3.0, 3, len(levels["firm"])) < MIN_COVARIATE_BINS
    model = dpm.dp_ols(FORMULA, df, epsilon=3.0, bounds=BOUNDS, levels=levels, random_state=0)
    assert isinstance(model.release, dpm.PrivateMoments)
    # the histogram stays one word away, and is what it was
    hist = dpm.dp_ols(FORMULA, df, epsilon=3.0, bounds=BOUNDS, levels=levels,
                      method="histogram", random_state=0)
    assert isinstance(hist.release, dpm.PrivateHistogram)


def test_the_choice_reads_the_public_n_not_the_rows(grunfeld):
    df, levels = grunfeld
    # the same 220 rows declared as a sample of a million: bins="auto" is fine there
    assert auto_bins(1_000_000, 3.0, 3, len(levels["firm"])) >= MIN_COVARIATE_BINS
    assert choose_ols_method("auto", FORMULA, df, bounds=BOUNDS, levels=levels, n=1_000_000,
                             epsilon=3.0, namespace={"np": np}) == "histogram"
    assert choose_ols_method("auto", FORMULA, df, bounds=BOUNDS, levels=levels, n=220,
                             epsilon=3.0, namespace={"np": np}) == "moments"
    # values do not enter: the same frame with every value replaced chooses the same
    other = df.assign(invest=1.0, value=2.0, capital=3.0)
    assert choose_ols_method("auto", FORMULA, other, bounds=BOUNDS, levels=levels,
                             epsilon=3.0, namespace={"np": np}) == "moments"


def test_coarse_covariates_names_the_covariates_not_the_response():
    df = pd.DataFrame({"y": [0.0], "a": [0.0], "b": [0.0], "g": ["u"]})
    b = {"y": (0, 1), "a": (0, 1), "b": (0, 1)}
    lv = {"g": list("uvwxyz")}
    k = auto_bins(300, 1.0, 3, 6)
    assert k < MIN_COVARIATE_BINS
    assert coarse_covariates("y ~ a + b + C(g)", df, bounds=b, levels=lv, n=300, epsilon=1.0,
                             namespace={}) == ("a", "b")
    # only the response continuous: nothing to cut, the histogram stays
    assert coarse_covariates("y ~ C(g)", df, bounds=b, levels=lv, n=300, epsilon=1.0,
                             namespace={}) == ()
    assert choose_ols_method("auto", "y ~ C(g)", df, bounds=b, levels={"g": list("uvwxyzst")},
                             n=300, epsilon=1.0, namespace={}) == "histogram"
    # unknown epsilon (inf without plan_epsilon): no preference, as the logit's rule
    assert coarse_covariates("y ~ a + b + C(g)", df, bounds=b, levels=lv, n=300,
                             epsilon=np.inf, namespace={}) == ()


def test_bins_given_by_the_caller_keep_the_histogram():
    n = 1000
    df = pd.DataFrame({"y": np.linspace(0, 1, n), "a": np.linspace(0, 1, n),
                       "g": np.tile(list("abcdefghij"), n // 10)})
    b = {"y": (0, 1), "a": (0, 1)}
    lv = {"g": list("abcdefghij")}
    assert auto_bins(n, 0.3, 2, 10) < MIN_COVARIATE_BINS
    assert choose_ols_method("auto", "y ~ a + C(g)", df, bounds=b, levels=lv, epsilon=0.3,
                             namespace={}) == "moments"
    assert choose_ols_method("auto", "y ~ a + C(g)", df, bounds=b, levels=lv, epsilon=0.3,
                             bins=3, namespace={}) == "histogram"
