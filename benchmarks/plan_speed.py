"""How long `dpm.plan` takes, at its default settings and with several methods
(issue 29: 33 s at the default reps on n = 6,366; the goal is under 10 s for
a typical model: n ~ 6,000, 4 epsilons, a formula of ~5 terms with a factor).

Cases (each a pilot data set resampled to n rows, the default epsilons
0.1, 0.3, 1, 3 unless said):

* ``wages``: ``wage ~ experience * C(sex) + tenure + C(region)`` (14
  coefficients) on `dpm.datasets.wages` (a 2,000-row pilot), n = 6,000,
  ``method="auto"`` (the histogram): the typical model of the goal;
* ``wages-3``: the same with ``method=["auto", "histogram", "moments"]``;
* ``housing``: ``price ~ size + year + C(county)`` on `dpm.datasets.housing`
  (a 2,000-row pilot), n = 6,000;
* ``fair-logit``: the logit of statsmodels' ``fair`` (18 coefficients, the
  formula of ``benchmarks/real_validity.py``), n = 6,366, epsilons 0.3, 1, 3:
  the issue's slow case.

For each: wall-clock and CPU seconds of the whole ``plan`` call, the number
of simulated releases, the seconds per release, and the median Monte Carlo
standard error of the RMSEs relative to the RMSEs (the precision the default
reps buy).  The machine's load moves the wall-clock time; the CPU time (this
process) moves less.

    python benchmarks/plan_speed.py [--cases wages,fair-logit] [--reps N] [--seed 0] [--quick]

Writes ``benchmarks/results/plan_speed.md`` (``plan_speed_quick.md`` with
``--quick``: 3 reps, two epsilons).
"""

from __future__ import annotations

import argparse
import os
import pathlib
import platform
import subprocess
import sys
import time
import warnings

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

import dpmodels as dpm  # noqa: E402

WAGES_FORMULA = "wage ~ experience * C(sex) + tenure + C(region)"
WAGES_DOMAIN = dict(bounds={"wage": (0, 80), "experience": (0, 50), "tenure": (0, 40)},
                    levels={"sex": ["female", "male"],
                            "region": [f"Region{i:02d}" for i in range(1, 11)]})
HOUSING_DOMAIN = dict(bounds={"price": (1e5, 9e5), "size": (0, 3000)},
                      levels={"county": [f"County{i}" for i in range(1, 7)],
                              "year": [1, 2, 3, 4]})


def cases(seed: int) -> dict[str, dict]:
    from real_validity import CASES

    fair = CASES["fair_logit"]
    wages = dict(formula=WAGES_FORMULA, guess=dpm.datasets.wages(n=2000, seed=seed + 1),
                 n=6000, **WAGES_DOMAIN)
    return {
        "wages": wages,
        "wages-3": dict(wages, method=["auto", "histogram", "moments"]),
        "housing": dict(formula="price ~ size + year + C(county)",
                        guess=dpm.datasets.housing(n=2000, seed=seed + 1), n=6000,
                        **HOUSING_DOMAIN),
        "fair-logit": dict(formula=fair["formula"], guess=fair["loader"](), n=6366,
                           model="logit", bounds=fair["bounds"], levels=fair["levels"],
                           epsilon=[0.3, 1, 3]),
    }


def run(name: str, spec: dict, seed: int, reps: int | None, quick: bool) -> dict:
    kw = dict(spec)
    if quick:
        kw.update(reps=3, epsilon=[0.5, 2])
    elif reps is not None:
        kw["reps"] = reps
    wall, cpu = time.perf_counter(), time.process_time()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        p = dpm.plan(random_state=seed, **kw)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    t = p.table
    sims = len(p.methods) * len(p.epsilons) * p.reps
    rel = (t["rmse_se"] / t["rmse"]).replace([np.inf, -np.inf], np.nan).median()
    return {"case": name, "model": p.model, "n": p.n, "coefficients": len(p.coefficients),
            "methods": "+".join(p.methods), "epsilons": len(p.epsilons), "reps": p.reps,
            "interval_reps": p.interval_reps, "releases": sims, "wall_s": wall, "cpu_s": cpu,
            "ms_per_release": 1000 * cpu / sims, "rmse_se_rel": rel}


def table(rows: list[dict]) -> str:
    head = ("| case | model | n | coefs | methods | eps | reps | interval reps | releases | "
            "wall s | CPU s | CPU ms / release | median rmse_se / rmse |")
    lines = [head, "|" + "---|" * 13]
    for r in rows:
        lines.append(
            f"| {r['case']} | {r['model']} | {r['n']:,} | {r['coefficients']} | {r['methods']} "
            f"| {r['epsilons']} | {r['reps']} | {r['interval_reps']} | {r['releases']} | "
            f"{r['wall_s']:.1f} | {r['cpu_s']:.1f} | {r['ms_per_release']:.0f} | "
            f"{100 * r['rmse_se_rel']:.0f}% |")
    return "\n".join(lines)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", default="wages,wages-3,housing,fair-logit")
    ap.add_argument("--reps", type=int, default=None, help="default: plan's own")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--out", default=None)
    args = ap.parse_args(argv)
    specs = cases(args.seed)
    names = [c for c in args.cases.split(",") if c]
    unknown = [c for c in names if c not in specs]
    if unknown:
        ap.error(f"unknown case(s) {unknown}; choose from {list(specs)}")
    rows = []
    for name in names:
        rows.append(run(name, specs[name], args.seed, args.reps, args.quick))
        print(table(rows[-1:]).splitlines()[-1], flush=True)
    try:
        commit = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"],
                                capture_output=True, text=True, check=False).stdout.strip()
    except OSError:
        commit = "?"
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    text = (f"# dpm.plan: time at default settings (benchmarks/plan_speed.py)\n\n"
            f"commit {commit}, seed {args.seed}, {platform.python_version()}, "
            f"{os.cpu_count()} CPUs, load average {load:.1f} at the end"
            f"{', --quick' if args.quick else ''}\n\n" + table(rows) + "\n")
    print()
    print(text)
    out = pathlib.Path(args.out) if args.out else (
        ROOT / "benchmarks" / "results" / f"plan_speed{'_quick' if args.quick else ''}.md")
    out.write_text(text)


if __name__ == "__main__":
    main()
