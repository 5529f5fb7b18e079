"""What a release reads of the caller's in-memory data before any count: the
column names, a column's dtype and the number of rows (all public under
PRIVACY.md rule 4: the schema and, unless declared, n), and the error for a
column whose values cannot be coded.

These are the data layer's questions about a pandas DataFrame or a mapping of
arrays; an engine's frame answers them through `dpmodels.data.engines`.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd

from ..core.errors import DPModelsError, DPModelsTypeError
from ..domain.axes import Domain

__all__ = ["columns_of", "dtype_of", "nrows", "unreadable_values_error"]


def columns_of(data) -> list[str]:
    if isinstance(data, pd.DataFrame):
        return [str(c) for c in data.columns]
    if isinstance(data, Mapping):
        return [str(c) for c in data.keys()]
    raise DPModelsTypeError(
        "data must be a pandas DataFrame, a mapping of column name to array, a "
        "PrivateHistogram, or a Polars, Dask, DuckDB or PySpark data frame; "
        f"got {type(data).__name__}"
    )


def dtype_of(data, name):
    col = data[name]
    dtype = getattr(col, "dtype", None)
    if dtype is not None:
        return dtype
    try:
        arr = np.asarray(col)
    except (TypeError, ValueError):  # e.g. a ragged list of lists
        arr = None
    if arr is None or arr.ndim != 1:
        raise DPModelsTypeError(
            f"data[{name!r}] must be a 1-d column of values; it is not (e.g. a list of "
            "lists of different lengths, or a nested list)")
    return arr.dtype


def nrows(data) -> int:
    if isinstance(data, pd.DataFrame):
        return len(data)
    lengths = {}
    for key, col in data.items():
        if isinstance(col, (str, bytes)) or not hasattr(col, "__len__"):
            raise DPModelsTypeError(
                f"data[{key!r}] must be a column (a list or array of values), got "
                f"{type(col).__name__}")
        lengths[key] = len(col)
    if len(set(lengths.values())) > 1:
        raise DPModelsError(
            f"the columns of data have different lengths: {lengths}; a table's columns "
            "must all have one value per row")
    return next(iter(lengths.values()), 0)


def unreadable_values_error(data, domain: Domain) -> DPModelsError:
    """The error for a column whose values cannot be coded (e.g. unhashable
    objects); the data holder's own values may be named (PRIVACY.md rule 10)."""
    for axis in domain.axes:
        try:
            axis.codes(data[axis.name])
        except TypeError as exc:
            return DPModelsTypeError(
                f"{axis.name!r} holds values that cannot be matched to its declared levels "
                f"({exc}); recode the column to scalars (str, int, float, bool) first")
    return DPModelsTypeError(  # pragma: no cover - count_cells and Axis.codes agree
        f"the values of {list(domain.names)} cannot be counted; recode them to scalars first")
