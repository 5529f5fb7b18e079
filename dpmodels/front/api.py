"""The four ``dp_*`` functions: a statsmodels formula call, made private.

Each function gathers its arguments into a `Call` and
hands it to `dispatch()`, which routes it to one
mechanism of the registry (`dpmodels.front.registry`) and returns that
mechanism's model, built on its release.  This is the front of the package:
nothing below imports it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..models.base import formula_env
from .routing import Call, dispatch

if TYPE_CHECKING:  # pragma: no cover - typing only
    from ..mechanisms.moments.model import DPMomentsOLS
    from ..mechanisms.newton.model import DPNewtonLogit
    from ..mechanisms.quantile_steps.model import DPNewtonQuantReg
    from ..models.logit import DPLogit
    from ..models.mnlogit import DPMNLogit
    from ..models.ols import DPOLS
    from ..models.quantreg import DPQuantReg

__all__ = ["dp_ols", "dp_logit", "dp_quantreg", "dp_mnlogit"]


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
        A `LocalRelease` (``dpm.local.randomize``) is fitted on its
        debiased, projected histogram, standard errors from the local channel's
        bootstrap (``docs/local.md``).
    epsilon : float
        Privacy parameter of the release (required for raw data).
    bounds : dict of str to (low, high) or Unbounded
        Public bounds of each continuous variable, response included
        (`Unbounded` for one without: histogram only).
    levels : dict of str to list
        Public level sets of discrete variables (``C(x)``, or numeric
        variables with few values such as ``year``).
    bins : int, dict or "auto"
        Equal-width bins per continuous variable.
    threshold : "enhanced", "zero", float or None
        Cell threshold; see `dpmodels.release()`.
    n : int, optional
        The public number of rows (default: rows handed in).
    random_state : None, int or Generator
        None uses the OS's secure entropy.
    accountant : Accountant, optional
    method : {"auto", "histogram", "moments", "ssp", "sample-aggregate"}
        The release the fit is made on.  "histogram": the perturbed joint
        histogram (Lei 2011; `dpmodels.release()`).  "moments": noisy
        first and second moments of the design, rows clipped to a private
        L1 radius (`dpmodels.mechanisms.moments`): every covariate count, no
        binning bias.  "ssp": the same moments perturbed on the declared
        bounds, all of epsilon on them (`dpmodels.mechanisms.ssp`): the
        textbook reference; the moments' intervals were narrower in every
        cell measured, tight bounds included; never chosen by "auto".
        "auto" (default) chooses from public inputs only
        (`dpmodels.front.methods.choose_ols_method()`): the histogram when
        factors carry the model (at most three continuous variables, response
        included, and at least 8 level combinations), when histogram options
        (``bins``, ``threshold``, ``representatives``, ...) are given, or for
        an engine's data frame or a histogram release; moments otherwise.
        Given ``bins`` so fine that the cells would hold less than half a
        threshold of rows on average (``SPARSE_GRID_RATIO``), "auto" takes the
        moments with a ReleaseWarning.  The privacy block names the mechanism
        and the split of epsilon.  "sample-aggregate": Smith's estimator
        (`dpmodels.mechanisms.sample_aggregate`): statsmodels' fit on ``blocks``
        random blocks of rows (default from public n, the parameters and
        epsilon), each clamped to ``param_bounds`` (a public (low, high) for
        all or per coefficient; without it a private range on 20% of
        epsilon), averaged, exact discrete Laplace noise.
    **kwargs
        ``threshold_A``, ``missing``, ``max_spurious_cells``,
        ``representatives``: see `dpmodels.release()` (histogram only,
        except ``missing``).
        ``plan_epsilon``: the epsilon ``method="auto"`` and ``bins="auto"``
        choose at, when this release runs at another (``epsilon=inf`` to check
        a script: the pipeline planned, without its noise; a positive finite
        number, public, spends nothing; ``docs/privacy.md``).

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


def dp_logit(
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
) -> DPLogit | DPNewtonLogit:
    """Differentially private logistic regression from a formula, as
    ``statsmodels.formula.api.logit``.

    Parameters
    ----------
    formula : str
        A patsy formula whose left-hand side is one binary variable, e.g.
        ``"y ~ size + year + C(county)"``.
    data : pandas.DataFrame, mapping, or PrivateHistogram
        Raw rows (one release is made, spending ``epsilon``), or an existing
        release (no new release, no budget spent).
        A `LocalRelease` (``dpm.local.randomize``) is fitted on its
        debiased, projected histogram, standard errors from the local channel's
        bootstrap (``docs/local.md``).
    epsilon : float
        Privacy parameter of the release (required for raw data).
    bounds : dict of str to (low, high) or Unbounded
        Public bounds of each continuous predictor
        (`Unbounded` for one without: histogram only).
    levels : dict of str to list
        Public level sets of discrete variables, the response included:
        ``[0, 1]`` for a 0/1 response; two labels (e.g. ``["no", "yes"]``)
        for a two-level factor (1 = the last declared level).  Not needed
        for a bool column; ``"dtype"`` takes a pandas Categorical's
        categories (only if they were set from public knowledge).
    bins : int, dict or "auto"
        Equal-width bins per continuous variable.
    threshold : "enhanced", "zero" or float
        Cell threshold; see `dpmodels.release()`.  ``None`` (signed
        counts) is refused: the likelihood needs non-negative weights.
    n : int, optional
        The public number of rows (default: rows handed in).
    random_state : None, int or Generator
        None uses the OS's secure entropy.
    accountant : Accountant, optional
    method : {"auto", "histogram", "newton", "sample-aggregate"}
        "histogram": maximum likelihood on the perturbed joint histogram.
        "newton": four Newton steps of the likelihood, each from noisy
        sufficient statistics of the step (`dpmodels.mechanisms.newton`): every
        covariate count, no binning.  "auto" (default) chooses from public
        inputs only (`dpmodels.front.methods.choose_logit_method()`).
        "sample-aggregate": Smith's estimator (`dpmodels.mechanisms.sample_aggregate`):
        statsmodels' fit on ``blocks`` random blocks of rows (default from
        public n, the parameters and epsilon), each clamped to
        ``param_bounds`` (a public (low, high) for all or per coefficient;
        without it a private range on 20% of epsilon), averaged, exact
        discrete Laplace noise.
    **kwargs
        ``threshold_A``, ``missing``, ``max_spurious_cells``,
        ``representatives``: see `dpmodels.release()` (histogram only,
        except ``missing``).  ``select`` (int k, "auto", a list of
        predictors or a `FeatureSelection`) and
        ``gamma``: a projected histogram (Vinterbo 2012, HLR): private
        feature selection on ``(1 - gamma) * epsilon``, then the histogram
        of the response and the selected variables on the rest; the terms of
        dropped variables are not estimated (`dpmodels.models.projected`).
        ``plan_epsilon``: the epsilon ``method="auto"`` and ``bins="auto"``
        choose at, when this release runs at another (``epsilon=inf`` to check
        a script: the pipeline planned, without its noise; a positive finite
        number, public, spends nothing; ``docs/privacy.md``).

    Returns
    -------
    DPLogit or DPNewtonLogit
        Call ``.fit()`` for the results.

    Raises
    ------
    DomainError
        Before anything is released, when the response is continuous, has
        one declared level or more than two, or is numeric with levels other
        than 0 and 1.
    DPModelsError
        Before anything is released, for ``threshold=None`` or a response that
        is not a single variable.

    Notes
    -----
    The response is coded 0/1 as follows: a numeric response must have the
    levels 0 and 1; a bool response is 1 for True; any other two-level
    factor is 1 for its *last declared* level and 0 for its first (e.g.
    ``levels={"ys": ["no", "yes"]}``, or the category order of a pandas
    Categorical declared with ``levels={"ys": "dtype"}``), as
    `dp_mnlogit()` takes the first declared
    level as its base (statsmodels' own ``smf.logit`` does not take a
    non-numeric response).  The coding is a function of the declared
    levels only, and is shown in the summary.

    The fit maximizes ``sum_c w_c log L(y_c | x_c)`` over the released cells
    ``c`` with noisy counts ``w_c``: the likelihood of the expanded data set.
    By default (``fit(cov_type="dp")``) standard errors, tests and intervals
    come from a parametric bootstrap of the release and include sampling, the
    privacy noise and the threshold, not the binning (see
    ``docs/inference.md``); ``cov_type="naive"`` gives those of the expanded
    data set.  Continuous predictors enter at their bin midpoints.

    Examples
    --------
    >>> import dpmodels as dpm
    >>> from dpmodels import dp_logit
    >>> df = dpm.datasets.housing(n=20_000, seed=0)
    >>> df["y"] = (df["price"] > 500_000).astype(int)
    >>> model = dp_logit("y ~ size + year + C(county)", df, epsilon=1.0,
    ...                  bounds={"size": (0, 3000)},
    ...                  levels={"y": [0, 1], "year": [1, 2, 3, 4],
    ...                          "county": [f"County{i}" for i in range(1, 7)]},
    ...                  random_state=0)
    >>> res = model.fit()
    >>> list(res.params.index[:3])
    ['Intercept', 'C(county)[T.County2]', 'C(county)[T.County3]']
    >>> p = res.predict(df.iloc[:5])
    >>> bool(((p > 0) & (p < 1)).all())
    True
    >>> res.privacy.epsilon, res.nobs == res.privacy.noisy_total
    (1.0, True)
    """
    env = formula_env(kwargs)
    call = Call("logit", formula, data, epsilon=epsilon, bounds=bounds, levels=levels,
                bins=bins, threshold=threshold, n=n, random_state=random_state,
                accountant=accountant, method=method, namespace=env, options=kwargs)
    return dispatch(call)


def dp_quantreg(
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
    q=None,
    method: str = "auto",
    **kwargs,
) -> DPQuantReg | DPNewtonQuantReg:
    """Differentially private quantile regression from a formula, as
    ``statsmodels.formula.api.quantreg``.

    Parameters
    ----------
    formula : str
        A patsy formula, e.g. ``"price ~ size + year + C(county)"``.
    data : pandas.DataFrame, mapping, or PrivateHistogram
        Raw rows (one release is made, spending ``epsilon``), or an existing
        release (no new release, no budget spent).
        A `LocalRelease` (``dpm.local.randomize``) is fitted on its
        debiased, projected histogram, standard errors from the local channel's
        bootstrap (``docs/local.md``).
    epsilon : float
        Privacy parameter of the release (required for raw data).
    bounds : dict of str to (low, high) or Unbounded
        Public bounds of each continuous variable, response included
        (`Unbounded` for one without: histogram only).
    levels : dict of str to list
        Public level sets of discrete variables.
    bins : int, dict or "auto"
        Equal-width bins per continuous variable.
    threshold : "enhanced", "zero" or float
        Cell threshold; see `dpmodels.release()`.  ``None`` (signed
        counts) is refused before any release: the check loss with negative
        weights is not convex.
    n : int, optional
        The public number of rows (default: rows handed in).
    random_state : None, int or Generator
        None uses the OS's secure entropy.
    accountant : Accountant, optional
    q : float or list of float, optional
        The quantile(s) to release.  The histogram answers any quantile, and
        ``q`` only sets ``fit()``'s default; the Newton steps release these
        quantiles only (default 0.5; with several, epsilon is split between
        them).
    method : {"auto", "histogram", "newton", "sample-aggregate"}
        "histogram": quantile regression on the perturbed joint histogram.
        "newton": a least-squares step and four Newton steps of the check
        loss, each from noisy statistics of the step
        (`dpmodels.mechanisms.quantile_steps`): every covariate count, no binning.
        "auto" (default) chooses from public inputs only, by dp_ols' rule
        (`dpmodels.front.methods.choose_quantreg_method()`).
        "sample-aggregate": Smith's estimator (`dpmodels.mechanisms.sample_aggregate`):
        statsmodels' fit on ``blocks`` random blocks of rows (default from
        public n, the parameters and epsilon), each clamped to
        ``param_bounds`` (a public (low, high) for all or per coefficient;
        without it a private range on 20% of epsilon), averaged, exact
        discrete Laplace noise.  The blocks are fitted at ``q`` (one quantile).
    **kwargs
        ``threshold_A``, ``missing``, ``max_spurious_cells``: see
        `dpmodels.release()`.
        ``plan_epsilon``: the epsilon ``method="auto"`` and ``bins="auto"``
        choose at, when this release runs at another (``epsilon=inf`` to check
        a script: the pipeline planned, without its noise; a positive finite
        number, public, spends nothing; ``docs/privacy.md``).

    Returns
    -------
    DPQuantReg or DPNewtonQuantReg
        Call ``.fit(q)`` or ``.fit_many(qs)`` for the results.

    Examples
    --------
    >>> import dpmodels as dpm
    >>> from dpmodels import dp_quantreg
    >>> df = dpm.datasets.housing(n=20_000, seed=0)
    >>> model = dp_quantreg("price ~ size + year + C(county)", data=df, epsilon=1.0,
    ...                     bounds={"price": (1e5, 9e5), "size": (0, 3000)},
    ...                     levels={"county": [f"County{i}" for i in range(1, 7)],
    ...                             "year": [1, 2, 3, 4]}, random_state=0)
    >>> res = model.fit(q=0.5)
    >>> list(res.params.index[:3])
    ['Intercept', 'C(county)[T.County2]', 'C(county)[T.County3]']
    >>> res.q, res.nobs == res.privacy.noisy_total
    (0.5, True)
    >>> sorted(model.fit_many([0.1, 0.9]))
    [0.1, 0.9]
    """
    env = formula_env(kwargs)
    call = Call("quantreg", formula, data, epsilon=epsilon, bounds=bounds, levels=levels,
                bins=bins, threshold=threshold, n=n, random_state=random_state,
                accountant=accountant, method=method, q=q, namespace=env, options=kwargs)
    return dispatch(call)


def dp_mnlogit(
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
) -> DPMNLogit:
    """Differentially private multinomial logit from a formula, as
    ``statsmodels.formula.api.mnlogit``.

    Parameters
    ----------
    formula : str
        A patsy formula whose left-hand side is one discrete variable, e.g.
        ``"species ~ length + width"``.
    data : pandas.DataFrame, mapping, or PrivateHistogram
        Raw rows (one release is made, spending ``epsilon``), or an existing
        release (no new release, no budget spent).
        A `LocalRelease` (``dpm.local.randomize``) is fitted on its
        debiased, projected histogram, standard errors from the local channel's
        bootstrap (``docs/local.md``).
    epsilon : float
        Privacy parameter of the release (required for raw data).
    bounds : dict of str to (low, high) or Unbounded
        Public bounds of each continuous predictor
        (`Unbounded` for one without).
    levels : dict of str to list
        Public level sets of discrete variables, the response included (at
        least two levels; the first declared is the base).  Not needed for
        a bool column; ``"dtype"`` takes a pandas Categorical's categories
        (only if they were set from public knowledge).
    bins : int, dict or "auto"
        Equal-width bins per continuous variable.
    threshold : "enhanced", "zero" or float
        Cell threshold; see `dpmodels.release()`.  ``None`` (signed
        counts) is refused: the likelihood needs non-negative weights.
    n : int, optional
        The public number of rows (default: rows handed in).
    random_state : None, int or Generator
        None uses the OS's secure entropy.
    accountant : Accountant, optional
    method : {"auto", "histogram", "sample-aggregate"}
        The release the fit is made on; "auto" (default) and "histogram"
        are the perturbed joint histogram (Lei 2011).  "sample-aggregate":
        Smith's estimator (`dpmodels.mechanisms.sample_aggregate`): statsmodels' fit on
        ``blocks`` random blocks of rows (default from
        public n, the parameters and epsilon), each clamped to
        ``param_bounds`` (a public (low, high) for all or per coefficient;
        without it a private range on 20% of epsilon), averaged, exact
        discrete Laplace noise.
    **kwargs
        ``threshold_A``, ``missing``, ``max_spurious_cells``: see
        `dpmodels.release()`.  ``select`` (int k, "auto", a list of
        predictors or a `FeatureSelection`) and
        ``gamma``: a projected histogram (Vinterbo 2012, HMLR): private
        feature selection on ``(1 - gamma) * epsilon``, then the histogram
        of the response and the selected variables on the rest
        (`dpmodels.models.projected`).
        ``plan_epsilon``: the epsilon ``method="auto"`` and ``bins="auto"``
        choose at, when this release runs at another (``epsilon=inf`` to check
        a script: the pipeline planned, without its noise; a positive finite
        number, public, spends nothing; ``docs/privacy.md``).

    Returns
    -------
    DPMNLogit
        Call ``.fit()`` for the results.

    Raises
    ------
    DomainError
        Before anything is released, when the response is continuous or has
        a single declared level.
    DPModelsError
        Before anything is released, for ``threshold=None`` or a response that
        is not a single variable.

    Notes
    -----
    The equations are named ``y=level`` as in statsmodels.  Numeric levels
    are sorted, as statsmodels sorts them; other levels (strings, bools) keep
    their **declared order**, and the first declared level is the base (for
    ``levels={"band": ["low", "mid", "high"]}`` the equations are
    ``band=mid`` and ``band=high``, and the outcome columns of ``params`` and
    ``predict`` are named by the levels).  The coding is a function of the
    declared levels only.  (``smf.mnlogit`` does not take a non-numeric
    response; ``sm.MNLogit`` would sort the levels.)  A declared level
    without any released cell is left out, with a warning.

    The fit maximizes ``sum_c w_c log P(y_c | x_c)`` over the released cells
    ``c`` with noisy counts ``w_c``: the likelihood of the expanded data set.
    By default (``fit(cov_type="dp")``) standard errors, tests and intervals
    come from a parametric bootstrap of the release and include sampling, the
    privacy noise and the threshold, not the binning (see
    ``docs/inference.md``); ``cov_type="naive"`` gives those of the expanded
    data set.

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> from dpmodels import dp_mnlogit
    >>> rng = np.random.default_rng(0)
    >>> x = rng.uniform(0, 10, 20_000)
    >>> eta = np.column_stack([np.zeros_like(x), -2 + 0.4 * x, 2 - 0.4 * x])
    >>> p = np.exp(eta) / np.exp(eta).sum(1, keepdims=True)
    >>> kind = np.array(["a", "b", "c"])[(rng.random(x.size)[:, None] > p.cumsum(1)).sum(1)]
    >>> df = pd.DataFrame({"kind": kind, "x": x})
    >>> res = dp_mnlogit("kind ~ x", df, epsilon=1.0, bounds={"x": (0, 10)},
    ...                  levels={"kind": ["a", "b", "c"]}, random_state=0).fit()
    >>> res.params.shape
    (2, 2)
    >>> res.model.endog_names, list(res.params.index)
    ('kind', ['Intercept', 'x'])
    >>> probs = res.predict(df.iloc[:4])
    >>> np.allclose(np.asarray(probs).sum(axis=1), 1.0)
    True
    """
    env = formula_env(kwargs)
    call = Call("mnlogit", formula, data, epsilon=epsilon, bounds=bounds, levels=levels,
                bins=bins, threshold=threshold, n=n, random_state=random_state,
                accountant=accountant, method=method, namespace=env, options=kwargs)
    return dispatch(call)
