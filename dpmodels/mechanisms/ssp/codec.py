"""The SSP release's saved file read back: the moments' document
(`dpmodels.mechanisms.moments.codec`), with this mechanism's claim check: the
split of epsilon (the moments, and the outside counts' part when a variable
can clip), the public offsets, scales and radius, and the noise variances
they give at the stated epsilon.  The registry entry ``ssp`` names this
module as its codec.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from ...core.budget import split_epsilon
from ...data.clipping import CLIP_SHARE
from ...domain.axes import Domain
from ...output.documents import Reader, claim_error, clips, parts_claim
from ..moments.codec import moments_in, noise_claim, noiseless_claim
from . import PrivateSSP, public_radius

__all__ = ["KIND", "read"]

#: The file's ``release_type`` (the release class's ``saved_kind``).
KIND = PrivateSSP.saved_kind


def read(doc: Reader, domain: Domain, namespace: Mapping) -> PrivateSSP:
    """The SSP release a saved document holds, checked."""
    rel = moments_in(doc, domain, namespace, PrivateSSP)
    _claim(rel)
    return rel


def _claim(rel: PrivateSSP) -> None:
    """Rebuilt from the stated epsilon and the public design: the split, the
    public offsets (0), scales (1) and radius, and the noise variances."""
    report, eps = rel.report, rel.report.epsilon
    if not report.private:
        noiseless_claim(rel)
        return
    if clips(report):
        eps_c, eps_m = split_epsilon(eps, [CLIP_SHARE, None])
        want = [eps_m, eps_c]
    else:
        eps_m, want = eps, [eps]
    parts_claim(report, want)
    q = rel.space.q
    for key, stated, public in (("offsets", rel.offsets, np.zeros(q)),
                                ("scales", rel.scales, np.ones(q))):
        if not np.array_equal(stated, public):
            raise claim_error(f"release.{key}", list(stated), list(public), eps)
    if rel.radius != public_radius(rel.space):
        raise claim_error("release.radius", rel.radius, public_radius(rel.space), eps)
    noise_claim(rel, eps_m)
