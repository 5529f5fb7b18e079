"""The registry of mechanisms: every way dpmodels releases something from raw
rows, in one table.

Each `Mechanism` says what it is called, which ``dp_*`` families it
serves and how a caller names it (``method=``, or a route that recognises the
call: a local release handed in as data, ``select=``), the function that
makes its release and the type of that release, the engines whose data it
reads, and how to build each family's model on it.  `dpmodels.front.methods`
(the tables ``method="auto"`` and the tests read) and `dpmodels.front.routing`
(the routes the ``dp_*`` functions try first) are views of this table; a new
mechanism is its module plus one entry here.

Every ``applies`` reads public inputs only (the arguments' types and values,
never the rows: PRIVACY.md rule 4), leaves the call as it found it, and
imports nothing heavy; builders import their model lazily.

Examples
--------
>>> [m.name for m in MECHANISMS if "ols" in m.families]
['histogram', 'moments', 'local', 'sample-aggregate']
>>> mechanism("newton", "quantreg").name
'quantile-newton'
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Mechanism", "MECHANISMS", "FAMILIES", "ENGINES", "mechanism"]

#: The dp_* model families.
FAMILIES = ("ols", "logit", "quantreg", "mnlogit")
#: Where a release's rows may live: "pandas" (a DataFrame), "dict" (a mapping of
#: arrays), "polars" (a DataFrame), "polars-lazy" (a LazyFrame), "dask", "duckdb"
#: (a relation), "spark".
ENGINES = ("pandas", "dict", "polars", "polars-lazy", "dask", "duckdb", "spark")
_IN_MEMORY = ("pandas", "dict")


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
    builders : mapping
        ``{family: build(call) -> model}``.
    own_function : bool
        The caller makes the release with ``release``'s function, not through
        a dp_* call (a local release, a feature selection, a smoothed sample).
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
    engines: tuple[str, ...]
    applies: Callable[[Any], bool] | None = None
    builders: Mapping[str, Callable[[Any], Any]] = field(default_factory=dict)
    own_function: bool = False
    options: Mapping[str, str] = field(default_factory=dict)
    codec: str | None = None

    @property
    def routed(self) -> bool:
        """Taken by its route before ``method="auto"`` chooses."""
        return self.applies is not None

    def build(self, call):
        """The model of ``call.family`` on this mechanism."""
        return self.builders[call.family](call)


# ---- how each family's model is built on each release ------------------------------------


def _missing(call) -> str:
    return call.options.pop("missing", "drop")


def _histogram(family: str):
    def build(call):
        from .. import models

        cls = {"ols": models.DPOLS, "logit": models.DPLogit, "quantreg": models.DPQuantReg,
               "mnlogit": models.DPMNLogit}[family]
        model = cls.from_formula(
            call.formula, call.data, epsilon=call.epsilon, bounds=call.bounds,
            levels=call.levels, bins=call.bins, threshold=call.threshold, n=call.n,
            random_state=call.random_state, accountant=call.accountant,
            eval_env=call.namespace, **call.options)
        if family == "quantreg":
            model.default_q = call.quantiles[0]  # quantreg models'
        return model

    return build


def _moments_ols(call):
    from ..models.moments_ols import DPMomentsOLS

    return DPMomentsOLS.from_formula(
        call.formula, call.data, epsilon=call.epsilon, bounds=call.bounds, levels=call.levels,
        n=call.n, random_state=call.random_state, accountant=call.accountant,
        missing=_missing(call), namespace=call.namespace)


def _newton_logit(call):
    from ..domain.formula import formula_variables
    from ..models.logit import DPLogit
    from ..models.newton_logit import DPNewtonLogit

    env = call.namespace
    return DPNewtonLogit.from_formula(
        call.formula, call.data, epsilon=call.epsilon, bounds=call.bounds, levels=call.levels,
        n=call.n, random_state=call.random_state, accountant=call.accountant,
        missing=_missing(call), namespace=env,
        domain_check=lambda domain: DPLogit.check_response(  # dp_logit's checks, before
            call.formula, domain, formula_variables(call.formula, domain.names, env)))  # any read


def _newton_quantreg(call):
    from ..models.newton_quantreg import DPNewtonQuantReg

    return DPNewtonQuantReg.from_formula(
        call.formula, call.data, epsilon=call.epsilon, bounds=call.bounds, levels=call.levels,
        n=call.n, random_state=call.random_state, accountant=call.accountant,
        missing=_missing(call), namespace=call.namespace, q=call.quantiles)


# ---- the routes' recognisers and builders -------------------------------------------------


def _local_applies(call) -> bool:
    # a marker attribute of LocalRelease / LocalHistogram: no import of dpmodels.mechanisms.local
    return bool(getattr(type(call.data), "_dpm_local", False))


def _local_build(call):
    from ..models.local import build_model

    return build_model(call)


def _projected_applies(call) -> bool:
    return call.options.get("select") is not None


def _projected_build(call):
    from ..models.projected import build_projected

    return build_projected(call)


def _sample_aggregate_applies(call) -> bool:
    # method="sample-aggregate", or a sample-aggregate release handed in as data (a marker
    # attribute: no import of dpmodels.mechanisms.sample_aggregate)
    return (call.method == "sample-aggregate"
            or bool(getattr(type(call.data), "_dpm_sample_aggregate", False)))


def _sample_aggregate_build(call):
    from ..models.sample_aggregate import build_sample_aggregate

    return build_sample_aggregate(call)


def _every_family(build) -> dict:
    return {family: build for family in FAMILIES}


#: The mechanisms, in the order the routes are tried and the methods listed.  The
#: histogram counts inside every engine (dpmodels.data.engines); the moments and
#: Newton-type releases read in-memory rows or a Dask DataFrame partition by
#: partition; the others read the rows in this process
#: (tests/contracts/test_engines_contract.py tries every pair both ways).
MECHANISMS: tuple[Mechanism, ...] = (
    Mechanism("histogram", FAMILIES, "histogram", "dpmodels.mechanisms.histogram:release",
              "PrivateHistogram", ENGINES,
              builders={family: _histogram(family) for family in FAMILIES},
              codec="dpmodels.mechanisms.histogram.codec"),
    Mechanism("moments", ("ols",), "moments", "dpmodels.mechanisms.moments:release_moments",
              "PrivateMoments", ENGINES,
              builders={"ols": _moments_ols}, codec="dpmodels.mechanisms.moments.codec"),
    Mechanism("newton", ("logit",), "newton", "dpmodels.mechanisms.newton:release_newton",
              "PrivateNewton", ENGINES,
              builders={"logit": _newton_logit}, codec="dpmodels.mechanisms.newton.codec"),
    Mechanism("quantile-newton", ("quantreg",), "newton",
              "dpmodels.mechanisms.quantile_steps:release_quantile_steps", "PrivateQuantileSteps",
              ENGINES, builders={"quantreg": _newton_quantreg},
              codec="dpmodels.mechanisms.quantile_steps.codec"),
    Mechanism("local", FAMILIES, None, "dpmodels.mechanisms.local:randomize", None, ENGINES,
              applies=_local_applies, builders=_every_family(_local_build), own_function=True,
              codec="dpmodels.mechanisms.local.codec"),
    Mechanism("projected", ("logit", "mnlogit"), None, "dpmodels.models.projected:build_projected",
              None, ENGINES, applies=_projected_applies,
              builders={"logit": _projected_build, "mnlogit": _projected_build},
              options={"select": "dp_logit and dp_mnlogit",
                       "gamma": "dp_logit and dp_mnlogit with select="}),
    Mechanism("sample-aggregate", FAMILIES, "sample-aggregate",
              "dpmodels.mechanisms.sample_aggregate:release_sample_aggregate", "PrivateSampleAggregate",
              ENGINES, applies=_sample_aggregate_applies,
              builders=_every_family(_sample_aggregate_build),
              options=dict.fromkeys(("blocks", "param_bounds", "bias_correction"),
                                    "method='sample-aggregate'")),
    Mechanism("select_features", (), None, "dpmodels.mechanisms.selection:select_features", None,
              ENGINES, own_function=True),
    Mechanism("smoothed_sample", (), None, "dpmodels.mechanisms.synthetic:smoothed_sample", None,
              ENGINES, own_function=True),
)


def mechanism(method: str, family: str) -> Mechanism:
    """The mechanism ``method=`` names for ``family`` (KeyError if none)."""
    for m in MECHANISMS:
        if m.method == method and family in m.families:
            return m
    raise KeyError((method, family))
