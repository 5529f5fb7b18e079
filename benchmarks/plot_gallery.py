"""The figures of docs/plots.md, rendered by the page's own examples (issue 29).

Runs every ```python block of ``docs/plots.md`` in order, in a temporary
directory, as ``tests/docs/test_docs.py`` does, and copies the figures they save
under the names ``plots_*.png`` to ``docs/images/``, where the page shows
them.  The images are therefore the output of the code printed beside them;
run this after changing the plots or the page.

Run::

    PYTHONPATH=. python benchmarks/plot_gallery.py
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import shutil
import tempfile
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "plots.md"
IMAGES = ROOT / "docs" / "images"


def main() -> list[Path]:
    import matplotlib

    matplotlib.use("Agg")
    blocks = re.findall(r"```python\n(.*?)```", PAGE.read_text(), flags=re.S)
    here = os.getcwd()
    written = []
    with tempfile.TemporaryDirectory() as tmp:
        os.chdir(tmp)
        try:
            namespace: dict = {"__name__": "__gallery__"}
            with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):
                warnings.simplefilter("ignore")
                for i, block in enumerate(blocks):
                    exec(compile(block, f"plots.md[block {i}]", "exec"), namespace)  # noqa: S102
        finally:
            os.chdir(here)
        for png in sorted(Path(tmp).glob("plots_*.png")):
            shutil.copy(png, IMAGES / png.name)
            written.append(IMAGES / png.name)
    return written


if __name__ == "__main__":
    for path in main():
        print(path.relative_to(ROOT))
