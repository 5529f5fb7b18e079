"""dp_ols: ordinary least squares on a private histogram."""

from __future__ import annotations

import warnings

import numpy as np

from ..errors import ReleaseWarning
from ..batched import full_rank, outer_rows, solve_ok
from ..registry import dispatch
from ..routing import Call
from .base import DPModel, dp_options, formula_env
from .linear import FreqWLS
from .moments_ols import DPMomentsOLS

__all__ = ["DPOLS", "dp_ols"]


def refit_ols(X, y, W, start):
    """Weighted least squares of every column of ``W`` (C, b): ``(b, p)``
    estimates and a mask of replicates with a full-rank design."""
    A = (W.T @ outer_rows(X)).reshape(W.shape[1], X.shape[1], X.shape[1])
    c = W.T @ (X * y[:, None])
    ok = full_rank(A)
    return solve_ok(A, c, ok), ok


class DPOLS(DPModel):
    """Differentially private OLS (Lei 2011): least squares on the released
    cells, each cell's representative weighted by its noisy count.

    See :func:`dp_ols` for the parameters.
    """

    _name = "DP OLS"

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
            :mod:`dpmodels.inference`).  "naive" (alias "nonrobust"): the
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


def dp_ols(
    formula: str,
    data,
    *,
    epsilon: float | None = None,
    bounds=None,
    levels=None,
    bins="auto",
    threshold="enhanced",
    n: int | None = None,
    random_state=None,
    accountant=None,
    method: str = "auto",
    **kwargs,
) -> DPOLS | DPMomentsOLS:
    """Differentially private OLS from a formula, as ``statsmodels.formula.api.ols``.

    Parameters
    ----------
    formula : str
        A patsy formula, e.g. ``"price ~ size + year + C(county)"``.
    data : pandas.DataFrame, mapping, PrivateHistogram or PrivateMoments
        Raw rows (one release is made, spending ``epsilon``), or an existing
        release (no new release, no budget spent).
        A :class:`~dpmodels.local.LocalRelease` (``dpm.local.randomize``) is fitted on its
        debiased, projected histogram, standard errors from the local channel's
        bootstrap (``docs/local.md``).
    epsilon : float
        Privacy parameter of the release (required for raw data).
    bounds : dict of str to (low, high) or Unbounded
        Public bounds of each continuous variable, response included
        (:class:`~dpmodels.Unbounded` for one without: histogram only).
    levels : dict of str to list
        Public level sets of discrete variables (``C(x)``, or numeric
        variables with few values such as ``year``).
    bins : int, dict or "auto"
        Equal-width bins per continuous variable.
    threshold : "enhanced", "zero", float or None
        Cell threshold; see :func:`dpmodels.release`.
    n : int, optional
        The public number of rows (default: rows handed in).
    random_state : None, int or Generator
        None uses the OS's secure entropy.
    accountant : Accountant, optional
    method : {"auto", "histogram", "moments", "sample-aggregate"}
        The release the fit is made on.  "histogram": the perturbed joint
        histogram (Lei 2011; :func:`dpmodels.release`).  "moments": noisy
        first and second moments of the design, rows clipped to a private
        L1 radius (:mod:`dpmodels.moments`): every covariate count, no
        binning bias.  "auto" (default) chooses from public inputs only
        (:func:`dpmodels.methods.choose_ols_method`): the histogram when
        factors carry the model (at most three continuous variables, response
        included, and at least 8 level combinations), when histogram options
        (``bins``, ``threshold``, ``representatives``, ...) are given, or for
        an engine's data frame or a histogram release; moments otherwise.
        Given ``bins`` so fine that the cells would hold less than half a
        threshold of rows on average (``SPARSE_GRID_RATIO``), "auto" takes the
        moments with a ReleaseWarning.  The privacy block names the mechanism
        and the split of epsilon.  "sample-aggregate": Smith's estimator (:mod:`dpmodels.sample_aggregate`):
        statsmodels' fit on ``blocks`` random blocks of rows (default from
        public n, the parameters and epsilon), each clamped to
        ``param_bounds`` (a public (low, high) for all or per coefficient;
        without it a private range on 20% of epsilon), averaged, exact
        discrete Laplace noise.
    **kwargs
        ``threshold_A``, ``missing``, ``max_spurious_cells``,
        ``representatives``: see :func:`dpmodels.release` (histogram only,
        except ``missing``).

    Returns
    -------
    DPOLS or DPMomentsOLS
        Call ``.fit()`` for the results.

    Examples
    --------
    >>> import dpmodels as dpm
    >>> df = dpm.datasets.housing(n=20_000, seed=0)
    >>> model = dpm.dp_ols("price ~ size + year + C(county)", data=df, epsilon=1.0,
    ...                    bounds={"price": (1e5, 9e5), "size": (0, 3000)},
    ...                    levels={"county": [f"County{i}" for i in range(1, 7)],
    ...                            "year": [1, 2, 3, 4]}, random_state=0)
    >>> res = model.fit()
    >>> list(res.params.index[:3])
    ['Intercept', 'C(county)[T.County2]', 'C(county)[T.County3]']
    >>> res.privacy.epsilon
    1.0
    """
    env = formula_env(kwargs)
    call = Call("ols", formula, data, epsilon=epsilon, bounds=bounds, levels=levels, bins=bins,
                threshold=threshold, n=n, random_state=random_state, accountant=accountant,
                method=method, namespace=env, options=kwargs)
    return dispatch(call)
