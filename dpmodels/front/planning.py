"""Planning a release before it is made: the expected error of each
coefficient against epsilon, for one or several mechanisms, simulated from
public inputs and a guess.

`plan()` answers "how large an epsilon do I need, and which mechanism
(``method=``) serves my model best?" before any private data is touched.  It
never reads the private data: its inputs are the public ones a release takes
anyway (formula, n, bounds, levels, bins) and the analyst's *guess* of what
the data look like -- a small public or synthetic pilot data set, resampled
to n rows, or a function that draws a parametric guess.  It draws ``reps``
data sets from the guess once; each is released at every epsilon by every
method asked for (the same ``dp_*`` function and ``method=`` the analyst will
call), and each private fit is compared with statsmodels' non-private fit of
the same data set (fitted once per data set):

* ``rmse``: root mean square of ``d = b_dp - b`` (private minus non-private
  estimate): the error privacy adds (noise, binning, threshold, clipping),
  sampling error excluded; ``rmse_se`` is its Monte Carlo standard error;
* ``bias`` and ``noise_sd``: the mean and the standard deviation (divisor
  ``reps``) of ``d`` across the data sets, so that
  ``rmse**2 == bias**2 + noise_sd**2``.  The noise part falls like
  1/epsilon; the bias (binning, clipping, the threshold) does not;
* ``median_width``: the median width of the default (dp, noise-aware)
  interval, which includes sampling error too, over the first
  ``interval_reps`` data sets (its bootstrap is most of a simulation's
  cost; the point estimates of the others come from ``cov_type="naive"``
  fits of the same releases, whose estimates are the same);
* ``sampling_sd``: the spread of the non-private estimates across the
  simulated data sets (the error one would have without privacy), for scale.

On a log-log plot (`Plan.plot()`) a noise-dominated error is a line of
slope -1; it flattens where the bias takes over, and may even rise: with
``bins="auto"`` the histogram's bins change with epsilon, and so does its
binning bias.
"""

from __future__ import annotations

import contextlib
import importlib
import math
import numbers
import re
import textwrap
import time
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, TypeAlias, cast

import numpy as np
import pandas as pd

from ..core.errors import DPModelsError, DPModelsTypeError, SeparationError, SingularDesignError
from ..core.keywords import checked_keywords
from ..data.validation import check_choice, check_random_state
from ..domain.formula import caller_namespace, formula_variables
from ..output.plots import _equations, _inner, require_pyplot
from . import api
from .methods import FAMILY_METHODS, ROUTED_METHODS

if TYPE_CHECKING:  # pragma: no cover - typing only
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

__all__ = ["plan", "Plan", "PLAN_MODELS", "DEFAULT_REPS", "DEFAULT_INTERVAL_REPS",
           "MAX_LINES_PER_PANEL"]

#: The models `plan()` simulates, by name.
PLAN_MODELS = ("ols", "logit", "quantreg", "mnlogit")
#: Simulated data sets per epsilon and method by default.
DEFAULT_REPS = 15
#: Simulated data sets per epsilon and method whose dp interval is bootstrapped by default.
DEFAULT_INTERVAL_REPS = 1
#: At most this many coefficients share a panel of `Plan.plot()` (each its own colour).
MAX_LINES_PER_PANEL = 10

Guess: TypeAlias = pd.DataFrame | Callable[[np.random.Generator, int], pd.DataFrame]

#: The columns of `Plan.table`, in order (the first nine are those of the first version).
TABLE_COLUMNS = ["epsilon", "coef", "rmse", "bias", "median_width", "no_information",
                 "sampling_sd", "method", "n_ok", "requested", "noise_sd", "rmse_se", "bias_se",
                 "n_intervals", "bins", "power", "np_power"]

#: Markers and line styles that, with the 10 colours, tell up to 150 lines apart.
_MARKERS = ("o", "s", "^", "D", "v")
_LINESTYLES = ("-", "--", ":")

#: What a rising or flat RMSE means, in `Plan.__str__`.
RISING_RMSE_NOTE = (
    "An RMSE that does not fall as epsilon grows is bias, not noise: the noise part "
    "(noise_sd) falls like 1/epsilon, the bias does not. The histogram's binning bias "
    "(each cell's rows placed at representative points) depends on the bins, and "
    "bins='auto' takes more bins at a larger epsilon, so a coefficient's bias can jump "
    "there; the threshold's and the moments' clipping bias shrink as epsilon grows (at a small "
    "epsilon they can offset the binning bias, so even at fixed bins the net bias can grow). "
    "Where the bias share is high, a larger epsilon will not help; other bins or another "
    "method (method=[...]) may.")


def line_style(i: int) -> dict:
    """The i-th line's colour, marker and line style: the colour cycles every
    10 lines, the marker every 10, the style every 50, so no two of the
    first 150 lines look alike.  `Plan.plot()` keeps at most
    `MAX_LINES_PER_PANEL` lines in a panel, so within a panel the colours
    differ too."""
    return dict(color=f"C{i % 10}", marker=_MARKERS[(i // 10) % len(_MARKERS)],
                linestyle=_LINESTYLES[(i // 50) % len(_LINESTYLES)])


def _term(name: str) -> str:
    """A coefficient's term: its name without the level in brackets
    (``C(g)[T.b]`` -> ``C(g)``); a name without a level gives ""."""
    stripped = re.sub(r"\[[^\]]*\]", "", name)
    return stripped if stripped != name else ""


def coefficient_groups(names: Sequence[str], size: int = MAX_LINES_PER_PANEL) -> list[list[str]]:
    """The coefficients split into panels of at most ``size``: all in one
    when they fit; else each factor's levels together (the intercept and the
    slopes in a group of their own), groups packed in order and a group
    larger than ``size`` cut into pieces.

    Examples
    --------
    >>> coefficient_groups(["Intercept", "x", "C(g)[T.b]"])
    [['Intercept', 'x', 'C(g)[T.b]']]
    >>> names = ["Intercept", "x"] + [f"C(g)[T.{i}]" for i in range(9)] + ["C(h)[T.1]"]
    >>> [len(g) for g in coefficient_groups(names)]
    [2, 10]
    """
    names = list(names)
    if len(names) <= size:
        return [names]
    by_term: dict[str, list[str]] = {}
    for nm in names:
        by_term.setdefault(_term(nm), []).append(nm)
    pieces = [g[i:i + size] for g in by_term.values() for i in range(0, len(g), size)]
    panels: list[list[str]] = []
    for piece in pieces:
        if panels and len(panels[-1]) + len(piece) <= size:
            panels[-1].extend(piece)
        else:
            panels.append(list(piece))
    return panels


def _fmt(v: float) -> str:
    return f"{v:.4g}"


#: A table of `Plan.__str__` wider than this many characters is printed as one
#: block per epsilon, the methods side by side in each.
TEXT_WIDTH = 100


def _text(frame: pd.DataFrame, **fmt) -> str:
    """``frame`` as text; a (method, epsilon) table too wide for `TEXT_WIDTH`
    becomes one block per epsilon with the methods as columns, so the
    mechanisms still compare side by side on a terminal."""
    whole = frame.to_string(**fmt)
    if (not isinstance(frame.columns, pd.MultiIndex)
            or max(map(len, whole.splitlines())) <= TEXT_WIDTH):
        return whole
    blocks = []
    for eps in frame.columns.get_level_values("epsilon").unique():
        block = frame.xs(eps, axis=1, level="epsilon")
        blocks.append(f"epsilon = {eps:g}:\n" + block.to_string(**fmt))
    return "\n\n".join(blocks)


@dataclass(frozen=True)
class Plan:
    """The outcome of `plan()`: expected error of each coefficient per epsilon
    and method.

    Attributes
    ----------
    table : pandas.DataFrame
        One row per (method asked for, epsilon, coefficient): ``epsilon``,
        ``coef``, ``rmse`` (private vs non-private estimate on the same
        simulated data), ``bias`` (their mean difference), ``median_width``
        (median width of the dp interval of level ``1 - alpha`` over the
        ``n_intervals`` data sets whose interval was bootstrapped; ``inf``
        when most carry no information), ``no_information`` (share of those
        whose dp interval is infinite), ``sampling_sd`` (spread of the
        non-private estimates), ``method`` (the release used: what
        ``method="auto"`` chose, or the method asked for), ``n_ok``
        (simulations whose private fit succeeded), ``requested`` (the
        ``method=`` value simulated), ``noise_sd`` (standard deviation, divisor
        ``n_ok``, of the difference: ``rmse**2 == bias**2 + noise_sd**2``),
        ``rmse_se`` and ``bias_se`` (Monte Carlo standard errors of ``rmse``
        and ``bias``), ``n_intervals``, ``bins``, ``power`` (share of those
        ``n_intervals`` data sets whose dp interval excludes 0 on the side of
        the non-private estimate: the effect found) and ``np_power`` (share
        of them whose non-private interval of the same level excludes 0: what
        the data hold without privacy).
    formula : str
        The formula simulated, as given.
    model : str
        The model family: "ols", "logit", "quantreg" or "mnlogit".
    n : int
        The public number of rows each simulated data set has.
    reps : int
        Simulated data sets per epsilon and method.
    alpha : float
        1 - the level of the dp intervals whose widths are reported.
    failures : dict
        Per epsilon, the messages of the simulations whose release or fit
        raised (e.g. a singular design at a tiny epsilon), each prefixed with
        its method when several were simulated.
    methods : tuple of str
        The ``method=`` values simulated, in the order given.
    interval_reps : int or None
        Data sets per epsilon and method whose dp interval was bootstrapped.
    seconds : float or None
        Wall-clock time the plan took (not in ``str(plan)``, which depends on
        the seed only).
    """

    table: pd.DataFrame
    formula: str
    model: str
    n: int
    reps: int
    alpha: float = 0.05
    failures: dict = field(default_factory=dict)
    methods: tuple[str, ...] = ("auto",)
    interval_reps: int | None = None
    seconds: float | None = None

    @property
    def epsilons(self) -> list[float]:
        return sorted(self.table["epsilon"].unique().tolist())

    @property
    def coefficients(self) -> list[str]:
        return list(dict.fromkeys(self.table["coef"]))

    def _rows(self, method: str | None) -> pd.DataFrame:
        table = self.table
        if "requested" not in table.columns:
            return table
        if method is None:
            return table
        if method not in self.methods:
            raise DPModelsError(f"method must be one of the plan's methods {list(self.methods)}, "
                                f"got {method!r}")
        return table[table["requested"] == method]

    def pivot(self, value: str = "rmse", method: str | None = None) -> pd.DataFrame:
        """One column of `table` as a coefficients x epsilon table.

        Parameters
        ----------
        value : str
            A column of `table`: "rmse" (default), "bias", "noise_sd",
            "median_width", "rmse_se", ...
        method : str, optional
            One of `methods`: only that method's rows.  With several methods
            and ``method=None``, the columns are (method, epsilon) pairs, the
            methods side by side.

        Returns
        -------
        pandas.DataFrame
            Rows: the coefficients in the model's order; columns: epsilon, or
            (method, epsilon).
        """
        table = self._rows(method)
        if method is None and len(self.methods) > 1:
            out = table.pivot(index="coef", columns=["requested", "epsilon"], values=value)
            cols = [(m, e) for m in self.methods for e in self.epsilons if (m, e) in out.columns]
            out = out.reindex(columns=pd.MultiIndex.from_tuples(cols, names=["method", "epsilon"]))
        else:
            out = table.pivot(index="coef", columns="epsilon", values=value)
        return out.reindex(self.coefficients)

    def chosen(self, method: str = "auto") -> dict[float, str]:
        """The release ``method`` used at each epsilon (what "auto" chose)."""
        rows = self._rows(method if len(self.methods) > 1 or method in self.methods else None)
        return {float(e): str(m) for e, m in rows.groupby("epsilon")["method"].first().items()}

    def _bins(self, m: str) -> dict[float, str]:
        if "bins" not in self.table.columns:
            return {}
        rows = self._rows(m if "requested" in self.table.columns else None)
        return {float(e): str(b) for e, b in rows.groupby("epsilon")["bins"].first().items()
                if isinstance(b, str) and b}

    def _method_line(self, m: str) -> str:
        used = self.chosen(m)
        kinds = list(dict.fromkeys(used.values()))
        if m != "auto":
            line = f"method={m!r}"
        elif len(kinds) == 1:
            line = f"method='auto' chose {kinds[0]} at every epsilon"
        else:
            line = "method='auto' chose " + ", ".join(f"{u} at {e:g}" for e, u in used.items())
        bins = self._bins(m)
        if bins:
            line += " (histogram bins per continuous variable: " + ", ".join(
                f"{b} at {e:g}" for e, b in bins.items()) + ")"
        return line

    def _rising(self) -> str:
        """One sentence per method on the coefficients whose RMSE rises
        between two epsilons by more than twice its Monte Carlo error, with
        the bias and, where they changed, the bins that go with it."""
        out = []
        eps = self.epsilons
        for m in self.methods:
            rows = self._rows(m if "requested" in self.table.columns else None)
            piv = {v: rows.pivot(index="coef", columns="epsilon", values=v)
                   for v in ("rmse", "rmse_se", "bias")}
            bins = self._bins(m)
            hits = []
            for coef in self.coefficients:
                for e0, e1 in zip(eps, eps[1:]):
                    r0, r1 = piv["rmse"].at[coef, e0], piv["rmse"].at[coef, e1]
                    se = math.hypot(piv["rmse_se"].at[coef, e0], piv["rmse_se"].at[coef, e1])
                    if np.isfinite(r0) and np.isfinite(r1) and r1 - r0 > 2 * se:
                        b0, b1 = piv["bias"].at[coef, e0], piv["bias"].at[coef, e1]
                        hits.append(f"{coef} from epsilon {e0:g} to {e1:g} (RMSE {r0:.3g} -> "
                                    f"{r1:.3g}, bias {b0:+.3g} -> {b1:+.3g}"
                                    + (f", bins {bins[e0]} -> {bins[e1]}"
                                       if bins.get(e0) != bins.get(e1) else "") + ")")
                        break
            if hits:
                head = f"method={m!r}: " if len(self.methods) > 1 else ""
                more = f" and {len(hits) - 4} more" if len(hits) > 4 else ""
                out.append(f"{head}the RMSE rises (beyond 2 Monte Carlo standard errors) for "
                           + "; ".join(hits[:4]) + more + ".")
        return " ".join(out)

    def _with_se(self) -> pd.DataFrame:
        rmse, se = self.pivot("rmse"), self.pivot("rmse_se")
        out = rmse.copy().astype(object)
        for c in rmse.columns:
            out[c] = [f"{_fmt(r)} ({se_:.2g})" if np.isfinite(r) and np.isfinite(se_)
                      else _fmt(r) for r, se_ in zip(rmse[c], se[c])]
        return out

    def _bias_dominated(self) -> str:
        """The coefficients whose error at the largest epsilon is mostly bias."""
        top = self.table[self.table["epsilon"] == self.epsilons[-1]]
        out = []
        for m in self.methods:
            rows = top[top["requested"] == m] if "requested" in top.columns else top
            hit = rows[(rows["bias"] ** 2 > rows["noise_sd"] ** 2)
                       & (rows["bias"].abs() > 2 * rows["bias_se"])]["coef"].tolist()
            if hit:
                label = f"{m}: " if len(self.methods) > 1 else ""
                out.append(label + (", ".join(hit[:6]) + (f" and {len(hit) - 6} more"
                                                         if len(hit) > 6 else "")))
        if not out:
            return ""
        return (f"Mostly bias at epsilon {self.epsilons[-1]:g} (bias^2 > noise_sd^2, bias beyond "
                "2 Monte Carlo standard errors): " + "; ".join(out) + ".")

    def __str__(self) -> str:
        if "requested" not in self.table.columns:  # a Plan made before method= existed
            return self._str_v1()
        k = self.interval_reps
        lines = [
            textwrap.fill(
                f"Plan for dp_{self.model}({self.formula!r}) at n = {self.n:,}: {self.reps} "
                "data sets simulated from the guess, each released at every epsilon by every "
                "method (no private data read, no budget spent)", TEXT_WIDTH),
            *(textwrap.fill(self._method_line(m), TEXT_WIDTH) for m in self.methods),
            "",
            textwrap.fill("RMSE of the private estimate against the non-private one on the same "
                          "data (the error privacy adds), its Monte Carlo standard error in "
                          "brackets:", TEXT_WIDTH),
            _text(self._with_se()),
            "",
            textwrap.fill("bias share of the squared error, 100 * bias^2 / RMSE^2 (RMSE^2 = "
                          "bias^2 + noise_sd^2; columns bias and noise_sd of .table):",
                          TEXT_WIDTH),
            _text(100 * self.pivot("bias") ** 2 / self.pivot("rmse") ** 2,
                  float_format=lambda v: f"{v:.0f}%"),
            "",
            textwrap.fill(RISING_RMSE_NOTE, TEXT_WIDTH),
        ]
        for extra in (self._rising(), self._bias_dominated()):
            if extra:
                lines += [textwrap.fill(extra, TEXT_WIDTH)]
        lines += [
            "",
            f"median width of the dp {100 * (1 - self.alpha):g}% interval"
            + (f" (over {k} data set{'s' if k > 1 else ''} per cell):" if k else ":"),
            _text(self.pivot("median_width"), float_format=_fmt),
        ]
        if "power" in self.table.columns and np.isfinite(self.table["power"]).any():
            lines += [
                "",
                textwrap.fill(
                    f"power: share of the {k} data set{'s' if k and k > 1 else ''} per cell "
                    f"whose dp {100 * (1 - self.alpha):g}% interval excludes 0 on the side of "
                    "the non-private estimate (the effect found); last column, the share "
                    "whose non-private interval does (what the data hold without privacy):",
                    TEXT_WIDTH),
                _text(self._power_table(), float_format=lambda v: f"{100 * v:.0f}%"),
            ]
        lines += [
            "",
            "sampling sd of the non-private estimate (error without privacy):",
            self.table.groupby("coef", sort=False)["sampling_sd"].first()
            .reindex(self.coefficients).to_string(float_format=_fmt, header=False),
        ]
        if self.failures:
            lines += ["", "failed simulations: " + "; ".join(
                f"epsilon {e:g}: {len(v)}" for e, v in self.failures.items())]
        return "\n".join(lines)

    def _power_table(self) -> pd.DataFrame:
        """`pivot` of ``power`` with the non-private power as the last column."""
        out = self.pivot("power")
        nonprivate = self.table.groupby("coef", sort=False)["np_power"].first()
        key = ("no privacy", "") if isinstance(out.columns, pd.MultiIndex) else "no privacy"
        out[key] = nonprivate.reindex(out.index)
        return out

    def _str_v1(self) -> str:
        methods = ", ".join(f"{e:g}: {m}" for e, m in self.table.groupby("epsilon")["method"]
                            .first().items())
        return "\n".join([
            f"Plan for dp_{self.model}({self.formula!r}) at n = {self.n:,}, {self.reps} "
            f"simulated data sets per epsilon (simulated from the guess; no private data read)",
            f"release chosen by method='auto' per epsilon: {methods}", "",
            "RMSE of the private estimate against the non-private one (privacy error):",
            self.pivot("rmse").to_string(float_format=_fmt)])

    def __repr__(self) -> str:
        extra = f", method={list(self.methods)}" if self.methods != ("auto",) else ""
        return (f"Plan(model={self.model!r}, formula={self.formula!r}, n={self.n}, "
                f"epsilon={self.epsilons}, reps={self.reps}{extra})")

    def plot(self, ax: Axes | None = None, *, value: str = "rmse") -> Figure:
        """The privacy-utility curves: ``value`` (default ``rmse``) against
        epsilon on log-log axes, one line per coefficient, with a grey
        reference line of slope -1 (error proportional to 1/epsilon).

        One column of panels per method (side by side, each row sharing its
        y axis so the methods compare at a glance) and one row per group of
        at most `MAX_LINES_PER_PANEL` coefficients (`coefficient_groups()`:
        a factor's levels together), so every line of a panel has its own
        colour.  Given ``ax`` (one method only), every line goes there.

        Parameters
        ----------
        ax : matplotlib Axes, optional
        value : {"rmse", "bias", "noise_sd", "median_width"}
            ``bias`` is drawn as its absolute value.

        Returns
        -------
        matplotlib.figure.Figure

        Examples
        --------
        >>> import numpy as np, pandas as pd, dpmodels as dpm
        >>> def guess(rng, n):
        ...     x = rng.uniform(0, 10, n)
        ...     return pd.DataFrame({"x": x, "y": 1 + 0.5 * x + rng.normal(size=n)})
        >>> p = dpm.plan("y ~ x", n=2000, epsilon=[0.5, 2], bounds={"x": (0, 10),
        ...              "y": (-5, 15)}, guess=guess, method=["auto", "histogram"], reps=3,
        ...              interval_reps=0, random_state=0)
        >>> fig = p.plot()
        >>> len(fig.axes)
        2
        """
        plt = require_pyplot()
        values = ("rmse", "median_width", "bias", "noise_sd")
        if value not in values:
            raise ValueError(f"value must be one of {list(values)}, got {value!r}")
        if value == "noise_sd" and "noise_sd" not in self.table.columns:
            raise ValueError("this plan has no noise_sd column (made before it existed)")
        methods = list(self.methods) if "requested" in self.table.columns else ["auto"]
        if ax is not None:
            if len(methods) > 1:
                raise DPModelsError(
                    f"this plan compares {len(methods)} methods, drawn side by side in panels "
                    "of their own: call plot() without ax, or make a plan of one method")
            groups = [self.coefficients]
            fig = cast("Figure", ax.figure)
            axes = np.array([[ax]])
        else:
            groups = coefficient_groups(self.coefficients)
            nrow, ncol = len(groups), len(methods)
            fig, axes = plt.subplots(nrow, ncol, figsize=(0.6 + 3.9 * ncol + 2.6,
                                                          1.0 + 3.1 * nrow),
                                     sharex=True, sharey="row", squeeze=False)
        ylabel = {"rmse": "RMSE vs non-private estimate", "median_width":
                  f"median width of dp {100 * (1 - self.alpha):g}% interval",
                  "bias": "|mean private - non-private|",
                  "noise_sd": "sd of private - non-private"}[value]
        from matplotlib.ticker import NullFormatter

        for i, coefs in enumerate(groups):
            for j, m in enumerate(methods):
                a = axes[i, j]
                table = (self.pivot(value, method=m) if len(methods) > 1
                         else self.pivot(value)).reindex(coefs)
                eps = np.asarray(table.columns, dtype=float)
                colours = _distinct_colours(len(coefs))
                for c, (coef, row) in enumerate(table.iterrows()):
                    vals = np.abs(row.to_numpy(float)) if value == "bias" else row.to_numpy(float)
                    vals = np.where(np.isfinite(vals) & (vals > 0), vals, np.nan)
                    label = str(coef) if np.isfinite(vals).any() else f"{coef} (no finite value)"
                    style = line_style(c)
                    style["color"] = colours[c]
                    a.plot(eps, vals, label=label, gid=f"coef:{coef}", **style)
                first = table.iloc[:, 0].to_numpy(float)
                first = first[np.isfinite(first) & (first > 0)]
                if first.size and eps.size > 1:  # slope -1 through the median at the first epsilon
                    a.plot(eps, float(np.median(first)) * eps[0] / eps, color="0.6",
                           linestyle="--", linewidth=1,
                           label="_reference (error proportional to 1/epsilon)", gid="reference")
                a.set_xscale("log")
                a.set_yscale("log")
                a.set_xticks(eps)
                a.set_xticklabels([f"{e:g}" for e in eps])
                a.xaxis.set_minor_formatter(NullFormatter())
                a.yaxis.set_minor_formatter(NullFormatter())
                a.grid(True, which="both", alpha=0.3)
                if i == len(groups) - 1:
                    a.set_xlabel("epsilon")
                if j == 0:
                    a.set_ylabel(ylabel, fontsize=9)
                if i == 0 and len(methods) > 1:
                    a.set_title(self._panel_title(m), fontsize=9)
            axes[i, -1].legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.02, 1.0),
                               frameon=False)
        head = (f"dp_{self.model}: {self.formula}  (n = {self.n:,}, {self.reps} reps; "
                "grey: slope -1)")
        if len(methods) == 1:
            head = f"{self._method_line(methods[0])}; " + head if methods != ["auto"] else head
        width = fig.get_size_inches()[0]
        # wrapped to the figure's width (about 12 characters per inch at 9 pt): a long
        # formula was cut at the figure's edge
        title = "\n".join(textwrap.wrap(head, max(20, int(12 * width))))
        if ax is not None:
            ax.set_title(title, fontsize=9)
        else:
            fig.suptitle(title, fontsize=9)
        fig.tight_layout()
        return fig

    def _panel_title(self, m: str) -> str:
        kinds = list(dict.fromkeys(self.chosen(m).values()))
        return f"method={m!r}" + (f" ({'/'.join(kinds)})" if m == "auto" else "")


def _distinct_colours(k: int) -> list:
    """k colours, no two alike: the 10-colour cycle, then tab20, then hsv."""
    if k <= 10:
        return [f"C{i}" for i in range(k)]
    import matplotlib

    if k <= 20:
        cmap = matplotlib.colormaps["tab20"]
        return [cmap(i) for i in range(k)]
    cmap = matplotlib.colormaps["hsv"]
    return [cmap(i / k) for i in range(k)]


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


def _draw(guess, rng: np.random.Generator, n: int) -> tuple[pd.DataFrame, np.ndarray | None]:
    """n rows from the guess, and the pilot's rows they are (None: a callable guess)."""
    if isinstance(guess, pd.DataFrame):
        rows = rng.integers(0, len(guess), size=n)
        return guess.iloc[rows].reset_index(drop=True), rows
    data = guess(rng, n)
    if not isinstance(data, pd.DataFrame):
        raise DPModelsTypeError(
            f"guess(rng, n) must return a pandas DataFrame, it returned {type(data).__name__}")
    if len(data) != n:
        raise DPModelsError(f"guess(rng, n) must return n = {n} rows, it returned {len(data)}")
    return data, None


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


def _dp_intervals(results, alpha: float) -> np.ndarray:
    """The dp intervals of level ``1 - alpha``, ``(k, 2)``, flattened as `_flat_params()`."""
    return np.asarray(results.conf_int(alpha), dtype=float).reshape(-1, 2)


def _coded(model: str, formula: str, data: pd.DataFrame, namespace: dict,
           levels: Mapping | None) -> tuple[pd.DataFrame, list | None]:
    """The data with a logit's or mnlogit's declared response coded 0, 1, ...
    in the order of its declared levels (as the dp fit codes it), and those
    levels (None: the response is used as it is)."""
    if model not in ("logit", "mnlogit"):
        return data, None
    fv = formula_variables(formula, [str(c) for c in data.columns], namespace)
    if len(fv.response) == 1 and levels and fv.response[0] in levels:
        declared = list(levels[fv.response[0]])
        name = fv.response[0]
        coded = data.copy()
        coded[name] = pd.Series(pd.Categorical(data[name], categories=declared).codes,
                                index=data.index)
        return coded, declared
    return data, None


def _fit_design(model: str, y: pd.DataFrame, X: pd.DataFrame, labels: list | None,
                q: float, alpha: float = 0.05) -> pd.DataFrame:
    """statsmodels' fit of ``y`` on ``X``, flattened and named like the dp fit:
    columns ``params`` and ``side`` (+1 / -1 where the fit's interval of level
    ``1 - alpha``, estimate -/+ the normal quantile times its standard error,
    lies above / below 0; 0 where it holds 0).  A column that is 0 on every
    row (a level the data set lacks) is left out, as statsmodels' formula
    interface leaves it out: its coefficient is NaN."""
    import statsmodels.api as sm
    from scipy import stats

    if y.shape[1] != 1:
        raise ValueError(f"the response has {y.shape[1]} columns; declare its levels")
    names = [str(c) for c in X.columns]
    keep = np.asarray((X != 0).any(axis=0))
    if model in ("ols", "quantreg", "logit"):
        Xk = X.loc[:, keep]
        endog = y.iloc[:, 0]
        if model == "ols":
            res = sm.OLS(endog, Xk).fit()
        elif model == "quantreg":
            res = sm.QuantReg(endog, Xk).fit(q=q)
        else:
            res = sm.Logit(endog, Xk).fit(disp=0)
        params, bse = res.params.reindex(names), res.bse.reindex(names)
    else:
        res = sm.MNLogit(y.iloc[:, 0], X.loc[:, keep]).fit(disp=0)
        classes = np.unique(np.asarray(res.model.endog)).astype(int)
        eq = [str(labels[c]) if labels is not None else str(c) for c in classes[1:]]
        kept = [nm for nm, k in zip(names, keep) if k]
        index = [f"{x} (eq. {e})" for e in eq for x in kept]
        every = [f"{x} (eq. {e})" for e in eq for x in names]
        params = pd.Series(np.asarray(res.params, dtype=float).ravel(order="F"),
                           index=index).reindex(every)
        bse = pd.Series(np.asarray(res.bse, dtype=float).ravel(order="F"),
                        index=index).reindex(every)
    half = stats.norm.ppf(1.0 - alpha / 2.0) * bse
    side = np.where(params - half > 0, 1.0, np.where(params + half < 0, -1.0, 0.0))
    return pd.DataFrame({"params": params, "side": np.where(np.isfinite(half), side, 0.0)},
                        index=params.index)


class _NonPrivate:
    """statsmodels' non-private fit of each simulated data set.

    From a pilot DataFrame the design is built once (patsy, rows with a
    missing value dropped as statsmodels drops them) and each data set's fit
    takes the rows it drew; with a callable guess, or a formula whose
    stateful transforms (``center``, ``standardize``, splines) depend on the
    rows, each data set is built on its own.
    """

    def __init__(self, model: str, formula: str, guess, namespace: dict,
                 levels: Mapping | None, q: float, alpha: float = 0.05):
        self.model, self.formula, self.namespace, self.levels, self.q = (
            model, formula, namespace, levels, q)
        self.alpha = alpha
        self.design: tuple[pd.DataFrame, pd.DataFrame, list | None] | None = None
        if isinstance(guess, pd.DataFrame) and not _stateful_formula(formula):
            try:
                self.design = self._build(guess)
            except Exception:  # left to the per-data-set path, which reports None
                self.design = None
            if self.design is not None:
                kept = np.full(len(guess), -1, dtype=np.int64)
                kept[np.asarray(self.design[1].index, dtype=np.int64)] = np.arange(
                    len(self.design[1]))
                self.position = kept

    def _build(self, data: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame, list | None]:
        import patsy

        coded, labels = _coded(self.model, self.formula, data.reset_index(drop=True),
                               self.namespace, self.levels)
        env = patsy.EvalEnvironment([self.namespace])
        y, X = patsy.dmatrices(self.formula, coded, eval_env=env, NA_action="drop",
                               return_type="dataframe")
        return y, X, labels

    def __call__(self, data: pd.DataFrame, rows: np.ndarray | None) -> pd.DataFrame | None:
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                if self.design is not None and rows is not None:
                    y, X, labels = self.design
                    at = self.position[rows]
                    at = at[at >= 0]
                    return _fit_design(self.model, y.iloc[at], X.iloc[at], labels, self.q,
                                       self.alpha)
                y, X, labels = self._build(data)
                return _fit_design(self.model, y, X, labels, self.q, self.alpha)
        except Exception:  # e.g. perfect separation in a simulated data set
            return None


def _one_blas_thread():
    """One BLAS thread while the simulation runs, when threadpoolctl is
    installed: its linear algebra is on small matrices, where threads cost
    more than they save (on two busy cores the plan ran 2-3x slower)."""
    try:
        threadpoolctl = importlib.import_module("threadpoolctl")
    except ImportError:  # pragma: no cover - an optional dependency
        return contextlib.nullcontext()
    return threadpoolctl.threadpool_limits(limits=1, user_api="blas")


def _stateful_formula(formula: str) -> bool:
    from ..mechanisms.moments import stateful_transform

    try:
        return stateful_transform(formula) is not None
    except Exception:
        return True


def _check_methods(method, model: str) -> tuple[str, ...]:
    """``method=``: one method or a list, each checked as the dp_* function of
    ``model`` checks it (the same message), before anything is simulated."""
    choices = FAMILY_METHODS[model] + ROUTED_METHODS
    values = [method] if isinstance(method, str) else method
    if not isinstance(values, (Sequence, np.ndarray)) or isinstance(values, bytes):
        check_choice("method", method, choices)  # raises, naming the choices
    out = [check_choice("method", m, choices) for m in values]
    if not out:
        raise DPModelsError(f"method must name at least one of {list(choices)}, e.g. "
                            "['auto', 'histogram']")
    return tuple(dict.fromkeys(out))


def _simulate(fit_dp, formula: str, data: pd.DataFrame, eps: float, method: str, seed: int,
              interval: bool, *, bounds, levels, bins, namespace, extra: dict,
              n_boot: int | None, alpha: float):
    """One simulated release and fit: (model, flat params, dp intervals ``(k, 2)`` or None).

    The dp bootstrap runs only when ``interval``; otherwise the release is
    fitted with ``cov_type="naive"`` (the same estimates, no bootstrap), and
    with the dp fit where the naive one refuses (a rank-deficient released
    design, which the dp fit handles).
    """
    options = dict(extra)
    if method in ("auto", "histogram"):
        options["bins"] = bins  # the other releases take no bins
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        mdl = fit_dp(formula, data, epsilon=eps, bounds=bounds, levels=levels,
                     random_state=seed, eval_env=namespace, method=method, **options)
        kw: dict = {"random_state": seed}
        if n_boot is not None:
            kw["n_boot"] = n_boot
        if interval:
            res = mdl.fit(**kw)
            return mdl, _flat_params(res), _dp_intervals(res, alpha)
        try:
            res = mdl.fit(cov_type="naive")
        except SingularDesignError:
            res = mdl.fit(**kw)
        return mdl, _flat_params(res), None


def _bins_of(mdl) -> str:
    """The bins per continuous variable of a histogram release ("" for
    another release): "4" when every variable has 4, else "x: 4, z: 6"."""
    domain = getattr(getattr(mdl, "release", None), "domain", None)
    axes = [a for a in getattr(domain, "axes", ()) if getattr(a, "kind", "") == "continuous"]
    counts = {str(a.name): int(a.bins) for a in axes}
    if len(set(counts.values())) == 1:
        return str(next(iter(counts.values())))
    return ", ".join(f"{k}: {v}" for k, v in counts.items())


def _summaries(D: np.ndarray, W: np.ndarray, T: np.ndarray, k: int,
               F: np.ndarray | None = None, S: np.ndarray | None = None) -> dict[str, np.ndarray]:
    """Per coefficient: rmse, bias, noise_sd, their Monte Carlo standard errors,
    median width, no-information share, sampling sd; with ``F`` (the side of 0
    each dp interval lies on, +1 / -1 / 0 where it holds 0, one row per
    bootstrapped data set) and ``S`` (``(k, 2)`` per such data set: the
    non-private estimate's sign and its interval's side, `_np_sides()`), the
    power (F on the estimate's side) and the non-private power (S's interval
    not holding 0)."""
    nan = np.full(k, np.nan)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        ok = np.isfinite(D)
        m = ok.sum(axis=0)
        msq = np.nanmean(D**2, axis=0) if len(D) else nan
        rmse = np.sqrt(msq)
        bias = np.nanmean(D, axis=0) if len(D) else nan
        noise = np.sqrt(np.maximum(msq - bias**2, 0.0))  # divisor m: rmse^2 = bias^2 + noise^2
        # delta method: se(sqrt(mean d^2)) = sd(d^2) / sqrt(m) / (2 rmse)
        sd_sq = np.nanstd(D**2, axis=0, ddof=1) if len(D) > 1 else nan
        rmse_se = np.where(rmse > 0, sd_sq / np.sqrt(m) / (2 * rmse), 0.0)
        bias_se = (np.nanstd(D, axis=0, ddof=1) / np.sqrt(m)) if len(D) > 1 else nan
        width = np.median(W, axis=0) if len(W) else nan
        noinfo = np.mean(~np.isfinite(W), axis=0) if len(W) else nan
        sd = np.nanstd(T, axis=0, ddof=1) if len(T) > 1 else nan
        power = np_power = nan
        if F is not None and S is not None and len(F):
            power = np.mean((F != 0) & (F == S[:, :, 0]), axis=0)
            np_power = np.mean(S[:, :, 1] != 0, axis=0)
    return dict(rmse=rmse, bias=bias, noise_sd=noise, rmse_se=rmse_se, bias_se=bias_se,
                median_width=width, no_information=noinfo, sampling_sd=sd, power=power,
                np_power=np_power)


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
    reps: int = DEFAULT_REPS,
    random_state: None | int | np.random.Generator = None,
    n_boot: int | None = None,
    alpha: float = 0.05,
    q: float = 0.5,
    method: str | Sequence[str] = "auto",
    interval_reps: int | None = None,
) -> Plan:
    """Expected error of each coefficient against epsilon, for one or several
    mechanisms, before any release.

    **plan never reads private data.**  It uses the public inputs a release
    takes (formula, n, bounds, levels, bins) and the analyst's ``guess`` of
    the data, and simulates: ``reps`` data sets drawn from the guess, each
    released and fitted (``dpm.dp_<model>`` with each ``method=`` asked for)
    at every epsilon.  No budget is spent.  Give a guess that is public or
    synthetic: a plan made from the private data themselves is not protected
    by any epsilon.

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
        ``bins`` goes to the histogram release (``method="histogram"``, and
        ``"auto"``, where giving bins asks for the histogram); the other
        methods are simulated without it.
    guess : pandas.DataFrame or callable
        A small pilot DataFrame (resampled with replacement to n rows), or
        ``guess(rng, n) -> DataFrame`` drawing n rows of a parametric guess
        from the numpy Generator ``rng``.  Required.
    model : {"ols", "logit", "quantreg", "mnlogit"}
    reps : int
        Simulated data sets (>= 2); the same data sets are released at every
        epsilon and by every method, so the curves compare like with like.
        The Monte Carlo standard error of each RMSE (``rmse_se``) shrinks like
        ``1/sqrt(reps)``: about ``rmse / sqrt(2 * reps)`` (18% at the default
        15) when the error is mostly noise.
    random_state : None, int or numpy.random.Generator
        Seeds the simulation (the guess's draws, the simulated releases and
        their bootstraps).
    n_boot : int, optional
        Bootstrap replicates of each dp interval (default: the fit's own).
    alpha : float
        Level ``1 - alpha`` of the intervals whose width is reported.
    q : float
        The quantile, for ``model="quantreg"``.
    method : str or sequence of str
        The release(s) to simulate, each as ``dp_<model>(method=...)`` takes
        it (``"auto"`` by default; e.g. ``["auto", "histogram",
        "moments"]`` for OLS); compared side by side in ``str(plan)``, the
        table (``requested``) and the plot.
    interval_reps : int, optional
        Data sets per epsilon and method whose dp interval is bootstrapped
        for ``median_width`` and ``no_information`` (default 1, the first
        data set, the same at every epsilon; 0 skips them).  The bootstrap is most of a
        simulation's cost; the other fits use ``cov_type="naive"``, whose
        estimates are the same.

    Returns
    -------
    Plan
        ``.table`` (tidy, one row per method, epsilon and coefficient:
        rmse, bias, noise_sd, rmse_se, bias_se, median_width,
        no_information, sampling_sd, ...), ``str(plan)`` for a readable
        summary, ``.plot()`` for the privacy-utility curves.

    Raises
    ------
    DPModelsError
        A bad argument (``DPModelsTypeError``, also a ``TypeError``, for a
        wrong type), named, before anything is simulated; a method that the
        model does not take, with the dp_* function's own message.  A
        missing bound or level set, or a method that cannot serve the
        formula (e.g. ``"moments"`` with a stateful transform), is refused
        by that method's first simulated release, naming the method and the
        reason, before any other simulation.

    Notes
    -----
    With ``d = b_dp - b`` over the data sets whose private fit succeeded,
    ``b`` statsmodels' estimate on the same simulated rows: ``rmse =
    sqrt(mean(d**2))`` (the error privacy adds), ``bias = mean(d)``,
    ``noise_sd = sqrt(mean((d - bias)**2))``, so ``rmse**2 = bias**2 +
    noise_sd**2``.  ``rmse_se = sd(d**2) / (2 rmse sqrt(n_ok))`` (delta
    method) and ``bias_se = sd(d) / sqrt(n_ok)``.  Compare ``rmse`` with
    ``sampling_sd``, the error without privacy.  The privacy noise has
    scale 2/epsilon, so ``noise_sd`` falls roughly like 1/epsilon; the bias
    from binning, the threshold and clipping does not, and an RMSE that
    stays flat or rises with epsilon is that bias.  A coefficient the guess
    does not identify (e.g. a declared level the pilot lacks) has a NaN
    ``rmse``.

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
    >>> both = dpm.plan("y ~ x", n=2000, epsilon=[0.5, 2], bounds={"x": (0, 10),
    ...                 "y": (-5, 15)}, guess=guess, method=["histogram", "moments"], reps=3,
    ...                 interval_reps=0, random_state=0)
    >>> both.pivot("rmse").columns.tolist()
    [('histogram', 0.5), ('histogram', 2.0), ('moments', 0.5), ('moments', 2.0)]
    """
    started = time.perf_counter()
    # ---- public inputs, checked before anything is simulated --------------------------
    if not isinstance(formula, str) or "~" not in formula:
        raise DPModelsTypeError(f"formula must be a string such as 'y ~ x + C(g)', got "
                                f"{formula!r}")
    n = _check_int("n", n, 10)
    epsilons = _check_epsilons(epsilon)
    if not isinstance(model, str) or model not in PLAN_MODELS:
        raise DPModelsError(f"model must be one of {PLAN_MODELS}, got {model!r}")
    methods = _check_methods(method, model)
    _check_mapping("bounds", bounds)
    _check_mapping("levels", levels)
    if not (isinstance(bins, (str, numbers.Integral, Mapping)) and not isinstance(bins, bool)):
        raise DPModelsTypeError(f'bins must be "auto", an int or a dict, got {bins!r}')
    reps = _check_int("reps", reps, 2)
    if n_boot is not None:
        n_boot = _check_int("n_boot", n_boot, 2)
    if interval_reps is None:
        interval_reps = min(reps, DEFAULT_INTERVAL_REPS)
    interval_reps = _check_int("interval_reps", interval_reps, 0)
    if interval_reps > reps:
        raise DPModelsError(f"interval_reps must be at most reps = {reps}, got {interval_reps}")
    if isinstance(alpha, bool) or not isinstance(alpha, numbers.Real) or not 0 < alpha < 1:
        raise DPModelsError(f"alpha must be a number in (0, 1), got {alpha!r}")
    if isinstance(q, bool) or not isinstance(q, numbers.Real) or not 0 < q < 1:
        raise DPModelsError(f"q must be a number in (0, 1), got {q!r}")
    check_random_state(random_state)
    _check_guess(guess)
    namespace = caller_namespace(1)

    with _one_blas_thread():
        # ---- simulated data and their non-private fits, once for every epsilon and method ---
        rng = np.random.default_rng(random_state)
        fit_dp = _dp_function(model)
        # one seed per (epsilon, data set), shared by the methods (common random numbers)
        seeds = np.random.default_rng(rng.integers(2**63 - 1)).integers(
            2**63 - 1, size=(len(epsilons), reps))
        drawn = [_draw(guess, rng, n)]  # the others once every method has passed its first
        datasets = [drawn[0][0]]
        extra = {"q": q} if model == "quantreg" else {}
        sim = dict(bounds=bounds, levels=levels, bins=bins, namespace=namespace, extra=extra,
                   n_boot=n_boot, alpha=alpha)

        def run(m: str, e: int, r: int):
            return _simulate(fit_dp, formula, datasets[r], epsilons[e], m, int(seeds[e, r]),
                             r < interval_reps, **sim)

        # ---- each method's first release: a bad domain, formula or method is refused here ---
        first: dict[str, tuple | Exception] = {}
        refused: dict[str, Exception] = {}
        for m in methods:
            try:
                first[m] = run(m, 0, 0)
            except (DPModelsError, TypeError) as exc:
                if not _simulation_failure(exc):
                    refused[m] = exc
                first[m] = exc
            except (ValueError, np.linalg.LinAlgError) as exc:
                first[m] = exc
        if refused:
            m, exc = next(iter(refused.items()))
            if len(refused) == len(methods):
                raise exc  # a bad domain or formula: the analyst's input, not the noise
            cls = DPModelsTypeError if isinstance(exc, TypeError) else DPModelsError
            raise cls(f"method={m!r} cannot serve this plan (the other methods can): {exc}") from exc
        drawn += [_draw(guess, rng, n) for _ in range(reps - 1)]
        datasets = [d for d, _ in drawn]
        nonprivate = _NonPrivate(model, formula, guess, namespace, levels, q, float(alpha))
        fits = [nonprivate(d, rows) for d, rows in drawn]
        truths = [f["params"] if f is not None else None for f in fits]

        # ---- the simulation -----------------------------------------------------------------
        rows, failures = [], {}
        names: list[str] | None = None
        for m in methods:
            for e, eps in enumerate(epsilons):
                widths, diffs, used, grid = [], [], None, ""
                found, sides = [], []  # the dp and non-private intervals' sides
                for r in range(reps):
                    try:
                        out = first.pop(m) if (e == 0 and r == 0) else run(m, e, r)
                        if isinstance(out, Exception):
                            raise out
                    except (DPModelsError, TypeError, ValueError, np.linalg.LinAlgError) as exc:
                        label = f"method={m!r}: " if len(methods) > 1 else ""
                        failures.setdefault(eps, []).append(f"{label}{type(exc).__name__}: {exc}")
                        continue
                    mdl, b, w = out
                    used = used or (getattr(mdl, "method", "") or "histogram")
                    grid = grid or ("" if getattr(mdl, "method", "") else _bins_of(mdl))
                    if names is None:
                        names = list(b.index)
                    if w is not None:
                        ci = pd.DataFrame(w, index=b.index).reindex(names).to_numpy(float)
                        widths.append(ci[:, 1] - ci[:, 0])
                        found.append(np.where(ci[:, 0] > 0, 1.0, np.where(ci[:, 1] < 0, -1.0,
                                                                          0.0)))
                        sides.append(_np_sides(fits[r], names))
                    b = b.reindex(names)
                    t = truths[r]
                    diffs.append((b - (t.reindex(names) if t is not None else np.nan))
                                 .to_numpy(float))
                if names is None:
                    continue
                k = len(names)
                W = np.vstack(widths) if widths else np.full((0, k), np.nan)
                D = np.vstack(diffs) if diffs else np.full((0, k), np.nan)
                T = np.vstack([t.reindex(names).to_numpy(float) for t in truths if t is not None]) \
                    if any(t is not None for t in truths) else np.full((0, k), np.nan)
                F = np.vstack(found) if found else None
                S = np.stack(sides) if sides else None
                s = _summaries(D, W, T, k, F, S)
                for j, nm in enumerate(names):
                    rows.append({"epsilon": eps, "coef": nm,
                                 **{c: s[c][j] for c in ("rmse", "bias", "median_width",
                                                         "no_information", "sampling_sd")},
                                 "method": used if used is not None else m, "n_ok": len(D),
                                 "requested": m, "noise_sd": s["noise_sd"][j],
                                 "rmse_se": s["rmse_se"][j], "bias_se": s["bias_se"][j],
                                 "n_intervals": len(W), "bins": grid,
                                 "power": s["power"][j], "np_power": s["np_power"][j]})
        if not rows:
            raise DPModelsError(
                "every simulated release failed: "
                + "; ".join(f"epsilon {e:g}: {v[0]}" for e, v in failures.items()))
    table = pd.DataFrame(rows, columns=TABLE_COLUMNS)
    return Plan(table=table, formula=formula, model=model, n=n, reps=reps, alpha=float(alpha),
                failures=failures, methods=methods, interval_reps=interval_reps,
                seconds=time.perf_counter() - started)


def _np_sides(fit: pd.DataFrame | None, names: list[str]) -> np.ndarray:
    """``(k, 2)``: per coefficient the side a dp interval must be on to count
    as found (the sign of the non-private estimate) and the side the
    non-private interval is on (+1 / -1 / 0); 0 and 0 where the data set has
    no non-private fit."""
    if fit is None:
        return np.zeros((len(names), 2))
    f = fit.reindex(names)
    est = f["params"].to_numpy(float)
    return np.column_stack([np.where(np.isfinite(est), np.sign(est), 0.0),
                            f["side"].fillna(0.0).to_numpy(float)])


def _simulation_failure(exc: Exception) -> bool:
    """Errors that the noise of one simulated release can cause (a singular
    design, no released cells), as opposed to a bad input."""
    return isinstance(exc, (SingularDesignError, SeparationError))
