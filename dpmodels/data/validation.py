"""Checks of the caller's arguments, made before anything is spent.

`dpmodels.release()` (and through it every dp_* model) runs these checks
before the accountant is checked or charged, before any row is read and
before any noise is drawn.  They look at public inputs only: the arguments,
the data's type, its column labels and schema, and its row count - never at
a row's values.  Each raises a `DPModelsError` that
names the argument or variable and says what to do; an argument of the wrong
type raises a `DPModelsTypeError` (also a
`TypeError`).

The rules
---------
* ``random_state``: None, an int >= 0 (not a bool) or a numpy Generator
  (`dpmodels.core.randomness.check_random_state()`).
* ``epsilon``: a real number (not a bool, not a string); its value is
  checked by `dpmodels.mechanisms.histogram.check_epsilon()`.
* ``threshold``: "enhanced", "auto", "zero", None, or a finite real number
  whose integer cut ``ceil(threshold)`` fits in int64; ``threshold_A``: a
  finite real number > 0 (checked even when the rule does not use it).
* ``max_spurious_cells``: a finite real number > 0.  ``inf`` is refused: the
  limit is the only bound on the memory of a release (the spurious cells a
  thresholded release draws, the whole domain a signed ``threshold=None``
  release allocates), so it must be a number.
* ``n``: None or an int in [1, 2**63 - 1].  A declared n that differs from
  the number of rows handed in by more than a factor
  `N_MISMATCH_FACTOR` (2) gives a `ReleaseWarning`
  (in-memory data only: a lazy engine would need an extra counting query).
  The warning compares two numbers the data holder sees before the release
  and changes nothing that is published.  Zero rows handed in is an error
  (a release of an empty data set is pure noise).
* ``bounds``: a dict of column -> (low, high), two finite real numbers with
  a finite positive float64 width (`dpmodels.domain.axes._as_bounds()`), or
  an `Unbounded` declaration;
  ``levels``: a dict of column -> list of hashable values without missing
  values or duplicates, ``"dtype"`` or a ``pandas.CategoricalDtype``;
  ``bins``: "auto", an int in [1, `MAX_BINS`] or a
  dict of column -> such an int.  Every key of the three must be a column of
  the data (checked in `dpmodels.domain.axes.build_domain()`): keys of
  columns the formula does not use are allowed, so that one public codebook
  serves several models.
* ``data``: a pandas DataFrame (flat string column labels; the variables
  used must each be one column), a mapping of str to 1-d array-like, or an
  engine's frame; ``columns``: a str or a list of str; ``formula``: a str.
* ``accountant``: None or an `Accountant`; ``missing``:
  "drop" or "raise"; ``namespace``: None or a mapping; ``domain_check``:
  None or a callable.
* Formulas of dp_* models (`check_formula_transforms()`): patsy's
  ``center``, ``standardize`` and ``scale`` are evaluated on the weighted
  release (see `dpmodels.models.base`); spline bases whose knots or
  bounds patsy would compute from the data (``bs`` without ``knots=``,
  ``lower_bound=`` and ``upper_bound=``; ``cr``, ``cc``, ``te``) and other
  stateful transforms are refused, since they would be computed from the
  released cells' representative points rather than the rows.
"""

from __future__ import annotations

import ast
import math
import numbers
import warnings
from collections import Counter
from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from ..core.accountant import Accountant
from ..core.errors import (
    DomainError,
    DomainTooLargeError,
    DomainTypeError,
    DPModelsError,
    DPModelsTypeError,
    ReleaseWarning,
)
from ..core.exact import MIN_EPSILON
from ..core.keywords import suggestion
from ..core.randomness import check_random_state as rule
from ..core.report import Release
from ..core.unbounded import Unbounded
from ..domain.axes import DTYPE_LEVELS, _as_bins, _as_bounds, _as_levels
from ..domain.formula import _factor_codes, user_stacklevel
from .engines import source_for

__all__ = [
    "N_MISMATCH_FACTOR",
    "check_release_arguments",
    "check_random_state",
    "check_epsilon",
    "check_used_columns",
    "check_dtypes",
    "check_row_count",
    "check_eval_env",
    "check_choice",
    "check_formula_transforms",
    "check_noise_cells",
    "MAX_NOISE_CELLS",
]

#: Largest int64: integer cuts and the public n must fit in it.
INT64_MAX = 2**63 - 1
#: A declared ``n`` more than this factor away from the rows handed in warns.
N_MISMATCH_FACTOR = 2.0

_THRESHOLD_RULES = ("enhanced", "auto", "zero")
_MISSING_RULES = ("drop", "raise")
#: patsy's stateful transforms that dp_* models evaluate on the weighted release.
WEIGHTED_TRANSFORMS = ("center", "standardize", "scale")
#: Keywords that make patsy's ``bs`` a fixed function of public constants.
_BS_PUBLIC_KEYWORDS = ("knots", "lower_bound", "upper_bound")


def _is_real(value) -> bool:
    return isinstance(value, numbers.Real) and not isinstance(value, (bool, np.bool_))


def _is_int(value) -> bool:
    return isinstance(value, numbers.Integral) and not isinstance(value, (bool, np.bool_))


def _kind(value) -> str:
    return type(value).__name__


# ---- one argument at a time --------------------------------------------------------


def check_random_state(random_state) -> None:
    """``random_state``: None, an int seed >= 0 (not a bool), a numpy Generator
    (or a `dpmodels.core.randomness.RandomBits` source): the rule of
    `dpmodels.core.randomness.check_random_state()`, raised as a dpmodels error."""
    try:
        rule(random_state)
    except DPModelsError:
        raise
    except TypeError as exc:
        raise DPModelsTypeError(f"{exc} ({_kind(random_state)})") from None
    except ValueError as exc:
        raise DPModelsError(str(exc)) from None


def check_epsilon(epsilon) -> float:
    """``epsilon`` as a float, or a DPModelsError (a ValueError) saying what is wrong."""
    if epsilon is None:
        raise DPModelsError("epsilon is required for a release from raw data (e.g. epsilon=1.0)")
    if isinstance(epsilon, bool) or not isinstance(epsilon, numbers.Real):
        raise DPModelsError(f"epsilon must be a positive number, got {epsilon!r}")
    epsilon = float(epsilon)
    if math.isnan(epsilon) or epsilon <= 0:
        raise DPModelsError(f"epsilon must be > 0 (smaller is more private), got {epsilon}")
    if epsilon < MIN_EPSILON:
        raise DPModelsError(
            f"epsilon={epsilon:g} is below {MIN_EPSILON:g}: its noise (scale 2/epsilon = "
            f"{2.0 / epsilon:.3g}) cannot be held exactly in 64-bit counts with the certainty "
            "the guarantee needs. Such an epsilon releases nothing useful: use a larger one"
        )
    return epsilon


def _check_epsilon_type(epsilon) -> None:
    if epsilon is None:
        raise DPModelsError("epsilon is required for a release from raw data (e.g. epsilon=1.0)")
    if not _is_real(epsilon):
        raise DPModelsTypeError(
            f"epsilon must be a positive number (e.g. epsilon=1.0), got {epsilon!r} "
            f"({_kind(epsilon)})"
        )


def check_choice(argument: str, value, choices: Sequence[str]) -> str:
    """``value`` must be one of the strings ``choices``; returns it."""
    if not isinstance(value, str):
        raise DPModelsTypeError(
            f"{argument} must be one of {list(choices)}, got {value!r} ({_kind(value)})")
    if value not in choices:
        close = suggestion(value, choices)
        hint = f" (did you mean {close!r}?)" if close else ""
        raise DPModelsError(f"{argument} must be one of {list(choices)}, got {value!r}{hint}")
    return value


def _check_threshold(threshold) -> None:
    what = '"enhanced", "auto", "zero", a finite number or None'
    if threshold is None:
        return
    if isinstance(threshold, str):
        if threshold not in _THRESHOLD_RULES:
            raise DPModelsError(f"threshold must be {what}, got {threshold!r}")
        return
    if not _is_real(threshold):
        raise DPModelsTypeError(f"threshold must be {what}, got {threshold!r} ({_kind(threshold)})")
    if not math.isfinite(threshold):
        raise DPModelsError(f"threshold must be {what}, got {threshold!r}")
    if abs(math.ceil(threshold)) > INT64_MAX:
        raise DPModelsError(
            f"threshold={threshold!r}: its integer cut does not fit in a 64-bit integer; "
            "use a threshold of magnitude below 9.2e18"
        )


def _check_positive_finite(argument: str, value, hint: str) -> None:
    if not _is_real(value):
        raise DPModelsTypeError(f"{argument} must be a number > 0, got {value!r} ({_kind(value)})")
    if not (math.isfinite(value) and value > 0):
        raise DPModelsError(f"{argument} must be a finite number > 0, got {value!r}: {hint}")


def _check_n(n) -> None:
    if n is None:
        return
    if not _is_int(n):
        raise DPModelsTypeError(
            f"n (the public row count) must be a positive int, got {n!r} ({_kind(n)})")
    if not 1 <= n <= INT64_MAX:
        raise DPModelsError(
            f"n (the public row count) must be a positive int of at most 2**63 - 1, got {n!r}")


def _check_accountant(accountant) -> None:
    if accountant is not None and not isinstance(accountant, Accountant):
        raise DPModelsTypeError(
            f"accountant must be a dpmodels.Accountant or None, got {_kind(accountant)}: "
            "create one with dpmodels.Accountant(total_epsilon)"
        )


def _check_columns_or_formula(columns, formula) -> None:
    if (columns is None) == (formula is None):
        raise DPModelsError("give exactly one of columns=[...] or formula='...'")
    if formula is not None:
        if not isinstance(formula, str):
            raise DPModelsTypeError(
                f"formula must be a string such as 'y ~ x + C(g)', got {_kind(formula)}")
        if not formula.strip():
            raise DPModelsError("formula is empty: give a formula such as 'y ~ x + C(g)'")
        return
    if isinstance(columns, str):
        return
    if not isinstance(columns, (Sequence, pd.Index, np.ndarray)) or isinstance(columns, bytes):
        raise DPModelsTypeError(
            f"columns must be a list of column names, got {columns!r} ({_kind(columns)})")
    if len(columns) == 0:
        raise DPModelsError("columns is empty: name at least one column to release")
    bad = [c for c in columns if not isinstance(c, str)]
    if bad:
        raise DPModelsTypeError(
            f"columns must be a list of column names (str), got {bad[0]!r} ({_kind(bad[0])}) "
            "in it: name columns by strings (rename non-string column labels first)"
        )


def _check_bounds(bounds) -> None:
    if bounds is None:
        return
    if not isinstance(bounds, Mapping):
        raise DomainTypeError(
            "bounds must be a dict of variable -> (low, high), e.g. bounds={'x': (0, 10)}; "
            f"got {_kind(bounds)}"
        )
    for name, value in bounds.items():
        if not isinstance(value, Unbounded):  # (validated when it was made)
            _as_bounds(name, value)


def _check_levels(levels, bounds) -> None:
    if levels is None:
        return
    if not isinstance(levels, Mapping):
        raise DomainTypeError(
            "levels must be a dict of variable -> list of values, e.g. "
            f"levels={{'g': ['a', 'b']}}; got {_kind(levels)}"
        )
    for name, spec in levels.items():
        if isinstance(bounds, Mapping) and name in bounds:
            raise DomainError(
                f"{name!r} has both bounds and levels: give bounds for a continuous "
                "variable or levels for a discrete one, not both"
            )
        if isinstance(spec, str):
            if spec == DTYPE_LEVELS:
                continue
            raise DomainTypeError(
                f"levels[{name!r}] must be a list of the values {name!r} can take (or "
                f'"{DTYPE_LEVELS}" for the categories of its pandas Categorical), got the string '
                f"{spec!r}: write levels={{{name!r}: [{spec!r}, ...]}}"
            )
        if isinstance(spec, pd.CategoricalDtype):
            continue
        if (isinstance(spec, bytes) or not isinstance(spec, (Sequence, np.ndarray, pd.Index))
                or (isinstance(spec, np.ndarray) and spec.ndim != 1)):
            raise DomainTypeError(
                f"levels[{name!r}] must be a list of the values {name!r} can take, got "
                f"{_kind(spec)}"
            )
        for value in spec:
            try:
                hash(value)
            except TypeError:
                raise DomainTypeError(
                    f"levels[{name!r}] lists {value!r} ({_kind(value)}), which cannot be a level: "
                    "levels are scalars (str, int, float, bool)"
                ) from None
            if isinstance(value, (tuple, frozenset)):
                raise DomainTypeError(
                    f"levels[{name!r}] lists the {_kind(value)} {value!r}: levels are scalars "
                    "(str, int, float, bool), not collections"
                )
        _as_levels(name, spec)  # empty, missing values, duplicates (dpmodels.domain.axes)


def _check_bins(bins) -> None:
    if isinstance(bins, str):
        if bins != "auto":
            raise DomainTypeError(f'bins must be an int, a dict or "auto", got {bins!r}')
        return
    if isinstance(bins, Mapping):
        for name, k in bins.items():
            _as_bins(name, k)
        return
    if not _is_int(bins):
        raise DomainTypeError(
            f'bins must be an int, a dict of variable -> int, or "auto", got {bins!r} '
            f"({_kind(bins)})"
        )
    _as_bins(None, bins)


def _check_data(data) -> None:
    if isinstance(data, Release):
        raise DPModelsTypeError(
            f"data is already a release ({type(data).__name__}): a new release needs the raw "
            "rows; "
            "fit models on the release itself for free, e.g. dp_ols(formula, release)"
        )
    if isinstance(data, pd.DataFrame):
        if isinstance(data.columns, pd.MultiIndex):
            raise DPModelsTypeError(
                "data has MultiIndex (hierarchical) column labels: flatten them to strings "
                "first, e.g. data.columns = ['_'.join(map(str, c)) for c in data.columns]"
            )
        return
    if isinstance(data, Mapping) or source_for(data) is not None:
        return
    hint = " (use series.to_frame())" if isinstance(data, pd.Series) else ""
    raise DPModelsTypeError(
        "data must be a pandas DataFrame, a mapping of column name to array, or a Polars, "
        f"Dask, DuckDB or PySpark data frame; got {_kind(data)}{hint}"
    )


def check_release_arguments(
    data, *, columns, formula, epsilon, bounds, levels, bins, threshold, threshold_A, n,
    random_state, accountant, missing, max_spurious_cells, namespace, domain_check,
) -> None:
    """Check every argument of `dpmodels.release()` that can be checked
    without the data's column names (see the module docstring for the rules).

    ``random_state`` is checked first.  The value of ``epsilon`` (> 0, not
    NaN) is left to `dpmodels.mechanisms.histogram.check_epsilon()`; here only its
    type.  Raises a `DPModelsError` naming the
    argument; touches no data.
    """
    check_random_state(random_state)
    _check_epsilon_type(epsilon)
    _check_data(data)
    _check_columns_or_formula(columns, formula)
    check_choice("missing", missing, _MISSING_RULES)
    _check_threshold(threshold)
    _check_positive_finite("threshold_A", threshold_A,
                           "Lei's constant A of the enhanced threshold A*log(n)/epsilon "
                           "(default 0.5)")
    _check_positive_finite("max_spurious_cells", max_spurious_cells,
                           "it caps the memory of a release (inf is not allowed); raise it "
                           "to a larger number if needed")
    _check_n(n)
    _check_accountant(accountant)
    if namespace is not None and not isinstance(namespace, Mapping):
        raise DPModelsTypeError(f"namespace must be a mapping or None, got {_kind(namespace)}")
    if domain_check is not None and not callable(domain_check):
        raise DPModelsTypeError(
            f"domain_check must be a callable or None, got {_kind(domain_check)}")
    _check_bounds(bounds)
    _check_levels(levels, bounds)
    _check_bins(bins)


# ---- the data's labels, schema and size (no values) ----------------------------------


def check_used_columns(data, names: Sequence[str]) -> None:
    """The variables ``names`` of in-memory ``data`` must each be exactly one
    column with a string label, and (for a mapping) a 1-d array-like."""
    labels = list(data.columns) if isinstance(data, pd.DataFrame) else list(data.keys())
    counts = Counter(c for c in labels if isinstance(c, str))
    for name in names:
        if counts[name] > 1:
            raise DPModelsError(
                f"data has {counts[name]} columns named {name!r}: rename or drop the duplicates "
                "so that each variable is one column"
            )
        if counts[name] == 0:
            other = next((c for c in labels if not isinstance(c, str) and str(c) == name), None)
            raise DPModelsTypeError(
                f"column {other!r} of data has a non-string label (type {_kind(other)}): "
                "name columns by strings, e.g. data.columns = data.columns.astype(str)"
            )
    if isinstance(data, pd.DataFrame):
        return
    for name in names:
        col = data[name]
        ndim = getattr(col, "ndim", 1)
        if (isinstance(col, (str, bytes, Mapping, set, frozenset)) or not hasattr(col, "__len__")
                or ndim != 1):
            raise DPModelsTypeError(
                f"data[{name!r}] must be a 1-d array-like column (list, numpy array, pandas "
                f"Series), got {_kind(col)}" + (f" with {ndim} dimensions" if ndim != 1 else "")
            )


def check_dtypes(dtypes: Mapping[str, object]) -> None:
    """Refuse column dtypes no axis can code (complex numbers)."""
    for name, dtype in dtypes.items():
        if isinstance(dtype, np.dtype) and dtype.kind == "c":
            raise DomainError(
                f"{name!r} holds complex numbers (dtype {dtype}), which cannot be binned or "
                "matched to levels: release their real and imaginary parts as two columns"
            )


#: Most cells of pure noise a release may hold in memory: a signed release
#: (``threshold=None``) perturbs all m cells of its domain, a thresholded one
#: draws the empty cells that cross the threshold (about ``m P(Z >= k)``).  Their
#: number is known in advance from public inputs; ``max_spurious_cells`` (2e6 by
#: default) usually refuses first, but a caller may raise it to any number.
MAX_NOISE_CELLS = 2**25
#: Peak bytes per cell while the noise is drawn (measured): a signed release's
#: counts, two geometric draws a cell and their float temporaries; a thresholded
#: release's spurious cells (positions, tail draws, ids and counts).
SIGNED_BYTES_PER_CELL = 200
SPURIOUS_BYTES_PER_CELL = 120


def check_noise_cells(cells: float, m: int, signed: bool) -> None:
    """Refuse a release whose cells of pure noise (``cells``: all ``m`` for a
    signed release, the expected spurious cells for a thresholded one) are
    too many to draw in memory, before anything is read, charged or drawn
    (PRIVACY.md rule 10), from public inputs only, whatever
    ``max_spurious_cells`` allows.

    Examples
    --------
    >>> check_noise_cells(1000, 1000, signed=True)
    >>> check_noise_cells(27e9, 27 * 10**9, signed=True)
    Traceback (most recent call last):
    ...
    dpmodels.core.errors.DomainTooLargeError: a signed release (threshold=None) ...
    """
    if not cells > MAX_NOISE_CELLS:
        return
    gib = 2.0**-30
    limit = (f"(the limit is {MAX_NOISE_CELLS:,} cells of noise, whatever max_spurious_cells "
             "allows)")
    if signed:
        raise DomainTooLargeError(
            f"a signed release (threshold=None) adds noise to every one of the {m:.3g} cells "
            f"of the domain in memory: {m * 8 * gib:.3g} GiB for the noisy counts alone, about "
            f"{m * SIGNED_BYTES_PER_CELL * gib:.3g} GiB while the noise is drawn {limit}. Use "
            "fewer bins or fewer variables, or a threshold (threshold='auto' or 'enhanced': "
            "only the empty cells that cross it are drawn, their number bounded by "
            "max_spurious_cells)")
    raise DomainTooLargeError(
        f"the threshold lets through about {cells:.3g} cells of pure noise in a domain of "
        f"{m:.3g} cells: about {cells * SPURIOUS_BYTES_PER_CELL * gib:.3g} GiB while they are "
        f"drawn {limit}. Use fewer bins or fewer variables, or a higher threshold "
        "(threshold='auto', which scales with the domain; a larger threshold_A; or a number)")


def check_row_count(n, rows) -> None:
    """Refuse an empty input and warn when a declared ``n`` is far from the
    rows handed in.

    Parameters
    ----------
    n : int or None
        The ``n`` the caller declared.
    rows : int or None
        The number of rows handed in; None when unknown (an engine's frame
        with ``n`` declared: counting its rows would be one more query).

    Warns
    -----
    ReleaseWarning
        ``n`` and ``rows`` differ by more than a factor `N_MISMATCH_FACTOR`.
    """
    if rows == 0:
        raise DPModelsError(
            "data has 0 rows: there is nothing to release (a release of an empty data set is "
            "pure noise); check the filter that produced it"
        )
    if n is None or rows is None:
        return
    if n > N_MISMATCH_FACTOR * rows or rows > N_MISMATCH_FACTOR * n:
        warnings.warn(
            f"the declared n={n:,} is far from the {rows:,} rows handed in (more than a factor "
            f"{N_MISMATCH_FACTOR:g} apart): n sets the threshold, the bins and the report's "
            "public n; check that it is the size of this data set",
            ReleaseWarning, stacklevel=user_stacklevel(),
        )


# ---- dp_* model arguments --------------------------------------------------------------


def check_eval_env(eval_env) -> None:
    """``eval_env``: an int >= 0 (frames above the caller) or a mapping."""
    if isinstance(eval_env, Mapping):
        return
    if not _is_int(eval_env):
        raise DPModelsTypeError(
            f"eval_env must be an int >= 0 (frames above the caller) or a mapping of names, "
            f"got {_kind(eval_env)}")
    if eval_env < 0:
        raise DPModelsError(f"eval_env must be an int >= 0, got {eval_env}")


def _resolve(node: ast.expr, namespace: Mapping):
    """``(value, bare)`` of a called name or attribute chain, without calling
    anything (``value`` None when it does not resolve)."""
    import patsy.builtins

    if isinstance(node, ast.Name):
        if node.id in namespace:
            return namespace[node.id], True
        return getattr(patsy.builtins, node.id, None), True
    if isinstance(node, ast.Attribute):
        base, _ = _resolve(node.value, namespace)
        if base is None:
            return None, False
        try:
            return getattr(base, node.attr, None), False
        except Exception:  # a property that raises: not a transform we know
            return None, False
    return None, False


def check_formula_transforms(formula: str, namespace: Mapping | None) -> None:
    """Refuse, before any release, a stateful transform the fit cannot
    evaluate on the data it stands for.

    patsy memorizes a stateful transform (its mean, knots, bounds) on the frame
    it is given: for a dp_* model that is one row per cell representative, not
    the rows.  ``center``, ``standardize`` and ``scale`` are replaced at fit
    time by versions that weight each point by its count (exact on the
    release); ``bs`` with ``knots=``, ``lower_bound=`` and ``upper_bound=``
    all given is a fixed function.  Everything else with patsy's stateful
    transform protocol - other spline bases, a transform called through an
    attribute (``patsy.center(x)``), user-defined ones - is refused.
    """
    import patsy
    import patsy.builtins


    namespace = namespace or {}
    try:
        lhs, rhs = _factor_codes(formula)
    except patsy.PatsyError:
        return  # formula_variables reports the parse error
    weighted = {id(getattr(patsy.builtins, nm)) for nm in WEIGHTED_TRANSFORMS}
    splines = {id(getattr(patsy.builtins, nm)): nm for nm in ("bs", "cr", "cc", "te")}
    for code in lhs + rhs:
        try:
            tree = ast.parse(code, mode="eval")
        except SyntaxError:
            continue  # formula_variables reports it
        for node in ast.walk(tree):
            if not isinstance(node, ast.Call):
                continue
            value, bare = _resolve(node.func, namespace)
            if value is None or not hasattr(value, "__patsy_stateful_transform__"):
                continue
            shown = ast.unparse(node.func)
            if id(value) in weighted:
                if bare:
                    continue
                assert isinstance(node.func, ast.Attribute)  # _resolve: only a name is bare
                raise DPModelsError(
                    f"{shown}(...) in the formula: call it by its bare name, "
                    f"{node.func.attr}(...), so that it is evaluated on the weighted release "
                    "(patsy treats an attribute call as a plain function, re-computed on "
                    "every frame)"
                )
            if (splines.get(id(value)) == "bs" and bare
                    and set(_BS_PUBLIC_KEYWORDS) <= {k.arg for k in node.keywords}):
                continue  # knots and bounds public: a fixed function of x
            if id(value) in splines:
                raise DPModelsError(
                    f"{shown}() in the formula is a spline basis whose knots or bounds patsy "
                    "would compute from the released cells' representative points, not from "
                    "your rows: it is not supported. Use terms with public constants, e.g. "
                    "I(x - c), I((x - c)**2) or I(np.maximum(x - k, 0)) with knots k from "
                    "public knowledge"
                    + (", or bs(x, knots=[...], lower_bound=..., upper_bound=...) with all "
                       "three given" if splines[id(value)] == "bs" else "")
                )
            raise DPModelsError(
                f"{shown}() in the formula is a stateful transform: patsy would memorize it on "
                "the released cells' representative points, not on your rows. Use a plain "
                "function with public constants instead, e.g. I(x - c)"
            )
