"""The tests mirror the package: every test module sits in the folder of what it
tests (a layer's package, a mechanism's folder, or one of the cross-cutting suites),
and shares code only through ``tests/support/`` and ``tests/conftest.py``, never by
importing another test module (which would run that module's imports, and tie the
two files' edits together)."""

from __future__ import annotations

import ast
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]
LAYER_FOLDERS = {"package", "core", "domain", "data", "output", "mechanisms", "inference",
                 "models", "front", "cli"}
CROSS_CUTTING = {"privacy", "contracts", "benchmarks", "docs", "support"}


def _test_module_imports(path: Path) -> list[str]:
    """The test modules ``path`` imports (absolute ``tests.…test_x`` or relative)."""
    out = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            module = node.module or ""
            parts = module.split(".")
            names = [a.name for a in node.names]
            if (node.level == 0 and parts[0] == "tests" and parts[-1].startswith("test_")) or (
                    node.level > 0 and (parts[-1].startswith("test_")
                                        or any(n.startswith("test_") for n in names))):
                out.append(f"{'.' * node.level}{module}: {', '.join(names)}")
        elif isinstance(node, ast.Import):
            out += [a.name for a in node.names
                    if a.name.startswith("tests.") and a.name.split(".")[-1].startswith("test_")]
    return out


def test_every_test_module_sits_in_a_folder_of_the_package_or_a_suite():
    loose = sorted(p.name for p in TESTS.glob("test_*.py"))
    assert not loose, f"move these into the folder of what they test: {loose}"
    folders = {p.relative_to(TESTS).parts[0] for p in TESTS.rglob("test_*.py")}
    assert folders <= LAYER_FOLDERS | CROSS_CUTTING, folders - LAYER_FOLDERS - CROSS_CUTTING
    mechanisms = {p.name for p in (TESTS / "mechanisms").iterdir() if p.is_dir()} - {
        "__pycache__"}
    assert {"histogram", "moments", "newton", "local", "sample_aggregate"} <= mechanisms


def test_no_test_module_imports_another():
    found = {str(p.relative_to(TESTS)): _test_module_imports(p)
             for p in TESTS.rglob("*.py")}
    found = {k: v for k, v in found.items() if v}
    assert not found, f"share these through tests/support/: {found}"


def test_the_check_sees_an_import_of_a_test_module(tmp_path):
    f = tmp_path / "x.py"
    f.write_text("from tests.privacy.test_neighbours import mask\nfrom .test_cli import X\n"
                 "from tests.support.neighbours import mask\nimport tests.core.test_budget\n")
    assert len(_test_module_imports(f)) == 3
