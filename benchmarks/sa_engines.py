"""Sample-and-aggregate on every engine: the release's time on pandas, a
Polars LazyFrame, DuckDB, Dask (a local cluster of 2 worker processes, one
thread each) and Spark (local[2]), and whether it is pandas' release bit for
bit (same seed).

OLS ``y ~ x1 + x2 + C(g)`` (5 coefficients), epsilon = 1, the default number
of blocks and the private range; n = 1e5 and 1e6.  The time is the whole
``release_sample_aggregate`` call (reading the rows, building the design,
the partition, every block's statsmodels fit, the noise); making the
engine's frame from the pandas frame is not counted, nor the first release on
each engine (a release of 5,000 rows first: Spark's and Dask's workers start
their Python and import dpmodels).

    python benchmarks/sa_engines.py [--sizes 1e5,1e6] [--engines pandas,dask,...] [--repeat 2]

Writes ``benchmarks/results/sa_engines.md``.
"""

from __future__ import annotations

import argparse
import math
import os
import pathlib
import sys
import time
import warnings

import numpy as np
import pandas as pd

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))

from dpmodels.mechanisms import sample_aggregate as sa  # noqa: E402

FORMULA = "y ~ x1 + x2 + C(g)"
BOUNDS = {"x1": (0.0, 1.0), "x2": (-4.0, 4.0), "y": (-8.0, 10.0)}
LEVELS = {"g": ["a", "b", "c"]}
ENGINES = ("pandas", "polars-lazy", "duckdb", "dask", "spark")


def data(n: int) -> pd.DataFrame:
    rng = np.random.default_rng(1)
    df = pd.DataFrame({"x1": rng.uniform(0, 1, n), "x2": rng.normal(size=n).clip(-4, 4),
                       "g": rng.choice(["a", "b", "c"], n)})
    df["y"] = 1 + 2 * df["x1"] - df["x2"] + (df["g"] == "b") + rng.normal(0, 1, n)
    return df


def release(frame):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return sa.release_sample_aggregate(frame, family="ols", formula=FORMULA, epsilon=1.0,
                                           bounds=BOUNDS, levels=LEVELS, random_state=0,
                                           namespace={})


def convert(engine: str, df: pd.DataFrame, setup: dict):
    if engine == "pandas":
        return df
    if engine == "polars-lazy":
        import polars as pl

        return pl.from_pandas(df).lazy()
    if engine == "duckdb":
        import duckdb

        return duckdb.connect().from_df(df)
    if engine == "dask":
        import dask.dataframe as dd

        return dd.from_pandas(df, npartitions=4)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        frame = setup["spark"].createDataFrame(df).cache()
    frame.count()
    return frame


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="1e5,1e6")
    ap.add_argument("--engines", default=",".join(ENGINES))
    ap.add_argument("--repeat", type=int, default=1, help="the time is the least of these runs")
    args = ap.parse_args(argv)
    engines = args.engines.split(",")
    setup = {}
    if "dask" in engines:
        from dask.distributed import Client, LocalCluster

        cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                               dashboard_address=None)
        setup["client"] = Client(cluster)
    if "spark" in engines:
        from pyspark.sql import SparkSession

        setup["spark"] = (SparkSession.builder.master("local[2]")
                          .config("spark.ui.enabled", "false")
                          .config("spark.sql.shuffle.partitions", "2")
                          .config("spark.driver.memory", "2g").getOrCreate())
        setup["spark"].sparkContext.setLogLevel("ERROR")
    rows = []
    for n in (int(float(v)) for v in args.sizes.split(",")):
        df = data(n)
        ref = None
        for engine in engines:
            frame = convert(engine, df, setup)
            if engine not in setup.get("warm", ()):  # workers start and import dpmodels
                release(convert(engine, df.head(5_000), setup))
                setup.setdefault("warm", set()).add(engine)
            seconds = math.inf
            for _ in range(args.repeat):
                t0 = time.perf_counter()
                rel = release(frame)
                seconds = min(seconds, time.perf_counter() - t0)
            if engine == "pandas":
                ref = rel
            same = None if ref is None else (
                np.asarray(rel.params).tobytes() == np.asarray(ref.params).tobytes()
                and np.asarray(rel.spread).tobytes() == np.asarray(ref.spread).tobytes()
                and rel.report == ref.report)
            rows.append(dict(n=n, engine=engine, blocks=rel.blocks, seconds=round(seconds, 2),
                             same_as_pandas=same,
                             load=round(os.getloadavg()[0], 1)))  # (2 shared cores)
            print(rows[-1], flush=True)
    table = pd.DataFrame(rows)
    base = table[table.engine == "pandas"].set_index("n")["seconds"]
    table["vs pandas"] = [round(s / base.get(n, np.nan), 2) for n, s in
                          zip(table.n, table.seconds)]
    cols = list(table.columns)
    md = "\n".join(["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
                   + ["| " + " | ".join(str(v) for v in row) + " |"
                      for row in table.itertuples(index=False)])
    out = pathlib.Path(__file__).parent / "results"
    out.mkdir(exist_ok=True)
    (out / "sa_engines.md").write_text(md + "\n")
    print(md)


if __name__ == "__main__":
    main()
