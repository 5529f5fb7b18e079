"""Exact cell counts of the raw rows: the only module that reads them.

One vectorized pass, chunk by chunk: the axis code of each value, the
mixed-radix cell id, and a count per id.  No Python loop over rows or
cells; the caller's columns are read, never written or copied whole.

How the pass is made fast (see ``docs/scaling.md``)
----------------------------------------------------
* The rows are cut into chunks of `CHUNK_ROWS` that stay in the CPU
  cache; every temporary is a preallocated chunk-sized buffer, so the extra
  memory is O(chunk + cells), never O(rows).
* While the domain has at most 2**53 cells (always, in practice) each row's
  cell id is accumulated in float64, where every id is an exact integer:
  ``id = sum(stride_i * code_i)``.  A missing value makes the sum NaN and an
  undeclared level makes it +inf, so one reduction per chunk (``max < m``)
  tells whether the chunk needs a closer look; only then are the offending
  rows re-coded one axis at a time with the reference `Axis.codes()`.
* Each axis has a coder chosen from the column's dtype:

  - continuous: ``floor(clip((x - lo) * (bins / (hi - lo)), 0, bins - 1))``,
    the very operations of `Axis.codes()`, in place;
  - bool, pandas Categorical, integers: a lookup table whose entries are the
    reference codes of every value the table covers (so it cannot disagree
    with `Axis.codes()`); an integer column's table covers the integral
    levels its dtype can hold, plus one sentinel entry on each side onto
    which every other value is clipped, so values and levels are compared by
    value (a uint8 255 is never the level -1, a level 0.5 never matches);
  - float columns with numeric levels: a binary search in the sorted levels
    (held as float64, so only when every level is a float64 exactly);
  - object (Python string) columns: a small hash table keyed by the address
    of each distinct object, filled on first sight with the reference code of
    that object (an object array of strings usually holds a handful of
    distinct objects; past `OBJECT_CACHE_LIMIT` distinct objects the
    coder falls back to ``pandas.factorize`` per chunk);
  - Arrow-backed strings: ``pyarrow.compute.dictionary_encode`` per chunk;
  - anything else: `Axis.codes()` itself.
* Ids are counted in a dense array (``np.add.at``) when the domain is small
  (at most `DENSE_COUNT_LIMIT` cells), else sorted and run-length
  counted per chunk and merged (memory O(non-empty cells)).
* On machines with several idle cores the rows are split over up to
  `THREADS` threads (numpy releases the GIL inside its loops); each
  thread keeps its own counts, which are added at the end.  Cores that the
  load average shows busy are not used: there, threads only contend.

`count_cells_reference()` is the plain algorithm (per-chunk
`Axis.codes()`, `Domain.encode()`, ``np.unique``): the tests check the
fast path against it value for value.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping, Sized
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from ..core.errors import MissingValueError, UndeclaredLevelError
from ..domain.axes import Axis, Domain

__all__ = ["CellCounts", "CountResult", "count_cells", "count_cells_unchecked",
           "count_cells_reference", "merge_counts"]

#: Rows per chunk: the per-chunk buffers (a few times 8 bytes per row) stay in cache.
CHUNK_ROWS = 1 << 16
#: Domains up to this many cells are counted in a dense int64 array (32 MiB).
DENSE_COUNT_LIMIT = 1 << 22
#: Worker threads of the counting pass (numpy releases the GIL in its loops).
THREADS = max(1, min(8, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity")
                     else (os.cpu_count() or 1)))
#: An object column with more distinct objects than this is coded by
#: ``pandas.factorize`` per chunk instead of the address cache.
OBJECT_CACHE_LIMIT = 4096
#: Largest lookup table of an integer column's coder (values lo-1 .. hi+1).
INT_LUT_LIMIT = 1 << 20
#: Float64 represents every integer up to this exactly: the fast kernel's limit on m.
_FLOAT_EXACT = 2**53
#: A discrete axis's missing value in the float kernel: finite, and larger than any id
#: (several of them still add up to a finite number >= m), so that a chunk's discrete
#: sum is +inf exactly when some value is undeclared.  Continuous axes use NaN.
_MISSING = float(2**60)


@dataclass(frozen=True)
class CellCounts:
    """Exact counts of the non-empty cells (private: never released as is)."""

    ids: np.ndarray  # uint64, sorted, unique
    counts: np.ndarray  # int64, > 0


def _shown_values(values) -> list[str]:
    """Distinct values as the user wrote them: 4.0, 'a' (not np.float64(4.0))."""
    out = []
    for v in values:
        v = v.item() if isinstance(v, np.generic) else v
        if repr(v) not in out:
            out.append(repr(v))
    return out


def _undeclared_error(axis, values, bad):
    # Say which value is undeclared: the caller's own data, shown to the caller
    # in an error raised before anything is released.
    example = np.asarray(values, dtype=object)[np.flatnonzero(bad)[:3]]
    return UndeclaredLevelError(
        f"{axis.name!r} takes values outside its declared levels "
        f"(e.g. {', '.join(_shown_values(example.tolist()))}); add them to levels[{axis.name!r}] "
        "or recode/drop those rows before the release"
    )


def undeclared_error(name: str, examples=None) -> UndeclaredLevelError:
    """The error raised when variable ``name`` holds an undeclared level."""
    shown = (f" (e.g. {', '.join(_shown_values(list(examples)[:3]))})"
             if examples is not None and len(examples) else "")
    return UndeclaredLevelError(
        f"{name!r} takes values outside its declared levels{shown}; add them to "
        f"levels[{name!r}] or recode/drop those rows before the release"
    )


def missing_error(name: str) -> MissingValueError:
    """The error raised when variable ``name`` has missing values and missing='raise'."""
    return MissingValueError(
        f"{name!r} has missing values and missing='raise' was asked: "
        "drop or impute them first, or use missing='drop'"
    )


# ---- the reference algorithm ---------------------------------------------------------


def count_cells_reference(
    columns: Mapping[str, Sized], domain: Domain, *, missing: str = "drop",
    chunk_rows: int = 1 << 18,
) -> CellCounts:
    """The plain algorithm, kept as the specification of `count_cells()`.

    Per chunk: `Axis.codes()` of each variable, `Domain.encode()`,
    ``np.unique``.  An undeclared level anywhere is an error; otherwise a
    missing value is dropped or (``missing="raise"``) an error naming the
    first variable, in domain order, that has one.
    """
    names = domain.names
    nrows = len(columns[names[0]])
    parts_ids, parts_counts = [], []
    missing_axes: set[int] = set()
    for start in range(0, max(nrows, 1), chunk_rows):
        stop = min(start + chunk_rows, nrows)
        codes, drop = [], np.zeros(stop - start, dtype=bool)
        for i, name in enumerate(names):
            axis = domain.axis(name)
            values = _slice(columns[name], start, stop)
            c, miss, bad = axis.codes(values)
            if bad.any():
                raise _undeclared_error(axis, values, bad)
            if miss.any():
                missing_axes.add(i)
                drop |= miss
            codes.append(c)
        if drop.any():
            codes = [c[~drop] for c in codes]
        u, k = np.unique(domain.encode(codes), return_counts=True)
        parts_ids.append(u)
        parts_counts.append(k.astype(np.int64))
    if missing_axes and missing == "raise":
        raise missing_error(names[min(missing_axes)])
    return merge_counts(parts_ids, parts_counts)


def merge_counts(ids_parts, counts_parts) -> CellCounts:
    """Add up partial counts: sorted unique uint64 ids and their int64 totals."""
    ids_parts = [np.asarray(p, dtype=np.uint64) for p in ids_parts]
    counts_parts = [np.asarray(p, dtype=np.int64) for p in counts_parts]
    if not ids_parts:
        return CellCounts(np.zeros(0, np.uint64), np.zeros(0, np.int64))
    ids = np.concatenate(ids_parts) if len(ids_parts) > 1 else ids_parts[0]
    counts = np.concatenate(counts_parts) if len(counts_parts) > 1 else counts_parts[0]
    if ids.size == 0:
        return CellCounts(np.zeros(0, np.uint64), np.zeros(0, np.int64))
    order = np.argsort(ids, kind="stable")
    ids, counts = ids[order], counts[order]
    starts = np.flatnonzero(np.concatenate(([True], ids[1:] != ids[:-1])))
    sums = np.add.reduceat(counts, starts)
    keep = sums != 0
    return CellCounts(ids[starts][keep], sums[keep])


def _slice(col, start, stop):
    if hasattr(col, "iloc"):
        return col.iloc[start:stop]
    return col[start:stop]


def _take_rows(col, rows):
    if hasattr(col, "iloc"):
        return col.iloc[rows]
    if isinstance(col, (np.ndarray, pd.api.extensions.ExtensionArray)):
        return col[rows]
    return np.asarray(col)[rows]


# ---- per-axis coders -----------------------------------------------------------------
#
# A coder writes ``stride * code`` of rows [start, stop) of its column into a
# float64 buffer.  Missing values are NaN on a continuous axis and the finite
# sentinel _MISSING on a discrete one; a value outside the declared level set
# is +inf.  Coders hold per-thread state (buffers, caches): each counting
# thread builds its own.


def _plain_numpy(col) -> np.ndarray | None:
    """The column as a numpy array without a copy, or None (extension arrays)."""
    if isinstance(col, np.ndarray):
        return col
    if isinstance(col, pd.Series | pd.Index):
        if isinstance(col.dtype, np.dtype):
            return col.to_numpy(copy=False)
        return None
    if isinstance(col, pd.api.extensions.ExtensionArray):
        return None
    return None


def _as_reference_input(col):
    """What `Axis.codes()` is called with for a column (lists become arrays)."""
    if isinstance(col, (np.ndarray, pd.Series, pd.Index, pd.api.extensions.ExtensionArray)):
        return col
    return np.asarray(col)


def _float_codes(axis: Axis, values, stride: float) -> np.ndarray:
    """Reference codes of ``values`` in the kernel's float encoding of a discrete
    axis: ``stride * code``, `_MISSING` where missing, +inf where undeclared."""
    c, miss, und = axis.codes(values)
    out = c.astype(np.float64) * stride
    out[und] = np.inf
    out[miss] = _MISSING
    return out


class _ReferenceCoder:
    """Any discrete column: `Axis.codes()` on each chunk."""

    def __init__(self, axis, col, stride):
        self.axis, self.col, self.stride = axis, col, float(stride)

    def fill(self, start, stop, out):
        out[:] = _float_codes(self.axis, _slice(self.col, start, stop), self.stride)


class _ContinuousCoder:
    """floor(clip((x - lo) * (bins / (hi - lo)), 0, bins - 1)) in place."""

    def __init__(self, axis, col, stride):
        self.col = col
        self.arr = _plain_numpy(col)
        if self.arr is not None and self.arr.dtype.kind not in "fiu":
            self.arr = None
        lo, hi = axis.coord_bounds
        self.lo, self.scale, self.top = lo, axis.bins / (hi - lo), float(axis.bins - 1)
        self.stride = float(stride)
        self.axis = axis if axis.scale != "linear" else None

    def fill(self, start, stop, out):
        if self.arr is not None:
            x = self.arr[start:stop]
        else:
            x = np.asarray(_slice(self.col, start, stop), dtype=np.float64)
        if self.axis is not None:  # binned on a log/sqrt scale: the very coordinates of Axis.codes
            x = self.axis.to_coord(x)
        np.subtract(x, self.lo, out=out, dtype=np.float64)
        np.multiply(out, self.scale, out=out)
        np.clip(out, 0.0, self.top, out=out)
        np.floor(out, out=out)
        if self.stride != 1.0:
            np.multiply(out, self.stride, out=out)


class _LutCoder:
    """Integer-valued columns (bool, integers, Categorical codes): a table of
    the reference codes of every value in [offset, offset + len(table)), values
    outside clipped onto sentinel entries (``mode="clip"``), or, for
    Categorical codes, -1 wrapping onto the last entry (``mode="wrap"``)."""

    def __init__(self, arr, table, offset, stride, mode, index_buffer):
        self.arr, self.table, self.offset, self.mode = arr, table, int(offset), mode
        self.index = index_buffer

    def fill(self, start, stop, out):
        x = self.arr[start:stop]
        if self.offset:
            idx = self.index[: stop - start]
            np.subtract(x, self.offset, out=idx, dtype=np.intp)
            x = idx
        np.take(self.table, x, out=out, mode=self.mode)


class _SearchCoder:
    """Float columns with numeric levels: binary search in the sorted levels."""

    def __init__(self, arr, axis, stride, index_buffer):
        lv = np.asarray(axis.levels, dtype=np.float64)
        order = np.argsort(lv, kind="stable")
        self.sorted = lv[order]
        self.value = order.astype(np.float64) * stride
        self.arr, self.index = arr, index_buffer

    def fill(self, start, stop, out):
        x = self.arr[start:stop]
        pos = self.index[: stop - start]
        pos[:] = np.searchsorted(self.sorted, x)
        np.minimum(pos, self.sorted.size - 1, out=pos)
        hit = self.sorted[pos] == x
        np.take(self.value, pos, out=out, mode="clip")
        miss = ~hit
        if miss.any():
            xm = x[miss]
            out[miss] = np.where(np.isnan(xm), _MISSING, np.inf)


class _MaskedCoder:
    """pandas masked arrays (Int64, Float64, boolean): code the values array,
    then mark the masked (NA) rows missing."""

    def __init__(self, inner, mask, missing_value):
        self.inner, self.mask, self.missing_value = inner, mask, missing_value

    def fill(self, start, stop, out):
        self.inner.fill(start, stop, out)
        m = self.mask[start:stop]
        if m.any():
            out[m] = self.missing_value


class _PointerView:
    """Read-only uint64 view of the object pointers of an object array (no
    dereference; the array stays referenced while the view lives)."""

    def __init__(self, arr):
        self.arr = arr
        self.__array_interface__ = {
            "data": (arr.ctypes.data, True), "shape": arr.shape, "typestr": "<u8",
            "strides": arr.strides, "version": 3,
        }


_HASH_MULT = np.uint64(0x9E3779B97F4A7C15)


class _ObjectCoder:
    """Object columns (Python strings, mixed objects): code each distinct
    object once.  A small open-addressed table maps an object's address to
    its reference code (``stride * code``, `_MISSING`, +inf); an address seen for
    the first time is coded with `Axis.codes()` and inserted.  Addresses
    are stable while the array (which references every object) lives."""

    def __init__(self, arr, axis, stride, chunk):
        self.arr, self.axis, self.stride = arr, axis, float(stride)
        self.ptr = np.asarray(_PointerView(arr)) if arr.size else np.zeros(0, np.uint64)
        self.known_ptr = np.zeros(0, np.uint64)
        self.known_val = np.zeros(0, np.float64)
        self.bits = 0
        self.factorize = False
        self.hit = np.empty(chunk, bool)
        self._rebuild()

    def _rebuild(self):
        need = max(8, 4 * self.known_ptr.size)
        bits = max(self.bits, int(math.ceil(math.log2(need))))
        while True:
            size = 1 << bits
            shift = np.uint64(64 - bits)
            slots = ((self.known_ptr * _HASH_MULT) >> shift).astype(np.intp)
            if np.unique(slots).size == slots.size:
                break
            bits += 1  # a collision among known addresses: a larger table
        self.bits, self.shift = bits, shift
        self.tab_ptr = np.zeros(size, np.uint64)  # 0 is never an object address
        self.tab_val = np.full(size, _MISSING)
        self.tab_ptr[slots] = self.known_ptr
        self.tab_val[slots] = self.known_val

    def fill(self, start, stop, out, scratch_u64, scratch_u64b):
        if self.factorize:
            self._fill_factorize(start, stop, out)
            return
        k = stop - start
        p = self.ptr[start:stop]
        h = scratch_u64[:k]
        np.multiply(p, _HASH_MULT, out=h)
        np.right_shift(h, self.shift, out=h)
        slot = h.view(np.int64)
        got = scratch_u64b[:k]
        np.take(self.tab_ptr, slot, out=got, mode="clip")  # (mode="raise" would buffer)
        np.take(self.tab_val, slot, out=out, mode="clip")
        hit = np.equal(got, p, out=self.hit[:k])
        if hit.all():
            return
        rows = np.flatnonzero(~hit)
        new_ptr, first, inverse = np.unique(p[rows], return_index=True, return_inverse=True)
        objs = self.arr[start:stop][rows[first]]
        vals = _float_codes(self.axis, objs, self.stride)
        out[rows] = vals[inverse.reshape(-1)]
        if self.known_ptr.size + new_ptr.size > OBJECT_CACHE_LIMIT:
            self.factorize = True  # too many distinct objects for an address cache
            return
        self.known_ptr = np.concatenate([self.known_ptr, new_ptr])
        self.known_val = np.concatenate([self.known_val, vals])
        self._rebuild()

    def _fill_factorize(self, start, stop, out):
        values = self.arr[start:stop]
        codes, uniques = pd.factorize(values, use_na_sentinel=True)
        table = np.append(_float_codes(self.axis, np.asarray(uniques, dtype=object), self.stride),
                          _MISSING)
        np.take(table, codes, out=out, mode="wrap")


class _ArrowStringCoder:
    """Arrow-backed string columns: dictionary-encode each chunk in Arrow,
    code the (few) distinct strings with `Axis.codes()`."""

    def __init__(self, chunked, axis, stride):
        self.chunked, self.axis, self.stride = chunked, axis, float(stride)
        self.tables: dict[tuple, np.ndarray] = {}  # chunk dictionary -> code table

    def fill(self, start, stop, out):
        import pyarrow as pa
        import pyarrow.compute as pc

        piece = self.chunked.slice(start, stop - start)
        enc = pc.dictionary_encode(piece, null_encoding="mask")
        if isinstance(enc, pa.ChunkedArray):
            enc = enc.combine_chunks() if enc.num_chunks != 1 else enc.chunk(0)
        key = tuple(enc.dictionary.to_pylist())
        table = self.tables.get(key)
        if table is None:
            dictionary = np.asarray(key, dtype=object)
            table = np.append(_float_codes(self.axis, dictionary, self.stride), _MISSING)
            if len(self.tables) < 64:
                self.tables[key] = table
        idx = enc.indices.fill_null(-1).to_numpy(zero_copy_only=False)
        np.take(table, idx, out=out, mode="wrap")


def _int_lut(axis, arr, stride):
    """(table, offset) of an integer column with numeric levels, or None."""
    if not _numeric_levels(axis.levels):
        return None
    integral = []
    for v in axis.levels:
        f = float(v)
        if abs(f) >= 2**52:
            return None  # beyond exact float comparisons: use the reference
        if f.is_integer():
            integral.append(int(f))
    info = np.iinfo(arr.dtype)
    integral = [v for v in integral if info.min <= v <= info.max]
    if integral:
        lo, hi = min(integral), max(integral)
    else:
        lo = hi = 0
    if hi - lo + 3 > INT_LUT_LIMIT or abs(lo) > 2**62 or abs(hi) > 2**62:
        return None
    offset = lo - 1
    values = np.arange(offset, hi + 2, dtype=np.int64)
    inside = (values >= info.min) & (values <= info.max)
    table = np.full(values.size, np.inf)
    table[inside] = _float_codes(axis, values[inside].astype(arr.dtype), stride)
    # values below lo or above hi can equal no level: sentinel entries (inf) at both ends
    table[0] = table[-1] = np.inf
    return table, offset


def _float_exact(levels) -> bool:
    """Every (numeric) level is a float64 exactly, so that the binary search of
    `_SearchCoder` in the float64 levels compares by value (an int
    level beyond 2**53 would otherwise be rounded onto its neighbour)."""
    return all(float(v) == v for v in levels)


def _numeric_levels(levels) -> bool:
    return all(
        isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, (bool, np.bool_))
        and not (isinstance(v, (float, np.floating)) and math.isnan(v))
        for v in levels
    )


class _Worker:
    """Buffers and coders of one counting thread."""

    def __init__(self, domain: Domain, columns, chunk: int):
        self.chunk = chunk
        self.acc = np.empty(chunk, np.float64)
        self.tmp = np.empty(chunk, np.float64)
        self.u1 = np.empty(chunk, np.uint64)
        self.u2 = np.empty(chunk, np.uint64)
        self.coders = []
        strides = domain.strides
        for axis, stride in zip(domain.axes, strides):
            col = columns[axis.name]
            self.coders.append(self._coder(axis, col, int(stride)))
        # discrete axes first (see chunk_ids)
        discrete = [j for j, a in enumerate(domain.axes) if a.kind == "discrete"]
        continuous = [j for j, a in enumerate(domain.axes) if a.kind == "continuous"]
        self.order = discrete + continuous
        self.first_continuous = continuous[0] if continuous else None

    def _index_buffer(self):
        return np.empty(self.chunk, np.intp)

    def _coder(self, axis, col, stride):
        masked = _masked_parts(col)
        if masked is not None:
            data, mask = masked
            inner = self._coder(axis, data, stride)
            return _MaskedCoder(inner, mask, np.nan if axis.kind == "continuous" else _MISSING)
        if axis.kind == "continuous":
            return _ContinuousCoder(axis, col, stride)
        dtype = getattr(col, "dtype", None)
        if isinstance(dtype, pd.CategoricalDtype):
            cat = col.array if isinstance(col, pd.Series) else pd.Categorical(col)
            table = np.append(
                _float_codes(axis, pd.Categorical.from_codes(
                    np.arange(len(cat.categories)), dtype=cat.dtype), stride),
                _MISSING)
            return _LutCoder(cat.codes, table, 0, stride, "wrap", None)
        arr = _plain_numpy(col)
        if arr is None and not isinstance(col, (pd.Series, pd.Index,
                                                pd.api.extensions.ExtensionArray)):
            arr = np.asarray(col)
        if arr is not None:
            if arr.dtype == np.bool_:
                table = _float_codes(axis, np.array([False, True]), stride)
                return _LutCoder(arr.view(np.uint8), table, 0, stride, "clip", None)
            if arr.dtype.kind in "iu" and arr.dtype != np.uint64:
                lut = _int_lut(axis, arr, stride)
                if lut is not None:
                    return _LutCoder(arr, lut[0], lut[1], stride, "clip", self._index_buffer())
            if arr.dtype.kind == "f" and _numeric_levels(axis.levels) and _float_exact(axis.levels):
                return _SearchCoder(arr, axis, stride, self._index_buffer())
            if arr.dtype == object:
                return _ObjectCoder(arr, axis, stride, self.chunk)
            return _ReferenceCoder(axis, arr, stride)
        pa_array = _arrow_strings(col)
        if pa_array is not None:
            return _ArrowStringCoder(pa_array, axis, stride)
        return _ReferenceCoder(axis, col, stride)

    def chunk_ids(self, start: int, stop: int) -> tuple[np.ndarray, bool]:
        """Float64 ids of rows [start, stop), and whether a value is undeclared.

        The discrete axes are summed first: their sum is +inf exactly when a
        value is undeclared (their missing values are the finite
        `_MISSING`).  Then the continuous axes are added (NaN where
        missing).  A row is complete exactly when its id is < m.
        """
        k = stop - start
        acc, tmp = self.acc[:k], self.tmp[:k]
        first = True
        undeclared = False
        for j in self.order:
            if j == self.first_continuous and not first:
                undeclared = bool(acc.max() == np.inf)
            coder = self.coders[j]
            dest = acc if first else tmp
            if isinstance(coder, _ObjectCoder):
                coder.fill(start, stop, dest, self.u1, self.u2)
            else:
                coder.fill(start, stop, dest)
            if not first:
                np.add(acc, tmp, out=acc)
            first = False
        if self.first_continuous is None:
            undeclared = bool(acc.max() == np.inf)
        return acc, undeclared


def _masked_parts(col):
    """(values, mask) numpy arrays of a pandas masked array column, or None."""
    arr = col.array if isinstance(col, pd.Series) else col
    if isinstance(arr, pd.arrays.IntegerArray | pd.arrays.FloatingArray | pd.arrays.BooleanArray):
        return arr._data, arr._mask
    return None


def _arrow_strings(col):
    """The pyarrow ChunkedArray behind an Arrow-backed pandas string column, or None."""
    arr = col.array if isinstance(col, pd.Series) else col
    pa_array = getattr(arr, "_pa_array", None)
    if pa_array is None:
        return None
    try:
        import pyarrow as pa
    except ImportError:  # pragma: no cover - an Arrow array implies pyarrow
        return None
    if pa.types.is_string(pa_array.type) or pa.types.is_large_string(pa_array.type):
        return pa_array
    return None


# ---- the fast pass -------------------------------------------------------------------


@dataclass
class _Partial:
    """What one thread found in its rows."""

    dense: np.ndarray | None = None
    ids: list = field(default_factory=list)
    counts: list = field(default_factory=list)
    stored: int = 0
    missing_axes: set = field(default_factory=set)
    undeclared: tuple | None = None  # (axis index, example values)

    def add_sparse(self, sorted_ids: np.ndarray):
        flag = np.empty(sorted_ids.size, bool)
        flag[0] = True
        np.not_equal(sorted_ids[1:], sorted_ids[:-1], out=flag[1:])
        starts = np.flatnonzero(flag)
        counts = np.diff(np.append(starts, sorted_ids.size))
        self.ids.append(sorted_ids[starts].astype(np.uint64))
        self.counts.append(counts.astype(np.int64))
        self.stored += starts.size
        if len(self.ids) > 1 and self.stored > 2 * max(self.ids[0].size, 1 << 16):
            merged = merge_counts(self.ids, self.counts)  # keep memory O(cells)
            self.ids, self.counts, self.stored = [merged.ids], [merged.counts], merged.ids.size


def _inspect_bad_rows(domain, columns, start, bad_rows, part: _Partial):
    """Re-code the rows whose float id is NaN/inf axis by axis (reference codes):
    record the first undeclared axis (with examples) and every axis with missing values."""
    for i, axis in enumerate(domain.axes):
        values = _take_rows(columns[axis.name], start + bad_rows)
        _, miss, und = axis.codes(values)
        if und.any():
            example = np.asarray(values, dtype=object)[np.flatnonzero(und)[:3]]
            if part.undeclared is None or i < part.undeclared[0]:
                part.undeclared = (i, example.tolist())
            return
        if miss.any():
            part.missing_axes.add(i)


def _count_range(domain, columns, lo, hi, chunk, dense_size, missing) -> _Partial:
    m = domain.size
    part = _Partial()
    if dense_size:
        part.dense = np.zeros(dense_size, np.int64)
    if hi <= lo:
        return part
    worker = _Worker(domain, columns, chunk)
    ids_int = np.empty(chunk, np.intp)
    for start in range(lo, hi, chunk):
        stop = min(start + chunk, hi)
        acc, undeclared = worker.chunk_ids(start, stop)
        if undeclared or not acc.max() < m:  # an undeclared or a missing value
            keep = acc < m  # False for NaN, +inf and the missing sentinel
            if undeclared or (missing == "raise" and 0 not in part.missing_axes):
                _inspect_bad_rows(domain, columns, start, np.flatnonzero(~keep), part)
            acc = acc[keep]
        ids = ids_int[: acc.size]
        np.copyto(ids, acc, casting="unsafe")
        if part.dense is not None:
            np.add.at(part.dense, ids, 1)
        elif ids.size:
            part.add_sparse(np.sort(ids))
    return part


def _default_threads() -> int:
    """`THREADS`, less the cores other processes keep busy (1-minute load
    average, our own running thread excluded): threads that compete for busy
    cores, and hand the GIL back and forth, are slower than one."""
    if THREADS == 1:
        return 1
    try:
        load = os.getloadavg()[0]
    except (AttributeError, OSError):  # pragma: no cover - no load average on this OS
        return THREADS
    return max(1, min(THREADS, int(THREADS - max(0.0, load - 1.0) + 0.5)))


@dataclass(frozen=True)
class CountResult:
    """Counts of the complete rows, and what was wrong with the others."""

    counts: CellCounts
    #: (axis index, up to three values) of the first axis, in domain order,
    #: holding a value outside its declared levels; None if there is none.
    undeclared: tuple | None
    #: Axes with a missing value (filled only when missing="raise").
    missing_axes: frozenset

    def check(self, domain: Domain, missing: str) -> CellCounts:
        """The counts, or the error `count_cells()` raises."""
        if self.undeclared is not None:
            i, example = self.undeclared
            raise undeclared_error(domain.names[i], example)
        if self.missing_axes and missing == "raise":
            raise missing_error(domain.names[min(self.missing_axes)])
        return self.counts


def count_cells(
    columns: Mapping[str, Sized], domain: Domain, *, missing: str = "drop",
    threads: int | None = None,
) -> CellCounts:
    """Count rows per cell of ``domain``.

    Parameters
    ----------
    columns : mapping of str to array-like
        One array-like per domain variable, all of the same length.
    domain : Domain
    missing : {"drop", "raise"}
        Rows with a missing value in any variable are dropped, or refused.
    threads : int, optional
        Counting threads (default: `THREADS`, the usable cores, less
        those the load average shows busy).  The counts never depend on it.

    Raises
    ------
    UndeclaredLevelError
        A discrete value outside its declared levels (checked over every
        row, before ``missing="raise"`` is considered); names the first such
        variable in domain order.
    MissingValueError
        ``missing="raise"`` and a missing value; names the first such
        variable in domain order.
    """
    if missing not in ("drop", "raise"):
        raise ValueError(f'missing must be "drop" or "raise", got {missing!r}')
    return count_cells_unchecked(columns, domain, missing=missing, threads=threads).check(
        domain, missing)


def count_cells_unchecked(
    columns: Mapping[str, Sized], domain: Domain, *, missing: str = "drop",
    threads: int | None = None,
) -> CountResult:
    """`count_cells()` without raising: the counts of the complete rows and
    the undeclared/missing findings (engines that count partition by partition
    combine these before deciding)."""
    names = domain.names
    columns = {nm: _as_reference_input(columns[nm]) for nm in names}
    lengths = {len(columns[nm]) for nm in names}
    if len(lengths) > 1:
        raise ValueError(f"the columns have different lengths: {sorted(lengths)}")
    nrows = lengths.pop()
    m = domain.size
    if m > _FLOAT_EXACT:
        return _reference_unchecked(columns, domain, missing)
    if nrows == 0:
        return CountResult(CellCounts(np.zeros(0, np.uint64), np.zeros(0, np.int64)), None,
                           frozenset())
    chunk = max(1, min(CHUNK_ROWS, nrows))
    dense = m <= min(DENSE_COUNT_LIMIT, max(4 * nrows, 1 << 16))
    n_threads = _default_threads() if threads is None else max(1, int(threads))
    n_threads = max(1, min(n_threads, nrows // (4 * chunk) or 1))
    bounds = [int(b) for b in np.linspace(0, nrows, n_threads + 1)]
    args = [(domain, columns, bounds[i], bounds[i + 1], chunk, m if dense else 0, missing)
            for i in range(n_threads)]
    if n_threads == 1:
        parts = [_count_range(*args[0])]
    else:
        with ThreadPoolExecutor(n_threads, thread_name_prefix="dpmodels-count") as pool:
            parts = list(pool.map(lambda a: _count_range(*a), args))

    undeclared = [p.undeclared for p in parts if p.undeclared is not None]
    first = min(undeclared, key=lambda u: u[0]) if undeclared else None
    missing_axes = frozenset().union(*(p.missing_axes for p in parts))
    if dense:
        total = parts[0].dense
        assert total is not None  # dense: every part counts into its own array
        for p in parts[1:]:
            assert p.dense is not None
            total += p.dense
        nz = np.flatnonzero(total)
        counts = CellCounts(nz.astype(np.uint64), total[nz])
    else:
        counts = merge_counts([a for p in parts for a in p.ids],
                              [c for p in parts for c in p.counts])
    return CountResult(counts, first, missing_axes)


def _reference_unchecked(columns, domain, missing) -> CountResult:
    """Domains beyond 2**53 cells: the reference algorithm (int64 ids)."""
    empty = CellCounts(np.zeros(0, np.uint64), np.zeros(0, np.int64))
    try:
        return CountResult(count_cells_reference(columns, domain, missing=missing), None,
                           frozenset())
    except UndeclaredLevelError:
        for i, axis in enumerate(domain.axes):  # error path: which axis, which values
            _, _, und = axis.codes(columns[axis.name])
            if und.any():
                values = np.asarray(columns[axis.name], dtype=object)
                return CountResult(empty, (i, values[np.flatnonzero(und)[:3]].tolist()),
                                   frozenset())
    except MissingValueError:
        for i, axis in enumerate(domain.axes):
            _, miss, _ = axis.codes(columns[axis.name])
            if miss.any():
                return CountResult(empty, None, frozenset({i}))
    raise AssertionError("unreachable")  # pragma: no cover
