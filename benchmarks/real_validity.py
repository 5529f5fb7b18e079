"""Validity benchmark on real data (issue 26, "Honest answers on real analyses").

What it measures
----------------
Real data sets that ship with statsmodels or scikit-learn (nothing is
downloaded), each with the formula a researcher would write for it, in all
four dp_* families.  The truth is known by **plasmode resampling**: each
replicate draws n rows with replacement from the real data, so the population
is the data set's empirical law and the population coefficients are the
non-private statsmodels fit of the same formula on all rows (``q = 0.5`` for
quantile regression).  n is the data's own size (``--n-mult 1``) and ten times
it (``--n-mult 10``); epsilon 0.3, 1 and 3.

Every replicate makes one release per method and fits it with the default
``.fit()`` (``cov_type="dp"``), plus statsmodels' own fit on the resample (the
width reference).  The methods are ``"auto"`` (the CSV records what it picked:
the model class and the release class) and every method the family takes by
name: ``histogram``; ``moments`` (dp_ols); ``newton`` (dp_logit, dp_quantreg);
``sample-aggregate`` (all four).  Auto and the named method it picks get the
same seeds, so they make the same release and the same fit: the named method's
rows reuse auto's fit (column ``alias``; ``--no-alias`` runs it again, and the
test checks that the two are identical).

For OLS the table also carries the **peer reference interval** (method
``peer-ssp``): the sufficient statistics Z'Z, Z'y, y'y of the design rescaled to
[-1, 1] by the same public bounds, released with Laplace noise under the same
epsilon, and a parametric bootstrap of that mechanism (Gaussian covariates
from the noisy moments, Gaussian errors, the clipping and the noise re-run;
basic bootstrap interval), in the style of Ferrando, Wang & Sheldon (2022),
written here from the description.

Per (case, n, epsilon, method, coefficient) it reports: the sign-error rate
(significant at 5% with the wrong sign; goal <= 2.5%), coverage of the
population coefficient (goal >= 90%), the share of infinite intervals, the
share where a warning names the coefficient, the median width relative to the
non-private interval on the same resample, failures (exceptions, by type: a
refusal is counted, not scored), and a goal check with a one-sided binomial
test against the goal's boundary (``*``: beyond Monte Carlo error), as
benchmarks/validity.py does.  The information goal: every infinite interval
comes with a warning naming the coefficient (``unnamed-inf`` otherwise).  A
per-cell summary gives the worst coefficient and pass/fail; for OLS cells a
peer table gives the width of each method relative to the narrowest interval
that meets the goals.

Public bounds and levels are written in ``CASES`` below with where each comes
from (a codebook, the variable's definition, a generous documented cap); none
is computed from the data.

How to run (from the repository root)
-------------------------------------
::

    python benchmarks/real_validity.py --quick            # one small case per family, few reps
    python benchmarks/real_validity.py --estimate         # seconds per replicate, run-time estimate
    python benchmarks/real_validity.py --n-mult 1 --reps 100 --jobs 2
    python benchmarks/real_validity.py --from-csv benchmarks/results/real_validity_rows.csv.gz

Rows are appended to ``--out`` as each replicate finishes, so a run that is
stopped keeps what it did; ``--first-rep`` adds replicates to cells already
run (same seeds as a longer run would have used).
"""

from __future__ import annotations

import argparse
import itertools
import math
import os
import re
import sys
import time
import warnings
import zlib
from multiprocessing import Pool

import numpy as np
import pandas as pd

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import dpmodels as dpm  # noqa: E402
from dpmodels.core.errors import ReleaseWarning  # noqa: E402

RESULTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results")
GOALS = dict(sign=0.025, cover=0.90)


# ---------------------------------------------------------------------------
# loaders: the real data, recoded by definition only (never by its values)
# ---------------------------------------------------------------------------

def load_fair():
    """statsmodels ``fair`` (Fair 1978, Redbook survey), 6,366 rows."""
    from statsmodels.datasets import fair

    df = fair.load_pandas().data
    out = df[["age", "yrs_married", "children", "educ"]].astype(float).copy()
    out["affair"] = (df["affairs"] > 0).astype(np.int64)
    for v in ("rate_marriage", "religious", "occupation"):
        out[v] = df[v].astype(np.int64)
    return out


def load_anes96():
    """statsmodels ``anes96`` (1996 American National Election Study), 944 rows;
    ``party``: the 7-point party id collapsed to Democrat (0-2, leaners count as
    partisans), Independent (3), Republican (4-6)."""
    from statsmodels.datasets import anes96

    df = anes96.load_pandas().data
    out = df[["popul", "TVnews", "selfLR", "ClinLR", "DoleLR", "age", "income"]].astype(float)
    out = out.copy()
    out["vote"] = df["vote"].astype(np.int64)
    out["educ"] = df["educ"].astype(np.int64)
    pid = df["PID"].astype(np.int64)
    out["party"] = np.where(pid <= 2, 0, np.where(pid == 3, 1, 2)).astype(np.int64)
    return out


def load_randhie():
    """statsmodels ``randhie`` (RAND Health Insurance Experiment), 20,190 rows;
    ``health``: the three self-rated health dummies as one factor (the omitted
    category is excellent)."""
    from statsmodels.datasets import randhie

    df = randhie.load_pandas().data
    out = df[["mdvis", "lncoins", "lpi", "fmde", "physlm", "disea"]].astype(float).copy()
    out["idp"] = df["idp"].astype(np.int64)
    health = np.full(len(df), "excellent", dtype=object)
    for col, lab in (("hlthg", "good"), ("hlthf", "fair"), ("hlthp", "poor")):
        health[df[col].to_numpy() == 1] = lab
    out["health"] = health
    return out


def load_longley():
    """statsmodels ``longley`` (Longley 1967; NIST StRD), 16 rows."""
    from statsmodels.datasets import longley

    return longley.load_pandas().data.astype(float)


def load_engel():
    """statsmodels ``engel`` (Engel 1857, Belgian working-class households), 235 rows."""
    from statsmodels.datasets import engel

    return engel.load_pandas().data.astype(float)


def load_diabetes():
    """scikit-learn ``load_diabetes(scaled=False)`` (Efron et al. 2004), 442 rows."""
    from sklearn.datasets import load_diabetes as _load

    df = _load(scaled=False, as_frame=True).frame
    out = df[["age", "bmi", "bp", "s5", "target"]].astype(float).copy()
    out["sex"] = df["sex"].astype(np.int64)
    return out


# ---------------------------------------------------------------------------
# the cases: formula, public domain (with its source), family
# ---------------------------------------------------------------------------

FAIR_FORMULA = ("affair ~ C(rate_marriage) + C(religious) + age + np.log(yrs_married) + children"
                " + educ + C(occupation) + age:children")
ANES_LOGIT_FORMULA = ("vote ~ selfLR + ClinLR + DoleLR + TVnews + age + C(educ)"
                      " + np.log1p(popul)")
ANES_MN_FORMULA = "party ~ selfLR + np.log1p(popul) + age + income"
RANDHIE_FORMULA = ("np.log1p(mdvis) ~ lncoins + C(idp) + lpi + fmde + physlm + disea"
                   " + C(health) + lncoins:physlm")
LONGLEY_FORMULA = "TOTEMP ~ GNPDEFL + GNP + UNEMP + ARMED + POP + YEAR"
ENGEL_FORMULA = "np.log(foodexp) ~ np.log(income)"
DIABETES_FORMULA = "target ~ age + C(sex) + bmi + bp + s5 + bmi:C(sex)"

CASES = {
    "fair_logit": dict(
        dataset="fair", family="logit", formula=FAIR_FORMULA, loader=load_fair,
        # Fair (1978) codes the Redbook answers by class midpoints: age 17.5 (under 20) ..
        # 42 (40 or over); yrs_married 0.5 (under 1 year) .. 23 (over 20; the codebook's
        # "interval approximations"); children 0 .. 5.5 (5 or more); educ 9 (grade school)
        # .. 20 (advanced degree) as in the codebook.
        bounds={"age": (17.5, 42.0), "yrs_married": (0.5, 23.0), "children": (0.0, 5.5),
                "educ": (9.0, 20.0)},
        # the codebook's scales: rate_marriage 1-5, religious 1-4, occupation 1-6;
        # affair = (affairs > 0), a yes/no outcome
        levels={"affair": [0, 1], "rate_marriage": [1, 2, 3, 4, 5], "religious": [1, 2, 3, 4],
                "occupation": [1, 2, 3, 4, 5, 6]}),
    "anes96_logit": dict(
        dataset="anes96", family="logit", formula=ANES_LOGIT_FORMULA, loader=load_anes96,
        # codebook: the three left-right scales are 1-7; TVnews is times per week (0-7);
        # age: voting age 18, a generous cap of 99; popul: census place population in
        # 1000s, capped at 8,000 (New York, the largest US place, 7,323 in the 1990 census)
        bounds={"selfLR": (1.0, 7.0), "ClinLR": (1.0, 7.0), "DoleLR": (1.0, 7.0),
                "TVnews": (0.0, 7.0), "age": (18.0, 99.0), "popul": (0.0, 8000.0)},
        # codebook: vote 0 Clinton / 1 Dole; educ 1 (1-8 grades) .. 7 (PhD)
        levels={"vote": [0, 1], "educ": [1, 2, 3, 4, 5, 6, 7]}),
    "anes96_mnlogit": dict(
        dataset="anes96", family="mnlogit", formula=ANES_MN_FORMULA, loader=load_anes96,
        # as anes96_logit; income: the codebook's 24 brackets, 1 (under $3,000) .. 24
        # ($105,000 and over), entered as a score
        bounds={"selfLR": (1.0, 7.0), "age": (18.0, 99.0), "popul": (0.0, 8000.0),
                "income": (1.0, 24.0)},
        levels={"party": [0, 1, 2]}),
    "randhie_ols": dict(
        dataset="randhie", family="ols", formula=RANDHIE_FORMULA, loader=load_randhie,
        # codebook: mdvis is a count of outpatient visits (generous cap 100 a year, as in
        # benchmarks/peers.py); lncoins = ln(coinsurance + 1) with 0 <= coinsurance <= 100;
        # lpi = ln(max(1, incentive payment)), payments under $3,000 (ln < 8); fmde
        # = ln(max(1, MDE / (0.01 coinsurance))), MDE at most $1,000, coinsurance >= 25%:
        # ln(4000) = 8.3; physlm a 0-1 share; disea a count of chronic diseases, cap 100
        bounds={"mdvis": (0.0, 100.0), "lncoins": (0.0, math.log(101.0)), "lpi": (0.0, 8.0),
                "fmde": (0.0, 8.3), "physlm": (0.0, 1.0), "disea": (0.0, 100.0)},
        # idp a 0/1 indicator; health: the codebook's four self-rated categories
        levels={"idp": [0, 1], "health": ["excellent", "good", "fair", "poor"]}),
    "longley_ols": dict(
        dataset="longley", family="ols", formula=LONGLEY_FORMULA, loader=load_longley,
        # the series' definitions, US 1947-1962 (Longley 1967; Historical Statistics of the
        # United States), with generous caps: employment (1000s) 50,000-80,000 of a
        # population (1000s, 14 and over) of 100,000-140,000; GNP ($ millions) 200,000-
        # 600,000; GNP deflator (1954 = 100) 80-120; unemployed (100s) 1,000-6,000;
        # armed forces (1000s) 1,000-4,000; YEAR 1947-1962 by definition
        bounds={"TOTEMP": (50000.0, 80000.0), "GNPDEFL": (80.0, 120.0),
                "GNP": (200000.0, 600000.0), "UNEMP": (1000.0, 6000.0),
                "ARMED": (1000.0, 4000.0), "POP": (100000.0, 140000.0),
                "YEAR": (1947.0, 1962.0)},
        levels={}),
    "engel_quantreg": dict(
        dataset="engel", family="quantreg", formula=ENGEL_FORMULA, loader=load_engel,
        # annual household income and food expenditure in Belgian francs of working-class
        # households (Engel 1857; Koenker & Bassett 1982): a generous 100-10,000 for both
        bounds={"income": (100.0, 10000.0), "foodexp": (100.0, 10000.0)},
        levels={}),
    "diabetes_quantreg": dict(
        dataset="diabetes", family="quantreg", formula=DIABETES_FORMULA, loader=load_diabetes,
        # target: scikit-learn's documentation, "Targets: integer 25 - 346"; adult
        # patients' age 18-100; BMI 12-60 (the physiological range); bp, mean arterial
        # pressure in mmHg, 40-160; s5 = ltg, the log of serum triglycerides, for
        # 20-2,000 mg/dL: ln(20) = 3.0 to ln(2000) = 7.6
        bounds={"target": (25.0, 346.0), "age": (18.0, 100.0), "bmi": (12.0, 60.0),
                "bp": (40.0, 160.0), "s5": (3.0, 7.6)},
        levels={"sex": [1, 2]}),
}

FAMILY = {
    "ols": dict(fn="dp_ols", methods=("auto", "histogram", "moments", "sample-aggregate")),
    "logit": dict(fn="dp_logit", methods=("auto", "histogram", "newton", "sample-aggregate",
                                          "projected")),
    "quantreg": dict(fn="dp_quantreg", methods=("auto", "histogram", "newton",
                                                "sample-aggregate")),
    "mnlogit": dict(fn="dp_mnlogit", methods=("auto", "histogram", "sample-aggregate",
                                              "projected")),
}
#: ``select=`` (Vinterbo 2012's projected histogram: PRIVATEKD picks k predictors, the
#: histogram of the response and those is released and the logit fitted on it), a
#: mechanism the logit families name by that keyword, not by ``method=``.  Its estimand is
#: the restricted formula's: a kept coefficient is scored against the full-data fit of the
#: formula the selection left (``truth_of(case, formula)``), a dropped one is not estimated
#: (the results leave it out) and gets no row.
PROJECTED = "projected"
SELECT = "auto"
PEER = "peer-ssp"
#: the method name a release class answers to (what "auto" picked)
RELEASE_METHOD = {"PrivateHistogram": "histogram", "PrivateMoments": "moments",
                  "PrivateNewton": "newton", "PrivateQuantileSteps": "newton",
                  "PrivateSampleAggregate": "sample-aggregate"}
#: --quick: one small case per family
QUICK_CASES = ("engel_quantreg", "anes96_logit", "anes96_mnlogit", "longley_ols")

_DATA: dict = {}
_TRUTH: dict = {}


def data_of(case):
    """The full real data set of a case (cached per process)."""
    key = CASES[case]["loader"].__name__
    if key not in _DATA:
        _DATA[key] = CASES[case]["loader"]()
    return _DATA[key]


# ---------------------------------------------------------------------------
# flattening results; the truth
# ---------------------------------------------------------------------------

def _class_labels(res, k):
    """The response levels of the k non-reference columns of a multinomial
    result: dpmodels' ``response_coding`` (the kept levels, in order; a level
    with no released cell is left out), statsmodels' ``_ynames_map``, else
    positions 1..k."""
    inner = getattr(res, "_results", res)
    coding = getattr(inner, "response_coding", None)
    if coding:
        m = re.search(r"in the order \[(.*?)\]", coding)
        if m:
            kept = [x.strip().strip("'\"") for x in m.group(1).split(",")]
            if len(kept) == k + 1:
                return kept[1:]
    ymap = getattr(getattr(res, "model", None), "_ynames_map", None)
    if isinstance(ymap, dict) and len(ymap) == k + 1:
        return [str(ymap[j]) for j in range(1, k + 1)]
    return [str(j + 1) for j in range(k)]


def flatten(res):
    """(names, est, lo, hi, p) of a fitted result; multinomial names are
    ``'level:name'`` with ``level`` the response level of the column (the
    reference level has none)."""
    params, pv = res.params, res.pvalues
    ci = np.asarray(res.conf_int(0.05), float)
    if ci.ndim == 3:  # (classes, params, 2): dp_mnlogit's sample-aggregate results
        ci = ci.reshape(-1, 2)
    if isinstance(params, pd.DataFrame):
        labels = _class_labels(res, params.shape[1])
        names = [f"{lab}:{nm}" for lab in labels for nm in params.index]
        return (names, np.asarray(params, float).T.ravel(), ci[:, 0], ci[:, 1],
                np.asarray(pv, float).T.ravel())
    return (list(params.index), np.asarray(params, float), ci[:, 0], ci[:, 1],
            np.asarray(pv, float))


def library_name(case, coef):
    """How dpmodels' warnings call a coefficient: ``'name (party=1)'`` for the
    multinomial ``'1:name'``, the name itself otherwise."""
    spec = CASES[case]
    if spec["family"] != "mnlogit":
        return coef
    level, name = coef.split(":", 1)
    return f"{name} ({spec['formula'].split('~')[0].strip()}={level})"


def statsmodels_fit(case, df, formula=None):
    """statsmodels' own fit of the case's formula (or ``formula``, a restriction
    of it) on ``df`` (non-private)."""
    import statsmodels.formula.api as smf

    spec = CASES[case]
    fam, f = spec["family"], formula or spec["formula"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if fam == "ols":
            return smf.ols(f, df).fit()
        if fam == "logit":
            return smf.logit(f, df).fit(disp=0)
        if fam == "quantreg":
            return smf.quantreg(f, df).fit(q=0.5)
        return smf.mnlogit(f, df).fit(disp=0)


def truth_of(case, formula=None):
    """Population coefficients: the non-private fit on the full real data (of
    the case's formula, or of ``formula``, a restriction of it)."""
    key = (case, formula or CASES[case]["formula"])
    if key not in _TRUTH:
        names, est, _, _, _ = flatten(statsmodels_fit(case, data_of(case), formula))
        _TRUTH[key] = dict(zip(names, map(float, est)))
    return _TRUTH[key]


# ---------------------------------------------------------------------------
# the peer reference: sufficient statistics + parametric bootstrap (OLS)
# ---------------------------------------------------------------------------

def _env():
    import patsy

    return patsy.EvalEnvironment([{"np": np}])


def design_domain(case):
    """(design_info_y, design_info_X, lo, hi): the design of the case's formula
    and the public range of every design column (and of the response), from the
    declared bounds and levels only: every column is a monotone transform or a
    product of such transforms of distinct variables, so its extremes lie on the
    corners of the declared box."""
    import patsy

    spec = CASES[case]
    names = sorted(set(spec["bounds"]) | set(spec["levels"]))
    grid = [spec["bounds"][v] if v in spec["bounds"] else spec["levels"][v] for v in names]
    corners = pd.DataFrame(list(itertools.product(*grid)), columns=names)
    for v in spec["levels"]:
        corners[v] = corners[v].astype(type(spec["levels"][v][0]) if spec["levels"][v] else float)
    y, X = patsy.dmatrices(spec["formula"], corners, eval_env=_env(), return_type="dataframe")
    zlo = np.r_[y.to_numpy().min(0), X.to_numpy().min(0)]
    zhi = np.r_[y.to_numpy().max(0), X.to_numpy().max(0)]
    return y.design_info, X.design_info, zlo, zhi


def design_of(case, df):
    """(y, X) of ``df`` under the public design, continuous variables clipped to
    their declared bounds (the row-wise clipping every mechanism applies)."""
    import patsy

    spec = CASES[case]
    yinfo, xinfo, _, _ = design_domain(case)
    d = df.copy()
    for v, (lo, hi) in spec["bounds"].items():
        d[v] = np.clip(d[v].astype(float), lo, hi)
    y, X = patsy.build_design_matrices([yinfo, xinfo], d, return_type="dataframe")
    return y.to_numpy()[:, 0], X


def _psd_floor(M, floor):
    w, V = np.linalg.eigh((M + M.T) / 2)
    return (V * np.maximum(w, floor)) @ V.T


def _ssp_release(Z, eps, rng):
    """Noisy upper triangle of Z'Z (Z = [1, x_1..x_p, y], each non-constant
    column in [-1, 1]); the intercept's own entry is n (public).  One row changes
    the entry (j, k) by at most 2 (j != k) or 1 (j == k, a square in [0, 1]):
    L1 sensitivity = sum of those, Laplace noise of scale sensitivity / eps."""
    return _noisy(Z.T @ Z, eps, rng), _ssp_scale(Z.shape[1], eps)


def _ssp_scale(q, eps):
    iu = np.triu_indices(q)
    free = ~((iu[0] == 0) & (iu[1] == 0))
    return float(np.where(iu[0] == iu[1], 1.0, 2.0)[free].sum()) / eps


def _noisy(S, eps, rng):
    """S (symmetric, q x q) with Laplace noise on its upper triangle but the
    intercept's own entry, mirrored."""
    q = S.shape[0]
    iu = np.triu_indices(q)
    free = ~((iu[0] == 0) & (iu[1] == 0))
    vals = S[iu].astype(float)
    vals[free] += rng.laplace(0.0, _ssp_scale(q, eps), int(free.sum()))
    out = np.zeros((q, q))
    out[iu] = vals
    return out + np.triu(out, 1).T


def _ssp_estimate(S, n, floor):
    """(beta, sigma2) on the rescaled scale from a noisy [1 x y]'[1 x y]."""
    p = S.shape[0] - 1
    XX = _psd_floor(S[:p, :p], floor)
    Xy, yy = S[:p, p], S[p, p]
    b = np.linalg.solve(XX, Xy)
    s2 = (yy - 2 * b @ Xy + b @ XX @ b) / max(n - p, 1)
    return b, max(s2, 1e-6)


#: above this n the bootstrap draws the statistics' sums from their normal
#: approximation (mean and covariance from this many simulated rows)
SSP_EXACT_MAX = 50_000


def _sim_rows(mu, L, b, s2, m, rng):
    """m rows [1, x, y] of the bootstrap population, clipped to [-1, 1]."""
    X = np.clip(mu + rng.standard_normal((m, len(mu))) @ L.T, -1, 1)
    X = np.column_stack([np.ones(m), X])
    y = np.clip(X @ b + rng.normal(0.0, math.sqrt(s2), m), -1, 1)
    return np.column_stack([X, y])


def _boot_stats(S, b, s2, n, eps, rng, n_boot):
    """n_boot noisy statistics of data sets of n rows from the bootstrap
    population: exact simulation up to SSP_EXACT_MAX rows, above it the sum of
    the rows' outer products from its normal approximation (CLT)."""
    p = len(b)
    mu = S[0, 1:p] / n
    cov = _psd_floor(S[1:p, 1:p] / n - np.outer(mu, mu), 1e-9)
    L = np.linalg.cholesky(cov)
    out = []
    if n <= SSP_EXACT_MAX:
        for _ in range(n_boot):
            out.append(_ssp_release(_sim_rows(mu, L, b, s2, n, rng), eps, rng)[0])
        return out
    Z = _sim_rows(mu, L, b, s2, SSP_EXACT_MAX, rng)
    q = Z.shape[1]
    iu = np.triu_indices(q)
    U = Z[:, iu[0]] * Z[:, iu[1]]
    mean, C = U.mean(0), np.cov(U, rowvar=False)
    w, V = np.linalg.eigh(C)
    root = V * np.sqrt(np.maximum(w, 0.0))
    for _ in range(n_boot):
        vals = n * mean + math.sqrt(n) * (root @ rng.standard_normal(len(mean)))
        vals[0] = n  # the intercept's own entry
        M = np.zeros((q, q))
        M[iu] = vals
        M = M + np.triu(M, 1).T
        out.append(_noisy(M, eps, rng))
    return out


def ssp_interval(case, df, eps, rng, n_boot=200, alpha=0.05):
    """The peer reference interval (Ferrando, Wang & Sheldon 2022 style): the
    rescaled sufficient statistics released with Laplace noise under ``eps``,
    OLS from the noisy statistics, and a parametric bootstrap of the whole
    mechanism (covariates Gaussian with the noisy first and second moments,
    clipped to [-1, 1]; errors Gaussian with the noisy residual variance; the
    response clipped; fresh noise of the same scale); basic bootstrap interval.
    Returns (names, est, lo, hi) on the original scale."""
    y, X = design_of(case, df)
    _, _, zlo, zhi = design_domain(case)
    names = list(X.columns)
    Xn = X.to_numpy(float)
    n, p = Xn.shape
    const = np.isclose(zlo, zhi)  # the intercept (and nothing else, by the formulas)
    mid, half = (zlo + zhi) / 2, np.where(const, 1.0, (zhi - zlo) / 2)
    mid = np.where(const, 0.0, mid)
    Z = np.column_stack([(Xn - mid[1:]) / half[1:], (y - mid[0]) / half[0]])
    S, scale = _ssp_release(Z, eps, rng)
    floor = scale  # eigenvalues below the noise scale carry no information
    b, s2 = _ssp_estimate(S, n, floor)
    boots = np.array([_ssp_estimate(Ss, n, floor)[0]
                      for Ss in _boot_stats(S, b, s2, n, eps, rng, n_boot)])
    # back to the original scale: X = [1, mid + half * z], so beta_x = T beta_z
    mx, hx = mid[1:], half[1:]
    T = np.diag(1.0 / hx)
    T[0, 1:] = -mx[1:] / hx[1:]

    def back(v):
        out = half[0] * (T @ v)
        out[0] += mid[0]
        return out

    est = back(b)
    bx = np.array([back(v) for v in boots])
    lo = 2 * est - np.quantile(bx, 1 - alpha / 2, axis=0)
    hi = 2 * est - np.quantile(bx, alpha / 2, axis=0)
    return names, est, lo, hi


# ---------------------------------------------------------------------------
# one replicate
# ---------------------------------------------------------------------------

_NAME_CHARS = r"A-Za-z0-9_.:\[\]"


def names_in(text, coef):
    """Whether ``coef`` appears in ``text`` as a whole name (``age`` is not
    named by ``age:children``, ``popul`` not by ``np.log1p(popul)``;
    ``YEAR: the ...`` and ``(Intercept, ...)`` name theirs)."""
    pat = (rf"(?<![{_NAME_CHARS}])(?<![A-Za-z0-9_.]\(){re.escape(coef)}"
           r"(?![A-Za-z0-9_(\[\]])(?![.:][A-Za-z0-9_(])")
    return re.search(pat, text) is not None


def _error_text(exc):
    words = " ".join(str(exc).split()[:8])
    return f"{type(exc).__name__}: {words}"[:120]


def run_method(case, df, eps, method, seeds):
    """One release and default fit: dict(names, est, lo, hi, p, error, picked,
    warnings, seconds)."""
    spec = CASES[case]
    fn = getattr(dpm, FAMILY[spec["family"]]["fn"])
    out = dict(error="", picked="", warnings=[], formula=None)
    how = dict(select=SELECT) if method == PROJECTED else dict(method=method)
    t0 = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            model = fn(spec["formula"], df, epsilon=eps, bounds=spec["bounds"],
                       levels=spec["levels"], random_state=seeds[0], **how)
            out["picked"] = f"{type(model).__name__}/{type(model.release).__name__}"
            if method == PROJECTED:
                out["formula"] = model.formula
            res = model.fit(random_state=seeds[1])
            out["names"], out["est"], out["lo"], out["hi"], out["p"] = flatten(res)
        except Exception as exc:  # noqa: BLE001  (a failure is a result, recorded)
            out["error"] = _error_text(exc)
    out["warnings"] = [str(w.message) for w in caught if issubclass(w.category, ReleaseWarning)]
    out["seconds"] = time.perf_counter() - t0
    return out


def _nonprivate(case, df, formula=None):
    try:
        names, est, lo, hi, _ = flatten(statsmodels_fit(case, df, formula))
        return {c: (e, a, b) for c, e, a, b in zip(names, est, lo, hi)}
    except Exception:  # noqa: BLE001
        return {}


def methods_of(case, chosen=None):
    fam = CASES[case]["family"]
    ms = list(FAMILY[fam]["methods"]) + ([PEER] if fam == "ols" else [])
    return [m for m in ms if chosen is None or m in chosen]


def one_rep(task):
    """All methods on one resample: a list of CSV rows (one per method x coefficient)."""
    case, mult, eps, rep, seed, chosen, alias = task
    spec = CASES[case]
    full = data_of(case)
    truth = truth_of(case)
    ss = np.random.SeedSequence(seed)
    s_data, s_rel, s_fit, s_peer = ss.spawn(4)
    n = mult * len(full)
    idx = np.random.default_rng(s_data).integers(0, len(full), n)
    df = full.iloc[idx].reset_index(drop=True)
    seeds = (int(s_rel.generate_state(1)[0]), int(s_fit.generate_state(1)[0]))
    npd = _nonprivate(case, df)
    results = {}
    for m in methods_of(case, chosen):
        if m == PEER:
            t0 = time.perf_counter()
            try:
                names, est, lo, hi = ssp_interval(case, df, eps, np.random.default_rng(s_peer))
                r = dict(error="", picked="", warnings=[], names=names, est=est, lo=lo, hi=hi,
                         p=np.full(len(names), np.nan))
            except Exception as exc:  # noqa: BLE001
                r = dict(error=_error_text(exc), picked="", warnings=[])
            r["seconds"] = time.perf_counter() - t0
        elif alias and m != "auto" and "auto" in results and \
                RELEASE_METHOD.get(results["auto"]["picked"].split("/")[-1]) == m:
            r = dict(results["auto"], alias=True)
        else:
            r = run_method(case, df, eps, m, seeds)
        results[m] = r
    rows = []
    for m, r in results.items():
        text = "\n".join(r["warnings"])
        m_truth, m_npd = truth, npd
        if r.get("formula"):  # the projected fit: the restricted formula's estimand
            m_truth, m_npd = truth_of(case, r["formula"]), _nonprivate(case, df, r["formula"])
        for coef, tv in m_truth.items():
            row = dict(case=case, dataset=spec["dataset"], family=spec["family"], n_mult=mult,
                       n=n, eps=eps, rep=rep, seed=seed, method=m, picked=r["picked"],
                       alias=bool(r.get("alias", False)), coef=coef, truth=tv,
                       error=r["error"], seconds=r["seconds"],
                       release_warn=len(r["warnings"]) > 0,
                       named=names_in(text, library_name(case, coef)),
                       np_est=m_npd.get(coef, (np.nan,) * 3)[0],
                       np_lo=m_npd.get(coef, (np.nan,) * 3)[1],
                       np_hi=m_npd.get(coef, (np.nan,) * 3)[2])
            if not r["error"]:
                if coef in r["names"]:
                    j = r["names"].index(coef)
                    row.update(est=r["est"][j], lo=r["lo"][j], hi=r["hi"][j], p=r["p"][j])
                else:  # the fit left it out (a response level with no released cell)
                    row["error"] = "absent: left out of the fit"
            if row["named"] and not np.isfinite(row.get("hi", 0) - row.get("lo", 0)):
                row["reason"] = next((" ".join(w.split()[:14]) for w in r["warnings"]
                                      if names_in(w, library_name(case, coef))), "")
            rows.append(row)
    return rows


COLUMNS = ["case", "dataset", "family", "n_mult", "n", "eps", "rep", "seed", "method", "picked",
           "alias", "coef", "truth", "error", "seconds", "release_warn", "named", "reason",
           "est", "lo", "hi", "p", "np_est", "np_lo", "np_hi"]


# ---------------------------------------------------------------------------
# summaries
# ---------------------------------------------------------------------------

def _beyond_mc(k, m, p0, worse="above"):
    """One-sided binomial test at 5% that the rate k/m is worse than p0."""
    from scipy import stats

    if m == 0:
        return False
    if worse == "above":
        return bool(stats.binom.sf(k - 1, m, p0) < 0.05)
    return bool(stats.binom.cdf(k, m, p0) < 0.05)


def _fail_types(errors):
    errs = errors[errors != ""]
    if not len(errs):
        return ""
    kinds = errs.str.split(":").str[0].value_counts()
    return ", ".join(f"{k} x{v}" for k, v in kinds.items())


def summarize(raw):
    """One row per (case, n_mult, eps, method, coefficient)."""
    raw = raw.copy()
    raw["error"] = raw["error"].astype(object).fillna("").astype(str)
    out = []
    keys = ["case", "n_mult", "eps", "method", "coef"]
    for (case, mult, eps, m, coef), g in raw.groupby(keys, sort=False):
        ok = g[g["error"] == ""]
        k = len(ok)
        # one truth per cell, except for the projected fits: each replicate's own
        # (the full-data fit of the formula its selection left)
        t = ok["truth"].astype(float)
        truth = float((t if k else g["truth"].astype(float)).median())
        lo, hi, est = ok["lo"].astype(float), ok["hi"].astype(float), ok["est"].astype(float)
        p = ok["p"].astype(float)
        width = hi - lo
        inf = ~np.isfinite(width)
        cover = (lo <= t) & (t <= hi)
        # significant: p < 0.05 or (no p-value: the peer) the interval excludes 0
        sig = (p < 0.05) | (p.isna() & ((lo > 0) | (hi < 0)))
        wrong = sig & (((t > 0) & ((est < 0) | (hi < 0)))
                       | ((t < 0) & ((est > 0) | (lo > 0))))
        npw = (ok["np_hi"] - ok["np_lo"]).astype(float)
        ratio = (width / npw).where(npw > 0)
        row = dict(case=case, n_mult=int(mult), n=int(g["n"].iloc[0]), eps=float(eps), method=m,
                   coef=coef, truth=truth, reps=len(g), ok=k, fail=len(g) - k,
                   fail_types=_fail_types(g["error"]),
                   picked=", ".join(sorted(set(g["picked"].astype(object).fillna("").astype(str))
                                           - {""})),
                   sign_k=int(wrong.sum()),
                   cover_k=int(cover.sum()), inf_k=int(inf.sum()),
                   unnamed_inf=int((inf & ~ok["named"].astype(bool)).sum()),
                   named=float(g["named"].astype(bool).mean()),
                   width=float(ratio.median()) if ratio.notna().any() else np.nan,
                   seconds=float(g.drop_duplicates("rep")["seconds"].mean()))
        row["sign"] = row["sign_k"] / k if (k and truth != 0) else np.nan
        row["cover"] = row["cover_k"] / k if k else np.nan
        row["inf"] = row["inf_k"] / k if k else np.nan
        out.append(row)
    return _ordered(pd.DataFrame(out))


METHOD_ORDER = ("auto", "histogram", "moments", "newton", "sample-aggregate", PROJECTED, PEER)


def _ordered(summary):
    """Rows in the order of CASES, n, epsilon, METHOD_ORDER (the coefficients'
    own order kept)."""
    if not len(summary):
        return summary
    cases = {c: i for i, c in enumerate(CASES)}
    meths = {m: i for i, m in enumerate(METHOD_ORDER)}
    key = pd.DataFrame({"c": summary["case"].map(cases).fillna(len(cases)),
                        "m": summary["method"].map(meths).fillna(len(meths)),
                        "i": np.arange(len(summary))})
    idx = np.lexsort((key["i"], key["m"], summary["eps"], summary["n_mult"], key["c"]))
    return summary.iloc[idx].reset_index(drop=True)


def violations(r):
    """The goals a coefficient-cell misses (``*``: beyond Monte Carlo error)."""
    v = []
    if np.isfinite(r["sign"]) and r["sign"] > GOALS["sign"]:
        v.append("sign" + ("*" if _beyond_mc(r["sign_k"], r["ok"], GOALS["sign"]) else ""))
    if np.isfinite(r["cover"]) and r["cover"] < GOALS["cover"]:
        v.append("cover" + ("*" if _beyond_mc(r["cover_k"], r["ok"], GOALS["cover"], "below")
                            else ""))
    if r["unnamed_inf"] > 0:
        v.append("unnamed-inf")
    if r["ok"] == 0:
        v.append("no-fit")
    return v


def cell_summary(summary):
    """One row per (case, n_mult, eps, method): the worst coefficient and pass/fail."""
    out = []
    for (case, mult, eps, m), s in summary.groupby(["case", "n_mult", "eps", "method"],
                                                   sort=False):
        byv = {}
        for _, r in s.iterrows():
            for x in violations(r):
                byv.setdefault(x, []).append(str(r["coef"]))
        hard = [x for x in byv if x.endswith("*") or x in ("unnamed-inf", "no-fit")]
        out.append(dict(
            case=case, n_mult=int(mult), n=int(s["n"].iloc[0]), eps=float(eps), method=m,
            picked=s["picked"].iloc[0], reps=int(s["reps"].max()), coefs=len(s),
            max_sign=s["sign"].max(), min_cover=s["cover"].min(), max_inf=s["inf"].max(),
            # the share of finite intervals over every fitted (replicate, coefficient)
            finite=(1.0 - s["inf_k"].sum() / s["ok"].sum()) if s["ok"].sum() else np.nan,
            median_width=s["width"].median(), fail=int(s["fail"].max()),
            fail_types=s.sort_values("fail")["fail_types"].iloc[-1],
            seconds=s["seconds"].mean(),
            verdict="fail" if hard else ("pass (within MC)" if byv else "pass"),
            violations="; ".join(f"{x}: {' '.join(c)}" for x, c in sorted(byv.items()))))
    return pd.DataFrame(out)


#: a method counts as valid in a cell (for the narrowest-valid comparison) only
#: with at least this many replicates: five replicates miss no goal beyond MC error
MIN_REPS_VALID = 20


def peer_table(summary):
    """OLS cells: each method's median width relative to the narrowest interval
    (median width ratio) among those that meet the goals in the cell (at most a
    miss within Monte Carlo error, at least MIN_REPS_VALID replicates)."""
    cells = cell_summary(summary)
    ols = cells[cells["case"].map(lambda c: CASES[c]["family"] == "ols")]
    out = []
    for (case, mult, eps), s in ols.groupby(["case", "n_mult", "eps"], sort=False):
        valid = s[s["verdict"].str.startswith("pass") & np.isfinite(s["median_width"])
                  & (s["reps"] >= MIN_REPS_VALID)]
        best = valid.loc[valid["median_width"].idxmin()] if len(valid) else None
        for _, r in s.iterrows():
            out.append(dict(case=case, n_mult=int(mult), eps=float(eps), method=r["method"],
                            verdict=r["verdict"], reps=r["reps"], median_width=r["median_width"],
                            min_cover=r["min_cover"],
                            narrowest=best["method"] if best is not None else "-",
                            vs_narrowest=(r["median_width"] / best["median_width"]
                                          if best is not None else np.nan)))
    return pd.DataFrame(out)


def compact(summary):
    """One line per (case, method), one column per (n, epsilon): the lowest
    coverage / the highest sign-error rate over the coefficients (percent), the
    replicates (and how many failed: refused or raised), the verdict (ok:
    every goal met; ~: missed within Monte Carlo error; FAIL: missed beyond it,
    an unnamed infinite interval, or no fit) and the share of finite intervals
    (what the release lets the analyst say)."""
    cells = cell_summary(summary)
    cols = sorted({(r["n_mult"], r["eps"]) for _, r in cells.iterrows()})
    mark = {"pass": "ok", "pass (within MC)": "~", "fail": "FAIL"}
    lines = ["| case | method | auto picks | " + " | ".join(f"n x{m}, eps {e:g}" for m, e in cols)
             + " |", "|---" * (3 + len(cols)) + "|"]
    for (case, m), s in cells.groupby(["case", "method"], sort=False):
        by = {(r["n_mult"], r["eps"]): r for _, r in s.iterrows()}
        ents = []
        for c in cols:
            r = by.get(c)
            if r is None:
                ents.append("not run")
                continue
            fails = f", {r['fail']} failed" if r["fail"] else ""
            ents.append(f"{_pct(r['min_cover'])} / {_pct(r['max_sign'])} ({r['reps']}{fails}) "
                        f"{mark[r['verdict']]}, {_pct(r['finite'], 0)}% finite")
        picked = s["picked"].iloc[0] if m == "auto" else ""
        lines.append(f"| {case} | {m} | {picked.split('/')[-1] if picked else ''} | "
                     + " | ".join(ents) + " |")
    return "\n".join(lines)


def _pct(x, digits=1):
    return "-" if x is None or not np.isfinite(x) else f"{100 * x:.{digits}f}"


def _w(x):
    if x is None or np.isnan(x):
        return "-"
    if np.isinf(x):
        return "inf"
    return f"{x:.2f}" if x < 100 else f"{x:.3g}"


def markdown(summary, detail=True):
    cells = cell_summary(summary)
    parts = ["\n### Overview: min coverage / max sign error, % (replicates) verdict\n",
             compact(summary),
             "\n### Per cell (worst coefficient)\n",
             "| case | n | eps | method | auto picked | reps | coefs | max sign err | min cover | "
             "max inf | median width | fail | verdict | violations |", "|---" * 14 + "|"]
    for _, r in cells.iterrows():
        fail = f"{r['fail']}" + (f" ({r['fail_types']})" if r["fail"] else "")
        parts.append(
            f"| {r['case']} | {r['n']} | {r['eps']:g} | {r['method']} | {r['picked'] or '-'} | "
            f"{r['reps']} | {r['coefs']} | {_pct(r['max_sign'])} | {_pct(r['min_cover'])} | "
            f"{_pct(r['max_inf'])} | {_w(r['median_width'])} | {fail} | {r['verdict']} | "
            f"{r['violations'] or '-'} |")
    peers = peer_table(summary)
    if len(peers):
        parts += ["\n### OLS: width against the narrowest valid interval\n",
                  "| case | n x | eps | method | reps | verdict | min cover | median width | "
                  "narrowest valid | x narrowest |", "|---" * 10 + "|"]
        for _, r in peers.iterrows():
            parts.append(f"| {r['case']} | {r['n_mult']} | {r['eps']:g} | {r['method']} | "
                         f"{r['reps']} | {r['verdict']} | {_pct(r['min_cover'])} | "
                         f"{_w(r['median_width'])} | "
                         f"{r['narrowest']} | {_w(r['vs_narrowest'])} |")
    if detail:
        head = ("| n | eps | method | coef | truth | reps | fail | sign err | cover | inf | "
                "named | unnamed inf | width | violations |\n" + "|---" * 14 + "|")
        for case, s in summary.groupby("case", sort=False):
            lines = [f"\n### {case}: every coefficient\n", head]
            for _, r in s.iterrows():
                lines.append(
                    f"| {r['n']} | {r['eps']:g} | {r['method']} | {r['coef']} | {r['truth']:.4g} | "
                    f"{r['reps']} | {r['fail']} | {_pct(r['sign'])} | {_pct(r['cover'])} | "
                    f"{_pct(r['inf'])} | {_pct(r['named'])} | {r['unnamed_inf']} | "
                    f"{_w(r['width'])} | {' '.join(violations(r)) or 'ok'} |")
            parts.append("\n".join(lines))
    return "\n".join(parts)


def timing(raw):
    """Mean seconds per replicate of each (case, method, n) (release and default
    fit; rows reusing auto's fit left out) and the core-hours of 100 replicates
    at three epsilons."""
    raw = raw[~raw["alias"].astype(bool)].drop_duplicates(["case", "n_mult", "eps", "rep",
                                                          "method"])
    t = raw.groupby(["case", "method", "n_mult"], sort=False)["seconds"].agg(["mean", "size"])
    lines = ["| case | method | n x | seconds per replicate | replicates timed |",
             "|---|---|---|---|---|"]
    total = 0.0
    for (case, m, mult), r in t.iterrows():
        lines.append(f"| {case} | {m} | {mult} | {r['mean']:.2f} | {int(r['size'])} |")
        total += r["mean"] * 300
    lines.append(f"\n100 replicates x 3 epsilons of every timed row: {total / 3600:.1f} "
                 "core-hours")
    return "\n".join(lines)


def report(raw, table_path=None, detail=True):
    summary = summarize(raw)
    text = markdown(summary, detail) + "\n\n### Seconds per replicate\n\n" + timing(raw)
    print(text)
    if table_path:
        with open(table_path, "w") as fh:
            fh.write(text + "\n")
    return summary


# ---------------------------------------------------------------------------
# driver
# ---------------------------------------------------------------------------

def task_seed(base, case, mult, eps, rep):
    """The replicate's seed: from --seed, the case, n, epsilon and the replicate."""
    return int(np.random.SeedSequence([base, zlib.crc32(case.encode()), mult,
                                       int(round(eps * 1000)), rep]).generate_state(1)[0])


def estimate(cases, mults, epss, reps, chosen, seed):
    """Time one replicate of each (case, method, n) at epsilon 1 and print the
    estimated run time of the whole grid."""
    total = 0.0
    print("| case | n | method | seconds per replicate |\n|---|---|---|---|")
    for case in cases:
        for mult in mults:
            task = (case, mult, 1.0, 0, task_seed(seed, case, mult, 1.0, 0), chosen, True)
            rows = pd.DataFrame(one_rep(task)).drop_duplicates("method")
            for _, r in rows.iterrows():
                secs = 0.0 if r["alias"] else r["seconds"]
                total += secs * reps * len(epss)
                print(f"| {case} | {r['n']} | {r['method']}"
                      f"{' (= auto)' if r['alias'] else ''} | {secs:.2f} |", flush=True)
    print(f"\nestimated grid: {total / 3600:.1f} core-hours for {reps} replicates x "
          f"{len(epss)} epsilons")
    return total


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cases", nargs="+", default=None, choices=list(CASES))
    ap.add_argument("--methods", nargs="+", default=None,
                    help="subset of auto, histogram, moments, newton, sample-aggregate, projected, peer-ssp")
    ap.add_argument("--n-mult", nargs="+", type=int, default=None,
                    help="n = data size x this (default 1 10)")
    ap.add_argument("--eps", nargs="+", type=float, default=None)
    ap.add_argument("--reps", type=int, default=None, help="replicates per cell (default 100)")
    ap.add_argument("--first-rep", type=int, default=0)
    ap.add_argument("--seed", type=int, default=26)
    ap.add_argument("--jobs", type=int, default=1, help="worker processes (at most 2)")
    ap.add_argument("--no-alias", action="store_true",
                    help="run the named method auto picked again instead of reusing auto's fit")
    ap.add_argument("--quick", action="store_true",
                    help="one small case per family, n x1, eps 1, 5 replicates")
    ap.add_argument("--estimate", action="store_true",
                    help="time one replicate per (case, method, n) and estimate the grid")
    ap.add_argument("--out", default=os.path.join(RESULTS, "real_validity_rows.csv"))
    ap.add_argument("--table", default=None, help="also write the markdown tables here")
    ap.add_argument("--brief", action="store_true", help="cell tables only, no per-coefficient")
    ap.add_argument("--from-csv", nargs="+", default=None, help="tabulate these CSVs only")
    args = ap.parse_args(argv)
    if args.from_csv:
        raw = pd.concat([pd.read_csv(f, low_memory=False) for f in args.from_csv], ignore_index=True)
        if args.cases:
            raw = raw[raw["case"].isin(args.cases)]
        return report(raw, args.table, not args.brief)
    cases = args.cases or (list(QUICK_CASES) if args.quick else list(CASES))
    mults = args.n_mult or ([1] if args.quick else [1, 10])
    epss = args.eps or ([1.0] if args.quick else [0.3, 1.0, 3.0])
    reps = args.reps or (5 if args.quick else 100)
    if args.estimate:
        return estimate(cases, mults, epss, reps, args.methods, args.seed)
    tasks = [(c, m, e, r, task_seed(args.seed, c, m, e, r), args.methods, not args.no_alias)
             for m in mults for c in cases for e in epss
             for r in range(args.first_rep, args.first_rep + reps)]
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    header = not os.path.exists(args.out)
    jobs = max(1, min(2, args.jobs))
    t0 = time.perf_counter()
    rows = []
    pool = Pool(jobs) if jobs > 1 else None
    it = pool.imap(one_rep, tasks) if pool else map(one_rep, tasks)
    try:
        for i, out in enumerate(it):
            rows.extend(out)
            pd.DataFrame(out).reindex(columns=COLUMNS).to_csv(args.out, mode="a", header=header,
                                                              index=False)
            header = False
            if (i + 1) % 10 == 0:
                print(f"  {i + 1}/{len(tasks)} replicates, {time.perf_counter() - t0:.0f} s",
                      file=sys.stderr, flush=True)
    finally:
        if pool:
            pool.close()
            pool.join()
    print(f"\n{len(tasks)} replicates in {time.perf_counter() - t0:.0f} s", file=sys.stderr)
    return report(pd.DataFrame(rows).reindex(columns=COLUMNS), args.table, not args.brief)


if __name__ == "__main__":
    main()
