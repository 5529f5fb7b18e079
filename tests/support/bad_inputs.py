"""The bad-input corpus: each case a call that must be refused with a dpmodels
error naming the argument or variable, before anything is charged, counted or
drawn (tests/data/test_bad_inputs.py runs it through the release and the four
dp_* functions; tests/contracts/test_engines_contract.py on every engine)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import numpy as np
import pandas as pd
import patsy  # noqa: F401  (the formula "y ~ patsy.center(x)" resolves it)

NAN, INF = float("nan"), float("inf")

BOUNDS = {"y": (0.0, 10.0), "x": (0.0, 10.0)}
LEVELS = {"g": ["a", "b", "c"], "k": [1, 2, 3], "yb": [0, 1], "yc": [0, 1, 2]}
RESPONSE = {"release": "y", "ols": "y", "logit": "yb", "quantreg": "y", "mnlogit": "yc"}
ENTRIES = tuple(RESPONSE)
MODELS = ("ols", "logit", "quantreg", "mnlogit")
CHOICE = ("logit", "mnlogit")


def _frame(n: int = 120) -> pd.DataFrame:
    rng = np.random.default_rng(7)
    return pd.DataFrame({
        "y": rng.uniform(0, 10, n), "x": rng.uniform(0, 10, n), "k": rng.integers(1, 4, n),
        "g": rng.choice(["a", "b", "c"], n), "yb": rng.integers(0, 2, n),
        "yc": rng.integers(0, 3, n),
    })


FRAME = _frame()


@dataclass(frozen=True)
class Case:
    id: str
    match: str
    kw: dict = field(default_factory=dict)
    formula: str = "{resp} ~ x + C(g)"
    data: Callable | None = None
    entries: tuple = ENTRIES
    type_error: bool = False


def _c(id, match, entries=ENTRIES, type_error=False, formula="{resp} ~ x + C(g)", data=None,
       **kw):
    return Case(id, match, kw, formula, data, entries, type_error)


def _relabel(df):
    return df.rename(columns={"x": 0})


def _dup(df):
    return pd.concat([df, df[["x"]]], axis=1)


def _multi(df):
    out = df.copy()
    out.columns = pd.MultiIndex.from_tuples([("v", c) for c in df.columns])
    return out


def _mapping(**changes):
    def make(df):
        out = {c: df[c].to_numpy() for c in df.columns}
        out.update(changes)
        return out
    return make


CASES = [
    # ---- epsilon ------------------------------------------------------------------------
    _c("epsilon-0", r"epsilon", epsilon=0),
    _c("epsilon-0.0", r"epsilon", epsilon=0.0),
    _c("epsilon--1", r"epsilon", epsilon=-1.0),
    _c("epsilon-nan", r"epsilon", epsilon=NAN),
    _c("epsilon--inf", r"epsilon", epsilon=-INF),
    _c("epsilon-str", r"epsilon", type_error=True, epsilon="1"),
    _c("epsilon-None", r"epsilon is required", epsilon=None),
    _c("epsilon-True", r"epsilon", type_error=True, epsilon=True),
    _c("epsilon-list", r"epsilon", type_error=True, epsilon=[1.0]),
    _c("epsilon-complex", r"epsilon", type_error=True, epsilon=1 + 0j),
    _c("epsilon-tiny", r"epsilon", epsilon=1e-300),  # the threshold's cut overflows int64
    _c("epsilon-below-exact-limit", r"epsilon=1e-16 is below", epsilon=1e-16),  # noise not exact
    _c("epsilon-signed-below-exact-limit", r"epsilon.*below", entries=("release", "ols"),
       epsilon=5e-16, threshold=None),
    # ---- bounds ---------------------------------------------------------------------------
    _c("bounds-reversed", r"bounds\['x'\]", bounds=dict(BOUNDS, x=(10, 0))),
    _c("bounds-equal", r"bounds\['x'\]", bounds=dict(BOUNDS, x=(5, 5))),
    _c("bounds-nan", r"bounds\['x'\]", bounds=dict(BOUNDS, x=(NAN, 10))),
    _c("bounds-inf", r"bounds\['x'\]", bounds=dict(BOUNDS, x=(0, INF))),
    _c("bounds-strings", r"bounds\['x'\]", type_error=True, bounds=dict(BOUNDS, x=("0", "10"))),
    _c("bounds-one-string", r"bounds\['x'\]", type_error=True, bounds=dict(BOUNDS, x="05")),
    _c("bounds-3-tuple", r"bounds\['x'\]", type_error=True, bounds=dict(BOUNDS, x=(0, 5, 10))),
    _c("bounds-scalar", r"bounds\['x'\]", type_error=True, bounds=dict(BOUNDS, x=10)),
    _c("bounds-None-value", r"bounds\['x'\]", type_error=True, bounds=dict(BOUNDS, x=None)),
    _c("bounds-bools", r"bounds\['x'\]", type_error=True, bounds=dict(BOUNDS, x=(False, True))),
    _c("bounds-set", r"bounds\['x'\]", type_error=True, bounds=dict(BOUNDS, x={0, 10})),
    _c("bounds-not-a-dict", r"bounds must be a dict", type_error=True, bounds=[(0, 10)]),
    _c("bounds-width-overflows", r"bounds\['x'\]", bounds=dict(BOUNDS, x=(-1e308, 1e308))),
    _c("bounds-width-underflows", r"bounds\['x'\]", bounds=dict(BOUNDS, x=(0, 1e-320))),
    _c("bounds-edges-collapse", r"bounds\['x'\]", bounds=dict(BOUNDS, x=(1e16, 1e16 + 4))),
    _c("bounds-midpoints-overflow", r"bounds\['x'\]", bounds=dict(BOUNDS, x=(1.7e308, 1.79e308))),
    _c("bounds-missing", r"'x' has no bounds", bounds={"y": (0, 10)}),
    _c("bounds-missing-response", r"'y' has no bounds", entries=("release", "ols", "quantreg"),
       bounds={"x": (0, 10)}),
    _c("bounds-typo-key", r"bounds.*'X'.*did you mean 'x'", bounds=dict(BOUNDS, X=(0, 10))),
    _c("bounds-int-key", r"bounds.*key 0", bounds={**BOUNDS, 0: (0, 1)}),
    _c("bounds-and-levels", r"'x' has both bounds and levels", levels=dict(LEVELS, x=[1, 2])),
    # ---- levels ---------------------------------------------------------------------------
    _c("levels-empty", r"levels\['g'\] is empty", levels=dict(LEVELS, g=[])),
    _c("levels-duplicates", r"levels\['g'\].*twice", levels=dict(LEVELS, g=["a", "a", "b", "c"])),
    _c("levels-1-and-1.0", r"levels\['k'\].*twice", formula="{resp} ~ x + C(g) + C(k)",
       levels=dict(LEVELS, k=[1, 1.0, 2, 3])),
    _c("levels-string", r"levels\['g'\]", type_error=True, levels=dict(LEVELS, g="abc")),
    _c("levels-bytes", r"levels\['g'\]", type_error=True, levels=dict(LEVELS, g=b"abc")),
    _c("levels-unhashable", r"levels\['g'\]", type_error=True,
       levels=dict(LEVELS, g=[["a"], "b", "c"])),
    _c("levels-dict-level", r"levels\['g'\]", type_error=True, levels=dict(LEVELS, g=[{}, "b"])),
    _c("levels-tuple-level", r"levels\['g'\]", type_error=True,
       levels=dict(LEVELS, g=[("a",), "b", "c"])),
    _c("levels-nan", r"levels\['g'\].*missing", levels=dict(LEVELS, g=["a", "b", "c", NAN])),
    _c("levels-two-nans", r"levels\['g'\].*missing",
       levels=dict(LEVELS, g=["a", "b", "c", NAN, float("nan")])),
    _c("levels-None", r"levels\['g'\].*missing", levels=dict(LEVELS, g=["a", "b", "c", None])),
    _c("levels-pd.NA", r"levels\['g'\].*missing", levels=dict(LEVELS, g=["a", "b", "c", pd.NA])),
    _c("levels-set", r"levels\['g'\]", type_error=True, levels=dict(LEVELS, g={"a", "b", "c"})),
    _c("levels-dict", r"levels\['g'\]", type_error=True, levels=dict(LEVELS, g={"a": 1})),
    _c("levels-2d-array", r"levels\['g'\]", type_error=True,
       levels=dict(LEVELS, g=np.array([["a", "b"], ["c", "d"]]))),
    _c("levels-scalar", r"levels\['g'\]", type_error=True, levels=dict(LEVELS, g=3)),
    _c("levels-not-a-dict", r"levels must be a dict", type_error=True, levels=["a", "b", "c"]),
    _c("levels-missing-for-C", r"C\(g\)", levels={k: v for k, v in LEVELS.items() if k != "g"}),
    _c("levels-typo-key", r"levels.*'G'", levels=dict(LEVELS, G=["a"])),
    _c("levels-wrong-dtype-spec", r"levels\['g'\]", type_error=True,
       levels=dict(LEVELS, g="dtypes")),
    # ---- bins -----------------------------------------------------------------------------
    _c("bins-0", r"bins", bins=0),
    _c("bins--1", r"bins", bins=-1),
    _c("bins-1.5", r"bins", type_error=True, bins=1.5),
    _c("bins-float-int", r"bins", type_error=True, bins=np.float64(4)),
    _c("bins-True", r"bins", type_error=True, bins=True),
    _c("bins-many", r"bins", type_error=True, bins="many"),
    _c("bins-None", r"bins", type_error=True, bins=None),
    _c("bins-list", r"bins", type_error=True, bins=[4]),
    _c("bins-huge", r"bins", bins=2**40),
    _c("bins-unknown-key", r"bins.*'Size'", bins={"Size": 10}),
    _c("bins-dict-0", r"bins for 'x'", bins={"x": 0}),
    _c("bins-dict-float", r"bins for 'x'", type_error=True, bins={"x": 2.5}),
    _c("bins-dict-str", r"bins for 'x'", type_error=True, bins={"x": "auto"}),
    # ---- threshold, threshold_A -----------------------------------------------------------------
    _c("threshold-str", r"threshold must be", threshold="big"),
    _c("threshold-nan", r"threshold", threshold=NAN),
    _c("threshold-inf", r"threshold", threshold=INF),
    _c("threshold--inf", r"threshold", threshold=-INF),
    _c("threshold-True", r"threshold", type_error=True, threshold=True),
    _c("threshold-list", r"threshold", type_error=True, threshold=[1]),
    _c("threshold-beyond-int64", r"threshold", threshold=1e300),
    _c("threshold-None-nonneg-models", r"threshold=None|signed", entries=("logit", "quantreg",
                                                                         "mnlogit"),
       threshold=None),
    _c("threshold_A-inf", r"threshold_A", threshold_A=INF),
    _c("threshold_A-0", r"threshold_A", threshold_A=0),
    _c("threshold_A--1", r"threshold_A", threshold_A=-1.0),
    _c("threshold_A-nan", r"threshold_A", threshold_A=NAN),
    _c("threshold_A-str", r"threshold_A", type_error=True, threshold_A="0.5"),
    _c("threshold_A-True", r"threshold_A", type_error=True, threshold_A=True),
    _c("threshold_A-huge", r"threshold_A", threshold_A=1e308, epsilon=0.5),
    # ---- n --------------------------------------------------------------------------------
    _c("n-0", r"positive int", n=0),
    _c("n--5", r"positive int", n=-5),
    _c("n-2.5", r"\bn\b", type_error=True, n=2.5),
    _c("n-float-int", r"\bn\b", type_error=True, n=np.float64(100)),
    _c("n-True", r"\bn\b", type_error=True, n=True),
    _c("n-str", r"\bn\b", type_error=True, n="100"),
    _c("n-beyond-int64", r"\bn\b", n=2**64),
    # ---- missing, max_spurious_cells ------------------------------------------------------
    _c("missing-ignore", r"missing", missing="ignore"),
    _c("missing-None", r"missing", type_error=True, missing=None),
    _c("missing-True", r"missing", type_error=True, missing=True),
    _c("max_spurious_cells-nan", r"max_spurious_cells", max_spurious_cells=NAN),
    _c("max_spurious_cells-inf", r"max_spurious_cells", max_spurious_cells=INF),
    _c("max_spurious_cells-0", r"max_spurious_cells", max_spurious_cells=0),
    _c("max_spurious_cells--1", r"max_spurious_cells", max_spurious_cells=-1),
    _c("max_spurious_cells-str", r"max_spurious_cells", type_error=True, max_spurious_cells="many"),
    _c("max_spurious_cells-True", r"max_spurious_cells", type_error=True, max_spurious_cells=True),
    _c("max_spurious_cells-too-small", r"max_spurious_cells", max_spurious_cells=1e-300),
    # ---- random_state ---------------------------------------------------------------------
    _c("random_state--1", r"random_state", random_state=-1),
    _c("random_state-1.5", r"random_state", type_error=True, random_state=1.5),
    _c("random_state-str", r"random_state", type_error=True, random_state="seed"),
    _c("random_state-True", r"random_state", type_error=True, random_state=True),
    _c("random_state-RandomState", r"random_state", type_error=True,
       random_state=np.random.RandomState(0)),
    _c("random_state-list", r"random_state", type_error=True, random_state=[1, 2]),
    # ---- accountant -----------------------------------------------------------------------
    _c("accountant-float", r"accountant", type_error=True, accountant=1.0),
    _c("accountant-str", r"accountant", type_error=True, accountant="acct"),
    # ---- columns (release) and formula ----------------------------------------------------
    _c("columns-and-formula", r"exactly one of columns", entries=("release",),
       columns=["x"]),
    _c("columns-empty", r"columns", entries=("release",), formula=None, columns=[]),
    _c("columns-int", r"columns", entries=("release",), type_error=True, formula=None,
       columns=[0]),
    _c("columns-unknown", r"'nope'", entries=("release",), formula=None, columns=["x", "nope"]),
    _c("columns-scalar", r"columns", entries=("release",), type_error=True, formula=None,
       columns=5),
    _c("columns-and-formula-missing", r"exactly one of columns", entries=("release",),
       formula=None),
    _c("formula-not-str", r"formula", type_error=True, formula=5),
    _c("formula-empty", r"formula", formula=""),
    _c("formula-unknown-name", r"'nope'", formula="{resp} ~ x + nope"),
    _c("formula-unknown-Q", r"'zz'", formula="{resp} ~ x + Q('zz')"),
    _c("formula-syntax", r"formula", formula="{resp} ~ (x"),
    _c("formula-dangling-plus", r"formula", formula="{resp} ~ x +"),
    _c("formula-two-tildes", r"formula", formula="{resp} ~ x ~ g"),
    _c("formula-bs", r"bs\(\)", entries=MODELS, formula="{resp} ~ bs(x, df=4) + C(g)"),
    _c("formula-bs-knots-only", r"bs\(\)", entries=MODELS,
       formula="{resp} ~ bs(x, knots=[5]) + C(g)"),
    _c("formula-cr", r"cr\(\)", entries=MODELS, formula="{resp} ~ cr(x, df=4) + C(g)"),
    _c("formula-cc", r"cc\(\)", entries=MODELS, formula="{resp} ~ cc(x, df=4) + C(g)"),
    _c("formula-te", r"te\(\)", entries=MODELS,
       formula="{resp} ~ te(cr(x, df=3), cc(x, df=3)) + C(g)"),
    _c("formula-patsy.center", r"patsy\.center", entries=MODELS,
       formula="{resp} ~ patsy.center(x) + C(g)"),
    # ---- data -----------------------------------------------------------------------------
    _c("data-None", r"data must be", type_error=True, data=lambda df: None),
    _c("data-list", r"data must be", type_error=True, data=lambda df: df.to_dict("records")),
    _c("data-ndarray", r"data must be", type_error=True, data=lambda df: df.to_numpy()),
    _c("data-str", r"data must be", type_error=True, data=lambda df: "data.csv"),
    _c("data-Series", r"data must be.*to_frame", type_error=True, data=lambda df: df["x"]),
    _c("data-empty-frame", r"0 rows", data=lambda df: df.iloc[:0]),
    _c("data-empty-frame-n-declared", r"0 rows", data=lambda df: df.iloc[:0], n=100),
    _c("data-no-columns", r"not a column|no column", data=lambda df: pd.DataFrame()),
    _c("data-duplicated-column", r"'x'", data=_dup),
    _c("data-int-label", r"column 0 .*string", formula="{resp} ~ Q('0') + C(g)", data=_relabel,
       bounds={"y": (0, 10), "0": (0, 10)}),
    _c("data-MultiIndex-columns", r"MultiIndex", type_error=True, data=_multi),
    _c("data-complex-column", r"'x'.*complex", data=lambda df: df.assign(x=df["x"] + 1j)),
    _c("data-mapping-scalar-column", r"data\['x'\]", type_error=True, data=_mapping(x=3.0)),
    _c("data-mapping-2d-column", r"data\['x'\]", type_error=True,
       data=_mapping(x=np.zeros((len(FRAME), 2)))),
    _c("data-mapping-string-column", r"data\['x'\]", type_error=True, data=_mapping(x="abc")),
    _c("data-mapping-lengths", r"different lengths", data=_mapping(x=np.zeros(5))),
    _c("data-mapping-empty", r"0 rows", data=lambda df: {c: [] for c in df.columns}),
    # ---- dp_* model arguments -------------------------------------------------------------
    _c("representatives-unknown", r"representatives", entries=MODELS, representatives="best"),
    _c("representatives-None", r"representatives", entries=MODELS, type_error=True,
       representatives=None),
    _c("eval_env--1", r"eval_env", entries=MODELS, eval_env=-1),
    _c("eval_env-str", r"eval_env", entries=MODELS, type_error=True, eval_env="x"),
    _c("eval_env-too-deep", r"eval_env", entries=MODELS, eval_env=10**6),
    # ---- release arguments ------------------------------------------------------------------
    _c("namespace-int", r"namespace", entries=("release",), type_error=True, namespace=5),
    _c("domain_check-int", r"domain_check", entries=("release",), type_error=True,
       domain_check=5),
]
