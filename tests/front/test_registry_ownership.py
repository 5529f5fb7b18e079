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

import pytest

import dpmodels
import dpmodels.mechanisms
from dpmodels.core.report import Release
from dpmodels.front import saved
from dpmodels.front.registry import MECHANISMS

MECHANISMS_DIR = Path(dpmodels.mechanisms.__file__).parent
#: Modules of dpmodels/mechanisms/ that are no mechanism's folder: the histogram's
#: bootstrap support, which the inference layer reads too.
SHARED = {"population", "simulation"}


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
    assert kinds == {"histogram", "moments", "newton", "quantile-steps", "local"}, kinds
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
