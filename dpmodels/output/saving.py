"""Writing a release to its saved file: the envelope of the format that
`dpmodels.front.saved` documents and reads back.

It sits below the releases (every release's ``save`` calls `save_release()`)
and imports none of them: a release hands over its part of the document with
``saved_parts()``, which its mechanism's codec writes
(``dpmodels/mechanisms/<name>/codec.py``: the ``release_type``, the domain, the
report and the released values), and this module wraps it in the format, the
guarantee and the shared encodings of `dpmodels.output.documents`.  What a
file holds and what it never holds is in `dpmodels.front.saved`.
"""

from __future__ import annotations

import gzip
import json
import os
import pathlib
import tempfile

from ..core.version import __version__
from .documents import SavedReleaseError, axis_out, float_out, report_out

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


# ---- encoding ---------------------------------------------------------------------------------


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


def release_document(rel) -> dict:
    """The JSON document (a dict) `save_release()` writes for ``rel``: the
    envelope (format, guarantee, domain, report) around the values its
    mechanism's codec writes (``rel.saved_parts()``)."""
    if not callable(getattr(rel, "saved_parts", None)):
        raise SavedReleaseError(
            f"cannot save a {type(rel).__name__}: saved releases hold a PrivateHistogram, "
            "PrivateMoments, PrivateNewton, PrivateQuantileSteps or LocalRelease")
    parts = rel.saved_parts()
    report = parts.report
    guarantee = {"definition": parts.definition if report.private
                 else "none: epsilon = inf, exact values (NOT private)",
                 "epsilon": float_out(report.epsilon), "delta": 0.0,
                 "neighbouring": NEIGHBOURING, "mechanism": report.mechanism}
    return {"format": FORMAT, "format_version": FORMAT_VERSION, "release_type": parts.kind,
            "dpmodels_version": __version__, "note": _NOTE, "guarantee": guarantee,
            "domain": {"axes": [axis_out(a) for a in parts.domain.axes]},
            "report": report_out(report), "release": parts.body}


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
