"""A small fast run of benchmarks/power.py (issue 44; the long runs live there):
the table has its columns for every method and the baselines' own validity
check on a synthetic population is computed before they are used."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import numpy as np
import pytest

BENCH = Path(__file__).resolve().parents[1] / "benchmarks" / "power.py"


@pytest.fixture(scope="module")
def bench():
    sys.path.insert(0, str(BENCH.parent))
    spec = importlib.util.spec_from_file_location("power_bench", BENCH)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_quick_run_table_and_baseline_check(bench, tmp_path):
    out = tmp_path / "power_quick.md"
    res = bench.main(["--quick", "--reps", "1", "--check-reps", "2", "--out", str(out)])
    text = out.read_text()
    assert "Command: `python benchmarks/power.py --quick" in text
    for col in ("power % (held)", "finite %", "median width ratio", "worst cover %",
                "wrong sign %", "refused (after charge)", "reps"):
        assert col in text, col
    summ = res["summary"]
    assert set(summ["method"]) == {"auto", "histogram", "moments", "sample-aggregate",
                                   "ssp-boot"}
    assert (summ["reps"] == 1).all()
    # the baselines' validity check ran on both synthetic populations
    chk = res["check"]
    assert set(chk["baseline"]) == {"ssp-boot", "objpert-boot"}
    assert chk["cover"].notna().all() and (chk["reps"] == 2).all()
    assert set(res["valid"]) == {"ssp-boot", "objpert-boot"}
    assert "The baselines' own validity" in text and "worst per-coefficient coverage" in text
    # the sensitivity the baselines use bounds every change seen on random row pairs
    assert (chk["audit_max_l1"] <= chk["delta"] + 1e-9).all()
    assert (out.parent / "power_quick_rows.csv.gz").exists()


def test_sensitivity_is_per_block(bench):
    """Grunfeld's eleven-level factor costs 2 per block, not 2 per dummy."""
    d = bench.Design("grunfeld_ols")
    audit = bench.sensitivity_audit(d, np.random.default_rng(1), m=600)
    assert audit <= d.delta
    # blocks: (1, factor) 2; (1, 2 boxes + y) 3 x 2; squares of 3 boxes 3 x 1;
    # box pairs 3 x 2; (box, factor) 3 x 2
    assert d.delta == 2 + 6 + 3 + 6 + 6
