"""Classification and quantile benchmarks: dp_logit, dp_mnlogit and dp_quantreg.

Three sections, each runnable alone with ``--only``.

logit (housing)
    :func:`dpmodels.front.datasets.housing` (n = 250,070) with ``y = 1{price > 500000}``;
    ``dp_logit("y ~ size + year + C(county)")`` with the public domain
    ``y in {0, 1}``, ``year in 1..4``, ``county in County1..County6``,
    ``size in [0, 3000]``, at epsilon 0.1 and 1, ``bins="auto"`` and ``bins=30``,
    ``threshold="enhanced"``, ``--reps`` noise draws (default 50).

    * coefficients: private fits on all rows; per coefficient the RMS over
      repetitions of ``|b_priv / b_logit - 1|`` (percent), where ``b_logit`` is
      ``smf.logit`` on the raw rows.  Two deterministic diagnostics per K
      separate the sources of error: "no noise" (exact counts, epsilon=inf: the
      binning bias alone) and "exact+thr" (exact counts, then the cells below
      the enhanced threshold ceil(A log(n) / epsilon) of that epsilon dropped:
      binning plus the threshold's bias, without noise);
    * hold-out log-loss: one 80/20 train/test split (fixed seed); private
      models (same seeds) and ``smf.logit`` fitted on the train rows, mean
      log-loss on the test rows; plus the base-rate log-loss (the train share
      of y = 1 predicted for everyone).

mnlogit (iris, Vinterbo 2012)
    The iris data bundled with scikit-learn (150 rows, 3 species, 4
    predictors) and ``dp_mnlogit("species ~ sepal_length + sepal_width +
    petal_length + petal_width")`` at epsilon 1.  Public bounds, fixed a priori
    from botany, not read from the data (values outside are clipped into the
    edge bins by the library):

        sepal_length (4, 8), sepal_width (2, 4.5), petal_length (1, 7), petal_width (0, 2.6)

    10-fold stratified cross-validation with one fixed split; per fold the
    private model is fitted on the 135 training rows (n = 135, public) with
    ``--reps`` noise seeds (default 20) and scored on the 15 test rows by Hand
    & Till's (2001) multi-class AUC (implemented here with rank statistics).
    Per seed the 10 fold AUCs are averaged; the table gives the mean and sd of
    that CV AUC over the seeds, beside ``smf.mnlogit`` on the same folds.
    Settings: the library defaults (``bins="auto"``, ``threshold="enhanced"``,
    the headline), ``bins=3``, and the projection onto the two petal variables
    (``bins="auto"`` and fixed K), which mimics Vinterbo's feature selection.
    That selection is public only if made a priori; here it is justified by
    prior botanical knowledge (petal size separates the species), but it is
    of course also informed by the well-known published analyses of this very
    data set, so treat it as an optimistic variant.  A fit that fails (an
    exception: separation breakdown, empty release, SingularDesignError, ...)
    is counted and its fold scored with the uniform class distribution
    (AUC 0.5); fits that only warn of separation are used as they are and
    counted separately.  Each fold's release spends epsilon = 1 on its training
    rows; the cross-validation as a whole is an evaluation, not one release.

quantreg (housing)
    ``dp_quantreg("price ~ size + year + C(county)")`` with bounds
    ``price in [1e5, 9e5]``, ``size in [0, 3000]`` at epsilon 1 (``bins="auto"``,
    ``threshold="enhanced"``), q in {0.1, 0.25, 0.5, 0.75, 0.9} from one
    release per repetition (``fit_many``), ``--reps`` repetitions (default
    20): per q and coefficient the RMS relative deviation from
    ``smf.quantreg(...).fit(q=q)`` on the raw rows, a no-noise (epsilon=inf)
    column for the binning bias, and the times: release, ``fit_many`` on the
    cells, and statsmodels once per q on the raw rows (tens of seconds per q
    at n = 250,070).  With ``--quick`` the whole section, private fits and
    statsmodels reference/timing alike, runs on a 50,000-row random subsample
    (the reference coefficients need a statsmodels fit on the same rows the
    private model saw, so only the statsmodels timing cannot be shrunk alone).

Run from the repository root (the mnlogit section needs scikit-learn:
``pip install -e .[bench]``)::

    python benchmarks/classification.py                 # everything, a few minutes
    python benchmarks/classification.py --quick         # quantreg on a 50k subsample
    python benchmarks/classification.py --only mnlogit --reps 5
    python benchmarks/classification.py --markdown      # tables as markdown
"""

from __future__ import annotations

import argparse
import inspect
import math
import sys
import time
import warnings
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

# Benchmark the checkout this file lives in, not an installed copy.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import statsmodels.formula.api as smf  # noqa: E402
from scipy.stats import rankdata  # noqa: E402
from statsmodels.tools.sm_exceptions import PerfectSeparationError  # noqa: E402

import dpmodels  # noqa: E402
from dpmodels.models.discrete import FreqLogit  # noqa: E402
from dpmodels.mechanisms.histogram import DEFAULT_A, resolve_threshold  # noqa: E402

def _point_estimate_kwargs(fit) -> dict:
    """Keywords that keep a dp_* ``fit`` to point estimates and the naive
    covariance: where ``fit`` takes a ``cov_type`` (noise-aware bootstrap
    standard errors), ask for "naive"; the benchmark uses only the estimates,
    and a bootstrap per fit would dominate the timings."""
    return {"cov_type": "naive"} if "cov_type" in inspect.signature(fit).parameters else {}


LOGIT_FIT_KW = _point_estimate_kwargs(dpmodels.DPLogit.fit)
MNLOGIT_FIT_KW = _point_estimate_kwargs(dpmodels.DPMNLogit.fit)
QUANTREG_FIT_KW = _point_estimate_kwargs(dpmodels.DPQuantReg.fit)

SECTIONS = ("logit", "mnlogit", "quantreg")
DEFAULT_REPS = {"logit": 50, "mnlogit": 20, "quantreg": 20}

#: exceptions that count as a failed fit (SingularDesignError and SeparationError
#: are DPModelsError, a ValueError; empty releases raise ValueError)
FIT_ERRORS = (ValueError, np.linalg.LinAlgError, PerfectSeparationError)

# ---- housing: logit ------------------------------------------------------------------

LOGIT_FORMULA = "y ~ size + year + C(county)"
LOGIT_LEVELS = {"y": [0, 1], "year": [1, 2, 3, 4],
                "county": [f"County{i}" for i in range(1, 7)]}
LOGIT_BOUNDS = {"size": (0, 3000)}
LOGIT_EPSILONS = (0.1, 1.0)
LOGIT_BINS = ("auto", 30)
PRICE_CUT = 500_000
SPLIT_SEED = 20240601
TEST_SHARE = 0.2

#: (row label, statsmodels parameter name)
HOUSING_COEFS = [("Intercept", "Intercept"), ("size", "size"), ("year", "year")] + [
    (f"County{i}", f"C(county)[T.County{i}]") for i in range(2, 7)
]

# ---- iris: mnlogit -------------------------------------------------------------------

IRIS_CLASSES = ["setosa", "versicolor", "virginica"]
#: public bounds, fixed a priori (botanically plausible for the three species), not
#: read from the data
IRIS_BOUNDS = {"sepal_length": (4.0, 8.0), "sepal_width": (2.0, 4.5),
               "petal_length": (1.0, 7.0), "petal_width": (0.0, 2.6)}
IRIS_ALL = ["sepal_length", "sepal_width", "petal_length", "petal_width"]
IRIS_PETALS = ["petal_length", "petal_width"]
IRIS_EPSILON = 1.0
IRIS_FOLDS = 10
IRIS_CV_SEED = 0

# ---- housing: quantreg ---------------------------------------------------------------

QR_FORMULA = "price ~ size + year + C(county)"
QR_BOUNDS = {"price": (1e5, 9e5), "size": (0, 3000)}
QR_LEVELS = {"year": [1, 2, 3, 4], "county": [f"County{i}" for i in range(1, 7)]}
QR_QUANTILES = (0.1, 0.25, 0.5, 0.75, 0.9)
QR_EPSILON = 1.0
QUICK_ROWS = 50_000


# ---- shared helpers ------------------------------------------------------------------


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description="dp_logit / dp_mnlogit / dp_quantreg against their non-private "
                    "statsmodels counterparts.",
    )
    parser.add_argument("--reps", type=int, default=None,
                        help="noise draws per setting (default: logit 50, mnlogit 20 per fold, "
                             "quantreg 20)")
    parser.add_argument("--quick", action="store_true",
                        help=f"quantreg section on a {QUICK_ROWS:,}-row subsample (statsmodels on "
                             "250k rows takes tens of seconds per quantile)")
    parser.add_argument("--only", choices=SECTIONS, action="append",
                        help="run only this section (repeatable)")
    parser.add_argument("--seed", type=int, default=0,
                        help="master seed of the per-repetition noise seeds (default: 0)")
    parser.add_argument("--markdown", action="store_true", help="print tables as markdown")
    args = parser.parse_args(argv)
    if args.reps is not None and args.reps < 1:
        parser.error("--reps must be at least 1")
    return args


def progress(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def rep_seeds(seed: int, reps: int) -> list[int]:
    """Distinct, reproducible noise seeds, shared by every setting of a section
    (common random numbers: paired comparisons between settings)."""
    state = np.random.SeedSequence(seed).generate_state(reps, dtype=np.uint64)
    seeds = [int(s) for s in state]
    assert len(set(seeds)) == reps, "seed collision"
    return seeds


def rms_rel_dev(params: np.ndarray, ref: np.ndarray) -> np.ndarray:
    """Per-coefficient RMS over repetitions of |b / b_ref - 1|, in percent
    (NaN rows, failed fits, are left out; all-NaN gives NaN)."""
    dev = np.atleast_2d(params) / ref - 1.0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN columns
        return 100.0 * np.sqrt(np.nanmean(dev**2, axis=0))


def rel_bias(params: np.ndarray, ref: np.ndarray) -> np.ndarray:
    """Per-coefficient |mean over repetitions of b / b_ref - 1|, in percent."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN columns
        return 100.0 * np.abs(np.nanmean(np.atleast_2d(params), axis=0) / ref - 1.0)


def fmt(value, spec: str = "{:.1f}") -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    return spec.format(value)


@dataclass
class Table:
    """A table of pre-formatted strings: first column left-aligned, others right."""

    title: str
    header: list[str]
    rows: list[list[str]]
    notes: list[str] = field(default_factory=list)
    #: row indices before which a rule is drawn (text output)
    rules: tuple[int, ...] = ()

    def render(self, markdown: bool) -> str:
        return self._markdown() if markdown else self._text()

    def _text(self) -> str:
        widths = [max(len(self.header[j]), *(len(r[j]) for r in self.rows))
                  for j in range(len(self.header))]

        def line(cells):
            first = f"{cells[0]:<{widths[0]}}"
            return first + "".join(f"  {c:>{w}}" for c, w in zip(cells[1:], widths[1:]))

        head = line(self.header)
        rule = "-" * len(head)
        out = [self.title, "", head, rule]
        for i, r in enumerate(self.rows):
            if i in self.rules:
                out.append(rule)
            out.append(line(r))
        out += [f"  {n}" for n in self.notes]
        return "\n".join(out)

    def _markdown(self) -> str:
        out = [f"**{self.title}**", "",
               "| " + " | ".join(self.header) + " |",
               "|" + "|".join([":---"] + ["---:"] * (len(self.header) - 1)) + "|"]
        out += ["| " + " | ".join(r) + " |" for r in self.rows]
        if self.notes:
            out.append("")
            out += [f"- {n}" for n in self.notes]
        return "\n".join(out)


@dataclass
class Section:
    name: str
    header: list[str]
    tables: list[Table]
    seconds: float


# ---- logit on the housing data -------------------------------------------------------


def log_loss(y: np.ndarray, p: np.ndarray) -> float:
    p = np.clip(np.asarray(p, float), 1e-15, 1 - 1e-15)
    y = np.asarray(y, float)
    return float(-np.mean(y * np.log(p) + (1 - y) * np.log1p(-p)))


def coef_vector(params: pd.Series, names: list[str]) -> np.ndarray:
    return params.reindex(names).to_numpy(float)


def dp_logit_model(data, epsilon, bins, random_state):
    return dpmodels.dp_logit(LOGIT_FORMULA, data, epsilon=epsilon, bounds=LOGIT_BOUNDS,
                             levels=LOGIT_LEVELS, bins=bins, random_state=random_state)


def exact_cells_logit(data, k_bins: int, cut: int | None, names: list[str]) -> np.ndarray:
    """Diagnostic, not private: exact counts at K bins (epsilon=inf), optionally
    with the cells whose exact count is below ``cut`` dropped, then the
    frequency-weighted logit on the cells."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", dpmodels.NotPrivateWarning)
        model = dp_logit_model(data, math.inf, k_bins, None)
    if cut is None:
        return coef_vector(model.fit(**LOGIT_FIT_KW).params, names)
    cells, w = model.cells, model.weights.astype(float)
    keep = w >= cut
    fm = FreqLogit.from_formula(LOGIT_FORMULA, data=cells[keep].reset_index(drop=True),
                                weights=w[keep])
    return coef_vector(fm.fit(disp=False).params, names)


@dataclass
class LogitOutcome:
    epsilon: float
    bins: int | str
    k_full: int = -1
    k_train: int = -1
    params: np.ndarray | None = None  # (reps, coefs), private fits on all rows
    losses: np.ndarray | None = None  # (reps,), test log-loss of the train fits
    failures_full: int = 0
    failures_train: int = 0
    errors: Counter = field(default_factory=Counter)
    warned: Counter = field(default_factory=Counter)
    seconds_per_fit: float = float("nan")


def run_logit(reps: int, seed: int) -> Section:
    t_section = time.perf_counter()
    names = [nm for _, nm in HOUSING_COEFS]
    df = dpmodels.datasets.housing(seed=0)
    df["y"] = (df["price"] > PRICE_CUT).astype(np.int64)
    n = len(df)
    perm = np.random.default_rng(SPLIT_SEED).permutation(n)
    n_test = int(round(TEST_SHARE * n))
    test, train = df.iloc[perm[:n_test]], df.iloc[perm[n_test:]]
    y_test = test["y"].to_numpy()

    t0 = time.perf_counter()
    ref = smf.logit(LOGIT_FORMULA, df).fit(disp=0)
    t_ref = time.perf_counter() - t0
    b_ref = coef_vector(ref.params, names)
    ref_train = smf.logit(LOGIT_FORMULA, train).fit(disp=0)
    loss_nonpriv = log_loss(y_test, ref_train.predict(test))
    base = float(train["y"].mean())
    loss_base = log_loss(y_test, np.full(len(test), base))
    progress(f"[logit] non-private fits done (smf.logit on {n} rows: {t_ref:.1f} s)")

    seeds = rep_seeds(seed, reps)
    outcomes: list[LogitOutcome] = []
    for eps in LOGIT_EPSILONS:
        for bins in LOGIT_BINS:
            out = LogitOutcome(eps, bins)
            out.params = np.full((reps, len(names)), np.nan)
            out.losses = np.full(reps, np.nan)
            k_full, k_train = set(), set()
            t0 = time.perf_counter()
            for i, s in enumerate(seeds):
                with warnings.catch_warnings(record=True) as caught:
                    warnings.simplefilter("always")
                    try:
                        model = dp_logit_model(df, eps, bins, s)
                        k_full.add(model.release.domain.axis("size").bins)
                        out.params[i] = coef_vector(model.fit(**LOGIT_FIT_KW).params, names)
                    except FIT_ERRORS as exc:
                        out.failures_full += 1
                        out.errors[type(exc).__name__] += 1
                    try:
                        model = dp_logit_model(train, eps, bins, s)
                        k_train.add(model.release.domain.axis("size").bins)
                        out.losses[i] = log_loss(y_test, model.fit(**LOGIT_FIT_KW).predict(test))
                    except FIT_ERRORS as exc:
                        out.failures_train += 1
                        out.errors[type(exc).__name__] += 1
                out.warned.update(w.category.__name__ for w in caught)
            out.seconds_per_fit = (time.perf_counter() - t0) / (2 * reps)
            if len(k_full) > 1 or len(k_train) > 1:  # K is a function of public inputs only
                raise RuntimeError(f"K varied across repetitions: {k_full}, {k_train}")
            out.k_full = k_full.pop() if k_full else -1
            out.k_train = k_train.pop() if k_train else -1
            outcomes.append(out)
            progress(f"[logit] eps={eps:g} bins={bins} (K={out.k_full}): "
                     f"{out.seconds_per_fit * 2 * reps:.1f} s, failures "
                     f"{out.failures_full}+{out.failures_train}")

    # deterministic diagnostics at each K used on all rows
    no_noise: dict[int, np.ndarray] = {}
    thr_only: dict[tuple[float, int], np.ndarray] = {}
    cuts = {eps: resolve_threshold("enhanced", eps, n, DEFAULT_A).k for eps in LOGIT_EPSILONS}
    for out in outcomes:
        k = out.k_full
        if k < 1:
            continue
        if k not in no_noise:
            no_noise[k] = exact_cells_logit(df, k, None, names)
        try:
            thr_only[(out.epsilon, k)] = exact_cells_logit(df, k, cuts[out.epsilon], names)
        except FIT_ERRORS:
            thr_only[(out.epsilon, k)] = np.full(len(names), np.nan)
    progress("[logit] diagnostics done")

    # ---- coefficient tables ----
    labels = [lab for lab, _ in HOUSING_COEFS]

    def coef_rows(cols, ref_column: bool):
        rows = []
        for j, lab in enumerate(labels):
            rows.append([lab] + ([f"{b_ref[j]:.4g}"] if ref_column else [])
                        + [fmt(v[j]) for _, v in cols])
        means = [fmt(float(np.nanmean(v)) if np.any(np.isfinite(v)) else np.nan)
                 for _, v in cols]
        rows.append(["mean"] + ([""] if ref_column else []) + means)
        return rows

    cols: list[tuple[str, np.ndarray]] = []
    for out in outcomes:
        tag = f"{out.epsilon:g}/{out.bins}(K={out.k_full})"
        cols.append((f"{tag} rms", rms_rel_dev(out.params, b_ref)))
        cols.append((f"{tag} bias", rel_bias(out.params, b_ref)))
    coef_table = Table(
        f"dp_logit coefficients vs smf.logit on all {n:,} rows (%, {reps} reps; "
        "columns eps/bins(K))",
        ["coef", "smf.logit"] + [c for c, _ in cols], coef_rows(cols, True),
        rules=(len(labels),),
        notes=["rms = RMS over reps of |b_priv / b_logit - 1|; bias = |mean over reps of "
               "b_priv / b_logit - 1| (the systematic part of rms)"],
    )
    cols = []
    for k in sorted(no_noise):
        cols.append((f"no noise K={k}", rms_rel_dev(no_noise[k], b_ref)))
    for out in outcomes:
        key = (out.epsilon, out.k_full)
        if key in thr_only:
            cols.append((f"exact+thr eps={out.epsilon:g} K={out.k_full}",
                         rms_rel_dev(thr_only[key], b_ref)))
    diag_table = Table(
        "dp_logit diagnostics (deterministic, NOT private): |b / b_logit - 1| (%)",
        ["coef"] + [c for c, _ in cols], coef_rows(cols, False), rules=(len(labels),),
        notes=[
            "no noise = exact counts (epsilon=inf) at K bins: binning bias alone",
            "exact+thr = exact counts minus the cells below the enhanced threshold "
            "ceil(0.5 log n / eps) = " + ", ".join(f"{cuts[e]} (eps={e:g})" for e in LOGIT_EPSILONS)
            + ": what the threshold would remove without noise; with noise some cells below it "
            "pass and some above it fail, so this overstates the private bias (the bias column "
            "above is the direct measurement)",
        ],
    )

    # ---- log-loss table ----
    rows = [["smf.logit (non-private)", "-", fmt(loss_nonpriv, "{:.4f}"), "", "", "", ""],
            [f"base rate (p = {base:.4f})", "-", fmt(loss_base, "{:.4f}"), "", "", "", ""]]
    for out in outcomes:
        ls = out.losses[np.isfinite(out.losses)]
        rows.append([
            f"dp_logit eps={out.epsilon:g} bins={out.bins}", str(out.k_train),
            fmt(float(ls.mean()) if ls.size else np.nan, "{:.4f}"),
            fmt(float(ls.std(ddof=1)) if ls.size > 1 else np.nan, "{:.4f}"),
            fmt(float(ls.max()) if ls.size else np.nan, "{:.4f}"),
            fmt(float(ls.mean()) - loss_nonpriv if ls.size else np.nan, "{:+.4f}"),
            str(out.failures_train),
        ])
    loss_table = Table(
        f"dp_logit hold-out log-loss: train {len(train):,} / test {len(test):,} rows "
        f"(split seed {SPLIT_SEED}), {reps} reps",
        ["model", "K", "mean", "sd", "max", "vs smf", "failed"], rows, rules=(2,),
        notes=["mean/sd/max over repetitions of the mean test log-loss (nats); "
               "vs smf = mean minus the non-private log-loss"],
    )

    failures = sum(o.failures_full + o.failures_train for o in outcomes)
    errors = sum((o.errors for o in outcomes), Counter())
    warned = sum((o.warned for o in outcomes), Counter())
    seconds = time.perf_counter() - t_section
    header = [
        f"dp_logit on datasets.housing(n={n}, seed=0): {LOGIT_FORMULA}, y = 1{{price > "
        f"{PRICE_CUT}}} (share {df['y'].mean():.4f})",
        f"domain: y in {{0, 1}}, year 1..4, county County1..6, size in {LOGIT_BOUNDS['size']}; "
        f"threshold='enhanced' (A = {DEFAULT_A}); noise seeds from SeedSequence({seed})",
        f"auto K (size bins): " + ", ".join(
            f"eps={o.epsilon:g} -> {o.k_full} (all rows) / {o.k_train} (train)"
            for o in outcomes if o.bins == "auto"),
        f"private fits: {4 * reps * len(LOGIT_EPSILONS)}, failed: {failures}"
        + (f" ({dict(errors)})" if errors else "")
        + f"; warnings: {dict(warned) if warned else 'none'}; "
        f"mean per release+fit {np.mean([o.seconds_per_fit for o in outcomes]):.3f} s; "
        f"section {seconds:.1f} s",
    ]
    return Section("logit", header, [coef_table, diag_table, loss_table], seconds)


# ---- mnlogit on iris -----------------------------------------------------------------


def hand_till_auc(y: np.ndarray, prob: np.ndarray) -> float:
    """Hand & Till's (2001) multi-class AUC M.

    ``y``: class codes 0..c-1; ``prob``: (n, c) predicted class probabilities.
    M = 2 / (c (c - 1)) * sum over pairs i < j of (A(i|j) + A(j|i)) / 2, where
    A(i|j) is the probability that a random class-i point has a higher
    P(class i) than a random class-j point (ties count 1/2): the Mann-Whitney
    statistic from mid-ranks, (R_i - n_i (n_i + 1) / 2) / (n_i n_j).  Pairs in
    which a class has no test point are skipped.
    """
    y = np.asarray(y)
    prob = np.asarray(prob, float)
    c = prob.shape[1]

    def a(i, j):
        mask = (y == i) | (y == j)
        is_i = y[mask] == i
        n_i, n_j = int(is_i.sum()), int((~is_i).sum())
        ranks = rankdata(prob[mask, i])  # mid-ranks: ties count 1/2
        return (ranks[is_i].sum() - n_i * (n_i + 1) / 2.0) / (n_i * n_j)

    pairs = [(i, j) for i in range(c) for j in range(i + 1, c)
             if np.any(y == i) and np.any(y == j)]
    return float(np.mean([(a(i, j) + a(j, i)) / 2.0 for i, j in pairs]))


def _check_hand_till() -> None:
    """Hand-checkable cases of hand_till_auc."""
    y = np.array([0, 0, 1, 1, 2, 2])
    perfect = np.eye(3)[y]
    assert hand_till_auc(y, perfect) == 1.0
    assert hand_till_auc(y, np.full((6, 3), 1 / 3)) == 0.5
    # one swap between classes 0 and 1 in P(0): A(0|1) = 3/4, others 1 -> M = (7/8 + 1 + 1) / 3
    p = perfect.copy()
    p[:, 0] = [0.9, 0.2, 0.5, 0.1, 0.0, 0.0]
    assert math.isclose(hand_till_auc(y, p), (0.875 + 1 + 1) / 3)


def iris_frame():
    try:
        from sklearn.datasets import load_iris
        from sklearn.model_selection import StratifiedKFold
    except ImportError as exc:
        raise ImportError("the mnlogit section needs scikit-learn (pip install -e .[bench] "
                          "or pip install scikit-learn)") from exc
    raw = load_iris()
    df = pd.DataFrame(raw.data, columns=IRIS_ALL)
    df["code"] = raw.target.astype(np.int64)
    names = list(raw.target_names)
    assert names == IRIS_CLASSES, names
    df["species"] = np.array(names)[raw.target]
    folds = list(StratifiedKFold(n_splits=IRIS_FOLDS, shuffle=True, random_state=IRIS_CV_SEED)
                 .split(df[IRIS_ALL], df["code"]))
    return df, folds


@dataclass(frozen=True)
class IrisSetting:
    label: str
    predictors: tuple[str, ...]
    bins: int | str
    epsilon: float = IRIS_EPSILON

    def formula(self, response: str = "species") -> str:
        return f"{response} ~ " + " + ".join(self.predictors)


def mnlogit_probs(res, test: pd.DataFrame) -> np.ndarray:
    """(n_test, 3) class probabilities in IRIS_CLASSES order; a level the fit
    left out (no released cell) gets probability 0."""
    pred = np.asarray(res.predict(test), float)
    out = np.zeros((len(test), len(IRIS_CLASSES)))
    ymap = res.model._ynames_map  # column j of predict -> response level
    for j in range(pred.shape[1]):
        level = ymap[j]
        idx = IRIS_CLASSES.index(level) if isinstance(level, str) else int(level)
        out[:, idx] = pred[:, j]
    return out


@dataclass
class IrisOutcome:
    setting: IrisSetting
    cv_auc: np.ndarray  # (seeds,) mean AUC over folds
    fold_auc: np.ndarray  # (seeds, folds)
    k: set
    fits: int = 0
    failures: int = 0
    errors: Counter = field(default_factory=Counter)
    warned: Counter = field(default_factory=Counter)
    separated: int = 0  # fits that warned of separation (fitted anyway, used)
    dropped_level: int = 0  # fits with a response level left out
    released_cells: list = field(default_factory=list)
    noisy_total: list = field(default_factory=list)


def fit_iris_fold(setting: IrisSetting | None, train, test, seed, out: IrisOutcome,
                  predictors=None, method: str = "newton") -> float:
    """One fold's AUC; ``setting=None`` is the non-private smf.mnlogit (fitted
    with ``method``)."""
    out.fits += 1
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            if setting is None:
                formula = "code ~ " + " + ".join(predictors)
                kw = {} if method == "newton" else {"method": method, "maxiter": 1000}
                res = smf.mnlogit(formula, train).fit(disp=0, **kw)
                prob = np.asarray(res.predict(test), float)
            else:
                model = dpmodels.dp_mnlogit(
                    setting.formula(), train, epsilon=setting.epsilon, bounds=IRIS_BOUNDS,
                    levels={"species": IRIS_CLASSES}, bins=setting.bins,
                    random_state=seed)
                out.k.add(model.release.domain.axis(setting.predictors[0]).bins)
                out.released_cells.append(len(model.cells))
                out.noisy_total.append(float(model.weights.sum()))
                res = model.fit(**MNLOGIT_FIT_KW)
                if res.separation:
                    out.separated += 1
                prob = mnlogit_probs(res, test)
            if not np.all(np.isfinite(prob)):
                raise ValueError("non-finite predicted probabilities")
        except FIT_ERRORS as exc:
            out.failures += 1
            out.errors[type(exc).__name__] += 1
            prob = np.full((len(test), len(IRIS_CLASSES)), 1.0 / len(IRIS_CLASSES))
    cats = [w.category.__name__ for w in caught]
    out.warned.update(cats)
    if "ReleaseWarning" in cats and any("left out of the model" in str(w.message)
                                        for w in caught):
        out.dropped_level += 1
    return hand_till_auc(test["code"].to_numpy(), prob)


def run_mnlogit(reps: int, seed: int) -> Section:
    t_section = time.perf_counter()
    _check_hand_till()
    df, folds = iris_frame()
    seeds = rep_seeds(seed, reps)
    settings = [
        IrisSetting("4 vars, defaults (bins=auto)", tuple(IRIS_ALL), "auto"),
        IrisSetting("4 vars, bins=3", tuple(IRIS_ALL), 3),
        IrisSetting("petals, bins=auto", tuple(IRIS_PETALS), "auto"),
        IrisSetting("petals, bins=3", tuple(IRIS_PETALS), 3),
        IrisSetting("petals, bins=4", tuple(IRIS_PETALS), 4),
    ]
    no_noise = [IrisSetting(f"{'4 vars' if len(p) == 4 else 'petals'}, bins={k}, no noise",
                            tuple(p), k, math.inf)
                for p, k in ((IRIS_ALL, 2), (IRIS_ALL, 3), (IRIS_PETALS, 2), (IRIS_PETALS, 4))]

    # non-private, same folds
    nonpriv: dict[str, IrisOutcome] = {}
    for label, preds, method in (("4 vars", IRIS_ALL, "newton"), ("4 vars, bfgs", IRIS_ALL, "bfgs"),
                                 ("petals", IRIS_PETALS, "newton")):
        out = IrisOutcome(IrisSetting(label, tuple(preds), "-"), np.zeros(1),
                          np.zeros((1, len(folds))), set())
        for f, (tr, te) in enumerate(folds):
            out.fold_auc[0, f] = fit_iris_fold(None, df.iloc[tr], df.iloc[te], None, out, preds,
                                               method)
        out.cv_auc = out.fold_auc.mean(axis=1)
        nonpriv[label] = out
    progress("[mnlogit] non-private folds done")

    outcomes: list[IrisOutcome] = []
    for s in settings + no_noise:
        t0 = time.perf_counter()
        seeds_s = seeds if math.isfinite(s.epsilon) else [None]
        out = IrisOutcome(s, np.zeros(len(seeds_s)), np.zeros((len(seeds_s), len(folds))), set())
        for r, sd in enumerate(seeds_s):
            for f, (tr, te) in enumerate(folds):
                out.fold_auc[r, f] = fit_iris_fold(s, df.iloc[tr], df.iloc[te], sd, out)
        out.cv_auc = out.fold_auc.mean(axis=1)
        outcomes.append(out)
        progress(f"[mnlogit] {s.label} (K={sorted(out.k)}): {time.perf_counter() - t0:.1f} s, "
                 f"{out.failures}/{out.fits} failed, {out.separated} separated")

    def row(label, eps, out: IrisOutcome, private: bool):
        cv = out.cv_auc
        return [label, eps, ",".join(map(str, sorted(out.k))) or "-",
                fmt(float(cv.mean()), "{:.3f}"),
                fmt(float(cv.std(ddof=1)) if cv.size > 1 else np.nan, "{:.3f}"),
                fmt(float(out.fold_auc.std(ddof=1, axis=1).mean()), "{:.3f}"),
                fmt(float(np.mean(out.released_cells)) if out.released_cells else np.nan,
                    "{:.0f}"),
                fmt(float(np.mean(out.noisy_total)) if out.noisy_total else np.nan, "{:.0f}"),
                f"{out.failures}/{out.fits}",
                f"{out.separated}" if private else "-",
                f"{out.dropped_level}" if private else "-"]

    rows = [row(f"smf.mnlogit, {k} (non-private)", "-", o, False) for k, o in nonpriv.items()]
    rows += [row(f"dp_mnlogit, {o.setting.label}", f"{o.setting.epsilon:g}", o, True)
             for o in outcomes]
    table = Table(
        f"dp_mnlogit on iris: {IRIS_FOLDS}-fold stratified CV (seed {IRIS_CV_SEED}), "
        f"Hand & Till multi-class AUC, {reps} noise seeds per fold",
        ["model", "eps", "K", "AUC mean", "sd seeds", "sd folds", "cells", "total",
         "failed", "separated", "lvl dropped"],
        rows, rules=(len(nonpriv), len(nonpriv) + len(settings)),
        notes=[
            "AUC mean = mean over seeds of the 10-fold mean AUC; sd seeds = its sd over the "
            "noise seeds; sd folds = sd over the 10 folds (averaged over seeds)",
            "cells / total = mean released cells and mean noisy total of the training release "
            "(135 training rows per fold)",
            "failed = fits that raised (scored as the uniform distribution, AUC 0.5) / all fits; "
            "separated = fits that warned of (quasi-)separation and were used as fitted; "
            "lvl dropped = fits in which a species had no released cell (probability 0)",
            "no noise = exact counts (epsilon=inf, NOT private): binning loss alone",
            "smf.mnlogit uses its default Newton fit (as dp_mnlogit does); on the separable "
            "iris data it can end in NaN estimates (a failed fold); the bfgs row "
            "(maxiter=1000) is the non-private reference without that breakdown",
        ],
    )
    errors = sum((o.errors for o in outcomes + list(nonpriv.values())), Counter())
    warned = sum((o.warned for o in outcomes), Counter())
    warned_np = sum((o.warned for o in nonpriv.values()), Counter())
    seconds = time.perf_counter() - t_section
    header = [
        "dp_mnlogit on the iris data (scikit-learn's copy, 150 rows, 3 species): "
        "species ~ sepal_length + sepal_width + petal_length + petal_width",
        "public bounds (a priori, not from the data): "
        + ", ".join(f"{k} {v}" for k, v in IRIS_BOUNDS.items()),
        "petals = projection onto petal_length + petal_width (Vinterbo-style feature "
        "selection; public only if chosen a priori)",
        f"threshold='enhanced' (A = {DEFAULT_A}, cut ceil(0.5 log 135 / 1) = "
        f"{resolve_threshold('enhanced', IRIS_EPSILON, 135, DEFAULT_A).k}); "
        f"noise seeds from SeedSequence({seed})",
        f"failures by type: {dict(errors) if errors else 'none'}; warnings (private fits): "
        f"{dict(warned) if warned else 'none'}; warnings (smf.mnlogit): "
        f"{dict(warned_np) if warned_np else 'none'}; section {seconds:.1f} s",
    ]
    return Section("mnlogit", header, [table], seconds)


# ---- quantreg on the housing data ----------------------------------------------------


def run_quantreg(reps: int, seed: int, quick: bool) -> Section:
    t_section = time.perf_counter()
    names = [nm for _, nm in HOUSING_COEFS]
    full = dpmodels.datasets.housing(seed=0)
    if quick:
        rows_idx = np.random.default_rng(SPLIT_SEED).choice(len(full), QUICK_ROWS, replace=False)
        df = full.iloc[np.sort(rows_idx)].reset_index(drop=True)
    else:
        df = full
    n = len(df)

    # statsmodels: reference coefficients and timing, once per q, on the same rows
    ref: dict[float, np.ndarray] = {}
    sm_time: dict[float, float] = {}
    sm_iter: dict[float, int] = {}
    sm_warn: Counter = Counter()
    for q in QR_QUANTILES:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            t0 = time.perf_counter()
            res = smf.quantreg(QR_FORMULA, df).fit(q=q)
            sm_time[q] = time.perf_counter() - t0
        sm_warn.update(w.category.__name__ for w in caught)
        ref[q] = coef_vector(res.params, names)
        sm_iter[q] = int(res.iterations)
        progress(f"[quantreg] smf.quantreg q={q:g} on {n} rows: {sm_time[q]:.1f} s "
                 f"({sm_iter[q]} iterations)")

    seeds = rep_seeds(seed, reps)
    params = {q: np.full((reps, len(names)), np.nan) for q in QR_QUANTILES}
    t_release = np.full(reps, np.nan)
    t_fit = np.full(reps, np.nan)
    ks, cells, failures = set(), [], 0
    errors, warned = Counter(), Counter()
    for i, s in enumerate(seeds):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                t0 = time.perf_counter()
                model = dpmodels.dp_quantreg(QR_FORMULA, df, epsilon=QR_EPSILON,
                                             bounds=QR_BOUNDS, levels=QR_LEVELS,
                                             random_state=s)
                t_release[i] = time.perf_counter() - t0
                ks.add(model.release.domain.axis("size").bins)
                cells.append(len(model.cells))
                t0 = time.perf_counter()
                fits = model.fit_many(QR_QUANTILES, **QUANTREG_FIT_KW)
                t_fit[i] = time.perf_counter() - t0
                for q, r in fits.items():
                    params[q][i] = coef_vector(r.params, names)
            except (*FIT_ERRORS, RuntimeError) as exc:
                failures += 1
                errors[type(exc).__name__] += 1
        warned.update(w.category.__name__ for w in caught)
    progress(f"[quantreg] {reps} private releases + fit_many: "
             f"{np.nansum(t_release) + np.nansum(t_fit):.1f} s, {failures} failed")

    k = ks.pop() if len(ks) == 1 else -1
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", dpmodels.NotPrivateWarning)
        exact = dpmodels.dp_quantreg(QR_FORMULA, df, epsilon=math.inf, bounds=QR_BOUNDS,
                                     levels=QR_LEVELS, bins=k).fit_many(QR_QUANTILES,
                                                                   **QUANTREG_FIT_KW)
    exact_params = {q: coef_vector(r.params, names) for q, r in exact.items()}

    # ---- deviation table ----
    labels = [lab for lab, _ in HOUSING_COEFS]
    cols = [(f"q={q:g}", rms_rel_dev(params[q], ref[q])) for q in QR_QUANTILES]
    cols += [(f"no noise q={q:g}", rms_rel_dev(exact_params[q], ref[q])) for q in QR_QUANTILES]
    rows = [[lab] + [fmt(v[j]) for _, v in cols] for j, lab in enumerate(labels)]
    rows.append(["mean"] + [fmt(float(np.nanmean(v))) for _, v in cols])
    dev_table = Table(
        f"dp_quantreg coefficients: RMS relative deviation from smf.quantreg on the same "
        f"{n:,} rows (%, eps={QR_EPSILON:g}, K={k}, {reps} reps)",
        ["coef"] + [c for c, _ in cols], rows, rules=(len(labels),),
        notes=["no noise = exact counts (epsilon=inf, NOT private) at the same K: "
               "binning bias alone",
               "relative deviations are large where the reference coefficient is near 0 "
               "(see the next table)"],
    )
    rows = [[lab] + [f"{ref[q][j]:.4g}" for q in QR_QUANTILES] for j, lab in enumerate(labels)]
    ref_table = Table(
        f"smf.quantreg reference coefficients on the same {n:,} rows",
        ["coef"] + [f"q={q:g}" for q in QR_QUANTILES], rows,
    )

    # ---- timing table ----
    fit_per_q = float(np.nanmean(t_fit)) / len(QR_QUANTILES)
    rows = []
    for q in QR_QUANTILES:
        rows.append([f"q={q:g}", fmt(sm_time[q], "{:.2f}"), str(sm_iter[q]),
                     fmt(fit_per_q, "{:.3f}"), fmt(sm_time[q] / fit_per_q, "{:.0f}x")])
    sm_total = sum(sm_time.values())
    fit_total = float(np.nanmean(t_fit))
    rel_total = float(np.nanmean(t_release))
    rows.append(["all 5 q", fmt(sm_total, "{:.2f}"), "",
                 fmt(fit_total, "{:.3f}"), fmt(sm_total / fit_total, "{:.0f}x")])
    rows.append(["release + all 5 q", fmt(sm_total, "{:.2f}"), "",
                 fmt(rel_total + fit_total, "{:.3f}"),
                 fmt(sm_total / (rel_total + fit_total), "{:.0f}x")])
    time_table = Table(
        f"dp_quantreg fit time vs smf.quantreg on {n:,} raw rows (seconds)",
        ["quantile", "smf.quantreg", "iterations", "dp fit", "speed-up"], rows,
        rules=(len(QR_QUANTILES),),
        notes=[
            f"smf.quantreg timed once per q on {n:,} rows"
            + (f" (--quick: a {QUICK_ROWS:,}-row random subsample of the 250,070)" if quick
               else " (all rows)")
            + "; its max_iter is 1000",
            f"dp fit = mean over {reps} reps of fit_many({list(QR_QUANTILES)}) / 5 on the released "
            f"cells (mean {np.mean(cells):.0f} cells; includes building the cell design once); "
            f"release (binning {n:,} rows + noise) mean {rel_total:.3f} s, sd "
            + fmt(float(np.nanstd(t_release, ddof=1)) if reps > 1 else np.nan, "{:.3f}") + " s",
        ],
    )
    seconds = time.perf_counter() - t_section
    header = [
        f"dp_quantreg on datasets.housing(seed=0), {n} rows"
        + (f" (--quick: random subsample of {len(full)})" if quick else "")
        + f": {QR_FORMULA}",
        f"bounds price {QR_BOUNDS['price']}, size {QR_BOUNDS['size']}; year 1..4, county "
        f"County1..6; eps={QR_EPSILON:g}, bins='auto' (K={k}), threshold='enhanced'; "
        f"noise seeds from SeedSequence({seed})",
        f"private releases: {reps}, failed: {failures}"
        + (f" ({dict(errors)})" if errors else "")
        + f"; warnings (private): {dict(warned) if warned else 'none'}; warnings "
        f"(smf.quantreg): {dict(sm_warn) if sm_warn else 'none'}; section {seconds:.1f} s",
    ]
    return Section("quantreg", header, [dev_table, ref_table, time_table], seconds)


# ---- main ----------------------------------------------------------------------------


def main(argv=None) -> int:
    args = parse_args(argv)
    t_start = time.perf_counter()
    only = args.only or list(SECTIONS)
    sections: list[Section] = []
    skipped: list[str] = []
    for name in SECTIONS:
        if name not in only:
            continue
        reps = args.reps if args.reps is not None else DEFAULT_REPS[name]
        progress(f"== {name} ({reps} reps)")
        if name == "logit":
            sections.append(run_logit(reps, args.seed))
        elif name == "mnlogit":
            try:
                import sklearn  # noqa: F401
            except ImportError:
                if args.only:
                    raise
                msg = ("mnlogit section skipped: scikit-learn is not installed "
                       "(pip install -e .[bench])")
                progress(msg)
                skipped.append(msg)
                continue
            sections.append(run_mnlogit(reps, args.seed))
        else:
            sections.append(run_quantreg(reps, args.seed, args.quick))

    print(f"dpmodels {dpmodels.__version__} classification / quantile benchmarks")
    for sec in sections:
        print()
        print(f"## {sec.name}" if args.markdown else f"=== {sec.name} ===")
        print()
        for line in sec.header:
            print(f"- {line}" if args.markdown else line)
        for table in sec.tables:
            print()
            print(table.render(args.markdown))
    for msg in skipped:
        print()
        print(msg)
    total = time.perf_counter() - t_start
    print()
    print("time: total {:.1f} s ({})".format(
        total, ", ".join(f"{s.name} {s.seconds:.1f} s" for s in sections)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
