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

from .core import old_paths as _old_paths
from .core.version import __version__ as __version__  # re-exported

if TYPE_CHECKING:  # what type checkers and IDEs see; at run time, `__getattr__` below
    from .core.accountant import Accountant
    from .core.errors import (
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
    from .core.report import MomentsReport, PrivacyReport
    from .core.unbounded import Unbounded
    from .domain.axes import Axis, Domain
    from .front import datasets
    from .front.api import dp_logit, dp_mnlogit, dp_ols, dp_quantreg
    from .front.planning import Plan, plan
    from .front.saved import SavedReleaseError, load_release
    from .mechanisms import local
    from .mechanisms.histogram import PrivateHistogram, release
    from .mechanisms.moments import PrivateMoments, release_moments
    from .mechanisms.moments.model import DPMomentsOLS
    from .mechanisms.newton import PrivateNewton, release_newton
    from .mechanisms.newton.model import DPNewtonLogit
    from .mechanisms.sample_aggregate import PrivateSampleAggregate, release_sample_aggregate
    from .mechanisms.selection import FeatureSelection, SelectionReport, select_features
    from .mechanisms.synthetic import SmoothedSample, smoothed_sample
    from .models import DPOLS, DPLogit, DPMNLogit, DPQuantReg

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

#: Where each public name lives (module relative to the package).  A name that is
#: a module itself (``datasets``, ``local``, ``plots``) maps to that module.
_HOMES = {
    "datasets": ".front.datasets", "local": ".mechanisms.local", "plots": ".output.plots",
    "dp_ols": ".front.api", "dp_logit": ".front.api", "dp_quantreg": ".front.api",
    "dp_mnlogit": ".front.api",
    "DPOLS": ".models", "DPLogit": ".models", "DPQuantReg": ".models", "DPMNLogit": ".models",
    "DPMomentsOLS": ".mechanisms.moments.model", "DPNewtonLogit": ".mechanisms.newton.model",
    "release": ".mechanisms.histogram", "PrivateHistogram": ".mechanisms.histogram",
    "load_release": ".front.saved", "SavedReleaseError": ".front.saved",
    "plan": ".front.planning", "Plan": ".front.planning",
    "release_moments": ".mechanisms.moments", "PrivateMoments": ".mechanisms.moments",
    "release_newton": ".mechanisms.newton", "PrivateNewton": ".mechanisms.newton",
    "release_sample_aggregate": ".mechanisms.sample_aggregate",
    "PrivateSampleAggregate": ".mechanisms.sample_aggregate",
    "smoothed_sample": ".mechanisms.synthetic", "SmoothedSample": ".mechanisms.synthetic",
    "PrivacyReport": ".core.report", "MomentsReport": ".core.report",
    "Accountant": ".core.accountant",
    "Axis": ".domain.axes", "Domain": ".domain.axes", "Unbounded": ".core.unbounded",
    "select_features": ".mechanisms.selection", "FeatureSelection": ".mechanisms.selection",
    "SelectionReport": ".mechanisms.selection",
    **{name: ".core.errors" for name in (
        "DPModelsError", "DPModelsTypeError", "DomainError", "DomainTypeError",
        "DomainTooLargeError", "UnknownVariableError", "UndeclaredLevelError",
        "MissingValueError", "BudgetExceededError", "NotPrivateWarning", "ReleaseWarning",
        "ClippingWarning", "SeparationWarning", "SeparationError", "SingularDesignError")},
}
_MODULE_NAMES = ("datasets", "local", "plots")


def __getattr__(name: str) -> Any:
    """Import a public name from its module on first use (PEP 562)."""
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'dpmodels' has no attribute {name!r}")
    module = importlib.import_module(home, __name__)
    value: Any = module if name in _MODULE_NAMES else getattr(module, name)
    globals()[name] = value  # later look-ups are plain attribute reads
    return value


def __dir__() -> list[str]:
    """The public names (what ``from dpmodels import *`` and completion offer)."""
    return sorted({*__all__, "plots", "__version__"})


class _Package(types.ModuleType):
    """The package's module type: the function `release` keeps its name when the
    old path ``dpmodels.release`` of `dpmodels.mechanisms.histogram` is imported
    (`dpmodels.core.old_paths`; the import system would otherwise set the
    package's attribute ``release`` to that module)."""

    def __setattr__(self, name: str, value: Any) -> None:
        if name == "release" and isinstance(value, types.ModuleType):
            return
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package
_old_paths.install()
