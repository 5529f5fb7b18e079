"""MkDocs hook: the API pages' sections that list every mechanism are built from
the registry (`dpmodels.front.registry.MECHANISMS`), so a new entry appears on
them without editing a page.

A page holds a marker where the section goes:

* ``<!-- registry: mechanism-notes -->``: the module notes of every entry's
  release (its maths and privacy argument), in registry order;
* ``<!-- registry: models -->``: the model classes of every entry, one heading
  per mechanism.

What the page already lists by hand (its own ``:::`` lines) is not repeated.
"""

from __future__ import annotations

import pathlib
import re
import sys

MARKER = re.compile(r"<!-- registry: ([\w-]+) -->")


def _notes(mechanisms, listed: set[str]) -> str:
    modules = [m for m in dict.fromkeys(m.release.split(":")[0] for m in mechanisms)
               if m not in listed]
    return "\n".join(f"::: {module}\n    options:\n      members: false\n      heading_level: 2\n"
                     "      show_root_full_path: true\n      show_bases: false\n"
                     for module in modules)


def _models(mechanisms, listed: set[str]) -> str:
    seen = set(listed)
    out = []
    for m in mechanisms:
        classes = [p.replace(":", ".") for p in dict.fromkeys(m.models.values())]
        new = [c for c in classes if c not in seen]
        if not new:
            continue
        seen.update(new)
        how = f'`method="{m.method}"`' if m.method else "its route"
        out.append(f"### {m.name} ({how})\n")
        out += [f"::: {c}\n    options:\n      heading_level: 4\n      show_bases: false\n"
                for c in new]
    return "\n".join(out)


def on_page_markdown(markdown: str, page, config, files) -> str:
    if "<!-- registry:" not in markdown:
        return markdown
    root = str(pathlib.Path(config.config_file_path).resolve().parent)
    if root not in sys.path:  # the registry of the package these docs are built from
        sys.path.insert(0, root)
    from dpmodels.front.registry import MECHANISMS

    sections = {"mechanism-notes": _notes, "models": _models}
    listed = set(re.findall(r"^::: (\S+)", markdown, flags=re.M))  # written on the page

    def expand(match: re.Match) -> str:
        name = match.group(1)
        if name not in sections:
            raise ValueError(f"{page.file.src_path}: unknown registry section {name!r}")
        return sections[name](MECHANISMS, listed)

    return MARKER.sub(expand, markdown)
