"""Routes a ``dp_*`` call to a model built on a mechanism other than the
formula's default releases (:mod:`dpmodels.methods` chooses among those).

A route is a pair (``applies``, ``build``) registered for some of the four
model families ("ols", "logit", "quantreg", "mnlogit").  Each ``dp_*``
function hands its whole call to :func:`route` first; the first route that
applies builds the model, and when none applies the function goes on to its
usual choice between the histogram and its other release.  A new mechanism
is one module plus one line in :data:`ROUTES`; ``applies`` must read public
inputs only (the arguments' types and values, never the rows: PRIVACY.md
rule 4), leave the call as it found it, and import nothing heavy.
"""

from __future__ import annotations

import difflib

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from .methods import HISTOGRAM_OPTIONS

__all__ = ["Call", "Route", "ROUTES", "route", "check_options"]


@dataclass
class Call:
    """A ``dp_*`` call's arguments, as the caller gave them.

    ``namespace`` is the formula's evaluation environment (already resolved
    from ``eval_env``); ``options`` holds the remaining keyword arguments
    (a route that takes one pops it).
    """

    family: str
    formula: str
    data: Any
    epsilon: float | None = None
    bounds: Any = None
    levels: Any = None
    bins: Any = "auto"
    threshold: Any = "enhanced"
    n: int | None = None
    random_state: Any = None
    accountant: Any = None
    method: str = "auto"
    q: Any = None
    namespace: dict = field(default_factory=dict)
    options: dict = field(default_factory=dict)

    def __post_init__(self):
        # select=None asks for the usual path, which takes no such keyword: dropped here,
        # once, so that every route's ``applies`` reads the call without changing it
        if "select" in self.options and self.options["select"] is None:
            self.options.pop("select")


@dataclass(frozen=True)
class Route:
    """``build(call)`` returns the model when ``applies(call)``; ``families``
    lists the ``dp_*`` families the route serves."""

    name: str
    families: tuple[str, ...]
    applies: Callable[[Call], bool]
    build: Callable[[Call], Any]


#: The registered routes, tried in order.
ROUTES: list[Route] = []


def _local_applies(call: Call) -> bool:
    # a marker attribute of LocalRelease / LocalHistogram: no import of dpmodels.local
    return bool(getattr(type(call.data), "_dpm_local", False))


def _local_build(call: Call):
    from .local import build_model

    return build_model(call)


ROUTES.append(Route("local", ("ols", "logit", "quantreg", "mnlogit"), _local_applies,
                    _local_build))


def _projected_applies(call: Call) -> bool:
    return call.options.get("select") is not None


def _projected_build(call: Call):
    from .projected import build_projected

    return build_projected(call)


ROUTES.append(Route("projected", ("logit", "mnlogit"), _projected_applies, _projected_build))


def _sample_aggregate_applies(call: Call) -> bool:
    # method="sample-aggregate", or a sample-aggregate release handed in as data (a marker
    # attribute: no import of dpmodels.sample_aggregate)
    return (call.method == "sample-aggregate"
            or bool(getattr(type(call.data), "_dpm_sample_aggregate", False)))


def _sample_aggregate_build(call: Call):
    from .sample_aggregate import build_sample_aggregate

    return build_sample_aggregate(call)


ROUTES.append(Route("sample-aggregate", ("ols", "logit", "quantreg", "mnlogit"),
                    _sample_aggregate_applies, _sample_aggregate_build))


def route(call: Call):
    """The model of the first registered route that applies to ``call``, or
    None (the ``dp_*`` function then takes its usual path).

    Examples
    --------
    >>> route(Call("ols", "y ~ x", data=None)) is None
    True
    """
    for r in ROUTES:
        if call.family in r.families and r.applies(call):
            return r.build(call)
    return None


#: Keyword options of the default releases (the histogram's, and ``missing``).
DEFAULT_OPTIONS = ("missing",) + HISTOGRAM_OPTIONS
#: The dp_* functions' own arguments (for "did you mean" in the error message).
COMMON_ARGUMENTS = ("formula", "data", "epsilon", "bounds", "levels", "bins", "threshold", "n",
                    "random_state", "accountant", "method", "q")
#: Where the options of the routes belong, for the error message.
_OPTION_HOMES = {
    "blocks": "method='sample-aggregate'", "param_bounds": "method='sample-aggregate'",
    "bias_correction": "method='sample-aggregate'",
    "select": "dp_logit and dp_mnlogit", "gamma": "dp_logit and dp_mnlogit with select=",
}


def check_options(family: str, options: dict) -> None:
    """Refuse keyword options no release of this call takes (a DPModelsError
    naming them and where they belong), before anything is read or spent:
    the ``dp_*`` functions pass their remaining ``**kwargs`` here once no
    route applied.

    Examples
    --------
    >>> check_options("ols", {"missing": "drop"})
    >>> check_options("ols", {"blocks": 10})
    Traceback (most recent call last):
    ...
    dpmodels.errors.DPModelsError: dp_ols takes no option blocks here (blocks applies to method='sample-aggregate')
    """
    unknown = sorted(k for k in options if k not in DEFAULT_OPTIONS)
    if not unknown:
        return
    from .errors import DPModelsError

    hints = [f"{k} applies to {_OPTION_HOMES[k]}" for k in unknown if k in _OPTION_HOMES]
    names = sorted(set(COMMON_ARGUMENTS) | set(DEFAULT_OPTIONS) | set(_OPTION_HOMES))
    close = [f"did you mean {m[0]!r}" + ("" if len(unknown) == 1 else f" for {k!r}") + "?"
             for k in unknown if k not in _OPTION_HOMES
             for m in [difflib.get_close_matches(k, names, n=1)] if m]
    known = ", ".join(DEFAULT_OPTIONS)
    raise DPModelsError(
        f"dp_{family} takes no option {', '.join(unknown)} here ("
        + ("; ".join(hints + close) if hints or close else f"its options are {known}") + ")")
