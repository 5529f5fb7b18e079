"""The API reference (docs/api/) is one a user can work from alone.

The site is built once, in strict mode, and its rendered HTML is read: every
name of ``dpmodels.__all__`` has an entry; every ``fit()`` of the model
classes lists each of its parameters; every error and warning is documented;
no private member, no object twice, no raw Sphinx role anywhere on the site.
A cross-reference to a name that does not exist fails the strict build
(checked on a scratch site with the same plugins, not on the committed docs).
"""

from __future__ import annotations

import collections
import html
import importlib
import inspect
import os
import re
import subprocess
import sys
import time
import types
from pathlib import Path

import pytest
import yaml

import dpmodels
from dpmodels.front.registry import MECHANISMS

ROOT = Path(__file__).resolve().parents[2]
API_PAGES = sorted((ROOT / "docs" / "api").glob("*.md"))

#: The model classes a dp_* call returns: those the registry's entries name
#: (``Mechanism.models``; a local release fits the histogram's models).
MODEL_CLASSES = tuple(dict.fromkeys(
    path.replace(":", ".") for m in MECHANISMS for path in m.models.values()))

#: Functions a public module exports for the package's own use (not for users).
MODULE_HELPERS = {"project_to_counts"}

#: A Sphinx role as it renders when nothing interprets it: ":class:`x`" in a
#: docstring becomes ":class:<code>x</code>" in the page.
ROLE = re.compile(r":(?:py:)?(?:class|func|meth|mod|attr|data|exc|obj|const|ref|doc|term)"
                  r":(?:`|<code>)")
HEADING = re.compile(r'<h(\d) id="([^"]+)" class="doc doc-heading"')


def _env() -> dict:
    return {"NO_MKDOCS_2_WARNING": "1", "PATH": os.environ["PATH"],
            "HOME": os.environ.get("HOME", "/tmp")}


def _build(config: Path, site: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict",
                           "-f", str(config), "-d", str(site)],
                          cwd=config.parent, capture_output=True, text=True, timeout=600,
                          env=_env())


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("api_site") / "site"
    start = time.perf_counter()
    done = _build(ROOT / "mkdocs.yml", out)
    seconds = time.perf_counter() - start
    assert done.returncode == 0, done.stderr[-3000:]
    print(f"strict site build: {seconds:.1f} s")
    return out


@pytest.fixture(scope="module")
def api_html(site) -> dict[str, str]:
    """The rendered API pages, by source page."""
    pages = {}
    for page in API_PAGES:
        name = "" if page.stem == "index" else page.stem + "/"
        pages[page.name] = (site / "api" / name / "index.html").read_text()
    return pages


@pytest.fixture(scope="module")
def headings(api_html) -> list[tuple[str, int, str]]:
    """(page, level, id) of every object rendered in the API pages."""
    return [(page, int(level), ident) for page, text in api_html.items()
            for level, ident in HEADING.findall(text)]


def _path_of(obj) -> str:
    if isinstance(obj, types.ModuleType):
        return obj.__name__
    return f"{obj.__module__}.{obj.__qualname__}"


def _resolve(ident: str):
    """The Python object an anchor names (module prefix imported, then attributes)."""
    parts = ident.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for name in parts[cut:]:
            obj = inspect.getattr_static(obj, name)
        return obj
    raise LookupError(ident)


def _section(text: str, ident: str) -> str:
    """The HTML of the object ``ident``, up to the next object's heading."""
    start = text.index(f'id="{ident}"')
    nxt = HEADING.search(text, start + 1)
    return text[start:nxt.start() if nxt else len(text)]


def _table(section: str, title: str = "Parameters") -> dict[str, str]:
    """The rows of one rendered docstring table ("Parameters", "Attributes"):
    name to description (text, tags stripped)."""
    match = re.search(rf'doc-section-title">{title}:</span>(.*?)</table>', section, re.S)
    if match is None:
        return {}

    def text(fragment: str) -> str:
        return html.unescape(re.sub(r"<[^>]+>", "", fragment)).strip()

    rows = {}
    for row in re.findall(r'<tr class="doc-section-item">(.*?)</tr>', match.group(1), re.S):
        cells = re.findall(r"<td>(.*?)</td>", row, re.S)
        description = re.search(r'doc-md-description">(.*?)</div>', row, re.S)
        rows[text(cells[0]).lstrip("*")] = text(description.group(1)) if description else ""
    return rows


def test_the_reference_has_its_pages(api_html):
    assert {"index.md", "models.md", "results.md", "releases.md", "reports.md",
            "errors.md", "domains.md", "local.md", "datasets.md", "mechanisms.md"} <= set(api_html)
    nav = yaml.safe_load((ROOT / "mkdocs.yml").read_text())["nav"]
    api_nav = next(entry["API reference"] for entry in nav if "API reference" in entry)
    assert {p for entry in api_nav for p in entry.values()} == {
        f"api/{p.name}" for p in API_PAGES}


def test_no_raw_role_anywhere_on_the_site(site):
    found = {}
    for page in site.rglob("*.html"):
        hits = ROLE.findall(page.read_text())
        if hits:
            found[page.relative_to(site).as_posix()] = hits[:3]
    assert not found, f"raw Sphinx roles rendered: {found}"


def test_no_raw_role_in_the_docs_sources():
    role = re.compile(r":(?:py:)?(?:class|func|meth|mod|attr|data|exc|obj):`")
    found = [p.relative_to(ROOT).as_posix() for p in (ROOT / "docs").rglob("*.md")
             if role.search(p.read_text())]
    assert not found


def test_every_public_name_has_an_entry(headings):
    ids = {ident for _, _, ident in headings}
    objects = {name: getattr(dpmodels, name) for name in dpmodels.__all__}
    missing = [name for name, obj in objects.items() if _path_of(obj) not in ids]
    assert not missing, f"public names without an entry in the API reference: {missing}"
    # a public module (dpm.local, dpm.datasets): its classes and functions, too
    for name, module in objects.items():
        if isinstance(module, types.ModuleType):
            members = [getattr(module, m) for m in module.__all__]
            missing = [_path_of(m) for m in members if isinstance(m, type | types.FunctionType)
                       and m.__module__ == module.__name__ and _path_of(m) not in ids
                       and m.__name__ not in MODULE_HELPERS]
            assert not missing, f"{name}: {missing} not in the API reference"


def test_every_mechanism_module_has_its_notes(headings):
    """The maths and privacy argument of every mechanism of the registry (its
    module's docstring) are on the mechanism notes page, for the user pages to
    link to."""

    notes = {ident for page, _, ident in headings if page == "mechanisms.md"}
    modules = {m.release.split(":")[0] for m in MECHANISMS}
    assert len(modules) >= 8
    assert not modules - notes, f"mechanisms without notes: {sorted(modules - notes)}"


@pytest.mark.parametrize("path", MODEL_CLASSES)
def test_every_fit_lists_its_parameters(path, api_html, headings):
    cls = _resolve(path)
    fit = cls.fit
    owner = _path_of(fit)  # the class that defines fit (a projected model: its family's)
    assert owner in {ident for _, _, ident in headings}, f"{owner} is not rendered"
    page = next(p for p, _, ident in headings if ident == owner)
    table = _table(_section(api_html[page], owner))
    listed = set(table)
    wanted = [name for name in inspect.signature(fit).parameters if name != "self"]
    assert wanted and not set(wanted) - listed, (
        f"{owner}: parameters {sorted(set(wanted) - listed)} are not in its Parameters table")
    assert "cov_type" in listed
    assert all(table[name] for name in wanted), f"{owner}: a parameter without a description"
    if path.endswith(("DPOLS", "DPLogit", "DPQuantReg", "DPMNLogit")):
        assert "n_boot" in listed  # the bootstrap's size, on every histogram model


def test_the_model_classes_are_rendered(headings):
    ids = {ident for _, _, ident in headings}
    assert not [p for p in MODEL_CLASSES if p not in ids]


def test_every_error_and_warning_is_documented(api_html, headings):
    names = set(dpmodels.__all__) | set(dpmodels.core.errors.__all__)
    classes = [getattr(dpmodels, n, None) or getattr(dpmodels.core.errors, n) for n in names]
    raised = [c for c in classes if isinstance(c, type) and issubclass(c, Warning | Exception)]
    assert len(raised) >= 15
    on_page = {ident for page, _, ident in headings if page == "errors.md"}
    missing = [_path_of(c) for c in raised if _path_of(c) not in on_page]
    assert not missing, f"errors/warnings not on the errors page: {missing}"
    for c in raised:  # each with its own words, not an empty entry
        assert re.search(r"\w", _section(api_html["errors.md"], _path_of(c)).split(
            "doc-contents", 1)[1])


def test_no_private_member_is_rendered(headings, api_html):
    private = [ident for _, _, ident in headings
               if any(part.startswith("_") for part in ident.split("."))]
    assert not private
    for text in api_html.values():  # nor any private name in a heading or a class's bases
        assert "doc-function-name\">_" not in text and "__init__" not in text
        bases = [re.sub(r"<[^>]+>", "", b) for b in
                 re.findall(r'doc-class-bases">(.*?)</p>', text, re.S)]
        assert not [b for b in bases if re.search(r"(?<![\w.])_\w", b)], bases


def test_no_object_is_rendered_twice(headings):
    counts = collections.Counter(ident for _, _, ident in headings)
    assert not [i for i, c in counts.items() if c > 1]
    by_object: dict[int, list[str]] = collections.defaultdict(list)
    for _, _, ident in headings:
        obj = _resolve(ident)
        if isinstance(obj, type | types.FunctionType | types.ModuleType):
            by_object[id(obj)].append(ident)
    assert not [paths for paths in by_object.values() if len(paths) > 1]


def test_the_results_document_their_dp_members(api_html):
    results = api_html["results.md"]
    for member in ("bse", "conf_int", "cov_params", "compare_f_test", "measured_wald"):
        assert f'id="dpmodels.inference.dp_results.DPInferenceResultsMixin.{member}"' in results
    # the attributes a fit adds to statsmodels' results, named in the class docs
    for ident in ("dpmodels.models.linear.FreqRegressionResults",
                  "dpmodels.models.discrete.FreqLogitResults",
                  "dpmodels.models.discrete.FreqMNLogitResults",
                  "dpmodels.models.quantreg.FreqQuantRegResults",
                  "dpmodels.mechanisms.sample_aggregate.model.SampleAggregateResults"):
        attributes = _table(_section(results, ident), "Attributes")
        assert {"privacy", "release"} <= set(attributes), ident
        if "SampleAggregate" not in ident:  # its errors have a closed form: no bootstrap
            assert "dp_inference" in attributes, ident
        assert all(attributes.values()), f"{ident}: an attribute without a description"


def test_the_reports_list_their_fields(api_html):
    reports = api_html["reports.md"]
    for ident, fields in {"dpmodels.core.report.PrivacyReport": ("epsilon", "threshold",
                                                            "noisy_total", "budget"),
                          "dpmodels.core.report.MomentsReport": ("split", "radius",
                                                            "clipped_rows")}.items():
        attributes = _table(_section(reports, ident), "Attributes")
        assert set(fields) <= set(attributes), ident


def _scratch_site(tmp_path: Path, page: str) -> Path:
    """A one-page site with the project's mkdocs.yml (its plugins and options)."""
    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text())
    config.pop("nav")
    config["site_name"] = "scratch"
    config["hooks"] = [str(ROOT / hook) for hook in config.get("hooks", [])]
    for plugin in config["plugins"]:
        if isinstance(plugin, dict) and "mkdocstrings" in plugin:
            plugin["mkdocstrings"]["handlers"]["python"]["paths"] = [str(ROOT)]
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "index.md").write_text(page)
    (tmp_path / "mkdocs.yml").write_text(yaml.safe_dump(config))
    return tmp_path / "mkdocs.yml"


@pytest.mark.parametrize("target, ok", [("dpmodels.mechanisms.histogram.PrivateHistogram", True),
                                        ("dpmodels.nope", False)])
def test_an_unresolved_cross_reference_fails_the_strict_build(tmp_path, target, ok):
    config = _scratch_site(tmp_path, f"# Scratch\n\nSee [the release][{target}].\n\n"
                                     "::: dpmodels.mechanisms.histogram.PrivateHistogram\n")
    done = _build(config, tmp_path / "site")
    assert (done.returncode == 0) is ok, done.stderr[-2000:]
    if not ok:
        assert "Could not find cross-reference target 'dpmodels.nope'" in done.stderr


def test_the_errors_page_tree_is_the_class_hierarchy():
    """The hierarchy drawn on the errors page is the classes' own: every child
    derives from the parent it is drawn under and from what "(also ...)" names."""
    import builtins

    page = (ROOT / "docs" / "api" / "errors.md").read_text()
    tree = re.search(r"```text\n(.*?)```", page, re.S).group(1).splitlines()

    def cls(name: str):
        name = name.split("'")[-1].strip().split(".")[-1]
        found = getattr(dpmodels, name, None) or getattr(builtins, name, None)
        if found is None and name in ("PerfectSeparationError", "PerfectSeparationWarning"):
            from statsmodels.tools import sm_exceptions
            found = getattr(sm_exceptions, name)
        if found is None and name == "LinAlgError":
            import numpy
            found = numpy.linalg.LinAlgError
        assert isinstance(found, type), name
        return found

    stack: list[tuple[int, type]] = []
    drawn = set()
    for line in tree:
        match = re.match(r"^([\s│├└─]*)(\w+)(?: \(also (.+)\))?$", line)
        assert match, line
        depth, child = len(match.group(1)), cls(match.group(2))
        drawn.add(child)
        while stack and stack[-1][0] >= depth:
            stack.pop()
        if stack:
            assert issubclass(child, stack[-1][1]), f"{child.__name__} under {stack[-1][1]}"
        for other in (match.group(3) or "").split(","):
            if other.strip():
                assert issubclass(child, cls(other)), f"{child.__name__} also {other}"
        stack.append((depth, child))
    exported = {getattr(dpmodels, n) for n in dpmodels.__all__}
    raised = {c for c in exported if isinstance(c, type) and issubclass(c, Exception | Warning)}
    assert raised <= drawn, sorted(c.__name__ for c in raised - drawn)


def test_the_overview_lists_every_public_name():
    """The overview's table of public names is complete: each name of
    ``dpmodels.__all__`` is linked there (the subclasses of `DPModelsError` as
    "DPModelsError and its subclasses"), so a new export must be placed."""
    page = (ROOT / "docs" / "api" / "index.md").read_text()
    table = page.split("## Every public name", 1)[1].split("\n## ", 1)[0]
    linked = set(re.findall(r"\[`(\w+)`\]\[", table))
    unlisted = [name for name in dpmodels.__all__ if name not in linked
                and not (isinstance(getattr(dpmodels, name), type)
                         and issubclass(getattr(dpmodels, name), dpmodels.DPModelsError))]
    assert not unlisted, f"not in the overview's table: {unlisted}"
