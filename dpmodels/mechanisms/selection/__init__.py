"""Private feature selection: Vinterbo's (2012) PRIVATEKD.

Given a discrete target ``f`` and candidate variables ``A`` (each discretized on
its public domain: declared levels, or bounds and bins), PRIVATEKD chooses ``k``
candidates greedily, each step with the exponential mechanism, to maximize the
*k-discernibility* score (Vinterbo §2.2)::

    U(S) = |pi(S) ∩ pi(f)|  = number of ordered pairs of rows (x, y) that some
                              variable of S tells apart *and* f tells apart.

``U(S) = T_f - W(S)``, with ``T_f = N**2 - sum_v N_v**2`` the pairs f tells
apart and ``W(S) = sum_B (|B|**2 - sum_v |B ∩ f^-1(v)|**2)`` the pairs of a
block B of the partition S induces on the rows that f tells apart but S does
not.  Keeping the partition of the current selection and refining it with
each candidate gives the O(k d N) algorithm of §2.2 (a ``bincount`` or
``unique`` per candidate and step).

Privacy
-------
* **Neighbours**: replace-one, public number of rows ``N`` (the rows handed in).
* **Sensitivity**: a row takes part in ``2 (N - 1)`` ordered pairs, so replacing
  it changes every ``U(S)`` by at most ``Delta = 2 (N - 1)`` (a row dropped for a
  missing value only removes pairs).  Vinterbo's ``F = U / N`` has ``Delta(F) < 2``
  (Theorem 1).  The candidates' domains and ``N`` are public, so ``Delta`` is.
* **Noise law**: step ``i`` picks candidate ``a`` among those left with
  ``P(a) ∝ exp(eps' F(S ∪ {a})) = exp(r U(S ∪ {a}))``, ``eps' = eps_p / (4k)``
  and ``r = eps' / N``.  By the exponential mechanism's argument (numerator and
  denominator each move by at most ``exp(r Delta)``) a step is
  ``2 r Delta = eps_p (N-1) / (k N)``-DP, and the k steps compose to
  ``eps_p (N - 1) / N < eps_p`` (Theorem 1, Corollary 1).
* **Exact sampling**: the scores are integers, so ``P(a) ∝ rho**c_a`` with
  ``rho = exp(-r)`` and ``c_a = max U - U(S ∪ {a})`` a non-negative integer.
  We propose ``a`` uniformly (rejection on random words, exact) and accept it
  when a geometric variable ``G`` with ``P(G >= j) = rho**j``
  (`dpmodels.core.exact.geometric()`, exact for ``rho = exp(-epsilon/2)`` with
  ``epsilon = 2 r``) is ``>= c_a``: the accepted candidate has exactly the law
  above.  ``r`` is a float: it is rounded *down* until
  ``4 k r (N - 1) <= eps_p`` holds in exact rational arithmetic, so the loss
  bound above holds for the float actually used.
* **Budget**: ``select_features`` spends all its ``epsilon`` on the selection;
  the projected models (`dpmodels.models.projected`) split ``epsilon`` into
  ``eps_p = (1 - gamma) epsilon`` for the selection and ``eps_h`` for the
  histogram (§2.3), and report both.

Choosing k and gamma (§2.3), from public inputs only
----------------------------------------------------
* ``k``: the minimal greedy (non-private) selection MDA with
  ``U(S) / U(A) >= 1 - sigma``, ``sigma = 0.1``, on a *simulated* data set of
  ``min(N, 20000)`` rows: a target uniform on its ``q`` declared levels and
  each candidate independent standard normal, scaled into [0, 1] and cut into
  as many equal bins as its public domain has cells.  The simulation uses a
  fixed seed: ``k`` is a function of (N, q, the candidates' domain sizes).
* ``gamma = eps_h / (eps_h + eps_p)`` with the paper's two requirements:
  ``eps_p = B k**2 log(m) / (l * pihat(q) / N)``, ``pihat(q) = N**2 (q-1) / (2q)``,
  ``B = 1/2``, ``l = 0.05``, ``m`` the number of candidates; and ``eps_h``
  the smallest epsilon keeping a row's cell with probability ``p = 0.9``
  (the paper leaves p open) under the threshold ``A log(N) / eps_h``, ``A = 1/2``,
  for a cell of ``z = (sum_i p_i**2)**k N / q`` rows, the ``p_i`` the simulated
  bins' masses.  gamma is kept in [0.05, 0.95].

Discretization: ``bins="auto"`` uses the paper's rule for the selection, the
bandwidth ``bw(N, m) = (log N / N)**(1/(m+1))``, i.e. ``ceil(1/bw - 1/2)``
equal bins (at least 2) per continuous candidate; binning itself is
`dpmodels.domain.axes.Axis.codes()`, the histogram release's.
"""

from __future__ import annotations

import math
import numbers
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction

import numpy as np
import pandas as pd

from ...core.accountant import Accountant
from ...core.budget import split_epsilon
from ...core.errors import (
    DomainError,
    DPModelsError,
    DPModelsTypeError,
    NotPrivateWarning,
    UnknownVariableError,
)
from ...core.exact import MIN_EPSILON, LogRate, geometric, uniform_below
from ...core.keywords import checked_keywords
from ...core.randomness import RandomBits
from ...core.report import ReleaseReport, closing_rows
from ...data.clipping import (
    CLIP_SHARE,
    OutsideBounds,
    clipping_axes,
    exact_outside,
)
from ...data.clipping import split_label as clip_split_label
from ...data.columns import columns_of, dtype_of, nrows
from ...data.counting import missing_error, undeclared_error
from ...data.engines import source_for
from ...data.validation import (
    _check_accountant,
    _check_bins,
    _check_bounds,
    _check_levels,
    check_choice,
    check_dtypes,
    check_epsilon,
    check_random_state,
    check_used_columns,
)
from ...domain.axes import Domain, build_domain
from ...domain.formula import user_stacklevel
from ..pipeline import released_outside, run_release

__all__ = ["select_features", "FeatureSelection", "SelectionReport", "private_kd",
           "estimate_k", "estimate_gamma", "selection_bins", "selection_rows"]

#: sigma of (10): the fraction of the pairs all candidates discern that k may leave.
SIGMA = 0.1
#: l and B of "Determining eps_p" (§2.3).
LOST_FRACTION = 0.05
B_TUNE = 0.5
#: A of the threshold A log(n) / epsilon in "Determining eps_h" (§2.3, as in the paper).
A_TUNE = 0.5
#: The probability p that a row's cell survives the threshold ("Determining eps_h";
#: the paper leaves it open).
P_KEEP = 0.9
#: gamma is kept in this range (a selection with almost no budget is uniform).
GAMMA_RANGE = (0.05, 0.95)
#: Rows of the simulated data set behind k and gamma, and its fixed seed.
SIM_ROWS = 20_000
SIM_SEED = 2012

MECHANISM = ("exponential mechanism, greedy k-discernibility (PRIVATEKD, Vinterbo 2012), "
             "exact sampler")


# ---- the report --------------------------------------------------------------------------


@dataclass(frozen=True)
class SelectionReport(ReleaseReport):
    """The privacy report of a private feature selection.

    Attributes
    ----------
    epsilon : float
        Spent on the selection (pure DP, delta = 0); ``inf`` when not private.
    private : bool
        False only for ``epsilon=inf`` (no noise: not private).
    mechanism : str
        The mechanism's name, as the summary's privacy block prints it.
    k : int
        The number of variables selected.
    k_source : str
        "given" or how it was estimated (§2.3).
    epsilon_step : float
        Vinterbo's ``eps' = epsilon / (4k)``.
    score_scale : float
        ``r`` of ``P(a) ∝ exp(r U(S ∪ {a}))`` (rounded down, see the module notes).
    sensitivity : int
        ``2 (N - 1)``: replace-one sensitivity of the pair count U.
    target : str
        The response whose predictors were selected.
    candidates : tuple of str
        The candidate variables, in the caller's order.
    selected : tuple of str
        In the order chosen.
    n : int
        Public number of rows.
    n_source : str
        "rows handed in" or "declared by the caller".
    variables : tuple of (name, description)
        Public domains of the target and the candidates.
    seeded : bool
        True when a ``random_state`` made the noise reproducible.
    budget : str
        How the release was charged to an `Accountant` ("no accountant" when none).
    split : tuple of (str, float)
        The parts of epsilon when a variable can clip: the selection's steps and
        the noisy counts of rows outside the bounds (`dpmodels.data.clipping`);
        empty when the steps took all of epsilon (a selection inside a
        projected model counts them in its histogram).
    outside_bounds : OutsideBounds or None
        Noisy counts of rows outside each bounded variable's declared bounds;
        None when no variable can clip or none was counted.
    """

    title = "Feature selection report"

    epsilon: float
    private: bool
    mechanism: str
    k: int
    k_source: str
    epsilon_step: float
    score_scale: float
    sensitivity: int
    target: str
    candidates: tuple
    selected: tuple
    n: int
    n_source: str
    variables: tuple
    seeded: bool
    budget: str = "no accountant"
    split: tuple = ()
    outside_bounds: OutsideBounds | None = None

    @property
    def dropped(self) -> tuple:
        """The candidates not selected, in the caller's order."""
        return tuple(c for c in self.candidates if c not in self.selected)

    def rows(self) -> list[tuple[str, str]]:
        """(label, value) pairs, in display order."""
        eps = "inf (NOT PRIVATE)" if not self.private else f"{self.epsilon:g}"
        return [
            ("Privacy:", f"epsilon-DP, epsilon = {eps}, delta = 0"),
            ("Mechanism:", self.mechanism if self.private else
             "none (greedy argmax, NOT PRIVATE)"),
        ] + [("  epsilon part:", f"{e:.4g} for {label}") for label, e in self.split] + [
            ("Target:", self.target),
            ("k:", f"{self.k} ({self.k_source})"),
            ("Step epsilon:", "none" if not self.private else
             f"eps' = {'epsilon' if not self.split else '(steps part)'}/(4k) = "
             f"{self.epsilon_step:.4g}; score sensitivity "
             f"{self.sensitivity} pairs"),
            ("Selected:", ", ".join(self.selected)),
            ("Dropped:", ", ".join(self.dropped) or "none"),
            ("Public n:", f"{self.n} ({self.n_source})"),
        ] + closing_rows(self)


@dataclass(frozen=True)
class FeatureSelection:
    """The output of `select_features()`: the chosen candidates (in the
    order chosen), the others, and the privacy report.  Pass it as
    ``select=`` to `dp_logit()` / `dp_mnlogit()`
    to fit on the projection without spending on a new selection.

    Attributes
    ----------
    selected : tuple of str
        The candidates chosen, in the order chosen.
    dropped : tuple of str
        The other candidates.
    target : str
        The response the candidates were scored against.
    report : SelectionReport
        The privacy report (also ``privacy``).
    """

    selected: tuple
    dropped: tuple
    target: str
    report: SelectionReport

    @property
    def privacy(self) -> SelectionReport:
        """The privacy report (alias of ``report``)."""
        return self.report

    def __repr__(self) -> str:
        return (f"FeatureSelection(selected={list(self.selected)}, dropped={list(self.dropped)}, "
                f"epsilon={self.report.epsilon:g})")


# ---- the mechanism -----------------------------------------------------------------------


def _counts(keys: np.ndarray, minlength: int, weights: np.ndarray | None) -> np.ndarray:
    """``bincount`` of ``keys``, each row counted ``weights`` times (int64; the
    float sums of integer weights are exact below 2**53)."""
    if weights is None:
        return np.bincount(keys, minlength=minlength).astype(np.int64)
    return np.rint(np.bincount(keys, weights=weights, minlength=minlength)).astype(np.int64)


def _pair_term(keys: np.ndarray, size: int, weights: np.ndarray | None = None) -> int:
    """``sum_c count_c**2`` over the distinct values of ``keys`` (in [0, size)),
    a row of ``keys`` standing for ``weights`` rows when given."""
    if keys.size == 0:
        return 0
    if size <= 4 * keys.size + 1024:
        cnt = _counts(keys, 0, weights)
    else:
        _, inverse = np.unique(keys, return_inverse=True)
        cnt = _counts(inverse.ravel(), 0, weights)
    return int(np.dot(cnt, cnt))


def _undiscerned(blocks: np.ndarray, n_blocks: int, codes: np.ndarray, size: int,
                 f: np.ndarray, q: int, weights: np.ndarray | None = None) -> int:
    """``W(S ∪ {a})``: pairs in one block of the refined partition that f tells apart."""
    key = blocks * size + codes
    return (_pair_term(key, n_blocks * size, weights)
            - _pair_term(key * q + f, n_blocks * size * q, weights))


#: Largest table (candidates x blocks x cells x target levels) scored in one bincount.
_VECTOR_CELLS = 1 << 22


def _all_undiscerned(blocks: np.ndarray, n_blocks: int, codes: Sequence[np.ndarray],
                     sizes: Sequence[int], f: np.ndarray, q: int, left: Sequence[int],
                     weights: np.ndarray | None = None) -> np.ndarray:
    """``W(S ∪ {a})`` for every candidate ``a`` in ``left`` (int64): two
    ``bincount`` calls over all candidates at once when the table is small,
    else one candidate at a time.  With ``weights``, a row stands for that
    many rows (the distinct cells of an engine's count)."""
    top = max(int(sizes[a]) for a in left)
    span = n_blocks * top * q
    if len(left) * span > _VECTOR_CELLS:
        return np.array([_undiscerned(blocks, n_blocks, codes[a], int(sizes[a]), f, q, weights)
                         for a in left], dtype=np.int64)
    key = blocks[None, :] * top + np.stack([codes[a] for a in left])  # (m, N)
    offset = (np.arange(len(left), dtype=np.int64) * span)[:, None]
    w = None if weights is None else np.tile(np.asarray(weights, np.float64), len(left))
    c1 = _counts((key + offset).ravel(), len(left) * span, w).reshape(len(left), -1)
    c2 = _counts((key * q + f[None, :] + offset).ravel(), len(left) * span,
                 w).reshape(len(left), -1)
    return np.einsum("ij,ij->i", c1, c1) - np.einsum("ij,ij->i", c2, c2)


def _refine(blocks: np.ndarray, codes: np.ndarray, size: int) -> tuple[np.ndarray, int]:
    u, inv = np.unique(blocks * size + codes, return_inverse=True)
    return inv.astype(np.int64).ravel(), int(u.size)


def exponential_choice(bits: RandomBits, deficits: np.ndarray, r: float) -> int:
    """Index ``i`` drawn with ``P(i) ∝ exp(-r * deficits[i])`` exactly
    (``deficits``: non-negative integers, one of them 0).

    Rejection: propose ``i`` uniformly, accept when ``G >= deficits[i]`` for a
    geometric ``G`` with ``P(G >= j) = exp(-r j)``; the acceptance
    probability is at least ``1/m``.  Batches only precompute the sequence of
    trials: the first accepted trial is returned.
    """
    deficits = np.asarray(deficits, dtype=np.int64)
    m = deficits.size
    if m == 1:
        return 0
    rate = LogRate.of_q(2.0 * r)
    cap = int(deficits.max()) + 1
    batch = 2 * m + 8
    while True:
        idx = uniform_below(bits, m, batch).astype(np.int64)
        g = geometric(bits, rate, batch, cap=cap)
        ok = g >= deficits[idx]
        if ok.any():
            return int(idx[int(np.argmax(ok))])


def score_scale(epsilon: float, k: int, n: int) -> float:
    """``r = eps' / N`` with ``eps' = epsilon / (4k)``, rounded down until
    ``4 k r (N - 1) <= epsilon`` holds exactly (rational arithmetic)."""
    r = float(epsilon) / (4.0 * k) / float(n)
    bound = Fraction(float(epsilon))
    while r > 0 and Fraction(r) * 4 * k * max(n - 1, 1) > bound:
        r = math.nextafter(r, 0.0)
    return r


def private_kd(codes: Sequence[np.ndarray], sizes: Sequence[int], target: np.ndarray, q: int,
               k: int, r: float | None, bits: RandomBits | None,
               weights: np.ndarray | None = None) -> list[int]:
    """PRIVATEKD (Vinterbo's Algorithm 1) on coded rows.

    Parameters
    ----------
    codes : list of int64 arrays
        Each candidate's cell of each row (0 <= code < size).
    sizes : list of int
        Each candidate's number of cells.
    target : int64 array
        The target's cell of each row (0 <= code < q).
    q : int
    k : int
    r : float or None
        Scale of the exponential mechanism on the integer pair counts
        (`score_scale()`); None: the non-private greedy NONPRIVATEKD
        (argmax, ties to the first candidate).
    bits : RandomBits or None
    weights : int64 array, optional
        The number of rows each row of ``codes`` stands for (the distinct cells
        and their counts, as an engine counts them): the same pair counts, so
        the same choice, as the rows themselves.

    Returns
    -------
    list of int
        Indices of the chosen candidates, in the order chosen.
    """
    n = target.size
    left = list(range(len(codes)))
    chosen: list[int] = []
    blocks = np.zeros(n, np.int64)
    n_blocks = 1
    for _ in range(min(k, len(codes))):
        w = _all_undiscerned(blocks, n_blocks, codes, sizes, target, q, left, weights)
        deficits = w - w.min()  # = max U - U(S ∪ {a}) (U = T_f - W)
        if r is None:
            pick = int(np.argmin(w))
        else:
            if bits is None:
                raise ValueError("private_kd with a scale r draws from bits: pass a RandomBits")
            pick = exponential_choice(bits, deficits, r)
        a = left.pop(pick)
        chosen.append(a)
        if len(chosen) < k:
            blocks, n_blocks = _refine(blocks, codes[a], int(sizes[a]))
    return chosen


# ---- k and gamma from public inputs (§2.3) -----------------------------------------------


def _simulated(n: int, q: int, sizes: Sequence[int]):
    """The simulated data set of §2.3 (fixed seed: a function of public inputs)."""
    rng = np.random.default_rng(SIM_SEED)
    rows = int(min(max(n, 2), SIM_ROWS))
    f = rng.integers(0, q, rows).astype(np.int64)
    codes, collision = [], []
    for s in sizes:
        x = rng.standard_normal(rows)
        u = (x - x.min()) / (x.max() - x.min())
        c = np.minimum((u * s).astype(np.int64), int(s) - 1)
        codes.append(c)
        p = np.bincount(c, minlength=int(s)) / rows
        collision.append(float(np.dot(p, p)))
    return codes, f, collision


def estimate_k(n: int, q: int, sizes: Sequence[int], sigma: float = SIGMA) -> int:
    """``|MDA(f, D', sigma)|`` on the simulated data set ``D'`` of §2.3.

    Examples
    --------
    >>> estimate_k(1000, 2, [10, 10, 10, 10, 10, 10])
    2
    """
    m = len(sizes)
    if m <= 1:
        return m
    codes, f, _ = _simulated(n, q, sizes)
    rows = f.size
    total_f = rows * rows - _pair_term(f, q)
    blocks, nb = np.zeros(rows, np.int64), 1
    for a in range(m):
        blocks, nb = _refine(blocks, codes[a], int(sizes[a]))
    u_all = total_f - (_pair_term(blocks, nb) - _pair_term(blocks * q + f, nb * q))
    if u_all <= 0:
        return 1
    left = list(range(m))
    blocks, nb = np.zeros(rows, np.int64), 1
    for step in range(1, m + 1):
        w = _all_undiscerned(blocks, nb, codes, sizes, f, q, left)
        best = int(np.argmin(w))
        a = left.pop(best)
        blocks, nb = _refine(blocks, codes[a], int(sizes[a]))
        if (total_f - w[best]) >= (1.0 - sigma) * u_all:
            return step
    return m  # pragma: no cover - the last step reaches U(A)


def estimate_gamma(n: int, q: int, sizes: Sequence[int], k: int) -> float:
    """The share ``gamma = eps_h / (eps_h + eps_p)`` of §2.3 ("Choosing gamma").

    Examples
    --------
    >>> 0.05 <= estimate_gamma(1000, 2, [10] * 6, 2) <= 0.95
    True
    """
    m = len(sizes)
    if k >= m:
        return 1.0
    n = max(int(n), 2)
    eps_p = B_TUNE * k * k * math.log(m) * 2.0 * q / (LOST_FRACTION * n * (q - 1))
    _, _, collision = _simulated(n, q, sizes)
    c = float(np.exp(np.mean(np.log(collision))))
    z = max(c ** k * n / q, 1e-12)
    need = A_TUNE * math.log(n)
    eps_h = max(need - 2.0 * math.log(1.0 / (2.0 * P_KEEP)),
                need - 2.0 * math.log(2.0 - 2.0 * P_KEEP)) / z
    gamma = eps_h / (eps_h + eps_p)
    return float(min(max(gamma, GAMMA_RANGE[0]), GAMMA_RANGE[1]))


def selection_bins(n: int, m: int) -> int:
    """Bins per continuous candidate for ``bins="auto"``: ``ceil(1/bw - 1/2)``
    with Vinterbo's (Lei's) bandwidth ``bw(n, m) = (log n / n)**(1/(m+1))``,
    at least 2 and at most 256.

    >>> selection_bins(150, 4), selection_bins(45_000, 14)
    (2, 2)
    """
    n = max(int(n), 3)
    bw = (math.log(n) / n) ** (1.0 / (m + 1))
    return int(min(max(math.ceil(1.0 / bw - 0.5), 2), 256))


# ---- the public function -----------------------------------------------------------------


def _check_names(data, target, candidates) -> tuple[str, tuple[str, ...], list[str]]:
    source = source_for(data)
    if source is None and not isinstance(data, (pd.DataFrame, Mapping)):
        raise DPModelsTypeError(
            "feature selection reads a pandas DataFrame, a mapping of column name to array, or "
            "a Polars, Dask, DuckDB or PySpark data frame; got " + type(data).__name__)
    cols = source.columns() if source is not None else columns_of(data)
    if not isinstance(target, str):
        raise DPModelsTypeError(f"target must be a column name (str), got {type(target).__name__}")
    if isinstance(candidates, str) or not isinstance(candidates, Sequence):
        raise DPModelsTypeError(
            "candidates must be a list of column names, e.g. ['x1', 'x2'], got "
            f"{type(candidates).__name__}")
    cand = tuple(candidates)
    bad = [c for c in cand if not isinstance(c, str)]
    if bad:
        raise DPModelsTypeError(f"candidates must be column names (str); got {bad[0]!r}")
    if not cand:
        raise DPModelsError("candidates is empty: name the variables to choose from")
    if len(set(cand)) != len(cand):
        raise DPModelsError(f"candidates lists a variable twice: {list(cand)}")
    if target in cand:
        raise DPModelsError(f"the target {target!r} is also a candidate: remove it from candidates")
    unknown = [c for c in (target,) + cand if c not in cols]
    if unknown:
        raise UnknownVariableError(
            f"no column {', '.join(map(repr, unknown))} in the data (columns: {cols[:20]})")
    return target, cand, cols


def _check_k(k, m: int) -> int | None:
    if k is None or (isinstance(k, str) and k == "auto"):
        return None
    if isinstance(k, (bool, np.bool_)) or not isinstance(k, numbers.Integral):
        raise DPModelsTypeError(f"k must be a positive int or None (estimated), got {k!r}")
    if not 1 <= int(k) <= m:
        raise DPModelsError(
            f"k={k} must be between 1 and the number of candidates ({m})")
    return int(k)


def selection_domain(data, target: str, candidates: Sequence[str], *, bounds, levels, bins,
                     n: int, epsilon: float, cols) -> Domain:
    """The public domain of the target and the candidates (``bins="auto"``:
    `selection_bins()`); the target must be discrete with >= 2 levels."""
    names = (target,) + tuple(candidates)
    source = source_for(data)
    if source is None:
        check_used_columns(data, names)
    dtypes = (source.dtypes(names) if source is not None
              else {nm: dtype_of(data, nm) for nm in names})
    check_dtypes(dtypes)
    auto = selection_bins(n, len(candidates))
    use: int | dict[str, int]
    if isinstance(bins, str):  # "auto" (checked by _check_bins)
        use = auto
    elif isinstance(bins, Mapping):
        first = build_domain(names, dtypes, bounds=bounds, levels=levels, bins=bins, n=n,
                             epsilon=epsilon, data_columns=cols)
        use = {a.name: auto for a in first.axes if a.kind == "continuous"}
        use.update(bins)
    else:
        use = bins
    domain = build_domain(names, dtypes, bounds=bounds, levels=levels, bins=use, n=n,
                          epsilon=epsilon, data_columns=cols)
    axis = domain.axis(target)
    if axis.kind != "discrete":
        raise DomainError(
            f"the target {target!r} must be discrete, but it is continuous "
            f"({axis.describe()}): declare its level set, e.g. levels={{{target!r}: [0, 1]}}")
    if len(axis.level_set) < 2:
        raise DomainError(
            f"the target {target!r} has a single declared level: declare every value it can take")
    return domain


def coded_rows(data, domain: Domain, missing: str) -> tuple[list[np.ndarray], int]:
    """Each variable's cell per row (rows with a missing value dropped, or
    refused under ``missing="raise"``); an undeclared level is an error.
    Returns the codes (domain order) and the number of rows handed in."""
    codes, drop = [], None
    nrows = None
    for axis in domain.axes:
        col = data[axis.name]
        try:
            c, miss, bad = axis.codes(col if isinstance(col, pd.Series) else np.asarray(col))
        except TypeError as exc:
            raise DPModelsTypeError(
                f"{axis.name!r} holds values that cannot be matched to its declared levels "
                f"({exc}); recode the column to scalars first") from None
        if bad.any():
            vals = np.asarray(col, dtype=object)[np.flatnonzero(bad)[:3]].tolist()
            raise undeclared_error(axis.name, vals)
        if miss.any() and missing == "raise":
            raise missing_error(axis.name)
        nrows = c.size
        drop = miss if drop is None else (drop | miss)
        codes.append(c)
    if drop is not None and drop.any():
        codes = [c[~drop] for c in codes]
    return codes, int(nrows or 0)


@checked_keywords
def select_features(
    data,
    target: str,
    candidates: Sequence[str],
    *,
    k: int | None = None,
    epsilon: float,
    bounds: Mapping[str, tuple[float, float]] | None = None,
    levels: Mapping[str, Sequence] | None = None,
    bins: int | Mapping[str, int] | str = "auto",
    random_state=None,
    accountant: Accountant | None = None,
    missing: str = "drop",
) -> FeatureSelection:
    """Choose ``k`` of ``candidates`` that best tell apart the classes of
    ``target``, with epsilon-differential privacy (Vinterbo's PRIVATEKD).

    Parameters
    ----------
    data : pandas.DataFrame or mapping of str to array-like
        The raw rows (read once, never modified).
    target : str
        A discrete variable (declared levels, or a bool column).
    candidates : list of str
        The variables to choose from, discretized on their public domain.
    k : int, optional
        How many to choose; None estimates it from public inputs (Vinterbo §2.3,
        `estimate_k()`).
    epsilon : float
        Spent on the selection; ``inf`` is the non-private greedy choice
        (flagged NOT PRIVATE).
    bounds, levels : dict
        Public bounds of continuous candidates, public level sets of discrete
        ones and of the target (as in `dpmodels.release()`).
    bins : int, dict or "auto"
        Equal-width bins per continuous candidate; "auto" is the paper's
        bandwidth rule (`selection_bins()`).
    random_state : None, int or Generator
        None draws from the OS's secure entropy; a seed for tests and docs.
    accountant : Accountant, optional
        Charged ``epsilon``; refuses before reading data if it does not fit.
    missing : {"drop", "raise"}

    Returns
    -------
    FeatureSelection
        ``.selected`` (in the order chosen), ``.dropped``, ``.report``.

    Raises
    ------
    DPModelsError
        Bad arguments, a missing bound or level set, a continuous target, an
        undeclared level: before anything is spent or drawn.

    Notes
    -----
    Replace-one neighbours, public N (rows handed in).  The score (pairs of
    rows told apart by the chosen variables and by the target) has
    sensitivity ``2(N-1)``; each of the k steps is an exponential mechanism
    with ``eps' = epsilon/(4k)`` on ``F = U/N`` (Theorem 1), sampled exactly.
    See `dpmodels.mechanisms.selection`.

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> import dpmodels as dpm
    >>> rng = np.random.default_rng(0)
    >>> df = pd.DataFrame({"x1": rng.uniform(0, 1, 500), "x2": rng.uniform(0, 1, 500),
    ...                    "g": rng.choice(["a", "b", "c"], 500)})
    >>> df["y"] = (df["x1"] > 0.5).astype(int)
    >>> sel = dpm.select_features(df, "y", ["x1", "x2", "g"], k=1, epsilon=1.0,
    ...                           bounds={"x1": (0, 1), "x2": (0, 1)},
    ...                           levels={"y": [0, 1], "g": ["a", "b", "c"]}, random_state=0)
    >>> sel.selected
    ('x1',)
    >>> sel.report.epsilon
    1.0
    """
    # ---- public inputs only, before any row is read --------------------------------
    check_random_state(random_state)
    epsilon = check_epsilon(epsilon)
    target, cand, cols = _check_names(data, target, candidates)
    k = _check_k(k, len(cand))
    check_choice("missing", missing, ("drop", "raise"))
    _check_accountant(accountant)
    _check_bounds(bounds)
    _check_levels(levels, bounds)
    _check_bins(bins)
    source = source_for(data)
    n_rows = source.nrows() if source is not None else nrows(data)
    if n_rows < 2:
        raise DPModelsError(f"data has {n_rows} row(s): a selection needs at least 2")
    domain = selection_domain(data, target, cand, bounds=bounds, levels=levels, bins=bins,
                              n=n_rows, epsilon=epsilon, cols=cols)
    sizes = [domain.axis(c).size for c in cand]
    q = domain.axis(target).size
    k_source = "given"
    if k is None:
        k = estimate_k(n_rows, q, sizes)
        k_source = f"estimated from public n, q and domain sizes (Vinterbo §2.3, sigma={SIGMA})"
    # a share of epsilon for the rows outside the bounds (dpmodels.data.clipping) when a
    # variable can clip; the selection's steps use the rest
    clip_axes = clipping_axes(domain)
    eps_c, eps_sel = math.inf, epsilon
    if clip_axes and math.isfinite(epsilon):
        eps_c, eps_sel = split_epsilon(epsilon, [CLIP_SHARE, None])
        if eps_c < MIN_EPSILON:
            raise DPModelsError(f"epsilon={epsilon!r} is too small to split (the outside "
                                f"counts' part {eps_c:.3g} is below {MIN_EPSILON:g})")
    def read():  # the coded rows (undeclared levels, missing values raise here)
        codes, weights = selection_rows(data, domain, missing)
        outside_exact = exact_outside(data, clip_axes)
        if math.isinf(epsilon):
            warnings.warn(
                "epsilon=inf: the selection is the non-private greedy choice, NOT "
                "differentially private. Use it only to compare with private selections.",
                NotPrivateWarning, stacklevel=user_stacklevel())
        return codes, weights, outside_exact

    def measure(first, bits, budget: str) -> FeatureSelection:
        codes, weights, outside_exact = first
        return select_coded(codes, domain, target, cand, k, k_source, epsilon, n_rows,
                       "rows handed in", bits, budget, weights=weights,
                       clip=(clip_axes, eps_sel, eps_c, outside_exact))

    return run_release(epsilon=epsilon, label=f"feature selection for {target!r}",
                       accountant=accountant, random_state=random_state, read=read,
                       measure=measure)


def selection_rows(data, domain: Domain, missing: str):
    """``(codes, weights)`` the selection scores: each row's codes (weights
    None) in memory; where the data live, the distinct non-empty cells, each
    weighted by its exact count (the same scores).  Undeclared levels and, with
    ``missing="raise"``, missing values raise here, before any noise."""
    source = source_for(data)
    if source is None:
        codes, _ = coded_rows(data, domain, missing)
        return codes, None
    cells = source.count(domain, missing=missing)
    codes = [np.asarray(c, np.int64) for c in domain.decode(cells.ids)]
    return codes, np.asarray(cells.counts, np.int64)


def select_coded(codes, domain, target, cand, k, k_source, epsilon, n_rows, n_source, bits,
            budget: str, weights=None, clip=None) -> FeatureSelection:
    """PRIVATEKD on the coded rows, with the noise source ``bits`` of a charged
    release: the measuring step of `select_features()` and of the projected models'
    selection (`dpmodels.mechanisms.pipeline.run_release()`).  ``clip``:
    ``(axes, eps_sel, eps_c, exact counts)`` when ``epsilon`` was split with the
    noisy counts of rows outside the bounds (`dpmodels.data.clipping`), drawn after
    the selection; the selection then runs on ``eps_sel``."""
    private = math.isfinite(epsilon)
    axes, eps_sel, eps_c, outside_exact = (clip if clip is not None
                                           else ((), epsilon, 0.0, np.zeros(0, np.int64)))
    r = score_scale(eps_sel, k, n_rows) if private else None
    sizes = [domain.axis(c).size for c in cand]
    q = domain.axis(target).size
    chosen = private_kd(codes[1:], sizes, codes[0], q, k, r, bits, weights)
    selected = tuple(cand[i] for i in chosen)
    outside, split = None, ()  # type: OutsideBounds | None, tuple[tuple[str, float], ...]
    if axes:
        outside = released_outside(outside_exact, axes, n_rows, eps_c, bits)
        if private:
            split = (("the selection's steps (PRIVATEKD)", eps_sel),
                     (clip_split_label(len(axes)), eps_c))
    report = SelectionReport(
        epsilon=epsilon, private=private, mechanism=MECHANISM, k=k, k_source=k_source,
        epsilon_step=eps_sel / (4 * k), score_scale=float(r) if r is not None else math.inf,
        sensitivity=2 * (n_rows - 1), target=target, candidates=tuple(cand), selected=selected,
        n=n_rows, n_source=n_source, variables=tuple(domain.describe().items()),
        seeded=bits.seeded, budget=budget, split=split, outside_bounds=outside)
    return FeatureSelection(selected, report.dropped, target, report)
