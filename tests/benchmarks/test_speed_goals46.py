"""A small fast run of benchmarks/speed.py's goals section (issue 46's table):
a row for each family at each n with a value and a verdict, and every verdict
("met" or "<d>x off") consistent with the row's value, printed and raw."""

from __future__ import annotations

import math
import re

import numpy as np
import pandas as pd
import pytest

from tests.support.benchmark_cases import load_benchmark

SIZES = (3000, 6000)
FAMILIES = ("ols", "logit", "mnlogit", "quantreg")
VERDICT = re.compile(r"^(\()?(met|not measured|(?P<d>[\d,]+(\.\d+)?|inf )x off)(?(1)\))$")


@pytest.fixture(scope="module")
def bench():
    return load_benchmark("speed")


@pytest.fixture(scope="module")
def goals(bench):
    """The goals section at two tiny sizes, one repeat, on each family's housing formula
    and one forced release (the moments): its GoalRows and its printed text."""
    mp = pytest.MonkeyPatch()
    mp.setattr(bench, "GOAL_FITS", tuple(f for f in bench.GOAL_FITS
                                         if f[0] in (*FAMILIES, "ols + log, moments")))
    args = bench.parse_args(["--only", "goals", "--goal-sizes", ",".join(map(str, SIZES)),
                             "--repeat", "1"])
    rows: list = []
    try:
        text = bench.run_goals(args, collect=rows)
    finally:
        mp.undo()
    return rows, text


def _table(text):
    """The printed table's rows as lists of cells."""
    lines = [ln for ln in text.splitlines() if ln.startswith("| ")]
    head = [c.strip() for c in lines[0].strip("|").split("|")]
    return head, [[c.strip() for c in ln.strip("|").split("|")] for ln in lines[1:]]


def _printed_number(shown: str) -> float:
    """'307.3 ms' -> 0.3073, '1.48x' -> 1.48, '1,413x' -> 1413, '0.44 GiB' -> 0.44,
    '0.000123x' -> 0.000123."""
    m = re.match(r"^([\d,]+(?:\.\d+)?(?:e-\d+)?)\s*(ms|s|x|GiB)$", shown)
    assert m, shown
    x = float(m.group(1).replace(",", ""))
    return x / 1e3 if m.group(2) == "ms" else x


def _check_verdict(value, op, goal, verdict):
    m = VERDICT.match(verdict)
    assert m, verdict
    word = verdict.strip("()")
    if math.isnan(value):
        assert word == "not measured"
        return
    ok = {"<=": value <= goal, "<": value < goal, ">=": value >= goal}[op]
    assert (word == "met") == ok, (value, op, goal, verdict)
    if not ok:
        d = float(m.group("d").replace(",", "")) if m.group("d") != "inf " else math.inf
        want = (goal / value if value > 0 else math.inf) if op == ">=" else value / goal
        assert d == pytest.approx(want, rel=0.06), (value, goal, verdict)


def test_a_row_for_each_family_at_each_size_with_a_consistent_verdict(goals):
    rows, text = goals
    head, body = _table(text)
    assert head == ["goal", "n", "fit", "model (auto)", "measure", "value", "goal",
                    "met / distance", "times"]
    assert len(body) == len(rows) > 0
    for measure in ("statsmodels / dp (release + fit)", "fit after the release (SEs incl.)"):
        for fam in FAMILIES:
            for n in SIZES:
                hits = [r for r in body if r[2] == fam and r[1] == f"{n:,}" and r[4] == measure]
                assert len(hits) == 1, (fam, n, measure)
                cells = hits[0]
                assert cells[3].startswith("DP"), cells  # the class auto chose
                assert cells[5] and cells[7], cells
                # tiny n: not where the issue sets these goals, so the verdict is in brackets
                assert cells[7].startswith("(") and cells[7].endswith(")"), cells
    # every verdict against the raw value, and against the value as printed
    for r, cells in zip(rows, body):
        assert cells[7] == r.verdict and cells[5] == r.shown
        _check_verdict(r.value, r.op, r.goal, r.verdict)
        if not math.isnan(r.value):
            printed = _printed_number(r.shown)
            assert printed == pytest.approx(r.value, rel=0.01, abs=1e-3)
            if abs(printed - r.goal) > 0.01 * r.goal:  # clear of the rounding
                _check_verdict(printed, r.op, r.goal, r.verdict)


def test_growth_rows_name_the_range_measured(goals):
    rows, text = goals
    growth = [r for r in rows if r.measure.startswith("fit at ")]
    assert {r.fit for r in growth} >= set(FAMILIES)
    for r in growth:
        assert r.measure == "fit at 6,000 / fit at 3,000"
        assert "measured 3,000 -> 6,000" in r.goal_text and "1e8)" not in r.goal_text
        assert not r.at_goal_n  # below 1e5: for reference only
    assert "load average at the start of the table" in text
    assert "load average at the end of the table" in text
    assert "not met at the goal's n: 0 of 0 rows" in text


@pytest.mark.parametrize("value, op, goal, at, want", [
    (0.5, "<=", 0.3, True, "1.7x off"),
    (0.3, "<=", 0.3, True, "met"),
    (0.31, "<=", 0.3, True, "1.03x off"),
    (2.0, "<", 2.0, True, "1.00x off"),
    (12.0, ">=", 10.0, True, "met"),
    (2.5, ">=", 10.0, True, "4.0x off"),
    (0.0, ">=", 10.0, True, "inf x off"),
    (2069.0, "<=", 20.0, False, "(103x off)"),
    (1.0, "<=", 3.0, False, "(met)"),
    (math.nan, "<=", 3.0, True, "not measured"),
])
def test_goal_verdict(bench, value, op, goal, at, want):
    got = bench.goal_verdict(value, op, goal, at)
    assert got == want
    _check_verdict(value, op, goal, got)


def test_sizes_of_the_goals_section(bench):
    a = bench.parse_args(["--only", "goals"])
    assert a.goal_sizes == [10**5, 10**6, 10**7]
    assert a.goal_sm_sizes == [250_070, 10**6]
    assert a.ooc_sizes == [] and not a.cli_release
    a = bench.parse_args(["--only", "goals", "--goal-1e8", "--ooc-sizes", "1e7,1e8"])
    assert a.goal_sizes[-1] == 10**8 and a.ooc_sizes == [10**7, 10**8]
    assert a.ooc_engines == ["duckdb", "polars", "dask"]
    a = bench.parse_args(["--only", "goals", "--goal-sizes", "20000,50000,2e6"])
    assert a.goal_sm_sizes == [20000, 50000]  # statsmodels not above 1e6 unless asked
    a = bench.parse_args(["--only", "goals", "--goal-sizes", "20000", "--goal-sm-sizes", ""])
    assert a.goal_sm_sizes == []


def test_tiled_frame_gives_the_release_of_the_copied_frame(bench):
    """The 1e8 path (columns tiled, county Categorical, y/cc int8) at a small base: the same
    rows as copies of the base frame, the same release and fit, and a read by its codes."""
    tiled = bench.goal_frame(2500, base=1000, tile_above=1000)
    copied = pd.concat([bench.housing_frame(1000)] * 3, ignore_index=True).iloc[:2500]
    assert isinstance(tiled["county"].dtype, pd.CategoricalDtype)
    assert tiled["y"].dtype == np.int8
    for c in ("price", "size", "year", "y", "cc"):
        np.testing.assert_array_equal(tiled[c].to_numpy(), copied[c].to_numpy())
    np.testing.assert_array_equal(tiled["county"].astype(object).to_numpy(),
                                  copied["county"].to_numpy())
    a = bench._goal_call("ols", bench.OLS_FORMULA, tiled).fit(random_state=0, n_boot=20)
    b = bench._goal_call("ols", bench.OLS_FORMULA, copied).fit(random_state=0, n_boot=20)
    np.testing.assert_array_equal(a.params.to_numpy(), b.params.to_numpy())
    assert bench.goal_read([tiled[c] for c in ("price", "size", "year", "county")]) > 0
    assert bench._design_floor(tiled, chunk=1000) > 0


def test_the_cli_release_data_set_has_the_issue_s_shape(bench):
    from dpmodels.domain.axes import auto_bins

    df = bench.star98_students()
    assert len(df) == bench.STAR98_ROWS == 267_611
    assert list(df.columns) == ["above", *bench.STAR98_COVARIATES]
    # a binary response and six continuous variables: 2 x K^6 cells at the default K
    k = auto_bins(len(df), 1.0, 6, 2)
    assert 2 * k**6 == 235_298
    assert len(bench.star98_students(500)) == 500
    assert bench._cli_route({"mechanism": "discrete Laplace ... joint histogram",
                             "domain_cells": 235_298, "released_cells": 10}) \
        == "histogram, 235,298 cells, 10 released"
    assert bench._cli_route({"mechanism": "logistic regression by noisy Newton steps"}) \
        == "newton steps"
