"""Tests of the sample-and-aggregate release (:mod:`dpmodels.aggregate`) and
``dp_quantreg(..., method="sample-aggregate")``: PRIVACY.md rules 1, 5, 7, 8, 9."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats

import dpmodels as dpm
import dpmodels.aggregate as ag
from dpmodels.errors import DPModelsError, NotPrivateWarning

FORMULA = "y ~ x1 + x2 + C(d)"
KW = dict(bounds={"x1": (-1, 1), "x2": (-1, 1), "y": (-6.0, 7.0)}, levels={"d": ["no", "yes"]})
TRUTH = np.array([1.0, 0.7, 1.0, -0.5])  # Intercept, C(d)[T.yes], x1, x2


def draw(seed: int, n: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    x1, x2 = rng.uniform(-1, 1, n), rng.uniform(-1, 1, n)
    d = np.where(rng.random(n) < 0.5, "no", "yes")
    y = 1 + x1 - 0.5 * x2 + 0.7 * (d == "yes") + rng.laplace(size=n).clip(-4, 4)
    return pd.DataFrame({"y": y, "x1": x1, "x2": x2, "d": d})


def test_sensitivity_adversarial():
    """One changed block moves the integer vector by at most mean_sensitivity, and
    the bound is reached (corners of the clamped box)."""
    rng = np.random.default_rng(0)
    p, k = 3, 20
    delta = ag.mean_sensitivity(p)
    base = rng.uniform(-1, 1, (k, p))
    worst = 0
    candidates = [np.array(c, float) for c in
                  [(1, 1, 1), (-1, -1, -1), (0, 0, 0), (1, -1, 0), (5, -7, np.nan)]]
    for a in candidates + [rng.uniform(-2, 2, p) for _ in range(20)]:
        for b in candidates:
            u1, u2 = base.copy(), base.copy()
            u1[3], u2[3] = np.nan_to_num(a), np.nan_to_num(b)
            s1, s2 = ag.mean_statistics(u1), ag.mean_statistics(u2)
            dist = sum(abs(x - y) for x, y in zip(s1, s2))
            assert dist <= delta
            worst = max(worst, dist)
    # u = -1 -> +1 moves each sum by 2G A but no square; 0 -> +-1 moves each square by G**2
    assert worst >= 0.85 * delta


def test_end_to_end_one_row_changes_one_block():
    """Replace one row by an outlier: with the same seed, exactly one block's fit
    changes, so the exact statistics move within the sensitivity."""
    df = draw(1, 600)
    df2 = df.copy()
    df2.loc[17, ["y", "x1"]] = [7.0, -1.0]
    seen = []
    orig = ag.mean_statistics

    def spy(u):
        seen.append(np.array(u))
        return orig(u)

    ag.mean_statistics = spy
    try:
        for d in (df, df2):
            ag.release_aggregate(d, formula=FORMULA, epsilon=1.0, blocks=20,
                                 param_bounds=(-3, 3), random_state=5, **KW)
    finally:
        ag.mean_statistics = orig
    changed = np.any(seen[0] != seen[1], axis=1)
    assert changed.sum() <= 1
    dist = sum(abs(a - b) for a, b in zip(orig(seen[0]), orig(seen[1])))
    assert dist <= ag.mean_sensitivity(4)


def test_exact_sampler_used(monkeypatch):
    """Noise comes from dpmodels.exact.discrete_laplace with the stated parameter
    (integers added to the integer statistics), never from a float sampler."""
    calls = []
    orig = ag.discrete_laplace

    def spy(bits, eps, size):
        z = orig(bits, eps, size)
        calls.append((eps, size, z.dtype))
        return z

    monkeypatch.setattr(ag, "discrete_laplace", spy)
    rel = ag.release_aggregate(draw(2, 2000), formula=FORMULA, epsilon=1.0, random_state=0, **KW)
    p = 4
    assert [c[1] for c in calls] == [p * b for b in ag.RANGE_BINS] + [2 * p]
    assert all(np.issubdtype(c[2], np.integer) for c in calls)
    eps_mean = 1.0 * (1 - ag.RANGE_SHARE)
    assert calls[-1][0] == pytest.approx(2 * eps_mean / ag.mean_sensitivity(p), rel=1e-12)
    assert calls[-1][0] <= 2 * eps_mean / ag.mean_sensitivity(p)
    assert calls[0][0] <= 2 * (ag.RANGE_SHARE / ag.RANGE_LEVELS) / (2 * p)
    assert rel.report.seeded


def test_budget_split_adds_up():
    acct = dpm.Accountant(2.0)
    rel = ag.release_aggregate(draw(3, 2000), formula=FORMULA, epsilon=0.7, accountant=acct,
                               random_state=0, **KW)
    assert sum(e for _, e in rel.report.split) == pytest.approx(0.7, rel=1e-12)
    assert acct.spent == pytest.approx(0.7)
    rel2 = ag.release_aggregate(draw(3, 2000), formula=FORMULA, epsilon=0.5,
                                param_bounds=(-5, 5), random_state=0, **KW)
    assert [e for _, e in rel2.report.split] == [0.5]
    assert rel2.report.range_source == "param_bounds"


@pytest.mark.parametrize("bad", [
    dict(blocks=0), dict(blocks=1000), dict(blocks=2.5), dict(q=1.0), dict(q="a"),
    dict(param_bounds={"x1": (0, 1)}), dict(param_bounds={"nope": (0, 1)}),
    dict(param_bounds=(1, -1)), dict(param_bounds=(0, np.inf)), dict(epsilon=-1.0),
    dict(bounds={"x1": (-1, 1), "y": (-6, 7)}), dict(estimator="ols"),
])
def test_refusals_before_budget(bad, monkeypatch):
    monkeypatch.setattr(ag, "discrete_laplace", lambda *a: pytest.fail("noise drawn"))
    acct = dpm.Accountant(5.0)
    kw = dict(KW, formula=FORMULA, epsilon=1.0, random_state=0, accountant=acct)
    kw.update(bad)
    df = draw(4, 3000)
    with pytest.raises((DPModelsError, ValueError)):  # (epsilon: the library's ValueError)
        ag.release_aggregate(df, **kw)
    assert acct.spent == 0


def test_refusals_through_dp_quantreg():
    acct = dpm.Accountant(5.0)
    with pytest.raises(DPModelsError, match="bins"):
        dpm.dp_quantreg(FORMULA, draw(4, 3000), epsilon=1.0, method="sample-aggregate",
                        bins=10, accountant=acct, **KW)
    with pytest.raises(DPModelsError, match="blocks"):
        dpm.dp_quantreg(FORMULA, draw(4, 3000), epsilon=1.0, blocks=10, accountant=acct, **KW)
    assert acct.spent == 0


def test_seeded_reproducible_and_secure_default():
    df = draw(5, 3000)
    a = ag.release_aggregate(df, formula=FORMULA, epsilon=1.0, random_state=11, **KW)
    b = ag.release_aggregate(df, formula=FORMULA, epsilon=1.0, random_state=11, **KW)
    np.testing.assert_array_equal(a.params, b.params)
    c = ag.release_aggregate(df, formula=FORMULA, epsilon=1.0, **KW)
    assert not c.report.seeded and "OS secure" in str(c.report)


def test_large_epsilon_is_average_of_block_fits():
    """At a huge epsilon with wide public ranges the estimate is the plain average
    of statsmodels QuantReg on the blocks of the release's partition."""
    from statsmodels.regression.quantile_regression import QuantReg
    from dpmodels.randomness import random_source

    df = draw(6, 2000)
    k = 20
    rel = ag.release_aggregate(df, formula=FORMULA, epsilon=1e9, blocks=k,
                               param_bounds=(-50, 50), random_state=3, **KW)
    order = np.argsort(random_source(3).words(len(df)), kind="stable")
    X = np.column_stack([np.ones(len(df)), (df.d == "yes"), df.x1, df.x2]).astype(float)
    fits = [QuantReg(df.y.to_numpy()[ix], X[ix]).fit(q=0.5, max_iter=2000).params
            for ix in np.array_split(order, k)]
    np.testing.assert_allclose(rel.params, np.mean(fits, axis=0), atol=1e-3)
    with pytest.warns(NotPrivateWarning):
        inf = ag.release_aggregate(df, formula=FORMULA, epsilon=math.inf, blocks=k,
                                   random_state=3, **KW)
    np.testing.assert_allclose(inf.params, np.mean(fits, axis=0), atol=1e-8)


def test_coverage_small():
    """40 data sets, n = 4000, epsilon = 1: each coefficient's 95% interval covers
    at least 33 times (P(Binomial(40, 0.95) <= 32) = 0.014; a 85%-covering interval
    fails with probability 0.6)."""
    hits = np.zeros(4)
    for r in range(40):
        res = dpm.dp_quantreg(FORMULA, draw(100 + r, 4000), epsilon=1.0,
                              method="sample-aggregate", random_state=r, **KW).fit(q=0.5)
        ci = np.asarray(res.conf_int())
        hits += (ci[:, 0] <= TRUTH) & (TRUTH <= ci[:, 1])
    assert stats.binom.cdf(32, 40, 0.95) < 0.02
    assert np.all(hits >= 33), hits


def test_results_object():
    m = dpm.dp_quantreg(FORMULA, draw(7, 3000), epsilon=1.0, method="sample-aggregate",
                        random_state=0, **KW)
    res = m.fit(q=0.5)
    assert list(res.params.index) == ["Intercept", "C(d)[T.yes]", "x1", "x2"]
    assert "(sample-and-aggregate)" in str(res.summary())
    assert "Differential privacy" in str(res.summary())
    assert res.nobs == 3000 and np.isnan(res.prsquared)
    np.testing.assert_allclose(np.asarray(res.conf_int())[:, 0],
                               res.params - stats.norm.ppf(0.975) * res.bse)
    assert res.predict(draw(8, 5)).shape == (5,)
    with pytest.raises(DPModelsError):
        m.fit(q=0.3)
    # a release given again costs nothing and answers the same
    again = dpm.dp_quantreg(FORMULA, m.release, method="sample-aggregate").fit()
    np.testing.assert_array_equal(again.params, res.params)


def test_neighbours_publish_same_metadata():
    """Rule 5: replace-one neighbours (a missing value, a row at a bound, a float
    column turned object by a missing value) publish the same everything except
    numbers computed from the noise."""
    df = draw(9, 2000)
    nbs = [df.copy() for _ in range(3)]
    nbs[0].loc[5, "x1"] = np.nan
    nbs[1].loc[5, ["y", "x2"]] = [7.0, 1.0]
    nbs[2]["d"] = nbs[2]["d"].astype("category")
    nbs[2].loc[5, "d"] = np.nan

    def published(d):
        res = dpm.dp_quantreg(FORMULA, d, epsilon=1.0, method="sample-aggregate",
                              random_state=4, **KW).fit(q=0.5)
        rep = res.privacy
        return (list(res.params.index), str(res.params.dtype), rep.split, rep.blocks,
                rep.block_rows, rep.n, rep.variables, [nm for nm, _, _ in rep.ranges])

    ref = published(df)
    for d in nbs:
        assert published(d) == ref
