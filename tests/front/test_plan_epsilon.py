"""``plan_epsilon=``: epsilon = inf runs the pipeline the user will run.

At ``epsilon=inf`` ``method="auto"`` used to switch a large logit from the
Newton steps to the histogram (the Newton-type releases refused epsilon = inf),
so a script validated at epsilon = inf ran another pipeline than the one it
would run at epsilon 1.  Now the Newton steps and the quantile steps run at
epsilon = inf without their noise (NOT private), ``plan_epsilon=`` makes
``method="auto"`` (and ``bins="auto"``) choose as at the planned epsilon, and
the summary says which pipeline ran and what still separates it from
statsmodels' fit.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pandas as pd
import pytest

import dpmodels as dpm
from dpmodels.core.errors import DPModelsError
from dpmodels.front.methods import choose_logit_method

BOUNDS = {v: (-3, 3) for v in "abcd"} | {"yc": (-10, 10)}
LEVELS = {"y": [0, 1]}


def _frame(n: int, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 4)).clip(-3, 3)
    df = pd.DataFrame(X, columns=list("abcd"))
    df["y"] = (rng.random(n) < 1 / (1 + np.exp(-(0.3 + X @ [1.0, -1.0, 0.5, 0.2])))).astype(int)
    df["yc"] = 1 + X @ [1.0, 0.5, 0.0, -0.5] + rng.laplace(0, 0.5, n)
    return df


def _quiet(fn, *args, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn(*args, **kw)


def _method(model) -> str:
    """The release a model is fitted on (the histogram's models have no ``method``)."""
    return getattr(model, "method", "histogram")


def _text(res) -> str:
    return " ".join(res.summary().as_text().split())


def test_a_large_logit_keeps_its_planned_method_at_epsilon_inf():
    """Four continuous covariates: "auto" takes the Newton steps at epsilon 1;
    at epsilon = inf it took the histogram (binned: the issue measured
    intervals 18x wider).  With plan_epsilon=1 (and now without it) it runs the
    Newton steps without noise, and their estimate is statsmodels' to 1e-3."""
    import statsmodels.formula.api as smf

    df = _frame(20_000)
    formula = "y ~ a + b + c + d"
    at_one = _quiet(dpm.dp_logit, formula, df, epsilon=1.0, bounds=BOUNDS, levels=LEVELS,
                    random_state=0)
    assert at_one.method == "newton"
    with pytest.warns(dpm.NotPrivateWarning):
        at_inf = dpm.dp_logit(formula, df, epsilon=math.inf, plan_epsilon=1.0, bounds=BOUNDS,
                              levels=LEVELS, random_state=0)
    assert at_inf.method == at_one.method and type(at_inf) is type(at_one)
    assert not at_inf.release.report.private
    res = at_inf.fit(cov_type="naive")
    ref = smf.logit(formula, df).fit(disp=0)
    np.testing.assert_allclose(res.params, ref.params, atol=1e-3)
    text = _text(res)
    assert "NOT PRIVATE" in text and "Pipeline: the Newton steps' pipeline without its noise" in text
    assert "NOT statsmodels' fit" in text and "the last step moved the coefficients" in text
    # summary2 says the same
    assert "Pipeline:" in str(res.summary2())


def test_an_epsilon_dependent_choice_follows_plan_epsilon():
    """Two continuous covariates, n = 60,000: "auto" takes the Newton steps from
    n * epsilon = 50,000 on (epsilon 1), the histogram below (epsilon 0.1).  At
    epsilon = inf the planned epsilon decides, as the choice at that epsilon."""
    df = _frame(60_000)
    formula = "y ~ a + b"
    for plan in (1.0, 0.1):
        planned = choose_logit_method("auto", formula, df, bounds=BOUNDS, levels=LEVELS,
                                      namespace={}, epsilon=plan)
        model = _quiet(dpm.dp_logit, formula, df, epsilon=math.inf, plan_epsilon=plan,
                       bounds=BOUNDS, levels=LEVELS, random_state=0)
        assert _method(model) == planned, (plan, _method(model), planned)
    assert [choose_logit_method("auto", formula, df, bounds=BOUNDS, levels=LEVELS,
                                namespace={}, epsilon=e) for e in (1.0, 0.1)] == [
        "newton", "histogram"]


def test_the_histogram_at_inf_takes_the_planned_bins_and_says_it_is_binned():
    """bins="auto" at epsilon = inf makes the exact table's finer bins; with
    plan_epsilon the release has the bins of the planned release, and the
    summary says the rows were binned: not statsmodels' fit."""
    df = _frame(5_000)
    formula = "y ~ a"
    planned = _quiet(dpm.dp_logit, formula, df, epsilon=0.5, bounds=BOUNDS, levels=LEVELS,
                     random_state=0)
    at_inf = _quiet(dpm.dp_logit, formula, df, epsilon=math.inf, plan_epsilon=0.5,
                    bounds=BOUNDS, levels=LEVELS, random_state=0)
    assert _method(planned) == _method(at_inf) == "histogram"
    assert at_inf.release.report.variables == planned.release.report.variables
    bins = dict(at_inf.release.report.variables)["a"].split(", ")[-1]  # "k bins"
    text = _text(_quiet(at_inf.fit, random_state=0, n_boot=20))
    assert "exact counts of the BINNED rows" in text and f"a ({bins})" in text
    assert "NOT statsmodels' fit on the raw rows" in text


def test_quantreg_and_ols_at_inf_name_their_pipeline():
    df = _frame(5_000)
    formula = "yc ~ a + b + c + d"
    qr = _quiet(dpm.dp_quantreg, formula, df, epsilon=math.inf, plan_epsilon=1.0,
                bounds=BOUNDS, random_state=0)
    assert qr.method == _quiet(dpm.dp_quantreg, formula, df, epsilon=1.0, bounds=BOUNDS,
                               random_state=0).method == "newton"
    text = _text(_quiet(qr.fit, cov_type="naive"))
    assert "Pipeline: the quantile steps' pipeline without its noise" in text
    assert "NOT statsmodels' fit" in text
    ols = _quiet(dpm.dp_ols, formula, df, epsilon=math.inf, plan_epsilon=1.0, bounds=BOUNDS)
    assert ols.method == "moments"
    assert "the estimates are statsmodels' OLS on those rows" in _text(ols.fit())


@pytest.mark.parametrize("fn", [dpm.dp_ols, dpm.dp_logit, dpm.dp_quantreg, dpm.dp_mnlogit])
@pytest.mark.parametrize("bad", [0, -1.0, math.inf, math.nan, "1", True, 1e-300])
def test_a_bad_plan_epsilon_is_refused_before_anything_is_drawn(fn, bad):
    df = _frame(200)
    acct = dpm.Accountant(10.0)
    rng = np.random.default_rng(3)
    state = rng.bit_generator.state
    formula = "yc ~ a" if fn in (dpm.dp_ols, dpm.dp_quantreg) else "y ~ a"
    with pytest.raises(DPModelsError, match="plan_epsilon"):
        fn(formula, df, epsilon=math.inf, plan_epsilon=bad, bounds=BOUNDS, levels=LEVELS,
           random_state=rng, accountant=acct)
    assert acct.spent == 0 and rng.bit_generator.state == state


def test_a_misspelt_plan_epsilon_gets_a_did_you_mean():
    with pytest.raises(DPModelsError, match="did you mean 'plan_epsilon'"):
        dpm.dp_logit("y ~ a", _frame(100), epsilon=1.0, plan_epsilom=1.0, bounds=BOUNDS,
                     levels=LEVELS)


def test_a_noiseless_newton_release_saves_and_loads_as_not_private(tmp_path):
    """A Newton-type release at epsilon = inf is saved and loaded as what it is
    (NOT private: epsilon inf, no split, no noise), and fits the same."""
    from dpmodels.front.saved import load_release

    df = _frame(3_000)
    for fn, formula in ((dpm.dp_logit, "y ~ a + b + c"), (dpm.dp_quantreg, "yc ~ a + b + c")):
        model = _quiet(fn, formula, df, epsilon=math.inf, plan_epsilon=1.0, bounds=BOUNDS,
                       levels=LEVELS, random_state=0)
        assert _method(model) == "newton"
        path = tmp_path / f"{_method(model)}-{fn.__name__}.dpm"
        model.release.save(path)
        loaded = load_release(path)
        assert not loaded.report.private and math.isinf(loaded.report.epsilon)
        again = _quiet(fn, formula, loaded).fit(cov_type="naive")
        np.testing.assert_array_equal(again.params, model.fit(cov_type="naive").params)
