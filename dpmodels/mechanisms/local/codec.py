"""The local release's saved file read back: the channel (name, k, per-row
epsilon, p, q) and the k report counts that `LocalRelease.saved_parts()`
writes, with the channel rebuilt from its name, k and epsilon and every
stated number checked against it.

A `LocalHistogram` saves the local release it is a view of.  The registry entry
``local`` names this module as its codec.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np

from ...domain.axes import Domain
from ...output.documents import (
    Reader,
    SavedReleaseError,
    int_vector,
    report_in,
)
from . import Channel, LocalRelease, LocalReport

__all__ = ["KIND", "read", "CHANNELS"]

#: The file's ``release_type`` (the release class's ``saved_kind``).
KIND = LocalRelease.saved_kind


#: The channels a saved local release may name (``Channel.name``).
CHANNELS = ("krr", "oue", "identity")


def read(doc: Reader, domain: Domain, namespace: Mapping | None = None) -> LocalRelease:
    """A `LocalRelease`: the channel rebuilt from its
    name, k and per-row epsilon (its p and q must be the rebuilt ones), the k
    report counts, and the report, checked against both and the domain."""
    report = report_in(doc.sub("report"), LocalReport)
    body = doc.sub("release")
    saved = body.sub("channel")
    name = saved.str("name")
    if name not in CHANNELS:
        raise SavedReleaseError(f"release.channel.name must be one of {list(CHANNELS)}, "
                                f"got {name!r}: this dpmodels does not know that channel")
    k, eps = saved.int("k"), saved.float("epsilon")
    if (name == "identity") != math.isinf(eps) or math.isnan(eps) or eps <= 0:
        raise SavedReleaseError(
            f"release.channel.epsilon is {eps:g} for the {name!r} channel: the identity channel "
            "has epsilon = inf, k-RR and OUE a finite epsilon > 0")
    if eps != report.epsilon:
        raise SavedReleaseError(f"release.channel.epsilon is {eps:g} but report.epsilon is "
                                f"{report.epsilon:g}: the channel's epsilon is each row's")
    if name != report.channel:
        raise SavedReleaseError(f"release.channel.name is {name!r} but report.channel is "
                                f"{report.channel!r}")
    if report.missing not in ("drop", "raise"):
        raise SavedReleaseError(f"report.missing must be \"drop\" or \"raise\", got "
                                f"{report.missing!r}")
    m = domain.size
    want_k = m + (1 if report.missing == "drop" else 0)
    if report.domain_cells != m:
        raise SavedReleaseError(f"report.domain_cells is {report.domain_cells} but the saved "
                                f"domain has {m} cells")
    for key, stated in (("report.k", report.k), ("release.channel.k", k)):
        if stated != want_k:
            raise SavedReleaseError(
                f"{key} is {stated}, but the channel has k = {want_k} inputs: the saved "
                f"domain's {m} cells" + (" and the missing cell (report.missing = \"drop\")"
                                         if report.missing == "drop" else ""))
    channel = Channel(name, k, eps)
    for key in ("p", "q"):
        value = getattr(channel, key)
        for where, stated in ((f"release.channel.{key}", saved.float(key)),
                              (f"report.{key}", getattr(report, key))):
            if stated != value:
                raise SavedReleaseError(
                    f"{where} is {stated!r}, not the {name} channel's {key} = {value!r} for "
                    f"k = {k} and epsilon = {eps:g}")
    counts = int_vector(body.list("report_counts"), "release.report_counts")
    if len(counts) != k:
        raise SavedReleaseError(f"release.report_counts has {len(counts)} entries; the channel "
                                f"has k = {k} inputs (one report count each)")
    n = report.n
    bad = [c for c in counts if not 0 <= c <= n]
    if bad:
        raise SavedReleaseError(
            f"release.report_counts holds {bad[0]}, outside 0..report.n = {n}: each of the n "
            "rows reports a cell (or sets a cell's bit) at most once")
    if name != "oue" and sum(counts) != n:
        raise SavedReleaseError(
            f"release.report_counts add up to {sum(counts)}, not report.n = {n}: under the "
            f"{name} channel each row reports exactly one cell")
    if report.variables != tuple(domain.describe().items()):
        raise SavedReleaseError("report.variables does not describe the saved domain "
                                f"({report.variables} vs {tuple(domain.describe().items())})")
    rel = LocalRelease(domain, channel, np.array(counts, dtype=np.int64), report)
    total = int(rel.projected[:m].sum())
    if report.noisy_total != total:
        raise SavedReleaseError(f"report.noisy_total is {report.noisy_total} but the saved "
                                f"report counts give {total} (debiased, projected, rounded)")
    return rel
