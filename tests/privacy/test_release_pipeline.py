"""The release pipeline (dpmodels.mechanisms.pipeline): the budget is checked,
the rows read (every refusal that needs a row), then the accountant charged
and the noise source drawn, and only then the release's measuring step runs
(PRIVACY.md rule 10). The formula releases go through it."""

from __future__ import annotations

import importlib
import warnings

import numpy as np
import pandas as pd
import pytest

from dpmodels.core.accountant import Accountant
from dpmodels.core.errors import BudgetExceededError, UndeclaredLevelError
from dpmodels.mechanisms import pipeline

F = "y ~ x + C(g)"
#: Every release function, by module and name, with how to call it on the frame (the
#: projected models' selection runs through the pipeline too, inside dp_logit(select=)).
RELEASES = {
    "histogram": ("dpmodels.mechanisms.histogram", "release", dict(formula=F)),
    "moments": ("dpmodels.mechanisms.moments", "release_moments", dict(formula=F)),
    "ssp": ("dpmodels.mechanisms.ssp", "release_ssp", dict(formula=F)),
    "newton": ("dpmodels.mechanisms.newton", "release_newton", dict(formula="t ~ x + C(g)")),
    "quantile_steps": ("dpmodels.mechanisms.quantile_steps", "release_quantile_steps",
                       dict(formula=F)),
    "local": ("dpmodels.mechanisms.local", "randomize", dict(columns=["g", "t"])),
    "sample_aggregate": ("dpmodels.mechanisms.sample_aggregate", "release_sample_aggregate",
                         dict(family="ols", formula=F, param_bounds=(-30.0, 30.0))),
    "selection": ("dpmodels.mechanisms.selection", "select_features",
                  dict(target="t", candidates=["g", "x"], k=1, bins=4)),
    "synthetic": ("dpmodels.mechanisms.synthetic", "smoothed_sample",
                  dict(columns=["g", "t"], size=20)),
}


def _frame(n: int = 800) -> pd.DataFrame:
    rng = np.random.default_rng(0)
    df = pd.DataFrame({"x": rng.uniform(0, 10, n), "g": rng.choice(["a", "b"], n)})
    df["y"] = np.clip(1 + 0.3 * df.x + rng.normal(0, 1, n), -5, 15)
    df["t"] = (rng.random(n) < 1 / (1 + np.exp(5 - df.x))).astype(int)
    return df


BOUNDS = {"x": (0, 10), "y": (-5, 15)}
LEVELS = {"g": ["a", "b"], "t": [0, 1]}


def test_the_order_check_announce_read_charge_draw_measure():
    acct, seen = Accountant(total_epsilon=1.0), []

    def read():
        seen.append(("read", acct.spent))
        return "first"

    def measure(first, bits, budget):
        seen.append(("measure", acct.spent, first, budget))
        return bits.seeded

    out = pipeline.run_release(epsilon=0.25, label="x", accountant=acct, random_state=3,
                               read=read, measure=measure,
                               announce=lambda: seen.append(("announce", acct.spent)))
    assert out is True  # the noise source is the seeded one
    assert seen == [("announce", 0.0), ("read", 0.0),
                    ("measure", 0.25, "first", "charged epsilon=0.25; accountant: 0.25 of 1 "
                                                "spent")]


def test_a_refusal_in_the_read_spends_nothing_and_draws_nothing():
    acct = Accountant(total_epsilon=1.0)

    def read():
        raise UndeclaredLevelError("a level outside the declared ones")

    def measure(first, bits, budget):  # pragma: no cover - must not run
        raise AssertionError("measured after a refusal")

    with pytest.raises(UndeclaredLevelError):
        pipeline.run_release(epsilon=0.5, label="x", accountant=acct, random_state=0,
                             read=read, measure=measure)
    assert acct.spent == 0 and acct.ledger == ()


def test_a_budget_that_does_not_fit_is_refused_before_the_rows_are_read():
    acct = Accountant(total_epsilon=0.1)
    read_calls = []
    with pytest.raises(BudgetExceededError):
        pipeline.run_release(epsilon=0.5, label="x", accountant=acct, random_state=0,
                             read=lambda: read_calls.append(1),
                             measure=lambda first, bits, budget: None)
    assert read_calls == [] and acct.spent == 0


@pytest.mark.parametrize("release", list(RELEASES))
def test_every_release_runs_through_the_pipeline(monkeypatch, release):
    """Each release function hands its read and measuring step to run_release, and
    an undeclared level found in its read spends nothing."""
    module, name, kw = RELEASES[release]
    mod = importlib.import_module(module)
    calls = []

    def spy(**args):
        calls.append(args["label"])
        return pipeline.run_release(**args)

    monkeypatch.setattr(mod, "run_release", spy)
    fn = getattr(mod, name)
    args = dict(kw, epsilon=1.0, random_state=0, levels=LEVELS)
    if "columns" not in kw or release == "synthetic":
        args["bounds"] = {k: v for k, v in BOUNDS.items()
                          if k in kw.get("formula", "") or k in kw.get("candidates", ())}
    acct = Accountant(total_epsilon=2.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = fn(_frame(), accountant=acct, **args)
    assert len(calls) == 1 and acct.spent == 1.0, (calls, acct.spent)
    assert getattr(out, "report", getattr(out, "privacy", None)).epsilon == 1.0
    bad = _frame()
    bad.loc[5, "g"] = "zz"
    with pytest.raises(UndeclaredLevelError):
        fn(bad, accountant=acct, **args)
    assert len(calls) == 2 and acct.spent == 1.0
