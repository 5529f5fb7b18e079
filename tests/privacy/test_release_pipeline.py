"""The release pipeline (dpmodels.mechanisms.pipeline): the budget is checked,
the rows read (every refusal that needs a row), then the accountant charged
and the noise source drawn, and only then the release's measuring step runs
(PRIVACY.md rule 10). The formula releases go through it."""

from __future__ import annotations

import importlib

import numpy as np
import pandas as pd
import pytest

from dpmodels.core.accountant import Accountant
from dpmodels.core.errors import BudgetExceededError, UndeclaredLevelError
from dpmodels.mechanisms import pipeline

#: The releases that run through the pipeline: (module, function, formula).
FORMULA_RELEASES = [("dpmodels.mechanisms.moments", "release_moments", "y ~ x + C(g)"),
                    ("dpmodels.mechanisms.ssp", "release_ssp", "y ~ x + C(g)"),
                    ("dpmodels.mechanisms.newton", "release_newton", "t ~ x + C(g)"),
                    ("dpmodels.mechanisms.quantile_steps", "release_quantile_steps",
                     "y ~ x + C(g)")]


def _frame(n: int = 800) -> pd.DataFrame:
    rng = np.random.default_rng(0)
    df = pd.DataFrame({"x": rng.uniform(0, 10, n), "g": rng.choice(["a", "b"], n)})
    df["y"] = np.clip(1 + 0.3 * df.x + rng.normal(0, 1, n), -5, 15)
    df["t"] = (rng.random(n) < 1 / (1 + np.exp(5 - df.x))).astype(int)
    return df


KW = dict(bounds={"x": (0, 10), "y": (-5, 15)}, levels={"g": ["a", "b"], "t": [0, 1]},
          namespace={"np": np})


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


@pytest.mark.parametrize("module, name, formula", FORMULA_RELEASES,
                         ids=[name for _, name, _ in FORMULA_RELEASES])
def test_the_formula_releases_run_through_the_pipeline(monkeypatch, module, name, formula):
    """Each formula release hands its read and measuring step to run_release, and
    an undeclared level found in its read spends nothing."""
    mod = importlib.import_module(module)
    calls = []

    def spy(**kw):
        calls.append(kw["label"])
        return pipeline.run_release(**kw)

    monkeypatch.setattr(mod, "run_release", spy)
    acct = Accountant(total_epsilon=2.0)
    rel = getattr(mod, name)(_frame(), formula=formula, epsilon=1.0, random_state=0,
                             accountant=acct, **KW)
    assert len(calls) == 1 and rel.report.epsilon == 1.0 and acct.spent == 1.0
    bad = _frame()
    bad.loc[5, "g"] = "zz"
    with pytest.raises(UndeclaredLevelError):
        getattr(mod, name)(bad, formula=formula, epsilon=1.0, random_state=0,
                           accountant=acct, **KW)
    assert len(calls) == 2 and acct.spent == 1.0
