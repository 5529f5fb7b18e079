"""Coverage of the 95% intervals of the dp_* models: default (cov_type="dp",
the parametric bootstrap of the release) against naive (the weighted fit's
own standard errors), for the true population coefficients.

Each grid cell (model, n, epsilon) simulates ``--reps`` data sets from a model
with known coefficients, makes one release of each (default bins and
threshold), fits the model with both covariances and records whether each
95% interval covers the population coefficient, and the interval widths.

It also reports the *binning bias* of each grid cell: the estimate of a
release with exact counts (epsilon = inf) at the same bins from a data set of
2 million rows, minus the true coefficient, in units of the mean dp standard
error.  Where that ratio is large, the estimator's target is not the
population coefficient, and no standard error can give coverage; the table
says so.

Usage::

    python benchmarks/coverage.py                      # the full grid (hours)
    python benchmarks/coverage.py --reps 100 --models ols --n 1000 10000
    python benchmarks/coverage.py --out results.csv --table coverage.md
    python benchmarks/coverage.py --from-csv a.csv b.csv --table coverage.md   # summarize only

``--cell-reps quantreg:100000:5=10`` sets the data sets of one grid cell (the
quantile regression bootstrap solves one LP per replicate, and at n = 1e5,
epsilon = 5 the default bins give LPs of thousands of cells).  Rows are
appended to ``--out`` as they come in.

Runs with 2 worker processes by default (``--procs``).
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time
import warnings
from multiprocessing import Pool

import numpy as np
import pandas as pd

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import dpmodels as dpm  # noqa: E402
from dpmodels.inference import INTERVALS  # noqa: E402

# ---------------------------------------------------------------------------
# the simulation models: population coefficients are known exactly
# ---------------------------------------------------------------------------

LIN = dict(b0=1.0, bx=0.5, bb=1.0, bc=-1.0, sd=1.5)
LOGIT = dict(b0=-2.0, bx=0.4)
QR = dict(b0=1.0, bx=0.5, scale=1.0)


def draw_ols(rng, n):
    x = rng.uniform(0, 10, n)
    g = rng.choice(np.array(["a", "b", "c"]), n, p=[0.4, 0.35, 0.25])
    y = LIN["b0"] + LIN["bx"] * x + LIN["bb"] * (g == "b") + LIN["bc"] * (g == "c") \
        + rng.normal(0, LIN["sd"], n)
    return pd.DataFrame({"y": y, "x": x, "g": g})


def draw_logit(rng, n):
    x = rng.uniform(0, 10, n)
    p = 1 / (1 + np.exp(-(LOGIT["b0"] + LOGIT["bx"] * x)))
    return pd.DataFrame({"y": (rng.random(n) < p).astype(int), "x": x})


def draw_quantreg(rng, n):
    x = rng.uniform(0, 10, n)
    # symmetric (median 0) heavy-ish tails: Laplace noise
    y = QR["b0"] + QR["bx"] * x + rng.laplace(0, QR["scale"], n)
    return pd.DataFrame({"y": y, "x": x})


#: The default interval of each model's cov_type="dp" (quantile regression:
#: plain normal; the others: bias-corrected normal).
DEFAULT_METHOD = {"ols": "bc-normal", "logit": "bc-normal", "quantreg": "normal"}

MODELS = {
    "ols": dict(
        draw=draw_ols, fn=dpm.dp_ols, formula="y ~ x + C(g)", fit_kw={},
        kw=dict(bounds={"y": (-6.0, 12.0), "x": (0.0, 10.0)}, levels={"g": ["a", "b", "c"]}),
        truth={"x": LIN["bx"], "C(g)[T.b]": LIN["bb"]},
    ),
    "logit": dict(
        draw=draw_logit, fn=dpm.dp_logit, formula="y ~ x", fit_kw={},
        kw=dict(bounds={"x": (0.0, 10.0)}, levels={"y": [0, 1]}),
        truth={"x": LOGIT["bx"], "Intercept": LOGIT["b0"]},
    ),
    "quantreg": dict(
        draw=draw_quantreg, fn=dpm.dp_quantreg, formula="y ~ x", fit_kw={"q": 0.5},
        kw=dict(bounds={"y": (-6.0, 12.0), "x": (0.0, 10.0)}),
        truth={"x": QR["bx"], "Intercept": QR["b0"]},
    ),
}


COLUMNS = (["model", "n", "eps", "seed", "coef", "truth", "est", "se_dp", "se_naive", "bias_boot",
            "n_failed", "bins", "seconds", "error", "binning_flag"]
           + [f"{side}_{m}" for m in (*INTERVALS, "naive") for side in ("lo", "hi")])


def one_rep(args):
    """One simulated data set: release, fit with both covariances, record."""
    model_name, n, eps, seed, n_boot = args
    spec = MODELS[model_name]
    rng = np.random.default_rng(seed)
    df = spec["draw"](rng, n)
    rows = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t0 = time.perf_counter()
        try:
            model = spec["fn"](spec["formula"], df, epsilon=eps, random_state=rng, **spec["kw"])
            res = model.fit(n_boot=n_boot, random_state=rng, **spec["fit_kw"])
            naive = model.fit(cov_type="naive", **spec["fit_kw"])
        except Exception as exc:  # a release too poor to fit: recorded as a miss
            for coef in spec["truth"]:
                rows.append(dict(model=model_name, n=n, eps=eps, seed=seed, coef=coef,
                                 error=type(exc).__name__))
            return rows
        elapsed = time.perf_counter() - t0
    inf = res.dp_inference
    names = list(res.params.index)
    bins = model.release.domain.axis("x").bins
    for coef, true in spec["truth"].items():
        j = names.index(coef)
        row = dict(model=model_name, n=n, eps=eps, seed=seed, coef=coef, truth=true,
                   est=float(res.params.iloc[j]), se_dp=float(inf.se[j]),
                   se_naive=float(naive.bse.iloc[j]), bias_boot=float(inf.bias[j]),
                   n_failed=inf.n_failed, bins=bins, seconds=elapsed, error="",
                   binning_flag=bool(inf.binning.flagged[j]) if inf.binning is not None else False)
        for method in INTERVALS:
            lo, hi = inf.conf_int(0.05, method=method)[j]
            row[f"lo_{method}"], row[f"hi_{method}"] = lo, hi
        lo, hi = np.asarray(naive.conf_int(0.05))[j]
        row["lo_naive"], row["hi_naive"] = lo, hi
        rows.append(row)
    return rows


def binned_target(model_name, n, eps, bins, n_big=2_000_000, seed=12345):
    """The estimate from exact counts (epsilon = inf) at the same bins on a very
    large sample: the estimator's target, whose distance from the population
    coefficient is the binning bias."""
    spec = MODELS[model_name]
    df = spec["draw"](np.random.default_rng(seed), n_big)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = spec["fn"](spec["formula"], df, epsilon=float("inf"), bins=bins,
                         **spec["kw"]).fit(cov_type="naive", **spec["fit_kw"])
    return {c: float(res.params[c]) for c in spec["truth"]}


def summarize(raw: pd.DataFrame) -> pd.DataFrame:
    out = []
    for (model, n, eps, coef), g in raw.groupby(["model", "n", "eps", "coef"], sort=True):
        ok = g[g["error"] == ""]
        truth = MODELS[model]["truth"][coef]
        row = dict(model=model, n=int(n), eps=eps, coef=coef, reps=len(g), errors=len(g) - len(ok))

        def cover(method):
            lo, hi = ok[f"lo_{method}"], ok[f"hi_{method}"]
            # a failed fit counts as a miss
            return float(((lo <= truth) & (truth <= hi)).sum() / len(g))

        for method in ("bc-normal", "normal", "basic", "percentile", "naive"):
            row[f"cov_{method}"] = cover(method)
        dm = DEFAULT_METHOD[model]
        row["cov_default"] = row[f"cov_{dm}"]
        row["width_dp"] = float((ok[f"hi_{dm}"] - ok[f"lo_{dm}"]).mean())
        row["width_naive"] = float((ok["hi_naive"] - ok["lo_naive"]).mean())
        row["se_dp"] = float(ok["se_dp"].mean())
        row["sd_est"] = float(ok["est"].std())
        row["bias_est"] = float(ok["est"].mean() - truth)
        row["bins"] = int(ok["bins"].median()) if len(ok) else -1
        row["warned"] = float(ok["binning_flag"].mean()) if len(ok) else np.nan
        row["sec_fit"] = float(ok["seconds"].mean()) if len(ok) else np.nan
        out.append(row)
    return pd.DataFrame(out)


def binomial_region(reps: int, p: float = 0.95, level: float = 0.99) -> tuple[float, float]:
    """Central ``level`` acceptance region of the coverage share under exact coverage p."""
    from scipy import stats

    lo = stats.binom.ppf((1 - level) / 2, reps, p) / reps
    hi = stats.binom.ppf(1 - (1 - level) / 2, reps, p) / reps
    return lo, hi


def markdown(summary: pd.DataFrame) -> str:
    lines = [
        "| model | coef | n | eps | bins | reps | dp cover | naive cover | bc-normal | normal | "
        "basic | pct | dp width | naive width | binning bias / SE | warned | note |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for _, r in summary.iterrows():
        ratio = r.get("binning_ratio", np.nan)
        lo, hi = binomial_region(int(r["reps"]))
        note = ""
        if np.isfinite(ratio) and abs(ratio) > 0.5:
            note = "binning bias"
        elif r["cov_default"] < 0.93 and r["cov_default"] < lo:
            note = "under"
        elif r["cov_default"] > 0.97 and r["cov_default"] > hi:
            note = "over"
        if r["errors"]:
            note = (note + f"; {int(r['errors'])} fits failed").strip("; ")
        lines.append(
            f"| {r['model']} | {r['coef']} | {r['n']:.0e} | {r['eps']:g} | {r['bins']} | "
            f"{r['reps']} | **{100 * r['cov_default']:.1f}** | {100 * r['cov_naive']:.1f} | "
            f"{100 * r['cov_bc-normal']:.1f} | {100 * r['cov_normal']:.1f} | "
            f"{100 * r['cov_basic']:.1f} | {100 * r['cov_percentile']:.1f} | "
            f"{r['width_dp']:.3g} | {r['width_naive']:.3g} | {ratio:+.2f} | "
            f"{100 * r['warned']:.0f}% | {note} |")
    return "\n".join(lines)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--models", nargs="+", default=list(MODELS), choices=list(MODELS))
    ap.add_argument("--n", nargs="+", type=int, default=[1_000, 10_000, 100_000])
    ap.add_argument("--eps", nargs="+", type=float, default=[0.1, 0.5, 1.0, 5.0])
    ap.add_argument("--reps", type=int, default=500, help="simulated data sets per grid cell")
    ap.add_argument("--reps-quantreg", type=int, default=None,
                    help="fewer data sets for quantreg (one LP per replicate)")
    ap.add_argument("--n-boot", type=int, default=200)
    ap.add_argument("--procs", type=int, default=2)
    ap.add_argument("--seed", type=int, default=2024)
    ap.add_argument("--cell-reps", nargs="*", default=[],
                    help="per-cell data sets, as model:n:eps=reps")
    ap.add_argument("--out", default=None, help="CSV of every simulated data set (appended)")
    ap.add_argument("--from-csv", nargs="+", default=None, help="summarize these CSVs only")
    ap.add_argument("--table", default=None, help="markdown table output")
    args = ap.parse_args(argv)
    if args.from_csv:
        return report(pd.concat([pd.read_csv(f) for f in args.from_csv], ignore_index=True),
                      args.table)
    cell_reps = {}
    for item in args.cell_reps:
        key, reps = item.split("=")
        model, n, eps = key.split(":")
        cell_reps[(model, int(n), float(eps))] = int(reps)

    tasks = []
    for mi, model in enumerate(args.models):
        reps0 = args.reps_quantreg if (model == "quantreg" and args.reps_quantreg) else args.reps
        for n in args.n:
            for eps in args.eps:
                reps = cell_reps.get((model, n, eps), reps0)
                for r in range(reps):
                    seed = int(np.random.SeedSequence([args.seed, mi, n, int(eps * 1000), r])
                               .generate_state(1)[0])
                    tasks.append((model, n, eps, seed, args.n_boot))
    t0 = time.perf_counter()
    rows = []
    header = not (args.out and os.path.exists(args.out))
    with Pool(args.procs) as pool:
        for i, out in enumerate(pool.imap(one_rep, tasks, chunksize=2)):
            rows.extend(out)
            if args.out:
                pd.DataFrame(out).reindex(columns=COLUMNS).to_csv(
                    args.out, mode="a", header=header, index=False)
                header = False
            if (i + 1) % 200 == 0:
                print(f"  {i + 1}/{len(tasks)} data sets, {time.perf_counter() - t0:.0f} s",
                      file=sys.stderr, flush=True)
    print(f"\n{len(tasks)} data sets in {time.perf_counter() - t0:.0f} s", file=sys.stderr)
    return report(pd.DataFrame(rows), args.table)


def report(raw: pd.DataFrame, table_path=None):
    raw = raw.copy()
    raw["error"] = raw["error"].fillna("").astype(str)
    summary = summarize(raw)
    # binning bias per grid cell, in units of the mean dp standard error
    targets = {}
    ratios = []
    for _, r in summary.iterrows():
        key = (r["model"], r["n"], r["eps"], r["bins"])
        if key not in targets and r["bins"] > 0:
            targets[key] = binned_target(r["model"], r["n"], r["eps"], r["bins"])
        tgt = targets.get(key, {}).get(r["coef"], np.nan)
        ratios.append((tgt - MODELS[r["model"]]["truth"][r["coef"]]) / r["se_dp"])
    summary["binning_ratio"] = ratios
    table = markdown(summary)
    print(table)
    if table_path:
        with open(table_path, "w") as fh:
            fh.write(table + "\n")
    return summary


if __name__ == "__main__":
    main()
