"""The contract and privacy suites are collected where the optional engines are
not installed: Dask, Spark, Polars and DuckDB come with extras, and a
suite that imported one of them at module level (the engine fixtures did, through
tests/data/test_engines.py) could not even be listed without it.  The engine
fixtures live in tests/conftest.py and skip through ``importorskip``."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SUITES = ["tests/contracts", "tests/privacy", "tests/mechanisms/moments/test_moments_privacy.py"]
#: What the core install lacks: importing any of these fails in the child.
OPTIONAL = ["dask", "dask.dataframe", "dask.distributed", "pyspark", "pyspark.sql", "polars",
            "duckdb", "narwhals"]


def _collect(blocked: list[str]) -> subprocess.CompletedProcess:
    code = ("import sys\n"
            f"for m in {blocked!r}: sys.modules[m] = None\n"
            "import pytest\n"
            f"sys.exit(pytest.main(['--collect-only', '-q', '-p', 'no:cacheprovider', "
            f"'-n', '0', *{SUITES!r}]))\n")
    return subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                          text=True, timeout=300)


def test_the_suites_are_collected_without_the_optional_engines():
    out = _collect(OPTIONAL)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-2000:]
    assert "tests collected" in out.stdout


def test_the_check_sees_a_suite_that_needs_an_engine():
    # the same child fails to collect a module that imports a blocked engine at the top
    # (test_engines.py imports dask.dataframe): the blocking works
    code = ("import sys\nsys.modules['dask.dataframe'] = None\nimport pytest\n"
            "sys.exit(pytest.main(['--collect-only', '-q', '-p', 'no:cacheprovider', '-n', '0', "
            "'tests/data/test_engines.py']))\n")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True,
                         timeout=300)
    assert out.returncode != 0
