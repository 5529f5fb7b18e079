"""What every dp_* model shares: turn (formula, data) into a release and a
cell frame, with no further look at raw rows."""

from __future__ import annotations

import math
import numbers
from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from ..accountant import Accountant
from ..errors import DomainError, DPModelsError
from ..formula import caller_namespace, formula_variables
from ..release import DEFAULT_A, DEFAULT_MAX_SPURIOUS_CELLS, PrivateHistogram, release

__all__ = ["DPModel", "formula_env"]


def formula_env(kwargs: dict) -> dict:
    """The namespace a dp_* function's formula is evaluated in.

    Pops ``eval_env`` from ``kwargs``: an int counts frames above the dp_*
    function's caller (0, the default, is the caller itself, as in
    statsmodels), a mapping is used as is.
    """
    env = kwargs.pop("eval_env", 0)
    if isinstance(env, int):
        # frames: 0 caller_namespace, 1 formula_env, 2 the dp_* function, 3 its caller
        return caller_namespace(env + 2)
    return dict(env)


class DPModel:
    """Base of the dp_* models: holds the formula, the release and the cell frame.

    Subclasses implement :meth:`fit`.  When ``data`` is a
    :class:`~dpmodels.release.PrivateHistogram`, no new release is made and
    no budget is spent: the formula's variables are marginalized from it.
    """

    _name = "DP model"
    #: False for models whose fit needs non-negative counts (e.g. the check loss of
    #: quantile regression is not convex with negative weights): signed releases
    #: (``threshold=None``) are then refused before anything is released.
    _allows_signed = True

    def __init__(
        self,
        formula: str,
        data,
        *,
        epsilon: float | None = None,
        bounds: Mapping[str, tuple[float, float]] | None = None,
        levels: Mapping[str, Sequence] | None = None,
        bins: int | Mapping[str, int] | str = "auto",
        threshold: str | float | None = "enhanced",
        threshold_A: float = DEFAULT_A,
        n: int | None = None,
        random_state: None | int | np.random.Generator = None,
        accountant: Accountant | None = None,
        missing: str = "drop",
        max_spurious_cells: float = DEFAULT_MAX_SPURIOUS_CELLS,
        eval_env: int | Mapping[str, object] = 0,
    ):
        if not self._allows_signed:
            _refuse_signed(self._name, data, epsilon, threshold)
        namespace = caller_namespace(eval_env + 1) if isinstance(eval_env, int) else dict(eval_env)
        self.formula = formula
        self.namespace = namespace
        if isinstance(data, PrivateHistogram):
            if epsilon is not None and not _same_eps(epsilon, data.report.epsilon):
                raise ValueError(
                    f"data is a release made with epsilon={data.report.epsilon:g}; a fit on it "
                    f"cannot change that (got epsilon={epsilon!r}): leave epsilon out"
                )
            fv = formula_variables(formula, data.domain.names, namespace)
            for name in fv.discrete:
                if data.domain.axis(name).kind != "discrete":
                    raise DomainError(
                        f"C({name}) needs a discrete variable, but {name!r} is continuous (binned) "
                        "in this release"
                    )
            self._check_domain(data.domain, fv)
            self.release = data
            self.budget_spent = 0.0
        else:
            self.release = release(
                data, formula=formula, epsilon=epsilon, bounds=bounds, levels=levels, bins=bins,
                threshold=threshold, threshold_A=threshold_A, n=n, random_state=random_state,
                accountant=accountant, missing=missing, max_spurious_cells=max_spurious_cells,
                namespace=namespace,
                domain_check=lambda domain: self._check_domain(
                    domain, formula_variables(formula, domain.names, namespace)),
            )
            fv = formula_variables(formula, self.release.domain.names, namespace)
            self.budget_spent = self.release.report.epsilon
        self.variables = fv.names
        self.cells: pd.DataFrame = self.release.marginal(fv.names)
        self.count_column = self.release.count_column

    def _check_domain(self, domain, formula_vars) -> None:
        """Hook for subclasses: refuse a formula whose variables' public
        domain does not suit the model (e.g. a response that is not binary).

        Called with the :class:`~dpmodels.domain.Domain` and the
        :class:`~dpmodels.formula.FormulaVariables` before any row is counted
        or any noise drawn (and on an existing release before marginalizing).
        Raise a :class:`~dpmodels.errors.DPModelsError` naming the variable.
        """

    @property
    def privacy(self):
        """The privacy report of the release the model is fitted on."""
        return self.release.report

    @property
    def weights(self) -> np.ndarray:
        return self.cells[self.count_column].to_numpy()

    def __repr__(self) -> str:
        return (f"{type(self).__name__}({self.formula!r}, epsilon={self.release.report.epsilon:g}, "
                f"cells={len(self.cells):,})")


def _refuse_signed(name: str, data, epsilon, threshold) -> None:
    """Raise before any release if the model would be fitted on signed counts."""
    if isinstance(data, PrivateHistogram):
        signed = (data.report.private and data.report.threshold is None) or bool(
            data.counts.size and data.counts.min() < 0)
    else:
        exact = isinstance(epsilon, numbers.Real) and math.isinf(epsilon)
        signed = threshold is None and not exact
    if signed:
        raise DPModelsError(
            f"{name} needs non-negative cell counts, but a release with threshold=None has "
            "signed noisy counts (Lei's Algorithm 1): use threshold='enhanced' (the default), "
            "'zero' or a number"
        )


def _same_eps(a, b) -> bool:
    try:
        return math.isclose(float(a), float(b)) or (math.isinf(a) and math.isinf(b))
    except (TypeError, ValueError):
        return False
