"""Local differential privacy: every row randomized on its own where it is
collected (Duchi, Jordan & Wainwright; Wang et al. 2017), and models fitted
from the debiased histogram of the reports.

The mechanism
-------------
* **Cells.**  The public domain of the released variables
  (:func:`dpmodels.domain.build_domain`: declared bounds, levels and bins);
  a row's cell is its mixed-radix cell id, as the histogram release computes
  it (:meth:`Axis.codes`, :meth:`Domain.encode`).  Under ``missing="drop"``
  (the default) a row with a missing value is in one more, public, cell
  "missing", randomized like any other and dropped only after debiasing:
  whether a row is missing is itself private, so it must not decide whether
  the row reports.  ``missing="raise"`` refuses such rows before anything is
  randomized.  So the channel has ``k = m + 1`` (or ``m``) inputs.
  ``bins="auto"`` follows the local rate (:func:`_local_bins`): far fewer
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
* **Exact sampling** (PRIVACY.md rule 1, applied to the channel):

  - k-RR by rejection: propose a uniform cell (a 64-bit word, rejection of
    the top partial block: exactly uniform), accept the true cell always and
    any other cell with probability ``e^-eps`` (an exact Bernoulli trial:
    ``G >= 1`` for the exact geometric variable of rate ``e^-eps``,
    :func:`dpmodels.exact.geometric`).  Conditioned on acceptance the report
    is the true cell with probability ``1 / (1 + (k-1) e^-eps) = p``: the
    k-RR law exactly.
  - OUE: the true bit from one random bit; the ``n (k - 1)`` other bits as
    the successes of independent Bernoulli(``1 / (e^eps + 1)``) trials
    (:func:`dpmodels.exact.bernoulli_positions`, with failure probability
    ``P(Z < 1) = e^eps / (e^eps + 1)`` of the discrete Laplace law of
    parameter ``2 epsilon``, exactly enclosed).  Only each cell's number of
    1-bits is kept (the sufficient statistic); the law of that aggregate is
    the law of n independent OUE reports summed.

* **Post-processing.**  The debiased estimate ``(C_c - n q) / (p - q)`` of
  each cell's count is unbiased (negative entries possible); its Euclidean
  projection onto ``{x >= 0, sum x = n}`` is rounded to integers with the
  same total (largest remainders), and the missing cell is dropped: a
  :class:`~dpmodels.release.PrivateHistogram`-shaped release on which every
  ``dp_*`` model fits.  Its standard errors come from a parametric bootstrap
  of THIS channel (:class:`LocalSimulator`): n rows drawn from the projected
  cell distribution, through the channel, debiased, projected, rounded,
  refitted.

``epsilon=inf`` reports every row's true cell (NOT private, with a
:class:`~dpmodels.errors.NotPrivateWarning`).
"""

from __future__ import annotations

import math
import os
import pathlib
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import ClassVar

import numpy as np
import pandas as pd

from .accountant import Accountant, charge
from .columns import columns_of, dtype_of, nrows
from .domain import AUTO_BINS_MAX, AUTO_BINS_MIN, Domain, build_domain
from .errors import DomainTooLargeError, DPModelsError, DPModelsTypeError, NotPrivateWarning
from .exact import LogRate, bernoulli_positions, geometric, uniform_below
from .formula import caller_namespace, user_stacklevel
from .histogram import _as_reference_input, _undeclared_error, missing_error
from .randomness import random_source
from .release import PrivateHistogram, release_variables
from .report import Release, ReleaseReport, closing_rows
from .saving import save_release
from .simulation import ReplicateChunk
from .validation import check_choice, check_dtypes, check_epsilon, check_release_arguments, check_used_columns

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
#: Rows per chunk of the exact OUE sampler.
_OUE_CHUNK_TRIALS = 1 << 24
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
        """The channel of smaller debiased variance (public inputs only)."""
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
        """Exact variance of the debiased counts of cells with true counts ``counts``."""
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
        """Expected number of exact draws of :meth:`counts` for n rows."""
        if self.name == "krr":
            return n * self.k / (1.0 + (self.k - 1) * math.exp(-self.epsilon))
        if self.name == "oue":
            return n * (1.0 + (self.k - 1) * self.q)
        return float(n)

    # -- exact sampling (the release) --------------------------------------------------
    def reports(self, source, cells: np.ndarray) -> np.ndarray:
        """Each row's randomized report, exactly, from the word source
        ``source`` (k-RR and identity: one cell per row, int64; OUE: a
        ``(rows, k)`` bool matrix, for small inputs such as audits).

        Examples
        --------
        >>> Channel.choose(3, 1.0).reports(0, np.array([0, 1, 2, 2])).shape
        (4,)
        """
        bits = random_source(source)
        cells = np.asarray(cells, dtype=np.int64)
        if self.name == "identity":
            return cells.copy()
        if self.name == "krr":
            return _krr_exact(bits, cells, self.k, self.epsilon)
        out = np.zeros((cells.size, self.k), bool)
        out[np.arange(cells.size), cells] = _fair_bits(bits, cells.size)
        for rows, others in _oue_other_bits(bits, cells, self.k, self.epsilon):
            out[rows, others] = True
        return out

    def counts(self, source, cells: np.ndarray) -> tuple[np.ndarray, np.ndarray | None]:
        """``(C, reports)``: each cell's report count, exactly, and the
        per-row reports when they are one cell each (k-RR, identity), else None."""
        bits = random_source(source)
        cells = np.asarray(cells, dtype=np.int64)
        if self.name in ("identity", "krr"):
            rep = self.reports(bits, cells)
            return np.bincount(rep, minlength=self.k).astype(np.int64), rep
        C = np.bincount(cells, weights=_fair_bits(bits, cells.size),
                        minlength=self.k).astype(np.int64)
        for _, others in _oue_other_bits(bits, cells, self.k, self.epsilon):
            C += np.bincount(others, minlength=self.k).astype(np.int64)
        return C, None

    # -- post-processing --------------------------------------------------------------
    def debias(self, C: np.ndarray, n: int) -> np.ndarray:
        """Unbiased estimate ``(C - n q) / (p - q)`` of the true counts
        (along the last axis of ``C``)."""
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


def _fair_bits(bits, size: int) -> np.ndarray:
    """``size`` exact fair coin flips (0/1 int64): the top bit of a word each."""
    if size <= 0:
        return np.zeros(0, np.int64)
    return (bits.words(size) >> np.uint64(63)).astype(np.int64)


def _krr_exact(bits, cells: np.ndarray, k: int, epsilon: float) -> np.ndarray:
    """k-RR by rejection (module docstring): exact."""
    out = np.empty(cells.size, np.int64)
    todo = np.arange(cells.size)
    rate = LogRate.of_q(2.0 * epsilon)  # rho = exp(-epsilon): P(G >= 1) = e^-eps
    while todo.size:
        prop = uniform_below(bits, k, todo.size).astype(np.int64)
        same = prop == cells[todo]
        accept = same.copy()
        other = np.flatnonzero(~same)
        if other.size:
            accept[other] = geometric(bits, rate, other.size) >= 1
        out[todo[accept]] = prop[accept]
        todo = todo[~accept]
    return out


def _oue_other_bits(bits, cells: np.ndarray, k: int, epsilon: float):
    """The 1-bits of the cells other than each row's own, exactly: yields
    ``(rows, cells)`` of the successes, chunk by chunk.  Trial ``t`` of a
    chunk is row ``t // (k-1)``'s ``t % (k-1)``-th other cell."""
    if k < 2 or cells.size == 0:
        return
    rate = LogRate.no_cross(2.0 * epsilon, 1)  # failure prob e^eps/(e^eps+1)
    per = k - 1
    step = max(1, _OUE_CHUNK_TRIALS // per)
    for start in range(0, cells.size, step):
        own = cells[start:start + step]
        pos = bernoulli_positions(bits, rate, own.size * per).astype(np.int64)
        row = pos // per
        j = pos % per
        yield start + row, j + (j >= own[row])


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
    mechanism : str
    channel : str
        "krr", "oue" or "identity".
    p, q : float
        The channel's probabilities (see :class:`Channel`).
    k : int
        Number of channel inputs (domain cells, plus the missing cell).
    domain_cells : int
    missing : str
        "drop" (a missing cell, randomized and then dropped) or "raise".
    n : int
        The number of rows, each of which made one report (public).
    n_source : str
    variables : tuple of (name, description)
    noisy_total : int
        Total of the histogram the models fit on (missing cell dropped).
    seeded : bool
    budget : str
    """

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
    """The :class:`~dpmodels.release.PrivateHistogram` of a local release:
    the projected, rounded estimate of the cell counts, missing cell dropped.
    Models fitted on it (through the ``dp_*`` functions or the model
    classes ``DPOLS`` etc. directly) bootstrap the local channel
    (:meth:`simulators`)."""

    #: Saved as the local release it is a view of (:meth:`save`).
    saved_kind: ClassVar[str] = "local"

    local: LocalRelease | None = field(default=None, repr=False, compare=False)
    _dpm_local = True

    def simulators(self, population: str = "deconvolved") -> list:
        """The local channel's simulation (:class:`LocalSimulator`): the
        parametric bootstrap of any model fitted on this histogram replicates
        the local release, not the central one."""
        if self.local is None:
            raise DPModelsError("this LocalHistogram has no local release to simulate: make it "
                                "with LocalRelease.histogram")
        return [LocalSimulator(self.local)]

    def save(self, path: str | os.PathLike) -> pathlib.Path:
        """Write the local release this histogram is a view of
        (:meth:`LocalRelease.save`): :func:`dpmodels.load_release` reads back
        that :class:`LocalRelease`, on which every ``dp_*`` model fits as on
        this histogram."""
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
        Each row's report (k-RR: the reported cell), None for OUE (k bits a
        row: only their sums are kept).

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
    #: The release's kind in a saved file (:mod:`dpmodels.saved`).
    saved_kind: ClassVar[str] = "local"

    def __post_init__(self):
        self.report_counts.setflags(write=False)
        if self.reports is not None:
            self.reports.setflags(write=False)

    @property
    def n(self) -> int:
        return int(self.report.n)

    @property
    def variables(self) -> tuple[str, ...]:
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
        row's report).  Read it back with :func:`dpmodels.load_release`; see
        :mod:`dpmodels.saved`.

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
    data : pandas.DataFrame or mapping of str to array-like
        The raw rows (read once, never modified).  Each row's cell of the
        public domain goes through the channel independently of every other.
    columns : sequence of str, optional
        The variables randomized (jointly: one cell per row).  Or ``formula``.
    formula : str, optional
        A patsy formula whose raw variables are randomized.
    epsilon : float
        Each row's privacy parameter (> 0); ``inf``: no randomization, NOT private.
    bounds, levels : dict
        Public bounds of continuous variables and level sets of discrete ones,
        as for :func:`dpmodels.release`.
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
    if not isinstance(data, (pd.DataFrame, Mapping)):
        raise DPModelsTypeError(
            "randomize reads the rows in this process: data must be a pandas DataFrame or a "
            f"mapping of column name to array, got {type(data).__name__} (convert it first, "
            "e.g. with .to_pandas())")
    epsilon = check_epsilon(epsilon)
    if math.isfinite(epsilon) and not math.isfinite(2.0 * epsilon):
        raise DPModelsError(f"epsilon={epsilon:g} is too large to sample exactly: use a smaller one")
    cols = columns_of(data)
    if formula is not None and namespace is None:
        namespace = caller_namespace(1)
    names, discrete, scales = release_variables(cols, formula, columns, namespace)
    check_used_columns(data, names)
    n = nrows(data)
    if n == 0:
        raise DPModelsError("data has no rows: there is nothing to randomize")
    dtypes = {nm: dtype_of(data, nm) for nm in names}
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
    if accountant is not None:
        accountant.check(epsilon, f"local release of {list(names)}")
    if math.isinf(epsilon):
        warnings.warn(
            "epsilon=inf: the local release holds every row's TRUE cell and is NOT "
            "differentially private. Use it only to check results against the non-private fit.",
            NotPrivateWarning, stacklevel=user_stacklevel())

    # ---- each row's cell (the one pass over the rows) --------------------------------
    cells = _row_cells(data, domain, names, missing, n)

    # ---- the channel, row by row ------------------------------------------------------
    budget = charge(accountant, epsilon, f"local release of {list(names)}")
    bits = random_source(random_state)
    C, per_row = ch.counts(bits, cells)
    del cells
    proj_total = int(project_to_counts(ch.debias(C, n), n)[:m].sum())
    report = LocalReport(
        epsilon=epsilon, private=math.isfinite(epsilon),
        mechanism=ch.describe(), channel=ch.name, p=ch.p, q=ch.q, k=k, domain_cells=m,
        missing=missing, n=n, n_source="rows handed in", variables=tuple(domain.describe().items()),
        noisy_total=proj_total, seeded=bits.seeded, budget=budget)
    return LocalRelease(domain, ch, C, report, per_row)


def _row_cells(data, domain: Domain, names, missing: str, n: int) -> np.ndarray:
    """Each row's channel input: its cell id, or m (the missing cell)."""
    codes, miss = [], np.zeros(n, bool)
    missing_axes = []
    for name in names:
        axis = domain.axis(name)
        values = _as_reference_input(data[name])
        try:
            c, mi, bad = axis.codes(values)
        except TypeError as exc:
            raise DPModelsTypeError(
                f"{name!r} holds values that cannot be matched to its declared levels ({exc}); "
                "recode the column to scalars (str, int, float, bool) first") from None
        if bad.any():
            raise _undeclared_error(axis, values, bad)
        if mi.any():
            missing_axes.append(name)
        miss |= mi
        codes.append(np.where(mi, 0, c))
    if missing_axes and missing == "raise":
        raise missing_error(missing_axes[0])
    ids = domain.encode(codes).astype(np.int64)
    ids[miss] = domain.size
    return ids


# ---- the bootstrap of a local release -----------------------------------------------------


@dataclass(frozen=True)
class LocalSimulator:
    """Replicate local releases (the bootstrap's simulation): n rows drawn
    from the projected estimate of the cell distribution, through the
    channel's law, debiased, projected and rounded as the release was.

    Has the interface the replicates of :mod:`dpmodels.bootstrap` use
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
