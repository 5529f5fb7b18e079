"""dp_ols' two moments releases side by side: ``method="ssp"`` (the moments
perturbed on the declared bounds, all of epsilon on them) and ``method="moments"``
(private centres, scales and clipping radius first), on data drawn from a known
line, with bounds that fit the data (``--loose 1``, where the textbook mechanism
should do best) and bounds ten times too wide.

For each (n, epsilon, looseness) and method it prints, over ``--reps`` seeded
data sets: the median width of the 95% interval of the slope ``x1`` among the
finite ones, the share of finite intervals, and the coverage of the true slope
0.5 (an infinite interval covers).

Run: ``python benchmarks/ssp_vs_moments.py [--reps 20] [--out FILE]``; the
published table is ``benchmarks/results/ssp_vs_moments.md`` (session 47,
issue 45's worked example of adding a mechanism).
"""

from __future__ import annotations

import argparse
import subprocess
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

import dpmodels as dpm

#: (n, epsilon, looseness of the bounds)
CELLS = [(500, 1.0, 1), (2000, 1.0, 1), (2000, 1.0, 10), (10_000, 0.5, 1), (10_000, 0.5, 10)]
METHODS = ("moments", "ssp")
SLOPE = 0.5


def data(n: int, seed: int) -> pd.DataFrame:
    """Two uniform covariates on [0, 10] and a line with unit noise, clipped to [-5, 10]."""
    rng = np.random.default_rng(1000 + seed)
    x1, x2 = rng.uniform(0, 10, n), rng.uniform(0, 10, n)
    y = np.clip(1 + SLOPE * x1 - 0.3 * x2 + rng.normal(0, 1, n), -5, 10)
    return pd.DataFrame({"x1": x1, "x2": x2, "y": y})


def cell(n: int, eps: float, loose: int, method: str, reps: int) -> dict:
    """Median finite width, finite share and coverage of the slope's interval."""
    bounds = {"x1": (0, 10 * loose), "x2": (0, 10 * loose), "y": (-5 * loose, 10 * loose)}
    widths, covered = [], 0
    for seed in range(reps):
        res = dpm.dp_ols("y ~ x1 + x2", data(n, seed), epsilon=eps, bounds=bounds,
                         method=method, random_state=seed).fit(n_boot=300, random_state=seed)
        lo, hi = res.conf_int().loc["x1"]
        if np.isfinite(hi - lo):
            widths.append(hi - lo)
        covered += bool(lo <= SLOPE <= hi)
    return {"width": float(np.median(widths)) if widths else np.inf,
            "finite": len(widths) / reps, "cover": covered / reps}


def main(argv=None) -> str:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--out", default=None, help="write the table here (markdown)")
    args = ap.parse_args(argv)
    warnings.simplefilter("ignore")
    t0 = time.time()
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                            text=True, cwd=Path(__file__).parent).stdout.strip()
    lines = ["| n | epsilon | bounds | method | median width (finite) | finite % | coverage % |",
             "|---|---|---|---|---|---|---|"]
    for n, eps, loose in CELLS:
        for m in METHODS:
            r = cell(n, eps, loose, m, args.reps)
            lines.append(f"| {n:,} | {eps:g} | {'tight' if loose == 1 else f'{loose}x wide'} "
                         f"| {m} | {r['width']:.3f} | {100 * r['finite']:.0f} "
                         f"| {100 * r['cover']:.0f} |")
    text = (f"Command: `python benchmarks/ssp_vs_moments.py --reps {args.reps}` at commit "
            f"{commit}, {time.time() - t0:.0f} s; the slope x1 (true value {SLOPE}).\n\n"
            + "\n".join(lines) + "\n")
    print(text)
    if args.out:
        Path(args.out).write_text(text)
    return text


if __name__ == "__main__":
    main()
