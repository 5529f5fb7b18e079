"""Exact cell counts of the raw rows: the only module that reads them.

One vectorized pass, chunk by chunk: the axis code of each value, the
mixed-radix cell id, and a count per id.  No Python loop over rows or
cells; the caller's columns are read, never written or copied whole.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from .domain import Domain
from .errors import MissingValueError, UndeclaredLevelError

__all__ = ["CellCounts", "count_cells"]

#: Rows per chunk: keeps the per-chunk temporaries in cache.
CHUNK_ROWS = 1 << 18
#: Domains up to this size are counted with a dense bincount.
DENSE_COUNT_LIMIT = 1 << 24


@dataclass(frozen=True)
class CellCounts:
    """Exact counts of the non-empty cells (private: never released as is)."""

    ids: np.ndarray  # uint64, sorted, unique
    counts: np.ndarray  # int64, > 0


def _undeclared_error(axis, values, bad):
    # Say which value is undeclared: the caller's own data, shown to the caller
    # in an error raised before anything is released.
    example = np.asarray(values)[np.flatnonzero(bad)[:3]]
    return UndeclaredLevelError(
        f"{axis.name!r} takes values outside its declared levels "
        f"(e.g. {', '.join(map(repr, example.tolist()))}); add them to levels[{axis.name!r}] "
        "or recode/drop those rows before the release"
    )


def count_cells(
    columns: Mapping[str, object], domain: Domain, *, missing: str = "drop"
) -> CellCounts:
    """Count rows per cell of ``domain``.

    Parameters
    ----------
    columns : mapping of str to array-like
        One array-like per domain variable, all of the same length.
    domain : Domain
    missing : {"drop", "raise"}
        Rows with a missing value in any variable are dropped, or refused.
    """
    names = domain.names
    nrows = len(columns[names[0]])
    dense = domain.size <= min(DENSE_COUNT_LIMIT, 8 * nrows + (1 << 16))
    total = np.zeros(domain.size, dtype=np.int64) if dense else None
    parts_ids, parts_counts = [], []
    for start in range(0, max(nrows, 1), CHUNK_ROWS):
        stop = min(start + CHUNK_ROWS, nrows)
        codes, drop = [], np.zeros(stop - start, dtype=bool)
        for name in names:
            axis = domain.axis(name)
            values = _slice(columns[name], start, stop)
            c, miss, bad = axis.codes(values)
            if bad.any():
                raise _undeclared_error(axis, values, bad)
            if miss.any():
                if missing == "raise":
                    raise MissingValueError(
                        f"{name!r} has missing values and missing='raise' was asked: "
                        "drop or impute them first, or use missing='drop'"
                    )
                drop |= miss
            codes.append(c)
        if drop.any():
            codes = [c[~drop] for c in codes]
        ids = domain.encode(codes)
        if dense:
            total += np.bincount(ids.astype(np.int64), minlength=domain.size)
        else:
            u, k = np.unique(ids, return_counts=True)
            parts_ids.append(u)
            parts_counts.append(k)
    if dense:
        nz = np.flatnonzero(total)
        return CellCounts(nz.astype(np.uint64), total[nz])
    if not parts_ids:
        return CellCounts(np.zeros(0, np.uint64), np.zeros(0, np.int64))
    ids = np.concatenate(parts_ids)
    counts = np.concatenate(parts_counts)
    u, inv = np.unique(ids, return_inverse=True)
    return CellCounts(u, np.bincount(inv, weights=counts, minlength=u.size).astype(np.int64))


def _slice(col, start, stop):
    if hasattr(col, "iloc"):
        return col.iloc[start:stop]
    return col[start:stop]
