"""Which release a model is fitted on: the registry ``method="auto"`` reads.

Every choice depends on public inputs only (the formula, the declared
domain, the data's type, the options the caller gave), never on the rows:
PRIVACY.md rule 4.

=============  =========================================  ====================================
method         release                                    models
=============  =========================================  ====================================
"histogram"    :func:`dpmodels.release` (Lei 2011)        all dp_* models
"moments"      :func:`dpmodels.moments.release_moments`   dp_ols
=============  =========================================  ====================================
"""

from __future__ import annotations

from collections.abc import Mapping

from .errors import DPModelsError
from .validation import check_choice

__all__ = ["OLS_METHODS", "choose_ols_method", "HISTOGRAM_MAX_CONTINUOUS",
           "HISTOGRAM_MIN_CELLS"]

OLS_METHODS = ("auto", "histogram", "moments")
#: "auto" keeps the histogram for OLS when the formula has at most this many
#: continuous variables (response included) and its factors have at least
#: HISTOGRAM_MIN_CELLS level combinations: there the factors carry the model,
#: the histogram's grid stays fine and it is the more accurate release
#: (benchmarks/peers.py, docs/accuracy.md).  Everywhere else, the moments.
HISTOGRAM_MAX_CONTINUOUS = 3
HISTOGRAM_MIN_CELLS = 8
#: Options that only a histogram release takes: giving one asks for it.
HISTOGRAM_OPTIONS = ("threshold_A", "max_spurious_cells", "representatives")


def _shape(formula: str, data, bounds, levels, namespace) -> tuple[int, int] | None:
    """(continuous variables, level combinations of the discrete ones) of the
    formula, from the declarations and the schema only (None: the formula or
    the declarations are invalid; the release reports why)."""
    from .formula import formula_variables
    from .release import _columns_of, _dtype_of

    try:
        fv = formula_variables(formula, _columns_of(data), namespace)
    except Exception:
        return None
    bounds = dict(bounds) if isinstance(bounds, Mapping) else {}
    levels = dict(levels) if isinstance(levels, Mapping) else {}
    d, cells = 0, 1
    for v in fv.names:
        if v in bounds and v not in fv.discrete:
            d += 1
        elif v in levels:
            spec = levels[v]
            if isinstance(spec, str):  # "dtype": the declared Categorical's categories
                try:
                    spec = list(getattr(_dtype_of(data, v), "categories", []))
                except Exception:
                    return None
            try:
                cells *= max(len(spec), 1)
            except TypeError:
                return None
        else:
            try:
                dtype = _dtype_of(data, v)
            except Exception:
                return None
            cells *= 2 if str(dtype) == "bool" else 1
    return d, cells


def choose_ols_method(method: str, formula: str, data, *, bounds=None, levels=None,
                      bins="auto", threshold="enhanced", options: Mapping | None = None,
                      namespace: Mapping | None = None) -> str:
    """Resolve dp_ols' ``method`` to "histogram" or "moments".

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
    """
    from .engines import source_for
    from .moments import PrivateMoments
    from .release import PrivateHistogram

    method = check_choice("method", method, OLS_METHODS)
    options = dict(options or {})
    hist_opts = [k for k in HISTOGRAM_OPTIONS if k in options]
    if not (isinstance(bins, str) and bins == "auto"):
        hist_opts.append("bins")
    if not (isinstance(threshold, str) and threshold == "enhanced"):
        hist_opts.append("threshold")
    if isinstance(data, PrivateMoments):
        if method == "histogram":
            raise DPModelsError("data is a moments release: method='histogram' needs raw rows "
                                "or a PrivateHistogram")
        chosen = "moments"
    elif isinstance(data, PrivateHistogram):
        if method == "moments":
            raise DPModelsError("data is a histogram release: method='moments' needs raw rows "
                                "or a PrivateMoments")
        chosen = "histogram"
    elif method != "auto":
        chosen = method
    elif hist_opts or source_for(data) is not None:
        chosen = "histogram"
    else:
        shape = _shape(formula, data, bounds, levels, namespace or {})
        if shape is None:
            chosen = "histogram"  # its own checks name what is wrong
        else:
            d, cells = shape
            factors_lead = d <= HISTOGRAM_MAX_CONTINUOUS and cells >= HISTOGRAM_MIN_CELLS
            chosen = "histogram" if factors_lead else "moments"
    if chosen == "moments" and hist_opts:
        raise DPModelsError(
            f"{', '.join(hist_opts)} apply to the histogram release; the moments release "
            "takes none of them: leave them out or use method='histogram'")
    return chosen
