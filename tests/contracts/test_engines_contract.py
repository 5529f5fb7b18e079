"""The engine contract: every (mechanism, engine) pair runs
or refuses the data, and every pair that runs passes the neighbour property
test (PRIVACY.md rule 5) and the bad-input corpus (rule 10).

The table of pairs is generated from the registry, not listed here:
:data:`dpmodels.front.registry.MECHANISMS` (each mechanism's families, its
``method=`` or its route, and the engines it reads), over
:data:`dpmodels.front.registry.ENGINES`.  A new method of a family, or an engine
added to a release, is covered by these tests without a new test; a new
route or release function needs an invoker below
(``test_every_registered_release_is_reached`` says which).

1. ``test_engine_table``: where the registry says a release reads an engine,
   the pair releases, is charged its epsilon once and fits; elsewhere it is
   refused with a DPModelsError naming the data's type and saying to convert
   it (naming no method but the one asked for, or the histogram), with
   nothing charged.
2. ``test_neighbours_on_engines``: test_neighbours' generated replace-one
   pairs (``ENGINE_KINDS``: "missing" on every engine, every kind on Polars,
   one pair per release on Spark), and the first of them with x declared
   ``Unbounded``, through every pair
   that runs: everything published is identical between neighbours except
   the numbers computed from noisy outputs (test_neighbours' ``compare``
   rules), and identical to what the same pair publishes from a pandas
   frame of the same data and seed, numbers included (the histogram counts,
   the moments' integer statistics and the converted frames are the same on
   every engine, so the release is).
3. ``test_bad_inputs_on_engines``: a representative part of test_bad_inputs'
   corpus, an undeclared level in the data and an unknown option, on every
   pair that runs: the same error class and message as on pandas (which
   must refuse it, matching the corpus' pattern), the accountant untouched,
   no noise drawn, no row counted (except the undeclared level, found by
   counting), the caller's data unchanged.
4. ``test_an_injected_engine_leak_is_caught`` and
   ``test_an_engine_that_refuses_differently_is_caught``: the checks can fail.

A pair that crashes today is listed in ``KNOWN_BROKEN`` (a strict xfail of
the table: fixing it makes the table fail until the entry goes); the other
tests run it on Dask's threaded scheduler, so its property is still checked.
"""

from __future__ import annotations

import contextlib
import importlib
import inspect
import re
import warnings
from collections import Counter
from dataclasses import asdict, dataclass

import numpy as np
import pandas as pd
import pytest

import dpmodels as dpm
from dpmodels.data.engines.dask import DaskSource
from dpmodels.data.engines.lazy import NarwhalsSource
from dpmodels.core.errors import DPModelsError
from dpmodels.front.methods import (
    ENGINES,
    FAMILY_METHODS,
    OTHER_RELEASES,
    RELEASE_ENGINES,
    RELEASES,
    ROUTED_METHODS,
)
from dpmodels.front.registry import MECHANISMS as REGISTRY

from tests.support.bad_inputs import BOUNDS, CASES, FRAME, LEVELS, MODELS as ENTRY_MODELS, RESPONSE
from tests.support.bad_inputs import _c as corpus_case
from tests.support.neighbours import (
    FACTORIES,
    KINDS,
    MODELS,
    _diff,
    _frame_sig,
    _to_duckdb,
    _to_polars,
    fit_published,
    make_case,
    mask,
)
from tests.support.mechanism_publishers import (
    _check_pair,
    _error,
    _local_published,
    _projected_published,
    _Recorder,
    _selection_published,
    _synthetic_published,
    _unbounded,
)


# ---------------------------------------------------------------------------
# the table, from the registry
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Mechanism:
    """One release path: ``kind`` is "method" (a dp_* ``method=``), a route's
    name, or a release function's name (OTHER_RELEASES); ``release`` is its
    key in RELEASE_ENGINES."""

    name: str
    family: str | None
    kind: str
    how: str
    release: str

    @property
    def engines(self) -> tuple[str, ...]:
        return RELEASE_ENGINES[self.release]


def registry_mechanisms() -> list[Mechanism]:
    """Every release path the registry declares (dpmodels.front.registry.MECHANISMS):
    one per family a mechanism serves, named by its ``method=`` or, for a
    route without one, by the mechanism; one for a release function of its own."""
    out = []
    for m in REGISTRY:
        if not m.families:
            out.append(Mechanism(m.name, None, m.name, m.name, m.name))
        for family in m.families:
            if m.method:
                out.append(Mechanism(f"{family}/{m.method}", family, "method", m.method, m.name))
            else:
                out.append(Mechanism(f"{family}/{m.name}", family, m.name, m.name, m.name))
    return out


MECHANISMS = registry_mechanisms()
PAIRS = [(m, e) for m in MECHANISMS for e in ENGINES]
RUNNING = [(m, e) for m, e in PAIRS if e in m.engines]


#: Pairs that crash today, by (release, engine): none.  (Until issue 26's pickling
#: work, the moments, Newton and quantile-steps releases crashed on a dask.distributed
#: cluster: their row passes, shipped to the workers, held patsy's design, which patsy
#: refuses to pickle; DesignSpace now rebuilds it when unpickled.)  A pair added here
#: is a strict xfail: fixing it makes the table fail until the entry goes.
KNOWN_BROKEN: dict = {}


def _params(pairs, broken=False) -> list:
    """pytest params; with ``broken``, the KNOWN_BROKEN pairs are strict xfails."""
    return [pytest.param(m, e, id=f"{m.name}-{e}", marks=[pytest.mark.xfail(
        strict=True, raises=TypeError, reason=KNOWN_BROKEN[m.release, e])]
        if broken and (m.release, e) in KNOWN_BROKEN else []) for m, e in pairs]


# ---------------------------------------------------------------------------
# how each kind of mechanism is called
# ---------------------------------------------------------------------------

#: Arguments every release takes (the others are a dp_* call's options).
COMMON = ("epsilon", "bounds", "levels", "bins", "n", "random_state", "accountant", "missing")


def _variables(formula: str) -> list[str]:
    """The names a formula uses (response first), for the release functions
    that take columns instead of a formula."""
    names = re.findall(r"(?<![\w.'])([A-Za-z_]\w*)(?![\w(.])", formula)
    return list(dict.fromkeys(names))


def _by_method(mech: Mechanism, formula, data, kw: dict):
    kw = dict(kw)
    if mech.release != "histogram":
        kw.pop("bins", None)  # a histogram option: the other releases refuse it
    if mech.release == "sample-aggregate":
        kw.setdefault("param_bounds", (-30.0, 30.0))
    return FACTORIES[mech.family](formula, data, method=mech.how, **kw)


def _projected(mech: Mechanism, formula, data, kw: dict):
    return FACTORIES[mech.family](formula, data, select=1, gamma=0.5, **kw)


def _local(mech: Mechanism, formula, data, kw: dict):
    rows = {k: v for k, v in kw.items() if k in COMMON and k != "n"}
    options = {k: v for k, v in kw.items() if k not in COMMON}
    rel = dpm.local.randomize(data, formula=formula, **rows)
    return FACTORIES[mech.family](formula, rel, **options)


def _select_features(mech: Mechanism, formula, data, kw: dict):
    target, *candidates = _variables(formula)
    return dpm.select_features(data, target, candidates, k=1, **kw)


def _smoothed_sample(mech: Mechanism, formula, data, kw: dict):
    return dpm.smoothed_sample(data, columns=_variables(formula), size=12, **kw)


#: The invoker of each kind of mechanism.
INVOKERS = {"method": _by_method, "projected": _projected, "local": _local,
            "select_features": _select_features, "smoothed_sample": _smoothed_sample}
#: The function whose signature says which arguments a kind takes (the kinds not listed
#: are dp_* calls, which take any option and name the unknown ones).
SIGNATURES = {"select_features": dpm.select_features, "smoothed_sample": dpm.smoothed_sample,
              "local": dpm.local.randomize}


def invoke(mech: Mechanism, formula, data, kw: dict):
    return INVOKERS[mech.kind](mech, formula, data, kw)


def _fit(obj):
    """A fit of what a mechanism made (a release function's result as is)."""
    if not hasattr(obj, "fit"):
        return obj
    q = {"q": 0.5} if "QuantReg" in type(obj).__name__ else {}
    return obj.fit(cov_type="naive", **q)


# ---------------------------------------------------------------------------
# the engines
# ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def spark(spark_session):
    """The run's Spark session (tests/conftest.py)."""
    return spark_session


def _to_dict(df: pd.DataFrame) -> dict:
    """A mapping of arrays: numpy arrays, extension arrays (a Categorical, a
    nullable Int64, a string array) as pandas holds them."""
    return {c: (df[c].array if isinstance(df[c].dtype, pd.api.extensions.ExtensionDtype)
                else df[c].to_numpy()) for c in df.columns}


@pytest.fixture
def convert(request):
    """engine, pandas frame -> that engine's frame of the same rows."""

    def to(engine: str, df: pd.DataFrame):
        if engine == "pandas":
            return df.copy()
        if engine == "dict":
            return _to_dict(df.copy())
        if engine == "polars":
            return _to_polars(df)
        if engine == "polars-lazy":
            return _to_polars(df).lazy()
        if engine == "duckdb":
            return _to_duckdb(df)
        if engine == "dask":
            import dask.dataframe as dd

            request.getfixturevalue("dask_client")
            return dd.from_pandas(df, npartitions=2)
        if engine == "spark":
            session = request.getfixturevalue("spark")
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                return session.createDataFrame(df)
        raise AssertionError(f"no converter for engine {engine!r}: add one")

    return to


def test_every_registered_release_is_reached():
    """Each release of the registry is reached by a mechanism with an invoker,
    and each declares its engines (a subset of ENGINES, pandas always)."""
    reached = {m.release for m in MECHANISMS}
    assert set(RELEASES) <= reached, set(RELEASES) - reached
    assert set(OTHER_RELEASES) <= reached
    assert reached == set(RELEASE_ENGINES), reached ^ set(RELEASE_ENGINES)
    for m in MECHANISMS:
        assert m.kind in INVOKERS, f"{m.name}: no invoker for {m.kind!r}: add one here"
        assert "pandas" in m.engines and set(m.engines) <= set(ENGINES), m
    assert {m.family for m in MECHANISMS if m.family} == set(MODELS)


@pytest.mark.parametrize("family", sorted(FAMILY_METHODS))
def test_family_methods_are_what_the_functions_take(family):
    """FAMILY_METHODS is what each dp_* function takes: a misspelt method is
    refused naming exactly those and the routed ones."""
    with pytest.raises(DPModelsError) as info:
        FACTORIES[family](f"{RESPONSE[family]} ~ x", FRAME, epsilon=1.0, method="nope",
                          bounds=BOUNDS, levels=LEVELS)
    named = set(re.findall(r"'([\w-]+)'", str(info.value))) - {"nope"}
    assert named == set(FAMILY_METHODS[family] + ROUTED_METHODS), str(info.value)


# ---------------------------------------------------------------------------
# 1. the table: runs, or refuses the data saying to convert it
# ---------------------------------------------------------------------------

TABLE_KW = dict(epsilon=2.0, bounds=BOUNDS, levels=LEVELS, bins=4)
CONVERT_HINT = re.compile(r"to_pandas|toPandas|convert|compute|\.collect\(\)|\.df\(\)")


def _table_formula(mech: Mechanism) -> str:
    return f"{RESPONSE[mech.family or 'logit']} ~ x + C(g)"


@pytest.mark.parametrize("mech, engine", _params(PAIRS, broken=True))
def test_engine_table(mech, engine, convert):
    data = convert(engine, FRAME)
    acct = dpm.Accountant(10.0)
    kw = dict(TABLE_KW, random_state=0, accountant=acct)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if engine in mech.engines:
            made = invoke(mech, _table_formula(mech), data, kw)
            _fit(made)
            # charged its epsilon: in one entry, or in its parts (a selection, a histogram)
            assert acct.spent == pytest.approx(TABLE_KW["epsilon"]) and acct.ledger, acct.ledger
            return
        with pytest.raises(DPModelsError) as info:
            invoke(mech, _table_formula(mech), data, kw)
    msg = str(info.value)
    assert acct.spent == 0 and acct.ledger == (), f"{mech.name} on {engine}: charged, then {msg}"
    named = type(data).__name__ in msg or engine.split("-")[0] in msg.lower()
    assert named, f"{mech.name} on {engine}: the data's type is not named: {msg}"
    assert CONVERT_HINT.search(msg), f"{mech.name} on {engine}: no conversion advice: {msg}"
    asked = {mech.how, "histogram"}
    other = set(re.findall(r"method='([\w-]+)'", msg)) - asked
    assert not other, f"{mech.name} on {engine}: the refusal names method {other}: {msg}"


# ---------------------------------------------------------------------------
# 2. neighbours, on every pair that runs
# ---------------------------------------------------------------------------

#: The kinds of pairs per engine: "missing" (the dtype leak) everywhere, every kind on
#: Polars, the others spread over the engines (pandas is covered by tests/test_neighbours*.py,
#: the dict takes pandas' in-memory path); Spark is slow: one pair per release.
ENGINE_KINDS = {"pandas": ("missing", "empty"), "dict": ("missing",), "polars": KINDS,
                "polars-lazy": ("missing", "empty"), "duckdb": ("missing", "bound"),
                "dask": ("missing", "move"), "spark": ("missing",)}
#: Spark is slow: the Unbounded pair and the bad inputs found by counting for this family
#: only (the counting query is the same for every family).
SPARK_FAMILY = "ols"
def _cases(mech: Mechanism, engine: str, kinds=None):
    """Generated pairs of the mechanism's family, one per kind (ENGINE_KINDS),
    then the next seeds of each kind."""
    out, seen = [], Counter()
    for kind in ENGINE_KINDS[engine] if kinds is None else kinds:
        seed = seen[kind] * len(MODELS)
        seen[kind] += 1
        if mech.family is not None:  # make_case's model is MODELS[(seed + kind) % 4]
            seed += (MODELS.index(mech.family) - KINDS.index(kind)) % len(MODELS)
        case = make_case(seed, kind, engine)  # (on Spark: no categorical, int64/32)
        assert mech.family in (None, case.model)
        out.append(case)
    return out


def _public_report(report) -> dict:
    """The report with the fields its class declares noisy (``NOISY_FIELDS``) left
    out and the "split" labels masked (they carry noisy-derived numbers); a report
    that declares none has every number masked."""
    fields = asdict(report)
    noisy = type(report).NOISY_FIELDS
    if noisy is None:
        return {"masked": mask(repr(fields))}
    out = {k: v for k, v in fields.items() if k not in noisy}
    if out.get("outside_bounds"):  # the noisy counts outside the bounds (issue 43)
        out["outside_bounds"] = {k: v for k, v in out["outside_bounds"].items()
                                 if k != "counts"}
    if "split" in out:
        out["split"] = tuple((mask(label), e) for label, e in out["split"])
    return out


_WRAP = re.compile(r"</td>\s*</tr>\s*<tr>\s*<th>\s*</th>\s*<td>")


def _model_published(mech: Mechanism, case, data) -> tuple[dict, dict, dict]:
    """(release, fit, exact numbers) of a dp_* method on ``data``, masked as
    test_neighbours' ``published`` does; any release's report."""
    with _Recorder() as rec:
        warnings.filterwarnings("ignore", category=FutureWarning)
        try:
            model = invoke(mech, case.formula, data, dict(case.kw, random_state=7))
        except DPModelsError as exc:
            return _error(exc), {"warnings": rec.sig()}, _error(exc)
        rel = model.release
        release = {"model": type(model).__name__, "release": type(rel).__name__,
                   "report": _public_report(rel.report), "report text": mask(str(rel.report)),
                   "release repr": mask(repr(rel)), "model repr": mask(repr(model)),
                   "release warnings": rec.sig()}
        for owner, name in ((rel, "release.cells"), (model, "model.cells")):
            cells = getattr(owner, "cells", None)
            if isinstance(cells, pd.DataFrame):
                release[name] = _frame_sig(cells)
        rest = fit_published(model, {"cov_type": "naive", **case.fit_kw})
        exact = {"report": repr(asdict(rel.report))}
        if "error" not in rest:
            res = model.fit(cov_type="naive", **case.fit_kw)
            exact.update(params=repr(res.params.to_numpy().tolist()),
                         bse=repr(res.bse.to_numpy().tolist()))
            # a long table label wraps into a second row where the numbers' widths say: the
            # wrap is layout (as the text's alignment, which mask removes), not content
            rest["summary html"] = mask(_WRAP.sub(" ", res.summary().as_html()))
        rest["warnings"] = rec.sig()
    return release, rest, exact


def _exact(mech: Mechanism, case, data) -> dict:
    """The numbers a route or release function publishes (for the engine =
    pandas check of the mechanisms whose publisher is test_neighbours_mechanisms')."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            made = invoke(mech, case.formula, data, dict(case.kw, random_state=7))
        except DPModelsError as exc:
            return _error(exc)
        out = {"report": repr(asdict(made.privacy))}
        if hasattr(made, "fit"):
            try:
                out["params"] = repr(_fit(made).params.to_numpy().tolist())
            except DPModelsError as exc:
                out["fit"] = _error(exc)
        if isinstance(getattr(made, "frame", None), pd.DataFrame):
            out["frame"] = made.frame.to_json()
    return out


#: The publishers of test_neighbours_mechanisms, by kind: (release, rest).
PUBLISHERS = {
    "projected": lambda case, data: _projected_published(case, data, 1),
    "local": lambda case, data: _in_memory_only(_local_published(case, data,
                                                                 {"cov_type": "naive"})),
    "select_features": lambda case, data: _selection_published(case, data, 1),
    "smoothed_sample": lambda case, data: _synthetic_published(case, data, "uniform"),
}


def _in_memory_only(pair: tuple[dict, dict]) -> tuple[dict, dict]:
    """A local release without its per-row reports: a release keeps them for
    in-memory rows only (an engine's batches send back their k report counts,
    which are compared, bit for bit, with the rest)."""
    release, rest = pair
    return {k: v for k, v in release.items() if k != "reports"}, rest


def published(mech: Mechanism, case, data) -> tuple[dict, dict, dict | None]:
    if mech.kind in PUBLISHERS:
        return (*PUBLISHERS[mech.kind](case, data), None)
    return _model_published(mech, case, data)


def _differs(mech: Mechanism):
    """The part of a pair's rest that the noise may change (a private selection)."""
    if mech.kind in ("projected", "select_features"):
        return lambda a, b: a.get("selected") != b.get("selected")
    return None


def _check_neighbours(mech: Mechanism, engine: str, case, to) -> bool:
    """The case's two data sets on ``engine`` publish the same; the base
    publishes on ``engine`` what it publishes from pandas, numbers included.
    Returns whether the fits were compared (not taken apart by the noise)."""
    label = f"{mech.name} on {engine}: {case.label}"
    rel_a, rest_a, exact_a = published(mech, case, to(engine, case.base))
    rel_b, rest_b, _ = published(mech, case, to(engine, case.neighbour))
    same = _check_pair(label, (rel_a, rest_a), (rel_b, rest_b), _differs(mech))
    if engine != "pandas":
        rel_p, rest_p, exact_p = published(mech, case, case.base)
        assert rel_a == rel_p, f"{label}: {engine} and pandas differ\n{_diff(rel_a, rel_p)}"
        assert rest_a == rest_p, f"{label}: {engine} and pandas differ\n{_diff(rest_a, rest_p)}"
        if exact_a is None:
            exact_a, exact_p = _exact(mech, case, to(engine, case.base)), _exact(mech, case,
                                                                               case.base)
        assert exact_a == exact_p, f"{label}: {engine} and pandas numbers differ\n" \
                                   f"{_diff(exact_a, exact_p)}"
    return same


@pytest.mark.parametrize("mech, engine", _params(RUNNING))
def test_neighbours_on_engines(mech, engine, convert):
    cases = _cases(mech, engine)
    with _threads_if_broken(mech, engine):
        compared = sum(_check_neighbours(mech, engine, case, convert) for case in cases)
        assert compared >= (len(cases) + 1) // 2, f"{mech.name} on {engine}: {compared} compared"
        # x declared Unbounded: the pair runs alike, or is refused alike (and as on pandas)
        if engine != "spark" or mech.family == SPARK_FAMILY:
            _check_neighbours(mech, engine, _unbounded(cases[0]), convert)


def _threads_if_broken(mech: Mechanism, engine: str):
    """Dask's threaded scheduler for the pairs the cluster cannot run (KNOWN_BROKEN)."""
    if (mech.release, engine) not in KNOWN_BROKEN:
        return contextlib.nullcontext()
    import dask

    return dask.config.set(scheduler="threads")


# ---------------------------------------------------------------------------
# 3. the bad-input corpus, on every pair that runs
# ---------------------------------------------------------------------------

#: test_bad_inputs' cases run on every engine (the rest are about argument
#: types and values that no engine reads differently).
CORPUS_IDS = ("epsilon-0", "epsilon-str", "epsilon-None", "epsilon-below-exact-limit",
              "bounds-missing", "bounds-reversed", "bounds-typo-key", "bounds-and-levels",
              "levels-missing-for-C", "levels-duplicates", "levels-nan", "levels-typo-key",
              "formula-unknown-name", "formula-syntax", "formula-empty", "formula-bs",
              "n-0", "missing-ignore", "random_state--1")


def _undeclared(df: pd.DataFrame) -> pd.DataFrame:
    out = df.copy()
    out.loc[len(out) - 3, "g"] = "zz"  # late in the data: a partition's, a query's work
    return out


#: Bad inputs found only by reading the rows (no count guard for them).
READS_ROWS = ("undeclared-level",)
CORPUS = [{c.id: c for c in CASES}[i] for i in CORPUS_IDS] + [
    corpus_case("undeclared-level", r"'g'.*'zz'", data=_undeclared),
    corpus_case("option-unknown", r"treshold_A", entries=ENTRY_MODELS, treshold_A=0.5),
]


def _applies(case, mech: Mechanism) -> bool:
    """The case applies where its entry point is (a dp_* family, or "release"
    for a release function) and the mechanism takes its arguments."""
    if mech.kind in SIGNATURES:  # a release function (randomize, for the local route)
        params = inspect.signature(SIGNATURES[mech.kind]).parameters
        if "release" not in case.entries or not all(k in params for k in case.kw):
            return False  # (the local route's model is fitted after the release)
    if mech.family is not None:
        return mech.family in case.entries
    if not isinstance(case.formula, str):
        return False
    return not _formula_syntax(case.formula)  # a release function takes the formula's names


def _formula_syntax(formula: str) -> bool:
    """A formula case that is about its syntax or terms, not the names it uses."""
    return bool(re.search(r"[(~+]\s*$|~.*~|^\s*$", formula) or "(x" in formula.replace(
        "C(", "").replace("Q(", "") or re.search(r"\b(bs|cr|cc|te|center)\(", formula))


class Guard:
    """Counting a row or drawing noise fails the call while ``active`` (as
    test_bad_inputs' guard, plus the engines' counts and the moments' reading
    of rows); ``calls`` records the attempts."""

    def __init__(self):
        self.active, self.calls = True, []

    def wrap(self, name, real):
        def fn(*args, **kwargs):
            if not self.active:
                return real(*args, **kwargs)
            self.calls.append(name)
            raise AssertionError(f"{name} was called before the bad input was refused")
        return fn


#: The functions that count rows, draw the histogram's noise, or read the values of
#: rows for the moments-type releases: (module, name).
GUARDED = (("dpmodels.data.counting", "count_cells"), ("dpmodels.mechanisms.histogram", "noisy_threshold_sparse"),
           ("dpmodels.mechanisms.histogram", "noisy_signed_dense"), ("dpmodels.mechanisms.moments", "published_frame"))


@pytest.fixture
def guard(monkeypatch):
    """A Guard on GUARDED, wherever a dpmodels module has bound them (every
    release module imported first, so that none binds a guard of an earlier
    test), and on the engines' counts."""
    import sys

    for module, _, _ in RELEASES.values():
        importlib.import_module(module)
    for module, _ in OTHER_RELEASES.values():
        importlib.import_module(module)
    importlib.import_module("dpmodels.models.projected")
    g = Guard()
    for module, name in GUARDED:
        real = getattr(importlib.import_module(module), name)
        fake = g.wrap(f"{module}.{name}", real)
        for mod in [m for k, m in sys.modules.items() if k.startswith("dpmodels")]:
            if getattr(mod, name, None) is real:
                monkeypatch.setattr(mod, name, fake)
    monkeypatch.setattr(NarwhalsSource, "count", g.wrap("an engine's count", NarwhalsSource.count))
    monkeypatch.setattr(DaskSource, "count", g.wrap("Dask's count", DaskSource.count))
    return g


def _snapshot(engine: str, data):
    """What must not change in the caller's data."""
    if engine == "pandas":
        return data.copy(deep=True)
    if engine == "dict":
        return {k: (type(v), np.asarray(v, dtype=object).copy()) for k, v in data.items()}
    if engine == "polars":
        return data.clone()
    if engine == "polars-lazy":
        return data.collect()
    if engine == "dask":
        from dask.base import tokenize

        return tokenize(data), list(data.columns), list(map(str, data.dtypes))
    if engine == "duckdb":
        return data.columns, [str(t) for t in data.types], data.sql_query()
    return data.schema, data.semanticHash()  # spark


def _unchanged(engine: str, before, data) -> bool:
    after = _snapshot(engine, data)
    if engine == "pandas":
        return before.equals(after) and list(before.dtypes) == list(after.dtypes)
    if engine == "dict":
        return before.keys() == after.keys() and all(
            before[k][0] is after[k][0] and pd.Series(before[k][1]).equals(pd.Series(after[k][1]))
            for k in before)
    if engine in ("polars", "polars-lazy"):
        return before.equals(after) and before.schema == after.schema
    return before == after


def _call(mech: Mechanism, case, data, guard: Guard) -> tuple[str, str, dict]:
    """Run one bad input; (error class, message, what was touched)."""
    acct = dpm.Accountant(10.0)
    rng = np.random.default_rng(3)
    state = rng.bit_generator.state
    kw = dict(epsilon=1.0, bounds=BOUNDS, levels=LEVELS, bins=4, random_state=rng,
              accountant=acct)
    kw.update(case.kw)
    formula = case.formula.format(resp=RESPONSE[mech.family or "logit"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            invoke(mech, formula, data, kw)
        except DPModelsError as exc:
            err = (type(exc).__name__, str(exc))
        except AssertionError as exc:  # the guard's: reported below, with the case
            err = ("guard", str(exc))
        else:
            err = ("no error", "")
    touched = {"charged": (acct.spent, acct.ledger) != (0, ()),
               "noise drawn": rng.bit_generator.state != state,
               "rows read": list(guard.calls)}
    guard.calls.clear()
    return err[0], err[1], touched


@pytest.mark.parametrize("mech, engine", _params(RUNNING))
def test_bad_inputs_on_engines(mech, engine, convert, guard):
    cases = [c for c in CORPUS if _applies(c, mech) and not (
        engine == "spark" and mech.family != SPARK_FAMILY and c.id in READS_ROWS)]
    assert len(cases) >= 8, [c.id for c in cases]
    frames = {}
    with _threads_if_broken(mech, engine):
        for case in cases:
            _check_bad_input(mech, engine, case, guard, frames, convert)


def _check_bad_input(mech: Mechanism, engine: str, case, guard: Guard, frames: dict, convert):
    """The case is refused on pandas as the corpus says, and on ``engine`` alike."""
    guard.active = case.id not in READS_ROWS  # (an undeclared value is found by counting)
    source = case.data(FRAME.copy()) if case.data is not None else FRAME
    ref = _call(mech, case, source.copy(), guard)
    label = f"{case.id} through {mech.name}"
    # (a release function takes columns: it names the variable, not the formula's term)
    match = case.match if mech.family else re.sub(r"C\\\((\w+)\\\)", r"'\1'", case.match)
    assert ref[0] != "no error" and re.search(match, ref[1]), (
        f"{label} on pandas: {ref[:2]} does not match {match!r}")
    assert not any(ref[2].values()), f"{label} on pandas: {ref[2]}"
    if engine != "pandas":
        key = case.data is not None and case.id
        data = frames.get(key)
        if data is None:
            data = frames[key] = convert(engine, source)
        before = _snapshot(engine, data)
        got = _call(mech, case, data, guard)
        assert got[:2] == ref[:2], f"{label} on {engine}: {got[:2]}\n  pandas: {ref[:2]}"
        assert not any(got[2].values()), f"{label} on {engine}: {got[2]}"
        assert _unchanged(engine, before, data), f"{label} on {engine}: the data changed"


# ---------------------------------------------------------------------------
# 4. the checks can fail
# ---------------------------------------------------------------------------


def test_an_injected_engine_leak_is_caught(monkeypatch, convert):
    """A count in the narwhals engines (Polars, DuckDB, Spark) that retypes
    the declared int levels of a column the engine holds as floats (the
    column a missing value made float64 in pandas) puts the data's dtype in
    the published names on Polars only: the neighbour check flags it."""
    from dpmodels.data.engines import lazy

    real = NarwhalsSource.count

    def leaky(self, domain, *, missing):
        counts = real(self, domain, missing=missing)
        for axis in domain.axes:
            floats = lazy._family(self.schema[axis.name]) == "float"
            if axis.kind == "discrete" and floats and all(isinstance(v, int)
                                                          for v in axis.levels):
                object.__setattr__(axis, "levels", tuple(float(v) for v in axis.levels))
        return counts

    mech = next(m for m in MECHANISMS if m.name == "ols/histogram")
    case = next(c for c in _cases(mech, "polars", ("missing",) * 16) if "C(k)" in c.formula)
    assert _check_neighbours(mech, "polars", case, convert) is not None  # clean: passes
    monkeypatch.setattr(NarwhalsSource, "count", leaky)
    with pytest.raises(AssertionError, match="differ"):
        _check_neighbours(mech, "polars", case, convert)


def test_an_engine_that_refuses_differently_is_caught(monkeypatch, convert, guard):
    """The corpus check can fail: a Polars schema that reports the string
    column g as bool (a dtype that declares its levels) lets the "no levels
    for C(g)" case through to the count on Polars, where pandas refuses it."""
    real = NarwhalsSource.dtypes

    def wrong(self, names):
        return {k: (np.dtype(bool) if k == "g" else v) for k, v in real(self, names).items()}

    mech = next(m for m in MECHANISMS if m.name == "ols/histogram")
    case = next(c for c in CORPUS if c.id == "levels-missing-for-C")
    _check_bad_input(mech, "polars", case, guard, {}, convert)  # clean: passes
    monkeypatch.setattr(NarwhalsSource, "dtypes", wrong)
    with pytest.raises(AssertionError, match="on polars"):
        _check_bad_input(mech, "polars", case, guard, {}, convert)
