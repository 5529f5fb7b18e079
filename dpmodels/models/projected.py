"""Projected histograms (Vinterbo 2012, §2.3): private feature selection, then
the histogram of the projection, then the logit / multinomial logit on it
(the paper's HLR and HMLR).

``dp_logit(formula, data, epsilon=..., select=k)`` (and ``dp_mnlogit``):

1. **Selection** (``eps_p = (1 - gamma) epsilon``): PRIVATEKD
   (`dpmodels.mechanisms.selection`) chooses ``k`` of the formula's raw predictors
   for the response.  Replace-one neighbours, public n; the pair-count score
   has sensitivity ``2(n-1)``; exact exponential mechanism with
   ``eps' = eps_p / (4k)`` per step on ``F = U/n``; ``eps_p``-DP in total.
2. **Histogram** (``eps_h = epsilon - eps_p``): the usual release
   (`dpmodels.release()`) of the response and the selected variables:
   L1 sensitivity 2, discrete Laplace noise of scale ``2/eps_h`` on every
   cell, threshold; ``eps_h``-DP.
3. **Fit** (post-processing): the histogram logit / mnlogit of the formula
   restricted to the terms whose variables were all selected.  The terms of
   dropped variables are *not estimated* (they are absent from the results,
   not zeros).

Sequential composition: ``eps_p + eps_h <= epsilon`` (checked in exact
rational arithmetic); both parts are reported.  ``k`` and ``gamma`` are
estimated from public inputs (§2.3; `dpmodels.mechanisms.selection.estimate_k()`,
`dpmodels.mechanisms.selection.estimate_gamma()`) unless given.  ``select`` may also
be a list of variables (a public choice: nothing is spent on selection, the
histogram gets all of epsilon) or a `FeatureSelection`
made earlier (its epsilon was charged then; here only the histogram's).

One random source serves both steps (a seed gives one reproducible stream,
never the same words twice).
"""

from __future__ import annotations

import itertools
import math
import numbers
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import pandas as pd
import patsy

from ..core.budget import exact_parts, parts_fit, split_epsilon
from ..core.errors import DomainTooLargeError, DPModelsError, DPModelsTypeError, NotPrivateWarning
from ..core.exact import MIN_EPSILON
from ..core.noise import discrete_laplace_sf
from ..core.randomness import random_source
from ..core.report import PrivacyReport, ReleaseReport, opening_rows
from ..data.clipping import CLIP_SHARE, clipping_axes
from ..data.columns import columns_of, dtype_of, nrows
from ..data.engines import source_for
from ..data.validation import (
    check_choice,
    check_epsilon,
    check_eval_env,
    check_formula_transforms,
    check_noise_cells,
    check_random_state,
    check_release_arguments,
)
from ..domain.axes import build_domain
from ..domain.formula import formula_variables, user_stacklevel
from ..domain.representatives import REPRESENTATIVES, check_representatives
from ..mechanisms.histogram import DEFAULT_A, DEFAULT_MAX_SPURIOUS_CELLS, PrivateHistogram, resolve_threshold
from ..mechanisms.pipeline import run_release
from ..mechanisms.selection import (
    FeatureSelection,
    SelectionReport,
    estimate_gamma,
    estimate_k,
    select_coded,
    selection_domain,
    selection_rows,
)
from .base import DPModel, _frame_namespace, _refuse_signed
from .logit import DPLogit, _DPChoiceModel
from .mnlogit import DPMNLogit

__all__ = ["ProjectedReport", "DPProjectedLogit", "DPProjectedMNLogit", "restrict_formula",
           "build_projected"]

#: Above this many k-subsets, the pre-release size check uses the k largest candidates only.
_MAX_SUBSETS_CHECKED = 256


@dataclass(frozen=True)
class ProjectedReport(ReleaseReport):
    """Privacy report of a projected-histogram model: the selection and the
    histogram, and how epsilon was split between them.

    Attributes
    ----------
    epsilon : float
        The epsilon the model depends on in total: its selection and its
        histogram, an earlier selection passed as ``select=`` included (the
        smallest float at least the parts' exact sum); ``inf`` when not private.
    private : bool
        False only for ``epsilon=inf`` (no noise: not private).
    mechanism : str
        The mechanism's name, as the summary's privacy block prints it.
    split : tuple of (str, float)
        The parts of epsilon, an earlier selection's included (they add up to
        at most ``epsilon``).
    gamma : float or None
        The histogram's share (None when nothing was selected privately here).
    selection_source : str
        How the variables were chosen: a private selection made here, an
        earlier selection passed as ``select=``, or all predictors (no
        selection, no budget).
    selected, dropped : tuple of str
        The candidates kept in the formula, and the others.
    formula : str
        The formula fitted: the caller's, restricted to the selected variables.
    seeded : bool
        True when a ``random_state`` made any part reproducible: the histogram's
        noise, the selection made here or an earlier selection.
    n : int
        The public number of rows.
    noisy_total : int
        The histogram's noisy total.
    selection : SelectionReport or None
        The selection's own report (None when the selection was not made here).
    histogram : PrivacyReport
        The report of the histogram of the selected variables.
    earlier : SelectionReport or None
        The report of an earlier selection passed as ``select=`` (its epsilon
        was charged when it was made, and the result depends on it too).
    """

    title = "Privacy report (projected histogram)"
    html_title = "Privacy report"

    epsilon: float
    private: bool
    mechanism: str
    split: tuple
    gamma: float | None
    selection_source: str
    selected: tuple
    dropped: tuple
    formula: str
    selection: SelectionReport | None
    histogram: PrivacyReport
    earlier: SelectionReport | None = None

    @property
    def seeded(self) -> bool:
        """True when any part the result depends on drew from a seeded generator."""
        return self.histogram.seeded or any(
            s.seeded for s in (self.selection, self.earlier) if s is not None)

    @property
    def n(self) -> int:
        return self.histogram.n

    @property
    def noisy_total(self) -> int:
        return self.histogram.noisy_total

    @property
    def outside_bounds(self):  # type: ignore[override]
        """The histogram's noisy counts of rows outside the bounds of the selected
        variables (`dpmodels.data.clipping`), shown in its rows; None when none can clip."""
        return self.histogram.outside_bounds

    @property
    def budget(self) -> str:
        """How the selection and the histogram were charged to an accountant."""
        sel = self.selection
        if sel is None or sel.budget == self.histogram.budget:
            return self.histogram.budget
        return f"selection: {sel.budget}; histogram: {self.histogram.budget}"

    def rows(self) -> list[tuple[str, str]]:
        """(label, value) pairs, in display order, for summaries."""
        rows = opening_rows(self)
        if self.gamma is not None:
            rows.append(("  gamma:", f"{self.gamma:.4g} (histogram share)"))
        sel = self.selection if self.selection is not None else self.earlier
        rows += [
            ("Selection:", self.selection_source),
        ]
        if sel is not None:
            rows.append(("  k:", f"{sel.k} ({sel.k_source})"))
        rows += [
            ("Selected:", ", ".join(self.selected) or "none"),
            ("Dropped:", (", ".join(self.dropped) + ": not estimated (dropped by the "
                          + ("private selection" if sel is not None and sel.private
                             else "selection") + ")") if self.dropped else "none"),
            ("Fitted formula:", self.formula),
        ]
        hist = self.histogram.rows()[1:]  # without its own "Privacy:" line
        return rows + [(("Histogram " + k[0].lower() + k[1:]) if k == "Mechanism:" else k,
                        self._randomness() if k == "Randomness:" else v)
                       for k, v in hist]

    def _randomness(self) -> str:
        """The "Randomness:" row: seeded when any part was."""
        if not self.seeded:
            return "OS secure entropy"
        if self.histogram.seeded:
            return "seeded generator (reproducible, for tests and docs)"
        return ("seeded generator for the selection (reproducible, for tests and docs); OS "
                "secure entropy for the histogram")


def _factor_variables(code: str, lhs: str, columns, namespace, response: str) -> set[str]:
    fv = formula_variables(f"{lhs} ~ {code}", columns, namespace)
    return set(fv.names) - {response}


def restrict_formula(formula: str, keep, columns, namespace, response: str) -> str:
    """The formula without the right-hand-side terms that use a variable
    outside ``keep`` (the intercept, if any, is kept).

    Examples
    --------
    >>> restrict_formula("y ~ a + b + a:C(g)", {"a"}, ["y", "a", "b", "g"], {}, "y")
    'y ~ a'
    >>> restrict_formula("y ~ 0 + a + b", set(), ["y", "a", "b"], {}, "y")
    'y ~ 1'
    """
    keep = set(keep)
    desc = patsy.ModelDesc.from_formula(formula)
    lhs = formula.split("~", 1)[0].strip()
    intercept, kept = False, []
    for term in desc.rhs_termlist:
        if not term.factors:
            intercept = True
            continue
        used = set()
        for fac in term.factors:
            used |= _factor_variables(fac.code, lhs, columns, namespace, response)
        if used <= keep:
            kept.append(term.name())
    if not kept:
        return f"{lhs} ~ 1"
    rhs = " + ".join(kept)
    return f"{lhs} ~ {rhs}" if intercept else f"{lhs} ~ 0 + {rhs}"


def _check_select(select, candidates: tuple, response: str):
    """``select`` as ("k", int or None) / ("given", names) / ("earlier", FeatureSelection)."""
    if isinstance(select, FeatureSelection):
        if select.target != response:
            raise DPModelsError(
                f"the selection was made for the target {select.target!r}, not for this "
                f"formula's response {response!r}")
        out = [c for c in select.selected if c not in candidates]
        if out:
            raise DPModelsError(
                f"the selection chose {out}, which the formula does not use: selected variables "
                f"must be among its predictors {list(candidates)}")
        return "earlier", tuple(select.selected)
    if isinstance(select, str):
        if select != "auto":
            raise DPModelsError(
                f'select must be an int k, "auto", a list of variables or a FeatureSelection, '
                f"got {select!r}")
        return "k", None
    if isinstance(select, (bool,)) or not isinstance(select, (numbers.Integral, Sequence)):
        raise DPModelsTypeError(
            'select must be an int k, "auto", a list of variables or a FeatureSelection, got '
            f"{type(select).__name__}")
    if isinstance(select, numbers.Integral):
        if not 1 <= int(select) <= len(candidates):
            raise DPModelsError(
                f"select={select} must be between 1 and the number of predictors "
                f"({len(candidates)}: {', '.join(candidates)})")
        return "k", int(select)
    names = tuple(select)
    bad = [c for c in names if c not in candidates]
    if bad or len(set(names)) != len(names):
        raise DPModelsError(
            f"select={list(names)} must list distinct predictors of the formula "
            f"({', '.join(candidates)})" + (f"; not predictors: {bad}" if bad else ""))
    return "given", names


def _check_gamma(gamma) -> float | None:
    if gamma is None:
        return None
    if (isinstance(gamma, bool) or not isinstance(gamma, numbers.Real)
            # numbers.Real declares no reflected comparison with int; every Real has one
            or not 0 < gamma < 1):  # type: ignore[operator]
        raise DPModelsError(
            f"gamma (the histogram's share of epsilon) must be a number strictly between 0 and "
            f"1, or None to estimate it; got {gamma!r}")
    return float(gamma)


def total_epsilon(parts) -> float:
    """The smallest float at least the exact (rational) sum of ``parts``: the
    epsilon a result that depends on all of them reports (never below it).

    Examples
    --------
    >>> 0.1 + 0.2 + 0.3 < 0.6000000000000001, total_epsilon([0.1, 0.2, 0.3])
    (False, 0.6000000000000001)
    >>> total_epsilon([0.5, 1.0]), total_epsilon([0.5, math.inf])
    (1.5, inf)
    """
    parts = [float(p) for p in parts]
    if any(math.isinf(p) for p in parts):
        return math.inf
    t = math.fsum(parts)
    while not parts_fit(t, parts):
        t = math.nextafter(t, math.inf)
    return t


def _split(epsilon: float, gamma: float) -> tuple[float, float]:
    """``(eps_p, eps_h)`` with ``eps_p + eps_h <= epsilon`` exactly."""
    if math.isinf(epsilon):
        return math.inf, math.inf
    eps_p = (1.0 - gamma) * epsilon
    eps_p, eps_h = exact_parts(epsilon, [eps_p, epsilon - eps_p])
    return eps_p, eps_h


def _parts_work(epsilon: float, gamma: float, clip: bool) -> bool:
    """True when every part of ``epsilon`` is at least `MIN_EPSILON`: the
    selection's, the histogram's and, when the projection can clip, the
    histogram's own split into its cells and its outside counts
    (`dpmodels.release()`'s)."""
    eps_p, eps_h = _split(epsilon, gamma)
    if min(eps_p, eps_h) < MIN_EPSILON:
        return False
    return not clip or min(split_epsilon(eps_h, [CLIP_SHARE, None])) >= MIN_EPSILON


def smallest_epsilon(gamma: float, clip: bool = False) -> float:
    """The smallest float epsilon whose parts (`_parts_work`) are each at least
    `MIN_EPSILON` (a function of the public gamma and domain).

    Examples
    --------
    >>> e = smallest_epsilon(0.25)
    >>> _parts_work(e, 0.25, False), _parts_work(math.nextafter(e, 0.0), 0.25, False)
    (True, False)
    >>> smallest_epsilon(0.25, clip=True) > 1e-14
    True
    """
    e = MIN_EPSILON / min(1.0 - gamma, gamma * (CLIP_SHARE if clip else 1.0))
    while not _parts_work(e, gamma, clip):
        e = math.nextafter(e, math.inf)
    while _parts_work(math.nextafter(e, 0.0), gamma, clip):
        e = math.nextafter(e, 0.0)
    return e


def _check_parts(epsilon: float, gamma: float, clip: bool) -> None:
    """Refuse, before any charge and any noise, an epsilon one of whose parts
    would be below `MIN_EPSILON` (every part is a function of public inputs)."""
    if math.isinf(epsilon) or _parts_work(epsilon, gamma, clip):
        return
    eps_p, eps_h = _split(epsilon, gamma)
    low = smallest_epsilon(gamma, clip)
    step = 10.0 ** (math.floor(math.log10(low)) - 2)  # three significant digits, rounded up
    shown = float(f"{math.ceil(low / step) * step:.2e}")
    while shown < low:
        shown = float(f"{shown + step:.2e}")
    extra = (f" (a share {CLIP_SHARE:g} of it for the noisy counts of rows outside the bounds)"
             if clip else "")
    raise DPModelsError(
        f"epsilon={epsilon:g} is too small to split between the feature selection and the "
        f"histogram (gamma = {gamma:.4g}): the selection would get {eps_p:.3g} and the "
        f"histogram {eps_h:.3g}{extra}, and each part must be at least {MIN_EPSILON:g}. The "
        f"smallest epsilon that works with this gamma is {shown:.3g}; nothing was spent")


if TYPE_CHECKING:
    #: to the type checker, the kind of model this mixin precedes (DPLogit, DPMNLogit)
    _ChoiceModel = _DPChoiceModel
else:
    _ChoiceModel = object


class _Projected(_ChoiceModel):
    """Selection, then the histogram model of the restricted formula."""

    original_formula: str  # set by from_formula, with the report
    _projected_report: ProjectedReport

    def __init__(self, *args, **kwargs):
        raise DPModelsTypeError(
            f"a projected model selects its variables from the raw rows: make it with "
            f"{self._func}(formula, data, select=..., epsilon=...) (or "
            f"{type(self).__name__}.from_formula); on an existing release, fit the formula "
            "restricted to the variables you want with the plain dp_* function")

    @classmethod
    def from_call(cls, call):
        """The model of a ``dp_*`` call with ``select=`` (and ``gamma=``)."""
        opts = dict(call.options)
        select = opts.pop("select")
        gamma = opts.pop("gamma", None)
        if call.method not in ("auto", "histogram"):
            raise DPModelsError(
                f"select= projects a histogram: it works with method='histogram' (or 'auto'), "
                f"not method={call.method!r}")
        return cls.from_formula(
            call.formula, call.data, select=select, gamma=gamma, epsilon=call.epsilon,
            bounds=call.bounds, levels=call.levels, bins=call.bins, threshold=call.threshold,
            n=call.n, random_state=call.random_state, accountant=call.accountant,
            eval_env=call.namespace, **opts)

    @classmethod
    def from_formula(  # type: ignore[override]  # adds select= and gamma= to DPModel's
            cls, formula, data, *, select, gamma=None, epsilon=None, bounds=None,
            levels=None, bins="auto", threshold="enhanced", threshold_A=DEFAULT_A, n=None,
            random_state=None, accountant=None, missing="drop",
            max_spurious_cells=DEFAULT_MAX_SPURIOUS_CELLS, eval_env=0, **kwargs):
        """Select (spending part of ``epsilon``), then release the histogram of the
        projection and build the model on it (the rest of ``epsilon``): every check
        of the public inputs runs before anything is read or spent."""
        # ---- public inputs only: every check before anything is spent or drawn --------
        import inspect

        self = cls.__new__(cls)  # the checks' helpers; the model is built on the release below

        check_random_state(random_state)
        allowed = set(inspect.signature(DPModel.from_formula).parameters)
        unknown = sorted(set(kwargs) - allowed)
        if unknown:
            raise DPModelsTypeError(
                f"{self._func} got unexpected keyword argument(s) {unknown} (with select=)")
        if "representatives" in kwargs:
            check_representatives(check_choice("representatives", kwargs["representatives"],
                                               REPRESENTATIVES))
        check_eval_env(eval_env)
        if isinstance(data, PrivateHistogram):
            raise DPModelsError(
                "select= needs the raw rows (it selects before releasing): on an existing "
                "release, fit the formula restricted to the variables you want instead")
        if not isinstance(formula, str):
            raise DPModelsTypeError(
                f"formula must be a string such as 'y ~ x + C(g)', got {type(formula).__name__}")
        namespace = (dict(eval_env) if isinstance(eval_env, Mapping)
                     else _frame_namespace(int(eval_env) + 1, eval_env))
        check_release_arguments(
            data, columns=None, formula=formula, epsilon=epsilon, bounds=bounds, levels=levels,
            bins=bins, threshold=threshold, threshold_A=threshold_A, n=n,
            random_state=random_state, accountant=accountant, missing=missing,
            max_spurious_cells=max_spurious_cells, namespace=namespace, domain_check=None)
        epsilon = check_epsilon(epsilon)
        _refuse_signed(self._name, data, epsilon, threshold)
        check_formula_transforms(formula, namespace)
        gamma = _check_gamma(gamma)
        self.formula = formula
        # an engine's frame is read where it lives: its schema, its row count, and the
        # exact counts of the selection's cells (selection_rows), then the histogram's
        engine = source_for(data)
        if engine is None and not isinstance(data, (pd.DataFrame, Mapping)):
            raise DPModelsTypeError(
                "select= reads a pandas DataFrame, a mapping of column name to array, or a "
                f"Polars, Dask, DuckDB or PySpark data frame; got {type(data).__name__}")
        cols = engine.columns() if engine is not None else columns_of(data)
        fv = formula_variables(formula, cols, namespace)
        response = self._response_of(formula, fv)
        candidates = tuple(nm for nm in fv.names if nm != response)
        if not candidates:
            raise DPModelsError(f"select= needs predictors: the formula {formula!r} has none")
        kind, value = _check_select(select, candidates, response)
        n_rows = engine.nrows() if engine is not None else nrows(data)
        n_public = int(n) if n is not None else n_rows

        full = build_domain(fv.names, _dtypes(data, fv.names),
                            discrete=fv.discrete, bounds=bounds, levels=levels, bins=bins,
                            n=max(n_public, 2), epsilon=epsilon, data_columns=cols,
                            scales=dict(fv.scales))  # bounds/levels of every variable
        self._check_response_axis(full.axis(response))
        if n_rows < 2:
            raise DPModelsError(f"data has {n_rows} row(s): a selection needs at least 2")

        sel_domain = None
        if kind == "k":
            sel_domain = selection_domain(data, response, candidates, bounds=bounds,
                                          levels=levels, bins=bins, n=n_rows, epsilon=epsilon,
                                          cols=cols)
            sizes = [sel_domain.axis(c).size for c in candidates]
            q = sel_domain.axis(response).size
            k, k_source = value, "given"
            if k is None:
                k = estimate_k(n_rows, q, sizes)
                k_source = "estimated from public n, q and domain sizes (Vinterbo §2.3)"
            if k >= len(candidates):  # nothing to choose: no budget on selection
                kind, value = "given", candidates
            else:
                gamma_used = gamma if gamma is not None else estimate_gamma(n_rows, q, sizes, k)
                eps_p, eps_h = _split(epsilon, gamma_used)
                _check_parts(epsilon, gamma_used, bool(clipping_axes(full)))
        if kind != "k":
            gamma_used, eps_p, eps_h = None, 0.0, epsilon
        if accountant is not None:
            accountant.check(epsilon, f"projected {self._func} for {response!r}")
        keep_sets = ([value] if kind != "k" else
                     _subsets_to_check(candidates, k, sel_domain))
        for keep in keep_sets:
            self._check_projection(restrict_formula(formula, set(keep), cols, namespace,
                                                    response),
                                   data, cols, namespace, bounds, levels, bins, threshold,
                                   threshold_A, n_public, eps_h, max_spurious_cells)

        # ---- the selection (eps_p) ------------------------------------------------------
        bits = random_source(random_state)  # one stream for both steps
        selection = None
        if kind == "k":
            assert sel_domain is not None  # built above whenever kind == "k"
            selection = run_release(  # the coded rows (errors before noise), then PRIVATEKD
                epsilon=eps_p, label=f"feature selection for {response!r}",
                accountant=accountant, random_state=bits,
                read=lambda: selection_rows(data, sel_domain, missing),
                measure=lambda rows, b, budget: select_coded(
                    rows[0], sel_domain, response, candidates, k, k_source, eps_p, n_rows,
                    "rows handed in", b, budget, weights=rows[1]))
            selected = selection.selected
            source = ("PRIVATEKD (exponential mechanism, Vinterbo 2012)" if selection.report.private
                      else "greedy argmax, NOT PRIVATE (epsilon = inf)")
        elif kind == "earlier":
            selected = value
            source = (f"an earlier private selection (its epsilon "
                      f"{select.report.epsilon:g} was charged then, not here; the total "
                      "epsilon includes it)"
                      if select.report.private else
                      "an earlier greedy argmax, NOT PRIVATE (epsilon = inf)")
        else:
            selected = tuple(value)
            source = ("all predictors (k >= their number: no selection, no budget)"
                      if set(value) == set(candidates) and value is candidates
                      else "given by the caller (public: no budget)")
        restricted = restrict_formula(formula, set(selected), cols, namespace, response)

        # ---- the histogram of the projection (eps_h), then the usual model -----------
        # (the histogram model this mixin precedes in the MRO: DPLogit or DPMNLogit)
        model = super().from_formula(
            restricted, data, epsilon=eps_h, bounds=bounds, levels=levels, bins=bins,
            # the one RandomBits stream of both steps: random_source takes it as it is
            threshold=threshold, threshold_A=threshold_A, n=n, random_state=bits,  # type: ignore[arg-type]
            accountant=accountant, missing=missing, max_spurious_cells=max_spurious_cells,
            eval_env=namespace, **kwargs)
        model.original_formula = formula
        model.selection = selection if selection is not None else (
            select if kind == "earlier" else None)
        hist = model.release.report
        split = ((("feature selection (PRIVATEKD)", eps_p),) if kind == "k" else ()) + (
            ("histogram of the projection", hist.epsilon),)
        earlier = select.report if kind == "earlier" else None
        if earlier is not None and earlier.private:
            # the coefficients fitted depend on the earlier selection too: its epsilon is a
            # part of the result's (PRIVACY.md rule 8), like a non-private one below
            split = (("an earlier private selection (PRIVATEKD), charged then",
                      earlier.epsilon),) + split
        total = total_epsilon([e for _, e in split])
        # which coefficients exist was chosen by the selection: a non-private selection
        # (epsilon = inf, here or earlier) makes the whole model non-private (PRIVACY.md
        # rule 8), whatever the histogram's epsilon
        sel_private = model.selection is None or model.selection.report.private
        if kind == "earlier" and not sel_private:
            split = (("an earlier selection, NOT PRIVATE (epsilon = inf)", math.inf),) + split
        if not sel_private:
            total = math.inf
            warnings.warn(
                "the feature selection was made with epsilon=inf (the non-private greedy "
                "choice on the raw rows): this model is NOT differentially private, whatever "
                "the histogram's epsilon; select privately (a finite epsilon) to publish it",
                NotPrivateWarning, stacklevel=user_stacklevel())
        dropped = tuple(c for c in candidates if c not in selected)
        model._projected_report = ProjectedReport(
            epsilon=total, private=hist.private and sel_private,
            mechanism="projected histogram (Vinterbo 2012): feature selection, then the "
                      "perturbed histogram of the response and the selected variables",
            split=split, gamma=gamma_used, selection_source=source, selected=tuple(selected),
            dropped=dropped, formula=restricted,
            selection=selection.report if selection is not None else None, histogram=hist,
            earlier=earlier)
        return model

    @property
    def privacy(self) -> ProjectedReport:
        """The report of the selection and of the histogram (`ProjectedReport`)."""
        return self._projected_report

    def _check_projection(self, restricted, data, cols, namespace, bounds, levels, bins,
                          threshold, threshold_A, n_public, eps_h, max_spurious_cells) -> None:
        """The release's size checks for one possible projection, before anything is spent."""
        fv = formula_variables(restricted, cols, namespace)
        dom = build_domain(fv.names, _dtypes(data, fv.names),
                           discrete=fv.discrete, bounds=bounds, levels=levels, bins=bins,
                           n=max(n_public, 2), epsilon=eps_h, data_columns=cols,
                           scales=dict(fv.scales))
        m = dom.size
        if clipping_axes(dom) and math.isfinite(eps_h):  # the cells' part, as release() splits
            eps_h = split_epsilon(eps_h, [CLIP_SHARE, None])[1]
        thr = resolve_threshold(threshold, eps_h, max(n_public, 2), threshold_A, m,
                                max_spurious_cells)
        if math.isinf(eps_h):
            return
        spurious = float(m) if thr.k is None else m * discrete_laplace_sf(thr.k, eps_h)
        if spurious > max_spurious_cells:
            raise DomainTooLargeError(
                f"a projection onto {list(fv.names[1:])} would let through about "
                f"{spurious:.3g} cells of pure noise (limit max_spurious_cells="
                f"{max_spurious_cells:.3g}); refused before the selection: use a smaller k, "
                "fewer bins or a higher threshold")
        check_noise_cells(spurious, m, signed=thr.k is None)  # (release()'s memory check)

    def __repr__(self) -> str:
        return (f"{type(self).__name__}({self.original_formula!r}, selected="
                f"{list(self._projected_report.selected)}, epsilon={self._projected_report.epsilon:g})")


def _subsets_to_check(candidates, k, domain):
    """Every k-subset when there are few, else the k candidates with the largest domains."""
    if math.comb(len(candidates), k) <= _MAX_SUBSETS_CHECKED:
        return list(itertools.combinations(candidates, k))
    by_size = sorted(candidates, key=lambda c: -domain.axis(c).size)
    return [tuple(by_size[:k])]


class DPProjectedLogit(_Projected, DPLogit):
    """Logistic regression on a projected histogram (Vinterbo's HLR):
    ``dp_logit(..., select=k)``.  ``.selection`` is the
    `FeatureSelection` (None for a given list),
    ``.privacy`` a `ProjectedReport`; ``.fit()`` as `DPLogit`."""

    _name = "DP Logit (projected)"


class DPProjectedMNLogit(_Projected, DPMNLogit):
    """Multinomial logit on a projected histogram (Vinterbo's HMLR):
    ``dp_mnlogit(..., select=k)``; see `DPProjectedLogit`."""

    _name = "DP MNLogit (projected)"


def build_projected(call):
    """The route of ``dp_logit`` / ``dp_mnlogit`` calls with ``select=``
    (`dpmodels.front.routing`): the projected model of the call's family."""
    cls = DPProjectedLogit if call.family == "logit" else DPProjectedMNLogit
    return cls.from_call(call)


def _dtypes(data, names) -> dict:
    """Each named column's dtype (the schema only, for an engine's frame)."""
    source = source_for(data)
    if source is not None:
        return source.dtypes(list(names))
    return {nm: dtype_of(data, nm) for nm in names}
