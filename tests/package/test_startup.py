"""Start-up: ``import dpmodels`` and the command's help and usage
errors load no numerical library.

``import dpmodels`` took 1.5 s (pandas, scipy.stats, statsmodels, matplotlib
through dpmodels.output.plots, dpmodels.mechanisms.local), most of every ``dpmodels`` command's
overhead.  The package now resolves its public names on first use (PEP 562),
and the command imports pandas, scipy, statsmodels and patsy inside the
commands that use them.  Each check runs a fresh interpreter and reads
``sys.modules`` (no timing is asserted here; benchmarks/startup.py measures
the wall times).
"""

from __future__ import annotations

import json
import os
import pickle
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
HEAVY = ("pandas", "scipy", "statsmodels", "matplotlib", "patsy")


def _python(code: str, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True,
                          env=env, cwd=ROOT, timeout=300)


def _loaded_after(code: str, *args: str) -> tuple[list[str], subprocess.CompletedProcess]:
    """The heavy modules imported once ``code`` has run (printed at exit, so that
    a ``SystemExit`` from ``--help`` still reports them)."""
    probe = ("import atexit, json, sys\n"
             f"atexit.register(lambda: print('LOADED=' + json.dumps(sorted(m for m in {HEAVY!r} "
             "if m in sys.modules))))\n" + code)
    out = _python(probe, *args)
    line = [s for s in out.stdout.splitlines() if s.startswith("LOADED=")]
    assert line, out.stderr
    return json.loads(line[-1].removeprefix("LOADED=")), out


def test_import_dpmodels_loads_no_numerical_library():
    out = _python("import dpmodels, sys; print(sorted(m for m in "
                  "('pandas','scipy','statsmodels','matplotlib','patsy') if m in sys.modules))")
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


@pytest.mark.parametrize("argv", [["--help"], ["fit", "--help"], ["release", "--help"],
                                  ["--version"], ["fit", "ols", "y ~ x"],
                                  ["fit", "ols", "y ~ x", "--method", "sample_aggregate"],
                                  ["demo", "--epsilon", "0"]],
                         ids=["help", "fit-help", "release-help", "version", "no-data",
                              "bad-method", "bad-epsilon"])
def test_the_command_starts_without_numerical_libraries(argv):
    # the console script runs `from dpmodels.__main__ import program; sys.exit(program())`
    loaded, out = _loaded_after("import sys\nfrom dpmodels.__main__ import program\n"
                                "sys.exit(program(sys.argv[1:]))", *argv)
    assert loaded == []
    assert out.returncode == (0 if argv[-1] in ("--help", "--version") else 2), out.stderr


def test_python_m_dpmodels_help_loads_no_numerical_library():
    out = _python("import runpy, sys; sys.argv = ['dpmodels', 'fit', '--help']; "
                  "import atexit; atexit.register(lambda: print('LOADED', sorted(m for m in "
                  f"{HEAVY!r} if m in sys.modules))); "
                  "runpy.run_module('dpmodels', run_name='__main__')")
    assert "LOADED []" in out.stdout, out.stdout[-500:] + out.stderr
    assert "sample-aggregate" in out.stdout


def test_the_probe_sees_a_heavy_import():
    # the check can fail: a command that reads data imports pandas
    loaded, _ = _loaded_after("import dpmodels\ndpmodels.datasets")
    assert "pandas" in loaded


def test_fit_help_lists_every_method_whole():
    """``sample-aggregate`` was printed "sample-" / "aggregate" across two lines."""
    from dpmodels.cli.commands import FIT_METHODS, build_parser
    from dpmodels.front.methods import FAMILY_METHODS, ROUTED_METHODS

    known = {m for ms in FAMILY_METHODS.values() for m in ms} | set(ROUTED_METHODS)
    assert set(FIT_METHODS) == known  # the command's list is the library's
    fit = build_parser()._subparsers._group_actions[0].choices["fit"]
    for columns in ("60", "80", "120"):
        os.environ["COLUMNS"] = columns
        try:
            text = fit.format_help()
        finally:
            del os.environ["COLUMNS"]
        words = text.split()
        for method in FIT_METHODS:
            assert any(w.strip("(;,") == method for w in words), (columns, method, text)
        assert not any(w.endswith("-") for w in words), text


def test_every_public_name_resolves_lazily():
    out = _python(
        "import dpmodels as dpm, types\n"
        "missing = [n for n in dpm.__all__ if getattr(dpm, n, None) is None]\n"
        "import dpmodels.mechanisms.histogram, dpmodels.output.plots\n"  # the submodule does not replace the function
        "print(missing, callable(dpm.release), isinstance(dpm.plots, types.ModuleType),\n"
        "      isinstance(dpm.local, types.ModuleType), set(dpm.__all__) <= set(dir(dpm)))")
    assert out.stdout.split() == ["[]", "True", "True", "True", "True"], out.stderr


def test_from_dpmodels_import_every_name_and_the_homes_match_all():
    import dpmodels

    namespace: dict = {}
    exec("from dpmodels import *", namespace)
    assert set(dpmodels.__all__) <= set(namespace)
    assert set(dpmodels._HOMES) == set(dpmodels.__all__) | {"plots"}
    with pytest.raises(AttributeError, match="no attribute 'dp_olss'"):
        dpmodels.dp_olss  # noqa: B018


def test_a_release_pickled_in_one_process_loads_in_a_fresh_one(tmp_path):
    # pickle finds classes by module path: a fresh interpreter that only imported
    # dpmodels (lazily) unpickles a results object
    import numpy as np
    import pandas as pd

    import dpmodels as dpm

    rng = np.random.default_rng(3)
    df = pd.DataFrame({"x": rng.uniform(0, 10, 2_000)})
    df["y"] = df.x + rng.normal(0, 1, 2_000)
    res = dpm.dp_ols("y ~ x", df, epsilon=1.0, bounds={"x": (0, 10), "y": (-5, 15)},
                     method="histogram", random_state=0).fit(n_boot=20, random_state=0)
    path = tmp_path / "res.pkl"
    path.write_bytes(pickle.dumps(res))
    out = _python("import pickle, sys, dpmodels\n"
                  "res = pickle.loads(open(sys.argv[1], 'rb').read())\n"
                  "print(round(float(res.params['x']), 10))", str(path))
    assert out.returncode == 0, out.stderr
    assert float(out.stdout) == pytest.approx(round(float(res.params["x"]), 10))
