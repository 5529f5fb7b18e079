"""Dask DataFrames: dpmodels' numpy counter on every partition, a tree
reduction of the per-partition counts, and only the non-empty cells back.

A Dask partition is a pandas DataFrame, so each worker runs
`dpmodels.data.counting.count_cells_unchecked()` (the same code, and the same
bins, as an in-memory release) on its partitions and returns a small frame of
``(key, n)`` rows: one per non-empty cell, plus one per kind of bad row
(key ``-2 - i``: axis i holds an undeclared level; ``-2 - d - i``: axis i has
a missing value, reported only with ``missing="raise"``), the key scheme of
`dpmodels.data.engines.lazy`.  ``groupby(key).sum()`` adds them up across
partitions by Dask's tree reduction; the driver receives one row per
non-empty cell.

This is several times faster than evaluating the narwhals query on Dask
(pandas operations partition by partition, a pandas ``replace`` for the level
lookup, a pandas group-by): see ``docs/scaling.md``.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd

from ...domain.axes import Domain
from ..counting import CellCounts, count_cells_unchecked
from .lazy import COUNT, KEY, keys_to_counts, pandas_like_dtype

__all__ = ["DaskSource", "partition_counts"]


def partition_counts(pdf: pd.DataFrame, domain: Domain, missing: str) -> pd.DataFrame:
    """The ``(key, n)`` rows of one pandas partition (runs on a worker)."""
    res = count_cells_unchecked({nm: pdf[nm] for nm in domain.names}, domain,
                                missing=missing, threads=1)
    d = len(domain.axes)
    keys = [res.counts.ids.astype(np.int64)]
    counts = [res.counts.counts]
    if res.undeclared is not None:
        keys.append(np.array([-2 - res.undeclared[0]], np.int64))
        counts.append(np.ones(1, np.int64))
    if res.missing_axes:
        ax = np.array(sorted(res.missing_axes), np.int64)
        keys.append(-2 - d - ax)
        counts.append(np.ones(ax.size, np.int64))
    return pd.DataFrame({KEY: np.concatenate(keys), COUNT: np.concatenate(counts)})


def _undeclared_values(pdf: pd.DataFrame, domain: Domain, i: int) -> pd.Series:
    axis = domain.axes[i]
    _, _, und = axis.codes(pdf[axis.name])
    return pdf[axis.name][und].astype(object)


class DaskSource:
    """A ``dask.dataframe.DataFrame``."""

    engine = "dask"
    batches_here = False  # the partitions are read in the workers

    def __init__(self, ddf):
        self.ddf = ddf

    def columns(self) -> list[str]:
        return [str(c) for c in self.ddf.columns]

    def dtypes(self, names) -> dict:
        import narwhals as nw

        with warnings.catch_warnings():  # narwhals' notice that its Dask support moves to
            warnings.simplefilter("ignore", FutureWarning)  # a package of its own: not the user's
            schema = nw.from_native(self.ddf).collect_schema()
        return {nm: pandas_like_dtype(schema[nm], self.ddf.dtypes[nm]) for nm in names}

    def nrows(self) -> int:
        return int(len(self.ddf))

    def map_partitions(self, names: list[str], fn, *, positions: bool = False,
                       sizes: dict[int, int] | None = None) -> list:
        """``fn`` (a pandas frame -> a small result) on every partition of the
        named columns, in the workers; the results, one per partition.  With
        ``positions=True``, ``fn(frame, start)``, ``start`` the position of the
        partition's first row (the partitions' lengths are counted first,
        unless ``sizes``, partition i's rows at key i, counted before, are given)."""
        import dask

        parts = self.ddf[names].to_delayed()
        if not positions:
            return list(dask.compute(*[dask.delayed(fn)(p) for p in parts]))
        lengths = ([int(sizes.get(i, 0)) for i in range(len(parts))] if sizes is not None
                   else dask.compute(*[dask.delayed(len)(p) for p in parts]))
        starts = np.concatenate([[0], np.cumsum(lengths, dtype=np.int64)[:-1]])
        return list(dask.compute(*[dask.delayed(fn)(p, int(s)) for p, s in zip(parts, starts)]))

    def partition_rows(self, names: list[str]) -> dict[int, int]:
        """Each partition's number of rows, partition i at key i (the ``sizes``
        of `map_partitions()`)."""
        import dask

        parts = self.ddf[names].to_delayed()
        return dict(enumerate(int(r) for r in dask.compute(*[dask.delayed(len)(p)
                                                              for p in parts])))

    def count(self, domain: Domain, *, missing: str) -> CellCounts:
        names = list(domain.names)
        meta = pd.DataFrame({KEY: np.zeros(0, np.int64), COUNT: np.zeros(0, np.int64)})
        parts = self.ddf[names].map_partitions(partition_counts, domain, missing, meta=meta)
        total = parts.groupby(KEY)[COUNT].sum().compute()

        def examples(i):
            vals = self.ddf[names].map_partitions(
                _undeclared_values, domain, i, meta=pd.Series([], dtype=object, name=names[i]))
            return vals.head(3, npartitions=-1).tolist()

        return keys_to_counts(domain, total.index.to_numpy(), total.to_numpy(), missing, examples)
