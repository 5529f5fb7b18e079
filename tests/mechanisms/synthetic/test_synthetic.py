"""Tests of :mod:`dpmodels.mechanisms.synthetic`: ``PrivateHistogram.sample`` (perturbed
histogram sampling, post-processing) and ``smoothed_sample`` (Wasserman &
Zhou's smoothed histogram, a new epsilon-DP release).

What is checked
---------------
* the exact pieces: uniform integers below a bound (chi-square against the
  uniform law), the law of the smoothed sampler's cells (chi-square against
  ``(1 - delta) C_j / n + delta / m``, rows with missing values included), the
  choice of delta (Theorem 5's bound met, and nearly tight);
* an **empirical privacy audit** on the worst-case neighbours (one row moved
  into an otherwise empty cell): per-row events and the events "count of the
  cell >= j" of two-row samples; no Clopper-Pearson lower bound on the loss
  exceeds epsilon, the tight events come within their margin of epsilon, and
  the same audit flags a sampler whose delta is chosen for 4 x epsilon;
* a **neighbour test** (rule 5): replace-one pairs (a missing value that turns
  an int column into float64, a row at or beyond a bound, a row moved into an
  empty cell, a row moved to another level), same seed: the report is
  identical, the frames' columns, dtypes, categories and index too;
* bad inputs and the budget: every refusal before the accountant is charged
  and before any random word is drawn; the accountant charged once;
* ``release.sample``: size, dtypes, reproducibility, a signed release's
  negative counts, the binning scale, the density option.
"""

from __future__ import annotations

import math
import re
import warnings
from dataclasses import replace
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest
from scipy import stats

import dpmodels as dpm
from dpmodels.data.clipping import CLIP_SHARE
from dpmodels.core.errors import (
    BudgetExceededError,
    DomainError,
    DPModelsError,
    NotPrivateWarning,
    ReleaseWarning,
    UndeclaredLevelError,
    UnknownVariableError,
)
from dpmodels.core.randomness import SeededBits, random_source
from dpmodels.mechanisms.synthetic import smoothed_cells, smoothed_delta, uniform_below, values_in_bins

from tests.support.audit_tools import ALPHA, loss_lower_bound, pooled_chisquare, tightness_margin

D60 = 2**60


class CountingBits:
    """A seeded word source that counts the words it hands out."""

    seeded = True

    def __init__(self, seed=0):
        self.inner = SeededBits(np.random.default_rng(seed))
        self.drawn = 0

    def words(self, size):
        self.drawn += int(size)
        return self.inner.words(size)


# ---------------------------------------------------------------------------
# exact pieces
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("bound", [1, 2, 6, 7, 2**40 + 3])
def test_uniform_below_is_uniform(bound):
    u = uniform_below(random_source(11), bound, 60_000)
    assert u.dtype == np.uint64 and int(u.max()) < bound
    if bound == 1:
        assert not u.any()
        return
    k = min(bound, 16)  # residues mod k (uniform when k divides bound, else nearly)
    cats = (u % np.uint64(k)).astype(np.int64) if bound % k == 0 else (
        (u.astype(np.float64) / bound * k).astype(np.int64))
    probs = np.full(k, 1.0 / k)
    if bound % k:  # exact law of floor(u k / bound)
        edges = np.ceil(np.arange(k + 1) * bound / k)
        probs = np.diff(edges) / bound
    res = pooled_chisquare(np.bincount(cats, minlength=k), probs)
    assert res.pvalue > ALPHA, res


def test_uniform_below_rejects_the_top_words():
    """Bound 3 * 2**62: words >= 3 * 2**62 (a quarter of them) are redrawn."""
    bits = CountingBits(3)
    u = uniform_below(bits, 3 * 2**62, 40_000)
    assert int(u.max()) < 3 * 2**62
    # 40_000 / (3/4) words expected; sd of the extra count about 100
    assert abs(bits.drawn - 40_000 / 0.75) < 600


def test_smoothed_cells_follow_the_mixture():
    ids = np.array([1, 4, 5], np.uint64)
    counts = np.array([5, 2, 1], np.int64)
    n, m = 10, 8  # two rows with a missing value
    delta = Fraction(3 * D60 // 10, D60)
    cells = smoothed_cells(random_source(5), ids, counts, n, m, delta, 80_000)
    d = float(delta)
    exact = np.zeros(m)
    exact[ids.astype(int)] += (1 - d) * counts / n
    exact += (1 - d) * (n - counts.sum()) / n / m + d / m
    res = pooled_chisquare(np.bincount(cells.astype(np.int64), minlength=m), exact)
    assert res.pvalue > ALPHA, res


def _loss(delta, size, m, n):
    return size * math.log1p((1 - delta) * m / (n * delta))


@pytest.mark.parametrize("eps,size,m,n", [(1.0, 1, 2, 10), (1.0, 50, 20, 2000),
                                          (0.1, 1000, 64, 10**5), (5.0, 3, 10**12, 7)])
def test_delta_meets_theorem5_and_is_nearly_tight(eps, size, m, n):
    delta = smoothed_delta(eps, size, m, n)
    assert delta.denominator <= D60 and 0 < delta < 1
    formula = m / (m + n * math.expm1(eps / size))
    assert float(delta) >= formula and float(delta) <= formula * (1 + 1e-9) + 2.0**-59
    assert _loss(float(delta), size, m, n) <= eps * (1 + 1e-12)
    assert _loss(float(delta) * (1 - 1e-6), size, m, n) > eps


# ---------------------------------------------------------------------------
# privacy audit: a row moved into an otherwise empty cell
# ---------------------------------------------------------------------------
AUDIT_N, AUDIT_EPS = 10, 1.0
AUDIT_D = pd.DataFrame({"g": ["a"] * AUDIT_N})
AUDIT_DP = pd.DataFrame({"g": ["a"] * (AUDIT_N - 1) + ["b"]})
AUDIT_LEVELS = {"g": ["a", "b"]}


def _audit_rows(data, k, R, seed, eps):
    """R independent k-row samples (one call of size k R: the rows are iid, and
    epsilon = R eps gives the delta of a k-row sample at eps); (R, k) bool: row is "b"."""
    syn = dpm.smoothed_sample(data, columns=["g"], epsilon=R * eps, size=k * R,
                              levels=AUDIT_LEVELS, random_state=seed)
    return (np.asarray(syn.frame["g"]) == "b").reshape(R, k), syn.report.delta


def _probs(delta, k, j):
    """Exact P(count of "b" >= j) among k rows, for D (p) and D' (p')."""
    p = delta / 2
    pp = p + (1 - delta) / AUDIT_N
    sf = lambda q: stats.binom.sf(j - 1, k, q)  # noqa: E731
    return sf(p), sf(pp)


@pytest.mark.parametrize("k,R", [(1, 200_000), (2, 150_000)])
def test_privacy_audit_worst_case_neighbours(k, R):
    bD, delta = _audit_rows(AUDIT_D, k, R, 100, AUDIT_EPS)
    bDp, delta_p = _audit_rows(AUDIT_DP, k, R, 200, AUDIT_EPS)
    assert delta == delta_p  # public inputs only
    cD, cDp = bD.sum(axis=1), bDp.sum(axis=1)
    events = {f"count(b) >= {j}": j for j in range(1, k + 1)}
    events["count(b) == 0"] = 0
    alpha_each = 1e-3 / (4 * len(events))
    tight = 0
    for name, j in events.items():
        xD = int(np.count_nonzero(cD >= j if j else cD == 0))
        xDp = int(np.count_nonzero(cDp >= j if j else cDp == 0))
        for xn, xd, direction in ((xDp, xD, "D'/D"), (xD, xDp, "D/D'")):
            lb = loss_lower_bound(xn, xd, R, alpha_each)
            assert lb <= AUDIT_EPS, (name, direction, lb)
        if j == k:  # all k rows in the new cell: the ratio is exactly e^epsilon (Thm 5)
            p, pp = _probs(delta, k, j)
            theory = math.log(pp / p)
            assert abs(theory - AUDIT_EPS) < 1e-6
            margin = tightness_margin(pp, p, R, alpha_each, 4.0)
            lb = loss_lower_bound(xDp, xD, R, alpha_each)
            assert lb >= theory - margin, (name, lb, theory, margin)
            tight += 1
    assert tight == 1


def test_audit_flags_a_sampler_with_four_times_the_epsilon():
    """The same audit, on rows whose delta was chosen for 4 epsilon: the loss
    lower bound exceeds epsilon (the audit can fail)."""
    R = 20_000
    bD, _ = _audit_rows(AUDIT_D, 1, R, 300, 4 * AUDIT_EPS)
    bDp, _ = _audit_rows(AUDIT_DP, 1, R, 400, 4 * AUDIT_EPS)
    lb = loss_lower_bound(int(bDp.sum()), int(bD.sum()), R, 1e-3 / 4)
    assert lb > AUDIT_EPS, lb


# ---------------------------------------------------------------------------
# neighbours (rule 5)
# ---------------------------------------------------------------------------
BOUNDS = {"x": (0.0, 10.0)}
LEVELS = {"k": [1, 2, 3], "s": ["u", "v", "w"]}


def _base(rng, n=400):
    return pd.DataFrame({
        "x": rng.uniform(2, 8, n),
        "k": rng.choice([1, 2], n),  # level 3 empty
        "s": rng.choice(["u", "v"], n),  # level w empty
        "b": rng.random(n) < 0.5,
    })


def _neighbour(df, kind, rng):
    dp = df.copy()
    i = int(rng.integers(len(df)))
    if kind == "missing":
        dp["k"] = dp["k"].astype(float)
        dp.loc[i, "k"] = np.nan  # int column -> float64
    elif kind == "bound":
        dp.loc[i, "x"] = float(rng.choice([0.0, 10.0, -1e6, 1e6]))
    elif kind == "empty":
        dp.loc[i, ["k", "s"]] = [3, "w"]
    elif kind == "move":
        dp.loc[i, "s"] = "v" if dp.loc[i, "s"] == "u" else "u"
    return dp


def _signature(frame):
    return {"columns": list(frame.columns),
            "dtypes": [(str(t), tuple(t.categories) if hasattr(t, "categories") else None)
                       for t in frame.dtypes],
            "index": (type(frame.index).__name__, len(frame))}


def _outside_masked(report) -> list:
    """The report's rows, the numbers of its noisy outside counts masked."""
    return [(k, re.sub(r"\d[\d,.]*", "#", v) if k == "Rows outside bounds:" else v)
            for k, v in report.rows()]


@pytest.mark.parametrize("kind", ["missing", "bound", "empty", "move"])
def test_neighbours_publish_the_same_metadata(kind):
    rng = np.random.default_rng(hash(kind) % 2**32)
    for rep in range(3):
        df = _base(rng)
        dp = _neighbour(df, kind, rng)
        kw = dict(columns=["x", "k", "s", "b"], epsilon=2.0, size=10, bounds=BOUNDS,
                  levels=LEVELS, bins=2, random_state=rep)
        with warnings.catch_warnings(record=True) as wa:
            warnings.simplefilter("always")
            a = dpm.smoothed_sample(df, **kw)
        with warnings.catch_warnings(record=True) as wb:
            warnings.simplefilter("always")
            b = dpm.smoothed_sample(dp, **kw)
        assert [str(w.message) for w in wa] == [str(w.message) for w in wb]
        # the noisy counts of rows outside the bounds (issue 43) are the only numbers of
        # the report computed from the rows: everything else is the same, text included
        oa, ob = a.report.outside_bounds, b.report.outside_bounds
        assert replace(a.report, outside_bounds=replace(oa, counts=())) == replace(
            b.report, outside_bounds=replace(ob, counts=()))
        assert _outside_masked(a.report) == _outside_masked(b.report)
        assert _signature(a.frame) == _signature(b.frame)
        assert a.frame["k"].dtype == np.int64  # declared int levels, whatever the column
        rkw = dict(columns=["x", "k", "s", "b"], epsilon=1.0, bounds=BOUNDS, levels=LEVELS,
                   bins=4, random_state=rep)
        sa = dpm.release(df, **rkw).sample(size=30, random_state=rep)
        sb = dpm.release(dp, **rkw).sample(size=30, random_state=rep)
        assert _signature(sa) == _signature(sb) and sa.attrs == sb.attrs


# ---------------------------------------------------------------------------
# bad inputs, budget, randomness
# ---------------------------------------------------------------------------
DF = pd.DataFrame({"x": np.linspace(0, 1, 500), "g": ["a", "b"] * 250})
OK = dict(columns=["x", "g"], epsilon=1.0, size=10, bounds={"x": (0, 1)},
          levels={"g": ["a", "b"]}, bins=4)


@pytest.mark.parametrize("change,error,match", [
    (dict(size=0), DPModelsError, "size"),
    (dict(size=2.5), DPModelsError, "size"),
    (dict(size=True), DPModelsError, "size"),
    (dict(delta=1.5), DPModelsError, "delta"),
    (dict(delta=0.0), DPModelsError, "delta"),
    (dict(delta="x"), TypeError, "delta"),
    (dict(delta=1e-6), DPModelsError, "needs delta >="),
    (dict(epsilon=0.0), DPModelsError, "epsilon"),
    (dict(columns=["x", "nope"]), UnknownVariableError, "nope"),
    (dict(bounds={}), DomainError, "bounds"),
    (dict(levels={"g": ["a"]}), UndeclaredLevelError, "g"),
    (dict(missing="zero"), DPModelsError, "missing"),
    (dict(size=10**6, epsilon=1e-12), DPModelsError, "fewer rows"),
])
def test_refusals_before_budget_and_randomness(change, error, match):
    acct = dpm.Accountant(5.0)
    bits = CountingBits()
    with pytest.raises(error, match=match):
        dpm.smoothed_sample(DF, **{**OK, **change}, accountant=acct, random_state=bits)
    assert acct.spent == 0 and bits.drawn == 0


def test_default_bins_follow_theorem_6():
    """Without bins= the KS-optimal order n**(r/(6+r)) cells is used, round(n**(1/(6+r)))
    bins per continuous variable (before: the number was computed, printed in an
    error, and the call refused)."""
    syn = dpm.smoothed_sample(DF, **{**OK, "bins": None}, random_state=0)
    per_axis = round(len(DF) ** (1 / 7))  # r = 1 continuous variable
    assert per_axis == 2
    x = syn.frame["x"].to_numpy()
    assert syn.report.domain_cells == per_axis * 2  # x bins times g levels
    assert np.all((0 <= x) & (x <= 1))


def test_accountant_charged_once_and_refuses_over_budget():
    acct = dpm.Accountant(1.5)
    syn = dpm.smoothed_sample(DF, **OK, accountant=acct, random_state=0)
    assert acct.spent == 1.0 and len(acct.ledger) == 1 and "charged" in syn.report.budget
    bits = CountingBits()
    with pytest.raises(BudgetExceededError):
        dpm.smoothed_sample(DF, **OK, accountant=acct, random_state=bits)
    assert acct.spent == 1.0 and bits.drawn == 0


def test_report_split_and_loss_bound():
    syn = dpm.smoothed_sample(DF, **OK, random_state=0)
    rep = syn.report
    assert sum(e for _, e in rep.split) == rep.epsilon == 1.0
    assert rep.domain_cells == 8 and rep.n == 500 and rep.size == 10
    # the sampling's part: epsilon less the outside counts' share (issue 43, x is bounded)
    sampling = dict(rep.split)["the smoothed-histogram sampling (one step)"]
    assert sampling == pytest.approx(1.0 - CLIP_SHARE, rel=1e-12)
    assert rep.loss_bound <= sampling and rep.loss_bound > sampling - 1e-9
    assert abs(rep.delta - 8 / (8 + 500 * math.expm1(sampling / 10))) < 1e-12
    assert "Theorem 5" in str(rep) and rep.seeded


def test_given_delta_is_used_rounded_up():
    with pytest.warns(ReleaseWarning, match="uniform noise"):
        syn = dpm.smoothed_sample(DF, **OK, delta=0.9, random_state=0)
    assert syn.report.delta_rational == f"{math.ceil(Fraction(0.9) * D60)}/2**60"
    assert syn.report.loss_bound < 1.0


def test_epsilon_inf_samples_the_exact_histogram():
    df = pd.DataFrame({"g": ["a"] * 30})
    with pytest.warns(NotPrivateWarning):
        syn = dpm.smoothed_sample(df, columns=["g"], epsilon=math.inf, size=500,
                                  levels={"g": ["a", "b"]}, random_state=0)
    assert syn.report.delta == 0 and not syn.report.private
    assert (syn.frame["g"] == "a").all() and "NOT PRIVATE" in str(syn.report)


def test_seeded_reproducible_secure_by_default():
    a = dpm.smoothed_sample(DF, **OK, random_state=3)
    b = dpm.smoothed_sample(DF, **OK, random_state=3)
    pd.testing.assert_frame_equal(a.frame, b.frame)
    c = dpm.smoothed_sample(DF, **OK)
    assert not c.report.seeded and "OS secure entropy" in str(c.report)


def test_caller_frame_untouched_and_points_inside_their_cells():
    df = DF.copy()
    with pytest.warns(ReleaseWarning, match="uniform noise"):  # delta = 0.94
        syn = dpm.smoothed_sample(df, **{**OK, "size": 2000}, random_state=1)
    pd.testing.assert_frame_equal(df, DF)
    x = syn.frame["x"]
    assert x.between(0, 1).all() and syn.frame["g"].dtype.name == "category"
    # a uniform point in each bin: the fraction of the way through its bin is uniform
    frac = (x * 4) % 1
    assert stats.kstest(frac, "uniform").pvalue > ALPHA


def test_missing_raise_refuses_before_randomness():
    df = DF.copy()
    df.loc[3, "x"] = np.nan
    bits = CountingBits()
    with pytest.raises(dpm.MissingValueError):
        dpm.smoothed_sample(df, **OK, missing="raise", random_state=bits)
    assert bits.drawn == 0
    assert len(dpm.smoothed_sample(df, **OK, random_state=0)) == 10  # "drop"


# ---------------------------------------------------------------------------
# release.sample
# ---------------------------------------------------------------------------
def _release(**kw):
    rng = np.random.default_rng(4)
    df = pd.DataFrame({"x": rng.beta(10, 10, 3000), "k": rng.choice([1, 2, 3], 3000)})
    base = dict(columns=["x", "k"], epsilon=1.0, bounds={"x": (0, 1)},
                levels={"k": [1, 2, 3]}, bins=10, random_state=0)
    return dpm.release(df, **{**base, **kw})


def test_sample_size_types_and_reproducibility():
    rel = _release()
    rows = rel.sample(random_state=2)
    assert len(rows) == rel.report.noisy_total
    assert list(rows.columns) == ["x", "k"] and rows["k"].dtype == np.int64
    assert set(rows["k"]) <= {1, 2, 3} and rows["x"].between(0, 1).all()
    pd.testing.assert_frame_equal(rows, rel.sample(random_state=2))
    assert len(rel.sample(size=7)) == 7
    with pytest.raises(DPModelsError, match="size"):
        rel.sample(size=0)
    with pytest.raises(DPModelsError, match="within"):
        rel.sample(within="kernel")


def test_sample_cells_follow_the_noisy_counts():
    rel = _release()
    rows = rel.sample(size=50_000, random_state=3)
    got = rel.domain.encode([rel.domain.axis(v).codes(rows[v])[0] for v in rel.domain.names])
    pos = np.searchsorted(rel.cell_ids, got)
    assert (rel.cell_ids[pos] == got).all()
    probs = rel.counts / rel.counts.sum()
    res = pooled_chisquare(np.bincount(pos, minlength=rel.cell_ids.size), probs)
    assert res.pvalue > ALPHA, res


def test_signed_release_negative_counts_never_drawn():
    rel = _release(threshold=None, epsilon=0.2)
    assert (rel.counts < 0).any()
    rows = rel.sample(size=20_000, random_state=5)
    got = rel.domain.encode([rel.domain.axis(v).codes(rows[v])[0] for v in rel.domain.names])
    drawn = set(got.tolist())
    negative = set(rel.cell_ids[rel.counts <= 0].tolist())
    assert not drawn & negative


def test_sample_on_a_log_scale_is_uniform_in_log_coordinates():
    rng = np.random.default_rng(0)
    df = pd.DataFrame({"y": rng.normal(size=2000), "w": rng.lognormal(2, 0.5, 2000)})
    rel = dpm.release(df, formula="y ~ np.log(w)", epsilon=2.0,
                      bounds={"y": (-4, 4), "w": (1, 100)}, bins=5, random_state=0)
    ax = rel.domain.axis("w")
    assert ax.scale == "log"
    w = rel.sample(size=4000, random_state=1)["w"].to_numpy()
    assert ((w >= 1) & (w <= 100)).all()
    frac = (np.log(w) / (math.log(100) / 5)) % 1.0
    assert stats.kstest(frac, "uniform").pvalue > ALPHA


def test_sample_density_leans_towards_the_denser_neighbour():
    """On the rising side of Beta(10, 10) the fitted within-cell density puts
    more mass in the upper half of the bin [0.3, 0.4) than uniform draws do."""
    rel = _release(epsilon=5.0)
    rows = rel.sample(size=40_000, random_state=6, within="density")
    assert rows.attrs["within"] == "density"
    x = rows["x"].to_numpy()
    inside = x[(x >= 0.3) & (x < 0.4)]
    upper = float(np.mean(inside >= 0.35))
    # the Beta(10, 10) share of [0.35, 0.4) within [0.3, 0.4) is 0.70; uniform gives 0.5
    se = math.sqrt(0.25 / inside.size)
    assert upper > 0.5 + 6 * se, (upper, inside.size)


def test_values_in_bins_maps_back_from_the_binning_scale():
    ax = dpm.Axis("w", "continuous", bounds=(1.0, 100.0), bins=2, scale="log")
    v = values_in_bins(ax, np.array([0, 1, 1]), np.array([0.0, 0.0, 0.5]))
    assert np.allclose(v, [1.0, 10.0, 10 ** 1.5])
