"""The modules' old paths, from before the package was split into layers.

Until then every module sat flat in ``dpmodels/`` (``dpmodels.release``,
``dpmodels.report``, ``dpmodels.intervals``, ...), and each mechanism's models
sat in ``dpmodels/models/`` (``dpmodels.models.moments_ols``, ...); they are in
the mechanism's folder now (``dpmodels.mechanisms.moments.model``).  Results pickled and scripts
written against those paths keep working: `OldPaths` (installed on
``sys.meta_path`` by ``import dpmodels``) imports the module's new home under
its old name, so both names give one module object (an attribute set through
either is seen through both, and ``pickle`` finds every class where it was).
Four old names are packages now; each of those packages' ``__init__`` answers
for the old module's names: ``dpmodels.domain`` (the axes),
``dpmodels.mechanisms`` (the noise, now `dpmodels.core.noise`),
``dpmodels.inference`` (unchanged) and ``dpmodels.cli`` (the commands).
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import sys
from types import ModuleType

#: old dotted path (below ``dpmodels.``) -> the module's home now
MOVED = {
    "errors": "core.errors",
    "version": "core.version",
    "keywords": "core.keywords",
    "randomness": "core.randomness",
    "exact": "core.exact",
    "budget": "core.budget",
    "accountant": "core.accountant",
    "report": "core.report",
    "thresholds": "core.thresholds",
    "weighted_stats": "core.weighted_stats",
    "batched": "core.batched",
    "unbounded": "core.unbounded",
    "streams": "core.streams",
    "formula": "domain.formula",
    "representatives": "domain.representatives",
    "engines": "data.engines",
    "engines.dask": "data.engines.dask",
    "engines.lazy": "data.engines.lazy",
    "histogram": "data.counting",
    "columns": "data.columns",
    "validation": "data.validation",
    "clipping": "data.clipping",
    "saving": "output.saving",
    "plots": "output.plots",
    "_plot_text": "output._plot_text",
    "population": "mechanisms.population",
    "simulation": "mechanisms.simulation",
    "release": "mechanisms.histogram",
    "moments": "mechanisms.moments",
    "newton": "mechanisms.newton",
    "quantile_steps": "mechanisms.quantile_steps",
    "selection": "mechanisms.selection",
    "sample_aggregate": "mechanisms.sample_aggregate",
    "local": "mechanisms.local",
    "synthetic": "mechanisms.synthetic",
    "rounding": "inference.rounding",
    "information": "inference.information",
    "bootstrap": "inference.bootstrap",
    "binning": "inference.binning",
    "intervals": "inference.intervals",
    "dp_results": "inference.dp_results",
    "summary": "inference.summary",
    "registry": "front.registry",
    "methods": "front.methods",
    "routing": "front.routing",
    "api": "front.api",
    "saved": "front.saved",
    "planning": "front.planning",
    "datasets": "front.datasets",
    # session 47: each mechanism's own models moved into its folder
    "models.moments_ols": "mechanisms.moments.model",
    "models.newton_logit": "mechanisms.newton.model",
    "models.newton_quantreg": "mechanisms.quantile_steps.model",
    "models.sample_aggregate": "mechanisms.sample_aggregate.model",
    "models.local": "mechanisms.local.model",
}


class OldPaths(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Import ``dpmodels.<old path>`` as the module that lives at its new home."""

    def find_spec(self, fullname, path=None, target=None):
        head, _, rest = fullname.partition(".")
        if head != "dpmodels" or rest not in MOVED:
            return None
        return importlib.util.spec_from_loader(fullname, self)

    def create_module(self, spec) -> ModuleType:
        module = importlib.import_module(f"dpmodels.{MOVED[spec.name.partition('.')[2]]}")
        spec.loader_state = module.__spec__
        return module

    def exec_module(self, module: ModuleType) -> None:
        """Nothing to run (the module was imported at its home); give the module
        back its own ``__spec__``, which the import system has just set to the
        old name's."""
        alias = module.__spec__
        assert alias is not None  # the import system has just set it
        module.__spec__ = alias.loader_state


def install() -> None:
    """Put `OldPaths` on ``sys.meta_path`` (once)."""
    if not any(isinstance(f, OldPaths) for f in sys.meta_path):
        sys.meta_path.insert(0, OldPaths())


def old_name(package: str, home: str, name: str):
    """``__getattr__`` of a package that replaced a module of its name: the old
    module's public names (its ``__all__`` and the classes it defines), now in
    ``home``, are found on the package (scripts, and files pickled before).
    Dunder names and the package's own submodules are left to the import system."""
    if name.startswith("__") or importlib.util.find_spec(f"{package}.{name}") is not None:
        raise AttributeError(f"module {package!r} has no attribute {name!r}")
    module = importlib.import_module(home)
    value = getattr(module, name, None)
    if name in getattr(module, "__all__", ()) or (
            isinstance(value, type) and value.__module__ == home):
        return value
    raise AttributeError(f"module {package!r} has no attribute {name!r}")
