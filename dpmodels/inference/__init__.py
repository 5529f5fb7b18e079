"""Noise-aware inference for the dp_* models: a parametric bootstrap of the
release, computed from the release and public inputs only.

The mechanism (discrete Laplace noise of scale 2/epsilon on every cell of the
public domain, then the public threshold) and the public n are known.  So the
sampling distribution of any estimate fitted on a release can be simulated
without the data (Ferrando, Wang & Sheldon 2022):

1. **population**: the released non-negative counts, normalized, are the
   estimate ``p_hat`` of the population cell probabilities (unreleased
   cells get probability zero; see ``docs/inference-methods.md`` for why no floor);
2. **sampling**: a replicate true histogram is ``Multinomial(n, p_hat)``
   over the released cells, with the public n;
3. **mechanism**: the law of the mechanism of `dpmodels.core.noise`
   is applied to the replicate: noise on every one of the domain's m cells
   (the released ones directly, the other ``m - |S|`` empty ones through
   the sparse construction of Vinterbo §2.1: a binomial number of them cross
   the threshold, uniformly placed, with tail values), the same threshold.
   A simulation only needs the law, not an exact or secure sampler: it
   uses the fast float64 draws ``simulate_*`` of `dpmodels.core.noise`;
4. **refit**: the model is refitted on the replicate release, marginalized
   to the formula's variables exactly as the original fit was.

The spread of the replicate estimates around the estimate from the release
estimates the spread of that estimate around its target, sampling and
privacy noise together; their mean minus the estimate estimates the bias of
thresholding.  Nothing here reads raw rows: the input is a
`PrivateHistogram` (PRIVACY.md rule 6: post-processing
is free).

Refits are vectorized across replicates where the model allows: OLS solves
all replicates' weighted normal equations at once; logit and multinomial
logit take damped Newton steps from the point estimate for all replicates at
once; quantile regression solves each replicate's exact linear program from
one model hot-started at the first replicate's optimal basis
(`dpmodels.models.quantreg_lp`).  Where the representatives are refitted
on replicates (``"density"``), a formula affine in the continuous variables
moves the design rows with the points instead of rebuilding them
(`CellDesign`).

The code is split by job: `dpmodels.mechanisms.simulation` (replicate releases),
`dpmodels.inference.bootstrap` (the model's cells and the driver),
`dpmodels.inference.binning` (the binning diagnostic),
`dpmodels.core.batched` (linear algebra across replicates), each model's
``refit_*`` beside the model, `dpmodels.inference.intervals` (standard errors and
intervals) and `dpmodels.inference.dp_results` (the results classes' side).  This
module re-exports their public names.
"""

from __future__ import annotations

from ..mechanisms.simulation import ReleaseSimulator, ReplicateChunk
from .binning import coarsen_frame
from .bootstrap import DEFAULT_N_BOOT, DEFAULT_N_REFIT, CellDesign, parametric_bootstrap
from .dp_results import DPInferenceResultsMixin, attach_dp_inference
from .intervals import COV_TYPES, INTERVALS, BinningCheck, DPInference, resolve_cov_type

__all__ = [
    "DEFAULT_N_BOOT",
    "DEFAULT_N_REFIT",
    "INTERVALS",
    "COV_TYPES",
    "ReleaseSimulator",
    "ReplicateChunk",
    "CellDesign",
    "DPInference",
    "BinningCheck",
    "parametric_bootstrap",
    "resolve_cov_type",
    "DPInferenceResultsMixin",
    "attach_dp_inference",
    "coarsen_frame",
]
