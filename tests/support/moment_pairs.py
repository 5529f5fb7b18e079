"""Seeded data sets and a replace-one neighbour of each (missing, move, bound,
empty) for the formula releases' neighbour tests (the moments, Newton and
quantile steps: tests/mechanisms/)."""

from __future__ import annotations

import numpy as np
import pandas as pd

NB_FORMULAS = [
    "y ~ x + C(k) + C(g)",
    "y ~ np.log(x) + k + C(g)",
    "y ~ 0 + C(g) + x:C(k)",
    "y ~ C(g)*x + C(k) + b",
    "y ~ np.log(x) + x:C(g) + C(k)",
]
NB_KINDS = ("missing", "move", "bound", "empty")
NB_PAIRS_PER_KIND = 5
LO, HI = 1.0, 10.0


def make_pair(seed: int, kind: str):
    """A data set and a replace-one neighbour of the given kind (deterministic)."""
    rng = np.random.default_rng([seed, NB_KINDS.index(kind), 99])
    formula = NB_FORMULAS[(seed + NB_KINDS.index(kind)) % len(NB_FORMULAS)]
    n = int(rng.integers(120, 260))
    k_levels = [int(v) for v in rng.permutation([0, 1, 2])]
    g_levels = [str(v) for v in rng.permutation(["lo", "mid", "hi"])]
    k_dtype = str(rng.choice(["int64", "int32", "Int64", "uint8"]))
    g_cat = bool(rng.random() < 0.4)  # a declared Categorical (levels="dtype")
    x = rng.uniform(LO, HI, n)
    k = rng.choice(k_levels, n)
    g = rng.choice(g_levels, n)
    k[:3], g[:3] = k_levels, g_levels
    empty_g = g_levels[-1]
    if kind == "empty":  # no row of level g_levels[-1] except the one the neighbour moves
        g = np.where(g == empty_g, g_levels[0], g)
    y = np.clip(1 + 0.8 * x + 0.5 * (k == k_levels[0]) + rng.normal(0, 1.5, n), -5, 20)
    base = pd.DataFrame({
        "y": y, "x": x,
        "k": pd.array(k, dtype="Int64") if k_dtype == "Int64" else k.astype(k_dtype),
        "g": pd.Categorical(g, categories=g_levels) if g_cat else g,
        "b": rng.random(n) < 0.5})
    nb = base.copy()
    i = int(rng.integers(5, n))
    if kind == "missing":
        if k_dtype == "Int64":
            nb.loc[i, "k"] = pd.NA
        else:
            col = nb["k"].astype("float64")  # what pandas does to an int column with a NaN
            col.iloc[i] = np.nan
            nb["k"] = col
    elif kind == "move":
        name, levels = ("k", k_levels) if rng.random() < 0.5 else ("g", g_levels)
        cur = levels.index(nb.loc[i, name])
        nb.loc[i, name] = levels[(cur + 1 + int(rng.integers(2))) % 3]
    elif kind == "bound":
        name = "x" if rng.random() < 0.5 else "y"
        lo, hi = (LO, HI) if name == "x" else (-5.0, 20.0)
        nb.loc[i, name] = float(rng.choice([lo, hi, lo - 7.5, hi + 1e6]))
    else:
        nb.loc[i, "g"] = empty_g
    assert len(nb) == len(base) and not nb.equals(base)
    kw = dict(epsilon=float(rng.choice([2.0, 4.0, 8.0])),
              bounds={"x": (LO, HI), "y": (-5.0, 20.0)},
              levels={"k": k_levels, "g": "dtype" if g_cat else g_levels})
    return f"{kind}-{seed}: {formula} (k:{k_dtype}, g:{'cat' if g_cat else 'str'})", \
        formula, base, nb, kw
