"""The effective sample size of local privacy, measured by simulation beside
the central release at the same epsilon (docs/local.md).

Duchi, Jordan & Wainwright (2013; the slides "Sample size reduction: n -> alpha^2 n"):
an alpha-locally-private channel contracts the KL divergence between two
populations by ``4 (e^alpha - 1)^2``, so n private reports carry about as much
information as ``alpha^2 n`` raw rows (up to a constant).  For k-ary
randomized response on a binary variable the constant is known in closed
form: the debiased mean of a Bernoulli(pi) variable has variance
``r (1 - r) / (n (p - q)^2)`` with ``r = q + (p - q) pi``, so

    n' / n = pi (1 - pi) (p - q)^2 / (r (1 - r))   (= tanh(eps/2)^2 at pi = 1/2,
                                                    about eps^2 / 4 for small eps).

Two estimands, R simulated data sets each, every epsilon:

* ``mean``: ``dp_ols("y ~ 1", ...)`` of a Bernoulli(0.3) y (k = 2 cells);
* ``slope``: ``dp_ols("y ~ x", ...)`` with x uniform on {0, 1, 2, 3} and
  P(y = 1 | x) = 0.2 + 0.15 x (k = 8 cells).

For each: n'/n = (the non-private estimate's exact variance) / (the local
estimate's mean squared error about the population value over the R data
sets); the closed form of that ratio by the delta method (the gradient g of the
estimate in the cell frequencies, ``g' S_raw g / g' S_local g`` with S_local the
per-row covariance of the debiased counts under the channel: for the mean this
is the formula above); tanh(eps/2)^2 and eps^2/4; the same ratio for the
central release (``dp_ols`` on the raw rows at the same epsilon, histogram
method, default threshold); the coverage of the local fit's 95% intervals
(bootstrap of the local channel, ``cov_type="dp"``) around the population
value; and the raw estimate's simulated MSE over its exact variance (a check
of the simulation's own noise: about +-sqrt(2/R)).

Run:  python benchmarks/local.py [--quick]
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
import statsmodels.formula.api as smf  # noqa: E402

RESULTS = pathlib.Path(__file__).with_name("results")


def data(kind: str, n: int, rng: np.random.Generator) -> pd.DataFrame:
    if kind == "mean":
        return pd.DataFrame({"y": (rng.random(n) < 0.3).astype(np.int64)})
    x = rng.integers(0, 4, n)
    y = (rng.random(n) < 0.2 + 0.15 * x).astype(np.int64)
    return pd.DataFrame({"x": x, "y": y})


SPEC = {
    "mean": dict(formula="y ~ 1", columns=["y"], levels={"y": [0, 1]}, param="Intercept",
                 truth=0.3),
    "slope": dict(formula="y ~ x", columns=["y", "x"], levels={"y": [0, 1], "x": [0, 1, 2, 3]},
                  param="x", truth=0.15),
}


def population(kind: str):
    """(cells' x values, cells' y values, cell probabilities) of the population, in
    the release's cell order (y first, then x)."""
    if kind == "mean":
        return np.zeros(2), np.array([0.0, 1.0]), np.array([0.7, 0.3])
    xs = np.arange(4.0)
    p1 = 0.2 + 0.15 * xs
    y = np.repeat([0.0, 1.0], 4)
    x = np.tile(xs, 2)
    probs = np.concatenate([(1 - p1) / 4, p1 / 4])
    return x, y, probs


def estimate(kind: str, x, y, w) -> float:
    """The fitted parameter from cell weights w (the mean, or the OLS slope)."""
    w = np.asarray(w, float)
    if kind == "mean":
        return float(w @ y / w.sum())
    mx, my = w @ x / w.sum(), w @ y / w.sum()
    return float((w * (x - mx) * (y - my)).sum() / (w * (x - mx) ** 2).sum())


def per_row_covariance(ch, pi) -> np.ndarray:
    """Covariance of one row's contribution to the debiased counts (sampling and
    channel together): k-RR reports are multinomial(r), r = q + (p - q) pi; OUE's
    bits have Var r_a (1 - r_a) and Cov pi_a q/2 + pi_b q/2 + (1 - pi_a - pi_b) q^2
    - r_a r_b; both divided by (p - q)^2."""
    p, q = ch.p, ch.q
    r = q + (p - q) * pi
    if ch.name == "krr":
        S = np.diag(r) - np.outer(r, r)
    else:
        S = (np.add.outer(pi, pi) * q / 2 + (1 - np.add.outer(pi, pi)) * q * q
             - np.outer(r, r))
        np.fill_diagonal(S, r * (1 - r))
    return S / (p - q) ** 2


def closed_form(kind: str, eps: float, channel: str):
    """(n'/n of the debiased-histogram estimate by the delta method, the non-private
    estimate's variance times n): ``g' S_raw g / g' S_local g`` with g the gradient of
    the estimate in the cell frequencies, S_raw = diag(pi) - pi pi'."""
    x, y, pi = population(kind)
    g = np.empty(pi.size)
    h = 1e-6
    for i in range(pi.size):
        e = np.zeros(pi.size)
        e[i] = h
        g[i] = (estimate(kind, x, y, pi + e) - estimate(kind, x, y, pi - e)) / (2 * h)
    v_raw = g @ (np.diag(pi) - np.outer(pi, pi)) @ g
    ch = dpm.local.Channel(channel, pi.size, eps)
    return float(v_raw / (g @ per_row_covariance(ch, pi) @ g)), float(v_raw)


def run(kind: str, eps: float, n: int, R: int, n_boot: int, seed: int) -> dict:
    spec = SPEC[kind]
    rng = np.random.default_rng(seed)
    local, central, raw, cover = [], [], [], 0
    t0 = time.perf_counter()
    for r in range(R):
        df = data(kind, n, rng)
        raw.append(smf.ols(spec["formula"], df).fit().params[spec["param"]])
        rel = dpm.local.randomize(df, columns=spec["columns"], epsilon=eps,
                                  levels=spec["levels"], missing="raise",
                                  random_state=seed * 100_000 + r)
        res = dpm.dp_ols(spec["formula"], rel).fit(n_boot=n_boot, random_state=r)
        local.append(res.params[spec["param"]])
        lo, hi = np.asarray(res.conf_int().loc[spec["param"]])
        cover += lo <= spec["truth"] <= hi
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            c = dpm.dp_ols(spec["formula"], df, epsilon=eps, levels=spec["levels"],
                           method="histogram", random_state=seed * 100_000 + r
                           ).fit(cov_type="naive")
        central.append(c.params[spec["param"]])
    ratio, v_unit = closed_form(kind, eps, rel.channel.name)
    v_pop = v_unit / n  # the non-private estimate's variance, exact (delta method)
    v_loc = np.mean((np.array(local) - spec["truth"]) ** 2)  # MSE about the population value
    v_cen = np.mean((np.array(central) - spec["truth"]) ** 2)
    v_raw = np.mean((np.array(raw) - spec["truth"]) ** 2)  # its simulated value, a check
    return dict(
        estimand=kind, epsilon=eps, n=n, R=R, channel=rel.channel.name, k=rel.channel.k,
        local_bias=float(np.mean(local) - spec["truth"]),
        local_mse=float(v_loc), raw_mse=float(v_pop), central_mse=float(v_cen),
        ratio_local=float(v_pop / v_loc), ratio_central=float(v_pop / v_cen),
        closed_form=ratio, raw_mse_over_exact=float(v_raw / v_pop),
        eps2_over_4=eps**2 / 4, tanh2=math.tanh(eps / 2) ** 2,
        coverage=cover / R, seconds=time.perf_counter() - t0)


def markdown(payload: dict) -> str:
    """The measured table of a run (``local.json``) as markdown, the one docs/local.md
    includes: the numbers are the benchmark's, never retyped."""
    head = ("| estimand | ε | channel | k | n' local (rows) | n'/n local (measured) "
            "| n'/n closed form | tanh²(ε/2) | ε²/4 | n'/n central | coverage of 95% CI "
            "| raw MSE / exact |")
    lines = [f"n = {payload['n']:,} rows, R = {payload['R']} data sets per row, "
             f"B = {payload['n_boot']} bootstrap replicates "
             "(`python benchmarks/local.py`):", "", head, "|---" * 12 + "|"]
    for r in payload["rows"]:
        cells = [r["estimand"], f"{r['epsilon']:g}", r["channel"], str(r["k"]),
                 f"{round(r['ratio_local'] * r['n']):,}", f"{r['ratio_local']:.4g}",
                 f"{r['closed_form']:.4g}", f"{r['tanh2']:.4g}", f"{r['eps2_over_4']:.4g}",
                 f"{r['ratio_central']:.3g}", f"{r['coverage']:.3f}",
                 f"{r['raw_mse_over_exact']:.3g}"]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def main(argv=None) -> pd.DataFrame | None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="few replications (a smoke test)")
    ap.add_argument("--markdown-only", action="store_true",
                    help="only rewrite results/local.md from results/local.json")
    args = ap.parse_args(argv)
    if args.markdown_only:
        payload = json.loads((RESULTS / "local.json").read_text())
        (RESULTS / "local.md").write_text(markdown(payload))
        return None
    if args.quick:
        eps_list, R, n, n_boot = (0.5, 2.0), 20, 5000, 50
    else:
        eps_list, R, n, n_boot = (0.25, 0.5, 1.0, 2.0, 4.0), 200, 10_000, 100
    rows = []
    for kind in ("mean", "slope"):
        for i, eps in enumerate(eps_list):
            rows.append(run(kind, eps, n, R, n_boot, seed=1 + 10 * i + (kind == "slope")))
            print(f"  {kind} eps={eps}: {rows[-1]['seconds']:.1f}s", file=sys.stderr)
    table = pd.DataFrame(rows)
    table["n_eff_local"] = (table["ratio_local"] * table["n"]).round().astype(int)
    show = table[["estimand", "epsilon", "channel", "k", "n_eff_local", "ratio_local",
                  "closed_form", "tanh2",
                  "eps2_over_4", "ratio_central", "coverage", "raw_mse_over_exact"]].copy()
    show.columns = ["estimand", "eps", "channel", "k", "n' local", "n'/n local", "closed form",
                    "tanh^2(eps/2)", "eps^2/4", "n'/n central", "coverage 95%",
                    "raw MSE/exact"]
    with pd.option_context("display.width", 200, "display.float_format", "{:.4g}".format):
        print(f"n = {n:,} rows, R = {R} data sets, B = {n_boot} bootstrap replicates")
        print(show.to_string(index=False))
    RESULTS.mkdir(exist_ok=True)
    out = RESULTS / ("local_quick.json" if args.quick else "local.json")
    payload = dict(n=n, R=R, n_boot=n_boot, rows=rows)
    out.write_text(json.dumps(payload, indent=1))
    if not args.quick:
        (RESULTS / "local.md").write_text(markdown(payload))
    print(f"written {out}")
    return table


if __name__ == "__main__":
    main()
