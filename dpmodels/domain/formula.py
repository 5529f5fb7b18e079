"""Find the raw variables a patsy formula reads.

The formula is parsed by patsy; each factor's Python code is walked with
`ast`.  A name that is a column of the data is a raw variable (patsy
gives data columns precedence over the environment); a name used inside the
first argument of ``C()`` marks its variable as discrete; ``Q("name")``
refers to a column by string.  Any other name must resolve in the caller's
environment or in patsy's builtins, or it is reported as an unknown column.
"""

from __future__ import annotations

import ast
import builtins
import difflib
import os
import re
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from types import FrameType

import numpy as np
import pandas as pd
import patsy
import patsy.builtins

from ..core import keywords
from ..core.errors import UnknownVariableError

__all__ = ["FormulaVariables", "formula_variables", "caller_namespace", "formula_namespace",
           "user_stacklevel", "PicklableNamespace", "equation_names", "build_design", "NO_NA"]


_PATSY_NAMES = set(patsy.builtins.__all__) | {"C", "Q", "I"}
#: Usual import names of modules a formula calls (np.log(x)): a missing one is
#: a missing import, not a missing column.
_MODULE_ALIASES = {"np": "numpy", "numpy": "numpy", "pd": "pandas", "math": "math",
                   "sp": "scipy", "scipy": "scipy"}


#: Monotone transforms a variable can be binned on the scale of: numpy function -> scale.
SCALE_FUNCTIONS = {"log": "log", "log1p": "log1p", "sqrt": "sqrt"}


@dataclass(frozen=True)
class FormulaVariables:
    """The raw variables of a formula, in first-use order (response first).

    ``scales`` maps a variable that the formula uses only through one of
    ``np.log``, ``np.log1p``, ``np.sqrt`` (every occurrence, e.g.
    ``np.log1p(x)``) to that scale: the release bins it there.
    ``factors_only``: the variables the formula reads only inside ``C(...)``
    (every occurrence): a fit codes them by their declared levels.
    """

    names: tuple[str, ...]
    discrete: frozenset[str]
    response: tuple[str, ...]
    scales: tuple[tuple[str, str], ...] = ()
    factors_only: frozenset[str] = frozenset()


def caller_namespace(depth: int) -> dict:
    """The globals and locals of the frame ``depth`` levels above the caller,
    used to evaluate formula functions such as ``np.log`` on the cell frame."""
    frame = sys._getframe(depth + 1)
    # a decorator's wrapper (keywords.checked_keywords) is not the caller: skip it
    while frame.f_back is not None and frame.f_code.co_filename == keywords.__file__:
        frame = frame.f_back
    ns = dict(frame.f_globals)
    ns.update(frame.f_locals)
    return ns


_IDENTIFIER = re.compile(r"(?!\d)\w+")


def formula_namespace(formula: str, namespace: Mapping[str, object]) -> dict:
    """The entries of ``namespace`` that ``formula`` names, and nothing else.

    A model keeps the namespace its formula is evaluated in (for fits on new
    frames and predictions); the caller's whole globals and locals would also
    hold the raw DataFrame and anything else in scope, which a model, and
    whatever pickles or saves it, must not reach.  Every identifier in the
    formula's text is kept (``np`` of ``np.log(x)``, a user function), so
    the formula evaluates as before.

    Examples
    --------
    >>> import numpy as np
    >>> sorted(formula_namespace("y ~ np.log(x) + C(g)", {"np": np, "df": [1], "x": 2}))
    ['np', 'x']
    """
    names = set(_IDENTIFIER.findall(formula))
    return {k: v for k, v in namespace.items() if k in names}


class _ModuleRef:
    """A module in a pickled namespace, by its import name."""

    def __init__(self, name: str):
        self.name = name

    def load(self):
        import importlib

        return importlib.import_module(self.name)


class PicklableNamespace(dict):
    """A formula's evaluation namespace that pickles: its modules (``np`` of
    ``np.log(x)``) travel by import name; functions and classes by reference,
    as pickle takes them.  A value pickle cannot take (a lambda, a function
    defined inside another) raises pickle's own error naming it.

    Examples
    --------
    >>> import pickle, numpy as np
    >>> ns = pickle.loads(pickle.dumps(PicklableNamespace({"np": np})))
    >>> ns["np"] is np
    True
    """

    def __reduce__(self):
        state = {k: _ModuleRef(v.__name__) if isinstance(v, type(sys)) else v
                 for k, v in self.items()}
        return (_restored_namespace, (state,))


def _restored_namespace(state: dict) -> PicklableNamespace:
    return PicklableNamespace({k: v.load() if isinstance(v, _ModuleRef) else v
                               for k, v in state.items()})


def user_stacklevel() -> int:
    """``stacklevel`` for `warnings.warn()` that points at the first frame
    outside dpmodels (the user's call), however deep inside the package the
    warning is raised."""

    pkg = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # dpmodels/
    frame: FrameType | None = sys._getframe(1)
    level = 1
    while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(pkg + os.sep):
        frame, level = frame.f_back, level + 1
    return level


class _Visitor(ast.NodeVisitor):
    def __init__(self, columns: set[str], namespace: Mapping[str, object]):
        self.columns = columns
        self.namespace = namespace
        self.found: list[str] = []
        self.discrete: set[str] = set()
        self.unresolved: list[str] = []
        self.uses: dict[str, set[str]] = {}  # variable -> scales it is used on
        self._in_factor = 0

    def _use(self, name: str, scale: str):
        self.uses.setdefault(name, set()).add("factor" if self._in_factor else scale)

    def _scale_of(self, func) -> str | None:
        """The scale of a call to np.log / np.log1p / np.sqrt (or those
        functions imported by name), else None."""
        if (isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name)
                and func.attr in SCALE_FUNCTIONS):
            base = self.namespace.get(func.value.id)
            if getattr(base, "__name__", None) == "numpy":
                return SCALE_FUNCTIONS[func.attr]
        if isinstance(func, ast.Name) and func.id in SCALE_FUNCTIONS:
            import numpy as np

            if self.namespace.get(func.id) is getattr(np, func.id):
                return SCALE_FUNCTIONS[func.id]
        return None

    def _add(self, name: str):
        if name not in self.found:
            self.found.append(name)
        if self._in_factor:
            self.discrete.add(name)

    def visit_Name(self, node: ast.Name):
        if node.id in self.columns:
            self._add(node.id)
            self._use(node.id, "linear")
        else:
            self.unresolved.append(node.id)

    def visit_Call(self, node: ast.Call):
        func = node.func
        scale = self._scale_of(func)
        if (scale is not None and len(node.args) == 1 and not node.keywords
                and isinstance(node.args[0], ast.Name) and node.args[0].id in self.columns):
            self.visit(func)
            self._add(node.args[0].id)
            self._use(node.args[0].id, scale)
            return
        if isinstance(func, ast.Name) and func.id == "Q" and node.args:
            arg = node.args[0]
            if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                if arg.value in self.columns:
                    self._add(arg.value)
                    self._use(arg.value, "linear")
                else:
                    self.unresolved.append(arg.value)
                return
        if isinstance(func, ast.Name) and func.id == "C" and node.args:
            self._in_factor += 1
            self.visit(node.args[0])
            self._in_factor -= 1
            for a in node.args[1:]:
                self.visit(a)
            for kw in node.keywords:
                self.visit(kw.value)
            return
        self.generic_visit(node)

    def visit_Attribute(self, node: ast.Attribute):
        # np.log: only the base name ("np") can be a variable.
        self.visit(node.value)


def _factor_codes(formula: str) -> tuple[list[str], list[str]]:
    desc = patsy.ModelDesc.from_formula(formula)

    def codes(terms) -> list[str]:
        out = []
        for term in terms:
            for factor in term.factors:
                code = getattr(factor, "code", None)
                if code is None:
                    raise UnknownVariableError(f"cannot read the formula term {factor!r}")
                out.append(code)
        return out

    return codes(desc.lhs_termlist), codes(desc.rhs_termlist)


def formula_variables(
    formula: str, columns: Iterable[str], namespace: Mapping[str, object] | None = None
) -> FormulaVariables:
    """Raw variables read by ``formula`` among ``columns``.

    Parameters
    ----------
    formula : str
        A patsy formula, e.g. ``"y ~ x + C(g) + np.log(z)"``.
    columns : iterable of str
        The data's column names.
    namespace : mapping, optional
        The caller's environment; names found there (``np``) are not
        variables.

    Raises
    ------
    UnknownVariableError
        A name that is neither a column nor defined in the environment.

    Examples
    --------
    >>> fv = formula_variables("y ~ x + C(g)", ["y", "x", "g", "unused"])
    >>> fv.names, sorted(fv.discrete)
    (('y', 'x', 'g'), ['g'])
    """
    if not isinstance(formula, str):
        raise TypeError(f"formula must be a string, got {type(formula).__name__}")
    cols = set(map(str, columns))
    try:
        lhs, rhs = _factor_codes(formula)
    except patsy.PatsyError as exc:
        raise UnknownVariableError(f"cannot parse formula {formula!r}: {exc}") from None
    namespace = namespace or {}
    visitor = _Visitor(cols, namespace)
    response: list[str] = []
    for i, code in enumerate(lhs + rhs):
        try:
            tree = ast.parse(code, mode="eval")
        except SyntaxError as exc:
            raise UnknownVariableError(f"cannot parse formula term {code!r}: {exc}") from None
        before = len(visitor.found)
        visitor.visit(tree)
        if i < len(lhs):
            response.extend(visitor.found[before:])
    unknown = [
        u for u in dict.fromkeys(visitor.unresolved)
        if u not in namespace and u not in _PATSY_NAMES and not hasattr(builtins, u)
    ]
    modules = [u for u in unknown if u in _MODULE_ALIASES]
    if modules:
        u = modules[0]
        raise UnknownVariableError(
            f"the formula uses {u!r} (as in {u}.log(x)), but {u!r} is not defined where the "
            f"formula is evaluated: add `import {_MODULE_ALIASES[u]} as {u}` to the module "
            "that calls dpmodels")
    if unknown:
        shown = ", ".join(sorted(cols)[:20])
        close = [c for u in unknown for c in difflib.get_close_matches(u, sorted(cols), n=1)]
        raise UnknownVariableError(
            f"the formula uses {', '.join(map(repr, unknown))}, which is not a column of the "
            f"data (columns: {shown}); "
            + (f"did you mean {', '.join(map(repr, close))}?" if close else
               "check the spelling or add the column")
        )
    if not visitor.found:
        raise UnknownVariableError(f"the formula {formula!r} reads no column of the data")
    scales = tuple((v, next(iter(u))) for v, u in visitor.uses.items()
                   if len(u) == 1 and next(iter(u)) in SCALE_FUNCTIONS.values())
    factors_only = frozenset(v for v, u in visitor.uses.items() if u == {"factor"})
    return FormulaVariables(tuple(visitor.found), frozenset(visitor.discrete), tuple(response),
                            scales, factors_only)


def equation_names(exog, response: str, levels) -> list[str]:
    """A multinomial's coefficients flattened equation by equation, as every
    warning and summary names them: ``x (y=level)`` for each non-base level
    (``levels[1:]``) and each exog name."""
    return [f"{x} ({response}={lev})" for lev in list(levels)[1:] for x in exog]


# ---- building a design fast -------------------------------------------------------------


#: Missing values were removed before the design is built; a NaN a transform makes
#: is mapped to the column's centre by DesignSpace.scaled (no per-element NA scan).
NO_NA = patsy.NAAction(on_NA="raise", NA_types=[])


def _categorical_as_is(data, contrast=None, levels=None):
    """patsy's ``C()``, except that a pandas Categorical with no ``levels=`` is
    handed back as it is: patsy then reads its codes at once, where a ``C()``
    box of it makes patsy look every value up in Python (0.58 s of a 0.65 s
    moments release at a million rows).  Its categories are the published
    ones the design was built on, so the codes, and the design, are the same;
    a mismatch makes patsy raise, and `build_design()` then builds as patsy does."""
    if levels is None and isinstance(getattr(data, "dtype", None), pd.CategoricalDtype):
        return data
    if levels is None and _numeric_column(data):
        # a published numeric discrete column (C(year) of levels 1..10): as a Categorical
        # of its sorted values, which are the design's levels whenever every level occurs
        # (patsy sorts numeric levels the same way); then patsy reads its codes at once,
        # where its own C() looks every value up in Python (1.5 s of the 2.8 s the moments
        # release spent building designs at a million rows with three such factors).  A
        # batch that lacks a level mismatches, patsy raises, and build_design builds as
        # patsy does: the same design either way
        return data.astype("category") if isinstance(data, pd.Series) else pd.Categorical(data)
    return patsy.builtins.C(data, contrast, levels)


def _numeric_column(data) -> bool:
    """A 1-d integer, or NaN-free float, numpy array or pandas Series (numpy dtype)."""
    if not isinstance(data, np.ndarray | pd.Series) or data.ndim != 1:
        return False
    dtype = data.dtype
    if not isinstance(dtype, np.dtype) or dtype.kind not in "iuf":
        return False
    return dtype.kind != "f" or not bool(np.isnan(np.asarray(data)).any())


def _calls_patsy_c(infos) -> bool:
    """Every factor of the design evaluates ``C`` as patsy's own (not a function
    of the caller's namespace that happens to be named C)."""
    for info in infos:
        for factor_info in info.factor_infos.values():
            env = factor_info.state.get("eval_env") if isinstance(factor_info.state, dict) \
                else None
            if env is not None and env.namespace.get("C", patsy.builtins.C) \
                    is not patsy.builtins.C:
                return False
    return True


def build_design(infos, frame) -> list:
    """``patsy.build_design_matrices(infos, frame)``, with ``C()`` of a
    published Categorical read from its codes (`_categorical_as_is()`):
    the frame's columns come first in patsy's lookup, before the formula's
    namespace, so a ``C`` among them is the one the formula calls."""
    if "C" not in frame.columns and _calls_patsy_c(infos):
        data = {name: frame[name] for name in frame.columns}
        data["C"] = _categorical_as_is
        try:
            return patsy.build_design_matrices(infos, data, NA_action=NO_NA)
        except patsy.PatsyError:
            pass  # (e.g. levels the box would have checked): patsy's own way below
    return patsy.build_design_matrices(infos, frame, NA_action=NO_NA)
