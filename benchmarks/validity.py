"""Validity stress suite (issue 12, "No false discoveries").

What it measures
----------------
Scenarios with KNOWN population coefficients.  Every grid cell (scenario, n,
epsilon) simulates ``--reps`` fresh data sets from the population (each seeded
deterministically from ``--seed``, the scenario, n, epsilon and the replicate
number), makes one release with the public bounds and levels of the
population's *definition* (never of the sample), and fits the model twice:

* ``fit()`` with default arguments (``cov_type="dp"``: the noise-aware
  parametric bootstrap, B = 200, default interval), seeded only through
  ``random_state`` so that runs are reproducible;
* ``fit(cov_type="naive")``, the contrast;

and also fits statsmodels on the raw (non-private) sample, for the width
reference.  For every coefficient of every cell it reports, for dp and naive:

* ``sign err``: share of data sets where the coefficient is significant at 5%
  (p < 0.05) with the wrong sign (the printed estimate has the opposite sign of
  the population value, or the 95% interval lies entirely on the wrong side
  of 0) -- only for non-zero population values; goal <= 2.5%;
* ``cover``: share of 95% intervals containing the population coefficient;
  goal >= 90%;
* ``null rej``: for a population value of exactly 0, share with p < 0.05;
  goal <= 5% (plus Monte Carlo error);
* ``width``: median over data sets of (dp or naive interval width) /
  (statsmodels interval width on the raw sample);
* ``dp inf``: share of infinite dp intervals (the library's "no information
  about this coefficient" verdict: p = 1); they count as covering, so read
  ``cover`` beside ``dp inf`` and ``width``;
* ``fail``: fits that raised (DPModelsError, SeparationError, ...); they are
  left out of the shares above (a failure is a refusal, not a false claim) and
  counted; ``warn``: share of data sets whose release or dp fit issued a
  ``ReleaseWarning`` (incl. ``SeparationWarning``); ``binflag``: share where
  the dp binning check flagged the coefficient.

Rates are over the successful fits.  A goal violation is marked in the summary
rows; a ``*`` marks one that is beyond Monte Carlo error (one-sided binomial
test at 5% against the goal's boundary).

"Information-free" coefficients (the coefficient of a declared level with no
rows, and of a level with 20 rows) are reported separately: share of data sets
with p < 0.05 (dp and naive), median p, share with a finite interval, median
width, and share where a warning or an inference note names the level.  The
goal is: never significant, non-finite or very wide interval, a warning that
names it.

Scenarios (the population and how its coefficients are known)
--------------------------------------------------------------
All errors are symmetric, independent of the covariates, and truncated at a
few SDs, so the OLS / median coefficients are exactly the generating ones and
every variable lies inside its declared bounds (nothing is clipped by the
library).

* ``linear``   y ~ x + C(g): x ~ U(0,10), g in {a,b,c} (0.4/0.35/0.25),
  y = 1 + 0.5x + 1.0[b] + 0[c] + N(0,1.5^2) truncated at 5 SD.
* ``cont5``    y ~ x1..x5: x_j = N(0,1) winsorized at +-3, slopes
  (1, .5, -.5, .25, 0), intercept .5, N(0,1) errors truncated at +-4;
  y bounds are the exact range of the definition (-10.25, 11.25).
* ``cont10``   y ~ x1..x10: x_j ~ U(0,1), slopes 1 (x1..x9) and 0 (x10),
  intercept 0, N(0,1) errors truncated at +-4; y in (-4, 13).
* ``logskew``  y ~ np.log1p(x) + z: x = lognormal(0,1) winsorized at 50
  (bounds (0, 50)), z ~ U(0,1); y = 1 + 1.0 log1p(x) + 0 z + N(0,1)
  truncated at +-4.
* ``empty_level`` ``linear`` with a fourth declared level "ghost" that has no
  rows (the information-free coefficient C(g)[T.ghost]).
* ``rare_level``  ``linear`` with a fourth level "rare" holding exactly 20
  rows, with population effect 0 (reported in the main table as a zero
  coefficient AND in the information table).
* ``housing40`` / ``housing3``  price ~ size + year + C(county) + C(flag),
  bins=40 / bins=3: the generator of ``dpm.datasets.housing`` (its private
  ``_draw``/``_select``) with ONE fixed generating vector (calibrated once by
  the generator's own fixed-point iteration on 1e6 rows), plus an independent
  fair coin ``flag`` (population coefficient exactly 0).  The population
  coefficients are the OLS projection of a huge sample (``--housing-truth-n``,
  default 1e7 rows in chunks; its standard error is about 0.14 SE of an
  n = 2e5 fit), cached in benchmarks/results/validity_housing_truth.json.
  Bounds are the definition's: price (1e5, 9e5), size (0, 3000).
* ``logit4``   y ~ x1 + x2 + x3 + C(d): x1, x2 ~ U(-1,1), x3 ~ U(0,1),
  d in {no, yes}; logit(P(y=1)) = -0.5 + x1 - 0.5 x2 + 0 x3 + 0.7[yes];
  simulated from the model, so the coefficients are known.
* ``median4``  same covariates, y = 1 + x1 - 0.5 x2 + 0 x3 + 0.7[yes] +
  Laplace(0,1) truncated at +-6; dp_quantreg(q=0.5): with symmetric errors
  the conditional median is the linear predictor.
* ``mnlogit``  y in {0,1,2} ~ x1 + x2 (U(-1,1)); class 1 vs 0:
  (0, 1, 0); class 2 vs 0: (-0.5, -1, 0.5); simulated from the model.
* ``randhie``  the issue's real data set: statsmodels' ``randhie`` (20,190
  rows), ``mdvis`` on 9 covariates (4 binary), bounds from the variables'
  definitions (as benchmarks/peers.py).  The population is the data set
  itself (its empirical law): each data set is n rows drawn with
  replacement, and the population coefficients are the OLS fit on all
  20,190 rows.
* ``randhie_rare``  the same data, ``mdvis ~ lncoins + C(hlthp)`` on the
  histogram (``method="histogram"``) with ``bins={"mdvis": 100}`` (one bin
  per visit, as a user following the binning warning might ask): hlthp = 1
  holds 1.5% of the rows, so spurious cells at high mdvis in its stratum
  carry its coefficient.  mdvis is a count: its bounds (-0.5, 99.5) centre
  the bins on the integers (with bounds (0, 100) every row sits at the left
  edge of its bin and the intercept is half a visit off whatever the
  population; docs/inference.md).  Population coefficients: the OLS fit on
  all rows.

How to run (from the repository root)
-------------------------------------
::

    python benchmarks/validity.py --quick                 # n in {2e3, 2e4}, eps = 1, 20 reps
    python benchmarks/validity.py                         # full grid, 200 reps (days)
    python benchmarks/validity.py --scenarios linear cont5 empty_level \
        --n 20000 --eps 1 --reps 100 --jobs 2
    python benchmarks/validity.py --from-csv benchmarks/results/validity.csv   # tables only

Rows are appended to ``--out`` (default benchmarks/results/validity.csv) as
each data set finishes, so an interrupted run keeps what it computed and
``--from-csv`` tables it.  ``--jobs`` (default 1, at most 2) worker processes.

Run time on this machine (2 cores)
----------------------------------
Seconds per data set for the release, the dp fit and the naive fit (the
CSV's ``seconds``; drawing the data and the statsmodels fit come on top),
n = 2e3 / 2e4 / 2e5, one core: the moments scenarios (linear, cont5, cont10,
logskew, empty/rare level, randhie, and housing40, which ``method="auto"``
takes off its sparse 40-bin grid) 0.03-0.12 / 0.05-0.1 / 0.1-0.3; logit4
0.6 / 0.3 / 0.6; housing3 1.0 / 1.0 / 1.1; median4 1.0 / 1.0 / 1.1; mnlogit
0.6 / 1.4 / 2.2.  At n = 2e5 drawing housing-like data takes about 2 s more.

* ``--quick``: about 3 minutes with ``--jobs 2``.
* The grid of ``docs/inference.md`` (12 scenarios x 3 n x 3 epsilon;
  200 data sets per cell, 100 for median4 and mnlogit and for every cell at
  n = 2e5 but cont10's epsilon 0.3, which has 200; 73 for mnlogit and 30 for
  housing40 at n = 2e5, epsilon 3, where a fit takes 5-55 s): about 75
  minutes of wall time as five processes on 2 cores.  The commands, in one output file::

    python benchmarks/validity.py --n 2000 20000 --reps 200 \
        --scenarios linear cont5 cont10 logskew empty_level rare_level housing40 housing3 logit4 randhie
    python benchmarks/validity.py --n 200000 --reps 100 \
        --scenarios linear cont5 cont10 logskew empty_level rare_level housing40 housing3 logit4 randhie
    python benchmarks/validity.py --reps 100 --scenarios median4 mnlogit

  (with ``--out`` the same file and ``--jobs`` as the machine allows; the data
  sets are seeded by cell and number, so splitting a run across processes,
  or adding data sets later with ``--first-rep``, gives the same rows).  The
  merged rows are ``benchmarks/results/validity_grid.csv.gz``; tabulate them
  with ``--from-csv``.

  A second round (after the histogram bootstrap's two-population default and
  the moments' floor-shrinkage diagnostic) replaced the rows of the cells
  those changes touch, about 45 minutes on 2 cores::

    python benchmarks/validity.py --n 2000 --reps 200 --jobs 2 \
        --scenarios cont10 housing40 cont5 linear logskew empty_level rare_level randhie
    python benchmarks/validity.py --n 20000 --reps 100 --jobs 2 \
        --scenarios cont10 housing40 cont5 linear logskew empty_level rare_level randhie
    python benchmarks/validity.py --scenarios housing3 --reps 200   # 100 at n = 2e5
    python benchmarks/validity.py --scenarios mnlogit --reps 100
    python benchmarks/validity.py --scenarios housing40 --n 200000 --eps 3 --reps 30

  and ``benchmarks/results/validity_population_randhie_rare.csv.gz`` holds
  randhie_rare at n = 2e4 (40 data sets per epsilon) with the default
  population and with ``--population smooth``.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
import warnings
import zlib
from multiprocessing import Pool

import numpy as np
import pandas as pd

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import dpmodels as dpm  # noqa: E402
from dpmodels.front import datasets as _ds  # noqa: E402
from dpmodels.core.errors import ReleaseWarning, SeparationWarning  # noqa: E402

RESULTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results")


def _tnorm(rng, size, sd, cut):
    """N(0, sd^2) truncated at +-cut*sd (redrawn), symmetric: mean and median 0."""
    e = rng.normal(0.0, sd, size)
    bad = np.abs(e) > cut * sd
    while bad.any():
        e[bad] = rng.normal(0.0, sd, bad.sum())
        bad = np.abs(e) > cut * sd
    return e


def _tlaplace(rng, size, scale, cut):
    e = rng.laplace(0.0, scale, size)
    bad = np.abs(e) > cut
    while bad.any():
        e[bad] = rng.laplace(0.0, scale, bad.sum())
        bad = np.abs(e) > cut
    return e


# ---------------------------------------------------------------------------
# scenarios
# ---------------------------------------------------------------------------

def draw_linear(rng, n, extra=None):
    x = rng.uniform(0, 10, n)
    g = rng.choice(np.array(["a", "b", "c"], dtype=object), n, p=[0.4, 0.35, 0.25])
    if extra == "rare":  # exactly 20 rows in level "rare" (population effect 0)
        g[rng.choice(n, 20, replace=False)] = "rare"
    y = 1.0 + 0.5 * x + 1.0 * (g == "b") + 0.0 * (g == "c") + _tnorm(rng, n, 1.5, 5.0)
    return pd.DataFrame({"y": y, "x": x, "g": g})


B5 = np.array([1.0, 0.5, -0.5, 0.25, 0.0])


def draw_cont5(rng, n):
    X = np.clip(rng.standard_normal((n, 5)), -3, 3)
    y = 0.5 + X @ B5 + _tnorm(rng, n, 1.0, 4.0)
    df = pd.DataFrame(X, columns=[f"x{j}" for j in range(1, 6)])
    df["y"] = y
    return df


B10 = np.r_[np.ones(9), 0.0]


def draw_cont10(rng, n):
    X = rng.uniform(0, 1, (n, 10))
    y = X @ B10 + _tnorm(rng, n, 1.0, 4.0)
    df = pd.DataFrame(X, columns=[f"x{j}" for j in range(1, 11)])
    df["y"] = y
    return df


def draw_logskew(rng, n):
    x = np.minimum(rng.lognormal(0.0, 1.0, n), 50.0)
    z = rng.uniform(0, 1, n)
    y = 1.0 + 1.0 * np.log1p(x) + 0.0 * z + _tnorm(rng, n, 1.0, 4.0)
    return pd.DataFrame({"y": y, "x": x, "z": z})


def _cov4(rng, n):
    return (rng.uniform(-1, 1, n), rng.uniform(-1, 1, n), rng.uniform(0, 1, n),
            rng.choice(np.array(["no", "yes"], dtype=object), n))


def draw_logit4(rng, n):
    x1, x2, x3, d = _cov4(rng, n)
    eta = -0.5 + x1 - 0.5 * x2 + 0.0 * x3 + 0.7 * (d == "yes")
    y = (rng.random(n) < 1 / (1 + np.exp(-eta))).astype(np.int64)
    return pd.DataFrame({"y": y, "x1": x1, "x2": x2, "x3": x3, "d": d})


def draw_median4(rng, n):
    x1, x2, x3, d = _cov4(rng, n)
    y = 1.0 + x1 - 0.5 * x2 + 0.0 * x3 + 0.7 * (d == "yes") + _tlaplace(rng, n, 1.0, 6.0)
    return pd.DataFrame({"y": y, "x1": x1, "x2": x2, "x3": x3, "d": d})


def _randhie():
    from statsmodels.datasets import randhie

    cols = ["mdvis", "lncoins", "idp", "lpi", "fmde", "physlm", "disea", "hlthg", "hlthf",
            "hlthp"]
    data = randhie.load_pandas().data[cols].copy()
    for v in ("idp", "hlthg", "hlthf", "hlthp"):
        data[v] = data[v].astype(np.int64)
    return data


RANDHIE_FORMULA = "mdvis ~ lncoins + idp + lpi + fmde + physlm + disea + hlthg + hlthf + hlthp"
RANDHIE_RARE_FORMULA = "mdvis ~ lncoins + C(hlthp)"


def draw_randhie(rng, n):
    data = _randhie()
    return data.iloc[rng.integers(0, len(data), n)].reset_index(drop=True)


MN = {1: (0.0, 1.0, 0.0), 2: (-0.5, -1.0, 0.5)}


def draw_mnlogit(rng, n):
    x1, x2 = rng.uniform(-1, 1, n), rng.uniform(-1, 1, n)
    eta = np.column_stack([np.zeros(n)] + [b[0] + b[1] * x1 + b[2] * x2 for b in MN.values()])
    p = np.exp(eta - eta.max(1, keepdims=True))
    p /= p.sum(1, keepdims=True)
    y = (rng.random(n)[:, None] > np.cumsum(p, 1)).sum(1).clip(0, 2)
    return pd.DataFrame({"y": y.astype(np.int64), "x1": x1, "x2": x2})


# -- housing: the package's generator with one fixed generating vector -------

_HOUSING_BETA = None  # generating vector, set in every process from the cache


def housing_population(n_cal=1_000_000, n_truth=10_000_000, seed=777, cache=True):
    """(beta_gen, truth): the generating vector, calibrated once by the
    generator's fixed-point iteration on ``n_cal`` rows, and the population
    OLS coefficients of ``price ~ size + year + C(county)`` under it, from
    ``n_truth`` rows accumulated in chunks of 1e6."""
    path = os.path.join(RESULTS, "validity_housing_truth.json")
    if cache and os.path.exists(path):
        with open(path) as fh:
            d = json.load(fh)
        if d.get("n_truth") == n_truth and d.get("n_cal") == n_cal and d.get("seed") == seed:
            return np.array(d["beta_gen"]), np.array(d["truth"])
    rng = np.random.default_rng(seed)
    design, noise, _, _ = _ds._draw(int(1.3 * n_cal) + 200, rng)
    scale = np.abs(design).max(axis=0)
    xs = design / scale
    beta = _ds._TARGET.copy()
    best, best_err = beta.copy(), np.inf
    for _ in range(_ds._MAX_ITER):
        rows, price = _ds._select(design, noise, beta, n_cal)
        est = _ds._ols(xs[rows], price, scale)
        err = np.max(np.abs(est / _ds._TARGET - 1.0))
        if err < best_err:
            best, best_err = beta.copy(), err
        if err < _ds._TOL:
            break
        beta = beta + (_ds._TARGET - est)
    beta_gen = best
    del design, noise, xs
    p = len(beta_gen)
    XtX, Xty, done = np.zeros((p, p)), np.zeros(p), 0
    chunk = 1_000_000
    while done < n_truth:
        m = min(chunk, n_truth - done)
        des, noi, _, _ = _ds._draw(int(1.3 * m) + 200, rng)
        rows, price = _ds._select(des, noi, beta_gen, m)
        X = des[rows]
        XtX += X.T @ X
        Xty += X.T @ price
        done += m
    sc = np.sqrt(np.diag(XtX))
    truth = np.linalg.solve(XtX / np.outer(sc, sc), Xty / sc) / sc
    if cache:
        os.makedirs(RESULTS, exist_ok=True)
        with open(path, "w") as fh:
            json.dump(dict(n_cal=n_cal, n_truth=n_truth, seed=seed, beta_gen=beta_gen.tolist(),
                           truth=truth.tolist(), calibration_error=best_err), fh, indent=1)
    return beta_gen, truth


def draw_housing(rng, n):
    beta = _HOUSING_BETA
    m = int(1.3 * n) + 200
    while True:
        design, noise, year, county = _ds._draw(m, rng)
        sel = _ds._select(design, noise, beta, n)
        if sel is not None:
            break
        m *= 2
    rows, price = sel
    return pd.DataFrame({
        "price": price, "size": design[rows, 1], "year": year[rows].astype(np.int64),
        "county": pd.Series(_ds._COUNTIES[county[rows]], dtype=object),
        "flag": rng.integers(0, 2, n).astype(np.int64),
    })


LIN_KW = dict(bounds={"y": (1.0 - 7.5, 7.0 + 7.5), "x": (0.0, 10.0)})
LIN_TRUTH = {"Intercept": 1.0, "C(g)[T.b]": 1.0, "C(g)[T.c]": 0.0, "x": 0.5}
COV4_BOUNDS = {"x1": (-1.0, 1.0), "x2": (-1.0, 1.0), "x3": (0.0, 1.0)}
COV4_TRUTH = {"Intercept": None, "C(d)[T.yes]": 0.7, "x1": 1.0, "x2": -0.5, "x3": 0.0}
HOUSING_FORMULA = "price ~ size + year + C(county) + C(flag)"
HOUSING_NAMES = (["Intercept"] + [f"C(county)[T.County{i}]" for i in range(2, 7)]
                 + ["C(flag)[T.1]", "size", "year"])
HOUSING_KW = dict(bounds={"price": (1e5, 9e5), "size": (0.0, 3000.0)},
                  levels={"year": [1, 2, 3, 4], "county": list(_ds._COUNTIES), "flag": [0, 1]})

SCENARIOS = {
    "linear": dict(draw=draw_linear, fn="dp_ols", sm="ols", formula="y ~ x + C(g)",
                   kw=dict(LIN_KW, levels={"g": ["a", "b", "c"]}), truth=dict(LIN_TRUTH)),
    "cont5": dict(draw=draw_cont5, fn="dp_ols", sm="ols",
                  formula="y ~ " + " + ".join(f"x{j}" for j in range(1, 6)),
                  kw=dict(bounds={"y": (0.5 - 10.75, 0.5 + 10.75),
                                  **{f"x{j}": (-3.0, 3.0) for j in range(1, 6)}}),
                  truth={"Intercept": 0.5, **{f"x{j + 1}": float(b) for j, b in enumerate(B5)}}),
    "cont10": dict(draw=draw_cont10, fn="dp_ols", sm="ols",
                   formula="y ~ " + " + ".join(f"x{j}" for j in range(1, 11)),
                   kw=dict(bounds={"y": (-4.0, 13.0), **{f"x{j}": (0.0, 1.0) for j in range(1, 11)}}),
                   truth={"Intercept": 0.0, **{f"x{j + 1}": float(b) for j, b in enumerate(B10)}}),
    "logskew": dict(draw=draw_logskew, fn="dp_ols", sm="ols", formula="y ~ np.log1p(x) + z",
                    kw=dict(bounds={"y": (-3.0, 5.0 + math.log(51.0)), "x": (0.0, 50.0),
                                    "z": (0.0, 1.0)}),
                    truth={"Intercept": 1.0, "np.log1p(x)": 1.0, "z": 0.0}),
    "empty_level": dict(draw=draw_linear, fn="dp_ols", sm="ols", formula="y ~ x + C(g)",
                        kw=dict(LIN_KW, levels={"g": ["a", "b", "c", "ghost"]}),
                        truth=dict(LIN_TRUTH), info={"C(g)[T.ghost]": "ghost"}),
    "rare_level": dict(draw=lambda rng, n: draw_linear(rng, n, "rare"), fn="dp_ols", sm="ols",
                       formula="y ~ x + C(g)",
                       kw=dict(LIN_KW, levels={"g": ["a", "b", "c", "rare"]}),
                       truth=dict(LIN_TRUTH, **{"C(g)[T.rare]": 0.0}),
                       info={"C(g)[T.rare]": "rare"}),
    "housing40": dict(draw=draw_housing, fn="dp_ols", sm="ols", formula=HOUSING_FORMULA,
                      kw=dict(HOUSING_KW, bins=40), truth="housing"),
    "housing3": dict(draw=draw_housing, fn="dp_ols", sm="ols", formula=HOUSING_FORMULA,
                     kw=dict(HOUSING_KW, bins=3), truth="housing"),
    "logit4": dict(draw=draw_logit4, fn="dp_logit", sm="logit", formula="y ~ x1 + x2 + x3 + C(d)",
                   kw=dict(bounds=COV4_BOUNDS, levels={"y": [0, 1], "d": ["no", "yes"]}),
                   truth=dict(COV4_TRUTH, Intercept=-0.5)),
    "median4": dict(draw=draw_median4, fn="dp_quantreg", sm="quantreg",
                    formula="y ~ x1 + x2 + x3 + C(d)", fit_kw={"q": 0.5},
                    kw=dict(bounds=dict(COV4_BOUNDS, y=(-6.5, 9.2)), levels={"d": ["no", "yes"]}),
                    truth=dict(COV4_TRUTH, Intercept=1.0)),
    "mnlogit": dict(draw=draw_mnlogit, fn="dp_mnlogit", sm="mnlogit", formula="y ~ x1 + x2",
                    kw=dict(bounds={"x1": (-1.0, 1.0), "x2": (-1.0, 1.0)}, levels={"y": [0, 1, 2]}),
                    truth={f"{k}:{nm}": float(v) for k, b in MN.items()
                           for nm, v in zip(("Intercept", "x1", "x2"), b)}),
    "randhie": dict(draw=draw_randhie, fn="dp_ols", sm="ols", formula=RANDHIE_FORMULA,
                    kw=dict(bounds={"mdvis": (0.0, 100.0), "lncoins": (0.0, math.log(101.0)),
                                    "lpi": (0.0, 8.0), "fmde": (0.0, 8.3),
                                    "physlm": (0.0, 1.0), "disea": (0.0, 100.0)},
                            levels={v: [0, 1] for v in ("idp", "hlthg", "hlthf", "hlthp")}),
                    truth="randhie"),
    # a rare level (hlthp = 1: 1.5% of rows) beside a skewed response cut into fine bins,
    # on the histogram: spurious cells at high mdvis carry the level's coefficient
    "randhie_rare": dict(draw=draw_randhie, fn="dp_ols", sm="ols", formula=RANDHIE_RARE_FORMULA,
                         kw=dict(bounds={"mdvis": (-0.5, 99.5), "lncoins": (0.0, math.log(101.0))},
                                 levels={"hlthp": [0, 1]}, bins={"mdvis": 100},
                                 method="histogram"),
                         truth="randhie_rare"),
}


def truth_of(name):
    t = SCENARIOS[name]["truth"]
    if t == "housing":
        order = ["Intercept", "size", "year"] + [f"C(county)[T.County{i}]" for i in range(2, 7)]
        _, tr = housing_population()
        out = dict(zip(order, map(float, tr)))
        out["C(flag)[T.1]"] = 0.0
        return out
    if t in ("randhie", "randhie_rare"):
        import statsmodels.formula.api as smf

        formula = RANDHIE_FORMULA if t == "randhie" else RANDHIE_RARE_FORMULA
        fit = smf.ols(formula, _randhie()).fit()
        return {k: float(v) for k, v in fit.params.items()}
    return t


# ---------------------------------------------------------------------------
# one data set
# ---------------------------------------------------------------------------

def _flat(res, kind):
    """(names, est, lo, hi, p) flattened; multinomial: 'class:name'."""
    params = res.params
    ci = res.conf_int(0.05)
    pv = res.pvalues
    if isinstance(params, pd.DataFrame):  # multinomial: columns are classes 1..J-1
        labels = [str(int(c) + 1) for c in range(params.shape[1])]
        names = [f"{lab}:{nm}" for lab in labels for nm in params.index]
        est = np.asarray(params).T.ravel()
        p = np.asarray(pv).T.ravel()
        ci = np.asarray(ci)
        return names, est, ci[:, 0], ci[:, 1], p
    ci = np.asarray(ci)
    return list(params.index), np.asarray(params, float), ci[:, 0], ci[:, 1], np.asarray(pv, float)


def _nonprivate(spec, df):
    import statsmodels.formula.api as smf

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if spec["sm"] == "ols":
            r = smf.ols(spec["formula"], df).fit()
        elif spec["sm"] == "logit":
            r = smf.logit(spec["formula"], df).fit(disp=0)
        elif spec["sm"] == "quantreg":
            r = smf.quantreg(spec["formula"], df).fit(q=0.5)
        else:
            r = smf.mnlogit(spec["formula"], df).fit(disp=0)
    return _flat(r, spec["sm"])


def one_rep(args):
    name, n, eps, rep, seed, base = args
    spec = SCENARIOS[name]
    truth = truth_of(name)
    info = spec.get("info", {})
    ss = np.random.SeedSequence(seed)
    rng_data, rng_rel, rng_fit = (np.random.default_rng(s) for s in ss.spawn(3))
    df = spec["draw"](rng_data, n)
    fn = getattr(dpm, spec["fn"])
    fit_kw = spec.get("fit_kw", {})
    out = {}
    t0 = time.perf_counter()
    texts = []
    counts = dict(release_warn=0, sep_warn=0, other_warn=0)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model = None
        try:
            model = fn(spec["formula"], df, epsilon=eps, random_state=rng_rel, **spec["kw"])
        except Exception as exc:  # noqa: BLE001
            out["dp"] = out["naive"] = f"{type(exc).__name__}: {exc}"[:160]
        if model is not None:
            try:
                res = model.fit(random_state=rng_fit, **fit_kw, **spec.get("dp_fit_kw", {}))
                out["dp"] = (res, _flat(res, spec["sm"]))
                try:
                    inf = res.dp_inference
                    texts.extend(inf.notes(list(res.params.index)
                                           if not isinstance(res.params, pd.DataFrame) else None))
                except Exception:  # noqa: BLE001
                    pass
            except Exception as exc:  # noqa: BLE001
                out["dp"] = f"{type(exc).__name__}: {exc}"[:160]
            try:
                resn = model.fit(cov_type="naive", **fit_kw)
                out["naive"] = (resn, _flat(resn, spec["sm"]))
            except Exception as exc:  # noqa: BLE001
                out["naive"] = f"{type(exc).__name__}: {exc}"[:160]
    for w in caught:
        texts.append(str(w.message))
        if issubclass(w.category, SeparationWarning):
            counts["sep_warn"] += 1
        elif issubclass(w.category, ReleaseWarning):
            counts["release_warn"] += 1
        else:
            counts["other_warn"] += 1
    secs = time.perf_counter() - t0
    text = "\n".join(texts)
    try:
        npn, npe, nplo, nphi, _ = _nonprivate(spec, df)
        npd = {c: (e, lo, hi) for c, e, lo, hi in zip(npn, npe, nplo, nphi)}
    except Exception:  # noqa: BLE001
        npd = {}
    binflag = {}
    if isinstance(out.get("dp"), tuple):
        res = out["dp"][0]
        try:
            b = res.dp_inference.binning
            if b is not None:
                binflag = dict(zip(out["dp"][1][0], np.asarray(b.flagged, bool)))
        except Exception:  # noqa: BLE001
            pass
    rows = []
    coefs = list(truth) + [c for c in info if c not in truth]
    for coef in coefs:
        row = dict(scenario=name, n=n, eps=eps, rep=rep, seed=seed, coef=coef,
                   truth=truth.get(coef, np.nan), info=coef in info, seconds=secs,
                   np_est=npd.get(coef, (np.nan,) * 3)[0], np_lo=npd.get(coef, (np.nan,) * 3)[1],
                   np_hi=npd.get(coef, (np.nan,) * 3)[2], binflag=bool(binflag.get(coef, False)),
                   named=(info[coef] in text) if coef in info else (coef in text), **counts)
        for m in ("dp", "naive"):
            o = out.get(m)
            if isinstance(o, tuple):
                names, est, lo, hi, p = o[1]
                if coef in names:
                    j = names.index(coef)
                    row.update({f"{m}_error": "", f"{m}_est": est[j], f"{m}_lo": lo[j],
                                f"{m}_hi": hi[j], f"{m}_p": p[j]})
                else:
                    row[f"{m}_error"] = "absent"
            else:
                row[f"{m}_error"] = o or "?"
        rows.append(row)
    return rows


COLUMNS = (["scenario", "n", "eps", "rep", "seed", "coef", "truth", "info", "seconds",
            "np_est", "np_lo", "np_hi", "binflag", "named", "release_warn", "sep_warn",
            "other_warn"]
           + [f"{m}_{k}" for m in ("dp", "naive") for k in ("error", "est", "lo", "hi", "p")])


# ---------------------------------------------------------------------------
# summaries
# ---------------------------------------------------------------------------

GOALS = dict(sign=0.025, cover=0.90, null=0.05)


def _beyond_mc(k, m, p0, worse="above"):
    """One-sided binomial test at 5% that the rate k/m is worse than p0."""
    from scipy import stats

    if m == 0:
        return False
    if worse == "above":
        return stats.binom.sf(k - 1, m, p0) < 0.05
    return stats.binom.cdf(k, m, p0) < 0.05


def summarize(raw):
    raw = raw.copy()
    for m in ("dp", "naive"):
        raw[f"{m}_error"] = raw[f"{m}_error"].astype(object).fillna("").astype(str)
    out = []
    for (sc, n, eps, coef), g in raw[np.isfinite(raw["truth"].astype(float))].groupby(
            ["scenario", "n", "eps", "coef"], sort=False):
        truth = float(g["truth"].iloc[0])
        npw = g["np_hi"] - g["np_lo"]
        row = dict(scenario=sc, n=int(n), eps=float(eps), coef=coef, truth=truth, reps=len(g),
                   np_cover=float(((g["np_lo"] <= truth) & (truth <= g["np_hi"])).mean()),
                   warn=float((g["release_warn"] + g["sep_warn"] > 0).mean()),
                   binflag=float(g["binflag"].mean()))
        for m in ("dp", "naive"):
            ok = g[g[f"{m}_error"] == ""]
            k = len(ok)
            row[f"{m}_fail"] = len(g) - k
            row[f"{m}_ok"] = k
            lo, hi, est, p = ok[f"{m}_lo"], ok[f"{m}_hi"], ok[f"{m}_est"], ok[f"{m}_p"]
            sig = p < 0.05
            row[f"{m}_cover_k"] = int(((lo <= truth) & (truth <= hi)).sum())
            row[f"{m}_cover"] = row[f"{m}_cover_k"] / k if k else np.nan
            if truth != 0:
                wrong = sig & ((np.sign(est) == -np.sign(truth))
                               | ((truth > 0) & (hi < 0)) | ((truth < 0) & (lo > 0)))
                row[f"{m}_sign_k"] = int(wrong.sum())
                row[f"{m}_sign"] = row[f"{m}_sign_k"] / k if k else np.nan
                row[f"{m}_null"], row[f"{m}_null_k"] = np.nan, 0
            else:
                rej = sig | (lo > 0) | (hi < 0)
                row[f"{m}_null_k"] = int(rej.sum())
                row[f"{m}_null"] = row[f"{m}_null_k"] / k if k else np.nan
                row[f"{m}_sign"], row[f"{m}_sign_k"] = np.nan, 0
            w = ((hi - lo) / npw.loc[ok.index]).replace([np.nan], np.inf)
            row[f"{m}_width"] = float(np.median(w)) if k else np.nan
            row[f"{m}_inf"] = float((~np.isfinite(hi - lo)).mean()) if k else np.nan
        out.append(row)
    return pd.DataFrame(out)


def summarize_info(raw):
    raw = raw[raw["info"].astype(bool)].copy()
    out = []
    for (sc, n, eps, coef), g in raw.groupby(["scenario", "n", "eps", "coef"], sort=False):
        row = dict(scenario=sc, n=int(n), eps=float(eps), coef=coef, reps=len(g),
                   named=float(g["named"].mean()),
                   warn=float((g["release_warn"] + g["sep_warn"] > 0).mean()))
        for m in ("dp", "naive"):
            ok = g[g[f"{m}_error"].astype(object).fillna("").astype(str) == ""]
            row[f"{m}_fail"] = len(g) - len(ok)
            row[f"{m}_sig"] = float((ok[f"{m}_p"] < 0.05).mean()) if len(ok) else np.nan
            row[f"{m}_p_med"] = float(ok[f"{m}_p"].median()) if len(ok) else np.nan
            w = ok[f"{m}_hi"] - ok[f"{m}_lo"]
            row[f"{m}_finite"] = float(np.isfinite(w).mean()) if len(ok) else np.nan
            row[f"{m}_width"] = float(w.median()) if len(ok) else np.nan
            row[f"{m}_est_med"] = float(ok[f"{m}_est"].median()) if len(ok) else np.nan
        out.append(row)
    return pd.DataFrame(out)


def _pct(x):
    return "-" if not np.isfinite(x) else f"{100 * x:.1f}"


def _w(x):
    if np.isnan(x):
        return "-"
    if np.isinf(x):
        return "inf"
    return f"{x:.2f}" if x < 100 else f"{x:.3g}"


def violations(r, m="dp"):
    v = []
    k = r[f"{m}_ok"]
    if np.isfinite(r[f"{m}_sign"]) and r[f"{m}_sign"] > GOALS["sign"]:
        v.append("sign" + ("*" if _beyond_mc(r[f"{m}_sign_k"], k, GOALS["sign"]) else ""))
    if np.isfinite(r[f"{m}_cover"]) and r[f"{m}_cover"] < GOALS["cover"]:
        v.append("cover" + ("*" if _beyond_mc(r[f"{m}_cover_k"], k, GOALS["cover"], "below")
                            else ""))
    if np.isfinite(r[f"{m}_null"]) and r[f"{m}_null"] > GOALS["null"]:
        v.append("null" + ("*" if _beyond_mc(r[f"{m}_null_k"], k, GOALS["null"]) else ""))
    return v


def goal_tally(summary) -> str:
    """Per goal: how many coefficient-cells meet it, miss it, and miss it
    beyond Monte Carlo error (dp and naive)."""
    lines = ["\n### Goals over all coefficient-cells\n",
             "| goal | intervals | cells | met | missed | missed beyond MC error | worst |",
             "|---|---|---|---|---|---|---|"]
    for key, label, col in (("sign", "sign errors <= 2.5%", "sign"),
                            ("cover", "coverage >= 90%", "cover"),
                            ("null", "null rejections <= 5%", "null")):
        for m in ("dp", "naive"):
            rows = summary[np.isfinite(summary[f"{m}_{col}"])]
            vs = [violations(r, m) for _, r in rows.iterrows()]
            miss = [any(x.startswith(key) for x in v) for v in vs]
            star = [any(x == key + "*" for x in v) for v in vs]
            vals = rows[f"{m}_{col}"]
            worst = vals.min() if key == "cover" else vals.max()
            lines.append(f"| {label} | {m} | {len(rows)} | {len(rows) - sum(miss)} | {sum(miss)} | "
                         f"{sum(star)} | {_pct(worst) if len(rows) else '-'} |")
    return "\n".join(lines)


def markdown(summary, info):
    parts = []
    head = ("| n | eps | coef | truth | reps | dp sign err | dp cover | dp null rej | dp width | "
            "dp inf | naive sign err | naive cover | naive null rej | naive width | np cover | "
            "fail dp/naive | warn | binflag | dp violations |\n" + "|---" * 19 + "|")
    for sc, s in summary.groupby("scenario", sort=False):
        lines = [f"\n### {sc}\n", head]
        for _, r in s.iterrows():
            lines.append(
                f"| {r['n']:.0e} | {r['eps']:g} | {r['coef']} | {r['truth']:.4g} | {r['reps']} | "
                f"{_pct(r['dp_sign'])} | {_pct(r['dp_cover'])} | {_pct(r['dp_null'])} | "
                f"{_w(r['dp_width'])} | {_pct(r['dp_inf'])} | {_pct(r['naive_sign'])} | {_pct(r['naive_cover'])} | "
                f"{_pct(r['naive_null'])} | {_w(r['naive_width'])} | {_pct(r['np_cover'])} | "
                f"{r['dp_fail']}/{r['naive_fail']} | {_pct(r['warn'])} | {_pct(r['binflag'])} | "
                f"{' '.join(violations(r)) or 'ok'} |")
        parts.append("\n".join(lines))
    # one summary row per cell
    lines = ["\n### Summary per cell (worst coefficient)\n",
             "| scenario | n | eps | reps | coefs | dp max sign err | dp min cover | "
             "dp max null rej | dp median width | dp max inf | naive max sign err | naive min cover | "
             "naive max null rej | naive median width | fail dp/naive | dp violations | "
             "naive violations |", "|---" * 17 + "|"]
    for (sc, n, eps), s in summary.groupby(["scenario", "n", "eps"], sort=False):
        byv = {}
        for _, r in s.iterrows():
            for x in violations(r, "dp"):
                byv.setdefault(x, []).append(str(r["coef"]))
        dv = [f"{x}: {' '.join(c)}" for x, c in sorted(byv.items())]
        nv = sorted({x for _, r in s.iterrows() for x in violations(r, "naive")})

        def mx(col):
            v = s[col].dropna()
            return v.max() if len(v) else np.nan

        def mn(col):
            v = s[col].dropna()
            return v.min() if len(v) else np.nan

        lines.append(
            f"| {sc} | {n:.0e} | {eps:g} | {s['reps'].max()} | {len(s)} | "
            f"{_pct(mx('dp_sign'))} | {_pct(mn('dp_cover'))} | {_pct(mx('dp_null'))} | "
            f"{_w(s['dp_width'].median())} | {_pct(mx('dp_inf'))} | {_pct(mx('naive_sign'))} | "
            f"{_pct(mn('naive_cover'))} | {_pct(mx('naive_null'))} | "
            f"{_w(s['naive_width'].median())} | {s['dp_fail'].max()}/{s['naive_fail'].max()} | "
            f"{'; '.join(dv) or 'ok'} | {', '.join(sorted(set(x.split('(')[0] for x in nv))) or 'ok'} |")
    parts.append("\n".join(lines))
    parts.append(goal_tally(summary))
    if len(info):
        lines = ["\n### Information-free coefficients (declared level with no rows / 20 rows)\n",
                 "| scenario | coef | n | eps | reps | dp p<0.05 | dp median p | dp finite | "
                 "dp median width | dp median est | naive p<0.05 | naive median width | "
                 "warning names it | any ReleaseWarning | fail dp/naive |", "|---" * 15 + "|"]
        for _, r in info.iterrows():
            lines.append(
                f"| {r['scenario']} | {r['coef']} | {r['n']:.0e} | {r['eps']:g} | {r['reps']} | "
                f"{_pct(r['dp_sig'])} | {r['dp_p_med']:.2g} | {_pct(r['dp_finite'])} | "
                f"{_w(r['dp_width'])} | {r['dp_est_med']:.3g} | {_pct(r['naive_sig'])} | "
                f"{_w(r['naive_width'])} | {_pct(r['named'])} | {_pct(r['warn'])} | "
                f"{r['dp_fail']}/{r['naive_fail']} |")
        parts.append("\n".join(lines))
    return "\n".join(parts)


def report(raw, table_path=None):
    summary, info = summarize(raw), summarize_info(raw)
    text = markdown(summary, info)
    print(text)
    if table_path:
        with open(table_path, "w") as fh:
            fh.write(text + "\n")
    return summary, info


# ---------------------------------------------------------------------------
# driver
# ---------------------------------------------------------------------------

#: --quick: fewer data sets for the slow scenarios (housing40: ~30-45 s per
#: fit, 77k-cell domain; cont10: ~30 s per fit at n = 2e4).
QUICK_REPS = {"housing40": 6, "cont10": 10}


def _init(beta):
    global _HOUSING_BETA
    _HOUSING_BETA = beta


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--scenarios", nargs="+", default=list(SCENARIOS), choices=list(SCENARIOS))
    ap.add_argument("--n", nargs="+", type=int, default=None)
    ap.add_argument("--eps", nargs="+", type=float, default=None)
    ap.add_argument("--reps", type=int, default=None, help="data sets per cell (default 200)")
    ap.add_argument("--quick", action="store_true",
                    help="n in {2e3, 2e4}, eps = 1, 20 reps (a few minutes)")
    ap.add_argument("--scenario-reps", nargs="*", default=[],
                    help="data sets per cell of one scenario, as name=reps (for slow fits)")
    ap.add_argument("--jobs", type=int, default=1, help="worker processes (at most 2)")
    ap.add_argument("--seed", type=int, default=12)
    ap.add_argument("--first-rep", type=int, default=0,
                    help="number of the first data set of each cell (to add data sets to a "
                         "cell already run with the same --seed into another --out)")
    ap.add_argument("--method", default=None,
                    help="pass method=METHOD to every dp_* call (default: none, i.e. 'auto'); "
                         "e.g. histogram, moments, newton")
    ap.add_argument("--population", default=None,
                    help="the histogram bootstrap's population (cov_kwds population=...; default: "
                         "the library's default, 'deconvolved'); e.g. smooth, to measure the "
                         "previous default")
    ap.add_argument("--out", default=os.path.join(RESULTS, "validity.csv"),
                    help="CSV of every data set x coefficient (appended as computed)")
    ap.add_argument("--table", default=None, help="also write the markdown tables here")
    ap.add_argument("--from-csv", nargs="+", default=None, help="tabulate these CSVs only")
    args = ap.parse_args(argv)
    if args.from_csv:
        raw = pd.concat([pd.read_csv(f) for f in args.from_csv], ignore_index=True)
        raw = raw[raw["scenario"].isin(args.scenarios)]
        return report(raw, args.table)
    ns = args.n or ([2_000, 20_000] if args.quick else [2_000, 20_000, 200_000])
    epss = args.eps or ([1.0] if args.quick else [0.3, 1.0, 3.0])
    reps = args.reps or (20 if args.quick else 200)
    scenario_reps = dict(QUICK_REPS) if (args.quick and not args.reps) else {}
    for item in args.scenario_reps:
        key, val = item.split("=")
        scenario_reps[key] = int(val)
    jobs = max(1, min(2, args.jobs))

    beta = None
    if any(SCENARIOS[s]["truth"] == "housing" for s in args.scenarios):
        t = time.perf_counter()
        beta, _ = housing_population()
        print(f"housing population ready ({time.perf_counter() - t:.0f} s)", file=sys.stderr)
    _init(beta)
    if args.population is not None:  # (inherited by the forked workers)
        for name in args.scenarios:
            SCENARIOS[name]["dp_fit_kw"] = {"cov_kwds": {"population": args.population}}
    if args.method is not None:  # (inherited by the forked workers)
        for name in args.scenarios:
            SCENARIOS[name]["kw"] = dict(SCENARIOS[name]["kw"], method=args.method)

    tasks = []
    for name in args.scenarios:
        code = zlib.crc32(name.encode())
        for n in ns:
            for eps in epss:
                for r in range(args.first_rep, args.first_rep + scenario_reps.get(name, reps)):
                    seed = int(np.random.SeedSequence([args.seed, code, n, int(round(eps * 1000)), r])
                               .generate_state(1)[0])
                    tasks.append((name, n, eps, r, seed, args.seed))
    # small cells first, so an interrupted run has complete small cells
    tasks.sort(key=lambda t: (t[1], t[0] == "median4" or t[0] == "mnlogit", t[0], t[2], t[3]))
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    header = not os.path.exists(args.out)
    t0 = time.perf_counter()
    rows = []
    pool = Pool(jobs, initializer=_init, initargs=(beta,)) if jobs > 1 else None
    it = pool.imap_unordered(one_rep, tasks) if pool else map(one_rep, tasks)
    try:
        for i, out in enumerate(it):
            rows.extend(out)
            pd.DataFrame(out).reindex(columns=COLUMNS).to_csv(args.out, mode="a", header=header,
                                                              index=False)
            header = False
            if (i + 1) % 20 == 0:
                print(f"  {i + 1}/{len(tasks)} data sets, {time.perf_counter() - t0:.0f} s",
                      file=sys.stderr, flush=True)
    finally:
        if pool:
            pool.close()
            pool.join()
    print(f"\n{len(tasks)} data sets in {time.perf_counter() - t0:.0f} s", file=sys.stderr)
    return report(pd.DataFrame(rows).reindex(columns=COLUMNS), args.table)


if __name__ == "__main__":
    main()
