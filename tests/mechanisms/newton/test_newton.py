"""dp_logit by noisy Newton steps (dpmodels.mechanisms.newton, dpmodels.mechanisms.newton.model).

The sensitivity of a step's statistics against adversarial rows, the
estimate at a large epsilon against statsmodels, the bootstrap's coverage on
a small fast version of the validity benchmark, the budget split, the
choice of method="auto", and the refusals.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
import statsmodels.formula.api as smf

import dpmodels as dpm
from dpmodels.domain.axes import build_domain
from dpmodels.core.errors import DomainError, DPModelsError
from dpmodels.front.methods import choose_logit_method
from dpmodels.mechanisms.moments import published_frame, design_space
from dpmodels.mechanisms.newton.model import DPNewtonLogit
from dpmodels.mechanisms.moments import _RowPasses
from dpmodels.mechanisms.newton import binary_response, _step_statistics

COLS = ["a", "b", "c"]
BOUNDS = {v: (-4.0, 4.0) for v in COLS}
BETA = np.array([0.5, 1.0, -1.0, 0.5])


def _frame(n: int, seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3)).clip(-4, 4)
    df = pd.DataFrame(X, columns=COLS)
    eta = BETA[0] + X @ BETA[1:]
    df["y"] = (rng.random(n) < 1 / (1 + np.exp(-eta))).astype(int)
    return df


def _fit(df, eps, seed, **kw):
    return dpm.dp_logit("y ~ a + b + c", df, epsilon=eps, bounds=BOUNDS, levels={"y": [0, 1]},
                        method="newton", random_state=seed, **kw)


def _step_vector(df, formula, levels, offsets, scales, radius, b):
    fv_names = ["y"] + [c for c in df.columns if c != "y"]
    dtypes = {c: df[c].dtype for c in fv_names}
    domain = build_domain(fv_names, dtypes, discrete=frozenset(levels) - {"y"},
                          bounds={k: v for k, v in BOUNDS.items() if k in df},
                          levels=levels, bins=2, n=10, epsilon=1.0)
    space = design_space(formula, domain, {}, response=False)
    published, valid = published_frame(df, domain, "drop")
    y, miss = binary_response(domain.axis("y"), df["y"])
    rows = _RowPasses(space, published, valid & ~miss, 1 << 12, y=y)
    h, s, g, w_g, delta = _step_statistics(rows, space, offsets, scales, radius, b)
    return np.concatenate([h, s]), delta


@pytest.mark.parametrize("radius", [1.0, 2.5, 40.0])
def test_a_step_changes_by_at_most_its_sensitivity(radius):
    """Replace-one neighbours at the worst places: rows at the corners of the
    box (far beyond the radius or not), the response flipped, a row with a
    missing value; every step start b (p near 0, 1/2 or 1)."""
    rng = np.random.default_rng(0)
    base = _frame(30, 1)
    corners = [(-4, -4, -4), (4, 4, 4), (4, -4, 4), (0, 0, 0), (4, 0, 0)]
    offsets, scales = np.array([0.1, -0.2, 0.0]), np.array([0.5, 0.3, 1.0])
    worst = 0.0
    for b in (np.zeros(4), np.array([3.0, 2.0, -2.0, 1.0]), rng.normal(size=4) * 5):
        vectors = []
        for x in corners:
            for yv in (0, 1):
                df = base.copy()
                df.loc[0, COLS], df.loc[0, "y"] = x, yv
                vectors.append(_step_vector(df, "y ~ a + b + c", {"y": [0, 1]}, offsets,
                                            scales, radius, b))
        df = base.copy()
        df.loc[0, "a"] = np.nan  # the neighbour whose row has a missing value
        vectors.append(_step_vector(df, "y ~ a + b + c", {"y": [0, 1]}, offsets, scales,
                                    radius, b))
        delta = vectors[0][1]
        assert all(d == delta for _, d in vectors)
        for i in range(len(vectors)):
            for j in range(i):
                diff = sum(abs(int(u) - int(v)) for u, v in zip(vectors[i][0], vectors[j][0]))
                assert diff <= delta
                worst = max(worst, diff / delta)
    assert worst > 0.2  # the bound is not vacuous: a pair comes within 5x of it


def test_large_epsilon_reproduces_the_maximum_likelihood_fit():
    """At epsilon = 1e4 the noise is negligible; the four steps from 0 reach
    the MLE up to quantization and the clipping of 0.1% of the rows: within
    0.25 of its standard errors."""
    df = _frame(20_000, 2)
    res = _fit(df, 1e4, 0).fit(cov_type="naive")
    ref = smf.logit("y ~ a + b + c", df).fit(disp=0)
    assert list(res.params.index) == list(ref.params.index)
    assert np.all(np.abs((res.params - ref.params) / ref.bse) < 0.25)
    np.testing.assert_allclose(res.predict(df.iloc[:5]), ref.predict(df.iloc[:5]), atol=0.02)
    # no likelihood is released: refused (tests/contracts/test_results_contract.py), n/a in the summary
    assert not hasattr(res, "llf") and "noisy Newton" in str(res.summary())


def test_bootstrap_covers_population_coefficients():
    """40 data sets of 20,000 rows at epsilon 1: each coefficient's 95%
    interval covers the population value at least 34 times (3 binomial sd
    below 0.95 * 40)."""
    covered = np.zeros(4)
    for r in range(40):
        res = _fit(_frame(20_000, 100 + r), 1.0, r).fit(random_state=r, n_boot=300)
        ci = np.asarray(res.conf_int())
        covered += (ci[:, 0] <= BETA) & (BETA <= ci[:, 1])
    assert np.all(covered >= 34), covered


def test_the_split_adds_up_and_the_accountant_is_charged_once():
    acc = dpm.Accountant(2.0)
    model = _fit(_frame(5000, 3), 0.8, 0, accountant=acc)
    assert isinstance(model, DPNewtonLogit)
    assert math.isclose(sum(e for _, e in model.privacy.split), 0.8, rel_tol=1e-12)
    assert math.isclose(acc.spent, 0.8)


@pytest.mark.parametrize("formula, levels, err", [
    ("y ~ a + b + c - 1", {"y": [0, 1]}, DPModelsError),
    ("y ~ a + b + c", {"y": [0, 1, 2]}, DomainError),
    ("y ~ center(a) + b", {"y": [0, 1]}, DPModelsError),
])
def test_refusals_come_before_any_budget(formula, levels, err):
    df = _frame(500, 4)
    acc = dpm.Accountant(5.0)
    with pytest.raises(err):
        dpm.dp_logit(formula, df, epsilon=1.0, bounds=BOUNDS, levels=levels,
                     method="newton", accountant=acc)
    assert acc.spent == 0.0


def test_auto_chooses_from_public_inputs():
    df = _frame(200, 5)
    lv = {"y": [0, 1]}
    assert choose_logit_method("auto", "y ~ a + b + c", df, bounds=BOUNDS, levels=lv,
                               namespace={}, epsilon=0.1) == "newton"
    # two covariates: the histogram at small n * epsilon, the steps at large
    assert choose_logit_method("auto", "y ~ a + b", df, bounds=BOUNDS, levels=lv,
                               namespace={}, epsilon=1.0) == "histogram"
    assert choose_logit_method("auto", "y ~ a + b", df, bounds=BOUNDS, levels=lv,
                               namespace={}, epsilon=1.0, n=100_000) == "newton"
    assert choose_logit_method("auto", "y ~ a + b + c", df, bounds=BOUNDS, levels=lv,
                               namespace={}, epsilon=1.0, bins=5, n=100_000) == "histogram"
    # the same bins for the 200 rows handed in: 250 cells, 0.27 thresholds of rows per cell
    with pytest.warns(dpm.ReleaseWarning, match="250 cells for 200 rows"):
        assert choose_logit_method("auto", "y ~ a + b + c", df, bounds=BOUNDS, levels=lv,
                                   namespace={}, epsilon=1.0, bins=5) == "newton"


def test_a_dask_frame_gives_the_pandas_release():
    """Every pass runs per partition in the workers; the summed integer
    statistics, hence the release with one seed, equal pandas'."""
    dd = pytest.importorskip("dask.dataframe")
    df = _frame(4000, 6)
    ddf = dd.from_pandas(df, npartitions=3)
    assert choose_logit_method("auto", "y ~ a + b + c", ddf, bounds=BOUNDS,
                               levels={"y": [0, 1]}, namespace={}, epsilon=1.0) == "newton"
    a = _fit(df, 1.0, 9).release
    b = _fit(ddf, 1.0, 9).release
    np.testing.assert_array_equal(a.beta, b.beta)
    np.testing.assert_array_equal(a.information, b.information)


def _published_newton(data, kw) -> dict:
    """Everything the Newton release and its fit publish, numbers masked."""
    from tests.support.neighbours import formula_release_metadata

    def build():
        model = dpm.dp_logit("z ~ x + C(k) + C(g)", data, method="newton", random_state=13,
                             **kw)
        return model, lambda: model.fit(cov_type="naive")

    return formula_release_metadata(build)


@pytest.mark.parametrize("kind", ("missing", "move", "bound", "empty"))
def test_newton_neighbours_publish_the_same_metadata(kind):
    """PRIVACY.md rule 5 for the Newton release: replace-one neighbours of
    each kind (tests/mechanisms/moments/test_moments_privacy.py's generator; the binary response
    is y > 8, computed row by row) publish the same names, report and
    masked summary with one seed."""
    from tests.support.moment_pairs import make_pair
    from tests.support.neighbours import formula_release_diff

    for seed in range(3):
        label, _, base, nb, kw = make_pair(seed, kind)
        base, nb = base.assign(z=base["y"] > 8), nb.assign(z=nb["y"] > 8)
        kw = dict(kw, bounds={"x": kw["bounds"]["x"]})
        a, b = _published_newton(base, kw), _published_newton(nb, kw)
        diff = formula_release_diff(a, b)
        assert not diff, f"{label}: published metadata differ: {diff}"
