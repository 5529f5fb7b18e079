"""The noisy-moments release and dp_ols on it (dpmodels.mechanisms.moments,
dpmodels.mechanisms.moments.model, dpmodels.front.methods).

Exactness at epsilon = inf, the noise law of the released entries, the
estimator's bootstrap coverage on a small fast version of the validity
benchmark, the information diagnostic, the choice of method="auto", and
the refusals.  The privacy audit and the neighbour property test of the
mechanism are in tests/mechanisms/moments/test_moments_privacy.py.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pandas as pd
import pytest
import statsmodels.formula.api as smf

import dpmodels as dpm
from dpmodels.core.errors import DPModelsError, NotPrivateWarning, ReleaseWarning
from dpmodels.front.methods import choose_ols_method
from dpmodels.mechanisms.moments import PrivateMoments, _RowPasses, published_frame, exact_statistics
from dpmodels.mechanisms.moments.model import DPMomentsOLS

BOUNDS = {"x1": (1.0, 10.0), "x2": (-4.0, 4.0), "y": (-20.0, 20.0)}
LEVELS = {"g": ["a", "b", "c"]}


def _frame(n: int = 4000, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    df = pd.DataFrame({"x1": rng.uniform(1, 10, n), "x2": rng.normal(size=n).clip(-4, 4),
                       "g": rng.choice(["a", "b", "c"], n)})
    df["y"] = 1 + 0.5 * df["x1"] - df["x2"] + (df["g"] == "b") + rng.normal(size=n)
    return df


def _exact(formula, df, **kw):
    with pytest.warns(NotPrivateWarning):
        return dpm.dp_ols(formula, df, epsilon=float("inf"), bounds=BOUNDS, levels=LEVELS,
                          method="moments", **kw)


@pytest.mark.parametrize("formula", [
    "y ~ x1 + x2 + C(g)",
    "y ~ x2 * C(g) + np.log(x1)",
    "y ~ x1 + x2 - 1",
    "y ~ x1:x2 + I(x2**2)",
])
def test_infinite_epsilon_reproduces_statsmodels(formula):
    df = _frame()
    res = _exact(formula, df).fit(cov_type="naive")
    ref = smf.ols(formula, df).fit()
    assert list(res.params.index) == list(ref.params.index)
    np.testing.assert_allclose(res.params, ref.params, rtol=1e-9, atol=1e-10)
    np.testing.assert_allclose(res.bse, ref.bse, rtol=1e-9)
    assert res.nobs == ref.nobs
    assert math.isclose(res.rsquared, ref.rsquared, rel_tol=1e-9)
    np.testing.assert_allclose(res.predict(df.iloc[:5]), ref.predict(df.iloc[:5]), rtol=1e-9)


def test_the_caller_frame_is_not_modified():
    df = _frame()
    before = df.copy()
    dpm.dp_ols("y ~ x1 + x2 + C(g)", df, epsilon=1.0, bounds=BOUNDS, levels=LEVELS,
               method="moments", random_state=0)
    pd.testing.assert_frame_equal(df, before)


def _noise_z(seed: int, df, formula="y ~ x1 + x2 + C(g)"):
    """Released minus exact entries (same offsets, scales and radius), in units
    of the stated noise standard deviation."""
    mom = dpm.dp_ols(formula, df, epsilon=1.0, bounds=BOUNDS, levels=LEVELS,
                     method="moments", random_state=seed).release
    published, valid = published_frame(df, mom.space.domain, "drop")
    stats = exact_statistics(_RowPasses(mom.space, published, valid, 1 << 16), mom.space,
                             mom.offsets, mom.scales, mom.radius)
    count, sums, second = stats.decode(stats.vector)
    sd = np.sqrt(mom.noise_var)
    i, j = mom.space.released_pairs
    z = np.concatenate([[(mom.count - count) / sd[0]], (mom.sums - sums) / sd[1],
                        (mom.second[i, j] - second[i, j]) / sd[2]])
    return z


def test_released_entries_carry_the_stated_noise_law():
    """Each entry's noise is discrete Laplace of the stated variance, centred:
    over 150 releases the standardized noise has mean 0 (4 standard errors)
    and variance 1 (the sample variance of Laplace draws has relative sd
    sqrt((kurtosis - 1) / R) = sqrt(5 / 150) = 0.18: tolerance 4 of those)."""
    df = _frame(n=300)
    Z = np.array([_noise_z(seed, df) for seed in range(150)])
    R = Z.shape[0]
    assert np.all(np.abs(Z.mean(axis=0)) < 4.0 / math.sqrt(R))
    assert np.all(np.abs(Z.var(axis=0) - 1.0) < 4.0 * math.sqrt(5.0 / R))
    # and the entries are independent: the pooled correlations are near 0
    C = np.corrcoef(Z, rowvar=False)
    off = C[~np.eye(C.shape[0], dtype=bool)]
    assert np.all(np.abs(off) < 4.0 / math.sqrt(R) + 0.05)


def test_bootstrap_covers_population_coefficients():
    """A small version of benchmarks/validity.py: 5 normal covariates (one with
    slope 0), n = 20,000, epsilon = 1, 40 data sets.  For a 95% interval the
    coverage over 40 sets has sd 0.034; each coefficient must reach 0.85
    (3 sd below 0.95), and the null slope is significant at most 5 times
    (P(X >= 6) < 0.05 for Binomial(40, 0.05))."""
    beta = np.array([1.0, -0.5, 0.75, 0.25, 0.0])
    truth = np.r_[1.0, beta]
    cols = [f"x{j}" for j in range(5)]
    bounds = {c: (-4.0, 4.0) for c in cols} | {"y": (-15.0, 17.0)}
    formula = "y ~ " + " + ".join(cols)
    covered, null_sig = np.zeros(6), 0
    for r in range(40):
        rng = np.random.default_rng(500 + r)
        X = rng.normal(size=(20_000, 5)).clip(-4, 4)
        df = pd.DataFrame(X, columns=cols)
        df["y"] = 1 + X @ beta + rng.normal(size=20_000)
        res = dpm.dp_ols(formula, df, epsilon=1.0, bounds=bounds, random_state=r).fit(
            random_state=r, n_boot=300)
        ci = np.asarray(res.conf_int())
        covered += (ci[:, 0] <= truth) & (truth <= ci[:, 1])
        null_sig += res.pvalues.iloc[-1] < 0.05
    assert np.all(covered / 40 >= 0.85), covered / 40
    assert null_sig <= 5


def test_one_centre_for_every_test():
    df = _frame(n=20_000)
    res = dpm.dp_ols("y ~ x1 + x2 + C(g)", df, epsilon=1.0, bounds=BOUNDS, levels=LEVELS,
                     method="moments", random_state=1).fit(random_state=1)
    ci = np.asarray(res.conf_int())
    tt = res.t_test("x1 = 0")
    np.testing.assert_allclose(np.asarray(tt.conf_int())[0], ci[list(res.params.index).index("x1")])
    np.testing.assert_allclose(res.tvalues, res.params / res.bse)
    assert np.all(np.sign(res.tvalues) == np.sign(res.params))
    assert "noisy moments" in str(res.summary())


def test_a_declared_level_with_no_rows_is_flagged():
    """The empty level is flagged; x1 stays informative.  (n = 50,000: since the
    radius clips at most 0.5 / sqrt(n) of the rows, moments.CLIP_BIAS, x1's SE at
    n = 20,000 and epsilon 1 is 0.22 for a slope of 0.5.)"""
    df = _frame(n=50_000)
    levels = {"g": ["a", "b", "c", "empty"]}
    with pytest.warns(ReleaseWarning, match=r"C\(g\)\[T.empty\]"):
        res = dpm.dp_ols("y ~ x1 + x2 + C(g)", df, epsilon=1.0, bounds=BOUNDS, levels=levels,
                         method="moments", random_state=0).fit(random_state=0)
    assert np.isinf(res.bse["C(g)[T.empty]"])
    assert res.pvalues["C(g)[T.empty]"] == 1.0
    assert np.isfinite(res.bse["x1"]) and res.pvalues["x1"] < 1e-3
    assert np.isfinite(res.bse["Intercept"])  # an empty dummy's mean is 0: no pull on it


@pytest.mark.parametrize("value, intercept_flagged", [(5.5, True), (0.0, False)])
def test_a_slope_without_information_takes_the_intercept_with_it(value, intercept_flagged):
    """A column with no spread leaves its slope unknown, and with it the intercept
    (the response's mean minus the slopes times the columns' means) unless the
    column's mean is 0."""
    df = _frame(n=20_000)
    column = "x1" if value else "x2"
    df[column] = value
    with pytest.warns(ReleaseWarning, match=column):
        res = dpm.dp_ols("y ~ x1 + x2 + C(g)", df, epsilon=1.0, bounds=BOUNDS, levels=LEVELS,
                         method="moments", random_state=1).fit(random_state=1)
    assert np.isinf(res.bse[column]) and res.pvalues[column] == 1.0
    assert np.isinf(res.bse["Intercept"]) == intercept_flagged
    assert np.isfinite(res.bse["C(g)[T.b]"])


HOUSING_LEVELS = {"county": [f"County{i}" for i in range(1, 7)], "year": [1, 2, 3, 4]}
HOUSING_BOUNDS = {"price": (1e5, 9e5), "size": (0, 3000)}


def test_a_coefficient_the_floor_absorbs_is_flagged(monkeypatch):
    """2,000 house sales at epsilon 0.5 with the whole ``[x y]`` matrix floored:
    the eigenvalue floor swallows most county effects (the validity grid's
    housing40 at n = 2e3: County3 covered 74.5% with finite intervals around a
    shrunk estimate).  A coefficient the estimate keeps less than SHRINK_MIN of
    is reported as carrying no information, with a warning naming it and the
    reason; the others keep finite errors.  (By default this release floors its
    residual apart, `floors_apart()`, and keeps more of the counties:
    tests/mechanisms/moments/test_residual_floor.py.)"""
    from dpmodels.mechanisms.moments import model as mo

    monkeypatch.setattr(mo, "FLOOR_RESIDUAL_APART", False)
    df = dpm.datasets.housing().sample(2000, random_state=5)
    model = dpm.dp_ols("price ~ size + year + C(county)", df, epsilon=0.5, method="moments",
                       bounds=HOUSING_BOUNDS, levels=HOUSING_LEVELS, random_state=2)
    with pytest.warns(ReleaseWarning, match="noise floor absorbs") as caught:
        res = model.fit(random_state=0)
    naive = model.fit(cov_type="naive")
    floor = mo.noise_floor(model.release)
    keep = model._shrinkage(np.asarray(naive.params), floor, np.random.default_rng(0),
                            model._apart(floor))
    assert keep is not None and keep[0] == 1.0  # the intercept is not a column
    absorbed = [nm for nm, k in zip(naive.params.index, keep) if k < mo.SHRINK_MIN]
    assert absorbed and "size" not in absorbed and "year" not in absorbed
    message = " ".join(str(w.message) for w in caught)
    for name in absorbed:
        assert np.isinf(res.bse[name]) and res.pvalues[name] == 1.0
        assert name in message
    assert np.isfinite(res.bse["size"]) and np.isfinite(res.bse["year"])


def test_the_shrinkage_is_the_mechanism_s():
    """What _shrinkage measures from one release is what the mechanism does:
    ten uniform slopes of 1 at n = 2,000, epsilon 3 (the grid's cont10, whose
    slopes come out near a third of their value).  The estimate's response to a
    slope, measured from releases of real data sets (same rows and noise, the
    slope moved by 1), against the median of the per-release measures: the
    diagnostic separates a tenth from all of it, so it must agree within a
    factor of two."""
    from dpmodels.mechanisms.moments import model as mo

    n, k = 2000, 10
    names = [f"x{i}" for i in range(1, k + 1)]
    bounds = {nm: (0.0, 1.0) for nm in names} | {"y": (-4.0, 15.0)}
    formula = "y ~ " + " + ".join(names)
    moved, measured = [], []
    for seed in range(8):
        rng = np.random.default_rng(seed)
        X = rng.uniform(size=(n, k))
        e = rng.normal(size=n).clip(-4, 4)
        fits = []
        for extra in (0.0, 1.0):  # x1's slope 1, then 2
            df = pd.DataFrame(X, columns=names)
            df["y"] = X.sum(axis=1) + extra * X[:, 0] + e
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                model = dpm.dp_ols(formula, df, epsilon=3.0, bounds=bounds, method="moments",
                                   random_state=seed)
                fits.append(model.fit(cov_type="naive"))
        moved.append(fits[1].params["x1"] - fits[0].params["x1"])
        floor = mo.noise_floor(model.release)
        keep = model._shrinkage(np.asarray(fits[1].params), floor, np.random.default_rng(seed),
                                model._apart(floor))
        measured.append(keep[1])
    actual, diagnosed = float(np.mean(moved)), float(np.median(measured))
    assert actual < 0.8  # the floor binds here
    assert 0.5 * actual < diagnosed < 2.0 * actual


def test_what_the_floor_took_widens_the_interval():
    """Slopes the floor shrinks to about a third (not flagged: they keep more
    than a tenth) carry what was taken, ``b (1/keep - 1)``, as a shift of
    unknown sign, and the intercept the slopes' shifts times the columns' means
    (the grid's cont10 at n = 2e3, epsilon 3: the intercept's null rejections
    12.5% before the shift).  The shift's arithmetic, and its size inside the
    standard errors."""
    from dpmodels.mechanisms.moments import model as mo

    n, k = 2000, 10
    names = [f"x{i}" for i in range(1, k + 1)]
    rng = np.random.default_rng(3)
    X = rng.uniform(size=(n, k))
    df = pd.DataFrame(X, columns=names)
    df["y"] = X[:, :9].sum(axis=1) + rng.normal(size=n).clip(-4, 4)
    bounds = {nm: (0.0, 1.0) for nm in names} | {"y": (-4.0, 13.0)}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = dpm.dp_ols("y ~ " + " + ".join(names), df, epsilon=3.0, bounds=bounds,
                           method="moments", random_state=3)
        res = model.fit(random_state=0)
    b = np.asarray(model.fit(cov_type="naive").params)
    floor = mo.noise_floor(model.release)
    keep = model._shrinkage(b, floor, np.random.default_rng(1), model._apart(floor))
    assert keep is not None and np.all(keep[1:] < 0.8)
    shift = model._shrinkage_shift(b, keep)
    k_ = np.clip(keep, mo.SHRINK_MIN, 1.0)
    np.testing.assert_allclose(shift[1:], b[1:] * (1 / k_[1:] - 1))
    means = df[names].mean().to_numpy()  # the noisy means are within a few % at epsilon 3
    assert shift[0] == pytest.approx(-(shift[1:] @ means), rel=0.1)
    # the shift enters the MSE whole (another draw of keep: within 20%)
    assert np.all(np.asarray(res.bse) >= 0.8 * np.abs(shift))


def test_a_well_informed_release_flags_nothing():
    """At n = 50,000 and epsilon 1 the estimate keeps most of every coefficient
    (30 data sets of this design at n = 5,000 never went below SHRINK_MIN): no
    coefficient is flagged; without noise nothing is measured at all."""
    from dpmodels.mechanisms.moments import model as mo

    df = _frame(n=50_000)
    model = dpm.dp_ols("y ~ x1 + x2 + C(g)", df, epsilon=1.0, bounds=BOUNDS, levels=LEVELS,
                       method="moments", random_state=0)
    naive = model.fit(cov_type="naive")
    floor = mo.noise_floor(model.release)
    keep = model._shrinkage(np.asarray(naive.params), floor, np.random.default_rng(0),
                            model._apart(floor))
    assert keep is None or np.all(keep > 0.5)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ReleaseWarning)
        res = model.fit(random_state=0)
    assert np.all(np.isfinite(res.bse))
    exact = _exact("y ~ x1 + x2 + C(g)", df)
    assert exact._shrinkage(np.asarray(exact.fit(cov_type="naive").params), 0.0,
                            np.random.default_rng(0), False) is None


def test_auto_chooses_from_public_inputs_only():
    df = _frame(n=50)
    shuffled = df.sample(frac=1.0, random_state=3).assign(y=lambda d: -d["y"])
    many = {"g": [f"l{i}" for i in range(12)]}
    for data in (df, shuffled):
        assert choose_ols_method("auto", "y ~ x1 + x2 + C(g)", data, bounds=BOUNDS,
                                 levels=LEVELS, namespace={"np": np}) == "moments"
        assert choose_ols_method("auto", "y ~ x1 + C(g)", data, bounds=BOUNDS, levels=many,
                                 namespace={}) == "histogram"
        assert choose_ols_method("auto", "y ~ x1 + x2 + C(g)", data, bounds=BOUNDS,
                                 levels=LEVELS, bins=10, namespace={}) == "histogram"


def test_auto_leaves_a_grid_too_fine_for_the_threshold():
    """bins=40 on two continuous variables and 12 levels: 19,200 cells for 2,000 rows, 0.026
    thresholds (4) of rows per cell: the histogram would lose most rows, so "auto" takes the
    moments and says why; a coarser grid, another histogram option or an explicit method keep
    the histogram.  Public inputs only: the rows' values do not matter."""
    from dpmodels.front.methods import SPARSE_GRID_RATIO

    many = {"g": ["a", "b", "c"] + [f"l{i}" for i in range(9)]}
    df = _frame(n=2000)
    shuffled = df.sample(frac=1.0, random_state=3).assign(y=lambda d: -d["y"])
    kw = dict(bounds=BOUNDS, levels=many, namespace={}, epsilon=1.0)
    for data in (df, shuffled):
        with pytest.warns(dpm.ReleaseWarning, match=r"19,200 cells for 2,000 rows.*moments"):
            assert choose_ols_method("auto", "y ~ x1 + C(g)", data, bins=40, **kw) == "moments"
    # just above the ratio: 2000 / (12 * b^2 * 4) >= 0.5 for b <= 9
    b = int(math.floor(math.sqrt(2000 / (12 * 4 * SPARSE_GRID_RATIO))))
    assert choose_ols_method("auto", "y ~ x1 + C(g)", df, bins=b, **kw) == "histogram"
    with pytest.warns(dpm.ReleaseWarning):
        assert choose_ols_method("auto", "y ~ x1 + C(g)", df, bins=b + 1, **kw) == "moments"
    # a declared n counts, not the rows handed in
    assert choose_ols_method("auto", "y ~ x1 + C(g)", df, bins=40, n=10**6, **kw) == "histogram"
    assert choose_ols_method("histogram", "y ~ x1 + C(g)", df, bins=40, **kw) == "histogram"
    assert choose_ols_method("auto", "y ~ x1 + C(g)", df, bins=40, threshold=3,
                             **kw) == "histogram"
    # invalid bins stay with the histogram, whose checks name them
    assert choose_ols_method("auto", "y ~ x1 + C(g)", df, bins={"X1": 40}, **kw) == "histogram"
    assert choose_ols_method("auto", "y ~ x1 + C(g)", df, bins=2**21, **kw) == "histogram"
    with pytest.warns(dpm.ReleaseWarning, match="method='auto' chose the moments"):
        model = dpm.dp_ols("y ~ x1 + C(g)", df, epsilon=1.0, bounds=BOUNDS, levels=many,
                           bins=40, random_state=0)
    assert isinstance(model, DPMomentsOLS)


def test_default_dp_ols_reports_the_mechanism_and_the_split():
    df = _frame(n=3000)
    model = dpm.dp_ols("y ~ x1 + x2 + C(g)", df, epsilon=0.7, bounds=BOUNDS, levels=LEVELS,
                       random_state=0)
    assert isinstance(model, DPMomentsOLS)
    report = model.privacy
    assert math.isclose(sum(e for _, e in report.split), 0.7, rel_tol=1e-12)
    text = str(model.fit(random_state=0).summary())
    assert "epsilon part" in text and "noisy moments" in text


def test_a_moments_release_is_reused_without_new_budget():
    df = _frame(n=3000)
    acc = dpm.Accountant(1.0)
    model = dpm.dp_ols("y ~ x1 + x2 + C(g)", df, epsilon=1.0, bounds=BOUNDS, levels=LEVELS,
                       method="moments", random_state=0, accountant=acc)
    assert acc.spent == 1.0
    again = dpm.dp_ols("y ~ x1 + x2 + C(g)", model.release)
    assert isinstance(again.release, PrivateMoments) and again.budget_spent == 0.0
    np.testing.assert_allclose(again.fit(cov_type="naive").params,
                               model.fit(cov_type="naive").params)
    with pytest.raises(DPModelsError, match="answers its own formula"):
        dpm.dp_ols("y ~ x1 + C(g)", model.release)
    with pytest.raises(DPModelsError, match="histogram"):
        dpm.dp_ols("y ~ x1 + x2 + C(g)", model.release, method="histogram")


@pytest.mark.parametrize("kwargs, match", [
    ({"formula": "y ~ center(x1) + x2"}, "stateful transform center"),
    ({"bins": 10}, "bins"),
    ({"threshold": "zero"}, "threshold"),
    ({"representatives": "midpoint"}, "representatives"),
    ({"bounds": {"x1": (1, 10), "y": (-20, 20)}}, "x2"),
    ({"levels": {"g": ["a", "b"]}}, "g"),
    ({"formula": "y ~ np.log(x2) + x1"}, "non-finite"),
])
def test_bad_inputs_are_refused_before_any_budget(kwargs, match):
    df = _frame(n=200)
    acc = dpm.Accountant(5.0)
    args = {"formula": "y ~ x1 + x2 + C(g)", "bounds": BOUNDS, "levels": LEVELS} | kwargs
    formula = args.pop("formula")
    with pytest.raises(DPModelsError, match=match):
        dpm.dp_ols(formula, df, epsilon=1.0, method="moments", accountant=acc, **args)
    assert acc.spent == 0.0


def test_a_dask_frame_gives_the_pandas_release():
    """The moments of a Dask DataFrame are computed partition by partition in
    the workers; the summed integer statistics, hence the release with one
    seed, are those of the same rows in pandas."""
    dd = pytest.importorskip("dask.dataframe")
    df = _frame(n=3000)
    df.loc[5, "x1"] = np.nan
    ddf = dd.from_pandas(df, npartitions=3)
    assert choose_ols_method("auto", "y ~ x1 + x2 + C(g)", ddf, bounds=BOUNDS,
                             levels=LEVELS, namespace={}) == "moments"
    a = dpm.dp_ols("y ~ x1 + x2 + C(g)", df, epsilon=1.0, bounds=BOUNDS, levels=LEVELS,
                   random_state=4).release
    b = dpm.dp_ols("y ~ x1 + x2 + C(g)", ddf, epsilon=1.0, bounds=BOUNDS, levels=LEVELS,
                   random_state=4).release
    assert a.count == b.count and a.radius == b.radius
    np.testing.assert_array_equal(a.sums, b.sums)
    np.testing.assert_array_equal(a.second, b.second)
    assert a.report.n == b.report.n == 3000
    with pytest.raises(dpm.UndeclaredLevelError):
        dpm.dp_ols("y ~ x1 + x2 + C(g)", ddf, epsilon=1.0, bounds=BOUNDS,
                   levels={"g": ["a", "b"]}, method="moments")


def test_an_engine_gets_the_choice_and_the_release_of_the_same_rows_in_pandas():
    # issue 28: "auto" never depends on the container, and the moments read DuckDB's
    # rows batch by batch (Arrow record batches) into the same exact integer sums
    duckdb = pytest.importorskip("duckdb")
    df = _frame(n=2000)
    rel = duckdb.from_df(df)
    f = "y ~ x1 + x2 + C(g)"
    assert choose_ols_method("auto", f, rel, bounds=BOUNDS, levels=LEVELS, namespace={}) \
        == choose_ols_method("auto", f, df, bounds=BOUNDS, levels=LEVELS, namespace={}) \
        == "moments"
    a, b = (dpm.dp_ols(f, d, epsilon=1.0, bounds=BOUNDS, levels=LEVELS, method="moments",
                       random_state=4).release for d in (rel, df))
    np.testing.assert_array_equal(a.sums, b.sums)
    np.testing.assert_array_equal(a.second, b.second)
    assert a.count == b.count


def test_missing_values_are_dropped_and_counted_by_the_noisy_count():
    df = _frame(n=4000)
    df.loc[:99, "x2"] = np.nan
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", NotPrivateWarning)
        res = dpm.dp_ols("y ~ x1 + x2 + C(g)", df, epsilon=float("inf"), bounds=BOUNDS,
                         levels=LEVELS, method="moments").fit(cov_type="naive")
    ref = smf.ols("y ~ x1 + x2 + C(g)", df).fit()
    assert res.nobs == 3900
    np.testing.assert_allclose(res.params, ref.params, rtol=1e-9)
    with pytest.raises(dpm.MissingValueError):
        dpm.dp_ols("y ~ x1 + x2 + C(g)", df, epsilon=1.0, bounds=BOUNDS, levels=LEVELS,
                   method="moments", missing="raise")


@pytest.mark.parametrize("formula", [
    "y ~ x1 + C(g)", "y ~ C(g, Treatment('c')) * x1", "y ~ C(g):C(h) + np.log(x2 + 1)",
    "y ~ C(h, Sum) + C(g) - 1", "y ~ C(g, levels=['c', 'b', 'a']) + x1"])
def test_the_design_reads_a_published_categorical_by_its_codes_as_patsy_would(formula,
                                                                              monkeypatch):
    # issue 28: C() of a published Categorical is handed to patsy as it is, which reads
    # its codes at once (patsy's own C() box made it look up every value in Python: 0.58 s
    # of a 0.65 s moments release at 1e6 rows); the design must be patsy's, bit for bit
    import patsy

    from dpmodels.domain import formula as formula_module
    from dpmodels.mechanisms import moments

    rng = np.random.default_rng(0)
    cats = {"g": ["a", "b", "c"], "h": ["u", "v"]}
    grid = pd.DataFrame({"y": [0.0] * 6, "x1": np.linspace(0, 1, 6), "x2": np.linspace(0, 5, 6),
                         "g": pd.Categorical(list("abcabc"), categories=cats["g"]),
                         "h": pd.Categorical(list("uvuvuv"), categories=cats["h"])})
    infos = [m.design_info for m in patsy.dmatrices(formula, grid)]
    n = 5000
    frame = pd.DataFrame({"y": rng.normal(size=n), "x1": rng.random(n), "x2": rng.random(n) * 5,
                          "g": pd.Categorical(rng.choice(cats["g"], n), categories=cats["g"]),
                          "h": pd.Categorical(rng.choice(cats["h"], n), categories=cats["h"])})
    as_is = []
    real = formula_module._categorical_as_is
    monkeypatch.setattr(formula_module, "_categorical_as_is",
                        lambda *a, **k: as_is.append(1) or real(*a, **k))
    ours = moments._design(infos, frame)
    theirs = patsy.build_design_matrices(infos, frame, NA_action=moments._NO_NA)
    for a, b in zip(ours, theirs):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
        assert a.design_info.column_names == b.design_info.column_names
    assert as_is  # the formula's C() was ours


def test_a_function_of_the_callers_named_c_is_left_to_patsy(monkeypatch):
    # the fast read of C() applies to patsy's own C only: a caller's function named C
    # (here one that reverses the levels) is evaluated as patsy would
    import patsy

    from dpmodels.domain import formula as formula_module
    from dpmodels.mechanisms import moments

    def C(data, *args, **kwargs):  # noqa: N802 (the caller's name)
        return patsy.builtins.C(data, levels=list(reversed(pd.Categorical(data).categories)))

    grid = pd.DataFrame({"y": [0.0, 1.0, 2.0], "g": pd.Categorical(list("abc"))})
    env = patsy.EvalEnvironment([{"C": C}])
    infos = [m.design_info for m in patsy.dmatrices("y ~ C(g)", grid, eval_env=env)]
    frame = pd.DataFrame({"y": np.arange(6.0), "g": pd.Categorical(list("abcabc"))})
    as_is = []
    monkeypatch.setattr(formula_module, "_categorical_as_is", lambda *a, **k: as_is.append(1))
    ours = moments._design(infos, frame)
    theirs = patsy.build_design_matrices(infos, frame, NA_action=moments._NO_NA)
    np.testing.assert_array_equal(np.asarray(ours[1]), np.asarray(theirs[1]))
    assert not as_is


def test_an_in_process_engine_is_read_once_when_its_rows_are_small(monkeypatch):
    # issue 28: Polars and DuckDB batches are read in this process; the first pass keeps
    # their rows for the next passes under the in-memory rule (_CACHE_VALUES), so the
    # engine is read once, not once per pass; beyond the rule every pass reads it again.
    # The release is the same either way, and the pandas release, bit for bit.
    duckdb = pytest.importorskip("duckdb")
    from dpmodels.mechanisms import moments
    from dpmodels.data.engines.lazy import NarwhalsSource

    df = _frame(n=3000)
    f = "y ~ x1 + x2 + C(g)"
    reads = []
    real = NarwhalsSource.map_partitions
    monkeypatch.setattr(NarwhalsSource, "map_partitions",
                        lambda self, *a, **k: reads.append(1) or real(self, *a, **k))

    def release(data):
        reads.clear()
        rel = dpm.dp_ols(f, data, epsilon=1.0, bounds=BOUNDS, levels=LEVELS, method="moments",
                         random_state=5).release
        return rel, len(reads)

    kept, once = release(duckdb.connect().from_df(df))
    monkeypatch.setattr(moments, "_CACHE_VALUES", 10)
    streamed, every = release(duckdb.connect().from_df(df))
    in_memory, _ = release(df)
    assert once == 1 and every == 3
    for rel in (kept, streamed):
        np.testing.assert_array_equal(rel.sums, in_memory.sums)
        np.testing.assert_array_equal(rel.second, in_memory.second)
