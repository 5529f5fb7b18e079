"""Local differential privacy: every row randomized on its own where it is
collected (Duchi, Jordan & Wainwright; Wang et al. 2017), and models fitted
from the debiased histogram of the reports.

The mechanism
-------------
* **Cells.**  The public domain of the released variables
  (`dpmodels.domain.axes.build_domain()`: declared bounds, levels and bins);
  a row's cell is its mixed-radix cell id, as the histogram release computes
  it (`Axis.codes()`, `Domain.encode()`).  Under ``missing="drop"``
  (the default) a row with a missing value is in one more, public, cell
  "missing", randomized like any other and dropped only after debiasing:
  whether a row is missing is itself private, so it must not decide whether
  the row reports.  ``missing="raise"`` refuses such rows before anything is
  randomized.  So the channel has ``k = m + 1`` (or ``m``) inputs.
  ``bins="auto"`` follows the local rate (`_local_bins()`): far fewer
  bins than the central release's rule.
* **Neighbouring relation and sensitivity.**  Local DP has no aggregate and
  no sensitivity: each row's report must be epsilon-DP *on its own*
  (PRIVACY.md rule 9): for any two inputs ``a, b`` (the worst case of a
  replace-one change of that row) and any report ``r``,
  ``P(r | a) <= exp(epsilon) P(r | b)``.  The data set of reports is then
  epsilon-DP for replace-one neighbours (public n), at the full epsilon: the
  budget is not split, and an accountant is charged epsilon once.
* **Channels** (chosen from the public k and epsilon by the variance of the
  debiased counts, Wang et al. 2017):

  - *k-ary randomized response* ("krr"): report the true cell with
    probability ``p = e^eps / (e^eps + k - 1)``, each other cell with
    ``q = 1 / (e^eps + k - 1)``; ratio ``p / q = e^eps`` exactly.
    Debiased variance per cell (at small cell frequency)
    ``n (e^eps + k - 2) / (e^eps - 1)**2``.
  - *optimized unary encoding* ("oue"): report k bits, the true cell's bit 1
    with probability ``p = 1/2``, every other bit 1 with probability
    ``q = 1 / (e^eps + 1)``, independently.  Two inputs change two bits'
    laws (the other bits' laws are the same): for a report with bit a = 1
    and bit b = 0 the ratio is ``(1/2)(1 - q) / (q (1/2)) = e^eps``, the
    largest over the four cases.  Variance ``n 4 e^eps / (e^eps - 1)**2``,
    whatever k.

  k-RR is used when ``k - 2 < 3 e^eps`` (its variance is the smaller),
  OUE otherwise.  (Optimal local hashing has OUE's variance with a shorter
  report; here the reports are aggregated where they are made, so its only
  advantage, communication, does not apply.)
* **Exact sampling, row by row** (PRIVACY.md rules 1 and 7).  Row i draws
  only from its own stream of uniform 64-bit words
  (`dpmodels.core.streams.RowStreams`: AES-128 under a key drawn from the
  release's source, word ``(slot << 32) + e`` of row i for the row's draw
  ``slot`` and its ``e``-th word), so a row's report is a function of (key,
  i, its cell) alone: the release is the same however the rows are split
  into batches, and an engine (Polars, DuckDB, Dask, Spark) randomizes its
  batches where they live and sends back only their k report counts.

  - k-RR: keep the true cell with probability ``p = e^eps / (e^eps + k - 1)``
    by an exact Bernoulli trial ``U < p`` (slot 0): U's binary digits are the
    row's words, p's are computed exactly (`_Probability`: rigorous
    mpmath intervals, the precision raised until ``floor(p 2**(64 d))`` is
    known; p is irrational); the first word decides unless it equals p's
    first 64 digits (probability 2**-64), then the next word against the
    next 64 digits, and so on.  Otherwise report a uniform other cell (slot
    1: one word, rejection of the top partial block, exactly uniform among
    the ``k - 1``): each other cell with ``(1 - p) / (k - 1) = q``.
  - OUE: the true bit from the top bit of a word (slot 0); the row's ``k -
    1`` other bits as independent Bernoulli(``q = 1 / (e^eps + 1)``) trials
    by geometric gaps of rate ``1 - q = P(Z < 1)`` of the discrete Laplace
    law of parameter ``2 epsilon`` (exactly enclosed), gap t from slot
    ``1 + t``, each the exact sampler of `dpmodels.core.exact.geometric()`
    on the row's words.  Only each cell's number of 1-bits is kept (the
    sufficient statistic).

* **Post-processing.**  The debiased estimate ``(C_c - n q) / (p - q)`` of
  each cell's count is unbiased (negative entries possible); its Euclidean
  projection onto ``{x >= 0, sum x = n}`` is rounded to integers with the
  same total (largest remainders), and the missing cell is dropped: a
  `PrivateHistogram`-shaped release on which every
  ``dp_*`` model fits.  Its standard errors come from a parametric bootstrap
  of THIS channel (`LocalSimulator`): n rows drawn from the projected
  cell distribution, through the channel, debiased, projected, rounded,
  refitted.

``epsilon=inf`` reports every row's true cell (NOT private, with a
`NotPrivateWarning`).
"""

from __future__ import annotations

import math
import os
import pathlib
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property, lru_cache
from typing import Any, ClassVar

import numpy as np
import pandas as pd
from mpmath.libmp import from_float, from_int, mpf_floor, mpf_neg, mpf_shift, to_int
from mpmath.libmp.libmpi import mpi_add, mpi_div, mpi_exp, mpi_mul

from ...core.accountant import Accountant
from ...core.errors import DomainTooLargeError, DPModelsError, DPModelsTypeError, NotPrivateWarning
from ...core.exact import LogRate, _slow_geometric, geometric_fast
from ...core.keywords import checked_keywords
from ...core.report import Release, ReleaseReport, closing_rows
from ...core.streams import RowStreams
from ...data.columns import columns_of, dtype_of, nrows
from ...data.counting import _as_reference_input, missing_error, undeclared_error
from ...data.engines import source_for
from ...data.validation import (
    check_choice,
    check_dtypes,
    check_epsilon,
    check_release_arguments,
    check_used_columns,
)
from ...domain.axes import AUTO_BINS_MAX, AUTO_BINS_MIN, Domain, build_domain
from ...domain.formula import caller_namespace, user_stacklevel
from ...output.documents import SavedParts, SavedReleaseError, float_out
from ...output.saving import save_release
from ..histogram import PrivateHistogram, release_variables
from ..pipeline import run_release
from ..simulation import ReplicateChunk

__all__ = ["Channel", "LocalReport", "LocalRelease", "LocalHistogram", "LocalSimulator",
           "randomize", "project_to_counts", "MAX_LOCAL_CELLS"]

#: Largest number of channel inputs k (domain cells, plus the missing cell).
#: Local privacy costs a factor of about k in variance per estimated cell: a
#: larger domain estimates nothing, and the exact OUE sampler's work grows as
#: n k / e^eps.
MAX_LOCAL_CELLS = 4096
#: Largest expected number of exact draws a randomization may take.
MAX_LOCAL_WORK = 2e9
#: Channels by name.
CHANNELS = ("auto", "krr", "oue")
#: Rows per vectorized chunk of the exact samplers: their temporaries stay below
#: 128 KiB, which glibc's malloc serves without mmap even where its dynamic mmap
#: threshold is off (Dask's workers set MALLOC_TRIM_THRESHOLD_: with chunks of a
#: million rows every temporary was mapped and unmapped, 4x slower).
_ROW_CHUNK = 1 << 13
#: A row's word ``(slot << _SLOT_BITS) + e``: ``e`` counts the words of one draw.
_SLOT_BITS = 32
_EXTRA_LIMIT = 1 << _SLOT_BITS
_TWO52 = np.uint64(1 << 52)
#: An engine whose batches come to this process (Polars, DuckDB) keeps each row's
#: channel input (2 bytes a row) from its one pass up to this many rows; beyond, it
#: reads the rows a second time to randomize them.
_KEEP_ROWS = 1 << 25
#: Replicates per vectorized chunk hold about this many numbers.
_CHUNK_ELEMENTS = 4_000_000


# ---- channels --------------------------------------------------------------------------


@dataclass(frozen=True)
class Channel:
    """An epsilon-locally-private channel on ``k`` inputs.

    ``name`` is "krr", "oue" or "identity" (``epsilon=inf``).  For k-RR a
    report is one cell (``P(true) = p``, ``P(other) = q``); for OUE k bits
    (the true cell's bit is 1 with probability ``p = 1/2``, every other with
    ``q``).  Either way the report count ``C_c`` of cell c (reports equal to
    c, or 1-bits at c) has mean ``n_c p + (n - n_c) q``.

    Attributes
    ----------
    name : {"krr", "oue", "identity"}
        k-ary randomized response, optimized unary encoding, or no noise
        (``epsilon=inf``).
    k : int
        The number of inputs (cells, plus the missing cell).
    epsilon : float
        Each row's epsilon.

    Examples
    --------
    >>> ch = Channel.choose(4, 1.0)
    >>> ch.name, round(ch.p, 4), round(ch.q, 4)
    ('krr', 0.4754, 0.1749)
    >>> Channel.choose(200, 1.0).name
    'oue'
    """

    name: str
    k: int
    epsilon: float

    @classmethod
    def choose(cls, k: int, epsilon: float, channel: str = "auto") -> Channel:
        """The channel of smaller debiased variance (public inputs only).

        Parameters
        ----------
        k : int
            The number of inputs.
        epsilon : float
            Each row's epsilon.
        channel : {"auto", "krr", "oue"}
            "auto" (default): k-RR when ``k - 2 < 3 e^epsilon``, else OUE.

        Returns
        -------
        Channel
        """
        if math.isinf(epsilon):
            return cls("identity", int(k), math.inf)
        if channel == "auto":
            channel = "krr" if k - 2 < 3.0 * math.exp(min(epsilon, 700.0)) else "oue"
        return cls(channel, int(k), float(epsilon))

    @property
    def p(self) -> float:
        """Probability that the true cell is reported (its bit set, for OUE)."""
        if self.name == "identity":
            return 1.0
        if self.name == "oue":
            return 0.5
        return 1.0 / (1.0 + (self.k - 1) * math.exp(-self.epsilon))

    @property
    def q(self) -> float:
        """Probability that a given other cell is reported (its bit set)."""
        if self.name == "identity":
            return 0.0
        if self.name == "oue":
            return 1.0 / (math.exp(min(self.epsilon, 700.0)) + 1.0)
        return math.exp(-self.epsilon) / (1.0 + (self.k - 1) * math.exp(-self.epsilon))

    def variance_factor(self) -> float:
        """Variance of one cell's debiased count per row, for a cell of
        frequency -> 0: ``q (1 - q) / (p - q)**2`` (k-RR:
        ``(e^eps + k - 2) / (e^eps - 1)**2``; OUE: ``4 e^eps / (e^eps - 1)**2``)."""
        if self.name == "identity":
            return 0.0
        return self.q * (1.0 - self.q) / (self.p - self.q) ** 2

    def cell_variance(self, n: int, counts: np.ndarray) -> np.ndarray:
        """Exact variance of the debiased counts of cells with true counts ``counts``.

        Parameters
        ----------
        n : int
            The number of rows.
        counts : numpy.ndarray
            True cell counts.

        Returns
        -------
        numpy.ndarray
        """
        p, q = self.p, self.q
        if self.name == "identity":
            return np.zeros(np.shape(counts))
        counts = np.asarray(counts, float)
        return (counts * p * (1 - p) + (n - counts) * q * (1 - q)) / (p - q) ** 2

    def describe(self) -> str:
        if self.name == "identity":
            return "none (every row's true cell: epsilon = inf)"
        if self.name == "krr":
            return (f"k-ary randomized response on k = {self.k:,} cells: the true cell with "
                    f"p = e^eps/(e^eps+k-1) = {self.p:.4g}, each other with q = {self.q:.4g}")
        return (f"optimized unary encoding (Wang et al. 2017) on k = {self.k:,} cells: the "
                f"true cell's bit 1 with p = 1/2, every other bit with q = 1/(e^eps+1) = "
                f"{self.q:.4g}")

    def expected_work(self, n: int) -> float:
        """Expected number of exact draws (about one word each) `counts()`
        makes for n rows (k-RR: the keep trial, and a uniform other cell when
        the row does not keep its own; OUE: the true bit, and a geometric gap
        per 1-bit plus the last)."""
        if self.name == "krr":
            return n * (2.0 - self.p)
        if self.name == "oue":
            return n * (2.0 + (self.k - 1) * self.q)
        return float(n)

    # -- exact sampling (the release) --------------------------------------------------
    def row_reports(self, streams: RowStreams, cells: np.ndarray, start: int = 0) -> np.ndarray:
        """The reports of the rows at positions ``start, start + 1, ...`` with
        channel inputs ``cells``, exactly, each from its own stream of
        ``streams`` (k-RR and identity: one cell per row, int64; OUE: a
        ``(rows, k)`` bool matrix)."""
        cells = np.asarray(cells, dtype=np.int64)
        rows = np.arange(start, start + cells.size, dtype=np.int64)
        if self.name == "identity":
            return cells.copy()
        if self.name == "krr":
            out = np.empty(cells.size, np.int64)
            for lo in range(0, cells.size, _ROW_CHUNK):
                hi = min(lo + _ROW_CHUNK, cells.size)
                out[lo:hi] = _krr_rows(streams, rows[lo:hi], cells[lo:hi], self.k, self.epsilon)
            return out
        out = np.zeros((cells.size, self.k), bool)
        out[np.arange(cells.size), cells] = _oue_true_bits(streams, rows).astype(bool)
        for i, others in _oue_other_bits(streams, rows, cells, self.k, self.epsilon):
            out[i, others] = True
        return out

    def row_counts(self, streams: RowStreams, cells: np.ndarray, start: int = 0) -> np.ndarray:
        """Each channel output's report count over the rows at positions
        ``start, ...`` with inputs ``cells`` (int64, length k): what a batch
        of an engine sends back.  Sums over batches equal the counts of all
        the rows at once, whatever the batches."""
        cells = np.asarray(cells, dtype=np.int64)
        if self.name != "oue":
            return np.bincount(self.row_reports(streams, cells, start),
                               minlength=self.k).astype(np.int64)
        rows = np.arange(start, start + cells.size, dtype=np.int64)
        C = np.bincount(cells, weights=_oue_true_bits(streams, rows),
                        minlength=self.k).astype(np.int64)
        for _, others in _oue_other_bits(streams, rows, cells, self.k, self.epsilon):
            C += np.bincount(others, minlength=self.k).astype(np.int64)
        return C

    def reports(self, source, cells: np.ndarray) -> np.ndarray:
        """Each row's randomized report, exactly (`row_reports()` of rows
        ``0, 1, ...``), from per-row streams keyed from ``source`` (a
        `RowStreams`, or a word source / seed /
        None, from which the key is drawn; small inputs such as audits).

        Examples
        --------
        >>> Channel.choose(3, 1.0).reports(0, np.array([0, 1, 2, 2])).shape
        (4,)
        """
        return self.row_reports(_streams(source), cells)

    def counts(self, source, cells: np.ndarray) -> tuple[np.ndarray, np.ndarray | None]:
        """``(C, reports)``: each cell's report count, exactly, and the
        per-row reports when they are one cell each (k-RR, identity), else
        None; rows ``0, 1, ...`` with streams keyed from ``source``."""
        streams = _streams(source)
        cells = np.asarray(cells, dtype=np.int64)
        if self.name == "oue":
            return self.row_counts(streams, cells), None
        rep = self.row_reports(streams, cells)
        return np.bincount(rep, minlength=self.k).astype(np.int64), rep

    # -- post-processing --------------------------------------------------------------
    def debias(self, C: np.ndarray, n: int) -> np.ndarray:
        """Unbiased estimate ``(C - n q) / (p - q)`` of the true counts
        (along the last axis of ``C``).

        Parameters
        ----------
        C : numpy.ndarray
            Report counts.
        n : int
            The number of rows.

        Returns
        -------
        numpy.ndarray
        """
        C = np.asarray(C, float)
        if self.name == "identity":
            return C.copy()
        return (C - n * self.q) / (self.p - self.q)

    def simulate(self, rng: np.random.Generator, truth: np.ndarray) -> np.ndarray:
        """Report counts of replicate data sets with true counts ``truth``
        (``(b, k)``), by the channel's law (fast float draws: post-processing
        simulations only, NOT a release)."""
        truth = np.asarray(truth, dtype=np.int64)
        if self.name == "identity":
            return truth.copy()
        n = truth.sum(axis=1)
        if self.name == "krr":
            # k-RR = keep the true cell with prob 1 - k q, else report a uniform cell
            keep = rng.binomial(truth, max(0.0, 1.0 - self.k * self.q))
            rest = n - keep.sum(axis=1)
            return keep + rng.multinomial(rest, np.full(self.k, 1.0 / self.k))
        return rng.binomial(truth, 0.5) + rng.binomial(n[:, None] - truth, self.q)


# ---- row-aligned exact sampling ----------------------------------------------------------
#
# Row i draws only from its own stream (dpmodels.core.streams.RowStreams): word
# ``(slot << 32) + e`` of row i, where ``slot`` names the row's exact draw
# (k-RR: 0 the keep trial, 1 the other cell; OUE: 0 the true cell's bit, 1 + t
# the t-th gap between its other 1-bits) and ``e`` counts the words that draw
# reads (0 only, but for a rejection, a tie or a leading zero word).  A row's
# report is therefore a function of (key, i, its cell) alone: the same however
# the rows are split into batches, on every engine.


def _streams(source) -> RowStreams:
    """Per-row streams: ``source`` itself, or keyed from a word source / seed."""
    return source if isinstance(source, RowStreams) else RowStreams.from_source(source)


def _word_index(slot, e) -> np.ndarray:
    """Word index of extra word ``e`` of draw ``slot`` (scalars or arrays)."""
    return (np.asarray(slot, np.uint64) << np.uint64(_SLOT_BITS)) | np.asarray(e, np.uint64)


class _RowDraw:
    """The words of one row's draw (one slot) from its ``e``-th on: the word
    source of the exact samplers' rare slow paths (a tie, an undecided floor)."""

    def __init__(self, streams: RowStreams, row: int, slot: int, e: int):
        self.streams, self.row, self.slot, self.e = streams, int(row), int(slot), int(e)
        self.seeded = streams.seeded

    def words(self, size: int) -> np.ndarray:
        size = int(size)
        if self.e + size > _EXTRA_LIMIT:  # pragma: no cover - probability 2**-(2**37)
            raise RuntimeError("a row's exact draw read 2**32 words")
        idx = _word_index(self.slot, np.arange(self.e, self.e + size, dtype=np.uint64))
        self.e += size
        return self.streams.words(np.full(size, self.row, np.int64), idx)


class _Probability:
    """A probability ``0 < p < 1`` known through rigorous enclosures
    (``enclose(wp)``: an mpmath interval holding p, relative width about
    ``2**-wp``), and its binary expansion, 64 digits at a time, exactly."""

    def __init__(self, enclose):
        self._enclose = enclose
        self._prefix: dict[int, int] = {0: 0}

    def prefix(self, d: int) -> int:
        """``floor(p * 2**(64 d))``, exactly: the enclosure's floors, clipped to
        ``[0, 2**(64 d) - 1]`` (p is in (0, 1)), at a precision raised until they
        agree (they do: p is irrational, so ``p * 2**(64 d)`` is no integer)."""
        got = self._prefix.get(d)
        if got is not None:
            return got
        top, wp = (1 << (64 * d)) - 1, 64 * d + 64
        while True:
            lo, hi = self._enclose(wp)
            a = max(to_int(mpf_floor(mpf_shift(lo, 64 * d))), 0)
            b = min(to_int(mpf_floor(mpf_shift(hi, 64 * d))), top)
            if a == b:
                self._prefix[d] = a
                return a
            wp *= 2

    def digit(self, d: int) -> int:
        """The d-th 64-bit digit of p (``d >= 1``)."""
        return self.prefix(d) - (self.prefix(d - 1) << 64)


@lru_cache(maxsize=64)
def _keep_probability(epsilon: float, k: int) -> _Probability:
    """k-RR's ``p = 1 / (1 + (k - 1) e^-eps) = e^eps / (e^eps + k - 1)``
    (irrational for every float epsilon > 0: e^eps is transcendental)."""
    one = (from_int(1), from_int(1))
    km1 = (from_int(k - 1), from_int(k - 1))
    neg = mpf_neg(from_float(float(epsilon)))

    def enclose(wp: int):
        decay = mpi_mul(km1, mpi_exp((neg, neg), wp), wp)
        return mpi_div(one, mpi_add(one, decay, wp), wp)

    return _Probability(enclose)


@lru_cache(maxsize=64)
def _oue_rate(epsilon: float) -> LogRate:
    """Log of the failure probability ``e^eps / (e^eps + 1) = 1 - q`` of an
    OUE other bit: ``P(Z < 1)`` of the discrete Laplace law of parameter
    ``2 epsilon`` (`LogRate.no_cross()`), exactly enclosed."""
    return LogRate.no_cross(2.0 * epsilon, 1)


def _row_bernoulli(streams: RowStreams, rows: np.ndarray, slot: int,
                   prob: _Probability) -> np.ndarray:
    """Each row's exact Bernoulli(p) trial ``U < p``, U uniform on (0, 1) with
    binary digits the row's words of ``slot``: the first word against the
    first 64 digits of p decides unless they are equal (probability 2**-64);
    then the next word against the next 64 digits, and so on."""
    T = prob.prefix(1)
    w = streams.words(rows, _word_index(slot, 0))
    out = w < np.uint64(T)
    for i in np.flatnonzero(w == np.uint64(T)):
        draw, d = _RowDraw(streams, rows[i], slot, 1), 2
        while True:
            word, dig = int(draw.words(1)[0]), prob.digit(d)
            if word != dig:
                out[i] = word < dig
                break
            d += 1
    return out


def _row_uniform_below(streams: RowStreams, rows: np.ndarray, slot: int,
                       bound: int) -> np.ndarray:
    """Each row's exactly uniform integer in ``[0, bound)`` (int64), as
    `dpmodels.core.exact.uniform_below()` from the row's words of ``slot``: a
    word below the largest multiple of ``bound`` under 2**64 is kept
    (``w % bound``), a word above it is rejected and the row's next word read."""
    bound = int(bound)
    out = np.zeros(rows.size, np.int64)
    if bound == 1 or rows.size == 0:
        return out
    if bound & (bound - 1) == 0:  # a power of two: the top bits of one word
        w = streams.words(rows, _word_index(slot, 0))
        return (w >> np.uint64(64 - (bound.bit_length() - 1))).astype(np.int64)
    limit = np.uint64(((1 << 64) // bound) * bound)
    pending, e = np.arange(rows.size), 0
    while pending.size:
        w = streams.words(rows[pending], _word_index(slot, e))
        ok = w < limit
        out[pending[ok]] = (w[ok] % np.uint64(bound)).astype(np.int64)
        pending, e = pending[~ok], e + 1
    return out


def _row_geometric(streams: RowStreams, rows: np.ndarray, slots: np.ndarray, rate: LogRate,
                   cap: int) -> np.ndarray:
    """``min(G, cap)`` for G geometric (``P(G >= j) = rho**j``) of each (row,
    slot) pair, exactly: `dpmodels.core.exact.geometric()` with U read from the
    pair's words (a leading zero word: ``U = 2**-12 U'``, U' from the next
    word; an undecided floor: more words of the pair, rigorous intervals)."""
    w = streams.words(rows, _word_index(slots, 0))
    E = np.zeros(rows.size, np.int64)
    e = np.ones(rows.size, np.uint64)
    small = np.flatnonzero(w < _TWO52)
    if small.size:
        w = w.copy()
    while small.size:
        E[small] += 12
        w[small] = streams.words(rows[small], _word_index(slots[small], e[small]))
        e[small] += np.uint64(1)
        small = small[w[small] < _TWO52]
    V = w >> np.uint64(11)
    out, decided = geometric_fast(E, V, rate, cap)
    for i in np.flatnonzero(~decided):
        out[i] = _slow_geometric(_RowDraw(streams, rows[i], slots[i], e[i]), rate, int(E[i]),
                                 int(V[i]), cap)
    return out


def _krr_rows(streams: RowStreams, rows: np.ndarray, cells: np.ndarray, k: int,
              epsilon: float) -> np.ndarray:
    """k-RR, row-aligned and exact (module docstring): each row keeps its
    cell with probability p (slot 0), else reports a uniform other cell (slot 1)."""
    out = cells.astype(np.int64, copy=True)
    if k == 1 or cells.size == 0:
        return out
    keep = _row_bernoulli(streams, rows, 0, _keep_probability(float(epsilon), int(k)))
    other = np.flatnonzero(~keep)
    u = _row_uniform_below(streams, rows[other], 1, k - 1)
    out[other] = u + (u >= out[other])
    return out


def _oue_true_bits(streams: RowStreams, rows: np.ndarray) -> np.ndarray:
    """Each row's true-cell bit: the top bit of its word of slot 0 (a fair coin)."""
    if rows.size == 0:
        return np.zeros(0, np.int64)
    return (streams.words(rows, _word_index(0, 0)) >> np.uint64(63)).astype(np.int64)


def _oue_other_bits(streams: RowStreams, rows: np.ndarray, cells: np.ndarray, k: int,
                    epsilon: float):
    """The 1-bits of the cells other than each row's own, exactly: yields
    ``(i, cells)`` of the successes (``i`` indexes ``rows``), round by round.

    Row i's k - 1 other cells, in order, are k - 1 independent Bernoulli(q)
    trials; the failures before each success are independent geometric gaps
    of rate ``1 - q`` (`_oue_rate()`), gap t from slot ``1 + t`` of the
    row.  Round t draws gap t of every row whose trials are not all decided
    yet, so every gap drawn is used and a row's bits depend on its own words
    only; the expected work is ``1 + (k - 1) q`` words a row."""
    per = k - 1
    if per < 1 or rows.size == 0:
        return
    rate = _oue_rate(float(epsilon))
    for lo in range(0, rows.size, _ROW_CHUNK):
        active = np.arange(lo, min(lo + _ROW_CHUNK, rows.size))
        pos = np.zeros(active.size, np.int64)  # each active row's first undecided trial
        t = 0
        while active.size:
            G = _row_geometric(streams, rows[active], np.full(active.size, 1 + t, np.uint64),
                               rate, per)
            end = pos + G + 1  # the success is trial end - 1
            inside = end <= per
            active, pos = active[inside], end[inside]
            j = pos - 1
            yield active, j + (j >= cells[active])
            t += 1


# ---- post-processing: projection and rounding -------------------------------------------


def project_to_counts(x: np.ndarray, n: int) -> np.ndarray:
    """Euclidean projection of each row of ``x`` (last axis) onto
    ``{v >= 0, sum v = n}``, then rounded to integers with total n (largest
    remainders; ties by cell order).  Post-processing of the debiased
    estimate.

    Examples
    --------
    >>> project_to_counts(np.array([5.6, -1.0, 3.2, 2.2]), 10).tolist()
    [5, 0, 3, 2]
    """
    x = np.asarray(x, float)
    flat = np.atleast_2d(x)
    u = -np.sort(-flat, axis=1)
    css = np.cumsum(u, axis=1) - n
    j = np.arange(1, flat.shape[1] + 1)
    cond = u - css / j > 0
    rho = flat.shape[1] - np.argmax(cond[:, ::-1], axis=1)  # last index where cond holds
    theta = css[np.arange(flat.shape[0]), rho - 1] / rho
    v = np.maximum(flat - theta[:, None], 0.0)
    base = np.floor(v)
    short = n - base.sum(axis=1)
    frac = v - base
    order = np.argsort(-frac, axis=1, kind="stable")
    rank = np.empty_like(order)
    np.put_along_axis(rank, order, np.arange(flat.shape[1])[None, :].repeat(flat.shape[0], 0),
                      axis=1)
    out = (base + (rank < np.round(short)[:, None])).astype(np.int64)
    return out.reshape(x.shape)


# ---- the report and the release ---------------------------------------------------------


@dataclass(frozen=True)
class LocalReport(ReleaseReport):
    """The privacy report of a local release.

    Attributes
    ----------
    epsilon : float
        Epsilon of the channel, for EACH row on its own (local DP; delta = 0).
    private : bool
        False only for ``epsilon=inf`` (no noise: not private).
    mechanism : str
        The mechanism's name, as the summary's privacy block prints it.
    channel : str
        "krr", "oue" or "identity".
    p, q : float
        The channel's probabilities (see `Channel`).
    k : int
        Number of channel inputs (domain cells, plus the missing cell).
    domain_cells : int
        Number of cells in the public domain.
    missing : str
        "drop" (a missing cell, randomized and then dropped) or "raise".
    n : int
        The number of rows, each of which made one report (public).
    n_source : str
        "rows handed in" or "declared by the caller".
    variables : tuple of (name, description)
        The public domain of each variable.
    noisy_total : int
        Total of the histogram the models fit on (missing cell dropped).
    seeded : bool
        True when a ``random_state`` made the noise reproducible.
    budget : str
        How the release was charged to an `Accountant` ("no accountant" when none).
    """

    #: The fields computed from the noise (the noisy total); the others
    #: are public inputs, equal on neighbouring data sets.
    NOISY_FIELDS: ClassVar[tuple[str, ...] | None] = ("noisy_total",)
    SAVED_FIELDS: ClassVar[Mapping[str, str]] = {
        "epsilon": "float", "private": "bool", "mechanism": "str", "channel": "str",
        "p": "float", "q": "float", "k": "int", "domain_cells": "int", "missing": "str",
        "n": "int", "n_source": "str", "variables": "pairs", "noisy_total": "int",
        "seeded": "bool", "budget": "str"}

    title = "Privacy report (LOCAL)"
    html_title = "Privacy report (local)"

    epsilon: float
    private: bool
    mechanism: str
    channel: str
    p: float
    q: float
    k: int
    domain_cells: int
    missing: str
    n: int
    n_source: str
    variables: tuple
    noisy_total: int
    seeded: bool
    budget: str = "no accountant"
    #: A local release has no threshold: every cell is estimated.
    threshold = None
    threshold_rule = "none (local release: every cell estimated)"
    #: Marks a local release's report (what the histogram models read).
    local = True

    @property
    def variance_factor(self) -> float:
        """The channel's variance of a debiased cell count per row (see
        `Channel.variance_factor()`)."""
        return Channel(self.channel, self.k, self.epsilon).variance_factor()

    def rows(self) -> list[tuple[str, str]]:
        """(label, value) pairs, in display order, for summaries."""
        eps = "inf (NOT PRIVATE)" if not self.private else f"{self.epsilon:g}"
        vf = self.variance_factor
        rows = [
            ("Privacy:", f"LOCAL epsilon-DP, epsilon = {eps} for each row on its own "
             "(randomized before any aggregation), delta = 0"),
            ("Mechanism:", self.mechanism),
            ("Debiasing:", "(C - n q)/(p - q) per cell, projected onto counts >= 0 summing "
             "to n and rounded"),
            ("Variance factor:", "none" if not self.private else
             f"{vf:.4g} per row and cell: a cell's estimated count has SD about "
             f"sqrt({vf:.3g} n)"),
            ("Public n:", f"{self.n} ({self.n_source})"),
            ("Domain cells:", f"{self.domain_cells:,}" + (
                " + 1 missing-value cell (randomized, then dropped)"
                if self.missing == "drop" else "")),
            ("Noisy total:", f"{self.noisy_total:,}"),
        ]
        return rows + closing_rows(self)


@dataclass(frozen=True, repr=False)  # PrivateHistogram's own repr
class LocalHistogram(PrivateHistogram):
    """The `PrivateHistogram` of a local release:
    the projected, rounded estimate of the cell counts, missing cell dropped.
    Models fitted on it (through the ``dp_*`` functions or the model
    classes ``DPOLS`` etc. directly) bootstrap the local channel
    (`simulators()`)."""

    #: Saved as the local release it is a view of (`save()`).
    saved_kind: ClassVar[str] = "local"

    local: LocalRelease | None = field(default=None, repr=False, compare=False)
    _dpm_local = True

    def saved_parts(self) -> SavedParts:
        """What `save()` writes: the parts of the local release this histogram
        is a view of (`LocalRelease.saved_parts()`)."""
        if self.local is None:
            raise SavedReleaseError(
                f"cannot save this {type(self).__name__}: it has no local release (make it "
                "with LocalRelease.histogram); a local release saves its channel's report counts")
        return self.local.saved_parts()

    def simulators(self, population: str = "deconvolved") -> list:
        """The local channel's simulation (`LocalSimulator`): the
        parametric bootstrap of any model fitted on this histogram replicates
        the local release, not the central one."""
        if self.local is None:
            raise DPModelsError("this LocalHistogram has no local release to simulate: make it "
                                "with LocalRelease.histogram")
        return [LocalSimulator(self.local)]

    def save(self, path: str | os.PathLike) -> pathlib.Path:
        """Write the local release this histogram is a view of
        (`LocalRelease.save()`): `dpmodels.load_release()` reads back
        that `LocalRelease`, on which every ``dp_*`` model fits as on
        this histogram.

        Parameters
        ----------
        path : str or os.PathLike
            The file to write (``.json`` or ``.json.gz``).

        Returns
        -------
        pathlib.Path
            The path written.
        """
        if self.local is None:
            raise DPModelsError("this LocalHistogram has no local release to save: make it "
                                "with LocalRelease.histogram")
        return self.local.save(path)


@dataclass(frozen=True)
class LocalRelease(Release):
    """A local release: the public domain, the channel, each channel
    output's report count and the report.

    Attributes
    ----------
    domain : Domain
    channel : Channel
    report_counts : numpy.ndarray
        ``C_c`` for the k channel inputs (the domain's cells, then the
        missing cell when ``report.missing == "drop"``): all a fit needs.
    report : LocalReport
    reports : numpy.ndarray or None
        Each row's report (k-RR: the reported cell) for in-memory rows; None
        for OUE (k bits a row: only their sums are kept) and for an engine's
        frame (its batches send back their k report counts only).

    Examples
    --------
    >>> import numpy as np, pandas as pd, dpmodels as dpm
    >>> df = pd.DataFrame({"g": np.repeat(["a", "b"], [700, 300])})
    >>> rel = dpm.local.randomize(df, columns=["g"], epsilon=1.0, levels={"g": ["a", "b"]},
    ...                           random_state=0)
    >>> rel.report.k, rel.channel.name      # two cells and the missing-value cell
    (3, 'krr')
    >>> rel.estimate.shape, int(rel.projected.sum())   # unbiased; projected to n
    ((3,), 1000)
    >>> list(rel.histogram.cells.columns)   # what dp_* models fit on
    ['g', 'count']
    """

    domain: Domain
    channel: Channel
    report_counts: np.ndarray
    report: LocalReport
    reports: np.ndarray | None = field(default=None, repr=False)
    _dpm_local = True
    #: The release's kind in a saved file (`dpmodels.front.saved`).
    saved_kind: ClassVar[str] = "local"

    def __post_init__(self):
        self.report_counts.setflags(write=False)
        if self.reports is not None:
            self.reports.setflags(write=False)

    def saved_parts(self) -> SavedParts:
        """What `save()` writes: the file's release type, the public domain,
        the report and the released values (read back by this folder's
        ``codec.read``)."""
        ch = self.channel
        return SavedParts(
            self.saved_kind, self.domain, self.report,
            {"channel": {"name": ch.name, "k": int(ch.k), "epsilon": float_out(ch.epsilon),
                         "p": float_out(ch.p), "q": float_out(ch.q)},
             "report_counts": [int(c) for c in self.report_counts.tolist()]},
            definition="pure epsilon-local differential privacy (delta = 0): each row's report is "
                       "epsilon-DP on its own")

    @property
    def n(self) -> int:
        """The number of rows (each made one report)."""
        return int(self.report.n)

    @property
    def variables(self) -> tuple[str, ...]:
        """The randomized variables, in domain order."""
        return self.domain.names

    @cached_property
    def estimate(self) -> np.ndarray:
        """Unbiased estimate of every channel input's count (float; entries
        may be negative): the domain's cells, then the missing cell if any."""
        return self.channel.debias(self.report_counts, self.n)

    @cached_property
    def projected(self) -> np.ndarray:
        """The estimate projected onto counts >= 0 summing to n, rounded (int64)."""
        return project_to_counts(self.estimate, self.n)

    @cached_property
    def histogram(self) -> LocalHistogram:
        """The projected estimate as a histogram release (missing cell dropped):
        what the ``dp_*`` models fit on."""
        counts = self.projected[: self.domain.size]
        ids = np.flatnonzero(counts > 0).astype(np.uint64)
        return LocalHistogram(self.domain, ids, counts[counts > 0].astype(np.int64),
                              self.report,  # type: ignore[arg-type]  # the channel's own report
                              local=self)

    @cached_property
    def cells(self) -> pd.DataFrame:
        """Every domain cell: the variables' representatives, the unbiased
        ``estimate``, its standard error ``se`` (at the estimate, clipped to
        [0, n]) and the projected ``count``."""
        m = self.domain.size
        frame = self.domain.frame(np.arange(m, dtype=np.uint64))
        est = self.estimate[:m]
        frame["estimate"] = est
        frame["se"] = np.sqrt(self.channel.cell_variance(self.n, np.clip(est, 0, self.n)))
        frame["count"] = self.projected[:m]
        return frame

    def save(self, path: str | os.PathLike) -> pathlib.Path:
        """Write the release to a JSON file (gzip if ``path`` ends in ``.gz``):
        its public domain, the channel (name, k, per-row epsilon, p, q), the
        k report counts and the privacy report; nothing else (no raw row, no
        row's report).  Read it back with `dpmodels.load_release()`; see
        `dpmodels.front.saved`.

        Parameters
        ----------
        path : str or os.PathLike
            The file to write (``.json`` or ``.json.gz``).

        Returns
        -------
        pathlib.Path
            The path written.

        Examples
        --------
        >>> import tempfile, numpy as np, pandas as pd, dpmodels as dpm
        >>> df = pd.DataFrame({"g": np.repeat(["a", "b"], [700, 300])})
        >>> rel = dpm.local.randomize(df, columns=["g"], epsilon=1.0, levels={"g": ["a", "b"]},
        ...                           random_state=0)
        >>> back = dpm.load_release(rel.save(tempfile.mkdtemp() + "/g.json"))
        >>> back.channel == rel.channel and back.report == rel.report
        True
        >>> bool((back.report_counts == rel.report_counts).all()), back.reports is None
        (True, True)
        """
        return save_release(self, path)

    def __repr__(self) -> str:
        return (f"LocalRelease(variables={list(self.domain.names)}, epsilon={self.report.epsilon:g}"
                f" per row, channel={self.channel.name!r}, k={self.channel.k:,}, n={self.n:,})")

    def __str__(self) -> str:
        return repr(self) + "\n" + str(self.report)


# ---- the release ------------------------------------------------------------------------


def _local_bins(bins, n: int, epsilon: float, names, dtypes, **kw) -> Domain:
    """The domain, with ``bins="auto"`` resolved for a local release from
    public inputs only (n, epsilon, the declared domain).

    A histogram density estimate with K bins on each of d auto-binned
    continuous axes, in D cells of the other axes, has squared bias of order
    ``K**-2`` and, under a channel of variance factor ``v`` (a cell's debiased
    count has variance about ``v n``), variance of order ``v D**2 K**(2d) / n``;
    they balance at ``K = (n / (v D**2)) ** (1 / (2 d + 2))``: the local
    rate ``(n alpha**2)^(-1/(d+1))`` of Duchi, Jordan & Wainwright, not
    the central release's.  ``v`` is OUE's ``4 e^eps / (e^eps - 1)**2``;
    K is clipped to [2, 256].
    """
    if not (bins == "auto" or isinstance(bins, Mapping)):
        return build_domain(names, dtypes, bins=bins, n=n, epsilon=epsilon, **kw)
    explicit = dict(bins) if isinstance(bins, Mapping) else {}
    probe = build_domain(names, dtypes, bins={**{nm: 2 for nm in names if nm not in explicit},
                                              **explicit}, n=n, epsilon=epsilon, **kw)
    auto = [a.name for a in probe.axes if a.kind == "continuous" and a.name not in explicit]
    if not auto:
        return probe
    D = probe.size // 2 ** len(auto)
    if math.isinf(epsilon):
        v = 1.0
    else:
        e = min(epsilon, 700.0)
        v = max(4.0 * math.exp(e) / math.expm1(e) ** 2, 1.0)
    K = round((n / (v * D * D)) ** (1.0 / (2 * len(auto) + 2)))
    K = int(min(max(K, AUTO_BINS_MIN), AUTO_BINS_MAX))
    return build_domain(names, dtypes, bins={**{nm: K for nm in auto}, **explicit}, n=n,
                        epsilon=epsilon, **kw)


@checked_keywords
def randomize(
    data,
    *,
    columns: Sequence[str] | None = None,
    formula: str | None = None,
    epsilon: float,
    bounds: Mapping[str, tuple[float, float]] | None = None,
    levels: Mapping[str, Sequence] | None = None,
    bins: int | Mapping[str, int] | str = "auto",
    missing: str = "drop",
    channel: str = "auto",
    random_state: None | int | np.random.Generator = None,
    accountant: Accountant | None = None,
    namespace: Mapping[str, object] | None = None,
) -> LocalRelease:
    """Randomize every row's cell on its own with an epsilon-locally-private
    channel (local differential privacy) and return the reports' release.

    Parameters
    ----------
    data : pandas.DataFrame, mapping of str to array-like, or an engine's frame
        The raw rows (never modified).  Each row's cell of the public domain
        goes through the channel independently of every other, from its own
        random stream (`dpmodels.core.streams`, keyed by its position).  A
        Polars DataFrame or LazyFrame, a Dask DataFrame, a DuckDB relation or a
        PySpark DataFrame is randomized where it lives
        (`dpmodels.data.engines.Source.map_partitions()`): each batch sends back
        only its k report counts, and with one ``random_state`` the release is
        the pandas release of the same rows, bit for bit.  The domain comes
        from the schema, n from a row count.
    columns : sequence of str, optional
        The variables randomized (jointly: one cell per row).  Or ``formula``.
    formula : str, optional
        A patsy formula whose raw variables are randomized.
    epsilon : float
        Each row's privacy parameter (> 0); ``inf``: no randomization, NOT private.
    bounds, levels : dict
        Public bounds of continuous variables and level sets of discrete ones,
        as for `dpmodels.release()`.
    bins : int, dict or "auto"
        Equal-width bins per continuous variable; "auto" (for the variables
        a dict leaves out, too): ``K = (n / (v D**2)) ** (1 / (2 d + 2))``
        bins on each of the d such variables, D the cells of the others and
        ``v = 4 e^eps / (e^eps - 1)**2`` (the local rate; see ``docs/local.md``).
    missing : {"drop", "raise"}
        "drop": a row with a missing value is in an extra "missing" cell,
        randomized like the others and dropped after debiasing; "raise":
        refuse such rows before anything is randomized.
    channel : {"auto", "krr", "oue"}
        "auto" takes the channel of smaller variance for the public
        ``k`` and ``epsilon`` (k-RR when ``k - 2 < 3 e^eps``).
    random_state : None, int or numpy.random.Generator
        None: the OS's secure entropy; a seed for tests and docs (the report
        says so).
    accountant : Accountant, optional
        Charged ``epsilon`` (each row's data set of reports is epsilon-DP).
    namespace : mapping, optional
        Names a formula may use besides columns.

    Returns
    -------
    LocalRelease

    Examples
    --------
    >>> import numpy as np, pandas as pd, dpmodels as dpm
    >>> rng = np.random.default_rng(0)
    >>> df = pd.DataFrame({"g": rng.choice(["a", "b", "c"], 2000)})
    >>> rel = dpm.local.randomize(df, columns=["g"], epsilon=2.0, levels={"g": ["a", "b", "c"]},
    ...                           missing="raise", random_state=1)
    >>> rel.channel.name, rel.report.k, int(rel.projected.sum())
    ('krr', 3, 2000)
    """
    check_release_arguments(
        data, columns=columns, formula=formula, epsilon=epsilon, bounds=bounds, levels=levels,
        bins=bins, threshold="enhanced", threshold_A=0.5, n=None, random_state=random_state,
        accountant=accountant, missing=missing, max_spurious_cells=1.0, namespace=namespace,
        domain_check=None)
    check_choice("channel", channel, CHANNELS)
    epsilon = check_epsilon(epsilon)
    if math.isfinite(epsilon) and not math.isfinite(2.0 * epsilon):
        raise DPModelsError(f"epsilon={epsilon:g} is too large to sample exactly: use a smaller one")
    source = source_for(data)  # an engine's frame, or None for in-memory rows
    cols = source.columns() if source is not None else columns_of(data)
    if formula is not None and namespace is None:
        namespace = caller_namespace(1)
    names, discrete, scales = release_variables(cols, formula, columns, namespace)
    if source is None:
        check_used_columns(data, names)
    n = source.nrows() if source is not None else nrows(data)
    if n == 0:
        raise DPModelsError("data has no rows: there is nothing to randomize")
    dtypes = (source.dtypes(names) if source is not None  # schema only, never values
              else {nm: dtype_of(data, nm) for nm in names})
    check_dtypes(dtypes)
    domain = _local_bins(bins, n, epsilon, names, dtypes, discrete=discrete, bounds=bounds,
                         levels=levels, data_columns=cols, scales=scales)
    m = domain.size
    k = m + (1 if missing == "drop" else 0)
    if k > MAX_LOCAL_CELLS:
        raise DomainTooLargeError(
            f"the local channel would have k = {k:,} inputs (domain cells"
            + (" + the missing cell" if missing == "drop" else "") + f"), more than "
            f"{MAX_LOCAL_CELLS:,}: under local privacy every cell's estimate has variance of "
            "order n k / epsilon^2; use fewer bins or fewer variables")
    ch = Channel.choose(k, epsilon, channel)
    if ch.expected_work(n) > MAX_LOCAL_WORK:
        raise DomainTooLargeError(
            f"the {ch.name} channel on k = {k:,} cells for n = {n:,} rows needs about "
            f"{ch.expected_work(n):.3g} exact draws: use fewer cells, channel='auto' or fewer rows")
    def announce() -> None:
        if math.isinf(epsilon):
            warnings.warn(
                "epsilon=inf: the local release holds every row's TRUE cell and is NOT "
                "differentially private. Use it only to check results against the non-private "
                "fit.", NotPrivateWarning, stacklevel=user_stacklevel())

    def read():
        # ---- each row's cell: every refusal (an undeclared level, a missing value) ---------
        # An engine's rows are read more than once (n, the checks, the randomization):
        # every pass before the charge also counts them, and a frame whose rows changed
        # between two reads is refused here, not after the charge (_check_rows)
        cells_of = _BatchCells(domain, tuple(names), missing)
        cells, kept = None, None
        sizes = None  # the rows of each partition (Spark, Dask), counted before the charge
        if source is None:
            cells, problem = cells_of(data)
            _refuse([problem], domain, missing)
        elif source.batches_here and n <= _KEEP_ROWS:  # one read: the batches' cells kept here
            kept = source.map_partitions(list(names), _KeepCells(cells_of), positions=True)
            _refuse([p for _, _, p in kept], domain, missing)
            _check_rows(sum(c.size for _, c, _ in kept if c is not None), n, source.engine)
        elif source.engine == "pyspark":  # the engine's own counting query: no Python workers
            source.count(domain, missing=missing)  # (raises what _refuse raises, as pandas)
            sizes = source.partition_rows(list(names))  # (the randomization's positions)
            _check_rows(sum(sizes.values()), n, source.engine)
        else:  # Dask (or a large in-process frame): a first pass that only checks and counts
            checked = source.map_partitions(list(names), _CheckCells(cells_of))
            _refuse([p for p, _ in checked], domain, missing)
            _check_rows(sum(rows for _, rows in checked), n, source.engine)
            if not source.batches_here:  # Dask: partition i's rows, for the positions
                sizes = {i: rows for i, (_, rows) in enumerate(checked)}
        return cells_of, cells, kept, sizes

    def measure(first, bits, budget: str) -> LocalRelease:
        cells_of, cells, kept, sizes = first
        del first
        # ---- the channel, row by row, each row from its own stream -------------------------
        streams = RowStreams.from_source(bits)  # the release's key (secure unless seeded)
        per_row = None
        if source is None:
            assert cells is not None  # (_refuse raised otherwise)
            C, per_row = ch.counts(streams, cells)
            del cells
        elif kept is not None:
            C = _sum_counts([(start, c.size, ch.row_counts(streams, c, start))
                             for start, c, _ in kept], n, k)
            del kept
        else:
            C = _sum_counts(source.map_partitions(
                list(names), _RandomizeBatch(cells_of, ch, streams), positions=True,
                sizes=sizes), n, k)
        proj_total = int(project_to_counts(ch.debias(C, n), n)[:m].sum())
        report = LocalReport(
            epsilon=epsilon, private=math.isfinite(epsilon),
            mechanism=ch.describe(), channel=ch.name, p=ch.p, q=ch.q, k=k, domain_cells=m,
            missing=missing, n=n, n_source="rows handed in", variables=tuple(domain.describe().items()),
            noisy_total=proj_total, seeded=bits.seeded, budget=budget)
        return LocalRelease(domain, ch, C, report, per_row)

    return run_release(epsilon=epsilon, label=f"local release of {list(names)}",
                       accountant=accountant, random_state=random_state, read=read,
                       measure=measure, announce=announce)


def _check_rows(rows: int, n: int, engine: str) -> None:
    """Before the charge: the rows a pass over an engine's frame read are the
    n rows counted first (PRIVACY.md rule 10).  A frame whose rows change
    between reads (a non-deterministic filter or sample, a source that is
    being written) is refused here."""
    if int(rows) != int(n):
        raise DPModelsError(
            f"the {engine} frame's rows changed between two reads ({n:,} rows counted, then "
            f"{int(rows):,}): a local release reads them more than once and needs the same rows "
            "every time; nothing was charged or released. Cache or checkpoint the frame (or "
            "collect it) first")


def _sum_counts(parts: list, n: int, k: int) -> np.ndarray:
    """The report counts summed over the batches' ``(start, rows, counts)``
    (int64, length k), once their row positions are checked to be the n
    positions ``0 .. n - 1``, each once.  Two rows at one position would share
    a stream, and their reports would not be independent: that release is
    refused (nothing is published; the budget is already charged - a frame
    whose rows changed between two reads is refused before the charge, by
    `_check_rows()`, unless they change again after that check)."""
    total = np.zeros(k, np.int64)
    end, tiled = 0, True
    for start, rows, counts in sorted(parts, key=lambda part: (part[0], part[1])):
        if not rows:
            continue
        if int(start) != end:
            tiled = False
            break
        end += int(rows)
        total += np.asarray(counts, np.int64)
    if not tiled or end != n:
        raise DPModelsError(
            f"the engine handed over rows at positions that are not 0 .. {n - 1}, each once "
            "(its partitions or row count changed between two reads): nothing is released; "
            "cache or checkpoint the frame, or collect it first")
    return total


@dataclass(frozen=True)
class _Problem:
    """Why a batch of rows cannot be randomized: at ``axis`` (the first, in the
    domain's order, that the batch cannot code) a value of a type no level can
    match (``kind="type"``, ``detail`` the message) or undeclared values
    (``kind="undeclared"``, ``detail`` the first three, in row order); and the
    axes with a missing value."""

    axis: int | None = None
    kind: str = ""
    detail: Any = None
    missing_axes: tuple[int, ...] = ()


def _refuse(problems, domain: Domain, missing: str) -> None:
    """Raise what `_row_cells()` raises on all the rows at once, from the
    problems of their batches in order: the first axis a batch cannot code
    (a value no level can match, an undeclared value: its first three, over
    the batches), else with ``missing="raise"`` the first axis with a
    missing value."""
    problems = [p for p in problems if p is not None]
    bad = [p for p in problems if p.axis is not None]
    if bad:
        first = min(p.axis for p in bad)
        at = [p for p in bad if p.axis == first]
        axis = domain.axes[first]
        if at[0].kind == "type":
            raise DPModelsTypeError(
                f"{axis.name!r} holds values that cannot be matched to its declared levels "
                f"({at[0].detail}); recode the column to scalars (str, int, float, bool) first")
        examples = [v for p in at if p.kind == "undeclared" for v in p.detail][:3]
        raise undeclared_error(axis.name, examples)
    if missing == "raise":
        axes = sorted({a for p in problems for a in p.missing_axes})
        if axes:
            raise missing_error(domain.axes[axes[0]].name)


@dataclass(frozen=True)
class _BatchCells:
    """Each row's channel input in a batch of rows (a pandas frame, a mapping
    of arrays): ``(cells, problem)``, ``cells`` None when the batch cannot be
    coded.  Holds the public domain only: it pickles to Dask's and Spark's
    workers."""

    domain: Domain
    names: tuple[str, ...]
    missing: str

    def __call__(self, data) -> tuple[np.ndarray | None, _Problem]:
        n = nrows(data) if not isinstance(data, pd.DataFrame) else len(data)
        codes, miss, missing_axes = [], np.zeros(n, bool), []
        for i, name in enumerate(self.names):
            axis = self.domain.axis(name)
            values = _as_reference_input(data[name])
            try:
                c, mi, bad = axis.codes(values)
            except TypeError as exc:
                return None, _Problem(i, "type", str(exc))
            if bad.any():
                shown = np.asarray(values, dtype=object)[np.flatnonzero(bad)[:3]].tolist()
                return None, _Problem(i, "undeclared", shown)
            if mi.any():
                missing_axes.append(i)
            miss |= mi
            codes.append(np.where(mi, 0, c))
        problem = _Problem(missing_axes=tuple(missing_axes))
        if missing_axes and self.missing == "raise":
            return None, problem
        ids = self.domain.encode(codes).astype(np.int64)
        ids[miss] = self.domain.size
        return ids, problem


@dataclass(frozen=True)
class _CheckCells:
    """A first pass over an engine's batches: each batch's problem and its
    number of rows."""

    cells_of: _BatchCells

    def __call__(self, frame: pd.DataFrame) -> tuple[_Problem, int]:
        return self.cells_of(frame.reset_index(drop=True))[1], len(frame)


@dataclass(frozen=True)
class _KeepCells:
    """The one pass over the batches an engine hands to this process (Polars,
    DuckDB): ``(start, cells, problem)``, the cells as int16 (k <= 4096)."""

    cells_of: _BatchCells

    def __call__(self, frame: pd.DataFrame, start: int):
        cells, problem = self.cells_of(frame.reset_index(drop=True))
        return start, None if cells is None else cells.astype(np.int16), problem


@dataclass(frozen=True)
class _RandomizeBatch:
    """One batch's report counts (runs where the data live): each row's cell,
    through the channel from the row's own stream (its position ``start + i``);
    only ``(start, rows, k counts)`` come back."""

    cells_of: _BatchCells
    channel: Channel
    streams: RowStreams

    def __call__(self, frame: pd.DataFrame, start: int) -> tuple[int, int, np.ndarray]:
        cells, problem = self.cells_of(frame.reset_index(drop=True))
        if cells is None:  # the first pass refused these rows already: not reached
            _refuse([problem], self.cells_of.domain, self.cells_of.missing)
            raise AssertionError("a batch that cannot be coded")  # pragma: no cover
        return int(start), cells.size, self.channel.row_counts(self.streams, cells, int(start))


# ---- the bootstrap of a local release -----------------------------------------------------


@dataclass(frozen=True)
class LocalSimulator:
    """Replicate local releases (the bootstrap's simulation): n rows drawn
    from the projected estimate of the cell distribution, through the
    channel's law, debiased, projected and rounded as the release was.

    Has the interface the replicates of `dpmodels.inference.bootstrap` use
    (``support``, ``p_hat``, ``n``, ``hidden``, ``removed``, ``simulate``,
    ``chunk_size``, ``describe``).

    Examples
    --------
    >>> import numpy as np, pandas as pd, dpmodels as dpm
    >>> df = pd.DataFrame({"g": np.repeat(["a", "b"], [700, 300])})
    >>> rel = dpm.local.randomize(df, columns=["g"], epsilon=1.0, levels={"g": ["a", "b"]},
    ...                           missing="raise", random_state=0)
    >>> chunk = LocalSimulator(rel).simulate(np.random.default_rng(0), 5)
    >>> chunk.support_counts.shape, chunk.support_counts.sum(axis=1).tolist()
    ((5, 2), [1000, 1000, 1000, 1000, 1000])
    """

    release: LocalRelease
    support: np.ndarray = field(init=False)
    p_hat: np.ndarray = field(init=False)
    n: int = field(init=False)
    hidden: float = 0.0
    removed: float = 0.0
    _pop: np.ndarray = field(init=False, repr=False, compare=False)

    def __post_init__(self):
        m = self.release.domain.size
        object.__setattr__(self, "support", np.arange(m, dtype=np.uint64))
        pop = self.release.projected.astype(float)
        object.__setattr__(self, "p_hat", pop[:m] / self.release.n)
        object.__setattr__(self, "n", self.release.n)
        object.__setattr__(self, "_pop", pop / pop.sum())

    def chunk_size(self, n_boot: int) -> int:
        return int(max(1, min(n_boot, _CHUNK_ELEMENTS // max(4 * self.release.channel.k, 1))))

    def describe(self) -> str:
        ch = self.release.channel
        return (f"n = {self.n:,} rows from the projected estimate through the {ch.name} channel "
                f"(epsilon = {ch.epsilon:g} per row), debiased, projected and rounded")

    def simulate(self, rng: np.random.Generator, size: int):
        ch = self.release.channel
        truth = rng.multinomial(self.n, self._pop, size=size)
        counts = project_to_counts(ch.debias(ch.simulate(rng, truth), self.n), self.n)
        m = self.release.domain.size
        empty = np.zeros(0, np.int64)
        return ReplicateChunk(counts[:, :m].astype(np.int64), empty, np.zeros(0, np.uint64), empty)
