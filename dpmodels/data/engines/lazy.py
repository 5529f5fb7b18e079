"""One counting query for every lazy engine, written with narwhals.

The query (for a domain of d axes with strides s_i):

* per axis, a code ``c_i`` (Int64, -1 for a value outside the declared
  levels) and a missing flag ``miss_i``:

  - continuous: ``miss = is_null(x) | is_nan(x)``;
    ``c = cast_int(floor(clip((x - lo) * (bins / (hi - lo)), 0, bins - 1)))``
    on ``x`` cast to Float64 (missing values replaced by 0 first, so that no
    engine casts a NaN) - the very float operations of
    `dpmodels.domain.axes.Axis.codes()`, so bin edges and clipping are
    identical, including the closed last bin;
  - discrete: ``c = replace_strict(levels -> codes, default=-1)`` (a hash
    map lookup in every engine: polars ``replace_strict``, DuckDB ``map``,
    Spark ``create_map``), with the declared levels first filtered to those
    that can equal a value of the column's type (see `_comparable_levels()`);
* one key per row: ``-2 - i`` if axis i is the first whose value is
  undeclared, else ``-2 - d - i`` if axis i is the first with a missing
  value, else the cell id ``sum(c_i * s_i)``;
* ``group_by(key).agg(len)``, collected.

Only the non-empty cells and at most 2d error keys come back.  An undeclared
level raises `UndeclaredLevelError` (a second, tiny query
fetches up to three offending values for the message); missing values are
dropped or, with ``missing="raise"``, refused - the same rules and the same
variable named as `dpmodels.data.counting.count_cells()`.

Why narwhals: the four engines need the same dozen operations (cast, floor,
clip, is_null/is_nan, when/then, a mapping of values, a sum, a group-by
count), narwhals 2 offers all of them on polars, DuckDB, PySpark and Dask
with the SQL semantics we need, and one query means one place to get the
bin edges right.  The tests compare every engine's counts with pandas'.
"""

from __future__ import annotations

import math
import numbers

import numpy as np
import pandas as pd

from ...core.errors import DomainError, DPModelsError
from ...domain.axes import Axis, Domain, EnumType
from ..counting import CellCounts, missing_error, undeclared_error

__all__ = ["NarwhalsSource", "cell_key_expr", "pandas_like_dtype"]

#: The dtype pandas gives a column of strings (``str`` in pandas 3, object before): an
#: engine's string column is declared as the same pandas column would be, so that every
#: message naming a dtype reads the same on every engine.
_PANDAS_STRING = pd.Series(["a"]).dtype

#: Rows per batch a row pass reads from a Polars or DuckDB frame (bounded memory).
PARTITION_ROWS = 250_000

KEY = "__dpmodels_cell"
COUNT = "__dpmodels_n"


def _nw():
    try:
        import narwhals.stable.v2 as nw
    except ImportError:  # pragma: no cover - narwhals < 2.x has no stable.v2
        import narwhals

        return narwhals
    return nw


def pandas_like_dtype(nw_dtype, native_dtype=None):
    """The dtype `dpmodels.domain.axes.build_domain()` understands for a narwhals
    dtype: numpy numeric and bool dtypes, pandas' string dtype for strings,
    `EnumType` for a Polars Enum (a schema type that
    declares its categories), the pandas CategoricalDtype of a Dask
    categorical (whose categories count as declared only with
    ``levels={name: "dtype"}``, as for pandas; without categories when Dask
    does not know them), object for anything else.  Schema only."""
    nw = _nw()
    if isinstance(native_dtype, pd.CategoricalDtype):
        if native_dtype.categories is not None and "__UNKNOWN_CATEGORIES__" not in list(
                native_dtype.categories):
            return native_dtype
        return pd.CategoricalDtype()  # categories unknown: the caller must list the levels
    if isinstance(native_dtype, np.dtype):
        return native_dtype
    numeric = {
        nw.Float64: np.float64, nw.Float32: np.float32,
        nw.Int64: np.int64, nw.Int32: np.int32, nw.Int16: np.int16, nw.Int8: np.int8,
        nw.UInt64: np.uint64, nw.UInt32: np.uint32, nw.UInt16: np.uint16, nw.UInt8: np.uint8,
    }
    for k, v in numeric.items():
        if nw_dtype == k:
            return np.dtype(v)
    if nw_dtype == nw.Boolean:
        return np.dtype(bool)
    if nw_dtype == nw.Decimal:
        return np.dtype(np.float64)
    if isinstance(nw_dtype, nw.Enum):
        return EnumType(tuple(nw_dtype.categories))
    if nw_dtype == nw.String:
        return _PANDAS_STRING
    return np.dtype(object)


def _family(nw_dtype) -> str:
    """'float', 'int', 'bool', 'string', 'categorical' or 'other'."""
    nw = _nw()
    if nw_dtype.is_float() or nw_dtype == nw.Decimal:
        return "float"
    if nw_dtype.is_integer():
        return "int"
    if nw_dtype == nw.Boolean:
        return "bool"
    if nw_dtype == nw.String:
        return "string"
    if isinstance(nw_dtype, nw.Enum | nw.Categorical) or nw_dtype == nw.Categorical:
        return "categorical"
    return "other"


def _is_number(v) -> bool:
    return isinstance(v, numbers.Real) and not isinstance(v, bool | np.bool_)


def _comparable_levels(levels: tuple, family: str):
    """``(values, codes)``: the declared levels that a value of this column
    family can equal, as literals of the column's type, with their codes.

    Mirrors `Axis.codes()`, which compares by value: numbers equal
    numbers (``2 == 2.0``), strings equal strings, bools equal bools; across
    those kinds nothing matches.  An integer column (compared as Int64) can
    equal only integral levels, a float column (compared as Float64) only
    levels that are a float64 exactly; no literal is rounded or narrowed, so
    no two levels merge.  (`build_domain()` has already
    refused the levels the column's dtype cannot hold; this filter keeps the
    query correct for any domain.)
    """
    values, codes = [], []
    for code, v in enumerate(levels):
        if family == "string":
            ok, lit = isinstance(v, str), v
        elif family == "bool":
            ok, lit = isinstance(v, bool | np.bool_), bool(v)
        elif family == "int":
            integral = isinstance(v, numbers.Integral) or (
                _is_number(v) and math.isfinite(float(v)) and float(v).is_integer())
            ok = _is_number(v) and integral and -2**63 <= int(v) < 2**63
            lit = int(v) if ok else None
        elif family == "float":
            ok = _is_number(v) and not math.isnan(float(v)) and float(v) == v
            lit = float(v) if ok else None
        else:
            ok, lit = False, None
        if ok:
            values.append(lit)
            codes.append(code)
    return values, codes


def _categorical_family(axis: Axis) -> str:
    if all(isinstance(v, str) for v in axis.level_set):
        return "string"
    if all(_is_number(v) for v in axis.level_set):
        return "float"
    raise DomainError(
        f"{axis.name!r} is a categorical column counted in an engine, which needs string or "
        f"numeric levels; got {list(axis.level_set)[:5]}: declare levels of one kind, or cast the "
        "column to its values' type first"
    )


def _axis_exprs(axis: Axis, nw_dtype):
    """(code, missing) narwhals expressions of one axis."""
    nw = _nw()
    col = nw.col(axis.name)
    family = _family(nw_dtype)
    if axis.kind == "continuous":
        if family not in ("float", "int"):
            raise TypeError(f"{axis.name!r} is continuous but its column is {nw_dtype}")
        x = col.cast(nw.Float64)
        miss = x.is_null()
        if family == "float":
            miss = miss | x.is_nan()
        clean = nw.when(miss).then(nw.lit(0.0, nw.Float64)).otherwise(x)
        if axis.unbounded is not None:  # Unbounded.forward, the same formula
            u = axis.unbounded
            clean = 1.0 / (1.0 + (-(clean - u.center) / u.scale).exp())
        elif axis.scale != "linear":  # the coordinates of Axis.to_coord: clip, then transform
            raw_lo, raw_hi = axis.bound_pair
            clean = clean.clip(raw_lo, raw_hi)
            clean = {"log": lambda e: e.log(), "log1p": lambda e: (e + 1.0).log(),
                     "sqrt": lambda e: e.sqrt()}[axis.scale](clean)
        lo, hi = axis.coord_bounds
        bins = axis.bin_count
        code = ((clean - lo) * (bins / (hi - lo))).clip(0.0, float(bins - 1))
        return code.floor().cast(nw.Int64), miss
    if family == "categorical":
        family = _categorical_family(axis)
        col = col.cast(nw.String if family == "string" else nw.Float64)
    elif family == "float":
        col = col.cast(nw.Float64)  # compare as pandas does: float32 0.1 is not the level 0.1
    elif family == "int":
        col = col.cast(nw.Int64)  # every integral level fits; no narrowing of the literals
    miss = col.is_null()
    if family == "float":
        miss = miss | col.is_nan()
    values, codes = _comparable_levels(axis.level_set, family)
    if values:
        code = col.replace_strict(values, codes, default=-1, return_dtype=nw.Int64).fill_null(-1)
    else:
        code = nw.lit(-1, nw.Int64)
    return code, miss


def cell_key_expr(domain: Domain, schema):
    """The per-row key expression (see the module docstring) and, per axis,
    the expression that flags an undeclared value."""
    nw = _nw()
    d = len(domain.axes)
    codes, misses, undeclared = [], [], []
    for axis in domain.axes:
        code, miss = _axis_exprs(axis, schema[axis.name])
        codes.append(code)
        misses.append(miss)
        undeclared.append((code == -1) & ~miss)
    ids = None
    for code, stride in zip(codes, domain.strides):
        term = code if int(stride) == 1 else code * nw.lit(int(stride), nw.Int64)
        ids = term if ids is None else ids + term
    chain = None
    for i in range(d):
        cond, value = undeclared[i], nw.lit(-2 - i, nw.Int64)
        chain = nw.when(cond).then(value) if chain is None else chain.when(cond).then(value)
    assert chain is not None  # a domain has at least one axis
    for i in range(d):
        chain = chain.when(misses[i]).then(nw.lit(-2 - d - i, nw.Int64))
    key = chain.otherwise(ids).cast(nw.Int64)
    return key, undeclared


def keys_to_counts(domain: Domain, keys: np.ndarray, counts: np.ndarray, missing: str,
                   examples) -> CellCounts:
    """Turn the engine's (key, count) rows into cell counts, raising on an
    undeclared level (``examples(i)`` fetches offending values of axis i) or,
    with ``missing="raise"``, on a missing value."""
    keys = np.asarray(keys, dtype=np.int64)
    counts = np.asarray(counts, dtype=np.int64)
    d = len(domain.axes)
    names = domain.names
    bad = keys < 0
    if bad.any():
        bad_keys = keys[bad]
        und = sorted(int(-2 - k) for k in bad_keys if -2 - d < k <= -2)
        if und:
            raise undeclared_error(names[und[0]], examples(und[0]))
        miss = sorted(int(-2 - d - k) for k in bad_keys if k <= -2 - d)
        if miss and missing == "raise":
            raise missing_error(names[miss[0]])
    ids, cnt = keys[~bad], counts[~bad]
    order = np.argsort(ids, kind="stable")
    ids, cnt = ids[order], cnt[order]
    if ids.size and (ids[0] < 0 or ids[-1] >= domain.size or np.any(ids[1:] == ids[:-1])):
        raise RuntimeError("the engine returned cell ids outside the domain or twice")
    keep = cnt > 0
    return CellCounts(ids[keep].astype(np.uint64), cnt[keep])


class NarwhalsSource:
    """A polars, DuckDB or PySpark frame (or any narwhals lazy frame)."""

    def __init__(self, native, engine: str):
        nw = _nw()
        self.engine = engine
        # Polars and DuckDB hand their batches to this process; Spark's stay in executors
        self.batches_here = engine in ("polars", "duckdb")
        self.native = native
        frame = nw.from_native(native)
        self.lf = frame.lazy() if isinstance(frame, nw.DataFrame) else frame
        self.schema = self.lf.collect_schema()

    def columns(self) -> list[str]:
        return [str(c) for c in self.schema.names()]

    def dtypes(self, names) -> dict:
        return {nm: pandas_like_dtype(self.schema[nm]) for nm in names}

    def _collect(self, lf):
        if self.engine == "polars":
            return lf.collect(engine="streaming")
        return lf.collect()

    def nrows(self) -> int:
        nw = _nw()
        out = self._collect(self.lf.select(nw.len().alias(COUNT)))
        return int(out[COUNT].to_numpy()[0])

    def map_partitions(self, names: list[str], fn, *, positions: bool = False,
                       sizes: dict[int, int] | None = None) -> list:
        """``fn`` (a pandas frame -> a small result) on the named columns, batch
        by batch where the data live: Polars streams batches of
        `PARTITION_ROWS` rows, DuckDB fetches Arrow record batches of that
        size, Spark runs ``fn`` on every partition in its workers
        (``mapInPandas``) and sends back only the pickled results.  A decimal
        column arrives as float64, cast in the engine as the counting query
        casts it (`_selected()`): a row pass reads the values the checks read.

        With ``positions=True`` the call is ``fn(frame, start)``, ``start`` the
        position of the frame's first row among all rows in the engine's order
        (Spark counts each partition's rows first: one more pass, unless
        ``sizes``, `partition_rows()` counted before, are given)."""
        if self.engine in ("polars", "duckdb"):
            out, start = [], 0
            for batch in self._batches(names):
                frame = batch.to_pandas()
                out.append(fn(frame, start) if positions else fn(frame))
                start += len(frame)
            return out
        if self.engine == "pyspark":
            return _spark_map(self._selected(names), fn, positions, sizes)
        raise NotImplementedError(f"row passes on {self.engine}")  # pragma: no cover

    def partition_rows(self, names: list[str]) -> dict[int, int]:
        """Spark: each partition's number of rows, by partition id, in a pass
        over the frame `map_partitions()` reads (its ``sizes``)."""
        if self.engine != "pyspark":  # pragma: no cover - the others count as they go
            raise NotImplementedError(f"partition sizes on {self.engine}")
        return _spark_partition_rows(self._selected(names))

    def _selected(self, names: list[str]):
        """The named columns, in the engine's own type (a Polars LazyFrame, a
        DuckDB relation, a Spark DataFrame); a decimal column cast to Float64
        in the engine, the very cast of `_axis_exprs()`: the check (the
        counting query) and a row pass then match a level by the same value
        (``Decimal('0.10')`` is the level 0.1 in both)."""
        nw = _nw()
        decimals = {nm for nm in names if self.schema[nm] == nw.Decimal}
        if decimals:
            return self.lf.select([nw.col(nm).cast(nw.Float64) if nm in decimals else nw.col(nm)
                                   for nm in names]).to_native()
        if self.engine == "polars":
            lazy = self.native.lazy() if hasattr(self.native, "lazy") else self.native
            return lazy.select(names)
        return self.native.select(*names)

    def _batches(self, names: list[str]):
        if self.engine == "polars":
            return self._selected(names).collect_batches(chunk_size=PARTITION_ROWS)
        relation = self._selected(names)
        return (relation.to_arrow_reader(PARTITION_ROWS)
                if hasattr(relation, "to_arrow_reader")  # duckdb >= 1.4
                else relation.fetch_record_batch(PARTITION_ROWS))

    def count(self, domain: Domain, *, missing: str) -> CellCounts:
        nw = _nw()
        key, undeclared = cell_key_expr(domain, self.schema)
        out = self._collect(
            self.lf.select(key.alias(KEY)).group_by(KEY).agg(nw.len().alias(COUNT)))
        keys = out[KEY].to_numpy()
        counts = out[COUNT].to_numpy()

        def examples(i):
            name = domain.names[i]
            got = self._collect(self.lf.filter(undeclared[i]).select(nw.col(name)).head(3))
            return got[name].to_list()

        return keys_to_counts(domain, keys, counts, missing, examples)


def _spark_partition_rows(sdf) -> dict[int, int]:
    """Each Spark partition's number of rows, by partition id, as
    ``TaskContext.partitionId()`` reports it in ``mapInPandas`` on the same
    frame.  Only the first column goes to Python.  (A native
    ``spark_partition_id()`` count was tried: with no column left to read,
    Spark plans a local frame into other partitions, and the ids disagree.)"""

    def rows(frames):
        from pyspark import TaskContext

        ctx = TaskContext.get()
        pid = ctx.partitionId() if ctx is not None else 0
        yield pd.DataFrame({"pid": [pid], "rows": [sum(len(f) for f in frames)]})

    first = sdf.select(sdf.columns[0])
    got = first.mapInPandas(rows, schema="pid long, rows long").collect()
    return {int(r["pid"]): int(r["rows"]) for r in got}


def _spark_map(sdf, fn, positions: bool = False, sizes: dict[int, int] | None = None) -> list:
    """``fn`` on every pandas batch of every partition of a Spark frame, in the
    executors; each partition sends back one pickled list of its results, or
    the dpmodels error ``fn`` raised there, raised again here as itself (an
    undeclared level, a missing value).  With ``positions``, ``fn(frame,
    start)`` with the frame's first row's position in the partitions' order
    (from ``sizes``, each partition's rows, when given; else counted first)."""
    import pickle

    starts: dict[int, int] = {}
    if positions:
        if sizes is None:
            sizes = _spark_partition_rows(sdf)
        total = 0
        for pid in sorted(sizes):
            starts[pid] = total
            total += sizes[pid]

    def per_partition(frames):
        payload: tuple[str, object]
        try:
            if positions:
                from pyspark import TaskContext

                ctx = TaskContext.get()
                start = starts.get(ctx.partitionId() if ctx is not None else 0, 0)
                results = []
                for frame in frames:
                    results.append(fn(frame, start))
                    start += len(frame)
            else:
                results = [fn(frame) for frame in frames]
            payload = ("ok", results)
        except DPModelsError as exc:
            payload = ("error", exc)
        yield pd.DataFrame({"payload": [pickle.dumps(payload)]})

    out = []
    for row in sdf.mapInPandas(per_partition, schema="payload binary").collect():
        kind, value = pickle.loads(row["payload"])
        if kind == "error":
            raise value
        out.extend(value)
    return out
