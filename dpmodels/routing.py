"""Routes a ``dp_*`` call to a model built on a mechanism other than the
formula's default releases (:mod:`dpmodels.methods` chooses among those).

A route is a pair (``applies``, ``build``) registered for some of the four
model families ("ols", "logit", "quantreg", "mnlogit").  Each ``dp_*``
function hands its whole call to :func:`route` first; the first route that
applies builds the model, and when none applies the function goes on to its
usual choice between the histogram and its other release.  A new mechanism
is one module plus one line in :data:`ROUTES`; ``applies`` must read public
inputs only (the arguments' types and values, never the rows: PRIVACY.md
rule 4) and import nothing heavy.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Call", "Route", "ROUTES", "route"]


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
