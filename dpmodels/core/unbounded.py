"""Continuous variables without public bounds: ``bounds={"x": Unbounded(center, scale)}``.

Lei (2011, §3.2) bins a variable whose range is not known by first mapping
it through a known smooth increasing transform onto a bounded interval.
dpmodels uses the logistic transform with a public centre ``c`` and scale
``s`` (> 0)::

    T(x) = 1 / (1 + exp(-(x - c) / s))          maps (-inf, inf) onto (0, 1)
    T**-1(u) = c + s * log(u / (1 - u))

The variable's axis is cut into ``bins`` equal-width bins **on the (0, 1)
scale** (`dpmodels.domain.axes.Axis` with ``scale="logistic"``): fine
bins near ``c`` (width about ``4 s / bins`` there), wide ones in the tails,
and two edge bins that reach to -inf and +inf, so no value is ever clipped.
Cell frames hold values on the variable's own scale: every representative is
computed on the (0, 1) scale, as for the "log" and "sqrt" scales, and mapped
back by ``T**-1``.  The edge bins, infinite on the original scale, are
represented by ``T**-1`` of a point strictly inside (0, 1): the bin's
midpoint (``representatives="midpoint"``; ``T**-1(1 / (2 bins))`` is the
median of a logistic(c, s) variable given it falls in that bin) or the
points of the within-cell density (the default ``"density"``), which lie
strictly inside the bin.  Both are finite.

Privacy
-------
The map ``x -> T(x) -> bin`` is a fixed per-row function of public inputs
(``c``, ``s``, ``bins``), never of the data; it takes the place of clipping
to bounds.  Neighbouring data sets (replace-one, public n) still differ by
one row, which moves one unit of count from one cell to another: the L1
sensitivity of the histogram stays 2, the noise stays discrete Laplace with
P(z) ~ exp(-epsilon |z| / 2) on every cell, and the whole epsilon goes to
the histogram (no budget split).  ``c`` and ``s`` must come from public
knowledge (a codebook, last year's published median and spread), never from
the data (PRIVACY.md rule 2).

The releases whose sensitivity comes from the variable's range (the noisy
moments, Newton steps and quantile steps) have none here and refuse an
Unbounded variable (`refuse_unbounded()`); ``method="auto"`` chooses the
histogram whenever a model variable is declared Unbounded.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass

import numpy as np

from .errors import DomainError, DomainTypeError

__all__ = ["Unbounded", "refuse_unbounded"]


@dataclass(frozen=True)
class Unbounded:
    """Declare a continuous variable without public bounds.

    ``bounds={"x": Unbounded(center, scale)}``: the values of ``x`` are
    mapped by the public logistic transform
    ``T(x) = 1 / (1 + exp(-(x - center) / scale))`` into (0, 1) and binned
    there (equal-width bins on the (0, 1) scale); cell values are mapped back
    to the original scale by ``T**-1(u) = center + scale * log(u / (1 - u))``.

    Parameters
    ----------
    center : float
        A public guess of where the variable's mass is (e.g. a published
        median); finite.
    scale : float
        A public guess of its spread (finite, > 0).  ``center +- 3 scale``
        takes the middle 90% of the (0, 1) scale: choose them so that this
        range holds nearly all values (a range you would trust as soft
        bounds).  A logistic has light tails: for a skewed variable (income)
        ``center`` = median and ``scale`` = IQR / 2.2 crowd the upper tail
        into the top bins and bias slopes; a scale 2-3 times larger did
        better in ``docs/unbounded.md``.  Too small a scale is the worst
        error (every row in the edge bins).

    Notes
    -----
    The transform is public, so the histogram's sensitivity is unchanged
    (see `dpmodels.core.unbounded`).  A variable used in the formula through
    ``np.log``, ``np.log1p`` or ``np.sqrt`` cannot be declared Unbounded
    (its cells would reach below the transform's domain): declare bounds, or
    make a column of the transformed variable and declare that one Unbounded.

    Examples
    --------
    >>> import numpy as np, pandas as pd, dpmodels as dpm
    >>> u = dpm.Unbounded(center=50_000, scale=20_000)
    >>> float(u.forward(50_000)), float(u.inverse(0.5))
    (0.5, 50000.0)
    >>> df = pd.DataFrame({"income": np.random.default_rng(0).lognormal(10.8, 0.5, 500)})
    >>> rel = dpm.release(df, columns=["income"], epsilon=1.0, bins=8,
    ...                   bounds={"income": u}, random_state=0)
    >>> rel.domain.axis("income").scale
    'logistic'
    """

    center: float
    scale: float

    def __post_init__(self):
        for what in ("center", "scale"):
            v = getattr(self, what)
            if isinstance(v, (bool, np.bool_)) or not isinstance(v, numbers.Real):
                raise DomainTypeError(
                    f"Unbounded({what}=...) must be a real number, got {v!r}")
            v = float(v)
            if not math.isfinite(v):
                raise DomainError(f"Unbounded({what}={v}) must be finite")
            object.__setattr__(self, what, v)
        if not self.scale > 0:
            raise DomainError(
                f"Unbounded(scale={self.scale}) must be > 0: a public guess of the "
                "variable's spread (e.g. a published interquartile range / 2.2)")
        if not math.isfinite(self.scale * 40.0) or abs(self.center) + 40 * self.scale >= 1e300:
            raise DomainError(
                f"Unbounded(center={self.center:g}, scale={self.scale:g}) is too large for "
                "float64 arithmetic: rescale the variable first")

    def forward(self, x) -> np.ndarray:
        """``T(x) = 1 / (1 + exp(-(x - center) / scale))`` (float64; +-inf map
        to 1 and 0, NaN stays NaN).  The same formula is used by every
        engine, so a row gets the same bin everywhere.

        Parameters
        ----------
        x : array_like
            Values on the variable's scale.

        Returns
        -------
        numpy.ndarray
            Values in [0, 1].
        """
        z = (np.asarray(x, dtype=np.float64) - self.center) / self.scale
        with np.errstate(over="ignore", invalid="ignore"):
            return 1.0 / (1.0 + np.exp(-z))

    def inverse(self, u) -> np.ndarray:
        """``T**-1(u) = center + scale * log(u / (1 - u))``: 0 and 1 map to
        -inf and +inf (the outer edges of the edge bins).

        Parameters
        ----------
        u : array_like
            Values in [0, 1].

        Returns
        -------
        numpy.ndarray
            Values on the variable's scale.
        """
        u = np.asarray(u, dtype=np.float64)
        with np.errstate(divide="ignore", invalid="ignore"):
            return self.center + self.scale * (np.log(u) - np.log1p(-u))

    def __str__(self) -> str:
        return f"Unbounded(center={self.center:g}, scale={self.scale:g})"


def refuse_unbounded(domain, mechanism: str) -> None:
    """Raise a `DomainError` naming the first
    variable of ``domain`` declared `Unbounded`: ``mechanism`` (e.g.
    "the moments release") takes its sensitivity from the variable's bounds.
    Public inputs only (the declaration), before any budget or noise."""
    for axis in domain.axes:
        if getattr(axis, "unbounded", None) is not None:
            raise DomainError(
                f"{axis.name!r} is declared {axis.unbounded}, but {mechanism} needs finite "
                f"bounds (its sensitivity or clipping range comes from each variable's "
                f"bounds): use method='histogram' (which bins "
                f"{axis.name!r} on the logistic scale), or declare "
                f"bounds={{{axis.name!r}: (low, high)}} from public knowledge")
