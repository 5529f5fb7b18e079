"""dpmodels against other private regression methods, on many data shapes.

For every data set, epsilon and method the tables give two error measures
against the non-private fit on the same rows (``smf.ols`` / ``smf.logit`` /
...), both taken over paired repetitions (the same noise seeds for every
method):

rel %
    the mean over coefficients of the RMS (over repetitions) relative
    deviation ``100 (b_priv / b_ols - 1)`` (as in ``benchmarks/accuracy.py``);
SE units
    the mean over coefficients of the RMS of ``(b_priv - b_ols) / se_ols``,
    the deviation in units of the non-private standard error (robust to
    coefficients near zero: 1 means "as far off as sampling noise").

and the median time of one fit (plus a one-off setup, e.g. the data pass of
SSP, where a method has one).  Failed fits are left out of the RMS and
counted; a method that refuses the problem before releasing anything
(``DomainTooLargeError``, an unknown keyword, ...) is shown as "-" with its
message below the table.

Methods (all get the same public bounds and level sets, ``n`` is public,
neighbouring data sets differ by replacing one row):

SSP
    sufficient statistics perturbation with Laplace noise, pure epsilon
    (``accuracy.SSP``: unique entries of ``Z'Z`` on the design mapped to
    [-1, 1] by the public bounds, L1 sensitivity from the domain).  For a
    design of continuous main effects only whose domain grid (3**d points) is
    too large (normal16) the same statistic is used with its closed-form
    sensitivity (:class:`ContinuousSSP`).
AdaSSP
    Wang (2018), "Revisiting differentially private linear regression:
    optimal and adaptive prediction & estimation in unbounded domain" (UAI),
    Algorithm 2, (epsilon, delta = 1e-6)-DP: epsilon and delta split in three
    over a private lower bound of lambda_min(X'X), the noisy X'X and the noisy
    X'y (Gaussian noise); ridge ``lambda`` chosen from the private lambda_min
    (see :class:`AdaSSP`).  Not pure epsilon: compared separately.
diffprivlib
    ``diffprivlib.models.LinearRegression`` (functional mechanism, pure
    epsilon) given the public bounds (``accuracy.DiffprivlibOLS``).
dpmodels
    ``dpmodels.dp_ols`` with its defaults; ``dpmodels[histogram]`` and
    ``dpmodels[moments]`` pass ``method=...`` (shown as "-" while dp_ols does
    not take the keyword).

Data sets (``--datasets``; the bounds are declared from the generating model
or the codebook, never computed from the rows; every row is checked to lie
inside them, so nothing is clipped and the reference is OLS on the raw rows):

housing, wages, skewed
    as in ``benchmarks/accuracy.py``.
normal2, normal4, normal8, normal16
    ``y = 1 + sum_j b_j x_j + N(0, 1)``, ``x_j`` iid N(0, 1) clipped to
    (-4, 4) (public bounds (-4, 4)), ``b = 1, -0.5, 0.75, -0.25, 1, -0.5,
    ...``, n = 100,000.  The response's public bounds are
    ``1 +- ceil(6 sd)`` with ``sd = sqrt(1 + b' Sigma b)`` the model's
    standard deviation of y (a range a statistician who knows the model
    would declare; the worst case over the covariate box,
    ``1 +- (4 sum|b| + 5)``, is far wider for many covariates); y is clipped
    to them (no row reaches them with these seeds).
corr8
    as normal8 with pairwise correlation 0.5 between the covariates.
mixed
    3 continuous covariates as above, factors f4 (4 levels, unequal
    frequencies) and f6 (6 levels) with effects, n = 50,000; y bounds from
    the model as above (see :func:`mixed_problem`).
fair
    statsmodels' ``fair`` data (Fair 1978, n = 6,366), ``affairs ~
    rate_marriage + age + yrs_married + children + religious + educ +
    occupation + occupation_husb``.  Every covariate is a coded answer; all
    are declared continuous with the codebook's range of codes
    (rate_marriage 1-5, age 17.5-42 and yrs_married 0.5-23 (interval
    midpoints), children 0-5.5, religious 1-4, educ 9-20, occupation and
    occupation_husb 1-6).  ``affairs`` (time spent in affairs) has no
    codebook range: (0, 60) is a judgment call.
randhie
    statsmodels' ``randhie`` data (RAND Health Insurance Experiment, n =
    20,190), ``mdvis ~ lncoins + idp + lpi + fmde + physlm + disea + hlthg +
    hlthf + hlthp`` (the data's column is ``physlm``).  Bounds from the
    definitions: lncoins = ln(coinsurance + 1) with coinsurance in [0, 100]
    -> (0, ln 101); lpi = ln(max(1, incentive payment)) with payments below
    about $3,000 -> (0, 8); fmde = ln(max(1, MDE / (0.01 coinsurance))) with
    MDE at most $1,000 and the lowest positive coinsurance 25 % -> (0,
    ln 4000 rounded up to 8.3); physlm (imputed, fractional) (0, 1); mdvis
    (outpatient visits a year) and disea (number of chronic diseases,
    imputed) have no definitional cap: (0, 100) each, generous round
    numbers.  idp, hlthg, hlthf and hlthp are 0/1 and declared as numeric
    levels [0, 1] (entered linearly, as in the formula).

Logit (``--logit``): logit2 and logit8, ``x_j`` as in normal2 / normal8,
``P(y = 1) = expit(-0.5 + x b)``, n = 100,000; ``dpmodels.dp_logit``
(defaults), ``diffprivlib.models.LogisticRegression`` (objective
perturbation; features mapped to [-1, 1], ``data_norm = sqrt(k)``, C = 1 and
C = 100 both shown, the best counted, as in ``accuracy.run_logit``), and an
approximate-sufficient-statistics logit after Huang et al. (2018): the
log-likelihood's second-order Taylor expansion at ``x'b = 0`` is maximized by
``b = 4 (X'X)^-1 X'(y - 1/2)``, i.e. twice the OLS of ``2y - 1`` on X, so the
noisy moments are exactly SSP's (Laplace, pure epsilon) with the response
``2y - 1`` in [-1, 1].  Reference: ``smf.logit``.

Others (``--others``): ``dpmodels.dp_quantreg`` (median) on normal2 / normal8
against ``smf.quantreg``, and ``dpmodels.dp_mnlogit`` with 2 and 8 continuous
covariates (3 outcome levels, n = 100,000) against ``smf.mnlogit``; refusals
are reported with their message.

diffprivlib is a benchmark-only dependency: ``pip install -e .[bench]``.
Run from the repository root::

    PYTHONPATH=.:benchmarks python benchmarks/peers.py --quick        # smoke run
    PYTHONPATH=.:benchmarks python benchmarks/peers.py --reps 10 --jobs 2 --out baseline
    PYTHONPATH=.:benchmarks python benchmarks/peers.py --datasets normal8,fair --eps 1 \\
        --methods ssp,adassp,dpmodels,dpmodels[moments] --markdown
    PYTHONPATH=.:benchmarks python benchmarks/peers.py --no-ols --logit --others
"""

from __future__ import annotations

import argparse
import functools
import math
import multiprocessing
import platform
import re
import subprocess
import sys
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))  # the checkout, not an installed copy
sys.path.insert(0, str(HERE))

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import patsy  # noqa: E402
import statsmodels.formula.api as smf  # noqa: E402
from scipy.optimize import brentq  # noqa: E402
from scipy.stats import norm  # noqa: E402

import dpmodels  # noqa: E402
from accuracy import (  # noqa: E402
    SSP,
    DiffprivlibOLS,
    Problem,
    back_map,
    housing_problem,
    mean_rms,
    rel_error,
    rep_seeds,
    scaled_frame,
    skewed_problem,
    wages_problem,
)

EPSILONS = (0.1, 0.3, 1.0, 3.0)
DELTA = 1e-6  # AdaSSP's delta
OLS_DATASETS = ("housing", "wages", "skewed", "normal2", "normal4", "normal8", "normal16",
                "corr8", "mixed", "fair", "randhie")
QUICK_DATASETS = ("housing", "normal4", "mixed", "fair")
LOGIT_DATASETS = ("logit2", "logit8")
OTHER_DATASETS = ("quantreg2", "quantreg8", "mnlogit2", "mnlogit8")
OLS_METHODS = ("ssp", "adassp", "diffprivlib", "dpmodels", "dpmodels[histogram]",
               "dpmodels[moments]")
DEFAULT_METHODS = ("ssp", "adassp", "diffprivlib", "dpmodels")
PURE_PEERS = ("ssp", "diffprivlib")
LABELS = {"ssp": "SSP", "adassp": "AdaSSP", "diffprivlib": "diffprivlib",
          "dpl_c1": "diffprivlib C=1", "dpl_c100": "diffprivlib C=100",
          "ass": "ASS-logit (Huang)"}
#: SSP's sensitivity comes from a grid of 3**d points per level combination;
#: above this many points the closed form (continuous main effects only) is used.
MAX_SSP_GRID = 200_000


# ---- data sets ------------------------------------------------------------------------------


def coefs(k: int) -> np.ndarray:
    """Slopes 1, -0.5, 0.75, -0.25, repeated: nonzero, varied, alternating signs."""
    mags = (1.0, 0.5, 0.75, 0.25)
    return np.array([(-1.0) ** j * mags[j % 4] for j in range(k)])


def _covariates(rng: np.random.Generator, n: int, k: int, rho: float = 0.0) -> np.ndarray:
    """n x k standard normal covariates with pairwise correlation rho, clipped to (-4, 4)."""
    z = rng.normal(size=(n, k))
    if rho:
        z = math.sqrt(1.0 - rho) * z + math.sqrt(rho) * rng.normal(size=(n, 1))
    return z.clip(-4.0, 4.0)


def _model_sd(b: np.ndarray, rho: float = 0.0) -> float:
    """Standard deviation of x'b + N(0, 1) under the generating model."""
    k = len(b)
    sigma = (1.0 - rho) * np.eye(k) + rho * np.ones((k, k))
    return math.sqrt(1.0 + float(b @ sigma @ b))


def _check_inside(problem: Problem) -> Problem:
    """Every row inside the declared bounds and levels (nothing clipped)."""
    for v, (lo, hi) in problem.bounds.items():
        x = problem.data[v]
        if x.min() < lo or x.max() > hi:
            raise AssertionError(f"{problem.name}: {v} outside its bounds ({lo}, {hi})")
    for v, lv in problem.levels.items():
        if not problem.data[v].isin(lv).all():
            raise AssertionError(f"{problem.name}: {v} outside its levels")
    return problem


def normal_problem(k: int, rho: float = 0.0, n: int = 100_000, name: str | None = None,
                   seed: int | None = None) -> Problem:
    """``y = 1 + x'b + N(0, 1)`` with k continuous covariates (see the module docstring)."""
    rng = np.random.default_rng(seed if seed is not None else 1000 + k + int(100 * rho))
    b = coefs(k)
    x = _covariates(rng, n, k, rho)
    half = math.ceil(6.0 * _model_sd(b, rho))
    y = (1.0 + x @ b + rng.normal(size=n)).clip(1.0 - half, 1.0 + half)
    names = [f"x{j + 1}" for j in range(k)]
    data = pd.DataFrame(x, columns=names).assign(y=y)
    bounds = {"y": (1.0 - half, 1.0 + half), **{v: (-4.0, 4.0) for v in names}}
    return _check_inside(Problem(name or f"normal{k}", "y ~ " + " + ".join(names), bounds, {},
                                 data))


def mixed_problem(n: int = 50_000, seed: int = 21) -> Problem:
    """3 continuous covariates (b = 1, -0.5, 0.75) and two factors: f4 with levels
    a-d (frequencies .4, .3, .2, .1; effects 0, .5, -.3, .8) and f6 with levels
    g1-g6 (uniform; effects 0, .2, -.4, .6, -.1, .3); y = 1 + ... + N(0, 1),
    bounds 1 + [min, max] of the factor effects -+ ceil(6 sd of the rest)."""
    rng = np.random.default_rng(seed)
    b = coefs(3)
    x = _covariates(rng, n, 3)
    lv4, eff4 = list("abcd"), np.array([0.0, 0.5, -0.3, 0.8])
    lv6, eff6 = [f"g{i}" for i in range(1, 7)], np.array([0.0, 0.2, -0.4, 0.6, -0.1, 0.3])
    i4 = rng.choice(4, n, p=[0.4, 0.3, 0.2, 0.1])
    i6 = rng.choice(6, n)
    half = math.ceil(6.0 * _model_sd(b))
    lo = math.floor(1.0 + eff4.min() + eff6.min()) - half
    hi = math.ceil(1.0 + eff4.max() + eff6.max()) + half
    y = (1.0 + x @ b + eff4[i4] + eff6[i6] + rng.normal(size=n)).clip(lo, hi)
    data = pd.DataFrame(x, columns=["x1", "x2", "x3"]).assign(
        f4=np.array(lv4)[i4], f6=np.array(lv6)[i6], y=y)
    bounds = {"y": (float(lo), float(hi)), "x1": (-4.0, 4.0), "x2": (-4.0, 4.0),
              "x3": (-4.0, 4.0)}
    return _check_inside(Problem("mixed", "y ~ x1 + x2 + x3 + C(f4) + C(f6)", bounds,
                                 {"f4": lv4, "f6": lv6}, data))


def fair_problem() -> Problem:
    """statsmodels' fair data; codebook bounds (module docstring)."""
    from statsmodels.datasets import fair

    data = fair.load_pandas().data
    bounds = {"affairs": (0.0, 60.0), "rate_marriage": (1.0, 5.0), "age": (17.5, 42.0),
              "yrs_married": (0.5, 23.0), "children": (0.0, 5.5), "religious": (1.0, 4.0),
              "educ": (9.0, 20.0), "occupation": (1.0, 6.0), "occupation_husb": (1.0, 6.0)}
    formula = "affairs ~ " + " + ".join(v for v in bounds if v != "affairs")
    return _check_inside(Problem("fair", formula, bounds, {}, data))


def randhie_problem() -> Problem:
    """statsmodels' randhie data; bounds from the variables' definitions (module docstring)."""
    from statsmodels.datasets import randhie

    data = randhie.load_pandas().data
    bounds = {"mdvis": (0.0, 100.0), "lncoins": (0.0, math.log(101.0)), "lpi": (0.0, 8.0),
              "fmde": (0.0, 8.3), "physlm": (0.0, 1.0), "disea": (0.0, 100.0)}
    levels = {v: [0, 1] for v in ("idp", "hlthg", "hlthf", "hlthp")}
    formula = "mdvis ~ lncoins + idp + lpi + fmde + physlm + disea + hlthg + hlthf + hlthp"
    return _check_inside(Problem("randhie", formula, bounds, levels, data))


def logit_problem(k: int, n: int = 100_000) -> Problem:
    """``P(y = 1) = expit(-0.5 + x'b)``, k covariates as in normal<k>; the data
    also hold ``y2 = 2y - 1`` for the Taylor-approximation peer."""
    rng = np.random.default_rng(2000 + k)
    x = _covariates(rng, n, k)
    eta = -0.5 + x @ coefs(k)
    y = (rng.random(n) < 1.0 / (1.0 + np.exp(-eta))).astype(int)
    names = [f"x{j + 1}" for j in range(k)]
    data = pd.DataFrame(x, columns=names).assign(y=y, y2=2.0 * y - 1.0)
    return Problem(f"logit{k}", "y ~ " + " + ".join(names), {v: (-4.0, 4.0) for v in names},
                   {"y": [0, 1]}, data)


def mnlogit_problem(k: int, n: int = 100_000) -> Problem:
    """Three outcomes 0, 1, 2 (base 0): ``eta_1 = 0.3 + x'b``, ``eta_2 = -0.2 - 0.5 x'b_rev``."""
    rng = np.random.default_rng(3000 + k)
    x = _covariates(rng, n, k)
    b = coefs(k)
    eta = np.column_stack([np.zeros(n), 0.3 + x @ b, -0.2 - 0.5 * x @ b[::-1]])
    p = np.exp(eta - eta.max(axis=1, keepdims=True))
    p /= p.sum(axis=1, keepdims=True)
    c = (rng.random((n, 1)) > p.cumsum(axis=1)).sum(axis=1)
    names = [f"x{j + 1}" for j in range(k)]
    data = pd.DataFrame(x, columns=names).assign(c=c)
    return Problem(f"mnlogit{k}", "c ~ " + " + ".join(names), {v: (-4.0, 4.0) for v in names},
                   {"c": [0, 1, 2]}, data)


MAKERS: dict[str, Callable[[], Problem]] = {
    "housing": housing_problem, "wages": wages_problem, "skewed": skewed_problem,
    "normal2": functools.partial(normal_problem, 2),
    "normal4": functools.partial(normal_problem, 4),
    "normal8": functools.partial(normal_problem, 8),
    "normal16": functools.partial(normal_problem, 16),
    "corr8": functools.partial(normal_problem, 8, 0.5, name="corr8"),
    "mixed": mixed_problem, "fair": fair_problem, "randhie": randhie_problem,
    "logit2": functools.partial(logit_problem, 2), "logit8": functools.partial(logit_problem, 8),
    "quantreg2": functools.partial(normal_problem, 2, name="quantreg2"),
    "quantreg8": functools.partial(normal_problem, 8, name="quantreg8"),
    "mnlogit2": functools.partial(mnlogit_problem, 2),
    "mnlogit8": functools.partial(mnlogit_problem, 8),
}


# ---- peers implemented here -------------------------------------------------------------------


class ContinuousSSP(SSP):
    """``accuracy.SSP`` for a design of continuous main effects only
    (``y ~ x1 + ... + xk``), with the sensitivity in closed form instead of
    from SSP's 3**d-point grid (3**17 points for normal16).

    On the scaled design every variable lies in [-1, 1]; the released entries
    are the k + 1 sums of x_j and y (range 2 each), the k(k + 1)/2 sums of
    products of two distinct variables (range 2) and the k sums of squares
    x_j^2 (range 1); the replace-one L1 sensitivity is the sum of the ranges,
    which is what SSP's grid gives for such a design (checked in ``--quick``).
    """

    def __init__(self, problem: Problem):  # noqa: D107 - (SSP.__init__ is not called)
        df = scaled_frame(problem, problem.data)
        y, X = patsy.dmatrices(problem.formula, df, return_type="dataframe")
        covs = [v for v in problem.bounds if v != problem.response]
        if problem.levels or list(X.columns) != ["Intercept", *covs]:
            raise ValueError("ContinuousSSP takes continuous main effects only")
        self.problem = problem
        self.names = list(X.columns)
        Z = np.column_stack([X.to_numpy(), y.to_numpy()[:, 0]])
        self.n = len(df)
        self.ZZ = Z.T @ Z
        p, k = Z.shape[1], len(covs)
        self.pairs = [(i, j) for i in range(p) for j in range(i, p) if (i, j) != (p - 1, p - 1)]
        self.keep = [m for m, ij in enumerate(self.pairs) if ij != (0, 0)]  # n is public
        self.twins = {}
        self.sensitivity = 2.0 * (k + 1) + 2.0 * (k + 1) * k / 2.0 + 1.0 * k
        self.orig_names, self.T, _, self.y_lo, self.y_scale = back_map(problem)


def make_ssp(problem: Problem) -> SSP:
    """SSP, or its closed-form twin when the domain grid would be too large."""
    grid = 3 ** problem.d * problem.fixed_cells
    return ContinuousSSP(problem) if grid > MAX_SSP_GRID else SSP(problem)


def check_continuous_ssp() -> None:
    """The closed-form sensitivity equals SSP's grid-based one (normal4)."""
    problem = normal_problem(4, n=2000)
    a, b = SSP(problem), ContinuousSSP(problem)
    assert math.isclose(a.sensitivity, b.sensitivity), (a.sensitivity, b.sensitivity)
    assert [a.pairs[k] for k in a.keep] == [b.pairs[k] for k in b.keep] and not a.twins


def gaussian_sigma(sensitivity: float, epsilon: float, delta: float) -> float:
    """Smallest noise scale of the analytic Gaussian mechanism (Balle & Wang
    2018, Theorem 8) that is (epsilon, delta)-DP for this L2 sensitivity."""

    def excess(log_s: float) -> float:
        s = math.exp(log_s)  # sigma in units of the sensitivity
        a, c = 1.0 / (2.0 * s), epsilon * s
        return norm.cdf(a - c) - math.exp(epsilon + norm.logcdf(-a - c)) - delta

    return sensitivity * math.exp(brentq(excess, -20.0, 20.0, xtol=1e-12))


def row_norm_bound_sq(columns: list[str]) -> int:
    """Bound on ||x||^2 for a design row mapped to [-1, 1]: every column is in
    [-1, 1] and, of the dummies of one term (``C(g)[T.b]``, ``C(g)[T.c]``; or
    ``x:C(g)[T.b]``, ...), at most one is nonzero; so one per term."""
    return len({re.sub(r"\[T\.[^\]]*\]", "", c) for c in columns})


class AdaSSP:
    """AdaSSP, Wang (2018), Algorithm 2, on the design mapped to [-1, 1].

    With ``B^2`` a bound on ``||x||^2`` (:func:`row_norm_bound_sq`; ``p`` for
    continuous main effects, less with factors), ``|y| <= 1`` and epsilon and
    delta split in three:

    1. ``lmin~ = max(lmin(X'X) + s1 Z - s1 sqrt(log(6/delta)), 0)``, a private
       high-probability lower bound of the smallest eigenvalue;
    2. ``lambda = max(0, s2 sqrt(p log(2 p^2 / rho)) - lmin~)`` (rho = 0.05),
       the ridge that keeps the noisy X'X well conditioned;
    3. ``X'X + s2 E`` with E symmetric, iid N(0, 1) upper triangle;
    4. ``X'y + s3 z``;
    5. ``b = (X'X~ + lambda I)^-1 X'y~``, mapped back to the original design.

    The paper's noise scales ``sqrt(log(6/delta)) / (epsilon/3)`` times the
    sensitivity are replaced by the analytic Gaussian mechanism's (smaller,
    and valid for any epsilon) at (epsilon/3, delta/3), with replace-one L2
    sensitivities: ``B^2`` for lmin (Weyl), ``sqrt(2) B^2`` for X'X
    (``||xx' - zz'||_F^2 = ||x||^4 + ||z||^4 - 2 (x'z)^2``) and ``2 B`` for X'y.
    """

    def __init__(self, problem: Problem, delta: float = DELTA, rho: float = 0.05):
        df = scaled_frame(problem, problem.data)
        y, X = patsy.dmatrices(problem.formula, df, return_type="dataframe")
        Xa, ya = X.to_numpy(), y.to_numpy()[:, 0]
        self.XX, self.Xy = Xa.T @ Xa, Xa.T @ ya
        self.lmin = float(np.linalg.eigvalsh(self.XX)[0])
        self.b2 = float(row_norm_bound_sq(list(X.columns)))
        self.delta, self.rho = delta, rho
        self.orig_names, self.T, scaled_names, self.y_lo, self.y_scale = back_map(problem)
        assert scaled_names == list(X.columns)

    def fit(self, epsilon: float, rng: np.random.Generator) -> pd.Series:
        p = len(self.Xy)
        e3, d3 = epsilon / 3.0, self.delta / 3.0
        s1 = gaussian_sigma(self.b2, e3, d3)
        s2 = gaussian_sigma(math.sqrt(2.0) * self.b2, e3, d3)
        s3 = gaussian_sigma(2.0 * math.sqrt(self.b2), e3, d3)
        lmin = max(self.lmin + s1 * rng.normal() - s1 * math.sqrt(math.log(6.0 / self.delta)),
                   0.0)
        lam = max(0.0, s2 * math.sqrt(p * math.log(2.0 * p * p / self.rho)) - lmin)
        E = np.triu(rng.normal(size=(p, p)))
        XX = self.XX + s2 * (E + np.triu(E, 1).T)
        Xy = self.Xy + s3 * rng.normal(size=p)
        beta_s = np.linalg.solve(XX + lam * np.eye(p), Xy)
        beta = self.T @ beta_s * self.y_scale
        beta[self.orig_names.index("Intercept")] += self.y_lo + self.y_scale
        return pd.Series(beta, index=self.orig_names)


def _y2_problem(problem: Problem) -> Problem:
    """The logit problem as a regression of ``y2 = 2y - 1`` (public bounds (-1, 1))."""
    formula = "y2 ~ " + problem.formula.split("~", 1)[1].strip()
    return Problem(problem.name, formula, {"y2": (-1.0, 1.0), **problem.bounds}, {},
                   problem.data)


class TaylorLogit:
    """Approximate-sufficient-statistics logit (after Huang et al. 2018): the
    log-likelihood ``sum y x'b - log(1 + exp(x'b))`` expanded to second order
    at ``x'b = 0`` is ``const + (y - 1/2)'Xb - b'X'Xb / 8``, maximized at
    ``4 (X'X)^-1 X'(y - 1/2) = 2 (X'X)^-1 X'y2`` with ``y2 = 2y - 1``: twice
    SSP's OLS of y2 (the same noisy moments X'X, X'y2; Laplace, pure epsilon)."""

    def __init__(self, problem: Problem):
        self.ssp = SSP(_y2_problem(problem))

    def fit(self, epsilon: float, rng: np.random.Generator) -> pd.Series:
        return 2.0 * self.ssp.fit(epsilon, rng)


class DiffprivlibLogit:
    """diffprivlib's LogisticRegression on the covariates mapped to [-1, 1],
    ``data_norm = sqrt(k)``, a given C; coefficients mapped back."""

    def __init__(self, problem: Problem, c_reg: float):
        from diffprivlib.models import LogisticRegression  # noqa: F401 - checked early

        peer = _y2_problem(problem)
        _, X = patsy.dmatrices(peer.formula, scaled_frame(peer, problem.data),
                               return_type="dataframe")
        self.cols = [c for c in X.columns if c != "Intercept"]
        self.X, self.y = X[self.cols].to_numpy(), problem.data[problem.response].to_numpy()
        self.c_reg = c_reg
        self.orig_names, self.T, self.scaled_names, _, _ = back_map(peer)

    def fit(self, epsilon: float, seed: int) -> pd.Series:
        from diffprivlib.models import LogisticRegression

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            m = LogisticRegression(epsilon=epsilon, data_norm=math.sqrt(len(self.cols)),
                                   C=self.c_reg, fit_intercept=True, max_iter=1000,
                                   random_state=seed % 2**32)
            m.fit(self.X, self.y)
        bs = np.zeros(len(self.scaled_names))
        bs[self.scaled_names.index("Intercept")] = float(np.ravel(m.intercept_)[0])
        for c, b in zip(self.cols, np.ravel(m.coef_)):
            bs[self.scaled_names.index(c)] = b
        return pd.Series(self.T @ bs, index=self.orig_names)


# ---- one benchmark cell -----------------------------------------------------------------------


class Refused(Exception):
    """A method declined the problem before releasing anything (same for every seed)."""


@dataclass
class Bench:
    """A data set with its non-private reference and its methods' fitters."""

    problem: Problem
    ref: np.ndarray
    se: np.ndarray
    #: method -> (setup seconds, fit(eps, seed) -> params in the reference's order)
    names: pd.Index | None = None  # the reference's coefficient names
    fitters: dict = field(default_factory=dict)


def _aligned(params, names) -> np.ndarray:
    """Coefficients in the reference's order (by name, or flattened for mnlogit)."""
    if isinstance(params, pd.DataFrame):
        return params.to_numpy(float).ravel()
    return params.reindex(names).to_numpy(float)


def _dp_call(fn: Callable, problem: Problem, eps: float, seed: int, fit_kw: dict,
             **model_kw):
    """A dpmodels model fit on the raw rows.  A domain refusal (DomainError:
    decided from public inputs, before any release) or an unknown keyword is
    raised as :class:`Refused`; other errors propagate (a failed repetition)."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model = fn(problem.formula, problem.data, epsilon=eps, bounds=problem.bounds,
                       levels=problem.levels, random_state=seed, **model_kw)
    except (TypeError, dpmodels.DomainError) as e:
        raise Refused(f"{type(e).__name__}: {e}") from None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return model.fit(**fit_kw).params


def _make_fitter(suite: str, method: str, problem: Problem, names) -> Callable:
    """fit(eps, seed) -> coefficients (aligned) for one method of one suite."""
    peers = problem.for_peers()
    peer_names = None
    if suite == "ols" and method in ("ssp", "adassp", "diffprivlib"):
        peer_names = smf.ols(peers.formula, problem.data.iloc[:2000]).fit().params.index
    if method == "ssp":
        m = make_ssp(peers)
        return lambda eps, seed: m.fit(eps, np.random.default_rng(seed)).reindex(
            peer_names).to_numpy(float)
    if method == "adassp":
        m = AdaSSP(peers)
        return lambda eps, seed: m.fit(eps, np.random.default_rng(seed)).reindex(
            peer_names).to_numpy(float)
    if method == "diffprivlib":
        m = DiffprivlibOLS(peers)
        return lambda eps, seed: m.fit(eps, seed % 2**32).reindex(peer_names).to_numpy(float)
    if method.startswith(("dpmodels", "dp_logit")):
        # "dpmodels[moments]" / "dp_logit[newton]": the default, or a named method
        fn = dpmodels.dp_ols if method.startswith("dpmodels") else dpmodels.dp_logit
        kw = {"method": method[method.index("[") + 1:-1]} if "[" in method else {}
        return lambda eps, seed: _aligned(_dp_call(
            fn, problem, eps, seed, {"cov_type": "naive"}, **kw), names)
    if method in ("dpl_c1", "dpl_c100"):
        m = DiffprivlibLogit(problem, 1.0 if method == "dpl_c1" else 100.0)
        return lambda eps, seed: _aligned(m.fit(eps, seed), names)
    if method == "ass":
        m = TaylorLogit(problem)
        return lambda eps, seed: _aligned(m.fit(eps, np.random.default_rng(seed)), names)
    if method == "dp_quantreg":
        return lambda eps, seed: _aligned(_dp_call(
            dpmodels.dp_quantreg, problem, eps, seed, {"q": 0.5, "cov_type": "naive"}), names)
    if method == "dp_mnlogit":
        return lambda eps, seed: _aligned(_dp_call(
            dpmodels.dp_mnlogit, problem, eps, seed, {"cov_type": "naive"}), names)
    raise ValueError(f"unknown method {method!r}")


def reference(suite: str, problem: Problem):
    """The non-private fit on the same rows: (params, standard errors)."""
    if suite == "ols":
        res = smf.ols(problem.formula, problem.data).fit()
    elif problem.name.startswith("logit"):
        res = smf.logit(problem.formula, problem.data).fit(disp=0)
    elif problem.name.startswith("quantreg"):
        res = smf.quantreg(problem.formula, problem.data).fit(q=0.5)
    else:
        res = smf.mnlogit(problem.formula, problem.data).fit(disp=0)
    return res.params, res.bse


_BENCHES: dict[tuple, Bench] = {}  # per process: data sets and fitters built once


def _bench(suite: str, dataset: str) -> Bench:
    key = (suite, dataset)
    if key not in _BENCHES:
        problem = MAKERS[dataset]()
        params, bse = reference(suite, problem)
        _BENCHES[key] = Bench(problem, _aligned(params, params.index), _aligned(bse, bse.index),
                              params.index)
    return _BENCHES[key]


@dataclass
class Score:
    """One method in one cell."""

    rel: float = float("nan")
    se: float = float("nan")
    time: float = float("nan")  # setup + median fit, seconds
    failed: int = 0
    note: str = ""


def run_cell(task: tuple) -> tuple:
    """Every method on every seed for one (suite, data set, epsilon)."""
    suite, dataset, eps, methods, seeds = task
    bench = _bench(suite, dataset)
    out = {}
    for method in methods:
        if method not in bench.fitters:
            t0 = time.perf_counter()
            try:
                fit = _make_fitter(suite, method, bench.problem, bench.names)
            except ImportError as e:
                out[method] = Score(note=f"unavailable: {e}")
                continue
            bench.fitters[method] = (time.perf_counter() - t0, fit)
        setup, fit = bench.fitters[method]
        rel, dev, times, failed, note = [], [], [], 0, ""
        for seed in seeds:
            t0 = time.perf_counter()
            try:
                params = fit(eps, seed)
            except Refused as e:
                note = "refused: " + str(e).splitlines()[0][:300]
                break
            except (ValueError, np.linalg.LinAlgError, ArithmeticError) as e:
                note = f"{type(e).__name__}: {str(e).splitlines()[0][:200] if str(e) else ''}"
                params = np.full(len(bench.ref), np.nan)
            times.append(time.perf_counter() - t0)
            if len(params) != len(bench.ref):
                raise AssertionError(f"{method} on {dataset}: {len(params)} coefficients")
            failed += int(np.isnan(params).any())
            rel.append(rel_error(params, bench.ref))
            dev.append((params - bench.ref) / bench.se)
        if note.startswith("refused"):
            out[method] = Score(note=note)
        else:
            out[method] = Score(mean_rms(rel), mean_rms(dev), setup + float(np.median(times)),
                                failed, f"{failed} of {len(seeds)} fits failed; {note}".rstrip("; ")
                                if failed else "")
    return suite, dataset, eps, out


def _init_worker() -> None:
    """One BLAS thread per worker process (the jobs share the cores)."""
    try:
        from threadpoolctl import threadpool_limits

        threadpool_limits(1)
    except ImportError:
        pass


def run_all(tasks: list[tuple], jobs: int, log) -> dict:
    """Run the cells (in ``jobs`` processes); {(suite, data set, eps): {method: Score}}."""
    results = {}
    if jobs > 1:
        ctx = multiprocessing.get_context("fork")
        with ctx.Pool(jobs, initializer=_init_worker) as pool:
            for suite, ds, eps, out in pool.imap_unordered(run_cell, tasks):
                results[suite, ds, eps] = out
                log(f"  {suite} {ds} eps={eps:g}: " + _brief(out))
    else:
        for task in tasks:
            suite, ds, eps, out = run_cell(task)
            results[suite, ds, eps] = out
            log(f"  {suite} {ds} eps={eps:g}: " + _brief(out))
    return results


def _brief(out: dict) -> str:
    """One progress line."""
    return ", ".join(f"{LABELS.get(m, m)} {_num(s.rel)}%/{_num(s.se)}se" for m, s in out.items())


# ---- output -----------------------------------------------------------------------------------


def _num(v: float) -> str:
    if v is None or not np.isfinite(v):
        return "-"
    a = abs(v)
    return f"{v:.2f}" if a < 10 else f"{v:.1f}" if a < 1000 else f"{v:.2e}"


def _entry(s: Score) -> str:
    if not np.isfinite(s.rel) and not np.isfinite(s.se):
        return "-"
    extra = f" ({s.failed} failed)" if s.failed else ""
    return f"{_num(s.rel)} / {_num(s.se)}{extra}"


def _le(a: float, b: float) -> str:
    if not (np.isfinite(a) and np.isfinite(b)):
        return "-"
    return "✓" if a <= b else "✗"


def _render(head: list[str], body: list[list[str]], markdown: bool) -> str:
    if markdown:
        lines = ["| " + " | ".join(head) + " |", "|" + "|".join(["---:"] * len(head)) + "|"]
        return "\n".join(lines + ["| " + " | ".join(b) + " |" for b in body])
    widths = [max(len(h), *(len(b[i]) for b in body)) for i, h in enumerate(head)]
    lines = ["  ".join(h.rjust(w) for h, w in zip(head, widths))]
    lines.append("-" * len(lines[0]))
    return "\n".join(lines + ["  ".join(c.rjust(w) for c, w in zip(b, widths)) for b in body])


def _times_row(cells: list[dict], methods: list[str]) -> list[str]:
    row = []
    for m in methods:
        ts = [c[m].time for c in cells if m in c and np.isfinite(c[m].time)]
        row.append(f"{np.median(ts):.3g} s" if ts else "-")
    return row


def _notes(res: dict, epsilons, methods, markdown: bool) -> list[str]:
    """Refusals and failures, each message once."""
    seen, lines = set(), []
    for eps in epsilons:
        for m in methods:
            s = res.get(eps, {}).get(m)
            if s is not None and s.note and (m, s.note) not in seen:
                seen.add((m, s.note))
                lines.append(("- " if markdown else "  ") + f"{LABELS.get(m, m)} "
                             f"(eps={eps:g}, first seen): {s.note}")
    return lines


def ols_tables(results: dict, datasets, epsilons, methods, markdown: bool) -> tuple[str, list]:
    """Per data set: rows = epsilon, columns = methods and the two checks."""
    out, verdicts = [], []
    pure = [m for m in PURE_PEERS if m in methods]
    for ds in datasets:
        bench = _bench("ols", ds)
        p = bench.problem
        res = {eps: results.get(("ols", ds, eps), {}) for eps in epsilons}
        head = ["epsilon"] + [LABELS.get(m, m) for m in methods]
        checks = "dpmodels" in methods and pure
        if checks:
            head += ["dp <= pure peer (rel, SE)", "dp <= AdaSSP (eps >= 1)"]
        body = []
        for eps in epsilons:
            r = res[eps]
            row = [f"{eps:g}"] + [_entry(r[m]) if m in r else "-" for m in methods]
            if checks:
                dp = r["dpmodels"]
                best_rel = min((r[m].rel for m in pure), key=lambda v: np.nan_to_num(v, nan=np.inf))
                best_se = min((r[m].se for m in pure), key=lambda v: np.nan_to_num(v, nan=np.inf))
                v_pure = (_le(dp.rel, best_rel), _le(dp.se, best_se))
                v_ada = ((_le(dp.rel, r["adassp"].rel), _le(dp.se, r["adassp"].se))
                         if "adassp" in r and eps >= 1 else ("", ""))
                row += [" ".join(v_pure), " ".join(v_ada).strip()]
                verdicts.append((ds, eps, v_pure, v_ada))
            body.append(row)
        body.append(["time"] + _times_row(list(res.values()), methods)
                    + (["", ""] if checks else []))
        title = (f"{p.name}: {p.formula}  (n = {len(p.data):,}; {len(bench.ref)} coefficients; "
                 f"{p.d} continuous variables, {p.fixed_cells} level combinations)")
        out.append(("### " if markdown else "") + title)
        out.append("")
        out.append(_render(head, body, markdown))
        notes = _notes(res, epsilons, methods, markdown)
        if notes:
            out += [""] + notes
        out.append("")
    return "\n".join(out), verdicts


def verdict_summary(verdicts: list, markdown: bool) -> str:
    """Counts of the ✓ marks (SE metric and relative metric)."""
    def count(idx, which):
        marks = [v[idx][which] for v in verdicts if v[idx][which] in ("✓", "✗")]
        return f"{marks.count('✓')}/{len(marks)}"

    lines = [
        f"dpmodels default <= best pure-epsilon peer (SSP, diffprivlib): "
        f"{count(2, 1)} cells in SE units, {count(2, 0)} in relative error",
        f"dpmodels default <= AdaSSP (epsilon >= 1; AdaSSP is (eps, 1e-6)-DP): "
        f"{count(3, 1)} cells in SE units, {count(3, 0)} in relative error",
    ]
    losses = [f"{ds} eps={eps:g}" for ds, eps, vp, _ in verdicts if vp[1] == "✗"]
    if losses:
        lines.append("cells where a pure peer beats dpmodels (SE units): " + ", ".join(losses))
    return "\n".join(("- " if markdown else "") + s for s in lines)


def simple_tables(suite: str, results: dict, datasets, epsilons, methods, markdown: bool,
                  best_of=None) -> str:
    """Logit / others: one table per data set (rows = epsilon)."""
    out = []
    for ds in datasets:
        bench = _bench(suite, ds)
        p = bench.problem
        res = {eps: results.get((suite, ds, eps), {}) for eps in epsilons}
        head = ["epsilon"] + [LABELS.get(m, m) for m in methods]
        if best_of:
            head.append("dp_logit <= best diffprivlib / ASS (SE)")
        body = []
        for eps in epsilons:
            r = res[eps]
            row = [f"{eps:g}"] + [_entry(r[m]) if m in r else "-" for m in methods]
            if best_of:
                dpl = min(r[m].se for m in best_of[0])
                row.append(f"{_le(r['dp_logit'].se, dpl)} {_le(r['dp_logit'].se, r[best_of[1]].se)}")
            body.append(row)
        body.append(["time"] + _times_row(list(res.values()), methods) + ([""] if best_of else []))
        out.append(("### " if markdown else "") + f"{p.name}: {p.formula}  (n = {len(p.data):,}; "
                   f"{len(bench.ref)} coefficients)")
        out.append("")
        out.append(_render(head, body, markdown))
        notes = _notes(res, epsilons, methods, markdown)
        if notes:
            out += [""] + notes
        out.append("")
    return "\n".join(out)


def checkout_state() -> str:
    """The commit benchmarked, and whether dpmodels/ has uncommitted changes."""
    try:
        git = ["git", "-C", str(HERE.parent)]
        head = subprocess.run(git + ["rev-parse", "--short", "HEAD"], capture_output=True,
                              text=True, check=True).stdout.strip()
        dirty = subprocess.run(git + ["status", "--porcelain", "dpmodels"], capture_output=True,
                               text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown checkout"
    return f"commit {head}" + (" + uncommitted changes in dpmodels/" if dirty else "")


# ---- command line -----------------------------------------------------------------------------


def _csv(s: str) -> list[str]:
    return [x.strip() for x in s.split(",") if x.strip()]


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--reps", type=int, default=None, help="repetitions (default 20; 3 with --quick)")
    ap.add_argument("--seed", type=int, default=0, help="master seed of the noise (default 0)")
    ap.add_argument("--eps", default=None, help="comma-separated epsilons (default 0.1,0.3,1,3)")
    ap.add_argument("--datasets", default=None,
                    help=f"comma-separated, from {', '.join(OLS_DATASETS)} (default all)")
    ap.add_argument("--methods", default=",".join(DEFAULT_METHODS),
                    help=f"comma-separated, from {', '.join(OLS_METHODS)}, or 'all' "
                         f"(default {','.join(DEFAULT_METHODS)})")
    ap.add_argument("--no-ols", action="store_true", help="skip the linear part")
    ap.add_argument("--logit", action="store_true", help="the logit comparison")
    ap.add_argument("--others", action="store_true", help="dp_quantreg and dp_mnlogit")
    ap.add_argument("--quick", action="store_true",
                    help=f"smoke run: 3 repetitions, {', '.join(QUICK_DATASETS)}, eps 0.3 and 3, "
                         "logit and others at eps 1 (unless given)")
    ap.add_argument("--jobs", type=int, default=1, help="worker processes (default 1)")
    ap.add_argument("--markdown", action="store_true", help="print markdown tables")
    ap.add_argument("--out", default=None,
                    help="also write markdown to benchmarks/results/peers_<OUT>.md")
    args = ap.parse_args(argv)
    args.reps = args.reps or (3 if args.quick else 20)
    args.eps = ([float(e) for e in _csv(args.eps)] if args.eps
                else [0.3, 3.0] if args.quick else list(EPSILONS))
    args.datasets = (_csv(args.datasets) if args.datasets
                     else list(QUICK_DATASETS if args.quick else OLS_DATASETS))
    args.methods = list(OLS_METHODS) if args.methods == "all" else _csv(args.methods)
    if args.quick:
        args.logit = args.others = True
    for ds in args.datasets:
        if ds not in OLS_DATASETS:
            ap.error(f"unknown data set {ds!r}")
    for m in args.methods:
        if m not in OLS_METHODS:
            ap.error(f"unknown method {m!r}")
    if args.reps < 1 or args.jobs < 1:
        ap.error("--reps and --jobs must be at least 1")
    return args


def main(argv=None) -> int:
    args = parse_args(argv)
    try:
        import diffprivlib
    except ImportError:
        print("this benchmark needs diffprivlib: pip install -e .[bench]", file=sys.stderr)
        return 2
    t_start = time.perf_counter()
    state = checkout_state()
    log = lambda msg: print(msg, file=sys.stderr, flush=True)  # noqa: E731
    seeds = rep_seeds(args.seed, args.reps)
    if args.quick:
        check_continuous_ssp()
    side_eps = [1.0] if args.quick else args.eps
    logit_methods = ["dp_logit", "dpl_c1", "dpl_c100", "ass", "dp_logit[histogram]",
                     "dp_logit[newton]"]
    tasks = []
    if not args.no_ols:
        tasks += [("ols", ds, eps, args.methods, seeds) for ds in args.datasets for eps in args.eps]
    if args.logit:
        tasks += [("logit", ds, eps, logit_methods, seeds) for ds in LOGIT_DATASETS
                  for eps in side_eps]
    if args.others:
        tasks += [("others", ds, eps, ["dp_quantreg" if ds.startswith("quantreg")
                                       else "dp_mnlogit"], seeds)
                  for ds in OTHER_DATASETS for eps in side_eps]
    results = run_all(tasks, args.jobs, log)
    elapsed = time.perf_counter() - t_start

    def report(markdown: bool) -> str:
        h = "## " if markdown else ""
        parts = [
            f"{h}dpmodels {dpmodels.__version__} against private peers",
            "",
            f"{args.reps} repetitions per cell (paired noise seeds from SeedSequence({args.seed})); "
            "entries: `rel % / SE units` = mean over coefficients of the RMS relative deviation "
            "from the non-private fit on the same rows (%) / of the RMS deviation in non-private "
            "standard errors; time = setup + median fit.  ✓/✗: dpmodels default <= the peer "
            "(first mark relative error, second SE units).",
            f"dpmodels at {state}; diffprivlib {diffprivlib.__version__}, numpy "
            f"{np.__version__}, Python {platform.python_version()}, {args.jobs} job(s); "
            f"total {elapsed:.0f} s.",
            "",
        ]
        if not args.no_ols:
            text, verdicts = ols_tables(results, args.datasets, args.eps, args.methods, markdown)
            parts += [f"{h}Linear regression", "", text, f"{h}Summary", "",
                      verdict_summary(verdicts, markdown), ""]
        if args.logit:
            parts += [f"{h}Logit", "", "Checks: dp_logit <= the better diffprivlib C, and <= "
                      "ASS-logit (SE units).", "",
                      simple_tables("logit", results, LOGIT_DATASETS, side_eps, logit_methods,
                                    markdown, best_of=(("dpl_c1", "dpl_c100"), "ass"))]
        if args.others:
            parts += [f"{h}Quantile regression (median) and multinomial logit", "",
                      simple_tables("others", results, OTHER_DATASETS[:2], side_eps,
                                    ["dp_quantreg"], markdown),
                      simple_tables("others", results, OTHER_DATASETS[2:], side_eps,
                                    ["dp_mnlogit"], markdown)]
        return "\n".join(parts)

    print(report(args.markdown))
    if args.out:
        path = HERE / "results" / f"peers_{args.out}.md"
        path.parent.mkdir(exist_ok=True)
        cmd = "python benchmarks/peers.py " + " ".join(sys.argv[1:] if argv is None else argv)
        path.write_text(f"<!-- {cmd} -->\n\n" + report(True) + "\n")
        log(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
