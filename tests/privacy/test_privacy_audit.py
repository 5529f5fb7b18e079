"""The empirical privacy audit of PRIVACY.md ("How we check it").

``dpmodels.mechanisms.histogram`` is run R times on each of two neighbouring data sets
(same n, one row replaced) that differ in the worst places:

(i)  a row of a busy cell moved into an otherwise empty cell
     (threshold="enhanced": n = 10, t = 0.5*log(10) = 1.15, cut k = 2);
(ii) a row exactly at the upper bound of x vs the same row at the lower
     bound (threshold=1), both cells otherwise empty.

For events on the released values of the two changed cells ("cell present",
"count >= k", and joint events of both cells) the audit computes a lower
confidence bound on the privacy loss log(P_D(E)/P_D'(E)) and its reverse
(Clopper-Pearson, Bonferroni over all bounds at family level 1e-3, see
:func:`tests.support.audit_tools.privacy_audit`).

Why the audit can fail in both directions
-----------------------------------------
Moving one row changes two cells by one each.  With discrete Laplace noise
of scale 2/epsilon a single cell's likelihood ratio is at most exp(epsilon/2);
the full loss epsilon is attained only by joint events of both cells, e.g.
"the gaining cell is released AND the losing cell is not" (both factors are
then exactly exp(epsilon/2); see :func:`two_cell_events`).  Every event's
exact probability under D and D' is computed from the pmf
(:func:`tests.support.audit_tools.exact_event_probability`), so for the correct
mechanism we assert:

* the contract: no lower bound exceeds epsilon;
* validity: no lower bound exceeds the event's exact loss;
* power: every lower bound is within a margin of the exact loss, the margin
  derived from R (Clopper-Pearson width at the expected counts plus
  ``z`` delta-method standard deviations, Bonferroni-corrected; see
  :func:`tests.support.audit_tools.tightness_margin`); in particular the full-loss
  event's bound comes close to epsilon.

The same estimator (same function, same R, same events) must flag two
deliberately broken mechanisms built from the library's pieces: noise on the
observed cells only, and noise of scale 1/epsilon.

With R = 8000 the sharpest full-loss event must reach epsilon - 0.41 in
scenario (i) and epsilon - 0.30 in scenario (ii); its expected lower bound is
about 0.77 and 0.85.

False-failure rate: the family of bounds of one audit exceeds the exact
losses with probability <= 1e-3; the tightness checks fail with probability
about <= 1e-3 (normal approximation of log p-hat, R p >= 200 for every event
kept).  Seeds are fixed, so the outcomes are deterministic.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats

import dpmodels as dpm
from dpmodels.core.budget import split_epsilon
from dpmodels.data.clipping import CLIP_SHARE
from dpmodels.domain.axes import build_domain
from dpmodels.data.counting import count_cells
from dpmodels.core.noise import NoisyCells, discrete_laplace, make_rng, noisy_threshold_sparse
from dpmodels.mechanisms.histogram import DEFAULT_A, resolve_threshold

from tests.support.audit_tools import (
    ABSENT,
    exact_event_probability,
    format_audit,
    privacy_audit,
    tightness_margin,
)

EPS = 1.0
#: The histogram cells' part of EPS: every scenario has a bounded continuous variable, so
#: a release spends CLIP_SHARE of EPS on the noisy counts of rows outside the bounds
#: (dpmodels.data.clipping, audited in tests/data/test_clipped_rows.py) and the cells the rest; the
#: cells' events are audited against their part.
EPS_CELLS = split_epsilon(EPS, [CLIP_SHARE, None])[1]
#: Repetitions per data set.  One release of a 10-row frame takes ~0.6-0.8 ms,
#: so the four correct-mechanism runs (2 scenarios x D, D') take ~20-26 s; the
#: broken mechanisms reuse their exact counts and take ~1 s each.
R = 8_000
FAMILY_ALPHA = 1e-3
#: Events are kept only when, for the correct mechanism, both exact
#: probabilities give >= MIN_EXPECTED expected hits among R repetitions, so
#: that the normal approximation behind the tightness margin is good.
MIN_EXPECTED = 200

LEVELS = {"g": ["u", "v"]}
BOUNDS = {"x": (0.0, 10.0)}
BINS = 5  # x bins of width 2: [0,2) [2,4) [4,6) [6,8) [8,10]


def cell(xbin: int, g: str) -> int:
    """Cell id of (x bin, level): x is the first (most significant) axis."""
    return 2 * xbin + LEVELS["g"].index(g)


def frame(rows) -> pd.DataFrame:
    return pd.DataFrame({"x": [float(r[0]) for r in rows], "g": [r[1] for r in rows]})


# Scenario (i): cell a = (1, u) holds 2 rows in D; D' moves one of them
# (x = 3.9) to (7.1, v), i.e. into cell b = (3, v), empty in D.
ROWS_I = [(2.5, "u"), (3.9, "u"), (0.5, "v"), (1.0, "v"), (1.5, "v"),
          (4.2, "u"), (5.0, "v"), (8.8, "u"), (9.1, "u"), (9.5, "u")]
D_I = frame(ROWS_I)
DP_I = frame([(7.1, "v") if r == (3.9, "u") else r for r in ROWS_I])
SCENARIO_I = dict(
    D=D_I, Dp=DP_I, cells=(cell(1, "u"), cell(3, "v")),
    counts_D=(2, 0), counts_Dp=(1, 1),
    kwargs=dict(columns=["x", "g"], epsilon=EPS, bounds=BOUNDS, levels=LEVELS, bins=BINS,
                threshold="enhanced"),
    k=2,
)

# Scenario (ii): a row exactly at the upper bound (x = 10.0 -> last bin,
# cell a = (4, u), otherwise empty) vs the same row at the lower bound
# (x = 0.0 -> cell b = (0, u), otherwise empty).
ROWS_II = [(10.0, "u"), (0.2, "v"), (1.7, "v"), (2.0, "u"), (3.3, "u"),
           (3.9, "v"), (5.5, "u"), (6.1, "v"), (7.7, "u"), (9.0, "v")]
D_II = frame(ROWS_II)
DP_II = frame([(0.0, "u") if r == (10.0, "u") else r for r in ROWS_II])
SCENARIO_II = dict(
    D=D_II, Dp=DP_II, cells=(cell(4, "u"), cell(0, "u")),
    counts_D=(1, 0), counts_Dp=(0, 1),
    kwargs=dict(columns=["x", "g"], epsilon=EPS, bounds=BOUNDS, levels=LEVELS, bins=BINS,
                threshold=1),
    k=1,
)


# Scenario (iii), the signed release (threshold=None, Lei's Algorithm 1) on the
# data of scenario (i): every cell is released with count + Z; a cell whose
# noisy count is exactly 0 carries no weight and is absent.
SCENARIO_SIGNED = dict(
    D=D_I, Dp=DP_I, cells=(cell(1, "u"), cell(3, "v")),
    counts_D=(2, 0), counts_Dp=(1, 1),
    kwargs=dict(columns=["x", "g"], epsilon=EPS, bounds=BOUNDS, levels=LEVELS, bins=BINS,
                threshold=None),
    k=None,
)

# Scenario (iv), a large domain: x and z cut into 10**6 bins each and g:
# m = 2e12 cells, every one perturbed by the sparse construction (about 60
# spurious cells per release at the fixed threshold 50 and the cells' part of EPS).  A row moves
# between two busy cells at the threshold: a = (x bin 10, z bin 10, u) holds
# 51 rows in D and 50 in D'; b = (x bin 999990, z bin 5, v) the reverse.
# R_BIG repetitions (a release of this domain takes a few ms).
BIG_BINS = 10**6
BIG_BOUNDS = {"x": (0.0, 1.0), "z": (0.0, 1.0)}


def _big_row(xbin, zbin, g):
    return ((xbin + 0.5) / BIG_BINS, (zbin + 0.5) / BIG_BINS, g)


def _big_frame(rows):
    return pd.DataFrame({"x": [r[0] for r in rows], "z": [r[1] for r in rows],
                         "g": [r[2] for r in rows]})


_A_ROW, _B_ROW = _big_row(10, 10, "u"), _big_row(999_990, 5, "v")
D_BIG = _big_frame([_A_ROW] * 51 + [_B_ROW] * 50)
DP_BIG = _big_frame([_A_ROW] * 50 + [_B_ROW] * 51)
R_BIG = 6_000
SCENARIO_BIG = dict(
    D=D_BIG, Dp=DP_BIG,
    cells=((10 * BIG_BINS + 10) * 2 + 0, (999_990 * BIG_BINS + 5) * 2 + 1),
    counts_D=(51, 50), counts_Dp=(50, 51),
    kwargs=dict(columns=["x", "z", "g"], epsilon=EPS, bounds=BIG_BOUNDS, levels=LEVELS,
                bins=BIG_BINS, threshold=50),
    k=50, R=R_BIG,
)


def signed_events() -> dict:
    """Events of the signed release on (a, b); ABSENT stands for the value 0."""
    def val(V, i):
        return np.where(V[:, i] == ABSENT, 0, V[:, i])

    ev = {}
    for j in (1, 2, 3):
        ev[f"a >= {j}"] = lambda V, j=j: val(V, 0) >= j
        ev[f"b >= {j}"] = lambda V, j=j: val(V, 1) >= j
    for j in (1, 0, -1):
        ev[f"a <= {j}"] = lambda V, j=j: val(V, 0) <= j
        ev[f"b <= {j}"] = lambda V, j=j: val(V, 1) <= j
    for jb, ja in ((1, 0), (1, 1), (2, 0), (1, -1)):
        ev[f"b >= {jb} & a <= {ja}"] = lambda V, jb=jb, ja=ja: (val(V, 1) >= jb) & (val(V, 0) <= ja)
        ev[f"a >= {jb + 1} & b <= {ja - 1}"] = (
            lambda V, jb=jb, ja=ja: (val(V, 0) >= jb + 1) & (val(V, 1) <= ja - 1))
    ev["a absent"] = lambda V: V[:, 0] == ABSENT
    ev["b absent"] = lambda V: V[:, 1] == ABSENT
    return ev


ALL_SCENARIOS = {"moved-into-empty": SCENARIO_I, "row-at-bound": SCENARIO_II,
                 "signed": SCENARIO_SIGNED, "large-domain": SCENARIO_BIG}


# --------------------------------------------------------------------------
# release functions: the library's, and broken ones from its pieces
# --------------------------------------------------------------------------
def library_release(**kwargs):
    def fn(data, seed):
        rel = dpm.release(data, random_state=seed, **kwargs)
        return rel.cell_ids, rel.counts

    return fn


def pieces_release(noise, **kwargs):
    """The release pipeline rebuilt from dpmodels' pieces (public domain,
    threshold rule, one counting pass) with a pluggable noise step
    ``noise(rng, epsilon, ids, counts, m, k) -> NoisyCells``.

    The data-dependent but noise-free part (domain, threshold, exact counts)
    is computed once per data set and reused across repetitions: it is
    deterministic, and the audit only needs fresh noise per repetition."""
    names = list(kwargs["columns"])
    eps = kwargs["epsilon"]
    eps_cells = split_epsilon(eps, [CLIP_SHARE, None])[1]  # as dpm.release splits it
    prepared = {}

    def prepare(data):
        n = len(data)
        domain = build_domain(names, {nm: data[nm].dtype for nm in names}, bounds=kwargs["bounds"],
                              levels=kwargs["levels"], bins=kwargs["bins"], n=n, epsilon=eps)
        thr = resolve_threshold(kwargs["threshold"], eps_cells, n, DEFAULT_A)
        exact = count_cells({nm: data[nm] for nm in names}, domain)
        return data, domain.size, thr.k, exact  # data kept alive: its id stays unique

    def fn(data, seed):
        if id(data) not in prepared:
            prepared[id(data)] = prepare(data)
        _, m, k, exact = prepared[id(data)]
        out = noise(make_rng(seed), eps_cells, exact.ids, exact.counts, m, k)
        return out.ids, out.counts

    return fn


def noise_observed_cells_only(rng, epsilon, ids, counts, m, k):
    """BROKEN: perturbs the observed cells only, never releases an empty cell."""
    noisy = counts + discrete_laplace(rng, epsilon, counts.size)
    keep = noisy >= k
    return NoisyCells(ids[keep], noisy[keep])


def noise_scale_one_over_epsilon(rng, epsilon, ids, counts, m, k):
    """BROKEN: discrete Laplace of scale 1/epsilon (ignores sensitivity 2)."""
    return noisy_threshold_sparse(rng, 2 * epsilon, ids, counts, m, k)


# --------------------------------------------------------------------------
# events on the two changed cells
# --------------------------------------------------------------------------
def two_cell_events(k: int) -> dict:
    """Events on V[:, 0] (cell a, loses the row in D') and V[:, 1] (cell b,
    gains it); ABSENT marks a cell not in the release."""
    A, B = 0, 1

    def present(i):
        return lambda V: V[:, i] != ABSENT

    def ge(i, j):
        return lambda V: V[:, i] >= j  # ABSENT is int64 min: never >= j

    def lt(i, j):
        return lambda V: V[:, i] < j  # includes ABSENT (released values are >= k)

    def both(e1, e2):
        return lambda V: e1(V) & e2(V)

    ev = {
        "a present": present(A),
        "b present": present(B),
        "a absent": lambda V: V[:, A] == ABSENT,
        "b absent": lambda V: V[:, B] == ABSENT,
        "b present & a absent": both(present(B), lt(A, k)),
        "a present & b absent": both(present(A), lt(B, k)),
    }
    for j in (k + 1, k + 2, k + 3):
        ev[f"a >= {j}"] = ge(A, j)
        ev[f"b >= {j}"] = ge(B, j)
        ev[f"b >= {j} & a absent"] = both(ge(B, j), lt(A, k))
        ev[f"a >= {j} & b absent"] = both(ge(A, j), lt(B, k))
    for j in (k + 1, k + 2):
        ev[f"b present & a < {j}"] = both(present(B), lt(A, j))
        ev[f"a present & b < {j}"] = both(present(A), lt(B, j))
    return ev


def scenario_events(sc):
    """The event set of a scenario, with exact probabilities under D and D'
    for the correct mechanism; only events with enough expected hits."""
    out, probs = {}, {}
    events = signed_events() if sc["k"] is None else two_cell_events(sc["k"])
    for name, ev in events.items():
        pD = exact_event_probability(ev, sc["counts_D"], sc["k"], EPS_CELLS)
        pDp = exact_event_probability(ev, sc["counts_Dp"], sc["k"], EPS_CELLS)
        reps = sc.get("R", R)
        if min(pD, pDp) * reps >= MIN_EXPECTED and max(pD, pDp) * reps <= reps - MIN_EXPECTED:
            out[name] = ev
            probs[name] = (pD, pDp)
    return out, probs


def _attach_theory(result, probs):
    """Exact loss and tightness margin of every bound of a correct-mechanism audit."""
    z = stats.norm.isf(result.family_alpha / len(result.bounds))
    bounds = []
    for b in result.bounds:
        pD, pDp = probs[b.event]
        p_num, p_den = (pD, pDp) if b.direction == "D/D'" else (pDp, pD)
        theory = math.log(p_num / p_den)
        margin = tightness_margin(p_num, p_den, result.R, result.alpha_each, z)
        bounds.append(type(b)(**{**b.__dict__, "theory": theory, "margin": margin}))
    return type(result)(result.R, result.alpha_each, result.family_alpha, tuple(bounds))


# --------------------------------------------------------------------------
# preconditions: the scenarios are what they claim to be
# --------------------------------------------------------------------------
@pytest.mark.parametrize("sc", [SCENARIO_I, SCENARIO_II], ids=["moved-into-empty", "row-at-bound"])
def test_scenarios_are_neighbours_with_the_stated_exact_counts(sc):
    D, Dp = sc["D"], sc["Dp"]
    assert len(D) == len(Dp) == 10
    assert int((D != Dp).any(axis=1).sum()) == 1  # replace-one neighbours
    kw = sc["kwargs"]
    fulls = []
    for data, expected in ((D, sc["counts_D"]), (Dp, sc["counts_Dp"])):
        domain = build_domain(kw["columns"], {c: data[c].dtype for c in kw["columns"]}, bounds=BOUNDS,
                              levels=LEVELS, bins=BINS, n=10, epsilon=EPS)
        exact = count_cells({c: data[c] for c in kw["columns"]}, domain)
        full = np.zeros(domain.size, dtype=np.int64)
        full[exact.ids.astype(np.int64)] = exact.counts
        assert tuple(full[list(sc["cells"])]) == expected
        fulls.append(full)
    # The two histograms differ in exactly the two watched cells, by one each.
    diff = fulls[0] - fulls[1]
    assert sorted(np.flatnonzero(diff)) == sorted(sc["cells"])
    assert np.abs(diff).sum() == 2
    assert resolve_threshold(kw["threshold"], EPS_CELLS, 10, DEFAULT_A).k == sc["k"]
    # The events include one whose exact loss is the full epsilon.
    events, probs = scenario_events(sc)
    best = max(abs(math.log(pD / pDp)) for pD, pDp in probs.values())
    assert math.isclose(best, EPS_CELLS, rel_tol=1e-9)
    single = [abs(math.log(p[0] / p[1])) for name, p in probs.items() if "&" not in name]
    assert max(single) <= EPS_CELLS / 2 + 1e-9  # one cell alone reveals at most its eps/2


@pytest.mark.parametrize("name", ["signed", "large-domain"])
def test_new_scenarios_are_neighbours_with_the_stated_counts(name):
    sc = ALL_SCENARIOS[name]
    kw = sc["kwargs"]
    cols = kw["columns"]
    assert len(sc["D"]) == len(sc["Dp"]) and int((sc["D"] != sc["Dp"]).any(axis=1).sum()) == 1
    got = []
    for data in (sc["D"], sc["Dp"]):
        n = len(data)
        domain = build_domain(cols, {c: data[c].dtype for c in cols}, bounds=kw["bounds"],
                              levels=kw["levels"], bins=kw["bins"], n=n, epsilon=EPS)
        exact = count_cells({c: data[c] for c in cols}, domain)
        lookup = dict(zip(exact.ids.tolist(), exact.counts.tolist()))
        got.append(tuple(lookup.get(c, 0) for c in sc["cells"]))
        other = sum(v for c, v in lookup.items() if c not in sc["cells"])
        assert other == sum(lookup.values()) - sum(got[-1])
    assert got == [sc["counts_D"], sc["counts_Dp"]]
    if name == "large-domain":
        assert domain.size == 2 * BIG_BINS**2
        rel = dpm.release(sc["D"], random_state=0, **kw)
        assert rel.report.domain_cells == 2 * 10**12
        # the spurious cells are spread over the whole 2e12-cell domain
        # (17.4 at all of EPS; the cells' part, EPS_CELLS, lets through more)
        assert rel.report.expected_spurious_cells == pytest.approx(59.8, rel=0.01)
        assert int(rel.cell_ids.max()) > 10**12
    events, probs = scenario_events(sc)
    best = max(abs(math.log(pD / pDp)) for pD, pDp in probs.values())
    assert math.isclose(best, EPS_CELLS, rel_tol=1e-9)  # a full-loss event is audited


def test_pieces_pipeline_reproduces_the_library_release():
    """The broken mechanisms differ from the library only in the noise step:
    with the correct noise step the rebuilt pipeline is the library release."""
    for sc in (SCENARIO_I, SCENARIO_II):
        lib = library_release(**sc["kwargs"])
        rebuilt = pieces_release(noisy_threshold_sparse, **sc["kwargs"])
        for seed in range(20):
            for data in (sc["D"], sc["Dp"]):
                a, b = lib(data, seed), rebuilt(data, seed)
                np.testing.assert_array_equal(a[0], b[0])
                np.testing.assert_array_equal(a[1], b[1])


def test_values_at_and_beyond_the_bounds_are_clipped_per_row():
    """Rule 3: a value at the upper bound is in the last bin, a value beyond
    it is clipped there: same seed, identical release."""
    kw = SCENARIO_II["kwargs"]
    base = library_release(**kw)
    for outside in (10.0 + 1e-9, 11.0, 1e6, math.inf):
        moved = frame([(outside, "u") if r == (10.0, "u") else r for r in ROWS_II])
        for seed in range(5):
            a, b = base(D_II, seed), base(moved, seed)
            np.testing.assert_array_equal(a[0], b[0])
            np.testing.assert_array_equal(a[1], b[1])
    for outside in (-1e-9, -3.0, -math.inf):
        moved = frame([(outside, "u") if r == (0.0, "u") else r for r in DP_II.itertuples(index=False)])
        for seed in range(5):
            a, b = base(DP_II, seed), base(moved, seed)
            np.testing.assert_array_equal(a[0], b[0])
            np.testing.assert_array_equal(a[1], b[1])


# --------------------------------------------------------------------------
# the audit of the library's release
# --------------------------------------------------------------------------
@pytest.fixture(scope="module", params=list(ALL_SCENARIOS))
def correct_audit(request):
    sc = ALL_SCENARIOS[request.param]
    events, probs = scenario_events(sc)
    result = privacy_audit(library_release(**sc["kwargs"]), sc["D"], sc["Dp"], sc["cells"], events,
                           R=sc.get("R", R),
                           seed_base=1_000_000 * (1 + list(ALL_SCENARIOS).index(request.param)),
                           family_alpha=FAMILY_ALPHA)
    result = _attach_theory(result, probs)
    print("\n" + format_audit(f"dpmodels.mechanisms.histogram, scenario {request.param}", result, EPS))
    return request.param, result


def test_audit_lower_bounds_never_exceed_epsilon(correct_audit):
    name, result = correct_audit
    worst = result.best()
    assert worst.lower_bound <= EPS, (name, worst)


def test_audit_lower_bounds_never_exceed_the_exact_loss(correct_audit):
    name, result = correct_audit
    over = [b for b in result.bounds if b.lower_bound > b.theory]
    assert not over, (name, over)


def test_audit_lower_bounds_come_close_to_the_exact_loss(correct_audit):
    name, result = correct_audit
    far = [b for b in result.bounds if b.lower_bound < b.theory - b.margin]
    assert not far, (name, far)
    full = [b for b in result.bounds if math.isclose(b.theory, EPS_CELLS, rel_tol=1e-9)]
    assert full, "the audit must include an event whose exact loss is epsilon"
    sharpest = min(full, key=lambda b: b.margin)
    # R is large enough for "close" to mean something: a mechanism whose
    # loss on this event were below epsilon/2 would fail.
    assert sharpest.margin < 0.5 * EPS_CELLS, sharpest
    assert sharpest.lower_bound >= EPS_CELLS - sharpest.margin, (name, sharpest)


# --------------------------------------------------------------------------
# the same audit catches broken mechanisms
# --------------------------------------------------------------------------
@pytest.mark.parametrize("scenario", ["moved-into-empty", "row-at-bound"])
@pytest.mark.parametrize("noise", [noise_observed_cells_only, noise_scale_one_over_epsilon],
                         ids=["observed-cells-only", "scale-1/eps"])
def test_audit_catches_broken_mechanisms(noise, scenario):
    sc = SCENARIO_I if scenario == "moved-into-empty" else SCENARIO_II
    events, _ = scenario_events(sc)  # the very same events, chosen a priori
    result = privacy_audit(pieces_release(noise, **sc["kwargs"]), sc["D"], sc["Dp"], sc["cells"],
                           events, R=R, seed_base=3_000_000, family_alpha=FAMILY_ALPHA)
    print("\n" + format_audit(f"BROKEN {noise.__name__}, scenario {scenario}", result, EPS))
    assert result.max_lower_bound > EPS, result.best()
