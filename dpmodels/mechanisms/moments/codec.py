"""The noisy-moments release's saved file read back (`PrivateMoments.saved_parts()`
writes it), and the design space every formula release (moments, Newton steps,
quantile steps) reads back the same way: the formula, its columns and the
public ranges of its design, rebuilt on the saved domain and checked against
what the file states.

The claim check rebuilds the moments' split of epsilon and their noise
variances from the stated epsilon with this mechanism's own code.  The
registry entry ``moments`` names this module as its codec.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

import numpy as np

from ...core.budget import split_epsilon
from ...core.exact import discrete_laplace_variance
from ...core.report import MomentsReport
from ...data.clipping import CLIP_SHARE
from ...domain.axes import Domain
from ...output.documents import (
    Reader,
    SavedReleaseError,
    claim_error,
    clips,
    parts_claim,
    positive,
    report_in,
    split_claim,
    symmetric,
    variances,
)
from . import (
    RADIUS_SHARE,
    SCALE_SHARE,
    PrivateMoments,
    describe_axis,
    design_space,
    moments_sensitivity,
    unit_epsilon,
)

__all__ = ["KIND", "read", "moments_in", "noise_claim", "noiseless_claim", "formula_release_in",
           "moments_tuple", "scales_in"]

#: The file's ``release_type`` (the release class's ``saved_kind``).
KIND = PrivateMoments.saved_kind


def _split_check(values: dict) -> None:
    split_claim(values["split"], values["epsilon"], values["private"])


def _space_in(r: Reader, domain: Domain, namespace: Mapping, response: bool):
    formula = r.str("formula")
    if r.bool("response") != response:
        raise SavedReleaseError(f"release.design.response must be {str(response).lower()} for "
                                "this release type")
    try:
        rebuilt = design_space(formula, domain, namespace, response=response,
                               centre_squares=True)
    except Exception as exc:  # patsy, a missing function, a malformed formula
        raise SavedReleaseError(
            f"cannot rebuild the design of {formula!r} on the saved domain ({exc}). If the "
            "formula calls functions other than numpy's (np.*), pass them with "
            "load_release(path, namespace={...})") from None
    if rebuilt.transform is not None and not _ranges_match(r, rebuilt):
        # saved before squares were released centred: its ranges are those of x**2 itself
        rebuilt = design_space(formula, domain, namespace, response=response)
    names = r.list("exog_names")
    if tuple(names) != rebuilt.exog_names or r.str("endog_name") != rebuilt.endog_name:
        raise SavedReleaseError(
            f"release.design's columns {names} do not match the design of {formula!r} on the "
            f"saved domain {list(rebuilt.exog_names)}")
    k, q = rebuilt.constant.size, rebuilt.q
    constant = r.list("constant")
    if constant != [bool(c) for c in rebuilt.constant]:
        raise SavedReleaseError("release.design.constant does not match the design's constant "
                                "columns")
    exclusive = tuple(tuple(g) for g in r.list("exclusive"))
    if exclusive != tuple(tuple(int(i) for i in g) for g in rebuilt.exclusive):
        raise SavedReleaseError("release.design.exclusive does not match the design's groups "
                                "of dummies")
    values = {"constant_values": r.floats("constant_values", (k,))}
    for key in ("lo", "hi", "centre", "half"):
        values[key] = r.floats(key, (q,))
        if not np.allclose(values[key], getattr(rebuilt, key), rtol=1e-9, atol=1e-12):
            raise SavedReleaseError(
                f"release.design.{key} does not match the public range of {formula!r}'s design "
                "on the saved domain")
    if not np.all(values["half"] > 0):
        raise SavedReleaseError("release.design.half must be positive")
    # the saved numbers (exact) with the rebuilt patsy coding
    return replace(rebuilt, constant_values=values["constant_values"], lo=values["lo"],
                   hi=values["hi"], centre=values["centre"], half=values["half"]), q


def _ranges_match(r: Reader, space) -> bool:
    """The saved design's ranges are ``space``'s (the check of `_space_in()`)."""
    try:
        return all(np.allclose(r.floats(key, (space.q,)), getattr(space, key), rtol=1e-9,
                               atol=1e-12) for key in ("lo", "hi", "centre", "half"))
    except SavedReleaseError:  # another shape: _space_in names what is wrong
        return False


def _describes(report, domain: Domain) -> None:
    expected = tuple((a.name, describe_axis(a)) for a in domain.axes)
    if report.variables != expected:
        raise SavedReleaseError(
            f"report.variables does not describe the saved domain ({report.variables} vs "
            f"{expected})")


def _columns_check(report, space) -> None:
    if report.columns[:-1] != space.exog_names or len(report.columns) != len(space.exog_names) + 1:
        raise SavedReleaseError(
            f"report.columns {list(report.columns)} do not match the design's columns "
            f"{list(space.exog_names)} (and the response)")


def moments_tuple(r: Reader, q: int) -> tuple:
    m = r.sub("moments")
    return (m.float("count"), m.floats("mean", (q,)),
            symmetric(m.floats("cov", (q, q)), "release.moments.cov"))


def scales_in(body: Reader, q: int) -> np.ndarray:
    scales = body.floats("scales", (q,))
    if not np.all(scales > 0):
        raise SavedReleaseError(f"release.scales must be positive, got {scales.tolist()}")
    return scales


def formula_release_in(doc: Reader, domain: Domain, namespace: Mapping, *, response: bool):
    """The parts every formula release (moments, Newton, quantile steps) reads
    first: its report, its body, its design space checked against the domain
    and the report's columns, and the number of design columns."""
    report = report_in(doc.sub("report"), MomentsReport, _split_check)
    body = doc.sub("release")
    space, q = _space_in(body.sub("design"), domain, namespace, response=response)
    _describes(report, domain)
    _columns_check(report, space)
    return report, body, space, q


def read(doc: Reader, domain: Domain, namespace: Mapping) -> PrivateMoments:
    """The moments a saved document holds, checked (see the module notes)."""
    rel = moments_in(doc, domain, namespace, PrivateMoments)
    _moments_claim(rel)
    return rel


def moments_in(doc: Reader, domain: Domain, namespace: Mapping, cls: type[PrivateMoments]):
    """A release of class ``cls`` (`PrivateMoments` or a subclass) from a saved
    document, every value checked but the claim (the caller's, by mechanism)."""
    report, body, space, q = formula_release_in(doc, domain, namespace, response=True)
    second = symmetric(body.floats("second", (q, q)), "release.second")
    noise_var = variances(tuple(float(v) for v in body.floats("noise_var", (3,))),
                          "release.noise_var")
    return cls(space, body.float("count"), body.floats("sums", (q,)), second,
               noise_var, positive(body.float("radius"), "release.radius"),
               body.floats("offsets", (q,)), scales_in(body, q), report)


def noiseless_claim(rel: PrivateMoments) -> None:
    """Exact moments (epsilon = inf) carry no noise."""
    if tuple(rel.noise_var) != (0.0, 0.0, 0.0):
        raise claim_error("release.noise_var", tuple(rel.noise_var), (0.0, 0.0, 0.0),
                          rel.report.epsilon)


def noise_claim(rel: PrivateMoments, eps_m: float) -> None:
    """The noise variances of moments released at ``eps_m`` with the release's
    radius, offsets and scales (`moments_sensitivity()`)."""
    g, _, w_s, delta = moments_sensitivity(rel.radius, rel.space, rel.offsets, rel.scales)
    var = discrete_laplace_variance(unit_epsilon(eps_m, delta / 2.0))
    noise = (var / (w_s * g) ** 2, var / (w_s * g) ** 2, var / g**4)
    if tuple(rel.noise_var) != noise:
        raise claim_error("release.noise_var", tuple(rel.noise_var), noise, rel.report.epsilon)


def _moments_claim(rel: PrivateMoments) -> None:
    """The split of a moments release (`dpmodels.mechanisms.moments.release_moments()`)
    and its noise variances, rebuilt from the stated epsilon."""
    report, eps = rel.report, rel.report.epsilon
    if not report.private:
        noiseless_claim(rel)
        return
    if clips(report):
        eps_c, eps_s, eps_r, eps_m = split_epsilon(
            eps, [CLIP_SHARE, SCALE_SHARE, RADIUS_SHARE, None])
        want = [eps_s, eps_r, eps_m, eps_c]
    else:
        eps_s, eps_r, eps_m = split_epsilon(eps, [SCALE_SHARE, RADIUS_SHARE, None])
        want = [eps_s, eps_r, eps_m]
    parts_claim(report, want)
    noise_claim(rel, eps_m)
