"""Reproduce Lei (2011), Table 1: DP OLS on the (synthetic) Bay Area housing data.

Protocol (Lei 2011, "Differentially private M-estimators", Section 4.3):

* fit the non-private OLS ``price ~ size + year + C(county)`` on
  :func:`dpmodels.front.datasets.housing` (n = 250,070 by default);
* for each setting, fit :func:`dpmodels.dp_ols` with the same formula and the
  public domain ``price in [1e5, 9e5]``, ``size in [0, 3000]``,
  ``county in County1..County6``, ``year in 1..4``, repeated ``--reps`` times
  with a distinct noise seed per repetition;
* report, per coefficient, the root mean square over repetitions of the
  relative deviation ``|b_priv / b_ols - 1|``, in percent.

Settings
--------
PH      ``threshold="zero"`` (negative noisy counts set to 0), K = 10 bins
THLD    ``threshold="enhanced"`` (keep counts >= A log(n) / epsilon, A = 0.5), K = 10
auto    the same two thresholds with ``bins="auto"`` (K chosen per epsilon)
signed  Lei's original Algorithm 1 (``threshold=None``: signed counts), K = 10
no noise  one fit with ``epsilon=inf`` (exact counts, NOT private) at K = 10
        and at each auto K: the pure binning bias of the midpoint representation

each at epsilon 0.1 and 1.  Lei's published numbers are printed next to ours
for PH and THLD at K = 10.

Notes
-----
Lei's caption defines PH as "perturbed histogram (PH, Algorithm 1)", i.e.
signed counts; Algorithm 1' (``threshold="zero"``) is a separate variant in
his Section 3.  Both are measured here: compare Lei's PH with both the PH
and the signed columns.  The housing data are synthetic, calibrated to
Lei's non-private OLS only; the binning bias (the no-noise columns) is a
property of the simulated covariate distribution, not of Lei's data.

Run from the repository root::

    python benchmarks/lei_table1.py               # 100 reps, n = 250070
    python benchmarks/lei_table1.py --reps 20     # quicker
    python benchmarks/lei_table1.py --markdown    # table as markdown
"""

from __future__ import annotations

import argparse
import math
import sys
import time
import warnings
from dataclasses import dataclass
from pathlib import Path

# Benchmark the checkout this file lives in, not an installed copy.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402
import statsmodels.formula.api as smf  # noqa: E402

import dpmodels  # noqa: E402
from dpmodels.domain.axes import auto_bins  # noqa: E402
from dpmodels.core.errors import NotPrivateWarning  # noqa: E402

FORMULA = "price ~ size + year + C(county)"
BOUNDS = {"price": (1e5, 9e5), "size": (0, 3000)}
LEVELS = {"county": [f"County{i}" for i in range(1, 7)], "year": [1, 2, 3, 4]}
EPSILONS = (0.1, 1.0)
K_PAPER = 10

#: (row label, statsmodels parameter name), in Lei's row order.
COEFS = [("Intercept", "Intercept"), ("Size", "size"), ("Year", "year")] + [
    (f"County{i}", f"C(county)[T.County{i}]") for i in range(2, 7)
]

#: Lei (2011), Table 1: RMS relative deviation (%) for
#: (PH eps=0.1, THLD eps=0.1, PH eps=1, THLD eps=1), K = 10.
LEI_TABLE1 = {
    "Intercept": (10.6, 7.7, 7.2, 4.4),
    "Size": (4.7, 3.5, 3.6, 2.3),
    "Year": (4.6, 2.8, 1.0, 0.4),
    "County2": (8.0, 7.8, 1.5, 0.7),
    "County3": (4.2, 2.5, 0.8, 0.3),
    "County4": (29.8, 37.1, 2.8, 2.1),
    "County5": (9.8, 7.9, 1.4, 1.3),
    "County6": (7.1, 3.3, 1.0, 0.4),
}
_LEI_COLUMN = {("zero", 0.1): 0, ("enhanced", 0.1): 1, ("zero", 1.0): 2, ("enhanced", 1.0): 3}

_THRESHOLD_NAMES = {"zero": "PH", "enhanced": "THLD", None: "signed"}


@dataclass(frozen=True)
class Setting:
    """One benchmark configuration of :func:`dpmodels.dp_ols`."""

    threshold: str | None
    epsilon: float
    bins: int | str

    @property
    def name(self) -> str:
        return _THRESHOLD_NAMES[self.threshold]


@dataclass
class Outcome:
    """Estimates of one setting over all repetitions."""

    setting: Setting
    params: np.ndarray  # (reps, n_coefs); NaN rows for failed fits
    k: int  # bins per continuous variable actually used
    seconds: float
    failures: int
    warnings: int


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description="Reproduce Lei (2011) Table 1 with dpmodels.dp_ols on datasets.housing().",
    )
    parser.add_argument("--reps", type=int, default=100,
                        help="repetitions (noise draws) per setting (default: 100)")
    parser.add_argument("--n", type=int, default=250_070,
                        help="rows of the housing data (default: 250070, Lei's n)")
    parser.add_argument("--seed", type=int, default=0,
                        help="master seed of the per-repetition noise seeds (default: 0)")
    parser.add_argument("--markdown", action="store_true",
                        help="print the table as a markdown table")
    args = parser.parse_args(argv)
    if args.reps < 1:
        parser.error("--reps must be at least 1")
    if args.n < 1:
        parser.error("--n must be at least 1")
    return args


def rep_seeds(seed: int, reps: int) -> list[int]:
    """Distinct, reproducible noise seeds, one per repetition.

    The same seeds are used for every setting (common random numbers), which
    makes the comparison between settings paired.
    """
    state = np.random.SeedSequence(seed).generate_state(reps, dtype=np.uint64)
    seeds = [int(s) for s in state]
    assert len(set(seeds)) == reps, "seed collision"
    return seeds


def fit_params(df, setting: Setting, random_state) -> tuple[np.ndarray, int]:
    """One dp_ols fit; returns the coefficients in COEFS order and the K used."""
    model = dpmodels.dp_ols(
        FORMULA, data=df, epsilon=setting.epsilon, bounds=BOUNDS, levels=LEVELS,
        bins=setting.bins, threshold=setting.threshold, random_state=random_state,
    )
    res = model.fit()
    k = model.release.domain.axis("size").bins
    return res.params.reindex([name for _, name in COEFS]).to_numpy(float), k


def run_setting(df, setting: Setting, seeds: list[int]) -> Outcome:
    """All repetitions of one setting."""
    params = np.full((len(seeds), len(COEFS)), np.nan)
    ks, failures, n_warn = set(), 0, 0
    start = time.perf_counter()
    for i, seed in enumerate(seeds):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                params[i], k = fit_params(df, setting, seed)
                ks.add(k)
            except (ValueError, np.linalg.LinAlgError, dpmodels.DPModelsError):
                failures += 1
        n_warn += len(caught)
    seconds = time.perf_counter() - start
    if len(ks) > 1:  # the auto rule reads only public inputs: K cannot vary
        raise RuntimeError(f"{setting}: K varied across repetitions: {sorted(ks)}")
    k = ks.pop() if ks else -1
    return Outcome(setting, params, k, seconds, failures, n_warn)


def no_noise_params(df, k: int) -> np.ndarray:
    """The fit on exact counts (epsilon=inf) at K bins: binning bias only."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", NotPrivateWarning)
        params, _ = fit_params(df, Setting("zero", math.inf, k), None)
    return params


def rms_rel_dev(params: np.ndarray, ols: np.ndarray) -> np.ndarray:
    """Per-coefficient RMS over repetitions of |b / b_ols - 1|, in percent
    (failed repetitions, if any, are left out)."""
    dev = np.atleast_2d(params) / ols - 1.0
    return 100.0 * np.sqrt(np.nanmean(dev**2, axis=0))


# ---- table rendering -----------------------------------------------------------------


@dataclass
class Column:
    group: str
    label: str
    values: list[float]  # one per coefficient; the mean row is added on output
    fmt: str = "{:.1f}"
    mean: bool = True


def _cells(col: Column) -> list[str]:
    vals = list(col.values)
    if col.mean:
        vals.append(float(np.mean(col.values)))
    out = ["-" if v is None or (isinstance(v, float) and math.isnan(v)) else col.fmt.format(v)
           for v in vals]
    if not col.mean:
        out.append("")
    return out


def render_text(row_labels: list[str], columns: list[Column]) -> str:
    """Fixed-width table with a group header line above the column labels."""
    body = [_cells(c) for c in columns]
    widths = [max(len(c.label), *(len(s) for s in cells)) for c, cells in zip(columns, body)]
    stub = max(len(r) for r in row_labels + ["mean"])
    # merge consecutive columns of the same group under one group label
    groups: list[tuple[str, int]] = []
    for c, w in zip(columns, widths):
        if groups and groups[-1][0] == c.group:
            groups[-1] = (c.group, groups[-1][1] + 2 + w)
        else:
            groups.append((c.group, w))
    line1 = " " * stub + "".join(f"  {g:^{w}}" for g, w in groups)
    line2 = f"{'':<{stub}}" + "".join(f"  {c.label:>{w}}" for c, w in zip(columns, widths))
    rule = "-" * len(line2)
    lines = [line1.rstrip(), line2, rule]
    for i, label in enumerate(row_labels + ["mean"]):
        if label == "mean":
            lines.append(rule)
        lines.append(f"{label:<{stub}}" + "".join(f"  {b[i]:>{w}}" for b, w in zip(body, widths)))
    return "\n".join(lines)


def render_markdown(row_labels: list[str], columns: list[Column]) -> str:
    body = [_cells(c) for c in columns]
    head = ["Variable"] + [f"{c.group}: {c.label}" if c.group else c.label for c in columns]
    lines = ["| " + " | ".join(head) + " |",
             "|" + "|".join([":---"] + ["---:"] * len(columns)) + "|"]
    for i, label in enumerate(row_labels + ["mean"]):
        cells = [f"**{label}**" if label == "mean" else label] + [b[i] for b in body]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


# ---- main ----------------------------------------------------------------------------


def main(argv=None) -> int:
    args = parse_args(argv)
    t_start = time.perf_counter()

    t0 = time.perf_counter()
    df = dpmodels.datasets.housing(n=args.n, seed=0)
    t_data = time.perf_counter() - t0
    ols = smf.ols(FORMULA, df).fit().params.reindex([name for _, name in COEFS]).to_numpy(float)
    seeds = rep_seeds(args.seed, args.reps)

    settings = [Setting(thr, eps, K_PAPER) for eps in EPSILONS for thr in ("zero", "enhanced")]
    settings += [Setting(thr, eps, "auto") for eps in EPSILONS for thr in ("zero", "enhanced")]
    settings += [Setting(None, eps, K_PAPER) for eps in EPSILONS]

    outcomes: dict[Setting, Outcome] = {}
    for s in settings:
        out = run_setting(df, s, seeds)
        outcomes[s] = out
        print(f"  {s.name:<6} eps={s.epsilon:<4g} bins={str(s.bins):<4} (K={out.k:>3}): "
              f"{out.seconds:6.1f} s", file=sys.stderr, flush=True)

    k_auto = {eps: outcomes[Setting("enhanced", eps, "auto")].k for eps in EPSILONS}
    fixed_cells = len(LEVELS["county"]) * len(LEVELS["year"])
    for eps, k in k_auto.items():  # the release's K must be the documented rule's
        expected = auto_bins(args.n, eps, 2, fixed_cells)
        if k != expected:
            raise RuntimeError(f"eps={eps}: release used K={k}, auto_bins gives {expected}")
    no_noise_ks = sorted({K_PAPER, *k_auto.values()})
    no_noise = {k: no_noise_params(df, k) for k in no_noise_ks}

    # ---- columns ----
    row_labels = [label for label, _ in COEFS]
    columns = [Column("", "OLS", list(ols), fmt="{:.0f}", mean=False)]
    for eps in EPSILONS:
        for thr in ("zero", "enhanced"):
            name = _THRESHOLD_NAMES[thr]
            lei = [LEI_TABLE1[r][_LEI_COLUMN[(thr, eps)]] for r in row_labels]
            ours = rms_rel_dev(outcomes[Setting(thr, eps, K_PAPER)].params, ols)
            columns.append(Column(f"eps={eps:g}, K={K_PAPER}", f"{name} Lei", lei))
            columns.append(Column(f"eps={eps:g}, K={K_PAPER}", f"{name} ours", list(ours)))
    for eps in EPSILONS:
        for thr in ("zero", "enhanced"):
            vals = rms_rel_dev(outcomes[Setting(thr, eps, "auto")].params, ols)
            columns.append(Column("bins=auto", f"{_THRESHOLD_NAMES[thr]} {eps:g} K={k_auto[eps]}",
                                  list(vals)))
    for eps in EPSILONS:
        vals = rms_rel_dev(outcomes[Setting(None, eps, K_PAPER)].params, ols)
        columns.append(Column(f"signed, K={K_PAPER}", f"eps={eps:g}", list(vals)))
    for k in no_noise_ks:
        columns.append(Column("no noise (eps=inf)", f"K={k}", list(rms_rel_dev(no_noise[k], ols))))

    total = time.perf_counter() - t_start
    n_fits = sum(len(seeds) for _ in settings)
    fit_seconds = sum(o.seconds for o in outcomes.values())
    failures = sum(o.failures for o in outcomes.values())
    n_warn = sum(o.warnings for o in outcomes.values())

    # ---- output ----
    print(f"Lei (2011) Table 1 with dpmodels {dpmodels.__version__}: {FORMULA}")
    print(f"data: datasets.housing(n={args.n}, seed=0); {args.reps} repetitions per setting, "
          f"noise seeds from SeedSequence({args.seed})")
    print("entries: RMS over repetitions of |b_priv / b_ols - 1|, in percent "
          "(OLS column: the non-private estimate)")
    print("PH = threshold 'zero' (Lei's Algorithm 1'), THLD = threshold 'enhanced' "
          "(A = 0.5); signed = threshold None (Algorithm 1); Lei = published Table 1")
    print("auto K (bins per continuous variable): "
          + ", ".join(f"eps={eps:g} -> K={k}" for eps, k in k_auto.items()))
    print("no noise = one fit on exact counts (epsilon=inf, NOT private): the binning bias alone")
    print()
    if args.markdown:
        print(render_markdown(row_labels, columns))
    else:
        print(render_text(row_labels, columns))
    print()
    print(f"fits: {n_fits} private ({len(settings)} settings x {args.reps}) + "
          f"{len(no_noise_ks)} no-noise; failed: {failures}; warnings raised: {n_warn}")
    print(f"time: total {total:.1f} s (data {t_data:.1f} s); "
          f"mean per private fit {fit_seconds / n_fits:.3f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
