"""The histogram's saved file read back: its released cells and counts (which
`PrivateHistogram.saved_parts()` writes), with every check, down to the claim
that the noise proves the stated epsilon (the noise scale, the split, the
threshold and the spurious-cell bound, rebuilt by this mechanism's own code).

The document around it (format, domain, report) is `dpmodels.output.saving`'s;
the registry entry ``histogram`` names this module as its codec.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np

from ...core.budget import parts_fit, split_epsilon
from ...core.errors import DPModelsError
from ...core.noise import discrete_laplace_sf
from ...core.report import HISTOGRAM_PART, PrivacyReport
from ...data.clipping import CLIP_SHARE
from ...domain.axes import Domain
from ...output.documents import (
    Reader,
    SavedReleaseError,
    claim_error,
    int_vector,
    parts_claim,
    report_in,
    split_claim,
)
from . import DEFAULT_A, PrivateHistogram, resolve_threshold

__all__ = ["KIND", "read"]

#: The file's ``release_type`` (the release class's ``saved_kind``).
KIND = PrivateHistogram.saved_kind


def _split_check(values: dict) -> None:
    """A split (a release whose variables can clip) holds the cells' part, whose
    noise scale the report states, and the parts add up to at most epsilon."""
    eps = values["epsilon"]
    if values.get("split"):
        parts = [e for _, e in values["split"]]
        cells = [e for label, e in values["split"] if label == HISTOGRAM_PART]
        if values["private"] and not (parts_fit(eps, parts) and len(cells) == 1
                                      and values["noise_scale"] == 2.0 / cells[0]):
            raise SavedReleaseError(
                "report.split must hold the cells' part, the parts must add up to at most "
                "report.epsilon and report.noise_scale must be 2 / the cells' part")


def read(doc: Reader, domain: Domain, namespace: Mapping | None = None) -> PrivateHistogram:
    """The histogram a saved document holds, checked (see the module notes)."""
    report = report_in(doc.sub("report"), PrivacyReport, _split_check)
    body = doc.sub("release")
    ids = int_vector(body.list("cell_ids"), "release.cell_ids")
    counts = int_vector(body.list("counts"), "release.counts")
    m = domain.size
    if len(ids) != len(counts):
        raise SavedReleaseError(
            f"release.counts has {len(counts)} entries but release.cell_ids has {len(ids)}: "
            "each released cell has one count")
    bad = [i for i in ids if not 0 <= i < m]
    if bad:
        raise SavedReleaseError(
            f"release.cell_ids holds {bad[0]}, outside the domain's cells 0..{m - 1} "
            f"({' x '.join(str(a.size) for a in domain.axes)} = {m} cells)")
    ids_arr = np.array(ids, dtype=np.uint64)
    if ids_arr.size > 1 and not np.all(ids_arr[1:] > ids_arr[:-1]):
        raise SavedReleaseError("release.cell_ids must be strictly increasing (each cell once)")
    if any(not -2**63 <= c < 2**63 for c in counts):
        raise SavedReleaseError("release.counts holds a value outside the 64-bit integer range")
    counts_arr = np.array(counts, dtype=np.int64)
    if counts_arr.size:
        low = int(counts_arr.min())
        if report.threshold is not None and low < math.ceil(report.threshold):
            raise SavedReleaseError(
                f"release.counts holds {low}, below the release's threshold "
                f"{report.threshold:g} (cells below it are never released)")
        if not report.private and low < 0:
            raise SavedReleaseError(f"release.counts holds {low}: exact counts (epsilon=inf) "
                                    "are not negative")
    checks = [("released_cells", report.released_cells, len(ids)),
              ("noisy_total", report.noisy_total, sum(counts)),
              ("domain_cells", report.domain_cells, m)]
    for key, stated, actual in checks:
        if stated != actual:
            raise SavedReleaseError(f"report.{key} is {stated} but the saved release has "
                                    f"{actual}")
    if report.variables != tuple(domain.describe().items()):
        raise SavedReleaseError("report.variables does not describe the saved domain "
                                f"({report.variables} vs {tuple(domain.describe().items())})")
    _histogram_claim(report, m)
    return PrivateHistogram(domain, ids_arr, counts_arr, report)


def _histogram_claim(report: PrivacyReport, m: int) -> None:
    """The split (when a variable can clip: the cells' part and the outside
    counts'), noise scale, sensitivity, threshold and spurious-cell bound of a
    histogram, rebuilt from its stated epsilon (`dpmodels.mechanisms.histogram`'s code)."""
    eps = report.epsilon
    split = tuple(getattr(report, "split", ()))
    eps_h = eps  # the cells' epsilon: their noise, threshold and spurious law
    if split:
        split_claim(split, eps, report.private)
        eps_c, eps_h = split_epsilon(eps, [CLIP_SHARE, None])
        parts_claim(report, [eps_h, eps_c])
    if report.noise_scale != 2.0 / eps_h:
        raise claim_error("report.noise_scale", report.noise_scale, 2.0 / eps_h, eps)
    if report.sensitivity != 2:
        raise claim_error("report.sensitivity", report.sensitivity, 2, eps)
    rule, n, A = report.threshold_rule, max(report.n, 2), report.threshold_A
    arg: object
    if not report.private:
        arg = "enhanced"  # ignored at epsilon = inf
    elif rule == "enhanced" or rule.startswith("auto ("):
        arg = "auto" if rule.startswith("auto (") else "enhanced"
    elif rule.startswith("zero"):
        arg = "zero"
    elif rule.startswith("none (signed"):
        arg = None
    elif rule == "fixed" and report.threshold is not None:
        arg = report.threshold
    else:
        raise SavedReleaseError(f"report.threshold_rule {rule!r} is not a rule of a release "
                                f"at epsilon = {eps!r}")
    try:
        spec = resolve_threshold(arg, eps_h, n, A if A is not None else DEFAULT_A, m)
    except DPModelsError as exc:
        raise SavedReleaseError(f"report.threshold_A = {A!r}: {exc}") from None
    stated = (report.threshold_rule, report.threshold, report.threshold_A)
    want = (spec.rule, spec.value, spec.A)
    k = spec.k
    if stated != want:
        # threshold="auto" under a max_spurious_cells cap (not saved) only raises the cut
        raised = (arg == "auto" and spec.k is not None and report.threshold is not None
                  and report.threshold == math.ceil(report.threshold) >= spec.k
                  and report.threshold_A == spec.A and "above enhanced" in rule)
        if not raised or report.threshold is None:
            raise claim_error("report's threshold (rule, t, A)", stated, want, eps)
        k = int(report.threshold)
    spurious = (0.0 if not report.private else float(m) if k is None
                else m * discrete_laplace_sf(k, eps_h))
    if report.expected_spurious_cells != spurious:
        raise claim_error("report.expected_spurious_cells", report.expected_spurious_cells,
                           spurious, eps)
