"""Planning (dpmodels.front.planning): `dpm.plan` and `Plan`.

The plans are small (n = 2,000, a few data sets) but real: every simulated
release and fit is the dp_* function's own, every non-private fit is
statsmodels', every figure is rendered (Agg) and read back from the artists.
"""

from __future__ import annotations

import math
import pathlib
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
from dpmodels.core.errors import DPModelsError  # noqa: E402
from dpmodels.front.methods import FAMILY_METHODS, ROUTED_METHODS  # noqa: E402
from dpmodels.front.planning import (  # noqa: E402
    MAX_LINES_PER_PANEL,
    TABLE_COLUMNS,
    Plan,
    _draw,
    _NonPrivate,
    _summaries,
    coefficient_groups,
)

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
BOUNDS = {"x": (0, 10), "y": (-5, 15)}
FIRST_COLUMNS = ["epsilon", "coef", "rmse", "bias", "median_width", "no_information",
                 "sampling_sd", "method", "n_ok"]


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


def saved_png(fig, tmp_path, name: str) -> bytes:
    path = tmp_path / f"{name}.png"
    fig.savefig(path)
    raw = path.read_bytes()
    assert raw[:8] == PNG_MAGIC and len(raw) > 1000
    return raw


def guess_fn(rng, n):
    x = rng.uniform(0, 10, n)
    g = rng.choice(["a", "b", "c"], n)
    return pd.DataFrame({"x": x, "g": g, "y": 1 + 0.5 * x + (g == "b") + rng.normal(size=n)})


PLAN_ARGS = dict(n=2000, epsilon=[0.5, 2], bounds=BOUNDS, levels={"g": ["a", "b", "c"]},
                 reps=3, n_boot=30, random_state=0)


@pytest.fixture(scope="module")
def ols_plan():
    return dpm.plan("y ~ x + C(g)", guess=guess_fn, **PLAN_ARGS)


def test_plan_table_and_error_against_epsilon(ols_plan, tmp_path):
    p = ols_plan
    t = p.table
    assert t.shape == (8, len(TABLE_COLUMNS))  # 2 epsilons x 4 coefficients
    assert list(t.columns) == TABLE_COLUMNS and TABLE_COLUMNS[:9] == FIRST_COLUMNS
    assert sorted(t["epsilon"].unique()) == [0.5, 2.0]
    assert p.coefficients == ["Intercept", "C(g)[T.b]", "C(g)[T.c]", "x"]
    assert (t["n_ok"] == 3).all() and t[["rmse", "median_width"]].notna().all().all()
    assert p.methods == ("auto",) and (t["requested"] == "auto").all()
    # The noise scales as 1/epsilon: 4x less noise at epsilon 2.  Binning bias and
    # Monte Carlo error (3 reps) blur that; a total error at least 1.5x smaller is safe.
    r = p.pivot("rmse")
    assert r[0.5].sum() > 1.5 * r[2.0].sum()
    w = p.pivot("median_width")
    assert w[0.5].sum() > 1.5 * w[2.0].sum()
    text = str(p)
    assert "no private data read" in text and "Intercept" in text and "RMSE" in text
    assert "bias, not noise" in text

    fig = p.plot()
    saved_png(fig, tmp_path, "plan")
    ax = fig.axes[0]
    coef_lines = [ln for ln in ax.lines if (ln.get_gid() or "").startswith("coef:")]
    assert [ln.get_label() for ln in coef_lines] == p.coefficients  # one line per coefficient
    assert all(list(ln.get_xdata()) == [0.5, 2.0] for ln in coef_lines)
    assert list(coef_lines[-1].get_ydata()) == pytest.approx(list(r.loc["x"]))
    assert ax.get_xscale() == "log" and ax.get_yscale() == "log"
    assert ax.get_xlabel() == "epsilon" and "RMSE" in ax.get_ylabel()


def test_bias_and_noise_add_up_to_the_rmse(ols_plan):
    """RMSE^2 = bias^2 + noise_sd^2 (noise_sd with divisor n_ok), in every row."""
    t = ols_plan.table
    assert np.allclose(t["rmse"] ** 2, t["bias"] ** 2 + t["noise_sd"] ** 2, rtol=1e-10)
    assert (t["rmse_se"] > 0).all() and (t["bias_se"] > 0).all()
    assert (t["n_intervals"] == 1).all()  # the default: one bootstrapped data set per cell


def test_monte_carlo_standard_errors_match_the_spread_of_the_estimates():
    """rmse_se (delta method) and bias_se against the spread of rmse and bias over
    4,000 independent sets of 15 differences: the empirical sd is known to about
    1/sqrt(2 * 4000) = 1.1%, the delta method is a few % low at 15 data sets; 15% is
    far from both."""
    rng = np.random.default_rng(7)
    empty = np.zeros((0, 1))
    for mu in (0.0, 1.0, 3.0):
        D = rng.normal(mu, 1.0, size=(4000, 15, 1))
        out = [_summaries(d, empty, empty, 1) for d in D]
        rmse = np.array([o["rmse"][0] for o in out])
        bias = np.array([o["bias"][0] for o in out])
        assert np.mean([o["rmse_se"][0] for o in out]) == pytest.approx(rmse.std(), rel=0.15)
        assert np.mean([o["bias_se"][0] for o in out]) == pytest.approx(bias.std(), rel=0.15)


def test_plan_from_a_pilot_data_frame():
    pilot = guess_fn(np.random.default_rng(5), 200)
    p = dpm.plan("y ~ x + C(g)", guess=pilot, **PLAN_ARGS)
    again = dpm.plan("y ~ x + C(g)", guess=pilot, **PLAN_ARGS)
    pd.testing.assert_frame_equal(p.table, again.table)  # seeded: reproducible
    assert str(p) == str(again)  # the text too (no timing in it)
    assert p.table.shape == (8, len(TABLE_COLUMNS)) and (p.table["n_ok"] == 3).all()


def test_the_naive_fits_give_the_dp_fits_estimates():
    """The plan fits most releases with cov_type="naive" (no bootstrap): the same
    seed gives the same rmse and bias whether every data set's dp interval is
    bootstrapped or none is."""
    args = {**PLAN_ARGS, "reps": 2, "n_boot": 20}
    for method in ("histogram", "moments"):
        none = dpm.plan("y ~ x + C(g)", guess=guess_fn, method=method, interval_reps=0, **args)
        every = dpm.plan("y ~ x + C(g)", guess=guess_fn, method=method, interval_reps=2, **args)
        for col in ("rmse", "bias", "noise_sd", "sampling_sd"):
            np.testing.assert_allclose(none.table[col], every.table[col], rtol=1e-9)
        assert none.table["median_width"].isna().all() and (none.table["n_intervals"] == 0).all()
        assert every.table["median_width"].notna().all() and (every.table["n_intervals"] == 2).all()
    logit_guess = _logit_guess
    kw = dict(n=2000, epsilon=[2.0], bounds={"x": (0, 10)}, levels={"b": [0, 1]}, reps=2,
              n_boot=20, random_state=1, model="logit")
    for method in ("histogram", "newton"):
        none = dpm.plan("b ~ x", guess=logit_guess, method=method, interval_reps=0, **kw)
        every = dpm.plan("b ~ x", guess=logit_guess, method=method, interval_reps=2, **kw)
        np.testing.assert_allclose(none.table["rmse"], every.table["rmse"], rtol=1e-9)


def _logit_guess(rng, n):
    x = rng.uniform(0, 10, n)
    return pd.DataFrame({"x": x, "b": (rng.uniform(size=n) < 1 / (1 + np.exp(2 - 0.4 * x)))
                         .astype(int)})


@pytest.mark.parametrize("model, formula, levels", [
    ("ols", "y ~ x * C(g) + I(x ** 2)", None),
    ("quantreg", "y ~ x + C(g)", None),
    ("logit", "b ~ x + C(g)", {"b": [0, 1]}),
    ("mnlogit", "m ~ x + np.log(x)", {"m": [0, 1, 2]}),
])
def test_the_non_private_fit_from_the_pilot_is_statsmodels_formula_fit(model, formula, levels):
    """From a pilot the design is built once and each data set takes its rows: the
    estimates are statsmodels' formula fit of the drawn rows, a level the draw
    lacks (d, one row of the pilot) a NaN as the formula fit leaves it out, a row with a
    missing value dropped."""
    rng = np.random.default_rng(0)
    n = 400
    pilot = pd.DataFrame({"x": rng.uniform(0.1, 10, n),
                          "g": rng.choice(list("abc"), n), "m": rng.choice([0, 1, 2], n)})
    pilot.loc[0, "g"] = "d"  # one row: about half the draws of 250 rows lack it
    pilot["y"] = 1 + 0.5 * pilot["x"] + (pilot["g"] == "b") + rng.normal(size=n)
    pilot["b"] = (pilot["y"] > 4).astype(int)
    pilot.loc[3, "x"] = np.nan
    namespace = {"np": np}
    fit = _NonPrivate(model, formula, pilot, namespace, levels, 0.5)
    assert fit.design is not None  # the pilot path is taken
    seen_missing_level = False
    for seed in range(6):
        data, rows = _draw(pilot, np.random.default_rng(seed), 250)
        fitted = fit(data, rows)
        got = fitted["params"]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            if model == "ols":
                res = smf.ols(formula, data).fit()
            elif model == "quantreg":
                res = smf.quantreg(formula, data).fit(q=0.5)
            elif model == "logit":
                res = smf.logit(formula, data).fit(disp=0)
            else:
                res = smf.mnlogit(formula, data, eval_env=1).fit(disp=0)
            names = ([f"{x} (eq. {e})" for e in (1, 2) for x in res.model.exog_names]
                     if model == "mnlogit" else list(res.params.index))
            want = pd.Series(np.asarray(res.params).ravel(order="F"), index=names)
            bse = pd.Series(np.asarray(res.bse).ravel(order="F"), index=names)
        seen_missing_level |= bool(got.isna().any())
        np.testing.assert_allclose(got.reindex(want.index), want, rtol=1e-6, atol=1e-8)
        assert got.drop(want.index).isna().all()
        # the side of the non-private 95% interval (normal quantile) the power reads
        z = 1.959963984540054
        side = np.where(want - z * bse > 0, 1.0, np.where(want + z * bse < 0, -1.0, 0.0))
        np.testing.assert_array_equal(fitted["side"].reindex(want.index).to_numpy(), side)
        assert (fitted["side"].drop(want.index) == 0).all()
    if "C(g)" in formula:
        assert seen_missing_level  # the check above met a level a draw lacks


class CountingGuess:
    def __init__(self):
        self.calls = 0

    def __call__(self, rng, n):
        self.calls += 1
        return guess_fn(rng, n)


@pytest.mark.parametrize("change, match", [
    ({"n": 0}, "n must"),
    ({"n": True}, "n must"),
    ({"epsilon": []}, "epsilon"),
    ({"epsilon": [0.5, -1]}, "epsilon"),
    ({"epsilon": [float("inf")]}, "epsilon"),
    ({"epsilon": "1"}, "epsilon"),
    ({"model": "probit"}, "model"),
    ({"reps": 1}, "reps"),
    ({"n_boot": 0}, "n_boot"),
    ({"bounds": [(0, 10)]}, "bounds"),
    ({"levels": "g"}, "levels"),
    ({"alpha": 2}, "alpha"),
    ({"random_state": -1}, "random_state|seed|>= 0"),
    ({"method": "bogus"}, re.escape(f"method must be one of "
                                    f"{list(FAMILY_METHODS['ols'] + ROUTED_METHODS)}, got 'bogus'")),
    ({"method": ["auto", 3]}, "method must be one of"),
    ({"method": []}, "method must name at least one"),
    ({"method": "newton"}, "got 'newton'"),  # dp_logit's, not dp_ols'
    ({"interval_reps": -1}, "interval_reps"),
    ({"interval_reps": 4}, "interval_reps must be at most reps = 3"),
])
def test_plan_refuses_bad_inputs_before_simulating(change, match):
    guess = CountingGuess()
    with pytest.raises((DPModelsError, TypeError, ValueError), match=match):
        dpm.plan("y ~ x + C(g)", guess=guess, **{**PLAN_ARGS, **change})
    assert guess.calls == 0


def test_a_bad_method_gets_the_dp_functions_own_message():
    df = guess_fn(np.random.default_rng(0), 100)
    for bad in ("moments", "bogus"):
        with pytest.raises(DPModelsError) as dp_error:
            dpm.dp_logit("g ~ x", df, epsilon=1.0, bounds={"x": (0, 10)},
                         levels={"g": ["a", "b"]}, method=bad)
        with pytest.raises(DPModelsError) as plan_error:
            dpm.plan("g ~ x", model="logit", guess=guess_fn, method=["auto", bad],
                     **{**PLAN_ARGS, "levels": {"g": ["a", "b"]}})
        assert str(plan_error.value) == str(dp_error.value)


def test_a_method_that_cannot_serve_the_formula_is_named_before_simulating():
    """The moments build the design on a public grid and refuse a stateful
    transform; the histogram serves it.  The refusal names the method and comes
    from its first release, before any other data set is drawn."""
    guess = CountingGuess()
    with pytest.raises(DPModelsError, match=r"method='moments' cannot serve this plan.*center"):
        dpm.plan("y ~ center(x) + C(g)", guess=guess, method=["histogram", "moments"],
                 **PLAN_ARGS)
    assert guess.calls == 1
    # the same input error for every method is the analyst's input: raised as it is
    with pytest.raises(DPModelsError, match="'y'") as info:
        dpm.plan("y ~ x", guess=guess_fn, method=["histogram", "moments"],
                 **{**PLAN_ARGS, "bounds": {"x": (0, 10)}, "levels": None})
    assert "cannot serve" not in str(info.value)


def test_plan_refuses_a_missing_guess_or_domain():
    with pytest.raises(DPModelsError, match="guess"):
        dpm.plan("y ~ x", **{**PLAN_ARGS, "levels": None})
    with pytest.raises(TypeError, match="guess"):
        dpm.plan("y ~ x", guess=42, **{**PLAN_ARGS, "levels": None})
    with pytest.raises(DPModelsError, match="'y'"):  # no bound for y: named, before any noise
        dpm.plan("y ~ x", guess=guess_fn, **{**PLAN_ARGS, "bounds": {"x": (0, 10)},
                                             "levels": None})


@pytest.fixture(scope="module")
def three_methods():
    return dpm.plan("y ~ x + C(g)", guess=guess_fn, method=["auto", "histogram", "moments"],
                    **{**PLAN_ARGS, "reps": 4, "epsilon": [0.5, 2, 8]})


def test_methods_side_by_side(three_methods):
    p = three_methods
    t = p.table
    assert p.methods == ("auto", "histogram", "moments")
    assert t.shape == (3 * 3 * 4, len(TABLE_COLUMNS))
    assert list(dict.fromkeys(t["requested"])) == ["auto", "histogram", "moments"]
    assert set(t.loc[t["requested"] == "moments", "method"]) == {"moments"}
    assert set(t.loc[t["requested"] == "histogram", "method"]) == {"histogram"}
    # 3 level combinations, 2 continuous variables: "auto" takes the moments
    assert p.chosen("auto") == {0.5: "moments", 2.0: "moments", 8.0: "moments"}
    # the histogram's bins per epsilon are reported; the moments have none
    assert (t.loc[t["requested"] == "histogram", "bins"].str.len() > 0).all()
    assert (t.loc[t["requested"] == "moments", "bins"] == "").all()
    wide = p.pivot("rmse")
    assert list(wide.columns) == [(m, e) for m in p.methods for e in (0.5, 2.0, 8.0)]
    assert list(wide.index) == p.coefficients
    one = p.pivot("rmse", method="moments")
    assert list(one.columns) == [0.5, 2.0, 8.0]
    np.testing.assert_allclose(one.to_numpy(), wide["moments"].to_numpy())
    # auto chose the moments and shares their seeds: the same releases, the same errors
    np.testing.assert_allclose(wide["auto"].to_numpy(), wide["moments"].to_numpy())
    with pytest.raises(DPModelsError, match="plan's methods"):
        p.pivot("rmse", method="newton")
    text = str(p)
    assert "method='auto' chose moments at every epsilon" in text
    assert "method='moments'" in text and "histogram bins per continuous variable" in text
    assert "Monte Carlo standard error" in text


def test_the_text_of_several_methods_fits_a_terminal(three_methods):
    from dpmodels.front.planning import TEXT_WIDTH, _text

    p = three_methods
    wide = p.pivot("rmse")
    # the side-by-side table is wider than a terminal once the coefficient names are long
    renamed = wide.rename(index=lambda c: f"C(a_long_factor_name)[T.{c}]")
    text = _text(renamed.map(lambda v: f"{v:.4g} (0.05)"))
    assert max(map(len, renamed.to_string().splitlines())) > TEXT_WIDTH
    assert max(map(len, text.splitlines())) <= TEXT_WIDTH
    # one block per epsilon, the methods side by side in each, every value kept
    assert [ln for ln in text.splitlines() if ln.startswith("epsilon = ")] == [
        f"epsilon = {e:g}:" for e in p.epsilons]
    for m in p.methods:
        for e in p.epsilons:
            for c in renamed.index:
                assert f"{renamed.loc[c, (m, e)]:.4g} (0.05)" in text
    assert all(len(line) <= TEXT_WIDTH for line in str(p).splitlines())


def _title_inside(fig) -> bool:
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    texts = [fig._suptitle] if fig._suptitle is not None else []
    texts += [a.title for a in fig.axes if a.get_title()]
    for t in texts:
        box = t.get_window_extent(renderer)
        if box.x0 < 0 or box.x1 > fig.bbox.width or box.y0 < 0 or box.y1 > fig.bbox.height:
            return False
    return bool(texts)


def _labels_overlap(fig, ax) -> bool:
    renderer = fig.canvas.get_renderer()
    for labels in (ax.get_xticklabels(), ax.get_yticklabels()):
        boxes = [t.get_window_extent(renderer) for t in labels if t.get_text() and t.get_visible()]
        if any(a.overlaps(b) for i, a in enumerate(boxes) for b in boxes[i + 1:]):
            return True
    return False


def _check_panels(fig) -> None:
    """Every panel: its coefficients' lines each in a colour of their own, at most
    MAX_LINES_PER_PANEL of them, no overlapping tick labels; every legend inside."""
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    for ax in fig.axes:
        lines = [ln for ln in ax.lines if (ln.get_gid() or "").startswith("coef:")]
        colours = [matplotlib.colors.to_hex(ln.get_color()) for ln in lines]
        assert len(set(colours)) == len(colours) and len(lines) <= MAX_LINES_PER_PANEL
        assert not _labels_overlap(fig, ax)
        legend = ax.get_legend()
        if legend is not None:
            box = legend.get_window_extent(renderer)
            assert box.x1 <= fig.bbox.width + 1 and box.y0 >= -1


def test_plot_one_column_of_panels_per_method(three_methods, tmp_path):
    p = three_methods
    fig = p.plot()
    saved_png(fig, tmp_path, "plan-methods")
    assert len(fig.axes) == 3  # 4 coefficients: one row; three methods: three columns
    titles = [a.get_title() for a in fig.axes]
    assert titles == ["method='auto' (moments)", "method='histogram'", "method='moments'"]
    for ax, m in zip(fig.axes, p.methods):
        lines = [ln for ln in ax.lines if (ln.get_gid() or "").startswith("coef:")]
        assert [ln.get_label() for ln in lines] == p.coefficients
        assert list(lines[0].get_ydata()) == pytest.approx(
            list(p.pivot("rmse", method=m).loc["Intercept"]))
    y0 = [a.get_ylim() for a in fig.axes]
    assert y0[0] == y0[1] == y0[2]  # one row shares its y axis: the methods compare
    assert _title_inside(fig)
    _check_panels(fig)
    with pytest.raises(DPModelsError, match="side by side"):
        p.plot(ax=plt.subplots()[1])
    fig = p.plot(value="noise_sd")
    assert "sd of private - non-private" in fig.axes[0].get_ylabel()


def test_plan_plot_with_many_coefficients_and_a_long_formula(tmp_path):
    """issue 29: with 18 coefficients the 10-colour cycle repeated (two lines alike)
    and a long formula's title was cut at the figure's edge.  Now the factor's
    levels get panels of their own, each line of a panel its own colour."""
    levels = [f"l{i:02d}" for i in range(15)]

    def guess(rng, n):
        x = rng.uniform(1, 10, n)
        g = rng.choice(levels, n)
        return pd.DataFrame({"x": x, "g": g, "y": 1 + 0.5 * x + rng.normal(size=n)})

    formula = "y ~ x + I(x ** 2) + np.log(x) + C(g)"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        p = dpm.plan(formula, guess=guess, n=3000, epsilon=[1, 4], bounds={"x": (1, 10),
                     "y": (-5, 15)}, levels={"g": levels}, reps=2, interval_reps=0,
                     random_state=0)
    assert len(p.coefficients) == 18
    fig = p.plot()
    saved_png(fig, tmp_path, "plan-many")
    lines = [ln for ax in fig.axes for ln in ax.lines if (ln.get_gid() or "").startswith("coef:")]
    assert sorted(ln.get_label() for ln in lines) == sorted(p.coefficients)
    # the intercept and slopes; the factor's 14 levels in two panels (10 and 4)
    assert [len([ln for ln in ax.lines if (ln.get_gid() or "").startswith("coef:")])
            for ax in fig.axes] == [4, 10, 4]
    _check_panels(fig)
    assert _title_inside(fig)
    title = fig._suptitle.get_text()
    assert formula.replace(" ", "") in title.replace("\n", "").replace(" ", "")
    # all 18 in one given axes: still no colour twice
    _, ax = plt.subplots(figsize=(6.4, 4.4))
    fig = p.plot(ax=ax)
    colours = [matplotlib.colors.to_hex(ln.get_color()) for ln in ax.lines
               if (ln.get_gid() or "").startswith("coef:")]
    assert len(colours) == 18 and len(set(colours)) == 18
    assert _title_inside(fig)


def test_coefficient_groups_keep_factors_together():
    names = (["Intercept", "x", "z"] + [f"C(g)[T.{i}]" for i in range(12)]
             + ["C(h)[T.1]", "C(h)[T.2]", "x:C(h)[T.1]"])
    groups = coefficient_groups(names)
    assert sum(groups, []) == names  # every name once, in order
    assert all(len(g) <= MAX_LINES_PER_PANEL for g in groups)
    assert groups[0] == ["Intercept", "x", "z"]
    assert [g for g in groups if "C(g)[T.0]" in g][0][:10] == [f"C(g)[T.{i}]" for i in range(10)]


def _hand_made_plan(rmse_high: float) -> Plan:
    """A plan whose histogram error at epsilon 3 is bias (bins 3 -> 4)."""
    rows = []
    for eps, rmse, bias, bins in ((1.0, 0.8, 0.1, "3"), (3.0, rmse_high, 1.6, "4")):
        noise = math.sqrt(max(rmse**2 - bias**2, 0.0))
        rows.append(dict(epsilon=eps, coef="C(g)[T.b]", rmse=rmse, bias=bias, median_width=1.0,
                         no_information=0.0, sampling_sd=0.2, method="histogram", n_ok=15,
                         requested="auto", noise_sd=noise, rmse_se=0.05, bias_se=0.05,
                         n_intervals=1, bins=bins))
    return Plan(table=pd.DataFrame(rows, columns=TABLE_COLUMNS), formula="y ~ C(g)",
                model="ols", n=6000, reps=15)


def test_str_explains_a_rising_rmse_by_its_bias_and_the_bins():
    text = str(_hand_made_plan(1.7)).replace("\n", " ")
    assert ("the RMSE rises (beyond 2 Monte Carlo standard errors) for C(g)[T.b] from "
            "epsilon 1 to 3 (RMSE 0.8 -> 1.7, bias +0.1 -> +1.6, bins 3 -> 4)") in text
    assert "Mostly bias at epsilon 3" in text
    assert "bins='auto' takes more bins at a larger epsilon" in text
    # within Monte Carlo error (0.85 - 0.8 < 2 * 0.07): no claim that it rises
    assert "rises (beyond" not in str(_hand_made_plan(0.85))


def test_a_plan_of_the_first_version_still_reads():
    """A Plan built with the first version's nine columns (a pickled or hand-made
    one): pivot, str and plot keep working."""
    rows = [dict(epsilon=e, coef=c, rmse=r, bias=0.1, median_width=2.0, no_information=0.0,
                 sampling_sd=0.1, method="histogram", n_ok=3)
            for e, r0 in ((0.5, 2.0), (2.0, 0.5)) for c, r in (("Intercept", r0), ("x", r0 / 4))]
    p = Plan(table=pd.DataFrame(rows), formula="y ~ x", model="ols", n=100, reps=3)
    assert list(p.pivot("rmse").columns) == [0.5, 2.0]
    assert "RMSE" in str(p) and "Plan(model='ols'" in repr(p)
    fig = p.plot()
    assert len(fig.axes) == 1 and len([ln for ln in fig.axes[0].lines
                                       if (ln.get_gid() or "").startswith("coef:")]) == 2


def test_the_benchmark_script_runs(tmp_path):
    root = pathlib.Path(__file__).resolve().parents[2]
    sys.path.insert(0, str(root / "benchmarks"))
    try:
        import plan_speed
    finally:
        sys.path.pop(0)
    out = tmp_path / "plan_speed.md"
    plan_speed.main(["--quick", "--cases", "housing", "--out", str(out)])
    text = out.read_text()
    assert "| housing | ols | 6,000 | 8 | auto | 2 | 3 | 1 | 6 |" in text


def test_the_bias_benchmark_script_runs(tmp_path):
    root = pathlib.Path(__file__).resolve().parents[2]
    sys.path.insert(0, str(root / "benchmarks"))
    try:
        import plan_bias
    finally:
        sys.path.pop(0)
    out = tmp_path / "plan_bias.md"
    plan_bias.main(["--quick", "--out", str(out)])
    text = out.read_text()
    assert text.count("| Intercept |") == 3 and "bins per continuous variable: 3 at 1" in text
    assert "bins per continuous variable: 5 at 1, 5 at 3" in text  # bins=5 fixed


def test_plan_reports_power_beside_the_non_private_power():
    """``power``: the share of the bootstrapped data sets whose dp interval
    excludes 0 on the non-private estimate's side; ``np_power``: the share
    whose non-private interval does.  A strong slope at a large epsilon is
    found in every data set, as without privacy; at a tiny epsilon the same
    data sets find nothing (an infinite or wide interval is no power), while
    ``np_power`` is unchanged (it reads the same data sets)."""
    def strong(rng, n):
        x = rng.uniform(0, 10, n)
        g = rng.choice(["a", "b", "c"], n)
        return pd.DataFrame({"x": x, "g": g, "y": 1 + 0.8 * x + rng.normal(size=n)})

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        p = dpm.plan("y ~ x + C(g)", guess=strong, n=3000, epsilon=[0.01, 30.0],
                     bounds=BOUNDS, levels={"g": ["a", "b", "c"]}, reps=3, interval_reps=3,
                     n_boot=60, random_state=1, method="moments")
    t = p.table.set_index(["epsilon", "coef"])
    assert (t["n_intervals"] == 3).all()
    assert t.loc[(30.0, "x"), "power"] == 1.0 and t.loc[(30.0, "x"), "np_power"] == 1.0
    assert t.loc[(0.01, "x"), "power"] == 0.0 and t.loc[(0.01, "x"), "np_power"] == 1.0
    # every share is a count over the 3 data sets
    assert np.allclose(3 * t["power"], np.round(3 * t["power"]))
    assert "power: share of the 3 data sets per cell" in str(p)
    assert "no privacy" in str(p)


def test_plan_without_bootstrapped_intervals_has_no_power():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        p = dpm.plan("y ~ x + C(g)", guess=guess_fn, method="moments", interval_reps=0,
                     **PLAN_ARGS)
    assert p.table["power"].isna().all() and p.table["np_power"].isna().all()
    assert "power:" not in str(p)
