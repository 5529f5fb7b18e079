"""Results classes' side of the noise-aware covariance: under
``cov_type="dp"`` the results own the bootstrap's covariance, standard
errors, tests and intervals (`DPInferenceResultsMixin`), attached by
`attach_dp_inference()`.

The results contract
--------------------
Every public name of every dpmodels results class is declared here, in
`CONTRACTS` (one table per class), as one of

* ``"release"``: an honest function of the noisy release and public inputs
  (PRIVACY.md rule 5), the privacy noise included where it matters (the
  standard errors, tests and intervals under ``cov_type="dp"``);
* ``"statsmodels"``: statsmodels' own member, which is what statsmodels gives
  on the same (released) cells and equals its value on the rows at
  ``cov_type="naive"`` / ``epsilon=inf`` (metadata, the optimiser's record,
  ``save`` / ``load``);
* a `Refusal`: refused on a dp fit with a `ResultsRefusedError` (also an
  ``AttributeError``: ``hasattr`` says no) whose message says why and names
  the dp alternative -- a statistic of the cells that does not carry the
  privacy noise (likelihoods, information criteria, residual normality and
  score tests), one of individual rows a dp fit does not have (influence,
  robust sandwich of cells), or one of points a release is handed to
  statsmodels on that are not data (noisy Newton steps, noisy moments).

tests/contracts/test_results_contract.py fits every (mechanism, family) of the
registry and fails on any public name of ``dir(results)`` the table does not
classify, so a statsmodels upgrade that adds a member cannot slip through.
Summaries show a refused statistic as "n/a" (`quiet_refusals()`).
"""

from __future__ import annotations

import contextlib
import inspect
import sys
import warnings
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from types import FrameType
from typing import TYPE_CHECKING, Any

import numpy as np
from scipy import stats

from ..core.errors import DPModelsError, ReleaseWarning
from ..domain.formula import user_stacklevel
from ..output.plots import plot_coefficients
from .intervals import DPInference

__all__ = ["DPInferenceResultsMixin", "attach_dp_inference", "ResultsRefusedError", "Refusal",
           "RELEASE", "STATSMODELS", "CONTRACTS", "results_contract", "install_contract",
           "quiet_refusals"]


class ResultsRefusedError(DPModelsError, AttributeError):
    """A member of a dp results object that statsmodels has but a dp fit
    cannot give honestly (e.g. ``llf`` of noisy cells, ``pred_table()`` of
    noisy Newton steps' points).  The message says why and names the dp
    alternative.  Also an ``AttributeError``: ``hasattr(res, name)`` is
    False and ``getattr(res, name, default)`` gives the default."""


#: Contract classes: an honest function of the release and public inputs.
RELEASE = "release"
#: Contract classes: statsmodels' own (equal to statsmodels' at cov_type="naive" / epsilon=inf).
STATSMODELS = "statsmodels"


@dataclass(frozen=True)
class Refusal:
    """A member refused on a dp fit.

    Attributes
    ----------
    why : str
        Why the dp fit cannot give it.
    use : str
        The dp alternative, named in the message.
    when : {"private", "release", "dp"}
        "private": on a fit of a private release (at ``epsilon=inf`` the
        member is statsmodels' own: the exact check); "release": on any fit
        of a release; "dp": under ``cov_type="dp"`` (naive: statsmodels').
    own : bool
        The class's own member refuses (its message names ``use``); else the
        contract installs the refusal.
    """

    why: str
    use: str
    when: str = "private"
    own: bool = False

    def applies(self, res) -> bool:
        """Whether the member is refused on the results ``res``."""
        if self.when == "dp":
            return getattr(res, "cov_type", None) == "dp" and getattr(
                res, "dp_inference", None) is not None
        privacy = getattr(res, "privacy", None)
        if privacy is None:
            return False
        return self.when == "release" or bool(getattr(privacy, "private", True))

    def message(self, name: str) -> str:
        return f"{name} is not available on a dp fit: {self.why}. Use {self.use} instead."


Classification = str | Refusal

#: Modules whose reads of a member are the results' own bookkeeping (statsmodels'
#: and dpmodels' code computing what they publish), not a caller's.
_INTERNAL = ("statsmodels.", "dpmodels.")
_WRAPPER = ("statsmodels.base.wrapper", __name__)


def _called_from_outside() -> bool:
    """Whether the read being served comes from the caller's code (not from
    statsmodels or dpmodels computing something else from it).  statsmodels'
    wrapper passes the caller's reads on: its frames are skipped."""
    frame: FrameType | None = sys._getframe(2)
    while frame is not None and frame.f_globals.get("__name__", "") in _WRAPPER:
        frame = frame.f_back
    if frame is None:
        return True
    return not str(frame.f_globals.get("__name__", "")).startswith(_INTERNAL)


class _Refused:
    """The descriptor of a refused member: raises `ResultsRefusedError` on a
    caller's read when the member's `Refusal` applies; otherwise (statsmodels'
    own reads, a fit where it does not apply) the member it replaces."""

    def __init__(self, name: str, owner: type, original: Any):
        self.name, self.owner, self.original = name, owner, original

    def _member(self, owner: type):
        if self.original is not None:
            return self.original
        mro = owner.__mro__
        for klass in mro[mro.index(self.owner) + 1:] if self.owner in mro else mro:
            if self.name in vars(klass):
                return vars(klass)[self.name]
        raise AttributeError(self.name)

    def __get__(self, obj, owner=None):
        owner = type(obj) if owner is None else owner
        if obj is None:
            return self._member(owner)
        refusal = results_contract(obj).get(self.name)
        if isinstance(refusal, Refusal) and refusal.applies(obj):
            if obj.__dict__.get("_dp_quiet"):  # a summary: the row reads n/a
                return _nan_method if self._is_method(owner) else np.nan
            if _called_from_outside():
                raise ResultsRefusedError(refusal.message(self.name))
        if self.name in obj.__dict__:  # set on the instance (e.g. QuantReg's objective)
            return obj.__dict__[self.name]
        member = self._member(owner)
        return member.__get__(obj, owner) if hasattr(member, "__get__") else member

    def _is_method(self, owner: type) -> bool:
        try:
            return inspect.isfunction(self._member(owner))
        except AttributeError:  # an attribute set on the instance only
            return False

    def __set__(self, obj, value):
        member = self._member(type(obj))
        if hasattr(member, "__set__"):
            member.__set__(obj, value)
        else:
            obj.__dict__[self.name] = value

    def __delete__(self, obj):
        member = self._member(type(obj))
        if hasattr(member, "__delete__"):
            member.__delete__(obj)
        else:
            del obj.__dict__[self.name]


def _nan_method(*args, **kwargs) -> float:
    return np.nan


def results_contract(res) -> dict[str, Classification]:
    """The classification of every public member of the results ``res`` (a
    results object or its statsmodels wrapper): its class's table, with the
    entries of its ``source`` ("moments": noisy moments) where they differ."""
    inner = getattr(res, "_results", res)
    cls = type(inner)
    out = dict(getattr(cls, "_dp_contract", {}))
    by_source = getattr(cls, "_dp_source_contract", {})
    source = inner.__dict__.get("source", getattr(cls, "source", "cells"))
    out.update(by_source.get(source, {}))
    return out


def install_contract(cls: type) -> None:
    """Give the results class ``cls`` its table of `CONTRACTS` (by class name)
    and install the refusals it declares (those not its own)."""
    entry = CONTRACTS.get(cls.__qualname__)
    if entry is None:
        return  # a subclass dpmodels does not declare keeps its parent's table
    table, by_source = entry
    setattr(cls, "_dp_contract", dict(table))  # noqa: B010  (any results class)
    setattr(cls, "_dp_source_contract", {k: dict(v) for k, v in by_source.items()})  # noqa: B010
    names = dict(table)
    for overrides in by_source.values():
        names.update({k: v for k, v in overrides.items() if isinstance(v, Refusal)})
    for name, how in names.items():
        if isinstance(how, Refusal) and not how.own:
            original = vars(cls).get(name)
            if isinstance(original, _Refused):
                continue
            setattr(cls, name, _Refused(name, cls, original))


@contextlib.contextmanager
def quiet_refusals(res) -> Iterator[None]:
    """While statsmodels builds a summary of ``res``, a refused member reads
    NaN (a summary shows it as "n/a") instead of raising."""
    inner = getattr(res, "_results", res)
    inner.__dict__["_dp_quiet"] = True
    try:
        yield
    finally:
        inner.__dict__.pop("_dp_quiet", None)


def _contrast_cov(R: np.ndarray, V: np.ndarray) -> np.ndarray:
    """``R V R'`` for a covariance with coefficients of infinite variance (the
    release does not measure them): a contrast that involves one has an
    infinite variance and no covariance with the others (statsmodels' plain
    product would give NaN from 0 * inf); the rest is the finite product."""
    lost = ~np.isfinite(np.diag(V))
    finite = np.where(np.isfinite(V), V, 0.0)
    finite[lost, :] = 0.0
    finite[:, lost] = 0.0
    out = R @ finite @ R.T
    touched = np.any(R[:, lost] != 0, axis=1)
    if touched.any():
        out[touched, :] = 0.0
        out[:, touched] = 0.0
        out[touched, touched] = np.inf
    return out


if TYPE_CHECKING:
    #: to the type checker, the (untyped) statsmodels class this mixin is mixed into
    _Results = Any
else:
    _Results = object


class DPInferenceResultsMixin(_Results):
    """The dp-aware members of every dpmodels results class (OLS, logit,
    multinomial logit, quantile regression).

    When a `DPInference` is attached (``cov_type == "dp"``, the default of
    every ``fit()``), ``bse``, ``cov_params()``, ``tvalues``, ``pvalues`` and
    ``conf_int()`` come from the parametric bootstrap of the release, and so
    does every test built on them (``t_test``, ``f_test``, ``wald_test``,
    ``wald_test_terms``, ``anova_lm(res, typ=2)``); otherwise statsmodels'
    own.  statsmodels members that would ignore the privacy noise (likelihood
    ratio and LM comparisons, influence and outlier statistics) are refused
    with the dp-aware alternative.

    These are members of the results class itself, so the covariance is the
    results' own (as linearmodels' results take their covariance estimator's
    output) and nothing depends on statsmodels' private result cache.

    Attributes
    ----------
    dp_inference : DPInference or None
        The bootstrap behind the standard errors under ``cov_type="dp"``;
        None under ``cov_type="naive"``.
    """

    dp_inference: DPInference | None = None

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        install_contract(cls)  # the class's table of CONTRACTS and its refusals

    def _dp_active(self) -> bool:
        return self._active_inference() is not None

    def _active_inference(self) -> DPInference | None:
        """The attached inference when cov_type "dp" uses it, else None."""
        if getattr(self, "cov_type", None) != "dp":
            return None
        return self.dp_inference

    def _dp_shape(self, flat: np.ndarray) -> np.ndarray:
        shape = np.shape(self.params)
        return flat.reshape(shape, order="F") if len(shape) == 2 else flat

    @property
    def bse(self):
        """Standard errors; under cov_type "dp", the bootstrap's."""
        if (inference := self._active_inference()) is not None:
            return self._dp_shape(inference.se)
        return super().bse

    def cov_params(self, r_matrix=None, column=None, scale=None, cov_p=None, other=None):
        """Covariance of the estimates (statsmodels' signature); under cov_type
        "dp", the bootstrap's covariance is the one every contrast uses.

        Parameters
        ----------
        r_matrix : array_like, optional
            Contrasts: the covariance of ``r_matrix @ params``.  Under cov_type
            "dp", a contrast that involves a coefficient the release does not
            measure (infinite variance) has an infinite variance.
        column : int or sequence of int, optional
            The covariance of these coefficients only.
        scale : float, optional
            statsmodels' scale (ignored under cov_type "dp").
        cov_p : array_like, optional
            A covariance to use instead of the results' own.
        other : array_like, optional
            statsmodels' cross-covariance with ``r_matrix``.

        Returns
        -------
        pandas.DataFrame or numpy.ndarray
            As statsmodels (labelled when the fit was on a DataFrame).
        """
        if cov_p is None and (inference := self._active_inference()) is not None:
            cov_p = inference.cov
            if r_matrix is not None and column is None and other is None:
                return _contrast_cov(np.atleast_2d(np.asarray(r_matrix, float)),
                                     np.asarray(cov_p, float))
        return super().cov_params(r_matrix=r_matrix, column=column, scale=scale, cov_p=cov_p,
                                  other=other)

    @property
    def tvalues(self):
        """z statistics; under cov_type "dp", those of the default interval's center."""
        if (inference := self._active_inference()) is not None:
            return self._dp_shape(inference.tvalues)
        return super().tvalues

    @property
    def pvalues(self):
        """Two-sided p-values; under cov_type "dp", from the bootstrap."""
        if (inference := self._active_inference()) is not None:
            return self._dp_shape(inference.pvalues)
        return super().pvalues

    def _dp_no_information(self) -> bool:
        inference = self._active_inference()
        return inference is not None and bool(inference._no_information().any())

    def wald_test(self, r_matrix, cov_p=None, invcov=None, use_f=None, df_constraints=None,
                  scalar=True):
        """statsmodels' Wald test (``f_test`` calls it); under cov_type "dp",
        with the bootstrap's covariance, in which a coefficient the release
        does not measure (infinite variance) adds no evidence: the test uses
        the restrictions' measured part, with statsmodels' degrees of freedom
        (conservative).  A restriction on unmeasured coefficients only has a
        statistic of 0 and p = 1.

        Parameters
        ----------
        r_matrix : str, array_like or tuple
            The restrictions, as statsmodels (e.g. ``"x1 = 0, x2 = 0"``).
        cov_p : array_like, optional
            A covariance to use instead of the results' own.
        invcov : array_like, optional
            The inverse of the restrictions' covariance, if known.
        use_f : bool, optional
            F rather than chi-squared distribution (statsmodels' default).
        df_constraints : int, optional
            Degrees of freedom of the restrictions.
        scalar : bool
            Return scalar statistics (statsmodels' option).

        Returns
        -------
        statsmodels.stats.contrast.ContrastResults
        """
        quiet = False
        if cov_p is None and invcov is None and self._dp_active():
            full = np.asarray(self.cov_params(), float)
            lost = ~np.isfinite(full)
            if lost.any():  # statsmodels forms R V R': 0 * inf would make it NaN
                cov_p = np.where(lost, 0.0, full)
                quiet = self._touches(r_matrix, ~np.isfinite(np.diag(full)))
        with warnings.catch_warnings():
            if quiet:  # the rank statsmodels finds short is the unmeasured coefficients'
                warnings.filterwarnings("ignore", "covariance of constraints does not have "
                                        "full rank")
                warnings.filterwarnings("ignore", "invalid value encountered", RuntimeWarning)
            res = super().wald_test(r_matrix, cov_p=cov_p, invcov=invcov, use_f=use_f,
                                    df_constraints=df_constraints, scalar=scalar)
        dof = res.df_num if res.distribution == "F" else res.df_denom  # set on every F result
        if cov_p is not None and invcov is None and self._dp_active() and int(dof) == 0:
            # every restriction is on unmeasured coefficients: no evidence against it
            res.statistic = 0.0
            if res.distribution == "F":
                res.fvalue = 0.0
            res.pvalue = 1.0
        return res

    def _touches(self, r_matrix, lost: np.ndarray) -> bool:
        """Whether the restrictions ``r_matrix`` involve a coefficient in ``lost``."""
        try:
            from patsy import DesignInfo

            R = np.atleast_2d(DesignInfo(list(self.model.data.cov_names))
                              .linear_constraint(r_matrix).coefs)
        except Exception:  # noqa: BLE001  (a form statsmodels parses its own way)
            return False
        return R.shape[1] == lost.size and bool(np.any(R[:, lost] != 0))

    def measured_wald(self) -> tuple[float, int] | None:
        """The Wald statistic that every coefficient but the constant(s) is 0,
        with the results' covariance (under cov_type "dp", the bootstrap's),
        over the coefficients whose variance is finite, and its degrees of
        freedom; None when there is none.  A coefficient with an infinite
        variance adds no evidence, so this tests the same null hypothesis with
        the evidence the release has (a valid test, with less power)."""
        params = np.asarray(self.params, float).ravel(order="F")
        cov = np.asarray(self.cov_params(), float)
        k = int(self.model.exog.shape[1])
        const = np.zeros(k, bool)
        idx = getattr(self.model.data, "const_idx", None)
        if idx is not None:
            const[np.atleast_1d(idx)] = True
        keep = ~np.tile(const, params.size // k) & np.isfinite(np.diag(cov)) & np.isfinite(params)
        if not keep.any():
            return None
        V = cov[np.ix_(keep, keep)]
        rank = int(np.linalg.matrix_rank(V))
        if rank == 0:
            return None
        b = params[keep]
        return float(b @ np.linalg.pinv(V) @ b), rank

    @property
    def fvalue(self):
        """F statistic that every slope is 0; under cov_type "dp" with
        coefficients the release does not measure (infinite SE), over the
        measured ones (`measured_wald()`), NaN when none is; so too on the discrete
        models, for which statsmodels has no F statistic."""
        if not self._dp_no_information():
            with contextlib.suppress(AttributeError):  # (statsmodels' discrete results have none)
                return super().fvalue
        test = self.measured_wald()
        return np.nan if test is None else test[0] / test[1]

    @property
    def f_pvalue(self):
        """p-value of `fvalue` (F with the residual degrees of freedom)."""
        if not self._dp_no_information():
            with contextlib.suppress(AttributeError):  # (statsmodels' discrete results have none)
                return super().f_pvalue
        test = self.measured_wald()
        return np.nan if test is None else float(
            stats.f.sf(test[0] / test[1], test[1], self.df_resid))

    # ---- statsmodels' comparisons and diagnostics on dp results ------------------------
    #
    # statsmodels computes these from the fitted rows: here those are released cells
    # weighted by noisy counts, whose residual sums of squares and likelihoods do not
    # carry the privacy noise.  Each is dp-aware (a Wald test with the dp covariance) or
    # refused with the reason; none returns the naive statistic silently.

    def _same_release(self, other, what: str) -> None:
        other = getattr(other, "_results", other)
        if getattr(other, "privacy", None) is not self.privacy:
            raise DPModelsError(
                f"{what} compares two fits of ONE release: these come from different releases "
                "(different noise, each charged), so no test between them is valid. Release "
                "once and fit both formulas on it: rel = dpm.release(df, formula=<the larger "
                "formula>, ...); dp_ols(small, rel), dp_ols(large, rel)")

    def compare_f_test(self, restricted):
        """Test the nested ``restricted`` fit against this one: under cov_type
        "dp", the Wald F test, with this fit's dp covariance, that the
        coefficients absent from ``restricted`` are 0 (the residual sums of
        squares of released cells do not carry the privacy noise, so the
        classical F is not used).  Both fits must come from one release.

        Parameters
        ----------
        restricted : results
            The smaller fit, made on the same release (its coefficients a
            proper subset of this fit's).

        Returns
        -------
        tuple of (float, float, int)
            (F, p-value, df_diff), as statsmodels.

        Raises
        ------
        DPModelsError
            When the two fits come from different releases or are not nested.
        """
        self._same_release(restricted, "compare_f_test")
        if not self._dp_active():
            return super().compare_f_test(getattr(restricted, "_results", restricted))
        R = self._restriction_of(restricted, "compare_f_test")
        test = self.f_test(R)
        return float(np.squeeze(test.fvalue)), float(test.pvalue), int(test.df_num)

    def _restriction_of(self, restricted, what: str) -> np.ndarray:
        names = list(self.model.exog_names)
        small = list(getattr(restricted, "model", restricted).exog_names)
        if not set(small) <= set(names) or len(small) >= len(names):
            raise DPModelsError(
                f"{what}: the restricted fit's coefficients {small} must be a proper subset of "
                f"this fit's {names} (nested models, the larger one first)")
        extra = [i for i, nm in enumerate(names) if nm not in small]
        return np.eye(len(names))[extra]

    def compare_lr_test(self, restricted, large_sample=False):
        """Refused under cov_type "dp": the likelihood of released cells
        weighted by noisy counts is not the likelihood of the rows, and a
        likelihood ratio from it ignores the privacy noise.  Use
        `compare_f_test()` (a Wald test with the dp covariance) or
        ``wald_test``.

        Parameters
        ----------
        restricted : results
            The smaller fit, made on the same release.
        large_sample : bool
            statsmodels' option (under cov_type "naive" only).

        Raises
        ------
        DPModelsError
            Under cov_type "dp", always; otherwise when the fits come from
            different releases.
        """
        self._same_release(restricted, "compare_lr_test")
        if not self._dp_active():
            return super().compare_lr_test(getattr(restricted, "_results", restricted),
                                           large_sample=large_sample)
        raise DPModelsError(
            "compare_lr_test compares likelihoods of the released cells, which do not carry the "
            "privacy noise; under cov_type='dp' use res.compare_f_test(restricted) or "
            "res.wald_test(...), which use the dp covariance")

    def compare_lm_test(self, restricted, demean=True, use_lr=False):
        """Refused under cov_type "dp" (see `compare_lr_test()`).

        Parameters
        ----------
        restricted : results
            The smaller fit, made on the same release.
        demean : bool
            statsmodels' option (under cov_type "naive" only).
        use_lr : bool
            statsmodels' option (under cov_type "naive" only).

        Raises
        ------
        DPModelsError
            Under cov_type "dp", always; otherwise when the fits come from
            different releases.
        """
        self._same_release(restricted, "compare_lm_test")
        if not self._dp_active():
            return super().compare_lm_test(getattr(restricted, "_results", restricted),
                                           demean=demean, use_lr=use_lr)
        raise DPModelsError(
            "compare_lm_test uses the released cells' residuals, which do not carry the privacy "
            "noise; under cov_type='dp' use res.compare_f_test(restricted) or res.wald_test(...)")

    def get_influence(self, *args, **kwargs):
        """Refused: influence, leverage and outlier statistics are properties
        of individual rows, and a dp fit has no rows (only released cells
        weighted by noisy counts); computing them would need the raw data.

        Parameters
        ----------
        *args, **kwargs
            statsmodels' arguments (ignored).

        Raises
        ------
        DPModelsError
            Always.
        """
        raise DPModelsError(
            "get_influence measures each row's influence on the fit; a dp fit is made on released "
            "cells weighted by noisy counts, not on rows, so no row's influence can be "
            "computed from it (and publishing it would need the raw data)")

    def outlier_test(self, *args, **kwargs):
        """Refused, as `get_influence()`: a dp fit has released cells, not rows.

        Parameters
        ----------
        *args, **kwargs
            statsmodels' arguments (ignored).

        Raises
        ------
        DPModelsError
            Always.
        """
        raise DPModelsError(
            "outlier_test tests each row's residual; a dp fit has released cells weighted by "
            "noisy counts, not rows, so there are no rows to test")

    def plot_coefficients(self, ax=None, *, nonprivate=None, alpha=0.05, naive=True,
                          scale="auto"):
        """Forest plot of the estimates with their dp and naive intervals (a
        matplotlib Figure); see `dpmodels.output.plots.plot_coefficients()`.

        Parameters
        ----------
        ax : matplotlib Axes, optional
            Where to draw (default: a new figure).
        nonprivate : pandas Series, dict, array or DataFrame, optional
            The analyst's own non-private estimates, drawn as diamonds
            (matched by coefficient name; see
            `dpmodels.output.plots.plot_coefficients()`).
        alpha : float
            1 - the intervals' level (default 0.05).
        naive : bool
            Also draw the naive intervals (which ignore the privacy noise).
        scale : {"auto", "shared", "each"}
            One x axis for every coefficient ("shared"), one row per
            coefficient on its own range ("each"), or chosen from the
            coefficients' extents ("auto", default).

        Returns
        -------
        matplotlib.figure.Figure
        """
        return plot_coefficients(self, ax, nonprivate=nonprivate, alpha=alpha, naive=naive,
                                 scale=scale)

    def conf_int(self, alpha=0.05, cols=None, **kwargs):
        """Confidence intervals; under cov_type "dp", the bootstrap intervals.

        Parameters
        ----------
        alpha : float
            1 - the intervals' level (default 0.05: 95% intervals).
        cols : array_like, optional
            The coefficients (positions) to return.
        **kwargs
            ``method=``: the bootstrap interval under cov_type "dp", one of
            "normal", "bc-normal", "basic", "percentile" (default: the fit's
            ``cov_kwds["interval"]``); otherwise passed to statsmodels.

        Returns
        -------
        pandas.DataFrame or numpy.ndarray
            Lower and upper bounds, one row per coefficient (multinomial
            logit: one block per equation, as statsmodels).
        """
        inference = self._active_inference()
        if inference is None:
            return super().conf_int(alpha=alpha, cols=cols, **kwargs) if cols is not None \
                else super().conf_int(alpha=alpha, **kwargs)
        ci = inference.conf_int(alpha, method=kwargs.pop("method", None))
        if len(np.shape(self.params)) == 2:  # multinomial: (J-1, K, 2), as statsmodels
            K, J1 = np.shape(self.params)
            return ci.reshape(J1, K, 2)
        if cols is not None:
            ci = ci[np.asarray(cols)]
        return ci


def attach_dp_inference(res, inference: DPInference, *, warn: bool = True) -> None:
    """Make ``inference`` the covariance of the results ``res`` (a dpmodels
    results class with `DPInferenceResultsMixin`, or its wrapper).

    The results own it from then on: their ``bse``, ``cov_params``,
    ``tvalues``, ``pvalues`` and ``conf_int`` read it (no statsmodels cache
    is touched: those members are the mixin's, not cached values).

    Every mechanism's results pass through here, so here is where a
    coefficient whose error the bootstrap could not measure (infinite SE,
    unbounded interval, p = 1; `DPInference.unmeasured`) is named in a
    `ReleaseWarning` with the reason
    (`DPInference.unmeasured_message()`), unless ``warn`` is False (a
    model that names them itself, in its own words)."""
    inner = getattr(res, "_results", res)
    if not isinstance(inner, DPInferenceResultsMixin):
        raise TypeError(f"{type(inner).__name__} cannot carry a dp covariance: its class "
                        "does not derive from DPInferenceResultsMixin")
    inner.dp_inference = inference
    inner.cov_type = "dp"
    inner.cov_kwds = {"n_boot": inference.n_boot, "interval": inference.interval,
                      "description": "parametric bootstrap of the release"}
    inner.use_t = False
    if warn and inference.unmeasured.any():
        # (the multinomial logits, whose parameters are by equation, name their own)
        names = getattr(getattr(inner, "model", None), "exog_names", None)
        names = list(names) if names is not None and len(names) == inference.params.size else None
        warnings.warn(inference.unmeasured_message(names), ReleaseWarning,
                      stacklevel=user_stacklevel())


# ---- the contract of every results class ---------------------------------------------------
#
# Each table maps every public name of the class's dir() to RELEASE, STATSMODELS or a
# Refusal.  A name missing here fails tests/contracts/test_results_contract.py.

R, S = RELEASE, STATSMODELS

_LIKELIHOOD = ("the likelihood of the released cells weighted by noisy counts is not the "
               "likelihood of the rows and does not carry the privacy noise, so likelihood "
               "ratios and information criteria built on it are not valid")
_WALD = "res.wald_test(...) / res.compare_f_test(restricted) (Wald tests with the dp covariance)"
_ROWS = ("it is a property of individual rows, and a dp fit has no rows, only released cells "
         "weighted by noisy counts")
_SANDWICH = ("a robust (sandwich) covariance of the released cells treats each cell as one "
             "row and ignores the privacy noise")
_DP_COV = "res.bse / res.cov_params() under cov_type='dp' (the bootstrap of the release)"
_POINTS = ("the fit is handed to statsmodels on points that carry the released statistics, "
           "not on data or cells, so per-point values describe no rows")
_PREDICT = "res.predict(new_data) / res.get_prediction(new_data) on covariate values you choose"

#: The members of every statsmodels-derived results class (DPInferenceResultsMixin and
#: statsmodels' LikelihoodModelResults).
_COMMON: dict[str, Classification] = {
    # the estimate and its dp inference
    "params": R, "bse": R, "cov_params": R, "tvalues": R, "pvalues": R, "conf_int": R,
    "t_test": R, "f_test": R, "wald_test": R, "wald_test_terms": R, "t_test_pairwise": R,
    "fvalue": R, "f_pvalue": R, "measured_wald": R, "compare_f_test": R,
    "plot_coefficients": R, "get_prediction": R, "predict": R, "summary": R, "summary2": R,
    "dp_inference": R, "cov_type": R, "cov_kwds": R, "use_t": R, "privacy": R, "release": R,
    "nobs": R, "df_resid": R, "model": R,
    # statsmodels' own
    "df_model": S, "k_constant": S, "normalized_cov_params": S, "initialize": S,
    "save": S, "load": S, "remove_data": S,
    # refused
    "compare_lr_test": Refusal(_LIKELIHOOD, "compare_f_test", when="dp", own=True),
    "compare_lm_test": Refusal("the LM statistic of the released cells ignores the privacy "
                               "noise", "compare_f_test", when="dp", own=True),
    "get_influence": Refusal(_ROWS, "res.dp_inference (how the bootstrap moves each "
                             "coefficient) or res.summary() (the binning check)",
                             when="release"),
    "outlier_test": Refusal(_ROWS, "res.summary() (the binning check) and "
                            "release.plot() (the released counts)", when="release"),
    "llf": Refusal(_LIKELIHOOD, _WALD),
    "aic": Refusal(_LIKELIHOOD, _WALD),
    "bic": Refusal(_LIKELIHOOD, _WALD),
    "info_criteria": Refusal(_LIKELIHOOD, _WALD),
}

_SANDWICHES = {name: Refusal(_SANDWICH, _DP_COV, when="release") for name in (
    "HC0_se", "HC1_se", "HC2_se", "HC3_se", "cov_HC0", "cov_HC1", "cov_HC2", "cov_HC3",
    "get_robustcov_results")}

#: statsmodels' RegressionResults (OLS of cells or moments, quantile regression).
_REGRESSION: dict[str, Classification] = {
    **_COMMON, **_SANDWICHES,
    "scale": R, "ssr": R, "ess": R, "centered_tss": R, "uncentered_tss": R, "mse_model": R,
    "mse_resid": R, "mse_total": R, "rsquared": R, "rsquared_adj": R, "condition_number": R,
    "eigenvals": R, "fittedvalues": R, "resid": R, "wresid": R, "resid_pearson": R,
    "source": R,
}

_OLS: dict[str, Classification] = {
    **_REGRESSION,
    # the summary's diagnostics dict: the released design's condition number; the residual
    # normality tests NaN ("n/a") on a private release or moments (FreqRegressionResults.diagn)
    "diagn": R,
    "effects": Refusal("type 1 (sequential) sums of squares of the cells do not carry the "
                       "privacy noise", "anova_lm(res, typ=2)", when="dp", own=True),
}
#: Noisy moments: statsmodels gets points that carry the released moments.
_MOMENTS: dict[str, Classification] = {
    name: Refusal(_POINTS, _PREDICT, when="release")
    for name in ("fittedvalues", "resid", "wresid", "resid_pearson")}

_QUANTREG: dict[str, Classification] = {
    **_REGRESSION,
    "effects": R, "prsquared": R, "objective": R, "mse": R, "q": R, "bandwidth": R,
    "bandwidth_name": R, "kernel_name": R, "vcov_type": R, "sparsity": R, "unresolved": R,
    "unresolved_message": R, "iterations": S, "history": S,
}
_NOT_RELEASED = ("the quantile steps release no check loss or residuals: " + _POINTS)
_NEWTON_QUANTREG: dict[str, Classification] = {
    **_QUANTREG,
    **{name: Refusal(_NOT_RELEASED, _PREDICT, when="release") for name in (
        "fittedvalues", "resid", "wresid", "resid_pearson", "effects", "ssr", "ess",
        "centered_tss", "uncentered_tss", "mse", "mse_model", "mse_resid", "mse_total",
        "rsquared", "rsquared_adj")},
    **{name: Refusal(_NOT_RELEASED, "res.conf_int() / res.t_test(...) (the dp inference)",
                     when="release") for name in ("prsquared", "objective")},
}

_NULL = ("the null model's likelihood of the released cells does not carry the privacy "
         "noise")
_DISCRETE: dict[str, Classification] = {
    **_COMMON,
    "fittedvalues": R, "resid_pearson": R, "resid_response": R, "get_distribution": R,
    "pred_table": R, "separation": R, "response_coding": R, "dp_wald_pvalue": R, "source": R,
    "scale": S, "converged": S, "method": S, "mle_retvals": S, "mle_settings": S,
    "set_null_options": S,
    "llnull": Refusal(_NULL, "res.dp_wald_pvalue() (the Wald test that every slope is 0, "
                      "dp covariance)"),
    "llr": Refusal(_NULL, "res.dp_wald_pvalue()"),
    "llr_pvalue": Refusal(_NULL, "res.dp_wald_pvalue()"),
    "prsquared": Refusal(_NULL, "res.dp_wald_pvalue() for the test; no dp pseudo R-squared "
                         "is released"),
    "score_test": Refusal("the score (LM) test of the released cells ignores the privacy "
                          "noise", _WALD, when="dp"),
    "im_ratio": Refusal("the information-matrix ratio of the released cells ignores the "
                        "privacy noise", _DP_COV, when="dp"),
    "get_margeff": Refusal("statsmodels averages marginal effects over rows, and a dp fit "
                           "has released cells weighted by noisy counts", _PREDICT,
                           when="release"),
}
_LOGIT: dict[str, Classification] = {**_DISCRETE, "resid_dev": R, "resid_generalized": R}
_NEWTON_LOGIT: dict[str, Classification] = {
    **_LOGIT,
    **{name: Refusal("the Newton steps release no likelihood: " + _POINTS, _WALD,
                     when="release") for name in (
        "llf", "aic", "bic", "info_criteria", "llnull", "llr", "llr_pvalue", "prsquared")},
    **{name: Refusal(_POINTS, _PREDICT, when="release") for name in (
        "fittedvalues", "resid_pearson", "resid_response", "resid_dev", "resid_generalized",
        "get_distribution")},
    "pred_table": Refusal(
        "a prediction table counts rows by response and prediction, and the Newton steps "
        "release no rows: statsmodels would count the points that carry the released "
        "statistics, whose responses are the fitted probabilities (a perfect table)",
        "res.predict(rows) on data you hold and may use, or a histogram release "
        "(method='histogram'), whose pred_table() counts noisy cells", when="release"),
}
_MNLOGIT: dict[str, Classification] = {
    **_DISCRETE, "J": S, "K": S, "resid_misclassified": R,
    "margeff": Refusal("statsmodels' deprecated member", "res.get_prediction(new_data)",
                       when="release"),
}

_SAMPLE_AGGREGATE: dict[str, Classification] = {
    **{name: R for name in (
        "params", "bse", "tvalues", "pvalues", "conf_int", "cov_params", "cov_type", "t_test",
        "f_test", "wald_test", "get_prediction", "predict", "privacy", "release", "model",
        "nobs", "q", "summary", "summary2")},
    "save": S, "load": S,
}

#: Every results class's contract: ``{class name: (table, {source: overrides})}``.
CONTRACTS: Mapping[str, tuple[Mapping[str, Classification],
                              Mapping[str, Mapping[str, Classification]]]] = {
    "FreqRegressionResults": (_OLS, {"moments": _MOMENTS}),
    "FreqQuantRegResults": (_QUANTREG, {}),
    "NewtonQuantRegResults": (_NEWTON_QUANTREG, {}),
    "FreqLogitResults": (_LOGIT, {}),
    "NewtonLogitResults": (_NEWTON_LOGIT, {}),
    "FreqMNLogitResults": (_MNLOGIT, {}),
    "SampleAggregateResults": (_SAMPLE_AGGREGATE, {}),
}
del R, S
