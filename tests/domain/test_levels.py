"""Declared levels, one rule at a time (PRIVACY.md rules 2, 3 and 5).

1. What is published about a discrete variable (parameter names, cell-frame
   values, dtypes, category order) comes from the declared levels in their
   declared type, never from the column's dtype.
2. A pandas Categorical's categories count as declared only when the caller
   says so (``levels={"x": "dtype"}`` or the list); a bool dtype and a
   Polars Enum declare their levels by type.
3. Levels are compared with values by value, never cast to the column's
   dtype; a level the dtype cannot hold is refused before anything is counted.
4. The response of dp_mnlogit / dp_logit is coded in the declared order.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pandas as pd
import pytest
import statsmodels.api as sm

import dpmodels as dpm
import dpmodels.data.counting as hist
from dpmodels.domain.axes import Axis, Domain, build_domain

INF = math.inf


def _quiet(fn, *args, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", dpm.NotPrivateWarning)
        return fn(*args, **kw)


def _year_frame(n=400, seed=0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    year = rng.integers(1, 4, n)
    price = 10 + 2 * year + rng.normal(0, 1, n)
    return pd.DataFrame({"price": price, "year": year})


# ---------------------------------------------------------------------------
# 1. published metadata comes from the declared levels
# ---------------------------------------------------------------------------


def test_one_missing_int_does_not_rename_parameters_or_retype_cells():
    """The example of the issue: dp_ols('price ~ C(year)') on a data set and on
    its neighbour whose one row has a missing year (pandas: float64)."""
    df = _year_frame()
    nb = df.copy()
    nb["year"] = nb["year"].astype(float)
    nb.loc[5, "year"] = np.nan
    assert nb["year"].dtype == np.float64
    kw = dict(epsilon=1.0, bounds={"price": (0, 30)}, levels={"year": [1, 2, 3]}, bins=4,
              random_state=3)
    a = dpm.dp_ols("price ~ C(year)", df, **kw)
    b = dpm.dp_ols("price ~ C(year)", nb, **kw)
    ra, rb = a.fit(cov_type="naive"), b.fit(cov_type="naive")
    assert list(ra.params.index) == list(rb.params.index) == [
        "Intercept", "C(year)[T.2]", "C(year)[T.3]"]
    assert a.release.cells["year"].dtype == b.release.cells["year"].dtype == np.int64
    # the fit codes a factor by every declared level (a Categorical of them, in patsy's
    # order), the same on both neighbours
    assert a.cells["year"].dtype == b.cells["year"].dtype
    assert list(a.cells["year"].cat.categories) == [1, 2, 3]
    assert a.cells["year"].cat.categories.dtype == np.int64
    assert a.release.domain == b.release.domain


@pytest.mark.parametrize("dtype", ["int8", "uint8", "int32", "int64", "Int64", "float64",
                                   "float32"])
@pytest.mark.parametrize("levels,published,names", [
    ([1, 2, 3], np.int64, ["C(k)[T.2]", "C(k)[T.3]"]),
    ([3, 1, 2.0], np.float64, ["C(k)[T.2.0]", "C(k)[T.3.0]"]),
])
def test_numeric_levels_are_published_in_their_declared_type(dtype, levels, published, names):
    df = _year_frame().rename(columns={"year": "k"})
    df["k"] = df["k"].astype(dtype)
    model = _quiet(dpm.dp_ols, "price ~ C(k)", df, epsilon=INF, bounds={"price": (0, 30)},
                   levels={"k": levels}, bins=3)
    assert model.release.cells["k"].dtype == published
    # the fit's cells code the factor by its declared levels, in their published type
    assert model.cells["k"].cat.categories.dtype == published
    assert model.release.domain.axis("k").value_dtype == np.dtype(published).name
    res = model.fit(cov_type="naive")
    assert list(res.params.index)[1:] == names


@pytest.mark.parametrize("make", [
    lambda s: s,                                    # pandas' default string dtype
    lambda s: s.astype(object),                     # Python strings
    lambda s: s.astype("category"),                 # categories built from the data
    lambda s: s.astype(pd.CategoricalDtype(["z", "m", "a"])),  # other category order
])
def test_string_levels_are_published_from_the_list_whatever_the_column(make):
    """A declared list of strings: a Categorical whose categories are the
    levels sorted (as patsy sorts a string column), whatever the column."""
    rng = np.random.default_rng(1)
    g = pd.Series(rng.choice(["m", "a", "z"], 300))
    df = pd.DataFrame({"y": rng.normal(size=300), "g": make(g)})
    model = _quiet(dpm.dp_ols, "y ~ C(g)", df, epsilon=INF, bounds={"y": (-4, 4)},
                   levels={"g": ["z", "m", "a"]}, bins=3)
    for frame in (model.release.cells, model.cells):
        assert isinstance(frame["g"].dtype, pd.CategoricalDtype)
        assert list(frame["g"].cat.categories) == ["a", "m", "z"]
    assert list(model.fit(cov_type="naive").params.index) == ["Intercept", "C(g)[T.m]",
                                                             "C(g)[T.z]"]


def test_declared_order_comes_from_the_declaration():
    """'dtype' on a Categorical, or a CategoricalDtype as the level set, keep
    their category order (the first is the reference level)."""
    rng = np.random.default_rng(2)
    g = rng.choice(["m", "a", "z"], 300)
    y = rng.normal(size=300)
    cat = pd.DataFrame({"y": y, "g": pd.Categorical(g, categories=["z", "m", "a"])})
    plain = pd.DataFrame({"y": y, "g": g})
    kw = dict(epsilon=INF, bounds={"y": (-4, 4)}, bins=3)
    a = _quiet(dpm.dp_ols, "y ~ C(g)", cat, levels={"g": "dtype"}, **kw)
    b = _quiet(dpm.dp_ols, "y ~ C(g)", plain, levels={"g": pd.CategoricalDtype(["z", "m", "a"])},
               **kw)
    for model in (a, b):
        assert list(model.cells["g"].cat.categories) == ["z", "m", "a"]
        assert list(model.fit(cov_type="naive").params.index) == ["Intercept", "C(g)[T.m]",
                                                                 "C(g)[T.a]"]
    assert a.release.domain == b.release.domain


def test_bool_levels_do_not_depend_on_a_missing_value():
    """A bool column with one missing value is object in pandas; declared
    (False, True) it publishes the same Categorical as the bool column."""
    rng = np.random.default_rng(3)
    df = pd.DataFrame({"y": rng.normal(size=200), "b": rng.random(200) < 0.5})
    nb = df.astype({"b": object})
    nb.loc[3, "b"] = None
    kw = dict(epsilon=1.0, bounds={"y": (-4, 4)}, levels={"b": [False, True]}, bins=3,
              random_state=0)
    a, b = dpm.dp_ols("y ~ b", df, **kw), dpm.dp_ols("y ~ b", nb, **kw)
    for model in (a, b):
        assert list(model.release.cells["b"].cat.categories) == [False, True]
        assert str(model.release.cells["b"].cat.categories.dtype) == "bool"
    assert list(a.fit(cov_type="naive").params.index) == list(
        b.fit(cov_type="naive").params.index) == ["Intercept", "b[T.True]"]


def test_axis_column_is_a_function_of_the_levels_only():
    codes = np.array([0, 1, 2, 2])
    col = Axis("k", "discrete", levels=(-1, 0, 1)).column(codes)
    assert col.dtype == np.int64 and col.tolist() == [-1, 0, 1, 1]
    col = Axis("k", "discrete", levels=(0, 0.5, 1)).column(codes)
    assert col.dtype == np.float64 and col.tolist() == [0.0, 0.5, 1.0, 1.0]
    col = Axis("g", "discrete", levels=("b", "c", "a")).column(codes)
    assert list(col.categories) == ["a", "b", "c"] and list(col) == ["b", "c", "a", "a"]
    col = Axis("g", "discrete", levels=("b", "c", "a"), declared_order=True).column(codes)
    assert list(col.categories) == ["b", "c", "a"] and list(col) == ["b", "c", "a", "a"]
    col = Axis("g", "discrete", levels=("b", 1, "a")).column(codes)
    assert list(col.categories) == ["b", 1, "a"]  # strings and numbers: declared order


def test_engines_publish_what_pandas_publishes_with_a_missing_int():
    import duckdb
    import polars as pl

    df = _year_frame()
    nb = df.astype({"year": float})
    nb.loc[7, "year"] = np.nan
    kw = dict(formula="price ~ C(year)", epsilon=1.0, bounds={"price": (0, 30)},
              levels={"year": [1, 2, 3]}, bins=4, random_state=0)
    frames = [df, nb, pl.from_pandas(df), pl.from_pandas(nb), duckdb.connect().from_df(nb)]
    dtypes = {str(dpm.release(f, **kw).cells.dtypes.to_dict()) for f in frames}
    assert dtypes == {str({"price": np.dtype(float), "year": np.dtype(np.int64),
                           "count": np.dtype(np.int64)})}


# ---------------------------------------------------------------------------
# 2. a pandas Categorical's categories are declared only when the caller says so
# ---------------------------------------------------------------------------


def test_categorical_from_data_is_refused_without_a_declaration():
    rng = np.random.default_rng(4)
    df = pd.DataFrame({"y": rng.normal(size=100),
                       "g": pd.Series(rng.choice(["a", "b"], 100)).astype("category")})
    with pytest.raises(dpm.DomainError, match=r"'g' is a pandas Categorical.*from the data.*"
                                              r"levels=\{'g': \"dtype\"\}"):
        dpm.release(df, columns=["y", "g"], epsilon=1.0, bounds={"y": (-4, 4)})
    # a neighbour with one new category would change the domain: the list fixes it
    nb = df.copy()
    nb["g"] = nb["g"].cat.add_categories("c")
    nb.loc[0, "g"] = "c"
    kw = dict(columns=["y", "g"], epsilon=1.0, bounds={"y": (-4, 4)}, bins=3, random_state=0,
              levels={"g": ["a", "b", "c"]})
    a, b = dpm.release(df, **kw), dpm.release(nb, **kw)
    assert a.domain == b.domain and a.report.domain_cells == b.report.domain_cells == 9


def test_dtype_declaration_needs_categories():
    df = pd.DataFrame({"y": [0.0, 1.0], "g": ["a", "b"]})
    with pytest.raises(dpm.DomainError, match=r"levels\['g'\] = \"dtype\".*dtype str"):
        dpm.release(df, columns=["y", "g"], epsilon=1.0, bounds={"y": (0, 1)},
                    levels={"g": "dtype"})
    with pytest.raises(dpm.DomainError, match=r"levels\['g'\] must be a list"):
        dpm.release(df, columns=["y", "g"], epsilon=1.0, bounds={"y": (0, 1)},
                    levels={"g": "ab"})
    dom = build_domain(["g"], {"g": pd.CategoricalDtype()}, levels={"g": ["a"]}, n=10,
                       epsilon=1.0)
    assert dom.axis("g").levels == ("a",)
    with pytest.raises(dpm.DomainError, match="unknown"):
        build_domain(["g"], {"g": pd.CategoricalDtype()}, levels={"g": "dtype"}, n=10,
                     epsilon=1.0)


def test_bool_and_enum_declare_their_levels_by_type():
    import polars as pl

    from dpmodels.domain.axes import EnumType
    from dpmodels.data.engines.lazy import pandas_like_dtype

    dom = build_domain(["b", "e"], {"b": np.dtype(bool), "e": EnumType(("q", "p"))}, n=10,
                       epsilon=1.0)
    assert dom.axis("b").levels == (False, True)
    assert dom.axis("e").levels == ("q", "p") and dom.axis("e").declared_order
    import narwhals.stable.v2 as nw

    schema = nw.from_native(pl.DataFrame({"e": ["p"], "s": ["x"]}).with_columns(
        pl.col("e").cast(pl.Enum(["q", "p"])))).collect_schema()
    assert pandas_like_dtype(schema["e"]) == EnumType(("q", "p"))
    assert isinstance(pandas_like_dtype(schema["s"]), pd.StringDtype)
    # an Enum's list of levels must be among its categories (the schema says what it holds)
    with pytest.raises(dpm.DomainError, match=r"'e'.*'r'.*categories"):
        build_domain(["e"], {"e": EnumType(("q", "p"))}, levels={"e": ["q", "p", "r"]}, n=10,
                     epsilon=1.0)


def test_dask_categorical_follows_the_pandas_rule():
    import dask.dataframe as dd

    pdf = pd.DataFrame({"y": np.linspace(0, 1, 20),
                        "g": pd.Categorical(["a", "b"] * 10, categories=["b", "a"])})
    ddf = dd.from_pandas(pdf, npartitions=2)
    kw = dict(columns=["y", "g"], epsilon=INF, bounds={"y": (0, 1)}, bins=2)
    with pytest.raises(dpm.DomainError, match="'g' is a pandas Categorical"):
        _quiet(dpm.release, ddf, **kw)
    got = _quiet(dpm.release, ddf, **kw, levels={"g": "dtype"})
    ref = _quiet(dpm.release, pdf, **kw, levels={"g": "dtype"})
    assert got.domain == ref.domain and got.domain.axis("g").levels == ("b", "a")
    np.testing.assert_array_equal(got.counts, ref.counts)
    unknown = ddf.assign(g=ddf["g"].cat.as_unknown())
    with pytest.raises(dpm.DomainError, match="unknown"):
        _quiet(dpm.release, unknown, **kw, levels={"g": "dtype"})
    listed = _quiet(dpm.release, unknown, **kw, levels={"g": ["a", "b"]})
    np.testing.assert_array_equal(listed.counts, ref.counts)


# ---------------------------------------------------------------------------
# 3. levels are compared by value; a level the dtype cannot hold is refused
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("dtype,levels,bad", [
    ("uint8", [-1, 0, 1], "-1"),
    ("uint8", [0, 1, 300], "300"),
    ("UInt8", [0, 256], "256"),
    ("int8", [1, 200], "200"),
    ("int64", [0, 0.5, 1], "0.5"),
    ("Int64", [0, 0.5], "0.5"),
    ("int64", [0, "1"], "'1'"),
    ("float64", [0.5, "a"], "'a'"),
    ("float32", [0.5, 0.1], "0.1"),
    ("float64", [1, 2**53 + 1], str(2**53 + 1)),
    ("bool", [0, 1], "0"),
    ("str", ["a", 1], "1"),
    ("object", ["a", None], "None"),
    ("float64", [1.0, float("nan")], "nan"),
])
def test_a_level_the_column_cannot_hold_is_refused_before_counting(dtype, levels, bad):
    df = pd.DataFrame({"k": pd.Series([levels[0]] * 4).astype(dtype)})
    rng = np.random.default_rng(0)
    state = rng.bit_generator.state
    with pytest.raises(dpm.DomainError, match=rf"'k'.*{bad}") as info:
        dpm.release(df, columns=["k"], epsilon=1.0, levels={"k": levels}, random_state=rng)
    assert not isinstance(info.value, dpm.UndeclaredLevelError)  # refused, not counted
    assert rng.bit_generator.state == state


def test_levels_that_fit_are_accepted_and_matched_by_value():
    df = pd.DataFrame({"u": np.array([0, 1, 255, 1], dtype=np.uint8),
                       "i": np.array([0, 2, 2, 3]),
                       "f": np.array([0.5, 0.25, 0.5, 1.0], dtype=np.float32)})
    rel = _quiet(dpm.release, df, columns=["u", "i", "f"], epsilon=INF,
                 levels={"u": [255, 0, 1], "i": [0, 2.0, 3], "f": [1, 0.5, 0.25]})
    cells = rel.cells.sort_values(["u", "i"]).reset_index(drop=True)
    assert cells["u"].tolist() == [0, 1, 1, 255] and cells["u"].dtype == np.int64
    assert cells["i"].tolist() == [0.0, 2.0, 3.0, 2.0] and cells["i"].dtype == np.float64
    assert cells["f"].tolist() == [0.5, 0.25, 1.0, 0.5] and cells["count"].tolist() == [1] * 4


def _hand_built(levels, values):
    """count_cells (fast path) and the reference on a hand-built domain (no dtype check)."""
    dom = Domain((Axis("k", "discrete", levels=tuple(levels)),))
    out = []
    for count in (hist.count_cells, hist.count_cells_reference):
        try:
            c = count({"k": values}, dom)
            out.append((c.ids.tolist(), c.counts.tolist()))
        except dpm.UndeclaredLevelError as exc:
            out.append(str(exc))
    assert out[0] == out[1], out
    return out[0]


def test_counting_compares_levels_and_values_by_value():
    # a uint8 255 is not the level -1; an int64 0 is not the level 0.5
    assert "255" in _hand_built((-1, 0, 1), np.array([255, 0, 1], dtype=np.uint8))
    assert _hand_built((-1, 0, 1), np.array([0, 1, 1], dtype=np.uint8)) == ([1, 2], [1, 2])
    assert "0" in _hand_built((0.5, 1), np.array([0, 1], dtype=np.int64))
    # an int level beyond 2**53 on a float column is not rounded onto its neighbour
    big = float(2**53)
    assert str(2**53) in _hand_built((2**53 + 1, 1), np.array([big, 1.0]))
    assert _hand_built((2**53 + 1, 1), np.array([1.0, 1.0])) == ([1], [2])


def test_engines_refuse_levels_the_schema_cannot_hold():
    import duckdb
    import polars as pl

    pdf = pd.DataFrame({"k": np.array([0, 1, 2], dtype=np.uint8)})
    for data in (pl.from_pandas(pdf), duckdb.connect().from_df(pdf)):
        with pytest.raises(dpm.DomainError, match=r"'k'.*-1.*uint8"):
            dpm.release(data, columns=["k"], epsilon=1.0, levels={"k": [-1, 0, 1, 2]})
    strings = pl.DataFrame({"s": ["a", "b"]})
    with pytest.raises(dpm.DomainError, match=r"'s'.*1.*string"):
        dpm.release(strings, columns=["s"], epsilon=1.0, levels={"s": ["a", "b", 1]})


# ---------------------------------------------------------------------------
# 4. the response is coded in the declared order
# ---------------------------------------------------------------------------


def _bands(n=3_000, seed=5) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    x = rng.uniform(0, 10, n)
    eta = np.column_stack([np.zeros(n), -1 + 0.2 * x, 1 - 0.2 * x])
    p = np.exp(eta) / np.exp(eta).sum(1, keepdims=True)
    band = np.array(["low", "mid", "high"])[(rng.random(n)[:, None] > p.cumsum(1)).sum(1)]
    return pd.DataFrame({"band": band, "k": rng.integers(0, 3, n)})


def test_mnlogit_string_response_uses_the_declared_order_and_names():
    df = _bands()
    levels = {"band": ["low", "mid", "high"], "k": [0, 1, 2]}
    res = _quiet(dpm.dp_mnlogit, "band ~ k", df, epsilon=INF, levels=levels).fit(
        cov_type="naive")
    assert "base level 'low'" in res.response_coding
    assert list(res.params.columns) == list(res.bse.columns) == ["mid", "high"]
    assert list(res.pvalues.columns) == list(res.tvalues.columns) == ["mid", "high"]
    assert list(res.predict(df.iloc[:3]).columns) == ["low", "mid", "high"]
    assert "band=mid" in res.summary().as_text() and "band=low" not in res.summary().as_text()
    # the fit is statsmodels' on the codes of the declared order
    codes = df["band"].map({"low": 0, "mid": 1, "high": 2})
    ref = sm.MNLogit(codes, sm.add_constant(df[["k"]].astype(float))).fit(disp=0)
    np.testing.assert_allclose(np.asarray(res.params), np.asarray(ref.params), rtol=1e-8)
    np.testing.assert_allclose(np.asarray(res.predict(df.iloc[:5])),
                               np.asarray(ref.predict(sm.add_constant(
                                   df[["k"]].astype(float)).iloc[:5])), rtol=1e-8)
    # another declared order: another base
    other = _quiet(dpm.dp_mnlogit, "band ~ k", df, epsilon=INF,
                   levels={**levels, "band": ["high", "low", "mid"]}).fit(cov_type="naive")
    assert list(other.params.columns) == ["low", "mid"]
    assert "base level 'high'" in other.response_coding


def test_mnlogit_numeric_response_keeps_statsmodels_columns():
    df = _bands().assign(m=lambda d: d["band"].map({"low": 0, "mid": 1, "high": 2}))
    res = _quiet(dpm.dp_mnlogit, "m ~ k", df, epsilon=INF,
                 levels={"m": [2, 0, 1], "k": [0, 1, 2]}).fit(cov_type="naive")
    assert list(res.params.columns) == [0, 1]
    assert "base level '0'" in res.response_coding


def test_logit_codes_the_last_declared_level_one():
    rng = np.random.default_rng(6)
    n = 2_000
    k = rng.integers(0, 3, n)
    yes = rng.random(n) < 1 / (1 + np.exp(-(-0.5 + 0.6 * k)))
    df = pd.DataFrame({"ans": np.where(yes, "yes", "no"), "k": k})
    ref = sm.Logit(yes.astype(float), sm.add_constant(k.astype(float))).fit(disp=0)
    fits = {}
    for order in (["no", "yes"], ["yes", "no"]):
        res = _quiet(dpm.dp_logit, "ans ~ k", df, epsilon=INF,
                     levels={"ans": order, "k": [0, 1, 2]}).fit(cov_type="naive")
        assert res.response_coding == f"ans = 1 for {order[1]!r}, 0 for {order[0]!r}"
        fits[order[1]] = np.asarray(res.params)
    np.testing.assert_allclose(fits["yes"], ref.params, rtol=1e-8)
    np.testing.assert_allclose(fits["no"], -ref.params, rtol=1e-8)


@pytest.mark.parametrize("kind", ["object", "string", "mixed", "numbers-as-levels"])
def test_string_columns_are_matched_once_per_value_with_the_same_answer(kind):
    # Axis.codes matches a column of strings once per distinct value (pd.factorize,
    # issue 28's speed): the codes, missing and undeclared masks must equal the value-by-
    # value match on every kind of column, including ones the fast path must hand back
    from dpmodels.domain.axes import Axis, _match_levels

    rng = np.random.default_rng(3)
    pool = {"object": ["a", "b", "c", "zz", None, np.nan],
            "string": ["a", "b", "c", "zz", None],
            "mixed": ["a", "b", 1, True, 1.0, None, "c"],
            "numbers-as-levels": ["1", "2", "a", None]}[kind]
    values = [pool[i] for i in rng.integers(0, len(pool), 5000)]
    col = pd.Series(values, dtype="string" if kind == "string" else object)
    levels = (1, 2, "a") if kind == "numbers-as-levels" else ("c", "a", "b", 1)
    axis = Axis("g", "discrete", levels=levels)
    codes, missing, undeclared = axis.codes(col)
    arr = np.asarray(col, dtype=object)
    want_missing = np.asarray(pd.isna(arr), bool)
    want = _match_levels(levels, arr)
    np.testing.assert_array_equal(missing, want_missing)
    np.testing.assert_array_equal(codes, want)
    np.testing.assert_array_equal(undeclared, (want < 0) & ~want_missing)
