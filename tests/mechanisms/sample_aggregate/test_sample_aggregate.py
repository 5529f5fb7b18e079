"""Sample-and-aggregate (dpmodels.mechanisms.sample_aggregate, method="sample-aggregate").

1. exactness: epsilon=inf is the average of statsmodels' fits on the blocks
   of the release's own partition, for all four families;
2. the budget split: every noise draw's epsilon times its sensitivity adds up
   to the caller's epsilon, with and without param_bounds; the accountant;
3. sensitivity on worst-case neighbours (a row whose block swings from one
   end of the range to the other), and the empirical audit of the mean's
   release with the library's exact sampler (and a broken 4x mechanism
   flagged by the same audit);
4. refusals before any noise, budget or partition draw; the caller's data;
5. neighbours publish the same things (rule 5);
6. the contract's properties (report, summaries, release reuse, predict);
7. a small coverage check of the 95% intervals (the benchmark runs the long one).
"""

from __future__ import annotations

import math
import re
import warnings
from dataclasses import asdict

import numpy as np
import pandas as pd
import pytest
import statsmodels.api as sm
from scipy import stats

import dpmodels as dpm
from dpmodels.mechanisms import sample_aggregate as sa
from dpmodels.data.clipping import CLIP_SHARE
from dpmodels.core.errors import DPModelsError
from dpmodels.core.exact import discrete_laplace
from dpmodels.core.randomness import SeededBits
from dpmodels.core.streams import RowStreams

from tests.support.audit_tools import format_audit, privacy_audit, tightness_margin

LEVELS = {"yb": [0, 1], "yc": ["a", "b", "c"], "g": ["u", "v", "w"]}
BOUNDS = {"x": (0.0, 10.0), "z": (-3.0, 3.0), "y": (-10.0, 20.0)}
FAMILIES = {
    "ols": (dpm.dp_ols, "y ~ x + z + C(g)", {}),
    "logit": (dpm.dp_logit, "yb ~ x + z", {}),
    "quantreg": (dpm.dp_quantreg, "y ~ x + z", {"q": 0.3}),
    "mnlogit": (dpm.dp_mnlogit, "yc ~ x", {}),
}


def _frame(n=600, seed=3) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    x, z = rng.uniform(0, 10, n), rng.uniform(-3, 3, n)
    g = rng.choice(LEVELS["g"], n)
    y = np.clip(1 + 0.5 * x - z + (g == "v") + rng.normal(0, 1, n), -10, 20)
    yb = (rng.random(n) < 1 / (1 + np.exp(-(-1 + 0.2 * x + 0.5 * z)))).astype(int)
    yc = np.array(LEVELS["yc"])[rng.integers(0, 3, n)]
    return pd.DataFrame({"y": y, "x": x, "z": z, "g": g, "yb": yb, "yc": yc})


def _make(family, data, **kw):
    fn, formula, extra = FAMILIES[family]
    args = dict(epsilon=1.0, bounds=BOUNDS, levels=LEVELS, random_state=0,
                method="sample-aggregate") | extra | kw
    return fn(formula, data, **args)


# ---------------------------------------------------------------------------
# 1. epsilon = inf: the exact average of the blocks' statsmodels fits
# ---------------------------------------------------------------------------
def _manual_blocks(family, df, seed, k):
    fn, formula, extra = FAMILIES[family]
    import statsmodels.formula.api as smf

    order = sa.row_order(RowStreams.from_source(SeededBits(np.random.default_rng(seed))), len(df))
    est = []
    for rows in np.array_split(order, k):
        block = df.iloc[rows]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            if family == "ols":
                est.append(np.asarray(smf.ols(formula, block).fit().params))
            elif family == "quantreg":
                est.append(np.asarray(smf.quantreg(formula, block).fit(q=extra["q"],
                                                                       max_iter=1000).params))
            elif family == "logit":
                est.append(np.asarray(smf.logit(formula, block).fit(disp=0).params))
            else:
                res = sm.MNLogit(pd.Categorical(block["yc"], categories=LEVELS["yc"]).codes,
                                 sm.add_constant(block[["x"]])).fit(disp=0)
                est.append(np.asarray(res.params).ravel(order="F"))
    return np.mean(est, axis=0)


@pytest.mark.parametrize("family", list(FAMILIES))
def test_inf_epsilon_is_the_exact_average_of_the_blocks(family):
    df = _frame()
    with pytest.warns(dpm.NotPrivateWarning):
        model = _make(family, df, epsilon=math.inf, blocks=4, random_state=11,
                      bias_correction=None)
    res = model.fit()
    want = _manual_blocks(family, df, 11, 4)
    np.testing.assert_allclose(np.asarray(res.params).ravel(order="F"), want, rtol=1e-6,
                               atol=1e-6 * np.abs(want).max())
    assert not res.privacy.private and "NOT PRIVATE" in res.summary().as_text()
    assert res.privacy.blocks == 4


def test_split_half_correction_is_two_fits_minus_the_halves():
    df = _frame()
    with pytest.warns(dpm.NotPrivateWarning):
        rel = _make("logit", df, epsilon=math.inf, blocks=2, random_state=5,
                    bias_correction="split-half").release
    order = sa.row_order(RowStreams.from_source(SeededBits(np.random.default_rng(5))), len(df))
    X = sm.add_constant(df[["x", "z"]]).to_numpy()
    y = df["yb"].to_numpy(float)
    est = []
    for rows in np.array_split(order, 2):
        fit = lambda r: sm.Logit(y[r], X[r]).fit(disp=0).params  # noqa: E731
        h = len(rows) // 2
        est.append(2 * fit(rows) - (fit(rows[:h]) + fit(rows[h:])) / 2)
    np.testing.assert_allclose(rel.params, np.mean(est, axis=0), rtol=1e-6)
    assert rel.report.bias_correction == "split-half"


def test_firth_correction_is_the_mle_minus_its_cox_snell_bias():
    """The default logit correction: theta + I^-1 X'(h (1/2 - p)) at the block's MLE,
    checked against an independent computation (hat matrix through a QR)."""
    df = _frame()
    with pytest.warns(dpm.NotPrivateWarning):
        rel = _make("logit", df, epsilon=math.inf, blocks=2, random_state=5).release
    assert rel.report.bias_correction == "firth"
    order = sa.row_order(RowStreams.from_source(SeededBits(np.random.default_rng(5))), len(df))
    X = sm.add_constant(df[["x", "z"]]).to_numpy()
    y = df["yb"].to_numpy(float)
    est = []
    for rows in np.array_split(order, 2):
        b = sm.Logit(y[rows], X[rows]).fit(disp=0).params
        p = 1 / (1 + np.exp(-X[rows] @ b))
        Q, _ = np.linalg.qr(X[rows] * np.sqrt(p * (1 - p))[:, None])
        h = (Q**2).sum(axis=1)
        info = X[rows].T @ (X[rows] * (p * (1 - p))[:, None])
        est.append(b + np.linalg.solve(info, X[rows].T @ (h * (0.5 - p))))
    np.testing.assert_allclose(rel.params, np.mean(est, axis=0), rtol=1e-6)


# ---------------------------------------------------------------------------
# 2. the budget split and the accountant
# ---------------------------------------------------------------------------
SPLIT_CASES = ("private-range", "default-range", "public")


@pytest.mark.parametrize("case", SPLIT_CASES)
def test_split_adds_up_and_matches_the_noise_drawn(monkeypatch, case):
    """Every noise draw's epsilon times its sensitivity is its part of the
    split, and the parts add up to epsilon: with the private range (2p
    exponential mechanisms of sensitivity 1, at a k large enough for it), with
    too few blocks for it (the public default range, its share to the mean),
    and with public param_bounds."""
    import dpmodels.mechanisms.selection as selection

    calls, choices = [], []
    real, real_choice = sa.discrete_laplace, selection.exponential_choice

    def spy(source, eps, size):
        calls.append((eps, int(size)))
        return real(source, eps, size)

    def spy_choice(bits, deficits, r):
        choices.append((r, np.asarray(deficits).size))
        return real_choice(bits, deficits, r)

    monkeypatch.setattr(sa, "discrete_laplace", spy)
    monkeypatch.setattr(sa, "exponential_choice", spy_choice)
    p = 5  # Intercept, C(g)[T.v], C(g)[T.w], x, z
    eps, kw, df = 1.3, {}, _frame()
    if case == "private-range":  # the least k for a private range at epsilon 13
        eps = 13.0
        k = sa.min_range_blocks(p, eps * sa.RANGE_SHARE)
        assert sa.range_budget(k, p, eps) > 0 == sa.range_budget(k - 1, p, eps)
        kw, df = dict(blocks=k), _frame(6 * k)
    elif case == "public":
        kw = dict(param_bounds=(-20.0, 20.0))
    acct = dpm.Accountant(50.0)
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        rel = _make("ols", df, epsilon=eps, accountant=acct, **kw).release
    assert len(rel.names) == p
    assert math.isclose(math.fsum(e for _, e in rel.report.split), eps, rel_tol=1e-12)
    # the noisy counts of rows outside the bounds take their share (issue 43; their
    # noise is dpmodels.data.clipping's, checked in tests/data/test_clipped_rows.py); the rest:
    clip = [e for label, e in rel.report.split if label.startswith("rows outside bounds")]
    assert len(clip) == 1 and math.isclose(clip[0], CLIP_SHARE * eps, rel_tol=1e-12)
    split = tuple((label, e) for label, e in rel.report.split
                  if not label.startswith("rows outside bounds"))
    parts = [e for _, e in split]
    assert acct.ledger[0].epsilon == eps and len(acct.ledger) == 1
    too_few = [w for w in rec if issubclass(w.category, dpm.ReleaseWarning)
               and "too few blocks" in str(w.message)]
    if case == "private-range":
        eps_r = parts[0]
        assert eps_r == sa.range_budget(rel.blocks, p, eps) and eps_r <= sa.RANGE_SHARE * eps
        e = sa.range_epsilon(eps_r, p)
        # 2p mechanisms, P ~ exp(-e d / 2): exponential_choice's r = e / 2, sensitivity 1
        assert [c for c in choices] == [(e / 2, sa.RANGE_CELLS),
                                        (e / 2, sa.RANGE_CELLS - 1)] * p
        assert 2 * p * e <= eps_r and math.isclose(2 * p * e, eps_r, rel_tol=1e-12)
        assert "exponential-mechanism median" in rel.report.range_source and not too_few
        assert (-sa.RANGE_LIMIT <= rel.lo).all() and (rel.hi <= sa.RANGE_LIMIT).all()
        assert (rel.hi - rel.lo < 2 * sa.RANGE_LIMIT).all()
    else:
        assert len(parts) == 2 and not choices
        if case == "default-range":
            assert too_few and "public default" in rel.report.range_source
            assert (rel.lo == -sa.RANGE_LIMIT).all() and (rel.hi == sa.RANGE_LIMIT).all()
    # the mean (with the number of failed blocks: p + 1 sums of L1 sensitivity (p + 1) G)
    # and the spread (p sums, p G): discrete Laplace of scale 2/eps
    assert [s for _, s in calls] == [p + 1, p]
    for (e, size), part in zip(calls, parts[-2:]):
        assert e * size * sa.GRID_UNITS / 2 <= part
        assert math.isclose(e * size * sa.GRID_UNITS / 2, part, rel_tol=1e-9)
    assert f"L1 sensitivity {p + 1} x 2**16" in split[-2][0]
    assert f"L1 sensitivity {p} x 2**16" in split[-1][0]
    # the released noise scale is the one drawn (scaled up by the failed share's
    # correction when the noisy share is above 0)
    drawn = (rel.hi - rel.lo) / (rel.blocks * sa.GRID_UNITS) * 2 / calls[-2][0]
    if rel.failed_share == 0:
        assert np.allclose(rel.noise_scale, drawn)
    else:
        assert np.all(rel.noise_scale >= drawn / (1 - rel.failed_share))


def test_range_needs_enough_blocks_and_keeps_its_share_small():
    """The private range's budget, from public inputs only: none below the least
    k (each mechanism's worst-case chance of a rank error of k // 2 would exceed
    RANGE_BETA), RANGE_MARGIN times the least budget above it, never more than
    RANGE_SHARE."""
    p, eps = 9, 1.0
    kmin = sa.min_range_blocks(p, sa.RANGE_SHARE * eps)
    assert sa.range_budget(kmin - 1, p, eps) == 0.0 < sa.range_budget(kmin, p, eps)
    for k in (kmin, 2 * kmin, 10 * kmin, 10**6):
        eps_r = sa.range_budget(k, p, eps)
        e = sa.range_epsilon(eps_r, p)
        assert 0 < eps_r <= sa.RANGE_SHARE * eps
        assert sa.RANGE_CELLS * math.exp(-e * (k // 2) / 2) <= sa.RANGE_BETA
    assert sa.range_budget(10**6, p, eps) < 0.02 * eps
    assert sa.range_budget(10**6, p, math.inf) == 0.0


# ---------------------------------------------------------------------------
# 3. worst-case neighbours and the audit
# ---------------------------------------------------------------------------
AUDIT_PB = {"Intercept": (-1.0, 1.0), "x": (-1.0, 1.0)}
AUDIT_K, AUDIT_SEED, AUDIT_EPS = 10, 17, 1.0
AUDIT_R = 6000


def _adversarial_pair():
    """30 rows at (x=1, y=0) but one at x=0 with y = -10 (D) or +10 (D'): every
    block but one is singular (a public fallback), the changed row's block
    fits intercept -+10 and slope +-10: clamped, both coordinates go from one
    end of their range to the other."""
    D = pd.DataFrame({"x": np.ones(30), "y": np.zeros(30)})
    D.loc[7, ["x", "y"]] = [0.0, -10.0]
    Dp = D.copy()
    Dp.loc[7, "y"] = 10.0
    return D, Dp


def _block_matrix(data):
    """Block estimates in working coordinates, exactly as the release computes them."""
    X = np.column_stack([np.ones(len(data)), data["x"].to_numpy()])
    design = sa._Design(X, data["y"].to_numpy(float), np.ones(len(data), bool))
    order = sa.row_order(RowStreams.from_source(SeededBits(np.random.default_rng(AUDIT_SEED))),
                         len(data))
    A, b = np.eye(2), np.zeros(2)
    return sa.block_estimates("ols", design, np.array_split(order, AUDIT_K), None, 2, None, A, b)


@pytest.fixture(scope="module")
def audit_case():
    D, Dp = _adversarial_pair()
    lo, hi = np.array([-1.0, -1.0]), np.array([1.0, 1.0])
    (WD, okD), (WDp, okDp) = _block_matrix(D), _block_matrix(Dp)
    _, a = sa.clamped_sums(WD, okD, lo, hi)
    _, b = sa.clamped_sums(WDp, okDp, lo, hi)
    return D, Dp, WD, okD, WDp, okDp, a, b


def test_worst_pair_moves_one_block_across_the_whole_range(audit_case):
    D, Dp, WD, okD, WDp, okDp, a, b = audit_case
    assert (okD == okDp).all() and okD.sum() == 1  # one block fits, the others fall back
    changed = np.flatnonzero(np.any(WD[okD] != WDp[okDp], axis=1))
    assert changed.size == 1
    assert np.abs(b - a).sum() == 2 * sa.GRID_UNITS  # = the sensitivity p G, attained
    # the spread's sums and the range histograms move by at most their sensitivities
    lo, hi = np.array([-1.0, -1.0]), np.array([1.0, 1.0])
    WcD, _ = sa.clamped_sums(WD, okD, lo, hi)
    WcDp, _ = sa.clamped_sums(WDp, okDp, lo, hi)
    for c in (np.zeros(2), np.array([1.0, -1.0]), np.array([-0.3, 0.9])):
        d = np.abs(sa.deviation_sums(WcD, c, lo, hi) - sa.deviation_sums(WcDp, c, lo, hi)).sum()
        assert d <= 2 * sa.GRID_UNITS
    # the range's rank distances (utilities of the exponential mechanisms) move by
    # at most 1 per coordinate: one block moves, each count moves by at most one
    centres, scales = sa.range_grids()
    VD, VDp = sa.range_values(WD, okD), sa.range_values(WDp, okDp)
    for j in range(2):
        uD, uDp = _median_distance(VD[:, j], centres), _median_distance(VDp[:, j], centres)
        assert np.abs(uD - uDp).max() == 1 and uD.min() == uDp.min() == 0
        np.testing.assert_array_equal(sa.median_deficits(VD[:, j], centres), uD)
        np.testing.assert_array_equal(sa.median_deficits(VDp[:, j], centres), uDp)
        for c in (0.0, -0.7, 1.0):
            sD, sDp = _scale_distance(VD[:, j], c, scales), _scale_distance(VDp[:, j], c, scales)
            assert np.abs(sD - sDp).max() <= 1 and sD.min() == sDp.min() == 0
            np.testing.assert_array_equal(sa.scale_deficits(VD[:, j], c, scales), sD)


def _cells_distance(x, cuts):
    """Rank distance of each cell between cut points (with the two end cells)
    to k // 2, written independently of the library: 0 when the cell holds the
    (k // 2)-th smallest value, else how many values it misses by."""
    k, T = x.size, x.size // 2
    below = [0] + [int((x <= c).sum()) for c in cuts] + [k]  # counts at or below the cuts
    return np.array([max(0, below[i] - T, T - below[i + 1]) for i in range(len(cuts) + 1)])


def _median_distance(v, centres):
    return _cells_distance(v, centres)


def _scale_distance(v, c, scales):
    return _cells_distance(np.abs(v - c), scales)


def test_release_noises_exactly_the_audited_sums(audit_case):
    """The whole release, on D and D' with one seed, publishes the audited sums plus
    one and the same noise draw (so the audit below is of the released values)."""
    D, Dp, WD, okD, WDp, okDp, a, b = audit_case
    got = []
    for data in (D, Dp):
        rel = dpm.dp_ols("y ~ x", data, epsilon=AUDIT_EPS, bounds={"x": (0, 1), "y": (-10, 10)},
                         method="sample-aggregate", blocks=AUDIT_K, random_state=AUDIT_SEED,
                         param_bounds=AUDIT_PB).release
        got.append(np.rint((rel.working - rel.lo) / (rel.hi - rel.lo)
                           * AUDIT_K * sa.GRID_UNITS).astype(np.int64))
    assert ((got[0] - a) == (got[1] - b)).all()
    assert not (got[0] == got[1]).all()


def _mean_release(eps_m, factor=1.0):
    cache = {}

    def fn(data, seed):
        key = id(data)
        if key not in cache:
            W, ok = _block_matrix(data)
            sums = sa.clamped_sums(W, ok, np.array([-1.0, -1.0]), np.array([1.0, 1.0]))[1]
            # the release's p + 1 sums: the two coordinates and the failed blocks (units G)
            cache[key] = np.concatenate([sums, [int((~ok).sum()) * sa.GRID_UNITS]])
        exact = cache[key]
        noisy = exact + discrete_laplace(seed, factor * sa.unit_epsilon(eps_m, 3), 3)
        return np.arange(3, dtype=np.uint64), noisy

    return fn


def _with_failures(a, b, okD, okDp):
    """The exact sums of D and D' with the failed blocks' count (units G) appended."""
    return (np.concatenate([a, [int((~okD).sum()) * sa.GRID_UNITS]]),
            np.concatenate([b, [int((~okDp).sum()) * sa.GRID_UNITS]]))


def _events(a, b):
    d = b - a
    s = np.sign(d)
    ev = {}
    for j in range(2):
        ev[f"sum {j} >= far"] = lambda V, j=j: s[j] * (V[:, j] - a[j]) >= abs(d[j])
        ev[f"sum {j} <= near"] = lambda V, j=j: s[j] * (V[:, j] - a[j]) <= 0
    proj = lambda V: ((V - a) @ d) / (d @ d)  # noqa: E731
    for t in (0.0, 1.0, 1.5):
        ev[f"P >= {t:g}"] = lambda V, t=t: proj(V) >= t
    ev["both far"] = lambda V: (s * (V - a) >= np.abs(d)).all(axis=1)
    return ev


def test_audit_of_the_mean_never_exceeds_its_epsilon(audit_case):
    D, Dp, WD, okD, WDp, okDp, a, b = audit_case
    eps_m = AUDIT_EPS * (1 - sa.SPREAD_SHARE)
    events = _events(*_with_failures(a, b, okD, okDp))
    result = privacy_audit(_mean_release(eps_m), D, Dp, [0, 1, 2], events, R=AUDIT_R,
                           seed_base=7_000_000, family_alpha=1e-3)
    print("\n" + format_audit("sample-aggregate mean", result, eps_m))
    assert result.max_lower_bound <= eps_m, result.best()
    # single sums: loss exactly eps_unit G / 2 = eps_m / 3 (each coordinate is a third of
    # the (p + 1) G the release charges: p = 2 coordinates and the failed blocks' count)
    q = math.exp(-sa.unit_epsilon(eps_m, 3) / 2)
    loss = sa.unit_epsilon(eps_m, 3) * sa.GRID_UNITS / 2
    assert loss == pytest.approx(eps_m / 3)
    z = stats.norm.isf(1e-3 / len(result.bounds))
    for bnd in result.bounds:
        if bnd.event.startswith("sum") and (bnd.direction == "D'/D") == bnd.event.endswith("far"):
            margin = tightness_margin(1 / (1 + q), math.exp(-loss) / (1 + q), AUDIT_R,
                                      result.alpha_each, z)
            assert loss - margin <= bnd.lower_bound <= loss, bnd
    # both coordinates far: the 2 G of the (p + 1) G charged (this pair's block fits on
    # both sides, so its failure count does not move), a loss of 2 eps_m / 3, reached
    # within the audit's margin for that event (two independent coordinates)
    best = max(bd.lower_bound for bd in result.bounds if bd.event == "both far")
    p_num, p_den = (1 / (1 + q)) ** 2, (math.exp(-loss) / (1 + q)) ** 2
    margin = tightness_margin(p_num, p_den, AUDIT_R, result.alpha_each, z)
    assert 2 * loss - margin <= best <= 2 * loss


def test_audit_flags_a_mechanism_with_four_times_the_epsilon(audit_case):
    D, Dp, WD, okD, WDp, okDp, a, b = audit_case
    eps_m = AUDIT_EPS * (1 - sa.SPREAD_SHARE)
    result = privacy_audit(_mean_release(eps_m, factor=4.0), D, Dp, [0, 1, 2],
                           _events(*_with_failures(a, b, okD, okDp)),
                           R=AUDIT_R, seed_base=8_000_000, family_alpha=1e-3)
    assert result.max_lower_bound > eps_m, result.best()


# The private range (step 4) on one coordinate of k = 10 blocks: nine estimates
# at 0 and one moved from one end of the public grid to the other; the two
# mechanisms (median, then MAD about it) at e = 1 each: eps_r = 2.
RANGE_STATIC = np.zeros(9)
RANGE_EPS = 2.0
RANGE_R = 2400


def _range_pair():
    return (np.append(RANGE_STATIC, -sa.RANGE_LIMIT)[:, None],
            np.append(RANGE_STATIC, sa.RANGE_LIMIT)[:, None])


def _range_release(eps_r):
    def fn(W, seed):
        ok = np.ones(W.shape[0], bool)
        lo, hi, cells = sa._private_range(W, ok, eps_r, SeededBits(np.random.default_rng(seed)))
        med, mad = sa.range_outputs()
        assert np.allclose([lo[0], hi[0]], np.clip(
            med[cells[0, 0]] + sa.RANGE_WIDEN * mad[cells[0, 1]] * np.array([-1, 1]),
            -sa.RANGE_LIMIT, sa.RANGE_LIMIT))
        return np.arange(2, dtype=np.uint64), cells[0]

    return fn


def _range_law(v, e):
    """The exact law of the released (median cell, MAD cell), written
    independently: P(cell) ~ exp(-e d / 2), the MAD's about the released
    median cell's value (its midpoint; the grid's end for an end cell)."""
    centres, scales = sa.range_grids()
    pm = np.exp(-e / 2 * _median_distance(v, centres))
    mids = np.concatenate([[centres[0]], (centres[:-1] + centres[1:]) / 2, [centres[-1]]])
    k, T = v.size, v.size // 2
    dist = np.sort(np.abs(v[None, :] - mids[:, None]), axis=1)
    below = np.stack([np.searchsorted(row, scales, side="right") for row in dist])
    below = np.column_stack([np.zeros(len(mids), int), below, np.full(len(mids), k)])
    ds = np.maximum(0, np.maximum(below[:, :-1] - T, T - below[:, 1:]))
    ps = np.exp(-e / 2 * ds)
    return (pm / pm.sum())[:, None] * ps / ps.sum(axis=1, keepdims=True)


def _range_events():
    """Events on the released (median, MAD) indices: thresholds, and the level
    sets of the exact likelihood ratio (the most revealing events)."""
    (WD, WDp) = _range_pair()
    PD, PDp = _range_law(WD[:, 0], 1.0), _range_law(WDp[:, 0], 1.0)
    centres, scales = sa.range_grids()
    med, mad = sa.range_outputs()
    ev = {"median < 0": lambda V: med[V[:, 0]] < 0,
          "median >= 1": lambda V: med[V[:, 0]] >= 1,
          "MAD >= 4": lambda V: mad[V[:, 1]] >= 4,
          "median < 0, MAD >= 4": lambda V: (med[V[:, 0]] < 0) & (mad[V[:, 1]] >= 4)}
    theory = {}
    for name, (A, B) in (("D/D' top", (PD, PDp)), ("D'/D top", (PDp, PD))):
        ratio = np.log(A / B)
        for share in (0.05, 0.2, 0.5):
            order = np.argsort(-ratio, axis=None)
            n_in = int(np.searchsorted(np.cumsum(A.ravel()[order]), share)) + 1
            mask = np.zeros(A.size, bool)
            mask[order[:n_in]] = True
            mask = mask.reshape(A.shape)
            ev[f"{name} {share:g}"] = lambda V, m=mask: m[V[:, 0], V[:, 1]]
    Ix, Jx = np.meshgrid(np.arange(PD.shape[0]), np.arange(PD.shape[1]), indexing="ij")
    V = np.column_stack([Ix.ravel(), Jx.ravel()])
    for name, f in ev.items():
        m = f(V)
        theory[name] = (float(PD.ravel()[m].sum()), float(PDp.ravel()[m].sum()))
    return ev, theory


@pytest.fixture(scope="module")
def range_events():
    return _range_events()


def test_range_mechanism_follows_its_exact_law(range_events):
    """The released median's and MAD's frequencies against the exact law (chi-square)."""
    from tests.support.audit_tools import pooled_chisquare

    WD, _ = _range_pair()
    fn = _range_release(RANGE_EPS)
    V = np.array([fn(WD, 90_000 + s)[1] for s in range(1000)])
    law = _range_law(WD[:, 0], 1.0)
    for axis, marg in ((0, law.sum(axis=1)), (1, law.sum(axis=0))):
        obs = np.bincount(V[:, axis], minlength=marg.size)
        assert pooled_chisquare(obs, marg).pvalue > 1e-4


def test_audit_of_the_range_never_exceeds_its_epsilon(range_events):
    events, theory = range_events
    WD, WDp = _range_pair()
    result = privacy_audit(_range_release(RANGE_EPS), WD, WDp, [0, 1], events, R=RANGE_R,
                           seed_base=9_000_000, family_alpha=1e-3)
    print("\n" + format_audit("sample-aggregate range", result, RANGE_EPS))
    assert result.max_lower_bound <= RANGE_EPS, result.best()
    # tight where the exact law says so: the most revealing event's bound within
    # the audit's own margin of its exact loss, and that loss a large part of eps_r
    z = stats.norm.isf(1e-3 / len(result.bounds))
    best_th = 0.0
    for bnd in result.bounds:
        pD, pDp = theory[bnd.event]
        num, den = (pD, pDp) if bnd.direction == "D/D'" else (pDp, pD)
        loss = math.log(num / den)
        assert loss <= RANGE_EPS
        if loss > 0.5 and num > 0.04:
            best_th = max(best_th, loss)
            margin = tightness_margin(num, den, RANGE_R, result.alpha_each, z)
            assert loss - margin <= bnd.lower_bound, (bnd, loss, margin)
    # more than one mechanism's epsilon (RANGE_EPS / 2): the two compose
    assert best_th > 0.55 * RANGE_EPS


def test_audit_flags_a_range_with_32_times_the_epsilon():
    """A broken range (each mechanism at 32 e) is flagged.  The pair: 11 blocks,
    five at -1 and five at +1, the moved one at -8 (D) or +8 (D'): the median
    cell is the one holding -1 in D and any cell from -1 to +1 in D'.  "median
    > -1" has probability about 257 exp(-e / 2) / (1 + 257 exp(-e / 2)) on D
    and about 1 on D': its loss exceeds eps_r = 2 only for large e (the
    median is robust), and the same audit must not flag the correct range."""
    static = np.array([-1.0] * 5 + [1.0] * 5)
    WD = np.append(static, -sa.RANGE_LIMIT)[:, None]
    WDp = np.append(static, sa.RANGE_LIMIT)[:, None]
    med, _ = sa.range_outputs()
    events = {"median > -1": lambda V: med[V[:, 0]] > -1 + sa.RANGE_STEP,
              "median < 1": lambda V: med[V[:, 0]] < 1 - sa.RANGE_STEP}
    for factor, flagged in ((1, False), (32, True)):
        result = privacy_audit(_range_release(factor * RANGE_EPS), WD, WDp, [0, 1], events,
                               R=500, seed_base=9_500_000, family_alpha=1e-3)
        assert (result.max_lower_bound > RANGE_EPS) == flagged, (factor, result.best())


# ---------------------------------------------------------------------------
# 4. refusals before any noise, charge or partition draw; the caller's data
# ---------------------------------------------------------------------------
class NoiseDrawn(Exception):
    pass


REFUSALS = {
    "missing bound": ("ols", dict(bounds={"y": (-10, 20)}), "'x'"),
    "undeclared level": ("ols", dict(levels=dict(LEVELS, g=["u", "v"])), "'g'"),
    "blocks=1": ("ols", dict(blocks=1), "blocks"),
    "blocks=2.5": ("ols", dict(blocks=2.5), "blocks"),
    "blocks=True": ("ols", dict(blocks=True), "blocks"),
    "too many blocks": ("ols", dict(blocks=500), "blocks=500"),
    "param_bounds missing one": ("ols", dict(param_bounds={"x": (-1, 1)}), "Intercept"),
    "param_bounds unknown name": ("ols", dict(param_bounds={"nope": (-1, 1)}), "nope"),
    "param_bounds reversed": ("ols", dict(param_bounds=(1, -1)), "low < high"),
    "param_bounds not a pair": ("ols", dict(param_bounds="wide"), "pair"),
    "q outside (0, 1)": ("quantreg", dict(q=1.5), "q must"),
    "q a list": ("quantreg", dict(q=[0.25, 0.5]), "q must"),
    "bins": ("ols", dict(bins=5), "bins"),
    "unknown option": ("ols", dict(threshold_A=0.4), "threshold_A"),
    "bias_correction": ("ols", dict(bias_correction="full"), "bias_correction"),
    "firth for ols": ("ols", dict(bias_correction="firth"), "firth"),
    "missing='raise'": ("ols", dict(missing="raise"), "'x'"),
    "epsilon 0": ("ols", dict(epsilon=0.0), "epsilon must be > 0"),
    "logit 3 levels": ("logit", dict(levels=dict(LEVELS, yb=[0, 1, 2])), "yb"),
    "over budget": ("ols", dict(epsilon=20.0), "accountant"),
}


@pytest.mark.parametrize("case", list(REFUSALS))
def test_refusals_come_before_the_charge_and_the_noise(monkeypatch, case):
    family, kw, match = REFUSALS[case]
    monkeypatch.setattr(sa, "discrete_laplace", lambda *a, **k: (_ for _ in ()).throw(NoiseDrawn()))
    df = _frame(200)
    if case == "missing='raise'":
        df.loc[4, "x"] = np.nan
    before = df.copy(deep=True)
    rng = np.random.default_rng(5)
    state = rng.bit_generator.state
    acct = dpm.Accountant(10.0)
    with pytest.raises((DPModelsError, ValueError, dpm.BudgetExceededError), match=match):
        _make(family, df, random_state=rng, accountant=acct, **kw)
    assert acct.spent == 0 and rng.bit_generator.state == state
    pd.testing.assert_frame_equal(df, before)


def test_refusal_check_would_see_noise(monkeypatch):
    monkeypatch.setattr(sa, "discrete_laplace", lambda *a, **k: (_ for _ in ()).throw(NoiseDrawn()))
    acct = dpm.Accountant(10.0)
    with pytest.raises(NoiseDrawn):
        _make("ols", _frame(200), accountant=acct, param_bounds=(-9, 9))
    assert acct.spent == 1.0


# ---------------------------------------------------------------------------
# 5. neighbours publish the same things
# ---------------------------------------------------------------------------
_NUM = re.compile(r"-?\d[\d,]*\.?\d*(?:e[-+]?\d+)?")


def _mask(text: str) -> str:
    """Numbers masked (they are computed from noisy outputs), and the column
    widths they set (runs of spaces and rules) collapsed."""
    return re.sub(r"([ =-])\1+", r"\1", _NUM.sub("#", text))


def _published(family, data, **kw) -> dict:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model = _make(family, data, random_state=13, **kw)
        res = model.fit()
        text = res.summary().as_text()
        html = res.summary().as_html()
    rep = asdict(res.privacy)
    if rep.get("outside_bounds"):  # the noisy counts of rows outside the bounds (issue 43)
        rep["outside_bounds"].pop("counts")
    params = pd.DataFrame(res.params)
    return {
        "report": rep, "report text": _mask(str(res.privacy)),
        "params": (list(params.index), list(params.columns), str(params.dtypes.tolist())),
        "bse": list(pd.DataFrame(res.bse).index),
        "conf_int": np.shape(res.conf_int()), "names": model.release.names,
        "summary": _mask(re.sub(r"Ranges:.*\n(\s{10,}.*\n)*", "", text)), "html": len(html) > 0,
        "repr": _mask(repr(model)), "nobs": res.nobs,
        "warnings": sorted((w.category.__name__, _mask(str(w.message))) for w in caught),
    }


NEIGHBOURS = {
    "missing x": lambda df: df.assign(x=df.x.where(df.index != 9)),
    "level moved": lambda df: df.assign(g=df.g.where(df.index != 9, "w")),
    "row at a bound": lambda df: df.assign(y=df.y.where(df.index != 9, 1e6)),
    "response flipped": lambda df: df.assign(yb=df.yb.where(df.index != 9, 1 - df.yb)),
}


@pytest.mark.parametrize("family,pb", [("ols", None), ("logit", (-4.0, 4.0)),
                                        ("mnlogit", None)])
def test_neighbours_publish_the_same_metadata(family, pb):
    base = _frame(300)
    a = _published(family, base, param_bounds=pb)
    assert a["names"]
    for kind, change in NEIGHBOURS.items():
        b = _published(family, change(base), param_bounds=pb)
        diff = {k: (a[k], b[k]) for k in a if a[k] != b[k]}
        assert not diff, f"{family}, {kind}: {diff}"


# ---------------------------------------------------------------------------
# 6. the contract's properties
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("family", list(FAMILIES))
def test_results_behave_like_statsmodels_results(family):
    df = _frame(600)
    before = df.copy(deep=True)
    acct = dpm.Accountant(1.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", dpm.ReleaseWarning)
        model = _make(family, df, accountant=acct, param_bounds=(-5.0, 5.0))
    res = model.fit()
    rep = res.privacy
    assert rep.private and rep.epsilon == 1.0 and rep.seeded and rep.n == 600
    assert all(v for _, v in rep.rows())
    smry = res.summary()
    for text in (smry.as_text(), smry.as_html(), smry.as_latex()):
        assert "Differential privacy" in text and "Blocks" in text
    ci = np.asarray(res.conf_int()).reshape(-1, 2)
    p = np.asarray(res.params).ravel(order="F") if family == "mnlogit" \
        else np.asarray(res.params)
    if family != "mnlogit":
        assert (ci[:, 0] < p).all() and (p < ci[:, 1]).all()
    assert np.all(np.asarray(res.bse) > 0) and np.all(np.asarray(res.pvalues) <= 1)
    pred = res.predict(df.iloc[:5])
    assert len(pred) == 5
    # a fit on the release is free and identical
    again = FAMILIES[family][0](FAMILIES[family][1], model.release, accountant=acct).fit()
    np.testing.assert_array_equal(np.asarray(again.params), np.asarray(res.params))
    assert acct.spent == 1.0 and len(acct.ledger) == 1
    pd.testing.assert_frame_equal(df, before)


def test_quantreg_fit_refuses_another_quantile():
    res = _make("quantreg", _frame(300), param_bounds=(-5, 5))
    with pytest.raises(DPModelsError, match="q=0.3"):
        res.fit(q=0.5)


def test_normal_laplace_law():
    rng = np.random.default_rng(0)
    x = rng.normal(0, 1.0, 400_000) + rng.laplace(0, 0.7, 400_000)
    q = sa.normal_laplace_quantile(1.0, 0.7, 0.975)
    # the empirical tail at the exact quantile: 2.5% up to 4 binomial sds
    assert abs((x > q).mean() - 0.025) < 4 * math.sqrt(0.025 * 0.975 / x.size)
    assert sa.normal_laplace_quantile(0.0, 1.0, 0.975) == pytest.approx(math.log(20))


# ---------------------------------------------------------------------------
# 7. coverage (small; benchmarks/sample_aggregate.py runs the long one)
# ---------------------------------------------------------------------------
def test_intervals_cover_at_95_percent():
    """OLS y = 1 + 2x + e on 4,000 rows, 800 blocks, public range (-5, 5),
    epsilon 1: 40 releases x 2 coefficients.  Coverage at least 95% minus
    three binomial standard errors; the standard errors at least 0.8x the
    estimates' spread (40 releases: its relative sd is 11%) and at most 2x
    (the spread bound's noise at k = 800 predicts about 1.5x)."""
    R, n = 40, 4000
    hits, est, se = [], [], []
    for r in range(R):
        rng = np.random.default_rng(1000 + r)
        x = rng.uniform(0, 1, n)
        df = pd.DataFrame({"x": x, "y": 1 + 2 * x + rng.normal(0, 1, n)})
        res = dpm.dp_ols("y ~ x", df, epsilon=1.0, bounds={"x": (0, 1), "y": (-5, 8)},
                         method="sample-aggregate", blocks=800, param_bounds=(-5, 5),
                         random_state=r).fit()
        ci = np.asarray(res.conf_int())
        hits += list((ci[:, 0] <= [1, 2]) & ([1, 2] <= ci[:, 1]))
        est.append(np.asarray(res.params))
        se.append(np.asarray(res.bse))
    cover = np.mean(hits)
    assert cover >= 0.95 - 3 * math.sqrt(0.95 * 0.05 / len(hits)), cover
    ratio = np.mean(se, axis=0) / np.std(est, axis=0, ddof=1)
    assert ((0.8 < ratio) & (ratio < 2.0)).all(), ratio
