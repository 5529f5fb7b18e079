"""Planning a release before it is made: the expected error of each
coefficient against epsilon, simulated from public inputs and a guess.

`plan()` answers "how large an epsilon do I need?" before any private
data is touched.  It never reads the private data: its inputs are the public
ones a release takes anyway (formula, n, bounds, levels, bins) and the
analyst's *guess* of what the data look like -- a small public or synthetic
pilot data set, resampled to n rows, or a function that draws a parametric
guess.  For each epsilon it runs the real mechanism (the same ``dp_*``
function and ``method="auto"`` choice the analyst will get) on ``reps``
simulated data sets and compares each private fit with the non-private fit
(statsmodels) on the same simulated data set:

* ``rmse``: root mean square of (private estimate - non-private estimate):
  the error privacy adds (noise, binning, threshold, clipping), sampling
  error excluded;
* ``median_width``: the median width of the default (dp, noise-aware)
  interval, which includes sampling error too;
* ``sampling_sd``: the spread of the non-private estimates across the
  simulated data sets (the error one would have without privacy), for scale.

The privacy noise scales as 1/epsilon, so the privacy error typically falls
like 1/epsilon until the binning / clipping bias and the sampling error (which
do not depend on epsilon) take over: on a log-log plot (`Plan.plot()`) a
line of slope -1 that flattens out.
"""

from __future__ import annotations

import math
import numbers
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, TypeAlias

import numpy as np
import pandas as pd

from . import api
from .errors import DPModelsError, DPModelsTypeError, SeparationError, SingularDesignError
from .formula import caller_namespace, formula_variables
from .keywords import checked_keywords
from .plots import _equations, _inner, require_pyplot
from .validation import check_random_state

if TYPE_CHECKING:  # pragma: no cover - typing only
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

__all__ = ["plan", "Plan", "PLAN_MODELS"]

#: The models `plan()` simulates, by name.
PLAN_MODELS = ("ols", "logit", "quantreg", "mnlogit")

Guess: TypeAlias = pd.DataFrame | Callable[[np.random.Generator, int], pd.DataFrame]


#: Markers and line styles that, with the 10 colours, tell up to 150 lines apart.
_MARKERS = ("o", "s", "^", "D", "v")
_LINESTYLES = ("-", "--", ":")


def line_style(i: int) -> dict:
    """The i-th line's colour, marker and line style: the colour cycles every
    10 lines, the marker every 10, the style every 50, so no two of the
    first 150 lines look alike (18 coefficients repeated the 10 colours)."""
    return dict(color=f"C{i % 10}", marker=_MARKERS[(i // 10) % len(_MARKERS)],
                linestyle=_LINESTYLES[(i // 50) % len(_LINESTYLES)])


@dataclass(frozen=True)
class Plan:
    """The outcome of `plan()`: expected error of each coefficient per epsilon.

    Attributes
    ----------
    table : pandas.DataFrame
        One row per (epsilon, coefficient): ``epsilon``, ``coef``, ``rmse``
        (private vs non-private estimate on the same simulated data),
        ``bias`` (their mean difference), ``median_width`` (median width of
        the dp interval of level ``1 - alpha``; ``inf`` when most replicates
        carry no information), ``no_information`` (share of the simulated
        releases whose dp interval is infinite), ``sampling_sd`` (spread of
        the non-private estimates), ``method`` (the release ``method="auto"``
        chose) and ``n_ok`` (simulations whose private fit succeeded).
    formula, model : str
    n : int
    reps : int
    alpha : float
    failures : dict
        Per epsilon, the messages of the simulations whose release or fit
        raised (e.g. a singular design at a tiny epsilon).
    """

    table: pd.DataFrame
    formula: str
    model: str
    n: int
    reps: int
    alpha: float = 0.05
    failures: dict = field(default_factory=dict)

    @property
    def epsilons(self) -> list[float]:
        return sorted(self.table["epsilon"].unique().tolist())

    @property
    def coefficients(self) -> list[str]:
        return list(dict.fromkeys(self.table["coef"]))

    def pivot(self, value: str = "rmse") -> pd.DataFrame:
        """``value`` as a coefficients x epsilon table."""
        out = self.table.pivot(index="coef", columns="epsilon", values=value)
        return out.reindex(self.coefficients)

    def __str__(self) -> str:
        methods = ", ".join(f"{e:g}: {m}" for e, m in self.table.groupby("epsilon")["method"]
                            .first().items())
        lines = [
            f"Plan for dp_{self.model}({self.formula!r}) at n = {self.n:,}, {self.reps} "
            f"simulated data sets per epsilon (simulated from the guess; no private data read)",
            f"release chosen by method='auto' per epsilon: {methods}",
            "",
            "RMSE of the private estimate against the non-private one (privacy error):",
            self.pivot("rmse").to_string(float_format=lambda v: f"{v:.4g}"),
            "",
            f"median width of the dp {100 * (1 - self.alpha):g}% interval:",
            self.pivot("median_width").to_string(float_format=lambda v: f"{v:.4g}"),
            "",
            "sampling sd of the non-private estimate (error without privacy):",
            self.pivot("sampling_sd").iloc[:, :1].to_string(
                float_format=lambda v: f"{v:.4g}", header=False),
        ]
        if self.failures:
            lines += ["", "failed simulations: " + "; ".join(
                f"epsilon {e:g}: {len(v)}" for e, v in self.failures.items())]
        return "\n".join(lines)

    def __repr__(self) -> str:
        return (f"Plan(model={self.model!r}, formula={self.formula!r}, n={self.n}, "
                f"epsilon={self.epsilons}, reps={self.reps})")

    def plot(self, ax: Axes | None = None, *, value: str = "rmse") -> Figure:
        """The privacy-utility curve: ``value`` (default ``rmse``) against
        epsilon on log-log axes, one line per coefficient, with a grey
        reference line of slope -1 (error proportional to 1/epsilon).

        Returns
        -------
        matplotlib.figure.Figure
        """
        plt = require_pyplot()
        if value not in ("rmse", "median_width", "bias"):
            raise ValueError(f'value must be "rmse", "median_width" or "bias", got {value!r}')
        if ax is None:
            fig, ax = plt.subplots(figsize=(6.4, 4.4))
        else:
            fig = ax.figure
        table = self.pivot(value)
        eps = np.asarray(table.columns, dtype=float)
        for i, (coef, row) in enumerate(table.iterrows()):
            vals = np.abs(row.to_numpy(float)) if value == "bias" else row.to_numpy(float)
            vals = np.where(np.isfinite(vals) & (vals > 0), vals, np.nan)
            label = str(coef) if np.isfinite(vals).any() else f"{coef} (no finite value)"
            ax.plot(eps, vals, label=label, gid=f"coef:{coef}", **line_style(i))
        first = table.iloc[:, 0].to_numpy(float)
        first = first[np.isfinite(first) & (first > 0)]
        if first.size and eps.size > 1:  # slope -1 through the median at the first epsilon
            ax.plot(eps, float(np.median(first)) * eps[0] / eps, color="0.6", linestyle="--",
                    linewidth=1, label="_reference (error proportional to 1/epsilon)",
                    gid="reference")
        ax.set_xscale("log")
        ax.set_yscale("log")
        from matplotlib.ticker import NullFormatter

        ax.set_xticks(eps)
        ax.set_xticklabels([f"{e:g}" for e in eps])
        ax.xaxis.set_minor_formatter(NullFormatter())
        ax.set_xlabel("epsilon")
        ylabel = {"rmse": "RMSE vs non-private estimate", "median_width":
                  f"median width of dp {100 * (1 - self.alpha):g}% interval",
                  "bias": "|mean private - non-private|"}[value]
        ax.set_ylabel(ylabel)
        import textwrap

        width = ax.get_position().width * fig.get_size_inches()[0]  # inches
        title = (f"dp_{self.model}: {self.formula}  (n = {self.n:,}, {self.reps} reps; "
                 "grey: slope -1)")
        # wrapped to the axes' width (about 14 characters per inch at 9 pt): a long
        # formula was cut at the figure's edge
        ax.set_title("\n".join(textwrap.wrap(title, max(20, int(14 * width)))), fontsize=9)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False,
                  ncol=1 if len(table) <= 16 else 2)
        fig.tight_layout()
        return fig


# ---------------------------------------------------------------------------
# validation (public inputs; nothing is simulated before it passes)
# ---------------------------------------------------------------------------


def _check_int(name: str, value, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise DPModelsTypeError(f"{name} must be an int >= {minimum}, got {value!r}")
    if value < minimum:
        raise DPModelsError(f"{name} must be an int >= {minimum}, got {value!r}")
    return int(value)


def _check_epsilons(epsilon) -> list[float]:
    values = [epsilon] if isinstance(epsilon, numbers.Real) else epsilon
    if isinstance(values, (str, bytes)) or not isinstance(values, (Sequence, np.ndarray)):
        raise DPModelsTypeError(
            f"epsilon must be a number or a list of numbers, e.g. [0.1, 0.3, 1, 3], got "
            f"{epsilon!r}")
    out = []
    for v in values:
        if isinstance(v, bool) or not isinstance(v, numbers.Real):
            raise DPModelsTypeError(f"epsilon must hold numbers, got {v!r}")
        v = float(v)
        if not (math.isfinite(v) and v > 0):
            raise DPModelsError(f"epsilon values must be finite and > 0, got {v!r}")
        out.append(v)
    if not out:
        raise DPModelsError("epsilon must hold at least one value, e.g. [0.1, 0.3, 1, 3]")
    return sorted(set(out))


def _check_mapping(name: str, value) -> None:
    if value is not None and not isinstance(value, Mapping):
        raise DPModelsTypeError(f"{name} must be a dict (or None), got {type(value).__name__}")


def _check_guess(guess) -> None:
    if guess is None:
        raise DPModelsError(
            "plan needs a guess of the data: a small public or synthetic pilot DataFrame "
            "(resampled to n rows) or a function guess(rng, n) -> DataFrame")
    if isinstance(guess, pd.DataFrame):
        if len(guess) == 0:
            raise DPModelsError("guess is an empty DataFrame: give a pilot with some rows")
        return
    if not callable(guess):
        raise DPModelsTypeError(
            f"guess must be a pandas DataFrame or a callable guess(rng, n) -> DataFrame, got "
            f"{type(guess).__name__}")


def _draw(guess, rng: np.random.Generator, n: int) -> pd.DataFrame:
    if isinstance(guess, pd.DataFrame):
        rows = rng.integers(0, len(guess), size=n)
        return guess.iloc[rows].reset_index(drop=True)
    data = guess(rng, n)
    if not isinstance(data, pd.DataFrame):
        raise DPModelsTypeError(
            f"guess(rng, n) must return a pandas DataFrame, it returned {type(data).__name__}")
    if len(data) != n:
        raise DPModelsError(f"guess(rng, n) must return n = {n} rows, it returned {len(data)}")
    return data


# ---------------------------------------------------------------------------
# fits
# ---------------------------------------------------------------------------


def _dp_function(model: str):
    return {"ols": api.dp_ols, "logit": api.dp_logit, "quantreg": api.dp_quantreg,
            "mnlogit": api.dp_mnlogit}[model]


def _flat_params(results) -> pd.Series:
    """A dp fit's params flattened equation by equation, named as in its plots."""
    inner = _inner(results)
    names = [str(v) for v in np.atleast_1d(inner.model.exog_names)]
    eqs = _equations(inner)
    labels = [f"{x} (eq. {e})" for e in eqs for x in names] if eqs else names
    return pd.Series(np.asarray(inner.params, dtype=float).ravel(order="F"), index=labels)


def _dp_widths(results, alpha: float) -> np.ndarray:
    ci = np.asarray(results.conf_int(alpha), dtype=float).reshape(-1, 2)
    return ci[:, 1] - ci[:, 0]


def _nonprivate(model: str, formula: str, data: pd.DataFrame, namespace: dict,
                levels: Mapping | None, q: float) -> pd.Series:
    """statsmodels' fit on the simulated data, flattened and named like the dp fit."""
    import patsy
    import statsmodels.formula.api as smf

    env = patsy.EvalEnvironment([namespace])
    if model == "ols":
        return smf.ols(formula, data, eval_env=env).fit().params
    if model == "quantreg":
        return smf.quantreg(formula, data, eval_env=env).fit(q=q).params
    fv = formula_variables(formula, [str(c) for c in data.columns], namespace)
    coded = data
    labels = None
    if len(fv.response) == 1 and levels and fv.response[0] in levels:
        declared = list(levels[fv.response[0]])
        name = fv.response[0]
        coded = data.copy()
        coded[name] = pd.Series(pd.Categorical(data[name], categories=declared).codes,
                                index=data.index)
        labels = declared
    if model == "logit":
        return smf.logit(formula, coded, eval_env=env).fit(disp=0).params
    res = smf.mnlogit(formula, coded, eval_env=env).fit(disp=0)
    params = res.params  # K x (J - 1), columns the non-base classes
    classes = np.unique(np.asarray(res.model.endog)).astype(int)
    eq = [str(labels[c]) if labels is not None else str(c) for c in classes[1:]]
    names = [str(v) for v in res.model.exog_names]
    return pd.Series(np.asarray(params, dtype=float).ravel(order="F"),
                     index=[f"{x} (eq. {e})" for e in eq for x in names])


@checked_keywords
def plan(
    formula: str,
    *,
    n: int,
    epsilon: float | Sequence[float] = (0.1, 0.3, 1.0, 3.0),
    bounds: Mapping[str, tuple[float, float]] | None = None,
    levels: Mapping[str, Sequence] | None = None,
    guess: Guess | None = None,
    model: str = "ols",
    bins: int | Mapping[str, int] | str = "auto",
    reps: int = 20,
    random_state: None | int | np.random.Generator = None,
    n_boot: int | None = None,
    alpha: float = 0.05,
    q: float = 0.5,
) -> Plan:
    """Expected error of each coefficient against epsilon, before any release.

    **plan never reads private data.**  It uses the public inputs a release
    takes (formula, n, bounds, levels, bins) and the analyst's ``guess`` of
    the data, and simulates: for each epsilon, the real release and fit
    (``dpm.dp_<model>`` with its ``method="auto"`` choice and its default
    noise-aware intervals) on ``reps`` data sets drawn from the guess.  No
    budget is spent.  Give a guess that is public or synthetic: a plan made
    from the private data themselves is not protected by any epsilon.

    Parameters
    ----------
    formula : str
        The model's formula, as it will be given to ``dp_<model>``.
    n : int
        The public number of rows of the real data (>= 10).
    epsilon : float or sequence of float
        The epsilons to compare (finite, > 0).
    bounds, levels, bins
        The public domain, as they will be given to ``dp_<model>``.
    guess : pandas.DataFrame or callable
        A small pilot DataFrame (resampled with replacement to n rows), or
        ``guess(rng, n) -> DataFrame`` drawing n rows of a parametric guess
        from the numpy Generator ``rng``.  Required.
    model : {"ols", "logit", "quantreg", "mnlogit"}
    reps : int
        Simulated data sets per epsilon (>= 2); the same data sets are used
        for every epsilon, so the curves compare like with like.
    random_state : None, int or numpy.random.Generator
        Seeds the simulation (the guess's draws, the simulated releases and
        their bootstraps).
    n_boot : int, optional
        Bootstrap replicates of each simulated fit (default: the fit's own).
        Fewer make the plan faster and ``median_width`` noisier.
    alpha : float
        Level ``1 - alpha`` of the intervals whose width is reported.
    q : float
        The quantile, for ``model="quantreg"``.

    Returns
    -------
    Plan
        ``.table`` (tidy: epsilon, coef, rmse, bias, median_width,
        no_information, sampling_sd, method, n_ok), ``str(plan)`` for a
        readable summary, ``.plot()`` for the privacy-utility curve.

    Raises
    ------
    DPModelsError
        A bad argument (``DPModelsTypeError``, also a ``TypeError``, for a
        wrong type), named, before anything is simulated.  A missing bound
        or level set is refused by the first simulated release, naming the
        variable, before any noise.

    Notes
    -----
    ``rmse`` is ``sqrt(mean((b_dp - b)**2))`` over the simulated data sets,
    ``b`` statsmodels' estimate on the same simulated rows: the error privacy
    adds.  Compare it with ``sampling_sd``, the error without privacy.  The
    privacy noise has scale 2/epsilon, so ``rmse`` falls roughly like
    1/epsilon until the binning bias (which does not depend on epsilon)
    dominates.  A coefficient the guess does not identify (e.g. a declared
    level the pilot lacks) has a NaN ``rmse``.

    Examples
    --------
    >>> import numpy as np, pandas as pd, dpmodels as dpm
    >>> def guess(rng, n):
    ...     x = rng.uniform(0, 10, n)
    ...     return pd.DataFrame({"x": x, "y": 1 + 0.5 * x + rng.normal(size=n)})
    >>> p = dpm.plan("y ~ x", n=2000, epsilon=[0.5, 2], bounds={"x": (0, 10), "y": (-5, 15)},
    ...              guess=guess, reps=3, n_boot=50, random_state=0)
    >>> p.table[["epsilon", "coef"]].values.tolist()
    [[0.5, 'Intercept'], [0.5, 'x'], [2.0, 'Intercept'], [2.0, 'x']]
    """
    # ---- public inputs, checked before anything is simulated --------------------------
    if not isinstance(formula, str) or "~" not in formula:
        raise DPModelsTypeError(f"formula must be a string such as 'y ~ x + C(g)', got "
                                f"{formula!r}")
    n = _check_int("n", n, 10)
    epsilons = _check_epsilons(epsilon)
    if not isinstance(model, str) or model not in PLAN_MODELS:
        raise DPModelsError(f"model must be one of {PLAN_MODELS}, got {model!r}")
    _check_mapping("bounds", bounds)
    _check_mapping("levels", levels)
    if not (isinstance(bins, (str, numbers.Integral, Mapping)) and not isinstance(bins, bool)):
        raise DPModelsTypeError(f'bins must be "auto", an int or a dict, got {bins!r}')
    reps = _check_int("reps", reps, 2)
    if n_boot is not None:
        n_boot = _check_int("n_boot", n_boot, 2)
    if isinstance(alpha, bool) or not isinstance(alpha, numbers.Real) or not 0 < alpha < 1:
        raise DPModelsError(f"alpha must be a number in (0, 1), got {alpha!r}")
    if isinstance(q, bool) or not isinstance(q, numbers.Real) or not 0 < q < 1:
        raise DPModelsError(f"q must be a number in (0, 1), got {q!r}")
    check_random_state(random_state)
    _check_guess(guess)
    namespace = caller_namespace(1)

    # ---- simulation -------------------------------------------------------------------
    rng = np.random.default_rng(random_state)
    fit_dp = _dp_function(model)
    datasets = [_draw(guess, rng, n) for _ in range(reps)]
    truths = []
    for data in datasets:
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                truths.append(_nonprivate(model, formula, data, namespace, levels, q))
        except Exception:  # e.g. perfect separation in a simulated data set
            truths.append(None)
    extra = {"q": q} if model == "quantreg" else {}
    rows, failures = [], {}
    names: list[str] | None = None
    for eps in epsilons:
        est, widths, diffs, method = [], [], [], None
        for r, data in enumerate(datasets):
            seed = int(rng.integers(2**63 - 1))
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    mdl = fit_dp(formula, data, epsilon=eps, bounds=bounds, levels=levels,
                                 bins=bins, random_state=seed, eval_env=namespace, **extra)
                    kw = {"random_state": seed}
                    if n_boot is not None:
                        kw["n_boot"] = n_boot
                    res = mdl.fit(**kw)
            except (DPModelsError, TypeError) as exc:
                if r == 0 and eps == epsilons[0] and not _simulation_failure(exc):
                    raise  # a bad domain or formula: the analyst's input, not the noise
                failures.setdefault(eps, []).append(f"{type(exc).__name__}: {exc}")
                continue
            except (ValueError, np.linalg.LinAlgError) as exc:
                failures.setdefault(eps, []).append(f"{type(exc).__name__}: {exc}")
                continue
            method = method or (getattr(mdl, "method", "") or "histogram")
            b = _flat_params(res)
            if names is None:
                names = list(b.index)
            b = b.reindex(names)
            w = pd.Series(_dp_widths(res, alpha), index=_flat_params(res).index).reindex(names)
            est.append(b.to_numpy(float))
            widths.append(w.to_numpy(float))
            t = truths[r]
            diffs.append((b - (t.reindex(names) if t is not None else np.nan)).to_numpy(float))
        if names is None:
            continue
        k = len(names)
        E = np.vstack(est) if est else np.full((0, k), np.nan)
        W = np.vstack(widths) if widths else np.full((0, k), np.nan)
        D = np.vstack(diffs) if diffs else np.full((0, k), np.nan)
        T = np.vstack([t.reindex(names).to_numpy(float) for t in truths if t is not None]) \
            if any(t is not None for t in truths) else np.full((0, k), np.nan)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            rmse = np.sqrt(np.nanmean(D**2, axis=0)) if len(D) else np.full(k, np.nan)
            bias = np.nanmean(D, axis=0) if len(D) else np.full(k, np.nan)
            width = np.median(W, axis=0) if len(W) else np.full(k, np.nan)
            noinfo = np.mean(~np.isfinite(W), axis=0) if len(W) else np.full(k, np.nan)
            sd = np.nanstd(T, axis=0, ddof=1) if len(T) > 1 else np.full(k, np.nan)
        for j, nm in enumerate(names):
            rows.append({"epsilon": eps, "coef": nm, "rmse": rmse[j], "bias": bias[j],
                         "median_width": width[j], "no_information": noinfo[j],
                         "sampling_sd": sd[j], "method": method, "n_ok": len(E)})
    if not rows:
        raise DPModelsError(
            "every simulated release failed: "
            + "; ".join(f"epsilon {e:g}: {v[0]}" for e, v in failures.items()))
    table = pd.DataFrame(rows, columns=["epsilon", "coef", "rmse", "bias", "median_width",
                                        "no_information", "sampling_sd", "method", "n_ok"])
    return Plan(table=table, formula=formula, model=model, n=n, reps=reps, alpha=float(alpha),
                failures=failures)


def _simulation_failure(exc: Exception) -> bool:
    """Errors that the noise of one simulated release can cause (a singular
    design, no released cells), as opposed to a bad input."""
    return isinstance(exc, (SingularDesignError, SeparationError))
