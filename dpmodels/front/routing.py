"""Routes a ``dp_*`` call to a model built on a mechanism other than the
formula's default releases (`dpmodels.front.methods` chooses among those).

A route is a pair (``applies``, ``build``) of a routed mechanism of the
registry (`dpmodels.front.registry`), for some of the four model families
("ols", "logit", "quantreg", "mnlogit").  Each ``dp_*`` function hands its
whole call to `dispatch()`, which tries `route()`
first: the first route that applies builds the model, and when none applies
the family's method choice names the release.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..core.errors import DPModelsError
from ..core.exact import MIN_EPSILON
from ..core.keywords import suggestion
from ..mechanisms.quantile_steps import _quantiles
from . import registry as _registry
from .methods import CHOOSERS, HISTOGRAM_OPTIONS, plan_bins

__all__ = ["Call", "Route", "ROUTES", "route", "check_options", "check_plan_epsilon",
           "check_release_family", "dispatch", "build_model"]


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
    #: The epsilon ``method="auto"`` chooses at (`check_plan_epsilon()`): the
    #: one the caller plans to release at, when this call runs at another
    #: (``epsilon=inf`` to check a script); None: ``epsilon``.
    plan_epsilon: float | None = None

    @property
    def quantiles(self) -> tuple[float, ...]:
        """dp_quantreg's ``q`` as a tuple of quantiles (the median by default)."""
        return _quantiles(0.5 if self.q is None else self.q)

    def __post_init__(self):
        # select=None asks for the usual path, which takes no such keyword: dropped here,
        # once, so that every route's ``applies`` reads the call without changing it
        if "select" in self.options and self.options["select"] is None:
            self.options.pop("select")
        # plan_epsilon= is the method choice's, no release's: taken (and checked) here,
        # before anything is read or drawn
        if "plan_epsilon" in self.options:
            self.plan_epsilon = self.options.pop("plan_epsilon")
        self.plan_epsilon = check_plan_epsilon(self.plan_epsilon)

    @property
    def choice_epsilon(self):
        """The epsilon the method choice reads: ``plan_epsilon`` when given."""
        return self.epsilon if self.plan_epsilon is None else self.plan_epsilon


def check_plan_epsilon(plan_epsilon) -> float | None:
    """``plan_epsilon`` as a float (None stays None), or a DPModelsError
    before anything is read or drawn: it must be a positive finite number, the
    epsilon the caller plans to release at.

    ``dp_*(..., epsilon=inf, plan_epsilon=1)`` makes ``method="auto"``
    choose the release it would choose at epsilon 1 and runs that release at
    epsilon = inf (no noise, NOT private): the pipeline a script will run,
    checked before the budget is spent.  The release itself uses ``epsilon``
    only; ``plan_epsilon`` is public and spends nothing.

    Examples
    --------
    >>> check_plan_epsilon(1)
    1.0
    >>> check_plan_epsilon(float("inf"))
    Traceback (most recent call last):
    ...
    dpmodels.core.errors.DPModelsError: plan_epsilon must be a positive finite number (the epsilon you plan to release at, e.g. plan_epsilon=1.0), got inf
    """  # noqa: E501
    if plan_epsilon is None:
        return None
    bad = isinstance(plan_epsilon, bool) or not isinstance(plan_epsilon, numbers.Real)
    if not bad:
        value = float(plan_epsilon)
        bad = not (math.isfinite(value) and value > 0)
    if bad:
        raise DPModelsError(
            "plan_epsilon must be a positive finite number (the epsilon you plan to release "
            f"at, e.g. plan_epsilon=1.0), got {plan_epsilon!r}")
    if value < MIN_EPSILON:
        raise DPModelsError(f"plan_epsilon={value:g} is below {MIN_EPSILON:g}, the smallest "
                            "epsilon a release takes")
    return value


@dataclass(frozen=True)
class Route:
    """``build(call)`` returns the model when ``applies(call)``; ``families``
    lists the ``dp_*`` families the route serves."""

    name: str
    families: tuple[str, ...]
    applies: Callable[[Call], bool]
    build: Callable[[Call], Any]


#: The registered routes, tried in order: the routed mechanisms of
#: `dpmodels.front.registry.MECHANISMS`.
def _builder(m) -> Callable[[Call], Any]:
    """``m.build``, looked up when the route builds (not bound once here)."""
    return lambda call: m.build(call)


ROUTES: list[Route] = [Route(m.name, m.families, m.applies, _builder(m))
                       for m in _registry.MECHANISMS if m.applies is not None]


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
                    "random_state", "accountant", "method", "q", "plan_epsilon")
#: Where the options of the other mechanisms belong, for the error message (each
#: registry entry declares its own: `dpmodels.front.registry.Mechanism.options`).
_OPTION_HOMES = {k: where for m in _registry.MECHANISMS for k, where in m.options.items()}


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
    dpmodels.core.errors.DPModelsError: dp_ols takes no option blocks here
    (blocks applies to method='sample-aggregate')
    """
    unknown = sorted(k for k in options if k not in DEFAULT_OPTIONS)
    if not unknown:
        return

    hints = [f"{k} applies to {_OPTION_HOMES[k]}" for k in unknown if k in _OPTION_HOMES]
    names = sorted(set(COMMON_ARGUMENTS) | set(DEFAULT_OPTIONS) | set(_OPTION_HOMES))
    close = [f"did you mean {m!r}" + ("" if len(unknown) == 1 else f" for {k!r}") + "?"
             for k in unknown if k not in _OPTION_HOMES
             for m in [suggestion(k, names)] if m is not None]
    known = ", ".join(DEFAULT_OPTIONS)
    raise DPModelsError(
        f"dp_{family} takes no option {', '.join(unknown)} here ("
        + ("; ".join(hints + close) if hints or close else f"its options are {known}") + ")")


def check_release_family(call) -> None:
    """Refuse a release handed in as ``data`` to a ``dp_*`` family its
    mechanism does not serve (a quantile-steps release to ``dp_ols``), naming
    the ``dp_*`` functions it does serve, before anything is read or spent.
    Releases are recognised by the registry's ``release_type`` (public: the
    argument's type).

    Examples
    --------
    >>> check_release_family(Call("ols", "y ~ x", data=None))
    """
    kind = type(call.data)
    if not kind.__module__.startswith("dpmodels."):
        return
    makers = [m for m in _registry.MECHANISMS if m.release_type == kind.__name__]
    if not makers or any(call.family in m.families for m in makers):
        return
    served = [f for f in _registry.FAMILIES if any(f in m.families for m in makers)]
    fit = " or ".join(f"dp_{f}(formula, release)" for f in served)
    raise DPModelsError(
        f"a {kind.__name__} release ({', '.join(m.name for m in makers)}) serves "
        f"{', '.join('dp_' + f for f in served)} only, not dp_{call.family}: fit {fit}, or "
        f"make a release dp_{call.family} can use from the rows (dp_{call.family}(formula, "
        "rows, epsilon=..., ...), or dpm.release(...) for a histogram any dp_* model can "
        "use; a new release spends its epsilon again)")


def dispatch(call):
    """The model of a ``dp_*`` call: the first route that applies, else the
    mechanism that the family's method choice (`dpmodels.front.methods.CHOOSERS`,
    public inputs only) names.  Options no release takes, a bad ``q`` and a
    misspelt method are refused here, before anything is read or spent."""
    check_release_family(call)
    routed = route(call)
    if routed is not None:
        return routed
    check_options(call.family, call.options)
    if call.family == "quantreg":
        call.quantiles  # noqa: B018 (read to refuse a bad q before the method is chosen)
    chosen = CHOOSERS[call.family](
        call.method, call.formula, call.data, bounds=call.bounds, levels=call.levels,
        bins=call.bins, threshold=call.threshold, options=call.options,
        namespace=call.namespace, n=call.n, epsilon=call.choice_epsilon)
    if (chosen == "histogram" and call.plan_epsilon is not None
            and isinstance(call.bins, str) and call.bins == "auto"):
        # the planned release's bins, not those bins="auto" gives at this epsilon
        call.bins = plan_bins(call.formula, call.data, bounds=call.bounds, levels=call.levels,
                              n=call.n, plan_epsilon=call.plan_epsilon,
                              namespace=call.namespace)
    return build_model(call, chosen)


def build_model(call, chosen: str):
    """The model of ``call`` on the mechanism its family's ``method=`` choice
    ``chosen`` names (the routes were tried before)."""
    return _registry.mechanism(chosen, call.family).build(call)
