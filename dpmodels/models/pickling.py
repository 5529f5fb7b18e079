"""Pickling the statsmodels models that dpmodels builds.

A statsmodels model built from a formula carries patsy's design
(``model.data.model_spec``), which patsy cannot pickle (pydata/patsy#26).
statsmodels drops it when pickling and, when unpickling, rebuilds it by
evaluating the formula again in the *caller's stack frames*: for dpmodels'
models that fails (the formula's ``np`` or weighted ``standardize`` live in
the model's namespace, not in any frame; a Newton-type model has no data
frame at all), so ``pickle.loads`` raised and results could not be saved.

`keep_design()` gives a model's data a recipe for its design instead:
the formula, the public frame patsy memorized it on (the released cells, or
the release's public grid) and the namespace, in a form that pickles
(`PicklableNamespace`).  Unpickling rebuilds the
same design from it.  Post-processing only: nothing but the release and
public inputs is kept.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pandas as pd
import patsy
from statsmodels.base.data import PandasData

from ..domain.formula import PicklableNamespace

if TYPE_CHECKING:
    from ..mechanisms.moments import DesignSpace

__all__ = ["FormulaRecipe", "SpaceRecipe", "keep_design"]


@dataclass(frozen=True, eq=False)
class FormulaRecipe:
    """The design of ``formula`` as patsy memorizes it on ``frame`` (the
    frame the model was fitted on: released cells, never raw rows)."""

    formula: str
    frame: pd.DataFrame
    namespace: PicklableNamespace

    def x_info(self) -> patsy.DesignInfo:
        env = patsy.EvalEnvironment([dict(self.namespace)])
        if "~" in self.formula:
            return patsy.dmatrices(self.formula, self.frame, eval_env=env,
                                   NA_action="raise")[1].design_info
        return patsy.dmatrix(self.formula, self.frame, eval_env=env,
                             NA_action="raise").design_info


@dataclass(frozen=True, eq=False)
class SpaceRecipe:
    """The design of a moments-type release's public design space (which
    rebuilds itself when unpickled: `dpmodels.mechanisms.moments.DesignSpace`)."""

    space: DesignSpace

    def x_info(self) -> patsy.DesignInfo:
        return self.space.infos[1]


class PicklablePandasData(PandasData):
    """statsmodels' ``PandasData`` whose design is rebuilt from its
    ``design_recipe`` when unpickled (statsmodels' own rebuild searches the
    caller's stack frames for the formula's names)."""

    design_recipe: Any = None

    def __setstate__(self, d: dict) -> None:
        recipe = d.get("design_recipe")
        if recipe is None or "restore_model_spec" not in d:
            super().__setstate__(d)
            return
        d = dict(d)
        del d["restore_model_spec"]
        self.__dict__.update(d)
        self.model_spec = recipe.x_info()


def keep_design(model, recipe: FormulaRecipe | SpaceRecipe) -> None:
    """Give ``model``'s data the recipe that rebuilds its design when unpickled
    (a model whose data is not statsmodels' plain ``PandasData`` is left as it is)."""
    if type(model.data) is PandasData:
        model.data.__class__ = PicklablePandasData
    if isinstance(model.data, PicklablePandasData):
        model.data.design_recipe = recipe


def formula_recipe(formula: str, frame: pd.DataFrame, namespace: Mapping) -> FormulaRecipe:
    """`FormulaRecipe` with ``namespace`` in its picklable form."""
    return FormulaRecipe(formula, frame, PicklableNamespace(namespace))
