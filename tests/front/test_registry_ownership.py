"""The registry entry owns its mechanism: its folder, its saved-file codec.

Each mechanism sits in a folder of ``dpmodels/mechanisms/`` (its release
function's package), and a release that can be saved is read back by the codec
its entry names (``Mechanism.codec``), which sits in that same folder and reads
the ``release_type`` its release class writes (``saved_kind``).  The loader's
table of readers is built from the entries, so a new saved release type is
found without editing `dpmodels.front.saved`.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
from pathlib import Path

import numpy as np
import pytest

import dpmodels
import dpmodels.mechanisms
from dpmodels.core.report import Release
from dpmodels.front import saved
from dpmodels.front.registry import MECHANISMS

MECHANISMS_DIR = Path(dpmodels.mechanisms.__file__).parent
#: Modules of dpmodels/mechanisms/ that are no mechanism's folder: the histogram's
#: bootstrap support, which the inference layer reads too, and the release pipeline.
SHARED = {"population", "simulation", "pipeline"}


def _release_classes() -> dict[str, type]:
    """Every class of the mechanism folders that can be saved (has
    ``saved_parts``), by qualified name."""
    out = {}
    for info in pkgutil.walk_packages(dpmodels.mechanisms.__path__, "dpmodels.mechanisms."):
        module = importlib.import_module(info.name)
        for _, cls in inspect.getmembers(module, inspect.isclass):
            if (issubclass(cls, Release) and callable(getattr(cls, "saved_parts", None))
                    and cls.__module__ == module.__name__):
                out[f"{cls.__module__}.{cls.__qualname__}"] = cls
    return out


def _folder(dotted: str) -> str:
    """The mechanism folder a dotted module path sits in."""
    parts = dotted.split(".")
    assert parts[:2] == ["dpmodels", "mechanisms"] and len(parts) >= 3, dotted
    return parts[2]


def test_every_mechanism_folder_belongs_to_an_entry():
    folders = {p.name for p in MECHANISMS_DIR.iterdir()
               if p.is_dir() and (p / "__init__.py").exists()}
    flat = {p.stem for p in MECHANISMS_DIR.glob("*.py")} - {"__init__"}
    owned = {_folder(m.release.split(":")[0]) for m in MECHANISMS
             if m.release.startswith("dpmodels.mechanisms.")}
    assert flat == SHARED, f"a mechanism's module outside a folder: {sorted(flat - SHARED)}"
    assert folders == owned, (f"folders without an entry: {sorted(folders - owned)}; "
                              f"entries without a folder: {sorted(owned - folders)}")


def test_every_saved_release_type_has_its_entrys_codec():
    classes = _release_classes()
    kinds = {cls.saved_kind for cls in classes.values()}
    assert kinds >= {"histogram", "moments", "newton", "quantile-steps", "local"}, kinds
    assert set(saved.readers()) == kinds
    for m in MECHANISMS:
        if m.codec is None:
            continue
        codec = importlib.import_module(m.codec)
        assert _folder(m.codec) == _folder(m.release.split(":")[0]), (
            f"{m.name}: its codec {m.codec} is not in its folder")
        assert m.codec.endswith(".codec") and callable(codec.read)
        writers = [c for c in classes.values() if c.saved_kind == codec.KIND]
        assert writers and all(_folder(c.__module__) == _folder(m.codec) for c in writers), (
            m.name, writers)


@pytest.mark.parametrize("m", [m for m in MECHANISMS if m.release_type is not None],
                         ids=lambda m: m.name)
def test_a_release_type_is_saved_exactly_when_its_entry_names_a_codec(m):
    module = importlib.import_module(m.release.split(":")[0])
    cls = getattr(module, m.release_type)
    assert callable(getattr(cls, "saved_parts", None)) == (m.codec is not None), m.name


def test_an_unknown_release_type_is_refused_naming_the_registered_ones(tmp_path):
    df = {"x": [0.0, 1.0, 2.0, 3.0]}
    rel = dpmodels.release(df, columns=["x"], epsilon=1.0, bounds={"x": (0, 4)}, bins=2,
                           random_state=0)
    doc = saved.release_document(rel)
    doc["release_type"] = "sketch"
    with pytest.raises(saved.SavedReleaseError) as info:
        saved.release_from_document(doc)
    for kind in saved.readers():
        assert repr(kind) in str(info.value)


@pytest.mark.parametrize("m", MECHANISMS, ids=lambda m: m.name)
def test_an_entry_names_the_model_class_of_each_family_it_serves(m):
    """``Mechanism.models`` is the model class a dp_* call of each family returns;
    every one is built by the same ``from_call(call)`` (or ``build_with``)."""
    assert set(m.models) == set(m.families), (m.name, sorted(m.models), m.families)
    for family in m.families:
        cls = m.model_class(family)
        assert inspect.isclass(cls) and callable(getattr(cls, "from_call", None)), (m.name, cls)
    if m.build_with is not None:
        module, _, name = m.build_with.partition(":")
        assert callable(getattr(importlib.import_module(module), name))


@pytest.mark.parametrize("family", ["ols", "logit", "quantreg", "mnlogit"])
def test_a_dp_call_returns_the_class_its_entry_names(family):
    """method= of each entry reaches the entry's model class (the class is the
    registry's declaration, not a table of the tests)."""
    rng = np.random.default_rng(3)
    x = rng.uniform(0.0, 5.0, 600)
    frame = {"x": x, "y": np.clip(1 + 0.5 * x + rng.normal(0, 0.5, 600), 0, 4),
             "yb": (rng.random(600) < 1 / (1 + np.exp(2 - x))).astype(int),
             "yc": rng.integers(0, 3, 600)}
    response = {"ols": "y", "logit": "yb", "quantreg": "y", "mnlogit": "yc"}[family]
    fn = getattr(dpmodels, f"dp_{family}")
    for m in MECHANISMS:
        if family not in m.families or m.method is None:
            continue
        kw = {"param_bounds": (-30.0, 30.0)} if m.name == "sample-aggregate" else {}
        model = fn(f"{response} ~ x", frame, epsilon=float("inf"), method=m.method,
                   bounds={"y": (0.0, 4.0), "x": (0.0, 5.0)},
                   levels={"yb": [0, 1], "yc": [0, 1, 2]}, **kw)
        assert type(model) is m.model_class(family), (m.name, type(model))
