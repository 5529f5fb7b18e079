"""Issue 43, part 2: the outside privacy audit's items 1, 2, 4, 5, 8 and 9 (no
violation; defects).  Each test failed on the code before its fix.

1. Spark, local randomization, a ``decimal(10, 2)`` column: the engine's
   check compared the values as doubles, the batch coder as ``Decimal``
   objects (``Decimal('0.10') != 0.1``), and refused after the charge.  Every
   engine now hands a row pass the values as the check reads them (a decimal
   column cast to double in the engine), on every engine.
2. Spark, local randomization, a frame whose rows change between reads: the
   positions were counted after the charge; now before it, against n.
4. CLI ``release`` with TOML date levels: the release was charged to the
   ledger, then saving refused the level; now refused before the charge.
5. A signed release (``threshold=None``) of a domain too large to hold in
   memory: refused before the charge from the domain's size alone.
8. The accountant and the CLI ledger allowed 1e-9 relative overspend; now
   exact rational arithmetic.
9. ``LogRate.no_cross`` gave ``lo > hi`` when ``|log rho|`` is below the
   smallest normal float (OUE at epsilon >= ~708); the enclosure now holds.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest

import dpmodels as dpm
from dpmodels.__main__ import main
from dpmodels.errors import BudgetExceededError

# ---- 8: exact budget arithmetic ---------------------------------------------------------


def test_accountant_refuses_any_overspend_exactly():
    acct = dpm.Accountant(1.0)
    acct.spend(1.0, "all of it")
    with pytest.raises(BudgetExceededError, match="needs epsilon=1e-09"):
        acct.spend(1e-9, "a little more")
    with pytest.raises(BudgetExceededError):
        acct.check(5e-324, "the least float")
    assert acct.spent == 1.0 and acct.remaining == 0.0 and len(acct.ledger) == 1


def test_accountant_sums_exactly():
    # the float 0.1 is a little above 1/10: ten of them exceed 1.0 exactly
    acct = dpm.Accountant(1.0)
    for i in range(9):
        acct.spend(0.1, f"release {i}")
    with pytest.raises(BudgetExceededError):
        acct.spend(0.1, "the tenth")
    # what `remaining` says always fits, and is all that fits
    left = acct.remaining
    assert 0 < left < 0.1
    acct.spend(left, "the rest")
    with pytest.raises(BudgetExceededError):
        acct.spend(5e-324, "nothing left")
    assert acct.spent <= 1.0 and acct.remaining == 0.0
    # parts whose exact sum is the total fit exactly
    acct = dpm.Accountant(1.0)
    for part in (0.5, 0.25, 0.125, 0.125):
        acct.spend(part, "part")
    assert acct.spent == 1.0


def test_accountant_with_an_infinite_total_or_epsilon():
    acct = dpm.Accountant(math.inf)
    acct.spend(2.0, "a")
    acct.spend(math.inf, "not private")
    assert acct.spent == math.inf and acct.remaining == math.inf
    acct = dpm.Accountant(3.0)
    with pytest.raises(BudgetExceededError):
        acct.spend(math.inf, "not private")
    with pytest.raises(BudgetExceededError):
        acct.spend(math.nan, "not a number")
    assert acct.spent == 0.0


def _ledger_release(tmp_path, ledger, epsilon: str):
    return main(["release", "g", "--data", str(tmp_path / "g.csv"), "--schema",
                 str(tmp_path / "g.toml"), "--epsilon", epsilon, "--ledger", str(ledger),
                 "--out", str(tmp_path / f"rel{epsilon}.json"), "--force", "--seed", "1"])


def test_cli_ledger_refuses_any_overspend_exactly(tmp_path, capsys):
    pd.DataFrame({"g": ["a", "b"] * 50}).to_csv(tmp_path / "g.csv", index=False)
    (tmp_path / "g.toml").write_text('[variables.g]\nlevels = ["a", "b"]\n')
    ledger = tmp_path / "ledger.json"
    assert main(["ledger", "init", str(ledger), "--total", "1"]) == 0
    assert _ledger_release(tmp_path, ledger, "1") == 0
    capsys.readouterr()
    before = ledger.read_text()
    assert _ledger_release(tmp_path, ledger, "1e-9") == 2
    err = capsys.readouterr().err
    assert "has 0 of epsilon 1 left" in err and "needs 1e-09" in err, err
    assert ledger.read_text() == before
    assert not (tmp_path / "rel1e-9.json").exists()
    spends = json.loads(ledger.read_text())["spends"]
    assert [s["epsilon"] for s in spends] == [1.0]


# ---- 9: the enclosure of log P(Z < k) --------------------------------------------------


@pytest.mark.parametrize("epsilon", [2 * 707.0, 2 * 708.0, 2 * 720.0, 2 * 744.0, 2 * 746.0,
                                     2 * 1e4, 1e300])
def test_no_cross_encloses_tiny_logs(epsilon):
    from mpmath.libmp import from_float, mpf_cmp

    from dpmodels.exact import LogRate

    rate = LogRate.no_cross(epsilon, 1)
    iv = rate.enclose(200)  # a rigorous interval holding log rho (mpmath, any exponent)
    assert rate.lo <= rate.hi <= 0.0
    assert mpf_cmp(from_float(rate.lo), iv[0]) <= 0, (rate.lo, iv)
    assert mpf_cmp(iv[1], from_float(rate.hi)) <= 0, (rate.hi, iv)


def test_oue_at_a_huge_epsilon_is_exact():
    """OUE at epsilon = 710 (q = 1/(e^710 + 1), below the smallest normal
    float): no other bit is set; the true bit is 1 half of the time."""
    from dpmodels.exact import LogRate, bernoulli_positions

    assert bernoulli_positions(0, LogRate.no_cross(2 * 710.0, 1), 10**6).size == 0
    df = pd.DataFrame({"g": np.repeat(np.arange(300), 4)})
    rel = dpm.local.randomize(df, columns=["g"], epsilon=710.0, levels={"g": list(range(300))},
                              channel="oue", missing="raise", random_state=3)
    assert rel.channel.name == "oue"
    assert rel.report_counts.sum() == pytest.approx(600, abs=100)
    assert np.all(rel.report_counts <= 4)


# ---- 4: CLI date levels ------------------------------------------------------------------


def _date_files(tmp_path):
    import datetime as dt

    days = [dt.date(2020, 1, 1), dt.date(2020, 1, 2)]
    df = pd.DataFrame({"day": [days[i % 2] for i in range(200)], "y": np.arange(200) % 3})
    df.to_parquet(tmp_path / "days.parquet", index=False)  # a date32 column
    (tmp_path / "days.toml").write_text(
        "[variables.day]\nlevels = [2020-01-01, 2020-01-02]\n\n"  # TOML dates, unquoted
        "[variables.y]\nlevels = [0, 1, 2]\n")
    ledger = tmp_path / "ledger.json"
    assert main(["ledger", "init", str(ledger), "--total", "5"]) == 0
    return ledger


@pytest.mark.parametrize("engine", ["auto", "pandas"])
def test_cli_release_with_date_levels_is_refused_before_the_charge(tmp_path, capsys, engine):
    """The release accepted TOML date levels on a Parquet date column, charged
    the ledger, and then saving refused the level: nothing written, epsilon
    spent.  It is refused before the ledger is charged or the data read, naming
    the variable and what to write instead."""
    ledger = _date_files(tmp_path)
    before = ledger.read_text()
    capsys.readouterr()
    out = tmp_path / "rel.json"
    code = main(["release", "day,y", "--data", str(tmp_path / "days.parquet"), "--schema",
                 str(tmp_path / "days.toml"), "--epsilon", "1", "--ledger", str(ledger),
                 "--out", str(out), "--seed", "3", "--engine", engine])
    err = capsys.readouterr().err
    assert json.loads(ledger.read_text())["spends"] == [], err
    assert ledger.read_text() == before  # nothing spent, nothing recorded
    assert not out.exists()
    assert code == 2, err
    assert "'day'" in err and "2020-01-01" in err and "Traceback" not in err, err
    assert "string" in err, err  # what to do: levels as strings (or a recoded column)
