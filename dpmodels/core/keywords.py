"""Misspelt keyword arguments: one refusal, with a "did you mean", for every
public entry point.

``dp_ols(..., epsilion=1)`` and ``res = model.fit(n_boots=500)`` are typing
slips whose cost differs: Python refuses the first with a bare `TypeError`,
and a ``fit`` that passes unknown keywords on to statsmodels may drop the
second silently (500 replicates asked, 200 drawn).  `checked_keywords` wraps a
public function so that a keyword it does not take raises a
`dpmodels.DPModelsTypeError` (also a `TypeError`) naming the keyword and the
closest name it does take, before the function's body runs: before any data is
read or any budget spent.  `suggestion` is the "did you mean" phrase itself,
shared with the ``dp_*`` functions' own option check (`dpmodels.front.routing`).
"""

from __future__ import annotations

import difflib
import functools
import inspect
from collections.abc import Callable, Iterable
from typing import Any, TypeVar, cast

__all__ = ["suggestion", "refuse_keywords", "checked_keywords"]

F = TypeVar("F", bound=Callable[..., Any])

#: How close a keyword must be to a parameter's name for "did you mean"
#: (`difflib.SequenceMatcher.ratio`; ``n_boots``/``n_boot`` is 0.92,
#: ``epsilion``/``epsilon`` 0.93, ``randomstate``/``random_state`` 0.96).
CUTOFF = 0.6
#: A function that passes unknown keywords on (``**kwargs`` to statsmodels)
#: refuses only those this close to one of its own parameters.
CUTOFF_PASSED_ON = 0.8


def suggestion(name: str, names: Iterable[str], cutoff: float = CUTOFF) -> str | None:
    """The name of ``names`` closest to ``name`` (None when none is close).

    Examples
    --------
    >>> suggestion("epsilion", ["epsilon", "bounds", "levels"])
    'epsilon'
    >>> suggestion("colour", ["epsilon", "bounds"]) is None
    True
    """
    close = difflib.get_close_matches(name, sorted(set(names)), n=1, cutoff=cutoff)
    return close[0] if close else None


def refuse_keywords(where: str, unknown: Iterable[str], names: Iterable[str]) -> None:
    """Raise a `dpmodels.DPModelsTypeError` for the keywords ``unknown`` that
    ``where`` does not take: each with its "did you mean", else the list of
    the keywords it takes.  Does nothing when ``unknown`` is empty.

    Examples
    --------
    >>> refuse_keywords("release", ["epsilion"], ["epsilon", "bounds"])
    Traceback (most recent call last):
    ...
    dpmodels.core.errors.DPModelsTypeError: release() got an unexpected keyword argument 'epsilion': did you mean 'epsilon'?
    """  # noqa: E501
    unknown, names = list(unknown), sorted(set(names))
    if not unknown:
        return
    # (imported here: the command line's usage errors use `suggestion` without
    # loading dpmodels.core.errors, which imports statsmodels)
    from .errors import DPModelsTypeError

    parts = []
    for k in unknown:
        close = suggestion(k, names)
        parts.append(f"{k!r}: did you mean {close!r}?" if close is not None else
                     f"{k!r} (it takes {', '.join(names)})")
    plural = "s" if len(unknown) > 1 else ""
    raise DPModelsTypeError(
        f"{where}() got an unexpected keyword argument{plural} " + "; ".join(parts))


def checked_keywords(func: F) -> F:
    """Decorator: refuse a keyword argument ``func`` does not take, with a
    "did you mean" (`refuse_keywords`), before ``func`` runs.

    A function with ``**kwargs`` (a ``fit`` that passes options on to
    statsmodels) refuses only keywords within `CUTOFF_PASSED_ON` of one of its
    own parameters (``n_boots``, ``randomstate``); any other keyword is passed
    on as before.

    Examples
    --------
    >>> @checked_keywords
    ... def draw(*, epsilon=1.0, n_boot=200):
    ...     return epsilon
    >>> draw(n_boots=10)
    Traceback (most recent call last):
    ...
    dpmodels.core.errors.DPModelsTypeError: draw() got an unexpected keyword argument 'n_boots': did you mean 'n_boot'?
    """  # noqa: E501
    params = inspect.signature(func).parameters.values()
    names = frozenset(p.name for p in params
                      if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY))
    passes_on = any(p.kind is p.VAR_KEYWORD for p in params)
    where = func.__qualname__

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        unknown = [k for k in kwargs if k not in names]
        if unknown and passes_on:
            unknown = [k for k in unknown
                       if suggestion(k, names, CUTOFF_PASSED_ON) is not None]
        if unknown:
            refuse_keywords(where, unknown, names)
        return func(*args, **kwargs)

    return cast(F, wrapper)
