"""Print figures on the shape of the code tree at git revisions, as a markdown table.

One column per revision: dpmodels/ modules (total, per package), the largest
module, the largest function (``end_lineno - lineno + 1``, nested ones count
on their own) and how many exceed 150 lines, private cross-imports (names with
one leading underscore from another dpmodels module; relative and
function-level imports included, ``if TYPE_CHECKING:`` not), test files, test
modules importing a ``test_*`` module or anything under tests/, docs page sizes
and dpmodels/ line totals.  Files come from ``git ls-tree``/``git show``, never
the work tree, so old revisions work.  Run from anywhere::

    python benchmarks/tree_figures.py b3f9846 HEAD
"""
from __future__ import annotations

import ast
import subprocess
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LONG = 150  # a function over this many lines counts as long


def git(*args: str) -> str:
    """Run ``git *args`` in the repository root and return its standard output."""
    return subprocess.run(["git", *args], cwd=ROOT, check=True, capture_output=True,
                          text=True, encoding="utf-8", errors="replace").stdout


def folder(path: str, top: str) -> str:
    """Return the first folder under ``top`` holding ``path``, or ``"(root)"``."""
    parts = path[len(top) + 1:].split("/")
    return parts[0] if len(parts) > 1 else "(root)"


def module_name(path: str) -> tuple[str, str]:
    """Return (module, package) for a path: ``dpmodels/core/budget.py`` gives
    ``("dpmodels.core.budget", "dpmodels.core")``, an ``__init__.py`` its package twice."""
    parts = path[:-3].split("/")
    if parts[-1] == "__init__":
        return ".".join(parts[:-1]), ".".join(parts[:-1])
    return ".".join(parts), ".".join(parts[:-1])


def imports(tree: ast.AST, package: str) -> list[tuple[str, list[str]]]:
    """List every import as (resolved module, imported names).

    Function-level imports count; ``if TYPE_CHECKING:`` bodies are skipped;
    relative imports are resolved against ``package``; ``import a.b`` gives
    ``("a.b", [])``.

    Parameters
    ----------
    tree : ast.AST
        The parsed module.
    package : str
        The dotted package the module sits in.

    Returns
    -------
    list of (str, list of str)
    """
    found: list[tuple[str, list[str]]] = []

    def visit(node: ast.AST) -> None:
        test = getattr(node, "test", None)
        name = getattr(test, "id", None) or getattr(test, "attr", None)
        if isinstance(node, ast.If) and name == "TYPE_CHECKING":
            for stmt in node.orelse:
                visit(stmt)
            return
        if isinstance(node, ast.Import):
            found.extend((alias.name, []) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            parts = package.split(".")
            base = parts[:len(parts) - node.level + 1] if node.level else []
            target = ".".join(base + [node.module] if node.module else base)
            found.append((target, [alias.name for alias in node.names]))
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(tree)
    return found


def functions(tree: ast.AST, path: str) -> list[tuple[int, str, str]]:
    """List every function and method, nested ones too, as
    ``(end_lineno - lineno + 1, qualified name, path)``.

    Parameters
    ----------
    tree : ast.AST
        The parsed module.
    path : str
        The module's path, carried into the result.

    Returns
    -------
    list of (int, str, str)
    """
    out: list[tuple[int, str, str]] = []

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                name = prefix + child.name
                if not isinstance(child, ast.ClassDef):
                    out.append(((child.end_lineno or child.lineno) - child.lineno + 1, name, path))
                visit(child, name + ".")
            else:
                visit(child, prefix)

    visit(tree, "")
    return out


def figures(rev: str) -> dict[str, str]:
    """Compute every figure for one revision.

    Parameters
    ----------
    rev : str
        Any revision git understands (``b3f9846``, ``HEAD``).

    Returns
    -------
    dict of str to str
        Figure name to the text of its cell.
    """
    text = {p: git("show", f"{rev}:{p}") for p in git("ls-tree", "-r", "--name-only", rev).splitlines()
            if (p.startswith(("dpmodels/", "tests/")) and p.endswith(".py"))
            or (p.startswith("docs/") and p.endswith(".md"))}
    lines = {p: len(t.splitlines()) for p, t in text.items()}
    src = sorted(p for p in text if p.startswith("dpmodels/"))
    per_pkg = Counter(folder(p, "dpmodels") for p in src)
    big = max(src, key=lambda p: lines[p])
    defs: list[tuple[int, str, str]] = []
    private, across = 0, 0
    for p in src:
        tree = ast.parse(text[p], p)
        defs += functions(tree, p)
        me, package = module_name(p)
        for target, imported in imports(tree, package):
            if target.split(".")[0] == "dpmodels" and target != me:
                hits = sum(n.startswith("_") and not n.startswith("__") for n in imported)
                private += hits
                file = target.replace(".", "/") + ".py"
                if file not in text:  # a name imported from a package's __init__
                    file = file[:-3] + "/__init__.py"
                across += hits * (folder(file, "dpmodels") != folder(p, "dpmodels"))
    fn = max(defs)
    tests = sorted(p for p in text if p.startswith("tests/") and Path(p).name.startswith("test_"))
    per_dir = Counter(folder(p, "tests") for p in tests)
    stems = {p.rsplit("/", 1)[-1][:-3] for p in tests}
    to_test, to_any = 0, 0
    for p in tests:
        me, package = module_name(p)
        kinds: set[str] = set()
        for target, imported in imports(ast.parse(text[p], p), package):
            for m in [target] + [f"{target}.{n}" for n in imported]:
                leaf = m.rsplit(".", 1)[-1]
                in_tree = m.replace(".", "/") + ".py" in text or (m == leaf and leaf in stems)
                if m != me and leaf.startswith("test_") and in_tree:
                    kinds.add("test")
            if target.split(".")[0] == "tests" and target != me:
                kinds.add("any")
        to_test += "test" in kinds
        to_any += "any" in kinds
    docs = sorted((p for p in text if p.startswith("docs/")), key=lambda p: -lines[p])
    return {
        "modules in dpmodels/": str(len(src)),
        "modules per package": ", ".join(f"{k} {v}" for k, v in sorted(per_pkg.items())),
        "packages (incl. (root))": str(len(per_pkg)),
        "largest module": f"{big} ({lines[big]} lines)",
        "largest function/method": f"{fn[1]} in {fn[2]} ({fn[0]} lines)",
        f"functions over {LONG} lines": str(sum(n > LONG for n, _, _ in defs)),
        "functions and methods (incl. nested)": str(len(defs)),
        "private cross-imports (names)": str(private),
        "... of which across packages": str(across),
        "test files tests/**/test_*.py": str(len(tests)),
        "test files per folder": ", ".join(f"{k} {v}" for k, v in sorted(per_dir.items())),
        "test modules importing a test_* module": str(to_test),
        "test modules importing any tests/ module": str(to_any),
        "docs pages (docs/**/*.md)": str(len(docs)),
        "docs lines": str(sum(lines[p] for p in docs)),
        "5 largest docs pages": ", ".join(f"{p[5:]} {lines[p]}" for p in docs[:5]),
        "lines of dpmodels/**/*.py": str(sum(lines[p] for p in src)),
    }


def main(revs: list[str]) -> None:
    """Print the markdown table, one column per revision.

    Parameters
    ----------
    revs : list of str
        The revisions, in column order.
    """
    if not revs:
        sys.exit(__doc__)
    cols = [figures(rev) for rev in revs]
    shas = [git("rev-parse", "--short", rev).strip() for rev in revs]
    print("| figure | " + " | ".join(f"{r} ({s})" if r != s else r for r, s in zip(revs, shas)) + " |")
    print("|---" * (len(revs) + 1) + "|")
    for key in cols[0]:
        print(f"| {key} | " + " | ".join(c[key] for c in cols) + " |")


if __name__ == "__main__":
    main(sys.argv[1:])
