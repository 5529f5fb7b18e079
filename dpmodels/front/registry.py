"""The registry of mechanisms: every way dpmodels releases something from raw
rows, in one table.

Each `Mechanism` says what it is called, which ``dp_*`` families it
serves and how a caller names it (``method=``, or a route that recognises the
call: a local release handed in as data, ``select=``), the function that
makes its release and the type of that release, the engines whose data it
reads, the model class of each family it serves (built by the class's
``from_call``), the keyword options only it takes, its promise at
``epsilon=inf`` and the codec of its saved file.  `dpmodels.front.methods`
(the tables ``method="auto"`` and the tests read), `dpmodels.front.routing`
(the routes the ``dp_*`` functions try first), `dpmodels.front.saved` (the
saved-file readers) and the contract suites are views of this table; a new
mechanism is its folder (``dpmodels/mechanisms/<name>/``: its release, report,
codec and model) plus one entry here.

Every ``applies`` reads public inputs only (the arguments' types and values,
never the rows: PRIVACY.md rule 4), leaves the call as it found it, and
imports nothing heavy; the model classes and codecs are named by their import
path and imported on first use.

Examples
--------
>>> [m.name for m in MECHANISMS if "ols" in m.families]
['histogram', 'moments', 'ssp', 'local', 'sample-aggregate']
>>> mechanism("newton", "quantreg").name
'quantile-newton'
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Mechanism", "MECHANISMS", "FAMILIES", "ENGINES", "INF_PROMISES", "mechanism"]

#: The dp_* model families.
FAMILIES = ("ols", "logit", "quantreg", "mnlogit")
#: Where a release's rows may live: "pandas" (a DataFrame), "dict" (a mapping of
#: arrays), "polars" (a DataFrame), "polars-lazy" (a LazyFrame), "dask", "duckdb"
#: (a relation), "spark".
ENGINES = ("pandas", "dict", "polars", "polars-lazy", "dask", "duckdb", "spark")
_IN_MEMORY = ("pandas", "dict")


#: What a mechanism promises at ``epsilon=inf`` (no noise, NOT private), by key:
#: each entry names its promise (``Mechanism.inf``), written in its docs, and
#: tests/contracts/test_mechanism_contract.py checks every promise of this table.
INF_PROMISES = {
    "exact histogram": "the exact counts, no threshold: a fit on discrete variables is "
                       "statsmodels' fit",
    "exact moments": "the exact moments of the design: statsmodels' OLS and its classical "
                     "standard errors",
    "noiseless steps": "the same pipeline without its noise (clipped, quantized, a few steps), "
                       "said to be NOT statsmodels' fit, close to it",
    "exact local": "every row's true cell: the fits of the central exact release with "
                   "midpoints",
    "greedy projection": "the non-private greedy selection and the exact histogram of the "
                         "projection",
    "exact block average": "the exact average of the blocks' estimates and their exact "
                           "sample variance",
    "greedy selection": "the non-private greedy choice",
    "plain histogram sample": "synthetic rows drawn from the plain histogram (cells of the "
                              "data)",
}


@dataclass(frozen=True)
class Mechanism:
    """One release path.

    Attributes
    ----------
    name : str
        The registry's name (also the key of the engine and release tables).
    families : tuple of str
        The dp_* families it serves; empty for a release made by a function
        of its own (``release``), not through a dp_* call.
    method : str or None
        The ``method=`` that names it in those calls; None when a route
        recognises the call instead (``applies``) or for a function of its own.
    release : str
        ``"module:function"`` of the function that makes its release.
    release_type : str or None
        The class of that release (in ``release``'s module), when it is a
        value a model is fitted on.
    engines : tuple of str
        The engines (`ENGINES`) whose data it reads; on the others it
        refuses, saying to convert the data, before anything is read or spent.
    applies : callable or None
        ``applies(call) -> bool`` for a routed mechanism: tried, in registry
        order, before the method choice (``method=`` names it too when set).
    models : mapping
        ``{family: "module:Class"}``: the model class a dp_* call of that family
        returns, built by its ``from_call(call)`` classmethod.
    build_with : str or None
        ``"module:function"`` that builds the model of every family instead
        (``build(call) -> model``), for a mechanism whose models are another's
        (a local release fits the histogram's models).
    own_function : bool
        The caller makes the release with ``release``'s function, not through
        a dp_* call (a local release, a feature selection, a smoothed sample).
    inf : str
        Its promise at ``epsilon=inf``: a key of `INF_PROMISES`.
    codec : str or None
        The module (``dpmodels.mechanisms.<name>.codec``) that writes its
        release to a saved file and reads it back (`dpmodels.front.saved`), or
        None when its release is not saved.
    options : mapping
        ``{option: where it applies}``: the keyword options of a dp_* call
        that only this mechanism takes.  A call that gives one to a release
        that does not take it is refused naming where it belongs
        (`dpmodels.front.routing.check_options()`).
    """

    name: str
    families: tuple[str, ...]
    method: str | None
    release: str
    release_type: str | None
    engines: tuple[str, ...] = ENGINES
    applies: Callable[[Any], bool] | None = None
    models: Mapping[str, str] = field(default_factory=dict)
    build_with: str | None = None
    own_function: bool = False
    options: Mapping[str, str] = field(default_factory=dict)
    codec: str | None = None
    inf: str = ""

    @property
    def routed(self) -> bool:
        """Taken by its route before ``method="auto"`` chooses."""
        return self.applies is not None

    def model_class(self, family: str) -> Any:
        """The model class of ``family`` (imported on first use)."""
        return _resolve(self.models[family])

    def build(self, call):
        """The model of ``call.family`` on this mechanism."""
        if self.build_with is not None:
            return _resolve(self.build_with)(call)
        return self.model_class(call.family).from_call(call)


def _resolve(path: str):
    """The object ``"module:name"`` names."""
    module, _, name = path.partition(":")
    return getattr(importlib.import_module(module), name)


#: The histogram's model of each family (also the models of a local release).
_HISTOGRAM_MODELS = {"ols": "dpmodels.models.ols:DPOLS", "logit": "dpmodels.models.logit:DPLogit",
                     "quantreg": "dpmodels.models.quantreg:DPQuantReg",
                     "mnlogit": "dpmodels.models.mnlogit:DPMNLogit"}


# ---- the routes' recognisers ----------------------------------------------------------------


def _local_applies(call) -> bool:
    # a marker attribute of LocalRelease / LocalHistogram: no import of dpmodels.mechanisms.local
    return bool(getattr(type(call.data), "_dpm_local", False))


def _projected_applies(call) -> bool:
    return call.options.get("select") is not None


def _sample_aggregate_applies(call) -> bool:
    # method="sample-aggregate", or a sample-aggregate release handed in as data (a marker
    # attribute: no import of dpmodels.mechanisms.sample_aggregate)
    return (call.method == "sample-aggregate"
            or bool(getattr(type(call.data), "_dpm_sample_aggregate", False)))


#: The mechanisms, in the order the routes are tried and the methods listed.  The
#: histogram counts inside every engine (dpmodels.data.engines); the moments and
#: Newton-type releases read in-memory rows or a Dask DataFrame partition by
#: partition; the others read the rows in this process
#: (tests/contracts/test_engines_contract.py tries every pair both ways).
MECHANISMS: tuple[Mechanism, ...] = (
    Mechanism("histogram", FAMILIES, "histogram", "dpmodels.mechanisms.histogram:release",
              "PrivateHistogram", models=_HISTOGRAM_MODELS, inf="exact histogram",
              codec="dpmodels.mechanisms.histogram.codec"),
    Mechanism("moments", ("ols",), "moments", "dpmodels.mechanisms.moments:release_moments",
              "PrivateMoments", models={"ols": "dpmodels.mechanisms.moments.model:DPMomentsOLS"},
              inf="exact moments", codec="dpmodels.mechanisms.moments.codec"),
    Mechanism("ssp", ("ols",), "ssp", "dpmodels.mechanisms.ssp:release_ssp", "PrivateSSP",
              models={"ols": "dpmodels.mechanisms.ssp.model:DPSSPOLS"}, inf="exact moments",
              codec="dpmodels.mechanisms.ssp.codec"),
    Mechanism("newton", ("logit",), "newton", "dpmodels.mechanisms.newton:release_newton",
              "PrivateNewton", models={"logit": "dpmodels.mechanisms.newton.model:DPNewtonLogit"},
              inf="noiseless steps", codec="dpmodels.mechanisms.newton.codec"),
    Mechanism("quantile-newton", ("quantreg",), "newton",
              "dpmodels.mechanisms.quantile_steps:release_quantile_steps", "PrivateQuantileSteps",
              models={"quantreg": "dpmodels.mechanisms.quantile_steps.model:DPNewtonQuantReg"},
              inf="noiseless steps", codec="dpmodels.mechanisms.quantile_steps.codec"),
    Mechanism("local", FAMILIES, None, "dpmodels.mechanisms.local:randomize", None,
              applies=_local_applies, models=_HISTOGRAM_MODELS,
              build_with="dpmodels.mechanisms.local.model:build_model", own_function=True,
              inf="exact local", codec="dpmodels.mechanisms.local.codec"),
    Mechanism("projected", ("logit", "mnlogit"), None, "dpmodels.models.projected:build_projected",
              None, applies=_projected_applies,
              models={"logit": "dpmodels.models.projected:DPProjectedLogit",
                      "mnlogit": "dpmodels.models.projected:DPProjectedMNLogit"},
              options={"select": "dp_logit and dp_mnlogit",
                       "gamma": "dp_logit and dp_mnlogit with select="},
              inf="greedy projection"),
    Mechanism("sample-aggregate", FAMILIES, "sample-aggregate",
              "dpmodels.mechanisms.sample_aggregate:release_sample_aggregate",
              "PrivateSampleAggregate", applies=_sample_aggregate_applies,
              models=dict.fromkeys(FAMILIES,
                                   "dpmodels.mechanisms.sample_aggregate.model:DPSampleAggregate"),
              options=dict.fromkeys(("blocks", "param_bounds", "bias_correction"),
                                    "method='sample-aggregate'"),
              inf="exact block average"),
    Mechanism("select_features", (), None, "dpmodels.mechanisms.selection:select_features", None,
              own_function=True, inf="greedy selection"),
    Mechanism("smoothed_sample", (), None, "dpmodels.mechanisms.synthetic:smoothed_sample", None,
              own_function=True, inf="plain histogram sample"),
)


def mechanism(method: str, family: str) -> Mechanism:
    """The mechanism ``method=`` names for ``family`` (KeyError if none)."""
    for m in MECHANISMS:
        if m.method == method and family in m.families:
            return m
    raise KeyError((method, family))
