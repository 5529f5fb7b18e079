"""Privacy budget accounting under sequential composition."""

from __future__ import annotations

import math
import threading
from dataclasses import dataclass

from .errors import BudgetExceededError

__all__ = ["Accountant", "Spend", "charge"]


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
    before the data are read.  Models fitted on an existing release cost
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
        The epsilon charged so far.
    remaining : float
        ``total_epsilon - spent`` (never below 0).
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
    dpmodels.errors.BudgetExceededError: ...
    """

    #: Relative slack so that e.g. ten spends of 0.1 fit a total of 1.0.
    _TOL = 1e-9

    def __init__(self, total_epsilon: float):
        total_epsilon = float(total_epsilon)
        if not (total_epsilon > 0) or math.isnan(total_epsilon):
            raise ValueError(f"total_epsilon must be > 0, got {total_epsilon}")
        self.total_epsilon = total_epsilon
        self._ledger: list[Spend] = []
        self._lock = threading.Lock()

    @property
    def spent(self) -> float:
        """The epsilon charged so far (the sum of the ledger)."""
        return math.fsum(s.epsilon for s in self._ledger)

    @property
    def remaining(self) -> float:
        """The epsilon left: ``total_epsilon - spent``, never below 0."""
        return max(self.total_epsilon - self.spent, 0.0)

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
        if self.spent + epsilon > self.total_epsilon * (1 + self._TOL):
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
