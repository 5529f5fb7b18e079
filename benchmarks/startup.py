"""Start-up time of ``import dpmodels`` and of the ``dpmodels`` command (issue 29).

Each case runs in a fresh interpreter, ``--runs`` times (default 7); the table
gives the median wall time (and the fastest and slowest run):

* ``python -c pass``: the interpreter alone, the floor of every case;
* ``import dpmodels``;
* ``dpmodels --help`` and ``dpmodels fit --help`` (through ``python -m dpmodels``,
  which runs the console script's ``main``);
* a full small ``dpmodels fit ols`` from a CSV file: ``datasets.housing(n=2000)``
  with a filled-in schema, epsilon 1, ``--method moments``, fixed seed.

The goal of issue 29: the command starts in under 0.5 s (help and usage errors
import no numerical library).  ``--root DIR`` measures another checkout (for
example one exported with ``git archive`` at an older commit) to compare
before and after on the same machine.

Run::

    PYTHONPATH=. python benchmarks/startup.py [--runs 7] [--root DIR]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parents[1]

SCHEMA = """\
[variables.price]
bounds = [100000, 900000]
[variables.size]
bounds = [0, 3000]
[variables.year]
levels = [1, 2, 3, 4]
[variables.county]
levels = ["County1", "County2", "County3", "County4", "County5", "County6"]
"""


def _wall(argv: list[str], env: dict, runs: int, cwd: str) -> list[float]:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        done = subprocess.run(argv, env=env, capture_output=True, text=True, cwd=cwd)
        times.append(time.perf_counter() - start)
        if done.returncode != 0:
            raise SystemExit(f"{' '.join(argv)} failed:\n{done.stderr[-2000:]}")
    return times


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7, help="runs per case (default 7)")
    parser.add_argument("--root", type=Path, default=HERE,
                        help="the checkout whose dpmodels is timed (default: this one)")
    args = parser.parse_args(argv)
    env = {**os.environ, "PYTHONPATH": str(args.root.resolve())}
    py = sys.executable
    with tempfile.TemporaryDirectory() as tmp:
        data, schema = Path(tmp) / "housing.csv", Path(tmp) / "schema.toml"
        subprocess.run([py, "-c", "import sys, dpmodels; "
                        "dpmodels.front.datasets.housing(n=2000, seed=0).to_csv(sys.argv[1], "
                        "index=False)", str(data)], env=env, check=True, cwd=tmp)
        schema.write_text(SCHEMA)
        cases = [
            ("python -c pass (floor)", [py, "-c", "pass"]),
            ("import dpmodels", [py, "-c", "import dpmodels"]),
            ("dpmodels --help", [py, "-m", "dpmodels", "--help"]),
            ("dpmodels fit --help", [py, "-m", "dpmodels", "fit", "--help"]),
            ("dpmodels fit ols (n=2000, moments)",
             [py, "-m", "dpmodels", "fit", "ols", "price ~ size + year + C(county)",
              "--data", str(data), "--schema", str(schema), "--epsilon", "1",
              "--method", "moments", "--seed", "0"]),
        ]
        print(f"dpmodels start-up, {args.root.resolve()}, median of {args.runs} runs "
              f"(Python {sys.version.split()[0]})\n")
        print(f"| {'case':<36} | median s | min s | max s |")
        print(f"|{'-' * 38}|---------:|------:|------:|")
        for name, command in cases:
            t = _wall(command, env, args.runs, cwd=tmp)  # not this folder: its dpmodels
            print(f"| {name:<36} | {statistics.median(t):8.3f} | {min(t):5.3f} | "
                  f"{max(t):5.3f} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
