"""Sample-and-aggregate: Smith's (2008, 2011) private point estimator.

The rows are split at random into k disjoint blocks; the model's own
statsmodels estimator (OLS, Logit, QuantReg at q, MNLogit) is fitted on
each block; each block's estimate is clamped to a range per coefficient, the
clamped estimates are averaged and noise is added.  Smith shows that with k
growing (and the blocks' estimator bias-corrected) the result is distributed
as the maximum likelihood estimator: the privacy noise and the loss of
efficiency of small blocks vanish against the sampling error.

Mechanism (epsilon-DP, delta = 0, replace-one neighbours, public n)
------------------------------------------------------------------
1. **Public design.**  The design columns, their names and ranges come from
   the public domain (`dpmodels.mechanisms.moments.design_space()`); continuous
   values are clipped to their bounds, discrete ones matched to their
   declared levels (per-row maps), rows with a missing value are dropped
   (``missing="drop"``) or refused (``"raise"``).
2. **Blocks.**  The rows handed in (their number n is public: neighbours
   have the same) are sorted by ``(w_i, i)``, ``w_i`` the word of row
   position i under a 128-bit key drawn from the release's source (secure by
   default; `RowStreams`, AES-128 of the position),
   and cut into k blocks of sizes differing by at most one
   (`row_order()`); a dropped row leaves a hole in its block.  The words
   behave as independent uniform words (AES is a pseudorandom permutation),
   so the partition is a uniform random one into blocks of those sizes; it
   depends on the key, n and k only, never on a value, which is all the
   privacy argument below needs.  ``k`` is the caller's ``blocks`` or
   `default_blocks()` (public n, number of parameters p, epsilon).  A
   row belongs to one block, so a replace-one change moves **one block's
   estimate** and nothing else, whatever the data.
3. **Block estimates.**  statsmodels' fit on the block's rows, bias-corrected
   as Smith's estimator asks (the MLE minus an estimate of its first-order
   bias): ``bias_correction="firth"`` (the logit's default) adds
   `firth_step()`, the analytic Cox-Snell correction; ``"split-half"``
   (any family) takes ``2 b - (b1 + b2) / 2`` from the fits b on the block
   and b1, b2 on its halves (a delete-half jackknife; on logit blocks of 10
   rows per parameter it over-corrects: ``benchmarks/sample_aggregate.py
   --bias``).  OLS is unbiased, and quantreg and mnlogit default to none.
   A block whose fit fails (singular design, separation, a level absent, no
   convergence; QuantReg's IRLS at its iteration limit is kept) takes the
   centre of the range: a public value, never an exception.  The estimates
   are taken in *working coordinates*: the coefficients themselves when
   ``param_bounds`` is given, else standardized ones (each slope times its
   column's public half-range over the response's; the intercept at the
   design's centre), an affine map fixed by the public design.
4. **Range (only without param_bounds; epsilon_r, at most 20%).**  Per
   working coordinate j, a private median and a private median absolute
   deviation (MAD) of the blocks' estimates, each by the exponential
   mechanism over the cells of a public grid (`range_grids()`: the cut
   points ``-RANGE_LIMIT, ..., RANGE_LIMIT`` for the median and ``RANGE_STEP,
   ..., 2 RANGE_LIMIT`` for the MAD, step ``RANGE_STEP = 1/128``; the cells
   between consecutive cuts and the two unbounded end cells, RANGE_CELLS =
   2050 and 2049).  The values ranked are the blocks' estimates v_bj, a
   failed block at 0 (public); ``T = k // 2``.  With ``C_i`` the number of
   values at or below cut i (0 and k at the ends), a cell's rank distance is
   ``d = max(0, C_i - T, T - C_{i+1})``: 0 for the cell holding the T-th
   smallest value (always one), else how many values it misses by.  The
   median ranks the ``v_bj``, the MAD the ``|v_bj - m_j|`` about the released
   median m_j.  Neighbours (replace-one) move one block's estimate, so every
   count, hence every d, moves by at most 1: **sensitivity 1** for each
   utility ``-d``, whatever the data.  Noise law: ``P(cell) = exp(-e d / 2) /
   sum exp(-e d' / 2)``, sampled exactly
   (`dpmodels.mechanisms.selection.exponential_choice()`: integer distances, a
   uniform proposal accepted by an exact geometric draw); each draw is e-DP,
   and the 2p draws compose to ``2 p e <= epsilon_r`` (``e`` =
   `range_epsilon()`, rounded down until that holds in exact rational
   arithmetic).  Released values (`range_outputs()`): a median cell's
   midpoint (an end cell: the grid's end), a MAD cell's upper end.  The range
   is ``m_j -+ RANGE_WIDEN h_j`` (6 MADs: 4.05 standard deviations of a
   normal), cut to ``[-RANGE_LIMIT, RANGE_LIMIT]``.  The rank error is known
   in advance: a draw lands at a rank distance of T or more (outside the
   blocks' estimates) with probability at most ``RANGE_CELLS exp(-e T / 2)``.
   The step runs only when that bound is at most ``RANGE_BETA = 1e-3``
   (`range_feasible()`: public k, p, epsilon; 5,234 blocks at 9
   parameters and epsilon = 1), with ``epsilon_r`` = `range_budget()`:
   ``RANGE_MARGIN = 2`` times the least budget meeting it, at most 20% of
   epsilon.  With fewer blocks the public default range ``[-RANGE_LIMIT,
   RANGE_LIMIT]`` is used (a ReleaseWarning says so) and epsilon_r = 0.
5. **Mean (epsilon_m = epsilon - epsilon_r - epsilon_v).**  Each block's
   coordinate is clamped to its range ``[lo_j, hi_j]`` and quantized to
   ``t = round(G (w - lo_j) / (hi_j - lo_j))`` in ``{0, ..., G}``
   (``G = GRID_UNITS``); the integer sums ``S_j = sum_b t_bj`` are released.
   One block moves each ``t`` by at most G: L1 sensitivity ``p G`` (L1 over
   the coordinates, each in units of its own range: the same as an equal
   split of epsilon_m over the coordinates, the minimax split when nothing
   public says which coefficient matters more).  Noise: exact discrete Laplace
   ``P(z) ~ exp(-epsilon_m |z| / (p G))`` on each sum.  The estimate is
   ``lo_j + (hi_j - lo_j) S~_j / (k G)``, mapped back to the coefficients.
   With these sums, the number of blocks whose fit failed, in units of G,
   is released the same way (one more sum: a row moves one block's flag by
   at most G, so the L1 sensitivity is ``(p + 1) G`` and each of the p + 1
   sums gets ``P(z) ~ exp(-epsilon_m |z| / ((p + 1) G))``).  Post-processing
   of the noisy failed share f: the estimate of the fitted blocks' mean is
   ``c + (m - c) / (1 - f)`` (c the range's centre, where failed blocks
   sit), with the noise scaled by ``1 / (1 - f)`` plus the error of f, and
   the spread by ``1 / (1 - f)`` (k (1 - f) blocks); above
   MAX_FAILED_BLOCKS failed (f plus two noise SDs), every coefficient is
   reported without information.
6. **Spread (epsilon_v = 10%).**  For the standard errors: with c the
   released mean (post-processing, clamped to the range), the sums
   ``sum_b round(G |w_bj - c_j| / (hi_j - lo_j))`` (each term in ``[0, G]``):
   L1 sensitivity ``p G`` again, the same noise law.

Each part's parameters depend on public inputs and on the earlier parts'
released outputs only (sequential composition); the parts add up to epsilon
(PRIVACY.md rule 8).  ``epsilon=inf`` publishes the exact average of the
blocks' estimates (failed blocks left out), without clamping or noise, and
their exact sample variance (NOT private).

Engines
-------
On a Dask, Spark, DuckDB or Polars lazy frame the same release is made where
the data live, bit for bit the pandas one with the same seed.  A first pass
(before the charge) builds every batch's design rows, exactly as above, and
runs every check (an undeclared level, a missing value: the same error as
on pandas; Dask and Polars/DuckDB keep the designs for the second pass,
Spark reads again) and counts the rows of each batch, hence each row's
position.  After the charge, the driver computes from the key, n and k only
the k - 1 cut points of the sorted ``(w_i, i)`` (`block_cuts()`, in
bounded memory); each batch gives its rows their block (`block_ids()`),
the rows of each block are gathered (Dask: a graph of groups of blocks,
Spark: a block column added in ``mapInPandas`` and ``groupBy`` of groups
of blocks with ``applyInPandas``, Polars and DuckDB: in this process), each
block is ordered by ``(w_i, i)`` as `row_order()` orders it and fitted
there; only the k block fits come back.  The key (16 bytes) goes to Dask's
and Spark's workers with the tasks: privacy does not need the partition to
be secret (any partition fixed independently of the values gives the
guarantee above), only the blocks' law does (a uniform random partition).

Standard errors
---------------
The released mean's variance is ``Var(clamped block estimate) / k`` plus the
noise's (known) variance.  The first comes from step 6: an upper estimate of
the mean absolute deviation about c (the noisy one plus two noise standard
deviations, times ``1 + 2 / sqrt(k)`` for its own sampling error), turned
into a variance as a normal's (``pi/2 MAD**2``: the blocks' estimates are
asymptotically normal, Smith's premise) and capped by the distribution-free
bounds ``(hi - lo) MAD`` and ``(hi - lo)**2 / 4`` (`spread_bound()`).  With
few blocks the noise on the MAD makes these caps bind: the standard errors
are then wider than the estimates' spread (conservative).  Intervals use
the law of a normal plus the Laplace noise (heavier-tailed than a normal);
a coefficient that is a combination of several working coordinates (the
intercept of the standardized coordinates) gets the sum of their half-widths
(valid whatever their correlation).  Not covered: the clamping bias when a
range cuts the blocks' distribution unevenly (a too-narrow ``param_bounds``;
the private range, 6 MADs about the median, holds 4 standard deviations of a
normal on each side, but a skewed block distribution may lose more on one
side), and the blocks' estimator's bias (small blocks of a logit without the
bias correction).
"""

from __future__ import annotations

import math
import numbers
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import TYPE_CHECKING, ClassVar

import numpy as np
from scipy import optimize, special, stats

from ...core.accountant import Accountant
from ...core.budget import exact_parts
from ...core.errors import DomainError, DPModelsError, NotPrivateWarning, ReleaseWarning
from ...core.exact import MIN_EPSILON, discrete_laplace, discrete_laplace_variance
from ...core.keywords import checked_keywords
from ...core.report import Release, ReleaseReport, closing_rows, opening_rows
from ...core.streams import RowStreams
from ...data.clipping import (
    CLIP_SHARE,
    OutsideBounds,
    clipping_axes,
    exact_outside,
)
from ...data.clipping import split_label as clip_split_label
from ...data.engines import source_for
from ...domain.formula import build_design, caller_namespace, equation_names, user_stacklevel
from ..moments import _to_pandas, describe_axis, design_space, public_inputs, published_frame
from ..moments import unit_epsilon as vector_unit_epsilon
from ..newton import binary_response, check_binary_levels
from ..pipeline import released_outside, run_release
from ..selection import exponential_choice

if TYPE_CHECKING:
    from ...domain.axes import Domain
    from ..moments import DesignSpace

__all__ = ["PrivateSampleAggregate", "SampleAggregateReport", "release_sample_aggregate",
           "default_blocks", "normal_laplace_quantile", "firth_step",
           "FAMILIES", "RANGE_SHARE", "SPREAD_SHARE", "GRID_UNITS"]

#: The model families and their statsmodels estimator.
FAMILIES = ("ols", "logit", "quantreg", "mnlogit")
#: Shares of epsilon: the private range (without param_bounds) and the spread.
RANGE_SHARE = 0.2
SPREAD_SHARE = 0.1
#: Quantization units per range of a coordinate (steps 5 and 6).
GRID_UNITS = 2**16
#: Public grids of the private range, in standardized coordinates: cut points on
#: [-RANGE_LIMIT, RANGE_LIMIT] and half-widths on (0, 2 RANGE_LIMIT] (`range_grids()`);
#: each mechanism chooses one of RANGE_CELLS cells.
RANGE_LIMIT = 8.0
RANGE_POINTS = 2049
RANGE_STEP = 2.0 * RANGE_LIMIT / (RANGE_POINTS - 1)
RANGE_CELLS = RANGE_POINTS + 1
#: Bound on each range mechanism's chance of a rank error of k // 2 (sets the least k).
RANGE_BETA = 1e-3
#: Step 4 spends RANGE_MARGIN times the least budget meeting that bound (at most RANGE_SHARE).
RANGE_MARGIN = 2.0
#: The range is the private median plus or minus RANGE_WIDEN private median
#: absolute deviations (a normal's MAD is 0.674 sd: +-4.05 sd).
RANGE_WIDEN = 6.0
#: Smallest block, in rows per parameter (the default k never goes below it).
MIN_ROWS_PER_PARAMETER = {"ols": 2, "quantreg": 5, "logit": 10, "mnlogit": 10}
#: Half-width, in the blocks' standard deviations, of the range the default k assumes.
RANGE_SDS = 4.0
#: Above this share of blocks whose fit failed (an upper estimate: the noisy
#: share plus two noise SDs), the release carries no information about any
#: coefficient: its mean would be mostly the range's centre, where failed
#: blocks sit, and the few blocks that could be fitted are a selected subset
#: (those holding every level of a rare factor).  On fair's logit (18
#: coefficients, blocks of 180 rows) 98-100% of the blocks failed, and the
#: estimate was the centre (about 0) with intervals narrow enough to exclude
#: every true coefficient at 10x the data's size (benchmarks/real_validity.py).
MAX_FAILED_BLOCKS = 0.5
#: Default bias correction per family.
DEFAULT_BIAS_CORRECTION = {"ols": None, "quantreg": None, "logit": "firth", "mnlogit": None}


# ---- public choices ----------------------------------------------------------------------


def default_blocks(n: int, p: int, epsilon: float, family: str = "ols") -> int:
    """The default number of blocks k, from public inputs only.

    With blocks of m rows the average's variance is about ``m / (m - p - 1)``
    times the MLE's (small-block inefficiency) plus the noise's, about
    ``8 p**2 W**2 m / (n epsilon_m**2)`` times it when the range spans
    ``2 W`` block standard deviations (``W = RANGE_SDS``, epsilon_m = 70% of
    epsilon).  Their sum is smallest at
    ``m = p + 1 + sqrt((p + 1) n) epsilon_m / (2 sqrt(2) p W)``; m is raised to
    ``MIN_ROWS_PER_PARAMETER[family] * p`` (a logit needs enough rows per
    block to have an MLE), and ``k = n // m``, at least 2.

    Parameters
    ----------
    n : int
        The public number of rows.
    p : int
        The number of parameters.
    epsilon : float
        The release's epsilon.
    family : {"ols", "logit", "quantreg", "mnlogit"}
        The model fitted on each block.

    Returns
    -------
    int

    Examples
    --------
    >>> default_blocks(10_000, 9, 1.0, "ols"), default_blocks(1_000_000, 9, 1.0, "ols")
    (555, 31250)
    >>> default_blocks(1_000_000, 9, 1.0, "logit")
    11111
    """
    n, p = int(n), int(p)
    # (an epsilon beyond 1e6 leaves the noise negligible: the blocks are as for 1e6, and
    # no float below overflows near the largest epsilon)
    eps_m = (1.0 - RANGE_SHARE - SPREAD_SHARE) * min(epsilon, 1e6)
    m = p + 1 + math.sqrt((p + 1) * n) * eps_m / (2.0 * math.sqrt(2.0) * p * RANGE_SDS)
    m = max(m, MIN_ROWS_PER_PARAMETER.get(family, 2) * p, p + 2)
    return max(2, int(n // math.ceil(m)))


# ---- the release value -----------------------------------------------------------------


@dataclass(frozen=True)
class SampleAggregateReport(ReleaseReport):
    """The privacy report of a sample-and-aggregate release.

    Attributes
    ----------
    epsilon : float
        Total privacy parameter (pure DP, delta = 0); ``inf`` when not private.
    private : bool
        False only for ``epsilon=inf`` (no noise: not private).
    mechanism : str
        The mechanism's name, as the summary's privacy block prints it.
    split : tuple of (str, float)
        The parts of epsilon (they add up to ``epsilon``).
    n : int
        The public number of rows.
    n_source : str
        "rows handed in" or "declared by the caller".
    blocks : int
        The number k of blocks.
    block_rows : str
        Rows per block (of the rows handed in, missing values included).
    range_source : str
        "param_bounds (public)", "private range (exponential-mechanism median
        +- 6 MAD)", "public default range (too few blocks for a private one)"
        or "none (exact)": a function of public inputs (k, p, epsilon).
    bias_correction : str
    variables : tuple of (name, description)
        The public domain of each variable.
    columns : tuple of str
        The parameters released, in order.
    seeded : bool
        True when a ``random_state`` made the noise reproducible.
    budget : str
        How the release was charged to an `Accountant` ("no accountant" when none).
    outside_bounds : OutsideBounds or None
        Noisy counts of rows outside each bounded variable's declared bounds
        (`dpmodels.data.clipping`); None when no variable can clip.
    """

    #: The fields computed from the noise: none, every field is a public input,
    #: equal on neighbouring data sets.
    NOISY_FIELDS: ClassVar[tuple[str, ...] | None] = ()

    epsilon: float
    private: bool
    mechanism: str
    split: tuple
    n: int
    n_source: str
    blocks: int
    block_rows: str
    range_source: str
    bias_correction: str
    variables: tuple
    columns: tuple
    seeded: bool
    budget: str = "no accountant"
    outside_bounds: OutsideBounds | None = None

    def rows(self) -> list[tuple[str, str]]:
        """(label, value) pairs, in display order, for summaries."""
        rows = opening_rows(self)
        rows += [
            ("Public n:", f"{self.n} ({self.n_source})"),
            ("Blocks:", f"{self.blocks:,} of {self.block_rows} rows"),
            ("Ranges:", self.range_source),
            ("Bias correction:", self.bias_correction),
        ]
        return rows + closing_rows(self)


@dataclass(frozen=True, eq=False)
class PrivateSampleAggregate(Release):
    """A released sample-and-aggregate estimate (everything derived from it
    is post-processing).

    Attributes
    ----------
    family : str
        "ols", "logit", "quantreg" or "mnlogit".
    formula : str
    q : float or None
        The quantile (quantreg).
    exog_names : tuple of str
        Design columns, from the public design.
    endog_name : str
    ynames : tuple
        mnlogit: the response's declared levels (the first is the base).
    names : tuple of str
        The released parameters, in order (mnlogit: ``"x[level]"``, by equation).
    blocks : int
    A, b : ndarray
        Working coordinates ``w = A theta + b`` of the parameter vector theta.
    lo, hi : ndarray
        Each working coordinate's range (``-inf, inf`` when not private).
    working : ndarray
        The released mean of the clamped block estimates (working coordinates).
    noise_scale : ndarray
        Scale of the Laplace noise on each working coordinate (0 when not private).
    spread : ndarray
        The upper estimate of each working coordinate's block variance
        (`spread_bound()`; the exact sample variance when not private).
    params : ndarray
        ``theta``: the estimate in the model's coefficients.
    space : DesignSpace
        The public design.
    report : SampleAggregateReport
        The privacy report (also ``privacy``).
    failed_share : float
        The (noisy, when private) share of blocks whose fit failed.
    no_information : bool
        True when too many blocks failed: no coefficient is supported
        (infinite standard errors and intervals, p = 1).
    """

    family: str
    formula: str
    q: float | None
    exog_names: tuple
    endog_name: str
    ynames: tuple
    names: tuple
    blocks: int
    A: np.ndarray
    b: np.ndarray
    lo: np.ndarray
    hi: np.ndarray
    working: np.ndarray
    noise_scale: np.ndarray
    spread: np.ndarray
    params: np.ndarray
    space: DesignSpace = field(repr=False)
    # always passed (Release's contract); the None default only lets it precede defaulted fields
    report: SampleAggregateReport = None  # type: ignore[assignment]
    #: The (noisy, when private) share of blocks whose fit failed.
    failed_share: float = 0.0
    #: True when more than MAX_FAILED_BLOCKS of the blocks failed (an upper
    #: estimate): no coefficient is supported (infinite SEs and intervals, p = 1).
    no_information: bool = False

    #: Marker read by `dpmodels.front.routing` (a release handed in as ``data``).
    _dpm_sample_aggregate = True

    @property
    def sampling_sd(self) -> np.ndarray:
        """Standard deviation of the sampling part of each working coordinate."""
        return np.sqrt(np.asarray(self.spread, float) / self.blocks)

    def _combination(self) -> np.ndarray:
        """|A^-1|: how each parameter combines the working coordinates."""
        return np.abs(np.linalg.inv(self.A))

    @property
    def bse(self) -> np.ndarray:
        """Standard errors of ``params`` (sampling and noise; an upper bound
        for a parameter that combines several working coordinates)."""
        if self.no_information:
            return np.full(self.params.size, np.inf)
        sd = np.sqrt(self.sampling_sd**2 + 2.0 * self.noise_scale**2)
        return self._combination() @ sd

    def half_width(self, alpha: float = 0.05) -> np.ndarray:
        """Half-width of the ``1 - alpha`` interval of each parameter.

        Parameters
        ----------
        alpha : float
            1 - the intervals' level (default 0.05).

        Returns
        -------
        numpy.ndarray
        """
        if self.no_information:
            return np.full(self.params.size, np.inf)
        w = np.array([normal_laplace_quantile(s, b, 1.0 - alpha / 2.0)
                      for s, b in zip(self.sampling_sd, self.noise_scale)])
        return self._combination() @ w

    def pvalues(self) -> np.ndarray:
        """Two-sided p-values of ``params == 0``, under the normal-plus-Laplace law."""
        if self.no_information:
            return np.ones(self.params.size)
        C = self._combination()
        s, b = C @ self.sampling_sd, C @ self.noise_scale
        return np.array([min(1.0, 2.0 * normal_laplace_sf(abs(t), si, bi))
                         for t, si, bi in zip(self.params, s, b)])

    def __repr__(self) -> str:
        return (f"PrivateSampleAggregate({self.formula!r}, family={self.family!r}, "
                f"epsilon={self.report.epsilon:g}, blocks={self.blocks})")

    def __str__(self) -> str:
        return repr(self) + "\n" + str(self.report)


# ---- the law of a normal plus a Laplace variable ----------------------------------------


def normal_laplace_sf(x: float, s: float, b: float) -> float:
    """``P(N(0, s**2) + Laplace(b) > x)`` (closed form; either part may be 0).

    Examples
    --------
    >>> round(normal_laplace_sf(1.96, 1.0, 0.0), 3)
    0.025
    >>> round(normal_laplace_sf(math.log(2), 0.0, 1.0), 3)
    0.25
    """
    if b <= 0:
        return float(stats.norm.sf(x / s)) if s > 0 else float(x < 0)
    if s <= 0:
        return 0.5 * math.exp(-x / b) if x >= 0 else 1.0 - 0.5 * math.exp(x / b)
    # X = N + L: P(X > x) = Phi(-x/s) + (1/2)[e^{a - x/b} Phi(x/s - s/b) - e^{a + x/b} Phi(-x/s - s/b)]
    a = s * s / (2 * b * b)
    t1 = math.exp(min(a - x / b + special.log_ndtr(x / s - s / b), 700.0))
    t2 = math.exp(min(a + x / b + special.log_ndtr(-x / s - s / b), 700.0))
    return float(min(1.0, max(0.0, special.ndtr(-x / s) + 0.5 * (t1 - t2))))


def normal_laplace_quantile(s: float, b: float, prob: float) -> float:
    """The ``prob`` quantile (``prob > 1/2``) of ``N(0, s**2) + Laplace(b)``.

    Examples
    --------
    >>> round(normal_laplace_quantile(1.0, 0.0, 0.975), 3)
    1.96
    """
    if not (math.isfinite(s) and math.isfinite(b)):
        return math.inf
    if b <= 0 and s <= 0:
        return 0.0
    hi = (s + b) * 50.0 + 1e-300
    return float(optimize.brentq(lambda x: normal_laplace_sf(x, s, b) - (1.0 - prob), 0.0, hi,
                                 xtol=1e-14 * hi, rtol=1e-12))


# ---- inputs --------------------------------------------------------------------------------


def _check_blocks(blocks) -> None:
    if blocks is None:
        return
    if isinstance(blocks, (bool, np.bool_)) or not isinstance(blocks, numbers.Integral):
        raise DPModelsError(f"blocks must be an int >= 2 or None (the default from public n, "
                            f"the number of parameters and epsilon); got {blocks!r}")
    if int(blocks) < 2:
        raise DPModelsError(f"blocks must be at least 2, got {blocks}")


def _check_bias_correction(value, family: str) -> None:
    if value not in ("auto", None, "none", "split-half", "firth"):
        raise DPModelsError(
            f"bias_correction must be 'auto', 'firth' (logit), 'split-half' or None; got {value!r}")
    if value == "firth" and family != "logit":
        raise DPModelsError("bias_correction='firth' is the logit's analytic correction; use "
                            "'split-half' or None for " + family)


def _param_ranges(param_bounds, names: tuple, exog_names: tuple, ynames: tuple):
    """(lo, hi) arrays for the released parameters from the caller's
    ``param_bounds``: a (lo, hi) pair for all, or a dict by coefficient name
    (mnlogit: ``"x"`` for every equation, ``"x[level]"`` for one)."""
    def pair(key, v):
        try:
            lo, hi = (float(v[0]), float(v[1]))
            if len(v) != 2:
                raise ValueError
        except (TypeError, ValueError, IndexError):
            raise DPModelsError(
                f"param_bounds[{key!r}] must be a (low, high) pair of numbers, got {v!r}") from None
        if not (math.isfinite(lo) and math.isfinite(hi) and lo < hi):
            raise DPModelsError(
                f"param_bounds[{key!r}] must be finite with low < high, got {v!r}")
        return lo, hi

    if not isinstance(param_bounds, Mapping):
        lo, hi = pair("all", param_bounds)
        return np.full(len(names), lo), np.full(len(names), hi)
    known = set(names) | set(exog_names)
    extra = [k for k in param_bounds if k not in known]
    if extra:
        raise DPModelsError(
            f"param_bounds names {extra[0]!r}, which is not a parameter of this model; its "
            f"parameters are {list(names)}")
    lo, hi = np.empty(len(names)), np.empty(len(names))
    for i, name in enumerate(names):
        base = name.rsplit("[", 1)[0] if ynames and name.endswith("]") else name
        key = name if name in param_bounds else base if base in param_bounds else None
        if key is None:
            raise DPModelsError(
                f"param_bounds has no range for the coefficient {name!r}: give a public "
                f"(low, high) for every parameter {list(names)}, or leave param_bounds out "
                "(a private range is then estimated with part of epsilon)")
        lo[i], hi[i] = pair(key, param_bounds[key])
    return lo, hi


@dataclass(frozen=True, eq=False)
class _Design:
    """What the blocks are fitted on: X (rows x K), the response, the valid rows."""

    X: np.ndarray
    y: np.ndarray
    valid: np.ndarray


def _working_map(space, family: str, J1: int, standardized: bool):
    """``w = A theta + b``: the identity, or standardized coordinates (slopes
    times their column's half-range over the response's, the constant column
    absorbing the centres)."""
    K = len(space.exog_names)
    if not standardized:
        return np.eye(K * J1), np.zeros(K * J1)
    const = np.asarray(space.constant)
    half_x = np.ones(K)
    centre_x = np.zeros(K)
    nonconst = np.flatnonzero(~const)
    half_x[nonconst] = space.half[:nonconst.size]
    centre_x[nonconst] = space.centre[:nonconst.size]
    if family in ("ols", "quantreg"):
        cy, sy = float(space.centre[-1]), float(space.half[-1])
    else:
        cy, sy = 0.0, 1.0
    A1, b1 = np.zeros((K, K)), np.zeros(K)
    first = np.flatnonzero(const)
    for j in range(K):
        if const[j]:
            A1[j, j] = space.constant_values[j] / sy
        else:
            A1[j, j] = half_x[j] / sy
    if first.size:
        i = first[0]
        A1[i, nonconst] = centre_x[nonconst] / sy
        b1[i] = -cy / sy
    A = np.kron(np.eye(J1), A1)
    return A, np.tile(b1, J1)


# ---- the block estimators --------------------------------------------------------------


def _fit_once(family: str, X: np.ndarray, y: np.ndarray, q: float | None, J: int):
    """statsmodels' estimate on one set of rows (flattened, by equation), or None."""
    import statsmodels.api as sm
    from statsmodels.tools import sm_exceptions as sme

    K = X.shape[1]
    if X.shape[0] <= K or np.linalg.matrix_rank(X) < K:
        return None
    try:
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            # a fit that did not converge counts as failed, except QuantReg's IRLS: on
            # small blocks it often cycles between vertices of the LP at the iteration
            # limit while its estimate is a minimizer (or next to one); it is kept
            for failure in ("ConvergenceWarning", "PerfectSeparationWarning") + (
                    () if family == "quantreg" else ("IterationLimitWarning",)):
                if hasattr(sme, failure):
                    warnings.simplefilter("error", getattr(sme, failure))
            if family == "ols":
                theta = sm.OLS(y, X).fit().params
            elif family == "quantreg":
                theta = sm.QuantReg(y, X).fit(q=q, max_iter=1000).params
            elif family == "logit":
                if y.min() == y.max():
                    return None
                res = sm.Logit(y, X).fit(disp=0, method="newton", maxiter=50)
                if not res.mle_retvals.get("converged", False):
                    return None
                theta = res.params
            else:
                codes = y.astype(np.int64)
                if np.unique(codes).size < J:
                    return None
                res = sm.MNLogit(np.eye(J)[codes], X).fit(disp=0, method="newton", maxiter=50)
                if not res.mle_retvals.get("converged", False):
                    return None
                theta = np.asarray(res.params).ravel(order="F")
    except Exception:  # noqa: BLE001 - singular, separation, no convergence, ...: any
        return None    # failure of a block's fit is the public fallback, never an error
    theta = np.asarray(theta, float)
    return theta if np.all(np.isfinite(theta)) else None


def firth_step(X: np.ndarray, theta: np.ndarray) -> np.ndarray:
    """The logit MLE minus its estimated first-order bias (Cox and Snell; the
    one-step solution of Firth's 1993 modified score from the MLE):
    ``theta + I^-1 X' (h (1/2 - p))`` with ``I = X' W X``, ``W = p (1 - p)``
    and h the diagonal of the hat matrix ``W^1/2 X I^-1 X' W^1/2``."""
    p = 1.0 / (1.0 + np.exp(-(X @ theta)))
    w = p * (1.0 - p)
    info = (X * w[:, None]).T @ X
    h = w * np.einsum("ij,ij->i", X @ np.linalg.inv(info), X)
    return theta + np.linalg.solve(info, X.T @ (h * (0.5 - p)))


def _fit_block(family, X, y, q, J, correction):
    theta = _fit_once(family, X, y, q, J)
    if theta is None or correction is None:
        return theta
    if correction == "firth":
        try:
            out = firth_step(X, theta)
        except np.linalg.LinAlgError:
            return None
        return out if np.all(np.isfinite(out)) else None
    h = X.shape[0] // 2
    t1 = _fit_once(family, X[:h], y[:h], q, J)
    t2 = _fit_once(family, X[h:], y[h:], q, J)
    if t1 is None or t2 is None:
        return theta
    return 2.0 * theta - 0.5 * (t1 + t2)


def block_estimates(family: str, design: _Design, parts: list, q, J: int, correction,
                    A: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The working-coordinate estimate of each block (NaN rows for failed
    blocks) and the mask of successful ones."""
    p = A.shape[0]
    W = np.full((len(parts), p), np.nan)
    for i, rows in enumerate(parts):
        rows = rows[design.valid[rows]]
        theta = _fit_block(family, design.X[rows], design.y[rows], q, J, correction)
        if theta is not None:
            W[i] = A @ theta + b
    ok = np.all(np.isfinite(W), axis=1)
    return W, ok


def _working_estimates(thetas: np.ndarray, fitted: np.ndarray, A: np.ndarray, b: np.ndarray):
    """`block_estimates()`' output from the blocks' fits (``fitted``: the
    fit returned an estimate), each mapped as `block_estimates()` maps it."""
    W = np.full((thetas.shape[0], A.shape[0]), np.nan)
    for i in np.flatnonzero(fitted):
        W[i] = A @ thetas[i] + b
    return W, np.all(np.isfinite(W), axis=1)


# ---- the release ---------------------------------------------------------------------------


def row_order(streams: RowStreams, n: int) -> np.ndarray:
    """The partition's permutation (module notes, step 2): the row positions
    ``0, ..., n - 1`` sorted by ``(w_i, i)``, ``w_i`` word 0 of row i's stream
    (`RowStreams`, keyed by the release's source).
    ``np.array_split(row_order(s, n), k)`` are the blocks: a uniform random
    partition into k blocks of sizes differing by at most one.  A row's word
    depends on its position and the key only, so an engine finds each row's
    block where the row lives (`block_cuts()`, `block_ids()`)."""
    return np.argsort(streams.words(np.arange(n, dtype=np.int64), 0), kind="stable")


#: Words the driver generates at once when it finds the block cuts (bounded memory).
CUT_CHUNK = 1 << 22
#: Top bits of a word that `block_cuts()` counts by (2**20 ranges).
_RANGE_BITS = 20


def _block_starts(n: int, k: int) -> np.ndarray:
    """Ranks (in the sorted order) of the first rows of blocks 1, ..., k - 1:
    ``np.array_split``'s sizes, the first ``n % k`` blocks one row longer."""
    i = np.arange(1, k, dtype=np.int64)
    return i * (n // k) + np.minimum(i, n % k)


def block_cuts(streams: RowStreams, n: int, k: int,
               chunk: int = CUT_CHUNK) -> tuple[np.ndarray, np.ndarray]:
    """The k - 1 cut points ``(w, i)`` of the partition: the word and position
    of the first row of blocks 1, ..., k - 1 in the order of
    `row_order()`.  They depend on the key, n and k only (no data), so the
    driver computes them; a row's block is the number of cuts at or below
    its ``(w_i, i)`` (`block_ids()`).

    Memory is bounded by ``chunk`` words: up to ``chunk`` rows, the words are
    sorted at once; beyond, one pass counts the words by their top 20 bits,
    and further passes collect only the words of the ranges that hold a cut,
    ``2 chunk`` at a time (at most about ``n min(k, 2**20) / 2**20`` words
    in all), sort them and read the cuts off."""
    starts = _block_starts(n, k)
    if n <= chunk:
        w = streams.words(np.arange(n, dtype=np.int64), 0)
        at = np.argsort(w, kind="stable")[starts]
        return w[at], at.astype(np.int64)
    shift = np.uint64(64 - _RANGE_BITS)

    def chunks():
        for a in range(0, n, chunk):
            pos = np.arange(a, min(a + chunk, n), dtype=np.int64)
            yield pos, streams.words(pos, 0)

    counts = np.zeros(1 << _RANGE_BITS, np.int64)
    for _, w in chunks():
        counts += np.bincount((w >> shift).astype(np.int64), minlength=1 << _RANGE_BITS)
    below = np.concatenate([[0], np.cumsum(counts)])  # words in the ranges before each
    target = np.searchsorted(below, starts, side="right") - 1  # each cut's range
    needed = np.unique(target)
    cut_w = np.empty(k - 1, np.uint64)
    cut_p = np.empty(k - 1, np.int64)
    a = 0
    while a < needed.size:  # groups of ranges holding at most 2 chunk words (or one range)
        held = np.cumsum(counts[needed[a:]])
        b = a + max(1, int(np.searchsorted(held, 2 * chunk, side="right")))
        group = needed[a:b]
        member = np.zeros(1 << _RANGE_BITS, bool)
        member[group] = True
        ws, ps = [], []
        for pos, w in chunks():
            keep = member[(w >> shift).astype(np.int64)]
            ws.append(w[keep])
            ps.append(pos[keep])
        w, pos = np.concatenate(ws), np.concatenate(ps)
        o = np.lexsort((pos, w))
        w, pos = w[o], pos[o]
        offset = np.concatenate([[0], np.cumsum(counts[group])])[:-1]  # each range's first
        for c in np.flatnonzero((target >= group[0]) & (target <= group[-1])):
            g = int(np.searchsorted(group, target[c]))
            at = offset[g] + (starts[c] - below[target[c]])
            cut_w[c], cut_p[c] = w[at], pos[at]
        a = b
    return cut_w, cut_p


def block_ids(words: np.ndarray, positions: np.ndarray, cuts: tuple[np.ndarray, np.ndarray]):
    """The block of each row: the number of cuts ``(w, i)`` at or below the
    row's ``(words, positions)`` in lexicographic order (`block_cuts()`)."""
    cut_w, cut_p = cuts
    lo = np.searchsorted(cut_w, words, side="left")
    hi = np.searchsorted(cut_w, words, side="right")
    ids = lo.astype(np.int64)
    for t in np.flatnonzero(hi > lo):  # a word equal to a cut's (rare): the positions decide
        ids[t] += int(np.count_nonzero(cut_p[lo[t]:hi[t]] <= positions[t]))
    return ids


# ---- blocks where the data live ----------------------------------------------------------


@dataclass(frozen=True, eq=False)
class _DesignTask:
    """A batch's design rows, as the in-memory release builds them (published
    values, the public design's patsy infos, the response's codes, the
    missing rows); every check raises here.  Public inputs only: it pickles
    to Dask's and Spark's workers."""

    domain: Domain
    space: DesignSpace
    family: str
    response: str | None
    missing: str

    def __call__(self, frame_in) -> _Design:
        frame, valid = published_frame(frame_in.reset_index(drop=True), self.domain,
                                       self.missing)
        return _design_of(frame, valid, self.space, self.family, self.domain, self.response)


def _design_of(frame, valid, space, family: str, domain, response) -> _Design:
    with np.errstate(all="ignore"):
        if family in ("ols", "quantreg"):
            ymat, Xmat = build_design(list(space.infos), frame)
            y = np.asarray(ymat, float)[:, 0]
        else:
            (Xmat,) = build_design([space.infos[1]], frame)
            axis = domain.axis(response)
            if family == "logit":
                y, _ = binary_response(axis, frame[response])
            else:
                codes, _, _ = axis.codes(frame[response])
                y = np.asarray(codes, float)
    X = np.asarray(Xmat, float)
    X = np.where(np.isfinite(X), X, 0.0)  # a transform undefined off the grid: per-row map
    return _Design(X, np.asarray(y, float), np.asarray(valid, bool))


@dataclass(frozen=True)
class _BlockFit:
    """How a block is fitted (public inputs), pickled to the workers."""

    family: str
    q: float | None
    J: int
    correction: str | None
    p: int  # the length of a block's fit


def _pieces(design: _Design, start: int, streams: RowStreams, cuts, k: int, groups: int):
    """A batch's valid rows, split by group of blocks (block b in group
    ``b * groups // k``): per group ``(block, word, position, X, y)``."""
    pos = np.flatnonzero(design.valid).astype(np.int64) + start
    w = streams.words(pos, 0)
    blocks = block_ids(w, pos, cuts)
    X, y = design.X[design.valid], design.y[design.valid]
    group = blocks * groups // k
    order = np.argsort(group, kind="stable")  # each group's rows in their batch order
    edges = np.searchsorted(group[order], np.arange(groups + 1))
    out = []
    for g in range(groups):
        m = order[edges[g]:edges[g + 1]]
        out.append((blocks[m], w[m], pos[m], X[m], y[m]))
    return out


def _fit_pieces(pieces: list, fit: _BlockFit):
    """Fit every block whose rows are in ``pieces`` (lists of ``(block, word,
    position, X, y)`` from any batches), each on its rows ordered by ``(w_i,
    i)`` as in `row_order()`; ``(blocks, thetas, fitted)`` for the blocks
    with a row (the others fail: no rows to fit)."""
    if not pieces:
        return np.zeros(0, np.int64), np.zeros((0, fit.p)), np.zeros(0, bool)
    blocks = np.concatenate([pc[0] for pc in pieces])
    w = np.concatenate([pc[1] for pc in pieces])
    pos = np.concatenate([pc[2] for pc in pieces])
    X = np.ascontiguousarray(np.concatenate([pc[3] for pc in pieces]))
    y = np.concatenate([pc[4] for pc in pieces])
    order = np.lexsort((pos, w, blocks))
    ids, first = np.unique(blocks[order], return_index=True)
    bounds = np.append(first, order.size)
    thetas = np.full((ids.size, fit.p), np.nan)
    fitted = np.zeros(ids.size, bool)
    for t in range(ids.size):
        rows = order[bounds[t]:bounds[t + 1]]
        theta = _fit_block(fit.family, X[rows], y[rows], fit.q, fit.J, fit.correction)
        if theta is not None:
            thetas[t], fitted[t] = theta, True
    return ids, thetas, fitted


#: Rows per group of blocks gathered in one place (a Dask task, a Spark group).
GROUP_ROWS = 200_000


class _EngineBlocks:
    """Sample-and-aggregate on an engine's frame (module notes, "Engines").

    `read()` (before the charge) builds every batch's design rows where
    the batch lives, which runs every check (an undeclared level, a missing
    value) and counts the rows by batch; `estimates()` (after the charge,
    with the release's row streams) gives each valid row its block from the
    driver's cuts, gathers each block's rows where the data live and fits it
    there.  Only the k block fits come back."""

    def __init__(self, source, names: list[str], task: _DesignTask):
        self.source, self.names, self.task = source, names, task
        self.engine = source.engine
        self.parallelism = 1

    def read(self) -> int:
        """Pass 1: the designs (kept: Polars, DuckDB in this process, Dask on
        the workers) and the rows before each batch; returns the rows' number."""
        if self.source.batches_here:
            self.designs = self.source.map_partitions(self.names, self.task)
            lengths = [d.valid.size for d in self.designs]
        elif self.engine == "dask":
            import dask

            parts = self.source.ddf[self.names].to_delayed()
            self.designs = dask.persist(*[dask.delayed(self.task)(p) for p in parts])
            lengths = list(dask.compute(*[dask.delayed(_rows_of)(d) for d in self.designs]))
        else:  # Spark: a checking pass that counts each partition's rows
            self.sizes = _spark_check(self.source.native.select(*self.names), self.task)
            self.parallelism = int(self.source.native.sparkSession.sparkContext.defaultParallelism)
            lengths = [self.sizes[pid] for pid in sorted(self.sizes)]
        self.starts = np.concatenate([[0], np.cumsum(lengths, dtype=np.int64)]).astype(np.int64)
        return int(self.starts[-1])

    def estimates(self, streams: RowStreams, k: int, fit: _BlockFit):
        """Pass 2: ``(thetas, fitted)`` of the k blocks (rows in block order)."""
        n = int(self.starts[-1])
        cuts = block_cuts(streams, n, k)
        # groups of blocks fitted in one place: at most GROUP_ROWS rows each, and at least
        # as many as the batches (Dask's, Spark's workers fit in parallel)
        groups = 1 if self.source.batches_here else max(1, min(k, max(
            -(-n // GROUP_ROWS), self.starts.size - 1, self.parallelism)))
        if self.source.batches_here:
            pieces = [_pieces(d, int(s), streams, cuts, k, 1)[0]
                      for d, s in zip(self.designs, self.starts)]
            results = [_fit_pieces(pieces, fit)]
        elif self.engine == "dask":
            import dask

            split = [dask.delayed(_pieces, nout=groups)(d, int(s), streams, cuts, k, groups)
                     for d, s in zip(self.designs, self.starts)]
            results = list(dask.compute(*[dask.delayed(_fit_pieces)([sp[g] for sp in split], fit)
                                          for g in range(groups)]))
        else:
            results = [_spark_blocks(self.source.native.select(*self.names), self.task,
                                     self.sizes, streams, cuts, k, groups, fit)]
        thetas = np.full((k, fit.p), np.nan)
        fitted = np.zeros(k, bool)
        for ids, th, ok in results:
            thetas[ids], fitted[ids] = th, ok
        return thetas, fitted


def _rows_of(design: _Design) -> int:
    return int(design.valid.size)


def _spark_check(sdf, task: _DesignTask) -> dict[int, int]:
    """Spark's pass 1: every partition's design built (its checks run in the
    executors; a dpmodels error comes back as itself, as in
    `dpmodels.data.engines.lazy._spark_map()`), and its number of rows."""
    import pickle

    import pandas as pd

    def check(frames):
        from pyspark import TaskContext

        ctx = TaskContext.get()
        pid = ctx.partitionId() if ctx is not None else 0
        payload: tuple[str, object]
        try:
            payload = ("ok", sum(task(frame).valid.size for frame in frames))
        except DPModelsError as exc:
            payload = ("error", exc)
        yield pd.DataFrame({"pid": [pid], "payload": [pickle.dumps(payload)]})

    sizes = {}
    for row in sdf.mapInPandas(check, schema="pid long, payload binary").collect():
        kind, value = pickle.loads(row["payload"])
        if kind == "error":
            raise value
        sizes[int(row["pid"])] = int(value)
    return sizes


def _spark_blocks(sdf, task: _DesignTask, sizes: dict, streams: RowStreams, cuts, k: int,
                  groups: int, fit: _BlockFit):
    """Spark's pass 2: each partition's valid rows with their block (a column
    added in ``mapInPandas``, the positions from the partitions' sizes), a
    ``groupBy`` of the groups of blocks and each group's blocks fitted in
    ``applyInPandas``; the k fits come back."""
    import pandas as pd

    starts, total = {}, 0
    for pid in sorted(sizes):
        starts[pid], total = total, total + sizes[pid]
    K = fit.p

    def rows(frames):
        from pyspark import TaskContext

        ctx = TaskContext.get()
        pid = ctx.partitionId() if ctx is not None else 0
        start = first = starts.get(pid, 0)
        for frame in frames:
            design = task(frame)
            (blocks, w, pos, X, y), = _pieces(design, start, streams, cuts, k, 1)
            start += design.valid.size
            out = {"g": blocks * groups // k, "b": blocks,
                   # the word as a signed long with the same order (its top bit flipped)
                   "w": (w ^ np.uint64(1 << 63)).view(np.int64), "i": pos, "y": y}
            for j in range(X.shape[1]):
                out[f"x{j}"] = X[:, j]
            yield pd.DataFrame(out)
        if start - first != sizes.get(pid, 0):  # the positions hold only for the same rows
            raise RuntimeError("the Spark frame's partitions changed between two reads: "
                               "sample-and-aggregate needs the same rows in every pass "
                               "(cache or checkpoint the frame)")

    ncols = task_columns(task)
    schema = "g long, b long, w long, i long, y double" + "".join(
        f", x{j} double" for j in range(ncols))

    def fit_group(frame):
        w = (frame["w"].to_numpy(np.int64).view(np.uint64) ^ np.uint64(1 << 63))
        X = np.ascontiguousarray(frame[[f"x{j}" for j in range(ncols)]].to_numpy(float))
        ids, th, ok = _fit_pieces([(frame["b"].to_numpy(np.int64), w,
                                    frame["i"].to_numpy(np.int64), X,
                                    frame["y"].to_numpy(float))], fit)
        out = {"b": ids, "ok": ok}
        for j in range(K):
            out[f"t{j}"] = th[:, j]
        return pd.DataFrame(out)

    out_schema = "b long, ok boolean" + "".join(f", t{j} double" for j in range(K))
    got = (sdf.mapInPandas(rows, schema=schema).groupBy("g")
           .applyInPandas(fit_group, schema=out_schema).collect())
    ids = np.array([r["b"] for r in got], np.int64)
    ok = np.array([r["ok"] for r in got], bool)
    th = np.array([[r[f"t{j}"] for j in range(K)] for r in got], float).reshape(len(got), K)
    return ids, th, ok


def task_columns(task: _DesignTask) -> int:
    """The number of design columns (the public design's)."""
    return len(task.space.exog_names)


def unit_epsilon(eps_part: float, p: int) -> float:
    """The `discrete_laplace()` argument (scale ``2/e``)
    that makes p sums of L1 sensitivity ``p G`` eps_part-DP (rounded down)."""
    return vector_unit_epsilon(eps_part, p * GRID_UNITS / 2.0)


def clamped_sums(W: np.ndarray, ok: np.ndarray, lo: np.ndarray, hi: np.ndarray):
    """Step 5's exact values: the clamped block estimates (failed blocks at
    the centre of the range) and the integer sums of their quantized
    positions ``round(G (w - lo) / (hi - lo))``, each in ``[0, G]``."""
    Wc = np.clip(np.where(ok[:, None], W, (lo + hi) / 2.0), lo, hi)
    units = np.rint((Wc - lo) / (hi - lo) * GRID_UNITS).astype(np.int64)
    return Wc, units.sum(axis=0)


def deviation_sums(Wc: np.ndarray, c: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """Step 6's exact values: integer sums of ``round(G |w - c| / (hi - lo))``,
    each term in ``[0, G]`` (w and c in the range)."""
    dev = np.rint(np.abs(Wc - c) / (hi - lo) * GRID_UNITS).astype(np.int64)
    return dev.sum(axis=0)


def spread_bound(mad_up: np.ndarray, span: np.ndarray) -> np.ndarray:
    """The block variance used by the standard errors, from an upper estimate
    ``mad_up`` of the mean absolute deviation about c: ``pi/2 mad_up**2`` (a
    normal's variance; the blocks' estimates are asymptotically normal, the
    premise of Smith's theorem), never above the distribution-free bounds
    ``span * mad_up`` (``(w - c)**2 <= span |w - c|`` in the range) and
    ``span**2 / 4`` (any variable in an interval of that width)."""
    return np.minimum.reduce([math.pi / 2.0 * mad_up**2, span * mad_up, span**2 / 4.0])


def range_grids() -> tuple[np.ndarray, np.ndarray]:
    """The public grids of step 4, step ``RANGE_STEP``: the centres
    ``-RANGE_LIMIT, ..., RANGE_LIMIT`` (``RANGE_POINTS`` points) and the
    half-width units ``RANGE_STEP, ..., 2 RANGE_LIMIT`` (``RANGE_POINTS - 1``)."""
    centres = np.linspace(-RANGE_LIMIT, RANGE_LIMIT, RANGE_POINTS)
    scales = np.arange(1, RANGE_POINTS) * RANGE_STEP
    return centres, scales


def range_epsilon(eps_r: float, p: int) -> float:
    """The epsilon of each of the 2p exponential mechanisms of step 4: the
    largest float ``e <= eps_r / (2p)`` with ``2 p e <= eps_r`` exactly."""
    e = float(eps_r) / (2.0 * p)
    while e > 0 and Fraction(e) * (2 * p) > Fraction(float(eps_r)):
        e = math.nextafter(e, 0.0)
    return e


def min_range_blocks(p: int, eps_r: float) -> int:
    """The smallest k for which `range_feasible()` holds at eps_r."""
    if not (math.isfinite(eps_r) and eps_r > 0):
        return 0
    k = 2 * int(math.ceil(2.0 * math.log(RANGE_CELLS / RANGE_BETA) / range_epsilon(eps_r, p)))
    while k > 2 and range_feasible(k - 1, p, eps_r):
        k -= 1
    while not range_feasible(k, p, eps_r):
        k += 1
    return k


def range_budget(k: int, p: int, epsilon: float) -> float:
    """epsilon_r of step 4, from public inputs only: ``RANGE_MARGIN`` times the
    least budget that makes `range_feasible()` hold, at most
    ``RANGE_SHARE * epsilon``; 0 when even that share is not enough (the
    public default range is then used)."""
    if not math.isfinite(epsilon):
        return 0.0
    cap = RANGE_SHARE * epsilon
    if not range_feasible(k, p, cap):
        return 0.0
    need = 4.0 * p * math.log(RANGE_CELLS / RANGE_BETA) / (k // 2)
    eps_r = min(cap, RANGE_MARGIN * need)
    return eps_r if range_feasible(k, p, eps_r) else cap


def range_feasible(k: int, p: int, eps_r: float) -> bool:
    """Whether step 4 runs (public inputs only): with ``e`` =
    `range_epsilon()` and the target rank ``T = k // 2``,
    ``RANGE_CELLS exp(-e T / 2) <= RANGE_BETA``: the cells at a rank distance
    of T or more (those outside the blocks' estimates) together weigh at most
    RANGE_BETA times the cell at distance 0 (there is always one), so each
    mechanism lands outside with probability at most RANGE_BETA, whatever
    the data.  Otherwise the public default range is used and
    epsilon_r goes to the mean."""
    if not (math.isfinite(eps_r) and eps_r > 0):
        return False
    e = range_epsilon(eps_r, p)
    return e > 0 and e * (k // 2) / 2.0 >= math.log(RANGE_CELLS / RANGE_BETA)


def range_values(W: np.ndarray, ok: np.ndarray) -> np.ndarray:
    """The values step 4 ranks: the blocks' working estimates, a failed block
    at 0 (a public value), (k, p)."""
    return np.where(ok[:, None], W, 0.0)


def _cell_deficits(sorted_values: np.ndarray, cuts: np.ndarray) -> np.ndarray:
    """Rank distances of the cells between consecutive cut points (and the two
    unbounded end cells): with ``C`` the counts at or below the cuts
    (``0, ..., k`` at the ends), ``max(0, C_i - T, T - C_{i+1})``, ``T = k // 2``:
    0 for the cell holding the T-th smallest value (there is always one).  One
    value moved changes every count by at most 1, hence every distance:
    sensitivity 1."""
    k = sorted_values.size
    C = np.concatenate([[0], np.searchsorted(sorted_values, cuts, side="right"), [k]])
    T = k // 2
    return np.maximum(0, np.maximum(C[:-1] - T, T - C[1:])).astype(np.int64)


def median_deficits(v: np.ndarray, centres: np.ndarray) -> np.ndarray:
    """Step 4's median utility: the rank distances of the ``len(centres) + 1``
    cells cut by the centres (`_cell_deficits()`)."""
    return _cell_deficits(np.sort(np.asarray(v, float)), centres)


def scale_deficits(v: np.ndarray, centre: float, scales: np.ndarray) -> np.ndarray:
    """Step 4's MAD utility: the rank distances of the ``len(scales) + 1``
    cells of ``|v - c|`` cut by the scales, about the released centre c."""
    return _cell_deficits(np.sort(np.abs(np.asarray(v, float) - centre)), scales)


def range_outputs() -> tuple[np.ndarray, np.ndarray]:
    """The value released for each cell of step 4: a median cell's midpoint
    (the end cells: the grid's ends), a MAD cell's upper end (the last: the
    largest scale)."""
    centres, scales = range_grids()
    med = np.concatenate([[centres[0]], (centres[:-1] + centres[1:]) / 2.0, [centres[-1]]])
    mad = np.concatenate([scales, [scales[-1]]])
    return med, mad


def _private_range(W, ok, eps_r, bits):
    """Step 4: each coordinate's range from a private median and a private
    median absolute deviation (exponential mechanisms, see module notes).
    Returns lo, hi and the released cells' indices (median, MAD), (p, 2)."""
    k, p = W.shape
    e = range_epsilon(eps_r, p)
    centres, scales = range_grids()
    med_out, mad_out = range_outputs()
    V = range_values(W, ok)
    lo, hi = np.empty(p), np.empty(p)
    cells = np.empty((p, 2), np.int64)
    for j in range(p):
        # P(cell) ~ exp(-e d / 2), d its rank distance: exponential_choice's r = e / 2
        i = exponential_choice(bits, median_deficits(V[:, j], centres), e / 2.0)
        m = med_out[i]
        i2 = exponential_choice(bits, scale_deficits(V[:, j], m, scales), e / 2.0)
        cells[j] = i, i2
        lo[j] = max(m - RANGE_WIDEN * mad_out[i2], -RANGE_LIMIT)
        hi[j] = min(m + RANGE_WIDEN * mad_out[i2], RANGE_LIMIT)
    return lo, hi, cells


@checked_keywords
def release_sample_aggregate(
    data,
    *,
    family: str,
    formula: str,
    epsilon: float,
    bounds=None,
    levels=None,
    n: int | None = None,
    q: float | None = None,
    blocks: int | None = None,
    param_bounds=None,
    bias_correction="auto",
    random_state=None,
    accountant: Accountant | None = None,
    missing: str = "drop",
    namespace: Mapping[str, object] | None = None,
) -> PrivateSampleAggregate:
    """Release Smith's sample-and-aggregate estimate of a model (module notes).

    Parameters
    ----------
    data : pandas.DataFrame, mapping of str to array-like, or polars.DataFrame
        Raw rows, never modified.
    family : {"ols", "logit", "quantreg", "mnlogit"}
        The statsmodels estimator fitted on each block.
    formula : str
    epsilon : float
        Privacy parameter (> 0); ``inf`` gives the exact average of the
        blocks' estimates (NOT private).
    bounds, levels :
        Public domain of the formula's variables, as for `dpmodels.release()`.
    n : int, optional
        The public number of rows (default: rows handed in); it sets the
        default number of blocks.
    q : float, optional
        The quantile (quantreg; default 0.5).
    blocks : int, optional
        The number of blocks k (default `default_blocks()`).
    param_bounds : (low, high) or dict, optional
        A public range for every coefficient (by name; mnlogit: ``"x"`` for
        every equation or ``"x[level]"``).  Without it a private range is
        estimated with at most 20% of epsilon when there are enough blocks
        (module notes, step 4), else the public default range is used.
    bias_correction : {"auto", "firth", "split-half", None}
        "auto": "firth" for the logit (`firth_step()`), none for the
        others; "split-half": the delete-half jackknife (any family).
    random_state : None, int or Generator
        None draws the partition and the noise from the OS's secure entropy.
    accountant : Accountant, optional
    missing : {"drop", "raise"}
    namespace : mapping, optional
        Names the formula may use besides columns.

    Returns
    -------
    PrivateSampleAggregate

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> rng = np.random.default_rng(0)
    >>> df = pd.DataFrame({"x": rng.uniform(0, 1, 4000)})
    >>> df["y"] = 1 + 2 * df["x"] + rng.normal(0, 0.1, 4000)
    >>> sa = release_sample_aggregate(df, family="ols", formula="y ~ x", epsilon=1.0,
    ...                               bounds={"x": (0, 1), "y": (-1, 4)},
    ...                               param_bounds=(-5, 5), random_state=0)
    >>> sa.names, sa.blocks
    (('Intercept', 'x'), 571)
    >>> [round(v) for v in sa.params]
    [1, 2]
    """
    if namespace is None:
        namespace = caller_namespace(1)
    if family not in FAMILIES:
        raise DPModelsError(f"family must be one of {FAMILIES}, got {family!r}")
    _check_blocks(blocks)
    _check_bias_correction(bias_correction, family)
    if family == "quantreg":
        q = 0.5 if q is None else q
        if isinstance(q, (bool, np.bool_)) or not isinstance(q, numbers.Real) or not 0 < q < 1:
            raise DPModelsError(f"q must be one quantile strictly between 0 and 1 for "
                                f"method='sample-aggregate', got {q!r}")
        q = float(q)
    else:
        q = None
    pub = public_inputs(data, formula=formula, epsilon=epsilon, bounds=bounds, levels=levels,
                        n=n, random_state=random_state, accountant=accountant, missing=missing,
                        namespace=namespace, domain_check=None)
    data, epsilon, domain, fv = pub.data, pub.epsilon, pub.domain, pub.fv
    source = source_for(data)  # None: rows in memory (pandas, a mapping, an eager Polars)
    frame_in = _to_pandas(data) if source is None else None
    ynames: tuple = ()
    if family in ("logit", "mnlogit"):
        response = fv.response[0] if len(fv.response) == 1 else None
        if response is None or domain.axis(response).kind != "discrete":
            raise DomainError(f"method='sample-aggregate' for {family} needs a response with "
                              "declared levels (levels={...} or a bool / 0-1 column)")
        nlev = domain.axis(response).size
        if (family == "logit" and nlev != 2) or nlev < 2:
            raise DomainError(
                f"the response {response!r} has {nlev} declared level(s); "
                + ("dp_logit needs exactly 2 (use dp_mnlogit for more)" if family == "logit"
                   else "dp_mnlogit needs at least 2"))
        if family == "logit":
            check_binary_levels(domain.axis(response))
        space = design_space(formula, domain, namespace, response=False)
        if family == "mnlogit":
            ynames = tuple(domain.axis(response).level_set)
    else:
        space = design_space(formula, domain, namespace, response=True)
    J = len(ynames) if family == "mnlogit" else 2
    J1 = J - 1 if family == "mnlogit" else 1
    exog = tuple(space.exog_names)
    names = (tuple(f"{x}[{ynames[e + 1]}]" for e in range(J1) for x in exog)
             if family == "mnlogit" else exog)
    shown: Sequence[str]
    if family == "mnlogit":
        assert response is not None  # checked with the response's levels above
        shown = equation_names(exog, response, ynames)
    else:
        shown = exog
    p = len(names)
    private = math.isfinite(epsilon)
    if param_bounds is not None:
        lo_pb, hi_pb = _param_ranges(param_bounds, names, exog, ynames)
    # the rows handed in (neighbours have as many): the partition's n
    if frame_in is not None:
        n_rows = len(frame_in)
    else:
        assert source is not None  # (an engine's frame)
        n_rows = pub.n if n is None else source.nrows()
    k = int(blocks) if blocks is not None else default_blocks(pub.n, p, epsilon, family)
    if n_rows // k < len(exog) + 1:
        raise DPModelsError(
            f"blocks={k} leaves {n_rows // k} rows per block, fewer than the "
            f"{len(exog) + 1} a fit of {len(exog)} coefficients needs: use fewer blocks "
            f"(at most {max(n_rows // (len(exog) + 1), 1)})")
    if k < 2:
        raise DPModelsError("sample-and-aggregate needs at least 2 blocks: more rows are needed")
    correction = (DEFAULT_BIAS_CORRECTION[family] if bias_correction == "auto"
                  else None if bias_correction in (None, "none") else bias_correction)
    standardized = param_bounds is None
    # step 4 runs only when k is large enough for it (public inputs: k, p, epsilon)
    eps_r = range_budget(k, p, epsilon) if standardized and private else 0.0
    ranged = eps_r > 0
    clip_axes = clipping_axes(domain)  # variables that can clip: their outside counts
    eps_c = math.inf
    if private:
        eps_v = epsilon * SPREAD_SHARE
        eps_c = epsilon * CLIP_SHARE if clip_axes else 0.0
        eps_m = epsilon - eps_r - eps_v - eps_c
        eps_r, eps_v, eps_m, eps_c = exact_parts(  # dpmodels.core.budget
            epsilon, [eps_r, eps_v, eps_m, eps_c])
        if (min(eps_m, eps_v) < MIN_EPSILON or unit_epsilon(eps_v, p) < MIN_EPSILON
                or (clip_axes and eps_c < MIN_EPSILON)):
            raise DPModelsError(f"epsilon={epsilon!r} is too small to split (parts below "
                                f"{MIN_EPSILON:g})")
    label = f"sample-aggregate {family} {formula!r}"
    def announce() -> None:
        if not private:
            warnings.warn(
                "epsilon=inf: the sample-and-aggregate estimate is the EXACT average of the "
                "blocks' estimates and NOT differentially private. Use it only to check "
                "results.", NotPrivateWarning, stacklevel=user_stacklevel())

    def read():
        design = on_engine = None
        # ---- the rows: published values, design, response (all checks raise here) --------
        task = _DesignTask(domain, space, family,
                           fv.response[0] if family in ("logit", "mnlogit") else None, missing)
        if frame_in is not None:
            frame, valid = published_frame(frame_in, domain, missing)
            design = _design_of(frame, valid, space, family, domain, task.response)
        else:  # every batch's design, where it lives (module notes, "Engines")
            assert source is not None
            on_engine = _EngineBlocks(source, list(domain.names), task)
            if on_engine.read() != n_rows:
                raise DPModelsError(f"the {source.engine} frame's rows changed between two reads: "
                                    "sample-and-aggregate needs the same rows in every pass")
        outside_exact = exact_outside(frame_in if frame_in is not None else data, clip_axes)
        return design, on_engine, outside_exact

    def measure(first, bits, budget: str) -> PrivateSampleAggregate:
        design, on_engine, outside_exact = first
        del first
        # the partition: rows sorted by their words under a key from the release's source
        # (public inputs only), cut into k blocks (module notes, step 2)
        streams = RowStreams.from_source(bits)
        A, b = _working_map(space, family, J1, standardized)
        if frame_in is not None:
            parts = np.array_split(row_order(streams, n_rows), k)
            W, ok = block_estimates(family, design, parts, q, J, correction, A, b)
        else:
            thetas, fitted = on_engine.estimates(streams, k, _BlockFit(family, q, J, correction, p))
            W, ok = _working_estimates(thetas, fitted, A, b)
        sizes = sorted({n_rows // k, -(-n_rows // k)})
        block_rows = " or ".join(f"{s:,}" for s in sizes)

        split: tuple[tuple[str, float], ...]
        if not private:
            Wok = W[ok]
            if Wok.shape[0] == 0:
                raise DPModelsError("no block's fit succeeded (epsilon=inf): use fewer blocks")
            working = Wok.mean(axis=0)
            spread = Wok.var(axis=0, ddof=1) if Wok.shape[0] > 1 else np.full(p, np.inf)
            k_eff = Wok.shape[0]
            failed = failed_up = 1.0 - k_eff / k
            no_information = failed > MAX_FAILED_BLOCKS
            lo, hi = np.full(p, -np.inf), np.full(p, np.inf)
            noise_scale = np.zeros(p)
            split, range_source = (), "none (exact)"
            mechanism = "none (exact average of the blocks' estimates)"
        else:
            k_eff = k
            if ranged:
                lo, hi, _ = _private_range(W, ok, eps_r, bits)
                range_source = ("private range (exponential-mechanism median +- "
                                f"{RANGE_WIDEN:g} MAD)")
            elif standardized:
                warnings.warn(
                    f"too few blocks ({k}) for a private range (at least "
                    f"{min_range_blocks(p, epsilon * RANGE_SHARE)} with {p} parameters at "
                    f"epsilon={epsilon:g}): the public default range "
                    f"(standardized coefficients in [-{RANGE_LIMIT:g}, {RANGE_LIMIT:g}]) was used, "
                    "and the noise is large; give param_bounds, more data or a larger epsilon",
                    ReleaseWarning, stacklevel=user_stacklevel())
                lo, hi = np.full(p, -RANGE_LIMIT), np.full(p, RANGE_LIMIT)
                range_source = "public default range (too few blocks for a private one)"
            else:
                lo, hi = lo_pb, hi_pb
                range_source = "param_bounds (public)"
            span = hi - lo
            # step 5: the quantized clamped estimates and the failed blocks, summed;
            # sensitivity (p + 1) G (L1)
            Wc, sums = clamped_sums(W, ok, lo, hi)
            eps_unit = unit_epsilon(eps_m, p + 1)
            noisy = np.concatenate([sums, [int((~ok).sum()) * GRID_UNITS]]) + discrete_laplace(
                bits, eps_unit, p + 1)
            working = lo + span * noisy[:p] / (k * GRID_UNITS)
            noise_scale = span / (k * GRID_UNITS) * (2.0 / eps_unit)
            failed = float(np.clip(noisy[p] / (k * GRID_UNITS), 0.0, 1.0))
            failed_scale = 2.0 / (eps_unit * k * GRID_UNITS)  # Laplace scale of the failed share
            failed_up = failed + 2.0 * math.sqrt(2.0) * failed_scale  # plus two noise SDs
            no_information = failed_up > MAX_FAILED_BLOCKS
            # step 6: the mean square about the released mean (clamped to the range)
            c = np.clip(working, lo, hi)
            eps_unit_v = unit_epsilon(eps_v, p)
            noisy_abs = deviation_sums(Wc, c, lo, hi) + discrete_laplace(bits, eps_unit_v, p)
            mad = span * noisy_abs / (k * GRID_UNITS)
            sd_mad = span / (k * GRID_UNITS) * math.sqrt(discrete_laplace_variance(eps_unit_v))
            mad_up = (np.maximum(mad, 0.0) + 2.0 * sd_mad) * (1.0 + 2.0 / math.sqrt(k))
            spread = spread_bound(mad_up, span)
            if not no_information and failed > 0.0:
                # the fitted blocks' mean: failed blocks sit at the range's centre
                # (post-processing of the noisy sums; module notes, step 5)
                centre, keep = (lo + hi) / 2.0, 1.0 - failed
                working = np.clip(centre + (working - centre) / keep, lo, hi)
                noise_scale = (noise_scale + np.abs(working - centre) * failed_scale) / keep
                spread = spread / keep
            split = ((("range: exponential-mechanism median and MAD of each coordinate's "
                       f"block estimates ({2 * p} mechanisms, rank distance, sensitivity 1)"),
                      eps_r),) if ranged else ()
            split += ((f"mean of the clamped block estimates and the number of failed blocks "
                       f"(L1 sensitivity {p + 1} x 2**16 units)", eps_m),
                      (f"spread: mean absolute deviation about that mean (L1 sensitivity {p} x "
                       "2**16 units)", eps_v))
            mechanism = ("sample-and-aggregate (Smith 2011): statsmodels fits on k random blocks, "
                         "clamped, averaged, exact discrete Laplace")
        if clip_axes and private:
            split += ((clip_split_label(len(clip_axes)), eps_c),)
        outside = released_outside(outside_exact, clip_axes, pub.n, eps_c, bits)
        params = np.linalg.solve(A, working - b)
        if no_information:
            warnings.warn(
                f"{'' if failed_up == failed else 'an estimated '}{failed:.0%} of the {k:,} blocks "
                f"of {block_rows} rows could not be fitted"
                + ("" if failed_up == failed else f" (up to {min(failed_up, 1.0):.0%} within the "
                   f"noise, above the {MAX_FAILED_BLOCKS:.0%} the mean can be corrected for)")
                + " (a level absent from a block, separation, or no convergence), so the release "
                f"carries no information about any coefficient ({', '.join(shown)}): the average "
                "would be mostly the range's centre, and the fitted blocks a selected few; their "
                "standard errors are infinite and their intervals unbounded; use fewer, larger "
                "blocks (blocks=), fewer levels or terms, or another method",
                ReleaseWarning, stacklevel=user_stacklevel())
        report = SampleAggregateReport(
            epsilon=epsilon, private=private, mechanism=mechanism, split=split, n=pub.n,
            n_source=pub.n_source, blocks=k, block_rows=block_rows, range_source=range_source,
            bias_correction=correction or "none",
            variables=tuple((a.name, describe_axis(a)) for a in domain.axes), columns=names,
            seeded=bits.seeded, budget=budget, outside_bounds=outside)
        return PrivateSampleAggregate(
            family=family, formula=formula, q=q, exog_names=exog,
            endog_name=(fv.response[0] if family in ("logit", "mnlogit") else space.endog_name),
            ynames=ynames, names=names, blocks=int(k_eff), A=A, b=b, lo=lo, hi=hi,
            working=np.asarray(working, float), noise_scale=np.asarray(noise_scale, float),
            spread=np.asarray(spread, float), params=params, space=space, report=report,
            failed_share=failed, no_information=bool(no_information))

    return run_release(epsilon=epsilon, label=label, accountant=accountant,
                       random_state=random_state, read=read, measure=measure, announce=announce)
