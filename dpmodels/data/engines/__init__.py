"""Counting where the data live: lazy and distributed data frames.

`dpmodels.release()` accepts, besides a pandas DataFrame or a mapping of
arrays (counted in memory by `dpmodels.data.counting.count_cells()`):

* a Polars ``DataFrame`` or ``LazyFrame``,
* a Dask ``DataFrame`` (``dask.dataframe``, e.g. on a ``dask.distributed`` cluster),
* a DuckDB relation (``duckdb.DuckDBPyRelation``),
* a PySpark ``DataFrame``.

For these the binning and the counting run inside the engine: the bin index
of each value, the mixed-radix cell id and a group-by count are pushed down
as one query, and only the non-empty cells' ``(id, count)`` pairs, plus one
count per kind of bad row (undeclared level, missing value), come back to the
driver.  Noise, threshold and fit then run locally exactly as for pandas.

The query is written once with `narwhals <https://narwhals-dev.github.io/narwhals/>`_
(see `dpmodels.data.engines.lazy` and ``docs/scaling.md`` for the choice);
Dask, whose partitions are pandas frames, runs dpmodels' own numpy counter on
each partition instead (`dpmodels.data.engines.dask`), which is several times
faster than evaluating the same expressions partition by partition.

Privacy: the engine reads only the schema (column names and dtypes) before
the domain is built, a row count for the public ``n`` (unless ``n=`` is
declared), and then the counts.  The domain, the bins and the threshold
depend on public inputs only, as for pandas (PRIVACY.md rules 2 and 4).
"""

from __future__ import annotations

from typing import Protocol

from ...domain.axes import Domain
from ..counting import CellCounts
from .dask import DaskSource
from .lazy import NarwhalsSource

__all__ = ["Source", "source_for", "SUPPORTED"]

#: The engines a release can count in, by the name used in messages and extras.
SUPPORTED = ("polars", "dask", "duckdb", "pyspark")


class Source(Protocol):
    """What `dpmodels.release()` needs from a data source that is not in memory."""

    #: Engine name: one of `SUPPORTED`.
    engine: str
    #: `map_partitions()` hands the batches to this process (not to workers).
    batches_here: bool

    def columns(self) -> list[str]:
        """Column names (schema only)."""

    def dtypes(self, names) -> dict:
        """Pandas-equivalent dtype of each named column (schema only), as
        `dpmodels.domain.axes.build_domain()` expects them."""

    def nrows(self) -> int:
        """Number of rows (one counting query in the engine)."""

    def map_partitions(self, names: list[str], fn, *, positions: bool = False,
                       sizes: dict[int, int] | None = None) -> list:
        """``fn(frame)`` on every batch or partition of the named columns, as
        pandas frames, where the data live; the (small) results, one per batch,
        in the rows' order.  The row passes of the moments, Newton and
        quantile-steps releases run through it; ``fn`` must be picklable (Spark
        and Dask send it to their workers).  With ``positions=True`` the call is
        ``fn(frame, start)``: ``start`` is the position of the frame's first row
        among all the rows in the engine's order, whatever the batches are (the
        per-row streams of `dpmodels.core.streams` are keyed by it); ``sizes``, the
        rows of each partition counted in an earlier pass (Dask's partition i
        at key i, Spark's by partition id), saves the pass that counts them
        (a local release counts them before the charge)."""

    def partition_rows(self, names: list[str]) -> dict[int, int]:
        """The rows of each partition (Spark by partition id, Dask partition i
        at key i): ``sizes`` for `map_partitions()`.  Not for the engines
        whose batches come to this process (Polars, DuckDB: they count as they
        go)."""

    def count(self, domain: Domain, *, missing: str) -> CellCounts:
        """Exact counts of the non-empty cells, computed in the engine; raises
        `UndeclaredLevelError` / `MissingValueError`
        exactly as `count_cells()` does."""


def source_for(data) -> Source | None:
    """The engine adapter for ``data``, or None for in-memory data (a pandas
    DataFrame, a mapping of arrays) that `count_cells()` counts itself.

    Detection looks at the type only (a library that is not imported cannot
    have produced ``data``, so nothing is imported to find out).
    """
    import sys

    mod = type(data).__module__ or ""
    top = mod.split(".", 1)[0]
    if top in ("dask", "dask_expr") and "dask.dataframe" in sys.modules:
        import dask.dataframe as dd

        if isinstance(data, dd.DataFrame):
            return DaskSource(data)
    if top == "polars" and "polars" in sys.modules:
        import polars as pl

        if isinstance(data, pl.DataFrame | pl.LazyFrame):
            return NarwhalsSource(data, "polars")
    if top == "duckdb" and "duckdb" in sys.modules:
        import duckdb

        if isinstance(data, duckdb.DuckDBPyRelation):
            return NarwhalsSource(data, "duckdb")
    if top == "pyspark" and "pyspark" in sys.modules:
        from pyspark.sql import DataFrame as SparkDataFrame

        if isinstance(data, SparkDataFrame):
            return NarwhalsSource(data, "pyspark")
    return None
