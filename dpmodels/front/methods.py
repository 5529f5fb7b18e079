"""Which release a model is fitted on: the registry ``method="auto"`` reads.

Every choice depends on public inputs only (the formula, the declared
domain, the data's type, the options the caller gave), never on the rows:
PRIVACY.md rule 4.

=============  =========================================  ====================================
method         release                                    models
=============  =========================================  ====================================
"histogram"    `dpmodels.release()` (Lei 2011)        all dp_* models
"moments"      `dpmodels.mechanisms.moments.release_moments()`   dp_ols
"newton"       `dpmodels.mechanisms.newton.release_newton()`     dp_logit
"newton"       `dpmodels.mechanisms.quantile_steps.            dp_quantreg
               release_quantile_steps()`
"sample-       `dpmodels.mechanisms.sample_aggregate.          all dp_* models, through
aggregate"     release_sample_aggregate()` (Smith 2011)     dpmodels.front.routing (never "auto")
=============  =========================================  ====================================
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping

from ..core.errors import DPModelsError, ReleaseWarning
from ..core.exact import MIN_EPSILON
from ..core.report import Release  # the base every release derives from
from ..core.thresholds import enhanced_cut
from ..core.unbounded import Unbounded
from ..data.columns import columns_of, dtype_of, nrows
from ..data.engines import source_for
from ..data.validation import check_choice
from ..domain.axes import MAX_BINS, auto_bins
from ..domain.formula import formula_variables, user_stacklevel
from ..inference.intervals import BINNING_MIN_BINS_ONE
from ..mechanisms.histogram import DEFAULT_A, PrivateHistogram
from ..mechanisms.moments import PrivateMoments, stateful_transform
from ..mechanisms.newton import PrivateNewton
from ..mechanisms.quantile_steps import PrivateQuantileSteps
from . import registry as _registry

__all__ = ["Release", "RELEASES", "OLS_METHODS", "LOGIT_METHODS", "choose_ols_method", "choose_logit_method",
           "choose_quantreg_method", "choose_mnlogit_method", "CHOOSERS", "QUANTREG_METHODS",
           "NEWTON_MIN_CONTINUOUS", "NEWTON_MIN_N_EPSILON", "HISTOGRAM_MAX_CONTINUOUS",
           "LOGIT_HISTOGRAM_MAX_CONTINUOUS",
           "HISTOGRAM_MIN_CELLS", "MNLOGIT_METHODS", "FAMILY_METHODS", "METHOD_RELEASES",
           "ENGINES", "RELEASE_ENGINES", "OTHER_RELEASES", "plan_bins", "coarse_covariates",
           "MIN_COVARIATE_BINS"]

#: The tables below are views of `dpmodels.front.registry.MECHANISMS`, the one
#: place a mechanism is declared.
ENGINES = _registry.ENGINES
#: The releases by name: (module, release function, release type).  dp_quantreg's
#: method="newton" is registered as "quantile-newton" (its own release).
RELEASES = {m.name: (*m.release.split(":"), m.release_type)
            for m in _registry.MECHANISMS if m.release_type is not None}
#: Methods the dp_* functions' routes take (dpmodels.front.routing) before the choices below;
#: named in their error messages.
ROUTED_METHODS = tuple(dict.fromkeys(m.method for m in _registry.MECHANISMS
                                     if m.routed and m.method is not None))


def _own_methods(family: str) -> tuple[str, ...]:
    return ("auto",) + tuple(m.method for m in _registry.MECHANISMS
                             if family in m.families and not m.routed and m.method)


OLS_METHODS = _own_methods("ols")
QUANTREG_METHODS = _own_methods("quantreg")
LOGIT_METHODS = _own_methods("logit")
MNLOGIT_METHODS = _own_methods("mnlogit")
#: Each dp_* family's own methods (ROUTED_METHODS come on top).
FAMILY_METHODS = {family: _own_methods(family) for family in _registry.FAMILIES}
#: The RELEASES name of a family's method, where it is not the method's name.
METHOD_RELEASES = {(family, m.method): m.name for m in _registry.MECHANISMS
                   for family in m.families if m.method and m.method != m.name}
#: The engines each mechanism reads, by its registry name.  On any other engine a
#: release raises a DPModelsError saying to convert the data, before anything is read
#: or spent (tests/contracts/test_engines_contract.py tries every pair both ways).
RELEASE_ENGINES = {m.name: m.engines for m in _registry.MECHANISMS}
#: Releases made by a function of their own, not a dp_* method: (module, function).
OTHER_RELEASES = {m.name: tuple(m.release.split(":")) for m in _registry.MECHANISMS
                  if m.own_function}
#: "auto" keeps the histogram for OLS when the formula has at most this many
#: continuous variables (response included) and its factors have at least
#: HISTOGRAM_MIN_CELLS level combinations: there the factors carry the model,
#: the histogram's grid stays fine and it is the more accurate release
#: (benchmarks/peers.py, docs/accuracy.md).  Everywhere else, the moments.
HISTOGRAM_MAX_CONTINUOUS = 3
#: ... and only where ``bins="auto"`` gives every continuous covariate at least
#: this many bins (`dpmodels.inference.intervals.BINNING_MIN_BINS_ONE`) at the public n and
#: epsilon.  With fewer, the fit flags those covariates' coefficients unmeasured but
#: the columns correlated with them take over their effect with finite intervals
#: (benchmarks/power.py, statsmodels' grunfeld, ``np.log(invest) ~ np.log(value) +
#: np.log(capital) + C(firm)``, n = 220, epsilon 3: 2 bins, every firm's interval
#: shifted by the log-value effect, per-firm coverage down to 20%); the moments keep
#: the covariates whole (`coarse_covariates()`).
MIN_COVARIATE_BINS = BINNING_MIN_BINS_ONE
HISTOGRAM_MIN_CELLS = 8
#: "auto" takes dp_logit's Newton steps from this many continuous covariates ...
NEWTON_MIN_CONTINUOUS = 3
#: ... unless the factors carry the model (at least HISTOGRAM_MIN_CELLS level
#: combinations, the response's included) and there are at most this many
#: continuous covariates: the histogram then (benchmarks/real_validity.py,
#: statsmodels' fair: 4 continuous covariates, 240 level combinations, 18
#: coefficients.  Both releases met the validity goals at n = 6,366, 100
#: replicates; the histogram's intervals were finite for 11% and 17% of the
#: coefficients at epsilon 1 and 3, the Newton steps' for 1% and 0%; at n =
#: 63,660, 44% against 0%.  The synthetic logit4 (3 continuous, 4
#: combinations) keeps the Newton steps.)
LOGIT_HISTOGRAM_MAX_CONTINUOUS = 4
#: ... and with fewer continuous covariates (and few level combinations) from
#: this n * epsilon (benchmarks/peers.py --logit: 2 covariates, n = 1e5: the
#: histogram is better at epsilon 0.1 and 0.3, the Newton steps at 1 and 3).
NEWTON_MIN_N_EPSILON = 50_000
#: Options that only a histogram release takes: giving one asks for it.
HISTOGRAM_OPTIONS = ("threshold_A", "max_spurious_cells", "representatives")


def _shape(formula: str, data, bounds, levels, namespace) -> tuple[int, int] | None:
    """(continuous variables, level combinations of the discrete ones) of the
    formula, from the declarations and the schema only (None: the formula or
    the declarations are invalid; the release reports why)."""
    shape = _shape_of(formula, data, bounds, levels, namespace)
    return None if shape is None else (len(shape[0]), shape[1])


def _shape_of(formula: str, data, bounds, levels, namespace) -> tuple[list[str], int] | None:
    """(continuous variables' names, level combinations) of the formula."""
    parts = _shape_parts(formula, data, bounds, levels, namespace)
    return None if parts is None else parts[:2]


def _shape_parts(formula: str, data, bounds, levels,
                 namespace) -> tuple[list[str], int, tuple[str, ...]] | None:
    """`_shape_of()` and the formula's response variables."""
    source = source_for(data)
    fv = _formula_vars(formula, data, namespace)
    if fv is None:
        return None
    bounds = dict(bounds) if isinstance(bounds, Mapping) else {}
    levels = dict(levels) if isinstance(levels, Mapping) else {}
    cont, cells = [], 1
    for v in fv.names:
        if v in bounds and v not in fv.discrete:
            cont.append(v)
        elif v in levels:
            spec = levels[v]
            if isinstance(spec, str):  # "dtype": the declared Categorical's categories
                try:
                    dtype = source.dtypes([v])[v] if source is not None else dtype_of(data, v)
                    spec = list(getattr(dtype, "categories", []))
                except Exception:
                    return None
            try:
                cells *= max(len(spec), 1)
            except TypeError:
                return None
        else:
            try:
                dtype = (source.dtypes([v])[v] if source is not None else dtype_of(data, v))
            except Exception:
                return None
            cells *= 2 if str(dtype) == "bool" else 1
    return cont, cells, tuple(fv.response)


def choose_ols_method(method: str, formula: str, data, *, bounds=None, levels=None,
                      bins="auto", threshold="enhanced", options: Mapping | None = None,
                      namespace: Mapping | None = None, n: int | None = None,
                      epsilon: float | None = None) -> str:
    """Resolve dp_ols' ``method`` to "histogram" or "moments".

    "auto" takes the histogram when the factors carry the model (at most
    ``HISTOGRAM_MAX_CONTINUOUS`` continuous variables and at least
    ``HISTOGRAM_MIN_CELLS`` level combinations) and ``bins="auto"`` gives each
    continuous covariate at least ``MIN_COVARIATE_BINS`` bins at the public n
    and ``epsilon`` (`coarse_covariates()`), when histogram options are
    given, or for an engine's data frame; the moments otherwise.  When the
    only histogram option is ``bins`` and it makes the grid too fine for the
    threshold (``SPARSE_GRID_RATIO``), the moments, with a ReleaseWarning.

    Examples
    --------
    >>> import pandas as pd
    >>> df = pd.DataFrame({"y": [0.0], "a": [0.0], "b": [0.0], "c": [0.0]})
    >>> b = {v: (0, 1) for v in "yabc"}
    >>> choose_ols_method("auto", "y ~ a + b + c", df, bounds=b, namespace={})
    'moments'
    >>> lv = {"c": list(range(12))}
    >>> choose_ols_method("auto", "y ~ a + C(c)", df, bounds=b, levels=lv, namespace={})
    'histogram'

    At n = 100 and epsilon 3, ``bins="auto"`` would cut ``a`` into 2 bins:

    >>> choose_ols_method("auto", "y ~ a + C(c)", df, bounds=b, levels=lv, namespace={},
    ...                   n=100, epsilon=3.0)
    'moments'
    """
    return _choose(method, OLS_METHODS, "moments", PrivateMoments, formula, data, bounds,
                   levels, bins, threshold, options, namespace,
                   lambda d, cells: not (d <= HISTOGRAM_MAX_CONTINUOUS
                                         and cells >= HISTOGRAM_MIN_CELLS), n=n, epsilon=epsilon,
                   whole_covariates=True)


def choose_quantreg_method(method: str, formula: str, data, *, bounds=None, levels=None,
                           bins="auto", threshold="enhanced", options: Mapping | None = None,
                           namespace: Mapping | None = None, n: int | None = None,
                           epsilon: float | None = None) -> str:
    """Resolve dp_quantreg's ``method`` to "histogram" or "newton", by
    dp_ols' rule (`choose_ols_method()`): the histogram where the factors
    carry the model, the Newton steps of the check loss elsewhere
    (benchmarks/validity.py's median4: the histogram's intervals covered x1
    in 0% of data sets at n = 2e4).

    Examples
    --------
    >>> import pandas as pd
    >>> df = pd.DataFrame({"y": [0.0], "a": [0.0], "b": [0.0], "c": [0.0]})
    >>> b = {v: (0, 1) for v in "yabc"}
    >>> choose_quantreg_method("auto", "y ~ a + b + c", df, bounds=b, namespace={})
    'newton'
    """
    return _choose(method, QUANTREG_METHODS, "newton", PrivateQuantileSteps, formula, data,
                   bounds, levels, bins, threshold, options, namespace,
                   lambda d, cells: not (d <= HISTOGRAM_MAX_CONTINUOUS
                                         and cells >= HISTOGRAM_MIN_CELLS), n=n, epsilon=epsilon)


def choose_logit_method(method: str, formula: str, data, *, bounds=None, levels=None,
                        bins="auto", threshold="enhanced", options: Mapping | None = None,
                        namespace: Mapping | None = None, n: int | None = None,
                        epsilon: float | None = None) -> str:
    """Resolve dp_logit's ``method`` to "histogram" or "newton".

    "auto" takes the histogram where the factors carry the model (at least
    ``HISTOGRAM_MIN_CELLS`` level combinations and at most
    ``LOGIT_HISTOGRAM_MAX_CONTINUOUS`` continuous covariates); elsewhere the
    Newton steps from ``NEWTON_MIN_CONTINUOUS`` continuous covariates on (the
    histogram's grid is then too coarse), and with fewer when the factors have
    fewer than ``HISTOGRAM_MIN_CELLS`` level combinations and
    ``n * epsilon >= NEWTON_MIN_N_EPSILON`` (the public n: declared, or the
    rows handed in); unless histogram options are given or the data are an
    engine's frame.  ``epsilon`` is the caller's ``plan_epsilon`` when given
    (`dpmodels.front.routing.Call`); at ``epsilon=inf`` without it the planned
    epsilon is unknown and this last rule keeps the histogram.  The Newton
    steps run at ``epsilon=inf`` too (without noise, not private).

    Examples
    --------
    >>> import pandas as pd
    >>> df = pd.DataFrame({"y": [0], "a": [0.0], "b": [0.0], "c": [0.0]})
    >>> b = {v: (0, 1) for v in "abc"}
    >>> choose_logit_method("auto", "y ~ a", df, bounds=b, levels={"y": [0, 1]}, namespace={})
    'histogram'
    >>> choose_logit_method("auto", "y ~ a + b + c", df, bounds=b, levels={"y": [0, 1]},
    ...                     namespace={})
    'newton'
    >>> df["g"] = 0
    >>> choose_logit_method("auto", "y ~ a + b + c + C(g)", df, bounds=b,
    ...                     levels={"y": [0, 1], "g": [0, 1, 2, 3]}, namespace={})
    'histogram'
    """
    def prefers_newton(d: int, cells: int) -> bool:
        if cells >= HISTOGRAM_MIN_CELLS and d <= LOGIT_HISTOGRAM_MAX_CONTINUOUS:
            return False  # the factors carry the model
        if d >= NEWTON_MIN_CONTINUOUS:
            return True
        rows = public_rows(data, n)
        if rows is None or epsilon is None or _is_infinite(epsilon):
            return False  # n or the epsilon the caller plans unknown: no preference
        try:
            n_eps = rows * float(epsilon)
        except (TypeError, ValueError):
            return False
        return d >= 1 and cells < HISTOGRAM_MIN_CELLS and n_eps >= NEWTON_MIN_N_EPSILON

    return _choose(method, LOGIT_METHODS, "newton", PrivateNewton, formula, data, bounds,
                   levels, bins, threshold, options, namespace, prefers_newton, n=n,
                   epsilon=epsilon)


def choose_mnlogit_method(method: str, formula: str, data, **_) -> str:
    """Resolve dp_mnlogit's ``method``: the histogram, its one release of its
    own (the routed ones are taken before).

    Examples
    --------
    >>> choose_mnlogit_method("auto", "y ~ x", None)
    'histogram'
    """
    if check_choice("method", method, MNLOGIT_METHODS + ROUTED_METHODS) in ROUTED_METHODS:
        raise DPModelsError(f"method={method!r} is taken by the route (dpmodels.front.routing)")
    return "histogram"


#: The method choice of each dp_* family (``method="auto"`` resolved from public inputs).
CHOOSERS = {"ols": choose_ols_method, "logit": choose_logit_method,
            "quantreg": choose_quantreg_method, "mnlogit": choose_mnlogit_method}


def _choose(method, choices, other, other_release, formula, data, bounds, levels, bins,
            threshold, options, namespace, prefers_other, n=None, epsilon=None,
            whole_covariates=False) -> str:
    method = check_choice("method", method, choices + ROUTED_METHODS)
    if method in ROUTED_METHODS:
        raise DPModelsError(f"method={method!r} is taken by the dp_* functions' routes "
                            "(dpmodels.front.routing) before this choice: call the dp_* function")
    options = dict(options or {})
    hist_opts = [k for k in HISTOGRAM_OPTIONS if k in options]
    if not (isinstance(bins, str) and bins == "auto"):
        hist_opts.append("bins")
    if not (isinstance(threshold, str) and threshold == "enhanced"):
        hist_opts.append("threshold")
    made = _made_by(data, choices)  # the registry's method of the release handed in as data
    if made is not None or isinstance(data, other_release):
        if method == "histogram":
            raise DPModelsError(f"data is a {made or other} release: method='histogram' needs "
                                "raw rows or a PrivateHistogram")
        chosen = made or other
    elif isinstance(data, PrivateHistogram):
        if method not in ("auto", "histogram"):
            made_type = (other_release.__name__ if method == other else
                         next(m.release_type for m in _registry.MECHANISMS
                              if m.method == method and m.release_type))
            raise DPModelsError(f"data is a histogram release: method={method!r} needs raw "
                                f"rows or a {made_type}")
        chosen = "histogram"
    elif method != "auto":
        chosen = method
    elif _declares_unbounded(formula, data, bounds, levels, namespace or {}):
        chosen = "histogram"  # the other releases need finite bounds (dpmodels.core.unbounded)
    elif _stateful(formula):
        chosen = "histogram"  # the others build the design on a public grid, where a
        # center()/standardize()/spline would memorize the grid, not the data
    elif (hist_opts == ["bins"]
          and _sparse_grid(formula, data, bounds, levels, bins, n, epsilon, namespace or {},
                           other)):
        chosen, hist_opts = other, []
    elif hist_opts:
        chosen = "histogram"
    elif whole_covariates and coarse_covariates(formula, data, bounds=bounds, levels=levels,
                                                n=n, epsilon=epsilon, namespace=namespace):
        chosen = other  # the other release keeps the covariates bins="auto" would cut coarsely
    else:
        shape = _shape(formula, data, bounds, levels, namespace or {})
        # (None: invalid formula or declarations; the histogram's checks say what is wrong)
        chosen = other if shape is not None and prefers_other(*shape) else "histogram"
    if chosen != "histogram" and hist_opts:
        raise DPModelsError(
            f"{', '.join(hist_opts)} apply to the histogram release; the {chosen} release "
            "takes none of them: leave them out or use method='histogram'")
    return chosen


def _made_by(data, choices) -> str | None:
    """The ``method=`` of the registry entry whose release ``data`` is (by its exact
    class: public, the argument's type), among this family's ``choices``; None for
    raw rows and for the histogram (whose own branch takes it)."""
    kind = type(data)
    if not kind.__module__.startswith("dpmodels."):
        return None
    for m in _registry.MECHANISMS:
        if (m.release_type == kind.__name__ and m.method in choices
                and m.method != "histogram"):
            return m.method
    return None


def plan_bins(formula: str, data, *, bounds=None, levels=None, n: int | None = None,
              plan_epsilon: float, namespace: Mapping | None = None):
    """The ``bins`` a histogram release of ``data`` would take by ``bins="auto"``
    at ``plan_epsilon`` (`dpmodels.domain.axes.auto_bins()` of the public n, the
    formula's continuous variables and its level combinations), as a dict by
    variable: what ``plan_epsilon=`` hands the histogram released at another
    epsilon (``epsilon=inf``: the bins the planned release will have, not the
    exact table's finer ones).  ``"auto"`` where it cannot be told (a release
    handed in, an invalid formula: the release's own checks say why).

    Examples
    --------
    >>> import pandas as pd
    >>> df = pd.DataFrame({"y": [0] * 10_000, "a": [0.0] * 10_000})
    >>> plan_bins("y ~ a", df, bounds={"a": (0, 1)}, levels={"y": [0, 1]},
    ...           plan_epsilon=1.0, namespace={})
    {'a': 11}
    """
    if isinstance(data, Release):
        return "auto"
    shape = _shape_of(formula, data, bounds, levels, namespace or {})
    rows = public_rows(data, n)
    if shape is None or rows is None or not shape[0]:
        return "auto"
    cont, cells = shape
    return dict.fromkeys(cont, auto_bins(rows, plan_epsilon, len(cont), cells))


def direct_methods(formula: str, data, *, bounds=None, levels=None, bins="auto",
                   n: int | None = None, epsilon=None,
                   namespace: Mapping | None = None) -> dict[str, str]:
    """The release ``method="auto"`` takes for a direct fit of ``formula`` on
    ``data``, for dp_ols, dp_logit and dp_quantreg (public inputs only: the
    declarations, the public n and ``epsilon``); a family whose choice
    cannot be made (an invalid formula for it) is left out.

    Examples
    --------
    >>> import pandas as pd
    >>> df = pd.DataFrame({"y": [0] * 100, "a": [0.0] * 100, "b": [0.0] * 100,
    ...                    "c": [0.0] * 100})
    >>> b = {v: (0, 1) for v in "abc"}
    >>> direct_methods("y ~ a + b + c", df, bounds=b, levels={"y": [0, 1]}, epsilon=1.0,
    ...                namespace={})
    {'ols': 'moments', 'logit': 'newton', 'quantreg': 'newton'}
    """
    out = {}
    for family in ("ols", "logit", "quantreg"):
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                out[family] = CHOOSERS[family]("auto", formula, data, bounds=bounds,
                                               levels=levels, bins=bins, namespace=namespace,
                                               n=n, epsilon=epsilon)
        except DPModelsError:
            continue
    return out


def histogram_note(formula: str, data, *, bounds=None, levels=None, bins="auto",
                   n: int | None = None, epsilon=None,
                   namespace: Mapping | None = None, columns: bool = False) -> str:
    """What a histogram release of ``formula``'s variables serves, said before
    it is made: "" when a direct fit of every family would take the histogram
    too; else its cells and, for each family whose direct fit would take
    another release, that release and the ``dpmodels release --method`` that
    makes it (public inputs only).  ``dpmodels release`` prints it.
    ``columns``: the release is of a column list, and ``formula`` one formula
    over them (the choice reads the variables' kinds and number, not which
    is the response): the note speaks of a model over these variables.

    Examples
    --------
    >>> import pandas as pd
    >>> df = pd.DataFrame({"y": [0] * 100, "a": [0.0] * 100, "b": [0.0] * 100,
    ...                    "c": [0.0] * 100})
    >>> b = {v: (0, 1) for v in "abc"}
    >>> print(histogram_note("y ~ a + b + c", df, bounds=b, levels={"y": [0, 1]},
    ...                      epsilon=1.0, namespace={}))  # doctest: +ELLIPSIS
    note: this histogram of 4 variables has 16 cells (2 bins for each of a, b, c; 2 level...
    """
    chosen = direct_methods(formula, data, bounds=bounds, levels=levels, bins=bins, n=n,
                            epsilon=epsilon, namespace=namespace)
    others = {family: method for family, method in chosen.items() if method != "histogram"}
    shape = _shape_of(formula, data, bounds, levels, namespace or {})
    rows = public_rows(data, n)
    if not others or shape is None or rows is None:
        return ""
    cont, level_cells = shape
    # the histogram's own rule (dpmodels.domain.axes): bins given per variable (or for
    # all) are fixed, the others share auto_bins of the cells the fixed ones make
    given = dict(bins) if isinstance(bins, Mapping) else (
        {} if isinstance(bins, str) else dict.fromkeys(cont, bins))
    fixed = level_cells * math.prod(int(given[v]) for v in cont if v in given)
    left = [v for v in cont if v not in given]
    try:
        auto = auto_bins(rows, float(epsilon), len(left), fixed) if left else 0
    except (TypeError, ValueError):
        return ""
    per = {v: int(given.get(v, auto)) for v in cont}
    cells = level_cells * math.prod(per.values())
    same = len(set(per.values())) == 1
    grid = (f"{next(iter(per.values()))} bins for each of {', '.join(per)}" if same
            else ", ".join(f"{v}: {k} bins" for v, k in per.items()))
    names = {(m.method, family): m.name for m in _registry.MECHANISMS if m.method
             for family in m.models}
    routes = ", ".join(f"dp_{family}: {names.get((method, family), method)}"
                       for family, method in others.items())
    flags = " or ".join(sorted({f"--method {names.get((method, family), method)}"
                                for family, method in others.items()}))
    fv = _formula_vars(formula, data, namespace)
    n_vars = 0 if fv is None else len(fv.names)
    what = "a model over these variables" if columns else "this formula"
    return (f"note: this histogram of {n_vars} variables has {cells:,} cells ({grid}; "
            f"{level_cells:,} level combinations). Every model over these variables can be "
            f"fitted on it, but a direct fit of {what} would take another release "
            f"({routes}): fitted on this histogram, those models take time in proportion to "
            f"its released cells and their intervals are wider than the direct fit's. To "
            f"answer one of them, release for its formula with {flags}.")


def formula_over(columns) -> str:
    """One formula over ``columns`` (the first as the response), for
    `histogram_note()` of a column list."""
    names = [f"Q({c!r})" if not str(c).isidentifier() else str(c) for c in columns]
    return f"{names[0]} ~ {' + '.join(names[1:]) or '1'}"


def _formula_vars(formula: str, data, namespace):
    """The formula's variables over the data's columns (names only, no row
    read); None when the formula or the data cannot be read (the release's
    own checks say why)."""
    source = source_for(data)
    try:
        cols = source.columns() if source is not None else columns_of(data)
        return formula_variables(formula, cols, namespace or {})
    except Exception:
        return None


def coarse_covariates(formula: str, data, *, bounds=None, levels=None, n: int | None = None,
                      epsilon=None, namespace: Mapping | None = None) -> tuple[str, ...]:
    """The continuous covariates (not the response) that a histogram release
    with ``bins="auto"`` would cut into fewer than ``MIN_COVARIATE_BINS`` bins
    at the public n and ``epsilon`` (`dpmodels.domain.axes.auto_bins()`); empty when
    that cannot be told (n or a finite epsilon unknown, an invalid formula).
    Public inputs only.

    Examples
    --------
    >>> import pandas as pd
    >>> df = pd.DataFrame({"y": [0.0], "a": [0.0], "c": [0]})
    >>> b, lv = {"y": (0, 1), "a": (0, 1)}, {"c": list(range(12))}
    >>> coarse_covariates("y ~ a + C(c)", df, bounds=b, levels=lv, n=100, epsilon=3.0,
    ...                   namespace={})
    ('a',)
    >>> coarse_covariates("y ~ a + C(c)", df, bounds=b, levels=lv, n=100_000, epsilon=3.0,
    ...                   namespace={})
    ()
    """
    parts = _shape_parts(formula, data, bounds, levels, namespace or {})
    rows = public_rows(data, n)
    try:
        eps = float(epsilon)
    except (TypeError, ValueError):
        return ()
    if parts is None or rows is None or not (MIN_EPSILON <= eps < math.inf):
        return ()  # (an invalid formula: the release's own checks say what is wrong)
    cont, cells, response = parts
    covariates = tuple(v for v in cont if v not in response)
    if not covariates or auto_bins(rows, eps, len(cont), cells) >= MIN_COVARIATE_BINS:
        return ()
    return covariates


def _stateful(formula) -> bool:
    """The formula uses a stateful patsy transform (`dpmodels.mechanisms.moments.stateful_transform()`)."""
    try:
        return stateful_transform(formula) is not None
    except Exception:  # an invalid formula: the release's own checks say what is wrong
        return False


def _is_infinite(epsilon) -> bool:
    try:
        return math.isinf(float(epsilon)) and float(epsilon) > 0
    except (TypeError, ValueError):
        return False


def public_rows(data, n=None) -> int | None:
    """The public n the choice reads: the declared ``n``, else the number of
    rows handed in (a DataFrame's length, a mapping's column length, an
    engine's row count), never the number of columns of a mapping; None when
    it cannot be told (the release's own checks then say why).

    Examples
    --------
    >>> public_rows({"y": [0, 1, 2], "x": [1.0, 2.0, 3.0]})
    3
    >>> public_rows({"y": [0, 1, 2]}, n=1000)
    1000
    """
    try:
        if n is not None:
            return int(n)
        source = source_for(data)
        return int(source.nrows()) if source is not None else int(nrows(data))
    except Exception:  # invalid n or data: the release's checks name the problem
        return None


def _declares_unbounded(formula, data, bounds, levels, namespace) -> bool:
    """True when a continuous variable of the formula is declared
    `Unbounded` (only the histogram bins it): from
    the declarations and the schema only."""
    if not isinstance(bounds, Mapping) or not any(
            isinstance(b, Unbounded) for b in bounds.values()):
        return False
    shape = _shape_of(formula, data, bounds, levels, namespace)
    return shape is not None and any(isinstance(bounds[v], Unbounded) for v in shape[0])


#: "auto" leaves the histogram when the caller's ``bins`` make the grid so fine
#: that its cells hold on average less than this many thresholds' worth of
#: rows: n / (cells * k) below it (k the enhanced cut ceil(A log n / epsilon),
#: a lower bound of any threshold the release uses).  The threshold then
#: removes most rows and spurious cells outnumber real ones: on housing with
#: bins=40 (76,800 cells) the released mass was 0.6-57 times n and the
#: slope's interval covered in 0% of data sets at n = 2e4 (benchmarks/validity.py,
#: housing40).  ``bins="auto"`` never goes below 0.8 on the validity shapes.
SPARSE_GRID_RATIO = 0.5


def _sparse_grid(formula, data, bounds, levels, bins, n, epsilon, namespace, other) -> bool:
    """True (with a ReleaseWarning saying so) when the caller's bins leave the
    histogram's cells below ``SPARSE_GRID_RATIO`` thresholds of rows; public
    inputs only (declared n or the rows handed in, epsilon, bounds, levels, bins)."""
    shape = _shape_of(formula, data, bounds, levels, namespace)
    n = public_rows(data, n)
    try:
        eps = float(epsilon)
    except (TypeError, ValueError):
        return False
    if n is None or shape is None or not shape[0] or n < 2 or not (MIN_EPSILON <= eps < math.inf):
        return False  # (the release's own checks say what is wrong)
    cont, cells = shape
    if isinstance(bins, Mapping) and not set(bins) <= set(cont):
        return False  # a key the histogram's checks will name
    m = cells
    for v in cont:
        k = bins.get(v, "auto") if isinstance(bins, Mapping) else bins
        if isinstance(k, str) and k == "auto":
            continue
        if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= MAX_BINS:
            return False  # invalid: the histogram's checks say why
        m *= k
    cut = max(enhanced_cut(n, eps, DEFAULT_A), 1)
    ratio = n / (m * cut)
    if ratio >= SPARSE_GRID_RATIO:
        return False
    warnings.warn(
        f"bins={bins!r} make {m:,} cells for {n:,} rows: {ratio:.2g} thresholds ({cut}) of rows "
        f"per cell, so the histogram's threshold would remove most rows and its spurious cells "
        f"outnumber the real ones. method='auto' chose the {other} release, which takes no "
        f"bins; pass method='histogram' to force the histogram, or fewer bins",
        ReleaseWarning, stacklevel=user_stacklevel())
    return True
