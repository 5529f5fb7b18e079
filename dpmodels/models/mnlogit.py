"""dp_mnlogit: multinomial logistic regression on a private histogram.

The response must be a discrete variable with a declared level set.  The
released cells are fitted by maximum likelihood with their noisy counts as
frequency weights (`FreqMNLogit`), which is
the multinomial logit of the data set in which each cell appears ``count``
times.
"""

from __future__ import annotations

import warnings
from functools import partial

import numpy as np
import pandas as pd

from ..core.batched import batched_newton, outer_rows
from ..core.errors import ReleaseWarning, SeparationError
from ..core.keywords import checked_keywords
from .base import dp_options, flat_param_names
from .discrete import FreqMNLogit, FreqMNLogitResultsWrapper
from .logit import _DPChoiceModel

__all__ = ["DPMNLogit", "DPMNLogitResultsWrapper"]


#: Up to this many replicates, refit_mnlogit forms all pairs of equations' Hessian
#: weights in one array; beyond, pair by pair.
_PAIRS_AT_ONCE = 8


def refit_mnlogit(X, y, W, start, n_classes: int, *, flat_directions=None):
    """Frequency-weighted multinomial logit MLE for every column of ``W``.

    ``y`` holds class codes 0..J-1; parameters are flattened equation by
    equation (statsmodels' order of ``cov_params``).  Arrays are laid out
    replicate, equation, cell ``(b, J-1, C)``: the linear predictors are one
    matrix product, every sum over the equations and every product of two
    equations is an operation on ``(b, C)`` slabs, and a subset of
    replicates is a block of rows.  ``flat_directions``: see
    `batched_newton()`.
    """
    C, p = X.shape
    J1 = n_classes - 1
    XX = outer_rows(X)
    code = y.astype(np.int64)
    rows = np.flatnonzero(code > 0)  # cells of a non-base class, and the class's equation
    eq = code[rows] - 1
    Y = np.stack([(code == j + 1).astype(float) for j in range(J1)])  # (J1, C)
    WT = np.ascontiguousarray(W.T)  # (b, C)
    upper = np.triu_indices(J1)  # the (j, k) blocks formed: minus the Hessian is symmetric
    diag = np.arange(J1)
    b_all = W.shape[1]
    # the class probabilities' parts loglik computed last, per replicate: Newton's next
    # grad_hess is at the point its line search accepted (batched_newton), and reads
    # its probabilities off them (a division, not another exponential per class)
    seen = np.full((b_all, J1 * p), np.nan)
    exp_seen = np.empty((b_all, J1, C))
    total_seen = np.empty((b_all, C))

    XT = np.ascontiguousarray(X.T)  # (a product with a transposed view is slower)

    def eta_of(theta):  # theta (b, J1*p) -> eta (b, J1, C)
        return (theta.reshape(-1, p) @ XT).reshape(theta.shape[0], J1, C)

    def parts(eta):
        """``exp(eta_j - top)`` (b, J1, C), their total with ``exp(-top)`` (b, C)
        and the log normalizer ``log(1 + sum_j exp(eta_j))`` (b, C), stably."""
        top = np.maximum(eta.max(axis=1), 0.0)
        E = np.subtract(eta, top[:, None, :])
        np.exp(E, out=E)
        total = np.exp(-top)
        for j in range(J1):
            total += E[:, j]
        return E, total, np.add(top, np.log(total), out=top)

    def loglik(theta, idx=None):
        idx = np.arange(b_all) if idx is None else idx
        eta = eta_of(theta)
        E, total, norm = parts(eta)
        seen[idx], exp_seen[idx], total_seen[idx] = theta, E, total
        val = -norm
        val[:, rows] += eta[:, eq, rows]
        return np.einsum("bc,bc->b", WT[idx], val)

    def grad_hess(theta, idx):
        b = idx.size
        Wb = WT[idx]
        if np.array_equal(seen[idx], theta):
            E, total = exp_seen[idx], total_seen[idx]
        else:
            E, total, _ = parts(eta_of(theta))
        P = np.divide(E, total[:, None, :], out=E)  # (b, J1, C); E is a copy or its own
        PW = P * Wb[:, None, :]
        G = Y[None] * Wb[:, None, :]
        G -= PW
        g = (G.reshape(b * J1, C) @ X).reshape(b, J1 * p)
        # minus the Hessian's (j, k) block: sum_c w_c x_c x_c' P_cj (1{j = k} - P_ck),
        # symmetric in (j, k): each pair's weights are formed once, all pairs in one product
        if b <= _PAIRS_AT_ONCE:  # few replicates: every pair in one product (less overhead)
            pairs = (PW[:, upper[0]] * P[:, upper[1]]).reshape(-1, C) @ XX
        else:  # many: pair by pair, on contiguous (b, C) slabs (less memory traffic)
            slab = np.empty((b, C))
            pairs = np.stack([np.multiply(PW[:, j], P[:, k], out=slab) @ XX
                              for j, k in zip(*upper)], axis=1)
        blocks = np.empty((b, J1, J1, p * p))
        blocks[:, upper[0], upper[1]] = -pairs.reshape(b, -1, p * p)
        blocks[:, upper[1], upper[0]] = blocks[:, upper[0], upper[1]]
        blocks[:, diag, diag] += (PW.reshape(-1, C) @ XX).reshape(b, J1, p * p)
        info = blocks.reshape(b, J1, J1, p, p).transpose(0, 1, 3, 2, 4)
        return g, info.reshape(b, J1 * p, J1 * p)

    return batched_newton(X, W, start, grad_hess, loglik, flat_directions=flat_directions)


class DPMNLogitResultsWrapper(FreqMNLogitResultsWrapper):
    """statsmodels' multinomial results wrapper whose outcome columns are
    named by the response's levels (``results.outcome_labels``, the levels
    kept in the model, base first) instead of numbered 0, 1, ...: one column
    per non-base level in ``params``, ``bse``, ``tvalues`` and ``pvalues``,
    one per level in ``predict``.  Used for non-numeric responses."""

    def _labels(self):
        return getattr(object.__getattribute__(self, "_results"), "outcome_labels", None)

    def _by_equation(self, name: str):
        res = object.__getattribute__(self, "_results")
        out = res.model.data.wrap_output(getattr(res, name), how="columns")
        labels = self._labels()
        if labels is not None and isinstance(out, pd.DataFrame) and out.shape[1] == len(labels) - 1:
            out.columns = pd.Index(list(labels[1:]))
        return out

    params = property(lambda self: self._by_equation("params"), doc="Coefficients, one "
                      "column per non-base response level.")
    bse = property(lambda self: self._by_equation("bse"), doc="Standard errors of params.")
    tvalues = property(lambda self: self._by_equation("tvalues"), doc="z statistics of params.")
    pvalues = property(lambda self: self._by_equation("pvalues"), doc="p-values of params.")

    def predict(self, exog=None, *args, **kwargs):
        """Probabilities of each response level (see ``MultinomialResults.predict``),
        one column per level, named by the level."""
        out = object.__getattribute__(self, "_results").predict(exog, *args, **kwargs)
        labels = self._labels()
        if labels is not None and isinstance(out, pd.DataFrame) and out.shape[1] == len(labels):
            out.columns = pd.Index(list(labels))
        return out


class DPMNLogit(_DPChoiceModel):
    """Differentially private multinomial logit: maximum likelihood on the
    released cells, each weighted by its noisy count.

    See `dp_mnlogit()` for the parameters.
    """

    _name = "DP MNLogit"
    _func = "dp_mnlogit"
    _example_levels = "['a', 'b', 'c']"

    def _refit(self, n_classes: int):
        """The batched refit of the multinomial logit with ``n_classes`` classes."""
        return partial(refit_mnlogit, n_classes=n_classes)

    @checked_keywords
    def fit(self, cov_type: str = "dp", *, method: str = "newton", maxiter: int = 35,
            separation: str = "warn", n_boot: int | None = None, random_state=None,
            cov_kwds: dict | None = None, **kwargs):
        """Fit the frequency-weighted multinomial logit; returns statsmodels
        ``MNLogit`` results (with ``.privacy``) equal to those of the data
        set in which each cell appears ``count`` times.

        Parameters
        ----------
        cov_type : {"dp", "naive"}
            "dp" (default): bootstrap standard errors, z statistics, p-values
            and intervals that include the privacy noise; "naive" (alias
            "nonrobust"): those of the expanded data.  See
            `dpmodels.models.logit.DPLogit.fit()`.
        method : str
            Optimizer, as in ``statsmodels MNLogit.fit`` (default "newton").
        maxiter : int
            Maximum number of iterations.
        separation : {"warn", "raise", "ignore"}
            Before fitting, look for (quasi-)complete separation of the
            released cells; see `dpmodels.models.logit.DPLogit.fit()`.
        n_boot, random_state, cov_kwds
            Bootstrap options of cov_type "dp"; see `dpmodels.models.ols.DPOLS.fit()`.
        **kwargs
            Passed to ``FreqMNLogit.fit`` (``disp`` defaults to False).

        Returns
        -------
        statsmodels.discrete.discrete_model.MultinomialResultsWrapper
            Wrapping a `FreqMNLogitResults`;
            ``predict`` returns one column of probabilities per response level.
            For a non-numeric response (a `DPMNLogitResultsWrapper`) the
            outcome columns are named by the levels: ``params``, ``bse``,
            ``tvalues`` and ``pvalues`` have one column per non-base level,
            ``predict`` one per level, in the declared order; a numeric
            response keeps statsmodels' columns 0, 1, ...

        Warns
        -----
        ReleaseWarning
            A declared response level has no released cell: it is left out of
            the model (its equation cannot be estimated).
        """
        kind, opts = dp_options(cov_type, n_boot, random_state, cov_kwds)
        frame, w, order = self._response_frame()
        if frame.empty or w.sum() <= 0:
            raise self._empty_fit_error()
        axis = self.release.domain.axis(self.response)
        y = frame[self.response].to_numpy()
        if order is None:  # numeric levels, used as they are (statsmodels sorts them)
            values = sorted(axis.level_set)  # the response axis is checked discrete
        else:  # other levels: their positions in the declared order (base: the first)
            values = list(range(len(order)))
        present = [v for v in values if np.any(w[y == v] > 0)]
        labels = values if order is None else order
        absent = [labels[values.index(v)] for v in values if v not in present]
        if len(present) < 2:
            only = labels[values.index(present[0])] if present else None
            raise SeparationError(
                f"every released cell has {self.response} = {only!r}: a multinomial logit "
                "needs at least two response levels with released cells. Use a larger "
                "epsilon, fewer bins or a lower threshold"
            )
        if absent:
            warnings.warn(
                f"no released cell has {self.response} = "
                f"{', '.join(map(repr, absent))}: that level is left out of the model. Use a "
                "larger epsilon, fewer bins or a lower threshold to keep it",
                ReleaseWarning, stacklevel=2,
            )
        model = self._formula_model(FreqMNLogit, frame, weights=w, ylevels=order)
        param_names = flat_param_names(model)
        res = self._fit_model(model, np.asarray(model.endog, dtype=int), int(model.J),
                              param_names, separation,
                              dict(method=method, maxiter=maxiter, **kwargs),
                              flat_ok=kind == "dp")
        kept = [str(model._ynames_map[j]) for j in range(int(model.J))]
        coding = f"{self.response} levels in the order {kept}; base level {kept[0]!r}"
        if absent:
            coding += f"; left out (no released cell): {', '.join(map(repr, absent))}"
        res._results.response_coding = coding
        if order is not None:  # name the outcome columns by the levels, not 0, 1, ...
            res._results.outcome_labels = tuple(model._ynames_map[j] for j in range(int(model.J)))
            res = DPMNLogitResultsWrapper(res._results)
        if kind == "dp":
            classes = np.unique(np.asarray(model.data.orig_endog, dtype=float))
            inference = self._dp_inference(
                res, partial(self._refit(int(model.J)), flat_directions=self._flat),
                np.asarray(res.params).ravel(order="F"), opts, label="DP MNLogit bootstrap",
                classes=classes)
            self._name_unmeasured(res, inference, param_names)
        return res
