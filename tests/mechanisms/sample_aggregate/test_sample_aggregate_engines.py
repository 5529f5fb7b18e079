"""method="sample-aggregate" on every engine: the blocks are
assigned by the rows' words under the release's key (dpmodels.core.streams) and
fitted where the data live, and with one seed every engine publishes the
pandas release bit for bit.

1. ``block_cuts`` / ``block_ids`` give every row the block of
   ``np.array_split(row_order(...), k)``, with and without the driver's
   bounded-memory (chunked) selection, ties included.
2. Each engine x family (ols, logit, quantreg, mnlogit): the release (its
   numbers, report and range) equals pandas' of the same rows and seed; Dask
   with partitions of unequal sizes on a two-process cluster, Spark with two
   partitions, Polars and DuckDB in several batches.
3. The release does not depend on the partitioning: the same rows in 1, 3 or
   5 Dask partitions (unequal sizes) or in batches of another size give the
   same release.
4. An undeclared level is refused on every engine as on pandas, before any
   charge or draw.
"""

from __future__ import annotations

import math
import warnings

import dask.dataframe as dd
import duckdb
import numpy as np
import pandas as pd
import polars as pl
import pytest

import dpmodels as dpm
from dpmodels.mechanisms import sample_aggregate as sa
from dpmodels.data.engines import lazy
from dpmodels.core.streams import RowStreams


N = 1_203  # not a multiple of the blocks: blocks of two sizes
BLOCKS = 7
BOUNDS = {"x": (0.0, 1.0), "z": (-3.0, 3.0), "y": (-4.0, 8.0)}
LEVELS = {"g": ["a", "b", "c"], "yb": [0, 1], "yc": ["u", "v", "w"]}
FORMULAS = {"ols": "y ~ x + z + C(g)", "quantreg": "y ~ x + z", "logit": "yb ~ x + z",
            "mnlogit": "yc ~ x"}
ENGINES = ("polars", "polars-lazy", "duckdb", "dask", "spark")


def _frame(n: int = N, seed: int = 4) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    x = rng.uniform(0, 1, n)
    z = rng.normal(size=n)
    g = rng.choice(["a", "b", "c"], n)
    y = 1 + 2 * x - z + (g == "b") + rng.normal(0, 0.5, n)
    yb = (rng.uniform(size=n) < 1 / (1 + np.exp(-(2 * x - 1 + z)))).astype(np.int64)
    yc = np.array(["u", "v", "w"])[np.clip((x * 3 + rng.normal(0, 0.7, n)).astype(int), 0, 2)]
    df = pd.DataFrame({"y": y, "x": x, "z": z, "g": g, "yb": yb, "yc": yc})
    df.loc[[5, 600], "x"] = np.nan  # rows dropped: holes in their blocks
    return df


FRAME = _frame()


def _release(data, family: str, **kw):
    args = dict(family=family, formula=FORMULAS[family], epsilon=1.0, bounds=BOUNDS,
                levels=LEVELS, blocks=BLOCKS, param_bounds=(-30.0, 30.0), random_state=9,
                namespace={}) | kw
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return sa.release_sample_aggregate(data, **args)


def _published(rel) -> dict:
    """Everything a release publishes, numbers as their bits."""
    out = {"report": repr(rel.report), "blocks": rel.blocks, "names": rel.names,
           "failed": rel.failed_share, "no_information": rel.no_information}
    for name in ("params", "working", "noise_scale", "spread", "lo", "hi"):
        out[name] = np.asarray(getattr(rel, name), float).tobytes()
    return out


def _unequal_dask(df: pd.DataFrame, cuts=(0, 97, 700, 701, 1100)):
    """A Dask frame of len(cuts) partitions of unequal sizes (one of a single row)."""
    bounds = list(cuts) + [len(df)]
    return dd.concat([dd.from_pandas(df.iloc[a:b], npartitions=1)
                      for a, b in zip(bounds[:-1], bounds[1:])])


@pytest.fixture
def to_engine(request):
    def convert(engine: str, df: pd.DataFrame):
        if engine == "polars":
            return pl.from_pandas(df)
        if engine == "polars-lazy":
            return pl.from_pandas(df).lazy()
        if engine == "duckdb":
            return duckdb.connect().from_df(df)
        if engine == "dask":
            request.getfixturevalue("dask_client")
            return _unequal_dask(df)
        session = request.getfixturevalue("spark")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            sdf = session.createDataFrame(df)
        assert sdf.rdd.getNumPartitions() >= 2
        return sdf

    return convert


@pytest.fixture
def small_batches(monkeypatch):
    """Polars and DuckDB read the rows in batches of 250 (several batches)."""
    monkeypatch.setattr(lazy, "PARTITION_ROWS", 250)


# ---------------------------------------------------------------------------
# 1. the cuts give the blocks of the sorted words
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("n, k, chunk", [(1000, 7, 10**6), (1000, 7, 64), (5003, 333, 100),
                                         (20000, 2, 1000), (20000, 5000, 999)])
def test_block_ids_are_the_blocks_of_the_sorted_words(n, k, chunk):
    streams = RowStreams.from_source(3)
    parts = np.array_split(sa.row_order(streams, n), k)
    want = np.empty(n, np.int64)
    for b, rows in enumerate(parts):
        want[rows] = b
    cuts = sa.block_cuts(streams, n, k, chunk=chunk)
    pos = np.arange(n)
    assert (sa.block_ids(streams.words(pos, 0), pos, cuts) == want).all()
    # any subset of the rows, in any order (a batch), gets the same blocks
    pick = np.random.default_rng(0).permutation(n)[: n // 3]
    assert (sa.block_ids(streams.words(pick, 0), pick, cuts) == want[pick]).all()


def test_equal_words_are_ordered_by_position():
    cuts = (np.array([5, 5, 5, 9], np.uint64), np.array([2, 7, 9, 0]))
    w = np.array([5, 5, 5, 4, 9, 9], np.uint64)
    pos = np.array([1, 7, 8, 100, 0, 3])
    assert sa.block_ids(w, pos, cuts).tolist() == [0, 2, 2, 0, 4, 4]


# ---------------------------------------------------------------------------
# 2. every engine x family gives pandas' release, bit for bit
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("family", list(FORMULAS))
@pytest.mark.parametrize("engine", ENGINES)
def test_engine_release_is_pandas_bit_for_bit(engine, family, to_engine, small_batches):
    data = to_engine(engine, FRAME)
    ref = _published(_release(FRAME, family))
    got = _published(_release(data, family))
    assert got == ref, f"{family} on {engine}: " + ", ".join(
        k for k in ref if got[k] != ref[k])


def test_private_range_and_inf_on_dask(to_engine):
    """Without param_bounds (the private range, more blocks) and at
    epsilon=inf (the exact average): Dask's release is pandas'."""
    data = to_engine("dask", FRAME)
    for kw in (dict(param_bounds=None, blocks=None, epsilon=4.0), dict(epsilon=math.inf)):
        assert _published(_release(data, "ols", **kw)) == _published(
            _release(FRAME, "ols", **kw)), kw


def test_declared_n_on_an_engine(to_engine, small_batches):
    """With n declared, the default k comes from it and the partition from the
    rows handed in (counted by the engine), as on pandas."""
    ref = _published(_release(FRAME, "ols", n=1_000, blocks=None))
    assert _published(_release(to_engine("polars-lazy", FRAME), "ols", n=1_000,
                               blocks=None)) == ref


# ---------------------------------------------------------------------------
# 3. the partitioning does not matter
# ---------------------------------------------------------------------------


def test_release_does_not_depend_on_the_partitions(dask_client, monkeypatch):  # noqa: F811
    ref = _published(_release(FRAME, "logit"))
    for cuts in [(0,), (0, 400, 401), (0, 3, 50, 900, 1000)]:
        assert _published(_release(_unequal_dask(FRAME, cuts), "logit")) == ref, cuts
    for rows in (100, 611, 250_000):
        monkeypatch.setattr(lazy, "PARTITION_ROWS", rows)
        assert _published(_release(pl.from_pandas(FRAME).lazy(), "logit")) == ref, rows
        assert _published(_release(duckdb.connect().from_df(FRAME), "logit")) == ref, rows


# ---------------------------------------------------------------------------
# 4. refusals before any charge or draw
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("engine", ENGINES)
def test_undeclared_level_refused_before_any_charge(engine, to_engine, small_batches):
    bad = FRAME.copy()
    bad.loc[N - 3, "g"] = "zz"  # late: the last batch's or partition's
    data = to_engine(engine, bad)
    with pytest.raises(dpm.UndeclaredLevelError) as ref:
        _release(bad, "ols", accountant=dpm.Accountant(5.0))
    acct = dpm.Accountant(5.0)
    rng = np.random.default_rng(1)
    state = rng.bit_generator.state
    with pytest.raises(dpm.UndeclaredLevelError) as got:
        _release(data, "ols", accountant=acct, random_state=rng)
    assert str(got.value) == str(ref.value)
    assert acct.spent == 0 and acct.ledger == ()
    assert rng.bit_generator.state == state


@pytest.mark.parametrize("engine", ["polars-lazy", "dask"])
def test_missing_raise_refused_as_on_pandas(engine, to_engine):
    with pytest.raises(dpm.MissingValueError) as ref:
        _release(FRAME, "ols", missing="raise")
    acct = dpm.Accountant(5.0)
    with pytest.raises(dpm.MissingValueError) as got:
        _release(to_engine(engine, FRAME), "ols", missing="raise", accountant=acct)
    assert str(got.value) == str(ref.value) and acct.spent == 0
