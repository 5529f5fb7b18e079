"""Least squares on a binned response whose errors are far from normal.

The histogram's rounding bound (``dpmodels/inference/rounding.py``) scales the slopes'
errors by the factor a *normal* response would suffer from being rounded to
its bins.  This script measures what the default ``fit()`` does when the
response is ``y = 0.5 x + e`` with ``x ~ N(0, 1)`` and errors ``e`` of five
shapes, all of mean 0 and variance 1 (so the population slope is 0.5):

``normal``, ``lognormal`` (``lognormal(0, 0.8)``, standardised), ``bimodal``
(modes at -1.5 and 1.5, sd 0.5 each, standardised), ``uniform`` and
``spike`` (60% exactly 0, 40% ``N(0, 1.6**2)``, standardised), with the
public bounds of ``y`` at (-4, 4), (-6, 6) or (-3, 5) and ``x`` in (-5, 5).

Two tables:

* ``--part fixed``: epsilon = inf (the exact binned table, so every error is
  binning), n = 40,000, ``y`` cut into 3, 4, 5 or 8 bins and ``x`` into 40:
  the estimate over the full-data OLS slope, the naive and default SEs, and
  whether the default interval holds the full-data slope.  One data set per
  shape (the error is deterministic at this n).
* ``--part auto``: the default bins, ``--n`` rows, ``--eps``, ``--reps`` data
  sets per shape and bounds: coverage of 0.5, the share of finite intervals,
  wrong-sign significance and the median estimate.

Run (from the repository root)::

    python benchmarks/rounding_shapes.py --part fixed
    python benchmarks/rounding_shapes.py --part auto --n 2000 --eps 1 --reps 10
"""

from __future__ import annotations

import argparse
import warnings

import numpy as np
import pandas as pd

import dpmodels as dpm

SHAPES = ("normal", "lognormal", "bimodal", "uniform", "spike")
BOUNDS = ((-4.0, 4.0), (-6.0, 6.0), (-3.0, 5.0))
SLOPE = 0.5


def errors(rng: np.random.Generator, shape: str, n: int) -> np.ndarray:
    """n errors of the named shape, mean 0 and variance 1 (exactly, in the population)."""
    if shape == "normal":
        return rng.normal(0.0, 1.0, n)
    if shape == "lognormal":
        e = rng.lognormal(0.0, 0.8, n)
        mean, var = np.exp(0.32), (np.exp(0.64) - 1.0) * np.exp(0.64)
        return (e - mean) / np.sqrt(var)
    if shape == "bimodal":
        e = np.where(rng.random(n) < 0.5, -1.5, 1.5) + rng.normal(0.0, 0.5, n)
        return e / np.sqrt(2.5)
    if shape == "uniform":
        return rng.uniform(-np.sqrt(3.0), np.sqrt(3.0), n)
    if shape == "spike":
        e = np.where(rng.random(n) < 0.6, 0.0, rng.normal(0.0, 1.6, n))
        return e / np.sqrt(0.4 * 1.6 ** 2)
    raise ValueError(shape)


def data(rng: np.random.Generator, shape: str, n: int) -> pd.DataFrame:
    x = rng.normal(0.0, 1.0, n)
    return pd.DataFrame({"y": SLOPE * x + errors(rng, shape, n), "x": x})


def fixed(n: int = 40_000) -> pd.DataFrame:
    rows = []
    for s, shape in enumerate(SHAPES):
        df = data(np.random.default_rng(100 + s), shape, n)
        ref = np.polyfit(df["x"], df["y"], 1)[0]
        for lo, hi in BOUNDS:
            for k in (3, 4, 5, 8):
                model = dpm.dp_ols("y ~ x", df, epsilon=float("inf"),
                                   bounds={"y": (lo, hi), "x": (-5.0, 5.0)},
                                   bins={"y": k, "x": 40}, method="histogram")
                naive = model.fit(cov_type="naive")
                res = model.fit(random_state=2)
                a, b = res.conf_int().loc["x"]
                rows.append(dict(shape=shape, bounds=f"{lo:g},{hi:g}", bins=k,
                                 ratio=res.params["x"] / ref, naive_se=naive.bse["x"],
                                 se=res.bse["x"], covers=bool(a <= ref <= b)))
    return pd.DataFrame(rows)


def auto(n: int, eps: float, reps: int, bounds=BOUNDS) -> pd.DataFrame:
    rows = []
    for shape in SHAPES:
        for lo, hi in bounds:
            for r in range(reps):
                df = data(np.random.default_rng(1000 * r + 7), shape, n)
                model = dpm.dp_ols("y ~ x", df, epsilon=eps,
                                   bounds={"y": (lo, hi), "x": (-5.0, 5.0)},
                                   method="histogram", random_state=r)
                res = model.fit(random_state=r + 1)
                a, b = res.conf_int().loc["x"]
                rows.append(dict(shape=shape, bounds=f"{lo:g},{hi:g}", est=res.params["x"],
                                 covers=bool(a <= SLOPE <= b), finite=bool(np.isfinite(b)),
                                 wrong=bool(b < 0), ybins=model.release.domain.axis("y").bins))
    d = pd.DataFrame(rows)
    return d.groupby(["shape", "bounds"]).agg(
        reps=("covers", "size"), coverage=("covers", "mean"), finite=("finite", "mean"),
        wrong_sign=("wrong", "mean"), median_est=("est", "median"),
        y_bins=("ybins", "median")).reset_index()


def markdown(table: pd.DataFrame) -> str:
    """The table as markdown (floats to 3 decimals)."""
    def cell(v):
        return f"{v:.3f}" if isinstance(v, float) else str(v)
    lines = ["| " + " | ".join(table.columns) + " |", "|" + "---|" * table.shape[1]]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |"
              for row in table.itertuples(index=False)]
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--part", choices=("fixed", "auto"), default="fixed")
    ap.add_argument("--n", type=int, default=2000)
    ap.add_argument("--eps", type=float, default=1.0)
    ap.add_argument("--reps", type=int, default=10)
    args = ap.parse_args()
    warnings.simplefilter("ignore")
    table = fixed() if args.part == "fixed" else auto(args.n, args.eps, args.reps)
    print(markdown(table))
    if args.part == "fixed":
        print(f"\ndefault intervals holding the full-data slope: {table.covers.sum()} of "
              f"{len(table)}")


if __name__ == "__main__":
    main()
