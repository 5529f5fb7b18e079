"""Counting at scale: the fast in-memory counter against the reference
algorithm, the engines (Polars, DuckDB, a Dask cluster, Spark) against
pandas, ``threshold="auto"``, and a 2e9-cell domain.

The engines are real: a ``dask.distributed`` LocalCluster with two worker
processes, a local-mode Spark session (``local[2]``), Polars and DuckDB in
process.  Their libraries are imported at module level, so a missing
dependency fails this module instead of skipping it (``pip install
".[test,all]"`` installs them).
"""

from __future__ import annotations

import math
import time
import tracemalloc
import warnings
from dataclasses import asdict

import dask.dataframe as dd
import duckdb
import numpy as np
import pandas as pd
import polars as pl
import pytest

import dpmodels as dpm
import dpmodels.data.counting as hist
from dpmodels.domain.axes import Axis, Domain, build_domain
from dpmodels.data.engines import source_for
from dpmodels.data.engines.dask import DaskSource
from dpmodels.data.engines.lazy import NarwhalsSource
from dpmodels.core.noise import discrete_laplace_sf
from dpmodels.mechanisms.histogram import resolve_threshold
from dpmodels.core.thresholds import (
    AUTO_SPURIOUS_FRACTION,
    auto_threshold,
    enhanced_cut,
    spurious_mass,
)

# ---------------------------------------------------------------------------
# the in-memory counter: fast path == reference, value for value
# ---------------------------------------------------------------------------


def _same(a, b):
    np.testing.assert_array_equal(a.ids, b.ids)
    np.testing.assert_array_equal(a.counts, b.counts)
    assert a.ids.dtype == np.uint64 and a.counts.dtype == np.int64


def _kinds_frame(n: int, seed: int = 0) -> pd.DataFrame:
    """One column per coder of the fast counter, with missing values, values
    outside the bounds, values exactly on bin edges and bounds."""
    rng = np.random.default_rng(seed)
    x = rng.normal(5, 4, n)
    x[rng.random(n) < 0.02] = np.nan
    x[:6] = [0.0, 10.0, -1e300, 1e300, 2.0, 9.999999999999998]  # bounds, far out, an edge
    strings = np.array(["a", "b", "c", None, float("nan")], dtype=object)
    return pd.DataFrame({
        "x": x,
        "x32": rng.uniform(-1, 11, n).astype(np.float32),
        "xi": rng.integers(-5, 20, n),
        "k": rng.integers(1, 5, n),
        "k8": rng.integers(0, 3, n).astype(np.int8),
        "ku": rng.integers(10, 13, n).astype(np.uint16),
        "kf": np.where(rng.random(n) < 0.03, np.nan, rng.integers(1, 5, n).astype(float)),
        # an object column of Python strings (pandas 3 would infer "str" from a plain array)
        "g": pd.Series(strings[rng.choice(5, n, p=[0.4, 0.3, 0.2, 0.05, 0.05])], dtype=object),
        "gs": pd.array(np.array(["a", "b", "c"])[rng.integers(0, 3, n)], dtype="str"),
        "b": rng.random(n) < 0.3,
        "c": pd.Categorical(np.array(["u", "v", "w", None], dtype=object)[rng.integers(0, 4, n)],
                            categories=["w", "v", "u", "z"]),
        "mi": pd.array(np.where(rng.random(n) < 0.05, None, rng.integers(1, 4, n)), dtype="Int64"),
        "mf": pd.array(np.where(rng.random(n) < 0.05, None, rng.normal(0, 1, n)), dtype="Float64"),
        "mb": pd.array(np.where(rng.random(n) < 0.05, None, rng.random(n) < 0.5), dtype="boolean"),
    })


KIND_BOUNDS = {"x": (0, 10), "x32": (0, 10), "xi": (0, 15), "mf": (-2, 2)}
KIND_LEVELS = {"k": [4, 3, 2, 1], "k8": [0, 1, 2], "ku": [10, 11, 12.0], "kf": [1, 2, 3, 4.0],
               "g": ["c", "b", "a"], "gs": ["a", "b", "c"], "mi": [3, 1, 2], "c": "dtype"}


def _domain(df, names, bins=7):
    return build_domain(names, df.dtypes.to_dict(), bounds={k: v for k, v in KIND_BOUNDS.items()
                                                            if k in names},
                        levels={k: v for k, v in KIND_LEVELS.items() if k in names},
                        bins=bins, n=len(df), epsilon=1.0)


@pytest.fixture(scope="module")
def kinds():
    df = _kinds_frame(30_000)
    assert df["g"].dtype == object and str(df["gs"].dtype) == "str"
    return df


@pytest.mark.parametrize("names", [
    ["x", "x32", "xi", "k", "k8", "ku", "kf"],
    ["g", "gs", "b", "c"],
    ["mi", "mf", "mb", "x"],
    ["x", "g", "k", "b", "c", "kf"],
])
@pytest.mark.parametrize("setting", ["default", "small chunks, 3 threads", "sparse", "1 thread"])
def test_fast_counter_equals_reference(kinds, names, setting, monkeypatch):
    if setting == "small chunks, 3 threads":
        monkeypatch.setattr(hist, "CHUNK_ROWS", 777)
        threads = 3
    elif setting == "sparse":
        monkeypatch.setattr(hist, "DENSE_COUNT_LIMIT", 0)
        monkeypatch.setattr(hist, "CHUNK_ROWS", 4096)
        threads = 2
    else:
        threads = 1 if setting == "1 thread" else None
    dom = _domain(kinds, names)
    cols = {c: kinds[c] for c in names}
    _same(hist.count_cells(cols, dom, threads=threads), hist.count_cells_reference(cols, dom))


def test_fast_counter_takes_arrays_lists_and_many_distinct_objects(monkeypatch):
    rng = np.random.default_rng(3)
    n = 20_000
    labels = [f"id{i}" for i in range(300)]
    # freshly built strings: many distinct objects per level, beyond the address cache
    g = np.array([labels[i] + "" if i % 2 else "".join(labels[i]) for i in rng.integers(0, 300, n)],
                 dtype=object)
    monkeypatch.setattr(hist, "OBJECT_CACHE_LIMIT", 50)
    dom = build_domain(["g", "x"], {"g": g.dtype, "x": np.dtype(float)}, bounds={"x": (0, 1)},
                       levels={"g": labels}, bins=4, n=n, epsilon=1.0)
    x = rng.random(n)
    for cols in ({"g": g, "x": x}, {"g": list(g), "x": list(x)}):
        _same(hist.count_cells(cols, dom), hist.count_cells_reference(cols, dom))


def test_fast_counter_errors_match_reference(kinds):
    names = ["x", "k", "g", "c"]
    dom = _domain(kinds, names)
    bad = kinds[names].copy()
    bad.loc[len(bad) - 5, "k"] = 7  # undeclared, late in the data, in a row whose x is fine
    for f in (hist.count_cells, hist.count_cells_reference):
        with pytest.raises(dpm.UndeclaredLevelError, match=r"'k'.*\b7\b"):
            f({c: bad[c] for c in names}, dom)
        # undeclared wins over missing="raise", wherever the missing values are
        with pytest.raises(dpm.UndeclaredLevelError, match="'k'"):
            f({c: bad[c] for c in names}, dom, missing="raise")
        # missing="raise" names the first variable, in domain order, with a missing value
        with pytest.raises(dpm.MissingValueError, match="'x'"):
            f({c: kinds[c] for c in names}, dom, missing="raise")
        ok = kinds.dropna(subset=["x"])
        with pytest.raises(dpm.MissingValueError, match="'g'"):
            f({c: ok[c] for c in names}, dom, missing="raise")


def test_domains_beyond_float_exact_ids_use_the_reference():
    rng = np.random.default_rng(0)
    n = 5_000
    df = pd.DataFrame({f"x{i}": rng.random(n) for i in range(4)})
    dom = Domain(tuple(Axis(c, "continuous", bounds=(0, 1), bins=20_000) for c in df.columns))
    assert dom.size > 2**53
    cols = {c: df[c] for c in df.columns}
    _same(hist.count_cells(cols, dom), hist.count_cells_reference(cols, dom))


def test_counting_memory_is_chunk_plus_cells_not_rows():
    """Extra memory of a count over 6 million rows stays O(chunk + cells):
    a single O(n) temporary (an id or a code per row) would be 48 MB, while
    the chunk buffers of two threads take about 13 MB."""
    rng = np.random.default_rng(1)
    n = 6_000_000
    df = pd.DataFrame({"y": rng.normal(size=n), "x": rng.normal(size=n),
                       "k": rng.integers(0, 4, n),
                       "g": pd.Series(np.array(["a", "b", "c"], dtype=object)[rng.integers(0, 3, n)],
                                      dtype=object)})
    dom = build_domain(list(df.columns), df.dtypes.to_dict(), bounds={"y": (-3, 3), "x": (-3, 3)},
                       levels={"k": [0, 1, 2, 3], "g": ["a", "b", "c"]}, bins=20, n=n,
                       epsilon=1.0)
    cols = {c: df[c] for c in df.columns}
    tracemalloc.start()
    try:
        got = hist.count_cells(cols, dom, threads=2)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert got.counts.sum() == n
    assert peak < 24 * 2**20, f"peak traced memory {peak / 2**20:.1f} MiB"


# ---------------------------------------------------------------------------
# engines: the same release as pandas
# ---------------------------------------------------------------------------

FORMULA = "y ~ x + age + k + C(g) + b + rooms"
KW = dict(formula=FORMULA, epsilon=1.0, bounds={"y": (-2, 8), "x": (0, 10), "age": (18, 90)},
          levels={"k": [1, 2, 3, 4], "g": ["a", "b", "c"], "rooms": [1, 2, 3.0]}, bins=6,
          random_state=11)
ENGINES = ["polars", "polars-lazy-nan", "duckdb", "dask", "spark"]


def _frame(n=3_000, seed=0) -> pd.DataFrame:
    """Continuous (float with NaN, int), numeric-discrete (int; float with NaN),
    string-discrete with None, bool; values outside bounds and on edges."""
    rng = np.random.default_rng(seed)
    y = rng.normal(3, 2.5, n)
    y[rng.random(n) < 0.03] = np.nan
    x = rng.uniform(-1, 11, n)
    x[:5] = [0.0, 10.0, 5.0, 10 / 6, 1e9]  # bounds, an inner edge, far outside
    rooms = rng.integers(1, 4, n).astype(float)
    rooms[rng.random(n) < 0.02] = np.nan
    g = np.array(["a", "b", "c"], dtype=object)[rng.integers(0, 3, n)]
    g[rng.random(n) < 0.02] = None
    return pd.DataFrame({"y": y, "x": x, "age": rng.integers(10, 100, n),
                         "k": rng.integers(1, 5, n), "g": g, "b": rng.random(n) < 0.4,
                         "rooms": rooms, "unused": np.arange(n)})


@pytest.fixture
def to_engine(request):
    """Converts a pandas frame into the frame of the requested engine."""

    def convert(engine, pdf):
        if engine == "polars":
            return pl.from_pandas(pdf)  # NaN -> null
        if engine == "polars-lazy-nan":
            return pl.from_pandas(pdf, nan_to_null=False).lazy()  # NaN kept as NaN
        if engine == "duckdb":
            return duckdb.connect().from_df(pdf)  # DOUBLE NaN, VARCHAR NULL
        if engine == "dask":
            request.getfixturevalue("dask_client")
            return dd.from_pandas(pdf, npartitions=3)
        if engine == "spark":
            session = request.getfixturevalue("spark")
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                return session.createDataFrame(pdf)
        raise AssertionError(engine)

    return convert


@pytest.fixture(scope="module")
def frame():
    return _frame()


@pytest.fixture(scope="module")
def pandas_release(frame):
    return dpm.release(frame, **KW)


def _engine_release(data, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)  # pyspark on pandas 3
        return dpm.release(data, **{**KW, **kw})


@pytest.mark.parametrize("engine", ENGINES)
def test_engine_release_equals_pandas(engine, frame, pandas_release, to_engine):
    data = to_engine(engine, frame)
    src = source_for(data)
    expected = {"polars": NarwhalsSource, "polars-lazy-nan": NarwhalsSource,
                "duckdb": NarwhalsSource, "dask": DaskSource, "spark": NarwhalsSource}[engine]
    assert isinstance(src, expected)
    rel = _engine_release(data)
    assert rel.domain == pandas_release.domain
    np.testing.assert_array_equal(rel.cell_ids, pandas_release.cell_ids)
    np.testing.assert_array_equal(rel.counts, pandas_release.counts)
    assert asdict(rel.report) == asdict(pandas_release.report)
    # and the exact counts too (epsilon=inf: no noise, no threshold)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", dpm.NotPrivateWarning)
        exact = _engine_release(data, epsilon=math.inf)
        ref = dpm.release(frame, **{**KW, "epsilon": math.inf})
    np.testing.assert_array_equal(exact.cell_ids, ref.cell_ids)
    np.testing.assert_array_equal(exact.counts, ref.counts)
    assert exact.counts.sum() == frame[["y", "g", "rooms"]].notna().all(axis=1).sum()


@pytest.mark.parametrize("engine", ENGINES)
def test_engine_refuses_undeclared_levels_and_missing_values(engine, frame, to_engine):
    bad = frame.copy()
    bad.loc[len(bad) - 3, "k"] = 9  # an undeclared numeric level, late in the data
    with pytest.raises(dpm.UndeclaredLevelError, match=r"'k'.*\b9\b"):
        _engine_release(to_engine(engine, bad))
    bad = frame.copy()
    bad.loc[7, "g"] = "zz"  # an undeclared string level
    with pytest.raises(dpm.UndeclaredLevelError, match="'g'.*'zz'"):
        _engine_release(to_engine(engine, bad), missing="raise")  # undeclared wins
    with pytest.raises(dpm.MissingValueError, match="'y'"):
        _engine_release(to_engine(engine, frame), missing="raise")
    complete_y = frame.dropna(subset=["y"])
    with pytest.raises(dpm.MissingValueError, match="'g'"):  # first in domain order
        _engine_release(to_engine(engine, complete_y), missing="raise")


@pytest.mark.parametrize("engine", ["polars", "duckdb", "dask", "spark"])
def test_engine_fit_and_declared_n(engine, frame, to_engine):
    data = to_engine(engine, frame)
    kw = {k: v for k, v in KW.items() if k != "formula"}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        res = dpm.dp_ols("y ~ x + age + C(g)", data, **kw).fit()
        rel = dpm.release(data, **{**KW, "n": 5_000})
    ref = dpm.dp_ols("y ~ x + age + C(g)", frame, **kw).fit()
    pd.testing.assert_series_equal(res.params, ref.params)
    assert rel.report.n == 5_000 and rel.report.n_source == "declared by the caller"
    ref_n = dpm.release(frame, **{**KW, "n": 5_000})
    np.testing.assert_array_equal(rel.cell_ids, ref_n.cell_ids)


@pytest.mark.parametrize("engine", ["polars", "duckdb", "dask"])
def test_engine_level_matching_follows_pandas_types(engine, to_engine):
    """Narrow integer and float32 columns: levels are matched by value (the
    integral float 3.0 is the int8 value 3); a level the column's dtype
    cannot hold (300 on int8, 0.1 on float32) is refused before counting, in
    every engine as in pandas; a value outside the levels is undeclared."""
    pdf = pd.DataFrame({"a": np.array([1, 2, 3, 1, 2], dtype=np.int8),
                        "f": np.array([0.5, 1.0, 0.5, 0.25, 1.0], dtype=np.float32)})
    kw = dict(columns=["a", "f"], epsilon=math.inf,
              levels={"a": [1, 2, 3.0], "f": [0.5, 0.25, 1.0]})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", dpm.NotPrivateWarning)
        ref = dpm.release(pdf, **kw)
        got = dpm.release(to_engine(engine, pdf), **kw)
        np.testing.assert_array_equal(got.cell_ids, ref.cell_ids)
        np.testing.assert_array_equal(got.counts, ref.counts)
        assert ref.counts.sum() == len(pdf)
        for data in (pdf, to_engine(engine, pdf)):
            with pytest.raises(dpm.DomainError, match=r"'a'.*300.*int8"):
                dpm.release(data, **{**kw, "levels": {**kw["levels"], "a": [1, 2, 300]}})
            with pytest.raises(dpm.DomainError, match=r"'f'.*0\.1.*float32"):
                dpm.release(data, **{**kw, "levels": {**kw["levels"], "f": [0.5, 0.1, 1.0]}})
        bad = pdf.assign(f=np.array([0.5, 1.0, 0.75, 0.5, 1.0], dtype=np.float32))
        for data in (bad, to_engine(engine, bad)):
            with pytest.raises(dpm.UndeclaredLevelError, match="'f'"):
                dpm.release(data, **kw)


def test_engine_schema_declares_levels_like_pandas(spark):
    """A polars Enum (a schema type) declares its categories, as a pandas
    Categorical does when the caller says so (levels="dtype"); a bool column
    declares (False, True); strings need declared levels."""
    pdf = pd.DataFrame({"y": [1.0, 2.0, 3.0, 4.0], "c": ["p", "q", "p", "q"],
                        "b": [True, False, True, True]})
    enum = pl.from_pandas(pdf).with_columns(pl.col("c").cast(pl.Enum(["q", "p", "r"])))
    cat = pdf.assign(c=pd.Categorical(pdf["c"], categories=["q", "p", "r"]))
    kw = dict(columns=["y", "c", "b"], epsilon=math.inf, bounds={"y": (0, 5)}, bins=5)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", dpm.NotPrivateWarning)
        a = dpm.release(enum, **kw)
        b = dpm.release(cat, **kw, levels={"c": "dtype"})
        assert a.domain == b.domain and a.domain.axis("c").levels == ("q", "p", "r")
        np.testing.assert_array_equal(a.cell_ids, b.cell_ids)
        with pytest.raises(dpm.DomainError, match=r"'c' is a pandas Categorical.*\"dtype\""):
            dpm.release(cat, **kw)  # its categories may have been built from the data
        with pytest.raises(dpm.DomainError, match="'c'"):
            dpm.release(pl.from_pandas(pdf), **kw)
        with pytest.raises(dpm.DomainError, match="'c'"):
            dpm.release(spark.createDataFrame(pdf), **kw)


# ---------------------------------------------------------------------------
# threshold="auto"
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("m,n,eps", [(2_400, 250_070, 1.0), (2_400, 250_070, 0.1),
                                     (10**6, 10**4, 1.0), (2 * 10**9, 10**6, 1.0),
                                     (2 * 10**9, 10**6, 0.1), (10**15, 10**3, 3.0)])
def test_auto_threshold_is_the_smallest_cut_meeting_the_mass_bound(m, n, eps):
    k = auto_threshold(m, n, eps, 0.5)
    k0 = enhanced_cut(n, eps, 0.5)
    assert k >= k0
    budget = AUTO_SPURIOUS_FRACTION * n
    assert spurious_mass(k, m, eps) <= budget
    assert k == k0 or spurious_mass(k - 1, m, eps) > budget
    # the closed form against the exact tail of the discrete Laplace
    q = math.exp(-eps / 2)
    assert spurious_mass(k, m, eps) == pytest.approx(
        m * discrete_laplace_sf(k, eps) * (k + q / (1 - q)), rel=1e-9)


def test_auto_threshold_is_enhanced_on_small_domains_and_grows_with_m():
    assert auto_threshold(2_400, 250_070, 1.0, 0.5) == enhanced_cut(250_070, 1.0, 0.5)
    ks = [auto_threshold(10**e, 10**5, 1.0, 0.5) for e in range(2, 16)]
    assert ks == sorted(ks) and ks[-1] > ks[0]
    # logarithmic growth: about (2/epsilon) log(10) per factor of ten once the rule binds
    assert ks[-1] - ks[-2] in (4, 5)
    spec = resolve_threshold("auto", 1.0, 10**6, 0.5, 2 * 10**9)
    assert spec.k == 31 and spec.rule.startswith("auto")
    with pytest.raises(ValueError, match="needs the domain size"):
        resolve_threshold("auto", 1.0, 10**6, 0.5)
    # a cap on the expected spurious cells is honoured as well
    capped = auto_threshold(10**12, 10**8, 1.0, 0.5, max_spurious_cells=10)
    assert 10**12 * discrete_laplace_sf(capped, 1.0) <= 10


def test_auto_threshold_depends_on_public_inputs_only(frame):
    kw = {**KW, "threshold": "auto"}
    a = dpm.release(frame, **kw)
    b = dpm.release(frame.assign(y=frame["y"] * 0 + 7.5, g="a"), **kw)
    assert a.report.threshold == b.report.threshold
    assert a.report.threshold_rule == b.report.threshold_rule
    assert a.report.threshold_rule.startswith("auto")


def _big_domain_frame(n, seed=0):
    """8 continuous variables (10 bins each) and a 20-level factor: 2e9 cells.
    The x's take two well-separated values each (so cells hold enough rows
    to survive a threshold), the response is linear in them."""
    rng = np.random.default_rng(seed)
    xs = {f"x{j}": 2.5 + 5.0 * (rng.random(n) < 0.5) + rng.uniform(-0.3, 0.3, n)
          for j in range(1, 8)}
    g = rng.integers(0, 20, n)
    beta = np.linspace(0.2, 1.4, 7)
    y = 1.0 + sum(b * xs[f"x{j}"] for j, b in zip(range(1, 8), beta)) + 0.3 * (g % 4) \
        + rng.normal(0, 0.5, n)
    return pd.DataFrame({"y": y, **xs, "g": np.array([f"L{i:02d}" for i in range(20)])[g]})


BIG_FORMULA = "y ~ " + " + ".join(f"x{j}" for j in range(1, 8)) + " + C(g)"
BIG_KW = dict(bounds={"y": (10, 45), **{f"x{j}": (0, 10) for j in range(1, 8)}},
              levels={"g": [f"L{i:02d}" for i in range(20)]}, bins=10)


def test_two_billion_cell_domain_releases_and_fits_quickly():
    n = 200_000
    df = _big_domain_frame(n)
    # the enhanced threshold would release ~1e8 noise cells: refused before any data is read
    with pytest.raises(dpm.DomainTooLargeError):
        dpm.dp_ols(BIG_FORMULA, df, epsilon=2.0, random_state=0, method="histogram", **BIG_KW)
    tracemalloc.start()
    start = time.perf_counter()
    try:
        model = dpm.dp_ols(BIG_FORMULA, df, epsilon=2.0, threshold="auto", random_state=0,
                           method="histogram", **BIG_KW)
        res = model.fit()
        seconds = time.perf_counter() - start
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    rep = res.privacy
    assert rep.domain_cells == 2 * 10**9
    assert rep.expected_spurious_cells * (rep.threshold + 2) <= AUTO_SPURIOUS_FRACTION * n
    assert rep.released_cells < 50_000
    assert seconds < 30 and peak < 400 * 2**20  # generous: seconds and ~100 MB here
    # the slopes are recovered roughly (binning at width 1 on x's with two modes)
    beta = np.linspace(0.2, 1.4, 7)
    got = res.params[[f"x{j}" for j in range(1, 8)]].to_numpy()
    assert np.all(np.abs(got - beta) < 0.25), got


def test_auto_is_the_enhanced_threshold_on_small_domains_and_above_it_on_large(frame):
    kw = dict(KW, formula="y ~ x + C(g)", bins=4)  # 48 cells, n = 3,000: the bound holds
    a = dpm.release(frame, **kw, threshold="auto")
    b = dpm.release(frame, **kw)  # the default: enhanced
    assert b.report.threshold_rule == "enhanced"
    assert a.report.threshold_rule.startswith("auto") and "enhanced" in a.report.threshold_rule
    # (over the cells' part of epsilon: the rest counts the rows outside the bounds, issue 43)
    assert a.report.threshold == b.report.threshold == pytest.approx(
        0.5 * math.log(len(frame)) / a.report.noise_epsilon)
    np.testing.assert_array_equal(a.cell_ids, b.cell_ids)
    np.testing.assert_array_equal(a.counts, b.counts)
    assert "auto" in str(a.report)
    # the engine test formula's 15,552 cells with n = 3,000: the mass bound binds
    big = dpm.release(frame, **KW, threshold="auto")
    eps_cells = big.report.noise_epsilon
    k = auto_threshold(big.report.domain_cells, len(frame), eps_cells, 0.5)
    assert big.report.threshold == k > enhanced_cut(len(frame), eps_cells, 0.5)
    assert "above enhanced" in big.report.threshold_rule
