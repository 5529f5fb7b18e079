"""``dpmodels fit/release --engine``: the engine that reads a Parquet data file.

Real engines on a real Parquet file (2,000 rows): every ``--engine`` value
(pandas, Polars, DuckDB, Dask, Spark ``local[2]``, auto) gives the very same
output as pandas for one seed, with the moments release (what ``--method auto``
picks for most OLS formulas, counted in batches) and with the histogram (counted
in the engine); an engine whose package is
missing, an unknown engine, or an engine that cannot read the file is refused
with one line naming the fix, before the ledger is charged.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

from dpmodels.cli.commands import ENGINES, main
from dpmodels.front import datasets

REPO_ROOT = Path(__file__).resolve().parents[2]


SCHEMA = """
[variables.price]
bounds = [100000, 900000]

[variables.size]
bounds = [0, 3000]

[variables.year]
levels = [1, 2, 3, 4]

[variables.county]
levels = ["County1", "County2", "County3", "County4", "County5", "County6"]
"""
OLS = "price ~ size + C(year) + C(county)"
READERS = [e for e in ENGINES if e != "pandas"]


@pytest.fixture(scope="module")
def spark(spark_session):
    """The run's Spark session (tests/conftest.py), which the CLI finds and reuses.
    Never stopped here: the other modules of this worker share it."""
    return spark_session


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    d = tmp_path_factory.mktemp("cli_engines")
    df = datasets.housing(n=2000, seed=0)
    df.to_parquet(d / "houses.parquet", index=False)
    df.to_csv(d / "houses.csv", index=False)
    (d / "schema.toml").write_text(SCHEMA)
    return d


def _fit(folder, engine, method, *extra):
    out = folder / f"{engine}_{method}.json"
    argv = ["fit", "ols", OLS, "--data", str(folder / "houses.parquet"), "--schema",
            str(folder / "schema.toml"), "--epsilon", "1", "--seed", "5", "--method", method,
            "--engine", engine, "--format", "json", "--out", str(out), *extra]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)  # pyspark on pandas 3
        assert main(argv) == 0
    return json.loads(out.read_text())


@pytest.fixture(scope="module")
def pandas_fits(folder):
    return {method: _fit(folder, "pandas", method) for method in ("moments", "histogram")}


@pytest.mark.parametrize("method", ["moments", "histogram"])
@pytest.mark.parametrize("engine", READERS)
def test_every_engine_gives_the_pandas_output(engine, method, folder, pandas_fits, request):
    if engine == "spark":
        request.getfixturevalue("spark")  # the session the CLI reuses
    doc = _fit(folder, engine, method)
    want = pandas_fits[method]
    assert want["privacy"]["type"] == ("MomentsReport" if method == "moments"
                                       else "PrivacyReport")
    assert doc == want  # every number, name and privacy line, to the last bit


def _ledger(folder, name):
    path = folder / name
    assert main(["ledger", "init", str(path), "--total", "3", "--force"]) == 0
    return path


MISSING = [("duckdb", "duckdb", "duckdb"), ("polars", "polars", "polars"),
           ("spark", "pyspark", "spark"), ("dask", "dask", "dask")]


def test_a_missing_engine_package_is_refused_before_any_spend(folder):
    """One fresh interpreter where none of the engines' packages imports (as when
    they are not installed): fit and release with each engine, then the ledger."""
    ledger = _ledger(folder, "ledger_missing.json")
    code = ("import sys, json\n"
            + "".join(f"sys.modules[{m!r}] = None\n" for _, m, _ in MISSING)
            + "from dpmodels.cli.commands import main\n"
            + "for engine in sys.argv[1:]:\n"
            + "    for cmd in (['fit', 'ols'], ['release']):\n"
            + f"        rc = main(cmd + [{OLS!r}, '--data', 'houses.parquet', '--schema',"
            + " 'schema.toml', '--epsilon', '1', '--ledger', 'ledger_missing.json',"
            + " '--engine', engine] + (['--out', 'r.json'] if cmd == ['release'] else []))\n"
            + "        print(rc, file=sys.stderr)\n")
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO_ROOT), env.get("PYTHONPATH")]))
    proc = subprocess.run([sys.executable, "-c", code, *[e for e, _, _ in MISSING]],
                          cwd=folder, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 4 * len(MISSING), lines  # one error line and its status per command
    for i, (engine, module, extra) in enumerate(MISSING):
        for j in (0, 1):
            err, rc = lines[4 * i + 2 * j], lines[4 * i + 2 * j + 1]
            assert rc == "2", lines
            assert f"--engine {engine} needs the Python package {module!r}" in err, err
            assert f'pip install "dpmodels[{extra}]"' in err, err
    assert json.loads(ledger.read_text())["spends"] == []
    assert not (folder / "r.json").exists()


def test_engine_refusals_are_one_line_before_any_spend(folder, capsys):
    ledger = _ledger(folder, "ledger_refusals.json")
    base = ["fit", "ols", OLS, "--schema", str(folder / "schema.toml"), "--epsilon", "1",
            "--ledger", str(ledger)]
    cases = [
        (["--data", str(folder / "houses.parquet"), "--engine", "spork"],
         "argument --engine: invalid choice: 'spork'"),
        (["--data", str(folder / "houses.csv"), "--engine", "duckdb"],
         "--engine duckdb reads Parquet files"),
    ]
    for extra, message in cases:
        assert main(base + extra) == 2
        err = capsys.readouterr().err.strip()
        assert message in err and len(err.splitlines()) == 1, err
    assert json.loads(ledger.read_text())["spends"] == []
    # a fit on a saved release reads no data file
    rel = folder / "saved.json"
    assert main(["release", OLS, "--data", str(folder / "houses.parquet"), "--schema",
                 str(folder / "schema.toml"), "--epsilon", "1", "--seed", "1", "--engine",
                 "duckdb", "--out", str(rel), "--force"]) == 0
    capsys.readouterr()
    assert main(["fit", "ols", OLS, "--release", str(rel), "--engine", "polars"]) == 2
    assert "--engine reads a --data file" in capsys.readouterr().err


def test_engine_is_in_the_help(capsys):
    assert main(["fit", "--help"]) == 0
    text = capsys.readouterr().out
    assert "--engine {auto,pandas,polars,duckdb,dask,spark}" in text
    assert "local[2]" in text
