"""The ``dpmodels`` command (``python -m dpmodels ...`` is equivalent).

Usage::

    dpmodels schema init DATA --out schema.toml
    dpmodels fit MODEL "FORMULA" --data DATA --schema schema.toml --epsilon EPS
    dpmodels release "FORMULA" --data DATA --schema schema.toml --epsilon EPS --out rel.json
    dpmodels fit MODEL "FORMULA" --release rel.json
    dpmodels ledger init FILE --total EPS
    dpmodels demo [--epsilon EPS] [--seed SEED] [--n N]
    dpmodels --version

The commands live in `dpmodels.cli.commands`; see ``docs/cli.md``.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

from .cli.commands import build_parser, demo, main

__all__ = ["main", "demo", "build_parser", "program"]


def program(argv: Sequence[str] | None = None) -> int:
    """The ``dpmodels`` program: `main()` in a process of its own, with the
    allocator settings of `dpmodels.cli.allocator` (a script calling `main()`
    keeps its own)."""
    from .cli.allocator import tune

    tune()
    return main(argv)


if __name__ == "__main__":
    sys.exit(program())
