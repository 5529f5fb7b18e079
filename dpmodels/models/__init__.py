"""The dp_* models: statsmodels models fitted on a private histogram."""

from .logit import DPLogit, dp_logit
from .mnlogit import DPMNLogit, dp_mnlogit
from .ols import DPOLS, dp_ols
from .quantreg import DPQuantReg, dp_quantreg

__all__ = ["DPOLS", "dp_ols", "DPLogit", "dp_logit", "DPQuantReg", "dp_quantreg",
           "DPMNLogit", "dp_mnlogit"]
