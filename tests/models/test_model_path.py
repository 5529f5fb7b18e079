"""One model path: a model is built on a release and spends
nothing; the release is made first, by the ``dp_*`` function or the model's
``from_formula``.  Constructing a model on raw rows is refused, naming the
two ways to release, before anything is read or spent."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import dpmodels as dpm
from dpmodels.core.errors import DPModelsTypeError
from dpmodels.mechanisms.moments.model import DPMomentsOLS
from dpmodels.mechanisms.newton.model import DPNewtonLogit
from dpmodels.mechanisms.quantile_steps.model import DPNewtonQuantReg
from dpmodels.models.projected import DPProjectedLogit
from dpmodels.mechanisms.sample_aggregate.model import DPSampleAggregate

N = 3000
B = {"x": (0, 10), "y": (-10, 30)}
L = {"g": ["a", "b"], "t": [0, 1]}


@pytest.fixture(scope="module")
def df():
    rng = np.random.default_rng(0)
    d = pd.DataFrame({"x": rng.uniform(0, 10, N), "g": rng.choice(["a", "b"], N)})
    d["y"] = 1 + 2 * d.x + (d.g == "b") + rng.normal(0, 1, N)
    d["t"] = (rng.random(N) < 1 / (1 + np.exp(-(d.x - 5)))).astype(int)
    return d


# (model class, constructor arguments before the data, from_formula keywords)
CASES = {
    "histogram": (dpm.DPOLS, ("y ~ x + C(g)",), {}),
    "moments": (DPMomentsOLS, ("y ~ x + C(g)",), {}),
    "newton": (DPNewtonLogit, ("t ~ x + C(g)",), {}),
    "quantile-newton": (DPNewtonQuantReg, ("y ~ x + C(g)",), {"q": (0.5,)}),
    "sample-aggregate": (DPSampleAggregate, ("ols", "y ~ x + C(g)"), {"param_bounds": (-50, 50)}),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_model_on_raw_rows_is_refused_before_anything_is_spent(case, df):
    cls, args, _ = CASES[case]
    with pytest.raises(DPModelsTypeError, match=r"from_formula") as info:
        cls(*args, df)
    assert "fits on a release" in str(info.value)


@pytest.mark.filterwarnings("ignore::dpmodels.ReleaseWarning")  # newton at n = 3000, eps 1
@pytest.mark.parametrize("case", sorted(CASES))
def test_from_formula_releases_once_and_the_model_on_that_release_spends_nothing(case, df):
    cls, args, kw = CASES[case]
    acct = dpm.Accountant(5.0)
    made = cls.from_formula(*args, df, epsilon=1.0, bounds=B, levels=L, random_state=0,
                            accountant=acct, **kw)
    assert made.budget_spent == 1.0 and [e.epsilon for e in acct.ledger] == [1.0]
    again = cls(*args, made.release)
    assert again.budget_spent == 0.0 and again.release is made.release
    assert len(acct.ledger) == 1
    fit = {"n_boot": 50, "random_state": 0} if case != "sample-aggregate" else {}
    np.testing.assert_array_equal(np.asarray(made.fit(**fit).params),
                                  np.asarray(again.fit(**fit).params))


def test_the_dp_function_builds_the_same_model_as_from_formula(df):
    a = dpm.dp_ols("y ~ x + C(g)", df, epsilon=1.0, bounds=B, levels=L, method="histogram",
                   random_state=3)
    b = dpm.DPOLS.from_formula("y ~ x + C(g)", df, epsilon=1.0, bounds=B, levels=L,
                               random_state=3)
    np.testing.assert_array_equal(a.release.counts, b.release.counts)
    np.testing.assert_array_equal(a.fit(cov_type="naive").params, b.fit(cov_type="naive").params)


def test_a_projected_model_is_made_from_raw_rows_only(df):
    model = dpm.dp_logit("t ~ x + C(g)", df, epsilon=2.0, bounds=B, levels=L, select=1,
                         random_state=0)
    assert isinstance(model, DPProjectedLogit) and model.privacy.epsilon == 2.0
    with pytest.raises(DPModelsTypeError, match="select="):
        DPProjectedLogit("t ~ x", model.release)
