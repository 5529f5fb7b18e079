"""The ``dp_*`` models on a local release (:mod:`dpmodels.local`): the
histogram models of each family fitted on the debiased, projected histogram
of the reports, with standard errors from the local channel's bootstrap
(replicates from :class:`~dpmodels.local.LocalSimulator`: post-processing
only).  The registry's ``local`` route builds them (:func:`build_model`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from ..bootstrap import CellDesign, parametric_bootstrap
from ..dp_results import attach_dp_inference
from ..errors import DPModelsError
from ..local import LocalRelease
from ..quantile_steps import _quantiles
from .logit import DPLogit
from .mnlogit import DPMNLogit
from .ols import DPOLS
from .quantreg import DPQuantReg

__all__ = ["build_model", "local_bootstrap"]


def local_bootstrap(local: LocalRelease, design, refit, params, *, n_boot: int,
                    random_state=None, interval: str, label: str, n_refit: int):
    """:class:`~dpmodels.intervals.DPInference` of a fit on a local release:
    the parametric bootstrap with replicates from :class:`LocalSimulator`
    (post-processing only; :meth:`LocalHistogram.simulators`)."""
    return parametric_bootstrap(local.histogram, design, refit, params, n_boot=n_boot,
                                random_state=random_state, interval=interval, label=label,
                                n_refit=n_refit)


if TYPE_CHECKING:
    #: to the type checker, the dp_* model this mixin is mixed into
    _Model = Any
else:
    _Model = object


class _LocalFit(_Model):
    """Mixin of the ``dp_*`` models fitted on a local release: the
    standard errors come from the local channel's bootstrap."""

    _allows_signed = True  # the projected counts are >= 0

    def _uninformative(self, res, build, n_params: int):
        return None

    def _dp_inference(self, res, refit, start, opts: dict, *, label: str, classes=None):
        build = self._design_builder(res, classes=classes)
        design = CellDesign(self.release.domain, self.variables, build,
                            representer=self.representer)
        inference = local_bootstrap(
            self.release.local, design, refit, np.asarray(start, dtype=float),
            n_boot=opts["n_boot"], random_state=opts["random_state"],
            interval=opts["interval"], label=label + " (local)", n_refit=opts["n_refit"])
        attach_dp_inference(res, inference, warn=not self.names_unmeasured)
        return inference


_MODELS: dict = {}


def _model_class(family: str):
    if not _MODELS:
        for fam, base in (("ols", DPOLS), ("logit", DPLogit), ("quantreg", DPQuantReg),
                          ("mnlogit", DPMNLogit)):
            _MODELS[fam] = type(f"Local{base.__name__[2:]}", (_LocalFit, base),
                                {"__doc__": f"{base.__name__} on a local release "
                                 "(standard errors from the local channel's bootstrap).",
                                 "_name": f"{base._name} (local release)",
                                 "__module__": __name__})
    return _MODELS[family]


def __getattr__(name: str):
    """The models on a local release (``LocalOLS``, ``LocalLogit``, ...) by
    name, as pickle looks a class up: they are built on first use."""
    _model_class("ols")
    for cls in _MODELS.values():
        if cls.__name__ == name:
            return cls
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


#: Keywords of a dp_* call that make a release from raw data: refused with a local release.
_RELEASE_ARGUMENTS = ("bounds", "levels", "n", "accountant")


def build_model(call):
    """The model of a ``dp_*`` call on a :class:`LocalRelease` (or its histogram)."""
    data = call.data
    hist = data.histogram if isinstance(data, LocalRelease) else data
    for name in _RELEASE_ARGUMENTS:
        if getattr(call, name) is not None:
            raise DPModelsError(
                f"data is a local release: {name}= applies to a release from raw data and "
                "would be ignored; leave it out")
    if call.method not in ("auto", "histogram", "local"):
        raise DPModelsError(
            f"data is a local release: method={call.method!r} needs raw data; use "
            "method='auto'")
    opts = dict(call.options)
    reps = opts.pop("representatives", "midpoint")
    if reps == "density":
        raise DPModelsError(
            "representatives='density' models the central release's threshold; on a local "
            "release use 'midpoint' (default), 'shift' or 'sheppard'")
    if opts:
        raise DPModelsError(
            f"data is a local release: {sorted(opts)} apply to a release from raw data; leave "
            "them out")
    cls = _model_class(call.family)
    model = cls(call.formula, hist, epsilon=call.epsilon, eval_env=call.namespace,
                representatives=reps)
    if call.family == "quantreg":
        model.default_q = _quantiles(0.5 if call.q is None else call.q)[0]
    return model
