"""The sparse thresholded construction (Vinterbo 2012, §2.1) against the dense
reference "perturb all m cells, keep those >= k" (PRIVACY.md rule 1), the
signed dense release, the threshold rule / expected-spurious bound of the
report, and rule 4 (data-independent choices depend on public n only).

Statistical checks and their false-failure rates
------------------------------------------------
Every chi-square / binomial check rejects at p < ALPHA = 1e-3 against an
exact law (no estimated parameters) or, for the two-sample comparisons with
the dense reference, against homogeneity.  A correct implementation fails an
individual check for 0.1% of seeds; the seeds are fixed, so outcomes are
deterministic.  "Plausible count" checks allow 5 standard deviations of the
exact Binomial law (two-sided normal tail 5.7e-7).
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
from dpmodels.domain.axes import auto_bins
from dpmodels.core.noise import discrete_laplace, noisy_signed_dense, noisy_threshold_sparse

from tests.support.audit_tools import (
    ABSENT,
    ALPHA,
    chisquare_integers,
    conditional_probs,
    dl_pmf,
    dl_sf,
    folded_probs,
    pooled_chisquare,
    two_sample_chisquare,
)

EPS = 1.0

# --------------------------------------------------------------------------
# small domain: sparse construction vs the dense reference
# --------------------------------------------------------------------------
M = 200
OBS_IDS = np.array([3, 17, 50, 51, 120, 199], dtype=np.uint64)
OBS_COUNTS = np.array([1, 2, 4, 6, 9, 25], dtype=np.int64)
EMPTY_IDS = np.setdiff1d(np.arange(M), OBS_IDS.astype(np.int64))
REPS = 20_000
KS = [1, 3, 6]


def dense_reference(rng, epsilon, ids, counts, m, k, reps):
    """The definition: perturb every one of the m cells with discrete Laplace
    noise and keep those whose noisy count is >= k.  Returns the (reps, m)
    noisy counts and the keep mask."""
    full = np.zeros((reps, m), dtype=np.int64)
    full[:, ids.astype(np.int64)] = counts
    full += discrete_laplace(rng, epsilon, reps * m).reshape(reps, m)
    return full, full >= k


def _summaries_from_dense(full, keep):
    empty_keep = keep[:, EMPTY_IDS]
    obs = full[:, OBS_IDS.astype(np.int64)]
    obs_vals = np.where(keep[:, OBS_IDS.astype(np.int64)], obs, ABSENT)
    return {
        "n_empty": empty_keep.sum(axis=1),
        "empty_values": full[:, EMPTY_IDS][empty_keep],
        "position_counts": empty_keep.sum(axis=0),  # per empty cell, over reps
        "obs_values": obs_vals,
    }


@pytest.fixture(scope="module", params=KS, ids=[f"k={k}" for k in KS])
def sparse_vs_dense(request):
    k = request.param
    rng = np.random.default_rng(900 + k)
    n_empty = np.empty(REPS, dtype=np.int64)
    empty_vals, empty_pos = [], []
    obs_vals = np.full((REPS, OBS_IDS.size), ABSENT, dtype=np.int64)
    bad_invariants = []
    for r in range(REPS):
        out = noisy_threshold_sparse(rng, EPS, OBS_IDS, OBS_COUNTS, M, k)
        ids, counts = out.ids, out.counts
        if not (
            ids.dtype == np.uint64
            and counts.dtype == np.int64
            and ids.shape == counts.shape
            and np.all(np.diff(ids.astype(np.int64)) > 0)
            and (ids.size == 0 or int(ids[-1]) < M)
            and np.all(counts >= k)
        ):
            bad_invariants.append(r)
        is_obs = np.isin(ids, OBS_IDS)
        n_empty[r] = np.count_nonzero(~is_obs)
        empty_vals.append(counts[~is_obs])
        empty_pos.append(ids[~is_obs].astype(np.int64))
        pos = np.searchsorted(OBS_IDS, ids[is_obs])
        obs_vals[r, pos] = counts[is_obs]
    pos_all = np.concatenate(empty_pos)
    sparse = {
        "n_empty": n_empty,
        "empty_values": np.concatenate(empty_vals),
        "position_counts": np.bincount(pos_all, minlength=M)[EMPTY_IDS],
        "obs_values": obs_vals,
        "positions": pos_all,
        "bad_invariants": bad_invariants,
    }
    full, keep = dense_reference(np.random.default_rng(1900 + k), EPS, OBS_IDS, OBS_COUNTS, M, k, REPS)
    return k, sparse, _summaries_from_dense(full, keep)


def test_sparse_output_invariants(sparse_vs_dense):
    k, sparse, _ = sparse_vs_dense
    # Sorted unique uint64 ids inside the domain, int64 counts all >= k.
    assert sparse["bad_invariants"] == []
    # Released empty cells are never observed cells (np.isin split above) and
    # their positions are inside [0, M) and not observed ids.
    assert not np.isin(sparse["positions"], OBS_IDS.astype(np.int64)).any()


def test_number_of_released_empty_cells(sparse_vs_dense):
    """(a) Binomial(m - n', P(Z >= k)) exactly, and the same law as the dense reference."""
    k, sparse, dense = sparse_vs_dense
    J = EMPTY_IDS.size
    probs = stats.binom.pmf(np.arange(J + 1), J, dl_sf(k, EPS))
    res = chisquare_integers(sparse["n_empty"], 0, probs)
    assert res.pvalue > ALPHA, f"sparse vs Binomial: {res}"
    res_dense = chisquare_integers(dense["n_empty"], 0, probs)
    assert res_dense.pvalue > ALPHA, f"dense reference vs Binomial: {res_dense}"
    two = two_sample_chisquare(sparse["n_empty"], dense["n_empty"])
    assert two.pvalue > ALPHA, f"sparse vs dense: {two}"
    # Joint law of observed + empty cells: total released cells per repetition.
    tot_s = sparse["n_empty"] + (sparse["obs_values"] != ABSENT).sum(axis=1)
    tot_d = dense["n_empty"] + (dense["obs_values"] != ABSENT).sum(axis=1)
    two = two_sample_chisquare(tot_s, tot_d)
    assert two.pvalue > ALPHA, f"total released cells, sparse vs dense: {two}"


def test_values_of_released_empty_cells(sparse_vs_dense):
    """(b) Values of released empty cells: the law of Z given Z >= k."""
    k, sparse, dense = sparse_vs_dense
    hi = k + 40
    probs = conditional_probs(k, hi, EPS)
    res = chisquare_integers(sparse["empty_values"], k, probs)
    assert res.pvalue > ALPHA, f"sparse empty values vs Z | Z >= k: {res}"
    two = two_sample_chisquare(sparse["empty_values"], dense["empty_values"])
    assert two.pvalue > ALPHA, f"sparse vs dense: {two}"


@pytest.mark.parametrize("j", range(OBS_IDS.size))
def test_observed_cells(sparse_vs_dense, j):
    """(c) Each observed cell: released with probability P(c + Z >= k), and its
    released value has the law of c + Z given c + Z >= k."""
    k, sparse, dense = sparse_vs_dense
    c = int(OBS_COUNTS[j])
    v = sparse["obs_values"][:, j]
    released = v != ABSENT
    p_rel = dl_sf(k - c, EPS)
    bt = stats.binomtest(int(released.sum()), REPS, p_rel)
    assert bt.pvalue > ALPHA, (c, k, released.mean(), p_rel, bt.pvalue)
    assert REPS * p_rel >= 1000  # by the design of OBS_COUNTS and KS (exact, not data)
    probs = conditional_probs(k, max(k, c) + 40, EPS, shift=c)
    res = chisquare_integers(v[released], k, probs)
    assert res.pvalue > ALPHA, f"cell count {c}, k={k}: {res}"
    vd = dense["obs_values"][:, j]
    two = two_sample_chisquare(v[released], vd[vd != ABSENT])
    assert two.pvalue > ALPHA, f"sparse vs dense, cell count {c}: {two}"


def test_released_empty_positions_uniform(sparse_vs_dense):
    """(d) Positions are uniform over the empty cells.

    Under the dense definition each empty cell is released independently in
    each repetition with probability p = P(Z >= k), so its count over the
    REPS repetitions is Binomial(REPS, p), independently across cells.  Hence
    sum_j (N_j - REPS p)^2 / (REPS p (1 - p)) is approximately chi-square
    with J degrees of freedom (REPS p >= 600 here, so the normal approximation
    of each term is good).  This checks uniformity *and* the per-cell rate.
    """
    k, sparse, dense = sparse_vs_dense
    p = dl_sf(k, EPS)
    J = EMPTY_IDS.size
    for name, counts in (("sparse", sparse["position_counts"]), ("dense", dense["position_counts"])):
        stat = float(((counts - REPS * p) ** 2).sum() / (REPS * p * (1 - p)))
        pval = float(stats.chi2.sf(stat, J))
        assert pval > ALPHA, f"{name}: chi2={stat:.1f}, dof={J}, p={pval:.3g}"
    # Conditional (Pearson) uniformity given the total, as a second view.
    res = pooled_chisquare(sparse["position_counts"], np.full(J, 1.0 / J))
    assert res.pvalue > ALPHA, res


# --------------------------------------------------------------------------
# large domains
# --------------------------------------------------------------------------
def _plausible_binomial(x: int, n: int, p: float, z: float = 5.0) -> bool:
    mean = n * p
    sd = math.sqrt(n * p * (1 - p))
    return abs(x - mean) <= z * sd


def test_large_domain_sparse_path():
    """m = 10**12, n' = 3000 observed cells (rejection sampling of positions)."""
    m = 10**12
    rng = np.random.default_rng(4242)
    obs = np.unique(rng.integers(0, m, size=3000, dtype=np.uint64))
    assert obs.size == 3000
    k = 32  # expected new cells (m - n') * P(Z >= 32) ~ 7.0e4
    # Observed counts far above k: each observed cell is released except with
    # probability P(Z <= -61) ~ 6e-14, so every observed id is in the output
    # and a new cell placed on an observed id would show up as a duplicate.
    counts = rng.integers(k + 61, k + 200, size=obs.size).astype(np.int64)
    out = noisy_threshold_sparse(np.random.default_rng(77), EPS, obs, counts, m, k)
    ids = out.ids
    assert ids.dtype == np.uint64 and out.counts.dtype == np.int64
    assert np.all(ids[1:] > ids[:-1]), "ids must be sorted and unique"
    assert int(ids[-1]) < m
    assert np.isin(obs, ids).all()
    is_new = ~np.isin(ids, obs)
    n_new = int(is_new.sum())
    assert n_new == ids.size - obs.size  # no collision with observed ids
    p = dl_sf(k, EPS)
    assert _plausible_binomial(n_new, m - obs.size, p), (n_new, (m - obs.size) * p)
    new_vals = out.counts[is_new]
    assert new_vals.min() >= k
    # New values: k + Geometric on {0,1,..} with mean q/(1-q), variance q/(1-q)^2.
    q = math.exp(-EPS / 2)
    se = math.sqrt(q / (1 - q) ** 2 / n_new)
    assert abs((new_vals - k).mean() - q / (1 - q)) <= 5 * se
    # Observed cells: counts + Z (mean 0, variance 2q/(1-q)^2).
    diff = out.counts[~is_new] - counts
    assert abs(diff.mean()) <= 5 * math.sqrt(2 * q / (1 - q) ** 2 / diff.size)
    # Positions spread over the whole id range: 10 equal blocks, chi-square uniform.
    block = (ids[is_new] // np.uint64(m // 10)).astype(np.int64)
    res = pooled_chisquare(np.bincount(block, minlength=10), np.full(10, 0.1))
    assert res.pvalue > ALPHA, res


def test_rejection_path_avoids_a_dense_block_of_observed_cells():
    """m just above the enumeration limit with 10^6 observed cells packed at
    every other id of [0, 2e6): the rejection sampler hits observed ids often,
    so avoiding them, uniqueness and uniformity are really exercised."""
    m = 5_000_000  # > 2**22, and 4 * (new + observed) < m: rejection path
    obs = np.arange(0, 2_000_000, 2, dtype=np.uint64)
    k = 7
    counts = np.full(obs.size, k + 70, dtype=np.int64)  # all released (P(miss) ~ 1e6 * 1e-15)
    out = noisy_threshold_sparse(np.random.default_rng(5), EPS, obs, counts, m, k)
    ids = out.ids
    assert np.all(ids[1:] > ids[:-1])
    assert np.isin(obs, ids).all()
    new = ids[~np.isin(ids, obs)].astype(np.int64)
    assert new.size == ids.size - obs.size
    p = dl_sf(k, EPS)
    assert _plausible_binomial(new.size, m - obs.size, p)
    # Uniform over the empty cells: 50 blocks of 100k ids; blocks in [0, 2e6)
    # hold half as many empty cells.
    block = new // 100_000
    empty_per_block = np.array([100_000 - (50_000 if b < 20 else 0) for b in range(50)], dtype=float)
    res = pooled_chisquare(np.bincount(block, minlength=50), empty_per_block / empty_per_block.sum())
    assert res.pvalue > ALPHA, res


def test_crowded_domain_enumeration_path():
    """m above 2**22 but so many cells cross a low threshold that the
    complement is enumerated: same law."""
    m = 5_000_000
    rng = np.random.default_rng(8)
    obs = np.unique(rng.integers(0, m, size=1_000_000, dtype=np.uint64))
    counts = np.full(obs.size, 80, dtype=np.int64)
    k = 1
    out = noisy_threshold_sparse(np.random.default_rng(9), EPS, obs, counts, m, k)
    ids = out.ids
    assert np.all(ids[1:] > ids[:-1])
    assert np.isin(obs, ids).all()
    n_new = ids.size - obs.size
    assert _plausible_binomial(n_new, m - obs.size, dl_sf(k, EPS))
    assert out.counts.min() >= k


# --------------------------------------------------------------------------
# signed dense release (Lei's Algorithm 1)
# --------------------------------------------------------------------------
def test_noisy_signed_dense_is_counts_plus_noise_on_every_cell():
    m = 60
    ids = np.array([0, 7, 8, 30, 59], dtype=np.uint64)
    counts = np.array([1, 3, 10, 2, 40], dtype=np.int64)
    base = np.zeros(m, dtype=np.int64)
    base[ids.astype(np.int64)] = counts
    rng = np.random.default_rng(12)
    reps = 4000
    noise = np.empty((reps, m), dtype=np.int64)
    for r in range(reps):
        out = noisy_signed_dense(rng, EPS, ids, counts, m)
        assert np.all(out.ids[1:] > out.ids[:-1]) and int(out.ids[-1]) < m
        assert np.all(out.counts != 0)  # exact zeros are left out
        full = np.zeros(m, dtype=np.int64)
        full[out.ids.astype(np.int64)] = out.counts
        noise[r] = full - base
    # Pooled over cells and repetitions, noisy - exact is discrete Laplace.
    L = 45
    res = chisquare_integers(noise.ravel(), -L, folded_probs(-L, L, EPS))
    assert res.pvalue > ALPHA, res
    # Per cell: an empty cell is omitted exactly when its noise is 0, a
    # non-empty one when its noise is -count: P(omitted) = pmf(-count).
    omitted = noise == -base  # full == 0
    for cell in [0, 5, 7, 8, 30, 59]:
        bt = stats.binomtest(int(omitted[:, cell].sum()), reps, float(dl_pmf(-base[cell], EPS)))
        assert bt.pvalue > ALPHA, (cell, bt)
    # Independence across cells: correlation of the noise of two cells ~ 0 (5 s.e.).
    corr = np.corrcoef(noise[:, 7], noise[:, 8])[0, 1]
    assert abs(corr) <= 5 / math.sqrt(reps)


# --------------------------------------------------------------------------
# threshold rule and expected-spurious bound of the report (release level)
# --------------------------------------------------------------------------
def _frame(n, seed=0, nvars=1, hi=10.0):
    rng = np.random.default_rng(seed)
    data = {f"x{i}": rng.uniform(0, hi, size=n) for i in range(nvars)}
    data["g"] = rng.choice(["u", "v", "w"], size=n)
    return pd.DataFrame(data)


@pytest.mark.parametrize("epsilon", [0.5, 1.0, 2.0])
@pytest.mark.parametrize("A", [0.5, 1.5])
def test_enhanced_threshold_and_expected_spurious_in_report(epsilon, A):
    n = 1234
    df = _frame(n)
    rel = dpm.release(df, columns=["x0", "g"], epsilon=epsilon, bounds={"x0": (0, 10)},
                      levels={"g": ["u", "v", "w"]}, bins=20, threshold="enhanced", threshold_A=A,
                      random_state=1)
    rep = rel.report
    # the cells' part of epsilon: the rest counts the rows outside x0's bounds (issue 43)
    eps_cells = rep.noise_epsilon
    assert eps_cells == split_epsilon(epsilon, [CLIP_SHARE, None])[1] < epsilon
    t = A * math.log(n) / eps_cells
    assert rep.threshold_rule == "enhanced"
    assert math.isclose(rep.threshold, t, rel_tol=1e-12)
    assert rep.threshold_A == A and rep.n == n and rep.domain_cells == 60
    assert math.isclose(rep.expected_spurious_cells, 60 * dl_sf(math.ceil(t), eps_cells),
                        rel_tol=1e-9)
    assert rel.counts.size == 0 or rel.counts.min() >= math.ceil(t)
    assert rep.released_cells == rel.cell_ids.size and rep.noisy_total == int(rel.counts.sum())
    assert rep.noise_scale == 2.0 / eps_cells and rep.sensitivity == 2 and rep.seeded


@pytest.mark.parametrize("threshold, k", [(3.5, 4), (4.0, 4), ("zero", 1), (-1.5, -1)])
def test_fixed_and_zero_thresholds(threshold, k):
    """The integer cut is ceil(t): the report's bound uses it, every released
    count is >= k, and counts equal to k do occur (600 cells: each released
    empty cell equals k with probability >= 0.19, so with the hundreds of
    released cells expected here, missing k has probability < 1e-10)."""
    df = _frame(300, seed=2)
    rel = dpm.release(df, columns=["x0", "g"], epsilon=1.0, bounds={"x0": (0, 10)},
                      levels={"g": ["u", "v", "w"]}, bins=200, threshold=threshold, random_state=3)
    # (the cells' part of epsilon: the rest counts the rows outside x0's bounds, issue 43)
    assert math.isclose(rel.report.expected_spurious_cells,
                        600 * dl_sf(k, rel.report.noise_epsilon), rel_tol=1e-9)
    assert rel.counts.min() >= k
    assert (rel.counts == k).any()


class _DtypeOnlyColumn:
    """A column that declares its dtype but refuses to be read."""

    def __init__(self, dtype):
        self.dtype = np.dtype(dtype)

    def _refuse(self, *a, **k):
        raise AssertionError("the release read data values")

    __len__ = __getitem__ = __iter__ = __array__ = _refuse

    @property
    def iloc(self):
        self._refuse()


SIX = [f"x{i}" for i in range(6)]


def test_too_many_spurious_cells_refused_before_reading_data_or_drawing_noise():
    bounds = {v: (0, 1) for v in SIX}
    # 100**6 = 1e12 cells at t = 0.5*log(3000) ~ 4.0 (k = 5): ~5e10 expected
    # spurious cells, far above the default limit.
    data = {v: _DtypeOnlyColumn("float64") for v in SIX}
    rng = np.random.default_rng(0)
    before = rng.bit_generator.state
    with pytest.raises(dpm.DomainTooLargeError):
        dpm.release(data, columns=SIX, epsilon=1.0, bounds=bounds, bins=100, n=3000, random_state=rng)
    assert rng.bit_generator.state == before
    # The same with a real DataFrame: no noise was drawn.
    df = pd.DataFrame({v: np.random.default_rng(1).uniform(0, 1, 3000) for v in SIX})
    with pytest.raises(dpm.DomainTooLargeError):
        dpm.release(df, columns=SIX, epsilon=1.0, bounds=bounds, bins=100, random_state=rng)
    assert rng.bit_generator.state == before
    # Control: the sentinel columns do detect a read when no refusal happens.
    with pytest.raises(AssertionError, match="read data values"):
        dpm.release(data, columns=SIX[:2], epsilon=1.0, bounds=bounds, bins=3, n=3000, random_state=rng)


def test_max_spurious_cells_boundary_is_m_times_tail_probability():
    df = _frame(500, seed=4)
    kw = dict(columns=["x0", "g"], epsilon=1.0, bounds={"x0": (0, 10)}, levels={"g": ["u", "v", "w"]},
              bins=50, threshold=2.0)
    bound = 150 * dl_sf(2, split_epsilon(1.0, [CLIP_SHARE, None])[1])  # the cells' part
    rel = dpm.release(df, max_spurious_cells=bound * (1 + 1e-9), random_state=0, **kw)
    assert math.isclose(rel.report.expected_spurious_cells, bound, rel_tol=1e-12)
    rng = np.random.default_rng(0)
    before = rng.bit_generator.state
    with pytest.raises(dpm.DomainTooLargeError):
        dpm.release(df, max_spurious_cells=bound * (1 - 1e-9), random_state=rng, **kw)
    assert rng.bit_generator.state == before
    # A signed release keeps all m cells: refused when m exceeds the limit.
    with pytest.raises(dpm.DomainTooLargeError):
        dpm.release(df, max_spurious_cells=149, random_state=rng,
                    **{**kw, "threshold": None})
    assert rng.bit_generator.state == before


def test_trillion_cell_domain_releases_quickly():
    n = 3000
    rng = np.random.default_rng(21)
    df = pd.DataFrame({v: rng.uniform(0, 1, n) for v in SIX})
    rel = dpm.release(df, columns=SIX, epsilon=1.0, bounds={v: (0, 1) for v in SIX}, bins=100,
                      threshold=40, random_state=22)
    m = 100**6
    p = dl_sf(40, rel.report.noise_epsilon)  # the cells' part of epsilon (issue 43)
    assert rel.report.domain_cells == m
    assert math.isclose(rel.report.expected_spurious_cells, m * p, rel_tol=1e-9)
    codes = np.minimum(np.floor(df.to_numpy() * 100), 99).astype(np.int64)
    n_obs = np.unique(codes @ (100 ** np.arange(5, -1, -1)), axis=0).size
    # Observed cells hold 1 or 2 rows: each is released with probability
    # <= P(Z >= 38) ~ 4e-9, so the released count is Binomial(m - n', p)
    # except with probability < 3000 * 4e-9.
    assert _plausible_binomial(rel.report.released_cells, m - n_obs, p), (rel.report.released_cells, m * p)
    assert rel.counts.min() >= 40
    assert np.all(rel.cell_ids[1:] > rel.cell_ids[:-1]) and int(rel.cell_ids[-1]) < m
    assert len(rel.cells) == rel.report.released_cells


# --------------------------------------------------------------------------
# rule 4: threshold and bins depend only on the public n
# --------------------------------------------------------------------------
def test_threshold_and_auto_bins_depend_on_public_n_not_on_rows_left():
    n0, extra = 400, 400
    df0 = _frame(n0, seed=6)
    nan_rows = _frame(extra, seed=7)
    nan_rows["x0"] = np.nan
    df1 = pd.concat([df0, nan_rows], ignore_index=True)
    n1 = n0 + extra
    kw = dict(columns=["x0", "g"], epsilon=1.0, bounds={"x0": (0, 10)}, levels={"g": ["u", "v", "w"]},
              bins="auto", threshold="enhanced")
    # The test discriminates: n0 and n1 lead to different bins and thresholds.
    assert auto_bins(n1, 1.0, 1, 3) != auto_bins(n0, 1.0, 1, 3)

    rel1 = dpm.release(df1, random_state=11, **kw)
    assert rel1.report.n == n1 and rel1.report.n_source == "rows handed in"
    assert math.isclose(rel1.report.threshold, 0.5 * math.log(n1) / rel1.report.noise_epsilon,
                        rel_tol=1e-12)  # (the cells' part of epsilon: issue 43)
    assert rel1.domain.axis("x0").bins == auto_bins(n1, 1.0, 1, 3)

    # The rows left after the drop (n0) with n = n1 declared: same public
    # choices and, with the same seed, the very same release.
    rel0 = dpm.release(df0, n=n1, random_state=11, **kw)
    assert rel0.report.n == n1 and rel0.report.n_source == "declared by the caller"
    assert rel0.report.threshold == rel1.report.threshold
    assert rel0.domain == rel1.domain
    np.testing.assert_array_equal(rel0.cell_ids, rel1.cell_ids)
    np.testing.assert_array_equal(rel0.counts, rel1.counts)
    assert "declared by the caller" in str(rel0.report)

    # Same n handed in, a different number of missing rows: same choices.
    df2 = df1.copy()
    df2.loc[: n0 // 2, "x0"] = np.nan
    rel2 = dpm.release(df2, random_state=11, **kw)
    assert rel2.report.threshold == rel1.report.threshold
    assert rel2.report.expected_spurious_cells == rel1.report.expected_spurious_cells
    assert rel2.domain == rel1.domain

    # Without the NaN rows and without a declaration, n0 is the public n.
    rel_small = dpm.release(df0, random_state=11, **kw)
    assert rel_small.report.n == n0
    assert math.isclose(rel_small.report.threshold, 0.5 * math.log(n0) / rel_small.report.noise_epsilon,
                        rel_tol=1e-12)
    assert rel_small.domain.axis("x0").bins == auto_bins(n0, 1.0, 1, 3)


@pytest.mark.parametrize("threshold", [math.inf, -math.inf])
def test_infinite_threshold_is_an_input_error(threshold):
    # dpmodels/core/errors.py: every error about the caller's input subclasses ValueError.
    df = _frame(50, seed=9)
    with pytest.raises(ValueError, match="threshold"):
        dpm.release(df, columns=["x0", "g"], epsilon=1.0, bounds={"x0": (0, 10)},
                    levels={"g": ["u", "v", "w"]}, bins=5, threshold=threshold, random_state=0)
