"""Speed of the exact noise sampler (dpmodels.core.exact) against numpy's float
geometric sampler it replaced, in the same run.

Rows:

* discrete Laplace draws per second (one core), exact sampler on the OS's
  secure generator (the release's default), on a seeded numpy generator,
  and numpy's ``Generator.geometric`` difference (bounded support, not exact;
  for reference only);
* the noise of a million-cell release: ``noisy_threshold_sparse`` on 1e6
  observed cells of a 1e7-cell domain (threshold 7, epsilon 1), and the
  spurious-cell placement alone in a 2e12-cell domain;
* the fraction of draws decided by the slow (interval arithmetic) path.

Target (issue 10): at least 5 million draws per second on one core, a
million-cell release under 0.2 s for noise.

Run from the repository root::

    python benchmarks/noise.py            # 5e6 draws, best of 5
    python benchmarks/noise.py --quick    # 1e6 draws, best of 3
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

import dpmodels.core.exact as exact  # noqa: E402
from dpmodels.core.exact import LogRate, bernoulli_positions, discrete_laplace  # noqa: E402
from dpmodels.core.noise import noisy_threshold_sparse  # noqa: E402
from dpmodels.core.randomness import SecureBits, SeededBits  # noqa: E402


def best(fn, repeat: int) -> float:
    out = math.inf
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        out = min(out, time.perf_counter() - t0)
    return out


def numpy_geometric_laplace(rng, epsilon, size):
    p = -math.expm1(-epsilon / 2.0)
    return rng.geometric(p, size) - rng.geometric(p, size)


def slow_fraction(epsilon: float, size: int) -> float:
    calls = 0
    real = exact._slow_geometric

    def counting(*a, **k):
        nonlocal calls
        calls += 1
        return real(*a, **k)

    exact._slow_geometric = counting
    try:
        discrete_laplace(SeededBits(np.random.default_rng(0)), epsilon, size)
    finally:
        exact._slow_geometric = real
    return calls / (2 * size)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--draws", type=float, default=None)
    ap.add_argument("--repeat", type=int, default=None)
    args = ap.parse_args(argv)
    n = int(args.draws or (1e6 if args.quick else 5e6))
    repeat = args.repeat or (3 if args.quick else 5)
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"exact sampler benchmark: {n:,} discrete Laplace draws, best of {repeat}, "
          f"load average {load:.1f}")
    rows = []
    for eps in (0.1, 1.0, 10.0):
        secure = best(lambda: discrete_laplace(SecureBits(), eps, n), repeat)
        seeded = best(lambda: discrete_laplace(SeededBits(np.random.default_rng(1)), eps, n),
                      repeat)
        ref = best(lambda: numpy_geometric_laplace(np.random.default_rng(1), eps, n), repeat)
        rows.append((eps, n / secure / 1e6, n / seeded / 1e6, n / ref / 1e6,
                     slow_fraction(eps, min(n, 10**6))))
    print("\n| epsilon | exact, OS secure (M draws/s) | exact, seeded (M/s) | numpy geometric, "
          "not exact (M/s) | slow-path fraction |")
    print("|---|---|---|---|---|")
    for eps, a, b, c, f in rows:
        print(f"| {eps:g} | {a:.1f} | {b:.1f} | {c:.1f} | {f:.1e} |")

    cells = 10**6
    rng = np.random.default_rng(2)
    ids = np.sort(rng.choice(10**7, size=cells, replace=False)).astype(np.uint64)
    counts = rng.integers(1, 50, size=cells).astype(np.int64)
    t_release = best(lambda: noisy_threshold_sparse(SecureBits(), 1.0, ids, counts, 10**7, 7),
                     repeat)
    rate = LogRate.no_cross(1.0, 50)
    t_place = best(lambda: bernoulli_positions(SecureBits(), rate, 2 * 10**12), repeat)
    print(f"\nnoise of a 1e6-cell release (1e7-cell domain, threshold 7, eps 1, secure): "
          f"{t_release:.3f} s (target < 0.2 s)")
    print(f"spurious-cell placement in a 2e12-cell domain (threshold 50, ~17 cells): "
          f"{t_place * 1e3:.2f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
