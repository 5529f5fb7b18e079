"""The documentation site: every page's Python examples run as written, the
numbers and outputs its prose quotes are the ones the examples produce, and the
site builds with MkDocs in strict mode (a broken link, a missing page, a missing
benchmark table or an API reference to a name that does not exist fails the build).

Conventions (CONTRIBUTING.md, "Documentation"):

* A fenced block opened with ```python is an example that must run (the blocks
  of one page share a namespace, in order); an illustrative snippet that cannot
  run here (a cluster address, ``bounds=...``) is opened with ```py.
* A number in the prose that an example produces is written after a check
  marker, ``<!-- check: EXPR -->-5.03``: EXPR is evaluated in the page's
  namespace after all its blocks have run and must agree with the written
  number to the written precision (half a unit of its last digit).  A marker
  whose expression cannot be evaluated, or that is not followed by a number,
  fails.  A number a benchmark measured is checked against its result file:
  ``bench(path, row, col)`` reads a cell of a ``benchmarks/results/*.md`` table,
  ``bench_json(path, key, row=None)`` a value of a ``*.json`` result,
  ``bench_all`` every matching row's number (for a quoted range, whose two ends
  are two markers side by side: ``8-<!-- ... -->17``); a missing file, table,
  row, column or key fails with a message naming it.
* A ```text block right after a ``<!-- output -->`` marker is the real output
  of the python block before it: it must equal what that block prints (the
  date and time statsmodels' summary stamps are not compared).
* Code blocks of the user pages (everything but ``docs/api/``) have lines of
  at most 88 characters, so they are not cut off on a 1280 px screen, and no
  user page dumps a module's docstring (``::: module``): the API reference does.
* Measured tables come from ``benchmarks/results/`` through pymdownx.snippets
  (``--8<-- "benchmarks/results/x.md"`` or ``"x.md:FIRST:LAST"``), never retyped;
  a line range must start at a heading or a table and end at a table's last row.
"""

from __future__ import annotations

import contextlib
import io
import json
import math
import re
import shutil
import subprocess
import sys
import warnings
from pathlib import Path

import matplotlib
import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
PAGES = sorted(p for p in DOCS.rglob("*.md"))
USER_PAGES = [p for p in PAGES if p.relative_to(DOCS).parts[0] != "api"]
MAX_CODE_LINE = 88

CHECK = re.compile(r"<!--\s*check:\s*(.*?)\s*-->(\s*)([^\s<]*)", flags=re.S)
NUMBER = re.compile(r"[-+]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?:e[-+]?\d+(?!\w))?")
OUTPUT = re.compile(r"<!--\s*output\s*-->\s*\n```text\n(.*?)```", flags=re.S)
SNIPPET = re.compile(r'^-{2}8<-{2}\s+"([^"]+)"\s*$', flags=re.M)
FENCE = re.compile(r"^```([^\n]*)\n(.*?)^```", flags=re.S | re.M)
STAMP = re.compile(r"(Date:\s+)\w{3}, \d{2} \w{3} \d{4}|(Time:\s+)\d\d:\d\d:\d\d")


RESULTS = ROOT / "benchmarks" / "results"
CELL_NUMBER = re.compile(r"[-+]?(?:\d[\d,]*)?\.?\d+(?:[eE][-+]?\d+)?")


class BenchmarkLookupError(LookupError):
    """A check reads a benchmark result that does not exist (file, table, row, column, key)."""


def results_file(path: str) -> Path:
    """``benchmarks/results/x.md`` (or ``x.md``) under the repository root; must exist."""
    full = ROOT / path if path.startswith("benchmarks/") else RESULTS / path
    if not full.is_file():
        raise BenchmarkLookupError(f"no benchmark result file {path!r} ({full} does not exist)")
    return full


def markdown_tables(text: str) -> list[tuple[str, list[str], list[list[str]]]]:
    """Every table of a markdown file: ``(text before it, header cells, body rows)``; the
    text before a table is what lies between it and the previous table (its title)."""
    def cells(line: str) -> list[str]:
        return [c.strip() for c in line.strip().strip("|").split("|")]

    tables, before, lines = [], [], text.splitlines()
    i = 0
    while i < len(lines):
        if (lines[i].startswith("|") and i + 1 < len(lines)
                and re.fullmatch(r"\|?(\s*:?-+:?\s*\|)+\s*:?-*:?\s*", lines[i + 1])):
            header, rows, i = cells(lines[i]), [], i + 2
            while i < len(lines) and lines[i].startswith("|"):
                rows.append(cells(lines[i]))
                i += 1
            tables.append(("\n".join(before), header, rows))
            before = []
        else:
            before.append(lines[i])
            i += 1
    return tables


def _cell_matches(cell: str, want) -> bool:
    """A cell is the text wanted, or a regular expression wanted matches it whole."""
    want = str(want)
    if cell == want:
        return True
    try:
        return re.fullmatch(want, cell) is not None
    except re.error:
        return False


def _bench_cells(path: str, row, col: str, table: str | None, many: bool,
                 item: int = 0) -> list[float]:
    """The numbers of column ``col`` in the rows ``row`` selects (see `bench`)."""
    full = results_file(path)
    tables = markdown_tables(full.read_text())
    if table is not None:
        tables = [t for t in tables if re.search(table, t[0], flags=re.M)]
        if not tables:
            raise BenchmarkLookupError(f"{path}: no table after text matching {table!r}")
    if not tables:
        raise BenchmarkLookupError(f"{path}: no markdown table")
    if isinstance(row, dict):
        wanted = dict(row)
    elif isinstance(row, (tuple, list)):
        wanted = dict(enumerate(row))
    else:
        wanted = {0: row}
    found = []
    for _, header, rows in tables:
        if col not in header:
            continue
        keys = {}
        for key in wanted:
            if isinstance(key, int):
                keys[key] = key
            elif key in header:
                keys[key] = header.index(key)
            else:
                break
        else:
            found += [(header, r) for r in rows
                      if all(keys[k] < len(r) and _cell_matches(r[keys[k]], v)
                             for k, v in wanted.items())]
    if not any(col in header for _, header, _ in tables):
        raise BenchmarkLookupError(f"{path}: no column {col!r} (columns: "
                                   f"{sorted({c for _, h, _ in tables for c in h})})")
    if not found or (len(found) > 1 and not many):
        what = "no row" if not found else f"{len(found)} rows"
        raise BenchmarkLookupError(f"{path}: {what} matching {row!r} in a table with "
                                   f"column {col!r}"
                                   + ("; add cells or table= to pick one" if found else ""))
    values = []
    for header, cells_ in found:
        cell = cells_[header.index(col)] if header.index(col) < len(cells_) else ""
        numbers = CELL_NUMBER.findall(cell)
        if len(numbers) <= item:
            raise BenchmarkLookupError(f"{path}: row {cells_[:3]!r}, column {col!r} holds "
                                       f"{cell!r}, not {item + 1} number(s)")
        values.append(float(numbers[item].replace(",", "")))
    return values


def bench(path: str, row, col: str, table: str | None = None, item: int = 0) -> float:
    """The number in column ``col`` of the row ``row`` of a benchmark table
    (``benchmarks/results/*.md``), for check markers:
    ``<!-- check: bench("benchmarks/results/unbounded.md", ("2,000", "0.5", "OLS .*"),
    "slope RMSE x1000") -->3.10``.

    ``row`` selects exactly one row: a string matches the first cell, a tuple the first
    cells in order, a dict ``{header: value}`` the named cells; each value is the cell's
    text or a regular expression that matches it whole.  ``table`` (a regular expression
    searched, multi-line, in the text between the previous table and this one, e.g.
    ``r"^### cont5$"``) picks a table when the
    file has several; ``item`` picks the cell's second, third ... number (``1``, ``2``:
    ``0.514 ± 0.200 (3 failed)``).  A file, table, row or column that does not exist, a
    row that is not unique, or a cell without that number raises `BenchmarkLookupError`
    naming it."""
    return _bench_cells(path, row, col, table, many=False, item=item)[0]


def bench_all(path: str, row, col: str, table: str | None = None,
              item: int = 0) -> list[float]:
    """The numbers in column ``col`` of every row ``row`` selects (at least one), as
    `bench` reads them: for a range quoted in the prose,
    ``min(bench_all("unbounded.md", ("2,000", "0.5", "Unbounded.*"), "fail"))``."""
    return _bench_cells(path, row, col, table, many=True, item=item)


def bench_json(path: str, key: str, row: dict | None = None) -> float:
    """The number at ``key`` of a JSON benchmark result (``benchmarks/results/*.json``),
    for check markers: ``bench_json("benchmarks/results/sample_aggregate_bias.json",
    "correction=firth.mean_abs_bias_in_mle_sd")``.  ``key`` is a dotted path: a part is
    a mapping's key, a list's index, or ``field=value`` (the list's one element whose
    ``field`` is ``value``).  ``row``, for a file that is a list of records, first picks
    the one record whose fields have those values (``{"family": "ols", "n": 10000}``).
    A missing file or key, a selection that is not one element or a value that is not a
    number raises `BenchmarkLookupError` naming it."""
    node = json.loads(results_file(path).read_text())
    if row is not None:
        hits = [x for x in node if isinstance(x, dict)
                and all(str(x.get(f)) == str(v) for f, v in row.items())] \
            if isinstance(node, list) else []
        if len(hits) != 1:
            raise BenchmarkLookupError(f"{path}: {len(hits)} records with {row!r}; "
                                       "need exactly one")
        node = hits[0]
    for part in key.split("."):
        if isinstance(node, list) and "=" in part:
            field, value = part.split("=", 1)
            hits = [x for x in node if isinstance(x, dict) and str(x.get(field)) == value]
            if len(hits) != 1:
                raise BenchmarkLookupError(f"{path}: {len(hits)} elements with {part!r} "
                                           f"(in {key!r}); need exactly one")
            node = hits[0]
        elif isinstance(node, list) and re.fullmatch(r"-?\d+", part):
            if not -len(node) <= int(part) < len(node):
                raise BenchmarkLookupError(f"{path}: index {part} out of range (in {key!r})")
            node = node[int(part)]
        elif isinstance(node, dict) and part in node:
            node = node[part]
        else:
            raise BenchmarkLookupError(f"{path}: no key {part!r} (in {key!r})")
    if isinstance(node, bool) or not isinstance(node, (int, float)):
        raise BenchmarkLookupError(f"{path}: {key!r} is {node!r}, not a number")
    return float(node)


def python_blocks(page: Path) -> list[str]:
    return re.findall(r"```python\n(.*?)```", page.read_text(), flags=re.S)


def check_markers(text: str) -> list[tuple[str, str]]:
    """``(expression, written number)`` of every check marker of a page."""
    return [(m.group(1), m.group(3)) for m in CHECK.finditer(text)]


RUNNABLE = [p for p in PAGES if "```python\n" in p.read_text() or check_markers(p.read_text())]


def written_value(written: str) -> tuple[float, float]:
    """The number a marker is followed by, and half a unit of its last digit."""
    m = NUMBER.match(written)
    if m is None:
        raise ValueError(f"a check marker must be followed by a number, not {written!r}")
    text = m.group(0).replace(",", "")
    mantissa, _, exponent = text.partition("e")
    decimals = len(mantissa.split(".")[1]) if "." in mantissa else 0
    return float(text), 0.5 * 10.0 ** (int(exponent or 0) - decimals)


def check_errors(text: str, namespace: dict) -> list[str]:
    """Every check marker of ``text`` whose expression does not give its number."""
    errors = []
    for expr, written in check_markers(text):
        try:
            value, tol = written_value(written)
            got = float(eval(expr, namespace))  # noqa: S307 - our own docs
        except Exception as err:  # a marker that cannot be evaluated fails
            errors.append(f"check {expr!r}: cannot be evaluated ({type(err).__name__}: {err})")
            continue
        if not (math.isfinite(got) and abs(got - value) <= tol * (1 + 1e-9)):
            errors.append(f"check {expr!r}: the page says {written}, the code gives {got!r}")
    return errors


def normalized(output: str) -> list[str]:
    return [STAMP.sub(lambda m: (m.group(1) or m.group(2)) + "#", line).rstrip()
            for line in output.strip("\n").splitlines()]


def run_page(text: str, name: str) -> tuple[dict, list[str]]:
    """Run a page's python blocks in one namespace; their printed outputs."""
    namespace: dict = {"__name__": "__docs__", "bench": bench,
                       "bench_all": bench_all, "bench_json": bench_json}
    outputs = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for i, block in enumerate(re.findall(r"```python\n(.*?)```", text, flags=re.S)):
            buf = io.StringIO()
            with contextlib.redirect_stdout(buf):
                exec(compile(block, f"{name}[block {i}]", "exec"), namespace)  # noqa: S102
            outputs.append(buf.getvalue())
    return namespace, outputs


def output_errors(text: str, outputs: list[str]) -> list[str]:
    """Every ``<!-- output -->`` block that is not what the block before it printed."""
    errors = []
    for m in OUTPUT.finditer(text):
        k = text[:m.start()].count("```python\n") - 1
        if k < 0:
            errors.append("an output block before any python block")
            continue
        shown, printed = normalized(m.group(1)), normalized(outputs[k])
        if shown != printed:
            diff = next((i for i, (a, b) in enumerate(zip(shown, printed)) if a != b),
                        min(len(shown), len(printed)))
            errors.append(f"output of block {k} differs from line {diff}:\n"
                          f"page: {shown[diff:diff + 3]}\ncode: {printed[diff:diff + 3]}")
    return errors


def test_the_site_has_runnable_examples():
    names = {p.relative_to(DOCS).as_posix() for p in RUNNABLE}
    assert {"index.md", "tutorial.md", "choosing.md"} <= names
    mechanisms = {"mechanisms/histogram.md", "mechanisms/moments.md", "mechanisms/newton.md",
                  "mechanisms/quantile-steps.md", "mechanisms/sample-aggregate.md",
                  "mechanisms/projected.md", "synthetic.md", "local.md", "unbounded.md"}
    assert mechanisms <= names


@pytest.mark.parametrize("page", RUNNABLE, ids=lambda p: p.relative_to(DOCS).as_posix())
def test_page_examples_run_and_numbers_hold(page, monkeypatch, tmp_path):
    matplotlib.use("Agg")
    monkeypatch.chdir(tmp_path)  # examples that write files write them here
    text = page.read_text()
    namespace, outputs = run_page(text, page.name)
    errors = check_errors(text, namespace) + output_errors(text, outputs)
    assert not errors, "\n".join(errors)


def test_the_number_checker_can_fail():
    page = ("```python\nx = 1.234\nprint('a')\n```\n<!-- output -->\n```text\nb\n```\n"
            "about <!-- check: x -->1.23, <!-- check: x -->1.2, <!-- check: 2 * x -->2.4, "
            "<!-- check: y -->1 and <!-- check: x --> many\n")
    namespace, outputs = run_page(page, "fake.md")
    errors = check_errors(page, namespace)
    assert len(errors) == 3
    assert "says 2.4" in errors[0] and "NameError" in errors[1] and "number" in errors[2]
    assert len(output_errors(page, outputs)) == 1
    assert written_value("-5,030.10") == (-5030.1, 0.005)


def test_benchmark_checks_can_fail():
    """A check that reads a benchmark result fails on a wrong number, and with a message
    naming what is missing on a file, row, column or key that does not exist."""
    table, rows = "benchmarks/results/unbounded.md", ("20,000", "2", "OLS .*")
    right = bench(table, rows, "slope RMSE x1000")
    bias = bench_json("sample_aggregate_bias.json", "correction=firth.mean_abs_bias_in_mle_sd")
    assert bias == json.loads((RESULTS / "sample_aggregate_bias.json").read_text())[2][
        "mean_abs_bias_in_mle_sd"]
    mark = f'<!-- check: bench("{table}", {rows!r}, "slope RMSE x1000") -->'
    page = (f"right {mark}{right:.2f}, wrong {mark}{right + 0.01:.2f}, "
            f"a range {mark}{right:.2f}-{mark}{right + 0.01:.2f} (its second end is checked), "
            f'json <!-- check: bench_json("sample_aggregate_bias.json", '
            f'"correction=firth.mean_abs_bias_in_mle_sd") -->{bias + 0.1:.2f}, '
            '<!-- check: bench("nothing.md", "x", "y") -->1, '
            f'<!-- check: bench("{table}", "no such row", "fail") -->1, '
            f'<!-- check: bench("{table}", {rows!r}, "no such column") -->1, '
            f'<!-- check: bench("{table}", "20,000", "fail") -->1, '
            '<!-- check: bench_json("sample_aggregate_bias.json", "correction=x.n") -->1, '
            '<!-- check: bench_json("sample_aggregate.json", "k", row={"n": 1}) -->1.\n')
    namespace, _ = run_page(page, "fake.md")
    errors = check_errors(page, namespace)
    assert len(errors) == 9, errors
    assert all(f"says {right + 0.01:.2f}," in e for e in errors[:2])
    assert f"says {bias + 0.1:.2f}" in errors[2]
    for error, words in zip(errors[3:], ["no benchmark result file 'nothing.md'",
                                         "no row matching 'no such row'",
                                         "no column 'no such column'", "24 rows matching",
                                         "0 elements with 'correction=x'",
                                         "0 records with {'n': 1}"]):
        assert "BenchmarkLookupError" in error and words in error, (words, error)


def test_benchmark_tables_are_parsed_whole():
    tables = markdown_tables("# t\n\nfirst\n\n| a | b |\n|---|---|\n| x | 1,234.5 |\n"
                             "| y | 2.5e+03 |\n\nsecond\n| a | c |\n|:-|-:|\n| x | n/a |\n")
    assert [(t[1], len(t[2])) for t in tables] == [(["a", "b"], 2), (["a", "c"], 1)]
    assert "first" in tables[0][0] and tables[1][0].strip() == "second"


def test_outputs_ignore_only_the_date_and_time_stamps():
    a = "Date:       Sat, 28 Nov 2026   Prob: 0.1\nTime:         08:40:14   Log: -3"
    b = "Date:       Mon, 01 Dec 2025   Prob: 0.1\nTime:         23:01:59   Log: -3"
    assert normalized(a) == normalized(b)
    assert normalized(a) != normalized(a.replace("0.1", "0.2"))


@pytest.mark.parametrize("page", [p for p in PAGES if check_markers(p.read_text())],
                         ids=lambda p: p.relative_to(DOCS).as_posix())
def test_check_markers_stay_inside_their_sentence(page):
    """A line that starts with ``<!--`` opens an HTML block in Markdown, which would cut
    the paragraph at the checked number: a marker must follow text on its line."""
    starts = [line for line in page.read_text().splitlines()
              if line.lstrip().startswith("<!-- check:")]
    assert not starts, f"check markers at the start of a line: {starts[:2]}"
    refs = [expr for expr, _ in check_markers(page.read_text()) if "][" in expr]
    assert not refs, f"'][' reads as a cross-reference to mkdocs-autorefs: {refs}"


@pytest.mark.parametrize("page", USER_PAGES, ids=lambda p: p.relative_to(DOCS).as_posix())
def test_user_page_code_fits_and_no_docstring_dump(page):
    text = page.read_text()
    long = [line for _, body in FENCE.findall(text) for line in body.splitlines()
            if len(line) > MAX_CODE_LINE]
    assert not long, f"code lines over {MAX_CODE_LINE} characters: {long[:3]}"
    dumps = re.findall(r"^::: \S+", text, flags=re.M)
    assert not dumps, f"{dumps}: link the API reference (docs/api/) instead"


@pytest.mark.parametrize("page", [p for p in PAGES if SNIPPET.search(p.read_text())],
                         ids=lambda p: p.relative_to(DOCS).as_posix())
def test_included_benchmark_tables_are_whole(page):
    for ref in SNIPPET.findall(page.read_text()):
        path, *span = ref.split(":")
        lines = (ROOT / path).read_text().splitlines()
        assert path.startswith("benchmarks/results/"), ref
        if not span:
            continue
        first, last = int(span[0]), int(span[1])
        assert lines[first - 1].startswith(("#", "|", "**")), f"{ref} starts mid-section"
        assert lines[last - 1].startswith("|"), f"{ref} does not end on a table row"
        assert last == len(lines) or not lines[last].startswith("|"), f"{ref} cuts a table"


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
    notes = (tmp_path / "site" / "api" / "mechanisms" / "index.html").read_text()
    anchors = {a for p in PAGES for a in re.findall(r"api/mechanisms\.md#([\w.]+)", p.read_text())}
    assert anchors and all(f'id="{a}"' in notes for a in anchors), anchors
    moments = (tmp_path / "site" / "mechanisms" / "moments" / "index.html").read_text()
    assert "--8&lt;--" not in moments and "<table>" in moments  # the benchmark was included


def fill_outputs(page: Path) -> None:
    """Rewrite the ``<!-- output -->`` blocks and the checked numbers of ``page`` with
    what its examples give, each number at its written precision
    (``python tests/docs/test_docs.py docs/x.md``; then read the diff before committing)."""
    text = page.read_text()
    namespace, outputs = run_page(text, page.name)

    def number(m: re.Match) -> str:
        written = NUMBER.match(m.group(3))
        if written is None:
            return m.group(0)
        w = written.group(0)
        mantissa, _, exponent = w.partition("e")
        decimals = len(mantissa.split(".")[1]) if "." in mantissa else 0
        got = float(eval(m.group(1), namespace))  # noqa: S307
        if exponent:  # 2.77e4 stays in that form, with the same exponent
            value = f"{got / 10.0 ** int(exponent):.{decimals}f}e{exponent}"
        else:
            value = f"{got:,.{decimals}f}"
            value = value if "," in w else value.replace(",", "")
        return m.group(0)[:m.start(3) - m.start(0)] + value + m.group(3)[len(w):]

    text = CHECK.sub(number, text)
    pieces, last = [], 0
    for m in OUTPUT.finditer(text):
        k = text[:m.start()].count("```python\n") - 1
        pieces += [text[last:m.start(1)], "\n".join(line.rstrip() for line in
                                                 outputs[k].strip("\n").splitlines()) + "\n"]
        last = m.end(1)
    page.write_text("".join(pieces) + text[last:])


if __name__ == "__main__":
    import os
    import tempfile

    matplotlib.use("Agg")
    pages = [Path(arg).resolve() for arg in sys.argv[1:]]
    with tempfile.TemporaryDirectory() as scratch:
        os.chdir(scratch)  # files the examples write land here, as in the tests
        for page in pages:
            fill_outputs(page)
