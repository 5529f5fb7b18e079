"""Unbounded(center, scale) against guessed bounds for a skewed covariate
(issue 14, part 5; Lei 2011 §3.2).

Data: income x (in $1000) log-normal with median 50 and log-sd 0.6 (99th
percentile 202, max of 20,000 rows about 500), y = 10 + 0.1 x + N(0, 5^2).
The target is the population OLS line (10, 0.1).  Each row of the table is
one public declaration of x; every one is fitted by
``dp_ols("y ~ x", method="histogram", bins="auto")`` (the library's default
density representatives, ``cov_type="naive"``: no bootstrap), with the same
public bounds for y, (-10, 60), in every row, so only the declaration of x
differs:

* ``bounds (0, p99.5)``: well-chosen bounds (an oracle: the 99.5th
  percentile of the true law, 235);
* ``bounds (0, 10 x p99)``, ``(0, 100 x p99)``: guessed wide bounds;
* ``Unbounded(50, 19)``: a good public guess (median, IQR / 2.2); once with
  the default density representatives, once with ``representatives="midpoint"``
  (each cell at ``T**-1`` of its midpoint on (0, 1));
* ``Unbounded((a + b) / 2, (b - a) / 6)`` from a guessed range (a, b) =
  (0, p99), (0, 10 x p99), (0, 100 x p99): the same public knowledge as
  the bounds rows, given as a soft range (``center +- 3 scale`` holds the
  middle 90% of the (0, 1) scale);
* ``Unbounded(150, 57)``: centre and scale both 3 times too large;
* ``Unbounded(50, 4)``: the right centre, a scale 5 times too small;
* ``Unbounded(10, 100)``: centre 5 times too small, scale 5 times too large.

The first row, ``OLS (no privacy)``, is the sampling error alone.  Reported:
RMSE of the slope (x 1000) and of the intercept over seeds, each fit on a
fresh sample; "fail" counts fits that raised (too few cells).

Run from the repository root::

    nice -n 5 python benchmarks/unbounded.py           # n 2e3 and 2e4, eps 0.5 and 2, 30 seeds
    nice -n 5 python benchmarks/unbounded.py --quick   # n 2e3, eps 1, 6 seeds

Writes ``benchmarks/results/unbounded.md`` (``unbounded_quick.md``).
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time
import warnings

import numpy as np
import pandas as pd
import statsmodels.api as sm

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

import dpmodels as dpm  # noqa: E402

MU, SIGMA = math.log(50.0), 0.6
BETA = (10.0, 0.1)
NOISE_SD = 5.0
Y_BOUNDS = (-10.0, 60.0)


def quantile(p: float) -> float:
    from scipy import stats

    return float(math.exp(MU + SIGMA * stats.norm.ppf(p)))


P99, P995 = quantile(0.99), quantile(0.995)
IQR = quantile(0.75) - quantile(0.25)

DECLARATIONS = {
    f"bounds (0, p99.5 = {P995:.0f})": (0.0, P995),
    f"bounds (0, 10 x p99 = {10 * P99:.0f})": (0.0, 10 * P99),
    f"bounds (0, 100 x p99 = {100 * P99:.0f})": (0.0, 100 * P99),
    f"Unbounded(50, {IQR / 2.2:.0f}) good": dpm.Unbounded(50.0, round(IQR / 2.2)),
    f"Unbounded(50, {IQR / 2.2:.0f}) good, midpoints": (dpm.Unbounded(50.0, round(IQR / 2.2)),
                                                       "midpoint"),
    **{f"Unbounded({f * P99 / 2:.0f}, {f * P99 / 6:.0f}) from range (0, {f} x p99)":
       dpm.Unbounded(round(f * P99 / 2), round(f * P99 / 6)) for f in (1, 10, 100)},
    f"Unbounded(150, {3 * IQR / 2.2:.0f}) 3x off": dpm.Unbounded(150.0, round(3 * IQR / 2.2)),
    f"Unbounded(50, {IQR / 2.2 / 5:.0f}) scale/5": dpm.Unbounded(50.0, round(IQR / 2.2 / 5)),
    "Unbounded(10, 100) centre/5, scale x5": dpm.Unbounded(10.0, 100.0),
}


def sample(n: int, rng) -> pd.DataFrame:
    x = rng.lognormal(MU, SIGMA, n)
    y = BETA[0] + BETA[1] * x + rng.normal(0.0, NOISE_SD, n)
    return pd.DataFrame({"x": x, "y": y})


def run(ns, epsilons, seeds: int) -> pd.DataFrame:
    rows = []
    for n in ns:
        for eps in epsilons:
            errs = {name: [] for name in ["OLS (no privacy)", *DECLARATIONS]}
            fails = {name: 0 for name in errs}
            for s in range(seeds):
                rng = np.random.default_rng([n, int(eps * 100), s])
                df = sample(n, rng)
                ols = sm.OLS(df["y"], sm.add_constant(df["x"])).fit().params.to_numpy()
                errs["OLS (no privacy)"].append(ols - BETA)
                for name, decl in DECLARATIONS.items():
                    decl, reps = decl if isinstance(decl, tuple) and len(decl) == 2 and isinstance(
                        decl[1], str) else (decl, "density")
                    try:
                        with warnings.catch_warnings():
                            warnings.simplefilter("ignore")
                            res = dpm.dp_ols("y ~ x", data=df, epsilon=eps, method="histogram",
                                             bounds={"x": decl, "y": Y_BOUNDS},
                                             representatives=reps,
                                             random_state=10_000 + s).fit(cov_type="naive")
                        errs[name].append(res.params.to_numpy() - BETA)
                    except dpm.DPModelsError:
                        fails[name] += 1
            for name, e in errs.items():
                e = np.array(e) if e else np.full((1, 2), np.nan)
                rmse = np.sqrt(np.mean(e**2, axis=0))
                rows.append(dict(n=n, epsilon=eps, declaration=name,
                                 slope_rmse_x1000=1000 * rmse[1], intercept_rmse=rmse[0],
                                 slope_bias_x1000=1000 * e[:, 1].mean(),
                                 fail=fails[name], seeds=seeds))
    return pd.DataFrame(rows)


def to_markdown(df: pd.DataFrame) -> str:
    lines = ["| n | epsilon | declaration of x | slope RMSE x1000 | slope bias x1000 | "
             "intercept RMSE | fail |", "|---|---|---|---|---|---|---|"]
    for r in df.itertuples(index=False):
        lines.append(f"| {r.n:,} | {r.epsilon:g} | {r.declaration} | {r.slope_rmse_x1000:.2f} | "
                     f"{r.slope_bias_x1000:+.2f} | {r.intercept_rmse:.2f} | {r.fail}/{r.seeds} |")
    return "\n".join(lines)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="n 2e3, eps 1, 6 seeds")
    ap.add_argument("--seeds", type=int, default=None)
    args = ap.parse_args(argv)
    if args.quick:
        ns, epsilons, seeds = [2000], [1.0], 6
    else:
        ns, epsilons, seeds = [2000, 20000], [0.5, 2.0], 30
    seeds = args.seeds or seeds
    t0 = time.perf_counter()
    table = run(ns, epsilons, seeds)
    md = to_markdown(table)
    took = time.perf_counter() - t0
    print(md)
    print(f"\n{seeds} seeds per row; {took:.0f} s")
    out = os.path.join(os.path.dirname(__file__), "results",
                       "unbounded_quick.md" if args.quick else "unbounded.md")
    with open(out, "w") as fh:
        fh.write(f"# benchmarks/unbounded.py{' --quick' if args.quick else ''}\n\n"
                 f"{__doc__.split(chr(10) + chr(10))[1]}\n\n{md}\n\n"
                 f"{seeds} seeds per row; {took:.0f} s.\n")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
