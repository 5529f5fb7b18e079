"""Figures of a fit and of a release: forest plots of the coefficients and
marginals of a histogram release.

Everything drawn here is post-processing (PRIVACY.md rule 6): the estimates
and intervals of a results object, the released counts summed into
marginals, and public inputs (the domain, the threshold).  Nothing reads raw
rows.  A non-private estimate the analyst passes to
`plot_coefficients()` is the analyst's own input and is drawn as given.

matplotlib is an optional dependency (``pip install 'dpmodels[plot]'``); it
is imported inside the functions, so ``import dpmodels`` never needs it.

Conventions of the figures
--------------------------
* **Forest plot** (`plot_coefficients()`): one row per coefficient, first
  at the top.  The default (dp, noise-aware) interval is a solid bar with a
  round marker just above the row's line; the naive interval (which treats
  the noisy counts as data) a dashed bar with a square marker just below.
  A dp interval that is infinite -- the library's verdict that the release
  carries no information about that coefficient -- is drawn as arrows from
  the estimate to the edge(s) of the axes with the label "no information".
  Optional non-private estimates are black diamonds on the row's line.
  Coefficients whose extents differ more than OWN_SCALE_RATIO-fold get one
  row (Axes) each, on its own x range; a multinomial logit has one panel per
  equation, or per coefficient (a row per equation) when its coefficients'
  scales differ so, in a grid of at most MAX_PANELS_PER_ROW columns with one
  legend below.
* **Release marginal** (`plot_release()`): bars of the released counts
  summed over the other variables (1-D) with the threshold as a horizontal
  line, or a heat map of a 2-D marginal with the threshold in the title and
  on the colour bar.  A continuous variable is drawn on its bin edges, on the
  scale it was binned on (a log axis for a log-binned one).
* **Readable**: titles are wrapped to the room they have (`wrap_title()`);
  tick labels that would overlap are turned upright, then thinned
  (`readable_tick_labels()`); the tests check every figure with
  `overlapping_tick_labels()` on the rendered image.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd
from scipy import stats

from ..core.errors import DPModelsError, UnknownVariableError
from ..core.report import noise_epsilon
from ..domain.axes import SCALES

if TYPE_CHECKING:  # pragma: no cover - typing only
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

    from ..mechanisms.histogram import PrivateHistogram

__all__ = ["plot_coefficients", "plot_release", "require_pyplot", "INSTALL_HINT", "wrap_title",
           "overlapping_tick_labels", "readable_tick_labels", "MAX_PANELS_PER_ROW",
           "OWN_SCALE_RATIO"]

INSTALL_HINT = "pip install 'dpmodels[plot]'"

#: Vertical offset of the dp (up) and naive (down) bars from a coefficient's row.
_OFFSET = 0.15
_DP_STYLE: dict[str, Any] = dict(color="C0", marker="o", linestyle="none", capsize=3, elinewidth=2)
_NAIVE_STYLE = dict(color="C1", marker="s", linestyle="none", capsize=3, elinewidth=1.2,
                    markerfacecolor="white")


def require_pyplot():
    """``matplotlib.pyplot``, or an ImportError that says how to install it."""
    try:
        import matplotlib.pyplot as plt
    except ImportError as exc:  # pragma: no cover - exercised only without matplotlib
        raise ImportError(
            f"dpmodels' plots need matplotlib, which is not installed: {INSTALL_HINT}"
        ) from exc
    return plt


# ---------------------------------------------------------------------------
# layout helpers (also used by dpmodels.front.planning)
# ---------------------------------------------------------------------------

#: Average width of a character of matplotlib's default font (DejaVu Sans), in
#: units of the font size: a line of ``width / (0.6 * fontsize / 72)`` characters
#: fits ``width`` inches (0.6 errs on the wide side: capitals, digits).
_CHAR_WIDTH = 0.6


def wrap_title(text: str, width: float, fontsize: float = 10.0) -> str:
    """``text`` broken into lines that fit ``width`` inches at ``fontsize``
    points (a long formula in a title is wrapped, never clipped).

    Existing line breaks are kept; a word longer than a line (a long
    coefficient name) is broken inside.

    Parameters
    ----------
    text : str
        The title.
    width : float
        The width available, in inches (e.g. the figure's or a panel's).
    fontsize : float
        The title's font size in points (default 10).

    Returns
    -------
    str
        The title with newlines.

    Examples
    --------
    >>> print(wrap_title("RMSE of wage ~ experience * C(sex) + tenure + C(region)", 2.5))
    RMSE of wage ~ experience *
    C(sex) + tenure + C(region)
    """
    import textwrap

    per_line = max(8, int(width * 72 / (_CHAR_WIDTH * fontsize)))
    return "\n".join(line for part in str(text).split("\n")
                     for line in (textwrap.wrap(part, per_line) or [""]))


def _label_boxes(axis):
    """(text, window extent) of the drawn tick labels of an x or y axis
    (major and minor, inside the view), in order along the axis; call after a
    draw."""
    fig = axis.figure
    # Agg-based canvases (Agg, inline, Qt, Tk, macOS) have their own renderer
    get = getattr(fig.canvas, "get_renderer", None)
    renderer = get() if get is not None else fig._get_renderer()
    lo, hi = sorted(axis.get_view_interval())
    tol = 1e-9 * (hi - lo)
    found = []
    for tick in list(axis.get_major_ticks()) + list(axis.get_minor_ticks()):
        if not (lo - tol <= tick.get_loc() <= hi + tol):
            continue
        for t in (tick.label1, tick.label2):
            if t.get_visible() and t.get_text():
                found.append((tick.get_loc(), t.get_text(), t.get_window_extent(renderer)))
    found.sort(key=lambda f: f[0])
    return [(text, box) for _, text, box in found]


def _crowded(axis) -> list[tuple[str, str]]:
    boxes = _label_boxes(axis)
    return [(ta, tb) for (ta, a), (tb, b) in zip(boxes, boxes[1:]) if a.overlaps(b)]


def overlapping_tick_labels(fig) -> list[tuple[str, str]]:
    """Pairs of tick labels of the same axis that overlap on the rendered
    figure (empty when every label can be read).

    The figure is drawn first (so its layout and tick labels are final);
    each x and y axis of each Axes is checked, neighbour by neighbour.

    Parameters
    ----------
    fig : matplotlib Figure

    Returns
    -------
    list of (str, str)
        The texts of the overlapping pairs.

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> import matplotlib.pyplot as plt
    >>> fig, ax = plt.subplots(figsize=(2, 2))
    >>> _ = ax.set_xticks([0, 1, 2], ["-150000", "-100000", "-50000"])
    >>> _ = ax.set_xlim(-0.5, 2.5)
    >>> overlapping_tick_labels(fig)[0]
    ('-150000', '-100000')
    """
    fig.canvas.draw()
    return [pair for ax in fig.axes for axis in (ax.xaxis, ax.yaxis) for pair in _crowded(axis)]


def readable_tick_labels(ax, which: str = "x") -> None:
    """Make the fixed tick labels (levels, bin ranges) of one axis readable:
    x labels that overlap are turned upright, then, as on any axis, thinned
    to every k-th label until none overlaps.

    Call it after the figure's layout (``fig.tight_layout()``), and lay out
    again afterwards: turned labels need more room below the axes.

    Parameters
    ----------
    ax : matplotlib Axes
    which : {"x", "y"}

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> import matplotlib.pyplot as plt
    >>> fig, ax = plt.subplots(figsize=(3, 2))
    >>> _ = ax.bar(range(10), range(10), tick_label=[f"Region{i:02d}" for i in range(10)])
    >>> readable_tick_labels(ax)
    >>> ax.get_xticklabels()[0].get_rotation()
    90.0
    """
    if which not in ("x", "y"):
        raise ValueError(f'which must be "x" or "y", got {which!r}')
    axis = ax.xaxis if which == "x" else ax.yaxis

    def crowded() -> bool:
        ax.figure.canvas.draw()
        return bool(_crowded(axis))

    if not crowded():
        return
    if which == "x":
        ax.tick_params(axis="x", labelrotation=90)
        if not crowded():
            return
    ticks = list(axis.get_ticklocs())
    texts = [t.get_text() for t in axis.get_ticklabels()]
    for step in range(2, len(texts) + 1):
        axis.set_ticks(ticks, [t if i % step == 0 else "" for i, t in enumerate(texts)])
        if not crowded():
            return


# ---------------------------------------------------------------------------
# coefficients
# ---------------------------------------------------------------------------


def _inner(results):
    """The statsmodels results behind a wrapper (or the object itself)."""
    try:
        return object.__getattribute__(results, "_results")
    except AttributeError:
        return results


def _naive_conf_int(inner, alpha: float) -> np.ndarray:
    """``(k, 2)`` naive intervals over the flattened params (equation by equation).

    The naive covariance is the one ``fit(cov_type="naive")`` gives on the
    same release: statsmodels' ``normalized_cov_params * scale``, which the dp
    covariance does not overwrite; t quantiles for the regression models
    (OLS, quantile regression), normal ones for the choice models, as their
    naive fits do.
    """
    from statsmodels.regression.linear_model import RegressionResults

    params = np.asarray(inner.params, dtype=float).ravel(order="F")
    cov = np.asarray(inner.normalized_cov_params, dtype=float) * float(inner.scale)
    with np.errstate(invalid="ignore"):
        se = np.sqrt(np.diag(cov))
    if isinstance(inner, RegressionResults):
        q = stats.t.ppf(1 - alpha / 2, inner.df_resid)
    else:
        q = stats.norm.ppf(1 - alpha / 2)
    return np.column_stack([params - q * se, params + q * se])


def _equations(inner) -> list[str] | None:
    """Names of a multinomial model's equations (non-base levels), else None."""
    if np.ndim(inner.params) != 2:
        return None
    J1 = np.shape(inner.params)[1]
    labels = getattr(inner, "outcome_labels", None)
    if labels is not None and len(labels) == J1 + 1:
        return [str(v) for v in list(labels)[1:]]
    ynames = getattr(inner.model, "_ynames_map", {}) or {}
    return [str(ynames.get(j, j)) for j in range(1, J1 + 1)]


def _nonprivate_values(nonprivate, names: list[str], equations: list[str] | None) -> np.ndarray:
    """The user's non-private estimates as a flat float array over the
    flattened params (NaN where not given)."""
    k = len(names) * (len(equations) if equations else 1)
    flat_names = ([f"{x} (eq. {e})" for e in equations for x in names] if equations
                  else list(names))
    if isinstance(nonprivate, pd.DataFrame):
        if not equations:
            raise ValueError("nonprivate: a DataFrame is for a multinomial model (one column "
                             "per equation); give a Series, dict or array")
        frame = nonprivate.copy()
        frame.columns = [str(c) for c in frame.columns]
        unknown = [c for c in frame.columns if c not in equations]
        if unknown:
            raise ValueError(f"nonprivate has columns {unknown} that are not equations of the "
                             f"model ({equations})")
        bad = [i for i in frame.index if i not in names]
        if bad:
            raise ValueError(f"nonprivate names coefficients {bad} the model does not have "
                             f"({names})")
        frame = frame.reindex(index=names, columns=equations)
        return frame.to_numpy(float).ravel(order="F")
    if isinstance(nonprivate, (pd.Series, Mapping)):
        items = dict(nonprivate.items())
        out = np.full(k, np.nan)
        for key, value in items.items():
            key = str(key)
            if key not in flat_names:
                raise ValueError(f"nonprivate names a coefficient {key!r} the model does not "
                                 f"have ({flat_names})")
            out[flat_names.index(key)] = float(value)
        return out
    arr = np.asarray(nonprivate, dtype=float)
    if equations and arr.shape == (len(names), len(equations)):
        return arr.ravel(order="F")
    if arr.size != k:
        raise ValueError(f"nonprivate has {arr.size} values; the model has {k} coefficients "
                         f"({flat_names})")
    return arr.ravel()


def _finite_span(*arrays) -> tuple[float, float]:
    vals = np.concatenate([np.asarray(a, dtype=float).ravel() for a in arrays])
    vals = vals[np.isfinite(vals)]
    if vals.size == 0:
        return -1.0, 1.0
    lo, hi = float(vals.min()), float(vals.max())
    pad = 0.08 * (hi - lo) if hi > lo else max(abs(lo), 1.0) * 0.1
    return lo - pad, hi + pad


#: Most equations side by side in a multinomial logit's figure (more: a grid).
MAX_PANELS_PER_ROW = 3


def _readable_x(ax) -> None:
    """At most five x ticks (fewer on a narrow panel: one per 0.9 inch), on
    round steps, large or tiny values in scientific notation with the power
    shown once (tick labels such as "-150000-100000-50000" ran together)."""
    from matplotlib.ticker import MaxNLocator, ScalarFormatter

    width = ax.get_position().width * ax.figure.get_size_inches()[0]  # inches
    ax.xaxis.set_major_locator(MaxNLocator(nbins=int(np.clip(width / 0.9, 2, 5)),
                                           steps=[1, 2, 2.5, 5, 10], min_n_ticks=3))
    fmt = ScalarFormatter(useMathText=True)
    fmt.set_powerlimits((-3, 4))
    ax.xaxis.set_major_formatter(fmt)


def _forest(ax, names: Sequence[str], est: np.ndarray, dp: np.ndarray | None,
            naive: np.ndarray | None, nonprivate: np.ndarray | None) -> None:
    """Draw one forest panel on ``ax``."""
    from matplotlib.lines import Line2D

    from ._plot_text import annotate_inside

    k = len(names)
    y = np.arange(k, dtype=float)
    lo, hi = _finite_span(est, dp if dp is not None else [], naive if naive is not None else [],
                          nonprivate if nonprivate is not None else [])
    ax.set_xlim(lo, hi)
    ax.axvline(0.0, color="0.6", linewidth=0.8, linestyle=":", zorder=0, gid="zero")
    handles = []
    unbounded = False
    if dp is not None:
        dy = -_OFFSET if naive is not None else 0.0
        for i in range(k):
            lower, upper = dp[i]
            if np.isfinite(lower) and np.isfinite(upper):
                xerr = [[est[i] - lower], [upper - est[i]]]
            else:
                xerr = None
            ax.errorbar([est[i]], [y[i] + dy], xerr=xerr, label=f"_dp:{names[i]}", **_DP_STYLE)
            for side, end in (("left", lower), ("right", upper)):
                if np.isfinite(end):
                    continue
                unbounded = True
                ax.annotate("", xy=(0.0 if side == "left" else 1.0, y[i] + dy),
                            xycoords=("axes fraction", "data"),
                            xytext=(est[i], y[i] + dy), textcoords="data",
                            arrowprops=dict(arrowstyle="-|>", color="C3", linewidth=1.5),
                            gid="infinite")
            if not (np.isfinite(lower) and np.isfinite(upper)):
                # kept inside the Axes whatever the numbers (an estimate near the edge of
                # the axis, a narrow panel): moved by the least amount at each drawing
                if k > 1:  # above the arrow, in the room between rows
                    annotate_inside(ax, "no information (interval unbounded)",
                                    xy=(est[i], y[i] + dy), xytext=(0, 6), ha="center",
                                    fontsize=8, color="C3", gid="infinite-label")
                else:  # a row of its own has no room above: on the arrow, at its right end
                    annotate_inside(ax, "no information (interval unbounded)",
                                    xy=(1.0, y[i] + dy), xycoords=("axes fraction", "data"),
                                    xytext=(-12, 0), ha="right", va="center", fontsize=7,
                                    color="C3", gid="infinite-label",
                                    bbox=dict(boxstyle="round,pad=0.15", fc="white", ec="none"))
        handles.append(Line2D([], [], **{k_: v for k_, v in _DP_STYLE.items()
                                         if k_ not in ("capsize", "elinewidth")},
                              label="dp interval (noise-aware)"))
    if naive is not None:
        dy = _OFFSET if dp is not None else 0.0
        for i in range(k):
            lower, upper = naive[i]
            xerr = ([[est[i] - lower], [upper - est[i]]]
                    if np.isfinite(lower) and np.isfinite(upper) else None)
            c = ax.errorbar([est[i]], [y[i] + dy], xerr=xerr, label=f"_naive:{names[i]}",
                            **_NAIVE_STYLE)
            for line in c.lines[2]:
                line.set_linestyle("--")
        handles.append(Line2D([], [], color="C1", marker="s", markerfacecolor="white",
                              linestyle="--", label="naive interval (noise ignored)"))
    if unbounded:
        handles.append(Line2D([], [], color="C3", marker=">", linestyle="-",
                              label="unbounded: no information"))
    if nonprivate is not None:
        ax.plot(nonprivate, y, linestyle="none", marker="D", color="black", markersize=5,
                label="non-private estimate", gid="nonprivate", zorder=5)
        handles.append(Line2D([], [], linestyle="none", marker="D", color="black",
                              markersize=5, label="non-private estimate"))
    ax.set_yticks(y)
    ax.set_yticklabels(list(names))
    ax.set_ylim(k - 0.5, -0.5)  # first coefficient at the top
    _readable_x(ax)
    ax.set_xlabel("estimate")
    ax.grid(axis="x", alpha=0.3)
    wide = ax.get_position().width * ax.figure.get_size_inches()[0] > 3.5  # inches
    ax.legend(handles=handles, fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.2),
              ncol=2 if wide else 1, frameon=False)


def plot_coefficients(results, ax: Axes | None = None, *, nonprivate=None,
                      alpha: float = 0.05, naive: bool = True,
                      scale: str = "auto") -> Figure:
    """Forest plot of a dp_* fit: estimates with their dp and naive intervals.

    Parameters
    ----------
    results
        The results of a ``dp_*(...).fit()`` (any model; also available as
        ``results.plot_coefficients(...)``).
    ax : matplotlib Axes, optional
        Where to draw.  By default a new figure is made; for a multinomial
        logit it has one panel per equation (non-base response level).  Given
        one Axes, a multinomial model's coefficients are drawn on it with
        grouped labels ``"x (eq. level)"``.
    nonprivate : pandas Series, dict, array or DataFrame, optional
        The analyst's own non-private estimates (e.g. statsmodels on data the
        analyst may see), drawn as diamonds.  A Series or dict is matched by
        coefficient name (names the model lacks are an error, missing ones
        are left out); an array must have one value per coefficient in
        ``params`` order.  For a multinomial model: a DataFrame or array
        shaped like ``params`` (coefficients x equations), or a dict keyed
        by ``"x (eq. level)"``.
    alpha : float
        Intervals of level ``1 - alpha`` (default 95%).
    naive : bool
        Also draw the naive intervals (default True).  On a fit made with
        ``cov_type="naive"`` only the naive intervals exist and are drawn.
    scale : {"auto", "shared", "each"}
        "shared": every coefficient on one x axis; "each": one row per
        coefficient, each on its own x range (a slope of 0.001 beside an
        intercept of 500 is then visible); "auto" (default): "each" when the
        widest coefficient's extent is more than OWN_SCALE_RATIO (20) times
        the narrowest's, else "shared".  A multinomial logit's figure has one
        panel per equation ("shared") or one panel per coefficient, each on
        its own x range with a row per equation ("each"), in a grid of at
        most MAX_PANELS_PER_ROW (3) columns.  Ignored with ``ax``.

    Returns
    -------
    matplotlib.figure.Figure

    Notes
    -----
    The dp intervals are ``results.conf_int(alpha)``; an infinite one (the
    release carries no information about the coefficient) is drawn as red
    arrows from the estimate to the edge of the axes, labelled "no
    information".  The naive intervals use the covariance that
    ``fit(cov_type="naive")`` gives on the same release.  Everything drawn
    comes from the results (post-processing) and the analyst's own
    ``nonprivate`` values.

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> import numpy as np, pandas as pd, dpmodels as dpm
    >>> rng = np.random.default_rng(0)
    >>> df = pd.DataFrame({"x": rng.uniform(0, 10, 4000), "g": rng.choice(["a", "b"], 4000)})
    >>> df["y"] = 1 + 0.5 * df["x"] + (df["g"] == "b") + rng.normal(size=4000)
    >>> res = dpm.dp_ols("y ~ x + C(g)", df, epsilon=1.0, bounds={"x": (0, 10), "y": (-5, 15)},
    ...                  levels={"g": ["a", "b"]}, random_state=0).fit(random_state=0)
    >>> fig = res.plot_coefficients(nonprivate={"Intercept": 1.0, "C(g)[T.b]": 1.0, "x": 0.5})
    >>> [t.get_text() for t in fig.axes[0].get_yticklabels()]
    ['Intercept', 'C(g)[T.b]', 'x']
    """
    plt = require_pyplot()
    if not (isinstance(alpha, (int, float)) and not isinstance(alpha, bool) and 0 < alpha < 1):
        raise ValueError(f"alpha must be a number in (0, 1), got {alpha!r}")
    inner = _inner(results)
    names = [str(v) for v in np.atleast_1d(inner.model.exog_names)]
    equations = _equations(inner)
    est = np.asarray(inner.params, dtype=float).ravel(order="F")
    dp_active = inner._dp_active() if hasattr(inner, "_dp_active") else False
    dp = (np.asarray(inner.dp_inference.conf_int(alpha), dtype=float).reshape(-1, 2)
          if dp_active else None)
    nv = _naive_conf_int(inner, alpha) if (naive or not dp_active) else None
    npv = _nonprivate_values(nonprivate, names, equations) if nonprivate is not None else None
    title = _coef_title(inner, alpha, dp_active)
    K = len(names)
    if equations and ax is None:
        J = len(equations)
        if _own_scales(scale, est, dp, nv, npv):
            # a panel per coefficient, on its own x range, a row per equation
            panels = [(x, [j * K + i for j in range(J)]) for i, x in enumerate(names)]
            return _forest_grid(plt, panels, equations, est, dp, nv, npv, title,
                                ylabel="equation (response level)")
        # a panel per equation, every coefficient on its x axis
        panels = [(f"equation: {e}", list(range(j * K, (j + 1) * K)))
                  for j, e in enumerate(equations)]
        return _forest_grid(plt, panels, names, est, dp, nv, npv, title)
    labels = ([f"{x} (eq. {e})" for e in equations for x in names] if equations else names)
    if ax is None and _own_scales(scale, est, dp, nv, npv):
        return _forest_rows(plt, labels, est, dp, nv, npv, title)
    if ax is None:
        fig, ax = plt.subplots(figsize=(6.4, 0.55 * len(labels) + 1.6))
    else:
        fig = ax.figure
    _forest(ax, labels, est, dp, nv, npv)
    ax.set_title(wrap_title(title, _width(ax)), fontsize=10)
    fig.tight_layout()
    return fig


def _width(ax) -> float:
    """An Axes' width in inches."""
    return float(ax.get_position().width * ax.figure.get_size_inches()[0])


def _title_room(ax) -> float:
    """The widest title (inches) that, centred on ``ax``, stays inside its
    figure."""
    box = ax.get_position()
    centre = (box.x0 + box.x1) / 2
    return float(2 * min(centre, 1 - centre) * ax.figure.get_size_inches()[0] - 0.2)


#: The legend entries of a forest plot, in order (their labels).
_LEGEND_ORDER = ("dp interval (noise-aware)", "naive interval (noise ignored)",
                 "unbounded: no information", "non-private estimate")


def _take_legends(axes) -> list:
    """Remove the panels' legends; their entries, each once, in a fixed order
    (a panel without an unbounded interval has no entry for it)."""
    found: dict[str, Any] = {}
    for a in axes:
        legend = a.get_legend()
        if legend is None:
            continue
        for h, t in zip(legend.legend_handles, legend.get_texts()):
            found.setdefault(t.get_text(), h)
        legend.remove()
    return [found[k] for k in _LEGEND_ORDER if k in found]


def _figure_legend(fig, handles) -> tuple[float, float, float, float]:
    """The legend once, centred below the panels; lay the figure out above it
    (the rectangle left for the panels is returned)."""
    ncol = 2 if fig.get_size_inches()[0] < 8 else 4
    fig.legend(handles=handles, loc="lower center", ncol=ncol, fontsize=8, frameon=False)
    lines = -(-len(handles) // ncol)
    rect = (0.0, (0.1 + 0.22 * lines) / fig.get_size_inches()[1], 1.0, 1.0)
    fig.tight_layout(rect=rect)
    return rect


def _settle(fig, ax, which: Sequence[str], rect=(0.0, 0.0, 1.0, 1.0)) -> None:
    """Lay the figure out, make the fixed tick labels of ``ax`` readable
    (`readable_tick_labels()`), lay out again (upright labels need room),
    until no label overlaps."""
    axes = {"x": ax.xaxis, "y": ax.yaxis}
    for _ in range(4):
        fig.tight_layout(rect=rect)
        fig.canvas.draw()
        crowded = [w for w in which if _crowded(axes[w])]
        if not crowded:
            return
        for w in crowded:
            readable_tick_labels(ax, w)


def _forest_grid(plt, panels, rows, est, dp, nv, npv, title, ylabel=""):
    """Forest panels in a grid of at most MAX_PANELS_PER_ROW columns sharing
    their row labels; ``panels`` is a list of (panel title, flat indices)."""
    n, r = len(panels), len(rows)
    cols = min(n, MAX_PANELS_PER_ROW)
    grid_rows = -(-n // cols)
    fig, axes = plt.subplots(grid_rows, cols, sharey=True, squeeze=False,
                             figsize=(4.2 * cols, (0.45 * r + 1.5) * grid_rows + 1.0))
    for a in axes.ravel()[n:]:
        a.remove()  # the grid's empty places
    used = axes.ravel()[:n]
    for (name, idx), a in zip(panels, used):
        pick = np.asarray(idx)
        _forest(a, rows, est[pick], None if dp is None else dp[pick],
                None if nv is None else nv[pick], None if npv is None else npv[pick])
        a.set_title(wrap_title(name, _width(a)), fontsize=10)
    for a in axes[:, 0]:
        a.set_ylabel(ylabel)
    fig.suptitle(wrap_title(title, fig.get_size_inches()[0]), fontsize=10)
    _figure_legend(fig, _take_legends(used))
    return fig


#: ``scale="auto"`` gives each coefficient its own axis when the widest
#: coefficient's extent (its intervals and estimates) is this many times the
#: narrowest's: on one axis the narrow ones would shrink to a dot.
OWN_SCALE_RATIO = 20.0


def _extents(est, *intervals) -> np.ndarray:
    """Each coefficient's extent: max - min over its estimate and the ends of
    its finite intervals; NaN for a coefficient with no finite interval (an
    unbounded one has no scale to compare)."""
    est = np.asarray(est, float)
    lo, hi = est.copy(), est.copy()
    seen = np.zeros(est.size, bool)
    for a in intervals:
        if a is None:
            continue
        a = np.asarray(a, float).reshape(est.size, -1)
        ok = np.all(np.isfinite(a), axis=1)
        seen |= ok
        lo = np.where(ok, np.minimum(lo, a.min(axis=1)), lo)
        hi = np.where(ok, np.maximum(hi, a.max(axis=1)), hi)
    return np.where(seen & np.isfinite(est), hi - lo, np.nan)


def _own_scales(scale: str, est, dp, nv, npv) -> bool:
    if scale not in ("auto", "shared", "each"):
        raise ValueError(f'scale must be "auto", "shared" or "each", got {scale!r}')
    if scale != "auto" or len(est) < 2:
        return scale == "each"
    ext = _extents(est, dp, nv)
    ext = ext[np.isfinite(ext) & (ext > 0)]
    return bool(ext.size >= 2 and np.max(ext) > OWN_SCALE_RATIO * np.min(ext))


def _forest_rows(plt, labels, est, dp, nv, npv, title):
    """One row (an Axes with its own x range) per coefficient, the legend once."""
    k = len(labels)
    fig, axes = plt.subplots(k, 1, figsize=(6.4, 0.75 * k + 1.8), squeeze=False)
    for i, a in enumerate(axes[:, 0]):
        pick = slice(i, i + 1)
        _forest(a, labels[pick], est[pick], None if dp is None else dp[pick],
                None if nv is None else nv[pick], None if npv is None else npv[pick])
        a.set_xlabel("")
    axes[-1, 0].set_xlabel("estimate (each row on its own scale)")
    fig.suptitle(wrap_title(title, fig.get_size_inches()[0]), fontsize=10)
    _figure_legend(fig, _take_legends(axes[:, 0]))
    return fig


def _coef_title(inner, alpha: float, dp_active: bool) -> str:
    level = f"{100 * (1 - alpha):g}%"
    privacy = getattr(inner, "privacy", None)
    eps = "" if privacy is None else f", epsilon = {privacy.epsilon:g}"
    kind = "dp and naive" if dp_active else "naive (fit with cov_type='dp' for dp)"
    return f"{level} intervals: {kind}{eps}"


# ---------------------------------------------------------------------------
# release marginals
# ---------------------------------------------------------------------------


def _axis_of(release, name: str):
    if not isinstance(name, str) or name not in release.domain.names:
        raise UnknownVariableError(
            f"the release has no variable {name!r}; it holds {list(release.domain.names)}")
    return release.domain.axis(name)


def _dense_marginal(release, names: Sequence[str]) -> np.ndarray:
    """Released counts summed over the other variables, on every position of
    ``names``' axes (zeros where nothing was released): post-processing."""
    domain = release.domain
    codes = domain.decode(np.asarray(release.cell_ids))
    idx = [domain.names.index(v) for v in names]
    shape = tuple(domain.axes[i].size for i in idx)
    out = np.zeros(shape, dtype=np.int64)
    np.add.at(out, tuple(np.asarray(codes[i], dtype=np.int64) for i in idx),
              np.asarray(release.counts, dtype=np.int64))
    return out


def _positions(axis) -> tuple[np.ndarray, np.ndarray, list[str], str]:
    """(left edges, widths, tick labels, axis label) of an axis's positions
    in plot coordinates: a continuous axis on its own scale's edges mapped
    back to values; a discrete one at 0, 1, ... with its levels."""
    if axis.kind == "continuous" and getattr(axis, "unbounded", None) is not None:
        # edge bins reach to -inf and +inf: one bar per bin, labelled by its range
        e = axis.to_values(axis.edges)
        return (np.arange(axis.bins) - 0.4, np.full(axis.bins, 0.8),
                [f"[{a:.3g}, {b:.3g})" for a, b in zip(e[:-1], e[1:])], _axis_label(axis))
    if axis.kind == "continuous":
        e = axis.to_values(axis.edges)
        return e[:-1], np.diff(e), [], _axis_label(axis)
    k = len(axis.levels)
    return (np.arange(k) - 0.4, np.full(k, 0.8), [str(v) for v in axis.levels], axis.name)


def _binning_scale(ax, axis, which: str = "x") -> None:
    """Draw the x (or y) axis on the scale the variable was binned on (equal
    bins look equal): log for "log", the scale's own function for "log1p" and
    "sqrt" (on a linear axis a log-binned variable's bins crowd at the left)."""
    edges = axis.to_values(axis.edges)
    set_scale = ax.set_xscale if which == "x" else ax.set_yscale
    if axis.scale == "log":
        set_scale("log")
    else:
        forward, inverse = SCALES[axis.scale][:2]
        set_scale("function", functions=(forward, inverse))
    # the margins would leave the scale's domain
    (ax.set_xlim if which == "x" else ax.set_ylim)(edges[0], edges[-1])


def _mesh_edges(axis) -> np.ndarray:
    """Cell edges of a heat map along one variable: the bin edges in the
    variable's values (continuous, drawn on its binning scale), else
    positions 0, 1, ... (levels; the bins of an Unbounded variable, whose
    edge bins reach to infinity) at +-0.5."""
    if axis.kind == "continuous" and axis.unbounded is None:
        return axis.to_values(axis.edges)
    return np.arange(axis.size + 1) - 0.5


def _axis_label(axis) -> str:
    if axis.kind == "continuous" and axis.scale != "linear":
        return f"{axis.name} (bins equal on the {axis.scale} scale)"
    return axis.name


def _threshold_text(report) -> tuple[float | None, str]:
    t = report.threshold
    if not report.private:
        return None, "exact counts (epsilon = inf): NOT private, no threshold"
    if t is None:
        return None, "signed counts (no threshold)"
    k = math.ceil(t)
    return float(k), f"threshold: a cell is released when its noisy count >= {k}"


def _spurious_per_position(release, positions: int) -> float:
    """Expected count the spurious cells alone (empty cells whose noise
    crosses the threshold) put on one position of a marginal, were they
    spread evenly: (expected spurious cells / positions) times the mean of a
    released noise value, ``k + q / (1 - q)`` with ``q = exp(-epsilon / 2)``.
    Public inputs only (the report's ``expected_spurious_cells`` takes every
    cell as empty, so this is an upper bound)."""
    rep = release.report
    if not rep.private or rep.threshold is None or not rep.expected_spurious_cells:
        return 0.0
    q = math.exp(-noise_epsilon(rep) / 2.0)
    mean_tail = math.ceil(rep.threshold) + q / (1.0 - q)
    return rep.expected_spurious_cells / positions * mean_tail


def plot_release(release: PrivateHistogram, x: str | None = None, y: str | None = None,
                 ax: Axes | None = None) -> Figure:
    """Bars (one variable) or a heat map (two variables) of a histogram
    release's marginal counts; without ``x``, the release's default view: the
    bars of every variable, one panel each.

    Parameters
    ----------
    release : PrivateHistogram
        The release (also available as ``release.plot(x, y)``).
    x : str, optional
        A variable of the release: bars over its bins (continuous) or levels
        (discrete, in declared order).  Default: every variable's bars, one
        panel each (on ``ax``, when given: the first variable's).
    y : str, optional
        A second variable: a heat map of the 2-D marginal, ``x`` across and
        ``y`` up.
    ax : matplotlib Axes, optional
        Where to draw (default: a new figure).

    Returns
    -------
    matplotlib.figure.Figure

    Notes
    -----
    A marginal is the released counts summed over the other variables
    (post-processing, free); positions with nothing released are 0.  The
    1-D plot marks the release's threshold -- no single released cell has a
    count below it -- as a red dashed line, and, when the marginal sums
    over other cells, the expected mass the threshold's spurious cells put
    on one bar (an upper bound, from public inputs) as a grey dotted line:
    bars near it may be mostly noise.  The 2-D heat map says the threshold
    in its title and on the colour bar.

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> import numpy as np, pandas as pd, dpmodels as dpm
    >>> rng = np.random.default_rng(0)
    >>> df = pd.DataFrame({"x": rng.uniform(0, 10, 4000), "g": rng.choice(["a", "b"], 4000)})
    >>> rel = dpm.release(df, columns=["x", "g"], epsilon=1.0, bounds={"x": (0, 10)},
    ...                   levels={"g": ["a", "b"]}, bins=8, random_state=0)
    >>> fig = rel.plot("x", "g")
    >>> fig.axes[0].collections[0].get_array().shape
    (2, 8)
    """
    plt = require_pyplot()
    if x is None:
        names = list(release.domain.names)
        if y is not None:
            raise DPModelsError("plot(y=...) needs x=: name the variable across as well")
        if ax is not None or len(names) == 1:
            return plot_release(release, names[0], ax=ax)
        fig, axes = plt.subplots(len(names), 1, figsize=(6.4, 3.4 * len(names)), squeeze=False)
        for name, panel in zip(names, axes[:, 0]):
            plot_release(release, name, ax=panel)
        return fig
    ax_x = _axis_of(release, x)
    names = [x]
    if y is not None:
        if y == x:
            raise DPModelsError(f"plot a 2-D marginal of two different variables, got {x!r} twice")
        _axis_of(release, y)
        names.append(y)
    counts = _dense_marginal(release, names)
    if ax is None:
        fig, ax = plt.subplots(figsize=(6.4, 4.2))
        own = True
    else:
        fig, own = ax.figure, False
    k, what = _threshold_text(release.report)
    eps = noise_epsilon(release.report)
    if y is None:
        left, width, ticks, label = _positions(ax_x)
        ax.bar(left, counts, width=width, align="edge", color="C0", edgecolor="white",
               label="released count (sum over the other variables)", gid="counts")
        if k is not None:
            ax.axhline(k, color="C3", linestyle="--", linewidth=1.2, gid="threshold",
                       label=f"threshold ({k:g}): no released cell is below it")
            spur = _spurious_per_position(release, counts.size)
            if spur > 0:
                ax.axhline(spur, color="0.4", linestyle=":", linewidth=1.2, gid="spurious",
                           label=f"expected spurious mass per bar (<= {spur:.3g})")
        if ticks:
            ax.set_xticks(np.arange(len(ticks)))
            ax.set_xticklabels(ticks)
        elif ax_x.kind == "continuous" and ax_x.scale != "linear":
            _binning_scale(ax, ax_x)
        ax.set_xlabel(label)
        ax.set_ylabel("released count")
        ax.set_title(wrap_title(f"Released marginal of {x} (epsilon = {eps:g})\n{what}",
                                _title_room(ax)), fontsize=10)
        which = ["x"] if ticks else []
        if own:  # the legend below everything, the (maybe upright) tick labels included
            handles, _ = ax.get_legend_handles_labels()
            _settle(fig, ax, which, _figure_legend(fig, handles))
            return fig
        # on the caller's axes: the legend inside them (below, it would meet upright labels)
        ax.legend(fontsize=7, loc="best", framealpha=0.8)
        _settle(fig, ax, which)
        return fig
    else:
        ax_y = release.domain.axis(y)
        ex, ey = _mesh_edges(ax_x), _mesh_edges(ax_y)
        mesh = ax.pcolormesh(ex, ey, counts.T, cmap="viridis", shading="flat")
        mesh.set_gid("heatmap")
        for axis, side in ((ax_x, "x"), (ax_y, "y")):
            (ax.set_xlabel if side == "x" else ax.set_ylabel)(_axis_label(axis))
            set_ticks = ax.set_xticks if side == "x" else ax.set_yticks
            if axis.kind == "discrete":
                set_ticks(np.arange(len(axis.level_set)), [str(v) for v in axis.level_set])
            elif axis.unbounded is not None:
                e = axis.to_values(axis.edges)
                set_ticks(np.arange(axis.bin_count),
                          [f"[{a:.3g}, {b:.3g})" for a, b in zip(e[:-1], e[1:])])
            elif axis.scale != "linear":
                _binning_scale(ax, axis, side)
        bar = fig.colorbar(mesh, ax=ax)
        cut = "" if k is None else f" (cells released at >= {k:g})"
        bar.set_label("released count" + cut)
        ax.set_title(wrap_title(f"Released marginal of {x} x {y} (epsilon = {eps:g})\n{what}",
                                _title_room(ax)), fontsize=10)
        _settle(fig, ax, [w for w, a in (("x", ax_x), ("y", ax_y)) if _fixed_ticks(a)])
    return fig


def _fixed_ticks(axis) -> bool:
    """Whether a heat map labels this variable's positions (levels, bin ranges)."""
    return axis.kind == "discrete" or axis.unbounded is not None
