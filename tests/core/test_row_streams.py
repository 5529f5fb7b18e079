"""Per-row streams (dpmodels.core.streams) and the row positions every engine hands
to a row pass (``Source.map_partitions(..., positions=True)``): the two
pieces that make a row-by-row randomization or a block assignment the same
release whatever the engine's batches are."""

from __future__ import annotations

import pickle
import warnings

import dask.dataframe as dd
import duckdb
import numpy as np
import pandas as pd
import polars as pl
import pytest
from scipy import stats

from dpmodels.data.engines import source_for
from dpmodels.core.randomness import SecureBits
from dpmodels.core.streams import RowStreams


N = 600_000  # more than two Polars / DuckDB batches of PARTITION_ROWS (250,000)


def test_a_row_word_depends_on_its_position_and_index_only():
    s = RowStreams.from_source(3)
    rows = np.arange(1000)
    full = s.words(rows, 2)
    # any subset, in any order, gets the same words
    pick = np.array([999, 5, 0, 500])
    assert (s.words(pick, 2) == full[pick]).all()
    # another word index, another key: other words
    assert (s.words(rows, 3) != full).mean() > 0.99
    assert (RowStreams.from_source(4).words(rows, 2) != full).mean() > 0.99
    # per-row word indices
    j = np.arange(1000) % 4
    mixed = s.words(rows, j)
    for jj in range(4):
        assert (mixed[j == jj] == s.words(rows[j == jj], jj)).all()


def test_seeded_reproducible_secure_not():
    a = RowStreams.from_source(11)
    assert a.seeded and (a.words(np.arange(10), 0) == RowStreams.from_source(11).words(
        np.arange(10), 0)).all()
    b, c = RowStreams.from_source(None), RowStreams.from_source(SecureBits())
    assert not b.seeded and not c.seeded
    assert (b.words(np.arange(10), 0) != c.words(np.arange(10), 0)).all()
    # the key is the whole state: it pickles (to Dask's and Spark's workers)
    d = pickle.loads(pickle.dumps(a))
    assert d.seeded and (d.words(np.arange(10), 1) == a.words(np.arange(10), 1)).all()


def test_words_look_uniform():
    """The top 8 bits of 256,000 words: chi-square on 256 equal cells, and
    the lowest bit's mean, at the 1e-4 level (fixed key; a biased or
    repeated construction fails by far)."""
    w = RowStreams.from_source(1).words(np.arange(256_000), 0)
    top = (w >> np.uint64(56)).astype(np.int64)
    counts = np.bincount(top, minlength=256)
    assert stats.chisquare(counts).pvalue > 1e-4
    low = (w & np.uint64(1)).astype(float)
    assert abs(low.mean() - 0.5) < 4.0 * 0.5 / np.sqrt(low.size)
    # consecutive rows' words are uncorrelated
    u = (w >> np.uint64(11)).astype(float) / 2.0**53
    r = np.corrcoef(u[:-1], u[1:])[0, 1]
    assert abs(r) < 4.0 / np.sqrt(u.size)


def test_bad_rows_refused():
    s = RowStreams.from_source(0)
    with pytest.raises(ValueError, match="non-negative"):
        s.words(np.array([-1, 2]), 0)
    with pytest.raises(ValueError, match="16 bytes"):
        RowStreams(b"short", True)


def _frame(n: int) -> pd.DataFrame:
    rng = np.random.default_rng(0)
    return pd.DataFrame({"i": np.arange(n, dtype=np.int64), "x": rng.normal(size=n)})


def _starts(frame, start):
    return int(start), int(len(frame)), int(frame["i"].iloc[0]), int(frame["i"].iloc[-1])


@pytest.mark.parametrize("engine", ["polars", "polars-lazy", "duckdb", "dask", "spark"])
def test_positions_are_the_rows_order(engine, request):
    # Spark: 2 partitions of Arrow batches of 10,000 rows; fewer rows suffice
    n = 40_000 if engine == "spark" else N
    pdf = _frame(n)
    if engine == "polars":
        data = pl.from_pandas(pdf)
    elif engine == "polars-lazy":
        data = pl.from_pandas(pdf).lazy()
    elif engine == "duckdb":
        data = duckdb.connect().from_df(pdf)
    elif engine == "dask":
        request.getfixturevalue("dask_client")
        data = dd.from_pandas(pdf, npartitions=7)
    else:
        session = request.getfixturevalue("spark")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            data = session.createDataFrame(pdf)
    got = source_for(data).map_partitions(["i", "x"], _starts, positions=True)
    assert len(got) >= 2, "the test needs more than one batch"
    covered = 0
    for start, rows, first, last in got:
        assert start == first, "a batch's start is its first row's position"
        assert last == start + rows - 1
        covered += rows
    assert covered == n
    assert sorted(g[0] for g in got) == [g[0] for g in got]
    # without positions the call is fn(frame), as before
    plain = source_for(data).map_partitions(["i"], len)
    assert sum(plain) == n
