"""Which coefficients the release says nothing about.

A thresholded release holds, besides the real cells, *spurious* cells: empty
cells whose noise crossed the threshold.  Their number, place and values have
a public law (PRIVACY.md rule 1): each of the m domain cells that is empty is
released independently with probability ``p = P(Z >= k)``, with a count of
law ``Z | Z >= k`` (mean ``mu = k + q/(1-q)``, second moment
``s2 = q/(1-q)**2 + mu**2``), wherever it lies in the domain.

For a coefficient j, let the *mass behind it* be the released count on the
cells whose design row has a non-zero entry in column j (for a factor
level's dummy: the cells of that level; for a slope: nearly all cells).  If
that part of the domain holds N_j cells, the spurious cells alone put there a
mass of mean ``S_j = N_j p mu`` (an upper bound: some of the N_j cells are not
empty) and variance ``V_j = N_j (p s2 - p**2 mu**2)``; the noise of the R_j
released cells adds ``R_j 2q/(1-q)**2``.  When the observed mass M_j is not
clearly above what noise alone would put there,

    M_j - S_j < Z_INFO * sqrt(V_j + R_j 2q/(1-q)**2),     Z_INFO = 3,

the release carries no information about coefficient j: its estimate is
driven by noise (a declared level no row has, a level whose few rows were
all cut by the threshold, an empty data set).  The dp_* fits then give it an
infinite standard error (z = 0, p = 1, an interval of (-inf, inf)) and a
warning naming it, instead of a precise-looking number.

Everything here is post-processing: the release, its public domain, epsilon
and the threshold; N_j is counted on the formula's public marginal domain
(every cell when it has at most `EXACT_CELLS` cells, else a fixed
public sample of them).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..core.noise import discrete_laplace_sf
from ..core.report import noise_epsilon
from ..domain.axes import Domain

__all__ = ["Z_INFO", "EXACT_CELLS", "CONTAMINATION_LIMIT", "ColumnInformation", "LevelContamination",
           "column_information", "level_contamination", "marginal_frame", "spurious_law",
           "released_design", "columns_varying", "absent_levels", "unidentified_columns"]

#: Standard deviations the mass behind a coefficient must exceed the spurious mass by.
Z_INFO = 3.0
#: Marginal domains up to this many cells are enumerated; larger ones sampled.
EXACT_CELLS = 1 << 17
_SAMPLE_SEED = 20251123  # a public constant: the sample of domain cells is not random per fit


@dataclass(frozen=True)
class ColumnInformation:
    """Mass behind each design column against the spurious mass expected there."""

    mass: np.ndarray  # observed released mass behind each column
    spurious: np.ndarray  # expected spurious mass there (upper bound)
    spurious_var: np.ndarray  # variance of the spurious mass there
    noise_var: np.ndarray  # variance the noise of the released cells there adds

    @property
    def sd(self) -> np.ndarray:
        """Standard deviation of the mass noise alone would put behind each column."""
        return np.sqrt(self.spurious_var + self.noise_var)

    @property
    def uninformative(self) -> np.ndarray:
        """True where the mass is not clearly above what noise alone puts there."""
        with np.errstate(invalid="ignore"):
            return ~(self.mass - self.spurious >= Z_INFO * self.sd) & (self.spurious > 0)


def marginal_frame(domain: Domain, variables: Sequence[str]) -> tuple[pd.DataFrame, float]:
    """Cells of the marginal domain of ``variables`` (all, or a public sample),
    as a frame of representatives, and how many full-domain cells each stands for."""
    sub = Domain(tuple(domain.axis(v) for v in variables))
    m_sub = sub.size
    if m_sub <= EXACT_CELLS:
        ids = np.arange(m_sub, dtype=np.uint64)
        per_row = domain.size / m_sub
    else:
        rng = np.random.default_rng(_SAMPLE_SEED)
        ids = np.unique(rng.integers(0, m_sub, size=EXACT_CELLS, dtype=np.uint64))
        per_row = domain.size / ids.size
    return sub.frame(ids), per_row


def spurious_law(report) -> tuple[float, float, float, float] | None:
    """``(p, mu, s2, var_z)`` of a thresholded release (module docstring):
    the probability that an empty cell is released, the mean and second
    moment of its count, and the variance of one cell's noise.  None for
    epsilon = inf or a signed release."""
    if not report.private or report.threshold is None:
        return None
    eps = noise_epsilon(report)
    k = math.ceil(report.threshold)
    one_minus_q = -math.expm1(-eps / 2.0)
    g = math.exp(-eps / 2.0) / one_minus_q  # E[G] = q / (1 - q)
    mu = k + g
    second = g / one_minus_q + mu * mu  # Var(G) = q / (1 - q)**2
    return discrete_laplace_sf(k, eps), mu, second, 2.0 * g / one_minus_q


def released_design(release, variables: Sequence[str], build: Callable):
    """The release's cells on the marginal of ``variables`` (a frame without
    the count column), their counts, and the model's design ``X`` and
    response ``y`` on them (None, None when no cell is released)."""
    released = release.marginal(list(variables))
    counts = released[release.count_column].to_numpy(float)
    cells = released.drop(columns=[release.count_column]).reset_index(drop=True)
    if cells.empty:
        return cells, counts, None, None
    X, y, _ = build(cells)
    return cells, counts, np.asarray(X, float), np.asarray(y, float)


def columns_varying(build: Callable, cells: pd.DataFrame, X: np.ndarray, y: np.ndarray,
                    name: str, values) -> tuple[np.ndarray, bool]:
    """Which design columns change, and whether the response changes, when
    the variable ``name`` of ``cells`` takes ``values`` (``X``, ``y``: the
    design on ``cells`` as they are)."""
    other = cells.copy()
    other[name] = values
    X2, y2, _ = build(other)
    return (np.any(np.asarray(X2, float) != X, axis=0),
            bool(np.any(np.asarray(y2, float) != y)))


def column_information(release, variables: Sequence[str], build: Callable,
                       n_columns: int) -> ColumnInformation | None:
    """The `ColumnInformation` of a fit, or None where it does not
    apply (epsilon = inf, a signed release without threshold).

    Parameters
    ----------
    release : PrivateHistogram
    variables : sequence of str
        The formula's raw variables.
    build : callable
        ``frame -> (X, y, valid)``: the fitted model's design on new cells.
    n_columns : int
        Number of design columns (coefficients per equation).

    Examples
    --------
    A declared level ``"c"`` that no row has: only spurious cells stand
    behind its dummy.

    >>> import numpy as np, pandas as pd, dpmodels as dpm
    >>> rng = np.random.default_rng(0)
    >>> df = pd.DataFrame({"y": rng.normal(size=2000), "g": rng.choice(["a", "b"], 2000)})
    >>> m = dpm.dp_ols("y ~ C(g)", df, epsilon=1.0, bounds={"y": (-4, 4)},
    ...                levels={"g": ["a", "b", "c"]}, bins=40, random_state=1)
    >>> res = m.fit(cov_type="naive")
    >>> info = column_information(m.release, m.variables, m._design_builder(res), 3)
    >>> dict(zip(res.params.index, info.uninformative.tolist()))
    {'Intercept': False, 'C(g)[T.b]': False, 'C(g)[T.c]': True}
    """
    law = spurious_law(release.report)
    if law is None:
        return None
    p, mu, second, var_z = law

    def nonzero(frame):
        X, _, valid = build(frame)
        return (np.abs(np.asarray(X, float)) > 0) & np.asarray(valid, bool)[:, None]

    released = release.marginal(list(variables))
    counts = released[release.count_column].to_numpy(float)
    nz = nonzero(released.drop(columns=[release.count_column]))
    mass = nz.T @ counts
    per_cell = nz.sum(axis=0).astype(float)

    frame, per_row = marginal_frame(release.domain, list(variables))
    n_cells = nonzero(frame).sum(axis=0) * per_row
    spurious = n_cells * p * mu
    var = n_cells * (p * second - p * p * mu * mu)
    if mass.size != n_columns:  # pragma: no cover - a design mismatch is a bug elsewhere
        return None
    return ColumnInformation(mass, spurious, var, per_cell * var_z)


def absent_levels(release, variables: Sequence[str]) -> list[str]:
    """``"educ = 1"`` for every declared level of a discrete variable among
    ``variables`` that no released cell holds (post-processing: the release's
    cells and its public domain)."""
    released = release.marginal(list(variables))
    counts = released[release.count_column].to_numpy(float)
    out = []
    for v in dict.fromkeys(variables):
        axis = release.domain.axis(v)
        if axis.kind != "discrete":
            continue
        held = set(released.loc[counts != 0, v].tolist())
        out += [f"{v} = {lv}" for lv in axis.levels if lv not in held]
    return out


def unidentified_columns(release, variables: Sequence[str], build: Callable,
                         n_columns: int) -> np.ndarray:
    """Design columns the released cells do not identify: those with a
    non-zero loading on the null space of the design over the cells the
    release holds.  A declared factor level without a released cell makes its
    dummy a column of zeros; when it is the reference level, the Intercept and
    every contrast of the factor are collinear.  Any estimate of those
    coefficients is one solution among many, at every epsilon (infinity
    included).  Post-processing: the release and the model's design.

    Examples
    --------
    >>> import numpy as np, pandas as pd, dpmodels as dpm
    >>> rng = np.random.default_rng(0)
    >>> df = pd.DataFrame({"y": rng.normal(size=500), "g": rng.choice([2, 3], 500)})
    >>> m = dpm.dp_ols("y ~ C(g)", df, epsilon=float("inf"), bounds={"y": (-4, 4)},
    ...                levels={"g": [1, 2, 3]}, bins=8)
    >>> res = m.fit(cov_type="naive")
    >>> unidentified_columns(m.release, m.variables, m._design_builder(res), 3).tolist()
    [True, True, True]
    """
    cells, counts, X, _ = released_design(release, variables, build)
    if X is None or X.shape[1] != n_columns:
        return np.zeros(n_columns, bool)
    Z = X[counts != 0]
    scale = np.abs(Z).max(axis=0) if len(Z) else np.zeros(n_columns)
    Z = Z / np.where(scale > 0, scale, 1.0)
    if len(Z) < n_columns:  # rows of zeros: the same null space, a square right factor
        Z = np.vstack([Z, np.zeros((n_columns - len(Z), n_columns))])
    _, s, vt = np.linalg.svd(Z, full_matrices=False)  # O(cells k^2), no cells x cells factor
    tol = (s.max() if s.size else 0.0) * max(Z.shape) * np.finfo(float).eps
    null = vt[int(np.sum(s > tol)):]
    return np.any(np.abs(null) > 1e-8, axis=0)


#: Largest expected share of a factor level's released rows that the
#: threshold's spurious cells may make up before the coefficients resting on
#: that level are flagged (`level_contamination()`).  Measured: levels up
#: to 30% spurious (``dpm.datasets.housing``, n = 2,000, epsilon 1: County4
#: 29-30%; 30 releases, every interval covered) and ``fair``'s religious
#: levels (up to 15%, x10) are carried by the bootstrap; levels from 41%
#: (``fair`` x10: rate_marriage = 1 48%, occupation = 1 and 6 62% and 41%;
#: anes96's independents, over 50%) are not.
CONTAMINATION_LIMIT = 1 / 3


#: Above this expected share of spurious rows among all the model's released
#: rows, no coefficient is measured (`release_contamination()`): more of
#: the threshold's uniform noise rows than data, which pull every slope towards
#: 0 and every level's response towards the domain's middle by an amount the
#: bootstrap (whose population is estimated from the same cells) does not see.
#: Measured with the histogram named: the synthetic cont10 (10 covariates in 3
#: bins, 177,147 cells) at n = 2e3, epsilon 3 is 96% spurious, its slopes came
#: out 0.0-0.3 against 1 and its intervals covered 25-42% of the time; the
#: real-data cells at 36-38% (randhie and diabetes at epsilon 1) kept 85-97%
#: coverage with finite intervals, so the whole-release limit is not the
#: levels' 1/3.
RELEASE_CONTAMINATION_LIMIT = 0.5


def release_contamination(release, variables: Sequence[str]) -> float | None:
    """The expected share of the threshold's spurious rows among the rows the
    release holds on the marginal of ``variables``: ``m p mu / M`` for a
    domain of ``m`` cells (every cell counted as empty: an upper bound), the
    law's ``p`` and ``mu`` (`spurious_law()`) and ``M`` the released mass
    (capped at 1).  None for epsilon = inf and signed releases.
    Post-processing: the public domain, epsilon, the threshold and the release.

    Examples
    --------
    >>> import numpy as np, pandas as pd, dpmodels as dpm
    >>> rng = np.random.default_rng(0)
    >>> df = pd.DataFrame({"y": rng.normal(size=500), "x": rng.uniform(size=500)})
    >>> m = dpm.dp_ols("y ~ x", df, epsilon=1.0, bounds={"y": (-4, 4), "x": (0, 1)},
    ...                bins=10, method="histogram", random_state=1)
    >>> release_contamination(m.release, ["y", "x"]) < 0.5
    True
    """
    law = spurious_law(release.report)
    if law is None:
        return None
    released = release.marginal(list(variables))[release.count_column].to_numpy(float)
    mass = float(np.clip(released, 0.0, None).sum())
    if mass <= 0:
        return 1.0
    return min(release.domain.size * law[0] * law[1] / mass, 1.0)


@dataclass(frozen=True)
class LevelContamination:
    """Expected share of spurious rows among each factor level's released rows.

    ``shares[(variable, level)]`` is ``S / M``: ``S`` the spurious mass the
    threshold's law puts on the level's cells on average (an upper bound: it
    counts every cell as empty), ``M`` the mass the release holds there
    (capped at 1; levels that hold nothing are not listed).  ``flagged`` marks the
    design columns that rest on a level over `CONTAMINATION_LIMIT`
    (`level_contamination()`); ``over`` lists those levels, worst first.
    """

    shares: dict
    flagged: np.ndarray
    over: tuple
    classes: tuple = ()  # response classes over the limit (with ``response_classes``)

    def describe(self, limit: int = 3) -> str:
        """``"rate_marriage = 1 (48%), occupation = 1 (62%)"``, worst first."""
        parts = [f"{v} = {lv} ({share:.0%})" for v, lv, share in self.over[:limit]]
        more = len(self.over) - limit
        return ", ".join(parts) + (f" and {more} more" if more > 0 else "")


def level_contamination(release, variables: Sequence[str], build: Callable,
                        n_columns: int, *, response_classes: bool = False
                        ) -> LevelContamination | None:
    """Which coefficients rest on factor levels the spurious cells dominate.

    The spurious cells of a thresholded release fall uniformly over the
    domain, so a level of a factor (or of a discrete response) with few real
    rows gets as many of them as any other level: on statsmodels' ``fair``
    resampled to 63,660 rows at epsilon 1 (3 bins, 19,440 cells, threshold
    6) they are an expected 48% of the rows released at the reference level
    ``rate_marriage = 1`` and 62% at ``occupation = 1``.  Uniform rows pull
    such a level's response towards the domain's middle; every contrast with
    it moved by 2.5-3.6 standard errors, and the bootstrap, whose population
    is estimated from the same contaminated cells, saw the shift with the
    wrong sign.  No fit on the release can undo it, so the coefficients that
    rest on such a level get infinite standard errors.

    A variable is a factor here when some design column that varies with it
    is a 0/1 dummy (a discrete variable entered as a number, or an ordinary
    response, spreads its spurious rows over a slope like any other noise).
    A level rests under a column when the column varies with the level's
    variable and is non-zero on the level's cells; the reference level of a
    factor (every column varying with the factor is zero on it) rests under
    all of them and under the constant columns (the Intercept); with
    ``response_classes`` (the choice models), a class of the response is
    listed in ``classes``: it moves the equations that compare it (every
    equation for the reference class; the caller maps it).  A level with no released row is left to the
    model's own handling (left out, or no information behind its dummy).
    Post-processing: the release, its public domain, epsilon and the
    threshold.

    Returns None for epsilon = inf and signed releases.

    Examples
    --------
    A level with 30 of 3,000 rows on a domain of 300 cells:

    >>> import numpy as np, pandas as pd, dpmodels as dpm
    >>> rng = np.random.default_rng(0)
    >>> g = rng.choice(["a", "b", "c"], 3000, p=[0.01, 0.5, 0.49])
    >>> df = pd.DataFrame({"y": rng.normal(size=3000), "x": rng.uniform(size=3000), "g": g})
    >>> m = dpm.dp_ols("y ~ x + C(g)", df, epsilon=1.0, bounds={"y": (-4, 4), "x": (0, 1)},
    ...                levels={"g": ["a", "b", "c"]}, bins=10, method="histogram",
    ...                random_state=1)
    >>> res = m.fit(cov_type="naive")
    >>> c = level_contamination(m.release, m.variables, m._design_builder(res), 4)
    >>> c.over[0][:2], dict(zip(res.params.index, c.flagged.tolist()))
    (('g', 'a'), {'Intercept': True, 'C(g)[T.b]': True, 'C(g)[T.c]': True, 'x': False})
    """
    law = spurious_law(release.report)
    if law is None:
        return None
    p, mu = law[:2]
    domain = release.domain
    cells, counts, X, y = released_design(release, variables, build)
    flagged = np.zeros(n_columns, bool)
    if X is None:
        return LevelContamination({}, flagged, ())
    if X.shape[1] != n_columns:  # pragma: no cover - a design mismatch is a bug elsewhere
        return None
    constant = np.all(X == X[:1], axis=0)
    shares, over, classes = {}, [], []
    for v in dict.fromkeys(variables):
        axis = domain.axis(v)
        if axis.kind != "discrete" or axis.size < 2:
            continue
        column = cells[v].to_numpy()
        # the same cells at the next level: which columns (and the response) vary with v
        levels = list(axis.levels)
        following = dict(zip(levels, levels[1:] + levels[:1]))
        varies, y_varies = columns_varying(build, cells, X, y, v, cells[v].map(following))
        response = response_classes and not varies.any() and y_varies
        dummy = varies & np.all((X == 0) | (X == 1), axis=0)
        if not (response or dummy.any()):
            continue
        spurious = domain.size / axis.size * p * mu
        for lv in levels:
            at = column == lv
            mass = float(counts[at].sum())
            if mass <= 0:
                continue
            share = min(spurious / mass, 1.0)
            shares[(v, lv)] = share
            if share <= CONTAMINATION_LIMIT:
                continue
            over.append((v, lv, share))
            if response:
                classes.append(lv)
                continue
            rests = varies & (np.any(X[at] != 0, axis=0) if at.any() else varies)
            if at.any() and not rests.any():  # the reference level
                rests = varies | constant
            flagged |= rests
    over.sort(key=lambda t: -t[2])
    return LevelContamination(shares, flagged, tuple(over), tuple(classes))
