"""The public domain of a release: one axis per variable.

A continuous axis is ``bins`` equal-width bins inside caller-given bounds;
a discrete axis is a caller-declared level set: a list, the categories of a
pandas Categorical when the caller says so (``levels={"x": "dtype"}``), the
categories of a schema type that declares them (a Polars Enum, see
`EnumType`), or (False, True) for a bool column.  Nothing here ever
looks at data values: only at column dtypes and the caller's arguments
(PRIVACY.md rule 2); and nothing published about an axis depends on the
column's dtype (rule 5; see `Axis`).
"""

from __future__ import annotations

import functools
import math
import numbers
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Literal

import numpy as np
import pandas as pd

from ..core.errors import DomainError, DomainTooLargeError, DomainTypeError, UnknownVariableError
from ..core.unbounded import Unbounded

__all__ = ["Axis", "Domain", "EnumType", "DTYPE_LEVELS", "auto_bins", "build_domain",
           "AUTO_BINS_RULE"]

#: Parameter-free binning scales of a continuous axis: name -> (T, T**-1, smallest valid
#: lower bound, whether the lower bound itself is allowed).  The parameterized "logistic"
#: scale of an `Unbounded` variable is not listed here: its
#: ``(T, T**-1)`` are the methods of the axis's ``unbounded`` declaration (see
#: `Axis.unbounded`).
SCALES: dict[str, tuple[Callable, Callable, float, bool]] = {
    "linear": (lambda x: x, lambda c: c, -math.inf, True),
    "log": (np.log, np.exp, 0.0, False),
    "log1p": (np.log1p, np.expm1, -1.0, False),
    "sqrt": (np.sqrt, np.square, 0.0, True),
}


def scale_fits(scale: str, bounds: tuple[float, float]) -> bool:
    """Whether ``T`` of ``scale`` is finite and increasing on ``bounds``."""
    _, _, low, closed = SCALES[scale]
    lo, hi = bounds
    ok = lo >= low if closed else lo > low
    if not ok:
        return False
    f = SCALES[scale][0]
    with np.errstate(all="ignore"):
        a, b = float(f(lo)), float(f(hi))
    return math.isfinite(a) and math.isfinite(b) and b > a

#: Largest domain (number of cells) a cell id can address.
MAX_DOMAIN_CELLS = 2**63 - 1
#: Most bins of one continuous axis: its edges and midpoints are arrays of
#: ``bins + 1`` floats (8 MiB at this limit), built whenever its cells are framed.
MAX_BINS = 2**20

#: ``bins="auto"``: K = round(AUTO_BINS_C * (n * epsilon / D) ** (2 / (d + 2 * AUTO_BINS_R)))
#: (see `auto_bins()`; measured in ``docs/accuracy.md``).
AUTO_BINS_C = 0.95
AUTO_BINS_R = 3
AUTO_BINS_MIN, AUTO_BINS_MAX = 2, 256

AUTO_BINS_RULE = (
    f"K = round({AUTO_BINS_C:g} * (n * epsilon / D) ** (2 / (d + {2 * AUTO_BINS_R}))) bins per "
    "continuous variable, d the number of continuous variables binned by the rule and D the "
    "number of cells of the other axes (discrete levels, explicitly binned variables), within "
    f"[{AUTO_BINS_MIN}, {AUTO_BINS_MAX}] and at most Lei's rate n**(2/(2+d)); with epsilon=inf "
    "the largest K with D * K**d <= n"
)


#: ``levels={"x": DTYPE_LEVELS}`` declares that the categories of column x's
#: pandas Categorical dtype are its public level set (see `build_domain()`).
DTYPE_LEVELS = "dtype"


@dataclass(frozen=True)
class EnumType:
    """The dtype of a column whose schema type declares its level set (a
    Polars Enum), as the engines report it to `build_domain()`.

    Unlike a pandas Categorical, whose categories ``read_csv(dtype="category")``
    or ``astype("category")`` build from the data, an Enum's categories are
    fixed by the schema before any row exists: they count as declared.

    Attributes
    ----------
    categories : tuple
        The Enum's categories, in their declared order.
    """

    categories: tuple

    def __str__(self) -> str:
        return f"Enum({list(self.categories)})"


@dataclass(frozen=True)
class Axis:
    """One variable's public domain.

    Attributes
    ----------
    name : str
        The raw variable (a column of the data).
    kind : {"continuous", "discrete"}
        Binned (continuous) or a declared level set (discrete).
    bounds : tuple of float or None
        ``(low, high)`` for a continuous variable.
    bins : int or None
        Number of equal-width bins for a continuous variable, equal-width on
        the axis's ``scale``.
    levels : tuple or None
        The declared level set of a discrete variable, in declared order.
    declared_order : bool
        The declaration itself fixes an order of the levels (``levels={"x":
        "dtype"}`` for a pandas Categorical, a Polars Enum, a
        ``pandas.CategoricalDtype`` given as the level set): non-numeric
        levels keep it in design matrices instead of being sorted.
    scale : {"linear", "log", "log1p", "sqrt", "logistic"}
        The scale a continuous axis is binned on: the bins are equal-width in
        ``coord = T(x)`` between ``T(low)`` and ``T(high)`` (values are first
        clipped to the bounds).  A formula that uses a variable only through
        ``np.log``, ``np.log1p`` or ``np.sqrt`` is binned on that scale
        (`dpmodels.domain.formula.formula_variables()`), so its bins are fine
        where a skewed variable's rows are.  Cell frames hold values on the
        variable's own scale: ``T**-1`` of the coordinates.
    unbounded : Unbounded or None
        Set for a variable declared ``bounds={"x": Unbounded(center, scale)}``
        (`dpmodels.core.unbounded`): ``scale`` is then ``"logistic"``,
        ``bounds`` is ``(-inf, inf)`` and the coordinates are
        ``T(x) = 1 / (1 + exp(-(x - center) / scale))`` in (0, 1); the edge
        bins reach to -inf and +inf, so no value is clipped.

    Notes
    -----
    **What is published about a discrete variable depends on its declared
    levels only** (never on the data), never on the dtype of the column they
    were counted from: pandas turns an int column with one missing value
    into float64, a neighbouring data set must not change a parameter name.
    The rule, applied by `column()` to every cell frame
    (``release.cells``, ``model.cells``, bootstrap replicates):

    * **numeric levels** (every level an int or a float, none a bool): a
      numpy column holding the levels themselves, ``int64`` when every
      declared level is an int, else ``float64``.  Patsy and statsmodels sort
      numbers, so the declared order does not matter (the smallest level is
      the reference of ``C(x)``);
    * **any other levels** (strings, bools, mixed): a pandas Categorical whose
      categories are the declared levels, **sorted** (as patsy sorts a string
      column, so that parameter names and the reference level match
      statsmodels' on the same column), or in the **declared order** when
      ``declared_order`` is set (as statsmodels keeps a Categorical's order);
      levels that cannot be sorted keep their declared order.

    A non-numeric response of ``dp_logit`` / ``dp_mnlogit`` is coded in the
    declared order in both cases (base level = first declared level).

    Values are matched to levels **by value** (``2 == 2.0``, a uint8 255 is
    not the level -1), never by casting the levels to the column's dtype;
    `build_domain()` refuses a level the column's dtype cannot hold.
    """

    name: str
    kind: Literal["continuous", "discrete"]
    bounds: tuple[float, float] | None = None
    bins: int | None = None
    levels: tuple | None = None
    declared_order: bool = False
    scale: str = "linear"
    unbounded: Unbounded | None = None

    def __post_init__(self):
        if self.unbounded is not None and (self.scale != "logistic" or self.bounds != (
                -math.inf, math.inf)):
            raise DomainError(f"the axis of {self.name!r} declared {self.unbounded} must have "
                              'scale="logistic" and bounds (-inf, inf)')
        if self.scale == "logistic" and self.unbounded is None:
            raise DomainError(f'the logistic scale of {self.name!r} needs its Unbounded '
                              "declaration (center and scale)")

    @property
    def bin_count(self) -> int:
        """``bins`` of a continuous axis (always set by `build_domain()`);
        raises `DomainTypeError` when it is not set."""
        if self.bins is None:
            raise DomainTypeError(f"the {self.kind} axis of {self.name!r} has no bins")
        return self.bins

    @property
    def bound_pair(self) -> tuple[float, float]:
        """``bounds`` of a continuous axis (always set for one); raises
        `DomainTypeError` when they are not set."""
        if self.bounds is None:
            raise DomainTypeError(f"the {self.kind} axis of {self.name!r} has no bounds")
        return self.bounds

    @property
    def level_set(self) -> tuple:
        """``levels`` of a discrete axis (always set for one); raises
        `DomainTypeError` when they are not set."""
        if self.levels is None:
            raise DomainTypeError(f"the {self.kind} axis of {self.name!r} has no levels")
        return self.levels

    @property
    def size(self) -> int:
        """The number of bins (continuous) or levels (discrete)."""
        return int(self.bin_count) if self.kind == "continuous" else len(self.level_set)

    def _maps(self):
        """``(T, T**-1)`` of the axis's (non-linear) scale."""
        if self.unbounded is not None:
            return self.unbounded.forward, self.unbounded.inverse
        return SCALES[self.scale][:2]

    @property
    def coord_bounds(self) -> tuple[float, float]:
        """``(T(low), T(high))``: the bounds on the axis's scale ((0, 1) for
        an Unbounded variable)."""
        lo, hi = self.bound_pair
        if self.scale == "linear":
            return lo, hi
        if self.unbounded is not None:
            return 0.0, 1.0
        f = SCALES[self.scale][0]
        return float(f(lo)), float(f(hi))

    @property
    def edges(self) -> np.ndarray:
        """Bin edges on the axis's scale (continuous axes only); they depend
        only on bounds, scale and bins."""
        lo, hi = self.coord_bounds
        return np.linspace(lo, hi, self.bin_count + 1)

    @property
    def width(self) -> float:
        """Bin width on the axis's scale."""
        lo, hi = self.coord_bounds
        return (hi - lo) / self.bin_count

    def coarsened(self, factor: int) -> Axis:
        """The axis with its bins merged in groups of ``factor``; a bin count
        that is not a multiple of ``factor`` is extended past the upper bound
        (on the axis's scale) so that every coarse bin is ``factor`` bins wide.

        The (0, 1) scale of an Unbounded axis cannot be extended: when its bin
        count is not a multiple of ``factor`` its ``ceil(bins / factor)``
        coarse bins are equal-width on (0, 1), so a coarse bin's nominal
        edges are off those of the fine bins it merges by less than one fine
        bin (the binning diagnostic's refit is then approximate)."""
        k = -(-self.bin_count // factor)
        if self.unbounded is not None:
            return replace(self, bins=k)
        lo, _ = self.coord_bounds
        top = lo + k * factor * self.width
        if self.scale == "linear":
            return replace(self, bins=k, bounds=(self.bound_pair[0], top))
        raw_hi = float(self._maps()[1](top))
        return replace(self, bins=k, bounds=(self.bound_pair[0], raw_hi))

    def to_coord(self, values) -> np.ndarray:
        """Values of the variable -> coordinates on the axis's scale (float64;
        clipped to the bounds first when the scale is not linear; NaN stays NaN)."""
        x = np.asarray(values, dtype=np.float64)
        if self.scale == "linear":
            return x
        lo, hi = self.bound_pair
        with np.errstate(invalid="ignore"):
            return self._maps()[0](np.clip(x, lo, hi))

    def to_values(self, coord) -> np.ndarray:
        """Coordinates on the axis's scale -> values of the variable (for an
        Unbounded axis the coordinates 0 and 1, the outer edges of its edge
        bins, map to -inf and +inf; every cell representative is inside)."""
        c = np.asarray(coord, dtype=np.float64)
        if self.scale == "linear":
            return c
        lo, hi = self.bound_pair
        return np.clip(self._maps()[1](c), lo, hi)

    @property
    def value_dtype(self) -> str | None:
        """The published dtype of a numeric axis: ``"float64"`` for a
        continuous one; for numeric levels ``"int64"`` if every declared
        level is an int, else ``"float64"``; None for other levels (a
        Categorical).  A function of the declaration only."""
        if self.kind == "continuous":
            return "float64"
        if not _is_numeric_levels(self.level_set):
            return None
        return "int64" if all(_is_int(v) for v in self.level_set) else "float64"

    @property
    def categories(self) -> list | None:
        """The categories of the published Categorical column, in order
        (None for continuous and numeric axes): see the class notes."""
        return None if _is_numeric_levels(self.level_set) else self.factor_levels

    @property
    def factor_levels(self) -> list | None:
        """Every declared level in the order a factor codes them (the
        categories' order; numeric levels too, sorted as patsy sorts them
        unless the declaration is ordered), None for a continuous axis."""
        if self.kind == "continuous":
            return None
        return [self.level_set[i] for i in self._category_order()]

    def _category_order(self) -> list[int]:
        """Declared positions of the levels in category order."""
        n = len(self.level_set)
        if self.declared_order:
            return list(range(n))
        try:
            return sorted(range(n), key=self.level_set.__getitem__)
        except TypeError:  # e.g. strings mixed with numbers: keep the declared order
            return list(range(n))

    def representatives(self) -> np.ndarray:
        """Value standing for each axis position: bin midpoints on the axis's
        scale (coordinates; `to_values()` maps them back), or levels
        (numeric levels in the published dtype, see `value_dtype`)."""
        if self.kind == "continuous":
            e = self.edges
            return (e[:-1] + e[1:]) / 2.0
        return _level_array(self.level_set)

    def codes(self, values) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Axis position of each value.

        Returns ``(codes, missing, undeclared)``: int64 codes (-1 where
        missing or undeclared), a mask of missing values and a mask of
        values outside a discrete level set.  Continuous values outside the
        bounds are clipped to the edge bins (a per-row transformation).
        Discrete values are matched to the levels by value (``2 == 2.0``; a
        bool is not a number, a number is not a string); the levels are
        never cast to the values' dtype.
        """
        if self.kind == "continuous":
            x = self.to_coord(values)
            missing = np.isnan(x)
            lo, hi = self.coord_bounds
            scaled = (x - lo) * (self.bin_count / (hi - lo))
            with np.errstate(invalid="ignore"):
                idx = np.floor(np.clip(scaled, 0, self.bin_count - 1))
            idx[missing] = -1
            return idx.astype(np.int64), missing, np.zeros(x.shape, bool)
        if isinstance(getattr(values, "dtype", None), pd.CategoricalDtype):
            cat = pd.Categorical(values)
            raw = np.asarray(cat.codes, dtype=np.int64)
            remap = _match_levels(self.level_set, cat.categories)
            missing = raw < 0
            codes = np.where(missing, -1, remap[np.maximum(raw, 0)])
        else:
            fast = _string_codes(self.level_set, values)
            if fast is not None:
                codes, missing = fast
            else:
                arr = np.asarray(values)
                missing = np.asarray(pd.isna(arr), dtype=bool)
                codes = _match_levels(self.level_set, arr)
        undeclared = (codes < 0) & ~missing
        return codes.astype(np.int64), missing, undeclared

    def column(self, codes: np.ndarray):
        """The cell-frame column holding the representative of each code.

        Continuous: the bin midpoints (float64).  Discrete: the levels, as
        a numpy column or a Categorical according to the rule of the class
        notes - a function of the declared levels only.
        """
        reps = self.representatives()
        if self.kind == "continuous":
            return self.to_values(reps[codes])
        if _is_numeric_levels(self.level_set):
            return reps[codes]
        order = self._category_order()
        position = np.empty(len(order), dtype=np.int64)
        position[order] = np.arange(len(order))
        return pd.Categorical.from_codes(position[codes], categories=_object_index(
            [self.level_set[i] for i in order]))

    def describe(self) -> str:
        """The public domain in words (as the privacy report lists it)."""
        if self.kind == "continuous":
            if self.unbounded is not None:
                u = self.unbounded
                return (f"continuous, unbounded, {self.bins} bins equal on the logistic scale "
                        f"1/(1+exp(-(x-{u.center:g})/{u.scale:g}))")
            lo, hi = self.bound_pair
            on = "" if self.scale == "linear" else f" equal on the {self.scale} scale"
            return f"continuous, bounds [{lo:g}, {hi:g}], {self.bins} bins{on}"
        levels = self.level_set
        shown = ", ".join(map(str, levels[:6])) + (", ..." if len(levels) > 6 else "")
        return f"discrete, {len(levels)} levels ({shown})"


def whole_number_bins(axis: Axis) -> bool:
    """True when a continuous axis is binned on its own scale into bins one or
    two units wide with edges on whole numbers.  A count (visits, children)
    then sits on its bin's left edge and every representative inside the bin
    (midpoint or density) places it up to a unit too high: a bias no
    coarsening check sees (merged bins keep the offset).  Centring the bins on
    the whole numbers (bounds ``(lo - 0.5, hi - 0.5)``) removes it.  Decided
    from the public domain only."""
    if axis.kind != "continuous" or axis.scale != "linear" or not axis.bins:
        return False
    lo, hi = axis.bound_pair
    width = (hi - lo) / axis.bins
    return float(lo).is_integer() and width in (1.0, 2.0)


def _is_int(v) -> bool:
    return isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_))


def _is_number(v) -> bool:
    return (isinstance(v, (numbers.Real, np.integer, np.floating))
            and not isinstance(v, (bool, np.bool_)))


def _is_numeric_levels(levels: Sequence) -> bool:
    return all(_is_number(v) for v in levels)


def _level_array(levels: Sequence) -> np.ndarray:
    """The levels as an array: int64 or float64 for numeric levels (see
    `Axis.value_dtype`), else object."""
    if _is_numeric_levels(levels):
        if all(_is_int(v) for v in levels):
            return np.array([int(v) for v in levels], dtype=np.int64)
        return np.array([float(v) for v in levels], dtype=np.float64)
    arr = np.empty(len(levels), dtype=object)
    arr[:] = list(levels)
    return arr


def _match_levels(levels: tuple, values) -> np.ndarray:
    """Position of each value among the levels (-1: none), by value.

    ``Index.get_indexer`` compares an int with a float by converting one to
    the other's type, which is inexact beyond 2**53 (the int level 2**53 + 1
    would match the float 2**53): matches with a level of such a magnitude
    are checked again with Python's exact int/float comparison (rare rows).
    """
    codes = np.asarray(_level_index(levels).get_indexer(values), dtype=np.int64)
    if _is_numeric_levels(levels):
        large = [j for j, v in enumerate(levels) if abs(float(v)) >= 2**53]
        if large:
            rows = np.flatnonzero(np.isin(codes, large))
            if rows.size:
                got = np.asarray(values, dtype=object)[rows]
                same = np.array([_item(v) == levels[codes[r]] for v, r in zip(got, rows)],
                                dtype=bool)
                codes[rows[~same]] = -1
    return codes


def _string_codes(levels: tuple, values) -> tuple[np.ndarray, np.ndarray] | None:
    """``(codes, missing)`` of a column of strings, matched once per distinct
    value (``pd.factorize``), or None when the column holds anything but
    strings and missing values.  The same answer as matching value by value:
    a distinct value that is a str stands only for values equal to it, which
    are strs too (a str equals no number or bool); anything else (a number,
    a bool, a missing value factorize does not flag) takes the general path."""
    dtype = getattr(values, "dtype", None)
    if not (isinstance(dtype, pd.StringDtype)
            or (isinstance(dtype, np.dtype) and dtype.kind == "O" and len(values) > 1000)):
        return None
    raw, uniques = pd.factorize(values, use_na_sentinel=True)
    uniques = np.asarray(uniques, dtype=object)
    if not all(isinstance(u, str) for u in uniques):
        return None
    raw = np.asarray(raw, dtype=np.int64)
    missing = raw < 0
    if not uniques.size:
        return np.full(raw.shape, -1, np.int64), missing
    remap = _match_levels(levels, uniques)
    return np.where(missing, -1, remap[np.maximum(raw, 0)]), missing


def _item(v):
    return v.item() if isinstance(v, np.generic) else v


def _level_index(levels: Sequence) -> pd.Index:
    """The index `Axis.codes()` matches values against, by value (built once
    per level set: a release of a few rows spent a ninth of its time on it)."""
    try:  # by each level's type and value: 1, 1.0 and True are equal, their indexes not
        return _level_index_of(tuple((type(v), v) for v in levels))
    except TypeError:  # an unhashable level: built each time
        return _build_level_index(levels)


@functools.lru_cache(maxsize=256)
def _level_index_of(typed: tuple) -> pd.Index:
    return _build_level_index(tuple(v for _, v in typed))


def _build_level_index(levels: Sequence) -> pd.Index:
    if _is_numeric_levels(levels):
        return pd.Index(_level_array(levels))
    return _object_index(list(levels))


def _object_index(values: list) -> pd.Index:
    """Categories for a Categorical: strings as pandas' default string dtype,
    bools as bool, anything else (mixed) as object - from the values only."""
    if all(isinstance(v, str) for v in values):
        return pd.Index(values)
    if all(isinstance(v, (bool, np.bool_)) for v in values):
        return pd.Index(values, dtype=bool)
    return pd.Index(_level_array(tuple(values)), dtype=object)


@dataclass(frozen=True)
class Domain:
    """The product of the axes: ``m = prod(axis sizes)`` cells, each with a
    mixed-radix id (first axis most significant).

    A release's public domain (``release.domain``): built from the declared
    bounds, levels and bins, never from the data.

    Attributes
    ----------
    axes : tuple of Axis
        One per released variable, in order.
    names : tuple of str
        The variables' names.
    sizes : tuple of int
        Each axis's number of bins or levels.
    size : int
        The number of cells m.
    """

    axes: tuple[Axis, ...]
    _index: dict = field(init=False, repr=False, compare=False)

    def __post_init__(self):
        object.__setattr__(self, "_index", {a.name: i for i, a in enumerate(self.axes)})
        if self.size > MAX_DOMAIN_CELLS:
            raise DomainTooLargeError(
                f"the domain has {self.size:.3e} cells, more than a 64-bit cell id can "
                f"address ({MAX_DOMAIN_CELLS:.3e}); use fewer bins or fewer variables"
            )

    @property
    def names(self) -> tuple[str, ...]:
        """The variables' names, in axis order."""
        return tuple(a.name for a in self.axes)

    @property
    def sizes(self) -> tuple[int, ...]:
        """Each axis's number of bins or levels."""
        return tuple(a.size for a in self.axes)

    @property
    def size(self) -> int:
        """Number of cells m (an exact Python int)."""
        return math.prod(self.sizes)

    def axis(self, name: str) -> Axis:
        """The `Axis` of the variable ``name``."""
        return self.axes[self._index[name]]

    @property
    def strides(self) -> np.ndarray:
        strides = np.ones(len(self.axes), dtype=np.uint64)
        for i in range(len(self.axes) - 2, -1, -1):
            strides[i] = strides[i + 1] * np.uint64(self.axes[i + 1].size)
        return strides

    def encode(self, codes: Sequence[np.ndarray]) -> np.ndarray:
        """Mixed-radix cell id (uint64) from per-axis codes.

        Parameters
        ----------
        codes : sequence of numpy.ndarray
            One array of bin or level codes per axis, in axis order.

        Returns
        -------
        numpy.ndarray
        """
        ids = np.zeros(len(codes[0]), dtype=np.uint64)
        for c, s in zip(codes, self.strides):
            ids += c.astype(np.uint64) * s
        return ids

    def decode(self, ids: np.ndarray) -> list[np.ndarray]:
        """Per-axis codes (int64) of cell ids.

        Parameters
        ----------
        ids : numpy.ndarray
            Cell ids (uint64).

        Returns
        -------
        list of numpy.ndarray
            One array of codes per axis.
        """
        rest = np.asarray(ids, dtype=np.uint64)
        out = []
        for _axis, s in zip(self.axes, self.strides):
            out.append((rest // s).astype(np.int64))
            rest = rest % s
        return out

    def frame(self, ids: np.ndarray, names: Sequence[str] | None = None) -> pd.DataFrame:
        """One row per cell id, one column per variable holding its representative.

        Parameters
        ----------
        ids : numpy.ndarray
            Cell ids (uint64).
        names : sequence of str, optional
            The variables to include (default: all).

        Returns
        -------
        pandas.DataFrame
        """
        codes = self.decode(ids)
        names = self.names if names is None else tuple(names)
        return pd.DataFrame({nm: self.axis(nm).column(codes[self._index[nm]]) for nm in names})

    def describe(self) -> dict[str, str]:
        """Each variable's public domain in words (as the privacy report lists it)."""
        return {a.name: a.describe() for a in self.axes}


def auto_bins(n: int, epsilon: float, n_continuous: int, fixed_cells: int) -> int:
    """Number of bins per continuous variable for ``bins="auto"``.

    A pure function of public inputs: the public row count ``n``, ``epsilon``,
    the number ``d`` of continuous variables binned by the rule, and the
    number ``D`` of cells contributed by the other axes (discrete levels and
    continuous variables with explicit bins).

    The rule::

        K = round(0.95 * (n * epsilon / D) ** (2 / (d + 6)))

    clipped to [2, 256] and to Lei's (2011) rate ``n ** (2 / (2 + d))``.
    With ``epsilon=inf`` (exact counts) the noise term is absent and K is the
    largest value within Lei's rate with ``D * K**d <= n``.

    Notes
    -----
    ``n * epsilon / D`` is the signal-to-noise scale of one group of cells:
    a combination of discrete levels holds about ``n / D`` rows, spread over
    ``K**d`` cells that each carry noise of scale ``2 / epsilon``, so the
    noise in the group's moments grows like ``K**(d/2) D / (n epsilon)``.
    Once the default ``representatives="density"`` has corrected the cells'
    within-cell means and covariances, the binning error falls like
    ``K**-r``; balancing the two gives ``K ~ (n epsilon / D) ** (2 / (d + 2r))``.
    ``r = 3`` and the constant 0.95 are fitted to the measured optimum K
    on the benchmarks of ``benchmarks/accuracy.py`` (OLS with d = 2 and
    d = 3, logit with d = 1, epsilon 0.1 to 10); see ``docs/accuracy.md``.
    The threshold's loss of small cells, which also grows with K, is part of
    what was measured.

    Examples
    --------
    The housing data of Lei §4.3 (two continuous variables, 4 x 6 discrete cells):

    >>> auto_bins(250_070, 1.0, 2, 24), auto_bins(250_070, 0.1, 2, 24)
    (10, 5)
    """
    if n_continuous == 0:
        return AUTO_BINS_MIN
    rate = max(AUTO_BINS_MIN, int(n ** (2.0 / (2.0 + n_continuous))))
    top = min(AUTO_BINS_MAX, rate)
    fixed_cells = max(int(fixed_cells), 1)
    if math.isinf(epsilon):
        best = AUTO_BINS_MIN
        for k in range(AUTO_BINS_MIN, top + 1):
            if fixed_cells * k**n_continuous > max(n, 1):
                break
            best = k
        return best
    power = 2.0 / (n_continuous + 2.0 * AUTO_BINS_R)
    # in logs: n * epsilon overflows for an epsilon near the largest float
    log_k = math.log(AUTO_BINS_C) + power * (math.log(max(n, 1)) + math.log(epsilon)
                                             - math.log(fixed_cells))
    if log_k > math.log(top):
        return int(top)
    k = math.floor(math.exp(log_k) + 0.5)
    return int(min(max(k, AUTO_BINS_MIN), top))


def _as_levels(name: str, levels) -> tuple:
    if isinstance(levels, (str, bytes)) or not isinstance(levels, (Sequence, np.ndarray, pd.Index)):
        raise DomainError(
            f"levels[{name!r}] must be a list of the variable's possible values, "
            f'"dtype" (the categories of its pandas Categorical), or a '
            f"pandas.CategoricalDtype; got {levels!r}"
        )
    lv = tuple(v.item() if isinstance(v, np.generic) else v for v in levels)
    if len(lv) < 1:
        raise DomainError(f"levels[{name!r}] is empty: declare every value {name!r} can take")
    for v in lv:
        if _is_missing(v):
            raise DomainError(
                f"levels[{name!r}] lists a missing value ({v!r}): a missing value is not a "
                "level (rows with one are dropped, or refused with missing='raise'); remove it"
            )
        if _is_int(v) and not -2**63 <= v < 2**63:
            raise DomainError(
                f"levels[{name!r}] lists {v}, outside the 64-bit integer range in which "
                f"integer levels are published: recode {name!r}"
            )
    try:
        distinct = len(set(lv))
    except TypeError:
        raise DomainError(
            f"levels[{name!r}] lists a value that cannot be a level (unhashable): "
            f"{list(lv)[:6]}"
        ) from None
    if distinct != len(lv):
        raise DomainError(f"levels[{name!r}] lists a value twice: {list(lv)}")
    return lv


def _is_missing(v) -> bool:
    if v is None or v is pd.NA or v is pd.NaT:
        return True
    return isinstance(v, (float, np.floating)) and math.isnan(v)


def _declared_levels(name: str, spec, dtype) -> tuple[tuple, bool]:
    """``(levels, declared_order)`` from ``levels[name]`` and the column's dtype.

    ``spec`` is a list of values (sorted in design matrices unless numeric;
    see `Axis`), ``"dtype"`` (the categories of the column's pandas
    Categorical dtype, or of its Polars Enum, in their order: the caller
    declares that those categories are public), or a
    ``pandas.CategoricalDtype`` (its categories, in their order).  A level
    the column's dtype cannot hold is refused (`_check_levels_fit()`).
    """
    if isinstance(spec, str) and spec == DTYPE_LEVELS:
        if isinstance(dtype, EnumType):
            return _as_levels(name, list(dtype.categories)), True
        if isinstance(dtype, pd.CategoricalDtype):
            if dtype.categories is None:
                raise DomainError(
                    f'levels[{name!r}] = "dtype", but the categories of {name!r} are unknown '
                    "(e.g. a Dask categorical with unknown categories): pass "
                    f"levels={{{name!r}: [...]}} listing every value it can take (finding the "
                    "categories from the data would leak them)"
                )
            return _as_levels(name, list(dtype.categories)), True
        if pd.api.types.is_bool_dtype(dtype):
            return (False, True), False
        raise DomainError(
            f'levels[{name!r}] = "dtype" takes the level set from the categories of a pandas '
            f"Categorical column, but {name!r} has dtype {dtype}: pass "
            f"levels={{{name!r}: [...]}} listing every value it can take"
        )
    if isinstance(spec, pd.CategoricalDtype):
        if spec.categories is None:
            raise DomainError(
                f"levels[{name!r}] is a pandas.CategoricalDtype without categories: give "
                "its categories, or a list of every value the variable can take"
            )
        lv, ordered = _as_levels(name, list(spec.categories)), True
    else:
        lv, ordered = _as_levels(name, spec), False
    _check_levels_fit(name, lv, dtype)
    return lv, ordered


def _numpy_of(dtype) -> np.dtype | None:
    """The numpy dtype behind a numpy, pandas masked or Arrow numeric/bool dtype."""
    if isinstance(dtype, np.dtype):
        return dtype
    inner = getattr(dtype, "numpy_dtype", None)
    try:
        return np.dtype(inner) if inner is not None else None
    except TypeError:
        return None


def _unholdable(level, dtype) -> str | None:
    """Why a column of ``dtype`` cannot hold the value ``level``, or None if it
    can (or if its dtype says nothing: object columns, pandas Categoricals,
    whose categories may have been built from the data)."""
    if isinstance(dtype, EnumType):
        if level not in dtype.categories:
            return f"it is not one of the categories of the column's {dtype}"
        return None
    if isinstance(dtype, pd.CategoricalDtype):
        return None
    if pd.api.types.is_bool_dtype(dtype):
        if not isinstance(level, (bool, np.bool_)):
            return "a bool column holds only False and True"
        return None
    if pd.api.types.is_string_dtype(dtype) and not pd.api.types.is_object_dtype(dtype):
        if not isinstance(level, str):
            return "a string column holds only strings"
        return None
    npd = _numpy_of(dtype)
    if npd is None or npd.kind not in "iuf":
        return None
    if not _is_number(level):
        return f"a numeric column holds only numbers, not {type(level).__name__} values"
    if npd.kind in "iu":
        if not (_is_int(level) or float(level).is_integer()):
            return "an integer column holds only whole numbers"
        info = np.iinfo(npd)
        if not info.min <= int(level) <= info.max:
            return f"{npd} holds the integers {info.min}..{info.max} only"
        return None
    with np.errstate(over="ignore"):
        stored = float(npd.type(level))
    if stored != level:
        return (f"{npd} cannot represent it exactly (it would be stored as {stored!r}), so "
                "no value could equal it; cast the column to float64")
    return None


def _check_levels_fit(name: str, levels: tuple, dtype) -> None:
    """Refuse, before anything is counted, a declared level the column's dtype
    cannot hold (e.g. -1 or 300 on a uint8 column, 0.5 on an integer column, a
    string on a numeric one): such a level would never match a value, and
    casting it to the column's dtype would merge or rename levels."""
    for v in levels:
        why = _unholdable(v, dtype)
        if why is not None:
            raise DomainError(
                f"levels[{name!r}] declares {v!r}, which column {name!r} (dtype {dtype}) cannot "
                f"hold: {why}. Declare the values {name!r} can take as the column stores them, "
                "or convert the column first"
            )


def _as_bounds(name: str, bounds) -> tuple[float, float]:
    """``bounds[name]`` as two floats ``lo < hi``, finite, whose width ``hi - lo``
    is a finite positive float64 (``(-1e308, 1e308)`` overflows it,
    ``(0, 1e-320)`` is subnormal: bin codes would be NaN and rows silently lost).

    Raises `DomainTypeError` for anything but a pair of real numbers
    (strings, bools, 3-tuples), `DomainError` for bad values.
    """
    pair = isinstance(bounds, (tuple, list)) or (
        isinstance(bounds, np.ndarray) and bounds.ndim == 1)
    if not pair or len(bounds) != 2 or not all(
            isinstance(b, numbers.Real) and not isinstance(b, (bool, np.bool_)) for b in bounds):
        raise DomainTypeError(
            f"bounds[{name!r}] must be a pair (low, high) of numbers, e.g. (0, 100), "
            f"got {bounds!r}"
        )
    lo, hi = float(bounds[0]), float(bounds[1])
    if not (math.isfinite(lo) and math.isfinite(hi) and lo < hi):
        raise DomainError(
            f"bounds[{name!r}] = ({lo}, {hi}) must be finite with low < high"
        )
    width = hi - lo
    if not (math.isfinite(width) and width >= np.finfo(np.float64).tiny):
        raise DomainError(
            f"bounds[{name!r}] = ({lo}, {hi}): the width high - low = {width} is not a finite, "
            "normal float64; declare narrower bounds or rescale the variable first"
        )
    return lo, hi


def _as_bins(name: str | None, k) -> int:
    """A bin count: an int in [1, `MAX_BINS`] (not a bool); ``name`` is
    the variable of ``bins[name]``, None for a single ``bins=k``."""
    what = "bins" if name is None else f"bins for {name!r}"
    if isinstance(k, (bool, np.bool_)) or not isinstance(k, (int, np.integer)):
        raise DomainTypeError(f"{what} must be a positive int, got {k!r}")
    if not 1 <= k <= MAX_BINS:
        raise DomainError(f"{what} must be a positive int of at most {MAX_BINS:,}, got {k!r}")
    return int(k)


def _check_edges(name: str, bounds: tuple[float, float], bins: int) -> None:
    """Refuse bounds and a bin count whose float64 bin edges or midpoints are
    not finite and strictly increasing, or whose scale factor
    ``bins / (hi - lo)`` (used to code values) is not finite and positive."""
    lo, hi = bounds
    scale = bins / (hi - lo)
    width = (hi - lo) / bins
    big = max(abs(lo), abs(hi))
    if (math.isfinite(scale) and scale > 0 and math.isfinite(width)
            and width > 64 * math.ulp(big) and math.isfinite(big + width)):
        # edges lo + i * width are computed with an absolute error of a few ulps of
        # the largest bound: steps this much wider keep edges and midpoints increasing
        return
    edges = np.linspace(lo, hi, bins + 1)
    with np.errstate(over="ignore", invalid="ignore"):
        mids = (edges[:-1] + edges[1:]) / 2.0
    if not (math.isfinite(scale) and scale > 0 and np.all(np.isfinite(mids))
            and np.all(np.diff(edges) > 0) and np.all(np.diff(mids) > 0)):
        raise DomainError(
            f"bounds[{name!r}] = ({lo}, {hi}) cut into {bins} bins give bin edges that are not "
            "distinct finite float64 numbers (the bins are too narrow for numbers of that "
            "size, or too wide); use fewer bins, other bounds, or rescale the variable first"
        )


def _check_unbounded_cells(axis: Axis) -> None:
    """Refuse an Unbounded axis whose bin edges, mapped back to the original
    scale, are not distinct increasing float64 numbers (a scale far smaller
    than the centre's float64 resolution would give every cell one value)."""
    e = axis.edges
    mids = (e[:-1] + e[1:]) / 2.0
    inner = axis.to_values(np.concatenate([e[1:-1], mids]))
    ok = np.all(np.isfinite(inner)) and np.all(np.diff(axis.to_values(mids)) > 0) and (
        axis.bin_count < 3 or np.all(np.diff(axis.to_values(e[1:-1])) > 0))
    if not ok:
        raise DomainError(
            f"bounds[{axis.name!r}] = {axis.unbounded} cut into {axis.bins} bins gives cells "
            "whose values on the original scale are not distinct float64 numbers (the scale "
            "is too small for a centre of that size); use a larger scale, fewer bins, or "
            "centre the variable first")


def _check_keys(variables, data_columns, **declarations) -> None:
    """Refuse a key of ``bounds``, ``levels`` or ``bins`` that is not a column
    of the data (a typo such as ``bins={"Size": 10}`` would otherwise be
    ignored).  Keys naming columns the formula does not use are allowed: one
    public codebook can serve several models."""
    import difflib

    columns = {c for c in data_columns if isinstance(c, str)}
    for arg, decl in declarations.items():
        if not isinstance(decl, Mapping):
            continue
        for key in decl:
            if isinstance(key, str) and key in columns:
                continue
            close = difflib.get_close_matches(str(key), sorted(columns), n=1, cutoff=0.6)
            lower = [c for c in columns if c.lower() == str(key).lower()]
            hint = f" (did you mean {(lower or close)[0]!r}?)" if (lower or close) else ""
            raise UnknownVariableError(
                f"{arg} has the key {key!r}, which is not a column of the data{hint}; the "
                f"release's variables are {list(variables)}: fix or remove the key"
            )


def build_domain(
    variables: Sequence[str],
    dtypes: Mapping[str, object],
    *,
    discrete: set[str] | frozenset[str] = frozenset(),
    bounds: Mapping[str, tuple[float, float] | Unbounded] | None = None,
    levels: Mapping[str, Sequence] | None = None,
    bins: int | Mapping[str, int] | str = "auto",
    n: int,
    epsilon: float,
    data_columns: Sequence[str] | None = None,
    scales: Mapping[str, str] | None = None,
) -> Domain:
    """Build the public domain of ``variables`` from the caller's declarations.

    ``scales`` (from the formula, `dpmodels.domain.formula.formula_variables()`)
    names the scale a continuous variable is binned on ("log", "log1p",
    "sqrt"); it is used where that transform is finite and increasing on the
    declared bounds, else the axis stays linear.  ``bounds[name]`` may be an
    `Unbounded` declaration: the axis is then
    binned on the logistic scale (``scale="logistic"``, bounds
    ``(-inf, inf)``); a variable the formula uses through a log, log1p or
    sqrt cannot be Unbounded (refused, naming it).

    ``dtypes`` are the raw columns' dtypes (a schema, not data): a bool
    dtype declares the level set (False, True) and an `EnumType` (a
    Polars Enum) its categories.  A pandas Categorical's categories count as
    declared only when the caller says so, with ``levels={name: "dtype"}``
    (``read_csv(dtype="category")`` and ``astype("category")`` build them
    from the data).  ``levels[name]`` is otherwise a list of values (or a
    ``pandas.CategoricalDtype``, whose category order is kept); a level the
    column's dtype cannot hold is refused.  ``discrete`` names variables the
    formula uses inside ``C()``.  Raises `DomainError` naming the
    variable when a bound or a level set is missing or invalid.

    ``data_columns``, when given (the data's column names), is checked to
    hold every key of ``bounds``, ``levels`` and ``bins``
    (`UnknownVariableError` otherwise).  Bounds are
    checked as in `_as_bounds()`, bin counts as in `_as_bins()`, and
    each continuous axis's float64 bin edges must be strictly increasing.
    """
    if data_columns is not None:
        _check_keys(variables, data_columns, bounds=bounds, levels=levels, bins=bins)
    bounds = dict(bounds or {})
    levels = dict(levels or {})
    specs: list[dict] = []
    for name in variables:
        dtype = dtypes[name]
        if name in levels:
            if name in bounds:
                raise DomainError(
                    f"{name!r} has both bounds and levels: give bounds for a continuous "
                    "variable or levels for a discrete one, not both"
                )
            lv, ordered = _declared_levels(name, levels[name], dtype)
            specs.append(dict(name=name, kind="discrete", levels=lv, declared_order=ordered))
        elif isinstance(dtype, EnumType):  # a schema type: its categories are declared
            specs.append(dict(name=name, kind="discrete",
                              levels=_as_levels(name, list(dtype.categories)), declared_order=True))
        elif isinstance(dtype, pd.CategoricalDtype):
            raise DomainError(
                f"{name!r} is a pandas Categorical, but its categories are not taken as its "
                "declared level set: read_csv(dtype='category') and astype('category') build "
                "them from the data, and a level set read from the data leaks who is in it. "
                f"If the categories were set from public knowledge, pass "
                f'levels={{{name!r}: "dtype"}}; otherwise pass levels={{{name!r}: [...]}} '
                "listing every value it can take"
            )
        elif pd.api.types.is_bool_dtype(dtype):
            specs.append(dict(name=name, kind="discrete", levels=(False, True)))
        elif name in discrete:
            raise DomainError(
                f"{name!r} is used as a factor (C({name})) but has no declared level set: "
                f"pass levels={{{name!r}: [...]}} listing every value it can take "
                "(levels must be public, never read from the data)"
            )
        elif pd.api.types.is_numeric_dtype(dtype):
            if name not in bounds:
                raise DomainError(
                    f"continuous variable {name!r} has no bounds: pass "
                    f"bounds={{{name!r}: (low, high)}} from public knowledge (never from the "
                    f"data), or levels={{{name!r}: [...]}} if it is discrete"
                )
            scale = (scales or {}).get(name, "linear")
            if isinstance(bounds[name], Unbounded):
                if scale != "linear":
                    raise DomainError(
                        f"{name!r} is declared {bounds[name]} and the formula uses it through "
                        f"np.{scale}: the logistic bins of {name!r} reach to -inf, where "
                        f"np.{scale} is undefined. Declare bounds={{{name!r}: (low, high)}} "
                        f"with np.{scale} finite on them, or add a column of "
                        f"np.{scale}({name}) to the data, declare that column Unbounded and "
                        "use it in the formula")
                specs.append(dict(name=name, kind="continuous", bounds=(-math.inf, math.inf),
                                  scale="logistic", unbounded=bounds[name]))
                continue
            b = _as_bounds(name, bounds[name])
            specs.append(dict(name=name, kind="continuous", bounds=b,
                              scale=scale if scale in SCALES and scale_fits(scale, b) else "linear"))
        else:
            raise DomainError(
                f"{name!r} is not numeric (dtype {dtype}) and has no declared level set: pass "
                f"levels={{{name!r}: [...]}} listing every value it can take (levels must be "
                "public, never read from the data)"
            )

    explicit: dict[str, int] = {}
    default: int | str
    if isinstance(bins, Mapping):
        explicit = dict(bins)
        default = "auto"
    elif isinstance(bins, str):
        if bins != "auto":
            raise DomainTypeError(f'bins must be an int, a dict or "auto", got {bins!r}')
        default = "auto"
    else:
        default = bins
    checked: list[tuple[str | None, int | str]] = list(explicit.items())
    for key, k in checked + ([(None, default)] if default != "auto" else []):
        _as_bins(key, k)
    fixed = 1
    auto_names = []
    for s in specs:
        if s["kind"] == "discrete":
            fixed *= len(s["levels"])
        elif s["name"] in explicit:
            fixed *= int(explicit[s["name"]])
        elif default != "auto":
            fixed *= int(default)
        else:
            auto_names.append(s["name"])
    k_auto = auto_bins(n, epsilon, len(auto_names), fixed) if auto_names else None
    axes = []
    for s in specs:
        if s["kind"] == "continuous":
            fallback = default
            if s["name"] in auto_names:
                assert k_auto is not None  # computed whenever auto_names is not empty
                fallback = k_auto
            s["bins"] = int(explicit.get(s["name"], fallback))
            _check_edges(s["name"], Axis(**s).coord_bounds, s["bins"])
            if s.get("unbounded") is not None:
                _check_unbounded_cells(Axis(**s))
        axes.append(Axis(**s))
    return Domain(tuple(axes))

