"""A small fast run of benchmarks/power.py:
the table has its columns for every method and the baselines' own validity
check on a synthetic population is computed before they are used."""

from __future__ import annotations

import numpy as np
import pytest

from dpmodels.front.methods import FAMILY_METHODS

from tests.support.benchmark_cases import load_benchmark


@pytest.fixture(scope="module")
def bench():
    return load_benchmark("power")


def test_quick_run_table_and_baseline_check(bench, tmp_path):
    out = tmp_path / "power_quick.md"
    res = bench.main(["--quick", "--reps", "1", "--check-reps", "2", "--out", str(out)])
    text = out.read_text()
    assert "Command: `python benchmarks/power.py --quick" in text
    for col in ("power % (held)", "finite %", "median width ratio", "worst cover %",
                "wrong sign %", "refused (after charge)", "reps"):
        assert col in text, col
    summ = res["summary"]
    assert set(summ["method"]) == set(FAMILY_METHODS["ols"]) | {"sample-aggregate", "ssp-boot"}
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


def test_quick_quantreg_case_has_power_and_no_baseline(bench, tmp_path):
    """A quantile regression case at q = 0.9: rows with every column, the
    non-private side (statsmodels at the case's q) held coefficients and a
    finite power figure; no baseline row, and the table says there is none."""
    out = tmp_path / "power_q.md"
    res = bench.main(["--quick", "--cases", "engel_q90_quantreg", "--methods", "auto",
                      "histogram", "--reps", "1", "--check-reps", "2", "--out", str(out)])
    raw, summ = res["raw"], res["summary"]
    assert list(raw.columns) == bench.COLUMNS
    assert set(raw["method"]) == {"auto", "histogram"}
    assert set(raw["coef"]) == {"Intercept", "income"}
    assert np.isfinite(raw["np_est"].astype(float)).all()
    assert np.isfinite(raw["np_z"].astype(float)).all()
    assert (summ["held"] > 0).all() and np.isfinite(summ["power"]).all()
    assert (summ["picked"][summ["method"] == "auto"] != "").all()
    # the truth is statsmodels' fit at the case's q, not the median
    t90, t50 = bench.truth("engel_q90_quantreg"), bench.truth("engel_q50_quantreg")
    assert abs(t90["income"] - t50["income"]) > 0.05
    assert "No valid baseline was implemented for quantreg" in out.read_text()


def test_multinomial_z_in_flatten_order(bench):
    """The non-private z of a multinomial fit line up with rv.flatten's
    class-major names."""
    case = "modechoice_mnlogit"
    res = bench.nonprivate_fit(case, bench.rv.data_of(case))
    names = bench.flatten(res)[0]
    z = bench.z_values(res)
    tv = res.tvalues
    for j, nm in enumerate(names):
        level, coef = nm.split(":", 1)
        col = [c for c in range(tv.shape[1]) if str(res.model._ynames_map[c + 1]) == level][0]
        assert z[j] == tv.loc[coef].iloc[col]


def test_multinomial_sample_aggregate_labels(bench):
    """dp_mnlogit's sample-aggregate result names its classes by response level
    (modechoice's modes 2-4, not positions 1-3): its rows meet the truth's names."""
    case = "modechoice_mnlogit"
    r = bench.run_dp(case, bench.rv.data_of(case), 3.0, "sample-aggregate", (1, 2))
    assert not r["error"]
    assert r["names"] == list(bench.truth(case))
