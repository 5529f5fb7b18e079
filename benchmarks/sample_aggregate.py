"""Sample-and-aggregate against the non-private estimator (Smith 2011) and the histogram.

Smith's theorem: the sample-and-aggregate estimate is distributed as the MLE
as n grows (epsilon fixed).  For OLS, logit and median regression with 8
covariates, epsilon = 1 and n = 1e4, 1e5, 1e6, this prints per coefficient,
averaged over the 9 coefficients:

* ``var/MLE``: the sample-and-aggregate estimate's variance over the
  non-private estimator's.  The SA's variance is computed per release from
  its own pieces: the sample variance of the clamped block estimates over k
  (the blocks are independent given the random partition: a diagnostic read
  from the rows, benchmark only) plus the noise's known variance; averaged
  over the replications.  The non-private estimator's variance is its
  asymptotic covariance on the same rows (OLS: ``(X'X)^-1`` with the known
  unit error variance; median regression: ``pi/2 (X'X)^-1``, the normal
  error's ``q(1-q)/f(0)**2``; logit: the inverse Fisher information at the
  true coefficients).  No replication of the non-private fit is needed.
* ``MSE/MLE``: the empirical mean squared error over the replications (bias
  included) over the same variance; for the histogram method too
  (``method="histogram"``, naive fit: its bootstrap costs ~100 s per fit at
  this dimension, so its coverage is not measured here).
* ``cover``: the share of the SA's 95% intervals that hold the true value
  (replications x 9 coefficients) and its binomial standard error.
* ``fail``: the share of blocks whose fit failed (diagnostic).

Two SA variants share the same block fits: the public range
``param_bounds=(-4, 4)`` for every coefficient (Smith's setting: a parameter
space of known diameter) and the private range (step 4 of
``dpmodels.mechanisms.sample_aggregate``: exponential-mechanism median and MAD per
coefficient, at most 20% of epsilon, only from 5,234 blocks at 9
parameters and epsilon = 1; below that the public default range and the
whole budget to the mean).  CPU is
tight (2 shared cores): OLS and logit take 50, 10 and 3 replications at
n = 1e4, 1e5, 1e6; QuantReg's IRLS on small blocks is slow (about 17 ms a
block, 22,222 blocks at 1e6), so median regression takes 20, 2 and 1, and
1e6 only with ``--full`` (about 6 minutes).  ``--bias`` measures the logit's
bias corrections instead (``sample_aggregate_bias.json`` and ``.md``;
``--bias-table`` rewrites that ``.md`` from the ``.json`` without measuring).

    python benchmarks/sample_aggregate.py [--quick] [--full] [--bias [--bias-table]]

Writes ``benchmarks/results/sample_aggregate[_quick].json`` and ``.md``.
"""

from __future__ import annotations

import argparse
import json
import math
import pathlib
import sys
import time
import warnings

import numpy as np
import pandas as pd

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))

import dpmodels as dpm  # noqa: E402
from dpmodels.mechanisms import sample_aggregate as sa  # noqa: E402

EPS = 1.0
D = 8
BETA = np.array([0.2, 0.5, -0.5, 0.4, -0.4, 0.3, -0.3, 0.2, -0.2])
COLS = [f"x{i}" for i in range(1, D + 1)]
BOUNDS = {c: (-4.0, 4.0) for c in COLS} | {"y": (-10.0, 10.0)}
PB = (-4.0, 4.0)
FAMILY = {"ols": (dpm.dp_ols, "y"), "logit": (dpm.dp_logit, "yb"),
          "quantreg": (dpm.dp_quantreg, "y")}


def data(n: int, seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, D)).clip(-4, 4)
    eta = BETA[0] + X @ BETA[1:]
    df = pd.DataFrame(X, columns=COLS)
    df["y"] = np.clip(eta + rng.normal(size=n), -10, 10)
    df["yb"] = (rng.random(n) < 1 / (1 + np.exp(-eta))).astype(int)
    return df


def mle_variance(family: str, df: pd.DataFrame) -> np.ndarray:
    X = np.column_stack([np.ones(len(df)), df[COLS].to_numpy()])
    if family == "logit":
        p = 1 / (1 + np.exp(-(X @ BETA)))
        info = (X * (p * (1 - p))[:, None]).T @ X
    else:
        info = X.T @ X / (math.pi / 2 if family == "quantreg" else 1.0)
    return np.diag(np.linalg.inv(info))


class BlockCache:
    """Both SA variants of one data set share the block fits: the release's
    block_estimates is wrapped to fit once (in coefficients) and transform."""

    def __init__(self):
        self.theta = None
        self.real = sa.block_estimates

    def __call__(self, family, design, parts, q, J, correction, A, b):
        if self.theta is None:
            p = A.shape[0]
            self.theta = self.real(family, design, parts, q, J, correction, np.eye(p),
                                   np.zeros(p))
        theta, ok = self.theta
        W = np.where(ok[:, None], theta @ A.T + b, np.nan)
        self.last = (W, ok)
        return W, ok


def run_sa(family, df, seed, cache, param_bounds):
    fn, resp = FAMILY[family]
    formula = f"{resp} ~ " + " + ".join(COLS)
    kw = {"q": 0.5} if family == "quantreg" else {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = fn(formula, df, epsilon=EPS, bounds=BOUNDS, levels={"yb": [0, 1]},
                 method="sample-aggregate", param_bounds=param_bounds, random_state=seed,
                 **kw).fit()
    rel = res.release
    W, ok = cache.last
    Wc, _ = sa.clamped_sums(W, ok, rel.lo, rel.hi)
    var_w = Wc.var(axis=0, ddof=1) / rel.blocks + 2 * rel.noise_scale**2
    Ainv = np.linalg.inv(rel.A)
    # the working coordinates' covariance, from the blocks (diagnostic) and the noise
    cov_w = np.cov(Wc, rowvar=False) / rel.blocks + np.diag(2 * rel.noise_scale**2)
    var = np.diag(Ainv @ cov_w @ Ainv.T)
    ci = np.asarray(res.conf_int())
    cover = (ci[:, 0] <= BETA) & (BETA <= ci[:, 1])
    return dict(est=np.asarray(res.params), var=var, cover=cover, fail=1 - ok.mean(),
                k=rel.blocks, se=np.asarray(res.bse), var_w=var_w)


def run_hist(family, df, seed):
    fn, resp = FAMILY[family]
    formula = f"{resp} ~ " + " + ".join(COLS)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = fn(formula, df, epsilon=EPS, bounds=BOUNDS, levels={"yb": [0, 1]},
                   method="histogram", random_state=seed)
        res = model.fit(cov_type="naive", **({"q": 0.5} if family == "quantreg" else {}))
    return np.asarray(res.params)


def markdown(table: pd.DataFrame) -> str:
    cols = ["family", "n", "R", "method", "k", "var_ratio", "mse_ratio", "cover", "cover_se",
            "se_over_sd", "fail"]

    def c_is_count(v):
        return v.is_integer() and abs(v) >= 1000

    def cell(v):
        if v is None or (isinstance(v, float) and math.isnan(v)):
            return ""
        if isinstance(v, float) and c_is_count(v):
            return f"{int(v):,}"
        if isinstance(v, float):
            return f"{v:.3g}"
        return f"{v:,}" if isinstance(v, (int, np.integer)) else str(v)

    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for _, row in table.iterrows():
        lines.append("| " + " | ".join(cell(row[c]) for c in cols) + " |")
    return "\n".join(lines)


def bias_check(R: int = 3, n: int = 100_000) -> list[dict]:
    """Smith's bias correction, measured: logit, epsilon = inf (no clamping, no
    noise: the average of the blocks' estimates), default blocks, with and
    without the split-half correction (the blocks of epsilon = 1); the mean
    error over R data sets in
    units of the MLE's standard deviation (averaged over the 9 coefficients)."""
    out = []
    for corr in (None, "split-half", "firth"):
        errs, sds = [], []
        t0 = time.perf_counter()
        for r in range(R):
            df = data(n, 500 + r)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                rel = dpm.dp_logit("yb ~ " + " + ".join(COLS), df, epsilon=math.inf,
                                   bounds=BOUNDS, levels={"yb": [0, 1]},
                                   method="sample-aggregate", bias_correction=corr,
                                   blocks=sa.default_blocks(n, 9, EPS, "logit"),
                                   random_state=r).release
            errs.append(rel.params - BETA)
            sds.append(np.sqrt(mle_variance("logit", df)))
        z = np.mean(errs, axis=0) / np.mean(sds, axis=0)
        out.append(dict(correction=str(corr), n=n, R=R, k=rel.blocks,
                        mean_abs_bias_in_mle_sd=float(np.mean(np.abs(z))),
                        slope_bias_in_mle_sd=[round(float(v), 2) for v in z[1:]],
                        seconds=time.perf_counter() - t0))
        print(out[-1], flush=True)
    return out


BIAS_NAMES = {"None": "none", "split-half": "split-half jackknife",
              "firth": "firth (analytic, the logit's default)"}


def bias_table(res: list[dict]) -> str:
    """The ``--bias`` result as a markdown table (``sample_aggregate_bias.md``)."""
    lines = ["| correction | n | R | k | mean abs. bias (MLE sd) | largest slope bias "
             "(MLE sd) | seconds |", "|---|---|---|---|---|---|---|"]
    for r in res:
        worst = max(r["slope_bias_in_mle_sd"], key=abs)
        lines.append(f"| {BIAS_NAMES.get(r['correction'], r['correction'])} | {r['n']:,} | "
                     f"{r['R']} | {r['k']:,} | {r['mean_abs_bias_in_mle_sd']:.2f} | "
                     f"{worst:+.2f} | {r['seconds']:.0f} |")
    return "\n".join(lines) + "\n"


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--full", action="store_true")
    ap.add_argument("--families", default="ols,logit,quantreg")
    ap.add_argument("--sizes", default=None, help="comma-separated n (default: all)")
    ap.add_argument("--tag", default="", help="suffix of the result files")
    ap.add_argument("--bias", action="store_true",
                    help="only measure the bias correction (logit, epsilon=inf)")
    ap.add_argument("--bias-table", action="store_true",
                    help="only rewrite sample_aggregate_bias[_quick].md from its .json "
                         "(no measurement)")
    args = ap.parse_args(argv)
    if args.bias or args.bias_table:
        out = pathlib.Path(__file__).parent / "results"
        out.mkdir(exist_ok=True)
        stem = out / f"sample_aggregate_bias{'_quick' if args.quick else ''}"
        if args.bias_table:
            res = json.loads(stem.with_suffix(".json").read_text())
        else:
            res = bias_check(2 if args.quick else 3, 20_000 if args.quick else 100_000)
            stem.with_suffix(".json").write_text(json.dumps(res, indent=1))
        stem.with_suffix(".md").write_text(bias_table(res))
        return
    if args.quick:
        plan = {10_000: 3, 30_000: 2}
    else:
        plan = {10_000: 50, 100_000: 10, 1_000_000: 3}
    if args.sizes:
        plan = {int(float(v)): plan.get(int(float(v)), 1) for v in args.sizes.split(",")}
    rows = []
    for family in args.families.split(","):
        for n, R in plan.items():
            if family == "quantreg" and n >= 1_000_000 and not args.full:
                continue
            if family == "quantreg":  # QuantReg's IRLS: ~17 ms a block
                R = min(R, {10_000: 20, 100_000: 2}.get(n, 1))
            acc = {"pb": [], "pr": [], "hist": [], "vmle": []}
            t0 = time.perf_counter()
            for r in range(R):
                df = data(n, 100 * r + 7)
                acc["vmle"].append(mle_variance(family, df))
                cache = BlockCache()
                sa.block_estimates = cache
                try:
                    acc["pb"].append(run_sa(family, df, r, cache, PB))
                    acc["pr"].append(run_sa(family, df, r + 10_000, cache, None))
                finally:
                    sa.block_estimates = cache.real
                acc["hist"].append(run_hist(family, df, r))
            elapsed = time.perf_counter() - t0
            vmle = np.mean(acc["vmle"], axis=0)
            for name, key in (("SA, param_bounds", "pb"), ("SA, private range", "pr")):
                est = np.array([a["est"] for a in acc[key]])
                var = np.mean([a["var"] for a in acc[key]], axis=0)
                cover = np.concatenate([a["cover"] for a in acc[key]])
                mse = ((est - BETA) ** 2).mean(axis=0)
                rows.append(dict(
                    family=family, n=n, R=R, method=name, k=acc[key][0]["k"],
                    var_ratio=float(np.mean(var / vmle)),
                    var_ratio_slopes_median=float(np.median(var[1:] / vmle[1:])),
                    mse_ratio=float(np.mean(mse / vmle)),
                    cover=float(cover.mean()),
                    cover_se=float(math.sqrt(max(cover.mean() * (1 - cover.mean()), 1e-12)
                                             / cover.size)),
                    se_over_sd=float(np.mean(np.mean([a["se"] for a in acc[key]], axis=0)
                                             / np.sqrt(var))),
                    fail=float(np.mean([a["fail"] for a in acc[key]])), seconds=elapsed))
            est = np.array(acc["hist"])
            rows.append(dict(family=family, n=n, R=R, method="histogram", k=None,
                             var_ratio=float(np.mean(est.var(axis=0, ddof=1) / vmle))
                             if R > 1 else None, var_ratio_slopes_median=None,
                             mse_ratio=float(np.mean(((est - BETA) ** 2).mean(axis=0) / vmle)),
                             cover=None, cover_se=None, se_over_sd=None, fail=None,
                             seconds=elapsed))
            print(pd.DataFrame(rows[-3:]).drop(columns=["seconds"]).to_string(index=False),
                  f"  [{elapsed:.0f}s]", flush=True)
    table = pd.DataFrame(rows)
    out = pathlib.Path(__file__).parent / "results"
    out.mkdir(exist_ok=True)
    stem = "sample_aggregate" + ("_quick" if args.quick else "") + args.tag
    (out / f"{stem}.json").write_text(json.dumps(rows, indent=1))
    md = markdown(table)
    (out / f"{stem}.md").write_text(md + "\n")
    print()
    print(md)


if __name__ == "__main__":
    main()
