"""Every mechanism at the ends of epsilon's range: it
either runs, or refuses before anything is read, charged or drawn, with its
limit in the message; never an OverflowError, ZeroDivisionError, a hang or
a MemoryError, and never after the charge.  Before: sample-and-aggregate at
1e308 (OverflowError), smoothed_sample at 1e300 (OverflowError), quantile
steps from 3e4 on (ZeroDivisionError / LinAlgError after charging), the
histogram above about 1e5 (its threshold sampler did not return) and at
1e308 (OverflowError), and at 1e-9 its bootstrap asked for 30 GiB."""

from __future__ import annotations

import sys
import warnings

import numpy as np
import pandas as pd
import pytest

import dpmodels as dpm
from dpmodels.core.errors import DPModelsError

BOUNDS = {"y": (0.0, 10.0), "x": (0.0, 10.0), "z": (0.0, 10.0), "w": (0.0, 10.0)}
LEVELS = {"yb": [0, 1], "g": ["a", "b", "c"]}


def _frame(n: int = 1_500) -> pd.DataFrame:
    rng = np.random.default_rng(9)
    x = rng.uniform(0, 10, n)
    return pd.DataFrame({"y": np.clip(1 + 0.5 * x + rng.normal(0, 1, n), 0, 10), "x": x,
                         "z": rng.uniform(0, 10, n), "w": rng.uniform(0, 10, n),
                         "yb": (rng.random(n) < 1 / (1 + np.exp(2 - 0.4 * x))).astype(int),
                         "g": rng.choice(["a", "b", "c"], n)})


FRAME = _frame()
KW = dict(bounds=BOUNDS, levels=LEVELS, random_state=1)
MECHANISMS = {
    "histogram": lambda e, a: dpm.dp_ols("y ~ x + C(g)", FRAME, epsilon=e, method="histogram",
                                         accountant=a, **KW).fit(n_boot=10, random_state=0),
    "moments": lambda e, a: dpm.dp_ols("y ~ x + z + w", FRAME, epsilon=e, method="moments",
                                       accountant=a, **KW).fit(),
    "newton": lambda e, a: dpm.dp_logit("yb ~ x + z + w", FRAME, epsilon=e, method="newton",
                                        accountant=a, **KW).fit(),
    "quantile-steps": lambda e, a: dpm.dp_quantreg("y ~ x + z + w", FRAME, epsilon=e,
                                                   method="newton", accountant=a, **KW).fit(),
    "sample-aggregate": lambda e, a: dpm.dp_ols("y ~ x + z", FRAME, epsilon=e,
                                                method="sample-aggregate", accountant=a,
                                                **KW).fit(),
    "smoothed_sample": lambda e, a: dpm.smoothed_sample(FRAME, columns=["y", "g"], size=50,
                                                        bins=4, epsilon=e, accountant=a, **KW),
    "select_features": lambda e, a: dpm.select_features(FRAME, "yb", ["x", "z", "g"], k=1,
                                                        epsilon=e, accountant=a, **KW),
    "local": lambda e, a: dpm.local.randomize(FRAME, columns=["y", "g"], bins=4, epsilon=e,
                                              accountant=a, **KW),
}
EPSILONS = [1e-12, 3e4, 1e17, 1e300, sys.float_info.max]


@pytest.mark.parametrize("epsilon", EPSILONS, ids=lambda e: f"{e:g}")
@pytest.mark.parametrize("name", list(MECHANISMS))
def test_runs_or_refuses_before_the_charge(name, epsilon):
    acct = dpm.Accountant(sys.float_info.max)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            MECHANISMS[name](epsilon, acct)
        except DPModelsError as exc:
            assert acct.spent == 0 and acct.ledger == (), (name, epsilon, exc)
            assert "epsilon" in str(exc)
            return
    assert acct.spent == epsilon  # it ran: charged once, the whole epsilon


def test_a_bootstrap_in_which_no_replicate_releases_a_cell():
    """At epsilon = 1e-12 the threshold is far above every simulated count:
    with this bootstrap seed none of the 10 replicates keeps a cell (found by
    CI with the OS's entropy: the refit was handed an empty design and raised
    a reshape ValueError).  Nothing can be fitted, so every standard error is
    infinite."""
    model = dpm.dp_ols("y ~ x + C(g)", FRAME, epsilon=1e-12, method="histogram", **KW)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = model.fit(n_boot=10, random_state=47)
    assert np.all(np.isinf(res.bse)) and np.all(res.pvalues == 1.0)
