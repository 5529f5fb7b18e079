"""The Newton-steps logit release's saved file read back (`PrivateNewton.saved_parts()`
writes it): its noisy steps, the public quantities they were drawn with, and
the claim check that rebuilds its split
of epsilon and its steps' noise variances from the stated epsilon.

The design is saved as the moments' (`dpmodels.mechanisms.moments.codec`).
`step_noise()` and `noiseless_claim()` serve the quantile steps too.  The
registry entry ``newton`` names this module as its codec.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from ...core.budget import exact_parts
from ...core.exact import discrete_laplace_variance
from ...data.clipping import CLIP_SHARE
from ...domain.axes import Domain
from ...output.documents import (
    Reader,
    SavedReleaseError,
    claim_error,
    clips,
    pairs,
    parts_claim,
    positive,
    symmetric,
    variances,
)
from ..moments import RADIUS_SHARE, SCALE_SHARE, unit_epsilon
from ..moments.codec import formula_release_in, moments_tuple, scales_in
from . import LEVELS, LOGIT_WEIGHT, STEP_SHARES, PrivateNewton, step_scale

__all__ = ["KIND", "read", "step_noise", "noiseless_claim"]

#: The file's ``release_type`` (the release class's ``saved_kind``).
KIND = PrivateNewton.saved_kind


def read(doc: Reader, domain: Domain, namespace: Mapping) -> PrivateNewton:
    """The Newton-steps release a saved document holds, checked."""
    report, body, space, q = formula_release_in(doc, domain, namespace, response=False)
    k = q + 1
    rel = PrivateNewton(
        space, body.floats("beta", (k,)),
        symmetric(body.floats("information", (k, k)), "release.information"),
        body.floats("score", (k,)), body.floats("start", (k,)),
        variances(tuple(float(v) for v in body.floats("noise_var", (2,))), "release.noise_var"),
        moments_tuple(body, q), body.floats("offsets", (q,)), scales_in(body, q),
        positive(body.float("radius"), "release.radius"), report,
        variances(pairs(body.list("step_noise"), "release.step_noise"), "release.step_noise"))
    _newton_claim(rel)
    return rel


def step_noise(rel, eps_t: float, weight: float) -> tuple[float, float]:
    """The noise variances ``(information entry, score entry)`` of a Newton-type
    step at the part ``eps_t``: `dpmodels.mechanisms.newton.noisy_step()`'s, with the
    step's scale ``(g, w_g, Delta)`` from the release's own ``step_scale()``
    on the public quantities it reads (the radius, centres and scales)."""
    g, w_g, delta = step_scale(rel.radius, rel.space, rel.offsets, rel.scales)
    var = discrete_laplace_variance(unit_epsilon(eps_t, delta / 2.0))
    return var * (weight / (LEVELS * g * g)) ** 2, var / (w_g * LEVELS * g) ** 2


def noiseless_claim(report, what: str, noise_vars) -> None:
    """A Newton-type release that says it is not private (``epsilon = inf``:
    `dpmodels.mechanisms.newton.NOISELESS`) must say so throughout: an infinite epsilon,
    no split, and no noise on any statistic; anything else is refused."""
    if not (math.isinf(report.epsilon) and report.epsilon > 0):
        raise SavedReleaseError(f"a {what} release that is not private must state "
                                f"epsilon = inf, not {report.epsilon!r}")
    if tuple(report.split):
        raise SavedReleaseError(f"a {what} release at epsilon = inf has no split of epsilon; "
                                f"this one states {report.split!r}")
    if any(float(v) != 0.0 for v in noise_vars):
        raise SavedReleaseError(f"a {what} release at epsilon = inf carries no noise; this "
                                "one states non-zero noise variances")


def _newton_claim(rel: PrivateNewton) -> None:
    """The split of a Newton-steps release (`dpmodels.mechanisms.newton.release_newton()`),
    rebuilt from the stated epsilon."""
    eps = rel.report.epsilon
    if not rel.report.private:  # epsilon = inf: the steps without noise (not private)
        noiseless_claim(rel.report, "Newton-steps",
                         [v for pair in rel.step_noise for v in pair] + list(rel.noise_var))
        return
    clipped = clips(rel.report)
    eps_c = eps * CLIP_SHARE if clipped else 0.0
    eps_s, eps_r = eps * SCALE_SHARE, eps * RADIUS_SHARE
    steps = [(eps - eps_c - eps_s - eps_r) * share for share in STEP_SHARES]
    eps_c, eps_s, eps_r, *steps = exact_parts(eps, [eps_c, eps_s, eps_r, *steps])
    parts_claim(rel.report, [eps_s, eps_r, *steps] + ([eps_c] if clipped else []))
    noise = tuple(step_noise(rel, e, LOGIT_WEIGHT) for e in steps)
    stated = tuple(tuple(float(v) for v in pair) for pair in rel.step_noise)
    if stated != noise:
        raise claim_error("release.step_noise", stated, noise, eps)
    if tuple(float(v) for v in rel.noise_var) != noise[-1]:
        raise claim_error("release.noise_var", tuple(rel.noise_var), noise[-1], eps)
