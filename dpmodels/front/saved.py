"""Saved releases: write a release to a file and read it back, exactly.

A release (`PrivateHistogram`,
`PrivateMoments`, `PrivateNewton`,
`PrivateQuantileSteps`,
`LocalRelease`) is made once from raw
rows and spends its epsilon then; everything computed from it afterwards is
post-processing (PRIVACY.md rule 6).  ``release.save(path)`` writes it to one
self-describing JSON document and `load_release()` reads it back, so that
an analyst can fit models on it another day, on another machine, without
touching the raw data and without spending budget again.  A model fitted on
the loaded release gives bit-identical estimates (and, with the same
``random_state``, bit-identical bootstrap standard errors) to one fitted on
the original object: every float is written with Python's shortest
round-trip ``repr``, every integer exactly.

What is in the file (and what is not)
-------------------------------------
Only what is already public (PRIVACY.md rules 5 and 10): the public domain
(variable names, bounds, bin counts, scales, declared levels), the released
noisy values, the public quantities the mechanism computed from them and
from public inputs (noise variances, the released centres, scales and
clipping radius, the formula's public design ranges), and the privacy report.
Raw rows, exact (pre-noise) counts or sums, and anything else computed from
the raw data that was not released are never on a release object, so they
can never be written.  The file is as public as the release itself.

Layout (format ``"dpmodels-release"``, version ``"1.0"``)
--------------------------------------------------------
One JSON object::

    {"format": "dpmodels-release", "format_version": "1.0",
     "release_type": "histogram" | "moments" | "newton" | "quantile-steps" | "local",
     "dpmodels_version": "...", "note": "...",
     "guarantee": {"definition", "epsilon", "delta": 0, "neighbouring", "mechanism"},
     "domain": {"axes": [{"name", "kind": "continuous", "bounds", "bins", "scale"}
                         | {"name", "kind": "continuous", "bounds": null, "bins",
                            "scale": "logistic", "unbounded": {"center", "scale"}}
                         | {"name", "kind": "discrete", "levels", "declared_order"}]},
     "report": {"type": "PrivacyReport" | "MomentsReport" | "LocalReport", <its fields>},
     "release": {<the type's released values, see docs/saved-releases.md>}}

Non-finite floats (an ``epsilon`` of ``inf``, the NaN of a non-constant
column's ``constant_values``) are written as the strings ``"inf"``, ``"-inf"``
and ``"nan"`` in numeric fields (strict JSON has no such numbers); a level
that is a non-finite float is written ``{"float": "inf"}``.  A path ending in
``.gz`` is gzip-compressed; `load_release()` recognises gzip by its magic
bytes whatever the name.

Why one JSON file, also for large histograms
--------------------------------------------
A histogram release holds at most ``n`` observed cells plus a bounded number
of spurious ones (``max_spurious_cells``, 2e6 by default), i.e. two integer
vectors of a few million entries.  Measured: a release of 1.07 million
cells is 12 MB as JSON (3 MB as ``.json.gz``), saved in 0.4 s (0.8 s gzip)
and loaded, with every check, in 0.35 s.  Parquet would make such a file
smaller and faster to read, but it needs pyarrow (an optional dependency of
dpmodels), has no unsigned 64-bit integers in every reader (cell ids go up to
``2**63 - 1``), and splits one release into two files that can be separated
or mismatched.  One JSON document is exact, readable by any language, and
cannot lose its metadata.

Versioning
----------
``format_version`` is ``"MAJOR.MINOR"``.  A reader accepts every minor
version of its major version (a newer minor version may add keys, which are
ignored); a file of another major version is refused with a
`SavedReleaseError` saying which versions this dpmodels reads.  A new
``release_type`` (``"local"``) adds no key to the others and keeps the version;
a reader that does not know a type refuses it, listing the types it reads.

Loading checks the whole file before building anything and refuses an
inconsistent one with a `SavedReleaseError` naming what is wrong:
missing keys, malformed bounds or levels, cell ids outside the domain or not
increasing, counts that do not match the cells or are not integers (or are
below the released threshold), vector lengths that do not match the declared
design, a report that contradicts the released values.

Each mechanism writes and reads its own values: the ``codec`` module of its
folder (``dpmodels/mechanisms/<name>/codec.py``, named by its registry entry's
``codec``) has the file's ``KIND``, ``write(release)`` and ``read(document,
domain, namespace)``, built on the shared pieces of `dpmodels.output.documents`.
A new saved release type is a codec module and its entry's ``codec=``.
"""

from __future__ import annotations

import gzip
import importlib
import json
import os
import pathlib
from collections.abc import Callable, Mapping

import numpy as np

from ..core.keywords import checked_keywords
from ..domain.formula import caller_namespace
from ..output.documents import Reader, domain_in
from ..output.saving import (
    FORMAT,
    FORMAT_VERSION,
    MAJOR_VERSION,
    NEIGHBOURING,
    SavedReleaseError,
    release_document,
    save_release,
)
from . import registry

__all__ = ["FORMAT", "FORMAT_VERSION", "NEIGHBOURING", "SavedReleaseError", "save_release",
           "release_document", "load_release", "read_document", "release_from_document",
           "readers"]


def readers() -> dict[str, Callable]:
    """``{release_type: read}``: the codec of each registry entry that names one
    (``Mechanism.codec``), keyed by the ``KIND`` its file states."""
    out = {}
    for m in registry.MECHANISMS:
        if m.codec is not None:
            codec = importlib.import_module(m.codec)
            out[codec.KIND] = codec.read
    return out


def _reject_constant(name: str):
    raise SavedReleaseError(f"the file holds the non-standard JSON number {name}: a saved "
                            "release writes non-finite numbers as strings")


def read_document(path: str | os.PathLike) -> dict:
    """The decoded JSON document of a saved release (gzip or plain), unchecked."""
    path = pathlib.Path(os.fspath(path))
    raw = path.read_bytes()
    if raw[:2] == b"\x1f\x8b":
        raw = gzip.decompress(raw)
    try:
        doc = json.loads(raw.decode("utf-8"), parse_constant=_reject_constant)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise SavedReleaseError(f"{path} is not a saved dpmodels release (not JSON: {exc})") \
            from None
    return doc


def release_from_document(doc, namespace: Mapping | None = None):
    """Check a decoded document and build its release (see `load_release()`)."""
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        got = doc.get("format") if isinstance(doc, dict) else type(doc).__name__
        raise SavedReleaseError(f"not a saved dpmodels release: its format is {got!r}, not "
                                f"{FORMAT!r}")
    r = Reader(doc, "")
    version = r.str("format_version")
    major, _, minor = version.partition(".")
    if not (major.isdigit() and minor.isdigit()):
        raise SavedReleaseError(f"format_version must be \"MAJOR.MINOR\", got {version!r}")
    if int(major) != MAJOR_VERSION:
        raise SavedReleaseError(
            f"the file is in format version {version}; this dpmodels reads version "
            f"{MAJOR_VERSION}.x only (it writes {FORMAT_VERSION}): "
            + ("upgrade dpmodels to read it" if int(major) > MAJOR_VERSION else
               "re-save the release with the dpmodels that wrote it, or a converter"))
    kind = r.str("release_type")
    known = readers()
    if kind not in known:
        raise SavedReleaseError(f"release_type must be one of {sorted(known)}, got {kind!r}")
    guarantee = r.sub("guarantee")
    domain = domain_in(r.sub("domain"))
    ns = {"np": np, "numpy": np}
    ns.update(namespace or {})
    rel = known[kind](r, domain, ns)
    stated = guarantee.float("epsilon")
    if not (stated == rel.report.epsilon and guarantee.float("delta") == 0.0):
        raise SavedReleaseError(
            f"guarantee.epsilon = {stated:g} (delta {guarantee.float('delta'):g}) contradicts "
            f"report.epsilon = {rel.report.epsilon:g} (delta 0)")
    return rel


@checked_keywords
def load_release(path: str | os.PathLike, *, namespace: Mapping[str, object] | None = None):
    """Read a release saved by ``release.save(path)``.

    The whole file is checked before the release is built; a fit on the
    loaded release spends no budget and gives exactly the estimates (and,
    with the same ``random_state``, the bootstrap standard errors) of a fit
    on the release that was saved.

    Parameters
    ----------
    path : str or os.PathLike
        A ``.json`` file, or a gzip-compressed one (any name).
    namespace : mapping, optional
        Functions a moments, Newton or quantile-steps release's formula calls
        besides numpy's (``np.log`` needs nothing); defaults to the caller's
        globals and locals.

    Returns
    -------
    PrivateHistogram, PrivateMoments, PrivateNewton, PrivateQuantileSteps or LocalRelease

    Raises
    ------
    SavedReleaseError
        The file is not a dpmodels release, is of another major format
        version, misses a key, or holds values that contradict each other
        or the declared domain (the message names the key).

    Examples
    --------
    >>> import tempfile, numpy as np, pandas as pd, dpmodels as dpm
    >>> rng = np.random.default_rng(0)
    >>> df = pd.DataFrame({"x": rng.uniform(0, 10, 2000)})
    >>> df["y"] = 1 + 2 * df["x"] + rng.normal(size=2000)
    >>> rel = dpm.release(df, formula="y ~ x", epsilon=1.0,
    ...                   bounds={"x": (0, 10), "y": (-5, 30)}, random_state=0)
    >>> path = rel.save(tempfile.mkdtemp() + "/rel.json")
    >>> same = dpm.load_release(path)
    >>> a = dpm.dp_ols("y ~ x", rel).fit(cov_type="naive").params
    >>> b = dpm.dp_ols("y ~ x", same).fit(cov_type="naive").params
    >>> bool((a == b).all())
    True
    """
    if namespace is None:
        namespace = caller_namespace(1)
    return release_from_document(read_document(path), namespace)
