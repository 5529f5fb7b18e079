"""What every dp_* model shares: turn (formula, data) into a release and a
cell frame, with no further look at raw rows."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from ..accountant import Accountant
from ..errors import DomainError
from ..formula import caller_namespace, formula_variables
from ..release import DEFAULT_A, DEFAULT_MAX_SPURIOUS_CELLS, PrivateHistogram, release

__all__ = ["DPModel"]


class DPModel:
    """Base of the dp_* models: holds the formula, the release and the cell frame.

    Subclasses implement :meth:`fit`.  When ``data`` is a
    :class:`~dpmodels.release.PrivateHistogram`, no new release is made and
    no budget is spent: the formula's variables are marginalized from it.
    """

    _name = "DP model"

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
            self.release = data
            self.budget_spent = 0.0
        else:
            self.release = release(
                data, formula=formula, epsilon=epsilon, bounds=bounds, levels=levels, bins=bins,
                threshold=threshold, threshold_A=threshold_A, n=n, random_state=random_state,
                accountant=accountant, missing=missing, max_spurious_cells=max_spurious_cells,
                namespace=namespace,
            )
            fv = formula_variables(formula, self.release.domain.names, namespace)
            self.budget_spent = self.release.report.epsilon
        self.variables = fv.names
        self.cells: pd.DataFrame = self.release.marginal(fv.names)
        self.count_column = self.release.count_column

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


def _same_eps(a, b) -> bool:
    try:
        return math.isclose(float(a), float(b)) or (math.isinf(a) and math.isinf(b))
    except (TypeError, ValueError):
        return False
