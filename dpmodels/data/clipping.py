"""The noisy count of rows outside each declared bound (issue 43).

Values outside a continuous variable's public bounds are clipped to them
(PRIVACY.md rule 3), which is safe but silent: bounds that cut off most rows
give estimates of the *clipped* data, and nothing in the estimates says so.
Every release that reads bounded continuous variables therefore spends a
small declared share of its epsilon (`CLIP_SHARE`) on one more release:

* **What**: for each continuous variable with finite declared bounds (a
  variable with levels, or one declared `Unbounded`, cannot clip), the number
  of rows handed in whose value lies strictly below its low bound or strictly
  above its high bound (a missing value is not outside).  Counted in the
  rows' own engine (`dpmodels.data.engines.Source.map_partitions`) or in memory.
* **Sensitivity**: replace-one neighbours with a public n.  Changing one row
  changes each variable's outside-count by at most 1 (the old row may leave
  the set, the new one may join it, not both for the same count), so the
  vector over the d variables has L1 sensitivity d.
* **Noise**: the exact discrete Laplace sampler of `dpmodels.core.exact`, with
  ``P(z) ~ exp(-eps_c |z| / d)``: ``discrete_laplace(bits, e_unit)`` with
  ``e_unit = 2 eps_c / d`` rounded down until ``e_unit * d / 2 <= eps_c`` holds
  in exact rational arithmetic (`unit_epsilon()`).  That is eps_c-DP, and the
  mechanism's other parts, run on the rest ``epsilon - eps_c`` (split by
  `dpmodels.core.budget.split_epsilon`, so the parts' exact sum is at most
  ``epsilon``), compose to the caller's epsilon.
* **Published**: `OutsideBounds` on the release's report
  (``report.outside_bounds``; one "epsilon part" row, one "Rows outside
  bounds" row), and a `ClippingWarning` naming every variable whose noisy share
  outside exceeds `LARGE_SHARE` by more than `LARGE_SDS` noise standard
  deviations.  Both are functions of the noisy counts and public inputs only
  (rule 5).

When no variable can clip, nothing is spent and the field is None.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction

import numpy as np
import pandas as pd

from ..core.errors import ClippingWarning
from ..core.exact import discrete_laplace, discrete_laplace_variance
from .engines import source_for

__all__ = ["CLIP_SHARE", "LARGE_SHARE", "LARGE_SDS", "OutsideBounds", "OutsideCounter",
           "clipping_axes",
           "exact_outside", "unit_epsilon", "release_outside", "split_label",
           "warn_outside", "outside_noise_sd"]

#: The share of a release's epsilon spent on the outside counts (when at least
#: one variable can clip).  Small: at epsilon = 1 and d = 3 bounded variables
#: the counts' noise SD is sqrt(2) * d / (0.05 * 1) = 85 rows, a share of 0.03%
#: at n = 267,611 (star98's students), 0.9% at n = 10,000; the other parts lose
#: 5% of their epsilon (their noise SDs grow by about 5%).
CLIP_SHARE = 0.05
#: A variable is flagged when its noisy share outside is above this ...
LARGE_SHARE = 0.10
#: ... by more than this many noise SDs of the share: a variable with at most
#: LARGE_SHARE of its rows outside is then flagged with probability below
#: ``0.5 exp(-LARGE_SDS sqrt 2) = 0.7%`` (the discrete Laplace tail), so the
#: warning is not raised by noise alone; at star98's n and epsilon = 1 the
#: margin is 0.1%.  Ten percent of the rows moved to a bound shifts a slope by
#: about ten percent of its size in a linear model with a symmetric variable,
#: more with a skewed one: larger than any standard error dpmodels reports at
#: n in the thousands.
LARGE_SDS = 3.0


@dataclass(frozen=True)
class OutsideBounds:
    """Noisy counts of rows outside each bounded variable's declared bounds.

    Attributes
    ----------
    names : tuple of str
        The continuous variables with finite declared bounds, in domain order.
    counts : tuple of float
        The noisy count of rows outside each one's bounds (may be negative or
        above n: noise).
    n : int
        The public number of rows (the shares' denominator).
    epsilon : float
        The part of epsilon spent on the counts (``inf``: exact, not private).
    sd : float
        Standard deviation of each count's noise (0 when exact).
    """

    names: tuple[str, ...]
    counts: tuple[float, ...]
    n: int
    epsilon: float
    sd: float

    @property
    def shares(self) -> tuple[float, ...]:
        """Each noisy count over the public n (not clipped to [0, 1])."""
        return tuple(c / max(self.n, 1) for c in self.counts)

    @property
    def flagged(self) -> tuple[str, ...]:
        """The variables whose noisy share outside is above `LARGE_SHARE`
        plus `LARGE_SDS` noise SDs (post-processing)."""
        cut = LARGE_SHARE + LARGE_SDS * self.sd / max(self.n, 1)
        return tuple(nm for nm, s in zip(self.names, self.shares) if s > cut)

    def text(self) -> str:
        """The report's row: each variable's noisy share and count outside,
        the noise SD and, when any variable is flagged, what that means."""
        def one(nm, c):
            share = min(max(c / max(self.n, 1), 0.0), 1.0)
            return f"{nm} {100 * share:.1f}% ({max(c, 0.0):,.0f})"

        body = ", ".join(one(nm, c) for nm, c in zip(self.names, self.counts))
        noise = ("exact, not private" if not math.isfinite(self.epsilon)
                 else f"noisy, SD {self.sd:,.0f} rows")
        out = f"{body} ({noise})"
        if self.flagged:
            out += (f"; {', '.join(self.flagged)}: a large share clipped, the estimates and "
                    "intervals describe the clipped data, not the unclipped population: "
                    "widen the bounds")
        return out


def clipping_axes(domain) -> tuple:
    """The domain's axes that can clip: continuous, with finite bounds (not
    `Unbounded`).  Public inputs only."""
    return tuple(a for a in domain.axes
                 if a.kind == "continuous" and a.unbounded is None and a.bounds is not None
                 and all(math.isfinite(float(b)) for b in a.bounds))


class OutsideCounter:
    """``frame -> int64 counts`` of values outside each axis's bounds
    (picklable: the engines send it to their workers)."""

    def __init__(self, axes: Sequence):
        self.bounds = tuple((a.name, float(a.bounds[0]), float(a.bounds[1])) for a in axes)

    def __call__(self, frame) -> np.ndarray:
        out = np.zeros(len(self.bounds), np.int64)
        for j, (name, lo, hi) in enumerate(self.bounds):
            x = np.asarray(pd.to_numeric(pd.Series(np.asarray(frame[name]).ravel()),
                                         errors="coerce"), dtype=float)
            with np.errstate(invalid="ignore"):
                out[j] = int(np.count_nonzero((x < lo) | (x > hi)))  # NaN: not outside
        return out


def exact_outside(data, axes: Sequence) -> np.ndarray:
    """The exact number of rows of ``data`` outside each axis's bounds (int64),
    counted where the rows live.  Not private: `release_outside()` noises it."""
    counter = OutsideCounter(axes)
    if not axes:
        return np.zeros(0, np.int64)
    source = source_for(data)
    if source is None:
        return counter({a.name: data[a.name] for a in axes})
    if getattr(source, "lf", None) is not None:  # Polars, DuckDB, Spark: one query
        return _engine_outside(source, axes)
    parts = source.map_partitions([a.name for a in axes], counter)  # Dask
    total = np.zeros(len(axes), np.int64)
    for p in parts:
        total += np.asarray(p, np.int64)
    return total


def _engine_outside(source, axes: Sequence) -> np.ndarray:
    """The counts as one aggregate query in the engine (narwhals expressions, as
    the histogram counts there): only d integers come back.  A missing value
    (null, or NaN in a float column) is not outside, as in memory."""
    import narwhals.stable.v2 as nw

    exprs = []
    for j, a in enumerate(axes):
        dtype = source.schema[a.name]
        x = nw.col(a.name).cast(nw.Float64)
        out = (x < float(a.bounds[0])) | (x > float(a.bounds[1]))
        if dtype.is_float() or dtype == nw.Decimal:
            out = out & ~x.is_nan()
        exprs.append(out.fill_null(False).cast(nw.Int64).sum().alias(f"outside_{j}"))
    row = source.lf.select(exprs).collect()
    values = [row.item(0, f"outside_{j}") for j in range(len(axes))]
    return np.array([int(v) if v is not None else 0 for v in values], np.int64)


def unit_epsilon(eps_c: float, d: int) -> float:
    """The ``epsilon`` argument of `discrete_laplace()` (noise
    ``exp(-e |z| / 2)``) that makes a vector of L1 sensitivity ``d``
    ``eps_c``-DP: ``2 eps_c / d``, lowered by ulps until ``e * d / 2 <=
    eps_c`` in exact rational arithmetic."""
    e = 2.0 * float(eps_c) / d
    while Fraction(e) * d > 2 * Fraction(float(eps_c)):
        e = math.nextafter(e, 0.0)
    return e


def outside_noise_sd(eps_c: float, d: int) -> float:
    """Standard deviation of each outside count's noise."""
    if not math.isfinite(eps_c):
        return 0.0
    return math.sqrt(discrete_laplace_variance(unit_epsilon(eps_c, d)))


def split_label(d: int) -> str:
    """The report's label of the counts' epsilon part."""
    return (f"rows outside bounds ({d} count{'s' if d != 1 else ''}, one per bounded "
            f"variable, L1 sensitivity {d})")


def release_outside(exact: np.ndarray, axes: Sequence, n: int, eps_c: float,
                    bits) -> OutsideBounds:
    """The noisy outside counts (`exact_outside()` plus exact discrete Laplace
    noise of L1 sensitivity ``len(axes)``), drawn from ``bits`` after the
    budget was charged.  ``eps_c = inf`` keeps them exact (not private)."""
    d = len(axes)
    exact = np.asarray(exact, np.int64)
    if math.isfinite(eps_c):
        noisy = exact + discrete_laplace(bits, unit_epsilon(eps_c, d), d)
    else:
        noisy = exact
    return OutsideBounds(tuple(a.name for a in axes), tuple(float(c) for c in noisy),
                         int(n), float(eps_c), outside_noise_sd(eps_c, d))


def warn_outside(outside: OutsideBounds | None, stacklevel: int = 2) -> None:
    """A `ClippingWarning` naming each flagged variable (none when nothing is
    flagged).  Its words depend on the noisy counts and public inputs only."""
    if outside is None or not outside.flagged:
        return
    parts = [f"{nm} ({100 * min(max(s, 0.0), 1.0):.0f}%)"
             for nm, s in zip(outside.names, outside.shares) if nm in outside.flagged]
    warnings.warn(
        f"a large share of the rows lies outside the declared bounds of {', '.join(parts)} "
        "(noisy counts, in the privacy report): those values were clipped to the bounds, so "
        "the estimates and their intervals describe the clipped data, not the unclipped "
        "population. Widen the bounds (from public knowledge) to cover the values.",
        ClippingWarning, stacklevel=stacklevel)
