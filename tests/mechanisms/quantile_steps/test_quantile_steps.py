"""dp_quantreg by noisy Newton steps of the check loss (dpmodels.mechanisms.quantile_steps,
dpmodels.mechanisms.quantile_steps.model).

The sensitivity of every stage's integer statistics against adversarial
replace-one neighbours (the quantile steps, the least-squares step, the
residual histogram), the estimate at a large epsilon against statsmodels'
QuantReg, the bootstrap's coverage on a small fast version of the validity
benchmark, the budget split, the choice of method="auto", the refusals
(before any budget), the caller's frame, the summary, a Dask frame and the
metadata neighbours publish.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import patsy
import pytest
import statsmodels.formula.api as smf

import dpmodels as dpm
from dpmodels.domain.axes import build_domain
from dpmodels.core.errors import DomainError, DPModelsError
from dpmodels.front.methods import choose_quantreg_method
from dpmodels.mechanisms.quantile_steps.model import DPNewtonQuantReg
from dpmodels.models.quantreg import DPQuantReg
from dpmodels.mechanisms.moments import _NO_NA, _RowPasses, design_space, published_frame
from dpmodels.mechanisms.newton import _step_statistics, step_scale
from dpmodels.mechanisms.quantile_steps import (
    QUANTILE_STEP_SHARES,
    PrivateQuantileSteps,
    _level_counts,
    _residual_counts,
    _score_statistics,
    least_squares_family,
    level_sensitivity,
    residual_edges,
    score_sensitivity,
)

COLS = ["a", "b", "c"]
FORMULA = "y ~ a + b + c + C(g)"
BOUNDS = {"a": (-4.0, 4.0), "b": (-4.0, 4.0), "c": (-4.0, 4.0), "y": (-12.0, 14.0)}
LEVELS = {"g": ["u", "v"]}
#: Design-column order (patsy): Intercept, C(g)[T.v], a, b, c.
BETA = np.array([1.0, 0.5, 1.0, -1.0, 0.5])


def _frame(n: int, seed: int, errors: str = "laplace", design: str = "normal") -> pd.DataFrame:
    """Three continuous covariates (normal clipped to +-4, or uniform on
    [-1, 1]), a two-level factor, y = x'BETA + error; with "laplace" errors
    (symmetric) the conditional median is x'BETA; "skewed": centred
    exponential errors."""
    rng = np.random.default_rng(seed)
    if design == "normal":
        X = rng.normal(size=(n, 3)).clip(-4, 4)
    else:
        X = rng.uniform(-1, 1, size=(n, 3))
    g = np.where(rng.random(n) < 0.4, "v", "u")
    e = rng.laplace(0.0, 1.0, n) if errors == "laplace" else rng.exponential(1.0, n) - 1.0
    df = pd.DataFrame(X, columns=COLS)
    df["g"] = g
    df["y"] = BETA[0] + BETA[1] * (g == "v") + X @ BETA[2:] + e
    return df


def _model(df, eps, seed, **kw):
    kw.setdefault("method", "newton")
    return dpm.dp_quantreg(FORMULA, df, epsilon=eps, bounds=kw.pop("bounds", BOUNDS),
                           levels=LEVELS, random_state=seed, **kw)


# ---------------------------------------------------------------------------
# 1. sensitivity of every stage (the privacy contract)
# ---------------------------------------------------------------------------
def _rows(df: pd.DataFrame):
    """The rows a stage iterates, built as release_quantile_steps' make_rows
    does: covariates published (clamped to their bounds, a row with a missing
    value marked invalid), the response scaled by its public range to [-1, 1]."""
    names = ["y", "a", "b", "c", "g"]
    domain = build_domain(names, {c: df[c].dtype for c in names}, discrete=frozenset({"g"}),
                          bounds=BOUNDS, levels=LEVELS, bins=2, n=10, epsilon=1.0)
    full = design_space(FORMULA, domain, {}, response=True)
    space = design_space(FORMULA, domain, {}, response=False)
    y_centre, y_half = float(full.centre[-1]), float(full.half[-1])
    published, valid = published_frame(df, domain, "drop")
    y = np.zeros(len(published))
    (ym,) = patsy.build_design_matrices([full.infos[0]], published[valid], NA_action=_NO_NA)
    y[valid] = np.clip((np.asarray(ym, float)[:, 0] - y_centre) / y_half, -1.0, 1.0)
    return _RowPasses(space, published, valid, 1 << 12, y=y), space


def _neighbours():
    """A base of 30 rows and its replace-one neighbours in row 0: covariates
    at the corners of the box (far beyond any clipping radius with these
    scales), at the centre and inside; the response at either bound or far
    beyond one; both factor levels; a missing covariate, response or level.
    Any two of them are replace-one neighbours of each other."""
    base = _frame(30, 1)
    corners = [(-4, -4, -4), (4, 4, 4), (4, -4, 4), (-4, 4, -4), (0, 0, 0), (4, 0, 0),
               (0.1, -0.2, 0.3)]
    out = []
    for x in corners:
        for yv in (-12.0, 14.0, 1e6):
            for g in ("u", "v"):
                df = base.copy()
                df.loc[0, COLS], df.loc[0, "y"], df.loc[0, "g"] = x, yv, g
                out.append(df)
    for col, value in (("a", np.nan), ("y", np.nan), ("g", None)):
        df = base.copy()
        df.loc[0, col] = value
        out.append(df)
    return [_rows(df) for df in out]


@pytest.fixture(scope="module")
def neighbours():
    return _neighbours()


OFFSETS = np.array([0.3, 0.1, -0.2, 0.0])  # (C(g)[T.v], a, b, c), public
SCALES = np.array([0.5, 0.5, 0.3, 1.0])


def _starts(rng):
    return [np.zeros(5), np.array([0.3, -0.2, 0.4, 0.1, -0.3]), rng.normal(size=5) * 5,
            np.array([30.0, -20.0, 25.0, -40.0, 10.0])]


def _max_l1(vectors) -> int:
    """Largest L1 distance between two integer vectors (exact, Python ints)."""
    V = np.array([[int(v) for v in vec] for vec in vectors], dtype=object)
    return max(int(np.abs(V[i] - V[j]).sum()) for i in range(len(V)) for j in range(i))


@pytest.mark.parametrize("radius", [1.0, 2.5, 40.0])
def test_a_quantile_step_changes_by_at_most_its_sensitivity(neighbours, radius):
    """``(c, *score)`` of :func:`_score_statistics` moves by at most
    ``score_sensitivity``'s Delta between any two neighbours, for step points
    near and far (large b), tau in {0.1, 0.5, 0.9} and bandwidths from tiny
    to one holding every row; some pair reaches more than a fifth of it."""
    rng = np.random.default_rng(0)
    space = neighbours[0][1]
    g, delta = score_sensitivity(radius, space, OFFSETS, SCALES)
    worst = 0.0
    for b in _starts(rng):
        for tau in (0.1, 0.5, 0.9):
            for h in (1e-3, 0.1, 0.7, 5.0):
                vectors = []
                for rows, sp in neighbours:
                    c, sc = _score_statistics(rows, sp, OFFSETS, SCALES, radius, b, tau, h)
                    vectors.append([c, *sc])
                    assert score_sensitivity(radius, sp, OFFSETS, SCALES) == (g, delta)
                diff = _max_l1(vectors)
                assert diff <= delta, (b, tau, h, diff, delta)
                worst = max(worst, diff / delta)
    assert worst > 0.2, worst  # the bound is not vacuous


@pytest.mark.parametrize("radius", [1.0, 2.5, 40.0])
def test_the_least_squares_step_changes_by_at_most_its_sensitivity(neighbours, radius):
    """The least-squares step is a Newton step of :mod:`dpmodels.mechanisms.newton` with
    weights 1 and residuals y~ - x~'b: its integers (information and
    weighted score) move by at most ``step_scale``'s Delta."""
    rng = np.random.default_rng(1)
    space = neighbours[0][1]
    delta = step_scale(radius, space, OFFSETS, SCALES)[2]
    worst = 0.0
    for b in _starts(rng):
        vectors = []
        for rows, sp in neighbours:
            h, s, _, _, d = _step_statistics(rows, sp, OFFSETS, SCALES, radius, b,
                                             family=least_squares_family)
            assert d == delta
            vectors.append(list(h) + list(s))
        diff = _max_l1(vectors)
        assert diff <= delta, (b, diff, delta)
        worst = max(worst, diff / delta)
    assert worst > 0.2, worst


@pytest.mark.parametrize("radius", [1.0, 2.5, 40.0])
def test_the_residual_histogram_changes_by_at_most_two(neighbours, radius):
    """The residual counts at any fit (the least-squares fit is noisy, so any
    b) move by at most 2 in L1; a moved row reaches 2 (1 for a missing one)."""
    rng = np.random.default_rng(2)
    edges = residual_edges()
    assert np.all(np.diff(edges) > 0)
    worst = 0
    for b in _starts(rng):
        vectors = [_residual_counts(rows, OFFSETS, SCALES, radius, b, edges)[0]
                   for rows, _ in neighbours]
        assert all(v.sum() in (29, 30) for v in vectors)
        diff = _max_l1(vectors)
        assert diff <= 2
        worst = max(worst, diff)
    assert worst == 2


def test_the_level_counts_change_by_at_most_their_sensitivity(neighbours):
    """The row counts of the 0/1 columns and of all rows: a row moved to the
    other level or dropped for a missing value changes them by at most
    level_sensitivity (reached)."""
    space = neighbours[0][1]
    delta = level_sensitivity(space)
    assert delta == 2  # the total and one dummy (a two-level factor)
    vectors = [_level_counts(rows, space)[0] for rows, _ in neighbours]
    assert _max_l1(vectors) == delta


# ---------------------------------------------------------------------------
# 2. large epsilon: statsmodels' QuantReg
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("errors", ["laplace", "skewed"])
def test_large_epsilon_reproduces_statsmodels_quantreg(errors):
    """At epsilon = 1e4 the noise is negligible; the four steps from the
    least-squares fit reach the check loss's minimum up to quantization and
    the clipping of 0.1% of the rows: within 0.1 of statsmodels' standard
    errors, at both quantiles of one release."""
    df = _frame(20_000, 2 if errors == "laplace" else 3, errors)
    model = _model(df, 1e4, 0, q=[0.25, 0.5])
    assert isinstance(model, DPNewtonQuantReg) and model.quantiles == (0.25, 0.5)
    many = model.fit_many(cov_type="naive")
    assert sorted(many) == [0.25, 0.5]
    for tau in (0.25, 0.5):
        res = model.fit(q=tau, cov_type="naive")
        ref = smf.quantreg(FORMULA, df).fit(q=tau)
        assert res.q == tau
        assert list(res.params.index) == list(ref.params.index)
        z = np.abs((res.params - ref.params) / ref.bse)
        assert np.all(z < 0.1), (tau, z.round(3).to_dict())
        np.testing.assert_array_equal(many[tau].params, res.params)
        # the naive covariance is statsmodels' iid one up to the released density
        np.testing.assert_allclose(res.bse, ref.bse, rtol=0.25)
    assert not np.allclose(many[0.25].params, many[0.5].params, atol=0.1)
    with pytest.raises(DPModelsError, match=r"0\.25, 0\.5") as info:
        model.fit(q=0.9)
    assert "q=0.9" in str(info.value)


# ---------------------------------------------------------------------------
# 3. coverage (a small fast version of benchmarks/validity.py)
# ---------------------------------------------------------------------------
def _min_covered(reps: int) -> int:
    """3 binomial sd below 0.95 * reps (40 reps: 38 - 3 * 1.38 -> 34; 30: 25)."""
    return math.ceil(0.95 * reps - 3 * math.sqrt(reps * 0.95 * 0.05))


def _coverage(design: str, bounds: dict, seed0: int, reps: int) -> np.ndarray:
    covered = np.zeros(BETA.size)
    for r in range(reps):
        df = _frame(20_000, seed0 + r, "laplace", design)
        res = _model(df, 1.0, r, bounds=bounds).fit(random_state=r, n_boot=300)
        ci = np.asarray(res.conf_int())
        covered += (ci[:, 0] <= BETA) & (BETA <= ci[:, 1])
    return covered


def test_bootstrap_covers_population_coefficients_fast():
    """The default run's version of the next test: 10 data sets, each
    coefficient covered at least ``_min_covered(10)`` = 8 times (3 binomial
    SDs below 95%)."""
    covered = _coverage("normal", BOUNDS, 100, 10)
    assert np.all(covered >= _min_covered(10)), covered


@pytest.mark.slow
def test_bootstrap_covers_population_coefficients():
    """40 data sets of 20,000 rows (normal covariates clipped to +-4, the
    design of tests/mechanisms/newton/test_newton.py) at epsilon 1: each coefficient's 95%
    interval covers the population median regression (x'BETA: the errors are
    symmetric and independent of x) at least 34 times."""
    covered = _coverage("normal", BOUNDS, 100, 40)
    assert np.all(covered >= _min_covered(40)), covered


@pytest.mark.slow
def test_bootstrap_covers_population_coefficients_uniform_design():
    """The same, 30 data sets, on benchmarks/validity.py's median4 shape
    (uniform covariates on [-1, 1]: shrinking a row into the clipping ball
    moves it little): at least 25 times."""
    bounds = {"a": (-1.0, 1.0), "b": (-1.0, 1.0), "c": (-1.0, 1.0), "y": (-8.0, 10.0)}
    covered = _coverage("uniform", bounds, 500, 30)
    assert np.all(covered >= _min_covered(30)), covered


# ---------------------------------------------------------------------------
# 4. budget
# ---------------------------------------------------------------------------
def test_the_split_adds_up_and_the_accountant_is_charged_once():
    acc = dpm.Accountant(2.0)
    df = _frame(5000, 3)
    model = _model(df, 0.8, 0, accountant=acc)
    assert isinstance(model, DPNewtonQuantReg)
    assert isinstance(model.release, PrivateQuantileSteps)
    split = model.privacy.split
    assert math.isclose(sum(e for _, e in split), 0.8, rel_tol=1e-12)
    assert all(e > 0 for _, e in split)
    assert math.isclose(acc.spent, 0.8) and len(acc.ledger) == 1
    # fitting (and refitting on the release) is post-processing: nothing more is charged
    model.fit(n_boot=50, random_state=0)
    model.fit_many(cov_type="naive")
    again = dpm.dp_quantreg(FORMULA, model.release, accountant=acc)
    assert again.release is model.release
    np.testing.assert_array_equal(again.fit(cov_type="naive").params,
                                  model.fit(cov_type="naive").params)
    assert math.isclose(acc.spent, 0.8) and len(acc.ledger) == 1


def test_several_quantiles_share_the_budget():
    acc = dpm.Accountant(3.0)
    taus = [0.25, 0.5, 0.75]
    model = _model(_frame(5000, 4), 1.5, 1, accountant=acc, q=taus)
    split = model.privacy.split
    assert math.isclose(sum(e for _, e in split), 1.5, rel_tol=1e-12)
    assert math.isclose(acc.spent, 1.5) and len(acc.ledger) == 1
    per_q = {}
    for tau in taus:
        steps = [e for label, e in split if label.startswith(f"q={tau:g} step")]
        assert len(steps) == len(QUANTILE_STEP_SHARES), (tau, split)
        np.testing.assert_allclose(np.array(steps) / sum(steps), QUANTILE_STEP_SHARES,
                                   rtol=1e-12)
        per_q[tau] = sum(steps)
    # the quantiles' parts are equal, and they are what is left after the shared stages
    assert max(per_q.values()) - min(per_q.values()) < 1e-12
    shared = [e for label, e in split if not label.startswith("q=")]
    assert len(shared) + 3 * len(QUANTILE_STEP_SHARES) == len(split)
    assert math.isclose(sum(shared) + sum(per_q.values()), 1.5, rel_tol=1e-12)
    assert sorted(model.fit_many(cov_type="naive")) == taus


# ---------------------------------------------------------------------------
# 5. refusals, before any budget is spent
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("change, err, match", [
    (dict(q=0.0), DPModelsError, "strictly between 0 and 1"),
    (dict(q=1.0), DPModelsError, "strictly between 0 and 1"),
    (dict(q=-0.1), DPModelsError, "strictly between 0 and 1"),
    (dict(q=[0.25, 1.5]), DPModelsError, "strictly between 0 and 1"),
    (dict(q=float("nan")), DPModelsError, "strictly between 0 and 1"),
    (dict(q=[0.5, 0.25, 0.5]), DPModelsError, "given twice"),
    (dict(q=[]), DPModelsError, "empty"),
    (dict(formula="k ~ a + b + c", levels={"k": [0, 1, 2]}), DomainError, "continuous response"),
    (dict(formula="y ~ a + b + c - 1"), DPModelsError, "intercept"),
    (dict(formula="y ~ 0 + a + C(g)"), DPModelsError, "intercept"),
    (dict(epsilon=1e-14), DPModelsError, "too small to split"),
    (dict(epsilon=2e-13, q=list(np.linspace(0.01, 0.99, 99))), DPModelsError,
     "too small to split over 99"),
])
def test_refusals_come_before_any_budget(change, err, match):
    df = _frame(500, 4)
    df["k"] = np.random.default_rng(0).integers(0, 3, len(df))
    kw = dict(formula=FORMULA, levels=LEVELS, epsilon=1.0, q=0.5)
    kw.update(change)
    acc = dpm.Accountant(5.0)
    with pytest.raises(err, match=match):
        dpm.dp_quantreg(kw.pop("formula"), df, bounds=BOUNDS, method="newton", accountant=acc,
                        random_state=0, **kw)
    assert acc.spent == 0.0 and acc.ledger == ()


def test_refusal_control_a_valid_call_is_charged():
    """Control of the test above: the same call with valid inputs is charged once."""
    acc = dpm.Accountant(5.0)
    dpm.dp_quantreg(FORMULA, _frame(500, 4), bounds=BOUNDS, levels=LEVELS, epsilon=1.0,
                    q=[0.25, 0.5], method="newton", accountant=acc, random_state=0)
    assert acc.spent == 1.0 and len(acc.ledger) == 1


@pytest.mark.parametrize("epsilon", [1e-6, 1e-9])
def test_a_small_epsilon_is_refused_before_the_budget_or_released(epsilon):
    """An epsilon the release does not refuse up front must give a release:
    a failure after the charge spends the caller's budget for nothing."""
    acc = dpm.Accountant(1.0)
    try:
        model = dpm.dp_quantreg(FORMULA, _frame(2000, 4), bounds=BOUNDS, levels=LEVELS,
                                epsilon=epsilon, method="newton", accountant=acc,
                                random_state=0)
    except DPModelsError:
        assert acc.spent == 0.0 and acc.ledger == ()
    else:
        assert isinstance(model.release, PrivateQuantileSteps)
        assert acc.spent == epsilon


# ---------------------------------------------------------------------------
# 6. method="auto"
# ---------------------------------------------------------------------------
def test_auto_chooses_from_public_inputs():
    df = _frame(200, 5)
    assert choose_quantreg_method("auto", FORMULA, df, bounds=BOUNDS, levels=LEVELS,
                                  namespace={}, epsilon=1.0) == "newton"
    assert choose_quantreg_method("auto", "y ~ a + b + c", df, bounds=BOUNDS,
                                  namespace={}, epsilon=1.0) == "newton"
    # histogram-only options keep the histogram; with method="newton" they are refused
    assert choose_quantreg_method("auto", FORMULA, df, bounds=BOUNDS, levels=LEVELS,
                                  options={"threshold_A": 2.0}, namespace={},
                                  epsilon=1.0) == "histogram"
    assert choose_quantreg_method("auto", FORMULA, df, bounds=BOUNDS, levels=LEVELS,
                                  options={"max_spurious_cells": 0.5}, namespace={},
                                  epsilon=1.0) == "histogram"
    with pytest.raises(DPModelsError, match="threshold_A"):
        choose_quantreg_method("newton", FORMULA, df, bounds=BOUNDS, levels=LEVELS,
                               options={"threshold_A": 2.0}, namespace={}, epsilon=1.0)
    assert isinstance(_model(df, 1.0, 0, method="auto"), DPNewtonQuantReg)


def test_auto_keeps_the_histogram_for_the_housing_shape():
    """dp_quantreg's docstring example: two continuous variables, 24 level
    combinations: the factors carry the model, the histogram is kept."""
    housing = dpm.datasets.housing(n=2000, seed=3)
    formula = "price ~ size + year + C(county)"
    bounds = {"price": (1e5, 9e5), "size": (0, 3000)}
    levels = {"county": [f"County{i}" for i in range(1, 7)], "year": [1, 2, 3, 4]}
    assert choose_quantreg_method("auto", formula, housing, bounds=bounds, levels=levels,
                                  namespace={}, epsilon=1.0) == "histogram"
    model = dpm.dp_quantreg(formula, housing, epsilon=1.0, bounds=bounds, levels=levels,
                            q=0.25, random_state=0)
    assert isinstance(model, DPQuantReg) and model.fit().q == 0.25
    # asked for, the Newton steps serve the housing shape too
    model = dpm.dp_quantreg(formula, housing, epsilon=1.0, bounds=bounds, levels=levels,
                            method="newton", random_state=0)
    assert isinstance(model, DPNewtonQuantReg)


# ---------------------------------------------------------------------------
# 7. the caller's frame, the summary, Dask, neighbours' metadata
# ---------------------------------------------------------------------------
def test_the_callers_frame_is_not_modified_and_the_summary_renders():
    df = _frame(3000, 6)
    df.loc[0, "a"] = np.nan  # a missing value, a covariate and a response beyond the bounds
    df.loc[1, "b"], df.loc[2, "y"] = 40.0, -1e6
    df["g"] = df["g"].astype("category")
    before = df.copy(deep=True)
    model = _model(df, 1.0, 0, q=[0.5, 0.9])
    res = model.fit(q=0.9, n_boot=100, random_state=0)
    model.fit_many(cov_type="naive")
    text = str(res.summary())
    pd.testing.assert_frame_equal(df, before)
    assert "noisy Newton" in text and "q = 0.9" in text
    assert "epsilon = 1" in text
    assert not hasattr(res, "prsquared")  # no check loss is released (refused)
    assert res.dp_inference is not None
    assert "q=[0.5, 0.9]" in repr(model)


def test_a_dask_frame_gives_the_pandas_release():
    """Every pass runs per partition; the summed integer statistics, hence
    the release and its estimate with one seed, equal pandas'."""
    dd = pytest.importorskip("dask.dataframe")
    df = _frame(4000, 7)
    ddf = dd.from_pandas(df, npartitions=3)
    assert choose_quantreg_method("auto", FORMULA, ddf, bounds=BOUNDS, levels=LEVELS,
                                  namespace={}, epsilon=1.0) == "newton"
    a = _model(df, 1.0, 9, q=[0.5, 0.8], method="auto")
    b = _model(ddf, 1.0, 9, q=[0.5, 0.8], method="auto")
    assert isinstance(b, DPNewtonQuantReg)
    for name in ("beta", "ls_information", "residual_counts", "bandwidth", "density"):
        np.testing.assert_array_equal(getattr(a.release, name), getattr(b.release, name))
    for tau in (0.5, 0.8):
        np.testing.assert_array_equal(a.fit(q=tau, cov_type="naive").params,
                                      b.fit(q=tau, cov_type="naive").params)
    assert a.privacy.split == b.privacy.split


def _published(data, kw) -> dict:
    """Everything the quantile-steps release and its fit publish, numbers masked."""
    from tests.support.neighbours import formula_release_metadata

    def build():
        model = dpm.dp_quantreg("y ~ x + C(k) + C(g)", data, method="newton",
                                random_state=13, q=[0.25, 0.5], **kw)
        return model, lambda: model.fit(q=0.25, cov_type="naive")

    return formula_release_metadata(build)


@pytest.mark.parametrize("kind", ("missing", "move", "bound", "empty"))
def test_neighbours_publish_the_same_metadata(kind):
    """PRIVACY.md rule 5 for the quantile steps: replace-one neighbours of
    each kind (tests/mechanisms/moments/test_moments_privacy.py's generator) publish the same
    names, report and masked summary with one seed."""
    from tests.support.moment_pairs import make_pair
    from tests.support.neighbours import formula_release_diff

    for seed in range(3):
        label, _, base, nb, kw = make_pair(seed, kind)
        a, b = _published(base, kw), _published(nb, kw)
        diff = formula_release_diff(a, b)
        assert not diff, f"{label}: published metadata differ: {diff}"


# ---------------------------------------------------------------------------
# information diagnostic
# ---------------------------------------------------------------------------
def test_an_empty_level_is_flagged_and_the_slopes_are_not():
    """A declared level with no rows ("w", not the base level: patsy sorts a
    plain list of levels, and an empty base level would leave every contrast
    uninformative, which the flag then says): its coefficient gets an infinite SE
    (p = 1) and a warning naming it, in every data set; the continuous
    slopes, whose information comes from the quantile steps' scores, keep
    finite intervals at n = 2,000, epsilon 1 (the least-squares step's noise
    alone would have flagged them) in at least 4 of the 5 data sets: since the
    estimate undoes the steps' pull (models/shrinkage.calibrate), a release
    whose replayed steps cannot tell two slopes apart (one of these five: its
    Jacobian's b/c block has determinant 0.1) flags them too, by design."""
    finite = 0
    for r in range(5):
        df = _frame(2000, 700 + r, design="uniform")
        bounds = {"a": (-1.0, 1.0), "b": (-1.0, 1.0), "c": (-1.0, 1.0), "y": (-8.0, 10.0)}
        model = dpm.dp_quantreg(FORMULA, df, epsilon=1.0, bounds=bounds,
                                levels={"g": ["u", "v", "w"]}, method="newton",
                                random_state=r)
        with pytest.warns(dpm.ReleaseWarning, match=r"about C\(g\)\[T.w\]: the noisy"):
            res = model.fit(random_state=r, n_boot=200)
        assert np.isinf(res.bse["C(g)[T.w]"]) and res.pvalues["C(g)[T.w]"] == 1.0
        finite += bool(np.all(np.isfinite(res.bse[COLS + ["C(g)[T.v]"]])))
    assert finite >= 4, finite


def test_an_empty_base_level_flags_every_contrast():
    """With the empty level first (patsy's base: levels are sorted), every
    contrast of the factor is against no rows: all of them are flagged, by
    the level counts; the slopes are not (their information does not pass
    through the empty level; whether the replayed steps can locate each of
    them is models/shrinkage.calibrate's question, asked separately)."""
    df = _frame(2000, 710, design="uniform")
    bounds = {"a": (-1.0, 1.0), "b": (-1.0, 1.0), "c": (-1.0, 1.0), "y": (-8.0, 10.0)}
    model = dpm.dp_quantreg(FORMULA, df, epsilon=1.0, bounds=bounds,
                            levels={"g": ["a_empty", "u", "v"]}, method="newton", random_state=0)
    with pytest.warns(dpm.ReleaseWarning,
                      match=r"about C\(g\)\[T.u\], C\(g\)\[T.v\]: the noisy mass") as caught:
        res = model.fit(random_state=0, n_boot=200)
    assert np.all(np.isinf(res.bse[["C(g)[T.u]", "C(g)[T.v]"]]))
    by_counts = [str(w.message).split("about ", 1)[1].split(": the noisy mass")[0]
                 for w in caught if "the noisy mass" in str(w.message)]
    assert by_counts == ["C(g)[T.u], C(g)[T.v]"], by_counts


@pytest.mark.parametrize("formula, levels, delta", [
    ("y ~ a + C(g)", {"g": ["u", "v"]}, 2),                      # one 0/1 column
    ("y ~ a + C(g) + C(h)", {"g": ["u", "v"], "h": ["p", "q"]}, 3),  # two of them
    ("y ~ a + C(g)", {"g": ["u", "v", "w"]}, 2),                 # an exclusive group
    ("y ~ a + C(g) + C(h)", {"g": ["u", "v", "w"], "h": ["p", "q"]}, 3),
])
def test_the_level_sensitivity_is_reached_by_some_pair(formula, levels, delta):
    """level_sensitivity is an upper bound that some replace-one pair reaches:
    every complete row (each level combination) and a row with a missing
    value, all pairs, exact counts."""
    import itertools

    names = ["y", "a"] + sorted(levels)
    combos = list(itertools.product(*[levels[k] for k in sorted(levels)]))
    domain = build_domain(names, {"y": np.dtype(float), "a": np.dtype(float),
                                  **{k: np.dtype(object) for k in levels}},
                          discrete=frozenset(levels), bounds={"a": (0.0, 1.0), "y": (0.0, 1.0)},
                          levels=levels, bins=2, n=10, epsilon=1.0)
    space = design_space(formula, domain, {}, response=False)
    assert level_sensitivity(space) == delta
    vectors = []
    for combo in combos + [None]:
        row = {"y": [0.5], "a": [0.5 if combo is not None else np.nan]}
        for k, v in zip(sorted(levels), combo or [levels[k][0] for k in sorted(levels)]):
            row[k] = [v]
        published, valid = published_frame(pd.DataFrame(row), domain, "drop")
        rows = _RowPasses(space, published, valid, 16, y=np.zeros(1))
        vectors.append(_level_counts(rows, space)[0])
    assert _max_l1(vectors) == delta
