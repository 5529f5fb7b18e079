"""Privacy budget accounting under sequential composition."""

from __future__ import annotations

import math
import threading
from collections.abc import Iterable
from dataclasses import dataclass
from fractions import Fraction

from .errors import BudgetExceededError

__all__ = ["Accountant", "Spend", "charge", "budget_fits", "exact_total"]


def exact_total(epsilons: Iterable[float]) -> Fraction | float:
    """The exact sum of the epsilons (as the rationals the floats are): a
    `fractions.Fraction`, or ``inf`` when one of them is infinite."""
    total = Fraction(0)
    for e in epsilons:
        e = float(e)
        if math.isinf(e):
            return math.inf
        total += Fraction(e)
    return total


def _float_up(x: Fraction | float) -> float:
    """The smallest float >= x."""
    if isinstance(x, float):
        return x
    f = float(x)
    return math.nextafter(f, math.inf) if Fraction(f) < x else f


def _float_down(x: Fraction | float) -> float:
    """The largest float <= x."""
    if isinstance(x, float):
        return x
    f = float(x)
    return math.nextafter(f, -math.inf) if Fraction(f) > x else f


def budget_fits(total: float, spent: Iterable[float], epsilon: float) -> bool:
    """True when ``epsilon`` fits in ``total`` after the spends ``spent``, in
    exact rational arithmetic (PRIVACY.md rule 8): ``sum(spent) + epsilon <=
    total`` for the rationals the floats are, with no tolerance (``Accountant(1.0)``
    takes 1.0, and then not even 1e-300).  A NaN never fits; an infinite
    epsilon fits only an infinite total.

    Examples
    --------
    >>> budget_fits(1.0, [0.5], 0.5), budget_fits(1.0, [1.0], 1e-300)
    (True, False)
    >>> budget_fits(1.0, [0.1] * 9, 0.1)  # the float 0.1 is a little above 1/10
    False
    """
    total, epsilon = float(total), float(epsilon)
    if math.isnan(total) or math.isnan(epsilon):
        return False
    if math.isinf(total):
        return True
    if math.isinf(epsilon):
        return False
    used = exact_total(spent)
    return not isinstance(used, float) and used + Fraction(epsilon) <= Fraction(total)


@dataclass(frozen=True)
class Spend:
    """One release charged to an accountant.

    Attributes
    ----------
    epsilon : float
        The epsilon charged.
    label : str
        What was released (the release's description).
    """

    epsilon: float
    label: str


class Accountant:
    """Keeps the total epsilon spent by releases from raw data.

    Under sequential composition the epsilons of separate releases add up.
    A release that would take the total past ``total_epsilon`` is refused
    before the data are read.  The sum is exact (the rationals the float
    epsilons are, PRIVACY.md rule 8): no tolerance, so ``Accountant(1.0)``
    that spent 1.0 refuses even 1e-9 more (and ten spends of the float 0.1,
    each a little above 1/10, do not fit 1.0: spend 0.1 nine times and then
    what `remaining` says).  Models fitted on an existing release cost
    nothing and are not recorded.

    Parameters
    ----------
    total_epsilon : float
        The whole budget, > 0.

    Attributes
    ----------
    total_epsilon : float
        The whole budget.
    spent : float
        The epsilon charged so far (their exact sum, rounded up to a float).
    remaining : float
        ``total_epsilon - spent`` (exact, rounded down; never below 0).
    ledger : tuple of Spend
        Every charge, in order.

    Examples
    --------
    >>> import dpmodels as dpm
    >>> acct = dpm.Accountant(1.0)
    >>> acct.spend(0.4, "first release")
    >>> acct.remaining
    0.6
    >>> acct.spend(0.7, "second release")
    Traceback (most recent call last):
    ...
    dpmodels.core.errors.BudgetExceededError: ...
    """

    def __init__(self, total_epsilon: float):
        total_epsilon = float(total_epsilon)
        if not (total_epsilon > 0) or math.isnan(total_epsilon):
            raise ValueError(f"total_epsilon must be > 0, got {total_epsilon}")
        self.total_epsilon = total_epsilon
        self._ledger: list[Spend] = []
        self._lock = threading.Lock()

    @property
    def spent(self) -> float:
        """The epsilon charged so far: the ledger's exact sum, rounded up."""
        return _float_up(exact_total(s.epsilon for s in self._ledger))

    @property
    def remaining(self) -> float:
        """The epsilon left: ``total_epsilon - spent`` exactly, rounded down,
        never below 0 (a release of at most this epsilon fits)."""
        if math.isinf(self.total_epsilon):
            return math.inf
        used = exact_total(s.epsilon for s in self._ledger)
        if isinstance(used, float):  # pragma: no cover - an infinite spend needs an infinite total
            return 0.0
        return max(_float_down(Fraction(self.total_epsilon) - used), 0.0)

    @property
    def ledger(self) -> tuple[Spend, ...]:
        """Every charge, in order (a `Spend` each)."""
        return tuple(self._ledger)

    def check(self, epsilon: float, label: str = "release") -> None:
        """Raise `BudgetExceededError` if ``epsilon`` does not fit.

        Parameters
        ----------
        epsilon : float
            The epsilon a release needs.
        label : str
            What is released, for the ledger and the error message.

        Raises
        ------
        BudgetExceededError
            When ``epsilon`` does not fit in what remains.
        """
        if not budget_fits(self.total_epsilon, (s.epsilon for s in self._ledger), epsilon):
            raise BudgetExceededError(
                f"{label} needs epsilon={epsilon:g} but the accountant has only "
                f"{self.remaining:g} of {self.total_epsilon:g} left; fit further models "
                "on an existing release (free), or lower epsilon"
            )

    def spend(self, epsilon: float, label: str = "release") -> None:
        """Charge ``epsilon``; refuse (and charge nothing) if it does not fit.

        Parameters
        ----------
        epsilon : float
            The epsilon a release needs.
        label : str
            What is released, for the ledger and the error message.

        Raises
        ------
        BudgetExceededError
            When ``epsilon`` does not fit in what remains.
        """
        with self._lock:
            self.check(epsilon, label)
            self._ledger.append(Spend(float(epsilon), label))

    def __str__(self) -> str:
        lines = [f"Accountant: spent {self.spent:g} of epsilon {self.total_epsilon:g} "
                 f"({self.remaining:g} left), {len(self._ledger)} release(s)"]
        lines += [f"  {i + 1}. epsilon={s.epsilon:g}  {s.label}" for i, s in enumerate(self._ledger)]
        return "\n".join(lines)

    def __repr__(self) -> str:
        return f"Accountant(total_epsilon={self.total_epsilon!r}, spent={self.spent!r})"


def charge(accountant: Accountant | None, epsilon: float, label: str) -> str:
    """Charge a release's ``epsilon`` to ``accountant`` (if any) and return
    the report's budget line.  Every release calls it once, after everything
    that can refuse and before the first noise draw (PRIVACY.md rule 10).

    Examples
    --------
    >>> acct = Accountant(2.0)
    >>> charge(acct, 0.5, "release of ['y']")
    'charged epsilon=0.5; accountant: 0.5 of 2 spent'
    >>> charge(None, 0.5, "release of ['y']")
    'no accountant'
    """
    if accountant is None:
        return "no accountant"
    accountant.spend(epsilon, label)
    return (f"charged epsilon={epsilon:g}; accountant: {accountant.spent:g} of "
            f"{accountant.total_epsilon:g} spent")
