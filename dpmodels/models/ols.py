"""dp_ols: ordinary least squares on a private histogram."""

from __future__ import annotations

import warnings

import numpy as np

from ..core.batched import full_rank, solve_ok, weighted_grams
from ..core.errors import ReleaseWarning
from ..core.keywords import checked_keywords
from .base import DPModel, dp_options
from .linear import FreqWLS

__all__ = ["DPOLS"]


def refit_ols(X, y, W, start):
    """Weighted least squares of every column of ``W`` (C, b): ``(b, p)``
    estimates and a mask of replicates with a full-rank design."""
    A = weighted_grams(X, W)
    c = W.T @ (X * y[:, None])
    ok = full_rank(A)
    return solve_ok(A, c, ok), ok


class DPOLS(DPModel):
    """Differentially private OLS (Lei 2011): least squares on the released
    cells, each cell's representative weighted by its noisy count.

    See `dp_ols()` for the parameters.
    """

    _name = "DP OLS"

    @checked_keywords
    def fit(self, cov_type: str = "dp", *, n_boot: int | None = None, random_state=None,
            cov_kwds: dict | None = None, **kwargs):
        """Fit the weighted least squares; returns statsmodels regression results
        (with ``.privacy``) whose estimates equal OLS on the data set in which
        each cell appears ``count`` times.

        Parameters
        ----------
        cov_type : {"dp", "naive"}
            "dp" (default): standard errors, z statistics, p-values and
            intervals from a parametric bootstrap of the release, which
            include sampling, the privacy noise and the threshold (see
            `dpmodels.inference`).  "naive" (alias "nonrobust"): the
            usual OLS covariance of the expanded data, which treats the noisy
            counts as real rows.
        n_boot : int, optional
            Bootstrap replicates B (default 200).
        random_state : None, int or Generator
            Makes the bootstrap reproducible; None uses the OS's secure
            entropy.  (The release's own randomness was fixed when it was
            made.)
        cov_kwds : dict, optional
            ``n_boot``, ``random_state``, ``interval`` ("normal" default,
            "bc-normal", "basic", "percentile") and ``binning_check`` (bool).
        **kwargs
            Passed to statsmodels' ``fit``.

        Notes
        -----
        The bootstrap is pure post-processing of the release: it reads the
        released cells, the public n, epsilon and the threshold, never the
        data.  ``res.dp_inference`` holds the replicates.
        """
        kind, opts = dp_options(cov_type, n_boot, random_state, cov_kwds)
        w = self.weights
        if self.cells.empty or w.sum() <= 0:
            raise ValueError(
                "the release has no cells with positive total count for this formula: "
                "use a larger epsilon, fewer bins or a lower threshold"
            )
        model = self._formula_model(FreqWLS, self.cells, weights=w.astype(float))
        if model.nobs <= model.exog.shape[1]:
            warnings.warn("the noisy total is not larger than the number of parameters",
                          ReleaseWarning, stacklevel=2)
        res = model.fit(cov_type="nonrobust", **kwargs)
        res._results.privacy = self.privacy
        res._results.release = self.release
        if kind == "dp":
            self._dp_inference(res, refit_ols, np.asarray(res.params), opts,
                               label="DP OLS bootstrap")
        return res
