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
"""

from __future__ import annotations

import builtins
import gzip
import json
import math
import os
import pathlib
from collections.abc import Mapping
from dataclasses import replace
from fractions import Fraction
from typing import Any, Literal, overload

import numpy as np

from ..core.budget import exact_parts, parts_fit, split_epsilon
from ..core.errors import DPModelsError
from ..core.exact import discrete_laplace_variance
from ..core.keywords import checked_keywords
from ..core.noise import discrete_laplace_sf
from ..core.report import HISTOGRAM_PART, MomentsReport, PrivacyReport
from ..core.unbounded import Unbounded
from ..data.clipping import CLIP_SHARE
from ..domain.axes import (
    SCALES,
    Axis,
    Domain,
    _as_bins,
    _as_bounds,
    _as_levels,
    _check_edges,
    _check_unbounded_cells,
    scale_fits,
)
from ..domain.formula import caller_namespace
from ..mechanisms.histogram import DEFAULT_A, PrivateHistogram, resolve_threshold
from ..mechanisms.local import Channel, LocalRelease, LocalReport
from ..mechanisms.moments import (
    RADIUS_SHARE,
    SCALE_SHARE,
    PrivateMoments,
    describe_axis,
    design_space,
    moments_sensitivity,
    unit_epsilon,
)
from ..mechanisms.newton import LEVELS, LOGIT_WEIGHT, STEP_SHARES, PrivateNewton, step_scale
from ..mechanisms.quantile_steps import (
    NOISE_ROWS,
    PrivateQuantileSteps,
    band_share,
    level_sensitivity,
    quantile_split,
    residual_edges,
    score_sensitivity,
    start_and_bandwidth,
)
from ..output.saving import (
    FORMAT,
    FORMAT_VERSION,
    MAJOR_VERSION,
    NEIGHBOURING,
    SavedReleaseError,
    release_document,
    save_release,
)

__all__ = ["FORMAT", "FORMAT_VERSION", "NEIGHBOURING", "SavedReleaseError", "save_release",
           "release_document", "load_release", "read_document", "release_from_document"]

# ---- decoding and checks -----------------------------------------------------------------------


class _Reader:
    """Typed access to a decoded JSON object; every refusal names the key."""

    def __init__(self, obj, where: str):
        if not isinstance(obj, dict):
            raise SavedReleaseError(f"{where} must be a JSON object, got {type(obj).__name__}")
        self.obj, self.where = obj, where

    def _get(self, key):
        if key not in self.obj:
            raise SavedReleaseError(f"the saved release has no key {self._name(key)!r}: the "
                                    "file is incomplete or not a dpmodels release")
        return self.obj[key]

    def _name(self, key) -> str:
        return f"{self.where}.{key}" if self.where else str(key)

    def sub(self, key) -> _Reader:
        return _Reader(self._get(key), self._name(key))

    def str(self, key) -> str:
        v = self._get(key)
        if not isinstance(v, str):
            raise SavedReleaseError(f"{self._name(key)} must be a string, got {v!r}")
        return v

    def bool(self, key) -> bool:
        v = self._get(key)
        if not isinstance(v, bool):
            raise SavedReleaseError(f"{self._name(key)} must be true or false, got {v!r}")
        return v

    def int(self, key) -> int:
        return _int(self._get(key), self._name(key))

    @overload
    def float(self, key, optional: Literal[False] = False) -> builtins.float: ...

    @overload
    def float(self, key, optional: builtins.bool) -> builtins.float | None: ...

    def float(self, key, optional: builtins.bool = False) -> builtins.float | None:
        v = self._get(key)
        if v is None and optional:
            return None
        return _float(v, self._name(key))

    def floats(self, key, shape: tuple) -> np.ndarray:
        return _float_array(self._get(key), shape, self._name(key))

    def list(self, key) -> list:
        v = self._get(key)
        if not isinstance(v, list):
            raise SavedReleaseError(f"{self._name(key)} must be a list, got {type(v).__name__}")
        return v


def _int(v, where: str) -> int:
    if isinstance(v, bool) or not isinstance(v, int):
        raise SavedReleaseError(f"{where} must be an integer, got {v!r}")
    return v


def _float(v, where: str) -> float:
    if isinstance(v, str) and v in ("inf", "-inf", "nan"):
        return float(v)
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise SavedReleaseError(f"{where} must be a number (or \"inf\", \"-inf\", \"nan\"), "
                                f"got {v!r}")
    return float(v)


def _float_array(v, shape: tuple, where: str) -> np.ndarray:
    """A float64 array of exactly ``shape`` from nested lists."""
    def walk(x, dims, at):
        if not dims:
            return _float(x, at)
        if not isinstance(x, list) or len(x) != dims[0]:
            got = f"{len(x)} entries" if isinstance(x, list) else repr(x)
            raise SavedReleaseError(
                f"{at} must be a list of {dims[0]} entries (the declared design has shape "
                f"{shape}), got {got}")
        return [walk(e, dims[1:], f"{at}[{i}]") for i, e in enumerate(x)]

    return np.array(walk(v, tuple(shape), where), dtype=np.float64).reshape(shape)


def _int_vector(v, where: str) -> list[int]:
    if not isinstance(v, list):
        raise SavedReleaseError(f"{where} must be a list of integers, got {type(v).__name__}")
    for i, x in enumerate(v):
        if isinstance(x, bool) or not isinstance(x, int):
            raise SavedReleaseError(
                f"{where}[{i}] = {x!r} is not an integer: the released counts are integers")
    return v


def _level_in(name: str, v):
    if isinstance(v, dict) and set(v) == {"float"}:
        return _float(v["float"], f"the levels of {name!r}")
    if isinstance(v, (list, dict)) or v is None:
        raise SavedReleaseError(f"the levels of {name!r} hold {v!r}, which is not a level "
                                "(a string, bool, int or float)")
    return v


def _domain_in(r: _Reader) -> Domain:
    axes, names = [], set()
    for i, raw in enumerate(r.list("axes")):
        a = _Reader(raw, f"domain.axes[{i}]")
        name = a.str("name")
        if name in names:
            raise SavedReleaseError(f"the domain declares the variable {name!r} twice")
        names.add(name)
        kind = a.str("kind")
        try:
            if kind == "continuous" and a.str("scale") == "logistic":
                u = a.sub("unbounded")
                axis = Axis(name, "continuous", bounds=(-math.inf, math.inf),
                            bins=_as_bins(name, a.int("bins")), scale="logistic",
                            unbounded=Unbounded(u.float("center"), u.float("scale")))
                _check_edges(name, axis.coord_bounds, axis.bin_count)
                _check_unbounded_cells(axis)
            elif kind == "continuous":
                bounds = _as_bounds(name, a.list("bounds"))
                bins = _as_bins(name, a.int("bins"))
                scale = a.str("scale")
                if scale not in SCALES or not scale_fits(scale, bounds):
                    raise SavedReleaseError(
                        f"the scale of {name!r} is {scale!r}, which is not one of "
                        f"{sorted(SCALES)} finite and increasing on bounds {bounds}")
                axis = Axis(name, "continuous", bounds=bounds, bins=bins, scale=scale)
                _check_edges(name, axis.coord_bounds, bins)
            elif kind == "discrete":
                levels = _as_levels(name, [_level_in(name, v) for v in a.list("levels")])
                axis = Axis(name, "discrete", levels=levels,
                            declared_order=a.bool("declared_order"))
            else:
                raise SavedReleaseError(f"domain.axes[{i}].kind must be \"continuous\" or "
                                        f"\"discrete\", got {kind!r}")
        except SavedReleaseError:
            raise
        except DPModelsError as exc:  # malformed bounds, bins or levels
            raise SavedReleaseError(f"the saved domain is malformed: {exc}") from None
        axes.append(axis)
    if not axes:
        raise SavedReleaseError("the saved domain has no variable")
    try:
        return Domain(tuple(axes))
    except DPModelsError as exc:
        raise SavedReleaseError(f"the saved domain is malformed: {exc}") from None


_REPORT_KINDS = {
    PrivacyReport: {"epsilon": "float", "private": "bool", "mechanism": "str",
                    "noise_scale": "float", "sensitivity": "int", "threshold_rule": "str",
                    "threshold_A": "float?", "threshold": "float?", "n": "int",
                    "n_source": "str", "variables": "pairs", "domain_cells": "int",
                    "expected_spurious_cells": "float", "released_cells": "int",
                    "noisy_total": "int", "seeded": "bool", "budget": "str",
                    "split": "split"},
    MomentsReport: {"epsilon": "float", "private": "bool", "mechanism": "str",
                    "split": "split", "n": "int", "n_source": "str", "variables": "pairs",
                    "columns": "strs", "radius": "float", "clipped_rows": "float",
                    "noisy_rows": "float", "seeded": "bool", "budget": "str"},
    LocalReport: {"epsilon": "float", "private": "bool", "mechanism": "str", "channel": "str",
                  "p": "float", "q": "float", "k": "int", "domain_cells": "int",
                  "missing": "str", "n": "int", "n_source": "str", "variables": "pairs",
                  "noisy_total": "int", "seeded": "bool", "budget": "str"},
}


def _report_in(r: _Reader, expected: type):
    kind = r.str("type")
    if kind != expected.__name__:
        raise SavedReleaseError(f"report.type is {kind!r}; this release type carries a "
                                f"{expected.__name__}")
    values: dict[str, Any] = {}
    for key, t in _REPORT_KINDS[expected].items():
        if expected is PrivacyReport and key == "split" and key not in r.obj:
            continue  # a histogram saved before its epsilon was split (issue 43)
        if t == "float":
            values[key] = r.float(key)
        elif t == "float?":
            values[key] = r.float(key, optional=True)
        elif t == "int":
            values[key] = r.int(key)
        elif t == "bool":
            values[key] = r.bool(key)
        elif t == "str":
            values[key] = r.str(key)
        elif t == "strs":
            items = r.list(key)
            if not all(isinstance(s, str) for s in items):
                raise SavedReleaseError(f"report.{key} must be a list of strings")
            values[key] = tuple(items)
        else:  # pairs (str, str) or split (str, float)
            pairs: list[tuple[str, Any]] = []
            for j, p in enumerate(r.list(key)):
                if not (isinstance(p, list) and len(p) == 2 and isinstance(p[0], str)):
                    raise SavedReleaseError(f"report.{key}[{j}] must be a [label, value] pair")
                if t == "split":
                    pairs.append((p[0], _float(p[1], f"report.{key}[{j}]")))
                elif isinstance(p[1], str):
                    pairs.append((p[0], p[1]))
                else:
                    raise SavedReleaseError(f"report.{key}[{j}] must be a [name, description] "
                                            "pair of strings")
            values[key] = tuple(pairs)
    eps = values["epsilon"]
    if math.isnan(eps) or eps <= 0:
        raise SavedReleaseError(f"report.epsilon must be > 0, got {eps}")
    if values["private"] != math.isfinite(eps):
        raise SavedReleaseError(f"report.private is {values['private']} but report.epsilon is "
                                f"{eps:g}: a release is private exactly when epsilon is finite")
    if values["n"] < 1:
        raise SavedReleaseError(f"report.n must be a positive integer, got {values['n']}")
    if expected is MomentsReport:
        _split_claim(values["split"], eps, values["private"])
    if expected is PrivacyReport and values.get("split"):
        parts = [e for _, e in values["split"]]
        cells = [e for label, e in values["split"] if label == HISTOGRAM_PART]
        if values["private"] and not (parts_fit(eps, parts) and len(cells) == 1
                                      and values["noise_scale"] == 2.0 / cells[0]):
            raise SavedReleaseError(
                "report.split must hold the cells' part, the parts must add up to at most "
                "report.epsilon and report.noise_scale must be 2 / the cells' part")
    if "outside_bounds" in r.obj and r.obj["outside_bounds"] is not None:
        values["outside_bounds"] = _outside_in(r.sub("outside_bounds"), values)
    return expected(**values)


def _outside_in(r: _Reader, values: dict):
    """The saved noisy outside counts (`dpmodels.data.clipping`): their epsilon must be
    the split's part for them (exactly), their noise SD is recomputed from it."""
    from ..data.clipping import OutsideBounds, outside_noise_sd, split_label

    names = r.list("names")
    if not all(isinstance(nm, str) for nm in names):
        raise SavedReleaseError("report.outside_bounds.names must be a list of strings")
    counts = [_float(c, f"report.outside_bounds.counts[{j}]")
              for j, c in enumerate(r.list("counts"))]
    if len(counts) != len(names) or not names:
        raise SavedReleaseError("report.outside_bounds needs one count per name")
    eps_c = r.float("epsilon")
    if values["private"]:
        parts = [e for label, e in values.get("split", ()) if label == split_label(len(names))]
        if parts != [eps_c]:
            raise SavedReleaseError(
                f"report.outside_bounds.epsilon = {eps_c:g} is not the report's split part "
                "for the outside counts")
    elif math.isfinite(eps_c):
        raise SavedReleaseError("report.outside_bounds.epsilon must be inf in a release that "
                                "is not private")
    if r.int("n") != values["n"]:
        raise SavedReleaseError("report.outside_bounds.n is not the report's n")
    return OutsideBounds(tuple(names), tuple(counts), values["n"], eps_c,
                         outside_noise_sd(eps_c, len(names)))


def _histogram_in(doc: _Reader, domain: Domain, namespace: Mapping | None = None):
    report = _report_in(doc.sub("report"), PrivacyReport)
    body = doc.sub("release")
    ids = _int_vector(body.list("cell_ids"), "release.cell_ids")
    counts = _int_vector(body.list("counts"), "release.counts")
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


def _space_in(r: _Reader, domain: Domain, namespace: Mapping, response: bool):
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


def _ranges_match(r: _Reader, space) -> bool:
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


def _moments_tuple(r: _Reader, q: int) -> tuple:
    m = r.sub("moments")
    return (m.float("count"), m.floats("mean", (q,)),
            _symmetric(m.floats("cov", (q, q)), "release.moments.cov"))


def _pairs(v, where: str) -> tuple:
    if not isinstance(v, list):
        raise SavedReleaseError(f"{where} must be a list")
    return tuple(tuple(float(x) for x in _float_array(p, (2,), f"{where}[{i}]"))
                 for i, p in enumerate(v))


def _positive(value: float, where: str) -> float:
    if not value > 0:
        raise SavedReleaseError(f"{where} must be > 0, got {value}")
    return value


def _variances(values, where: str):
    """Noise variances: finite and >= 0 (the bootstrap draws noise of this law)."""
    arr = np.asarray(values, dtype=np.float64)
    if not np.all(np.isfinite(arr) & (arr >= 0)):
        raise SavedReleaseError(f"{where} holds a noise variance that is negative or not "
                                f"finite: {arr.ravel().tolist()[:6]}")
    return values


def _symmetric(matrix: np.ndarray, where: str) -> np.ndarray:
    if not np.array_equal(matrix, np.swapaxes(matrix, -1, -2)):
        raise SavedReleaseError(f"{where} must be symmetric (it is released as one triangle)")
    return matrix


def _scales(body: _Reader, q: int) -> np.ndarray:
    scales = body.floats("scales", (q,))
    if not np.all(scales > 0):
        raise SavedReleaseError(f"release.scales must be positive, got {scales.tolist()}")
    return scales


def _bandwidths(body: _Reader, m: int) -> np.ndarray:
    h = body.floats("bandwidth", (m,))
    if not np.all(np.isfinite(h) & (h > 0)):
        raise SavedReleaseError(f"release.bandwidth must be positive, got {h.tolist()}")
    return h


def _formula_release_in(doc: _Reader, domain: Domain, namespace: Mapping, *, response: bool):
    """The parts every formula release (moments, Newton, quantile steps) reads
    first: its report, its body, its design space checked against the domain
    and the report's columns, and the number of design columns."""
    report = _report_in(doc.sub("report"), MomentsReport)
    body = doc.sub("release")
    space, q = _space_in(body.sub("design"), domain, namespace, response=response)
    _describes(report, domain)
    _columns_check(report, space)
    return report, body, space, q


def _moments_in(doc: _Reader, domain: Domain, namespace: Mapping):
    report, body, space, q = _formula_release_in(doc, domain, namespace, response=True)
    second = _symmetric(body.floats("second", (q, q)), "release.second")
    noise_var = _variances(tuple(float(v) for v in body.floats("noise_var", (3,))),
                           "release.noise_var")
    rel = PrivateMoments(space, body.float("count"), body.floats("sums", (q,)), second,
                         noise_var, _positive(body.float("radius"), "release.radius"),
                         body.floats("offsets", (q,)), _scales(body, q), report)
    _moments_claim(rel)
    return rel


def _newton_in(doc: _Reader, domain: Domain, namespace: Mapping):
    report, body, space, q = _formula_release_in(doc, domain, namespace, response=False)
    k = q + 1
    rel = PrivateNewton(
        space, body.floats("beta", (k,)),
        _symmetric(body.floats("information", (k, k)), "release.information"),
        body.floats("score", (k,)), body.floats("start", (k,)),
        _variances(tuple(float(v) for v in body.floats("noise_var", (2,))), "release.noise_var"),
        _moments_tuple(body, q), body.floats("offsets", (q,)), _scales(body, q),
        _positive(body.float("radius"), "release.radius"), report,
        _variances(_pairs(body.list("step_noise"), "release.step_noise"), "release.step_noise"))
    _newton_claim(rel)
    return rel


def _quantile_in(doc: _Reader, domain: Domain, namespace: Mapping):
    report, body, space, q = _formula_release_in(doc, domain, namespace, response=False)
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
    steps = tuple(_variances(_pairs(s, f"release.steps[{i}]"), f"release.steps[{i}]")
                  for i, s in enumerate(steps))
    edges = body.floats("residual_edges", (len(body.list("residual_edges")),))
    if not np.array_equal(edges, residual_edges()):
        raise SavedReleaseError("release.residual_edges is not the public residual grid of "
                                "the quantile-steps release")
    res_counts = _int_vector(body.list("residual_counts"), "release.residual_counts")
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
        _symmetric(body.floats("ls_information", (k, k)), "release.ls_information"),
        _variances(body.floats("band_prior_var", (m,)), "release.band_prior_var"),
        body.floats("score", (m, k)), body.floats("start", (m, k)),
        _bandwidths(body, m), steps, body.floats("ls_beta", (k,)),
        _variances(tuple(float(v) for v in body.floats("ls_noise", (2,))), "release.ls_noise"),
        np.array(res_counts, dtype=np.int64), edges, body.floats("level_counts", (n_levels,)),
        _variances(body.float("level_noise_var"), "release.level_noise_var"),
        _moments_tuple(body, q), body.floats("offsets", (q,)), _scales(body, q),
        _positive(body.float("radius"), "release.radius"),
        body.float("y_centre"), _positive(body.float("y_half"), "release.y_half"), report)
    _quantile_claim(rel)
    return rel


# ---- the claim: noise, threshold and split agree with the stated epsilon (rule 11) ----------
#
# A file's epsilon is believed only if what the release drew its noise with (the noise
# scale, the split of epsilon between the mechanism's parts, the noise variances of the
# released values) is what the release's own code makes of that epsilon, in exact
# arithmetic: an edited epsilon, split or noise scale is refused, never reported as a
# stronger guarantee than the noise gives.


def _claim_error(what: str, stated, want, eps: float) -> SavedReleaseError:
    return SavedReleaseError(
        f"{what} is {stated!r}, but a release at the stated epsilon = {eps!r} has {want!r}: "
        "the file's noise does not prove the guarantee it states (an edited or inconsistent "
        "file); it is refused")


def _split_claim(split, eps: float, private: bool) -> None:
    """Every part of a split finite and >= 0, their exact (rational) sum at
    most the stated epsilon; no part in a release that is not private."""
    if not private:
        if split:
            raise SavedReleaseError("report.split lists parts of epsilon, but report.epsilon "
                                    "is inf (a release that is not private has none)")
        return
    if not split:
        raise SavedReleaseError("report.split is empty: a private release states how its "
                                "epsilon was split between its parts")
    for label, e in split:
        if not (math.isfinite(e) and e >= 0):
            raise SavedReleaseError(f"report.split's part {e!r} for {label!r} is not a finite "
                                    "number >= 0")
    total = sum((Fraction(e) for _, e in split), Fraction(0))
    if total > Fraction(eps):  # exactly: a float sum or isclose would let an ulp through
        raise SavedReleaseError(
            f"report.split's parts add up to {float(total)!r} (exactly {total}), more than "
            f"report.epsilon = {eps!r}: the release spent more than the epsilon it states")
    if float(total) < eps * (1.0 - 1e-9):  # the release's parts fall short by ulps at most
        raise SavedReleaseError(f"report.split's parts add up to {float(total):g}, not to "
                                f"report.epsilon = {eps:g}")


def _histogram_claim(report: PrivacyReport, m: int) -> None:
    """The split (when a variable can clip: the cells' part and the outside
    counts'), noise scale, sensitivity, threshold and spurious-cell bound of a
    histogram, rebuilt from its stated epsilon (`dpmodels.mechanisms.histogram`'s code)."""
    eps = report.epsilon
    split = tuple(getattr(report, "split", ()))
    eps_h = eps  # the cells' epsilon: their noise, threshold and spurious law
    if split:
        _split_claim(split, eps, report.private)
        eps_c, eps_h = split_epsilon(eps, [CLIP_SHARE, None])
        _parts_claim(report, [eps_h, eps_c])
    if report.noise_scale != 2.0 / eps_h:
        raise _claim_error("report.noise_scale", report.noise_scale, 2.0 / eps_h, eps)
    if report.sensitivity != 2:
        raise _claim_error("report.sensitivity", report.sensitivity, 2, eps)
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
            raise _claim_error("report's threshold (rule, t, A)", stated, want, eps)
        k = int(report.threshold)
    spurious = (0.0 if not report.private else float(m) if k is None
                else m * discrete_laplace_sf(k, eps_h))
    if report.expected_spurious_cells != spurious:
        raise _claim_error("report.expected_spurious_cells", report.expected_spurious_cells,
                           spurious, eps)


def _clipped(report) -> bool:
    """True when the release also counted rows outside the bounds (a part of its split)."""
    return getattr(report, "outside_bounds", None) is not None


def _parts_claim(report, want: list) -> None:
    """The split's parts, in order, must be exactly ``want``."""
    stated = [e for _, e in report.split]
    if stated != want:
        raise _claim_error("report.split's parts", stated, want, report.epsilon)


def _moments_claim(rel: PrivateMoments) -> None:
    """The split of a moments release (`dpmodels.mechanisms.moments.release_moments()`)
    and its noise variances, rebuilt from the stated epsilon."""
    report, eps = rel.report, rel.report.epsilon
    if not report.private:
        if tuple(rel.noise_var) != (0.0, 0.0, 0.0):
            raise _claim_error("release.noise_var", tuple(rel.noise_var), (0.0, 0.0, 0.0), eps)
        return
    if _clipped(report):
        eps_c, eps_s, eps_r, eps_m = split_epsilon(
            eps, [CLIP_SHARE, SCALE_SHARE, RADIUS_SHARE, None])
        want = [eps_s, eps_r, eps_m, eps_c]
    else:
        eps_s, eps_r, eps_m = split_epsilon(eps, [SCALE_SHARE, RADIUS_SHARE, None])
        want = [eps_s, eps_r, eps_m]
    _parts_claim(report, want)
    g, _, w_s, delta = moments_sensitivity(rel.radius, rel.space, rel.offsets, rel.scales)
    var = discrete_laplace_variance(unit_epsilon(eps_m, delta / 2.0))
    noise = (var / (w_s * g) ** 2, var / (w_s * g) ** 2, var / g**4)
    if tuple(rel.noise_var) != noise:
        raise _claim_error("release.noise_var", tuple(rel.noise_var), noise, eps)


def _step_noise(rel, eps_t: float, weight: float) -> tuple[float, float]:
    """The noise variances ``(information entry, score entry)`` of a Newton-type
    step at the part ``eps_t``: `dpmodels.mechanisms.newton.noisy_step()`'s, with the
    step's scale ``(g, w_g, Delta)`` from the release's own ``step_scale()``
    on the public quantities it reads (the radius, centres and scales)."""
    g, w_g, delta = step_scale(rel.radius, rel.space, rel.offsets, rel.scales)
    var = discrete_laplace_variance(unit_epsilon(eps_t, delta / 2.0))
    return var * (weight / (LEVELS * g * g)) ** 2, var / (w_g * LEVELS * g) ** 2


def _noiseless_claim(report, what: str, noise_vars) -> None:
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
        _noiseless_claim(rel.report, "Newton-steps",
                         [v for pair in rel.step_noise for v in pair] + list(rel.noise_var))
        return
    clipped = _clipped(rel.report)
    eps_c = eps * CLIP_SHARE if clipped else 0.0
    eps_s, eps_r = eps * SCALE_SHARE, eps * RADIUS_SHARE
    steps = [(eps - eps_c - eps_s - eps_r) * share for share in STEP_SHARES]
    eps_c, eps_s, eps_r, *steps = exact_parts(eps, [eps_c, eps_s, eps_r, *steps])
    _parts_claim(rel.report, [eps_s, eps_r, *steps] + ([eps_c] if clipped else []))
    noise = tuple(_step_noise(rel, e, LOGIT_WEIGHT) for e in steps)
    stated = tuple(tuple(float(v) for v in pair) for pair in rel.step_noise)
    if stated != noise:
        raise _claim_error("release.step_noise", stated, noise, eps)
    if tuple(float(v) for v in rel.noise_var) != noise[-1]:
        raise _claim_error("release.noise_var", tuple(rel.noise_var), noise[-1], eps)


def _quantile_claim(rel: PrivateQuantileSteps) -> None:
    """The split of a quantile-steps release
    (`dpmodels.mechanisms.quantile_steps.release_quantile_steps()`) and the noise
    variances of its quantile steps and level counts, rebuilt from the stated epsilon."""
    eps, taus, space = rel.report.epsilon, rel.quantiles, rel.space
    if not rel.report.private:  # epsilon = inf: the steps without noise (not private)
        _noiseless_claim(rel.report, "quantile-steps",
                         [x for per_q in rel.steps for pair in per_q for x in pair]
                         + [rel.level_noise_var, *rel.ls_noise])
        return
    clipped = _clipped(rel.report)
    eps_s, eps_r, eps_ls, eps_res, eps_lv, eps_c, steps = quantile_split(
        eps, len(taus), bool(space.dummy.any()), bool(clipped))
    _parts_claim(rel.report, [eps_s, eps_r, eps_ls, eps_res] + [eps_lv] * bool(eps_lv)
                 + steps * len(taus) + [eps_c] * clipped)
    g, delta = score_sensitivity(rel.radius, space, rel.offsets, rel.scales)
    noise = tuple(tuple((v, v) for v in (
        discrete_laplace_variance(unit_epsilon(e, delta / 2.0)) / float(LEVELS * g) ** 2
        for e in steps)) for _ in taus)
    stated = tuple(tuple(tuple(float(x) for x in pair) for pair in per_q) for per_q in rel.steps)
    if stated != noise:
        raise _claim_error("release.steps (noise variances)", stated, noise, eps)
    level = (discrete_laplace_variance(unit_epsilon(eps_lv, level_sensitivity(space) / 2.0))
             if eps_lv else 0.0)
    if float(rel.level_noise_var) != level:
        raise _claim_error("release.level_noise_var", float(rel.level_noise_var), level, eps)
    ls_noise = _step_noise(rel, eps_ls, 1.0)  # the least-squares step's weights are 1
    if tuple(float(v) for v in rel.ls_noise) != ls_noise:
        raise _claim_error("release.ls_noise", tuple(rel.ls_noise), ls_noise, eps)
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
            raise _claim_error(f"release.{key}", stated_b, want, eps)


#: The channels a saved local release may name (``Channel.name``).
_LOCAL_CHANNELS = ("krr", "oue", "identity")


def _local_in(doc: _Reader, domain: Domain, namespace: Mapping | None = None):
    """A `LocalRelease`: the channel rebuilt from its
    name, k and per-row epsilon (its p and q must be the rebuilt ones), the k
    report counts, and the report, checked against both and the domain."""
    report = _report_in(doc.sub("report"), LocalReport)
    body = doc.sub("release")
    saved = body.sub("channel")
    name = saved.str("name")
    if name not in _LOCAL_CHANNELS:
        raise SavedReleaseError(f"release.channel.name must be one of {list(_LOCAL_CHANNELS)}, "
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
    counts = _int_vector(body.list("report_counts"), "release.report_counts")
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


_READERS = {"histogram": _histogram_in, "moments": _moments_in, "newton": _newton_in,
            "quantile-steps": _quantile_in, "local": _local_in}


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
    r = _Reader(doc, "")
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
    if kind not in _READERS:
        raise SavedReleaseError(f"release_type must be one of {sorted(_READERS)}, got {kind!r}")
    guarantee = r.sub("guarantee")
    domain = _domain_in(r.sub("domain"))
    ns = {"np": np, "numpy": np}
    ns.update(namespace or {})
    rel = _READERS[kind](r, domain, ns)
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
