"""Exceptions and warnings raised by dpmodels.

Every error about the caller's input subclasses `DPModelsError` (a
`ValueError`), names the argument or variable concerned and says what
to do; all of them are raised before any noise is drawn.  An argument of the
wrong type raises a `DPModelsTypeError`, which is also a
`TypeError`, so that callers catching either keep working.
"""

from __future__ import annotations

import numpy as np
from statsmodels.tools.sm_exceptions import PerfectSeparationError, PerfectSeparationWarning

__all__ = [
    "DPModelsError",
    "DPModelsTypeError",
    "DomainError",
    "DomainTypeError",
    "UnknownVariableError",
    "UndeclaredLevelError",
    "MissingValueError",
    "DomainTooLargeError",
    "BudgetExceededError",
    "NotPrivateWarning",
    "ReleaseWarning",
    "SeparationWarning",
    "SeparationError",
    "SingularDesignError",
]


class DPModelsError(ValueError):
    """Base class of the input errors dpmodels raises."""


class DPModelsTypeError(DPModelsError, TypeError):
    """An argument has the wrong type (e.g. ``epsilon="1"``); also a
    `TypeError`."""


class DomainError(DPModelsError):
    """A public domain (bounds, levels, bins) is missing or invalid."""


class DomainTypeError(DomainError, DPModelsTypeError):
    """A domain declaration (bounds, levels, bins) has the wrong type, e.g.
    ``bounds={"x": "0,10"}``; also a `TypeError`."""


class UnknownVariableError(DPModelsError):
    """A formula or ``columns`` names a variable the data does not have."""


class UndeclaredLevelError(DomainError):
    """A discrete variable takes a value outside its declared level set."""


class MissingValueError(DPModelsError):
    """A model variable has missing values and ``missing="raise"`` was asked."""


class DomainTooLargeError(DomainError):
    """The domain cannot be released within the configured limits."""


class BudgetExceededError(DPModelsError):
    """A release would take an `Accountant` past its total."""


class NotPrivateWarning(UserWarning):
    """The release is not differentially private (``epsilon=inf``)."""


class ReleaseWarning(UserWarning):
    """Something about a release or fit the user should know about."""


class SeparationWarning(ReleaseWarning, PerfectSeparationWarning):
    """The (released) data are separated: some estimates diverge and are not
    identified.  Also a statsmodels ``PerfectSeparationWarning``."""


class SeparationError(DPModelsError, PerfectSeparationError):
    """The (released) data are separated so that no fit is possible, e.g. the
    response takes a single value in every released cell.  Also a
    statsmodels ``PerfectSeparationError``."""


class SingularDesignError(DPModelsError, np.linalg.LinAlgError):
    """The design matrix of the released cells is rank-deficient, so the
    likelihood has no unique maximum (e.g. a factor level without any
    released cell)."""
