"""Every default route of the four families on one small frame (one raw value of
x is a sentinel that must appear in nothing published): tests/models/
test_pickling.py and test_summary_header.py."""

from __future__ import annotations

import numpy as np
import pandas as pd

import dpmodels as dpm

N = 3000
SENTINEL = 7.123456789012345  # one raw value of x: it must not be in any pickle


def _frame(seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    df = pd.DataFrame({"x": rng.uniform(1, 10, N), "g": rng.choice(["a", "b", "c"], N)})
    df.loc[0, "x"] = SENTINEL
    df["y"] = (1 + 0.5 * df.x + (df.g == "b") + rng.normal(0, 1, N)).clip(-20, 20)
    df["t"] = (rng.random(N) < 1 / (1 + np.exp(-(df.x - 5) / 2))).astype(int)
    df["k"] = rng.integers(0, 3, N)
    return df


B = {"x": (1, 10), "y": (-20, 20)}
L = {"g": ["a", "b", "c"], "t": [0, 1], "k": [0, 1, 2]}
F = "y ~ np.log(x) + C(g)"
ROUTES = {
    "ols auto (moments)": lambda d: dpm.dp_ols(F, d, epsilon=1, bounds=B, levels=L),
    "ols histogram": lambda d: dpm.dp_ols(F, d, epsilon=1, bounds=B, levels=L,
                                          method="histogram"),
    "ols histogram, standardize": lambda d: dpm.dp_ols("y ~ standardize(x) + C(g)", d,
                                                       epsilon=1, bounds=B, levels=L),
    "ols sample-aggregate": lambda d: dpm.dp_ols(F, d, epsilon=1, bounds=B, levels=L,
                                                 method="sample-aggregate"),
    "logit newton": lambda d: dpm.dp_logit("t ~ np.log(x) + C(g)", d, epsilon=2, bounds=B,
                                           levels=L, method="newton"),
    "logit histogram": lambda d: dpm.dp_logit("t ~ np.log(x) + C(g)", d, epsilon=1,
                                              bounds=B, levels=L, method="histogram"),
    "quantreg auto (steps)": lambda d: dpm.dp_quantreg(F, d, epsilon=1, bounds=B, levels=L),
    "quantreg histogram": lambda d: dpm.dp_quantreg(F, d, epsilon=1, bounds=B, levels=L,
                                                    method="histogram"),
    "mnlogit histogram": lambda d: dpm.dp_mnlogit("k ~ np.log(x)", d, epsilon=1, bounds=B,
                                                  levels=L),
    "mnlogit sample-aggregate": lambda d: dpm.dp_mnlogit("k ~ np.log(x)", d, epsilon=1,
                                                         bounds=B, levels=L,
                                                         method="sample-aggregate"),
    "logit sample-aggregate": lambda d: dpm.dp_logit("t ~ np.log(x) + C(g)", d, epsilon=1,
                                                     bounds=B, levels=L,
                                                     method="sample-aggregate"),
    "ols local release": lambda d: dpm.dp_ols(
        "y ~ np.log(x) + C(g)", dpm.local.randomize(d, formula="y ~ np.log(x) + C(g)",
                                                    epsilon=4, bounds=B, levels=L, bins=4)),
}
#: Newton-type fits: the calibration's 1,000 replicates are not needed here
FIT = {"n_boot": 100}
