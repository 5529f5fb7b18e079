"""Linear algebra and Newton's method batched across bootstrap replicates.

Each model's replicate refit (``refit_*`` beside the model) solves one small
problem per replicate; these helpers solve them all at once on stacked
``(b, p, p)`` arrays, with a full-rank mask instead of exceptions.
"""

from __future__ import annotations

import numpy as np

__all__ = ["outer_rows", "full_rank", "solve_ok", "batched_newton"]


def outer_rows(X: np.ndarray) -> np.ndarray:
    """Row-wise outer products, flattened: ``(C, p*p)``."""
    return (X[:, :, None] * X[:, None, :]).reshape(X.shape[0], X.shape[1] * X.shape[1])


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



def batched_newton(X, W, start, grad_hess, loglik, maxiter=50, tol=1e-8):
    """Damped Newton ascent for all replicates at once.

    ``grad_hess(theta) -> (g (b, k), I (b, k, k))`` with ``I`` minus the
    Hessian; ``loglik(theta) -> (b,)``.  Starts every replicate at ``start``;
    a step that lowers the log-likelihood is halved (up to 30 times).
    Returns the estimates and a mask of converged replicates.
    """
    b = W.shape[1]
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
