"""The quantile-steps release's saved file read back
(`PrivateQuantileSteps.saved_parts()` writes it): its noisy steps per quantile, the
least-squares start, the noisy residual histogram and level counts, and the
claim check that rebuilds its split of epsilon, its noise variances and each
quantile's band from the stated epsilon with this mechanism's own code.

The design is saved as the moments' (`dpmodels.mechanisms.moments.codec`).  The
registry entry ``quantile-newton`` names this module as its codec.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np

from ...core.exact import discrete_laplace_variance
from ...domain.axes import Domain
from ...output.documents import (
    Reader,
    SavedReleaseError,
    claim_error,
    clips,
    int_vector,
    pairs,
    parts_claim,
    positive,
    symmetric,
    variances,
)
from ..moments import unit_epsilon
from ..moments.codec import formula_release_in, moments_tuple, scales_in
from ..newton import LEVELS
from ..newton.codec import noiseless_claim, step_noise
from . import (
    NOISE_ROWS,
    PrivateQuantileSteps,
    band_share,
    level_sensitivity,
    quantile_split,
    residual_edges,
    score_sensitivity,
    start_and_bandwidth,
)

__all__ = ["KIND", "read"]

#: The file's ``release_type`` (the release class's ``saved_kind``).
KIND = PrivateQuantileSteps.saved_kind


def _bandwidths(body: Reader, m: int) -> np.ndarray:
    h = body.floats("bandwidth", (m,))
    if not np.all(np.isfinite(h) & (h > 0)):
        raise SavedReleaseError(f"release.bandwidth must be positive, got {h.tolist()}")
    return h


def read(doc: Reader, domain: Domain, namespace: Mapping) -> PrivateQuantileSteps:
    """The quantile-steps release a saved document holds, checked."""
    report, body, space, q = formula_release_in(doc, domain, namespace, response=False)
    k = q + 1
    quantiles = body.list("quantiles")
    m = len(quantiles)
    taus = tuple(float(t) for t in body.floats("quantiles", (m,)))
    if m == 0 or not all(0.0 < t < 1.0 for t in taus):
        raise SavedReleaseError(f"release.quantiles must be one or more numbers strictly "
                                f"between 0 and 1, got {list(taus)}")
    steps = body.list("steps")
    if len(steps) != m:
        raise SavedReleaseError(f"release.steps must hold one list per quantile ({m}), got "
                                f"{len(steps)}")
    steps = tuple(variances(pairs(s, f"release.steps[{i}]"), f"release.steps[{i}]")
                  for i, s in enumerate(steps))
    edges = body.floats("residual_edges", (len(body.list("residual_edges")),))
    if not np.array_equal(edges, residual_edges()):
        raise SavedReleaseError("release.residual_edges is not the public residual grid of "
                                "the quantile-steps release")
    res_counts = int_vector(body.list("residual_counts"), "release.residual_counts")
    if len(res_counts) != edges.size + 1:
        raise SavedReleaseError(
            f"release.residual_counts has {len(res_counts)} entries; the residual grid has "
            f"{edges.size + 1} bins")
    n_levels = len(body.list("level_counts"))
    if n_levels not in (0, 1 + int(space.dummy.sum())):
        raise SavedReleaseError(
            f"release.level_counts has {n_levels} entries; the design has "
            f"{int(space.dummy.sum())} 0/1 columns (0 or {1 + int(space.dummy.sum())} entries)")
    rel = PrivateQuantileSteps(
        space, taus, body.floats("beta", (m, k)), body.floats("density", (m,)),
        symmetric(body.floats("ls_information", (k, k)), "release.ls_information"),
        variances(body.floats("band_prior_var", (m,)), "release.band_prior_var"),
        body.floats("score", (m, k)), body.floats("start", (m, k)),
        _bandwidths(body, m), steps, body.floats("ls_beta", (k,)),
        variances(tuple(float(v) for v in body.floats("ls_noise", (2,))), "release.ls_noise"),
        np.array(res_counts, dtype=np.int64), edges, body.floats("level_counts", (n_levels,)),
        variances(body.float("level_noise_var"), "release.level_noise_var"),
        moments_tuple(body, q), body.floats("offsets", (q,)), scales_in(body, q),
        positive(body.float("radius"), "release.radius"),
        body.float("y_centre"), positive(body.float("y_half"), "release.y_half"), report)
    _quantile_claim(rel)
    return rel


def _quantile_claim(rel: PrivateQuantileSteps) -> None:
    """The split of a quantile-steps release
    (`dpmodels.mechanisms.quantile_steps.release_quantile_steps()`) and the noise
    variances of its quantile steps and level counts, rebuilt from the stated epsilon."""
    eps, taus, space = rel.report.epsilon, rel.quantiles, rel.space
    if not rel.report.private:  # epsilon = inf: the steps without noise (not private)
        noiseless_claim(rel.report, "quantile-steps",
                         [x for per_q in rel.steps for pair in per_q for x in pair]
                         + [rel.level_noise_var, *rel.ls_noise])
        return
    clipped = clips(rel.report)
    eps_s, eps_r, eps_ls, eps_res, eps_lv, eps_c, steps = quantile_split(
        eps, len(taus), bool(space.dummy.any()), bool(clipped))
    parts_claim(rel.report, [eps_s, eps_r, eps_ls, eps_res] + [eps_lv] * bool(eps_lv)
                 + steps * len(taus) + [eps_c] * clipped)
    g, delta = score_sensitivity(rel.radius, space, rel.offsets, rel.scales)
    noise = tuple(tuple((v, v) for v in (
        discrete_laplace_variance(unit_epsilon(e, delta / 2.0)) / float(LEVELS * g) ** 2
        for e in steps)) for _ in taus)
    stated = tuple(tuple(tuple(float(x) for x in pair) for pair in per_q) for per_q in rel.steps)
    if stated != noise:
        raise claim_error("release.steps (noise variances)", stated, noise, eps)
    level = (discrete_laplace_variance(unit_epsilon(eps_lv, level_sensitivity(space) / 2.0))
             if eps_lv else 0.0)
    if float(rel.level_noise_var) != level:
        raise claim_error("release.level_noise_var", float(rel.level_noise_var), level, eps)
    ls_noise = step_noise(rel, eps_ls, 1.0)  # the least-squares step's weights are 1
    if tuple(float(v) for v in rel.ls_noise) != ls_noise:
        raise claim_error("release.ls_noise", tuple(rel.ls_noise), ls_noise, eps)
    # each quantile's band: its width and the variance of its noisy row count, read from
    # the noisy residual histogram (noise of the residual part) as the release reads them
    share_rows = NOISE_ROWS * (math.sqrt(discrete_laplace_variance(
        unit_epsilon(steps[-1], delta / 2.0))) / (LEVELS * g))
    var_bin = discrete_laplace_variance(eps_res)
    bands = [start_and_bandwidth(rel.residual_counts, rel.residual_edges, tau,
                                 band_share(rel.moments[0], tau, share_rows), var_bin)
             for tau in taus]
    for key, want in (("bandwidth", [b[1] for b in bands]),
                      ("band_prior_var", [b[3] for b in bands])):
        stated_b = [float(v) for v in getattr(rel, key)]
        if stated_b != want:
            raise claim_error(f"release.{key}", stated_b, want, eps)
