"""Tests for the ``dpmodels`` command (:mod:`dpmodels.cli.commands`, run by
:mod:`dpmodels.__main__`)."""

import importlib
import os
import subprocess
import sys
from pathlib import Path

import pytest

import dpmodels
from dpmodels.__main__ import main
from dpmodels.front import datasets
from dpmodels.front.registry import MECHANISMS

REPO_ROOT = Path(__file__).resolve().parents[2]

COEF_NAMES = [
    "Intercept",
    "size",
    "year",
    *(f"C(county)[T.County{i}]" for i in range(2, 7)),
]


def run_demo(capsys, *args):
    """Run ``dpmodels demo`` in process; return (exit code, stdout)."""
    code = main(["demo", *args])
    return code, capsys.readouterr().out


def test_demo_prints_summary_and_comparison(capsys):
    code, out = run_demo(capsys, "--seed", "1", "--n", "20000")
    assert code == 0
    # the summary, with its privacy block
    assert "DP OLS Regression Results" in out
    assert "Differential privacy" in out
    assert "epsilon = 1" in out
    assert "seeded generator" in out
    assert "n=20000" in out
    # the comparison table, after the summary, with every coefficient
    assert "Private vs non-private coefficients" in out
    table = out[out.index("Private vs non-private coefficients"):]
    for name in COEF_NAMES:
        assert name in table, name
    assert "rel. error %" in table
    assert "mean" in table
    # each row says whether its dp interval holds the non-private estimate, and the count
    # line agrees with the rows
    rows = [ln for ln in table.splitlines() if ln.split()[:1] and ln.split()[0] in COEF_NAMES]
    marks = [ln.split()[-1] for ln in rows]
    assert len(rows) == len(COEF_NAMES) and set(marks) <= {"yes", "NO"}
    assert f"{marks.count('yes')} of {len(COEF_NAMES)} dp 95% intervals hold" in table


def test_demo_is_reproducible_with_seed(capsys):
    def table(out):  # the summary above it prints the clock time
        return out[out.index("Private vs non-private"):]

    _, first = run_demo(capsys, "--seed", "1", "--n", "20000")
    _, second = run_demo(capsys, "--seed", "1", "--n", "20000")
    _, other = run_demo(capsys, "--seed", "2", "--n", "20000")
    assert table(first) == table(second)
    assert table(first) != table(other)


def test_demo_epsilon_option(capsys):
    code, out = run_demo(capsys, "--seed", "2", "--n", "5000", "--epsilon", "0.5")
    assert code == 0
    assert "epsilon = 0.5" in out


@pytest.mark.parametrize("argv", [["demo", "--epsilon", "0"], ["demo", "--n", "0"], ["nope"]])
def test_usage_errors_return_2(argv, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "error:" in err and "--help" in err


def test_no_command_prints_help(capsys):
    assert main([]) == 2
    assert "demo" in capsys.readouterr().err


def test_version_in_process(capsys):
    assert main(["--version"]) == 0
    assert capsys.readouterr().out.strip() == f"dpmodels {dpmodels.__version__}"


def test_version_subprocess():
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO_ROOT), env.get("PYTHONPATH")]))
    proc = subprocess.run(
        [sys.executable, "-m", "dpmodels", "--version"],
        cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert dpmodels.__version__ in proc.stdout


# ---- schema, fit, release, ledger: through ``python -m dpmodels`` on real files --------------

import json  # noqa: E402
import tomllib  # noqa: E402
import warnings  # noqa: E402

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

BOUNDS = {"price": (100000, 900000), "size": (0, 3000)}
LEVELS = {"year": [1, 2, 3, 4], "county": [f"County{i}" for i in range(1, 7)],
          "expensive": [0, 1]}
BINS = {"size": 12}
SCHEMA = """
[variables.price]
bounds = [100000, 900000]

[variables.size]
bounds = [0, 3000]
bins = 12

[variables.year]
levels = [1, 2, 3, 4]

[variables.county]
levels = ["County1", "County2", "County3", "County4", "County5", "County6"]

[variables.expensive]
levels = [0, 1]
"""
OLS = "price ~ size + year + C(county)"


def cli(*args, cwd):
    """Run ``python -m dpmodels ARGS`` in ``cwd``; return the CompletedProcess."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO_ROOT), env.get("PYTHONPATH")]))
    return subprocess.run([sys.executable, "-m", "dpmodels", *map(str, args)], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=300)


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """A housing CSV and the same rows as Parquet, a filled schema, the frame."""
    d = tmp_path_factory.mktemp("cli")
    df = datasets.housing(n=2000, seed=0)
    df["expensive"] = (df["price"] > 500_000).astype(int)
    df.to_csv(d / "houses.csv", index=False)
    df.to_parquet(d / "houses.parquet", index=False)
    (d / "schema.toml").write_text(SCHEMA)
    return d, df


def _rows(res, what):
    return getattr(res, what).to_dict()


def _json_floats(values):
    """JSON numbers as floats; the CLI writes infinities as "inf" / "-inf"."""
    return np.array([float(v) for v in values], dtype=float)


def assert_same_results(doc, res):
    """The JSON of a CLI fit against a fit done in Python."""
    for what in ("params", "bse", "pvalues"):
        got = doc[what]
        want = getattr(res, what)
        assert list(got) == [str(i) for i in want.index], what
        got, want = _json_floats(got.values()), want.to_numpy(float)
        assert np.array_equal(np.isinf(got), np.isinf(want)), what
        fin = np.isfinite(want)
        assert got[fin] == pytest.approx(want[fin], rel=1e-12), what
    ci = res.conf_int()
    assert list(doc["conf_int"]) == [str(i) for i in ci.index]
    got = np.array([_json_floats(v) for v in doc["conf_int"].values()])
    assert np.array_equal(got, ci.to_numpy(float)) or (
        np.array_equal(np.isinf(got), np.isinf(ci.to_numpy(float)))
        and got[np.isfinite(got)] == pytest.approx(ci.to_numpy(float)[np.isfinite(got)],
                                                   rel=1e-12))
    assert doc["nobs"] == res.nobs
    assert doc["privacy"]["epsilon"] == res.privacy.epsilon
    # the whole privacy block, but the budget line (the CLI's ledger is an accountant)
    assert [r for r in doc["privacy"]["rows"] if r[0] != "Budget:"] == [
        list(r) for r in res.privacy.rows() if r[0] != "Budget:"]
    assert doc["privacy"]["seeded"] is True


def test_schema_init_writes_types_and_todos_only(files):
    d, df = files
    for data, out in (("houses.csv", "s_csv.toml"), ("houses.parquet", "s_pq.toml")):
        proc = cli("schema", "init", data, "--out", out, cwd=d)
        assert proc.returncode == 0, proc.stderr
        text = (d / out).read_text()
        doc = tomllib.loads(text)["variables"]
        assert list(doc) == list(df.columns)
        if data.endswith(".parquet"):  # the file's declared schema types
            assert doc["price"] == {"type": "float", "bounds": "TODO"}
            assert doc["year"] == {"type": "integer", "bounds": "TODO"}
            assert doc["expensive"] == {"type": "integer", "bounds": "TODO"}
            assert doc["county"] == {"type": "string", "levels": "TODO"}
        else:  # a CSV declares no types: none is guessed from the values
            assert all(spec == {"bounds": "TODO"} for spec in doc.values()), doc
            assert "codebook" in text and "type" not in "".join(
                line for line in text.splitlines() if not line.startswith("#"))
        # no value of the data: no level, no number of the rows (as pandas or CSV prints it)
        assert "County" not in text
        for v in df[["price", "size"]].to_numpy().ravel()[:200]:
            assert repr(float(v)) not in text and f"{v:.0f}" not in text
        assert "codebook" in text and "NEVER take bounds or levels from the data" in text


def test_schema_init_of_neighbouring_csv_files_is_identical(tmp_path):
    """issue 25, finding 2: one value made missing turned 'age' from "integer" to
    "float" and 'smoker' from "bool" to "string" in the template; a template must
    not depend on the values (PRIVACY.md rule 10)."""
    rng = np.random.default_rng(1)
    n = 50
    base = pd.DataFrame({"age": rng.integers(18, 90, n), "smoker": rng.random(n) < 0.3,
                         "income": rng.uniform(1e4, 1e5, n), "region": rng.choice(["n", "s"], n)})
    missing = base.astype(object).copy()
    missing.loc[7, "age"] = None
    missing.loc[3, "smoker"] = None
    changed = base.copy()
    changed.loc[0, "region"] = "west"
    texts = []
    for i, frame in enumerate((base, missing, changed)):
        frame.to_csv(tmp_path / f"d{i}.csv", index=False)
        proc = cli("schema", "init", f"d{i}.csv", cwd=tmp_path)
        assert proc.returncode == 0, proc.stderr
        texts.append(proc.stdout.replace(f"d{i}.csv", "DATA"))
    assert texts[0] == texts[1] == texts[2]
    assert '"integer"' not in texts[0] and '"bool"' not in texts[0]


def test_fit_json_matches_python_and_parquet_matches_csv(files):
    d, df = files
    docs = {}
    for data in ("houses.csv", "houses.parquet"):
        proc = cli("fit", "ols", OLS, "--data", data, "--schema", "schema.toml", "--epsilon", 1,
                   "--seed", 7, "--format", "json", "--out", f"{data}.json", cwd=d)
        assert proc.returncode == 0, proc.stderr
        docs[data] = json.loads((d / f"{data}.json").read_text())
    res = dpmodels.dp_ols(OLS, df, epsilon=1.0, bounds=BOUNDS, levels=LEVELS, bins=BINS,
                          random_state=7).fit(random_state=7)
    assert_same_results(docs["houses.csv"], res)
    assert "seed" not in docs["houses.csv"]  # the seed would let anyone redraw the noise
    assert docs["houses.csv"]["epsilon_spent"] == 1.0
    # the Parquet file is counted by an engine (Dask), to the very same release and fit
    assert docs["houses.parquet"]["params"] == docs["houses.csv"]["params"]
    assert docs["houses.parquet"]["privacy"]["rows"] == docs["houses.csv"]["privacy"]["rows"]


def test_fit_text_and_markdown_outputs(files):
    d, _ = files
    proc = cli("fit", "logit", "expensive ~ size + C(county)", "--data", "houses.csv",
               "--schema", "schema.toml", "--epsilon", 2, "--seed", 1, "--format", "markdown",
               cwd=d)
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert "| term | coef | std err |" in out
    assert "| size |" in out and "| C(county)[T.County6] |" in out
    assert "**Differential privacy**" in out and "epsilon = 2, delta = 0" in out
    # text, html and latex are the summary's own renderings (in process: same code path)
    for fmt, mark in (("text", "Differential privacy"), ("html", "<table"),
                      ("latex", "\\begin{tabular}")):
        target = d / f"out.{fmt}"
        assert main(["fit", "logit", "expensive ~ size + C(county)", "--data",
                     str(d / "houses.csv"), "--schema", str(d / "schema.toml"), "--epsilon",
                     "2", "--seed", "1", "--format", fmt, "--out", str(target)]) == 0
        text = target.read_text()
        assert mark in text and "epsilon" in text


def test_quantreg_q_option(files):
    d, df = files
    proc = cli("fit", "quantreg", "price ~ size + C(county)", "--data", "houses.csv",
               "--schema", "schema.toml", "--epsilon", 1, "--q", 0.25, "--seed", 3,
               "--format", "json", cwd=d)
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["q"] == 0.25
    res = dpmodels.dp_quantreg("price ~ size + C(county)", df, epsilon=1.0, bounds=BOUNDS,
                               levels=LEVELS, bins=BINS, random_state=3).fit(q=0.25,
                                                                            random_state=3)
    assert_same_results(doc, res)


def test_release_then_free_fits_with_ledger(files, tmp_path, capsys):
    d, df = files
    ledger = tmp_path / "budget.json"
    rel = tmp_path / "rel.json"
    proc = cli("ledger", "init", ledger, "--total", 1.5, cwd=d)
    assert proc.returncode == 0, proc.stderr
    proc = cli("release", "price ~ size + year + C(county) + expensive", "--data", "houses.csv",
               "--schema", "schema.toml", "--epsilon", 1, "--seed", 11, "--ledger", ledger,
               "--out", rel, cwd=d)
    assert proc.returncode == 0, proc.stderr
    spends = json.loads(ledger.read_text())["spends"]
    assert [s["epsilon"] for s in spends] == [1.0]
    assert "dpmodels release" in spends[0]["command"] and spends[0]["timestamp"].endswith("Z")
    # the seed is masked (the ledger's paths may hold any digits: look at the seed's argument)
    assert "--seed '***'" in spends[0]["command"]
    assert "--seed 11" not in spends[0]["command"] and "--seed=11" not in spends[0]["command"]
    assert str(df["price"].iloc[0]) not in rel.read_text()  # a release file holds no raw row

    # the same release in Python, then fits on the saved file, for free
    same = dpmodels.release(df, formula="price ~ size + year + C(county) + expensive",
                            epsilon=1.0, bounds=BOUNDS, levels=LEVELS, bins=BINS,
                            random_state=11)
    loaded = dpmodels.load_release(rel)
    assert np.array_equal(loaded.counts, same.counts)
    for model, formula, fn in (("ols", OLS, dpmodels.dp_ols),
                               ("mnlogit", "county ~ expensive", dpmodels.dp_mnlogit)):
        proc = cli("fit", model, formula, "--release", rel, "--seed", 2, "--format", "json",
                   cwd=d)
        assert proc.returncode == 0, proc.stderr
        doc = json.loads(proc.stdout)
        assert doc["epsilon_spent"] == 0.0
        assert doc["privacy"]["budget"] == "charged epsilon=1; accountant: 1 of 1.5 spent"
        res = fn(formula, same).fit(random_state=2)
        if model == "ols":
            assert_same_results(doc, res)
        else:  # equations x terms
            assert list(doc["params"]) == [str(c) for c in res.params.columns]
            for c in res.params.columns:
                assert doc["params"][str(c)] == pytest.approx(res.params[c].to_dict(),
                                                              rel=1e-12)
            assert set(doc["conf_int"]) == {str(c) for c in res.params.columns}
    assert json.loads(ledger.read_text())["spends"] == spends  # the fits spent nothing

    # 0.5 left: a fit asking 1 is refused before the data file is even opened
    proc = cli("fit", "ols", OLS, "--data", "no-such-file.csv", "--schema", "schema.toml",
               "--epsilon", 1, "--ledger", ledger, cwd=d)
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1 and "0.5 of epsilon 1.5 left" in proc.stderr
    assert "--release" in proc.stderr
    assert json.loads(ledger.read_text())["spends"] == spends
    # 0.5 fits, and is recorded (in process: the same code)
    assert main(["fit", "ols", OLS, "--data", str(d / "houses.csv"), "--schema",
                 str(d / "schema.toml"), "--epsilon", "0.5", "--ledger", str(ledger),
                 "--seed", "1"]) == 0
    assert "accountant: 1.5 of 1.5 spent" in capsys.readouterr().out
    assert [s["epsilon"] for s in json.loads(ledger.read_text())["spends"]] == [1.0, 0.5]


def test_todo_in_schema_is_refused(files, tmp_path):
    d, _ = files
    schema = tmp_path / "todo.toml"
    schema.write_text(SCHEMA.replace("bounds = [0, 3000]", 'bounds = "TODO"'))
    proc = cli("fit", "ols", OLS, "--data", "houses.csv", "--schema", schema, "--epsilon", 1,
               cwd=d)
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr
    assert "'size'" in proc.stderr and "TODO" in proc.stderr and "codebook" in proc.stderr
    # a TODO for a variable the formula does not use is fine
    assert main(["fit", "ols", "price ~ C(county)", "--data", str(d / "houses.csv"),
                 "--schema", str(schema), "--epsilon", "1", "--seed", "0",
                 "--format", "json", "--out", str(tmp_path / "ok.json")]) == 0


@pytest.mark.parametrize("case", [
    "missing data", "missing schema", "bad toml", "unknown model", "not in schema",
    "not in data", "no epsilon", "epsilon 0", "epsilon text", "epsilon inf",
    "missing release", "missing ledger", "string response",
])
def test_errors_one_line_exit_2(files, tmp_path, case, capsys):
    d, _ = files
    bad = tmp_path / "bad.toml"
    bad.write_text("[variables.price\nbounds = [1, 2]\n")
    small = tmp_path / "small.toml"
    small.write_text(SCHEMA.replace("[variables.year]\nlevels = [1, 2, 3, 4]\n", ""))
    base = ["fit", "ols", OLS, "--data", str(d / "houses.csv"), "--schema",
            str(d / "schema.toml"), "--epsilon", "1"]
    argv, expect = {
        "missing data": (base[:4] + ["nope.csv"] + base[5:], ["'nope.csv'", "check the path"]),
        "missing schema": (base[:6] + ["nope.toml"] + base[7:], ["'nope.toml'", "check the path"]),
        "bad toml": (base[:6] + [str(bad)] + base[7:], ["not valid TOML", "schema init"]),
        "unknown model": (["fit", "probit"] + base[2:], ["unknown model 'probit'", "ols, logit"]),
        "not in schema": (base[:6] + [str(small)] + base[7:],
                          ["'year'", "not declared in the schema", "[variables.year]"]),
        "not in data": (["fit", "ols", "price ~ rooms"] + base[3:], ["rooms"]),
        "no epsilon": (base[:-2], ["--epsilon is required", "--release"]),
        "epsilon 0": (base[:-1] + ["0"], ["--epsilon", "> 0"]),
        "epsilon text": (base[:-1] + ["one"], ["--epsilon", "'one'"]),
        "epsilon inf": (base[:-1] + ["inf"], ["--epsilon", "finite"]),
        "missing release": (["fit", "ols", OLS, "--release", "nope.json"],
                            ["'nope.json'", "check the path"]),
        "missing ledger": (base + ["--ledger", str(tmp_path / "none.json")],
                           ["ledger", "does not exist", "ledger init"]),
        "string response": (["fit", "ols", "county ~ size"] + base[3:],
                            ["'county'", "must be numeric", "mnlogit"]),
    }[case]
    if case in ("missing data", "unknown model", "no epsilon"):  # through the real command
        proc = cli(*argv, cwd=tmp_path)
        code, err = proc.returncode, proc.stderr
    else:
        code, err = main(argv), capsys.readouterr().err
    assert code == 2
    assert err.count("\n") == 1 and "Traceback" not in err, err
    assert err.startswith("dpmodels")
    for word in expect:
        assert word in err, (word, err)


def test_debug_shows_the_traceback(files, tmp_path):
    d, _ = files
    proc = cli("fit", "ols", OLS, "--data", "nope.csv", "--schema", "schema.toml",
               "--epsilon", 1, "--debug", cwd=d)
    assert proc.returncode == 2
    assert "Traceback" in proc.stderr and proc.stderr.strip().splitlines()[-1].startswith(
        "dpmodels fit: error:")


def test_ledger_init_refuses_to_overwrite(tmp_path, capsys):
    ledger = tmp_path / "l.json"
    assert main(["ledger", "init", str(ledger), "--total", "2"]) == 0
    doc = json.loads(ledger.read_text())
    assert doc == {"format": "dpmodels-ledger", "version": 1, "total_epsilon": 2.0, "spends": []}
    assert main(["ledger", "init", str(ledger), "--total", "5"]) == 2
    assert "already exists" in capsys.readouterr().err
    assert json.loads(ledger.read_text())["total_epsilon"] == 2.0


#: The formula releases of dp_ols that the command makes (the registry's saved ones).
OLS_RELEASES = [m for m in MECHANISMS
                if "ols" in m.families and m.codec and m.method and m.name != "histogram"]


@pytest.mark.parametrize("entry", OLS_RELEASES, ids=lambda m: m.name)
def test_formula_release_from_parquet_then_fit(files, tmp_path, entry):
    """--method moments (or another of dp_ols' formula releases): the schema's bins
    are left out; the saved release fits as the same release made in Python."""
    d, df = files
    rel = tmp_path / f"{entry.name}.json"
    proc = cli("release", "price ~ size + year", "--method", entry.name, "--data",
               "houses.parquet", "--schema", "schema.toml", "--epsilon", 1, "--seed", 4,
               "--out", rel, cwd=d)
    assert proc.returncode == 0, proc.stderr
    proc = cli("fit", "ols", "price ~ size + year", "--release", rel, "--format", "json",
               "--seed", 0, cwd=d)
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["privacy"]["type"] == "MomentsReport"
    module, _, name = entry.release.partition(":")
    make = getattr(importlib.import_module(module), name)
    same = make(df, formula="price ~ size + year", epsilon=1.0, bounds=BOUNDS, levels=LEVELS,
                random_state=4)
    assert type(same).__name__ == entry.release_type
    assert_same_results(doc, dpmodels.dp_ols("price ~ size + year", same).fit(random_state=0))


@pytest.mark.parametrize("command", ["release", "fit", "schema init", "ledger init"])
@pytest.mark.parametrize("where", ["missing folder", "a folder"])
def test_an_output_that_cannot_be_written_is_refused_before_any_spend(files, tmp_path, capsys,
                                                                      command, where):
    """issue 25, finding 4: the CLI charged the ledger, then failed to write --out
    (a missing folder), losing the release and naming a temporary file.  Every
    output path is checked first: exit 2, the option and the path named, the
    ledger unchanged."""
    d, _ = files
    ledger = tmp_path / "budget.json"
    assert main(["ledger", "init", str(ledger), "--total", "5"]) == 0
    before = ledger.read_text()
    capsys.readouterr()
    out = tmp_path / "no-such-folder" / "rel.json" if where == "missing folder" else tmp_path
    raw = ["--data", str(d / "houses.csv"), "--schema", str(d / "schema.toml"),
           "--epsilon", "1", "--ledger", str(ledger)]
    argv = {
        "release": ["release", OLS, *raw, "--out", str(out)],
        "fit": ["fit", "ols", OLS, *raw, "--out", str(out)],
        "schema init": ["schema", "init", str(d / "houses.csv"), "--out", str(out)],
        "ledger init": ["ledger", "init", str(out), "--total", "1"],
    }[command]
    code, err = main(argv), capsys.readouterr().err
    assert code == 2, err
    assert "Traceback" not in err and str(out) in err, err
    assert ("--out" if command != "ledger init" else "ledger file") in err
    assert ("does not exist" if where == "missing folder" else "is a folder") in err
    assert ledger.read_text() == before  # nothing spent, nothing recorded
    assert ".rel.json." not in err  # no temporary file named


def test_fit_takes_sample_aggregate_for_every_model(tmp_path):
    """issue 29: ``dpmodels fit --help`` did not list sample-aggregate, and the
    command refused it for mnlogit though dp_mnlogit takes it; the JSON is the
    Python call's."""
    rng = np.random.default_rng(0)
    df = pd.DataFrame({"x": rng.uniform(0, 1, 4000)})
    df["y"] = 1 + 2 * df.x + rng.normal(0, 0.1, 4000)
    df["k"] = rng.integers(0, 3, 4000)
    df.to_csv(tmp_path / "d.csv", index=False)
    (tmp_path / "s.toml").write_text("[variables.x]\nbounds = [0, 1]\n[variables.y]\n"
                                     "bounds = [-1, 4]\n[variables.k]\nlevels = [0, 1, 2]\n")
    helptext = cli("fit", "--help", cwd=tmp_path).stdout
    assert "sample-aggregate" in "".join(helptext.split())  # argparse wraps at the hyphen
    proc = cli("fit", "mnlogit", "k ~ x", "--data", "d.csv", "--schema", "s.toml", "--epsilon", 1,
               "--seed", 1, "--method", "sample-aggregate", "--format", "json", "--out", "m.json",
               cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    doc = json.loads((tmp_path / "m.json").read_text())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = dpmodels.dp_mnlogit("k ~ x", df, epsilon=1.0, bounds={"x": (0, 1)},
                                  levels={"k": [0, 1, 2]}, method="sample-aggregate",
                                  random_state=1).fit()
    got = pd.DataFrame(doc["params"]).to_numpy(float)
    np.testing.assert_allclose(got, np.asarray(res.params, float))


def test_a_column_release_fitted_on_another_scale_warns_through_the_command_line(tmp_path):
    """issue 26, randhie as docs/cli.md shows it: `dpmodels release` on a column
    list bins mdvis linearly; `dpmodels fit ols "np.log1p(mdvis) ~ x"` on it
    warns on stderr, naming the variable and the formula to release instead
    (tests/domain/test_scales.py checks the same through the Python API)."""
    rng = np.random.default_rng(3)
    n = 4_000
    pd.DataFrame({"mdvis": np.minimum(rng.lognormal(0.5, 1.0, n), 100.0).round(1),
                  "x": rng.uniform(0, 10, n).round(3)}).to_csv(tmp_path / "visits.csv",
                                                             index=False)
    (tmp_path / "schema.toml").write_text(
        "[variables.mdvis]\nbounds = [0, 100]\n\n[variables.x]\nbounds = [0, 10]\n")
    made = cli("release", "mdvis, x", "--data", "visits.csv", "--schema", "schema.toml",
               "--epsilon", 1, "--seed", 1, "--out", "rel.json", cwd=tmp_path)
    assert made.returncode == 0, made.stderr
    fit = cli("fit", "ols", "np.log1p(mdvis) ~ x", "--release", "rel.json", "--seed", 2,
              cwd=tmp_path)
    assert fit.returncode == 0, fit.stderr
    said = " ".join(fit.stderr.split())
    assert "'mdvis' is binned on the linear scale" in said and "np.log1p(mdvis)" in said
    assert "formula" in said
    assert "overflow" not in said and "RuntimeWarning" not in said


def test_demo_prints_no_warning_and_its_intervals_cover(capsys):
    """Issue 29: the demo's first finding was "WARNING: binning may bias Intercept, ...
    by up to 9.8 standard errors" (Lei's histogram at 10 bins).  It now fits on the
    moments release (`DEMO_METHOD`), which bins nothing.  At the default n, over five
    seeds, nothing is printed as a warning (on stdout or through warnings) and the
    intervals cover the non-private OLS coefficients (Lei's Table 1, which
    datasets.housing reproduces): 95% intervals, 40 coefficients, 34 is the 0.5%
    quantile of a binomial(40, 0.95)."""
    import warnings

    import statsmodels.formula.api as smf

    import dpmodels as dpm
    from dpmodels.cli.commands import DEMO_BOUNDS, DEMO_FORMULA, DEMO_LEVELS, DEMO_METHOD

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        code, out = run_demo(capsys, "--seed", "1")
    assert code == 0 and "noisy moments" in out
    assert "WARNING" not in out.upper()
    ours = [w for w in caught if issubclass(w.category, (dpm.ReleaseWarning,
                                                         dpm.NotPrivateWarning))]
    assert not ours, [str(w.message) for w in ours]
    df = dpm.datasets.housing(n=250_070, seed=0)
    truth = smf.ols(DEMO_FORMULA, df).fit().params
    covered = 0
    for seed in range(5):
        res = dpm.dp_ols(DEMO_FORMULA, df, epsilon=1.0, bounds=DEMO_BOUNDS, levels=DEMO_LEVELS,
                         method=DEMO_METHOD, random_state=seed).fit()
        assert "WARNING" not in res.summary().as_text()
        ci = res.conf_int().reindex(truth.index)
        covered += int(((ci[0] <= truth) & (truth <= ci[1])).sum())
    assert covered >= 34, covered


@pytest.mark.parametrize("argv, hint", [
    (["fit", "ols", "y ~ x", "--method", "sample_aggregate"], "did you mean 'sample-aggregate'?"),
    (["fit", "ols", "y ~ x", "--epsilion", "1"], "did you mean '--epsilon'?"),
    (["fitt"], "did you mean 'fit'?"),
    (["fit", "ols", "y ~ x", "--sed=3", "--epslon", "2"],
     "did you mean '--seed' for '--sed', '--epsilon' for '--epslon'?"),
])
def test_a_misspelt_option_or_choice_gets_did_you_mean(argv, hint, capsys):
    # before: "unrecognized arguments: --epsilion 1" / "invalid choice: ..." alone
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert hint in err and err.count("\n") == 1, err


def test_an_unknown_option_close_to_nothing_gets_no_guess(capsys):
    assert main(["fit", "ols", "y ~ x", "--bogus"]) == 2
    err = capsys.readouterr().err
    assert "unrecognized arguments: --bogus" in err and "did you mean" not in err


def test_a_histogram_release_says_which_fits_a_direct_fit_would_take_another_release_for(
        tmp_path):
    """issue 46: `dpmodels release` of a formula with many continuous covariates
    says, before it spends, that a direct fit of the formula would take another
    release (naming it and its --method) and how many cells the histogram has
    (the count the saved release then holds); a formula the factors carry gets
    no note."""
    rng = np.random.default_rng(5)
    n = 3_000
    x = rng.uniform(0, 1, (n, 4))
    y = (x @ [1.0, -1.0, 0.5, 0.0] + rng.logistic(0, 1, n) > 0.2).astype(int)
    g = rng.integers(1, 9, n)
    pd.DataFrame({"y": y, "a": x[:, 0], "b": x[:, 1], "c": x[:, 2], "d": x[:, 3],
                  "g": g}).to_csv(tmp_path / "rows.csv", index=False)
    (tmp_path / "schema.toml").write_text(
        "".join(f"[variables.{v}]\nbounds = [0, 1]\n\n" for v in "abcd")
        + "[variables.y]\nlevels = [0, 1]\n\n[variables.g]\nlevels = [1, 2, 3, 4, 5, 6, 7, 8]\n")
    made = cli("release", "y ~ a + b + c + d", "--data", "rows.csv", "--schema", "schema.toml",
               "--epsilon", 1, "--seed", 1, "--out", "rel.json", cwd=tmp_path)
    assert made.returncode == 0, made.stderr
    said = " ".join(made.stderr.split())
    assert said.startswith("note: this histogram of 5 variables has ")
    cells = int(said.split(" has ", 1)[1].split(" cells", 1)[0].replace(",", ""))
    assert cells == dpmodels.load_release(tmp_path / "rel.json").domain.size
    for route in ("dp_ols: moments", "dp_logit: newton", "dp_quantreg: quantile-newton"):
        assert route in said
    assert "--method newton" in said and "--method moments" in said
    # a column list: the same note, of a model over the variables
    made = cli("release", "y, a, b, c, d", "--data", "rows.csv", "--schema", "schema.toml",
               "--epsilon", 1, "--seed", 1, "--out", "columns.json", cwd=tmp_path)
    assert made.returncode == 0, made.stderr
    said = " ".join(made.stderr.split())
    assert "a direct fit of a model over these variables would take another release" in said
    assert f"has {cells:,} cells" in said and "dp_logit: newton" in said
    # the release it names answers the formula: made the same way, no note
    made = cli("release", "y ~ a + b + c + d", "--data", "rows.csv", "--schema", "schema.toml",
               "--epsilon", 1, "--seed", 1, "--out", "newton.json", "--method", "newton",
               cwd=tmp_path)
    assert made.returncode == 0, made.stderr
    assert "note:" not in made.stderr
    # the factors carry this one: every family's direct fit takes the histogram
    made = cli("release", "y ~ a + C(g)", "--data", "rows.csv", "--schema", "schema.toml",
               "--epsilon", 1, "--seed", 1, "--out", "carried.json", cwd=tmp_path)
    assert made.returncode == 0, made.stderr
    assert "note:" not in made.stderr


def test_the_program_raises_glibc_thresholds_and_a_script_keeps_its_own():
    """issue 46: `dpmodels` (the console script and ``python -m dpmodels``) runs
    `dpmodels.__main__.program`, which tunes glibc's malloc for large row passes
    (dpmodels.cli.allocator); `main()` alone, as a script calls it, does not."""
    import platform
    import tomllib

    from dpmodels.cli import allocator

    script = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    assert script["dpmodels"] == "dpmodels.__main__:program"
    glibc = sys.platform.startswith("linux") and platform.libc_ver()[0] == "glibc"
    # in a child process, so this test process keeps its allocator
    probe = ("import sys; from dpmodels.cli import allocator; "
             "sys.exit(0 if allocator.tune() else 3)")
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO_ROOT), env.get("PYTHONPATH")]))
    done = subprocess.run([sys.executable, "-c", probe], env=env, timeout=120)
    assert done.returncode == (0 if glibc else 3)
    assert allocator.MMAP_THRESHOLD == 32 * 2**20  # glibc's largest: a larger one is refused
