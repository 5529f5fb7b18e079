"""The dp_* models: statsmodels models fitted on a private release (the
``dp_*`` functions that build them are in `dpmodels.front.api`)."""

from .logit import DPLogit
from .mnlogit import DPMNLogit
from .ols import DPOLS
from .quantreg import DPQuantReg

__all__ = ["DPOLS", "DPLogit", "DPQuantReg", "DPMNLogit"]
