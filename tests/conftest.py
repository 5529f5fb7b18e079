"""Shared fixtures: small synthetic data sets with public domains."""

from __future__ import annotations

import os

# One BLAS thread per test process: the run has two xdist workers on two cores, and each
# worker's OpenBLAS starting a thread per core oversubscribes them (measured: two processes
# running test_worlds' 8 quantile-steps releases side by side take 55 s with the default
# threads, 26 s with one).  Set before numpy loads where it can be (subprocesses the tests
# start inherit it), and through threadpoolctl where numpy is already loaded.
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402

try:  # numpy may have been loaded (by a plugin) before this file: limit its pools too
    from threadpoolctl import threadpool_limits

    threadpool_limits(limits=1, user_api="blas")
except ImportError:  # threadpoolctl comes with scikit-learn, in the test extra
    pass

HOUSING_FORMULA = "price ~ size + year + C(county)"
HOUSING_BOUNDS = {"price": (1e5, 9e5), "size": (0, 3000)}
HOUSING_LEVELS = {"county": [f"County{i}" for i in range(1, 7)], "year": [1, 2, 3, 4]}


@pytest.fixture(scope="session")
def spark_session():
    """One local Spark session (``local[2]``) for the whole run: a JVM start costs
    several seconds, and the modules that count in Spark (tests/data/test_engines.py,
    the engine contract, the neighbours, the row streams, ...) share it through
    their ``spark`` fixture.  The JVM's quick-start options halve its start."""
    import warnings

    pytest.importorskip("pyspark")
    from pyspark.sql import SparkSession

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        session = (SparkSession.builder.master("local[2]").appName("dpmodels-tests")
                   .config("spark.ui.enabled", "false")
                   .config("spark.sql.shuffle.partitions", "2")
                   .config("spark.sql.adaptive.enabled", "false")
                   .config("spark.driver.memory", "1g")
                   .config("spark.driver.extraJavaOptions",
                           "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC")
                   .getOrCreate())
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()


@pytest.fixture(scope="session")
def housing_small() -> pd.DataFrame:
    from dpmodels.front.datasets import housing

    return housing(n=20_000, seed=3)


@pytest.fixture
def discrete_frame() -> pd.DataFrame:
    """Only discrete variables: epsilon=inf must reproduce smf.ols exactly."""
    rng = np.random.default_rng(11)
    n = 3_000
    g = rng.choice(["a", "b", "c"], size=n, p=[0.5, 0.3, 0.2])
    k = rng.integers(1, 5, size=n)
    b = rng.random(n) < 0.4
    y = (2 + 3 * k - 4 * (g == "b") + 1.5 * b + rng.integers(-3, 4, size=n)).astype(np.int64)
    return pd.DataFrame({"y": y, "k": k, "g": g, "b": b})


@pytest.fixture
def mixed_frame() -> pd.DataFrame:
    rng = np.random.default_rng(5)
    n = 4_000
    x = rng.uniform(0.5, 10, size=n)
    g = rng.choice(["lo", "mid", "hi"], size=n)
    y = 1 + 0.8 * x + (g == "hi") * 2 + rng.normal(0, 1, size=n)
    return pd.DataFrame({"y": y, "x": x, "g": g})


MIXED_BOUNDS = {"y": (-5, 20), "x": (0, 10)}
MIXED_LEVELS = {"g": ["lo", "mid", "hi"]}


@pytest.fixture(scope="module")
def spark(spark_session):
    """The run's Spark session, under the name the engine tests use."""
    return spark_session


@pytest.fixture(scope="module")
def dask_client():
    """A local Dask cluster per test module: two worker processes, one thread each,
    so that the counting function and the domain are pickled to the workers, as on
    a real cluster.  Skips where Dask is not installed (an optional engine)."""
    distributed = pytest.importorskip("dask.distributed")
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                       dashboard_address=None)
    client = distributed.Client(cluster)
    yield client
    client.close()
    cluster.close()
