"""What a model keeps of the caller's namespace.

A model evaluates its formula in the caller's namespace (``np.log``, a user
function) and keeps it for predictions on new frames.  It must keep only
the names its formula uses: the caller's globals and locals also hold the
raw DataFrame, and a model (and anything that pickles or saves it) must not
reach raw rows after the release (PRIVACY.md rule 5, STYLE.md's one-way
flow).  The check walks every object reachable from the model and its
results, for every route a dp_* call can take.
"""

from __future__ import annotations

import gc
import types
import warnings

import numpy as np
import pandas as pd
import pytest

import dpmodels as dpm
from dpmodels.domain.formula import formula_namespace

BOUNDS = {v: (0.0, 10.0) for v in ("y", "x", "z", "w")}
LEVELS = {"g": ["a", "b", "c"], "yb": [0, 1], "yc": [0, 1, 2]}


def _reaches(root, target, limit: int = 400_000) -> bool:
    """True when ``target`` is reachable from ``root`` through object references
    (modules, classes and functions are not entered: they lead to every module's
    globals, which is the interpreter, not the model)."""
    seen, stack = set(), [root]
    while stack and len(seen) < limit:
        obj = stack.pop()
        if id(obj) in seen:
            continue
        seen.add(id(obj))
        if obj is target:
            return True
        if isinstance(obj, (types.ModuleType, type, types.FunctionType,
                            types.BuiltinFunctionType, types.MethodType)):
            continue
        stack.extend(gc.get_referents(obj))
    assert len(seen) < limit, "the walk did not finish: raise the limit"
    return False


def _frame(n: int = 3_000) -> pd.DataFrame:
    rng = np.random.default_rng(11)
    return pd.DataFrame({
        "y": rng.uniform(0, 10, n), "x": rng.uniform(0, 10, n), "z": rng.uniform(0, 10, n),
        "w": rng.uniform(0, 10, n), "g": rng.choice(["a", "b", "c"], n),
        "yb": rng.integers(0, 2, n), "yc": rng.integers(0, 3, n)})


KW = dict(epsilon=1.0, bounds=BOUNDS, levels=LEVELS, random_state=5)
#: (id, factory, formula, extra keywords): every route a dp_* call takes.
ROUTES = [
    ("ols-histogram", dpm.dp_ols, "y ~ np.log1p(x) + C(g)", {"method": "histogram"}),
    ("ols-moments", dpm.dp_ols, "y ~ x + z + w", {"method": "moments"}),
    ("logit-histogram", dpm.dp_logit, "yb ~ x + C(g)", {"method": "histogram"}),
    ("logit-newton", dpm.dp_logit, "yb ~ x + z + w", {"method": "newton"}),
    ("quantreg-histogram", dpm.dp_quantreg, "y ~ x + C(g)", {"method": "histogram"}),
    ("quantreg-newton", dpm.dp_quantreg, "y ~ x + z + w", {"method": "newton"}),
    ("mnlogit-histogram", dpm.dp_mnlogit, "yc ~ x + C(g)", {}),
    ("ols-sample-aggregate", dpm.dp_ols, "y ~ x + z", {"method": "sample-aggregate"}),
    ("logit-projected", dpm.dp_logit, "yb ~ x + z + C(g)", {"select": ["x", "g"]}),
]


@pytest.mark.parametrize("factory, formula, extra", [r[1:] for r in ROUTES],
                         ids=[r[0] for r in ROUTES])
def test_model_and_results_do_not_reach_the_callers_frame(factory, formula, extra):
    secret = _frame()  # a local of this frame: in the namespace the model captures
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = factory(formula, secret, **KW, **extra)
        res = model.fit()
    assert not _reaches(model, secret)
    assert not _reaches(res, secret)


def test_local_release_models_do_not_reach_the_callers_frame():
    secret = _frame()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rel = dpm.local.randomize(secret, formula="y ~ x + C(g)", epsilon=2.0, bounds=BOUNDS,
                                  levels=LEVELS, bins=4, random_state=3)
        model = dpm.dp_ols("y ~ x + C(g)", rel)
        res = model.fit()
    assert not _reaches(rel, secret)
    assert not _reaches(model, secret) and not _reaches(res, secret)


def test_a_given_mapping_is_cut_to_the_formulas_names_and_still_evaluates():
    df = _frame()

    def double(v):
        return 2 * v

    env = {"double": double, "np": np, "df": df, "unrelated": object()}
    model = dpm.dp_ols("y ~ double(x) + np.sqrt(z)", df, eval_env=env, **KW,
                       method="histogram")
    assert {"double", "np"} <= set(model.namespace)
    assert not {"df", "unrelated"} & set(model.namespace)
    assert np.all(np.isfinite(model.fit().params))


def test_formula_namespace_keeps_every_identifier_of_the_formula():
    ns = {"np": np, "f": abs, "data": 1, "x": 2, "logx": 3}
    assert set(formula_namespace("y ~ np.log(x) + f(z) : C(g)", ns)) == {"np", "f", "x"}
    assert formula_namespace("y ~ 1", ns) == {}
