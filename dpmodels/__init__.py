"""dpmodels: differentially private regression from statsmodels formulas.

>>> import dpmodels as dpm
>>> df = dpm.datasets.housing(n=20_000, seed=0)
>>> res = dpm.dp_ols("price ~ size + year + C(county)", data=df, epsilon=1.0,
...                  bounds={"price": (1e5, 9e5), "size": (0, 3000)},
...                  levels={"county": [f"County{i}" for i in range(1, 7)],
...                          "year": [1, 2, 3, 4]}, random_state=0).fit()
>>> res.privacy.private
True
"""

from . import datasets, local
from .accountant import Accountant
from .api import dp_logit, dp_mnlogit, dp_ols, dp_quantreg
from .domain import Axis, Domain
from .errors import (
    BudgetExceededError,
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
from .version import __version__ as __version__  # re-exported

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
    "SeparationWarning",
    "SeparationError",
    "SingularDesignError",
    "SavedReleaseError",
    "select_features",
    "FeatureSelection",
    "SelectionReport",
]
