"""Issue 14, part 1: Smith's sample-and-aggregate against the non-private fit.

Smith (2008) shows the sample-and-aggregate estimator's law approaches the
MLE's as n grows.  For median regression with 8 covariates
(``y ~ x1 + ... + x8``, x_j ~ U(-1, 1), slopes (1, -0.5, 0.25, 0, 0.5, -1,
0.75, 0), intercept 1, Laplace(0, 1) errors truncated at +-6, bounds y in
(-12, 14)) at epsilon = 1 this prints, for n in 1e4, 1e5, 1e6, the ratio of
each private estimator's variance (over data sets and releases; mean over
the 9 coefficients) to the variance of statsmodels' QuantReg on the same data
sets, for ``method="sample-aggregate"`` and ``method="histogram"``, with the
coverage of the 95% intervals and the seconds per release.

Run from the repository root::

    python benchmarks/sample_aggregate.py --quick     # n in 1e4, 1e5; 10 data sets
    python benchmarks/sample_aggregate.py             # n in 1e4, 1e5, 1e6; 30 data sets
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np
import pandas as pd
import statsmodels.formula.api as smf

import dpmodels as dpm

SLOPES = np.array([1.0, -0.5, 0.25, 0.0, 0.5, -1.0, 0.75, 0.0])
NAMES = [f"x{j + 1}" for j in range(SLOPES.size)]
FORMULA = "y ~ " + " + ".join(NAMES)
BOUNDS = {**{nm: (-1.0, 1.0) for nm in NAMES}, "y": (-12.0, 14.0)}
TRUTH = np.concatenate([[1.0], SLOPES])


def draw(rng: np.random.Generator, n: int) -> pd.DataFrame:
    X = rng.uniform(-1, 1, (n, SLOPES.size))
    e = rng.laplace(size=n)
    while np.any(np.abs(e) > 6):
        bad = np.abs(e) > 6
        e[bad] = rng.laplace(size=int(bad.sum()))
    df = pd.DataFrame(X, columns=NAMES)
    df["y"] = 1.0 + X @ SLOPES + e
    return df


def run(n: int, eps: float, reps: int, methods: list[str], seed: int) -> list[dict]:
    est = {m: [] for m in methods + ["nonprivate"]}
    cover = {m: [] for m in methods}
    secs = {m: [] for m in methods}
    for r in range(reps):
        rng = np.random.default_rng([seed, n, r])
        df = draw(rng, n)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            est["nonprivate"].append(np.asarray(smf.quantreg(FORMULA, df).fit(q=0.5).params))
            for m in methods:
                t0 = time.perf_counter()
                try:
                    res = dpm.dp_quantreg(FORMULA, df, epsilon=eps, method=m, bounds=BOUNDS,
                                          random_state=int(rng.integers(2**31))).fit(
                        q=0.5, **({"random_state": 0, "n_boot": 200} if m == "histogram"
                                  else {}))
                    p = np.asarray(res.params, float)
                    ci = np.asarray(res.conf_int())
                except Exception as exc:  # noqa: BLE001
                    print(f"  {m} n={n} rep {r}: {type(exc).__name__}: {exc}")
                    continue
                secs[m].append(time.perf_counter() - t0)
                est[m].append(p)
                cover[m].append((ci[:, 0] <= TRUTH) & (TRUTH <= ci[:, 1]))
    ref = np.var(np.array(est["nonprivate"]), axis=0, ddof=1)
    rows = []
    for m in methods:
        E = np.array(est[m])
        if len(E) < 2:
            continue
        mse = np.mean((E - TRUTH) ** 2, axis=0)
        rows.append(dict(n=n, method=m, reps=len(E),
                         var_ratio=float(np.mean(np.var(E, axis=0, ddof=1) / ref)),
                         mse_ratio=float(np.mean(mse / ref)),
                         coverage=float(np.mean(cover[m])),
                         min_coverage=float(np.min(np.mean(cover[m], axis=0))),
                         seconds=float(np.median(secs[m]))))
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--n", nargs="+", type=int, default=None)
    ap.add_argument("--eps", type=float, default=1.0)
    ap.add_argument("--reps", type=int, default=None)
    ap.add_argument("--methods", nargs="+", default=["sample-aggregate", "histogram"])
    ap.add_argument("--seed", type=int, default=3)
    args = ap.parse_args()
    ns = args.n or ([10_000, 100_000] if args.quick else [10_000, 100_000, 1_000_000])
    reps = args.reps or (10 if args.quick else 30)
    rows = []
    for n in ns:
        rows += run(n, args.eps, reps, args.methods, args.seed)
    print(f"\nmedian regression, 8 covariates, epsilon = {args.eps:g}; ratios to QuantReg's "
          "variance over the same data sets (mean over 9 coefficients)\n")
    print("| n | method | data sets | variance ratio | MSE ratio | coverage (mean / min) | "
          "s per release |")
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['n']:,} | {r['method']} | {r['reps']} | {r['var_ratio']:.3g} | "
              f"{r['mse_ratio']:.3g} | {r['coverage']:.2f} / {r['min_coverage']:.2f} | "
              f"{r['seconds']:.2f} |")


if __name__ == "__main__":
    main()
