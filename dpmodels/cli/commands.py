"""The ``dpmodels`` command line (``python -m dpmodels`` is equivalent).

Commands::

    dpmodels schema init DATA --out schema.toml
    dpmodels ledger init FILE --total EPS
    dpmodels ledger show FILE
    dpmodels release "FORMULA or columns" --data DATA --schema schema.toml --epsilon EPS --out rel.json
    dpmodels fit MODEL "FORMULA" --data DATA --schema schema.toml --epsilon EPS [--format ...]
    dpmodels fit MODEL "FORMULA" --release rel.json [--format ...]
    dpmodels demo [--epsilon EPS] [--seed SEED] [--n N]
    dpmodels --version

The public domain of every variable (bounds of a continuous one, levels of a
discrete one) comes from a TOML schema the analyst writes from codebooks and
variable definitions; ``schema init`` writes a template whose every bound and
level set is the placeholder ``"TODO"``: it reads the data's column names and
types, never a value (PRIVACY.md rule 2).  A fit or release refuses a schema
that still has a ``"TODO"`` for a variable it uses.

Budget: ``--ledger FILE`` keeps an accountant across invocations (a JSON file
with the total epsilon and every spend); a spend that would exceed the total
is refused before the data are read.  Fits on a saved release (``--release``)
spend nothing.

Errors about the input print one line on stderr, ``dpmodels <command>: error:
<problem>: <fix>``, and exit with status 2; ``--debug`` shows the traceback.
See ``docs/cli.md``.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as _dt
import importlib
import json
import math
import os
import pathlib
import re
import shlex
import sys
import tomllib
import warnings
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ..core.version import __version__
from ..front.registry import FAMILIES, MECHANISMS

if TYPE_CHECKING:
    from ..mechanisms.histogram import PrivateHistogram
    from ..mechanisms.moments import ScaledRows

# The command starts without numpy's dependants: pandas, scipy, statsmodels, patsy
# and matplotlib are imported inside the commands that use them (``dpmodels --help``,
# ``dpmodels fit --help`` and a usage error import none of them; tests/package/test_startup.py).

__all__ = ["main", "demo", "build_parser", "CLIError", "read_schema", "MODELS", "ENGINES"]

#: The models ``dpmodels fit`` knows, by name.
MODELS = ("ols", "logit", "quantreg", "mnlogit")
#: Output formats of ``dpmodels fit``.
FORMATS = ("text", "html", "latex", "markdown", "json")
#: The releases ``dpmodels fit --method`` fits on, with the models each serves: the
#: registry's ``method=`` names (`dpmodels.front.registry` imports nothing heavy, so the
#: command still starts without numpy; tests/package/test_startup.py).
def _fit_methods() -> dict[str, str]:
    served: dict[str, set] = {}
    for m in MECHANISMS:
        if m.method is not None:
            served.setdefault(m.method, set()).update(m.families)
    return {"auto": "the default: chosen from the model and the public domain",
            **{method: "every model" if fams == set(FAMILIES)
               else ", ".join(f for f in FAMILIES if f in fams)
               for method, fams in served.items()}}


FIT_METHODS = _fit_methods()
#: Releases ``dpmodels release --method`` makes: the registry's entries whose release
#: is saved (a codec) and made from rows for a ``dp_*`` method.
RELEASE_METHODS = tuple(m.name for m in MECHANISMS if m.codec is not None and m.method)
#: The type ``column_types`` gives a column of a file that declares none (a CSV).
UNDECLARED = "undeclared"
#: The placeholder ``schema init`` writes for every bound and level set.
TODO = "TODO"
LEDGER_FORMAT = "dpmodels-ledger"

#: The model of Lei (2011, Section 4.3).
DEMO_FORMULA = "price ~ size + year + C(county)"
#: Public bounds of the continuous variables (Lei's preprocessing filters).
DEMO_BOUNDS = {"price": (1e5, 9e5), "size": (0, 3000)}
#: Public level sets of the discrete variables.
DEMO_LEVELS = {"county": [f"County{i}" for i in range(1, 7)], "year": [1, 2, 3, 4]}
#: The release the demo fits on: the noisy sufficient statistics of least squares
#: (`dpmodels.release_moments`), which bin nothing.  Lei's histogram with its default
#: 10 bins printed "WARNING: binning may bias Intercept, ... by up to 9.8 standard
#: errors" as the demo's first finding; with 20 bins for price and 40 for size it
#: warned in none of 13 seeds, but its largest bias reached 0.46 of the 0.5 SE at
#: which the warning fires, its intervals were 3 to 6 times as wide, the fit took
#: 6-16 s, and at the demo's smaller --n those bins are too many.  The moments release
#: covered the non-private OLS coefficients in 158 of 160 (20 seeds x 8, n = 250,070),
#: 152 of 160 at n = 20,000 and 157 of 160 at n = 5,000, with no warning at the
#: default n (tests/cli/test_cli.py checks the seeds).
DEMO_METHOD = "moments"


class CLIError(Exception):
    """A problem with the command's input; its message names the problem and the fix."""


# ---- demo -----------------------------------------------------------------------------------

def demo(epsilon: float = 1.0, seed: int | None = None, n: int = 250_070, *, file=None) -> int:
    """Fit DP OLS to the housing data and compare it with the non-private fit.

    Builds ``datasets.housing(n=n, seed=0)``, fits
    ``dp_ols("price ~ size + year + C(county)", ..., method="moments")`` with
    the public bounds ``price in [1e5, 9e5]``, ``size in [0, 3000]`` and the
    declared levels of ``county`` and ``year``, prints its summary (with the
    privacy block), then each private coefficient beside the non-private OLS
    coefficient with the relative error in percent.  The moments release bins
    nothing, so no binning bias enters the intervals (`DEMO_METHOD` says why it
    is not the histogram).

    Parameters
    ----------
    epsilon : float, default 1.0
        Privacy parameter of the release.
    seed : int, optional
        Seed of the privacy noise (reproducible output).  By default the noise
        comes from the operating system's secure entropy, so every run differs.
    n : int, default 250_070
        Number of rows of the simulated data set.
    file : file-like, optional
        Where to print (default: ``sys.stdout``).

    Returns
    -------
    int
        0 on success.
    """
    import statsmodels.formula.api as smf

    from ..front import datasets
    from ..front.api import dp_ols

    out = sys.stdout if file is None else file
    df = datasets.housing(n=n, seed=0)
    res = dp_ols(
        DEMO_FORMULA, data=df, epsilon=epsilon, bounds=DEMO_BOUNDS, levels=DEMO_LEVELS,
        method=DEMO_METHOD, random_state=seed,
    ).fit(random_state=seed)  # the bootstrap of the intervals too: --seed reproduces all
    ols = smf.ols(DEMO_FORMULA, data=df).fit()

    print(f"Differentially private OLS on datasets.housing(n={n}, seed=0): {DEMO_FORMULA}",
          file=out)
    print(file=out)
    print(res.summary(), file=out)
    print(file=out)
    print(_comparison_table(res.params, ols.params, res.conf_int()), file=out)
    return 0


def _comparison_table(private, nonprivate, conf_int=None) -> str:
    """Private vs non-private coefficients with ``|b_dp / b_ols - 1|`` in percent
    and, given the dp intervals ``conf_int``, whether each holds the non-private
    estimate."""
    names = list(nonprivate.index)
    private = private.reindex(names)
    head: tuple[str, ...] = ("term", "DP estimate", "OLS (non-private)", "rel. error %")
    if conf_int is not None:
        head += ("OLS in dp 95% CI",)
    rows = []
    errors = []
    inside = 0
    for name in names:
        b_dp, b_ols = float(private[name]), float(nonprivate[name])
        rel = abs(b_dp / b_ols - 1.0) * 100.0 if b_ols != 0 else math.nan
        errors.append(rel)
        row: tuple[str, ...] = (name, f"{b_dp:,.2f}", f"{b_ols:,.2f}", f"{rel:.2f}")
        if conf_int is not None:
            lo, hi = (float(v) for v in conf_int.loc[name])
            inside += lo <= b_ols <= hi
            row += ("yes" if lo <= b_ols <= hi else "NO",)
        rows.append(row)
    finite = [e for e in errors if math.isfinite(e)]
    mean = f"{sum(finite) / len(finite):.2f}" if finite else "nan"
    widths = [max(len(r[i]) for r in rows + [head]) for i in range(len(head))]

    def fmt(r):
        r = tuple(r) + ("",) * (len(head) - len(r))
        return (f"{r[0]:<{widths[0]}}  " + "  ".join(f"{v:>{w}}" for v, w in zip(r[1:], widths[1:])))

    title = "Private vs non-private coefficients (rel. error = |b_dp / b_ols - 1|)"
    rule = "=" * max(len(fmt(head)), len(title))
    lines = [title, rule, fmt(head), "-" * len(rule)] + [fmt(r) for r in rows]
    lines += ["-" * len(rule), fmt(("mean", "", "", mean)), rule]
    if conf_int is not None:
        lines.append(f"{inside} of {len(names)} dp 95% intervals hold the non-private estimate "
                     "(about 95% of them should, over repeated releases).")
    lines.append("The OLS column is computed on the raw data for comparison only: "
                 "it is NOT private.")
    return "\n".join(lines)



# ---- argument types -------------------------------------------------------------------------


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {text}")
    return value


def _positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a number > 0, got {text!r}") from None
    if not value > 0:  # also refuses nan
        raise argparse.ArgumentTypeError(f"must be > 0, got {text}")
    return value


def _epsilon(text: str) -> float:
    """A finite epsilon > 0 (the command line publishes its outputs: no epsilon=inf)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"must be a number > 0 such as 1 or 0.5, got {text!r}") from None
    if not (value > 0 and math.isfinite(value)):
        raise argparse.ArgumentTypeError(
            f"must be a finite number > 0 (smaller is more private), got {text}")
    return value


def _quantile(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not 0 < value < 1:
        raise argparse.ArgumentTypeError(f"must be strictly between 0 and 1, got {text!r}")
    return value


# ---- data files -----------------------------------------------------------------------------


def _kind(path: pathlib.Path) -> str:
    name = path.name.lower()
    if name.endswith((".parquet", ".pq", ".parq")):
        return "parquet"
    if name.endswith((".csv", ".csv.gz", ".txt", ".tsv")):
        return "csv"
    raise CLIError(f"{path}: unknown data format; give a .csv or .parquet file")


def _existing(path: str, what: str) -> pathlib.Path:
    p = pathlib.Path(path)
    if not p.exists():
        raise CLIError(f"{what} {path!r} does not exist: check the path")
    if p.is_dir() and not (what == "data file" and _kind(p) == "parquet"):
        raise CLIError(f"{what} {path!r} is a directory: give a file")
    return p


def _csv_sep(path: pathlib.Path) -> str:
    return "\t" if path.name.lower().endswith(".tsv") else ","


def data_columns(path: pathlib.Path) -> list[str]:
    """The file's column names (CSV header or Parquet schema; no row is read)."""
    import pandas as pd

    if _kind(path) == "csv":
        return [str(c) for c in pd.read_csv(path, nrows=0, sep=_csv_sep(path)).columns]
    return list(_parquet_types(path))


def _parquet_types(path: pathlib.Path) -> dict[str, str]:
    """Column -> schema type name of a Parquet file, from its footer (no row read)."""
    try:
        import pyarrow.parquet as pq
        import pyarrow.types as pt
    except ImportError:
        pq = None
    if pq is not None:
        schema = pq.read_schema(path)
        out = {}
        for field in schema:
            t = field.type
            if pt.is_boolean(t):
                out[field.name] = "bool"
            elif pt.is_integer(t):
                out[field.name] = "integer"
            elif pt.is_floating(t) or pt.is_decimal(t):
                out[field.name] = "float"
            elif pt.is_dictionary(t):
                out[field.name] = "categorical"
            elif pt.is_string(t) or pt.is_large_string(t):
                out[field.name] = "string"
            else:
                out[field.name] = str(t)
        return {k: v for k, v in out.items() if not k.startswith("__index_level_")}
    import polars as pl  # pyarrow absent: polars reads the schema from the footer too

    out = {}
    for name, t in pl.read_parquet_schema(path).items():
        if t == pl.Boolean:
            out[name] = "bool"
        elif t.is_integer():
            out[name] = "integer"
        elif t.is_float() or t == pl.Decimal:
            out[name] = "float"
        elif t in (pl.String, pl.Utf8):
            out[name] = "string"
        elif isinstance(t, pl.Enum | pl.Categorical):
            out[name] = "categorical"
        else:
            out[name] = str(t)
    return out


def column_types(path: pathlib.Path) -> dict[str, str]:
    """Column -> "integer", "float", "bool", "string", "categorical" or another
    type name, from a Parquet file's declared schema; for a CSV file, which
    declares no types, every column is ``UNDECLARED``.

    A type guessed from a CSV's values (pandas' inference) would depend on
    them: one missing value turns an "integer" column into "float" and a
    "bool" one into "string", so a template written from it would carry
    information about the rows (PRIVACY.md rule 10).  Types only: no value
    leaves here."""
    if _kind(path) == "parquet":
        return _parquet_types(path)
    return {name: UNDECLARED for name in data_columns(path)}


#: Engines ``--engine`` can read a data file with.
ENGINES = ("auto", "pandas", "polars", "duckdb", "dask", "spark")
#: What each engine needs: (modules, pip extra of pyproject.toml).
_ENGINE_NEEDS = {
    "polars": (("polars", "narwhals"), "polars"),
    "duckdb": (("duckdb", "narwhals", "pyarrow"), "duckdb"),
    "dask": (("dask.dataframe", "narwhals", "pyarrow"), "dask"),
    "spark": (("pyspark", "narwhals", "pyarrow"), "spark"),
}
#: The Spark master of ``--engine spark`` (a local session on two cores).
SPARK_MASTER = "local[2]"


def check_engine(engine: str, path: pathlib.Path | None = None) -> None:
    """Refuse, before anything is read or spent, an engine that is unknown,
    that cannot read this kind of file, or whose package is not installed
    (naming the pip extra that installs it)."""
    if engine not in ENGINES:
        raise CLIError(f"unknown engine {engine!r}: choose one of {', '.join(ENGINES)}")
    if path is not None and engine not in ("auto", "pandas") and _kind(path) == "csv":
        raise CLIError(f"--engine {engine} reads Parquet files; {str(path)!r} is a CSV file, "
                       "read by pandas: use --engine auto (or pandas), or convert it to Parquet")
    if engine not in _ENGINE_NEEDS:
        return
    import importlib

    modules, extra = _ENGINE_NEEDS[engine]
    for module in modules:
        try:
            importlib.import_module(module)
        except ImportError:
            raise CLIError(f"--engine {engine} needs the Python package {module.split('.')[0]!r}, "
                           f"which is not installed: pip install \"dpmodels[{extra}]\" (or choose "
                           "another --engine)") from None


def _spark_session():
    """The active Spark session, else a new local one (``local[2]``)."""
    import warnings as _warnings

    from pyspark.sql import SparkSession

    active = SparkSession.getActiveSession()
    if active is not None:
        return active
    with _warnings.catch_warnings():
        _warnings.simplefilter("ignore")
        session = (SparkSession.builder.master(SPARK_MASTER).appName("dpmodels")
                   .config("spark.ui.enabled", "false")
                   .config("spark.sql.shuffle.partitions", "2")
                   .getOrCreate())
    session.sparkContext.setLogLevel("ERROR")
    return session


def load_data(path: pathlib.Path, columns: Sequence[str], engine: str = "auto"):
    """The data a release counts, the named columns only.

    A CSV file is read by pandas.  A Parquet file (or a folder of them) is
    opened by ``engine``: ``"polars"`` a lazy ``pl.scan_parquet``, ``"duckdb"``
    a DuckDB relation (``read_parquet``), ``"dask"`` ``dd.read_parquet``,
    ``"spark"`` ``spark.read.parquet`` in a local ``local[2]`` session (or
    the active one), all read batch by batch, never whole; ``"pandas"`` reads
    the columns into memory.  ``"auto"``: Dask if installed, else Polars,
    else pandas."""
    import pandas as pd

    columns = list(columns)
    check_engine(engine, path)
    if _kind(path) == "csv":
        return pd.read_csv(path, usecols=columns, sep=_csv_sep(path))
    if engine == "auto":
        for name in ("dask", "polars"):
            try:
                check_engine(name)
            except CLIError:
                continue
            return load_data(path, columns, name)
        return pd.read_parquet(path, columns=columns)
    if engine == "pandas":
        return pd.read_parquet(path, columns=columns)
    if engine == "dask":
        import dask.dataframe as dd

        return dd.read_parquet(str(path), columns=columns)
    if engine == "polars":
        import polars as pl

        source = str(path / "**" / "*.parquet") if path.is_dir() else path
        return pl.scan_parquet(source).select(columns)
    if engine == "duckdb":
        import duckdb

        source = str(path / "**" / "*.parquet") if path.is_dir() else str(path)
        relation = duckdb.connect().read_parquet(source)
        return relation.select(*[duckdb.ColumnExpression(c) for c in columns])
    assert engine == "spark"
    session = _spark_session()
    return session.read.parquet(str(path)).select(*columns)


# ---- the schema -----------------------------------------------------------------------------

_BARE_KEY = re.compile(r"^[A-Za-z0-9_-]+$")


def _toml_key(name: str) -> str:
    return name if _BARE_KEY.match(name) else json.dumps(name, ensure_ascii=False)


def schema_template(types: Mapping[str, str], source: str) -> str:
    """The TOML template of ``schema init``: one table per column with its
    type and ``"TODO"`` in place of every bound and level set."""
    lines = [
        f"# dpmodels schema for {source}",
        "#",
        "# The public domain of each variable. Fill every \"TODO\" used by your formulas",
        "# from PUBLIC knowledge: the codebook, the survey's questionnaire, the variable's",
        "# definition, legal or physical limits (an age in [0, 120], a share in [0, 1]).",
        "# NEVER take bounds or levels from the data (its minimum, maximum or distinct",
        "# values): they would leak the very rows the privacy guarantee protects.",
        "# This template was written from the file's column names and declared types",
        "# only (a Parquet schema; a CSV declares none);",
        "# no value of the data is in it.",
        "#",
        "#   bounds = [low, high]        a continuous variable (values outside are clipped)",
        "#   bounds = \"unbounded:C:S\"   no public bounds: logistic scale, centre C, scale S",
        "#   levels = [\"a\", \"b\", ...]    a discrete variable (a value outside is an error);",
        "#                               also numeric codes, a 0/1 response or C(x) in a",
        "#                               formula: replace the bounds line by a levels line",
        "#   bins = 12                   optional, bins of a continuous variable (default auto)",
        "#",
        "# `dpmodels fit` and `dpmodels release` refuse a variable they use while it is \"TODO\".",
        "",
    ]
    for name, typ in types.items():
        lines.append(f"[variables.{_toml_key(name)}]")
        if typ == UNDECLARED:
            lines.append("# type: not declared by the file (a CSV); take it from the codebook.")
            lines.append("# A continuous variable keeps bounds; a discrete one (codes, a 0/1")
            lines.append("# response, C(x) in a formula) replaces it by levels = [...].")
            lines.append(f'bounds = "{TODO}"')
            lines.append("")
            continue
        lines.append(f"type = {json.dumps(typ)}")
        if typ == "bool":
            lines.append("# a bool column declares its levels [false, true] by its type")
        elif typ in ("integer", "float"):
            lines.append(f'bounds = "{TODO}"')
        else:
            lines.append(f'levels = "{TODO}"')
        lines.append("")
    return "\n".join(lines)


_VAR_KEYS = {"type", "bounds", "levels", "bins"}


def read_schema(path: pathlib.Path) -> dict[str, dict]:
    """The ``[variables.*]`` tables of a schema file, each checked for shape
    (TODOs are allowed here; `domain_for()` refuses the ones a formula uses)."""
    try:
        with open(path, "rb") as fh:
            doc = tomllib.load(fh)
    except tomllib.TOMLDecodeError as exc:
        raise CLIError(f"schema {str(path)!r} is not valid TOML ({exc}): fix the file, or "
                       "write a new template with 'dpmodels schema init DATA --out FILE'") from None
    variables = doc.get("variables")
    if not isinstance(variables, dict) or not variables:
        raise CLIError(f"schema {str(path)!r} has no [variables.NAME] tables: write one per "
                       "variable, e.g. with 'dpmodels schema init DATA --out FILE'")
    for name, spec in variables.items():
        where = f"schema {str(path)!r}, [variables.{_toml_key(name)}]"
        if not isinstance(spec, dict):
            raise CLIError(f"{where} must be a table with bounds = [low, high] or levels = [...]")
        unknown = sorted(set(spec) - _VAR_KEYS)
        if unknown:
            raise CLIError(f"{where}: unknown key(s) {unknown}; a variable takes "
                           f"{sorted(_VAR_KEYS)}")
        if "bounds" in spec and "levels" in spec:
            raise CLIError(f"{where} has both bounds and levels: keep bounds for a continuous "
                           "variable, levels for a discrete one")
        b = spec.get("bounds")
        if isinstance(b, str) and b.startswith("unbounded"):
            _unbounded_of(b, where)
        elif b is not None and b != TODO:
            if (not isinstance(b, list) or len(b) != 2
                    or not all(isinstance(v, int | float) and not isinstance(v, bool) for v in b)):
                raise CLIError(f"{where}: bounds must be [low, high] (two numbers), "
                               f"\"unbounded:CENTER:SCALE\" or \"TODO\", got {b!r}")
        lv = spec.get("levels")
        if lv is not None and lv != TODO and not (isinstance(lv, list) and lv):
            raise CLIError(f"{where}: levels must be a non-empty list such as [\"a\", \"b\"] "
                           f"or \"TODO\", got {lv!r}")
        k = spec.get("bins")
        if k is not None and k != "auto" and (isinstance(k, bool) or not isinstance(k, int)
                                              or k < 1):
            raise CLIError(f"{where}: bins must be a positive integer or \"auto\", got {k!r}")
    return variables


def _unbounded_of(text: str, where: str):
    """``bounds = "unbounded:CENTER:SCALE"`` -> `dpmodels.Unbounded`
    (a variable without public bounds, binned on the logistic scale)."""
    from ..core.errors import DPModelsError
    from ..core.unbounded import Unbounded

    parts = text.split(":")
    try:
        if len(parts) != 3 or parts[0] != "unbounded":
            raise ValueError
        return Unbounded(float(parts[1]), float(parts[2]))
    except (ValueError, DPModelsError) as exc:
        why = f" ({exc})" if str(exc) else ""
        raise CLIError(f"{where}: an unbounded variable is declared bounds = "
                       f"\"unbounded:CENTER:SCALE\" (public centre and scale > 0, e.g. "
                       f"\"unbounded:50000:20000\"), got {text!r}{why}") from None


def domain_for(variables: Sequence[str], schema: Mapping[str, dict], schema_path,
               types: Mapping[str, str] | None = None) -> tuple[dict, dict, dict]:
    """``(bounds, levels, bins)`` of the named variables from the schema;
    refuses a variable that is missing or still ``"TODO"``."""
    bounds, levels, bins = {}, {}, {}
    for v in variables:
        spec = schema.get(v)
        if spec is None:
            if types is not None and types.get(v) == "bool":
                continue  # a bool column declares its levels
            raise CLIError(
                f"variable {v!r} is used but not declared in the schema {str(schema_path)!r}: "
                f"add a [variables.{_toml_key(v)}] table with bounds = [low, high] or "
                "levels = [...] from public knowledge")
        for key in ("bounds", "levels"):
            if spec.get(key) == TODO:
                raise CLIError(
                    f"variable {v!r} still has {key} = \"TODO\" in the schema "
                    f"{str(schema_path)!r}: replace it with its public "
                    + ("bounds [low, high] (from the codebook or the variable's definition, "
                       "never from the data), or with levels = [...] if it is discrete"
                       if key == "bounds" else
                       "levels [\"a\", \"b\", ...] (from the codebook, never from the data)"))
        if "bounds" in spec:
            b = spec["bounds"]
            bounds[v] = (_unbounded_of(b, f"variable {v!r}") if isinstance(b, str)
                         else tuple(b))
            if isinstance(spec.get("bins"), int):
                bins[v] = spec["bins"]
        elif "levels" in spec:
            levels[v] = list(spec["levels"])
        elif spec.get("type") != "bool":
            raise CLIError(
                f"variable {v!r} in the schema {str(schema_path)!r} has neither bounds nor "
                "levels: add bounds = [low, high] (continuous) or levels = [...] (discrete)")
    return bounds, levels, bins


# ---- the ledger -----------------------------------------------------------------------------


class Ledger:
    """A privacy accountant kept in a JSON file across invocations::

        {"format": "dpmodels-ledger", "version": 1, "total_epsilon": 3.0,
         "spends": [{"timestamp": "...Z", "command": "dpmodels fit ...", "epsilon": 1.0}]}

    `open()` holds an exclusive lock (a ``FILE.lock`` beside it) for the whole
    command, so that two commands cannot both pass the check and both spend.
    """

    def __init__(self, path: pathlib.Path):
        self.path = path

    @staticmethod
    def create(path: pathlib.Path, total: float, force: bool = False) -> dict:
        if path.exists() and not force:
            raise CLIError(f"ledger {str(path)!r} already exists: keep it (its spends are "
                           "real), or pass --force to start a new one")
        doc = {"format": LEDGER_FORMAT, "version": 1, "total_epsilon": total, "spends": []}
        _write_json(path, doc)
        return doc

    def read(self) -> dict:
        if not self.path.exists():
            raise CLIError(f"ledger {str(self.path)!r} does not exist: create it with "
                           f"'dpmodels ledger init {self.path} --total EPS'")
        try:
            doc = json.loads(self.path.read_text())
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise CLIError(f"ledger {str(self.path)!r} is not valid JSON ({exc}): restore it "
                           "from a backup; do not start a new ledger for the same data") from None
        ok = (isinstance(doc, dict) and doc.get("format") == LEDGER_FORMAT
              and isinstance(doc.get("total_epsilon"), int | float)
              and isinstance(doc.get("spends"), list)
              and all(isinstance(s, dict) and isinstance(s.get("epsilon"), int | float)
                      for s in doc["spends"]))
        if not ok:
            raise CLIError(f"ledger {str(self.path)!r} is not a dpmodels ledger (format "
                           f"{LEDGER_FORMAT!r} with total_epsilon and spends): check the path")
        return doc

    @contextlib.contextmanager
    def locked(self):
        lock_path = self.path.with_name(self.path.name + ".lock")
        with open(lock_path, "a") as fh:
            try:
                import fcntl
                has_lock = True
            except ImportError:  # pragma: no cover - Windows: no lock
                has_lock = False
            if has_lock:
                fcntl.flock(fh, fcntl.LOCK_EX)
            try:
                yield
            finally:
                if has_lock:
                    fcntl.flock(fh, fcntl.LOCK_UN)

    def accountant(self, doc: dict):
        """A `dpmodels.Accountant` holding the ledger's total and past spends."""
        from ..core.accountant import Accountant

        acct = Accountant(float(doc["total_epsilon"]))
        for s in doc["spends"]:
            acct._ledger.append(_spend(float(s["epsilon"]), str(s.get("command", ""))))
        return acct

    def check(self, doc: dict, epsilon: float) -> None:
        """Refuse ``epsilon`` unless it fits, in exact rational arithmetic (as
        `dpmodels.Accountant`: no tolerance)."""
        from ..core.accountant import budget_fits

        total = float(doc["total_epsilon"])
        spends = [float(s["epsilon"]) for s in doc["spends"]]
        if not budget_fits(total, spends, epsilon):
            left = self.accountant(doc).remaining
            raise CLIError(
                f"ledger {str(self.path)!r} has {left:g} of epsilon {total:g} "
                f"left; this command needs {epsilon:g}: fit further models on a saved release "
                "(dpmodels fit MODEL FORMULA --release FILE, free), or use a smaller --epsilon")

    def record(self, doc: dict, epsilon: float, command: str) -> None:
        stamp = _dt.datetime.now(_dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        doc["spends"].append({"timestamp": stamp, "command": command, "epsilon": epsilon})
        _write_json(self.path, doc)


def _spend(epsilon: float, label: str):
    from ..core.accountant import Spend

    return Spend(epsilon, label)


def _write_json(path: pathlib.Path, doc) -> None:
    """Write atomically (a temporary file beside it, then a rename)."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(doc, indent=2) + "\n")
    os.replace(tmp, path)


# ---- results output -------------------------------------------------------------------------


def _num(x):
    """A float for JSON: NaN -> null, +-inf -> "inf" / "-inf"."""
    x = float(x)
    if math.isnan(x):
        return None
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    return x


def _series_json(obj):
    import pandas as pd

    if isinstance(obj, pd.DataFrame):  # mnlogit: terms x equations
        return {str(c): {str(i): _num(v) for i, v in obj[c].items()} for c in obj.columns}
    if isinstance(obj, pd.Series):
        return {str(i): _num(v) for i, v in obj.items()}
    return _num(obj)


def _conf_int_json(ci):
    import pandas as pd

    if isinstance(ci.index, pd.MultiIndex):  # mnlogit: (equation, term) rows
        out: dict = {}
        for (eq, term), row in ci.iterrows():
            out.setdefault(str(eq), {})[str(term)] = [_num(row.iloc[0]), _num(row.iloc[1])]
        return out
    return {str(i): [_num(row.iloc[0]), _num(row.iloc[1])] for i, row in ci.iterrows()}


def _report_json(report) -> dict:
    from dataclasses import asdict

    def clean(v):
        if isinstance(v, float):
            return _num(v)
        if isinstance(v, dict):
            return {k: clean(x) for k, x in v.items()}
        if isinstance(v, list | tuple):
            return [clean(x) for x in v]
        return v

    out = clean(asdict(report))
    out["type"] = type(report).__name__
    out["rows"] = [[k, v] for k, v in report.rows()]
    return out


def results_json(res, meta: Mapping) -> dict:
    """The machine-readable results: params, bse, conf_int, pvalues, nobs and
    the privacy report (plus the command's public inputs in ``meta``)."""
    return {
        **meta,
        "params": _series_json(res.params),
        "bse": _series_json(res.bse),
        "conf_int": _conf_int_json(res.conf_int()),
        "pvalues": _series_json(res.pvalues),
        "nobs": _num(res.nobs),
        "privacy": _report_json(res.privacy),
    }


def _fmt(x) -> str:
    x = float(x)
    if math.isnan(x):
        return "nan"
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    return f"{x:.4g}"


def _md_escape(s: str) -> str:
    return str(s).replace("|", "\\|")


def results_markdown(res, title: str) -> str:
    """A markdown table of the coefficients, then the privacy block."""
    import pandas as pd

    params, bse, pv, ci = res.params, res.bse, res.pvalues, res.conf_int()
    head = ("| term | coef | std err | P>\\|z\\| | 95% CI low | 95% CI high |\n"
            "|---|---:|---:|---:|---:|---:|")
    lines = [f"### {title}", ""]
    if isinstance(params, pd.DataFrame):  # mnlogit: one table per equation
        for eq in params.columns:
            lines += [f"**{_md_escape(eq)}**", "", head]
            for term in params.index:
                lo, hi = ci.loc[(eq, term)]
                lines.append(f"| {_md_escape(term)} | {_fmt(params.loc[term, eq])} | "
                             f"{_fmt(bse.loc[term, eq])} | {_fmt(pv.loc[term, eq])} | "
                             f"{_fmt(lo)} | {_fmt(hi)} |")
            lines.append("")
    else:
        lines.append(head)
        for term in params.index:
            lo, hi = ci.loc[term]
            lines.append(f"| {_md_escape(term)} | {_fmt(params[term])} | {_fmt(bse[term])} | "
                         f"{_fmt(pv[term])} | {_fmt(lo)} | {_fmt(hi)} |")
        lines.append("")
    lines += [f"Number of observations (noisy): {_fmt(res.nobs)}", "",
              "**Differential privacy**", "", "| | |", "|---|---|"]
    lines += [f"| {_md_escape(k)} | {_md_escape(v)} |" for k, v in res.privacy.rows()]
    return "\n".join(lines) + "\n"


def render(res, fmt: str, title: str, meta: Mapping) -> str:
    if fmt == "json":
        return json.dumps(results_json(res, meta), indent=2, allow_nan=False) + "\n"
    if fmt == "markdown":
        return results_markdown(res, title)
    summary = res.summary()
    return {"text": summary.as_text, "html": summary.as_html,
            "latex": summary.as_latex}[fmt]() + "\n"


def _writable(out, option: str = "--out") -> pathlib.Path | None:
    """``out`` as a path, checked writable BEFORE any row is read or any budget
    charged (PRIVACY.md rule 10): its folder exists and takes a new file (a
    probe file is created and removed), and it is not a folder itself.  A
    release whose output cannot be written would be paid for and lost."""
    if out is None:
        return None
    import tempfile

    path = pathlib.Path(out)
    folder = path.parent if str(path.parent) else pathlib.Path(".")
    if path.is_dir():
        raise CLIError(f"{option} {str(path)!r} is a folder: give a file name, e.g. "
                       f"{str(path / 'out.json')!r}")
    if not folder.is_dir():
        raise CLIError(f"{option} {str(path)!r}: the folder {str(folder)!r} does not exist; "
                       "create it first (nothing was read or spent)")
    try:
        fd, probe = tempfile.mkstemp(prefix=f".{path.name}.", dir=folder)
        os.close(fd)
        os.remove(probe)
        if path.exists() and not os.access(path, os.W_OK):
            raise PermissionError
    except OSError as exc:
        raise CLIError(f"{option} {str(path)!r} cannot be written ({type(exc).__name__}): "
                       "choose a writable place (nothing was read or spent)") from None
    return path


def _emit(text: str, out: str | None) -> None:
    if out is None:
        sys.stdout.write(text)
    else:
        pathlib.Path(out).write_text(text)


# ---- commands -------------------------------------------------------------------------------


def cmd_schema_init(args) -> int:
    _writable(args.out)
    path = _existing(args.data, "data file")
    types = column_types(path)
    out = pathlib.Path(args.out) if args.out else None
    if out is not None and out.exists() and not args.force:
        raise CLIError(f"{str(out)!r} already exists: choose another --out, or pass --force "
                       "to overwrite it")
    text = schema_template(types, path.name)
    _emit(text, args.out)
    if out is not None:
        print(f"wrote {out}: {len(types)} variables; replace every \"TODO\" you use with public "
              "bounds or levels", file=sys.stderr)
    return 0


def cmd_ledger_init(args) -> int:
    path = _writable(args.file, "ledger file")
    assert path is not None  # FILE is a required argument
    Ledger.create(path, args.total, force=args.force)
    print(f"ledger {path}: total epsilon {args.total:g}, nothing spent")
    return 0


def cmd_ledger_show(args) -> int:
    led = Ledger(pathlib.Path(args.file))
    doc = led.read()
    acct = led.accountant(doc)
    print(f"ledger {led.path}: spent {acct.spent:g} of epsilon {acct.total_epsilon:g} "
          f"({acct.remaining:g} left), {len(doc['spends'])} spend(s)")
    for i, s in enumerate(doc["spends"], 1):
        print(f"  {i}. {s.get('timestamp', '?')}  epsilon={float(s['epsilon']):g}  "
              f"{s.get('command', '')}")
    return 0


def _namespace() -> dict:
    import numpy as np

    return {"np": np, "numpy": np}


def _variables_of(spec: str, columns: Sequence[str], namespace: Mapping) -> tuple[list[str], bool]:
    """The raw variables of a formula (``"~"`` in it) or of a column list
    (names separated by commas or spaces); checked against the data's columns."""
    if "~" in spec:
        from ..domain.formula import formula_variables

        return list(formula_variables(spec, columns, namespace).names), True
    names = [c for c in re.split(r"[,\s]+", spec.strip()) if c]
    if not names:
        raise CLIError("give a formula such as \"y ~ x + C(g)\" or columns such as \"y,x,g\"")
    unknown = [c for c in names if c not in columns]
    if unknown:
        raise CLIError(f"no column {', '.join(map(repr, unknown))} in the data (columns: "
                       f"{list(columns)[:20]}): check the spelling")
    return list(dict.fromkeys(names)), False


class _Raw:
    """Everything a command from raw data needs, checked before any row is read."""

    def __init__(self, args):
        if args.epsilon is None:
            raise CLIError("--epsilon is required for a release from raw data (e.g. "
                           "--epsilon 1); or fit on a saved release with --release FILE")
        if args.schema is None:
            raise CLIError("--schema is required with --data: write one with 'dpmodels schema "
                           "init DATA --out schema.toml' and fill its bounds and levels")
        self.args = args
        self.epsilon = args.epsilon
        self.engine = args.engine
        # an engine that cannot run is refused before the ledger or the data are opened
        check_engine(self.engine, pathlib.Path(args.data) if args.data else None)
        self.ledger = Ledger(pathlib.Path(args.ledger)) if args.ledger else None

    def prepare(self, spec: str) -> None:
        """Read the schema and the data's column names (no row), resolve the
        variables of ``spec`` and their public domain."""
        self.path = _existing(self.args.data, "data file")
        schema_path = _existing(self.args.schema, "schema")
        schema = read_schema(schema_path)
        self.namespace = _namespace()
        columns = data_columns(self.path)
        self.variables, self.is_formula = _variables_of(spec, columns, self.namespace)
        types = (column_types(self.path) if any(v not in schema for v in self.variables)
                 else None)
        self.bounds, self.levels, self.bins = domain_for(self.variables, schema, schema_path,
                                                         types)

    def options(self, seed, accountant, *, bins: bool = True) -> dict:
        opts = dict(epsilon=self.epsilon, bounds=self.bounds, levels=self.levels,
                    random_state=seed, accountant=accountant)
        if bins and self.bins:
            opts["bins"] = self.bins
        return opts


@contextlib.contextmanager
def _budget(raw: _Raw | None, command: str):
    """Yield the accountant a release is charged to (None without --ledger).
    The ledger is locked and checked first, before the data file is opened,
    and records what was spent, also when a fit fails after its release."""
    if raw is None or raw.ledger is None:
        yield None
        return
    with raw.ledger.locked():
        doc = raw.ledger.read()
        raw.ledger.check(doc, raw.epsilon)
        acct = raw.ledger.accountant(doc)
        before = len(acct.ledger)
        try:
            yield acct
        finally:
            # what this command charged: the exact sum of its spends, rounded up (a
            # float difference of totals could record an ulp less than was spent)
            spent = _sum_up([s.epsilon for s in acct.ledger[before:]])
            if spent > 0:
                raw.ledger.record(doc, spent, command)


def _sum_up(epsilons: list[float]) -> float:
    """The smallest float at least the exact sum of ``epsilons``."""
    from ..core.accountant import _float_up, exact_total

    return _float_up(exact_total(epsilons))


def _load_release(path: str):
    import dpmodels

    p = _existing(path, "release file")
    if not hasattr(dpmodels, "load_release"):  # pragma: no cover - saved releases absent
        raise CLIError("this dpmodels cannot read saved releases (no dpmodels.load_release): "
                       "upgrade dpmodels")
    return dpmodels.load_release(p, namespace=_namespace())


def _command_line(argv) -> str:
    """The command as the ledger records it, a seed's value masked (with the seed,
    the noise could be redrawn and subtracted from the release)."""
    argv = list(argv)
    for i, a in enumerate(argv):
        if a == "--seed" and i + 1 < len(argv):
            argv[i + 1] = "***"
        elif a.startswith("--seed="):
            argv[i] = "--seed=***"
    return shlex.join(["dpmodels", *argv])


def _check_response(model: str, formula: str, levels: Mapping[str, list]) -> None:
    """OLS and quantile regression need a numeric response: refuse one declared
    with non-numeric levels before anything is released."""
    lhs = formula.split("~", 1)[0].strip()
    if model in ("ols", "quantreg") and lhs in levels and not all(
            isinstance(v, int | float) and not isinstance(v, bool) for v in levels[lhs]):
        raise CLIError(f"the response {lhs!r} of {model} must be numeric; the schema declares "
                       "it with non-numeric levels: use mnlogit (or logit for two levels)")


def cmd_fit(args) -> int:
    if args.model not in MODELS:
        raise CLIError(f"unknown model {args.model!r}: choose one of {', '.join(MODELS)}")
    if (args.data is None) == (args.release is None):
        raise CLIError("give either --data FILE (a new release, spends --epsilon) or "
                       "--release FILE (a saved release, free)")
    if args.q is not None and args.model != "quantreg":
        raise CLIError("--q applies to the quantreg model only: leave it out")
    _writable(args.out)
    if args.model == "mnlogit" and args.method not in ("auto", "histogram", "sample-aggregate"):
        raise CLIError("mnlogit is fitted on the histogram or the sample-and-aggregate release: "
                       "use --method auto, histogram or sample-aggregate")
    from ..front.api import dp_logit, dp_mnlogit, dp_ols, dp_quantreg

    functions: dict[str, Callable[..., Any]] = {
        "ols": dp_ols, "logit": dp_logit, "quantreg": dp_quantreg, "mnlogit": dp_mnlogit}
    fn = functions[args.model]
    kw = {"method": args.method}
    fit_kw = {"random_state": args.seed}
    if args.model == "quantreg":
        q = 0.5 if args.q is None else args.q
        fit_kw["q"] = q
    raw = None
    if args.release is not None:
        for opt in ("epsilon", "schema", "ledger"):
            if getattr(args, opt) is not None:
                raise CLIError(f"--{opt} applies to a fit from raw data (--data); a fit on a "
                               "saved release spends nothing: leave it out")
        if args.engine != "auto":
            raise CLIError("--engine reads a --data file; a fit on a saved release reads no "
                           "data: leave it out")
        if args.method != "auto":
            kw.pop("method", None)  # the release's type decides
        data = _load_release(args.release)
        source = {"release": str(args.release)}
    else:
        raw = _Raw(args)
    with _budget(raw, _command_line(args.argv)) as acct:
        if raw is not None:
            raw.prepare(args.formula)
            if not raw.is_formula:
                raise CLIError(f"{args.formula!r} is not a formula: write \"y ~ x + C(g)\"")
            _check_response(args.model, args.formula, raw.levels)
            data = load_data(raw.path, raw.variables, raw.engine)
            # schema bins are the histogram's: they make "auto" the histogram (as bins= in
            # Python) and are left out of the other releases
            kw.update(raw.options(args.seed, acct,
                                  bins=args.method in ("auto", "histogram")))
            if args.model == "quantreg":
                kw["q"] = fit_kw["q"]
            source = {"data": str(raw.path)}
        model = fn(args.formula, data, eval_env=_namespace(), **kw)
        res = model.fit(**fit_kw)
    # (never the seed's value: with it, anyone could redraw the noise and subtract it)
    meta = {"model": args.model, "formula": args.formula, **source,
            "epsilon_spent": 0.0 if raw is None else raw.epsilon}
    if args.model == "quantreg":
        meta["q"] = fit_kw["q"]
    title = f"DP {args.model} on {args.release or args.data}: {args.formula}"
    _emit(render(res, args.format, title, meta), args.out)
    return 0


def cmd_release(args) -> int:
    import textwrap

    from ..front.methods import formula_over, histogram_note
    from ..mechanisms.histogram import release

    raw = _Raw(args)
    if args.q is not None and args.method != "quantile-newton":
        raise CLIError("--q applies to --method quantile-newton only: leave it out")
    out = _writable(args.out)
    assert out is not None  # --out is required
    if out.exists() and not args.force:
        raise CLIError(f"{str(out)!r} already exists: choose another --out, or pass --force")
    with _budget(raw, _command_line(args.argv)) as acct:
        raw.prepare(args.spec)
        _check_savable_levels(raw.levels)  # the file is written after the charge
        if args.method != "histogram" and not raw.is_formula:
            raise CLIError(f"--method {args.method} releases for a formula: write "
                           "\"y ~ x + ...\"")
        data = load_data(raw.path, raw.variables, raw.engine)
        opts = raw.options(args.seed, acct, bins=args.method == "histogram")
        rel: PrivateHistogram | ScaledRows
        if args.method == "histogram":
            key = {"formula": args.spec} if raw.is_formula else {"columns": raw.variables}
            # which fits the histogram serves, said before anything is spent
            note = histogram_note(args.spec if raw.is_formula else formula_over(raw.variables),
                                  data, bounds=raw.bounds, levels=raw.levels,
                                  bins=opts.get("bins", "auto"), epsilon=raw.epsilon,
                                  namespace=_namespace(), columns=not raw.is_formula)
            if note:
                print(textwrap.fill(note, 88, break_on_hyphens=False), file=sys.stderr,
                      flush=True)
            rel = release(data, namespace=_namespace(), **key, **opts)
        else:  # a formula release of the registry (its entry's release function)
            q = {"q": 0.5 if args.q is None else args.q} if args.method == "quantile-newton" \
                else {}
            entry = next(m for m in MECHANISMS if m.name == args.method)
            module, _, name = entry.release.partition(":")
            make = getattr(importlib.import_module(module), name)
            rel = make(data, formula=args.spec, namespace=_namespace(), **opts, **q)
    if not hasattr(rel, "save"):  # pragma: no cover - saved releases absent
        raise CLIError("this dpmodels cannot save releases (no release.save): upgrade dpmodels")
    path = rel.save(out)
    print(f"wrote {path}: {args.method} release of {raw.variables}, epsilon {raw.epsilon:g}; "
          f"fit on it for free with: dpmodels fit MODEL \"FORMULA\" --release {path}")
    return 0


def _check_savable_levels(levels: Mapping[str, list]) -> None:
    """Refuse, before the ledger is charged or a row is read, a declared level
    that a saved release cannot hold (the saver's own rule,
    `dpmodels.output.saving`): a TOML date, time or date-time (``levels =
    [2020-01-01, ...]``), an array or a table.  The release would be paid for,
    and then not written."""
    from ..output.documents import SavedReleaseError, level_out

    for name, values in levels.items():
        for v in values:
            try:
                level_out(name, v)
            except SavedReleaseError:
                shown = v.isoformat() if hasattr(v, "isoformat") else repr(v)
                raise CLIError(
                    f"variable {name!r}: the schema declares the level {shown} "
                    f"({type(v).__name__}), which a saved release cannot hold (its levels are "
                    f"strings, bools, ints or floats): write the levels as quoted strings "
                    f"(levels = [\"{shown}\", ...]) and give {name!r} the same strings in the "
                    "data file (a CSV holds them so; cast a Parquet date column to string), or "
                    "recode it to integers; nothing was spent") from None


def cmd_demo(args) -> int:
    return demo(epsilon=args.epsilon, seed=args.seed, n=args.n)


# ---- the parser -----------------------------------------------------------------------------


class _Formatter(argparse.HelpFormatter):
    """argparse's help layout, without breaking a line inside a hyphenated word
    ("sample-aggregate", "quantile-newton" stay whole)."""

    def _split_lines(self, text, width):
        import textwrap

        return textwrap.wrap(" ".join(text.split()), width, break_on_hyphens=False)

    def _fill_text(self, text, width, indent):
        import textwrap

        return textwrap.fill(" ".join(text.split()), width, initial_indent=indent,
                             subsequent_indent=indent, break_on_hyphens=False)


class _Parser(argparse.ArgumentParser):
    """Usage errors on one line (problem and where to look), exit status 2."""

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("formatter_class", _Formatter)
        super().__init__(*args, **kwargs)

    def _known_words(self) -> set[str]:
        """Every option string and choice of this parser and its subcommands."""
        words: set[str] = set()
        for action in self._actions:
            words.update(s for s in action.option_strings if s.startswith("--"))
            if isinstance(action, argparse._SubParsersAction):
                words.update(action.choices)  # the command names
                for sub in action.choices.values():
                    words |= sub._known_words() if isinstance(sub, _Parser) else set()
            elif action.choices is not None:
                words.update(str(c) for c in action.choices)
        return words

    def _did_you_mean(self, message: str) -> str:
        """" (did you mean '--epsilon'?)" for a misspelt option or choice, else ""."""
        from ..core.keywords import suggestion

        bad = re.findall(r"invalid choice: '([^']*)'", message)
        if not bad and message.startswith("unrecognized arguments:"):
            bad = [w.split("=")[0] for w in message.split(":", 1)[1].split()
                   if w.startswith("--")]
        known = {w.lstrip("-"): w for w in self._known_words()}  # "--" matches nothing
        close = [(b, known.get(suggestion(b.lstrip("-"), known) or "")) for b in bad]
        found = [(b, m) for b, m in close if m]
        if not found:
            return ""
        if len(bad) == 1:
            return f" (did you mean {found[0][1]!r}?)"
        return " (did you mean " + ", ".join(f"{m!r} for {b!r}" for b, m in found) + "?)"

    def error(self, message):
        message += self._did_you_mean(message)
        self.exit(2, f"{self.prog}: error: {message}; see '{self.prog} --help'\n")


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the ``dpmodels`` command."""
    parser = _Parser(
        prog="dpmodels",
        description="Differentially private regression from statsmodels formulas.",
        epilog="Every command takes --debug (show the traceback of an error). "
               "See docs/cli.md.",
    )
    parser.add_argument("--version", action="store_true",
                        help="print the dpmodels version and exit")
    common = _Parser(add_help=False)
    common.add_argument("--debug", action="store_true",
                        help="on an error, show the Python traceback")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)

    # schema
    p_schema = sub.add_parser("schema", help="write a schema template (schema init)",
                              parents=[common])
    s_sub = p_schema.add_subparsers(dest="action", metavar="ACTION", parser_class=_Parser)
    p_init = s_sub.add_parser(
        "init", parents=[common],
        help="a TOML template of DATA's columns with \"TODO\" bounds and levels",
        description="Write a TOML schema template: one [variables.NAME] table per column of "
                    "DATA with its type and bounds = \"TODO\" (numeric) or levels = \"TODO\" "
                    "(other). Only column names and types are read; no value of the data is "
                    "written. Fill the TODOs from public knowledge (codebooks, definitions).")
    p_init.add_argument("data", metavar="DATA", help="a .csv or .parquet file")
    p_init.add_argument("--out", metavar="FILE", help="write here (default: standard output)")
    p_init.add_argument("--force", action="store_true", help="overwrite --out if it exists")
    p_init.set_defaults(func=cmd_schema_init)

    # ledger
    p_ledger = sub.add_parser("ledger", help="a privacy budget kept across commands",
                              parents=[common])
    l_sub = p_ledger.add_subparsers(dest="action", metavar="ACTION", parser_class=_Parser)
    p_linit = l_sub.add_parser("init", parents=[common], help="create a ledger file",
                               description="Create a ledger: a JSON file with a total epsilon "
                                           "that --ledger FILE charges every release to.")
    p_linit.add_argument("file", metavar="FILE")
    p_linit.add_argument("--total", type=_epsilon, required=True, metavar="EPS",
                         help="the whole budget (epsilon > 0)")
    p_linit.add_argument("--force", action="store_true",
                         help="replace an existing ledger (its spends are forgotten!)")
    p_linit.set_defaults(func=cmd_ledger_init)
    p_lshow = l_sub.add_parser("show", parents=[common], help="print a ledger's spends")
    p_lshow.add_argument("file", metavar="FILE")
    p_lshow.set_defaults(func=cmd_ledger_show)

    raw = _Parser(add_help=False)
    raw.add_argument("--data", metavar="FILE", help="raw rows: a .csv or .parquet file")
    raw.add_argument("--schema", metavar="FILE",
                     help="the TOML schema of public bounds and levels (required with --data)")
    raw.add_argument("--epsilon", type=_epsilon, metavar="EPS",
                     help="privacy budget of the release (required with --data)")
    raw.add_argument("--ledger", metavar="FILE",
                     help="charge the release to this ledger (refused if it does not fit)")
    raw.add_argument("--engine", choices=ENGINES, default="auto",
                     help="what reads a Parquet --data file: polars (lazy scan), duckdb, dask, "
                          "spark (a local[2] session), all batch by batch in bounded memory, "
                          "or pandas (into memory); auto (default): dask if installed, else "
                          "polars, else pandas. A CSV file is read by pandas")
    raw.add_argument("--seed", type=int, metavar="N",
                     help="seed of the noise and bootstrap (reproducible; the report says so); "
                          "default: OS secure entropy")

    # fit
    p_fit = sub.add_parser(
        "fit", parents=[common, raw], help="fit a DP model and print its results",
        description="Fit a differentially private model. With --data, one release is made "
                    "(spending --epsilon); with --release, the model is fitted on a saved "
                    "release at no privacy cost.")
    p_fit.add_argument("model", metavar="MODEL", help=f"one of {', '.join(MODELS)}")
    p_fit.add_argument("formula", metavar="FORMULA", help='a patsy formula, e.g. "y ~ x + C(g)"')
    p_fit.add_argument("--release", metavar="FILE",
                       help="a release saved by 'dpmodels release' (no budget spent)")
    p_fit.add_argument("--q", type=_quantile, metavar="Q",
                       help="quantile of quantreg (default 0.5)")
    p_fit.add_argument("--method", default="auto", choices=tuple(FIT_METHODS),
                       metavar="METHOD",
                       help="the release the fit is made on, one of: " + "; ".join(
                           f"{m} ({FIT_METHODS[m]})" for m in FIT_METHODS))
    p_fit.add_argument("--format", choices=FORMATS, default="text",
                       help="output format (default: text)")
    p_fit.add_argument("--out", metavar="FILE", help="write here (default: standard output)")
    p_fit.set_defaults(func=cmd_fit)

    # release
    p_rel = sub.add_parser(
        "release", parents=[common, raw], help="make and save a release to fit many models on",
        description="Make one differentially private release and save it; fit any number "
                    "of models on it with 'dpmodels fit MODEL FORMULA --release FILE' "
                    "at no further privacy cost.")
    p_rel.add_argument("spec", metavar="FORMULA_OR_COLUMNS",
                       help='a formula ("y ~ x + C(g)": its variables) or columns ("y,x,g")')
    p_rel.add_argument("--out", metavar="FILE", required=True,
                       help="the release file (.json, or .json.gz compressed)")
    p_rel.add_argument("--method", choices=RELEASE_METHODS, default="histogram",
                       help="histogram (default: usable by every model and formula over its "
                            "variables), or a formula release: "
                            + ", ".join(f"{m.name} ({', '.join(m.families)})"
                                        for m in MECHANISMS
                                        if m.name in RELEASE_METHODS and m.name != "histogram")
                            + ", which answer their formula only")
    p_rel.add_argument("--q", type=_quantile, metavar="Q",
                       help="quantile of --method quantile-newton (default 0.5)")
    p_rel.add_argument("--force", action="store_true", help="overwrite --out if it exists")
    p_rel.set_defaults(func=cmd_release)

    # demo
    p_demo = sub.add_parser(
        "demo", parents=[common],
        help="fit DP OLS to the synthetic housing data and compare with OLS",
        description="Fit dp_ols('price ~ size + year + C(county)', method='moments') to "
                    "dpmodels.front.datasets.housing() and compare it with the non-private OLS fit.",
    )
    p_demo.add_argument("--epsilon", type=_positive_float, default=1.0,
                        help="privacy parameter (default: 1)")
    p_demo.add_argument("--seed", type=int, default=None,
                        help="seed of the privacy noise (default: OS secure entropy, "
                             "different every run)")
    p_demo.add_argument("--n", type=_positive_int, default=250_070,
                        help="number of simulated houses (default: 250070, as in Lei 2011)")
    p_demo.set_defaults(func=cmd_demo)
    return parser


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    if isinstance(exc, OSError) and exc.filename is not None:
        text = f"{exc.strerror or type(exc).__name__}: {exc.filename!r}: check the path"
    return text or type(exc).__name__


def _show_warning(message, category, filename, lineno, file=None, line=None):
    if issubclass(category, DeprecationWarning | PendingDeprecationWarning | FutureWarning):
        return  # other libraries' notices to developers, not to the analyst
    print(f"dpmodels: warning: {' '.join(str(message).split())}", file=sys.stderr)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``dpmodels`` command.

    Parameters
    ----------
    argv : sequence of str, optional
        Command-line arguments without the program name (default:
        ``sys.argv[1:]``).

    Returns
    -------
    int
        The exit status: 0 on success, 2 on any error (one line on stderr,
        naming the problem and the fix; ``--debug`` adds the traceback).
    """
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # --help or a usage error: return, don't exit
        return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 2)
    if args.version:
        print(f"dpmodels {__version__}")
        return 0
    func = getattr(args, "func", None)
    if func is None:
        sub = {"schema": "schema init", "ledger": "ledger init|show"}.get(args.command)
        if sub is not None:
            print(f"dpmodels {args.command}: error: give an action: dpmodels {sub}; see "
                  f"'dpmodels {args.command} --help'", file=sys.stderr)
        else:
            parser.print_help(sys.stderr)
        return 2
    args.argv = argv
    name = " ".join(filter(None, [args.command, getattr(args, "action", None)]))
    old_show = warnings.showwarning
    warnings.showwarning = _show_warning
    try:
        return func(args)
    except KeyboardInterrupt:
        print(f"dpmodels {name}: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:  # noqa: BLE001 - every error: one line, status 2
        if args.debug:
            import traceback

            traceback.print_exc()
        expected = isinstance(exc, CLIError | OSError | tomllib.TOMLDecodeError)
        if not expected:  # (dpmodels.core.errors imports statsmodels: not for a usage error)
            from ..core.errors import DPModelsError

            expected = isinstance(exc, DPModelsError)
        kind = "" if expected else f"{type(exc).__name__}: "
        hint = "" if args.debug or expected else " (--debug shows the traceback)"
        print(f"dpmodels {name}: error: {kind}{_one_line(exc)}{hint}", file=sys.stderr)
        return 2
    finally:
        warnings.showwarning = old_show
