"""Private feature selection (PRIVATEKD, :mod:`dpmodels.mechanisms.selection`) and the
projected-histogram models (``dp_logit`` / ``dp_mnlogit`` with ``select=``,
:mod:`dpmodels.models.projected`).

What is checked
---------------
* The O(k d n) partition-refinement score equals a brute-force count of the
  pairs told apart (every subset of a small random data set).
* The exact sampler: ``exponential_choice`` against the exact law (chi-square),
  and the whole of PRIVATEKD with k = 2 against the law of its sequence of
  choices computed by brute force.
* ``score_scale`` satisfies ``4 k r (N-1) <= epsilon`` in rational arithmetic.
* Empirical audit (PRIVACY.md, "How we check it") on the worst-case neighbours
  of the exponential mechanism: one row moved so that the first candidate's score
  rises by the sensitivity 2(N-1) while every other candidate's falls by as much.
  The loss of "candidate 0 chosen first" never exceeds epsilon, comes within the
  Clopper-Pearson margin of its exact value (0.95 epsilon), and a mechanism with
  three times the scale is flagged.
* Neighbours (rule 5): the selection's report and the projected model's
  published metadata are identical on replace-one neighbours with the same seed,
  apart from values computed from the noisy outputs (the selection itself, counts).
* Bad inputs and budgets: refused before any noise is drawn or budget charged;
  the split adds up to epsilon exactly; an accountant is charged both parts.
* epsilon = inf: the greedy selection, flagged NOT PRIVATE, and the projected
  logit equals statsmodels on the restricted formula.
"""

from __future__ import annotations

import itertools
import math
import warnings
from dataclasses import asdict
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest
import statsmodels.formula.api as smf

import dpmodels as dpm
from dpmodels.data.clipping import CLIP_SHARE
from dpmodels.models.projected import ProjectedReport, restrict_formula
from dpmodels.core.randomness import random_source
from dpmodels.mechanisms.selection import (
    _all_undiscerned,
    estimate_gamma,
    estimate_k,
    exponential_choice,
    private_kd,
    score_scale,
)

from tests.support.audit_tools import ALPHA, loss_lower_bound, pooled_chisquare, tightness_margin

# ---- reference: brute force -------------------------------------------------------------


def _pairs_discerned(codes, f, subset) -> int:
    """|pi(S) ∩ pi(f)| by enumerating ordered pairs."""
    n = f.size
    total = 0
    for i in range(n):
        for j in range(n):
            if f[i] != f[j] and any(codes[a][i] != codes[a][j] for a in subset):
                total += 1
    return total


def _small_data(seed=0, n=14, m=4, s=3, q=2):
    rng = np.random.default_rng(seed)
    codes = [rng.integers(0, s, n).astype(np.int64) for _ in range(m)]
    f = rng.integers(0, q, n).astype(np.int64)
    return codes, [s] * m, f, q


def test_partition_refinement_score_equals_brute_force():
    codes, sizes, f, q = _small_data()
    n = f.size
    total_f = n * n - int((np.bincount(f) ** 2).sum())
    for r in range(0, 3):
        for S in itertools.combinations(range(4), r):
            blocks = np.zeros(n, np.int64)
            for a in S:  # the partition of S
                blocks = np.unique(blocks * 3 + codes[a], return_inverse=True)[1].ravel()
            nb = int(blocks.max()) + 1
            left = [a for a in range(4) if a not in S]
            w = _all_undiscerned(blocks, nb, codes, sizes, f, q, left)
            for a, wa in zip(left, w):
                assert total_f - wa == _pairs_discerned(codes, f, S + (a,)), (S, a)


# ---- the sampler --------------------------------------------------------------------------


def test_exponential_choice_has_the_exact_law():
    deficits = np.array([0, 1, 2, 5, 9, 0])
    r = 0.4
    bits = random_source(11)
    draws = np.array([exponential_choice(bits, deficits, r) for _ in range(6000)])
    probs = np.exp(-r * deficits)
    probs /= probs.sum()
    chi = pooled_chisquare(np.bincount(draws, minlength=deficits.size), probs)
    assert chi.pvalue > ALPHA, chi


def _exact_sequence_law(codes, f, q, k, r):
    """P(sequence of choices) of PRIVATEKD by brute force."""
    m = len(codes)
    law = {}
    for seq in itertools.permutations(range(m), k):
        p = 1.0
        for i, a in enumerate(seq):
            S = seq[:i]
            left = [b for b in range(m) if b not in S]
            u = np.array([_pairs_discerned(codes, f, S + (b,)) for b in left], float)
            w = np.exp(r * (u - u.max()))
            p *= w[left.index(a)] / w.sum()
        law[seq] = p
    return law


def test_private_kd_two_steps_have_the_exact_law():
    codes, sizes, f, q = _small_data(seed=3, n=10, m=4)
    r = 0.15
    law = _exact_sequence_law(codes, f, q, 2, r)
    seqs = list(law)
    bits = random_source(5)
    counts = dict.fromkeys(seqs, 0)
    for _ in range(2000):
        counts[tuple(private_kd(codes, sizes, f, q, 2, r, bits))] += 1
    chi = pooled_chisquare(np.array([counts[s] for s in seqs]), np.array([law[s] for s in seqs]))
    assert chi.pvalue > ALPHA, chi


@pytest.mark.parametrize("epsilon", [1e-9, 0.1, 1.0, 1 / 3, 7.3, 1e6])
@pytest.mark.parametrize("k,n", [(1, 2), (3, 1000), (7, 12345), (40, 10**9)])
def test_score_scale_keeps_the_loss_bound_exactly(epsilon, k, n):
    r = score_scale(epsilon, k, n)
    assert Fraction(r) * 4 * k * (n - 1) <= Fraction(epsilon)
    assert r == pytest.approx(epsilon / (4 * k * n), rel=1e-12)


# ---- the empirical audit -----------------------------------------------------------------

AUDIT_N, AUDIT_M, AUDIT_EPS, AUDIT_R = 40, 10, 4.0, 5000


def _audit_pair():
    """D: row 0 has f = 1 and every candidate but the first = 1; D': row 0 has
    only the first candidate = 1.  All other rows are 0 everywhere."""
    def make(prime):
        codes = [np.zeros(AUDIT_N, np.int64) for _ in range(AUDIT_M + 1)]
        f = np.zeros(AUDIT_N, np.int64)
        f[0] = 1
        if prime:
            codes[0][0] = 1
        else:
            for c in codes[1:]:
                c[0] = 1
        return codes, f
    return make(False), make(True)


def _first_choices(data, r, seed, R):
    codes, f = data
    bits = random_source(seed)
    sizes = [2] * len(codes)
    return np.array([private_kd(codes, sizes, f, 2, 1, r, bits)[0] for _ in range(R)])


def _audit(r, R):
    D, Dp = _audit_pair()
    xD = int(np.count_nonzero(_first_choices(D, r, 101, R) == 0))
    xDp = int(np.count_nonzero(_first_choices(Dp, r, 202, R) == 0))
    xD_not, xDp_not = R - xD, R - xDp
    alpha_each = 1e-3 / 8  # 2 events x 2 directions, 2 CP bounds each
    bounds = {
        ("first", "D'/D"): loss_lower_bound(xDp, xD, R, alpha_each),
        ("first", "D/D'"): loss_lower_bound(xD, xDp, R, alpha_each),
        ("other", "D/D'"): loss_lower_bound(xD_not, xDp_not, R, alpha_each),
        ("other", "D'/D"): loss_lower_bound(xDp_not, xD_not, R, alpha_each),
    }
    return bounds, alpha_each


def test_audit_of_the_selection_never_exceeds_epsilon_and_is_tight():
    n, M, eps = AUDIT_N, AUDIT_M, AUDIT_EPS
    r = score_scale(eps, 1, n)
    x = r * 2 * (n - 1)  # the sensitivity, in units of the score
    p_D, p_Dp = 1 / (1 + M * math.exp(x)), 1 / (1 + M * math.exp(-x))
    theory = math.log(p_Dp / p_D)
    assert 0.8 * eps < theory <= eps * (n - 1) / n  # near the bound of Theorem 1
    bounds, alpha_each = _audit(r, AUDIT_R)
    assert max(bounds.values()) <= eps, bounds
    margin = tightness_margin(p_Dp, p_D, AUDIT_R, alpha_each, 3.0)
    assert bounds[("first", "D'/D")] >= theory - margin, (bounds, theory, margin)


def test_audit_flags_a_selection_with_three_times_the_epsilon():
    r = 3 * score_scale(AUDIT_EPS, 1, AUDIT_N)
    bounds, _ = _audit(r, 1500)
    assert max(bounds.values()) > AUDIT_EPS, bounds


# ---- the public function: data, reports, neighbours ------------------------------------------


def _frame(n=600, seed=0):
    rng = np.random.default_rng(seed)
    df = pd.DataFrame({"x1": rng.uniform(0, 1, n), "x2": rng.uniform(0, 1, n),
                       "x3": rng.uniform(0, 1, n),
                       "g": rng.choice(["a", "b", "c"], n), "h": rng.integers(0, 2, n)})
    eta = 4 * (df["x1"] - 0.5) + 0.8 * (df["g"] == "b")
    df["y"] = (rng.random(n) < 1 / (1 + np.exp(-eta))).astype(int)
    df["yc"] = np.where(df["x1"] < 0.33, "lo", np.where(rng.random(n) < 0.5, "mid", "hi"))
    return df


BOUNDS = {"x1": (0, 1), "x2": (0, 1), "x3": (0, 1)}
LEVELS = {"y": [0, 1], "g": ["a", "b", "c"], "h": [0, 1], "yc": ["lo", "mid", "hi"]}
CANDS = ["x1", "x2", "x3", "g", "h"]


def test_select_features_finds_the_signal_and_reports():
    df = _frame(2000)
    sel = dpm.select_features(df, "y", CANDS, k=1, epsilon=2.0, bounds=BOUNDS, levels=LEVELS,
                              bins=4, random_state=0)
    assert sel.selected == ("x1",)
    rep = sel.report
    assert rep.private and rep.epsilon == 2.0 and rep.seeded
    # eps' = the steps' part / (4k): epsilon less the outside counts' share (issue 43)
    steps = dict(rep.split)["the selection's steps (PRIVATEKD)"]
    assert steps == pytest.approx(2.0 * (1 - CLIP_SHARE), rel=1e-12)
    assert rep.sensitivity == 2 * (len(df) - 1) and rep.epsilon_step == steps / 4
    assert rep.score_scale == score_scale(steps, 1, len(df))
    assert set(rep.dropped) == set(CANDS) - {"x1"}
    text = str(rep)
    assert "PRIVATEKD" in text and "x1" in text
    assert not dpm.select_features(df, "y", CANDS, k=1, epsilon=1.0, bounds=BOUNDS,
                                   levels=LEVELS).report.seeded  # OS entropy by default


def test_k_and_gamma_are_functions_of_public_inputs():
    assert estimate_k(600, 2, [2, 2, 2, 3, 2]) == estimate_k(600, 2, [2, 2, 2, 3, 2])
    k = estimate_k(5000, 3, [8] * 10)
    assert 1 <= k < 10
    g = estimate_gamma(5000, 3, [8] * 10, k)
    assert 0.05 <= g <= 0.95
    assert estimate_gamma(5000, 3, [8] * 3, 3) == 1.0  # nothing to choose
    # finer candidates tell more pairs apart: fewer of them reach 90% of U(A)
    assert estimate_k(2000, 2, [2] * 8) > estimate_k(2000, 2, [16] * 8)


def _neighbour(df):
    nb = df.copy()
    nb.loc[0, ["x1", "x2", "g", "h", "y", "yc"]] = [1.0, 0.0, "c", 1 - nb.loc[0, "h"],
                                                    1 - nb.loc[0, "y"], "hi"]
    return nb


NEIGHBOUR_KINDS = {
    "moved": _neighbour,
    "missing value": lambda d: d.assign(x2=d["x2"].where(d.index != 3)),
    "beyond a bound": lambda d: d.assign(x1=d["x1"].where(d.index != 5, 1e9)),
    "target flipped": lambda d: d.assign(y=np.where(d.index == 7, 1 - d["y"], d["y"])),
    "int column with a missing value": lambda d: d.assign(
        h=d["h"].astype(float).where(d.index != 2)),
}


@pytest.mark.parametrize("kind", list(NEIGHBOUR_KINDS))
def test_neighbours_give_the_same_selection_report_apart_from_the_selection(kind):
    df = _frame()
    nb = NEIGHBOUR_KINDS[kind](df)
    a = dpm.select_features(df, "y", CANDS, epsilon=1.0, bounds=BOUNDS, levels=LEVELS,
                            random_state=4)
    b = dpm.select_features(nb, "y", CANDS, epsilon=1.0, bounds=BOUNDS, levels=LEVELS,
                            random_state=4)
    da, db = asdict(a.report), asdict(b.report)
    for noisy in ("selected",):
        da.pop(noisy), db.pop(noisy)
    for d in (da, db):  # the noisy counts of rows outside the bounds (issue 43)
        d["outside_bounds"].pop("counts")
    assert da == db


@pytest.mark.parametrize("func,formula", [(dpm.dp_logit, "y ~ x1 + x2 + C(g) + h"),
                                          (dpm.dp_mnlogit, "yc ~ x1 + x3 + C(g)")])
def test_projected_neighbours_publish_the_same_metadata(func, formula):
    df = _frame()
    nb = _neighbour(df)
    out = []
    for data in (df, nb):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            m = func(formula, data, epsilon=1.0, bounds=BOUNDS, levels=LEVELS, select=2,
                     gamma=0.5, random_state=8)
            res = m.fit(cov_type="naive")
        out.append((m, res))
    (ma, ra), (mb, rb) = out
    assert isinstance(ra.privacy, ProjectedReport)
    assert ma.privacy.selected == mb.privacy.selected  # (these seeds: the same selection)
    if ma.privacy.selected == mb.privacy.selected:  # same selection: same everything else
        assert list(pd.DataFrame(ra.params).index) == list(pd.DataFrame(rb.params).index)
        assert list(pd.DataFrame(ra.params).columns) == list(pd.DataFrame(rb.params).columns)
        assert list(ma.cells.columns) == list(mb.cells.columns)
        assert list(ma.cells.dtypes) == list(mb.cells.dtypes)
    ha, hb = asdict(ra.privacy.histogram), asdict(rb.privacy.histogram)
    for noisy in ("released_cells", "noisy_total", "variables", "domain_cells",
                  "expected_spurious_cells"):  # the last three follow the selection
        ha.pop(noisy), hb.pop(noisy)
    assert ha == hb
    assert ra.privacy.split == rb.privacy.split and ra.privacy.gamma == rb.privacy.gamma
    assert ra.privacy.selection.k == rb.privacy.selection.k


# ---- the projected models ------------------------------------------------------------------


def test_projected_logit_split_budget_and_summary():
    df = _frame(1500)
    acct = dpm.Accountant(1.0)
    m = dpm.dp_logit("y ~ x1 + x2 + x3 + C(g) + h", df, epsilon=1.0, bounds=BOUNDS,
                     levels=LEVELS, select=2, gamma=0.6, random_state=1, accountant=acct)
    rep = m.privacy
    (l1, e_p), (l2, e_h) = rep.split
    assert Fraction(e_p) + Fraction(e_h) <= Fraction(1.0) and e_p + e_h == pytest.approx(1.0)
    assert e_h == pytest.approx(0.6) and rep.gamma == 0.6
    assert [s.epsilon for s in acct.ledger] == [e_p, e_h]
    assert rep.selection.epsilon == e_p and rep.histogram.epsilon == e_h
    assert len(rep.selected) == 2 and set(rep.selected) | set(rep.dropped) == {
        "x1", "x2", "x3", "g", "h"}
    res = m.fit(cov_type="naive")
    names = list(res.params.index)
    for dropped in rep.dropped:  # not estimated: absent, not printed as zeros
        assert not any(dropped in nm for nm in names)
    text = res.summary().as_text()
    assert "Dropped:" in text and "not estimated" in text and "Selected:" in text
    assert "0.6 for histogram" in text
    assert res.privacy is rep


def test_projected_summaries_render_in_three_formats():
    df = _frame(800)
    res = dpm.dp_mnlogit("yc ~ x1 + x2 + C(g)", df, epsilon=2.0, bounds=BOUNDS, levels=LEVELS,
                         select=1, gamma=0.5, random_state=3).fit(cov_type="naive")
    for text in (res.summary().as_text(), res.summary().as_html(), res.summary().as_latex(),
                 res.summary2().as_text()):
        assert "Differential privacy" in text and "Selected" in text and "Dropped" in text
    assert res.privacy.rows() and all(v for _, v in res.privacy.rows())


def test_projected_with_a_given_list_spends_nothing_on_selection():
    df = _frame(800)
    acct = dpm.Accountant(1.0)
    m = dpm.dp_logit("y ~ x1 + x2 + C(g)", df, epsilon=1.0, bounds=BOUNDS, levels=LEVELS,
                     select=["x1"], random_state=2, accountant=acct)
    assert m.privacy.selection is None and m.privacy.split == (("histogram of the projection",
                                                                1.0),)
    assert [s.epsilon for s in acct.ledger] == [1.0]
    assert m.formula == "y ~ x1"
    sel = dpm.select_features(df, "y", ["x1", "x2", "g"], k=1, epsilon=0.5, bounds=BOUNDS,
                              levels=LEVELS, random_state=0)
    m2 = dpm.dp_logit("y ~ x1 + x2 + C(g)", df, epsilon=0.5, bounds=BOUNDS, levels=LEVELS,
                      select=sel, random_state=2)
    # the fit depends on the earlier selection too: 0.5 + 0.5 (issue 43, audit item 7)
    assert m2.privacy.selected == sel.selected and m2.privacy.epsilon == 1.0
    assert "earlier private selection" in m2.privacy.selection_source


def test_projected_inf_is_greedy_and_reproduces_statsmodels():
    rng = np.random.default_rng(5)
    n = 800
    df = pd.DataFrame({"a": rng.integers(0, 3, n), "b": rng.integers(0, 2, n),
                       "c": rng.integers(0, 2, n)})
    df["y"] = (rng.random(n) < 0.2 + 0.25 * df["a"]).astype(int)
    lv = {"a": [0, 1, 2], "b": [0, 1], "c": [0, 1], "y": [0, 1]}
    with pytest.warns(dpm.NotPrivateWarning):
        m = dpm.dp_logit("y ~ C(a) + b + c", df, epsilon=math.inf, levels=lv, select=1)
    assert m.privacy.selected == ("a",) and not m.privacy.private
    res = m.fit(cov_type="naive")
    ref = smf.logit("y ~ C(a)", df).fit(disp=0)
    np.testing.assert_allclose(np.asarray(res.params), np.asarray(ref.params), rtol=1e-6)
    assert "NOT PRIVATE" in res.summary().as_text()
    with pytest.warns(dpm.NotPrivateWarning):
        sel = dpm.select_features(df, "y", ["b", "c", "a"], k=2, epsilon=math.inf, levels=lv)
    assert sel.selected[0] == "a" and not sel.report.private


def test_select_none_takes_the_usual_path():
    df = _frame(300)
    m = dpm.dp_logit("y ~ x1", df, epsilon=1.0, bounds=BOUNDS, levels=LEVELS, select=None,
                     random_state=0)
    assert type(m).__name__ == "DPLogit" and m.privacy.epsilon == 1.0


def test_restrict_formula_keeps_terms_of_selected_variables():
    cols = ["y", "a", "b", "g"]
    assert restrict_formula("y ~ a + b + C(g) + a:b", {"a", "g"}, cols, {}, "y") == \
        "y ~ a + C(g)"
    assert restrict_formula("y ~ 0 + a + np.log(b)", {"b"}, cols, {"np": np}, "y") == \
        "y ~ 0 + np.log(b)"


# ---- refusals before any noise or charge ------------------------------------------------------


def _refused(exc, match, call):
    rng = np.random.default_rng(99)
    state = rng.bit_generator.state
    acct = dpm.Accountant(10.0)
    df = _frame(300)
    before = df.copy(deep=True)
    with pytest.raises(exc, match=match):
        call(df, rng, acct)
    assert rng.bit_generator.state == state, "noise was drawn before the refusal"
    assert acct.spent == 0.0
    pd.testing.assert_frame_equal(df, before)


SF = dpm.select_features


@pytest.mark.parametrize("exc,match,call", [
    (dpm.DomainError, "'x2' has no bounds", lambda d, r, a: SF(
        d, "y", CANDS, k=1, epsilon=1.0, bounds={"x1": (0, 1), "x3": (0, 1)}, levels=LEVELS,
        random_state=r, accountant=a)),
    (dpm.DomainError, "target 'x1' must be discrete", lambda d, r, a: SF(
        d, "x1", ["x2"], k=1, epsilon=1.0, bounds=BOUNDS, levels=LEVELS, random_state=r,
        accountant=a)),
    (dpm.UndeclaredLevelError, "'g'", lambda d, r, a: SF(
        d, "y", CANDS, k=1, epsilon=1.0, bounds=BOUNDS, levels=dict(LEVELS, g=["a", "b"]),
        random_state=r, accountant=a)),
    (dpm.UnknownVariableError, "'nope'", lambda d, r, a: SF(
        d, "y", ["x1", "nope"], k=1, epsilon=1.0, bounds=BOUNDS, levels=LEVELS, random_state=r,
        accountant=a)),
    (dpm.DPModelsError, "k=9 must be between 1", lambda d, r, a: SF(
        d, "y", CANDS, k=9, epsilon=1.0, bounds=BOUNDS, levels=LEVELS, random_state=r,
        accountant=a)),
    (ValueError, "epsilon must be > 0", lambda d, r, a: SF(
        d, "y", CANDS, k=1, epsilon=0.0, bounds=BOUNDS, levels=LEVELS, random_state=r,
        accountant=a)),
    (dpm.DPModelsError, "also a candidate", lambda d, r, a: SF(
        d, "y", ["y", "x1"], k=1, epsilon=1.0, bounds=BOUNDS, levels=LEVELS, random_state=r,
        accountant=a)),
    (dpm.BudgetExceededError, "feature selection", lambda d, r, a: SF(
        d, "y", CANDS, k=1, epsilon=11.0, bounds=BOUNDS, levels=LEVELS, random_state=r,
        accountant=a)),
    (dpm.DomainError, "'x3' has no bounds", lambda d, r, a: dpm.dp_logit(
        "y ~ x1 + x3", d, epsilon=1.0, bounds={"x1": (0, 1)}, levels=LEVELS, select=1,
        random_state=r, accountant=a)),
    (dpm.UndeclaredLevelError, "'g'", lambda d, r, a: dpm.dp_logit(
        "y ~ x1 + C(g)", d, epsilon=1.0, bounds=BOUNDS, levels=dict(LEVELS, g=["a", "b"]),
        select=1, random_state=r, accountant=a)),
    (dpm.DPModelsError, "select=5 must be between 1", lambda d, r, a: dpm.dp_logit(
        "y ~ x1 + x2", d, epsilon=1.0, bounds=BOUNDS, levels=LEVELS, select=5, random_state=r,
        accountant=a)),
    (dpm.DPModelsError, "not predictors", lambda d, r, a: dpm.dp_logit(
        "y ~ x1 + x2", d, epsilon=1.0, bounds=BOUNDS, levels=LEVELS, select=["x3"],
        random_state=r, accountant=a)),
    (dpm.DPModelsError, "gamma", lambda d, r, a: dpm.dp_logit(
        "y ~ x1 + x2", d, epsilon=1.0, bounds=BOUNDS, levels=LEVELS, select=1, gamma=1.0,
        random_state=r, accountant=a)),
    (dpm.DPModelsError, "threshold=None", lambda d, r, a: dpm.dp_logit(
        "y ~ x1 + x2", d, epsilon=1.0, bounds=BOUNDS, levels=LEVELS, select=1, threshold=None,
        random_state=r, accountant=a)),
    (dpm.DomainError, "dp_mnlogit", lambda d, r, a: dpm.dp_logit(
        "yc ~ x1 + x2", d, epsilon=1.0, bounds=BOUNDS, levels=LEVELS, select=1,
        random_state=r, accountant=a)),
    (dpm.BudgetExceededError, "projected", lambda d, r, a: dpm.dp_logit(
        "y ~ x1 + x2", d, epsilon=11.0, bounds=BOUNDS, levels=LEVELS, select=1,
        random_state=r, accountant=a)),
    (dpm.DomainTooLargeError, "refused before the selection", lambda d, r, a: dpm.dp_logit(
        "y ~ x1 + x2 + x3", d, epsilon=1.0, bounds=BOUNDS, levels=LEVELS, select=2,
        bins={"x1": 4000, "x2": 4000, "x3": 4}, random_state=r, accountant=a)),
    (dpm.DPModelsError, "method='histogram'", lambda d, r, a: dpm.dp_logit(
        "y ~ x1 + x2", d, epsilon=1.0, bounds=BOUNDS, levels=LEVELS, select=1,
        method="newton", random_state=r, accountant=a)),
    (dpm.DPModelsTypeError, "unexpected keyword", lambda d, r, a: dpm.dp_logit(
        "y ~ x1 + x2", d, epsilon=1.0, bounds=BOUNDS, levels=LEVELS, select=1, nope=3,
        random_state=r, accountant=a)),
    (dpm.DPModelsError, "representatives", lambda d, r, a: dpm.dp_logit(
        "y ~ x1 + x2", d, epsilon=1.0, bounds=BOUNDS, levels=LEVELS, select=1,
        representatives="bad", random_state=r, accountant=a)),
    (dpm.DPModelsError, "raw rows", lambda d, r, a: dpm.dp_logit(
        "y ~ x1 + x2", dpm.release(d, columns=["y", "x1", "x2"], epsilon=1.0, bounds=BOUNDS,
                                   levels=LEVELS, random_state=0), select=1,
        random_state=r, accountant=a)),
], ids=lambda v: v if isinstance(v, str) else "")
def test_refusals_come_before_noise_and_charge(exc, match, call):
    _refused(exc, match, call)


def test_select_features_and_select_count_in_the_engine():
    """select_features counts the selection's cells where the data live (issue 28):
    a Polars LazyFrame gives the pandas frame's choice with the same seed; so does
    select= (the projected model), whose histogram is counted there too."""
    pl = pytest.importorskip("polars")
    rng = np.random.default_rng(3)
    pdf = pd.DataFrame({"x1": rng.uniform(0, 5, 3000), "x2": rng.uniform(0, 5, 3000),
                        "g": rng.choice(["a", "b"], 3000)})
    pdf["y"] = ((pdf.x2 > 2.5) ^ (rng.random(3000) < 0.1)).astype(int)
    kw = dict(epsilon=1.0, bounds={"x1": (0, 5), "x2": (0, 5)},
              levels={"y": [0, 1], "g": ["a", "b"]})
    for seed in range(4):
        a = dpm.select_features(pdf, "y", ["x1", "x2", "g"], k=1, random_state=seed, **kw)
        b = dpm.select_features(pl.from_pandas(pdf).lazy(), "y", ["x1", "x2", "g"], k=1,
                                random_state=seed, **kw)
        assert a.selected == b.selected and a.report == b.report
    for seed in range(2):
        a = dpm.dp_logit("y ~ x1 + x2 + C(g)", pdf, select=1, random_state=seed, **kw)
        b = dpm.dp_logit("y ~ x1 + x2 + C(g)", pl.from_pandas(pdf), select=1,
                         random_state=seed, **kw)
        assert a.privacy.selected == b.privacy.selected
        np.testing.assert_array_equal(a.release.counts, b.release.counts)
        assert a.privacy == b.privacy


@pytest.mark.parametrize("seed", range(6))
def test_private_kd_on_counted_cells_chooses_as_on_the_rows(seed):
    # issue 28: an engine counts the distinct cells where the data live; PRIVATEKD on
    # those cells, each weighted by its count, scores the same integer pair counts, so
    # with the same bits it makes the same choices as on the rows themselves
    from dpmodels.core.randomness import random_source
    from dpmodels.mechanisms.selection import private_kd

    rng = np.random.default_rng(seed)
    n, sizes, q = 3000, [3, 5, 2, 4, 6], 3
    codes = [rng.integers(0, s, n) for s in sizes]
    target = (codes[0] + (codes[2] > 0) + rng.integers(0, 2, n)) % q
    key = np.ravel_multi_index([target] + codes, [q] + sizes)
    cells, counts = np.unique(key, return_counts=True)
    parts = np.unravel_index(cells, [q] + sizes)
    for k, r in ((1, None), (3, None), (2, 0.002), (4, 0.01)):
        rows = private_kd(codes, sizes, target, q, k, r, random_source(seed))
        counted = private_kd([np.asarray(p, np.int64) for p in parts[1:]], sizes,
                             np.asarray(parts[0], np.int64), q, k, r, random_source(seed),
                             weights=counts)
        assert counted == rows, (k, r)
