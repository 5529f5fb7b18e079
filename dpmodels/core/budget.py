"""Splitting epsilon into the parts of a mechanism, exactly.

A mechanism made of several private steps spends ``epsilon_1 + ... +
epsilon_k``; PRIVACY.md rule 8 asks that this sum, in exact arithmetic, is
at most the ``epsilon`` the caller gave.  Parts computed in floats
(``epsilon - eps_s - eps_r``, ``epsilon * share``) are each rounded to the
nearest double, and their exact sum overshoots ``epsilon`` by an ulp or so
for about half of all epsilons (epsilon = 3.0 with the moments' shares:
``3 + 1.1e-16``).  `exact_parts()` takes the float parts a mechanism
proposes and lowers the largest one, one ulp at a time, until the parts'
exact (``fractions.Fraction``) sum is at most epsilon: the guarantee is then
the caller's epsilon, not a float's rounding above it, and the parts differ
from the proposal by a few ulps at most.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from fractions import Fraction

__all__ = ["exact_parts", "split_epsilon", "parts_fit"]


def parts_fit(epsilon: float, parts: Sequence[float]) -> bool:
    """True when the parts' exact sum is at most ``epsilon`` (both as the
    rationals the floats are)."""
    return sum((Fraction(float(p)) for p in parts), Fraction(0)) <= Fraction(float(epsilon))


def exact_parts(epsilon: float, parts: Sequence[float]) -> list[float]:
    """The float ``parts`` of a finite ``epsilon``, the largest lowered by ulps
    until their exact sum is at most ``epsilon``.

    Parameters
    ----------
    epsilon : float
        The caller's total (finite, > 0).
    parts : sequence of float
        The parts the mechanism proposes (each >= 0), in its order.

    Returns
    -------
    list of float
        The same parts, but the largest one possibly a few ulps lower.

    Examples
    --------
    >>> eps = 3.0
    >>> s, r = eps * 0.1, eps * 0.05
    >>> parts = exact_parts(eps, [s, r, eps - s - r])
    >>> parts_fit(eps, parts), parts_fit(eps, [s, r, eps - s - r])
    (True, False)
    """
    eps = float(epsilon)
    if not math.isfinite(eps) or eps <= 0:
        raise ValueError(f"exact_parts needs a finite epsilon > 0, got {epsilon!r}")
    out = [float(p) for p in parts]
    if any(p < 0 or not math.isfinite(p) for p in out):
        raise ValueError(f"parts must be finite and >= 0, got {parts!r}")
    if not out:
        return out
    big = max(range(len(out)), key=lambda i: out[i])
    for _ in range(4 * len(out) + 64):  # each ulp of the largest part covers the others'
        if parts_fit(eps, out):
            return out
        out[big] = math.nextafter(out[big], 0.0)
    # far off (a proposal that is no split of epsilon): scale every part down
    total = sum((Fraction(p) for p in out), Fraction(0))
    ratio = Fraction(eps) / total
    out = [float(Fraction(p) * ratio) for p in out]
    while not parts_fit(eps, out):
        out[big] = math.nextafter(out[big], 0.0)
    return out


def split_epsilon(epsilon: float, shares: Sequence[float | None]) -> list[float]:
    """``epsilon`` split by ``shares`` (the last part takes the remainder),
    the parts' exact sum at most ``epsilon``.

    Examples
    --------
    >>> parts = split_epsilon(1.0, [0.1, 0.05, None])
    >>> [round(p, 12) for p in parts], parts_fit(1.0, parts)
    ([0.1, 0.05, 0.85], True)
    """
    eps = float(epsilon)
    fixed = [eps * s for s in shares if s is not None]
    rest = eps - sum(fixed)
    parts = [eps * s if s is not None else rest for s in shares]
    return exact_parts(eps, parts)
