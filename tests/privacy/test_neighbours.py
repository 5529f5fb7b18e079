"""Property-based neighbour test of PRIVACY.md rule 5: everything published is
a function of the noisy release and the public inputs, metadata included.

A seeded generator makes small data sets (50-300 rows) with int, float,
bool, string and Categorical (declared with ``levels={"c": "dtype"}``)
columns, a formula for ``dp_ols``, ``dp_logit``, ``dp_mnlogit`` or
``dp_quantreg`` with ``C()`` terms, and a replace-one neighbour of each data
set (same n) of one of four kinds:

* ``missing``: one row's value of an int column becomes missing (pandas
  turns the column into float64: the dtype leak this test was written for);
* ``move``: one row moves to another declared level of a discrete variable;
* ``bound``: one row's continuous value moves to a bound, or far outside;
* ``empty``: one row moves into a cell that is otherwise empty.

Both data sets are released and fitted with the same ``random_state``, and
everything published is compared: parameter names (and outcome columns),
the cell frames' columns, dtypes (with categories and their order) and
index type, the privacy report except the fields computed from the noisy
counts, the summary and the report's text with every number masked, the
warnings' categories and masked messages, the response coding.  Values
computed from the noisy counts may differ.

Noise can make two neighbouring fits take different paths (a factor level
with no released cell makes one design singular); such a pair is compared
on its release only, and the generator keeps them rare (checked).  The same
pairs run through every engine (Polars, DuckDB, Dask, PySpark), fewer of
them.
"""

from __future__ import annotations

import re
import warnings

import pytest

from tests.support.neighbours import (
    KINDS,
    MODELS,
    _diff,
    _to_duckdb,
    _to_polars,
    compare,
    make_case,
    published,
)

#: Pandas pairs per kind (4 kinds: 240 pairs in all), the first few with the
#: default (bootstrap) fit, the others with cov_type="naive".
PAIRS_PER_KIND = 60
BOOTSTRAP_PAIRS_PER_KIND = 1
ENGINE_PAIRS = 5


# ---------------------------------------------------------------------------
# the tests
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("kind", KINDS)
def test_neighbours_publish_the_same_metadata_pandas(kind):
    compared = 0
    for seed in range(PAIRS_PER_KIND):
        case = make_case(seed, kind)
        fit_kw = {"random_state": 7} if seed < BOOTSTRAP_PAIRS_PER_KIND else None
        compared += compare(case, fit_kw=fit_kw)[0]
    # pairs whose fits took different paths (noise) are rare: the test compares fits
    assert compared >= 0.9 * PAIRS_PER_KIND, compared


def test_generator_covers_every_column_kind_and_model():
    seen_models, seen_dtypes, seen_terms = set(), set(), set()
    for kind in KINDS:
        for seed in range(PAIRS_PER_KIND):
            case = make_case(seed, kind)
            seen_models.add(case.model)
            seen_dtypes.update((v.family, v.dtype) for v in case.variables.values())
            seen_terms.update(re.findall(r"C\(\w\)", case.formula))
            seen_terms.update(re.findall(r"np\.log1p\(x\)", case.formula))
            if kind == "missing":
                changed = [c for c in case.base.columns
                           if case.base[c].dtype != case.neighbour[c].dtype]
                assert changed or "Int64" in {str(d) for d in case.base.dtypes}, case.label
    assert seen_models == set(MODELS)
    families = {f for f, _ in seen_dtypes}
    assert families == {"int", "float", "str", "bool", "cat"}
    assert {"int64", "int32", "int8", "uint8", "Int64"} <= {d for f, d in seen_dtypes if f == "int"}
    assert {"C(k)", "C(s)", "C(c)", "C(h)", "np.log1p(x)"} <= seen_terms


@pytest.mark.parametrize("engine", ["polars", "duckdb", "dask", "spark"])
def test_neighbours_publish_the_same_metadata_engines(engine, request):
    if engine == "dask":
        import dask.dataframe as dd

        request.getfixturevalue("dask_client")

        def convert(df):
            return dd.from_pandas(df, npartitions=2)
    elif engine == "spark":
        session = request.getfixturevalue("spark")

        def convert(df):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                return session.createDataFrame(df)
    else:
        convert = {"polars": _to_polars, "duckdb": _to_duckdb}[engine]
    compared = 0
    for seed in range(ENGINE_PAIRS):
        kind = KINDS[seed % len(KINDS)]
        case = make_case(seed, kind, engine)
        same, rel_e, fit_e = compare(case, convert)
        compared += same
        # and the engine publishes what pandas publishes (the same counts: the same fit)
        rel_p, fit_p = published(case, case.base, {"cov_type": "naive"})
        assert rel_e == rel_p, f"{case.label}: {engine} and pandas differ\n{_diff(rel_e, rel_p)}"
        assert fit_e == fit_p, f"{case.label}: {engine} and pandas differ\n{_diff(fit_e, fit_p)}"
    assert compared >= ENGINE_PAIRS - 1
