"""The bootstrap populations ("worlds") of the Newton-type releases
(`dpmodels.mechanisms.newton.model`, `dpmodels.mechanisms.quantile_steps.model`):
design rows drawn from a release's noisy mean and covariance, clipped as the
release clipped its own, and the representative rows their statsmodels results
are built on.  Post-processing only: every input is a released statistic or
public (the design's column names).

A world must have the design's geometry, not only its second moments: the
steps of a release stop short along the design's weak directions, and a
bootstrap whose world lacks them cannot see that.  The noisy covariance does
not locate a weak direction below its noise (diabetes, ``bmi + C(sex) +
bmi:C(sex)`` at n = 4,420, epsilon 3: the smallest eigenvalue of the scaled
design's covariance is 0.0047, the noise SD of each entry 0.07, and the
released covariance put the interaction's correlation with the dummy at 0.03
against 0.98), but the formula does: an interaction's column is the product
of its parts' columns.  `structured_design()` draws the columns of the
main effects and computes each interaction from them
(`product_columns()`), so the world has the collinearity the formula
builds into the data.

Nor may a world know the design better than the release does.  The Newton
logit's moments are read from its first step, which has the smallest share of
epsilon; read as the truth, they put the noise's own size of information in
every direction the data leave empty, and the world's steps then resolve
directions the real steps cannot (fair's logit at n = 6,366, epsilon 1:
entry noise SD 0.56 per share and covariance, noisy eigenvalues up to 3.9
against a true largest of 1.08; the worlds kept 78-90% of ``age`` and
``np.log(yrs_married)`` where the real releases kept -31% and 18%, and 5 of
30 finite intervals missed).  Its worlds therefore take the design from the
first step's ``sum x x'`` pooled with the last step's information
(``PrivateNewton.world_moments()``, entry noise SD 0.09 there), and only the
information that reading can vouch for (`deflated_moments()`): each
eigenvalue of the covariance inverted through the noise's known effect on a
spike (Wigner noise of entry SD s in q dimensions moves a spike theta to
``theta + q s^2 / theta`` and hides one below ``edge = 2 s sqrt(q)``), and
each 0/1 column's share lowered by SHARE_SDS noise SDs (a share at 0: a level
without rows in the world, whose coefficient
`calibrate()` then flags).  On the first
reading alone this flagged every coefficient of validity.py's logit4 at
n = 2,000, epsilon 3 (entry SD 0.20, edge 0.78 against true eigenvalues
0.25-0.45) where the intervals were valid and 70% finite; the pooled reading
has entry SD 0.03 there.  The quantile steps release no later information
matrix; their worlds keep the least-squares step's moments as released.
"""

from __future__ import annotations

import math

import numpy as np
from scipy import stats

__all__ = ["NEWTON_SIM_ROWS", "SHARE_SDS", "clipped_like", "deflated_moments",
           "gaussian_design", "product_columns",
           "representative_design", "structured_design", "sym_laplace"]


#: Covariate rows of the bootstrap population (DPNewtonLogit._replay).
NEWTON_SIM_ROWS = 2000
#: A deflated world's share of rows with a 1 in a 0/1 column: the released
#: share lowered by this many of its noise SDs (deflated_moments).
SHARE_SDS = 2.0
#: Adjustments of the cuts that keep a factor's dummies exclusive (gaussian_design).
EXCLUSIVE_ITERATIONS = 8


def _root(cov: np.ndarray) -> np.ndarray:
    """L with ``L L' = cov`` (symmetrized, eigenvalues floored at 1e-3 of the largest)."""
    lam, V = np.linalg.eigh((cov + cov.T) / 2.0)
    return V * np.sqrt(np.maximum(lam, 1e-3 * max(float(lam.max()), 1e-12)))


def representative_design(rel) -> np.ndarray:
    """The ``2q`` design rows ``mean +- sqrt(q) L_j`` (``L L' = cov``) that carry
    a Newton-type release's mean and covariance of v, mapped to the design's
    columns (intercept 1): the rows its statsmodels results are built on."""
    _, mean, cov = rel.moments
    L = _root(cov)
    q = mean.size
    pts = np.concatenate([mean + math.sqrt(q) * L.T, mean - math.sqrt(q) * L.T])
    X = np.empty((2 * q, rel.space.constant.size))
    X[:, ~rel.space.constant] = rel.centre + rel.half * pts
    X[:, rel.space.constant] = 1.0
    return rel.space.design_rows(X)  # rows of z = A x back on the design's columns


def gaussian_design(moments: tuple, dummy: np.ndarray, rows: int, rng,
                    exclusive: tuple = ()) -> np.ndarray:
    """A bootstrap population's design rows ``(1, v)``: v Gaussian with the
    released mean and covariance (``moments = (count, mean, cov)``), each 0/1
    column cut at its mean's quantile (a Gaussian copula keeps its correlation
    with the others).  The dummies of one factor (``exclusive``: groups of
    coordinates a row has at most one of) stay exclusive: a row takes the
    level whose latent value is furthest beyond its cut, or none (the base
    level), with the cuts moved until each level keeps its released share."""
    _, mean, cov = moments
    L = _root(cov)
    Xs = mean + rng.standard_normal((rows, mean.size)) @ L.T
    share = np.clip(mean, 1e-6, 1 - 1e-6)
    Z = (Xs - mean) / np.sqrt(np.maximum(np.diag(cov), 1e-12))
    grouped = {j for g in exclusive for j in g}
    for j in np.flatnonzero(dummy):
        if j not in grouped:
            Xs[:, j] = Z[:, j] > stats.norm.ppf(1.0 - share[j])
    for g in exclusive:
        g = list(g)
        p = share[g] * min(1.0, (1 - 1e-6) / max(float(share[g].sum()), 1e-12))
        cut = stats.norm.ppf(1.0 - p)
        for _ in range(EXCLUSIVE_ITERATIONS):
            over = Z[:, g] - cut
            pick = np.argmax(over, axis=1)
            taken = over[np.arange(rows), pick] > 0
            got = np.array([np.mean(taken & (pick == i)) for i in range(len(g))])
            cut = cut + (stats.norm.ppf(1.0 - p)
                         - stats.norm.ppf(1.0 - np.clip(got, 0.5 / rows, 1 - 0.5 / rows)))
        Xs[:, g] = 0.0
        Xs[np.flatnonzero(taken), np.array(g)[pick[taken]]] = 1.0
    return np.column_stack([np.ones(rows), Xs])


def clipped_like(X: np.ndarray, fraction: float) -> np.ndarray:
    """The population's rows ``(1, v)`` as the release sees them: the largest
    ``fraction`` (the release's noisy clipped share, at most 1/2) shrunk in
    L1 onto the norm that leaves that share beyond it, as the release shrinks
    rows into its ball.  Responses stay those of the unclipped rows, so the
    replicates carry the clipping's pull on the estimate."""
    fraction = min(max(float(fraction), 0.0), 0.5)
    if fraction <= 0.0:
        return X
    norm = np.abs(X[:, 1:]).sum(axis=1)
    radius = float(np.quantile(norm, 1.0 - fraction))
    out = X.copy()
    with np.errstate(divide="ignore", invalid="ignore"):
        out[:, 1:] *= np.where(norm > radius, radius / norm, 1.0)[:, None]
    return out


def sym_laplace(rng, var: float, shape) -> np.ndarray:
    """Symmetric matrices of Laplace noise of variance ``var`` per entry."""
    E = np.triu(rng.laplace(0.0, math.sqrt(var / 2.0), shape))
    return E + np.swapaxes(np.triu(E, 1), -1, -2)


def _split_top(name: str) -> list[str]:
    """``name`` split at the colons outside brackets and parentheses (patsy
    joins an interaction's column names with ``:``)."""
    parts: list[str] = []
    cur: list[str] = []
    depth = 0
    for ch in name:
        depth += (ch in "([{") - (ch in ")]}")
        if ch == ":" and depth == 0:
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    parts.append("".join(cur))
    return parts


def product_columns(names) -> tuple[tuple[int, tuple[int, ...]], ...]:
    """The columns that are products of others, from the design's column names
    (public): ``(j, (j1, j2, ...))`` for each column named ``a:b:...`` whose
    parts are all columns of the design themselves (``bmi:C(sex)[T.2]`` with
    ``bmi`` and ``C(sex)[T.2]``; indices into ``names``).  An interaction whose
    parts are not main-effect columns (``C(a)[a1]:C(b)[T.x]`` under patsy's
    full-rank coding, or ``a:b`` without ``a``) is not listed."""
    where = {n: i for i, n in enumerate(names)}
    out = []
    for j, name in enumerate(names):
        parts = _split_top(name)
        if len(parts) > 1 and all(p in where for p in parts):
            out.append((j, tuple(where[p] for p in parts)))
    return tuple(out)


def deflated_moments(moments: tuple, dummy: np.ndarray, entry_sd: float) -> tuple:
    """The moments ``(count, mean, cov)`` of v a world may take from noisy ones:
    the information the noise cannot have made up (see the module notes).

    Parameters
    ----------
    moments : tuple
        The released ``(count, mean, cov)`` of v.
    dummy : ndarray of bool
        The 0/1 columns of v.
    entry_sd : float
        Noise SD of an entry of the released ``sum (1, v)(1, v)'`` the moments
        were read from (the mean's and covariance's noise SD is this over the
        count).

    Examples
    --------
    >>> import numpy as np
    >>> cov = np.diag([1.0, 0.01])  # the second direction is below the noise
    >>> _, mean, w = deflated_moments((1000.0, np.array([0.0, 0.5]), cov),
    ...                               np.array([False, True]), 50.0)
    >>> [round(float(v), 3) for v in np.diag(w)], round(float(mean[1]), 3)
    ([0.995, 0.0], 0.4)
    """
    count, mean, cov = moments
    sd = float(entry_sd) / max(float(count), 1.0)
    edge = 2.0 * sd * math.sqrt(mean.size)
    lam, V = np.linalg.eigh((cov + cov.T) / 2.0)
    spike = np.where(lam > edge, (lam + np.sqrt(np.maximum(lam * lam - edge * edge, 0.0))) / 2.0,
                     0.0)
    out = np.array(mean, float)
    out[dummy] = np.clip(out[dummy] - SHARE_SDS * sd, 0.0, 1.0)
    return count, out, (V * spike) @ V.T


def structured_design(rel, rows: int, rng, moments: tuple | None = None) -> np.ndarray:
    """A Newton-type release's bootstrap population ``(1, v)``: the columns
    drawn by `gaussian_design()` from ``moments`` (default: the
    release's ``moments``), then each
    interaction's column replaced by the product of its parts' (in the design's
    units, mapped back to the release's scaled coordinates) where the design
    has its parts as columns (`product_columns()`)."""
    space = rel.space
    moments = rel.moments if moments is None else moments
    X = gaussian_design(moments, space.dummy, rows, rng, space.exclusive)
    names = [n for n, c in zip(space.exog_names, space.constant) if not c]
    centre, half = np.asarray(rel.centre, float), np.asarray(rel.half, float)
    for j, parts in product_columns(names):
        x = np.prod([centre[p] + half[p] * X[:, 1 + p] for p in parts], axis=0)
        X[:, 1 + j] = (x - centre[j]) / half[j]
    return X
