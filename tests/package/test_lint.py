"""Lint and type checks of the package, as part of the test run.

``ruff check dpmodels`` and ``mypy dpmodels`` with the settings of
pyproject.toml ([tool.ruff], [tool.mypy]); both tools come with the ``test``
extra (``lint``), import order (ruff's I rule) included.
"""

from __future__ import annotations

import importlib.util
import pathlib
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]


def _run(tool: str, *args: str) -> subprocess.CompletedProcess:
    if importlib.util.find_spec(tool) is None:
        pytest.skip(f"{tool} is not installed (pip install '.[lint]'; the test extra has it)")
    return subprocess.run([sys.executable, "-m", tool, *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=600)


def _explain(proc: subprocess.CompletedProcess) -> str:
    return f"exit status {proc.returncode}\n{proc.stdout}\n{proc.stderr}"


def test_ruff():
    proc = _run("ruff", "check", "dpmodels", "--no-cache", "--output-format", "concise")
    assert proc.returncode == 0, _explain(proc)


def test_mypy(tmp_path):
    # a cache of its own: nothing is written into the checkout (about 20 s cold)
    proc = _run("mypy", "dpmodels", "--cache-dir", str(tmp_path / "mypy_cache"))
    assert proc.returncode == 0, _explain(proc)
