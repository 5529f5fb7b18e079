"""The module paths from before the package was split into layers still work: every
module of main at b3f9846 imports under its old name as the
very module object of its new home, the four old modules that are packages now
answer for their names, and results pickled and releases saved by that main
load and give back what they held."""

from __future__ import annotations

import importlib
import json
import pickle
import sys
import warnings
from pathlib import Path

import pytest

import dpmodels
import dpmodels as dpm
from dpmodels.core.old_paths import MOVED, OldPaths

OLD = Path(__file__).resolve().parents[1] / "support" / "main_b3f9846"
OLD_MODULES = OLD.joinpath("modules.txt").read_text().split()
#: old modules whose name is a package now, with a name the old module held
PACKAGES_NOW = {"dpmodels.domain": ("Domain", "dpmodels.domain.axes"),
                "dpmodels.mechanisms": ("NoisyCells", "dpmodels.core.noise"),
                "dpmodels.inference": ("DPInference", "dpmodels.inference.intervals"),
                "dpmodels.cli": ("main", "dpmodels.cli.commands")}


def test_the_old_module_list_is_the_one_of_that_commit():
    # (the check below would pass on an empty list)
    assert len(OLD_MODULES) == 73
    assert {"dpmodels.release", "dpmodels.intervals", "dpmodels.engines.dask",
            "dpmodels.models.ols"} <= set(OLD_MODULES)


@pytest.mark.parametrize("old", OLD_MODULES)
def test_every_old_module_path_imports(old):
    module = importlib.import_module(old)
    rest = old.partition(".")[2]
    if rest in MOVED:
        home = importlib.import_module(f"dpmodels.{MOVED[rest]}")
        assert module is home
        assert module.__spec__.name == home.__name__ == f"dpmodels.{MOVED[rest]}"
        assert sys.modules[old] is home
    else:  # unchanged (dpmodels.models.*) or a package now
        assert module.__name__ == old


@pytest.mark.parametrize("package", sorted(PACKAGES_NOW))
def test_an_old_module_that_is_a_package_now_answers_for_its_names(package):
    name, home = PACKAGES_NOW[package]
    pkg = importlib.import_module(package)
    assert getattr(pkg, name) is getattr(importlib.import_module(home), name)
    with pytest.raises(AttributeError, match="no_such_name"):
        pkg.no_such_name  # noqa: B018
    with pytest.raises(AttributeError):
        pkg._private  # noqa: B018


def test_the_old_release_path_leaves_the_function_release_in_place():
    import dpmodels.release  # noqa: F401  (the old path of dpmodels.mechanisms.histogram)

    assert callable(dpmodels.release) and dpmodels.release.__name__ == "release"
    assert dpmodels.release is dpmodels.mechanisms.histogram.release


def test_the_finder_answers_only_for_old_paths():
    finder = OldPaths()
    assert finder.find_spec("dpmodels.release") is not None
    assert finder.find_spec("dpmodels.mechanisms.histogram") is None
    assert finder.find_spec("dpmodels.no_such_module") is None
    assert finder.find_spec("numpy") is None
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module("dpmodels.no_such_module")


EXPECTED = json.loads(OLD.joinpath("expected.json").read_text())


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_results_pickled_before_the_move_load(name):
    res = pickle.loads(OLD.joinpath(f"{name}.pkl").read_bytes())
    assert list(res.params.index) == EXPECTED[name]["names"]
    assert list(res.params) == EXPECTED[name]["params"]
    assert list(res.bse) == EXPECTED[name]["bse"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        text = str(res.summary())
    assert EXPECTED[name]["names"][-1] in text
    assert res.privacy.epsilon > 0


@pytest.mark.parametrize("kind", ["histogram", "moments"])
def test_releases_saved_and_pickled_before_the_move_load(kind):
    loaded = dpm.load_release(OLD / f"release_{kind}.json")
    unpickled = pickle.loads(OLD.joinpath(f"release_{kind}.pkl").read_bytes())
    assert type(loaded) is type(unpickled)
    assert type(loaded).__module__ == f"dpmodels.mechanisms.{kind}"
    assert loaded.report == unpickled.report
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fit = {k: dpm.dp_ols("y ~ x + C(g)", r).fit(cov_type="naive")
               for k, r in (("json", loaded), ("pickle", unpickled))}
    assert list(fit["json"].params) == list(fit["pickle"].params)
