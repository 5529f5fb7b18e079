"""What every dp_* model shares: turn (formula, data) into a release and a
cell frame, with no further look at raw rows."""

from __future__ import annotations

import math
import numbers
import warnings
from collections.abc import Mapping, Sequence
from typing import Any, Self

import numpy as np
import pandas as pd
import patsy

from ..core.accountant import Accountant
from ..core.errors import DomainError, DPModelsError, DPModelsTypeError, ReleaseWarning
from ..core.report import noise_epsilon
from ..core.thresholds import AUTO_SPURIOUS_FRACTION, auto_threshold, spurious_mass
from ..data.validation import (
    WEIGHTED_TRANSFORMS,
    check_choice,
    check_eval_env,
    check_formula_transforms,
    check_random_state,
)
from ..domain.axes import Domain
from ..domain.formula import (
    PicklableNamespace,
    build_design,
    caller_namespace,
    equation_names,
    formula_namespace,
    formula_variables,
    user_stacklevel,
)
from ..domain.representatives import (
    DEFAULT_REPRESENTATIVES,
    REPRESENTATIVES,
    cell_frame,
    check_representatives,
    representer_for,
)
from ..inference.binning import BinningDiagnostic, coarse_columns
from ..inference.bootstrap import DEFAULT_N_BOOT, DEFAULT_N_REFIT, CellDesign, parametric_bootstrap
from ..inference.dp_results import attach_dp_inference
from ..inference.information import (
    CONTAMINATION_LIMIT,
    RELEASE_CONTAMINATION_LIMIT,
    absent_levels,
    column_information,
    level_contamination,
    release_contamination,
    unidentified_columns,
)
from ..inference.intervals import BINNING_MIN_BINS_ONE, DEFAULT_INTERVAL, DPInference, resolve_cov_type
from ..inference.rounding import response_rounding
from ..mechanisms.histogram import DEFAULT_A, DEFAULT_MAX_SPURIOUS_CELLS, PrivateHistogram, release
from ..mechanisms.moments import check_finite_design
from .pickling import formula_recipe, keep_design

__all__ = ["DPModel", "FormulaReleaseModel", "formula_env", "dp_options", "weighted_namespace"]

#: Cell frames never hold missing values: skip patsy's per-element NA scan
#: (most of the cost of rebuilding a design on bootstrap replicates).
_NO_NA = patsy.NAAction(on_NA="raise", NA_types=[])

_COV_KWDS = ("n_boot", "random_state", "interval", "binning_check", "population", "n_refit")


def dp_options(cov_type: str, n_boot, random_state, cov_kwds, *, allow_nonrobust: bool = True,
               default_interval: str = DEFAULT_INTERVAL) -> tuple[str, dict]:
    """Resolve the DP layer's covariance arguments.

    Returns ``("dp" | "naive", options)`` with the bootstrap options
    ``n_boot``, ``random_state``, ``interval``, ``binning_check``,
    ``population`` and ``n_refit`` (replicates whose representatives are
    refitted; see `parametric_bootstrap()`), taken
    from the keywords or from ``cov_kwds`` (keywords win).
    """
    kind = resolve_cov_type(cov_type, allow_nonrobust=allow_nonrobust)
    kwds = dict(cov_kwds or {})
    unknown = sorted(set(kwds) - set(_COV_KWDS))
    if unknown:
        raise ValueError(f"unknown cov_kwds {unknown}: the dp covariance takes {list(_COV_KWDS)}")
    if kind == "naive" and (n_boot is not None or random_state is not None or kwds):
        raise ValueError('n_boot, random_state and cov_kwds apply to cov_type="dp" only')
    opts = {
        "n_boot": kwds.get("n_boot", DEFAULT_N_BOOT) if n_boot is None else n_boot,
        "random_state": kwds.get("random_state") if random_state is None else random_state,
        "interval": kwds.get("interval", default_interval),
        "binning_check": bool(kwds.get("binning_check", True)),
        "population": kwds.get("population", "deconvolved"),
        "n_refit": kwds.get("n_refit", DEFAULT_N_REFIT),
    }
    n_refit = opts["n_refit"]
    if isinstance(n_refit, bool) or not isinstance(n_refit, (int, np.integer)) or n_refit < 0:
        raise ValueError(f"cov_kwds n_refit must be an int >= 0, got {n_refit!r}")
    return kind, opts


def _warn_scale_mismatch(formula: str, domain, fv) -> None:
    """Warn when the formula uses a variable only through ``np.log`` /
    ``np.log1p`` / ``np.sqrt`` but the release binned it on the linear scale
    (a release made from a column list, or for another formula): each bin's
    rows sit at representatives of linear bins, so the transform of a skewed
    variable is coarse where its values are dense and the fit is biased
    (randhie's ``np.log1p(mdvis)`` on 4 linear bins of width 25)."""
    for name, scale in fv.scales:
        axis = domain.axis(name)
        if axis.kind != "continuous" or axis.scale != "linear" or scale == "linear":
            continue
        warnings.warn(
            f"{name!r} is binned on the linear scale in this release ({axis.bins} bins of width "
            f"{axis.width:.4g} in {list(axis.bounds)}) but the formula uses np.{scale}({name}): "
            f"np.{scale}({name}) is then only as fine as those linear bins and its coefficients "
            f"are biased where {name} is skewed. Release with the formula instead "
            f"(dpm.release(data, formula={formula!r}, ...) or the dp_* call on the raw rows; "
            f"in the CLI, give the formula, not a column list): {name} is then binned on the "
            f"{scale} scale", ReleaseWarning, stacklevel=user_stacklevel())


def formula_env(kwargs: dict) -> dict:
    """The namespace a dp_* function's formula is evaluated in.

    Pops ``eval_env`` from ``kwargs``: an int counts frames above the dp_*
    function's caller (0, the default, is the caller itself, as in
    statsmodels), a mapping is used as is.
    """
    env = kwargs.pop("eval_env", 0)
    check_eval_env(env)
    if isinstance(env, Mapping):
        return dict(env)
    # frames: 0 caller_namespace, 1 formula_env, 2 the dp_* function, 3 its caller
    return _frame_namespace(int(env) + 2, env)


def _frame_namespace(depth: int, eval_env) -> dict:
    try:
        return caller_namespace(depth + 1)
    except ValueError:  # sys._getframe: the call stack is not that deep
        raise DPModelsError(
            f"eval_env={eval_env} counts more frames than the call stack has: use 0 (the "
            "caller's namespace) or pass a mapping of names") from None


# ---- stateful transforms evaluated on the weighted release -----------------------------
#
# patsy memorizes center(x) / standardize(x) / scale(x) on the frame it is given: for a
# model, one row per cell point.  These versions weight each point by its count, so
# that the fit equals statsmodels on the data set in which every point appears
# ``count`` times; the transform step is patsy's own (subclasses).


def _weighted_rows(x, weights: np.ndarray, name: str) -> np.ndarray:
    from patsy.util import atleast_2d_column_default

    x = np.asarray(atleast_2d_column_default(x), dtype=float)
    if x.shape[0] != weights.size:
        raise DPModelsError(
            f"{name}() is evaluated on the model's cells with their counts as weights; it got "
            f"{x.shape[0]} rows for {weights.size} cells (build designs with the model's own "
            "cells)")
    if not weights.sum() > 0:
        raise DPModelsError(
            f"{name}() in the formula: the released cells' total count is not positive, so "
            "there is no mean to center on; use a larger epsilon, fewer bins or a lower "
            "threshold")
    return x


class _WeightedCenter(patsy.state.Center):
    """patsy's ``center`` with the mean of the weighted cells."""

    _sum: np.ndarray | None  # patsy's Center.__init__ sets None; memorize_chunk the sum
    _count: float

    def __init__(self, weights: np.ndarray):
        super().__init__()
        self._weights = weights

    def memorize_chunk(self, x):
        if self._sum is not None:
            raise DPModelsError("center() must see the model's cells in one piece")
        x = _weighted_rows(x, self._weights, "center")
        self._sum = self._weights @ x
        self._count = float(self._weights.sum())


class _WeightedStandardize(patsy.state.Standardize):
    """patsy's ``standardize`` / ``scale`` with the mean and the variance of
    the weighted cells (``ddof`` counts against the total weight)."""

    # patsy's Standardize.__init__ sets 0/None/None; memorize_chunk the weighted moments
    current_n: float
    current_mean: np.ndarray | None
    current_M2: np.ndarray | None

    def __init__(self, weights: np.ndarray):
        super().__init__()
        self._weights = weights

    def memorize_chunk(self, x, center=True, rescale=True, ddof=0):
        if self.current_mean is not None:
            raise DPModelsError("standardize() must see the model's cells in one piece")
        x = _weighted_rows(x, self._weights, "standardize")
        n = float(self._weights.sum())
        mean = self._weights @ x / n
        m2 = self._weights @ (x - mean) ** 2
        if rescale and not np.all(m2 / (n - ddof) > 0):
            raise DPModelsError(
                "standardize()/scale() in the formula: the variable's variance over the "
                "released cells is not positive, so it cannot be rescaled; use center() or "
                "I(x / c) with a public constant c")
        self.current_n, self.current_mean, self.current_M2 = n, mean, m2


class _WeightedTransform:
    """What a formula's ``center`` / ``standardize`` / ``scale`` resolve to in
    a model's namespace: patsy's stateful transform protocol, with the
    model's cell weights bound in."""

    def __init__(self, name: str, cls, weights: np.ndarray):
        self._name, self._cls, self._weights = name, cls, weights

    def __patsy_stateful_transform__(self):
        return self._cls(self._weights)

    def __call__(self, *args, **kwargs):
        raise DPModelsError(
            f"{self._name}() of a dp model's namespace is a patsy stateful transform: use it "
            "inside the formula only")

    def __repr__(self) -> str:
        return f"<{self._name}: patsy stateful transform weighted by the cell counts>"


def weighted_namespace(namespace: Mapping[str, object], weights) -> dict:
    """``namespace`` in which patsy's ``center``, ``standardize`` and ``scale``
    (when the formula would use patsy's own) memorize on the cells weighted
    by ``weights``, so that a fit on the cells equals the fit on the data
    set in which each cell appears ``weights`` times.

    Parameters
    ----------
    namespace : mapping
        The formula's evaluation namespace.
    weights : array_like
        One weight per row of the frames the formula is memorized on.

    Returns
    -------
    dict
    """
    import patsy.builtins

    weights = np.asarray(weights, dtype=float)
    out = dict(namespace)
    classes = {"center": _WeightedCenter, "standardize": _WeightedStandardize,
               "scale": _WeightedStandardize}
    for name in WEIGHTED_TRANSFORMS:
        patsy_own = getattr(patsy.builtins, name)
        if out.get(name, patsy_own) is patsy_own:
            out[name] = _WeightedTransform(name, classes[name], weights)
    return out


def _inside_bounds(infos, frame: pd.DataFrame, X: np.ndarray, y: np.ndarray,
                   valid: np.ndarray, off: np.ndarray, domain: Domain):
    """The design rows ``off`` (a transform undefined at the point, e.g. the log
    of a density point placed beyond a bound) built again with each bounded
    continuous variable clipped to its public bounds, where every transform
    is defined (the release checked it: ``check_finite_design``).  The data's
    own values lie within the bounds (PRIVACY.md rule 3), so a point beyond
    them stands for rows at the bound.  A row still undefined is left out."""
    import patsy

    rows = np.flatnonzero(off)
    sub = frame.iloc[rows].copy()
    for axis in domain.axes:
        if (axis.kind == "continuous" and axis.unbounded is None and axis.bounds is not None
                and axis.name in sub.columns):
            lo, hi = axis.bounds
            sub[axis.name] = np.clip(sub[axis.name].to_numpy(float), lo, hi)
    X, y, valid = X.copy(), y.copy(), valid.copy()
    try:
        ys, Xs = build_design(infos, sub)
    except patsy.PatsyError:  # pragma: no cover - the rows were built once already
        valid[rows] = False
        return X, y, valid
    X[rows] = np.asarray(Xs, float)
    y[rows] = np.asarray(ys, float)[:, 0]
    valid[rows] = np.isfinite(X[rows]).all(axis=1) & np.isfinite(y[rows])
    return X, y, valid


class DPModel:
    """Base of the dp_* models: holds the formula, the release and the cell frame.

    Subclasses implement `fit()`.  When ``data`` is a
    `PrivateHistogram`, no new release is made and
    no budget is spent: the formula's variables are marginalized from it.

    ``representatives`` (keyword of every dp_* function) chooses the points
    that stand for the rows of each released cell in ``cells``: "density"
    (default), "midpoint" (Lei's Algorithm 1), "shift" or "sheppard"; see
    `dpmodels.domain.representatives`.  Post-processing only.

    Attributes
    ----------
    formula : str
        The model's formula.
    release : PrivateHistogram
        The release the model is fitted on (a `LocalHistogram` for a local
        release).
    cells : pandas.DataFrame
        The released cells marginalized to the formula's variables, at the
        representatives' points, with their noisy counts in `count_column`:
        the data statsmodels fits.
    count_column : str
        The name of the counts' column of `cells`.
    variables : list of str
        The formula's variables.
    representatives : str
        How each cell's rows are represented ("density", "midpoint", "shift"
        or "sheppard").
    budget_spent : float
        The epsilon this model's construction spent: the release's when it
        was made from raw rows, 0 on an existing release.
    """

    _name = "DP model"
    #: False for models whose fit needs non-negative counts (e.g. the check loss of
    #: quantile regression is not convex with negative weights): signed releases
    #: (``threshold=None``) are then refused before anything is released.
    _allows_signed = True
    #: True for models that name the coefficients whose error the bootstrap could
    #: not measure in their own words (the choice models: separation); the
    #: others get `attach_dp_inference()`'s warning.
    names_unmeasured = False
    #: True for models whose response levels are classes (the choice models):
    #: a class the spurious cells dominate moves every coefficient
    #: (`level_contamination()`).
    response_classes = False
    #: True for models whose estimate is not a linear function of the response
    #: (quantile regression): the binning check also moves the response's
    #: points within their bins (`_phase_fit()`).
    response_phase = False

    def __init__(
        self,
        formula: str,
        data: PrivateHistogram,
        *,
        epsilon: float | None = None,
        eval_env: int | Mapping[str, object] = 0,
        representatives: str = DEFAULT_REPRESENTATIVES,
    ):
        """The model of ``formula`` on the histogram release ``data``: nothing is
        read or spent.  To release from raw rows, call the ``dp_*`` function
        (or `from_formula()`)."""
        if not isinstance(data, PrivateHistogram):
            raise DPModelsTypeError(
                f"{type(self).__name__}(formula, data) fits on a release (a PrivateHistogram), "
                f"got {type(data).__name__}: to release from raw rows call the dp_* function "
                f"(e.g. dpm.dp_ols(formula, data, epsilon=...)) or "
                f"{type(self).__name__}.from_formula(formula, data, epsilon=...)")
        namespace = self._prepare(formula, data, epsilon, None, eval_env, representatives)
        if epsilon is not None and not _same_eps(epsilon, data.report.epsilon):
            raise DPModelsError(
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
        _warn_scale_mismatch(formula, data.domain, fv)
        self._attach(data, fv, namespace, budget_spent=0.0)

    @classmethod
    def from_call(cls, call) -> Self:
        """The model of a ``dp_*`` call on the histogram release: ``call`` (a
        `dpmodels.front.routing.Call`) holds the call's formula, data, public
        inputs and options.  Every model class a registry entry names
        (``Mechanism.models``) is built this way, by the same signature."""
        return cls.from_formula(
            call.formula, call.data, epsilon=call.epsilon, bounds=call.bounds,
            levels=call.levels, bins=call.bins, threshold=call.threshold, n=call.n,
            random_state=call.random_state, accountant=call.accountant,
            eval_env=call.namespace, **call.options)

    @classmethod
    def from_formula(
        cls,
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
        representatives: str = DEFAULT_REPRESENTATIVES,
    ):
        """Release the histogram of ``formula``'s variables from the raw rows
        ``data`` (spending ``epsilon``: `dpmodels.release()`), then build the
        model on it; on a release, the model on it (nothing spent).  Every check
        of the public inputs, the model's own included, runs before anything is
        read or spent.  The ``dp_*`` functions call this.

        Parameters
        ----------
        formula : str
            A patsy formula.
        data : pandas.DataFrame, mapping, engine frame or PrivateHistogram
            Raw rows (one release, spending ``epsilon``) or a release (nothing
            spent).
        epsilon : float, optional
            Privacy parameter of the release (required for raw rows).
        bounds : dict of str to (low, high) or Unbounded, optional
            Public bounds of each continuous variable.
        levels : dict of str to list, optional
            Public level sets of the discrete variables.
        bins : int, dict or "auto"
            Equal-width bins per continuous variable.
        threshold : "enhanced", "zero", float or None
            Cell threshold; see `dpmodels.mechanisms.histogram.release()`.
        threshold_A : float
            Lei's constant of the enhanced threshold.
        n : int, optional
            The public number of rows (default: the rows handed in).
        random_state : None, int or Generator
            The release's noise (None: OS secure entropy).
        accountant : Accountant, optional
            Charged with ``epsilon`` before anything is read.
        missing : {"drop", "raise"}
            What to do with rows with a missing value.
        max_spurious_cells : float
            Refuse a domain whose expected number of spurious cells exceeds this.
        eval_env : int or mapping
            Where the formula's names are looked up (frames above the caller, or
            a namespace), as statsmodels.
        representatives : str
            The points that stand for each cell's rows ("density", "midpoint",
            "shift", "sheppard").

        Returns
        -------
        DPModel
            The model of the class it is called on.
        """
        model = cls.__new__(cls)
        check_random_state(random_state)  # before anything else (dpmodels.data.validation)
        namespace = model._prepare(formula, data, epsilon, threshold, eval_env, representatives)
        if isinstance(data, PrivateHistogram):
            return cls(formula, data, epsilon=epsilon, eval_env=namespace,
                       representatives=representatives)

        def domain_check(domain: Domain) -> None:
            model._check_domain(domain, formula_variables(formula, domain.names, namespace))
            check_finite_design(formula, domain, namespace)

        rel = release(
            # None is deliberate: release's check_epsilon refuses it with its own message
            data, formula=formula, epsilon=epsilon,  # type: ignore[arg-type]
            bounds=bounds, levels=levels, bins=bins,
            threshold=threshold, threshold_A=threshold_A, n=n, random_state=random_state,
            accountant=accountant, missing=missing, max_spurious_cells=max_spurious_cells,
            namespace=namespace, domain_check=domain_check,
        )
        fv = formula_variables(formula, rel.domain.names, namespace)
        model._attach(rel, fv, namespace, budget_spent=rel.report.epsilon)
        return model

    def _prepare(self, formula, data, epsilon, threshold, eval_env, representatives) -> dict:
        """The checks of the public inputs every model makes first, and the
        formula's namespace (``eval_env`` frames above the caller of
        ``__init__`` or `from_formula()`)."""
        self.representatives = check_representatives(
            check_choice("representatives", representatives, REPRESENTATIVES))
        check_eval_env(eval_env)
        if not isinstance(formula, str):
            raise DPModelsTypeError(
                f"formula must be a string such as 'y ~ x + C(g)', got {type(formula).__name__}")
        if not self._allows_signed:
            _refuse_signed(self._name, data, epsilon, threshold)
        namespace = formula_namespace(formula, eval_env if isinstance(eval_env, Mapping)
                                      else _frame_namespace(int(eval_env) + 2, eval_env))
        check_formula_transforms(formula, namespace)  # before the release: nothing is spent
        self.formula = formula
        self.namespace = namespace
        return namespace

    def _attach(self, rel: PrivateHistogram, fv, namespace: dict, *, budget_spent: float) -> None:
        """The model's state on the release ``rel``: its cells at the
        representatives' points and the formula's namespace."""
        self.release = rel
        self.budget_spent = budget_spent
        self.variables = fv.names
        self.response_variables = fv.response
        # the one place the cell frame is built: released cells, marginalized to the
        # formula's variables, at the representatives' points (dpmodels.domain.representatives)
        self.representer = representer_for(self.release, fv.names, self.representatives)
        self.cells: pd.DataFrame = cell_frame(self.release, fv.names, self.representatives,
                                              representer=self.representer)
        self.cells = _factors_by_declared_levels(self.cells, self.release.domain,
                                                 fv.factors_only)
        self.count_column = self.release.count_column
        # center/standardize/scale in the formula memorize on the cells weighted by their
        # counts (every design is built on frames with the rows of self.cells)
        # (a name that is also one of the formula's columns is the column, as patsy reads
        # it: a global of that name, perhaps the raw values, is not kept, nor pickled)
        self.namespace = PicklableNamespace(weighted_namespace(
            {k: v for k, v in namespace.items() if k not in fv.names}, self.weights))

    def _formula_model(self, cls, data: pd.DataFrame, **kwargs):
        """``cls.from_formula(self.formula, data, eval_env=self.namespace, **kwargs)``,
        picklable (`keep_design()`);
        a dpmodels error raised while patsy evaluates the formula (e.g. by a weighted
        ``standardize``) is re-raised as itself, not wrapped in a ``PatsyError``."""
        try:
            model = cls.from_formula(self.formula, data=data, eval_env=self.namespace, **kwargs)
        except patsy.PatsyError as exc:
            if isinstance(exc.__cause__, DPModelsError):
                raise exc.__cause__ from None
            raise
        if np.shape(model.endog)[0] != len(data):  # statsmodels dropped cells with NaN
            raise self._undefined_transform(data)
        keep_design(model, formula_recipe(self.formula, data, self.namespace))  # pickles
        return model

    def _undefined_transform(self, data: pd.DataFrame) -> DPModelsError:
        """The error for a formula whose transform is not finite on some released
        cells (statsmodels would drop them from the fit without a word), naming
        the term."""
        term = "a term of the formula"
        try:
            patsy.dmatrices(self.formula, data, eval_env=patsy.EvalEnvironment([self.namespace]),
                            NA_action="raise")
        except patsy.PatsyError as exc:
            if getattr(exc, "origin", None) is not None:
                term = exc.origin.relevant_code()
        return DPModelsError(
            f"{term} is not finite on some of the released cells (e.g. the log of a value at "
            "or below 0 that the declared domain allows: an Unbounded variable's cells reach "
            "far beyond the data): declare bounds on which every transform is finite "
            "(np.log(x) needs a lower bound above 0), or transform the variable before the "
            "release")

    def _check_domain(self, domain, formula_vars) -> None:
        """Hook for subclasses: refuse a formula whose variables' public
        domain does not suit the model (e.g. a response that is not binary).

        Called with the `Domain` and the
        `FormulaVariables` before any row is counted
        or any noise drawn (and on an existing release before marginalizing).
        Raise a `DPModelsError` naming the variable.
        """

    @property
    def privacy(self):
        """The privacy report of the release the model is fitted on."""
        return self.release.report

    @property
    def weights(self) -> np.ndarray:
        """The noisy count of each row of `cells` (the fit's frequency weights)."""
        return self.cells[self.count_column].to_numpy()

    # ---- noise-aware inference (post-processing of the release) ------------------------
    def _prepare_cells(self, frame: pd.DataFrame) -> pd.DataFrame:
        """The cell frame as the model's formula sees it (hook: the choice
        models code a non-numeric response)."""
        return frame

    def _design_builder(self, res, classes: np.ndarray | None = None):
        """``build(frame) -> (X, y, valid)`` for `CellDesign`:
        the fitted model's patsy design applied to new cells of the same marginal.

        ``classes``: for a multinomial response, the response values of the
        fitted model's classes, in class order; ``y`` is then the class index
        (cells of another level are not valid).
        """
        import patsy

        env = patsy.EvalEnvironment([self.namespace])
        base = self._prepare_cells(self.cells.drop(columns=[self.count_column]))
        y_dm, X_dm = patsy.dmatrices(self.formula, base, eval_env=env, NA_action="raise")
        names = list(np.atleast_1d(res.model.exog_names))
        if list(X_dm.design_info.column_names) != names or y_dm.shape[1] != 1:
            raise DPModelsError(  # pragma: no cover - a patsy/statsmodels mismatch
                "cannot rebuild the model's design on replicate cells: columns "
                f"{X_dm.design_info.column_names} differ from the fitted {names}")
        infos = [y_dm.design_info, X_dm.design_info]

        def build(frame: pd.DataFrame):
            frame = self._prepare_cells(frame)
            try:
                y, X = build_design(infos, frame)
                valid = np.ones(len(frame), bool)
            except patsy.PatsyError:  # e.g. a level the fitted design never saw
                X = np.zeros((len(frame), len(names)))
                y = np.zeros((len(frame), 1))
                valid = np.zeros(len(frame), bool)
                for i in range(len(frame)):
                    try:
                        yi, Xi = patsy.build_design_matrices(infos, frame.iloc[i:i + 1],
                                                             NA_action="raise")
                    except patsy.PatsyError:
                        continue
                    y[i], X[i], valid[i] = np.asarray(yi)[0], np.asarray(Xi)[0], True
            y = np.asarray(y, dtype=float)[:, 0]
            X = np.asarray(X, dtype=float)
            off = valid & ~(np.isfinite(X).all(axis=1) & np.isfinite(y))
            if off.any():
                X, y, valid = _inside_bounds(infos, frame, X, y, valid, off,
                                             self.release.domain)
            if classes is not None:
                pos = np.searchsorted(classes, y)
                pos = np.minimum(pos, len(classes) - 1)
                match = classes[pos] == y
                valid = valid & match
                y = np.where(match, pos, 0).astype(float)
            return X, y, valid

        return build

    def _dp_inference(self, res, refit, start, opts: dict, *, label: str,
                      classes: np.ndarray | None = None) -> DPInference:
        """Run the parametric bootstrap for the fitted results ``res`` and
        attach it as their covariance (cov_type "dp")."""
        build = self._design_builder(res, classes=classes)
        design = CellDesign(self.release.domain, self.variables, build,
                            representer=self.representer)
        start = np.asarray(start, dtype=float)

        # least squares on a continuous response: what its rounding to bins can do
        rounding = (self._response_rounding(self.response_variables[0])
                    if opts["binning_check"] and not self.response_phase
                    and len(self.response_variables) == 1 else None)
        binning = (BinningDiagnostic(self.release, self.variables, self.cells, self.count_column,
                                     self.representer, build, refit, start,
                                     response=self.response_variables,
                                     phase=self.response_phase, rounding=rounding)
                   if opts["binning_check"] else None)

        inference = parametric_bootstrap(
            self.release, design, refit, start, n_boot=opts["n_boot"],
            random_state=opts["random_state"], interval=opts["interval"], label=label,
            binning=binning, population=opts["population"], n_refit=opts["n_refit"],
            **self._uninformative(res, build, start.size, coarse=opts["binning_check"],
                                  rounding=rounding))
        # a model that names the unmeasured coefficients in its own words warns itself
        attach_dp_inference(res, inference, warn=not self.names_unmeasured)
        return inference

    def _uninformative(self, res, build, n_params: int, *, coarse: bool = True,
                       rounding=None) -> dict:
        """Coefficients the released cells do not identify
        (`unidentified_columns()`: a declared level
        without a released cell), that the release carries no information about
        (`column_information()`) or that rest on a
        factor level or response class its spurious cells dominate
        (`level_contamination()`), flattened as
        ``params`` (equation by equation), or that a variable cut into too few
        bins for the binning check moves unmeasured
        (`coarse_columns()`, with ``coarse``), that a
        release mostly of spurious rows does not measure
        (`release_contamination()`) or that a
        response in too few of its bins does not measure (``rounding``, a
        `RoundingBound`), with a
        `ReleaseWarning` naming them: the bootstrap's
        ``uninformative`` and ``flags_explain_failures`` arguments."""
        names = list(np.atleast_1d(res.model.exog_names))
        k = len(names)
        if n_params % k:
            return {"uninformative": None}
        eqs = n_params // k
        labels = flat_param_names(res.model)
        loose = np.tile(unidentified_columns(self.release, self.variables, build, k)
                        | self._flat_columns(k), eqs)
        if loose.any():
            warnings.warn(
                f"{_joined(labels, loose)} {'is' if loose.sum() == 1 else 'are'} not identified "
                f"by the released cells ({self.unidentified_why()}): the estimate is one of many "
                "that fit them equally well. Their standard errors are set to infinity (p = 1, "
                "unbounded intervals); use a larger epsilon, fewer bins or fewer variables, "
                "merge levels, or choose a reference level the release holds "
                "(C(x, Treatment(level)))",
                ReleaseWarning, stacklevel=user_stacklevel())
        info = column_information(self.release, self.variables, build, k)
        empty = np.tile(info.uninformative if info is not None else np.zeros(k, bool), eqs)
        empty &= ~loose
        if empty.any():
            warnings.warn(
                f"the release carries no information about {_joined(labels, empty)}: the "
                "noisy count behind them is not above what the threshold's spurious cells alone "
                "put there. Their standard errors are set to infinity (p = 1, unbounded "
                "intervals); use a larger epsilon, fewer bins or fewer variables",
                ReleaseWarning, stacklevel=user_stacklevel())
        mixed = level_contamination(self.release, self.variables, build, k,
                                    response_classes=self.response_classes)
        crowded = np.zeros(n_params, bool)
        if mixed is not None:
            crowded = np.tile(mixed.flagged, eqs)
            crowded |= self._class_equations(res, mixed.classes, k, eqs)
            crowded &= ~empty & ~loose
        if crowded.any():
            assert mixed is not None  # crowded stays all False without a contamination
            warnings.warn(
                f"{_joined(labels, crowded)} rest on factor levels or response classes whose "
                f"released rows are expected to be more than {CONTAMINATION_LIMIT:.0%} spurious "
                f"(the threshold's pure-noise cells): {mixed.describe()}. Uniform noise rows "
                "move such a level's response by an amount no fit on the release can measure, "
                "so their standard errors are set to infinity (p = 1, unbounded intervals). "
                + self._fewer_spurious_hint(),
                ReleaseWarning, stacklevel=user_stacklevel())
        binned = np.zeros(n_params, bool)
        if coarse:
            few, cols = coarse_columns(self.release, self.variables, build, k)
            binned = np.tile(cols, eqs) & ~empty & ~crowded & ~loose
        if binned.any():
            warnings.warn(
                f"{', '.join(few)} {'is' if len(few) == 1 else 'are'} cut into fewer than "
                f"{BINNING_MIN_BINS_ONE} bins, too few for the binning check to measure what the "
                f"binning does to {_joined(labels, binned)}: their standard errors are set to "
                "infinity (p = 1, unbounded intervals). " + self._more_bins_hint(few),
                ReleaseWarning, stacklevel=user_stacklevel())
        swamped = np.zeros(n_params, bool)
        share = release_contamination(self.release, self.variables)
        if share is not None and share >= RELEASE_CONTAMINATION_LIMIT:
            swamped = ~(loose | empty | crowded | binned)
        if swamped.any():
            warnings.warn(
                f"an expected {share:.0%} of the released rows are the threshold's pure-noise "
                f"cells (more than {RELEASE_CONTAMINATION_LIMIT:.0%}: more noise rows than data), "
                "which pull every slope towards 0 by an amount no fit on the release can "
                f"measure, so the release carries no information about {_joined(labels, swamped)}"
                ": their standard errors are set to infinity (p = 1, unbounded intervals). "
                + self._fewer_spurious_hint(),
                ReleaseWarning, stacklevel=user_stacklevel())
        rough = np.zeros(n_params, bool)
        bound = rounding
        if bound is not None and bound.unmeasured:
            rough = ~(loose | empty | crowded | binned | swamped)
        if rough.any():
            warnings.warn(
                f"{bound.variable} is binned too coarsely for its spread to measure "
                f"{_joined(labels, rough)}: its released rows (the threshold's expected noise "
                f"rows taken out) sit in {bound.occupied} of its {bound.bins} bins"
                + (f", and a normal fitted to them has a standard deviation of "
                   f"{bound.spread:.2f} bins" if bound.occupied > 2 else "")
                + f", so rounding {bound.variable} to its bins can scale every least-squares "
                "slope by a factor the release cannot bound (dpmodels.inference.rounding). Their standard "
                "errors are set to infinity (p = 1, unbounded intervals); declare tighter bounds "
                f"for {bound.variable} or more bins "
                f"(e.g. bins={{{bound.variable!r}: {bound.suggested_bins()}}})",
                ReleaseWarning, stacklevel=user_stacklevel())
        out = loose | empty | crowded | binned | rough | swamped
        reasons = [(loose, f"not identified by the released cells ({self.unidentified_why()})"),
                   (empty, "the noisy count behind them is not above what the threshold's "
                           "spurious cells alone put there"),
                   (crowded, "they rest on factor levels or response classes the threshold's "
                             "spurious cells dominate"),
                   (binned, f"{', '.join(few) if binned.any() else ''} cut into too few bins "
                            "for the binning check"),
                   (swamped, "the release is mostly the threshold's pure-noise rows"),
                   (rough, f"{bound.variable if rough.any() else ''} binned too coarsely for its "
                           "spread (rounding)")]
        said = [(mask, why) for mask, why in reasons if mask.any()]
        why = (said[0][1] if len(said) == 1 else
               "; ".join(f"{_joined(labels, mask)}: {text}" for mask, text in said))
        return {"uninformative": out if out.any() else None,
                "flags_explain_failures": bool(empty.any() or loose.any()),
                "no_information_why": why if out.any() else ""}

    def _response_rounding(self, response: str):
        """What rounding the response to its bins can do to the slopes
        (`response_rounding()`)."""
        return response_rounding(self.release, response)

    def _more_bins_hint(self, few) -> str:
        """What to do about the variables ``few`` cut into too few bins."""
        return ("Pass more bins (e.g. bins={"
                + ", ".join(f"{v!r}: {BINNING_MIN_BINS_ONE + 1}" for v in few)
                + "}; the cells grow with them), fewer variables, a larger epsilon, or "
                "method='auto'")

    def _flat_columns(self, k: int) -> np.ndarray:
        """Design columns the fit itself held along flat directions of the
        likelihood (a model that fits rank-deficient designs says which);
        none here."""
        return np.zeros(k, bool)

    def unidentified_why(self) -> str:
        """Why the released cells leave coefficients unidentified: the declared
        levels no released cell holds, or collinear columns."""
        absent = absent_levels(self.release, self.variables)
        if absent:
            return "no released cell has " + ", ".join(absent)
        return "some design columns are collinear on them"

    @staticmethod
    def _class_equations(res, classes: tuple, k: int, eqs: int) -> np.ndarray:
        """Flattened parameters moved by the response ``classes``: every
        equation for the reference class (or a binary response), else the
        class's own equation."""
        out = np.zeros(k * eqs, bool)
        if not classes:
            return out
        ymap = getattr(res.model, "_ynames_map", None)
        if ymap is None:
            out[:] = True
            return out
        position = {str(v): j for j, v in ymap.items()}
        for c in classes:
            j = position.get(str(c))
            if j is None:  # a class the fit left out moves nothing it reports
                continue
            if j == 0:
                out[:] = True
            else:
                out[(j - 1) * k:j * k] = True
        return out

    def _fewer_spurious_hint(self) -> str:
        """What to pass for fewer spurious cells (the auto threshold's cut)."""
        rep = self.release.report
        generic = "Use a larger epsilon, fewer bins or fewer variables"
        if rep.threshold_rule == "auto" or rep.threshold is None or rep.threshold_A is None:
            return generic + "."
        k = auto_threshold(int(rep.domain_cells), int(rep.n), noise_epsilon(rep),
                           float(rep.threshold_A))
        if k <= math.ceil(rep.threshold):
            return generic + "."
        mass = spurious_mass(k, int(rep.domain_cells), noise_epsilon(rep))
        return (f'threshold="auto" cuts at {k} here (this release: {math.ceil(rep.threshold)}), '
                f"for an expected {mass:,.0f} spurious rows in all (at most "
                f"{AUTO_SPURIOUS_FRACTION:.0%} of n); or use a larger epsilon, fewer bins or "
                "fewer variables.")

    def __repr__(self) -> str:
        return (f"{type(self).__name__}({self.formula!r}, epsilon={self.release.report.epsilon:g}, "
                f"cells={len(self.cells):,})")


def flat_param_names(model) -> list[str]:
    """A fitted statsmodels model's parameters flattened equation by equation,
    as the warnings and summaries name them: ``x (y=1)`` for a multinomial
    (also with one equation left), the exog names otherwise."""
    ymap = getattr(model, "_ynames_map", None)
    if ymap is None:
        return list(model.exog_names)
    return equation_names(model.exog_names, model.endog_names,
                          [ymap[j] for j in range(int(model.J))])


def _joined(labels: list[str], mask: np.ndarray) -> str:
    return ", ".join(nm for nm, u in zip(labels, mask) if u)


def _factors_by_declared_levels(cells: pd.DataFrame, domain, names) -> pd.DataFrame:
    """The cell frame with every variable the formula reads only inside
    ``C(...)`` and declared with numeric levels as a Categorical of all its
    declared levels.  Non-numeric levels already are (the cell frame's rule);
    numeric ones were plain numbers, from which patsy takes the levels the
    released cells happen to hold: a level whose cells the threshold removed
    vanished from the design without a word, and when it was the reference
    level every contrast silently changed its base (``C(educ)[T.3]`` became
    educ 3 against 2, not against 1; anes96, epsilon 1).  With the declared
    levels the design is the one the declaration defines, whatever was
    released: a level without released cells is a column of zeros, which the
    fit reports, and the replicate cells of the bootstrap may hold any
    declared level."""
    out = None
    for v in names:
        if v not in cells.columns or isinstance(cells[v].dtype, pd.CategoricalDtype):
            continue
        levels = domain.axis(v).factor_levels
        if levels is None:
            continue
        out = cells.copy() if out is None else out
        out[v] = pd.Categorical(cells[v].to_numpy(), categories=levels)
    return cells if out is None else out


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


class FormulaReleaseModel:
    """Base of the models fitted on a release that answers one formula (the
    moments and the Newton steps): the release is made from raw rows, or
    taken as given (no budget spent) when it was made for the same formula.
    Subclasses set ``_release_type`` and ``_release_fn`` and implement ``fit``.

    Attributes
    ----------
    formula : str
        The model's formula.
    release : PrivateMoments, PrivateNewton or PrivateQuantileSteps
        The release the model is fitted on.
    method : str
        The ``method=`` that names the mechanism ("moments", "newton").
    budget_spent : float
        The epsilon this model's construction spent (0 on an existing
        release).
    """

    _name = "DP model"
    method = ""
    _release_type: type[Any] = object
    _release_fn: Any = None  # the subclass's release function (a staticmethod)

    def __init__(self, formula: str, data):
        """The model of ``formula`` on the release ``data`` (made for that
        formula): nothing is read or spent.  To release from raw rows, call the
        ``dp_*`` function (or `from_formula()`)."""
        if not isinstance(data, self._release_type):
            raise DPModelsTypeError(
                f"{type(self).__name__}(formula, data) fits on a release (a "
                f"{self._release_type.__name__}), got {type(data).__name__}: to release from raw "
                "rows call the dp_* function (e.g. dpm.dp_ols(formula, data, epsilon=...)) or "
                f"{type(self).__name__}.from_formula(formula, data, epsilon=...)")
        if data.space.formula != formula:
            raise DPModelsError(
                f"this release was made for {data.space.formula!r}; a {self.method} "
                f"release answers its own formula only (got {formula!r})")
        self.formula = formula
        self.release, self.budget_spent = data, 0.0

    @classmethod
    def from_call(cls, call) -> Self:
        """The model of a ``dp_*`` call (a `dpmodels.front.routing.Call`) on this
        class's release: `from_formula()` with the call's public inputs, its
        ``missing=`` option and the class's own release options
        (`call_options()`)."""
        return cls.from_formula(
            call.formula, call.data, epsilon=call.epsilon, bounds=call.bounds,
            levels=call.levels, n=call.n, random_state=call.random_state,
            accountant=call.accountant, missing=call.options.pop("missing", "drop"),
            namespace=call.namespace, **cls.call_options(call))

    @classmethod
    def call_options(cls, call) -> dict:
        """The options of ``call`` this class's release function takes besides
        the public inputs (none here)."""
        return {}

    @classmethod
    def from_formula(cls, formula: str, data, *, epsilon=None, bounds=None, levels=None, n=None,
                     random_state=None, accountant=None, missing="drop", namespace=None,
                     domain_check=None, **release_options):
        """Make the release of ``formula`` from the raw rows ``data`` (spending
        ``epsilon``), then build the model on it; on a release, the model on it
        (nothing spent).  The ``dp_*`` functions call this.

        Parameters
        ----------
        formula : str
            A patsy formula.
        data : pandas.DataFrame, mapping, engine frame or release
            Raw rows (one release, spending ``epsilon``) or a release of this
            formula (nothing spent).
        epsilon : float, optional
            Privacy parameter of the release (required for raw rows).
        bounds : dict of str to (low, high), optional
            Public bounds of each continuous variable.
        levels : dict of str to list, optional
            Public level sets of the discrete variables.
        n : int, optional
            The public number of rows (default: the rows handed in).
        random_state : None, int or Generator
            The release's noise (None: OS secure entropy).
        accountant : Accountant, optional
            Charged with ``epsilon`` before anything is read.
        missing : {"drop", "raise"}
            What to do with rows with a missing value.
        namespace : mapping, optional
            Where the formula's names are looked up.
        domain_check : callable, optional
            The model's own check of the public domain, run before any row is
            read.
        **release_options
            Passed to the release function (e.g. ``q`` of the quantile steps).

        Returns
        -------
        FormulaReleaseModel
            The model of the class it is called on.
        """
        if isinstance(data, cls._release_type):
            return cls(formula, data)
        rel = cls._release_fn(
            data, formula=formula, epsilon=epsilon, bounds=bounds, levels=levels, n=n,
            random_state=random_state, accountant=accountant, missing=missing,
            namespace=namespace, domain_check=domain_check, **release_options)
        model = cls(formula, rel)
        model.budget_spent = rel.report.epsilon
        return model

    @property
    def privacy(self):
        """The privacy report of the release."""
        return self.release.report

    def __repr__(self) -> str:
        return (f"{type(self).__name__}({self.formula!r}, "
                f"epsilon={self.release.report.epsilon:g}, q={self.release.space.q})")
