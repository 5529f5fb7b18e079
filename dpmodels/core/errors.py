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
    "SavedReleaseError",
    "DomainTypeError",
    "UnknownVariableError",
    "UndeclaredLevelError",
    "MissingValueError",
    "DomainTooLargeError",
    "BudgetExceededError",
    "NotPrivateWarning",
    "ReleaseWarning",
    "ClippingWarning",
    "SeparationWarning",
    "SeparationError",
    "SingularDesignError",
]


class DPModelsError(ValueError):
    """Base class of the input errors dpmodels raises (a `ValueError`).

    Catch it to handle every refused call: its message names the argument or
    variable and what to do.  Raised before any row is read or any noise is
    drawn, so a refused call spends no budget.

    Examples
    --------
    >>> import dpmodels as dpm
    >>> df = dpm.datasets.housing(n=1000, seed=0)
    >>> try:
    ...     dpm.release(df, columns=["price"], epsilon=-1.0, bounds={"price": (1e5, 9e5)})
    ... except dpm.DPModelsError as err:
    ...     print(type(err).__name__)
    DPModelsError
    """


class DPModelsTypeError(DPModelsError, TypeError):
    """An argument has the wrong type (e.g. ``epsilon="1"``); also a
    `TypeError`."""


class DomainError(DPModelsError):
    """A public domain (bounds, levels, bins) is missing or invalid: e.g. a
    continuous variable without ``bounds``, a discrete one without
    ``levels``, ``low >= high``, or ``C(x)`` of a binned variable.  Declare the
    domain from public knowledge (a codebook, the variable's definition),
    never from the data."""


class DomainTypeError(DomainError, DPModelsTypeError):
    """A domain declaration (bounds, levels, bins) has the wrong type, e.g.
    ``bounds={"x": "0,10"}``; also a `TypeError`."""


class UnknownVariableError(DPModelsError):
    """A formula or ``columns`` names a variable the data (or a release) does
    not have; the message names it and what is available.  Check the
    spelling, or make a release that includes the variable."""


class UndeclaredLevelError(DomainError):
    """A discrete variable takes a value outside its declared level set.

    Raised while the rows are counted, before any noise is drawn.  Add the
    value to ``levels`` if it is a legitimate level, or recode or drop the
    rows first; the message names the variable and a few of the undeclared
    values."""


class MissingValueError(DPModelsError):
    """A model variable has missing values and ``missing="raise"`` was asked.
    Use ``missing="drop"`` (the default) to leave such rows out, or impute
    them before the release."""


class SavedReleaseError(DPModelsError):
    """A saved release cannot be written (an unsupported level type) or read
    (not a dpmodels release, an unknown major version, a missing key, or
    values that contradict each other or the declared domain)."""


class DomainTooLargeError(DomainError):
    """The domain cannot be released within the configured limits: more cells
    than a 64-bit cell id addresses, more expected spurious (pure-noise) cells
    than ``max_spurious_cells``, or too many cells for a local release.  Use
    fewer bins or variables, a higher threshold, or another mechanism
    (``method="moments"``, ``"newton"``, ``"sample-aggregate"``)."""


class BudgetExceededError(DPModelsError):
    """A release would take an `Accountant` past its total.  Nothing is read
    or charged.  Fit further models on an existing release (free), or lower
    epsilon."""


class NotPrivateWarning(UserWarning):
    """The release is not differentially private: ``epsilon=inf`` releases
    exact values (for testing and comparison only; never publish them)."""


class ReleaseWarning(UserWarning):
    """Something about a release or fit the user should know about: e.g. the
    binning may bias some coefficients, a coefficient the release carries no
    information about, too few noisy rows for the number of parameters.  Each
    message names the coefficients or variables and what to do.  Filter it
    like any warning (``warnings.simplefilter("error", dpm.ReleaseWarning)``
    turns it into an error)."""


class ClippingWarning(ReleaseWarning):
    """A large share of the rows lies outside a variable's declared bounds
    (the release's noisy count, ``report.outside_bounds``): the clipped values
    moved to the bounds, so the estimates and their intervals describe the
    clipped data, not the population.  The message names each such variable;
    widen its bounds from public knowledge.  A `ReleaseWarning`."""


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
    released cell).  Use fewer levels or bins, a larger epsilon, or drop the
    term.  Also a ``numpy.linalg.LinAlgError``."""
