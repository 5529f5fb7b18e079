"""Synthetic rows: drawn from a histogram release, or by the smoothed-histogram
mechanism of Wasserman & Zhou (2010).

Two ways to hand out synthetic data, after Wasserman & Zhou's "sampling from
a histogram" (``../shared/papers/wasserman-zhou-statistical-framework-dp-slides.txt``):

**Perturbed histogram sampling** (`PrivateHistogram.sample()`, i.e.
`sample_release()`).  Post-processing of an existing release, so it costs
no budget (PRIVACY.md rule 6): a cell is drawn with probability proportional
to its released (noisy) count, then a point inside it, uniform on the cell or
from the within-cell density that `dpmodels.domain.representatives` fits to the
release.  The draws use `make_rng()` (OS-seeded by
default, reproducible with a seed): they are not part of any privacy
guarantee.  A thresholded release has non-negative counts; a signed release
(``threshold=None``) may hold negative counts, which are set to 0 here
(Wasserman & Zhou's ``max(D_j, 0)``).  ``size=None`` draws as many rows as
the release's noisy total.

**The smoothed histogram** (`smoothed_sample()`).  A *new* release from
raw rows: ``size`` rows drawn independently from

    f_{m,delta} = (1 - delta) f_hat_m + delta * u,

``f_hat_m`` the exact histogram of the rows over the ``m`` cells of the public
domain and ``u`` the uniform law over the cells; inside the drawn cell the
point is uniform (on the axis's binning scale) and a discrete variable takes
the cell's level.

Neighbouring relation
    Replace-one, public ``n`` (the number of rows handed in).
Sensitivity
    One row moves at most ``1/n`` of the mass of ``f_hat_m`` from one cell to
    another, so one draw's cell probability ``p_j = (1 - delta) C_j / n +
    delta / m`` changes by at most ``(1 - delta) / n``, and ``p_j >= delta /
    m`` always.  The likelihood ratio of one synthetic row between
    neighbours is therefore at most ``1 + (1 - delta) m / (n delta)``; the
    point inside the cell does not depend on the data.
Noise law
    The mixture itself: with probability ``delta`` a uniform cell, else the
    cell of a uniformly chosen row.  ``size`` independent rows multiply the
    ratio, so the release is epsilon-DP when (Theorem 5)

        size * log(1 + (1 - delta) m / (n delta)) <= epsilon.

    ``delta`` defaults to the smallest value meeting it, ``m / (m + n
    expm1(epsilon / size))``, rounded *up* to a multiple of 2**-60 and checked
    with rigorous interval arithmetic, so that the bound holds for the
    rational ``delta`` actually used.  Sampling is exact: ``delta`` is a
    rational ``a / 2**60`` compared with 60 uniform bits; rows and uniform
    cells are uniform integers below ``n`` and ``m`` drawn by rejection from
    the 64-bit words of `random_source()` (secure OS
    entropy by default).  A row with a missing value is never looked at:
    when it is picked, a uniform cell is drawn instead (this moves at most
    ``(1 - delta) / n`` of a cell's probability, as above).
Budget split
    One step: the whole epsilon goes to the sampling; the report gives the
    privacy loss bound ``size * log(1 + (1 - delta) m / (n delta))`` actually
    reached (at most epsilon).

With ``epsilon=inf`` (NOT private, for checks) ``delta`` defaults to 0: rows
drawn from the plain histogram, which Wasserman & Zhou note is not private
for any finite epsilon.
"""

from __future__ import annotations

import itertools
import math
import numbers
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import ClassVar, Literal, overload

import numpy as np
import pandas as pd
from mpmath.libmp import from_float, from_int, mpf_cmp, to_float
from mpmath.libmp.libmpi import mpi_add, mpi_div, mpi_log, mpi_mul

from ...core.accountant import Accountant
from ...core.budget import split_epsilon
from ...core.errors import (
    DPModelsError,
    DPModelsTypeError,
    NotPrivateWarning,
    ReleaseWarning,
    UnknownVariableError,
)
from ...core.exact import MIN_EPSILON, uniform_below
from ...core.keywords import checked_keywords
from ...core.randomness import RandomBits, make_rng
from ...core.report import ReleaseReport, closing_rows
from ...data.clipping import (
    CLIP_SHARE,
    OutsideBounds,
    clipping_axes,
    exact_outside,
)
from ...data.clipping import split_label as clip_split_label
from ...data.columns import columns_of, dtype_of, nrows, unreadable_values_error
from ...data.counting import count_cells
from ...data.engines import source_for
from ...data.validation import (
    check_dtypes,
    check_epsilon,
    check_release_arguments,
    check_row_count,
    check_used_columns,
)
from ...domain.axes import Axis, Domain, build_domain
from ...domain.formula import user_stacklevel
from ...domain.representatives import Representer, _basis, _layout
from ..pipeline import released_outside, run_release

__all__ = ["smoothed_sample", "sample_release", "SmoothedSample", "SmoothedSampleReport",
           "values_in_bins", "uniform_below", "smoothed_delta", "DELTA_BITS", "MAX_SIZE"]

#: ``delta`` is a multiple of ``2**-DELTA_BITS`` (compared with that many random bits).
DELTA_BITS = 60
_DELTA_DEN = 1 << DELTA_BITS
#: Most synthetic rows one call draws (memory: a few arrays of this length).
MAX_SIZE = 10**8
#: Above this delta the smoothed sample is mostly uniform noise: a warning says so.
DELTA_WARN = 0.5
#: Sub-boxes per axis of the piecewise-constant approximation of the fitted
#: within-cell density (``within="density"``), by number of continuous axes.
_DENSITY_GRID = {1: 32, 2: 8, 3: 4}
_PREC = 128

MECHANISM = ("smoothed histogram (Wasserman & Zhou, Theorem 5): size rows drawn from "
             "(1 - delta) f_hat_m + delta * uniform, exact integer sampling")


# ---------------------------------------------------------------------------------------
# the shared pieces: exact uniform integers, bin index -> values, frames
# ---------------------------------------------------------------------------------------


def _unit_floats(bits: RandomBits, shape) -> np.ndarray:
    """Uniform floats on [0, 1) (53 bits each) from the words of ``bits``."""
    size = int(np.prod(shape))
    return ((bits.words(size) >> np.uint64(11)).astype(np.float64) * 2.0**-53).reshape(shape)


def values_in_bins(axis: Axis, codes: np.ndarray, fraction: np.ndarray) -> np.ndarray:
    """Values of a continuous ``axis`` at position ``fraction`` (in [0, 1))
    inside the bins ``codes``: ``fraction`` is taken on the axis's binning
    scale (uniform fractions give a point uniform in the bin's coordinates,
    e.g. log-uniform on a "log" axis) and mapped back with
    `Axis.to_values()`.  The one place where a bin index becomes a
    value: an axis kind with other bins extends this function.

    Examples
    --------
    >>> from dpmodels.domain.axes import Axis
    >>> ax = Axis("x", "continuous", bounds=(0.0, 10.0), bins=5)
    >>> values_in_bins(ax, np.array([0, 4]), np.array([0.5, 0.0])).tolist()
    [1.0, 8.0]
    """
    edges = axis.edges
    codes = np.asarray(codes, dtype=np.int64)
    left, right = edges[codes], edges[codes + 1]
    coord = np.minimum(left + np.asarray(fraction, dtype=np.float64) * (right - left), right)
    if getattr(axis, "unbounded", None) is not None:
        # an Unbounded axis's edge bins reach -inf and +inf (coordinates 0 and 1): keep the
        # point strictly inside (0, 1) so that its value is finite
        coord = np.clip(coord, np.nextafter(0.0, 1.0), np.nextafter(1.0, 0.0))
    return axis.to_values(coord)


def _frame(domain: Domain, ids: np.ndarray, fractions: np.ndarray) -> pd.DataFrame:
    """The synthetic rows: one per cell id, a continuous variable at its
    ``fractions`` column inside the bin, a discrete one at the cell's level in
    the published type of its declared levels (`Axis.column()`)."""
    codes = domain.decode(np.asarray(ids, dtype=np.uint64))
    cols, j = {}, 0
    for axis, c in zip(domain.axes, codes):
        if axis.kind == "continuous":
            cols[axis.name] = values_in_bins(axis, c, fractions[:, j])
            j += 1
        else:
            cols[axis.name] = axis.column(c)
    return pd.DataFrame(cols, index=pd.RangeIndex(len(codes[0]) if codes else 0))


def _n_continuous(domain: Domain) -> int:
    return sum(a.kind == "continuous" for a in domain.axes)


# ---------------------------------------------------------------------------------------
# perturbed histogram sampling (post-processing of a release)
# ---------------------------------------------------------------------------------------

WITHIN = ("uniform", "density")


@overload
def _check_size(size, allow_none: Literal[False]) -> int: ...


@overload
def _check_size(size, allow_none: bool) -> int | None: ...


def _check_size(size, allow_none: bool) -> int | None:
    if size is None and allow_none:
        return None
    if (isinstance(size, (bool, np.bool_)) or not isinstance(size, (numbers.Integral,))
            or not 1 <= int(size) <= MAX_SIZE):
        what = "None (the release's noisy total) or " if allow_none else ""
        raise DPModelsError(
            f"size must be {what}a whole number of rows in [1, {MAX_SIZE:,}], got {size!r}")
    return int(size)


def sample_release(release, size: int | None = None, random_state=None,
                   within: str = "uniform") -> pd.DataFrame:
    """Synthetic rows drawn from a histogram release (post-processing: free).

    See `dpmodels.PrivateHistogram.sample()`, which calls this.
    """
    if within not in WITHIN:
        raise DPModelsError(f'within must be "uniform" or "density", got {within!r}')
    size = _check_size(size, allow_none=True)
    rng = make_rng(random_state)  # raises for a bad random_state
    domain = release.domain
    counts = np.maximum(np.asarray(release.counts, dtype=np.int64), 0)  # signed: clip at 0
    total = int(counts.sum(dtype=np.int64)) if counts.size else 0
    if total <= 0:
        raise DPModelsError(
            "the release has no positive count: there is nothing to draw rows from (make a "
            "release with a larger epsilon or fewer cells)")
    if size is None:
        if total > MAX_SIZE:
            raise DPModelsError(
                f"the release's noisy total {total:,} is more than {MAX_SIZE:,} rows: pass a "
                "smaller size")
        size = total
    cum = np.cumsum(counts)
    pos = np.searchsorted(cum, rng.integers(0, total, size=size), side="right")
    ids = np.asarray(release.cell_ids, dtype=np.uint64)[pos]
    d = _n_continuous(domain)
    used = within if d else "none (no continuous variable)"
    if d and within == "density":
        fractions, used = _density_fractions(release, ids, rng)
    else:
        fractions = rng.random((size, d))
    frame = _frame(domain, ids, fractions)
    frame.attrs["synthetic"] = "perturbed histogram sampling (post-processing of the release)"
    frame.attrs["within"] = used
    return frame


def _density_fractions(release, ids: np.ndarray, rng) -> tuple[np.ndarray, str]:
    """Within-bin fractions of the continuous axes from the density that
    `dpmodels.domain.representatives` fits to the release, approximated inside
    each cell by `_DENSITY_GRID` sub-boxes per axis (the density at
    each sub-box's centre; uniform within the sub-box)."""
    domain = release.domain
    rep = Representer.from_release(release, list(domain.names), "density")
    d = _n_continuous(domain)
    if rep.method != "density":
        warnings.warn(
            f"the within-cell density is not fitted for this release ({d} continuous "
            "variables or too many cells; see dpmodels.domain.representatives.density_feasible): "
            "points are drawn uniformly inside their cells", ReleaseWarning,
            stacklevel=user_stacklevel())
        return rng.random((ids.size, d)), "uniform (the density fit is not available)"
    fit = rep._fit
    # method "density": fit_density's fit, which always carries its pooled fit
    assert fit is not None and fit.pooled is not None
    uniq, inv = np.unique(ids, return_inverse=True)
    codes = domain.decode(uniq)
    cont, sizes, gkey = _layout(domain, codes)
    basis = _basis(tuple(sizes), fit.family)
    theta = np.stack([fit.thetas.get(int(g), fit.pooled) for g in gkey.tolist()])
    G = _DENSITY_GRID[d]
    sub = np.array(list(itertools.product(range(G), repeat=d)), dtype=np.float64)  # (S, d)
    S = sub.shape[0]
    ccodes = np.stack([codes[i] for i in cont], axis=1).astype(np.float64)  # (U, d)
    k = np.asarray(sizes, np.float64)
    u = (ccodes[:, None, :] + (sub[None, :, :] + 0.5) / G) / k * 2.0 - 1.0  # (U, S, d)
    eta = np.einsum("usp,up->us", basis.design(u), theta)
    w = np.exp(eta - eta.max(axis=1, keepdims=True))
    cum = np.cumsum(w, axis=1)
    cum /= cum[:, -1:]
    flat = (cum + np.arange(uniq.size)[:, None]).ravel()
    r = rng.random(ids.size)
    j = np.searchsorted(flat, inv + r, side="right") - inv * S
    j = np.clip(j, 0, S - 1)
    fractions = (sub[j] + rng.random((ids.size, d))) / G
    return np.minimum(fractions, np.nextafter(1.0, 0.0)), "density"


# ---------------------------------------------------------------------------------------
# the smoothed histogram (a new release)
# ---------------------------------------------------------------------------------------


def _loss_interval(size: int, m: int, n: int, a: int) -> tuple:
    """An interval (mpmath raw) holding ``size * log(1 + (1 - delta) m / (n delta))``
    for ``delta = a / 2**60`` (outward rounding)."""
    num = from_int((_DELTA_DEN - a) * m)
    den = from_int(n * a)
    ratio = mpi_div((num, num), (den, den), _PREC)
    one = (from_int(1), from_int(1))
    k = from_int(size)
    return mpi_mul((k, k), mpi_log(mpi_add(one, ratio, _PREC), _PREC), _PREC)


def _meets(size: int, m: int, n: int, a: int, epsilon: float) -> bool:
    """Whether ``delta = a / 2**60`` certainly satisfies Theorem 5's bound."""
    if a >= _DELTA_DEN:
        return True
    if a <= 0:
        return False
    return mpf_cmp(_loss_interval(size, m, n, a)[1], from_float(float(epsilon))) <= 0


def smoothed_delta(epsilon: float, size: int, m: int, n: int) -> Fraction:
    """The smallest multiple of ``2**-60`` that is at least Wasserman & Zhou's
    ``delta = m / (m + n expm1(epsilon / size))``, checked with interval
    arithmetic to satisfy ``size * log(1 + (1 - delta) m / (n delta)) <= epsilon``.
    A function of public inputs only.

    Parameters
    ----------
    epsilon : float
        The sample's epsilon.
    size : int
        The number of rows drawn.
    m : int
        The number of cells of the public domain.
    n : int
        The public number of rows.

    Returns
    -------
    fractions.Fraction

    Examples
    --------
    >>> d = smoothed_delta(1.0, 1, 10, 1000)
    >>> round(float(d), 6), round(10 / (10 + 1000 * math.expm1(1.0)), 6)
    (0.005786, 0.005786)
    """
    if math.isinf(epsilon):
        return Fraction(0)
    x = epsilon / size
    c = math.expm1(x) if x < 700.0 else math.inf  # (exp overflows near 709: delta -> 0)
    target = m / (m + n * c) if c > 0 else 1.0
    a = min(_DELTA_DEN, max(1, math.ceil(target * _DELTA_DEN)))
    # the float target is within a few ulps: step down while the bound still holds,
    # up until it holds (a handful of interval evaluations)
    step = max(1, int(a * 1e-12))
    while a > 1 and _meets(size, m, n, a - step, epsilon):
        a -= step
    while not _meets(size, m, n, a, epsilon):
        a = min(_DELTA_DEN, a + step)
    return Fraction(a, _DELTA_DEN)


def smoothed_cells(bits: RandomBits, ids: np.ndarray, counts: np.ndarray, n: int, m: int,
                   delta: Fraction, size: int) -> np.ndarray:
    """The cells (uint64 ids) of ``size`` draws from ``(1 - delta) f_hat + delta u``.

    ``ids``, ``counts``: the exact counts of the complete rows (sorted ids);
    ``n``: the public number of rows (those with a missing value are the
    last ``n - sum(counts)`` row numbers: picking one gives a uniform cell).
    Per draw: 60 random bits below ``delta * 2**60`` -> a uniform cell below
    ``m``; else a uniform row number below ``n``, whose cell is read off the
    running counts (row numbers ordered by cell: the same law as picking a
    row of the data)."""
    a = int(delta * _DELTA_DEN)
    if delta.denominator > _DELTA_DEN or Fraction(a, _DELTA_DEN) != delta:
        raise ValueError("delta must be a multiple of 2**-60")
    uni = (bits.words(size) >> np.uint64(64 - DELTA_BITS)) < np.uint64(a)
    cells = np.empty(size, np.uint64)
    rows_at = np.flatnonzero(~uni)
    rows = uniform_below(bits, n, rows_at.size)
    cum = np.cumsum(np.asarray(counts, dtype=np.int64)).astype(np.uint64)
    pos = np.searchsorted(cum, rows, side="right")
    complete = pos < len(ids)
    cells[rows_at[complete]] = np.asarray(ids, dtype=np.uint64)[pos[complete]]
    uniform_at = np.sort(np.concatenate([np.flatnonzero(uni), rows_at[~complete]]))
    cells[uniform_at] = uniform_below(bits, m, uniform_at.size)
    return cells


@dataclass(frozen=True)
class SmoothedSampleReport(ReleaseReport):
    """The privacy report of `smoothed_sample()`.

    Attributes
    ----------
    epsilon : float
        Privacy parameter (pure DP); ``inf`` when not private.
    private : bool
        False only for ``epsilon=inf`` (no noise: not private).
    mechanism : str
        The mechanism's name, as the summary's privacy block prints it.
    delta : float
        The smoothing weight (float value of ``delta_rational``).
    delta_rational : str
        The exact rational ``delta`` used, ``"a/2**60"``.
    loss_bound : float
        ``size * log(1 + (1 - delta) m / (n delta))`` (upper end of its
        rigorous enclosure): at most the sampling's part of ``epsilon``.
    split : tuple of (str, float)
        The budget split: the sampling, and the noisy counts of rows outside
        the bounds when a variable can clip (`dpmodels.data.clipping`).
    size : int
        Number of synthetic rows.
    n : int
        Public number of rows (rows handed in).
    n_source : str
        "rows handed in" or "declared by the caller".
    domain_cells : int
        Number ``m`` of cells of the public domain.
    variables : tuple of (name, description)
        The public domain of each variable.
    missing : str
        What a row with a missing value contributes.
    seeded : bool
        True when a ``random_state`` made the noise reproducible.
    budget : str
        How the release was charged to an `Accountant` ("no accountant" when none).
    outside_bounds : OutsideBounds or None
        Noisy counts of rows outside each bounded variable's declared bounds;
        None when no variable can clip.
    """

    #: The fields computed from the noise: none, every field is a public input,
    #: equal on neighbouring data sets.
    NOISY_FIELDS: ClassVar[tuple[str, ...] | None] = ()

    epsilon: float
    private: bool
    mechanism: str
    delta: float
    delta_rational: str
    loss_bound: float
    split: tuple
    size: int
    n: int
    n_source: str
    domain_cells: int
    variables: tuple
    missing: str
    seeded: bool
    budget: str = "no accountant"
    outside_bounds: OutsideBounds | None = None

    def rows(self) -> list[tuple[str, str]]:
        """(label, value) pairs, in display order."""
        eps = "inf (NOT PRIVATE)" if not self.private else f"{self.epsilon:g}"
        rows = [
            ("Privacy:", f"pure epsilon-DP, epsilon = {eps}"),
            ("Mechanism:", self.mechanism),
        ]
        rows += [("  epsilon part:", f"{e:.4g} for {label}") for label, e in self.split]
        rows += [
            ("Smoothing:", f"weight of the uniform law delta = {self.delta_rational} = "
                           f"{self.delta:.6g}"),
            ("Loss bound:", f"size*log(1+(1-delta)m/(n delta)) = {self.loss_bound:.6g}"),
            ("Synthetic rows:", f"{self.size:,}"),
            ("Public n:", f"{self.n} ({self.n_source})"),
            ("Domain cells:", f"{self.domain_cells:,}"),
            ("Missing values:", self.missing),
        ]
        return rows + closing_rows(self)


@dataclass(frozen=True)
class SmoothedSample:
    """Synthetic rows from `smoothed_sample()` and their privacy report.

    Attributes
    ----------
    frame : pandas.DataFrame
        ``size`` rows, one column per variable in the declared types.
    report : SmoothedSampleReport
    domain : Domain
        The public domain the rows were drawn on.
    """

    frame: pd.DataFrame
    report: SmoothedSampleReport
    domain: Domain

    @property
    def privacy(self) -> SmoothedSampleReport:
        """The privacy report (alias of ``report``)."""
        return self.report

    def __len__(self) -> int:
        return len(self.frame)

    def __repr__(self) -> str:
        return (f"SmoothedSample(variables={list(self.domain.names)}, size={self.report.size:,}, "
                f"epsilon={self.report.epsilon:g}, delta={self.report.delta:.4g})")


def _check_delta(delta, epsilon: float) -> Fraction | None:
    if delta is None:
        return None
    if isinstance(delta, (bool, np.bool_)) or not isinstance(delta, numbers.Real):
        raise DPModelsTypeError(f"delta must be None or a number in (0, 1), got {delta!r}")
    value = float(delta)
    low_ok = value >= 0 if math.isinf(epsilon) else value > 0
    if not (low_ok and value < 1):
        raise DPModelsError(
            f"delta must be in (0, 1) (the weight of the uniform component; 0 is allowed only "
            f"with epsilon=inf), got {delta!r}")
    exact = Fraction(value)
    a = math.ceil(exact * _DELTA_DEN)  # rounded up to the 2**-60 grid
    if a >= _DELTA_DEN:
        raise DPModelsError(f"delta={delta!r} rounds up to 1: use a smaller delta")
    return Fraction(a, _DELTA_DEN)


@checked_keywords
def smoothed_sample(
    data,
    *,
    columns: Sequence[str],
    epsilon: float,
    size: int,
    bounds: Mapping[str, tuple[float, float]] | None = None,
    levels: Mapping[str, Sequence] | None = None,
    bins: int | Mapping[str, int] | None = None,
    delta: float | None = None,
    random_state=None,
    accountant: Accountant | None = None,
    missing: str = "drop",
) -> SmoothedSample:
    """Epsilon-DP synthetic rows from the smoothed histogram (Wasserman & Zhou).

    Draws ``size`` rows independently from ``(1 - delta) f_hat_m + delta *
    uniform`` over the ``m`` cells of the public domain (see the module
    notes).  A new release from raw data: it spends ``epsilon``.

    Parameters
    ----------
    data : pandas.DataFrame or mapping of str to array-like
        The raw rows; read once, never modified.
    columns : sequence of str
        The variables of the synthetic rows.
    epsilon : float
        Privacy parameter (> 0); ``inf`` samples the plain histogram (NOT
        private, for checks only).
    size : int
        Number of synthetic rows ``k``.  The privacy cost grows with it:
        Wasserman & Zhou's accuracy results take ``k`` of order
        ``n**(4/(6+r))`` (KS) or ``n**((r+2)/(2r+3))`` (L2), ``r`` the number
        of continuous variables.
    bounds, levels :
        The public domain, as for `dpmodels.release()`.
    bins : int or dict, optional
        Equal-width bins per continuous variable.  Default: Theorem 6's
        KS-optimal order, ``n**(r/(6+r))`` cells over the r continuous
        variables, i.e. ``round(n**(1/(6+r)))`` bins each (public n and r;
        Theorem 7 takes ``n**(r/(2r+3))`` cells for the L2 distance).
    delta : float, optional
        Weight of the uniform component; by default the smallest value with
        ``size * log(1 + (1 - delta) m / (n delta)) <= epsilon``
        (`smoothed_delta()`).  A given value is rounded up to a multiple
        of 2**-60 and refused if it does not meet the bound.
    random_state : None, int or numpy.random.Generator
        None: the OS's secure entropy; a seed makes the draw reproducible
        (the report says so).
    accountant : Accountant, optional
        Charged ``epsilon``; a release that does not fit is refused before
        the data are read.
    missing : {"drop", "raise"}
        A row with a missing value is not used (when it is picked, a
        uniform cell is drawn instead; ``n`` stays the rows handed in), or
        refused.

    Returns
    -------
    SmoothedSample
        ``.frame`` (the rows) and ``.report``.

    Raises
    ------
    DPModelsError
        A bad argument, or settings that cannot meet Theorem 5's bound,
        before the accountant is charged, any row is read or any random bit
        drawn.

    Examples
    --------
    >>> import numpy as np, pandas as pd, dpmodels as dpm
    >>> rng = np.random.default_rng(0)
    >>> df = pd.DataFrame({"x": rng.beta(10, 10, 2000), "g": rng.choice(["a", "b"], 2000)})
    >>> syn = dpm.smoothed_sample(df, columns=["x", "g"], epsilon=1.0, size=50,
    ...                           bounds={"x": (0, 1)}, levels={"g": ["a", "b"]}, bins=10,
    ...                           random_state=0)
    >>> syn.frame.shape, round(syn.report.delta, 3), syn.report.loss_bound <= 1.0
    ((50, 2), 0.343, True)
    """
    # ---- public inputs only, before any row is read -------------------------------
    check_release_arguments(
        data, columns=columns, formula=None, epsilon=epsilon, bounds=bounds, levels=levels,
        bins=1 if bins is None else bins, threshold="enhanced", threshold_A=0.5, n=None,
        random_state=random_state, accountant=accountant, missing=missing,
        max_spurious_cells=1.0, namespace=None, domain_check=None)
    # an engine's frame (Polars, Dask, DuckDB, Spark) is counted where it lives: only its
    # schema, its row count and the exact counts of its non-empty cells come back
    source = source_for(data)
    epsilon = check_epsilon(epsilon)
    size = _check_size(size, allow_none=False)
    delta_given = _check_delta(delta, epsilon)
    cols = source.columns() if source is not None else columns_of(data)
    names = tuple(dict.fromkeys([columns] if isinstance(columns, str) else columns))
    unknown = [c for c in names if c not in cols]
    if unknown:
        raise UnknownVariableError(
            f"no column {', '.join(map(repr, unknown))} in the data (columns: {cols[:20]})")
    if source is None:
        check_used_columns(data, names)
    n_public = source.nrows() if source is not None else nrows(data)
    check_row_count(None, n_public)
    dtypes = (source.dtypes(list(names)) if source is not None
              else {nm: dtype_of(data, nm) for nm in names})
    check_dtypes(dtypes)
    domain = build_domain(names, dtypes, bounds=bounds, levels=levels,
                          bins=1 if bins is None else bins, n=max(n_public, 2),
                          epsilon=epsilon, data_columns=cols)
    if bins is None and _n_continuous(domain):
        # Theorem 6 (KS): about n**(r/(6+r)) cells over the r continuous variables, so
        # n**(1/(6+r)) bins each (public n and r only)
        r = _n_continuous(domain)
        per_axis = max(1, round(max(n_public, 2) ** (1.0 / (6 + r))))
        domain = build_domain(names, dtypes, bounds=bounds, levels=levels, bins=per_axis,
                              n=max(n_public, 2), epsilon=epsilon, data_columns=cols)
    m = domain.size
    private = math.isfinite(epsilon)
    # a share of epsilon for the rows outside the bounds (dpmodels.data.clipping) when a
    # variable can clip; the sampling's Theorem 5 bound is met with the rest, eps_s
    clip_axes = clipping_axes(domain)
    eps_c, eps_s = math.inf, epsilon
    if clip_axes and private:
        eps_c, eps_s = split_epsilon(epsilon, [CLIP_SHARE, None])
        if eps_c < MIN_EPSILON:
            raise DPModelsError(f"epsilon={epsilon!r} is too small to split (the outside "
                                f"counts' part {eps_c:.3g} is below {MIN_EPSILON:g})")
    if delta_given is None:
        delta_used = smoothed_delta(eps_s, size, m, n_public)
        if delta_used >= 1:
            raise DPModelsError(
                f"no smoothing weight delta < 1 meets size*log(1+(1-delta)m/(n delta)) <= "
                f"epsilon with size={size}, m={m}, n={n_public}, epsilon={eps_s:g} (of "
                f"{epsilon:g}): draw "
                "fewer rows (size), use fewer cells (bins, variables) or a larger epsilon")
    else:
        delta_used = delta_given
        a = int(delta_used * _DELTA_DEN)
        if private and not _meets(size, m, n_public, a, eps_s):
            need = smoothed_delta(eps_s, size, m, n_public)
            raise DPModelsError(
                f"delta={delta!r} does not meet Theorem 5's bound size*log(1+(1-delta)m/"
                f"(n delta)) <= epsilon (size={size}, m={m}, n={n_public}, "
                f"epsilon={eps_s:g} of {epsilon:g}): it needs delta >= {float(need):.6g}; "
                "raise delta, "
                "draw fewer rows (size), use fewer cells (bins) or a larger epsilon")
    a = int(delta_used * _DELTA_DEN)
    loss = (to_float(_loss_interval(size, m, n_public, a)[1]) if private and a > 0
            else math.inf)
    def announce() -> None:
        if not private:
            warnings.warn(
                "epsilon=inf: rows drawn from the EXACT histogram are NOT differentially private. "
                "Use them only to check results against the non-private ones.",
                NotPrivateWarning, stacklevel=user_stacklevel())
        elif float(delta_used) > DELTA_WARN:
            warnings.warn(
                f"delta = {float(delta_used):.3g}: more than half of the synthetic rows are uniform "
                "noise; draw fewer rows (size), use fewer bins or a larger epsilon",
                ReleaseWarning, stacklevel=user_stacklevel())

    def read():
        # ---- the one pass over the raw rows -------------------------------------------
        if source is not None:
            exact = source.count(domain, missing=missing)
        else:
            try:
                exact = count_cells({nm: data[nm] for nm in names}, domain, missing=missing)
            except TypeError:
                raise unreadable_values_error(data, domain) from None
        outside_exact = exact_outside(data, clip_axes)
        return exact, outside_exact

    def measure(first, bits, budget: str) -> SmoothedSample:
        # ---- the draws: only after the counts were taken without error ----------------
        exact, outside_exact = first
        del first
        cells = smoothed_cells(bits, exact.ids, exact.counts, n_public, m, delta_used, size)
        del exact
        frame = _frame(domain, cells, _unit_floats(bits, (size, _n_continuous(domain))))
        outside = released_outside(outside_exact, clip_axes, n_public, eps_c, bits)
        split: tuple[tuple[str, float], ...] = (
            ("the smoothed-histogram sampling (one step)", eps_s),)
        if clip_axes and private:
            split += ((clip_split_label(len(clip_axes)), eps_c),)
        report = SmoothedSampleReport(
            epsilon=epsilon, private=private,
            mechanism=MECHANISM if private else "none (rows drawn from the exact histogram)",
            delta=float(delta_used), delta_rational=f"{a}/2**{DELTA_BITS}", loss_bound=loss,
            split=split,
            size=size, n=n_public, n_source="rows handed in", domain_cells=m,
            variables=tuple(domain.describe().items()),
            missing=("a row with a missing value, when picked, gives a uniform cell"
                     if missing == "drop" else "refused (missing='raise')"),
            seeded=bits.seeded, budget=budget, outside_bounds=outside)
        return SmoothedSample(frame, report, domain)

    return run_release(epsilon=epsilon, label=f"smoothed sample of {list(names)}",
                       accountant=accountant, random_state=random_state, read=read,
                       measure=measure, announce=announce)
