"""The neighbour generator and comparison of PRIVACY.md rule 5's property test
(tests/privacy/test_neighbours.py), shared by the suites that run the same pairs
through every mechanism and engine (tests/privacy/test_neighbours_mechanisms.py,
tests/contracts/): small seeded data sets with int, float, bool, string and
Categorical columns, a formula for one of the four families, a replace-one
neighbour of one of four kinds, and what a fit publishes with the numbers that
come from the noise masked."""

from __future__ import annotations

import math
import re
import warnings
from collections import Counter
from dataclasses import asdict, dataclass, field

import numpy as np
import pandas as pd

import dpmodels as dpm

MODELS = ("ols", "logit", "mnlogit", "quantreg")
FACTORIES = {"ols": dpm.dp_ols, "logit": dpm.dp_logit, "mnlogit": dpm.dp_mnlogit,
             "quantreg": dpm.dp_quantreg}
KINDS = ("missing", "move", "bound", "empty")
LO, HI = 0.0, 10.0


# ---------------------------------------------------------------------------
# the generator
# ---------------------------------------------------------------------------


@dataclass
class Var:
    """A discrete variable: its declared levels (declared order), its
    declaration, the pandas dtype of its column, and the codes of the rows."""

    name: str
    family: str  # "int", "float", "str", "bool", "cat"
    levels: tuple
    declaration: object  # a list, "dtype", or None (declared by the dtype: bool)
    dtype: str
    codes: np.ndarray = field(default=None, repr=False)


@dataclass
class Case:
    label: str
    model: str
    formula: str
    base: pd.DataFrame
    neighbour: pd.DataFrame
    kw: dict
    fit_kw: dict
    variables: dict = field(repr=False, default_factory=dict)


def _shuffled(rng, values) -> list:
    values = list(values)
    return [values[i] for i in rng.permutation(len(values))]


def _int_var(rng, name, n_levels, engine, response=False) -> Var:
    start = int(rng.choice([0, 1, 2, -1])) if not response else 0
    levels = _shuffled(rng, range(start, start + n_levels))
    dtypes = ["int64", "int32", "int8", "Int64"] + (["uint8"] if start >= 0 else [])
    if engine == "spark":
        dtypes = ["int64", "int32"]
    return Var(name, "int", tuple(levels), levels, str(rng.choice(dtypes)))


def _str_var(rng, name, n_levels, engine) -> Var:
    pool = [["lo", "mid", "hi"], ["u", "v", "w"], ["b", "a", "c"], ["no", "yes", "maybe"]]
    levels = _shuffled(rng, pool[rng.integers(len(pool))][:n_levels])
    return Var(name, "str", tuple(levels), levels, str(rng.choice(["str", "object"])))


def _cat_var(rng, name, n_levels, engine) -> Var:
    if engine == "spark":  # Spark has no categorical type: a string column
        return _str_var(rng, name, n_levels, engine)
    levels = _shuffled(rng, ["q", "p", "r"][:n_levels])
    return Var(name, "cat", tuple(levels), "dtype", "category")


def _bool_var(rng, name, engine) -> Var:
    declared = bool(rng.random() < 0.5)
    return Var(name, "bool", (False, True), [False, True] if declared else None, "bool")


def _float_var(rng, name, n_levels, engine) -> Var:
    levels = _shuffled(rng, [0.5, 1.5, 2.5][:n_levels])
    return Var(name, "float", tuple(levels), levels, "float64")


def _column(var: Var, codes: np.ndarray):
    if var.family == "cat":
        return pd.Categorical.from_codes(codes, categories=list(var.levels))
    if var.family == "bool":
        return np.asarray(var.levels, dtype=bool)[codes]
    if var.family == "str":
        values = np.asarray(var.levels, dtype=object)[codes]
        return pd.Series(values, dtype=var.dtype)
    if var.family == "float":
        return np.asarray(var.levels, dtype=np.float64)[codes]
    values = np.asarray(var.levels, dtype=np.int64)[codes]
    return pd.array(values, dtype="Int64") if var.dtype == "Int64" else values.astype(var.dtype)


def _term(rng, var: Var) -> str:
    if var.family in ("str", "cat"):
        return f"C({var.name})" if rng.random() < 0.7 else var.name
    return f"C({var.name})" if rng.random() < 0.6 else var.name


def make_case(seed: int, kind: str, engine: str = "pandas") -> Case:
    """One data set and its neighbour of the given kind (deterministic in seed)."""
    rng = np.random.default_rng([seed, KINDS.index(kind), sum(engine.encode())])
    model = str(MODELS[(seed + KINDS.index(kind)) % len(MODELS)])  # each kind: every model
    bins = int(rng.integers(2, 4))
    epsilon = float(rng.choice([4.0, 8.0]))

    # discrete predictors: one or two, at most 6 level combinations
    makers = [lambda m: _int_var(rng, "k", m, engine), lambda m: _str_var(rng, "s", m, engine),
              lambda m: _cat_var(rng, "c", m, engine), lambda m: _bool_var(rng, "b", engine),
              lambda m: _float_var(rng, "h", m, engine)]
    order = rng.permutation(len(makers))
    if kind == "missing":  # an int predictor is the one that gets a missing value
        order = [0] + [i for i in order if i != 0]
    n_disc = int(rng.integers(1, 3))
    sizes = [3, 2] if n_disc == 2 and rng.random() < 0.5 else [2, 3] if n_disc == 2 else [
        int(rng.integers(2, 4))]
    predictors = [makers[i](m) for i, m in zip(order[:n_disc], sizes)]

    # the response
    if model in ("ols", "quantreg"):
        response, r_cells = None, bins
    elif model == "logit":
        pick = rng.choice(["int", "bool", "str", "cat"] if engine != "spark" else
                          ["int", "bool", "str"])
        response = {"int": lambda: _int_var(rng, "r", 2, engine, response=True),
                    "bool": lambda: _bool_var(rng, "r", engine),
                    "str": lambda: _str_var(rng, "r", 2, engine),
                    "cat": lambda: _cat_var(rng, "r", 2, engine)}[str(pick)]()
        if response.family == "int":
            response.levels, response.declaration = (0, 1), [0, 1]
        r_cells = 2
    else:
        pick = rng.choice(["int", "str", "cat"] if engine != "spark" else ["int", "str"])
        response = {"int": lambda: _int_var(rng, "r", 3, engine, response=True),
                    "str": lambda: _str_var(rng, "r", 3, engine),
                    "cat": lambda: _cat_var(rng, "r", 3, engine)}[str(pick)]()
        r_cells = 3
    cells = r_cells * bins * math.prod(len(v.levels) for v in predictors)
    n = int(min(300, max(rng.integers(50, 301), 6 * cells)))

    # rows
    x = rng.uniform(LO, HI, n)
    for v in predictors:
        v.codes = rng.integers(0, len(v.levels), n)
        v.codes[: len(v.levels)] = np.arange(len(v.levels))  # every level occurs
    empty = None
    if kind == "empty":  # the top x bin holds no row with the first predictor's level 0
        v = predictors[0]
        top = HI - (HI - LO) / bins
        low = v.codes == 0
        x[low] = rng.uniform(LO, top - 1e-6, low.sum())
        empty = (v, top)
    eta = 0.15 * (x - 5) + sum(0.3 * (v.codes - 1) for v in predictors)
    if response is None:
        y = 5 + eta + rng.normal(0, 1.5, n)
    elif r_cells == 2:
        response.codes = (rng.random(n) < 1 / (1 + np.exp(-0.5 * eta))).astype(np.int64)
    else:
        u = rng.random(n)
        p0 = 1 / (1 + np.exp(-0.4 * eta))
        response.codes = np.where(u < 0.34 * p0, 0, np.where(u < 0.67, 1, 2)).astype(np.int64)
    if response is not None:
        response.codes[:r_cells] = np.arange(r_cells)  # every response level occurs

    discrete = predictors + ([response] if response is not None else [])
    frame = {"y": y} if response is None else {}
    frame["x"] = x
    for v in discrete:
        frame[v.name] = _column(v, v.codes)
    base = pd.DataFrame(frame)

    # the formula: the response, x (always in the kinds that need it) and the predictors
    terms = [_term(rng, v) for v in predictors]
    if kind in ("bound", "empty") or rng.random() < 0.85:
        # x binned on the log1p scale when the formula uses np.log1p(x) (not for "empty",
        # whose construction assumes the linear top bin)
        x_term = "np.log1p(x)" if kind != "empty" and rng.random() < 0.3 else "x"
        terms.insert(int(rng.integers(0, len(terms) + 1)), x_term)
    lhs = "y" if response is None else "r"
    formula = f"{lhs} ~ " + " + ".join(terms)

    # the neighbour: one row replaced
    nb = base.copy()
    i = int(rng.integers(len(discrete) + 3, n))  # not one of the rows that fix every level
    if kind == "missing":
        ints = [v for v in discrete if v.family == "int"]
        v = ints[int(rng.integers(len(ints)))]
        if v.dtype == "Int64":
            nb[v.name] = nb[v.name].astype("Int64")
            nb.loc[i, v.name] = pd.NA
        else:
            col = nb[v.name].astype("float64")  # what pandas does to an int column with a NaN
            col.iloc[i] = np.nan
            nb[v.name] = col
    elif kind == "move":
        v = discrete[int(rng.integers(len(discrete)))]
        codes = v.codes.copy()
        codes[i] = (codes[i] + 1 + int(rng.integers(len(v.levels) - 1))) % len(v.levels)
        nb[v.name] = _column(v, codes)
    elif kind == "bound":
        name = "x" if response is not None or rng.random() < 0.5 else "y"
        nb.loc[i, name] = float(rng.choice([LO, HI, LO - 7.5, HI + 1e6]))
    else:
        v, top = empty
        i = int(np.flatnonzero(v.codes == 0)[-1])
        nb.loc[i, "x"] = HI - 1e-3  # into the top bin: a cell no other row is in
    assert len(nb) == len(base) and not nb.equals(base)

    levels = {v.name: v.declaration for v in discrete if v.declaration is not None}
    bounds = {"x": (LO, HI)}
    if response is None:
        bounds["y"] = (LO, HI)
    kw = dict(epsilon=epsilon, bounds=bounds, levels=levels, bins=bins)
    fit_kw = {"q": 0.5} if model == "quantreg" else {}
    label = f"{engine}-{kind}-{seed}-{model}: {formula} (n={n}, " + ", ".join(
        f"{v.name}:{v.dtype}" for v in discrete) + ")"
    return Case(label, model, formula, base, nb, kw, fit_kw, {v.name: v for v in discrete})


# ---------------------------------------------------------------------------
# what is published, with the numbers masked
# ---------------------------------------------------------------------------

_NUMBER = re.compile(r"[-+]?(?:\d[\d,]*(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?")


#: What a fit publishes (left out of a comparison where either neighbour's release
#: is degenerate: whether the noisy row count is above the parameter count is a
#: function of the noise, like a noise-driven warning).
FIT_KEYS = ("params.index", "summary", "warnings")


def formula_release_metadata(build) -> dict:
    """Everything a one-formula release (Newton steps, quantile steps) and its
    fit publish, numbers masked: ``build()`` returns ``(model, fit)``, ``fit()``
    the results (a degenerate release's refusal is recorded as such)."""
    from dpmodels.core.errors import DPModelsError

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model, fit = build()
        try:
            res = fit()
            text, names = res.summary().as_text(), list(res.params.index)
        except DPModelsError as exc:
            if "degenerate" not in str(exc):
                raise
            text, names = "degenerate", None
        if any("noise swamped" in str(w.message) for w in caught):
            text, names = "degenerate", None  # (issue 44: reported, no longer refused)
    report = asdict(model.release.report)
    for noisy in ("radius", "clipped_rows", "noisy_rows", "split"):
        report.pop(noisy)
    if report.get("outside_bounds"):  # the noisy counts outside the bounds (issue 43)
        report["outside_bounds"].pop("counts")
    return {"params.index": names, "report": report,
            "split": tuple((mask(lab), e) for lab, e in model.release.report.split),
            "summary": mask(text),
            "warnings": sorted((w.category.__name__, mask(str(w.message))) for w in caught)}


def formula_release_diff(a: dict, b: dict) -> dict:
    """The published differences of two neighbours' ``formula_release_metadata``."""
    keys = [k for k in a if not (k in FIT_KEYS and "degenerate" in (a["summary"], b["summary"]))]
    return {key: (a[key], b[key]) for key in keys if a[key] != b[key]}


def mask(text: str) -> str:
    """Text with every number (and what is computed from numbers: nan, inf,
    the convergence flag, table rules, alignment, so all white space) masked."""
    text = re.sub(r"Date:\s+\w+, \d+ \w+ \d+", "Date: #", text)
    text = re.sub(r"converged:\s+(True|False)", "converged: #", text)
    text = _NUMBER.sub("#", text)
    text = re.sub(r"[-+]?\b(nan|inf)\b", "#", text)
    text = re.sub(r"[=\-~_]{3,}", "-", text)
    return re.sub(r"\s+", "", text)  # alignment depends on the numbers' widths


def _dtype_sig(dtype):
    if isinstance(dtype, pd.CategoricalDtype):
        return ("category", tuple(dtype.categories), str(dtype.categories.dtype), dtype.ordered)
    return str(dtype)


def _frame_sig(frame: pd.DataFrame) -> dict:
    return {"columns": list(frame.columns), "dtypes": [_dtype_sig(d) for d in frame.dtypes],
            "index": (type(frame.index).__name__, str(frame.index.dtype))}


def _warnings_sig(caught) -> list:
    return sorted(Counter((w.category.__name__, mask(str(w.message))) for w in caught).items())


def _labels(obj):
    if isinstance(obj, pd.DataFrame):
        return {"index": list(obj.index), "columns": list(obj.columns)}
    if isinstance(obj, pd.Series):
        return {"index": list(obj.index), "name": obj.name}
    return type(obj).__name__


def published(case: Case, data, fit_kw: dict) -> tuple[dict, dict]:
    """(release, fit): what a release and a fit on ``data`` publish (masked)."""
    factory = FACTORIES[case.model]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        warnings.filterwarnings("ignore", category=FutureWarning, module=r"pyspark|narwhals")
        warnings.filterwarnings("ignore", category=FutureWarning, message=".*narwhals")
        model = factory(case.formula, data, random_state=7, **case.kw)
        rel = model.release
        report = asdict(rel.report)
        for noisy in ("released_cells", "noisy_total"):
            report.pop(noisy)
        if report.get("outside_bounds"):  # the noisy counts outside the bounds (issue 43)
            report["outside_bounds"].pop("counts")
        out_release = {
            "release.cells": _frame_sig(rel.cells),
            "model.cells": _frame_sig(model.cells),
            "variables": tuple(model.variables),
            "report": report,
            "report text": mask(str(rel.report)),
            "repr": mask(repr(rel)),
            "model repr": mask(repr(model)),
            "release warnings": _warnings_sig(caught),
        }
        out_fit = fit_published(model, {**case.fit_kw, **fit_kw})
        out_fit["warnings"] = _warnings_sig(caught)
    return out_release, out_fit


def fit_published(model, fit_kw: dict) -> dict:
    """What ``model.fit(**fit_kw)`` publishes (masked), or the refusal of a
    fit that the noisy release made impossible (warnings: the caller's)."""
    try:
        res = model.fit(**fit_kw)
        smry = res.summary()
        return {
            "params": _labels(res.params),
            "bse": _labels(res.bse),
            "conf_int": _labels(res.conf_int()),
            "exog_names": list(np.atleast_1d(res.model.exog_names)),
            "endog_names": res.model.endog_names,
            "response_coding": getattr(res, "response_coding", None),
            "outcome_labels": getattr(getattr(res, "_results", res), "outcome_labels", None),
            "privacy": asdict(res.privacy) == asdict(model.release.report),
            "summary": mask(smry.as_text()),
            "summary html": mask(smry.as_html()),
        }
    except dpm.DPModelsError as exc:  # a fit refused because of the noisy release
        return {"error": (type(exc).__name__, mask(str(exc)))}


def _diff(a: dict, b: dict) -> str:
    keys = [k for k in a if a.get(k) != b.get(k)] + [k for k in b if k not in a]
    return "\n".join(f"  {k}:\n    data:      {a.get(k)!r}\n    neighbour: {b.get(k)!r}"
                     for k in keys)


def compare(case: Case, convert=lambda df: df, fit_kw=None) -> tuple[bool, dict, dict]:
    """Assert that the case's two data sets publish the same things.  Returns
    whether the fits were compared (False when they took different paths
    because of the noise; their releases are compared anyway) and what the
    first data set published (release, fit)."""
    fit_kw = {"cov_type": "naive"} if fit_kw is None else fit_kw
    rel_a, fit_a = published(case, convert(case.base), fit_kw)
    rel_b, fit_b = published(case, convert(case.neighbour), fit_kw)
    assert rel_a == rel_b, f"{case.label}: the releases differ\n{_diff(rel_a, rel_b)}"
    if ("error" in fit_a) != ("error" in fit_b) or _noise_driven(fit_a, fit_b):
        return False, rel_a, fit_a
    assert fit_a == fit_b, f"{case.label}: the fits differ\n{_diff(fit_a, fit_b)}"
    return True, rel_a, fit_a


#: Warnings whose presence depends on the noisy counts (separation, a level
#: without released cells, convergence, binning bias): when one fit has such
#: a warning that the other has not, the two fits took different paths.
NOISE_DRIVEN = ("SeparationWarning", "ReleaseWarning", "ConvergenceWarning",
                "HessianInversionWarning", "PerfectSeparationWarning", "RuntimeWarning",
                "BinningBiasWarning", "ClippingWarning")


def _noise_driven(a: dict, b: dict) -> bool:
    def kinds(fit):
        return {(cat, msg) for (cat, msg), _ in fit["warnings"] if cat in NOISE_DRIVEN}

    def binning_flags(fit):
        # the summary's binning note names the coefficients whose binning shift exceeds
        # half a (bootstrap) standard error: a function of the noisy release, as a warning
        found = re.search(r"WARNING:binningmaybias(.*?)byupto", fit.get("summary", ""))
        return found.group(1) if found else None

    return kinds(a) != kinds(b) or binning_flags(a) != binning_flags(b)


def _to_polars(df: pd.DataFrame):
    import polars as pl

    out = pl.from_pandas(df)  # NaN -> null
    enums = {c: pl.Enum(list(df[c].cat.categories)) for c in df.columns
             if isinstance(df[c].dtype, pd.CategoricalDtype)}
    return out.with_columns(*(pl.col(c).cast(pl.String).cast(e) for c, e in enums.items()))


def _to_duckdb(df: pd.DataFrame):
    import duckdb

    return duckdb.connect().from_df(df)  # a pandas Categorical becomes an ENUM
