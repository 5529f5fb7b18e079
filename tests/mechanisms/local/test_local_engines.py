"""Local randomization where the data live: ``dpm.local.randomize``
on a Polars DataFrame or LazyFrame, a DuckDB relation, a Dask DataFrame and a
PySpark DataFrame gives, with one seed, the pandas release of the same rows bit
for bit - the k report counts, the report, the debiased estimate and the fits
of the ``dp_*`` models on it - whatever the batches: each row draws from its
own stream, keyed by its position (:mod:`dpmodels.core.streams`), and each batch
sends back only its k counts.  Dask runs on a two-process cluster with
partitions of unequal sizes, Spark on two partitions, Polars and DuckDB in
batches of 300 rows (and once in two passes, past the rows kept in memory).
Bad rows (an undeclared level in two batches, a missing value under
``missing="raise"``) are refused with pandas' message before anything is
charged or drawn."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

import dpmodels as dpm
import dpmodels.data.engines.lazy as lazy
import dpmodels.mechanisms.local as local
from dpmodels.core.errors import DPModelsError
from dpmodels.core.randomness import SeededBits


N = 2_000
LEVELS = {"g": ["a", "b", "c"], "y": [0, 1]}
BOUNDS = {"x": (0.0, 10.0)}
FORMULA = "y ~ x + C(g)"
ENGINES = ["polars", "polars-lazy", "duckdb", "dask", "spark"]


def _frame(n: int = N, seed: int = 4) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    g = rng.choice(LEVELS["g"], n)
    x = rng.uniform(0, 10, n)
    y = (rng.random(n) < 1 / (1 + np.exp(2.0 - 0.4 * x - 0.8 * (g == "b")))).astype(np.int64)
    x[::97] = np.nan  # the missing cell is randomized too
    return pd.DataFrame({"y": y, "g": g, "x": x})


FRAME = _frame()


@pytest.fixture
def to_engine(request, monkeypatch):
    """engine, pandas frame -> that engine's frame of the same rows, split into
    several batches or partitions."""
    monkeypatch.setattr(lazy, "PARTITION_ROWS", 300)  # Polars / DuckDB: 7 batches

    def convert(engine: str, df: pd.DataFrame):
        if engine in ("polars", "polars-lazy"):
            import polars as pl

            out = pl.from_pandas(df)
            return out.lazy() if engine == "polars-lazy" else out
        if engine == "duckdb":
            import duckdb

            return duckdb.connect().from_df(df)
        if engine == "dask":
            import dask.dataframe as dd

            request.getfixturevalue("dask_client")
            n = len(df)
            ddf = dd.from_pandas(df, npartitions=1).repartition(
                divisions=[0, 150, n // 2 + 101, n - 170, n - 1])
            assert ddf.npartitions == 4
            return ddf
        if engine == "spark":
            session = request.getfixturevalue("spark")
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                sdf = session.createDataFrame(df)
            assert sdf.rdd.getNumPartitions() >= 2
            return sdf
        raise AssertionError(engine)

    return convert


def _randomize(data, channel: str, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)  # (PySpark's, on pandas 3)
        return dpm.local.randomize(data, formula=FORMULA, epsilon=1.5, bounds=BOUNDS,
                                   levels=LEVELS, bins=4, channel=channel, random_state=11,
                                   **kw)


def _fits(rel) -> list:
    return [dpm.dp_ols(FORMULA, rel).fit(cov_type="naive").params.to_numpy(),
            dpm.dp_logit(FORMULA, rel).fit(cov_type="naive").params.to_numpy()]


REFERENCE = {ch: _randomize(FRAME, ch) for ch in ("krr", "oue")}


@pytest.mark.parametrize("engine", ENGINES)
def test_engine_release_is_the_pandas_release(engine, to_engine):
    data = to_engine(engine, FRAME)
    for channel, ref in REFERENCE.items():
        assert ref.channel.name == channel and (ref.reports is None) == (channel == "oue")
        rel = _randomize(data, channel)
        assert rel.channel == ref.channel and rel.report == ref.report, (engine, channel)
        assert np.array_equal(rel.report_counts, ref.report_counts), (engine, channel)
        assert rel.report_counts.dtype == np.int64
        assert np.array_equal(rel.estimate, ref.estimate)
        assert np.array_equal(rel.projected, ref.projected)
        assert rel.reports is None  # only the k counts came back from the batches
        if channel == "krr":
            assert np.array_equal(np.bincount(ref.reports, minlength=ref.channel.k),
                                  rel.report_counts)
        for a, b in zip(_fits(rel), _fits(ref)):
            assert np.array_equal(a, b), (engine, channel)


def test_polars_in_two_passes_is_the_same(to_engine, monkeypatch):
    """Past the rows an in-process engine's cells are kept for, the batches are
    read twice (checked, then randomized): the same release."""
    monkeypatch.setattr(local, "_KEEP_ROWS", 0)
    rel = _randomize(to_engine("polars-lazy", FRAME), "krr")
    assert np.array_equal(rel.report_counts, REFERENCE["krr"].report_counts)


class _CountingBits(SeededBits):
    def __init__(self):
        super().__init__(np.random.default_rng(0))
        self.drawn = 0

    def words(self, size):
        self.drawn += int(size)
        return super().words(size)


def _refusal(data, **kw):
    bits, acct = _CountingBits(), dpm.Accountant(5.0)
    with warnings.catch_warnings(), pytest.raises(DPModelsError) as info:
        warnings.simplefilter("ignore", FutureWarning)
        dpm.local.randomize(data, formula=FORMULA, epsilon=1.0, bounds=BOUNDS, levels=LEVELS,
                            bins=4, random_state=bits, accountant=acct, **kw)
    assert bits.drawn == 0 and acct.spent == 0 and acct.ledger == ()
    return type(info.value), str(info.value)


@pytest.mark.parametrize("engine", ENGINES)
def test_undeclared_level_refused_before_the_charge(engine, to_engine):
    """Undeclared values in two batches: the message names those of the first
    three such rows, as pandas does; nothing charged, no word drawn."""
    bad = FRAME.copy()
    bad.loc[[40, 41, 1500, 1501], "g"] = ["zz", "zz", "qq", "ww"]
    ref = _refusal(bad)
    assert ref[0].__name__ == "UndeclaredLevelError" and "(e.g. 'zz', 'qq')" in ref[1], ref
    assert _refusal(to_engine(engine, bad)) == ref


@pytest.mark.parametrize("engine", ["polars-lazy", "dask"])
def test_missing_value_refused_under_raise(engine, to_engine):
    ref = _refusal(FRAME, missing="raise")
    assert ref[0].__name__ == "MissingValueError" and "'x'" in ref[1]
    assert _refusal(to_engine(engine, FRAME), missing="raise") == ref


def test_rows_at_overlapping_positions_are_refused():
    """Two rows at one position would share a stream (their reports would not be
    independent): batches whose positions are not 0 .. n - 1, each once (an
    engine whose partitions changed between two reads), release nothing."""
    c = np.ones(3, np.int64)
    assert local._sum_counts([(10, 10, c), (0, 10, c), (20, 0, 0 * c)], 20, 3).tolist() == [2] * 3
    for parts in ([(0, 20, c), (3, 5, c)], [(0, 10, c), (5, 10, c), (10, 10, c)],
                  [(0, 10, c)], [(0, 10, c), (10, 10, c), (20, 5, c)], [(0, 10, c), (11, 9, c)]):
        with pytest.raises(DPModelsError, match="each once"):
            local._sum_counts(parts, 20, 3)
