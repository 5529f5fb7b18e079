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
(every cell when it has at most :data:`EXACT_CELLS` cells, else a fixed
public sample of them).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from .domain import Domain
from .mechanisms import discrete_laplace_sf

__all__ = ["Z_INFO", "EXACT_CELLS", "ColumnInformation", "column_information"]

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


def _marginal_frame(domain: Domain, variables: Sequence[str]) -> tuple[pd.DataFrame, float]:
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


def column_information(release, variables: Sequence[str], build: Callable,
                       n_columns: int) -> ColumnInformation | None:
    """The :class:`ColumnInformation` of a fit, or None where it does not
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
    report = release.report
    if not report.private or report.threshold is None:
        return None
    eps = report.epsilon
    k = math.ceil(report.threshold)
    one_minus_q = -math.expm1(-eps / 2.0)
    g = math.exp(-eps / 2.0) / one_minus_q  # E[G] = q / (1 - q)
    p = discrete_laplace_sf(k, eps)
    mu = k + g
    second = g / one_minus_q + mu * mu  # Var(G) = q / (1 - q)**2
    var_z = 2.0 * g / one_minus_q  # Var(Z)

    def nonzero(frame):
        X, _, valid = build(frame)
        return (np.abs(np.asarray(X, float)) > 0) & np.asarray(valid, bool)[:, None]

    released = release.marginal(list(variables))
    counts = released[release.count_column].to_numpy(float)
    nz = nonzero(released.drop(columns=[release.count_column]))
    mass = nz.T @ counts
    per_cell = nz.sum(axis=0).astype(float)

    frame, per_row = _marginal_frame(release.domain, list(variables))
    n_cells = nonzero(frame).sum(axis=0) * per_row
    spurious = n_cells * p * mu
    var = n_cells * (p * second - p * p * mu * mu)
    if mass.size != n_columns:  # pragma: no cover - a design mismatch is a bug elsewhere
        return None
    return ColumnInformation(mass, spurious, var, per_cell * var_z)
