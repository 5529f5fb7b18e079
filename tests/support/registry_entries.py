"""The registry's entries and the call derived for each, for the contract suites
(tests/contracts/): the shared frame and public domain, one `Entry` per
(mechanism, family) of `dpmodels.front.registry`, the `Recipe` that makes its
release and model, and the comparisons of two results."""

from __future__ import annotations

import contextlib
import importlib
import inspect
import re
import warnings
from dataclasses import dataclass

import numpy as np
import pandas as pd
import pytest

import dpmodels as dpm
from dpmodels.core.errors import DPModelsError
from dpmodels.front import registry

# ---------------------------------------------------------------------------
# the shared frame and the public domain
# ---------------------------------------------------------------------------

N = 3000
EPSILON = 1.0
#: Bootstrap replicates where a fit takes n_boot (the calibration's default is not needed).
N_BOOT = 40
#: Synthetic rows asked of a release function that needs a size.
SYNTHETIC_ROWS = 60
#: Bins asked of a release function that needs them (no default for a continuous variable).
OWN_BINS = 4
#: Bins of the local and central exact releases compared at epsilon=inf.
INF_BINS = 8
#: The quantile of the exact checks (a discrete response: 0.5 has ties, as tests/contracts/test_contract.py).
Q_EXACT = 0.3
BOUNDS = {"y": (-20.0, 20.0), "x": (1.0, 10.0)}
LEVELS = {"yi": list(range(-20, 21)), "yb": [0, 1], "yc": [0, 1, 2], "g": ["a", "b", "c"],
          "k": [1, 2, 3, 4]}
FAMILY_FUNCTIONS = {"ols": dpm.dp_ols, "logit": dpm.dp_logit, "quantreg": dpm.dp_quantreg,
                    "mnlogit": dpm.dp_mnlogit}
#: The response of each family (None: a release function of its own, fed the same names).
RESPONSE = {"ols": "y", "logit": "yb", "quantreg": "y", "mnlogit": "yc", None: "yb"}
#: The response of the exact (all-discrete) formula.
EXACT_RESPONSE = {"ols": "yi", "logit": "yb", "quantreg": "yi", "mnlogit": "yc", None: "yb"}


def make_frame(n: int = N, seed: int = 2027) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    x = rng.uniform(1.0, 10.0, n)
    g = rng.choice(["a", "b", "c"], n, p=[0.45, 0.35, 0.2])
    k = rng.integers(1, 5, n)
    eta = -1.0 + 0.8 * np.log(x) - 0.7 * (g == "b") + 0.5 * (g == "c") + 0.2 * (k - 2.5)
    y = np.clip(1 + 2 * np.log(x) + (g == "b") - 0.5 * (g == "c") + rng.normal(0, 1.5, n),
                -20, 20)
    p1 = 1 / (1 + np.exp(-eta))
    u = rng.random(n)
    return pd.DataFrame({
        "y": y, "yi": np.round(y).astype(np.int64),
        "yb": (rng.random(n) < p1).astype(np.int64),
        "yc": np.where(u < 0.4 * p1, 2, np.where(u < 0.7, 1, 0)).astype(np.int64),
        "x": x, "g": g, "k": k.astype(np.int64)})


FRAME = make_frame()


def formula_of(family: str | None) -> str:
    return f"{RESPONSE[family]} ~ np.log(x) + C(g)"


def exact_formula_of(family: str | None) -> str:
    return f"{EXACT_RESPONSE[family]} ~ k + C(g)"


def variables(formula: str) -> list[str]:
    """The names a formula reads, response first (for functions that take columns)."""
    names = re.findall(r"(?<![\w.'])([A-Za-z_]\w*)(?![\w(.])", formula)
    return list(dict.fromkeys(names))


def neighbour_of(df: pd.DataFrame) -> pd.DataFrame:
    """``df`` with its first row replaced (replace-one: same n) by a row at the bounds."""
    nb = df.copy()
    nb.loc[0, ["y", "yi", "yb", "yc", "x", "g", "k"]] = [
        -20.0, -20, 1 - int(nb.loc[0, "yb"]), 2, 10.0, "c", 4]
    return nb


# ---------------------------------------------------------------------------
# the registry's entries, and the call derived for each
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Entry:
    mech: registry.Mechanism
    family: str | None

    @property
    def id(self) -> str:
        return f"{self.mech.name}/{self.family}" if self.family else self.mech.name


#: One entry per (mechanism, family) of the registry; one per mechanism that serves none.
ENTRIES = [Entry(m, f) for m in registry.MECHANISMS for f in (m.families or (None,))]

#: Keyword options that a route recognises (a routed mechanism without ``method=`` is
#: named by one of them: dp_logit's and dp_mnlogit's docstrings, ``select=``).
ROUTE_OPTIONS = ({"select": 1},)
#: Values for a release function's parameters, by name: given when the parameter has
#: no default or a default of None ("not given"); ``columns`` only where no
#: ``formula`` is taken.
DERIVED = {
    "formula": lambda f: f,
    "columns": lambda f: variables(f),
    "target": lambda f: variables(f)[0],
    "candidates": lambda f: variables(f)[1:],
    "size": lambda f: SYNTHETIC_ROWS,
    "k": lambda f: 1,
    "bins": lambda f: OWN_BINS,
}


def release_function(mech: registry.Mechanism):
    module, name = mech.release.split(":")
    return getattr(importlib.import_module(module), name)


def call_release_function(entry: Entry, fn, formula: str, data, kw: dict):
    """``fn(data, ...)`` with the arguments its signature names: ``kw`` where it
    takes them, the rest derived (DERIVED); fails naming the entry when a
    required argument cannot be derived."""
    params = inspect.signature(fn).parameters
    args, kwargs = [], {}
    for i, (name, p) in enumerate(params.items()):
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            continue
        if i == 0:
            args.append(data)
        elif name in kw:
            kwargs[name] = kw[name]
        elif name in DERIVED and (p.default is p.empty or p.default is None) and not (
                name == "columns" and "formula" in params):
            kwargs[name] = DERIVED[name](formula)
        elif p.default is p.empty:
            pytest.fail(f"{entry.id}: cannot derive the argument {name!r} of "
                        f"{entry.mech.release}: add it to DERIVED in "
                        "tests/contracts/test_mechanism_contract.py")
    return fn(*args, **kwargs)


@contextlib.contextmanager
def recording_builders():
    """Records which (mechanism, family) dispatch builds (`Mechanism.build`): the
    ground truth of which entry a dp_* call reached."""
    hits: list[tuple[str, str]] = []
    build = registry.Mechanism.build

    def wrapped(self, call):
        hits.append((self.name, call.family))
        return build(self, call)

    registry.Mechanism.build = wrapped  # type: ignore[method-assign]
    try:
        yield hits
    finally:
        registry.Mechanism.build = build  # type: ignore[method-assign]


@dataclass(frozen=True)
class Recipe:
    """How an entry is called: ``how`` is "method", "option", "release as data"
    or "own function"."""

    entry: Entry
    how: str
    method: str | None = None
    options: tuple = ()

    def describe(self) -> str:
        fn = f"dp_{self.entry.family}" if self.entry.family else self.entry.mech.release
        if self.how == "method":
            return f"{fn}(..., method={self.method!r})"
        if self.how == "option":
            return f"{fn}(..., {', '.join(f'{k}={v!r}' for k, v in self.options)})"
        if self.how == "release as data":
            return f"{fn}(formula, {self.entry.mech.release}(rows, ...))"
        return f"{fn}(rows, ...)"

    def make(self, formula: str, data, **kw):
        """The entry's model (or, for a function of its own, its output) on ``data``."""
        entry = self.entry
        if self.how == "own function":
            return call_release_function(entry, release_function(entry.mech), formula, data, kw)
        fn = FAMILY_FUNCTIONS[entry.family]
        if self.how == "release as data":
            takes = inspect.signature(release_function(entry.mech)).parameters
            rel = call_release_function(entry, release_function(entry.mech), formula, data,
                                        {k: v for k, v in kw.items() if k in takes})
            return fn(formula, rel, **{k: v for k, v in kw.items() if k not in takes})
        extra = {"method": self.method} if self.how == "method" else dict(self.options)
        return fn(formula, data, **extra, **kw)


def _candidates(entry: Entry) -> list[Recipe]:
    m = entry.mech
    out = []
    if m.method:
        out.append(Recipe(entry, "method", method=m.method))
    out += [Recipe(entry, "option", options=tuple(opts.items())) for opts in ROUTE_OPTIONS]
    if m.own_function:
        out.append(Recipe(entry, "release as data"))
    return out


_RECIPES: dict[str, Recipe] = {}


def recipe(entry: Entry) -> Recipe:
    """The call that reaches ``entry`` (cached); fails naming the entry if none does."""
    if entry.id in _RECIPES:
        return _RECIPES[entry.id]
    if entry.family is None:
        if not entry.mech.own_function:
            pytest.fail(f"{entry.id}: serves no dp_* family and is not a release function of "
                        "its own: no way to call it is known to tests/contracts/test_mechanism_contract.py")
        found = Recipe(entry, "own function")
    else:
        found, tried = None, []
        for cand in _candidates(entry):
            refused = ""
            with recording_builders() as hits, warnings.catch_warnings():
                warnings.simplefilter("ignore")
                try:
                    cand.make(formula_of(entry.family), FRAME, **base_kw(entry, random_state=0))
                except DPModelsError as exc:  # refused: the builder it reached says where
                    refused = f" ({type(exc).__name__}: {str(exc)[:60]})"
            if hits and hits[0] == (entry.mech.name, entry.family):
                found = cand
                break
            tried.append(f"{cand.describe()} reached {hits[0] if hits else 'no builder'}{refused}")
        if found is None:
            pytest.fail(f"{entry.id}: no call derived from its registry entry reaches it "
                        f"(tried: {'; '.join(tried) or 'nothing'}); give it a method=, a route "
                        "option in ROUTE_OPTIONS, or a release function")
    _RECIPES[entry.id] = found
    return found


def base_kw(entry: Entry, **kw) -> dict:
    """The public inputs of every call (quantile regression: the median)."""
    out = dict(epsilon=EPSILON, bounds=BOUNDS, levels=LEVELS)
    if entry.family == "quantreg":
        out["q"] = 0.5
    out.update(kw)
    return out


def fit_kwargs(model, **kw) -> dict:
    """A fast, reproducible default fit: n_boot and random_state where the fit takes them."""
    params = inspect.signature(model.fit).parameters
    out = {}
    if "n_boot" in params:
        out["n_boot"] = N_BOOT
    if "random_state" in params:
        out["random_state"] = 11
    out.update(kw)
    return out


@dataclass
class Built:
    made: object  # the model, or a release function's output
    res: object | None  # the model's fitted results (None: nothing to fit)
    accountant: dpm.Accountant
    fit_kw: dict


_BUILT: dict[str, Built] = {}


def built(entry: Entry) -> Built:
    """The entry on FRAME at EPSILON, seeded, charged to an accountant, fitted (cached)."""
    if entry.id not in _BUILT:
        acct = dpm.Accountant(10.0)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            made = recipe(entry).make(formula_of(entry.family), FRAME,
                                      **base_kw(entry, random_state=0, accountant=acct))
            kw = fit_kwargs(made) if hasattr(made, "fit") else {}
            res = made.fit(**kw) if hasattr(made, "fit") else None
        _BUILT[entry.id] = Built(made, res, acct, kw)
    return _BUILT[entry.id]


def report_of(obj):
    """The whole privacy report of what an entry made: ``privacy`` (a projected
    model's covers its selection and histogram), else ``report``."""
    for name in ("privacy", "report"):
        rep = getattr(obj, name, None)
        if rep is not None:
            return rep
    raise AssertionError(f"{type(obj).__name__} carries no privacy report")


def undated(text: str) -> str:
    """A summary without statsmodels' clock (its Date and Time fields)."""
    return re.sub(r"(Date|Time):\s+\S+( \S+ \S+ \S+)?", "", text)


def cov_of(res) -> np.ndarray:
    return np.asarray(res.cov_params(), float)


def assert_same_results(a, b, what: str) -> None:
    """Bit-identical params, bse, covariance and summary (less the clock)."""
    np.testing.assert_array_equal(np.asarray(a.params), np.asarray(b.params), err_msg=what)
    np.testing.assert_array_equal(np.asarray(a.bse), np.asarray(b.bse), err_msg=what)
    np.testing.assert_array_equal(cov_of(a), cov_of(b), err_msg=what)
    assert undated(a.summary().as_text()) == undated(b.summary().as_text()), what


def _entry_params(entries):
    return [pytest.param(e, id=e.id) for e in entries]


FAMILY_ENTRIES = [e for e in ENTRIES if e.family is not None]
