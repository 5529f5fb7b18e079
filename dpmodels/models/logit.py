"""dp_logit: binary logistic regression on a private histogram.

The response must be a discrete variable with two declared levels.  The
released cells are fitted by maximum likelihood with their noisy counts as
frequency weights (`FreqLogit`), which is
the logit of the data set in which each cell appears ``count`` times.
"""

from __future__ import annotations

import ast
import dataclasses
import warnings
from functools import partial

import numpy as np
import pandas as pd
import patsy
from scipy.special import expit
from statsmodels.tools.sm_exceptions import (
    ConvergenceWarning,
    HessianInversionWarning,
    PerfectSeparationWarning,
)

from ..core.batched import batched_newton, outer_rows, support_projectors
from ..core.errors import (
    DomainError,
    DPModelsError,
    ReleaseWarning,
    SeparationError,
    SeparationWarning,
    SingularDesignError,
)
from ..core.keywords import checked_keywords
from ..domain.axes import Axis, Domain, _level_index
from ..domain.formula import FormulaVariables, user_stacklevel
from ..inference.dp_results import attach_dp_inference
from ..mechanisms.newton import check_binary_levels
from .base import DPModel, dp_options
from .discrete import FreqLogit, separation_direction

__all__ = ["DPLogit"]

_SEPARATION_CHOICES = ("warn", "raise", "ignore")


def _is_numeric(levels) -> bool:
    return all(isinstance(v, (int, float, np.integer, np.floating))
               and not isinstance(v, (bool, np.bool_)) for v in levels)


def _lhs_is_variable(formula: str, name: str) -> bool:
    """True when the formula's left-hand side is exactly ``name`` (or ``Q("name")``)."""
    terms = patsy.ModelDesc.from_formula(formula).lhs_termlist
    if len(terms) != 1 or len(terms[0].factors) != 1:
        return False
    code = getattr(terms[0].factors[0], "code", "")
    try:
        node = ast.parse(code, mode="eval").body
    except SyntaxError:
        return False
    if isinstance(node, ast.Name):
        return node.id == name
    return (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "Q"
            and len(node.args) == 1 and isinstance(node.args[0], ast.Constant)
            and node.args[0].value == name)


def refit_logit(X, y, W, start, *, flat_directions=None):
    """Frequency-weighted logit MLE for every column of ``W`` (C, b).

    Arrays are laid out replicate by cell, ``(b, C)``, so that a subset of
    replicates is a block of rows; the linear predictors the line search
    computed are reused by the next Newton step.  ``flat_directions``: see
    `batched_newton()` (a design the cells leave
    rank-deficient).
    """
    C, p = X.shape
    XX = outer_rows(X)
    WT = np.ascontiguousarray(W.T)
    b_all = W.shape[1]
    seen = np.full((b_all, p), np.nan)  # the last point loglik saw, per replicate
    eta_seen = np.empty((b_all, C))
    XT = np.ascontiguousarray(X.T)  # (a product with a transposed view is slower)

    def loglik(theta, idx=None):
        idx = np.arange(b_all) if idx is None else idx
        eta = theta @ XT
        seen[idx], eta_seen[idx] = theta, eta
        return np.einsum("bc,bc->b", WT[idx], y * eta - np.logaddexp(0.0, eta))

    def grad_hess(theta, idx):
        Wb = WT[idx]
        eta = eta_seen[idx] if np.array_equal(seen[idx], theta) else theta @ XT
        mu = expit(eta)
        r = np.subtract(y, mu)  # in place below (fresh large arrays cost page faults)
        r *= Wb
        g = r @ X
        np.subtract(1.0, mu, out=r)
        mu *= Wb
        mu *= r  # w mu (1 - mu)
        info = (mu @ XX).reshape(idx.size, p, p)
        return g, info

    return batched_newton(X, W, start, grad_hess, loglik, flat_directions=flat_directions)


class _DPChoiceModel(DPModel):
    """Shared by dp_logit and dp_mnlogit: the response is one discrete
    variable whose declared levels are checked before anything is released;
    signed releases are refused (the likelihood needs non-negative weights)."""

    _allows_signed = False
    names_unmeasured = True
    response_classes = True
    _name = "DP choice model"
    _func = "dp_model"
    _example_levels: str  # set by each subclass: a level list for its error messages
    response: str

    # ---- before the release: public domain only ---------------------------------------
    def _check_domain(self, domain: Domain, formula_vars: FormulaVariables) -> None:
        self.response = type(self).check_response(self.formula, domain, formula_vars)

    @classmethod
    def check_response(cls, formula: str, domain: Domain, formula_vars: FormulaVariables) -> str:
        """The response of ``formula``, checked on the public domain before anything
        is released: one variable of the data, discrete, with the levels this
        family needs (a DPModelsError or DomainError naming it otherwise).  Other
        releases of the same family run it as their domain check (the Newton logit)."""
        name = cls._response_of(formula, formula_vars)
        cls._check_response_axis(domain.axis(name))
        return name

    @classmethod
    def _response_of(cls, formula: str, fv: FormulaVariables) -> str:
        if len(fv.response) != 1 or not _lhs_is_variable(formula, fv.response[0]):
            lhs = formula.split("~")[0].strip() if "~" in formula else ""
            raise DPModelsError(
                f"the response of {cls._func} must be a single variable of the data, as in "
                f"'y ~ x'; got {lhs!r}: build the response as a column first (and declare its "
                "levels)"
            )
        return fv.response[0]

    @classmethod
    def _check_response_axis(cls, axis: Axis) -> None:
        if axis.kind != "discrete":
            raise DomainError(
                f"the response {axis.name!r} of {cls._func} must be discrete, but it is "
                f"continuous ({axis.describe()}): declare its level set, e.g. "
                f"levels={{{axis.name!r}: {cls._example_levels}}}, instead of bounds"
            )
        levels = axis.level_set  # a discrete axis always has its levels
        if len(levels) < 2:
            raise DomainError(
                f"the response {axis.name!r} has a single declared level "
                f"({levels[0]!r}): {cls._func} needs at least two; declare every value "
                f"{axis.name!r} can take"
            )

    # ---- after the release: the cell frame ------------------------------------------
    def _response_levels(self) -> list | None:
        """The response's levels in class order: the declared order for
        non-numeric levels (strings, bools), so that the first declared level
        is the base (dp_mnlogit) or is coded 0 (dp_logit); None for numeric
        levels, which the fit uses as numbers (statsmodels sorts them)."""
        levels = self.release.domain.axis(self.response).level_set  # checked discrete
        return None if _is_numeric(levels) else list(levels)

    def _response_frame(self) -> tuple[pd.DataFrame, np.ndarray, list | None]:
        """Cells with the response as numbers, the counts, and the response
        level of each code (see `_response_levels()`)."""
        return (self._prepare_cells(self.cells), self.weights.astype(float),
                self._response_levels())

    def _prepare_cells(self, frame: pd.DataFrame) -> pd.DataFrame:
        """Cells as the fit sees them: a non-numeric response as the position
        of its level in the declared order (whatever the order of the cell
        frame's categories, which is sorted for a declared list)."""
        order = self._response_levels()
        if order is None:
            return frame
        col = frame[self.response]
        if isinstance(col.dtype, pd.CategoricalDtype):
            remap = _level_index(order).get_indexer(col.cat.categories)
            raw = col.cat.codes.to_numpy()
            codes = np.where(raw < 0, -1, remap[np.maximum(raw, 0)])
        else:
            codes = _level_index(order).get_indexer(np.asarray(col))
        if np.any(codes < 0):  # pragma: no cover - cell frames hold declared levels only
            raise DPModelsError(f"the cells hold a {self.response} value outside its levels")
        frame = frame.copy()
        frame[self.response] = np.asarray(codes, dtype=np.int64)
        return frame

    def _empty_fit_error(self):
        return ValueError(
            "the release has no cells with positive total count for this formula: "
            "use a larger epsilon, fewer bins or a lower threshold"
        )

    def _refit(self, n_classes: int):
        """The batched refit of this family (``refit(X, y, W, start, *, flat_directions)``)."""
        return refit_logit

    def _fit_model(self, model, classes: np.ndarray, n_classes: int, param_names: list[str],
                   separation: str, fit_kwargs: dict, *, flat_ok: bool = False):
        """Checks on the released design, then the maximum likelihood fit.

        A design the released cells leave rank-deficient (a declared level
        no released cell holds, or its reference level) is refused, unless
        ``flat_ok`` (the dp covariance, whose release checks give the
        coefficients concerned infinite standard errors and name them): the
        fit is then the maximum with no component along the flat directions,
        and ``self._flat`` holds their projector for the bootstrap's refits."""
        if separation not in _SEPARATION_CHOICES:
            raise ValueError(f"separation must be one of {_SEPARATION_CHOICES}, got {separation!r}")
        X = model.exog
        k = X.shape[1]
        rank = np.linalg.matrix_rank(X) if X.size else 0
        self._flat = None
        if rank < k and not (flat_ok and rank > 0):
            zero = [nm for nm, col in zip(model.exog_names, X.T) if not np.any(col)]
            what = (f"{', '.join(zero)} {'is' if len(zero) == 1 else 'are'} 0 in every released "
                    "cell (no released cell has that level or value)" if zero
                    else f"some columns are collinear on the released cells "
                         f"({self.unidentified_why()})")
            raise SingularDesignError(
                f"the design matrix of the released cells has rank {rank} < {k} columns: {what}. "
                "The likelihood has no unique maximum: use a larger epsilon, fewer bins, a "
                "lower threshold, or merge levels / drop the term"
                + ("" if flat_ok else " (or cov_type='dp', which fits it and reports the "
                   "coefficients concerned as unmeasured)")
            )
        if rank < k:
            self._flat = support_projectors(X, np.asarray(model.weights, float)[:, None])[0]
        found: tuple[str, ...] | None = None
        if separation != "ignore":
            B = separation_direction(X, classes, n_classes)
            found = () if B is None else tuple(
                nm for nm, b in zip(param_names, B.ravel(order="F")) if b != 0)
            if found:
                msg = (f"the released cells are (quasi-)separated: the {self._name} likelihood "
                       f"increases without bound along a direction involving {', '.join(found)}. "
                       "These estimates diverge and are not identified (the maximum likelihood "
                       "estimate does not exist). Use a larger epsilon, fewer bins, a lower "
                       "threshold, or merge levels / drop terms")
                if separation == "raise":
                    raise SeparationError(msg)
                warnings.warn(msg, SeparationWarning, stacklevel=3)
        fit_kwargs = {"disp": False, **fit_kwargs}
        with warnings.catch_warnings():
            if found:  # already reported, with the parameters concerned
                for cat in (PerfectSeparationWarning, ConvergenceWarning, HessianInversionWarning,
                            RuntimeWarning):
                    warnings.simplefilter("ignore", cat)
            try:
                res = (model.fit(**fit_kwargs) if self._flat is None
                       else self._flat_fit(model, classes, n_classes))
            except np.linalg.LinAlgError as exc:
                if found:
                    raise SeparationError(
                        f"the fit broke down because the released cells are separated along "
                        f"{', '.join(found)} ({exc})") from exc
                raise SingularDesignError(
                    f"the Hessian of the {self._name} likelihood is singular on the released "
                    f"cells ({exc})") from exc
        res._results.privacy = self.privacy
        res._results.release = self.release
        res._results.separation = found
        return res

    def _flat_columns(self, k: int) -> np.ndarray:
        """The columns with a component along the flat directions the last fit
        held at their start (``self._flat``): flagged with the unidentified
        ones whatever the rank tolerance of
        `unidentified_columns()`, so that no
        coefficient the replicates held still gets a finite error."""
        flat = getattr(self, "_flat", None)
        if flat is None or flat.shape[0] != k:
            return np.zeros(k, bool)
        return np.diag(np.eye(k) - flat) > 1e-12

    def _flat_fit(self, model, classes: np.ndarray, n_classes: int):
        """The maximum likelihood fit on a rank-deficient design: Newton's
        steps within the design's row space from 0 (the batched refit), wrapped
        as the model's results.  There is no model-based covariance (its
        Hessian is singular); the dp covariance replaces it."""
        k = model.exog.shape[1] * (n_classes - 1)
        w = np.asarray(model.weights, float)[:, None]
        theta, ok = self._refit(n_classes)(np.asarray(model.exog, float), classes.astype(float),
                                           w, np.zeros(k), flat_directions=self._flat)
        if not ok[0]:
            raise np.linalg.LinAlgError("Newton's method within the design's row space "
                                        "did not converge")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", HessianInversionWarning)
            warnings.simplefilter("ignore", ConvergenceWarning)
            res = model.fit(start_params=theta[0], method="bfgs", maxiter=0, disp=False)
        res._results.mle_retvals = {**res._results.mle_retvals, "converged": True,
                                    "rank_deficient": True}
        res._results.mle_settings = {**res._results.mle_settings, "optimizer": "newton"}
        return res

    def _name_unmeasured(self, res, inference, param_names: list[str]) -> None:
        """One warning naming every coefficient whose error the bootstrap could
        not measure (infinite SE, unbounded interval, p = 1) and why, in the
        histogram's terms; the summary's note says the same
        (`DPInference.unmeasured_why`).
        A `SeparationWarning` when the released cells are separated (the
        usual cause at small epsilon), else a `ReleaseWarning`.  The
        coefficients the release itself flags were named by their own warning."""
        lost = inference.unmeasured
        if not lost.any() or len(param_names) != lost.size:
            return
        found = getattr(res._results, "separation", None) or ()
        params = np.asarray(inference.params, dtype=float)
        diverged = [nm for nm, v, u in zip(param_names, params, lost) if u and not np.isfinite(v)]
        reasons: list[str] = []
        if found:
            reasons.append("the released cells are (quasi-)separated, so the maximum likelihood "
                           "estimate diverges along a direction involving " + ", ".join(found))
        if diverged:
            reasons.append("their estimates are not finite (the fit on the released cells broke "
                           "down)" if len(diverged) == int(lost.sum())
                           else f"the estimate of {', '.join(diverged)} is not finite")
        if (lost & np.isfinite(params)).any() or not diverged:
            refits = (f"{inference.n_ok} of {inference.n_boot} replicate releases could be "
                      "refitted")
            reasons.append(f"the bootstrap's refits of the replicate releases diverge as well "
                           f"({refits}), so the likelihood cannot bound these coefficients" if found
                           else f"{refits}; the others' released cells are separated or "
                           "rank-deficient, or their refits do not converge")
        why = "; ".join(reasons) + ("; use a larger epsilon, fewer bins, a lower threshold, or "
                                   "merge levels / drop terms")
        inference = dataclasses.replace(inference, unmeasured_why=why)
        attach_dp_inference(res, inference, warn=False)
        warnings.warn(inference.unmeasured_message(param_names),
                      SeparationWarning if found else ReleaseWarning,
                      stacklevel=user_stacklevel())


class DPLogit(_DPChoiceModel):
    """Differentially private logistic regression: maximum likelihood on
    the released cells, each weighted by its noisy count.

    See `dp_logit()` for the parameters.
    """

    _name = "DP Logit"
    _func = "dp_logit"
    _example_levels = "[0, 1]"

    @classmethod
    def _check_response_axis(cls, axis: Axis) -> None:
        super()._check_response_axis(axis)
        levels = axis.level_set  # discrete: checked by super()
        if len(levels) > 2:
            raise DomainError(
                f"the response {axis.name!r} has {len(levels)} declared levels "
                f"({axis.describe()}); dp_logit needs exactly two: use dp_mnlogit for more"
            )
        check_binary_levels(axis)

    @checked_keywords
    def fit(self, cov_type: str = "dp", *, method: str = "newton", maxiter: int = 35,
            separation: str = "warn", n_boot: int | None = None, random_state=None,
            cov_kwds: dict | None = None, **kwargs):
        """Fit the frequency-weighted logit; returns statsmodels ``Logit``
        results (with ``.privacy``) whose estimates equal those of the data
        set in which each cell appears ``count`` times.

        Parameters
        ----------
        cov_type : {"dp", "naive"}
            "dp" (default): standard errors, z statistics, p-values and
            intervals from a parametric bootstrap of the release (sampling,
            privacy noise and threshold; see `dpmodels.inference`).
            "naive" (alias "nonrobust"): the inverse information of the
            expanded data, which treats the noisy counts as real rows.
        n_boot : int, optional
            Bootstrap replicates B (default 200).
        random_state : None, int or Generator
            Makes the bootstrap reproducible (None: OS secure entropy).
        cov_kwds : dict, optional
            ``n_boot``, ``random_state``, ``interval``, ``binning_check``;
            see `dpmodels.models.ols.DPOLS.fit()`.
        method : str
            Optimizer, as in ``statsmodels Logit.fit`` (default "newton").
        maxiter : int
            Maximum number of iterations.
        separation : {"warn", "raise", "ignore"}
            Before fitting, look for (quasi-)complete separation of the
            released cells (a linear program): "warn" warns with a
            `SeparationWarning` naming the
            parameters that diverge and fits anyway; "raise" raises a
            `SeparationError`; "ignore"
            skips the check.  Under cov_type "dp", every coefficient whose
            error the bootstrap then cannot measure (infinite standard error,
            unbounded interval) is named, with the reason, by one more warning.
        **kwargs
            Passed to ``FreqLogit.fit`` (``disp`` defaults to False).

        Returns
        -------
        statsmodels.discrete.discrete_model.BinaryResultsWrapper
            Wrapping a `FreqLogitResults`.

        Raises
        ------
        SeparationError
            One response value has no released cell, or ``separation="raise"``
            and the cells are separated.
        SingularDesignError
            ``cov_type="naive"`` and the design of the released cells is
            rank-deficient (e.g. a factor level with no released cell).  The
            default dp covariance fits it instead: the coefficients the cells
            do not identify get infinite standard errors and a warning naming
            them and the level.
        """
        kind, opts = dp_options(cov_type, n_boot, random_state, cov_kwds)
        frame, w, order = self._response_frame()
        if frame.empty or w.sum() <= 0:
            raise self._empty_fit_error()
        y = frame[self.response].to_numpy()
        labels = order if order is not None else [0, 1]
        codes = [0, 1]
        for code, label in zip(codes, labels):
            if not np.any(w[y == code] > 0):
                other = labels[1 - code]
                raise SeparationError(
                    f"no released cell has {self.response} = {label!r}: every released cell has "
                    f"{self.response} = {other!r}, so a logit cannot be fitted. Use a larger "
                    "epsilon, fewer bins or a lower threshold"
                )
        model = self._formula_model(FreqLogit, frame, weights=w)
        res = self._fit_model(model, np.asarray(model.endog).astype(int), 2,
                              list(model.exog_names), separation,
                              dict(method=method, maxiter=maxiter, **kwargs),
                              flat_ok=kind == "dp")
        if order is not None:
            res._results.response_coding = (
                f"{self.response} = 1 for {order[1]!r}, 0 for {order[0]!r}")
        if kind == "dp":
            refit = partial(self._refit(2), flat_directions=self._flat)
            inference = self._dp_inference(res, refit, np.asarray(res.params), opts,
                                           label="DP Logit bootstrap")
            self._name_unmeasured(res, inference, list(model.exog_names))
        return res
