"""Writing a release to its saved file: the encoder of the format that
`dpmodels.front.saved` documents and reads back.

It sits below the releases (every release's ``save`` calls `save_release()`)
and imports none of them: a release names its kind in the file by its
``saved_kind`` class attribute (``"histogram"``, ``"moments"``, ``"newton"``,
``"quantile-steps"``, ``"local"``) and the encoder reads its public fields by name
(a local release's histogram saves the local release it is a view of).  What a
file holds and what it never holds is in `dpmodels.front.saved`.
"""

from __future__ import annotations

import gzip
import json
import math
import os
import pathlib
import tempfile
from dataclasses import fields

import numpy as np

from ..core.errors import DPModelsError
from ..core.version import __version__
from ..domain.axes import Axis

__all__ = ["FORMAT", "FORMAT_VERSION", "MAJOR_VERSION", "NEIGHBOURING", "SavedReleaseError",
           "release_document", "save_release"]

#: The format's name, the value of the file's ``format`` key.
FORMAT = "dpmodels-release"
#: The version this dpmodels writes ("MAJOR.MINOR"); it reads every 1.x.
FORMAT_VERSION = "1.0"
#: The major version this dpmodels reads.
MAJOR_VERSION = 1

_NOTE = ("A differentially private release made by dpmodels; its privacy report is under "
         "'report'. It holds the public domain and the released (noisy) values only: no raw "
         "row. Load it with dpmodels.load_release(path); fits on it spend no budget.")


#: The neighbouring relation of every dpmodels release (PRIVACY.md, "Model").
NEIGHBOURING = ("replace-one: two data sets with the same public number of rows n that "
                "differ in one row")


class SavedReleaseError(DPModelsError):
    """A saved release cannot be written (an unsupported level type) or read
    (not a dpmodels release, an unknown major version, a missing key, or
    values that contradict each other or the declared domain)."""


# ---- encoding ---------------------------------------------------------------------------------


def _float_out(x) -> float | str:
    x = float(x)
    if math.isfinite(x):
        return x
    return "nan" if math.isnan(x) else ("inf" if x > 0 else "-inf")


def _floats_out(a) -> list | float | str:
    """A float array (any shape) as nested lists, non-finite values as strings."""
    arr = np.asarray(a, dtype=np.float64)
    if arr.ndim == 0:
        return _float_out(arr)
    return [_floats_out(row) for row in arr] if arr.ndim > 1 else [_float_out(v) for v in arr]


def _level_out(name: str, v):
    if isinstance(v, (bool, np.bool_)):
        return bool(v)
    if isinstance(v, (int, np.integer)):
        return int(v)
    if isinstance(v, (float, np.floating)):
        return float(v) if math.isfinite(v) else {"float": _float_out(v)}
    if isinstance(v, str):
        return v
    raise SavedReleaseError(
        f"cannot save the level {v!r} of {name!r}: a saved release holds levels that are "
        f"strings, bools, ints or floats, not {type(v).__name__}; recode {name!r} and "
        "release again")


def _axis_out(axis: Axis) -> dict:
    if axis.kind == "continuous" and axis.unbounded is not None:  # no finite bounds
        return {"name": axis.name, "kind": "continuous", "bounds": None,
                "unbounded": {"center": axis.unbounded.center, "scale": axis.unbounded.scale},
                "bins": int(axis.bin_count), "scale": axis.scale}
    if axis.kind == "continuous":
        return {"name": axis.name, "kind": "continuous",
                "bounds": [float(b) for b in axis.bound_pair],
                "bins": int(axis.bin_count), "scale": axis.scale}
    return {"name": axis.name, "kind": "discrete",
            "levels": [_level_out(axis.name, v) for v in axis.level_set],
            "declared_order": bool(axis.declared_order)}


def _report_out(report) -> dict:
    out = {"type": type(report).__name__}
    for f in fields(report):
        v = getattr(report, f.name)
        if f.name in ("variables", "split"):
            v = [[str(a), _float_out(b) if f.name == "split" else str(b)] for a, b in v]
        elif f.name == "columns":
            v = [str(c) for c in v]
        elif f.name == "outside_bounds":  # dpmodels.data.clipping.OutsideBounds, or None
            v = None if v is None else {
                "names": [str(nm) for nm in v.names], "counts": [_float_out(c) for c in v.counts],
                "n": int(v.n), "epsilon": _float_out(v.epsilon)}
        elif isinstance(v, (bool, np.bool_)):
            v = bool(v)
        elif isinstance(v, (int, np.integer)):
            v = int(v)
        elif isinstance(v, (float, np.floating)):
            v = _float_out(v)
        out[f.name] = v
    return out


def _space_out(space, response: bool) -> dict:
    return {"formula": space.formula, "response": response,
            "exog_names": list(space.exog_names), "endog_name": space.endog_name,
            "constant": [bool(c) for c in space.constant],
            "constant_values": _floats_out(space.constant_values),
            "lo": _floats_out(space.lo), "hi": _floats_out(space.hi),
            "centre": _floats_out(space.centre), "half": _floats_out(space.half),
            "exclusive": [[int(i) for i in g] for g in space.exclusive]}


def _release_out(rel) -> tuple[str, dict]:
    kind = getattr(rel, "saved_kind", None)
    if kind == "histogram":
        return "histogram", {"cell_ids": [int(i) for i in rel.cell_ids.tolist()],
                             "counts": [int(c) for c in rel.counts.tolist()]}
    if kind == "local":
        ch = rel.channel
        return "local", {"channel": {"name": ch.name, "k": int(ch.k),
                                     "epsilon": _float_out(ch.epsilon),
                                     "p": _float_out(ch.p), "q": _float_out(ch.q)},
                         "report_counts": [int(c) for c in rel.report_counts.tolist()]}
    if kind == "moments":
        return "moments", {
            "design": _space_out(rel.space, True), "count": _float_out(rel.count),
            "sums": _floats_out(rel.sums), "second": _floats_out(rel.second),
            "noise_var": _floats_out(rel.noise_var), "radius": _float_out(rel.radius),
            "offsets": _floats_out(rel.offsets), "scales": _floats_out(rel.scales)}
    if kind == "newton":
        return "newton", {
            "design": _space_out(rel.space, False), "beta": _floats_out(rel.beta),
            "information": _floats_out(rel.information), "score": _floats_out(rel.score),
            "start": _floats_out(rel.start), "noise_var": _floats_out(rel.noise_var),
            "moments": _moments_out(rel.moments), "offsets": _floats_out(rel.offsets),
            "scales": _floats_out(rel.scales), "radius": _float_out(rel.radius),
            "step_noise": [_floats_out(s) for s in rel.step_noise]}
    if kind == "quantile-steps":
        return "quantile-steps", {
            "design": _space_out(rel.space, False),
            "quantiles": _floats_out(rel.quantiles), "beta": _floats_out(rel.beta),
            "density": _floats_out(rel.density), "ls_information": _floats_out(rel.ls_information),
            "band_prior_var": _floats_out(rel.band_prior_var), "score": _floats_out(rel.score),
            "start": _floats_out(rel.start), "bandwidth": _floats_out(rel.bandwidth),
            "steps": [[_floats_out(s) for s in per_q] for per_q in rel.steps],
            "ls_beta": _floats_out(rel.ls_beta), "ls_noise": _floats_out(rel.ls_noise),
            "residual_counts": [int(c) for c in np.asarray(rel.residual_counts).tolist()],
            "residual_edges": _floats_out(rel.residual_edges),
            "level_counts": _floats_out(rel.level_counts),
            "level_noise_var": _float_out(rel.level_noise_var),
            "moments": _moments_out(rel.moments), "offsets": _floats_out(rel.offsets),
            "scales": _floats_out(rel.scales), "radius": _float_out(rel.radius),
            "y_centre": _float_out(rel.y_centre), "y_half": _float_out(rel.y_half)}
    raise SavedReleaseError(
        f"cannot save a {type(rel).__name__}: saved releases hold a PrivateHistogram, "
        "PrivateMoments, PrivateNewton, PrivateQuantileSteps or LocalRelease")


def _moments_out(moments) -> dict:
    count, mean, cov = moments
    return {"count": _float_out(count), "mean": _floats_out(mean), "cov": _floats_out(cov)}


def _pretty(obj, depth: int = 0) -> str:
    """JSON with objects indented and lists of numbers on one line."""
    pad = "  " * depth
    if isinstance(obj, dict):
        if not obj:
            return "{}"
        inner = ",\n".join(f"{pad}  {json.dumps(k)}: {_pretty(v, depth + 1)}"
                           for k, v in obj.items())
        return "{\n" + inner + "\n" + pad + "}"
    if isinstance(obj, list) and any(isinstance(v, dict) for v in obj):
        inner = ",\n".join(f"{pad}  {_pretty(v, depth + 1)}" for v in obj)
        return "[\n" + inner + "\n" + pad + "]"
    return json.dumps(obj, allow_nan=False, separators=(", ", ": "))


def _local_of(rel):
    """The local release a local release's histogram is a view of (or ``rel``)."""
    if hasattr(rel, "report_counts"):
        return rel
    local = getattr(rel, "local", None)
    if local is None:
        raise SavedReleaseError(
            f"cannot save this {type(rel).__name__}: it has no local release (make it with "
            "LocalRelease.histogram); a local release saves its channel's report counts")
    return local


def release_document(rel) -> dict:
    """The JSON document (a dict) `save_release()` writes for ``rel``."""
    if getattr(rel, "saved_kind", None) == "local":
        rel = _local_of(rel)
    kind, body = _release_out(rel)
    domain = rel.domain if kind in ("histogram", "local") else rel.space.domain
    report = rel.report
    private = ("pure epsilon-local differential privacy (delta = 0): each row's report is "
               "epsilon-DP on its own" if kind == "local"
               else "pure epsilon-differential privacy (delta = 0)")
    guarantee = {"definition": private if report.private
                 else "none: epsilon = inf, exact values (NOT private)",
                 "epsilon": _float_out(report.epsilon), "delta": 0.0,
                 "neighbouring": NEIGHBOURING, "mechanism": report.mechanism}
    return {"format": FORMAT, "format_version": FORMAT_VERSION, "release_type": kind,
            "dpmodels_version": __version__, "note": _NOTE, "guarantee": guarantee,
            "domain": {"axes": [_axis_out(a) for a in domain.axes]},
            "report": _report_out(rel.report), "release": body}


def save_release(rel, path: str | os.PathLike) -> pathlib.Path:
    """Write a release to ``path`` (see the module notes for the format).

    The file holds only what is already public: the public domain, the
    released noisy values and the privacy report; never a raw row or any
    quantity computed from the raw data that was not released.  A path
    ending in ``.gz`` is gzip-compressed.  The file is written to a
    temporary name and renamed, so a failed save leaves no partial file.

    Parameters
    ----------
    rel : PrivateHistogram, PrivateMoments, PrivateNewton, PrivateQuantileSteps or LocalRelease
        (a LocalHistogram saves its LocalRelease)
    path : str or os.PathLike

    Returns
    -------
    pathlib.Path
        The path written.

    Examples
    --------
    >>> import tempfile, numpy as np, pandas as pd, dpmodels as dpm
    >>> df = pd.DataFrame({"g": np.repeat(["a", "b"], 50), "x": np.arange(100.0)})
    >>> rel = dpm.release(df, columns=["g", "x"], epsilon=1.0, bounds={"x": (0, 100)},
    ...                   levels={"g": ["a", "b"]}, bins=5, random_state=0)
    >>> path = save_release(rel, tempfile.mkdtemp() + "/rel.json")
    >>> back = dpm.load_release(path)
    >>> bool((back.counts == rel.counts).all()) and back.report == rel.report
    True
    """
    path = pathlib.Path(os.fspath(path))
    text = _pretty(release_document(rel)) + "\n"
    data = text.encode("utf-8")
    if path.name.endswith(".gz"):
        data = gzip.compress(data, compresslevel=6, mtime=0)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent or ".")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    return path
