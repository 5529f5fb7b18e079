"""dpmodels: differentially private regression from statsmodels formulas.

>>> import dpmodels as dpm
>>> df = dpm.datasets.housing(n=20_000, seed=0)
>>> res = dpm.dp_ols("price ~ size + year + C(county)", data=df, epsilon=1.0,
...                  bounds={"price": (1e5, 9e5), "size": (0, 3000)},
...                  levels={"county": [f"County{i}" for i in range(1, 7)],
...                          "year": [1, 2, 3, 4]}, random_state=0).fit()
>>> res.privacy.private
True

The package imports lazily (PEP 562): ``import dpmodels`` loads no numerical
library; a name is imported from its module the first time it is used, so that
the ``dpmodels`` command starts quickly and a script pays only for what it uses.
"""

from __future__ import annotations

import importlib
import sys
import types
from typing import TYPE_CHECKING, Any

from .version import __version__ as __version__  # re-exported

if TYPE_CHECKING:  # what type checkers and IDEs see; at run time, `__getattr__` below
    from . import datasets, local
    from .accountant import Accountant
    from .api import dp_logit, dp_mnlogit, dp_ols, dp_quantreg
    from .domain import Axis, Domain
    from .errors import (
        BudgetExceededError,
        ClippingWarning,
        DomainError,
        DomainTooLargeError,
        DomainTypeError,
        DPModelsError,
        DPModelsTypeError,
        MissingValueError,
        NotPrivateWarning,
        ReleaseWarning,
        SeparationError,
        SeparationWarning,
        SingularDesignError,
        UndeclaredLevelError,
        UnknownVariableError,
    )
    from .models import DPOLS, DPLogit, DPMNLogit, DPQuantReg
    from .models.moments_ols import DPMomentsOLS
    from .models.newton_logit import DPNewtonLogit
    from .moments import PrivateMoments, release_moments
    from .newton import PrivateNewton, release_newton
    from .planning import Plan, plan
    from .release import PrivateHistogram, release
    from .report import MomentsReport, PrivacyReport
    from .sample_aggregate import PrivateSampleAggregate, release_sample_aggregate
    from .saved import SavedReleaseError, load_release
    from .selection import FeatureSelection, SelectionReport, select_features
    from .synthetic import SmoothedSample, smoothed_sample
    from .unbounded import Unbounded

__all__ = [
    "dp_ols",
    "dp_logit",
    "dp_quantreg",
    "dp_mnlogit",
    "DPOLS",
    "DPLogit",
    "DPQuantReg",
    "DPMNLogit",
    "DPMomentsOLS",
    "DPNewtonLogit",
    "release",
    "load_release",
    "plan",
    "Plan",
    "release_moments",
    "release_newton",
    "release_sample_aggregate",
    "PrivateSampleAggregate",
    "smoothed_sample",
    "SmoothedSample",
    "PrivateHistogram",
    "PrivateMoments",
    "PrivateNewton",
    "PrivacyReport",
    "MomentsReport",
    "Accountant",
    "Axis",
    "Domain",
    "Unbounded",
    "datasets",
    "local",
    "DPModelsError",
    "DPModelsTypeError",
    "DomainError",
    "DomainTypeError",
    "DomainTooLargeError",
    "UnknownVariableError",
    "UndeclaredLevelError",
    "MissingValueError",
    "BudgetExceededError",
    "NotPrivateWarning",
    "ReleaseWarning",
    "ClippingWarning",
    "SeparationWarning",
    "SeparationError",
    "SingularDesignError",
    "SavedReleaseError",
    "select_features",
    "FeatureSelection",
    "SelectionReport",
]

#: Where each public name lives (module relative to the package); a submodule's
#: own name maps to the package (``"."``).
_HOMES = {
    "datasets": ".", "local": ".", "plots": ".",
    "dp_ols": ".api", "dp_logit": ".api", "dp_quantreg": ".api", "dp_mnlogit": ".api",
    "DPOLS": ".models", "DPLogit": ".models", "DPQuantReg": ".models", "DPMNLogit": ".models",
    "DPMomentsOLS": ".models.moments_ols", "DPNewtonLogit": ".models.newton_logit",
    "release": ".release", "PrivateHistogram": ".release", "load_release": ".saved",
    "SavedReleaseError": ".saved", "plan": ".planning", "Plan": ".planning",
    "release_moments": ".moments", "PrivateMoments": ".moments",
    "release_newton": ".newton", "PrivateNewton": ".newton",
    "release_sample_aggregate": ".sample_aggregate",
    "PrivateSampleAggregate": ".sample_aggregate",
    "smoothed_sample": ".synthetic", "SmoothedSample": ".synthetic",
    "PrivacyReport": ".report", "MomentsReport": ".report", "Accountant": ".accountant",
    "Axis": ".domain", "Domain": ".domain", "Unbounded": ".unbounded",
    "select_features": ".selection", "FeatureSelection": ".selection",
    "SelectionReport": ".selection",
    **{name: ".errors" for name in (
        "DPModelsError", "DPModelsTypeError", "DomainError", "DomainTypeError",
        "DomainTooLargeError", "UnknownVariableError", "UndeclaredLevelError",
        "MissingValueError", "BudgetExceededError", "NotPrivateWarning", "ReleaseWarning",
        "ClippingWarning", "SeparationWarning", "SeparationError", "SingularDesignError")},
}


def __getattr__(name: str) -> Any:
    """Import a public name from its module on first use (PEP 562)."""
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'dpmodels' has no attribute {name!r}")
    if home == ".":
        value: Any = importlib.import_module(f"{__name__}.{name}")
    else:
        value = getattr(importlib.import_module(home, __name__), name)
    globals()[name] = value  # later look-ups are plain attribute reads
    return value


def __dir__() -> list[str]:
    """The public names (what ``from dpmodels import *`` and completion offer)."""
    return sorted({*__all__, "plots", "__version__"})


class _Package(types.ModuleType):
    """The package's module type: the function `release` keeps its name when the
    submodule ``dpmodels.release`` is first imported (the import system would
    otherwise set the package's attribute ``release`` to that submodule)."""

    def __setattr__(self, name: str, value: Any) -> None:
        if name == "release" and isinstance(value, types.ModuleType):
            return
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package
