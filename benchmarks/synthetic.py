"""Synthetic data from a release: Wasserman & Zhou's two schemes, and regression
on synthetic rows.

Part 1 (the slides' accuracy comparison, Theorems 6-8).  For each n in a grid
and each data law (Beta(10, 10) on [0, 1]; a 2-D law, Beta(10, 10) x Beta(2, 5)
on [0, 1]^2), epsilon = 1:

* **PH** perturbed histogram sampling: ``dpm.release`` (discrete Laplace of
  scale 2/epsilon, Wasserman & Zhou's Laplace of variance 8/alpha^2;
  ``threshold="zero"``: their ``max(D_j, 0)``) with ``K = round(n**(1/(2+r)))``
  bins per axis (``m ~ n**(r/(2+r))``), then ``release.sample(size=n)``
  (``k = n``; uniform within bins);
* **SH-KS** the smoothed histogram tuned for KS (Theorem 6):
  ``K = round(n**(1/(6+r)))`` bins per axis, ``k = round(n**(4/(6+r)))`` rows;
* **SH-L2** the smoothed histogram tuned for L2 (Theorem 7):
  ``K = round(n**(1/(2r+3)))``, ``k = round(n**((r+2)/(2r+3)))``;

(every K at least 2; delta is the smallest meeting Theorem 5's bound).  The
distances of the synthetic rows Z to the true law:

* KS ``sup |F - F_Z|``: exact at the sample points in 1-D, on a 200 x 200
  grid of corners in 2-D;
* squared L2 ``int (p - f_Z)^2`` with ``f_Z`` the histogram of Z on the
  scheme's own m bins (the slides' eq. (6)), computed exactly from the true
  cdf (bin integrals) and the closed form of ``int p^2``.

Each cell of the table is the mean over the replications; the figure draws
the measured means with the theorems' rates beside them (each rate scaled to
pass through the scheme's measured value at the smallest n).

Part 2 (regression on synthetic rows).  ``y = 1 + 2 x + N(0, 0.5^2)``, x ~
Beta(2, 2) on [0, 1], y bounded in (-1, 5); epsilon = 1.  Per replication one
release of (x, y) (``bins="auto"``), then the slope of y ~ x from

* ``dp_ols`` on the release (the library's fit, its dp bootstrap standard
  errors: honest about the noise);
* statsmodels OLS on ``release.sample()`` rows (size = the noisy total), and on
  ``release.sample(within="density")`` rows, with the naive OLS standard
  errors a user of synthetic rows would report;
* statsmodels OLS on ``smoothed_sample`` rows (a separate release, Theorem 6's
  m and k), naive standard errors;
* statsmodels OLS on the raw rows (no privacy; the reference).

Reported: RMSE of the slope, coverage of the nominal 95% interval of the
slope, mean interval width.

Part 3 (the slides' example).  Beta(10, 10), n in {100, 1000}, alpha in
{0.1, 0.01}: the mean integrated squared error of the histogram of the
original data and of the perturbed histogram (``max(D_j, 0)`` normalized),
against the number of cells (figure ``synthetic_example.png``).

Run from the repository root::

    nice -n 5 python benchmarks/synthetic.py           # n = 1e2..1e5, 5 reps; 30 regression reps
    nice -n 5 python benchmarks/synthetic.py --quick   # n = 1e2..1e4, 2 reps; 8 regression reps

Needs matplotlib (the ``plot`` extra) for the figures.  Writes ``benchmarks/results/synthetic.md``, ``benchmarks/results/synthetic_accuracy.png`` and
``synthetic_example.png`` (copied to ``docs/images/`` for the doc page); ``--quick`` writes
the same names with ``_quick`` and leaves ``docs/images/`` alone.
"""

from __future__ import annotations

import argparse
import math
import os
import shutil
import sys
import time
import warnings

import numpy as np
import pandas as pd
from scipy import special, stats

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

import dpmodels as dpm  # noqa: E402
from dpmodels.core.errors import ReleaseWarning  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
RESULTS = os.path.join(HERE, "results")
DOCS_IMG = os.path.join(HERE, "..", "docs", "images")
EPS = 1.0
#: The laws: per axis Beta(a, b) on [0, 1] (independent axes).
LAWS = {"1-D Beta(10,10)": [(10, 10)], "2-D Beta(10,10) x Beta(2,5)": [(10, 10), (2, 5)]}
SCHEMES = ("PH", "SH-KS", "SH-L2")
GRID = 200


def settings(scheme: str, n: int, r: int) -> tuple[int, int]:
    """Bins per axis K and synthetic rows k of a scheme (the theorems' rates, constant 1)."""
    if scheme == "PH":
        return max(2, round(n ** (1 / (2 + r)))), n
    if scheme == "SH-KS":
        return max(2, round(n ** (1 / (6 + r)))), max(1, round(n ** (4 / (6 + r))))
    return max(2, round(n ** (1 / (2 * r + 3)))), max(1, round(n ** ((r + 2) / (2 * r + 3))))


def draw(law, n, rng) -> pd.DataFrame:
    return pd.DataFrame({f"x{i}": rng.beta(a, b, n) for i, (a, b) in enumerate(law)})


def synthetic(scheme, data, law, n, seed) -> tuple[np.ndarray, int]:
    r = len(law)
    K, k = settings(scheme, n, r)
    cols = list(data.columns)
    bounds = {c: (0.0, 1.0) for c in cols}
    if scheme == "PH":
        rel = dpm.release(data, columns=cols, epsilon=EPS, bounds=bounds, bins=K,
                          threshold="zero", random_state=seed)
        rows = rel.sample(size=k, random_state=seed + 1)
    else:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ReleaseWarning)  # large delta at small n
            rows = dpm.smoothed_sample(data, columns=cols, epsilon=EPS, size=k, bounds=bounds,
                                       bins=K, random_state=seed).frame
    return rows[cols].to_numpy(), K


def ks_distance(law, Z) -> float:
    if len(law) == 1:
        (a, b), = law
        return float(stats.kstest(Z[:, 0], stats.beta(a, b).cdf).statistic)
    g = np.linspace(0, 1, GRID + 1)
    F = np.outer(stats.beta(*law[0]).cdf(g), stats.beta(*law[1]).cdf(g))
    h, _, _ = np.histogram2d(Z[:, 0], Z[:, 1], bins=[g, g])
    FZ = np.zeros_like(F)
    FZ[1:, 1:] = np.cumsum(np.cumsum(h, 0), 1) / len(Z)
    return float(np.abs(F - FZ).max())


def l2_distance(law, Z, K) -> float:
    """int (p - f_Z)^2 with f_Z the histogram of Z on K bins per axis."""
    edges = np.linspace(0, 1, K + 1)
    p2, mass = 1.0, None
    for i, (a, b) in enumerate(law):
        p2 *= special.beta(2 * a - 1, 2 * b - 1) / special.beta(a, b) ** 2
        m_i = np.diff(stats.beta(a, b).cdf(edges))
        mass = m_i if mass is None else np.multiply.outer(mass, m_i)
    q = np.histogramdd(Z, bins=[edges] * len(law))[0] / len(Z)
    vol = (1.0 / K) ** len(law)
    return float(p2 - 2 * np.sum(q * mass) / vol + np.sum(q**2) / vol)


def rates(scheme: str, metric: str, n: np.ndarray, r: int) -> np.ndarray:
    if metric == "KS":
        if scheme == "PH":
            return np.minimum(np.log(n) / n ** (2 / (2 + r)), np.sqrt(np.log(n) / n))
        return np.sqrt(np.log(n)) / n ** (2 / (6 + r))
    if scheme == "PH":
        return n ** (-2 / (2 + r))
    return n ** (-2 / (2 * r + 3))


def accuracy(ns, reps):
    out = []
    for lname, law in LAWS.items():
        for n in ns:
            for rep in range(reps):
                rng = np.random.default_rng(1000 * rep + n)
                data = draw(law, n, rng)
                for scheme in SCHEMES:
                    t0 = time.perf_counter()
                    Z, K = synthetic(scheme, data, law, n, seed=10 * rep + 1)
                    out.append(dict(law=lname, n=n, rep=rep, scheme=scheme, K=K, k=len(Z),
                                    KS=ks_distance(law, Z), L2=l2_distance(law, Z, K),
                                    sec=time.perf_counter() - t0))
        print(f"  {lname}: done", flush=True)
    return pd.DataFrame(out)


def slope_table(acc: pd.DataFrame) -> pd.DataFrame:
    """Fitted log-log slope of each scheme's mean distance against n, next to the
    theorems' exponent (the log factors left out)."""
    rows = []
    for (lname, scheme), g in acc.groupby(["law", "scheme"], sort=False):
        r = len(LAWS[lname])
        mean = g.groupby("n")[["KS", "L2"]].mean()
        ln = np.log(mean.index.to_numpy(float))
        th_ks = (-min(2 / (2 + r), 0.5) if scheme == "PH" else -2 / (6 + r))
        th_l2 = -2 / (2 + r) if scheme == "PH" else -2 / (2 * r + 3)
        rows.append(dict(law=lname, scheme=scheme,
                         KS_slope=np.polyfit(ln, np.log(mean["KS"]), 1)[0], KS_theory=th_ks,
                         L2_slope=np.polyfit(ln, np.log(np.maximum(mean["L2"], 1e-12)), 1)[0],
                         L2_theory=th_l2))
    return pd.DataFrame(rows)


def plot(acc: pd.DataFrame, path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(2, 2, figsize=(10, 8))
    colours = {"PH": "C0", "SH-KS": "C1", "SH-L2": "C2"}
    for i, (lname, law) in enumerate(LAWS.items()):
        r = len(law)
        for j, metric in enumerate(("KS", "L2")):
            ax = axes[i, j]
            for scheme in SCHEMES:
                g = acc[(acc.law == lname) & (acc.scheme == scheme)].groupby("n")[metric].mean()
                n = g.index.to_numpy(float)
                ax.loglog(n, g.to_numpy(), "o-", color=colours[scheme], label=f"{scheme} measured")
                th = rates(scheme, metric, n, r)
                ax.loglog(n, th * g.iloc[0] / th[0], "--", color=colours[scheme],
                          label=f"{scheme} theorem rate")
            ax.set_title(f"{lname}: {'KS' if metric == 'KS' else 'squared L2'}")
            ax.set_xlabel("n")
            ax.grid(True, which="both", alpha=0.3)
            if i == 0 and j == 0:
                ax.legend(fontsize=7)
    fig.suptitle(f"Synthetic rows vs the true law, epsilon = {EPS:g} (mean over replications)")
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)


# ---- part 3: the slides' example (MISE of the perturbed histogram vs the number of cells) ----

EXAMPLE_BINS = (2, 3, 4, 5, 6, 8, 10, 12, 15, 20, 25, 30, 40)


def ise(q: np.ndarray, K: int) -> float:
    """int (p - f)^2 for Beta(10, 10) and the histogram with cell probabilities q on K bins."""
    edges = np.linspace(0, 1, K + 1)
    p2 = special.beta(19, 19) / special.beta(10, 10) ** 2
    mass = np.diff(stats.beta(10, 10).cdf(edges))
    return float(p2 - 2 * K * np.sum(q * mass) + K * np.sum(q**2))


def example(reps: int) -> pd.DataFrame:
    """The slides' simulation: Beta(10, 10), n in {100, 1000}, alpha in {0.1, 0.01}; the
    mean integrated squared error of the histogram of the original data and of the
    perturbed histogram (q_j = max(D_j, 0) / sum), against the number of cells."""
    out = []
    for n in (100, 1000):
        for alpha in (0.1, 0.01):
            for K in EXAMPLE_BINS:
                orig, pert = [], []
                for rep in range(reps):
                    rng = np.random.default_rng(50_000 + 1000 * rep + K + n)
                    df = pd.DataFrame({"x": rng.beta(10, 10, n)})
                    counts = np.histogram(df["x"], bins=np.linspace(0, 1, K + 1))[0]
                    orig.append(ise(counts / n, K))
                    rel = dpm.release(df, columns=["x"], epsilon=alpha, bounds={"x": (0, 1)},
                                      bins=K, threshold="zero", random_state=rep)
                    q = np.zeros(K)
                    codes = rel.domain.decode(rel.cell_ids)[0]
                    q[codes] = rel.counts
                    pert.append(ise(q / q.sum(), K) if q.sum() > 0 else np.nan)
                out.append(dict(n=n, alpha=alpha, K=K, MISE_original=np.mean(orig),
                                MISE_perturbed=np.nanmean(pert)))
    return pd.DataFrame(out)


def plot_example(ex: pd.DataFrame, path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(2, 2, figsize=(9, 7))
    for i, n in enumerate((100, 1000)):
        for j, alpha in enumerate((0.1, 0.01)):
            ax = axes[i, j]
            g = ex[(ex.n == n) & (ex.alpha == alpha)]
            ax.semilogy(g.K, g.MISE_original, "o-", label="original histogram")
            ax.semilogy(g.K, g.MISE_perturbed, "s-", label="perturbed histogram")
            ax.set_title(f"n = {n}, alpha = {alpha:g}")
            ax.set_xlabel("number of cells")
            ax.set_ylabel("MISE")
            ax.grid(True, which="both", alpha=0.3)
            if i == 0 and j == 0:
                ax.legend(fontsize=8)
    fig.suptitle("The slides' example: Beta(10, 10), MISE against the number of cells")
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)


# ---- part 2: regression on synthetic rows ----------------------------------------------

TRUE_SLOPE = 2.0


def _ols(frame):
    import statsmodels.formula.api as smf

    res = smf.ols("y ~ x", frame).fit()
    lo, hi = res.conf_int().loc["x"]
    return res.params["x"], lo, hi


def regression(ns, reps):
    out = []
    for n in ns:
        for rep in range(reps):
            rng = np.random.default_rng(7 + 100 * rep + n)
            x = rng.beta(2, 2, n)
            df = pd.DataFrame({"x": x, "y": 1 + TRUE_SLOPE * x + rng.normal(0, 0.5, n)})
            bounds = {"x": (0.0, 1.0), "y": (-1.0, 5.0)}
            rel = dpm.release(df, columns=["x", "y"], epsilon=EPS, bounds=bounds,
                              random_state=rep)
            res = dpm.dp_ols("y ~ x", rel).fit(random_state=rep)
            lo, hi = res.conf_int().loc["x"]
            rows = {"dp_ols on the release (dp bootstrap SE)": (res.params["x"], lo, hi)}
            rows["OLS on release.sample() (naive SE)"] = _ols(rel.sample(random_state=rep))
            rows["OLS on release.sample(within='density') (naive SE)"] = _ols(
                rel.sample(random_state=rep, within="density"))
            K, k = settings("SH-KS", n, 2)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", ReleaseWarning)
                sh = dpm.smoothed_sample(df, columns=["x", "y"], epsilon=EPS, size=k,
                                         bounds=bounds, bins=K, random_state=rep)
            rows[f"OLS on smoothed_sample rows, k={k} (naive SE)"] = _ols(sh.frame)
            rows["OLS on the raw rows (not private)"] = _ols(df)
            for method, (b, lo, hi) in rows.items():
                out.append(dict(n=n, rep=rep, method=method, slope=b,
                                covered=lo <= TRUE_SLOPE <= hi, width=hi - lo))
        print(f"  regression n={n}: done", flush=True)
    return pd.DataFrame(out)


def regression_table(reg: pd.DataFrame) -> pd.DataFrame:
    g = reg.groupby(["n", "method"], sort=False)
    return pd.DataFrame({
        "slope RMSE": g["slope"].apply(lambda s: math.sqrt(np.mean((s - TRUE_SLOPE) ** 2))),
        "mean slope": g["slope"].mean(),
        "95% CI coverage": g["covered"].mean(),
        "mean CI width": g["width"].mean(),
    }).reset_index()


def markdown(frame: pd.DataFrame) -> str:
    """A pipe table (no extra dependency)."""
    def cell(v):
        if isinstance(v, (bool, np.bool_)):
            return str(bool(v))
        if isinstance(v, (float, np.floating)):
            return f"{v:.4g}"
        return str(v)
    head = "| " + " | ".join(map(str, frame.columns)) + " |"
    rule = "|" + "|".join("---" for _ in frame.columns) + "|"
    body = ["| " + " | ".join(cell(v) for v in row) + " |" for row in frame.itertuples(index=False)]
    return "\n".join([head, rule] + body)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="n up to 1e4, fewer replications")
    args = ap.parse_args(argv)
    ns = [100, 1000, 10_000] if args.quick else [100, 1000, 10_000, 100_000]
    reps = 2 if args.quick else 5
    reg_ns = [10_000] if args.quick else [2_000, 20_000]
    reg_reps = 8 if args.quick else 30
    t0 = time.perf_counter()
    print(f"part 1: accuracy, n in {ns}, {reps} replications")
    acc = accuracy(ns, reps)
    print(f"part 2: regression, n in {reg_ns}, {reg_reps} replications")
    reg = regression(reg_ns, reg_reps)
    ex_reps = 20 if args.quick else 100
    print(f"part 3: the slides' example, {ex_reps} replications")
    ex = example(ex_reps)
    elapsed = time.perf_counter() - t0

    os.makedirs(RESULTS, exist_ok=True)
    # a quick run writes *_quick files and leaves the doc page's figures alone
    tag = "_quick" if args.quick else ""
    png = os.path.join(RESULTS, f"synthetic_accuracy{tag}.png")
    plot(acc, png)
    png_ex = os.path.join(RESULTS, f"synthetic_example{tag}.png")
    plot_example(ex, png_ex)
    if not args.quick:
        os.makedirs(DOCS_IMG, exist_ok=True)
        shutil.copy(png, os.path.join(DOCS_IMG, "synthetic_accuracy.png"))
        shutil.copy(png_ex, os.path.join(DOCS_IMG, "synthetic_example.png"))
    best = (ex.loc[ex.groupby(["n", "alpha"]).MISE_perturbed.idxmin(), ["n", "alpha", "K"]]
            .rename(columns={"K": "best K (perturbed)"}))
    best["best K (original)"] = ex.loc[ex.groupby(["n", "alpha"]).MISE_original.idxmin(),
                                       "K"].to_numpy()
    best["MISE perturbed at its best K"] = ex.groupby(["n", "alpha"]).MISE_perturbed.min().to_numpy()
    best["MISE original at its best K"] = ex.groupby(["n", "alpha"]).MISE_original.min().to_numpy()
    table = (acc.groupby(["law", "n", "scheme"], sort=False)
             .agg(K=("K", "first"), k=("k", "first"), KS=("KS", "mean"), L2=("L2", "mean"))
             .reset_index())
    slopes = slope_table(acc)
    rt = regression_table(reg)
    text = "\n".join([
        "# Synthetic data: Wasserman & Zhou's schemes (benchmarks/synthetic.py)",
        "",
        f"Command: `python benchmarks/synthetic.py{' --quick' if args.quick else ''}`; "
        f"epsilon = {EPS:g}; {reps} replications per n (part 1), {reg_reps} (part 2); "
        f"{elapsed:.0f} s.",
        "",
        "## Distance of the synthetic rows to the true law (mean over replications)",
        "",
        "K: bins per axis, k: synthetic rows; KS: sup |F - F_Z|; L2: int (p - f_Z)^2 on the "
        "scheme's bins.",
        "",
        markdown(table),
        "",
        "## Log-log slope against n (measured vs the theorems' exponent, log factors left out)",
        "",
        markdown(slopes),
        "",
        "## Regression on synthetic rows: slope of y ~ x (true 2)",
        "",
        markdown(rt),
        "",
        f"## The slides' example: Beta(10, 10), MISE of the histogram ({ex_reps} replications)",
        "",
        markdown(best),
        "",
        markdown(ex),
        "",
    ])
    with open(os.path.join(RESULTS, f"synthetic{tag}.md"), "w") as fh:
        fh.write(text)
    print(text)


if __name__ == "__main__":
    main()
