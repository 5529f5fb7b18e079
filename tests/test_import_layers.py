"""The package's import graph (issue 27): what must not grow while the layout
is being split into layers.

An ``ast`` pass over every module's ``from ... import`` statements, lazy
(function-level) imports included.  Two ratchets hold today's counts as
ceilings, so that a change can lower them and none can raise them: the
largest import cycle and the number of private names (``_x``) imported
across modules.  And the pieces that are already leaves stay leaves: the
report base, the accountant and the registry import no dpmodels module at
module level.
"""

from __future__ import annotations

import ast
import sys
from collections import defaultdict
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1] / "dpmodels"

#: Ceilings: lower them when a change lowers the count.  Session 39: the cycle 34
#: modules (33 before the registry), private cross-imports 82 -> 71 (the report's
#: closing rows and the moments' axis description and published frame named publicly).
MAX_CYCLE = 34
MAX_PRIVATE_IMPORTS = 71


def _modules() -> dict[str, Path]:
    out = {}
    for f in ROOT.rglob("*.py"):
        parts = f.relative_to(ROOT).with_suffix("").parts
        name = ".".join(("dpmodels",) + parts)
        out[name.removesuffix(".__init__")] = f
    return out


def _is_type_checking(node) -> bool:
    return isinstance(node, ast.If) and (
        (isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING")
        or (isinstance(node.test, ast.Attribute) and node.test.attr == "TYPE_CHECKING"))


def _graph(top_level_only: bool = False):
    """(edges, private imports): module -> imported dpmodels modules."""
    mods = _modules()
    edges, private = defaultdict(set), 0
    for name, path in mods.items():
        tree = ast.parse(path.read_text())
        package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
        typing_only = {id(n) for block in ast.walk(tree) if _is_type_checking(block)
                       for stmt in block.body for n in ast.walk(stmt)}
        nodes = tree.body if top_level_only else ast.walk(tree)
        for node in nodes:
            if id(node) in typing_only:  # ``if TYPE_CHECKING:`` imports never run
                continue
            if not isinstance(node, ast.ImportFrom):
                continue
            if node.level:
                base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if not target.startswith("dpmodels"):
                continue
            for alias in node.names:
                full = f"{target}.{alias.name}"
                module = full if full in mods else target
                if module in mods and module != name:
                    edges[name].add(module)
                    if alias.name.startswith("_") and not alias.name.startswith("__"):
                        private += 1
    return mods, edges, private


def _largest_cycle(mods, edges) -> int:
    """Size of the largest strongly connected component (Tarjan)."""
    sys.setrecursionlimit(max(10_000, sys.getrecursionlimit()))
    index, low, stack, on, best, counter = {}, {}, [], set(), 1, [0]

    def visit(v):
        nonlocal best
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in edges[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            size = 0
            while True:
                w = stack.pop()
                on.discard(w)
                size += 1
                if w == v:
                    break
            best = max(best, size)

    for v in mods:
        if v not in index:
            visit(v)
    return best


def test_the_largest_import_cycle_does_not_grow():
    mods, edges, _ = _graph()
    size = _largest_cycle(mods, edges)
    assert size <= MAX_CYCLE, f"the largest import cycle grew to {size} modules"


def test_private_names_imported_across_modules_do_not_grow():
    _, _, private = _graph()
    assert private <= MAX_PRIVATE_IMPORTS, (
        f"{private} private names are imported across modules: give the shared ones a public "
        "name where they live")


@pytest.mark.parametrize("leaf", ["dpmodels.report", "dpmodels.accountant", "dpmodels.registry"])
def test_leaves_import_no_dpmodels_module_at_module_level(leaf):
    _, edges, _ = _graph(top_level_only=True)
    allowed = {"dpmodels.errors"}  # the exceptions are the bottom of every layer
    assert edges[leaf] <= allowed, edges[leaf] - allowed


def test_the_graph_sees_a_known_edge_and_cycle():
    # the check can fail: it finds an import we know of and a cycle we know of
    mods, edges, _ = _graph()
    assert "dpmodels.report" in edges["dpmodels.selection"]
    toy = defaultdict(set, {"a": {"b"}, "b": {"a"}, "c": {"a"}})
    assert _largest_cycle(["a", "b", "c"], toy) == 2
    assert _largest_cycle(mods, edges) > 1  # the package has a cycle today (issue 27)
