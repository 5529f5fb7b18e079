"""``dp_ols(method="ssp")``: least squares on the SSP release
(`dpmodels.mechanisms.ssp`), with the noisy-moments model's estimate, floors
and parametric bootstrap (`dpmodels.mechanisms.moments.model`): the release is
a `PrivateMoments` whose centres, scales and radius are public."""

from __future__ import annotations

from ..moments.model import DPMomentsOLS
from . import PrivateSSP, release_ssp

__all__ = ["DPSSPOLS"]


class DPSSPOLS(DPMomentsOLS):
    """Differentially private least squares on the design's moments perturbed
    on the declared bounds (sufficient-statistics perturbation).

    Built by `dpmodels.dp_ols()` with ``method="ssp"``; fits, standard errors
    and intervals as `DPMomentsOLS`.
    """

    _name = "DP OLS (SSP)"
    method = "ssp"
    _release_type = PrivateSSP
    _release_fn = staticmethod(release_ssp)
