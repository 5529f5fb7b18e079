"""A small fast run of benchmarks/validity.py (the long runs live there): its
tables are built from real fits, and a declared level with no rows comes out
information-free in the dp fit while the naive fit calls it significant."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pandas as pd

BENCH = Path(__file__).resolve().parents[2] / "benchmarks" / "validity.py"


def _load():
    spec = importlib.util.spec_from_file_location("validity_bench", BENCH)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_validity_benchmark_small_run(tmp_path, capsys):
    bench = _load()
    out = tmp_path / "v.csv"
    bench.main(["--scenarios", "empty_level", "--n", "20000", "--eps", "1", "--reps", "3",
                "--out", str(out), "--table", str(tmp_path / "v.md")])
    raw = pd.read_csv(out)
    assert len(raw) > 0 and set(raw["scenario"]) == {"empty_level"}
    summary, info = bench.summarize(raw), bench.summarize_info(raw)
    assert len(summary) > 0 and len(info) > 0
    text = (tmp_path / "v.md").read_text()
    assert "empty_level" in text and "Information-free" in text
    ghost = raw[raw["coef"].astype(str).str.contains("ghost")]
    assert len(ghost) == 3
    # the dp fit never calls the empty level significant and names it in a warning;
    # the intervals of the populated coefficients are finite
    assert (ghost["dp_p"] >= 0.05).all() and ghost["named"].astype(bool).all()
    others = raw[~raw["coef"].astype(str).str.contains("ghost")]
    assert (others["dp_hi"] - others["dp_lo"]).lt(float("inf")).all()


def test_goal_tally_and_added_data_sets(tmp_path):
    """--first-rep adds new data sets (new seeds) to a cell; the goal tally counts
    the coefficient-cells that meet and miss each goal, for dp and naive."""
    bench = _load()
    out = tmp_path / "v.csv"
    args = ["--scenarios", "linear", "--n", "2000", "--eps", "3", "--out", str(out)]
    bench.main(args + ["--reps", "2"])
    bench.main(args + ["--reps", "1", "--first-rep", "2"])
    raw = pd.read_csv(out)
    per_rep = raw.groupby("rep")["seed"].first()
    assert sorted(per_rep.index) == [0, 1, 2] and per_rep.nunique() == 3
    summary = bench.summarize(raw)
    assert (summary["reps"] == 3).all()
    tally = bench.goal_tally(summary)
    lines = [ln for ln in tally.splitlines() if ln.startswith("| coverage")]
    assert len(lines) == 2  # dp and naive
    for ln in lines:
        cells, met, missed = (int(x) for x in ln.split("|")[3:6])
        assert cells == len(summary) and met + missed == cells
