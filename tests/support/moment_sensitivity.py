"""The adversarial search of the moments' sensitivity bound, shared by the
releases built on the moments' integer statistics (tests/mechanisms/moments/,
tests/mechanisms/ssp/): a public domain, candidate values of every variable
(bounds, far outside, interior, missing), the design space a release builds,
and each candidate row's statistics on its own, for the farthest pair."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd

import dpmodels.mechanisms.moments as moments
from dpmodels.domain.axes import build_domain
from dpmodels.domain.formula import formula_variables
from dpmodels.mechanisms.moments import (
    _RowPasses,
    design_space,
    exact_statistics,
    moments_sensitivity,
    published_frame,
)

#: The formulas' namespace.
NS = {"np": np}
#: The public domain.
BOUNDS = {"x": (0.5, 8.0), "z": (-3.0, 3.0), "y": (-10.0, 10.0)}
LEVELS = {"g": ["u", "v", "w"], "h": [0, 1]}  # b is a bool column: declared by its dtype

_interior = np.random.default_rng(20240601)
#: Candidate values of each variable: both bounds, far outside each bound (clipped, so
#: far beyond any radius), interior values, and a missing value (the row is absent from
#: the statistics).  A bool cannot be missing.
CANDIDATES = {
    "x": [0.5, 8.0, -100.0, 1e6, *_interior.uniform(0.5, 8.0, 2).round(3), np.nan],
    "z": [-3.0, 3.0, 50.0, -40.0, 0.0, round(float(_interior.uniform(-3, 3)), 3), np.nan],
    "y": [-10.0, 10.0, 1e9, -1e9, 0.3, round(float(_interior.uniform(-10, 10)), 3), np.nan],
    "g": ["u", "v", "w", None],
    "h": [0, 1, np.nan],
    "b": [False, True],
}


def space_of(formula: str, frame: pd.DataFrame) -> moments.DesignSpace:
    """The public design space, built as ``release_moments`` builds it (from the
    declarations and the frame's dtypes: a schema, not data)."""
    columns = list(frame.columns)
    fv = formula_variables(formula, columns, NS)
    names = fv.names
    dtypes = {nm: frame[nm].dtype for nm in names}
    domain = build_domain(
        names, dtypes, discrete=fv.discrete,
        bounds={k: v for k, v in BOUNDS.items() if k in names},
        levels={k: v for k, v in LEVELS.items() if k in names},
        bins=2, n=100, epsilon=1.0, data_columns=list(columns), scales=dict(fv.scales))
    return design_space(formula, domain, NS, centre_squares=moments.CENTRE_SQUARES)


def candidate_frame(formula: str) -> pd.DataFrame:
    """Every combination of the candidate values of the formula's variables."""
    names = formula_variables(formula, list(CANDIDATES), NS).names
    rows = list(itertools.product(*(CANDIDATES[nm] for nm in names)))
    frame = pd.DataFrame(rows, columns=list(names))
    if "b" in frame:
        frame["b"] = frame["b"].astype(bool)
    return frame


def rows_of(space: moments.DesignSpace, frame: pd.DataFrame, chunk_rows: int = 1 << 18):
    """The ``rows_of`` callable of ``exact_statistics`` for a frame of raw rows, built
    exactly as ``release_moments`` builds it (published frame, complete rows only)."""
    published, valid = published_frame(frame.reset_index(drop=True), space.domain, "drop")
    return _RowPasses(space, published, valid, chunk_rows)


def contributions(space, frame, offsets, scales, radius) -> tuple[np.ndarray, int]:
    """Per-row statistics of every row of ``frame`` (a missing row contributes the
    zero vector) as int64, and the claimed delta.  The rows' scaled values come from
    one pass of the library over the frame; each row then goes through
    ``exact_statistics`` on its own."""
    passes = rows_of(space, frame)
    U = np.concatenate(list(passes()))
    valid = passes.valid
    assert U.shape[0] == valid.sum()
    vectors, delta = [], None
    for r in range(U.shape[0]):
        st = exact_statistics(lambda chunk=None, r=r: iter([U[r:r + 1]]), space, offsets,
                              scales, radius)
        vectors.append(st.vector)
        delta = st.delta
    assert delta == moments_sensitivity(radius, space, offsets, scales)[3]
    width = len(vectors[0])
    assert max(abs(v) for vec in vectors for v in vec) < 2**58  # int64 is exact below
    M = np.zeros((len(frame), width), np.int64)
    M[np.flatnonzero(valid)] = np.array(vectors, dtype=np.int64)
    return M, int(delta)


def worst_pair(M: np.ndarray) -> tuple[int, int, int]:
    """(i, j, L1 distance) of the farthest pair of rows of M."""
    best = (0, 0, -1)
    for i in range(M.shape[0]):
        d = np.abs(M - M[i]).sum(axis=1)
        j = int(np.argmax(d))
        if d[j] > best[2]:
            best = (i, j, int(d[j]))
    return best
