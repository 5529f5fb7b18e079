"""Variables without public bounds: ``bounds={"x": dpm.Unbounded(center, scale)}``
(dpmodels/core/unbounded.py; Lei 2011 §3.2).

The per-row map ``x -> T(x) = 1/(1+exp(-(x-c)/s)) -> bin`` is public, so the
histogram's sensitivity (2) and noise law are unchanged: the audit below
runs the library's release on two neighbours that differ by a row moved
from far out in the lower tail to far out in the upper tail, and the
neighbour test compares everything published.  The expected values are
computed here from the definition of T, independently of the library.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pandas as pd
import pytest
import statsmodels.api as sm
from scipy import stats

import dpmodels as dpm
from dpmodels.domain.axes import Axis, build_domain

from tests.support.audit_tools import ABSENT, exact_event_probability, privacy_audit, tightness_margin
from tests.support.neighbours import Case, compare

U = dpm.Unbounded(center=2.0, scale=3.0)


def logistic(x, c, s):
    """T written independently of the library (scipy's expit)."""
    from scipy.special import expit

    return expit((np.asarray(x, float) - c) / s)


def logit_inv(u, c, s):
    from scipy.special import logit

    return c + s * logit(np.asarray(u, float))


# ---------------------------------------------------------------------------
# the declaration and the axis
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("center, scale, error", [
    (math.nan, 1.0, dpm.DomainError), (0.0, math.inf, dpm.DomainError),
    (0.0, 0.0, dpm.DomainError), (0.0, -1.0, dpm.DomainError),
    ("0", 1.0, dpm.DomainTypeError), (0.0, True, dpm.DomainTypeError),
    (1e305, 1.0, dpm.DomainError)])
def test_unbounded_refuses_bad_parameters(center, scale, error):
    with pytest.raises(error, match="Unbounded"):
        dpm.Unbounded(center, scale)


def test_unbounded_is_frozen_and_maps_both_ways():
    u = dpm.Unbounded(np.int64(2), 3)
    assert (u.center, u.scale) == (2.0, 3.0) and u == U and hash(u) == hash(U)
    with pytest.raises(AttributeError):
        u.center = 1.0
    x = np.array([-1e300, -50.0, 0.0, 2.0, 7.5, 1e300, -np.inf, np.inf, np.nan])
    np.testing.assert_allclose(U.forward(x), logistic(x, 2.0, 3.0), rtol=1e-12, atol=0)
    assert np.isnan(U.forward(np.nan))
    inner = np.array([-50.0, 0.0, 2.0, 7.5, 60.0])
    np.testing.assert_allclose(U.inverse(U.forward(inner)), inner, rtol=1e-9, atol=1e-9)
    assert U.inverse(0.0) == -np.inf and U.inverse(1.0) == np.inf


def test_axis_bins_on_the_unit_interval_with_finite_representatives():
    K = 6
    ax = build_domain(["x"], {"x": np.dtype(float)}, bounds={"x": U}, bins=K, n=100,
                      epsilon=1.0).axis("x")
    assert (ax.scale, ax.unbounded, ax.bounds, ax.coord_bounds) == (
        "logistic", U, (-math.inf, math.inf), (0.0, 1.0))
    np.testing.assert_allclose(ax.edges, np.linspace(0, 1, K + 1))
    # each cell's value: T^-1 of its midpoint on (0, 1), the edge bins included
    np.testing.assert_allclose(ax.column(np.arange(K)), logit_inv((np.arange(K) + 0.5) / K, 2, 3))
    assert np.all(np.isfinite(ax.column(np.arange(K))))
    x = np.array([-np.inf, -1e300, -1e6, 1.999, 2.0, 1e6, 1e300, np.inf, np.nan])
    codes, missing, _ = ax.codes(x)
    want = np.clip(np.floor(logistic(x[:-1], 2, 3) * K), 0, K - 1)
    np.testing.assert_array_equal(codes[:-1], want)
    assert codes[-1] == -1 and missing.tolist() == [False] * 8 + [True]
    assert "unbounded" in ax.describe() and "logistic" in ax.describe()
    with pytest.raises(dpm.DomainError, match="logistic"):
        Axis("x", "continuous", bounds=(0.0, 1.0), bins=3, scale="logistic")


def test_log_of_an_unbounded_variable_is_refused_naming_it():
    df = pd.DataFrame({"y": [1.0, 2.0], "income": [1.0, 3.0]})
    for term in ("np.log(income)", "np.sqrt(income)"):
        with pytest.raises(dpm.DomainError, match=r"'income'.*np\.(log|sqrt)"):
            dpm.dp_ols(f"y ~ {term}", data=df, epsilon=1.0,
                       bounds={"y": (0, 3), "income": dpm.Unbounded(1, 1)})


def test_a_scale_too_small_for_the_centre_is_refused():
    with pytest.raises(dpm.DomainError, match="not distinct"):
        build_domain(["x"], {"x": np.dtype(float)}, bounds={"x": dpm.Unbounded(1e9, 1e-9)},
                     bins=50, n=100, epsilon=1.0)


# ---------------------------------------------------------------------------
# the release and the models
# ---------------------------------------------------------------------------
def _skewed(n=2000, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.lognormal(0.5, 0.8, n)
    y = 1.0 + 0.5 * x + rng.normal(0, 1, n)
    return pd.DataFrame({"x": x, "y": y, "b": y > 2.5, "g": rng.integers(0, 3, n)})


def test_exact_counts_are_the_histogram_of_T_on_the_unit_interval():
    df = _skewed()
    df.loc[0, "x"], df.loc[1, "x"] = 1e300, -np.inf  # never clipped away: the edge bins
    with pytest.warns(dpm.NotPrivateWarning):
        rel = dpm.release(df, columns=["x"], epsilon=math.inf, bins=7, bounds={"x": U})
    want = np.histogram(logistic(df["x"], 2, 3), bins=np.linspace(0, 1, 8))[0]
    got = np.zeros(7, int)
    got[rel.cell_ids.astype(int)] = rel.counts
    np.testing.assert_array_equal(got, want)
    assert not rel.report.private


def test_dp_ols_at_epsilon_inf_is_statsmodels_on_the_binned_rows():
    """Exact: the histogram OLS with midpoint representatives is weighted
    least squares on the rows moved to T^-1 of their bins' midpoints."""
    df = _skewed()
    K = 9
    Uy = dpm.Unbounded(2.0, 2.0)
    with pytest.warns(dpm.NotPrivateWarning):
        res = dpm.dp_ols("y ~ x", data=df, epsilon=math.inf, bins=K, bounds={"x": U, "y": Uy},
                         method="histogram", representatives="midpoint").fit(cov_type="naive")
    binned = {}
    for v, (c, s) in (("x", (2, 3)), ("y", (2, 2))):
        code = np.clip(np.floor(logistic(df[v], c, s) * K), 0, K - 1)
        binned[v] = logit_inv((code + 0.5) / K, c, s)
    ref = sm.OLS(binned["y"], sm.add_constant(binned["x"])).fit()
    np.testing.assert_allclose(res.params.to_numpy(), ref.params, rtol=1e-9)


def test_auto_chooses_the_histogram_and_other_releases_refuse_before_any_budget():
    df = _skewed(400)
    before = df.copy()
    acc = dpm.Accountant(2.0)
    kw = dict(data=df, epsilon=1.0, bounds={"x": U, "y": (-5, 15)}, random_state=0)
    assert dpm.dp_ols("y ~ x", **kw, accountant=acc).release.domain.axis("x").unbounded == U
    assert acc.spent == pytest.approx(1.0)
    model = dpm.dp_logit("b ~ x", **kw, levels={"b": [False, True]})
    assert isinstance(model.release, dpm.PrivateHistogram)
    for call in (lambda: dpm.dp_ols("y ~ x", **kw, method="moments", accountant=acc),
                 lambda: dpm.dp_logit("b ~ x", **kw, levels={"b": [False, True]},
                                      method="newton", accountant=acc),
                 lambda: dpm.release_moments(df, formula="y ~ x", epsilon=1.0,
                                             bounds={"x": U, "y": (-5, 15)}, accountant=acc)):
        with pytest.raises(dpm.DomainError, match=r"'x' is declared Unbounded.*method='histogram'"):
            call()
    assert acc.spent == pytest.approx(1.0)  # refused before spending
    pd.testing.assert_frame_equal(df, before)  # the caller's data untouched
    # a budget too small is refused before anything is read
    with pytest.raises(dpm.BudgetExceededError):
        dpm.release(df, columns=["x"], epsilon=1.5, bounds={"x": U}, accountant=acc)


@pytest.mark.parametrize("factory, formula, extra", [
    (dpm.dp_logit, "b ~ x + C(g)", {"levels": {"b": [False, True], "g": [0, 1, 2]}}),
    (dpm.dp_quantreg, "y ~ x", {}),
    (dpm.dp_mnlogit, "g ~ x", {"levels": {"g": [0, 1, 2]}}),
])
def test_every_histogram_model_fits_with_an_unbounded_covariate(factory, formula, extra):
    df = _skewed(1500)
    model = factory(formula, data=df, epsilon=2.0, bins=6, bounds={"x": U, "y": (-5, 15)},
                    random_state=1, **extra)
    res = model.fit(cov_type="naive")
    assert np.all(np.isfinite(np.asarray(res.params, float)))
    assert np.all(np.isfinite(model.cells["x"]))


def test_density_representatives_of_the_edge_bins_are_finite():
    df = _skewed(3000)
    df.loc[:40, "x"] = 1e9  # mass in the upper edge bin
    model = dpm.dp_ols("y ~ x", data=df, epsilon=1.0, bins=5, bounds={"x": U, "y": (-5, 15)},
                       representatives="density", random_state=2)
    x = model.cells["x"].to_numpy()
    assert np.all(np.isfinite(x))
    top = model.cells["x"] > logit_inv(0.8, 2, 3)
    assert top.any()


def test_saved_release_round_trip_and_a_malformed_file_is_refused(tmp_path):
    df = _skewed(500)
    rel = dpm.release(df, columns=["x", "g"], epsilon=1.0, bins=5, bounds={"x": U},
                      levels={"g": [0, 1, 2]}, random_state=0)
    back = dpm.load_release(rel.save(tmp_path / "r.json"))
    assert back.domain == rel.domain and back.report == rel.report
    pd.testing.assert_frame_equal(back.cells, rel.cells)
    text = (tmp_path / "r.json").read_text().replace('"scale": 3.0', '"scale": -3.0')
    (tmp_path / "bad.json").write_text(text)
    with pytest.raises(dpm.SavedReleaseError, match="scale"):
        dpm.load_release(tmp_path / "bad.json")


def test_engines_bin_every_row_as_pandas_does():
    pl = pytest.importorskip("polars")
    duckdb = pytest.importorskip("duckdb")
    rng = np.random.default_rng(3)
    x = np.r_[rng.standard_cauchy(400) * 5, -1e300, 1e300, -np.inf, np.inf]
    df = pd.DataFrame({"x": x, "g": rng.integers(0, 3, x.size)})
    kw = dict(columns=["x", "g"], epsilon=math.inf, bins=9, bounds={"x": dpm.Unbounded(0, 3)},
              levels={"g": [0, 1, 2]})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        base = dpm.release(df, **kw)
        others = [pl.DataFrame(df), pl.DataFrame(df).lazy(), duckdb.from_df(df)]
        try:
            import dask.dataframe as dd

            others.append(dd.from_pandas(df, npartitions=3))
        except ImportError:
            pass
        for data in others:
            other = dpm.release(data, **kw)
            np.testing.assert_array_equal(other.cell_ids, base.cell_ids)
            np.testing.assert_array_equal(other.counts, base.counts)


def test_plot_and_sample_give_finite_values():
    pytest.importorskip("matplotlib")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rel = dpm.release(_skewed(500), columns=["x"], epsilon=1.0, bins=5, bounds={"x": U},
                      random_state=0)
    fig = rel.plot("x")
    bars = [p for p in fig.axes[0].patches]
    assert bars and all(np.isfinite(p.get_x()) and np.isfinite(p.get_width()) for p in bars)
    plt.close(fig)
    if hasattr(rel, "sample"):
        rows = rel.sample(size=2000, random_state=0)
        assert np.all(np.isfinite(rows["x"]))
        from dpmodels.mechanisms.synthetic import values_in_bins

        ax = rel.domain.axis("x")
        edge = values_in_bins(ax, np.array([0, 4]), np.array([0.0, 1.0 - 2**-53]))
        assert np.all(np.isfinite(edge))


def test_cli_schema_declares_an_unbounded_variable(tmp_path):
    from dpmodels.cli.commands import CLIError, domain_for, read_schema

    path = tmp_path / "schema.toml"
    path.write_text('[variables.income]\nbounds = "unbounded:50000:20000"\n'
                    '[variables.y]\nbounds = [0, 1]\n')
    bounds, _, _ = domain_for(["income", "y"], read_schema(path), path)
    assert bounds == {"income": dpm.Unbounded(50000, 20000), "y": (0, 1)}
    for bad in ("unbounded:5", "unbounded:0:-1", "unbounded:a:1"):
        path.write_text(f'[variables.income]\nbounds = "{bad}"\n')
        with pytest.raises(CLIError, match="unbounded:CENTER:SCALE"):
            read_schema(path)


# ---------------------------------------------------------------------------
# privacy: the empirical audit and the neighbour test
# ---------------------------------------------------------------------------
EPS = 1.0
#: Releases per data set: 2 x 2500 signed releases of a 10-row frame (~0.5 ms each).
R = 2500
K = 4
#: D: one row far out in the lower tail (bin 0); D': that row far out in the upper
#: tail (bin 3), beyond any bound a caller could have guessed.  Other rows at c.
D = pd.DataFrame({"x": [-1e12] + [2.0] * 9})
DP = pd.DataFrame({"x": [1e12] + [2.0] * 9})


def _signed_release(data, seed):
    rel = dpm.release(data, columns=["x"], epsilon=EPS, bins=K, bounds={"x": U},
                      threshold=None, random_state=int(seed))
    return rel.cell_ids, rel.counts


EVENTS = {  # on the released values (v0, v3) of the two edge cells
    "v0 >= 1": lambda v: v[:, 0] >= 1,
    "v3 <= 0": lambda v: v[:, 1] <= 0,
    "v0 >= 1 and v3 <= 0": lambda v: (v[:, 0] >= 1) & (v[:, 1] <= 0),
    "v0 present": lambda v: v[:, 0] != ABSENT,
}


def test_audit_rows_far_out_in_both_tails():
    assert int((D != DP).any(axis=1).sum()) == 1 and len(D) == len(DP)
    # the stated exact counts: the moved row is in bin 0 in D, bin 3 in D'
    for data, want in ((D, [1, 0]), (DP, [0, 1])):
        with pytest.warns(dpm.NotPrivateWarning):
            rel = dpm.release(data, columns=["x"], epsilon=math.inf, bins=K, bounds={"x": U})
        got = dict(zip(rel.cell_ids.tolist(), rel.counts.tolist()))
        assert [got.get(0, 0), got.get(3, 0)] == want
    result = privacy_audit(_signed_release, D, DP, [0, 3], EVENTS, R=R, seed_base=7_000_000)
    z = stats.norm.isf(result.family_alpha / len(result.bounds))
    full = []
    for b in result.bounds:
        pD = exact_event_probability(EVENTS[b.event], [1, 0], None, EPS)
        pDp = exact_event_probability(EVENTS[b.event], [0, 1], None, EPS)
        p_num, p_den = (pD, pDp) if b.direction == "D/D'" else (pDp, pD)
        theory = math.log(p_num / p_den)
        margin = tightness_margin(p_num, p_den, R, result.alpha_each, z)
        assert b.lower_bound <= EPS and b.lower_bound <= theory + 1e-12, b
        assert b.lower_bound >= theory - margin, (b, theory, margin)
        if math.isclose(theory, EPS, rel_tol=1e-9):
            full.append((b, margin))
    assert full, "the audit must include an event whose exact loss is epsilon"
    b, margin = min(full, key=lambda t: t[1])
    assert margin < 0.5 * EPS and b.lower_bound >= EPS - margin


def _neighbour_case(model, formula, kw, moved_to):
    df = _skewed(300, seed=5)
    df.loc[0, "x"] = -1e12
    nb = df.copy()
    nb.loc[0, "x"] = moved_to
    return Case(f"unbounded-{model}", model, formula, df, nb, kw, {})


@pytest.mark.parametrize("model, formula, kw", [
    ("ols", "y ~ x", {"bounds": {"x": U, "y": dpm.Unbounded(2, 2)}, "bins": 4}),
    ("logit", "b ~ x + C(g)", {"bounds": {"x": U}, "bins": 4,
                               "levels": {"b": [False, True], "g": [0, 1, 2]}}),
])
@pytest.mark.parametrize("moved_to", [1e12, np.nan])
def test_neighbours_publish_the_same_metadata(model, formula, kw, moved_to):
    case = _neighbour_case(model, formula, {**kw, "epsilon": 1.0}, moved_to)
    compared, rel, _ = compare(case)
    assert rel["model.cells"]["dtypes"][list(rel["model.cells"]["columns"]).index("x")] == "float64"
