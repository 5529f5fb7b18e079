"""The row-aligned exact samplers of the local channels (dpmodels/mechanisms/local/,
PRIVACY.md rules 1 and 9): each row's report comes from its own stream
(:class:`dpmodels.core.streams.RowStreams`), so it depends on (key, position, cell)
only, whatever the batches; and its law is the channel's, exactly.

* The binary expansion of k-RR's keep probability ``p = e^eps / (e^eps + k - 1)``
  is exact (against mpmath at 600 digits), and a tie of the first words with
  p's digits is decided by the row's next words (scripted words).
* Chi-square tests (fixed keys, level ALPHA of tests/support/audit_tools.py, no
  estimated parameter): the joint law of (true cell, report) under k-RR
  (with k - 1 a power of two, not one, and k = 2), the law of an OUE row's
  whole report (every pattern of k = 4 bits), the number of other 1-bits of
  an OUE row (Binomial(k - 1, q)), and the row-aligned geometric gap.
* Batch invariance: the counts of any split of the rows into batches,
  summed, are the counts of all the rows at once, bit for bit.
"""

from __future__ import annotations

import math

import mpmath
import numpy as np
import pytest
from scipy import stats

from dpmodels.mechanisms.local import (
    Channel,
    _keep_probability,
    _oue_rate,
    _row_bernoulli,
    _row_geometric,
    _row_uniform_below,
    _word_index,
)
from dpmodels.core.streams import RowStreams

from tests.support.audit_tools import ALPHA, pooled_chisquare


def _exact_p(epsilon: float, k: int) -> mpmath.mpf:
    with mpmath.workdps(600):
        e = mpmath.exp(mpmath.mpf(epsilon))
        return e / (e + (k - 1))


@pytest.mark.parametrize("epsilon", [1e-12, 0.3, 1.0, 5.0, 30.0])
@pytest.mark.parametrize("k", [2, 3, 9, 4096])
def test_keep_probability_digits_are_exact(epsilon, k):
    prob = _keep_probability(epsilon, k)
    p = _exact_p(epsilon, k)
    with mpmath.workdps(600):
        for d in (1, 2, 3):
            assert prob.prefix(d) == int(mpmath.floor(p * mpmath.mpf(2) ** (64 * d))), (d, k)
            assert 0 <= prob.digit(d) < 2**64


def test_keep_probability_near_one():
    """At a huge epsilon p = 1 - (k - 1) e^-eps is within 2**-40000 of 1: its
    digits are all ones (the enclosure's upper end, 1, is clipped since p < 1)."""
    for eps in (3e4, 1e17, 1e300):
        prob = _keep_probability(eps, 13)
        assert prob.prefix(1) == 2**64 - 1 and prob.digit(3) == 2**64 - 1


class _Scripted(RowStreams):
    """Row streams whose words are scripted: ``script[(row, index)]``, else 0."""

    def __init__(self, script: dict):
        super().__init__(b"\0" * 16, True)
        self.script = script

    def words(self, rows, j):
        j = np.broadcast_to(np.asarray(j, np.uint64), np.shape(rows))
        return np.array([self.script.get((int(r), int(i)), 0) for r, i in zip(rows, j)],
                        np.uint64)


def test_a_tie_is_decided_by_the_rows_next_words():
    prob = _keep_probability(0.3, 3)
    d1, d2, d3 = prob.digit(1), prob.digit(2), prob.digit(3)
    assert 0 < d3 < 2**64 - 1
    slot = 0
    script = {
        (0, int(_word_index(slot, 0))): d1 - 1,                    # below: success
        (1, int(_word_index(slot, 0))): d1 + 1,                    # above: failure
        (2, int(_word_index(slot, 0))): d1, (2, int(_word_index(slot, 1))): d2,
        (2, int(_word_index(slot, 2))): d3 - 1,                    # tie, tie, below
        (3, int(_word_index(slot, 0))): d1, (3, int(_word_index(slot, 1))): d2,
        (3, int(_word_index(slot, 2))): d3 + 1,                    # tie, tie, above
        (4, int(_word_index(slot, 0))): d1, (4, int(_word_index(slot, 1))): d2 + 1,
    }
    got = _row_bernoulli(_Scripted(script), np.arange(5), slot, prob)
    assert got.tolist() == [True, False, True, False, False]


def test_uniform_below_rejects_the_top_block():
    bound = 6
    limit = (2**64 // bound) * bound  # 2**64 - 4
    script = {(0, int(_word_index(1, 0))): limit, (0, int(_word_index(1, 1))): limit + 2,
              (0, int(_word_index(1, 2))): 7,            # rejected twice, then 7 % 6
              (1, int(_word_index(1, 0))): limit - 1}    # kept: (limit - 1) % 6 = 5
    got = _row_uniform_below(_Scripted(script), np.arange(2), 1, bound)
    assert got.tolist() == [1, 5]


@pytest.mark.parametrize("k,eps", [(2, 0.5), (5, 2.0), (6, 0.2), (9, 1.0)])
def test_krr_joint_law(k, eps):
    """(true cell, report) of 30,000 rows whose cells cycle through the k cells,
    against ``P(report | true)`` = p on the diagonal, q elsewhere."""
    R = 30_000
    ch = Channel("krr", k, eps)
    cells = np.arange(R) % k
    rep = ch.reports(RowStreams.from_source(k * 100 + 1), cells)
    law = np.full((k, k), ch.q)
    np.fill_diagonal(law, ch.p)
    assert np.allclose(law.sum(axis=1), 1.0)
    table = np.bincount(cells * k + rep, minlength=k * k)
    # the rows of each true cell are fixed: one chi-square per true cell, level ALPHA / k
    for c in range(k):
        res = pooled_chisquare(table[c * k:(c + 1) * k], law[c])
        assert res.pvalue > ALPHA / k, (c, res)


def test_oue_whole_report_law():
    """Every pattern of an OUE report on k = 4 cells (16 patterns), rows in cell 2."""
    R, k, eps = 40_000, 4, 0.8
    ch = Channel("oue", k, eps)
    bits = ch.reports(RowStreams.from_source(5), np.full(R, 2))
    pattern = bits.astype(np.int64) @ (1 << np.arange(k))
    q = ch.q
    law = np.array([np.prod([(0.5 if c == 2 else q) if (pat >> c) & 1 else
                             (0.5 if c == 2 else 1 - q) for c in range(k)])
                    for pat in range(1 << k)])
    assert abs(law.sum() - 1.0) < 1e-12
    assert pooled_chisquare(np.bincount(pattern, minlength=1 << k), law).pvalue > ALPHA


@pytest.mark.parametrize("k,eps", [(9, 0.5), (40, 2.0)])
def test_oue_other_ones_are_binomial(k, eps):
    R = 20_000
    ch = Channel("oue", k, eps)
    cells = np.arange(R) % k
    bits = ch.reports(RowStreams.from_source(k), cells)
    others = bits.sum(axis=1) - bits[np.arange(R), cells]
    probs = stats.binom.pmf(np.arange(k), k - 1, ch.q)
    assert pooled_chisquare(np.bincount(others, minlength=k), probs / probs.sum()).pvalue > ALPHA
    # every other cell equally often (the positions of the 1-bits)
    rel = (np.nonzero(bits)[1] - cells[np.nonzero(bits)[0]]) % k
    per = np.bincount(rel, minlength=k)[1:]
    assert pooled_chisquare(per, np.full(k - 1, 1.0 / (k - 1))).pvalue > ALPHA


def test_row_geometric_law():
    eps, R, cap = 1.0, 50_000, 30
    rho = math.exp(eps) / (math.exp(eps) + 1.0)
    rows = np.arange(R)
    g = _row_geometric(RowStreams.from_source(2), rows, np.full(R, 7, np.uint64),
                       _oue_rate(eps), cap)
    assert g.min() >= 0 and g.max() <= cap
    j = np.arange(cap + 1)
    probs = (1 - rho) * rho ** j
    probs[-1] = rho ** cap  # P(G >= cap): min(G, cap) = cap
    assert pooled_chisquare(np.bincount(g, minlength=cap + 1), probs).pvalue > ALPHA


@pytest.mark.parametrize("name,k", [("krr", 7), ("krr", 2), ("oue", 7), ("oue", 2),
                                    ("identity", 5)])
def test_batches_give_the_same_counts(name, k):
    """A row's report depends on (key, position, cell) only: any split of the rows
    into batches gives the same counts, and a batch's rows the same reports."""
    eps = math.inf if name == "identity" else 0.9
    ch = Channel(name, k, eps)
    streams = RowStreams.from_source(9)
    cells = np.random.default_rng(1).integers(0, k, 5_003)
    whole = ch.row_counts(streams, cells)
    for cuts in ([0, 1, 2, 5_003], [0, 2_500, 5_003], [0, 17, 1_000, 4_999, 5_003]):
        parts = sum(ch.row_counts(streams, cells[a:b], a) for a, b in zip(cuts, cuts[1:]))
        assert np.array_equal(parts, whole), cuts
    full = ch.row_reports(streams, cells)
    assert np.array_equal(ch.row_reports(streams, cells[1000:1200], 1000), full[1000:1200])
    # the same release from counts(): its per-row reports, for one-cell reports
    C, rep = ch.counts(streams, cells)
    assert np.array_equal(C, whole) and (rep is None) == (name == "oue")
