"""The release pipeline: the order in which a release checks, reads, charges and
draws, as one function that the release hands its own steps to.

A release function first does everything that needs no row: it checks its
arguments, reads the schema and the public n, builds the public domain and
the design, and splits epsilon (`dpmodels.mechanisms.moments.public_inputs()`
and the release's own checks). Then it calls `run_release()` with:

* ``read()``: the first pass over the rows, where every refusal that needs a
  row happens (an undeclared level, a missing value under ``missing="raise"``,
  a value the engine cannot read);
* ``measure(first, bits, budget)``: its measuring step, which draws the noise
  from ``bits`` (and may read the rows again with parameters that are released
  values, as later stages of sequential composition) and returns the release
  with its report.

`run_release()` keeps the order: the accountant's check that epsilon fits,
``announce()`` (what the release says before it reads: the not-private
warning), ``read()``, the charge, the noise source, ``measure``. So a refusal
can only come before the charge and before any noise is drawn (PRIVACY.md
rule 10), by the structure of the call rather than by each release's
convention. Every release function runs through it: the histogram, the
moments, ssp, Newton and quantile steps, the local channel,
sample-and-aggregate, the feature selection (also inside the projected
models) and the smoothed sample.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from ..core.accountant import Accountant, charge
from ..core.randomness import RandomBits, random_source
from ..data.clipping import OutsideBounds, release_outside, warn_outside
from ..domain.formula import user_stacklevel

__all__ = ["released_outside", "run_release"]

R = TypeVar("R")


def run_release(*, epsilon: float, label: str, accountant: Accountant | None, random_state,
                read: Callable[[], Any], measure: Callable[[Any, RandomBits, str], R],
                announce: Callable[[], None] | None = None) -> R:
    """Check the budget, read the rows once, charge, draw: ``measure``'s release.

    Parameters
    ----------
    epsilon : float
        The release's whole epsilon (checked, then charged, under ``label``).
    label : str
        What the accountant's ledger calls the release.
    accountant : Accountant or None
    random_state : None, int or Generator
        The noise source (`dpmodels.core.randomness.random_source()`).
    read : callable
        ``read() -> first``: the first pass over the rows (every refusal that
        needs a row).
    measure : callable
        ``measure(first, bits, budget) -> release``: the noise and the report;
        ``budget`` is the accountant's line for the report.
    announce : callable, optional
        Called after the budget check, before the rows are read.

    Returns
    -------
    The release ``measure`` returns.

    Examples
    --------
    >>> from dpmodels.core.accountant import Accountant
    >>> acct = Accountant(total_epsilon=1.0)
    >>> run_release(epsilon=0.5, label="a count", accountant=acct, random_state=0,
    ...             read=lambda: 41, measure=lambda first, bits, budget: (first + 1, budget))
    (42, 'charged epsilon=0.5; accountant: 0.5 of 1 spent')
    >>> acct.spent
    0.5
    """
    if accountant is not None:
        accountant.check(epsilon, label)
    if announce is not None:
        announce()
    first = [read()]
    budget = charge(accountant, epsilon, label)
    bits = random_source(random_state)
    return measure(first.pop(), bits, budget)  # measure holds the only reference: it may free it


def released_outside(exact, axes, n: int, eps_c: float, bits: RandomBits
                     ) -> OutsideBounds | None:
    """The measuring step's release of the rows outside the bounds of ``axes``
    (`dpmodels.data.clipping.release_outside()`, its noise drawn from
    ``bits``), warned about where a large share was clipped; None, with
    nothing drawn, without bounded axes."""
    outside = release_outside(exact, axes, n, eps_c, bits) if axes else None
    warn_outside(outside, stacklevel=user_stacklevel())
    return outside
