"""Linear algebra and Newton's method batched across bootstrap replicates.

Each model's replicate refit (``refit_*`` beside the model) solves one small
problem per replicate; these helpers solve them all at once on stacked
``(b, p, p)`` arrays, with a full-rank mask instead of exceptions.
"""

from __future__ import annotations

import numpy as np

__all__ = ["outer_rows", "weighted_grams", "full_rank", "solve_ok", "support_projectors", "batched_newton"]


def outer_rows(X: np.ndarray) -> np.ndarray:
    """Row-wise outer products, flattened: ``(C, p*p)``."""
    return (X[:, :, None] * X[:, None, :]).reshape(X.shape[0], X.shape[1] * X.shape[1])


#: Up to this many weight columns, `weighted_grams` forms each column's Gram matrix
#: on its own (no ``(C, p*p)`` array of the rows' outer products).
_GRAMS_ONE_BY_ONE = 4


def weighted_grams(X: np.ndarray, W: np.ndarray) -> np.ndarray:
    """``sum_c W[c, j] x_c x_c'`` for every column ``j`` of ``W`` (C, b): ``(b, p, p)``,
    exactly symmetric.

    A few columns (a replicate refitted on its own points) take one product
    ``X' diag(w) X`` each; many take one product with the rows' outer products.
    """
    b, p = W.shape[1], X.shape[1]
    if b > _GRAMS_ONE_BY_ONE:
        return (W.T @ outer_rows(X)).reshape(b, p, p)
    out = np.empty((b, p, p))
    for j in range(b):
        g = (X * W[:, j:j + 1]).T @ X
        out[j] = (g + g.T) / 2.0
    return out


def full_rank(A: np.ndarray, tol: float = 1e-10) -> np.ndarray:
    """Which of the stacked symmetric matrices ``A`` (b, p, p) have full rank
    (eigenvalues of the unit-diagonal rescaling, in absolute value)."""
    d = np.sqrt(np.abs(np.einsum("bii->bi", A)))
    ok = np.all(d > 0, axis=1) & np.all(np.isfinite(A), axis=(1, 2))
    d = np.where(d > 0, d, 1.0)
    As = A / d[:, :, None] / d[:, None, :]
    As = np.where(np.isfinite(As), As, 0.0)
    eig = np.abs(np.linalg.eigvalsh(As))
    return ok & (eig.min(axis=1) > tol * np.maximum(eig.max(axis=1), 1.0))


def solve_ok(A: np.ndarray, c: np.ndarray, ok: np.ndarray) -> np.ndarray:
    out = np.full(c.shape, np.nan)
    if ok.any():
        out[ok] = np.linalg.solve(A[ok], c[ok][..., None])[..., 0]
    return out



def support_projectors(X: np.ndarray, W: np.ndarray, tol: float = 1e-10) -> np.ndarray:
    """Per replicate (column of ``W``), the orthogonal projector onto the row
    space of the design over the cells it weighs (``W > 0``): ``(b, p, p)``,
    the identity where those rows have full rank.  A likelihood of ``X theta``
    is flat along the rest (a declared factor level no cell holds, or its
    reference level), so that is where Newton's steps must not go."""
    p = X.shape[1]
    G = ((np.ascontiguousarray(W.T) > 0).astype(float) @ outer_rows(X)).reshape(-1, p, p)
    d = np.sqrt(np.einsum("bii->bi", G))
    d = np.where(d > 0, d, 1.0)
    vals, vecs = np.linalg.eigh(G / d[:, :, None] / d[:, None, :])
    keep = vals > tol * np.maximum(vals.max(axis=1, keepdims=True), 1.0)
    # G = D Gs D: the row space of G is D times the scaled matrix's range
    # (D V_keep), orthonormalised per replicate
    out = np.repeat(np.eye(p)[None], G.shape[0], axis=0)
    for i in np.flatnonzero(~keep.all(axis=1)):  # only the rank-deficient replicates
        q, _ = np.linalg.qr(vecs[i][:, keep[i]] * d[i][:, None])
        out[i] = q @ q.T
    return out


def batched_newton(X, W, start, grad_hess, loglik, maxiter=50, tol=1e-8, *,
                   flat_directions: np.ndarray | None = None):
    """Damped Newton ascent for all replicates at once.

    ``grad_hess(theta) -> (g (b, k), I (b, k, k))`` with ``I`` minus the
    Hessian; ``loglik(theta) -> (b,)``.  Starts every replicate at ``start``;
    a step that lowers the log-likelihood is halved (up to 30 times).
    Returns the estimates and a mask of converged replicates.

    ``flat_directions``: None, or the projector ``(p, p)`` onto the row space
    of the design the estimate was fitted on (`support_projectors()`),
    when that design was rank-deficient.  A replicate whose own weighted
    design is rank-deficient only along those directions steps within its
    row space (each of the ``k / p`` equations alike): its estimate is the
    maximum whose component along them is the start's.  Every other singular
    ``I`` (a new flat direction, separation) fails the replicate.
    """
    b = W.shape[1]
    proj: np.ndarray | None = None
    flat: np.ndarray | None = None
    eye: np.ndarray | None = None
    if flat_directions is not None:
        main = np.asarray(flat_directions, float)
        p, k = X.shape[1], np.size(start)
        P = support_projectors(X, W)
        # null(replicate) within null(main): main's projector kills the replicate's null space
        within = np.all(np.abs(main @ (np.eye(p) - P)) < 1e-8, axis=(1, 2))
        flat = within & ~np.all(np.abs(P - np.eye(p)) < 1e-12, axis=(1, 2))
        if flat.any():
            eye = np.eye(k)
            proj = np.zeros((b, k, k))
            for e in range(k // p):
                proj[:, e * p:(e + 1) * p, e * p:(e + 1) * p] = P
    theta = np.repeat(np.asarray(start, float)[None, :], b, axis=0)
    ll = loglik(theta)
    active = np.ones(b, bool)
    converged = np.zeros(b, bool)
    failed = np.zeros(b, bool)
    for _ in range(maxiter):
        idx = np.flatnonzero(active)
        if idx.size == 0:
            break
        g, info = grad_hess(theta[idx], idx)
        if proj is not None:  # P I P + (1 - P) on the flat replicates: steps stay in P's range
            assert flat is not None and eye is not None  # set with proj
            sub = flat[idx]
            Pi = proj[idx[sub]]
            info[sub] = Pi @ info[sub] @ Pi + (eye - Pi)
            g[sub] = (Pi @ g[sub][..., None])[..., 0]
        ok = full_rank(info)
        step = np.zeros_like(g)
        step[ok] = np.linalg.solve(info[ok], g[ok][..., None])[..., 0]
        failed[idx[~ok]] = True
        active[idx[~ok]] = False
        idx, step = idx[ok], step[ok]
        if idx.size == 0:
            break
        t = np.ones(idx.size)
        new = theta[idx] + step
        ll_new = loglik(new, idx)
        for _ in range(30):
            worse = ~(ll_new >= ll[idx] - 1e-12 * np.abs(ll[idx]))
            if not worse.any():
                break
            t[worse] /= 2.0
            new[worse] = theta[idx[worse]] + t[worse, None] * step[worse]
            ll_new[worse] = loglik(new[worse], idx[worse])
        theta[idx] = new
        ll[idx] = ll_new
        small = np.max(np.abs(t[:, None] * step) / (1.0 + np.abs(new)), axis=1) < tol
        converged[idx[small]] = True
        active[idx[small]] = False
    ok = converged & ~failed & np.all(np.isfinite(theta), axis=1)
    theta[~ok] = np.nan
    return theta, ok
