"""Figures (dpmodels.output.plots); the plan's are in tests/front/test_planning.py.

Every figure is rendered for real (Agg backend) to a PNG, and its content is
read back from the matplotlib artists: axes, labels, tick labels, the bars'
end points against ``conf_int``, the threshold line, the heat map's shape.
"""

from __future__ import annotations

import math
import re
import sys
import warnings

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402
import statsmodels.formula.api as smf  # noqa: E402

import dpmodels as dpm  # noqa: E402
from dpmodels.core.errors import DPModelsError, UnknownVariableError  # noqa: E402
from dpmodels.output.plots import (  # noqa: E402
    MAX_PANELS_PER_ROW,
    overlapping_tick_labels,
    readable_tick_labels,
    wrap_title,
)

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
BOUNDS = {"x": (0, 10), "y": (-5, 15)}


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


def data(n: int = 4000, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    df = pd.DataFrame({"x": rng.uniform(0, 10, n), "g": rng.choice(["a", "b"], n)})
    df["y"] = 1 + 0.5 * df["x"] + (df["g"] == "b") + rng.normal(size=n)
    df["yb"] = np.where(rng.uniform(size=n) < 1 / (1 + np.exp(-(df["x"] - 5) / 2)), "yes", "no")
    df["yc"] = rng.choice(["p", "q", "r"], n)
    return df


def saved_png(fig, tmp_path, name: str) -> bytes:
    path = tmp_path / f"{name}.png"
    fig.savefig(path)
    raw = path.read_bytes()
    assert raw[:8] == PNG_MAGIC and len(raw) > 1000
    return raw


def ticks(labels) -> list[str]:
    return [t.get_text() for t in labels]


def bars(ax, kind: str) -> dict[str, object]:
    """The errorbar containers of one kind ("dp" / "naive"), by coefficient."""
    out = {}
    for c in ax.containers:
        label = c.get_label()
        if label.startswith(f"_{kind}:"):
            out[label.split(":", 1)[1]] = c
    return out


def ends(container) -> tuple[float, float] | None:
    """(low, high) of an errorbar container's horizontal bar, None if it has none."""
    cols = container.lines[2]
    if not cols:
        return None
    seg = np.asarray(cols[0].get_segments()[0])
    return float(seg[:, 0].min()), float(seg[:, 0].max())


# ---------------------------------------------------------------------------
# coefficient plots
# ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def ols_ghost():
    """A histogram OLS with a declared level that no row has: its coefficient
    has an infinite dp interval (no information)."""
    df = data()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = dpm.dp_ols("y ~ x + C(g)", df, epsilon=1.0, bounds=BOUNDS,
                           levels={"g": ["a", "b", "ghost"]}, method="histogram", bins=10,
                           random_state=0)
        dp = model.fit(n_boot=40, random_state=0)
        naive = model.fit(cov_type="naive")
    truth = smf.ols("y ~ x + C(g)", df).fit().params
    return model, dp, naive, truth


@pytest.fixture(scope="module")
def many_ghosts():
    """Sixteen coefficients, every other level declared but without rows."""
    rng = np.random.default_rng(3)
    n, present = 3000, [f"L{i:02d}" for i in range(0, 16, 2)]
    df = pd.DataFrame({"x": rng.uniform(0, 10, n), "g": rng.choice(present, n)})
    df["y"] = 1 + 0.5 * df["x"] + rng.normal(size=n)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return dpm.dp_ols("y ~ x + C(g)", df, epsilon=1.0, bounds=BOUNDS,
                          levels={"g": [f"L{i:02d}" for i in range(15)]}, method="histogram",
                          bins=5, random_state=0).fit(n_boot=20, random_state=0)


@pytest.mark.parametrize("scale", ["shared", "each"])
def test_the_no_information_label_stays_inside_its_row(many_ghosts, scale):
    """On one shared axis or on a row of its own (here 16 rows), the red label of
    an unbounded interval lies inside its Axes: it never runs into the row above,
    its tick labels or the title."""
    res = many_ghosts
    ci = np.asarray(res.conf_int())
    unbounded = int((~np.isfinite(ci).all(axis=1)).sum())
    assert len(ci) == 16 and unbounded >= 7  # the premise: the ghost levels
    fig = res.plot_coefficients(scale=scale)
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    labels = [(ax, t) for ax in fig.axes for t in ax.texts if t.get_gid() == "infinite-label"]
    assert len(labels) == unbounded
    for ax, text in labels:
        box, inside = text.get_window_extent(renderer), ax.get_window_extent(renderer)
        assert inside.x0 <= box.x0 and box.x1 <= inside.x1
        assert inside.y0 <= box.y0 and box.y1 <= inside.y1


def test_forest_plot_of_ols_with_an_infinite_interval(ols_ghost, tmp_path):
    model, res, naive, truth = ols_ghost
    names = list(res.params.index)
    assert names == ["Intercept", "C(g)[T.b]", "C(g)[T.ghost]", "x"]
    ci = np.asarray(res.conf_int())
    assert np.isinf(ci[2]).all() and np.isfinite(ci[[0, 1, 3]]).all()  # the premise

    fig = res.plot_coefficients(nonprivate=truth)
    saved_png(fig, tmp_path, "ols")
    assert len(fig.axes) == 1
    ax = fig.axes[0]
    assert ax.get_xlabel() == "estimate"
    assert ticks(ax.get_yticklabels()) == names
    assert "95% intervals" in ax.get_title() and "epsilon = 1" in ax.get_title()

    dp, nv = bars(ax, "dp"), bars(ax, "naive")
    assert list(dp) == names and list(nv) == names  # one dp and one naive bar per coefficient
    assert len(ax.containers) == 2 * len(names)
    for i, nm in enumerate(names):  # each bar spans its interval, at its estimate
        assert np.asarray(dp[nm].lines[0].get_xdata())[0] == pytest.approx(res.params[nm])
        if i != 2:
            assert ends(dp[nm]) == pytest.approx(tuple(ci[i]), rel=1e-9)
        assert ends(nv[nm]) == pytest.approx(tuple(naive.conf_int().loc[nm]), rel=1e-6)
        # dp above the row's line, naive below it (offset, not overlapping)
        y_dp = np.asarray(dp[nm].lines[0].get_ydata())[0]
        y_nv = np.asarray(nv[nm].lines[0].get_ydata())[0]
        assert y_dp < i < y_nv
    # the two kinds are drawn in different styles
    assert dp["x"].lines[0].get_marker() != nv["x"].lines[0].get_marker()
    assert nv["x"].lines[2][0].get_linestyle() != dp["x"].lines[2][0].get_linestyle()

    # the infinite interval: no bar, arrows to both edges of the axes and a label
    assert ends(dp["C(g)[T.ghost]"]) is None
    arrows = [a for a in ax.texts if a.get_gid() == "infinite"]
    assert len(arrows) == 2
    assert sorted(a.xy[0] for a in arrows) == [0.0, 1.0]  # axes fraction: left and right edge
    y_ghost = np.asarray(dp["C(g)[T.ghost]"].lines[0].get_ydata())[0]
    assert all(a.xy[1] == pytest.approx(y_ghost) for a in arrows)
    assert any("no information" in t.get_text() for t in ax.texts)
    assert any("no information" in t.get_text() for t in ax.get_legend().get_texts())

    # the non-private estimates as markers on the rows' lines
    marks = [ln for ln in ax.lines if ln.get_gid() == "nonprivate"]
    assert len(marks) == 1
    assert np.asarray(marks[0].get_xdata()) == pytest.approx(truth.reindex(names).to_numpy(),
                                                             nan_ok=True)
    assert list(marks[0].get_ydata()) == [0, 1, 2, 3]
    assert "non-private estimate" in ticks(ax.get_legend().get_texts())


def test_forest_plot_options(ols_ghost, tmp_path):
    model, res, naive, truth = ols_ghost
    fig = res.plot_coefficients(naive=False, alpha=0.1)
    saved_png(fig, tmp_path, "dp_only")
    ax = fig.axes[0]
    assert len(bars(ax, "dp")) == 4 and not bars(ax, "naive")
    assert not [ln for ln in ax.lines if ln.get_gid() == "nonprivate"]
    assert "90% intervals" in ax.get_title()
    lo, hi = ends(bars(ax, "dp")["x"])
    assert (lo, hi) == pytest.approx(tuple(res.conf_int(alpha=0.1).loc["x"]))

    # a naive fit has only naive intervals: they are drawn, and the title says so (on one
    # shared axis here; the ghost level's wide naive interval would give each its own)
    fig = naive.plot_coefficients(scale="shared")
    ax = fig.axes[0]
    assert not bars(ax, "dp") and list(bars(ax, "naive")) == list(res.params.index)
    assert "naive" in ax.get_title() and "cov_type='dp'" in ax.get_title()

    # on the caller's own axes; an array of non-private values in params order
    fig0, ax0 = plt.subplots()
    fig = res.plot_coefficients(ax=ax0, nonprivate=np.array([1.0, 1.0, 0.0, 0.5]))
    assert fig is fig0 and fig.axes[0] is ax0

    with pytest.raises(ValueError, match="nope"):
        res.plot_coefficients(nonprivate={"nope": 1.0})
    with pytest.raises(ValueError, match="3 values"):
        res.plot_coefficients(nonprivate=[1.0, 2.0, 3.0])
    with pytest.raises(ValueError, match="alpha"):
        res.plot_coefficients(alpha=1.5)


@pytest.mark.parametrize("kind", ["ols-moments", "logit", "quantreg"])
def test_every_results_class_plots(kind, tmp_path):
    df = data(2000, seed=1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if kind == "ols-moments":
            model = dpm.dp_ols("y ~ x", df, epsilon=1.0, bounds=BOUNDS, method="moments",
                               random_state=0)
        elif kind == "logit":
            model = dpm.dp_logit("yb ~ x + C(g)", df, epsilon=1.0, bounds=BOUNDS,
                                 levels={"g": ["a", "b"], "yb": ["no", "yes"]}, random_state=0)
        else:
            model = dpm.dp_quantreg("y ~ x + C(g)", df, epsilon=1.0, bounds=BOUNDS,
                                    levels={"g": ["a", "b"]}, random_state=0)
        res = model.fit(n_boot=30, random_state=0)
        naive = model.fit(cov_type="naive")
    names = [str(v) for v in res.model.exog_names]
    fig = res.plot_coefficients()
    saved_png(fig, tmp_path, kind)
    ax = fig.axes[0]
    assert ticks(ax.get_yticklabels()) == names
    dp, nv = bars(ax, "dp"), bars(ax, "naive")
    assert list(dp) == names and list(nv) == names
    ci_naive = np.asarray(naive.conf_int())
    for i, nm in enumerate(names):
        assert ends(nv[nm]) == pytest.approx(tuple(ci_naive[i]), rel=1e-6)
        assert ends(dp[nm]) == pytest.approx(tuple(np.asarray(res.conf_int())[i]), rel=1e-9)


@pytest.fixture(scope="module")
def mnlogit():
    df = data(3000, seed=2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = dpm.dp_mnlogit("yc ~ x + C(g)", df, epsilon=1.0, bounds=BOUNDS,
                               levels={"g": ["a", "b"], "yc": ["p", "q", "r"]}, random_state=0)
        return model.fit(n_boot=30, random_state=0)


def test_mnlogit_has_one_panel_per_equation(mnlogit, tmp_path):
    res = mnlogit
    fig = res.plot_coefficients(nonprivate=pd.DataFrame(
        np.zeros((3, 2)), index=["Intercept", "C(g)[T.b]", "x"], columns=["q", "r"]))
    saved_png(fig, tmp_path, "mnlogit")
    assert len(fig.axes) == 2
    assert [a.get_title() for a in fig.axes] == ["equation: q", "equation: r"]
    ci = np.asarray(res.conf_int()).reshape(2, 3, 2)  # rows (equation, coefficient)
    assert ticks(fig.axes[0].get_yticklabels()) == ["Intercept", "C(g)[T.b]", "x"]
    assert fig.axes[0].get_shared_y_axes().joined(*fig.axes)  # the right panel shares them
    for j, ax in enumerate(fig.axes):
        dp, nv = bars(ax, "dp"), bars(ax, "naive")
        assert len(dp) == 3 and len(nv) == 3
        for i, nm in enumerate(["Intercept", "C(g)[T.b]", "x"]):
            assert ends(dp[nm]) == pytest.approx(tuple(ci[j, i]), rel=1e-9)
        marks = [ln for ln in ax.lines if ln.get_gid() == "nonprivate"]
        assert len(marks) == 1 and list(marks[0].get_xdata()) == [0, 0, 0]

    # on one Axes: grouped labels
    fig0, ax0 = plt.subplots()
    fig = res.plot_coefficients(ax=ax0)
    assert len(fig.axes) == 1
    assert ticks(ax0.get_yticklabels()) == [f"{x} (eq. {e})" for e in "qr"
                                            for x in ["Intercept", "C(g)[T.b]", "x"]]
    assert len(bars(ax0, "dp")) == 6 and len(bars(ax0, "naive")) == 6


def test_missing_matplotlib_says_how_to_install(ols_ghost, monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib.pyplot", None)  # import fails
    with pytest.raises(ImportError, match=r"pip install 'dpmodels\[plot\]'"):
        ols_ghost[1].plot_coefficients()


# ---------------------------------------------------------------------------
# release plots
# ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def rel():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return dpm.release(data(), columns=["x", "g", "y"], epsilon=1.0, bounds=BOUNDS,
                           levels={"g": ["a", "b", "ghost"]}, bins=10, random_state=0)


def heat_map(ax):
    """The heat map (QuadMesh) of a 2-D release plot."""
    (mesh,) = [c for c in ax.collections if c.get_gid() == "heatmap"]
    return mesh


def marginal_counts(release, name: str) -> dict:
    m = release.marginal([name])
    return dict(zip(m[name], m[release.count_column]))


def test_release_bars_of_a_continuous_variable(rel, tmp_path):
    fig = rel.plot("x")
    saved_png(fig, tmp_path, "rel_x")
    assert len(fig.axes) == 1
    ax = fig.axes[0]
    assert ax.get_xlabel() == "x" and ax.get_ylabel() == "released count"
    patches = ax.patches
    assert len(patches) == 10  # one bar per bin
    lefts = [p.get_x() for p in patches]
    assert lefts == pytest.approx(np.linspace(0, 10, 11)[:-1])
    # heights are the released marginal: sums of released counts
    expected = marginal_counts(rel, "x")  # keyed by bin midpoint
    for p in patches:
        mid = p.get_x() + p.get_width() / 2
        assert p.get_height() == pytest.approx(expected.get(mid, 0))
    assert sum(p.get_height() for p in patches) == rel.report.noisy_total
    # the threshold line
    lines = [ln for ln in ax.lines if ln.get_gid() == "threshold"]
    assert len(lines) == 1
    k = math.ceil(rel.report.threshold)
    assert list(lines[0].get_ydata()) == [k, k]
    assert f">= {k}" in ax.get_title()
    assert any("threshold" in t.get_text() for t in fig.legends[0].get_texts())


def test_release_bars_of_a_discrete_variable(rel, tmp_path):
    fig = rel.plot("g")
    saved_png(fig, tmp_path, "rel_g")
    ax = fig.axes[0]
    assert ticks(ax.get_xticklabels()) == ["a", "b", "ghost"]  # every declared level
    heights = [p.get_height() for p in ax.patches]
    expected = marginal_counts(rel, "g")
    assert heights == [expected.get(v, 0) for v in ["a", "b", "ghost"]]
    assert heights[0] > 1000 and heights[2] < 200  # "ghost" holds spurious cells only
    assert [ln for ln in ax.lines if ln.get_gid() == "threshold"]


def test_release_heat_map(rel, tmp_path):
    fig = rel.plot("x", "g")
    saved_png(fig, tmp_path, "rel_xg")
    ax = fig.axes[0]
    assert len(fig.axes) == 2  # the heat map and its colour bar
    arr = np.asarray(heat_map(ax).get_array())
    assert arr.shape == (3, 10)  # g up, x across
    assert arr.sum() == rel.report.noisy_total
    assert arr[:, 0].sum() == marginal_counts(rel, "x")[0.5]
    assert ax.get_xlabel() == "x" and ax.get_ylabel() == "g"
    assert ticks(ax.get_yticklabels()) == ["a", "b", "ghost"]
    k = math.ceil(rel.report.threshold)
    assert f">= {k}" in ax.get_title()
    assert f">= {k}" in fig.axes[1].get_ylabel()  # the colour bar's label

    fig = rel.plot("x", "y")
    mesh = heat_map(fig.axes[0])
    assert np.asarray(mesh.get_array()).shape == (10, 10)
    # continuous variables: cells on their bin edges, in values
    corners = np.asarray(mesh.get_coordinates())
    assert corners[0, :, 0] == pytest.approx(np.linspace(0, 10, 11))
    assert corners[:, 0, 1] == pytest.approx(np.linspace(-5, 15, 11))

    with pytest.raises(UnknownVariableError, match="zz"):
        rel.plot("zz")
    with pytest.raises(DPModelsError, match="twice"):
        rel.plot("x", "x")


def test_release_plot_without_a_threshold(tmp_path):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        signed = dpm.release(data(2000), columns=["x", "g"], epsilon=1.0, bounds=BOUNDS,
                             levels={"g": ["a", "b"]}, bins=5, threshold=None, random_state=0)
    fig = signed.plot("x")
    saved_png(fig, tmp_path, "signed")
    ax = fig.axes[0]
    assert "signed counts (no threshold)" in ax.get_title()
    assert not [ln for ln in ax.lines if ln.get_gid() in ("threshold", "spurious")]
    assert sum(p.get_height() for p in ax.patches) == signed.report.noisy_total


# ---------------------------------------------------------------------------
# readable at a glance (issue 29): real fits on dpm.datasets, rendered, read back
# ---------------------------------------------------------------------------

HOUSING_BOUNDS = {"price": (1e5, 9e5), "size": (0, 3000), "year": (1, 4)}
COUNTIES = {"county": [f"County{i}" for i in range(1, 7)]}


@pytest.fixture(scope="module")
def housing():
    return dpm.datasets.housing(n=6000, seed=0)


def assert_readable(fig, tmp_path, name: str) -> None:
    """The rendered figure's tick labels do not overlap on any axis; every
    title, panel title and legend lies inside the figure; the figure is not a
    strip (aspect between 1:3 and 3:1)."""
    saved_png(fig, tmp_path, name)
    assert overlapping_tick_labels(fig) == []  # draws the figure
    renderer = fig.canvas.get_renderer()
    page = fig.bbox
    texts = [a.title for a in fig.axes] + ([fig._suptitle] if fig._suptitle else [])
    boxes = [t.get_window_extent(renderer) for t in texts if t.get_text()]
    boxes += [lg.get_window_extent(renderer) for lg in fig.legends]
    boxes += [a.get_legend().get_window_extent(renderer) for a in fig.axes if a.get_legend()]
    assert boxes
    for b in boxes:
        assert page.x0 - 0.5 <= b.x0 and b.x1 <= page.x1 + 0.5, (name, b, page)
        assert page.y0 - 0.5 <= b.y0 and b.y1 <= page.y1 + 0.5, (name, b, page)
    w, h = fig.get_size_inches()
    assert 1 / 3 <= w / h <= 3, (name, w, h)


def interval_extent(ax) -> tuple[float, float]:
    """(lowest, highest) end of the finite dp and naive bars drawn on ``ax``."""
    ends_ = [e for kind in ("dp", "naive") for c in bars(ax, kind).values()
             if (e := ends(c)) is not None]
    return min(e[0] for e in ends_), max(e[1] for e in ends_)


def test_the_overlap_check_can_fail():
    """The check the figures pass: matplotlib's plain labels of large numbers on
    a narrow panel ran together as "-150000-100000-50000" (issue 29)."""
    fig, ax = plt.subplots(figsize=(1.6, 1.6))
    ax.plot([-160000, -40000], [0, 1])
    ax.ticklabel_format(axis="x", style="plain", useOffset=False)
    assert overlapping_tick_labels(fig)
    fig.tight_layout()
    readable_tick_labels(ax, "x")  # upright, then thinned: readable
    assert overlapping_tick_labels(fig) == []


def test_quantile_regression_in_dollars_is_readable(housing, tmp_path):
    """issue 29: median regression of price (dollars) on housing: the intercept
    and county effects span 10^5, the size slope 10^2.  Each coefficient gets
    its own axis, whose span is comparable to its intervals (not a dot), the
    tick labels do not run together; on one shared axis neither do they."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = dpm.dp_quantreg("price ~ size + year + C(county)", housing, epsilon=2.0,
                              bounds=HOUSING_BOUNDS, levels=COUNTIES,
                              random_state=0).fit(n_boot=20, random_state=0)
    names = list(res.params.index)
    ci = np.asarray(res.conf_int(), float)
    assert np.isfinite(ci).all()
    width = ci[:, 1] - ci[:, 0]
    assert width.max() > 1000 * width[names.index("size")]  # the premise: scales 10^3 apart
    fig = res.plot_coefficients()
    assert_readable(fig, tmp_path, "quantreg")
    assert [ticks(a.get_yticklabels()) for a in fig.axes] == [[nm] for nm in names]
    for ax, (lo, hi) in zip(fig.axes, ci):
        left, right = ax.get_xlim()
        low, high = interval_extent(ax)
        assert left <= lo and hi <= right
        assert right - left < 1.5 * (high - low)  # the axis spans the intervals, no more
    shared = res.plot_coefficients(scale="shared")
    assert_readable(shared, tmp_path, "quantreg-shared")
    ax = shared.axes[0]
    left, right = ax.get_xlim()
    assert ends(bars(ax, "dp")["size"])[1] - ends(bars(ax, "dp")["size"])[0] < 1e-3 * (
        right - left)  # on one axis the slope is a dot: why "auto" gave it its own
    # drawn on a small panel of the caller's figure: at most five ticks, not run together
    _, small = plt.subplots(figsize=(3.2, 3.0))
    fig = res.plot_coefficients(ax=small, scale="shared")
    assert overlapping_tick_labels(fig) == []
    assert len([t for t in small.get_xticks() if left <= t <= right]) <= 5


@pytest.fixture(scope="module")
def county_fits(housing):
    """Multinomial logits of county (six levels: five equations) on housing."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fits = {f: dpm.dp_mnlogit(f"county ~ {f}", housing, epsilon=1.0, bounds=HOUSING_BOUNDS,
                                  levels=COUNTIES, random_state=0).fit(n_boot=20, random_state=0)
                for f in ("year", "size + price")}
    return fits


def test_a_five_equation_multinomial_figure_is_a_grid(county_fits, tmp_path):
    """issue 29: five equations were five panels in one 2100 x 345 row; now at
    most MAX_PANELS_PER_ROW per row, every panel titled, no empty panel left,
    the legend once, the figure's aspect sane."""
    res = county_fits["year"]
    equations = [f"County{i}" for i in range(2, 7)]
    fig = res.plot_coefficients()
    assert_readable(fig, tmp_path, "mnlogit-grid")
    assert len(fig.axes) == 5
    assert [a.get_title() for a in fig.axes] == [f"equation: {e}" for e in equations]
    rows = sorted({round(a.get_position().y0, 3) for a in fig.axes}, reverse=True)
    assert len(rows) == 2 and MAX_PANELS_PER_ROW == 3
    assert [round(a.get_position().y0, 3) for a in fig.axes] == [rows[0]] * 3 + [rows[1]] * 2
    assert len(fig.legends) == 1 and not any(a.get_legend() for a in fig.axes)
    ci = np.asarray(res.conf_int(), float).reshape(5, 2, 2)  # (equation, coefficient)
    assert all(fig.axes[0].get_shared_y_axes().joined(fig.axes[0], a) for a in fig.axes)
    for j, ax in enumerate(fig.axes):
        if j % MAX_PANELS_PER_ROW == 0:
            assert ticks(ax.get_yticklabels()) == ["Intercept", "year"]
        for i, nm in enumerate(["Intercept", "year"]):
            assert ends(bars(ax, "dp")[nm]) == pytest.approx(tuple(ci[j, i]), rel=1e-9)


def test_multinomial_coefficients_on_different_scales_get_a_panel_each(county_fits, tmp_path):
    """issue 29: county ~ size + price: the price slope (per dollar, ~1e-6) was a
    dot beside the intercepts (~1) in every equation's panel.  Now one panel
    per coefficient, a row per equation, each panel's axis spanning its
    intervals."""
    res = county_fits["size + price"]
    names, equations = ["Intercept", "size", "price"], [f"County{i}" for i in range(2, 7)]
    ci = np.asarray(res.conf_int(), float).reshape(5, 3, 2)
    truth = pd.DataFrame(np.asarray(res.params), index=names, columns=equations) * 1.01
    fig = res.plot_coefficients(nonprivate=truth)
    assert_readable(fig, tmp_path, "mnlogit-each")
    for i, ax in enumerate(fig.axes):  # the diamonds of coefficient i, one per equation
        (marks,) = [ln for ln in ax.lines if ln.get_gid() == "nonprivate"]
        assert np.asarray(marks.get_xdata()) == pytest.approx(truth.iloc[i].to_numpy())
    assert [a.get_title() for a in fig.axes] == names
    assert fig.axes[0].get_ylabel().startswith("equation")
    assert ticks(fig.axes[0].get_yticklabels()) == equations  # shared by the other panels
    assert all(fig.axes[0].get_shared_y_axes().joined(fig.axes[0], a) for a in fig.axes)
    for i, ax in enumerate(fig.axes):
        for j, eq in enumerate(equations):
            assert ends(bars(ax, "dp")[eq]) == pytest.approx(tuple(ci[j, i]), rel=1e-9)
        left, right = ax.get_xlim()
        low, high = interval_extent(ax)
        assert right - left < 1.5 * (high - low)
        assert np.max(ci[:, i, 1] - ci[:, i, 0]) > 0.05 * (right - left)  # not a dot
    shared = res.plot_coefficients(scale="shared")  # the old layout, for comparison
    assert_readable(shared, tmp_path, "mnlogit-shared")
    price = bars(shared.axes[0], "dp")["price"]
    assert np.diff(ends(price))[0] < 1e-4 * np.diff(shared.axes[0].get_xlim())[0]


def test_many_coefficients_stay_readable(tmp_path):
    """wages: 14 coefficients (a ten-level factor, an interaction) on one fit."""
    w = dpm.datasets.wages(n=8000, seed=0)
    levels = {"sex": ["female", "male"], "region": [f"Region{i:02d}" for i in range(1, 11)]}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = dpm.dp_ols("wage ~ experience * C(sex) + tenure + C(region)", w, epsilon=1.0,
                         bounds=dpm.datasets.WAGES_BOUNDS, levels=levels, method="moments",
                         random_state=0).fit(random_state=0)
    assert len(res.params) == 14
    for scale in ("auto", "shared"):
        fig = res.plot_coefficients(scale=scale)
        assert_readable(fig, tmp_path, f"wages-{scale}")
        labels = [t for a in fig.axes for t in ticks(a.get_yticklabels())]
        assert labels == list(res.params.index)


def test_a_log_binned_variable_is_drawn_on_a_log_axis(housing, tmp_path):
    """issue 29: price ~ np.log(...) is binned on the log scale; its bars and a
    heat map with it are drawn on a log axis, every bin the same width."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rel = dpm.release(housing, formula="np.log(price) ~ size + C(county)", epsilon=1.0,
                          bounds=HOUSING_BOUNDS, levels=COUNTIES, bins=10, random_state=0)
    assert rel.domain.axis("price").scale == "log"
    fig = rel.plot("price")
    assert_readable(fig, tmp_path, "log-bars")
    ax = fig.axes[0]
    assert ax.get_xscale() == "log" and "log scale" in ax.get_xlabel()
    px = [np.diff(ax.transData.transform([(p.get_x(), 0), (p.get_x() + p.get_width(), 0)])
                  [:, 0])[0] for p in ax.patches]
    assert len(px) == 10 and max(px) == pytest.approx(min(px), rel=1e-6)

    fig = rel.plot("size", "price")  # the log-binned variable up
    assert_readable(fig, tmp_path, "log-heat")
    ax = fig.axes[0]
    assert ax.get_xscale() == "linear" and ax.get_yscale() == "log"
    edges = np.asarray(heat_map(ax).get_coordinates())[:, 0, 1]
    assert edges == pytest.approx(np.geomspace(1e5, 9e5, 11))
    fig = rel.plot("county", "price")
    assert_readable(fig, tmp_path, "log-heat-county")
    assert fig.axes[0].get_yscale() == "log"
    assert ticks(fig.axes[0].get_xticklabels()) == COUNTIES["county"]


def test_many_levels_and_bin_ranges_are_readable(tmp_path):
    """Ten regions, and the bins of an Unbounded wage labelled by their ranges:
    labels that would overlap are turned upright (thinned if still crowded)."""
    w = dpm.datasets.wages(n=6000, seed=0)
    levels = {"region": [f"Region{i:02d}" for i in range(1, 11)]}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rel = dpm.release(w, columns=["wage", "region"], epsilon=1.0,
                          bounds={"wage": dpm.Unbounded(15, 5)}, levels=levels, bins=12,
                          random_state=0)
    fig = rel.plot("wage")
    assert_readable(fig, tmp_path, "unbounded-bars")
    labels = ticks(fig.axes[0].get_xticklabels())
    assert len(labels) == 12 and labels[0].startswith("[-inf") and labels[-1].endswith("inf)")
    assert fig.axes[0].get_xticklabels()[0].get_rotation() == 90
    fig = rel.plot("wage", "region")
    assert_readable(fig, tmp_path, "unbounded-heat")
    assert ticks(fig.axes[0].get_yticklabels()) == levels["region"]
    _, ax = plt.subplots(figsize=(3.0, 3.0))  # a narrow panel of the caller's figure
    fig = rel.plot("region", ax=ax)
    assert overlapping_tick_labels(fig) == []
    shown = [t for t in ticks(ax.get_xticklabels()) if t]
    assert shown[0] == "Region01" and set(shown) <= set(levels["region"])


def test_wrap_title_fits_the_width():
    formula = ("wage ~ experience * C(sex) + tenure + C(region) + np.log(size) + "
               "C(county) + year + experience:tenure")
    for width in (2.0, 4.0, 6.4):
        fig = plt.figure(figsize=(width, 2.0))
        text = fig.suptitle(wrap_title(f"RMSE of {formula}", width), fontsize=10)
        fig.canvas.draw()
        box = text.get_window_extent(fig.canvas.get_renderer())
        assert fig.bbox.x0 <= box.x0 and box.x1 <= fig.bbox.x1, width
        assert " ".join(text.get_text().split()) == f"RMSE of {formula}"  # nothing lost
    assert wrap_title("short", 6.4) == "short"
    assert wrap_title("a\nb", 6.4) == "a\nb"


def test_coefficients_on_very_different_scales_get_their_own_rows(tmp_path):
    """issue 29: every coefficient shared one axis, so a slope on a small scale
    collapsed to a dot beside a large intercept.  scale="auto" gives each
    coefficient its own row and x range when their extents differ more than
    OWN_SCALE_RATIO-fold; "shared" keeps one axis; a bad value is refused."""
    from dpmodels.output.plots import OWN_SCALE_RATIO

    rng = np.random.default_rng(2)
    df = pd.DataFrame({"x": rng.uniform(0, 1e4, 4000)})  # e.g. income in dollars
    df["y"] = 2e4 + 3 * df["x"] + rng.normal(0, 2e3, 4000)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = dpm.dp_ols("y ~ x", df, epsilon=2.0, bounds={"x": (0, 1e4), "y": (0, 1e5)},
                         random_state=0).fit(n_boot=40, random_state=0)
    ci = np.asarray(res.conf_int(), float)
    assert (ci[0, 1] - ci[0, 0]) > OWN_SCALE_RATIO * (ci[1, 1] - ci[1, 0])
    fig = res.plot_coefficients()
    saved_png(fig, tmp_path, "own-scales")
    assert len(fig.axes) == 2
    for ax, name, (lo, hi) in zip(fig.axes, ["Intercept", "x"], ci):
        assert ticks(ax.get_yticklabels()) == [name]
        assert ends(bars(ax, "dp")[name]) == pytest.approx((lo, hi))
        left, right = ax.get_xlim()
        assert left <= lo and hi <= right and (right - left) < 3 * (hi - lo)  # its own scale
    shared = res.plot_coefficients(scale="shared")
    assert len(shared.axes) == 1 and len(bars(shared.axes[0], "dp")) == 2
    with pytest.raises(ValueError, match="scale"):
        res.plot_coefficients(scale="log")


@pytest.mark.parametrize("fn, scale", [("log", "log"), ("sqrt", "function")])
def test_a_variable_binned_on_a_scale_is_drawn_on_it(fn, scale, tmp_path):
    """issue 29: a variable binned on the log scale (the formula uses np.log(x)) was
    drawn on a linear axis, its bins crowded at the left; now the axis has the
    binning's scale, and equal bins are bars of equal width on the page."""
    rng = np.random.default_rng(0)
    df = pd.DataFrame({"x": rng.lognormal(3, 1, 3000).clip(1, 1000)})
    df["y"] = np.log(df["x"]) + rng.normal(size=3000)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rel = dpm.release(df, formula=f"y ~ np.{fn}(x)", epsilon=1.0,
                          bounds={"x": (1, 1000), "y": (-5, 15)}, bins=8, random_state=0)
    assert rel.domain.axis("x").scale == fn
    fig = rel.plot("x")
    saved_png(fig, tmp_path, f"rel_{fn}")
    ax = fig.axes[0]
    assert ax.get_xscale() == scale
    fig.canvas.draw()
    widths = [np.diff(ax.transData.transform([(p.get_x(), 0), (p.get_x() + p.get_width(), 0)])
                      [:, 0])[0] for p in ax.patches]
    assert len(widths) == 8 and max(widths) == pytest.approx(min(widths), rel=1e-6)


def test_the_docs_figures_are_the_pages_own():
    """docs/plots.md shows figures that its own examples save (regenerated by
    benchmarks/plot_gallery.py): every image it references is a PNG under
    docs/images written by a ``savefig`` of the page."""
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    page = (root / "docs" / "plots.md").read_text()
    shown = re.findall(r"!\[[^\]]*\]\(images/([^)]+)\)", page)
    assert len(shown) >= 5
    saved = set(re.findall(r'savefig\("([^"]+)"\)', page))
    for name in shown:
        assert name in saved, name
        assert (root / "docs" / "images" / name).read_bytes()[:8] == PNG_MAGIC
