"""The noisy-moments release: private sufficient statistics of a formula's design.

For least squares only the first and second moments of ``[X y]`` matter.
This mechanism releases them directly, at any number of covariates, where
the joint histogram (`dpmodels.mechanisms.histogram`) must coarsen its grid and pay
for spurious cells.

Mechanism (epsilon-DP, delta = 0, replace-one neighbours, public n)
------------------------------------------------------------------
1. **Public design space.**  The formula's design is built by patsy on a
   grid of public values (bounds on each continuous variable's scale,
   declared levels), never on the data.  That fixes the design columns, their
   names, their coding, and a public range ``[lo_j, hi_j]`` for each column;
   a row's design values are clamped to that range (a per-row map).  Each
   non-constant column (the response included) is mapped to
   ``u_j = (x_j - c_j) / h_j``: ``c_j`` the middle of the range and ``h_j``
   its half-width, except 0/1 columns (dummies), kept as they are
   (``c = 0, h = 1``), so a one-hot factor adds at most 1 to a row's L1 norm.
2. **Centres and scales (epsilon_s = 10% of epsilon).**  One histogram per
   non-dummy coordinate, 32 equal bins over [-1, 1], discrete Laplace noise of
   scale ``2 q_free / epsilon_s`` on every bin (a row adds one count to each
   of the q_free histograms: L1 sensitivity ``2 q_free``).  Post-processing
   reads each coordinate's mean (offset c_j) and half its 5%-95% range
   (scale s_j, at least one bin); dummies keep c = 0, s = 1.
3. **Radius (epsilon_r = 5%).**  A histogram of the rows' L1 norms
   ``||(u - c) / s||_1`` on a public geometric grid (4 bins per octave below
   the largest possible norm), noise of scale ``2/epsilon_r`` per bin
   (sensitivity 2).  The radius R is the smallest edge whose noisy count of
   rows at or above it is at most a fraction
   ``clip_fraction(n, epsilon, q) = 100 q**2 / (n epsilon)`` of n, within
   [0.1%, 10%] (q: the coordinates that drive the norm).
4. **Moments (epsilon_m = the remaining 85%).**  Each row is shrunk into
   the L1 ball, ``v = w min(1, R/||w||_1)`` with ``w = (u - c) / s`` (a
   per-row map), and quantized, ``k = round(v g)`` with g a power of 2 chosen
   from R.  The released integer vector is ``(w_N N, w_S sum k, sum k_i k_j``
   over the released pairs ``i <= j)`` over the rows with no missing value
   (a dummy's square equals its sum and the products of two dummies of one
   factor are 0: neither is released).  Its replace-one L1 sensitivity
   Delta is `moments_sensitivity()`'s bound, from ``||k||_1 <= A``
   (ball, clamped ranges and one-hot groups) and ``sum_{i<=j} |k_i k_j| <=
   (A**2 + Q) / 2``.  Every entry gets exact discrete Laplace noise with
   ``P(z) ~ exp(-epsilon_m |z| / Delta)`` (`dpmodels.core.exact`).
   Sums are exact integer arithmetic (float64 partial sums below 2**53,
   Python integers across chunks): the sensitivity argument holds for the
   numbers actually computed.

Each part's parameters depend on public inputs and on the earlier parts'
released outputs only (sequential composition); the parts add up to epsilon
(PRIVACY.md rule 8) and the report states the split.  ``epsilon=inf`` releases the exact
moments (no clipping, no quantization; NOT private).

The released moments are in the scaled, clipped coordinates ``v``;
`PrivateMoments` maps them back to the design's units.  Rows beyond
the radius are scaled down, which biases the moments toward the centre (and
a clipped dummy's square is then below its sum); the noisy count of such
rows is published with the release.  Tests: ``tests/mechanisms/moments/test_moments.py``
(exactness at epsilon = inf, noise law, coverage) and
``tests/mechanisms/moments/test_moments_privacy.py`` (adversarial sensitivity search, audit,
split, refusals, neighbours).
"""

from __future__ import annotations

import ast
import itertools
import math
import os
import pathlib
import re
import warnings
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import partial
from typing import Any, ClassVar

import numpy as np
import pandas as pd
import patsy

from ...core.accountant import Accountant
from ...core.budget import split_epsilon
from ...core.errors import DPModelsError, NotPrivateWarning
from ...core.exact import MIN_EPSILON, discrete_laplace, discrete_laplace_variance
from ...core.keywords import checked_keywords
from ...core.report import MomentsReport, Release
from ...core.unbounded import refuse_unbounded
from ...data.clipping import CLIP_SHARE, OutsideCounter, clipping_axes
from ...data.clipping import split_label as clip_split_label
from ...data.columns import columns_of, dtype_of, nrows, unreadable_values_error
from ...data.counting import missing_error, undeclared_error
from ...data.engines import source_for
from ...data.validation import (
    check_dtypes,
    check_epsilon,
    check_release_arguments,
    check_row_count,
    check_used_columns,
)
from ...domain.axes import Domain, build_domain
from ...domain.formula import NO_NA as _NO_NA  # noqa: F401  (imported from here by the other releases)
from ...domain.formula import (
    FormulaVariables,
    PicklableNamespace,
    caller_namespace,
    formula_namespace,
    formula_variables,
    user_stacklevel,
)
from ...domain.formula import build_design as _design
from ...output.documents import SavedParts, float_out, floats_out
from ...output.saving import save_release
from ..pipeline import released_outside, run_release

__all__ = ["DesignSpace", "PrivateMoments", "release_moments", "design_space",
           "RADIUS_SHARE", "moments_sensitivity", "describe_axis", "published_frame"]

#: Shares of epsilon spent on the coordinates' scales and on the clipping radius.
SCALE_SHARE = 0.1
#: Squares ``I(x ** 2)`` of a design column are released centred at the midpoint
#: of the column's public range (`centred_squares()`) by the moments, Newton and
#: quantile-steps releases (read at release time; benchmarks/centred_squares.py
#: sets it to False for its comparison arm).
CENTRE_SQUARES = True
RADIUS_SHARE = 0.05
#: A coordinate's scale: the |u_j| that this fraction of the rows reaches.
SCALE_TAIL = 0.05
#: Scaled rows kept in memory between the passes (values), else recomputed.
_CACHE_VALUES = 30_000_000
#: The quantum g (units per 1 of a scaled value) is the power of 2 that puts
#: the radius R at about this many units: ``||k||_1 <= A ~ 2**18``, so a
#: chunk of 2**17 rows sums k k' exactly in float64.
QUANTUM_UNITS = 2**18
#: Bins of the scale and radius histograms: a geometric grid, 4 per octave,
#: over 8 octaves below the largest value (and a bin for everything below).
_GRID_BINS = 32
#: Weight of the sums against the products, per unit of A (see moments_sensitivity).
SUM_WEIGHT = 0.5
#: Bins of each coordinate's location histogram over its public range.
_LOCATION_BINS = 32
#: The radius may clip a fraction ``CLIP_ROWS * q**2 / (n epsilon)`` of the rows,
#: within [CLIP_MIN, CLIP_MAX]: the noise grows with R**2 / (n epsilon) and with
#: the number of entries, the clipping bias with the clipped fraction; shrinking
#: a whole row toward the centre keeps it near the regression plane, so the
#: balance lies at a few percent (docs/accuracy.md).  The cap is kept at 10%:
#: the bootstrap does not see the clipping bias, and at 25% the intervals of
#: benchmarks/validity.py's cont5 / cont10 at n = 2,000 under-covered.
CLIP_ROWS = 100.0
CLIP_MIN, CLIP_MAX = 1e-3, 0.1
#: The clipped share stays below CLIP_BIAS / sqrt(n) (see clip_fraction): on the
#: randhie data resampled to n = 2e5, clipping 3% of the rows moved coefficients
#: by up to 4.9 standard errors at epsilon 1 (coverage 0-8%) and 0.4% by up to 2.7
#: at epsilon 3; 0.1% by at most 0.7 (12 data sets each).
CLIP_BIAS = 0.5
#: ... or below CLIP_NOISE_BIAS q^2 / (n epsilon) where the noise dominates the
#: standard error (randhie at its own n = 20,190: 0.35% of the rows clipped at
#: epsilon 3 made intervals 4.5-7,000 times the non-private width).
CLIP_NOISE_BIAS = 6.0


def clip_fraction(n: int, epsilon: float, q: int) -> float:
    """Fraction of rows the radius may clip, from public inputs only:
    ``CLIP_ROWS q^2 / (n epsilon)`` (the noise's side of the trade), at most
    ``max(CLIP_BIAS / sqrt(n), CLIP_NOISE_BIAS q^2 / (n epsilon))`` (the
    bias's side: shrinking rows reweights them, which moves the estimate of a
    misspecified or skewed model by about the clipped share times a fixed
    amount, and that must stay small against the standard error, whose
    sampling part falls as ``1/sqrt(n)`` and whose noise part as
    ``q^2 / (n epsilon)``), within [CLIP_MIN, CLIP_MAX]."""
    n = max(n, 1)
    noise_side = q * q / (n * epsilon)
    share = min(CLIP_ROWS * noise_side,
                max(CLIP_BIAS / math.sqrt(n), CLIP_NOISE_BIAS * noise_side))
    return float(np.clip(share, CLIP_MIN, CLIP_MAX))


def _clip_dimension(space: DesignSpace) -> int:
    """Coordinates that drive the radius: the non-dummy ones, plus one per
    group of exclusive dummies and per other dummy."""
    in_groups = sum(len(g) for g in space.exclusive)
    return int((~space.dummy).sum()) + len(space.exclusive) + int(space.dummy.sum()) - in_groups
#: Grid points per continuous variable when the design's ranges are found.
_GRID = 257
#: Stateful patsy transforms: they memorize on the frame they see, which here is
#: the public grid, not the data, so a formula using them is refused.
_STATEFUL = ("center", "standardize", "scale", "bs", "cr", "cc", "te")


@dataclass(frozen=True, eq=False)
class DesignSpace:
    """The public design of a formula: patsy's column coding and each
    column's range, built from the domain only.

    Attributes
    ----------
    formula : str
    domain : Domain
    exog_names : tuple of str
        Design column names, as patsy / statsmodels name them.
    endog_name : str
    constant : ndarray of bool
        Columns of ``X`` that are constant over the domain (the intercept).
    constant_values : ndarray
        Their value (NaN for the others).
    lo, hi : ndarray
        Range of each non-constant column of ``X``, then of ``y``.
    centre, half : ndarray
        The scaling ``u = (x - centre) / half`` of those columns.
    exclusive : tuple of tuple of int
        Groups of 0/1 coordinates of which a row has at most one (the
        dummies of one factor, or of one interaction of factors): their
        products are structural zeros and are not released.
    transform : ndarray or None
        A public change of the design's columns made before scaling (None:
        none): ``z = A x`` per row, with ``A`` the identity but for each
        square ``I(x ** 2)`` of a column ``x`` of the design, which becomes
        ``(x - c)**2``, ``c`` the midpoint of ``x``'s public range
        (`centred_squares()`).  Coefficients on ``z`` are
        ``A' beta`` on the design's own columns.
    """

    formula: str
    domain: Domain
    exog_names: tuple
    endog_name: str
    constant: np.ndarray
    constant_values: np.ndarray
    lo: np.ndarray
    hi: np.ndarray
    centre: np.ndarray
    half: np.ndarray
    exclusive: tuple = ()
    infos: tuple = field(repr=False, default=())
    #: The formula's functions and modules (not the data's columns): what
    #: rebuilds ``infos`` when the space is unpickled (patsy's designs cannot
    #: be pickled, pydata/patsy#26).
    namespace: Mapping | None = field(repr=False, default=None)
    transform: np.ndarray | None = field(repr=False, default=None)

    def __getstate__(self) -> dict:
        state = dict(self.__dict__)
        state["infos"] = None if not self.infos else ("rebuild", self.infos[0] is not None)
        return state

    def __setstate__(self, state: dict) -> None:
        infos = state["infos"]
        if isinstance(infos, tuple) and infos and infos[0] == "rebuild":
            again = design_space(state["formula"], state["domain"], state["namespace"] or {},
                                 response=infos[1],
                                 centre_squares=state.get("transform") is not None)
            state = dict(state, infos=again.infos)
        elif infos is None:
            state = dict(state, infos=())
        self.__dict__.update(state)

    @property
    def q(self) -> int:
        """Number of scaled coordinates (non-constant columns of X, and y)."""
        return int(self.lo.size)

    @property
    def max_norm(self) -> float:
        """Largest L1 norm of a scaled row over the column ranges."""
        return float(np.sum(np.maximum(np.abs(self.lo - self.centre),
                                       np.abs(self.hi - self.centre)) / self.half))

    @property
    def released_pairs(self) -> tuple[np.ndarray, np.ndarray]:
        """Upper-triangle entries (i <= j) of ``sum v v'`` that are released:
        not the square of a 0/1 column (it equals the column's sum) and not
        the product of two exclusive dummies (always 0)."""
        i, j = np.triu_indices(self.q)
        keep = ~((i == j) & self.dummy[i])
        for group in self.exclusive:
            g = np.zeros(self.q, bool)
            g[list(group)] = True
            keep &= ~((i != j) & g[i] & g[j])
        return i[keep], j[keep]

    @property
    def dummy(self) -> np.ndarray:
        """Coordinates that are 0/1 columns (kept unscaled)."""
        return (self.centre == 0) & (self.half == 1) & (self.lo == 0) & (self.hi == 1)

    @property
    def has_response(self) -> bool:
        """True when the last coordinate is the response."""
        return self.infos[0] is not None


    def carried(self, flags: np.ndarray) -> np.ndarray:
        """Flags on the transformed columns (design order) carried to the
        design's own coefficients: ``beta = A' gamma``, so a coefficient is
        unknown where any ``gamma_j`` it is made of is (the column of a square
        centred at c carries ``-2 c`` times the square's, the intercept
        ``c**2``).  The flags themselves without a transform."""
        flags = np.asarray(flags, bool)
        if self.transform is None:
            return flags
        return flags | ((np.abs(self.transform) > 0) & flags[:, None]).any(axis=0)

    def design_rows(self, Z: np.ndarray) -> np.ndarray:
        """Rows on the release's columns ``z = A x`` back on the design's own
        (``x = A^-1 z``; the constant columns kept exactly at their value, as
        a least-squares fit reads them).  ``Z`` itself without a transform."""
        if self.transform is None:
            return Z
        X = np.linalg.solve(self.transform, np.asarray(Z, float).T).T
        X[:, self.constant] = self.constant_values[self.constant]
        return X

    def scaled(self, X: np.ndarray, y: np.ndarray | None = None) -> np.ndarray:
        """Rows of ``[X y]`` (design units; ``X`` alone for a space without
        response) -> clamped, scaled coordinates u (after `transform`)."""
        if self.transform is not None:
            X = X @ self.transform.T
        Z = np.column_stack([X[:, ~self.constant], y]) if y is not None else X[:, ~self.constant]
        # a per-row map onto the public ranges, in place (a fresh large temporary costs
        # page faults): a value a transform left undefined (off the grid the ranges
        # were read on) goes to the column's centre
        undefined = np.isnan(Z)
        if undefined.any():
            np.copyto(Z, np.broadcast_to(self.centre, Z.shape), where=undefined)
        np.clip(Z, self.lo, self.hi, out=Z)
        Z -= self.centre
        Z /= self.half
        return Z


def _names_in(code: str, names) -> list[str]:
    tree = ast.parse(code, mode="eval")
    found = [n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and n.id in names]
    found += [n.value for n in ast.walk(tree)
              if isinstance(n, ast.Constant) and isinstance(n.value, str) and n.value in names]
    return list(dict.fromkeys(found))


def _grid_codes(axis, k: int) -> np.ndarray:
    return np.arange(axis.size if axis.kind == "discrete" else k)


def _grid_column(axis, codes: np.ndarray, k: int):
    if axis.kind == "discrete":
        return axis.column(codes)
    lo, hi = axis.coord_bounds
    return axis.to_values(np.linspace(lo, hi, k)[codes])


def _grid_frame(formula: str, domain: Domain) -> pd.DataFrame:
    """Public frame on which the design's ranges are read: for each term, the
    product grid of its variables (others at their first grid value)."""
    desc = patsy.ModelDesc.from_formula(formula)
    names = domain.names
    groups = []
    for term in list(desc.lhs_termlist) + list(desc.rhs_termlist):
        used = []
        for factor in term.factors:
            used += [v for v in _names_in(factor.code, names) if v not in used]
        groups.append(tuple(used))
    groups = list(dict.fromkeys(groups)) or [()]
    frames = []
    for group in groups:
        cont = [v for v in group if domain.axis(v).kind == "continuous"]
        k = max(3, min(_GRID, int(round(20000 ** (1.0 / max(len(cont), 1))))))
        axes_codes = [_grid_codes(domain.axis(v), k) for v in group]
        combos = (np.array(list(itertools.product(*axes_codes)), dtype=np.int64)
                  if group else np.zeros((1, 0), np.int64))
        cols = {}
        for name in names:
            axis = domain.axis(name)
            codes = combos[:, group.index(name)] if name in group else np.zeros(len(combos),
                                                                                np.int64)
            cols[name] = _grid_column(axis, codes, k)
        frames.append(pd.DataFrame(cols))
    grid = pd.concat(frames, ignore_index=True)
    for name in names:  # concat loses nothing, but keep the published dtypes explicit
        axis = domain.axis(name)
        if axis.kind == "discrete" and axis.categories is not None:
            grid[name] = pd.Categorical(grid[name], categories=axis.categories)
    return grid


def stateful_transform(formula: str) -> tuple[str, str] | None:
    """``(transform, factor code)`` of the first stateful patsy transform
    (`_STATEFUL`) the formula uses, or None."""
    desc = patsy.ModelDesc.from_formula(formula)
    for term in list(desc.lhs_termlist) + list(desc.rhs_termlist):
        for factor in term.factors:
            used = [s for s in _STATEFUL if f"{s}(" in factor.code.replace(" ", "")]
            if used:
                return used[0], factor.code
    return None


def check_finite_design(formula: str, domain: Domain, namespace: Mapping[str, object]) -> None:
    """Refuse, from the public domain alone (before anything is released), a
    formula whose transforms are undefined (NaN) somewhere on the domain:
    patsy's NaN rows would later be dropped from the fit without a word
    (``np.log(x)`` of a variable whose bounds, or whose Unbounded cells, reach
    below 0).  Read on the public grid of `_grid_frame()` (the ends of
    every continuous variable included; an infinite value at a bound itself,
    ``np.log(x)`` at 0, is left to the release: its cells are inside)."""
    grid = _grid_frame(formula, domain)
    env = patsy.EvalEnvironment([dict(namespace)])
    try:
        with np.errstate(all="ignore"):
            patsy.dmatrices(formula, grid, eval_env=env, NA_action="raise")
    except patsy.PatsyError as exc:
        if "missing values" not in str(exc):
            return  # not this check's business: the release's own checks say what is wrong
        term = exc.origin.relevant_code() if getattr(exc, "origin", None) else "a term"
        raise DPModelsError(
            f"{term} is undefined (NaN) on part of the declared domain (e.g. the log of a "
            "value below 0, which the bounds allow; an Unbounded variable's cells reach far "
            "beyond the data): declare bounds on which every transform is defined (np.log(x) "
            "needs a lower bound of 0 or more), or transform the variable before the "
            "release") from None


def _check_full_rank(X: np.ndarray, names) -> None:
    """Refuse a design whose columns are linearly dependent over the whole
    public domain (``I(0*x)``, ``x`` beside ``I(2*x)``, two intercepts): every
    data set then gives a singular design, so no mechanism can estimate those
    coefficients.  Read on the public grid (a dependence on the domain holds
    on the grid), with columns scaled to a largest value of 1 and pivoted QR.
    """
    import scipy.linalg

    scale = np.max(np.abs(X), axis=0)
    zero = scale == 0
    Z = X / np.where(zero, 1.0, scale)
    _, R, piv = scipy.linalg.qr(Z, mode="economic", pivoting=True)
    d = np.abs(np.diag(R))
    rank = int(np.sum(d > d.max(initial=0.0) * 1e-10)) if d.size else 0
    dependent = sorted(set(piv[rank:].tolist()) | set(np.flatnonzero(zero).tolist()))
    if dependent:
        cols = [str(names[j]) for j in dependent]
        raise DPModelsError(
            f"the design column(s) {cols} are "
            + ("zero" if all(zero[j] for j in dependent) else
               "linear combinations of the other columns")
            + " over the whole declared domain: every data set gives a singular design, so "
            "their coefficients cannot be estimated; remove them from the formula (nothing "
            "was read or spent)")


#: A design column that is the square of another: patsy's name for ``I(x**2)``.
_SQUARE = re.compile(r"^I\((.+) \*\* 2\)$")


def centred_squares(names, X: np.ndarray) -> np.ndarray | None:
    """The public change of columns ``A`` (``z = A x`` per row) that centres
    each square of a design column at the midpoint of that column's public
    range: ``I(x ** 2)`` becomes ``(x - c)**2 = x**2 - 2 c x + c**2``, ``c``
    the midpoint of ``x`` over the public grid ``X``; None when the design
    has no such square (or no intercept column of 1s to carry ``c**2``).

    ``x`` and ``x**2`` are nearly collinear when ``x`` keeps one sign (an age,
    an experience), and noise on their cross moments then swamps the
    direction that tells them apart: a median regression of log wage on
    experience and its square (28,000 rows, epsilon 3) kept less than 10% of a
    change in either and flagged every coefficient; with the square centred at
    the midpoint of experience's bounds every interval was finite and covered
    (benchmarks/results/centred_squares.md).  A linear change of columns,
    undone exactly on the coefficients (`DesignSpace.transform`).

    Examples
    --------
    >>> import numpy as np
    >>> x = np.linspace(0, 60, 7)
    >>> X = np.column_stack([np.ones(7), x, x**2])
    >>> A = centred_squares(["Intercept", "x", "I(x ** 2)"], X)
    >>> A[2].tolist()
    [900.0, -60.0, 1.0]
    >>> (X @ A.T)[:, 2].tolist()[:4]
    [900.0, 400.0, 100.0, 0.0]
    """
    names = [str(v) for v in names]
    where = {v: i for i, v in enumerate(names)}
    ones = [i for i in range(X.shape[1]) if np.all(X[:, i] == 1.0)]
    if len(ones) != 1:
        return None
    A = np.eye(len(names))
    for s, name in enumerate(names):
        m = _SQUARE.match(name)
        j = where.get(m.group(1)) if m else None
        if j is None or j == s or np.all(X[:, j] == X[0, j]):
            continue
        c = (float(X[:, j].min()) + float(X[:, j].max())) / 2.0
        A[s, j], A[s, ones[0]] = -2.0 * c, c * c
    return None if np.array_equal(A, np.eye(len(names))) else A


def design_space(formula: str, domain: Domain, namespace: Mapping[str, object], *,
                 response: bool = True, centre_squares: bool = False) -> DesignSpace:
    """The public `DesignSpace` of ``formula`` over ``domain``.

    With ``response=False`` only the right-hand side is built (the caller
    codes the response itself, e.g. a binary one): the coordinates are then
    the non-constant columns of X alone.  With ``centre_squares``, each
    square ``I(x ** 2)`` of a column of the design is released as ``(x -
    c)**2`` (`centred_squares()`, the space's ``transform``).

    Raises `DPModelsError` for a formula this
    mechanism cannot serve (a stateful transform, a response with more than
    one column, a design with no non-constant column).
    """
    desc = patsy.ModelDesc.from_formula(formula)
    found = stateful_transform(formula)
    if found is not None:
        raise DPModelsError(
            f"method='moments' builds the design from public inputs only and cannot "
            f"evaluate the stateful transform {found[0]}() in {found[1]!r}: use "
            "method='histogram', or a fixed transform with public constants "
            "(e.g. I((x - 50) / 10))")
    grid = _grid_frame(formula, domain)
    env = patsy.EvalEnvironment([dict(namespace)])
    try:
        with np.errstate(all="ignore"):
            if response:
                y_dm, X_dm = patsy.dmatrices(formula, grid, eval_env=env, NA_action="raise")
            else:
                X_dm = patsy.dmatrix(patsy.ModelDesc([], desc.rhs_termlist), grid,
                                     eval_env=env, NA_action="raise")
                y_dm = np.zeros((len(grid), 1))
    except patsy.PatsyError as exc:
        raise DPModelsError(
            f"the formula gives non-finite design values inside the declared bounds ({exc}); "
            "use bounds where every transform is finite (e.g. np.log(x) needs a lower "
            "bound above 0)") from None
    if y_dm.shape[1] != 1:
        raise DPModelsError(
            f"method='moments' needs a numeric response; {formula.split('~')[0].strip()!r} "
            f"gives {y_dm.shape[1]} columns")
    X, y = np.asarray(X_dm, float), np.asarray(y_dm, float)[:, 0]
    if not (np.all(np.isfinite(X)) and np.all(np.isfinite(y))):  # e.g. np.log(0)
        raise DPModelsError(
            "the formula gives non-finite design values inside the declared bounds (e.g. "
            "np.log(x) with a lower bound of 0): use bounds where every transform is finite")
    _check_full_rank(X, X_dm.design_info.column_names)
    transform = (centred_squares(X_dm.design_info.column_names, X) if centre_squares
                 else None)
    squares = np.zeros(X.shape[1], bool)
    if transform is not None:
        squares = np.abs(transform - np.eye(X.shape[1])).sum(axis=1) > 0
        X = X @ transform.T
    xmin, xmax = X.min(axis=0), X.max(axis=0)
    xmin[squares] = 0.0  # (x - c)**2 reaches 0 at the midpoint, on the grid or not
    constant = xmin == xmax
    cols = np.column_stack([X[:, ~constant], y]) if response else X[:, ~constant]
    if cols.shape[1] == 0:
        raise DPModelsError("the formula's design has no non-constant column")
    lo, hi = cols.min(axis=0), cols.max(axis=0)
    if response and hi[-1] == lo[-1]:
        raise DPModelsError("the response is constant over its declared domain")
    dummy = np.all((cols == 0) | (cols == 1), axis=0)
    centre = np.where(dummy, 0.0, (lo + hi) / 2.0)
    half = np.where(dummy, 1.0, (hi - lo) / 2.0)
    coordinate = np.full(constant.size, -1)
    coordinate[~constant] = np.arange(int((~constant).sum()))
    exclusive = []
    info = X_dm.design_info
    for term, sl in info.term_slices.items():
        if not (term.factors and all(info.factor_infos[f].type == "categorical"
                                     for f in term.factors)):
            continue
        start = sl.start
        for sub in info.term_codings[term]:  # patsy codes a term as sub-terms, one after
            cols_ = range(start, start + sub.num_columns)  # the other; each is one-hot
            start += sub.num_columns
            idx = [int(coordinate[c]) for c in cols_
                   if coordinate[c] >= 0 and dummy[coordinate[c]]]
            # kept only if the public grid (every level combination of the term's
            # variables) confirms that a row has at most one of them
            if len(idx) > 1 and np.all(cols[:, idx].sum(axis=1) <= 1):
                exclusive.append(tuple(idx))
    return DesignSpace(
        exclusive=tuple(exclusive),
        formula=formula, domain=domain,
        exog_names=tuple(X_dm.design_info.column_names),
        endog_name=(str(y_dm.design_info.column_names[0]) if response
                    else formula.split("~", 1)[0].strip()),
        constant=constant, constant_values=np.where(constant, xmin, np.nan),
        lo=lo, hi=hi, centre=centre, half=half,
        infos=(y_dm.design_info if response else None, X_dm.design_info),
        transform=transform,
        namespace=PicklableNamespace({k: v for k, v in formula_namespace(formula, namespace).items()
                                      if k not in domain.names}))


class ScaledRows(Release):
    """What the moments, Newton and quantile-steps releases share: rows scaled
    as ``v = (u - offsets) / scales`` over a `DesignSpace`, and a report."""

    space: DesignSpace
    offsets: np.ndarray
    scales: np.ndarray

    @property
    def centre(self) -> np.ndarray:
        """Design value at ``v = 0``: ``x = centre + half * v`` (unclipped rows)."""
        return self.space.centre + self.space.half * self.offsets

    @property
    def half(self) -> np.ndarray:
        """Design units per unit of v."""
        return self.space.half * self.scales

    def save(self, path: str | os.PathLike) -> pathlib.Path:
        """Write the release to a JSON file (gzip if ``path`` ends in ``.gz``):
        its public domain and design, released values and privacy report,
        nothing else (no raw row).  Read it back with
        `dpmodels.load_release()`; see `dpmodels.front.saved`.

        Examples
        --------
        >>> import tempfile, numpy as np, pandas as pd, dpmodels as dpm
        >>> rng = np.random.default_rng(0)
        >>> df = pd.DataFrame({"x": rng.uniform(0, 1, 2000)})
        >>> df["y"] = 1 + 2 * df["x"] + rng.normal(0, 0.1, 2000)
        >>> mom = dpm.release_moments(df, formula="y ~ x", epsilon=1.0,
        ...                           bounds={"x": (0, 1), "y": (-1, 4)}, random_state=0)
        >>> back = dpm.load_release(mom.save(tempfile.mkdtemp() + "/m.json"))
        >>> bool((back.sums == mom.sums).all())
        True
        """
        return save_release(self, path)

    def __str__(self) -> str:
        """The one-line description, then the privacy report (multi-line)."""
        return repr(self) + "\n" + str(self.report)


@dataclass(frozen=True, eq=False)
class PrivateMoments(ScaledRows):
    """Differentially private first and second moments of a formula's design.

    Everything derived from it is post-processing.  Moments are in the
    scaled, clipped coordinates ``v`` of `DesignSpace` (non-constant
    columns of ``X``, then ``y``).

    Attributes
    ----------
    space : DesignSpace
    count : float
        Noisy number of rows with no missing value.
    sums : ndarray, (q,)
        Noisy ``sum v``.
    second : ndarray, (q, q)
        Noisy ``sum v v'`` (symmetric; each upper entry noised once).
    noise_var : tuple of float
        Variance of the noise on ``count``, on each entry of ``sums`` and of
        ``second`` (0 when not private).
    radius : float
        The clipping radius R of the scaled rows (L1).
    offsets, scales : ndarray, (q,)
        The private centre and scale of each coordinate: ``v = (u - offsets)
        / scales`` before clipping (0 and 1 for 0/1 columns and when not
        private).
    report : MomentsReport
    """

    #: The release's kind in a saved file (`dpmodels.front.saved`).
    saved_kind: ClassVar[str] = "moments"

    space: DesignSpace
    count: float
    sums: np.ndarray
    second: np.ndarray
    noise_var: tuple
    radius: float
    offsets: np.ndarray
    scales: np.ndarray
    report: MomentsReport


    def saved_parts(self) -> SavedParts:
        """What `save()` writes: the file's release type, the public domain,
        the report and the released values (read back by this folder's
        ``codec.read``)."""
        return SavedParts(self.saved_kind, self.space.domain, self.report, {
            "design": space_out(self.space, True), "count": float_out(self.count),
            "sums": floats_out(self.sums), "second": floats_out(self.second),
            "noise_var": floats_out(self.noise_var), "radius": float_out(self.radius),
            "offsets": floats_out(self.offsets), "scales": floats_out(self.scales)})

    def __repr__(self) -> str:
        return (f"PrivateMoments({self.space.formula!r}, epsilon={self.report.epsilon:g}, "
                f"q={self.space.q}, radius={self.radius:.3g})")


# ---- the raw pass ------------------------------------------------------------------------


def _to_pandas(data) -> pd.DataFrame:
    if isinstance(data, pd.DataFrame):
        return data
    if isinstance(data, Mapping):
        return pd.DataFrame({k: (v if hasattr(v, "__len__") else [v]) for k, v in data.items()})
    to_pandas = getattr(data, "to_pandas", None)  # a Polars DataFrame (in memory)
    if callable(to_pandas) and type(data).__module__.startswith("polars"):
        return to_pandas()
    # (a release that reads rows in memory only raises this: sample-and-aggregate)
    raise DPModelsError(
        f"this release reads in-memory rows (a pandas DataFrame, a mapping of arrays, a Polars "
        f"DataFrame), got {type(data).__name__}: convert it first (a Polars LazyFrame: "
        ".collect(); DuckDB: .df(); Spark: .toPandas()), or use method='histogram', which "
        "counts inside the engine")


def published_frame(data: pd.DataFrame, domain: Domain, missing: str):
    """The formula's variables as the public design sees them: discrete
    values matched to their declared levels (published dtype), continuous
    values clipped to their bounds; plus the mask of rows with a missing value."""
    cols, bad = {}, np.zeros(len(data), bool)
    for axis in domain.axes:
        values = data[axis.name]
        if axis.kind == "discrete":
            codes, miss, undeclared = axis.codes(values)
            if undeclared.any():
                raise undeclared_error(axis.name, pd.unique(np.asarray(values)[undeclared])[:5])
            cols[axis.name] = axis.column(np.where(miss, 0, codes))
        else:
            x = np.asarray(pd.to_numeric(pd.Series(values), errors="coerce"), dtype=float)
            miss = np.isnan(x)
            lo, hi = axis.bound_pair
            cols[axis.name] = np.clip(np.where(miss, lo, x), lo, hi)
        if miss.any() and missing == "raise":
            raise missing_error(axis.name)
        bad |= miss
    return pd.DataFrame(cols, index=pd.RangeIndex(len(data))), ~bad


def _scaled_rows(space: DesignSpace, frame: pd.DataFrame) -> np.ndarray:
    with np.errstate(all="ignore"):
        if not space.has_response:
            (X,) = _design([space.infos[1]], frame)
            return space.scaled(np.asarray(X, float))
        y, X = _design(list(space.infos), frame)
    return space.scaled(np.asarray(X, float), np.asarray(y, float)[:, 0])


def describe_axis(axis) -> str:
    """An axis's public declaration, without the histogram's bins."""
    if axis.kind == "continuous":
        lo, hi = axis.bounds
        return f"continuous, bounds [{lo:g}, {hi:g}]"
    return axis.describe()


def _chunks(nrows: int, size: int):
    for start in range(0, nrows, size):
        yield start, min(nrows, start + size)


def _norm_edges(top: float) -> np.ndarray:
    """A public grid: 0, then geometric edges (4 per octave) up to ``top``;
    the last bin holds everything at or above ``top``."""
    return np.concatenate([[0.0], top * 2.0 ** ((np.arange(1, _GRID_BINS + 1)
                                                 - _GRID_BINS) / 4.0)])


def quantum(radius: float) -> int:
    """The quantization g for a clipping radius (a power of 2, from the radius only)."""
    return int(2 ** max(0, math.floor(math.log2(QUANTUM_UNITS / radius))))


def row_units(space: DesignSpace, bound: np.ndarray) -> list[float]:
    """The bounds ``B_j`` on a quantized row's coordinates, one per free
    coordinate and one (the largest) per group of exclusive dummies, of which
    a row has at most one non-zero."""
    in_group = np.zeros(space.q, bool)
    for group in space.exclusive:
        in_group[list(group)] = True
    return ([float(b) for b, grouped in zip(bound, in_group) if not grouped]
            + [float(max(bound[list(group)])) for group in space.exclusive])


def largest_squares(units, budget: float) -> float:
    """The largest ``sum k_j**2`` with ``|k_j| <= units_j`` and ``sum |k_j| <=
    budget``: fill the largest units first."""
    left, Q = budget, 0.0
    for b in sorted(units, reverse=True):
        take = min(b, left)
        Q += take * take
        left -= take
        if left <= 0:
            break
    return Q


def moments_sensitivity(radius: float, space: DesignSpace, offsets: np.ndarray,
                        scales: np.ndarray) -> tuple[int, int, int, int]:
    """``(g, A, w_s, Delta)``: the quantum, the bound A on ``||k||_1``, the
    weight of the sums and the L1 sensitivity of the released integer vector;
    the count's weight is ``w_s * g``.

    A row's quantized coordinates (response included) satisfy ``|k_j| <= B_j
    = g (1 + |offset_j|) / scale_j + 1/2`` (the clamped range), ``||k||_1 <=
    g R + q/2`` (the ball) and, within a group of exclusive dummies, one
    ``k_j`` at most is not 0 (`row_units()`).  So ``||k||_1 <= A = min(g R
    + q/2, sum of the units)``, and the released products, a subset of
    ``{k_i k_j, i <= j}``, sum in absolute value to at most ``F = (A**2 + Q)
    / 2`` with ``Q`` the largest ``||k||_2**2`` under these constraints
    (`largest_squares()`).  (The response stays in the ball: leaving it
    out would make the shrinking depend on the covariates only, unbiased for
    least squares, but put its whole clamped range into the sensitivity:
    1.5-3x the error on skewed, mixed and wide-bounded responses in
    benchmarks/peers.py.  The clipping's pull is carried into the intervals
    instead, see `dpmodels.mechanisms.moments.model`.)
    Replace-one: ``Delta = max(2 (w_s A + F), w_n + w_s A + F)``.  Depends on
    public inputs and on the released radius, offsets and scales.
    """
    g = quantum(radius)
    units = row_units(space, g * (1.0 + np.abs(offsets)) / scales + 0.5)
    A = min(radius * g + space.q / 2.0, float(np.sum(units)))
    Q = largest_squares(units, A)
    F = (A * A + Q) / 2.0
    A_int = math.ceil(A * (1 + 1e-12))
    w_s = max(1, round(A_int * SUM_WEIGHT))
    w_n = w_s * g
    delta = max(2.0 * (w_s * A + F), w_n + w_s * A + F)
    return g, A_int, w_s, math.ceil(delta * (1 + 1e-12)) + 1


def _histogram(values: np.ndarray, edges: np.ndarray) -> np.ndarray:
    idx = np.searchsorted(edges, values, side="right") - 1
    return np.bincount(idx, minlength=edges.size)


def _location_scale(noisy: np.ndarray, edges: np.ndarray) -> tuple[float, float]:
    """Mean and half the 5%-95% range of a coordinate, read from its noisy
    histogram on ``edges`` (left edges of equal bins over [-1, 1]; negative
    noisy counts read as 0); post-processing.  The scale is at least one bin.
    The centre is the mean, not the median: the least-squares plane passes
    through the mean point, so rows shrunk toward it stay near the plane and
    the clipping does not move the intercept (benchmarks/validity.py,
    logskew: the median put the centre off the plane)."""
    width = edges[1] - edges[0]
    counts = np.maximum(noisy.astype(float), 0.0)
    total = counts.sum()
    if not total > 0:
        return 0.0, 1.0
    cum = np.cumsum(counts) / total

    def quantile(p):
        k = int(np.searchsorted(cum, p))
        k = min(k, edges.size - 1)
        before = cum[k - 1] if k else 0.0
        inside = (p - before) / max(cum[k] - before, 1e-12)
        return edges[k] + width * min(max(inside, 0.0), 1.0)

    lo, hi = quantile(SCALE_TAIL), quantile(1.0 - SCALE_TAIL)
    mean = float(np.dot(counts, edges + width / 2.0) / total)
    return mean, float(max((hi - lo) / 2.0, width))


def _tail_edge(noisy: np.ndarray, edges: np.ndarray, allowed: float) -> float:
    """The smallest edge (above 0) whose noisy count of values at or above it
    is at most ``allowed`` (post-processing of a noisy histogram)."""
    tail = np.cumsum(noisy[::-1])[::-1]
    ok = np.flatnonzero(tail[1:] <= allowed) + 1
    return float(edges[ok[0] if ok.size else edges.size - 1])


def unit_epsilon(epsilon: float, sensitivity_half: float) -> float:
    """The ``epsilon`` argument of `discrete_laplace()`
    (scale ``2/epsilon``) that makes a vector of L1 sensitivity
    ``2 * sensitivity_half`` epsilon-DP, rounded down (never above the budget)."""
    return float(np.nextafter(epsilon / sensitivity_half, 0.0))


class _RowPasses:
    """Iterates over the scaled rows u of the complete rows, chunk by chunk,
    with their 0/1 response ``y`` when one is given (`pairs()`); keeps
    them in memory when they are small enough."""

    def __init__(self, space: DesignSpace, published: pd.DataFrame, valid: np.ndarray,
                 chunk_rows: int, y: np.ndarray | None = None):
        self.space, self.published, self.valid, self.chunk_rows = space, published, valid, chunk_rows
        self.y = y
        self.outside = np.zeros(0, np.int64)  # set by _CountOutside (the first pass's)
        self.cache: list[tuple[np.ndarray, np.ndarray | None]] | None = (
            [] if valid.sum() * space.q <= _CACHE_VALUES else None)
        self.done = False

    def pairs(self, chunk: int | None = None):
        """``(U, y)`` chunks (``y`` None without a response)."""
        size = min(chunk or self.chunk_rows, self.chunk_rows)
        if self.done and self.cache is not None:
            for U, y in self.cache:
                for a in range(0, U.shape[0], size):
                    yield U[a:a + size], None if y is None else y[a:a + size]
            return
        for a, b in _chunks(len(self.published), size):
            rows = self.valid[a:b]
            if not rows.any():
                continue
            U = _scaled_rows(self.space, self.published.iloc[a:b][rows])
            y = None if self.y is None else self.y[a:b][rows]
            if self.cache is not None and not self.done:
                self.cache.append((U, y))
            yield U, y
        self.done = True

    def __call__(self, chunk: int | None = None):
        for U, _ in self.pairs(chunk):
            yield U


class _CountOutside:
    """``make_rows`` that also counts, on the raw frame, the rows outside each
    bounded variable's bounds (`dpmodels.data.clipping`) into ``rows.outside``: the
    first pass returns them with its own result, so no pass is added."""

    def __init__(self, make_rows, axes):
        self.make_rows, self.counter = make_rows, OutsideCounter(axes)

    def __call__(self, frame: pd.DataFrame):
        rows = self.make_rows(frame)
        rows.outside = self.counter(frame)
        return rows


def _checked_rows(make_rows, frame: pd.DataFrame, domain: Domain):
    try:
        return make_rows(frame)
    except TypeError:  # e.g. unhashable values (lists, dicts) in a discrete column
        raise unreadable_values_error(frame, domain) from None


def _published_rows(space, domain, missing, chunk_rows, frame: pd.DataFrame) -> _RowPasses:
    published, valid = published_frame(frame, domain, missing)
    return _RowPasses(space, published, valid, chunk_rows)


@dataclass(frozen=True)
class _PartitionStage:
    """A stage on one batch or partition of the rows (a pandas frame), run where
    the data live.  It holds the public design and the stage only, so it
    pickles to Dask's and Spark's workers."""

    make_rows: Any
    domain: Domain
    stage: Any

    def rows(self, frame: pd.DataFrame):
        """The rows a stage iterates, of one batch."""
        return _checked_rows(self.make_rows, frame.reset_index(drop=True), self.domain)

    def __call__(self, frame: pd.DataFrame):
        return self.stage(self.rows(frame))


class _KeepRows:
    """The first pass over an in-process engine's batches (Polars, DuckDB): runs
    the stage on each batch's rows and keeps those rows for the next passes
    while they hold at most ``_CACHE_VALUES`` values (the in-memory path's
    rule); beyond, it keeps none and every pass reads the engine again."""

    def __init__(self, task: _PartitionStage, q: int):
        self.task, self.q = task, q
        self.rows: list | None = []
        self.values = 0

    def __call__(self, frame: pd.DataFrame):
        rows = self.task.rows(frame)
        if self.rows is not None:
            self.values += int(np.count_nonzero(rows.valid)) * self.q
            if self.values <= _CACHE_VALUES:
                self.rows.append(rows)
            else:
                self.rows = None
        return self.task.stage(rows)


class Passes:
    """Runs a stage over the rows where they live.  In memory: one
    `_RowPasses` (scaled rows kept between the stages when small).  An
    engine's frame (Dask, Polars LazyFrame, DuckDB, Spark): the stage runs on
    every batch or partition (a pandas frame) where the data live
    (`dpmodels.data.engines.Source.map_partitions()`), and only its small result
    (histogram counts, the integer statistics as Python integers) comes back
    and is summed.  Every result is an exact integer sum, so the release is
    the same, bit for bit, however the rows are split."""

    def __init__(self, data, space: DesignSpace, domain: Domain, missing: str, chunk_rows: int,
                 rows=None, outside: tuple = ()):
        self.data, self.space, self.domain = data, space, domain
        self.missing, self.chunk_rows = missing, chunk_rows
        # frame -> the rows a stage iterates (``rows.outside``: the raw frame's counts of
        # values outside the bounds of the ``outside`` axes, dpmodels.data.clipping)
        self.make_rows = _CountOutside(
            rows or partial(_published_rows, space, domain, missing, chunk_rows), outside)
        self.source = source_for(data)
        self.rows_of = (None if self.source is not None
                        else _checked_rows(self.make_rows, _to_pandas(data), domain))
        self.kept: list | None = None  # an in-process engine's batches, when small

    def run(self, stage):
        """``stage(rows_of)`` over all rows; results (tuples of arrays or of
        Python numbers) are summed over the partitions."""
        if self.source is None:
            return stage(self.rows_of)
        names = list(self.domain.names)
        task = _PartitionStage(self.make_rows, self.domain, stage)
        if self.kept is not None:  # the rows of an earlier pass, kept in this process
            results = [stage(rows) for rows in self.kept]
        elif self.source.batches_here:  # the batches come to this process (Polars, DuckDB)
            keep = _KeepRows(task, self.space.q)
            results = self.source.map_partitions(names, keep)
            self.kept = keep.rows if keep.rows else None
        else:
            results = self.source.map_partitions(names, task)
        if not results:  # no batch at all: the stage on no rows
            results = [task(pd.DataFrame({nm: [] for nm in names}))]
        return tuple(_add(*col) for col in zip(*results)) if isinstance(results[0], tuple) \
            else _add(*results)

    def statistics(self, offsets, scales, radius) -> IntegerStatistics:
        """Part 3's exact statistics (summed over partitions)."""
        space, chunk_rows = self.space, self.chunk_rows  # (the stage pickles to workers)
        parts = self.run(lambda rows_of: (exact_statistics(
            rows_of, space, offsets, scales, radius, chunk_rows),))
        return parts[0]


def _add(*values):
    """Sum partition results: arrays, tuples of Python numbers, or statistics."""
    first = values[0]
    if isinstance(first, IntegerStatistics):
        vector = tuple(sum(col) for col in zip(*(v.vector for v in values)))
        return IntegerStatistics(first.space, first.g, first.w_s, first.delta, vector)
    if isinstance(first, np.ndarray):  # counts; object arrays of Python integers stay exact
        return np.sum(np.stack(values), axis=0) if len(values) > 1 else first
    return first if len(values) == 1 else sum(values[1:], first)


def _is_dask(data) -> bool:
    source = source_for(data)
    return source is not None and source.engine == "dask"


@dataclass(frozen=True, eq=False)
class PublicInputs:
    """What a release decides before it reads a value: the checked arguments,
    the formula's variables, the public domain and the public n."""

    data: object
    epsilon: float
    fv: FormulaVariables
    domain: Domain
    n: int
    n_source: str


def public_inputs(data, *, formula: str, epsilon, bounds, levels, n, random_state, accountant,
                  missing, namespace: Mapping[str, object], domain_check) -> PublicInputs:
    """Every check of a moments-type release (`release_moments()`,
    `dpmodels.mechanisms.newton.release_newton()`) that needs no value of the data:
    arguments, columns, dtypes (a schema), the public n, the domain (and the
    caller's ``domain_check``).  Raises before any budget or noise."""
    check_release_arguments(
        data, columns=None, formula=formula, epsilon=epsilon, bounds=bounds, levels=levels,
        bins="auto", threshold="enhanced", threshold_A=0.5, n=n, random_state=random_state,
        accountant=accountant, missing=missing, max_spurious_cells=1.0, namespace=namespace,
        domain_check=domain_check)
    epsilon = check_epsilon(epsilon)
    source = source_for(data)
    if type(data).__name__ == "DataFrame" and type(data).__module__.startswith("polars"):
        data, source = _to_pandas(data), None  # an eager Polars frame is in memory already
    cols = source.columns() if source is not None else columns_of(data)
    fv = formula_variables(formula, cols, namespace)
    if source is None:
        check_used_columns(data, fv.names)
    if n is None:
        n_rows = source.nrows() if source is not None else nrows(data)
        check_row_count(None, n_rows)
        n_public, n_source = n_rows, "rows handed in"
    else:
        n_public, n_source = int(n), "declared by the caller"
        if source is None:
            check_row_count(n, nrows(data))
    dtypes = (source.dtypes(fv.names) if source is not None
              else {nm: dtype_of(data, nm) for nm in fv.names})
    check_dtypes(dtypes)
    domain = build_domain(fv.names, dtypes, discrete=fv.discrete, bounds=bounds, levels=levels,
                          bins=2, n=max(n_public, 2), epsilon=epsilon, data_columns=cols,
                          scales=dict(fv.scales))

    refuse_unbounded(domain, "this release (not the histogram)")
    if domain_check is not None:
        domain_check(domain)
    return PublicInputs(data, epsilon, fv, domain, n_public, n_source)


@checked_keywords
def release_moments(
    data,
    *,
    formula: str,
    epsilon: float,
    bounds=None,
    levels=None,
    n: int | None = None,
    random_state=None,
    accountant: Accountant | None = None,
    missing: str = "drop",
    namespace: Mapping[str, object] | None = None,
    domain_check=None,
    chunk_rows: int = 1 << 18,
) -> PrivateMoments:
    """Release epsilon-DP moments of ``formula``'s design (see the module notes).

    Parameters
    ----------
    data : pandas.DataFrame, mapping of str to array-like, or polars.DataFrame
        Raw rows, read once, never modified.
    formula : str
        A patsy formula with a numeric response.
    epsilon : float
        Privacy parameter (> 0); ``inf`` releases exact moments (NOT private).
    bounds, levels :
        Public domain, as for `dpmodels.release()`.
    n : int, optional
        The public number of rows (default: rows handed in).
    random_state : None, int or Generator
        None draws from the OS's secure entropy.
    accountant : Accountant, optional
    missing : {"drop", "raise"}
    namespace : mapping, optional
        Names the formula may use besides columns.
    domain_check : callable, optional
        Called with the public domain before anything is read.
    chunk_rows : int
        Rows per chunk of the pass (memory only).

    Returns
    -------
    PrivateMoments

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> rng = np.random.default_rng(0)
    >>> df = pd.DataFrame({"x": rng.uniform(0, 1, 5000)})
    >>> df["y"] = 1 + 2 * df["x"] + rng.normal(0, 0.1, 5000)
    >>> mom = release_moments(df, formula="y ~ x", epsilon=1.0,
    ...                       bounds={"x": (0, 1), "y": (-1, 4)}, random_state=0)
    >>> mom.space.exog_names
    ('Intercept', 'x')
    >>> round(mom.count / 5000, 1)
    1.0
    """
    if namespace is None:
        namespace = caller_namespace(1)
    pub = public_inputs(data, formula=formula, epsilon=epsilon, bounds=bounds, levels=levels,
                        n=n, random_state=random_state, accountant=accountant,
                        missing=missing, namespace=namespace, domain_check=domain_check)
    data, epsilon, domain, names = pub.data, pub.epsilon, pub.domain, pub.fv.names
    n_public, n_source = pub.n, pub.n_source
    space = design_space(formula, domain, namespace, centre_squares=CENTRE_SQUARES)
    private = math.isfinite(epsilon)
    clip_axes = clipping_axes(domain)  # variables that can clip: their outside counts
    if private:  # the parts' exact sum is at most epsilon (dpmodels.core.budget)
        if clip_axes:
            eps_c, eps_s, eps_r, eps_m = split_epsilon(
                epsilon, [CLIP_SHARE, SCALE_SHARE, RADIUS_SHARE, None])
        else:
            eps_c = math.inf
            eps_s, eps_r, eps_m = split_epsilon(epsilon, [SCALE_SHARE, RADIUS_SHARE, None])
    else:
        eps_c = eps_s = eps_r = eps_m = math.inf
    if private and (min(eps_c, eps_s, eps_r, eps_m) < MIN_EPSILON or unit_epsilon(
            eps_m, moments_sensitivity(1.0, space, np.ones(space.q),
                                       np.full(space.q, 1.0 / _LOCATION_BINS))[3] / 2.0)
            < MIN_EPSILON):
        raise DPModelsError(f"epsilon={epsilon!r} is too small to split (parts below "
                            f"{MIN_EPSILON:g})")
    def announce() -> None:
        if not private:
            warnings.warn(
                "epsilon=inf: the moments are EXACT and NOT differentially private. Use them "
                "only to check results against the non-private fit.",
                NotPrivateWarning, stacklevel=user_stacklevel())

    # ---- the passes over the raw rows (all checks happen in the first) -----------------

    def read():
        passes = Passes(data, space, domain, missing, chunk_rows, outside=clip_axes)
        return passes, passes.run(lambda rows_of: (location_counts(rows_of, space)[1], rows_of.outside))

    def measure(first, bits, budget: str) -> PrivateMoments:
        passes, (loc_counts, outside_exact) = first
        q = space.q

        split: tuple[tuple[str, float], ...]
        if not private:
            # exact moments (NOT private), centred at the data's own means in a first pass:
            # raw second moments of values far from the centre of wide bounds would lose
            # the spread to rounding (NIST SmLs04: variation 1e-8 of the bounds' range)
            centring = passes.statistics(np.zeros(q), np.ones(q), math.inf)
            n0, s0, _ = centring.decode(centring.vector)
            offsets = np.where(space.dummy, 0.0, s0 / max(n0, 1.0))  # (0/1 columns as they are)
            scales = np.ones(q)
            stats = passes.statistics(offsets, scales, math.inf)
            count, sums, second = stats.decode(stats.vector)
            # and scaled to unit variance (exactly, by rescaling the moments): wide bounds
            # leave a column's spread tiny beside the others'
            var = np.diag(second) / max(count, 1.0) - (sums / max(count, 1.0)) ** 2
            scales = np.where(~space.dummy & (var > 0), np.sqrt(np.where(var > 0, var, 1.0)), 1.0)
            sums, second = sums / scales, second / np.outer(scales, scales)
            radius, clipped, noise_var = math.inf, 0.0, (0.0, 0.0, 0.0)
            mechanism, split = "none (exact moments)", ()
        else:
            # parts 1 and 2: a centre and a scale per coordinate (q_free histograms, one
            # count per row in each: L1 sensitivity 2 q_free); the radius (one histogram of
            # the rows' norms: L1 sensitivity 2)
            offsets, scales, radius, clipped, split = scaled_ball(
                passes, space, loc_counts, eps_s, eps_r, n_public, epsilon, bits)
            # part 3: the moments of the clipped, quantized rows
            stats = passes.statistics(offsets, scales, radius)
            eps_unit = unit_epsilon(eps_m, stats.delta / 2.0)
            noisy_vector = [t + int(z) for t, z in zip(
                stats.vector, discrete_laplace(bits, eps_unit, len(stats.vector)))]
            count, sums, second = stats.decode(noisy_vector)
            noise_var = stats.noise_var(eps_unit)
            mechanism = ("noisy moments of the design (rows centred and scaled privately, clipped "
                         "to an L1 ball of private radius, quantized), exact discrete Laplace")
            split = tuple(split) + (
                (f"moments (L1 sensitivity {stats.delta:.4g} in units of 1/{stats.g}**2)", eps_m),)
            if clip_axes:  # (a tuple of pairs, like the split above)
                split += ((clip_split_label(len(clip_axes)), eps_c),)
        outside = released_outside(outside_exact, clip_axes, n_public, eps_c, bits)
        report = MomentsReport(
            epsilon=epsilon, private=private, mechanism=mechanism, split=split, n=n_public,
            n_source=n_source, variables=tuple((a.name, describe_axis(a)) for a in domain.axes),
            columns=space.exog_names + (space.endog_name,), radius=radius, clipped_rows=clipped,
            noisy_rows=count, seeded=bits.seeded, budget=budget, outside_bounds=outside)
        return PrivateMoments(space, float(count), np.asarray(sums, float), second, noise_var,
                              radius, offsets, scales, report)

    return run_release(epsilon=epsilon, label=f"moments of {list(names)}", accountant=accountant,
                       random_state=random_state, read=read, measure=measure,
                       announce=announce)


# ---- the stages (each a function of the rows and of public or released inputs) ----------


def location_edges() -> np.ndarray:
    """Left edges of the location histograms: equal bins over [-1, 1]."""
    return np.linspace(-1.0, 1.0, _LOCATION_BINS + 1)[:-1]


def norm_edges_for(space: DesignSpace, offsets, scales) -> np.ndarray:
    """The public grid of the norm histogram, from the released centres and scales."""
    return _norm_edges(float(np.sum((1.0 + np.abs(offsets)) / scales)))


def location_counts(rows_of, space: DesignSpace) -> tuple[np.ndarray, np.ndarray]:
    """Exact histogram of each non-dummy coordinate u_j on equal bins over
    [-1, 1] (left edges), one row per coordinate."""
    edges = location_edges()
    free = np.flatnonzero(~space.dummy)
    k = edges.size
    counts = np.zeros((free.size, k), np.int64)
    offset = np.arange(free.size) * k
    for U in rows_of():
        # equal bins: the bin of u is floor((u + 1) k / 2), the last one closed (u = 1)
        codes = np.clip(np.floor((U[:, free] + 1.0) * (k / 2.0)), 0, k - 1).astype(np.int64)
        counts += np.bincount((codes + offset).ravel(), minlength=free.size * k).reshape(
            free.size, k)
    return edges, counts


def locations_from(noisy: np.ndarray, edges: np.ndarray, space: DesignSpace):
    """Offsets and scales of every coordinate from the noisy location
    histograms (post-processing); 0 and 1 for the dummies."""
    offsets, scales = np.zeros(space.q), np.ones(space.q)
    free = ~space.dummy
    if free.any():
        located = np.array([_location_scale(h, edges) for h in noisy])
        offsets[free], scales[free] = located[:, 0], located[:, 1]
    return offsets, scales


def norm_counts(rows_of, space: DesignSpace, offsets, scales):
    """Exact histogram of the rows' covariate L1 norms ``||(u - offsets) /
    scales||_1`` on a public geometric grid
    below the largest possible norm."""
    edges = norm_edges_for(space, offsets, scales)
    counts = np.zeros(edges.size, np.int64)
    for U in rows_of():
        counts += _histogram(np.abs((U - offsets) / scales).sum(axis=1), edges)
    return edges, counts


@dataclass(frozen=True)
class IntegerStatistics:
    """The exact integer vector of part 3, before noise, and how to read it.

    ``vector`` = ``(w_n N, w_s sum k, sum k_i k_j for the released pairs)``
    (Python integers; ``k = round(v g)``).  ``delta`` is its replace-one L1
    sensitivity (`moments_sensitivity()`).  Without quantization
    (``g = 0``, not private) the vector holds the exact float moments.
    """

    space: DesignSpace
    g: int
    w_s: int
    delta: int
    vector: tuple

    @property
    def w_n(self) -> int:
        return self.w_s * self.g

    def decode(self, vector) -> tuple[float, np.ndarray, np.ndarray]:
        """``(count, sums, second)`` in units of v from a (noisy) vector."""
        q = self.space.q
        i, j = self.space.released_pairs
        if self.g:
            count = vector[0] / self.w_n
            sums = np.array([v / (self.w_s * self.g) for v in vector[1:1 + q]])
            upper = np.array([v / self.g**2 for v in vector[1 + q:]])
        else:
            count, sums, upper = float(vector[0]), np.array(vector[1:1 + q]), np.array(
                vector[1 + q:])
        second = np.zeros((q, q))
        second[i, j] = upper
        second = second + np.triu(second, 1).T
        d = np.flatnonzero(self.space.dummy)
        second[d, d] = sums[d]  # v**2 = v for a 0/1 column
        return float(count), sums.astype(float), second

    def noise_var(self, eps_unit: float) -> tuple[float, float, float]:
        """Variance of the noise on count, on each sum and on each product, in v units."""
        var = discrete_laplace_variance(eps_unit)
        return var / self.w_n**2, var / (self.w_s * self.g) ** 2, var / self.g**4


def scaled_ball(passes: Passes, space: DesignSpace, loc_counts: np.ndarray, eps_s: float,
                eps_r: float, n_public: int, epsilon: float, bits, clip_scale: float = 1.0,
                extra_dimensions: int = 0):
    """The first two stages of the moments and Newton-type releases: private centres and
    scales of the design's coordinates (``eps_s``) and the L1 radius the
    scaled rows are clipped to (``eps_r``), as in `dpmodels.mechanisms.moments`.

    The allowed clipped share is `clip_fraction()` of the design's
    dimension plus ``extra_dimensions`` (the Newton steps count the intercept),
    times ``clip_scale``.

    Returns ``(offsets, scales, radius, clipped, split)``: ``clipped`` the
    noisy number of rows beyond the radius, ``split`` the report's entries."""
    free = ~space.dummy
    loc_edges = location_edges()
    noisy = loc_counts + discrete_laplace(
        bits, unit_epsilon(eps_s, max(int(free.sum()), 1)), loc_counts.size
    ).reshape(loc_counts.shape)
    offsets, scales = locations_from(noisy, loc_edges, space)
    norm_edges = norm_edges_for(space, offsets, scales)
    counts = passes.run(lambda rows: norm_counts(rows, space, offsets, scales)[1])
    noisy_norms = counts + discrete_laplace(bits, eps_r, counts.size)
    dimension = _clip_dimension(space) + extra_dimensions
    allowed = max(clip_scale * clip_fraction(n_public, epsilon, dimension) * n_public, 1.0)
    radius = max(_tail_edge(noisy_norms, norm_edges, allowed), 1.0)
    clipped = float(noisy_norms[norm_edges >= radius].sum())
    split = [(f"centres and scales (histograms of each u_j, L1 sensitivity "
              f"{2 * int(free.sum())})", eps_s),
             ("radius (norm histogram, L1 sensitivity 2)", eps_r)]
    return offsets, scales, radius, clipped, split


def clipped_rows(U: np.ndarray, offsets, scales, radius: float) -> np.ndarray:
    """The rows v: ``(u - offsets) / scales``, each shrunk (response included)
    into the L1 ball of ``radius``."""
    V = (U - offsets) / scales
    if math.isfinite(radius):
        norm = np.abs(V).sum(axis=1)
        with np.errstate(divide="ignore", invalid="ignore"):
            V *= np.where(norm > radius, radius / norm, 1.0)[:, None]
    return V


def exact_statistics(rows_of, space: DesignSpace, offsets, scales, radius: float,
                     chunk_rows: int = 1 << 18) -> IntegerStatistics:
    """Part 3 before noise: the exact integer statistics of the clipped,
    quantized rows (or, for ``radius = inf``, the exact float moments of the
    scaled rows: not private)."""
    q = space.q
    i, j = space.released_pairs
    if not math.isfinite(radius):
        rows, sums, cross = 0, np.zeros(q), np.zeros((q, q))
        for U in rows_of():
            V = clipped_rows(U, offsets, scales, radius)
            rows, sums, cross = rows + V.shape[0], sums + V.sum(axis=0), cross + V.T @ V
        return IntegerStatistics(space, 0, 1, 0,
                                 (float(rows),) + tuple(sums) + tuple(cross[i, j]))
    g, A, w_s, delta = moments_sensitivity(radius, space, offsets, scales)
    chunk = max(1, min(chunk_rows, (2**53 - 1) // (A * A)))  # float64 partial sums exact
    n, s, m = 0, [0] * q, [0] * i.size
    for U in rows_of(chunk):
        K = np.rint(clipped_rows(U, offsets, scales, radius) * g)
        n += K.shape[0]
        s = [a + int(b) for a, b in zip(s, K.sum(axis=0))]
        m = [a + int(b) for a, b in zip(m, (K.T @ K)[i, j])]
    vector = (w_s * g * n,) + tuple(w_s * v for v in s) + tuple(m)
    return IntegerStatistics(space, g, w_s, delta, vector)


def space_out(space: DesignSpace, response: bool) -> dict:
    """A formula release's design as its saved file holds it: the formula, its
    columns and the public ranges of its design (read back, and rebuilt on the
    saved domain, by `dpmodels.mechanisms.moments.codec`)."""
    return {"formula": space.formula, "response": response,
            "exog_names": list(space.exog_names), "endog_name": space.endog_name,
            "constant": [bool(c) for c in space.constant],
            "constant_values": floats_out(space.constant_values),
            "lo": floats_out(space.lo), "hi": floats_out(space.hi),
            "centre": floats_out(space.centre), "half": floats_out(space.half),
            "exclusive": [[int(i) for i in g] for g in space.exclusive]}



def moments_out(moments) -> dict:
    """The released (count, mean, covariance) a Newton-type release starts from,
    as its saved file holds them."""
    count, mean, cov = moments
    return {"count": float_out(count), "mean": floats_out(mean), "cov": floats_out(cov)}
