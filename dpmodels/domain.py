"""The public domain of a release: one axis per variable.

A continuous axis is ``bins`` equal-width bins inside caller-given bounds;
a discrete axis is a caller-declared level set (or the categories of a
pandas Categorical, or (False, True) for a bool column, which the caller
declares by choosing the dtype).  Nothing here ever looks at data values:
only at column dtypes and the caller's arguments (PRIVACY.md rule 2).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

import numpy as np
import pandas as pd

from .errors import DomainError, DomainTooLargeError

__all__ = ["Axis", "Domain", "auto_bins", "build_domain", "AUTO_BINS_RULE"]

#: Largest domain (number of cells) a cell id can address.
MAX_DOMAIN_CELLS = 2**63 - 1

#: ``bins="auto"``: K = round(AUTO_BINS_C * (n * epsilon / D) ** (2 / (d + 2 * AUTO_BINS_R)))
#: (see :func:`auto_bins`; measured in ``docs/accuracy.md``).
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


@dataclass(frozen=True)
class Axis:
    """One variable's public domain.

    Attributes
    ----------
    name : str
        The raw variable (a column of the data).
    kind : {"continuous", "discrete"}
    bounds : tuple of float or None
        ``(low, high)`` for a continuous variable.
    bins : int or None
        Number of equal-width bins for a continuous variable.
    levels : tuple or None
        The declared level set of a discrete variable, in declared order.
    declared_order : bool
        Keep the declared level order in design matrices (pandas
        Categorical input) instead of sorting the levels as patsy does.
    value_dtype : str or None
        Numeric dtype of the raw column, used for numeric representatives.
    """

    name: str
    kind: Literal["continuous", "discrete"]
    bounds: tuple[float, float] | None = None
    bins: int | None = None
    levels: tuple | None = None
    declared_order: bool = False
    value_dtype: str | None = None

    @property
    def size(self) -> int:
        return int(self.bins) if self.kind == "continuous" else len(self.levels)

    @property
    def edges(self) -> np.ndarray:
        """Bin edges (continuous axes only); they depend only on bounds and bins."""
        lo, hi = self.bounds
        return np.linspace(lo, hi, self.bins + 1)

    @property
    def width(self) -> float:
        lo, hi = self.bounds
        return (hi - lo) / self.bins

    def representatives(self) -> np.ndarray:
        """Value standing for each axis position: bin midpoints or levels."""
        if self.kind == "continuous":
            e = self.edges
            return (e[:-1] + e[1:]) / 2.0
        return _level_array(self.levels)

    def codes(self, values) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Axis position of each value.

        Returns ``(codes, missing, undeclared)``: int64 codes (-1 where
        missing or undeclared), a mask of missing values and a mask of
        values outside a discrete level set.  Continuous values outside the
        bounds are clipped to the edge bins (a per-row transformation).
        """
        if self.kind == "continuous":
            x = np.asarray(values, dtype=np.float64)
            missing = np.isnan(x)
            lo, hi = self.bounds
            scaled = (x - lo) * (self.bins / (hi - lo))
            with np.errstate(invalid="ignore"):
                idx = np.floor(np.clip(scaled, 0, self.bins - 1))
            idx[missing] = -1
            return idx.astype(np.int64), missing, np.zeros(x.shape, bool)
        index = pd.Index(list(self.levels))
        if isinstance(getattr(values, "dtype", None), pd.CategoricalDtype):
            cat = pd.Categorical(values)
            raw = np.asarray(cat.codes, dtype=np.int64)
            remap = index.get_indexer(cat.categories)
            missing = raw < 0
            codes = np.where(missing, -1, remap[np.maximum(raw, 0)])
        else:
            arr = np.asarray(values)
            missing = np.asarray(pd.isna(arr), dtype=bool)
            codes = index.get_indexer(arr).astype(np.int64)
        undeclared = (codes < 0) & ~missing
        return codes.astype(np.int64), missing, undeclared

    def column(self, codes: np.ndarray):
        """The cell-frame column holding the representative of each code."""
        reps = self.representatives()
        if self.kind == "continuous":
            return reps[codes]
        if _is_numeric_levels(self.levels):
            vals = reps[codes]
            if self.value_dtype is not None:
                vals = vals.astype(self.value_dtype)
            return vals
        order = list(self.levels) if self.declared_order else _sorted_levels(self.levels)
        pos = pd.Index(order).get_indexer(list(self.levels))
        return pd.Categorical.from_codes(pos[codes], categories=order)

    def describe(self) -> str:
        if self.kind == "continuous":
            lo, hi = self.bounds
            return f"continuous, bounds [{lo:g}, {hi:g}], {self.bins} bins"
        shown = ", ".join(map(str, self.levels[:6])) + (", ..." if len(self.levels) > 6 else "")
        return f"discrete, {len(self.levels)} levels ({shown})"


def _is_numeric_levels(levels: tuple) -> bool:
    return all(
        isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, (bool, np.bool_))
        for v in levels
    )


def _level_array(levels: tuple) -> np.ndarray:
    if _is_numeric_levels(levels):
        return np.asarray(levels)
    arr = np.empty(len(levels), dtype=object)
    arr[:] = list(levels)
    return arr


def _sorted_levels(levels: tuple) -> list:
    try:
        return sorted(levels)
    except TypeError:
        return list(levels)


@dataclass(frozen=True)
class Domain:
    """The product of the axes: ``m = prod(axis sizes)`` cells, each with a
    mixed-radix id (first axis most significant)."""

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
        return tuple(a.name for a in self.axes)

    @property
    def sizes(self) -> tuple[int, ...]:
        return tuple(a.size for a in self.axes)

    @property
    def size(self) -> int:
        """Number of cells m (an exact Python int)."""
        return math.prod(self.sizes)

    def axis(self, name: str) -> Axis:
        return self.axes[self._index[name]]

    @property
    def strides(self) -> np.ndarray:
        strides = np.ones(len(self.axes), dtype=np.uint64)
        for i in range(len(self.axes) - 2, -1, -1):
            strides[i] = strides[i + 1] * np.uint64(self.axes[i + 1].size)
        return strides

    def encode(self, codes: Sequence[np.ndarray]) -> np.ndarray:
        """Mixed-radix cell id (uint64) from per-axis codes."""
        ids = np.zeros(len(codes[0]), dtype=np.uint64)
        for c, s in zip(codes, self.strides):
            ids += c.astype(np.uint64) * s
        return ids

    def decode(self, ids: np.ndarray) -> list[np.ndarray]:
        """Per-axis codes (int64) of cell ids."""
        rest = np.asarray(ids, dtype=np.uint64)
        out = []
        for a, s in zip(self.axes, self.strides):
            out.append((rest // s).astype(np.int64))
            rest = rest % s
        return out

    def frame(self, ids: np.ndarray, names: Sequence[str] | None = None) -> pd.DataFrame:
        """One row per cell id, one column per variable holding its representative."""
        codes = self.decode(ids)
        names = self.names if names is None else tuple(names)
        return pd.DataFrame({nm: self.axis(nm).column(codes[self._index[nm]]) for nm in names})

    def describe(self) -> dict[str, str]:
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
    k = math.floor(AUTO_BINS_C * (n * epsilon / fixed_cells) ** power + 0.5)
    return int(min(max(k, AUTO_BINS_MIN), top))


def _as_levels(name: str, levels) -> tuple:
    if isinstance(levels, (str, bytes)) or not isinstance(levels, (Sequence, np.ndarray, pd.Index)):
        raise DomainError(
            f"levels[{name!r}] must be a list of the variable's possible values, "
            f"got {type(levels).__name__}"
        )
    lv = tuple(v.item() if isinstance(v, np.generic) else v for v in levels)
    if len(lv) < 1:
        raise DomainError(f"levels[{name!r}] is empty: declare every value {name!r} can take")
    if len(set(lv)) != len(lv):
        raise DomainError(f"levels[{name!r}] lists a value twice: {list(lv)}")
    return lv


def _as_bounds(name: str, bounds) -> tuple[float, float]:
    try:
        lo, hi = (float(b) for b in bounds)
    except (TypeError, ValueError):
        raise DomainError(f"bounds[{name!r}] must be a pair (low, high), got {bounds!r}") from None
    if not (math.isfinite(lo) and math.isfinite(hi) and lo < hi):
        raise DomainError(
            f"bounds[{name!r}] = ({lo}, {hi}) must be finite with low < high"
        )
    return lo, hi


def build_domain(
    variables: Sequence[str],
    dtypes: Mapping[str, object],
    *,
    discrete: set[str] | frozenset[str] = frozenset(),
    bounds: Mapping[str, tuple[float, float]] | None = None,
    levels: Mapping[str, Sequence] | None = None,
    bins: int | Mapping[str, int] | str = "auto",
    n: int,
    epsilon: float,
) -> Domain:
    """Build the public domain of ``variables`` from the caller's declarations.

    ``dtypes`` are the raw columns' dtypes (a schema, not data): a pandas
    Categorical's categories and a bool dtype declare a level set.
    ``discrete`` names variables the formula uses inside ``C()``.
    Raises :class:`DomainError` naming the variable when a bound or a level
    set is missing or invalid.
    """
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
            specs.append(dict(name=name, kind="discrete", levels=_as_levels(name, levels[name]),
                              declared_order=isinstance(dtype, pd.CategoricalDtype),
                              value_dtype=_numeric_dtype(dtype)))
        elif isinstance(dtype, pd.CategoricalDtype):
            specs.append(dict(name=name, kind="discrete", levels=_as_levels(name, list(dtype.categories)),
                              declared_order=True))
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
            specs.append(dict(name=name, kind="continuous", bounds=_as_bounds(name, bounds[name])))
        else:
            raise DomainError(
                f"{name!r} is not numeric (dtype {dtype}) and has no declared level set: pass "
                f"levels={{{name!r}: [...]}} listing every value it can take, or make it a "
                "pandas Categorical with the full set of categories"
            )

    explicit = {}
    if isinstance(bins, Mapping):
        explicit = dict(bins)
        default = "auto"
    elif isinstance(bins, str):
        if bins != "auto":
            raise DomainError(f'bins must be an int, a dict or "auto", got {bins!r}')
        default = "auto"
    else:
        default = bins
    for name, k in list(explicit.items()) + ([("bins", default)] if default != "auto" else []):
        if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
            raise DomainError(f"bins for {name!r} must be a positive int, got {k!r}")
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
            s["bins"] = int(explicit.get(s["name"], k_auto if s["name"] in auto_names else default))
        axes.append(Axis(**s))
    return Domain(tuple(axes))


def _numeric_dtype(dtype) -> str | None:
    if pd.api.types.is_numeric_dtype(dtype) and not pd.api.types.is_bool_dtype(dtype):
        return str(np.dtype(dtype)) if isinstance(dtype, np.dtype) else None
    return None
