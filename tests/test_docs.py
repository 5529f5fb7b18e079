"""The documentation site: every page's Python examples run as written, and the
site builds with MkDocs in strict mode (a broken link, a missing page or an
API reference to a name that does not exist fails the build).

Convention: a fenced block opened with ```python is an example that must run
(the blocks of one page share a namespace, in order); an illustrative snippet
that cannot run here (a cluster address, ``bounds=...``) is opened with ```py.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import warnings
from pathlib import Path

import matplotlib
import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
PAGES = sorted(p for p in DOCS.rglob("*.md"))
RUNNABLE = [p for p in PAGES if "```python\n" in p.read_text()]


def python_blocks(page: Path) -> list[str]:
    return re.findall(r"```python\n(.*?)```", page.read_text(), flags=re.S)


def test_the_site_has_runnable_examples():
    names = {p.relative_to(DOCS).as_posix() for p in RUNNABLE}
    assert {"index.md", "tutorial.md"} <= names


@pytest.mark.parametrize("page", RUNNABLE, ids=lambda p: p.relative_to(DOCS).as_posix())
def test_page_examples_run(page, monkeypatch, tmp_path):
    matplotlib.use("Agg")
    monkeypatch.chdir(tmp_path)  # examples that write files write them here
    namespace: dict = {"__name__": "__docs__"}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for i, block in enumerate(python_blocks(page)):
            exec(compile(block, f"{page.name}[block {i}]", "exec"), namespace)  # noqa: S102


def test_mkdocs_builds_strict(tmp_path):
    out = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-q",
                          "-f", str(ROOT / "mkdocs.yml"), "-d", str(tmp_path / "site")],
                         cwd=ROOT, capture_output=True, text=True, timeout=600,
                         env={"NO_MKDOCS_2_WARNING": "1", "PATH": shutil.os.environ["PATH"],
                              "HOME": shutil.os.environ.get("HOME", "/tmp")})
    assert out.returncode == 0, out.stderr[-3000:]
    assert (tmp_path / "site" / "api" / "index.html").exists()
    api = (tmp_path / "site" / "api" / "index.html").read_text()
    assert "dp_ols" in api and "Parameters" in api  # the docstrings were rendered
