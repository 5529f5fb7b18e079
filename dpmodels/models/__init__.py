"""The dp_* models."""

from .ols import DPOLS, dp_ols

__all__ = ["DPOLS", "dp_ols"]
