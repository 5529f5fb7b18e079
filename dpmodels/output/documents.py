"""The pieces of a saved release's JSON document that every mechanism's codec
shares: numbers, levels, axes and reports written out, and read back with a
check of every key (a refusal names the key), plus the checks of a file's
claim that its noise proves the epsilon it states (PRIVACY.md rule 11).

The format is documented in `dpmodels.front.saved`.  Each mechanism's own
values are written and read by the ``codec`` module of its folder
(``dpmodels/mechanisms/<name>/codec.py``), which its registry entry names;
this module knows none of them.
"""

from __future__ import annotations

import builtins
import math
from collections.abc import Callable
from dataclasses import dataclass, fields
from fractions import Fraction
from typing import Any, Literal, overload

import numpy as np

from ..core.errors import DPModelsError, SavedReleaseError
from ..core.unbounded import Unbounded
from ..data.clipping import OutsideBounds, outside_noise_sd, split_label
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

__all__ = ["SavedReleaseError", "SavedParts", "float_out", "floats_out", "level_out", "axis_out",
           "report_out", "Reader", "as_int", "as_float", "float_array", "int_vector",
           "domain_in", "report_in", "pairs", "positive", "variances", "symmetric",
           "claim_error", "split_claim", "clips", "parts_claim"]


def float_out(x) -> float | str:
    x = float(x)
    if math.isfinite(x):
        return x
    return "nan" if math.isnan(x) else ("inf" if x > 0 else "-inf")


def floats_out(a) -> list | float | str:
    """A float array (any shape) as nested lists, non-finite values as strings."""
    arr = np.asarray(a, dtype=np.float64)
    if arr.ndim == 0:
        return float_out(arr)
    return [floats_out(row) for row in arr] if arr.ndim > 1 else [float_out(v) for v in arr]


def level_out(name: str, v):
    if isinstance(v, (bool, np.bool_)):
        return bool(v)
    if isinstance(v, (int, np.integer)):
        return int(v)
    if isinstance(v, (float, np.floating)):
        return float(v) if math.isfinite(v) else {"float": float_out(v)}
    if isinstance(v, str):
        return v
    raise SavedReleaseError(
        f"cannot save the level {v!r} of {name!r}: a saved release holds levels that are "
        f"strings, bools, ints or floats, not {type(v).__name__}; recode {name!r} and "
        "release again")


def axis_out(axis: Axis) -> dict:
    if axis.kind == "continuous" and axis.unbounded is not None:  # no finite bounds
        return {"name": axis.name, "kind": "continuous", "bounds": None,
                "unbounded": {"center": axis.unbounded.center, "scale": axis.unbounded.scale},
                "bins": int(axis.bin_count), "scale": axis.scale}
    if axis.kind == "continuous":
        return {"name": axis.name, "kind": "continuous",
                "bounds": [float(b) for b in axis.bound_pair],
                "bins": int(axis.bin_count), "scale": axis.scale}
    return {"name": axis.name, "kind": "discrete",
            "levels": [level_out(axis.name, v) for v in axis.level_set],
            "declared_order": bool(axis.declared_order)}


def report_out(report) -> dict:
    out = {"type": type(report).__name__}
    for f in fields(report):
        v = getattr(report, f.name)
        if f.name in ("variables", "split"):
            v = [[str(a), float_out(b) if f.name == "split" else str(b)] for a, b in v]
        elif f.name == "columns":
            v = [str(c) for c in v]
        elif f.name == "outside_bounds":  # dpmodels.data.clipping.OutsideBounds, or None
            v = None if v is None else {
                "names": [str(nm) for nm in v.names], "counts": [float_out(c) for c in v.counts],
                "n": int(v.n), "epsilon": float_out(v.epsilon)}
        elif isinstance(v, (bool, np.bool_)):
            v = bool(v)
        elif isinstance(v, (int, np.integer)):
            v = int(v)
        elif isinstance(v, (float, np.floating)):
            v = float_out(v)
        out[f.name] = v
    return out


@dataclass(frozen=True)
class SavedParts:
    """What a release's codec writes: the file's ``release_type``, the public
    domain, the privacy report, the release's own values (``body``, the
    file's ``release`` key) and the guarantee's definition."""

    kind: str
    domain: Domain
    report: Any
    body: dict
    definition: str = "pure epsilon-differential privacy (delta = 0)"


# ---- decoding and checks -----------------------------------------------------------------------


class Reader:
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

    def sub(self, key) -> Reader:
        return Reader(self._get(key), self._name(key))

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
        return as_int(self._get(key), self._name(key))

    @overload
    def float(self, key, optional: Literal[False] = False) -> builtins.float: ...

    @overload
    def float(self, key, optional: builtins.bool) -> builtins.float | None: ...

    def float(self, key, optional: builtins.bool = False) -> builtins.float | None:
        v = self._get(key)
        if v is None and optional:
            return None
        return as_float(v, self._name(key))

    def floats(self, key, shape: tuple) -> np.ndarray:
        return float_array(self._get(key), shape, self._name(key))

    def list(self, key) -> list:
        v = self._get(key)
        if not isinstance(v, list):
            raise SavedReleaseError(f"{self._name(key)} must be a list, got {type(v).__name__}")
        return v


def as_int(v, where: str) -> int:
    if isinstance(v, bool) or not isinstance(v, int):
        raise SavedReleaseError(f"{where} must be an integer, got {v!r}")
    return v


def as_float(v, where: str) -> float:
    if isinstance(v, str) and v in ("inf", "-inf", "nan"):
        return float(v)
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise SavedReleaseError(f"{where} must be a number (or \"inf\", \"-inf\", \"nan\"), "
                                f"got {v!r}")
    return float(v)


def float_array(v, shape: tuple, where: str) -> np.ndarray:
    """A float64 array of exactly ``shape`` from nested lists."""
    def walk(x, dims, at):
        if not dims:
            return as_float(x, at)
        if not isinstance(x, list) or len(x) != dims[0]:
            got = f"{len(x)} entries" if isinstance(x, list) else repr(x)
            raise SavedReleaseError(
                f"{at} must be a list of {dims[0]} entries (the declared design has shape "
                f"{shape}), got {got}")
        return [walk(e, dims[1:], f"{at}[{i}]") for i, e in enumerate(x)]

    return np.array(walk(v, tuple(shape), where), dtype=np.float64).reshape(shape)


def int_vector(v, where: str) -> list[int]:
    if not isinstance(v, list):
        raise SavedReleaseError(f"{where} must be a list of integers, got {type(v).__name__}")
    for i, x in enumerate(v):
        if isinstance(x, bool) or not isinstance(x, int):
            raise SavedReleaseError(
                f"{where}[{i}] = {x!r} is not an integer: the released counts are integers")
    return v


def _level_in(name: str, v):
    if isinstance(v, dict) and set(v) == {"float"}:
        return as_float(v["float"], f"the levels of {name!r}")
    if isinstance(v, (list, dict)) or v is None:
        raise SavedReleaseError(f"the levels of {name!r} hold {v!r}, which is not a level "
                                "(a string, bool, int or float)")
    return v


def domain_in(r: Reader) -> Domain:
    axes, names = [], set()
    for i, raw in enumerate(r.list("axes")):
        a = Reader(raw, f"domain.axes[{i}]")
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


def report_in(r: Reader, expected: Any, check: Callable[[dict], None] | None = None):
    """The saved report of type ``expected``: each key its ``SAVED_FIELDS`` names,
    read as the type written there (a type ending in ``|absent`` may be missing:
    a file written before the field existed), epsilon, privacy and n checked;
    ``check(values)`` is the release's own check of the values read."""
    kind = r.str("type")
    if kind != expected.__name__:
        raise SavedReleaseError(f"report.type is {kind!r}; this release type carries a "
                                f"{expected.__name__}")
    values: dict[str, Any] = {}
    for key, t in expected.SAVED_FIELDS.items():
        if t.endswith("|absent"):
            if key not in r.obj:
                continue  # the field's default (e.g. a histogram saved before its split)
            t = t.removesuffix("|absent")
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
                    pairs.append((p[0], as_float(p[1], f"report.{key}[{j}]")))
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
    if check is not None:
        check(values)
    if "outside_bounds" in r.obj and r.obj["outside_bounds"] is not None:
        values["outside_bounds"] = _outside_in(r.sub("outside_bounds"), values)
    return expected(**values)


def _outside_in(r: Reader, values: dict):
    """The saved noisy outside counts (`dpmodels.data.clipping`): their epsilon must be
    the split's part for them (exactly), their noise SD is recomputed from it."""
    names = r.list("names")
    if not all(isinstance(nm, str) for nm in names):
        raise SavedReleaseError("report.outside_bounds.names must be a list of strings")
    counts = [as_float(c, f"report.outside_bounds.counts[{j}]")
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


# ---- values and the claim: noise, threshold and split agree with the stated epsilon -------------
#
# A file's epsilon is believed only if what the release drew its noise with (the noise
# scale, the split of epsilon between the mechanism's parts, the noise variances of the
# released values) is what the release's own code makes of that epsilon, in exact
# arithmetic: an edited epsilon, split or noise scale is refused, never reported as a
# stronger guarantee than the noise gives.


def pairs(v, where: str) -> tuple:
    if not isinstance(v, list):
        raise SavedReleaseError(f"{where} must be a list")
    return tuple(tuple(float(x) for x in float_array(p, (2,), f"{where}[{i}]"))
                 for i, p in enumerate(v))


def positive(value: float, where: str) -> float:
    if not value > 0:
        raise SavedReleaseError(f"{where} must be > 0, got {value}")
    return value


def variances(values, where: str):
    """Noise variances: finite and >= 0 (the bootstrap draws noise of this law)."""
    arr = np.asarray(values, dtype=np.float64)
    if not np.all(np.isfinite(arr) & (arr >= 0)):
        raise SavedReleaseError(f"{where} holds a noise variance that is negative or not "
                                f"finite: {arr.ravel().tolist()[:6]}")
    return values


def symmetric(matrix: np.ndarray, where: str) -> np.ndarray:
    if not np.array_equal(matrix, np.swapaxes(matrix, -1, -2)):
        raise SavedReleaseError(f"{where} must be symmetric (it is released as one triangle)")
    return matrix


def claim_error(what: str, stated, want, eps: float) -> SavedReleaseError:
    return SavedReleaseError(
        f"{what} is {stated!r}, but a release at the stated epsilon = {eps!r} has {want!r}: "
        "the file's noise does not prove the guarantee it states (an edited or inconsistent "
        "file); it is refused")


def split_claim(split, eps: float, private: bool) -> None:
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


def clips(report) -> bool:
    """True when the release also counted rows outside the bounds (a part of its split)."""
    return getattr(report, "outside_bounds", None) is not None


def parts_claim(report, want: list) -> None:
    """The split's parts, in order, must be exactly ``want``."""
    stated = [e for _, e in report.split]
    if stated != want:
        raise claim_error("report.split's parts", stated, want, report.epsilon)
