"""Tests for the ``dpmodels`` command (:mod:`dpmodels.__main__`)."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

import dpmodels
from dpmodels.__main__ import main

REPO_ROOT = Path(__file__).resolve().parents[1]

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
    assert "usage:" in capsys.readouterr().err


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
