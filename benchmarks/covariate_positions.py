"""Where inside its bins a binned covariate's rows sit: the check's bound
against none and against the whole bin.

The histogram release says how many rows fall in each bin of a continuous
covariate, not where inside the bin they are.  The fit stands them at fitted
representatives (``dpmodels/domain/representatives.py``), right on a smooth density.
On real data they are often not: randhie's ``disea`` (a count of chronic
diseases, public bound 100, data up to 58.6) has 90% of its rows in the first
of 5 bins, and the second bin's rows average 25.3 against its midpoint 30;
``lncoins`` takes four values only, one of them 0 at the domain's edge.  At
ten times the data's size the slopes came out at 0.72 and 0.45 of the truth
and the merged-bin refits of the binning check did not see it
(``benchmarks/results/real_validity_passes.md``, ninth and tenth passes).

The binning check now carries a bound on what the rows' places inside the
bins can do (``BinningCheck.position``): for every continuous covariate and
every bin the estimate is refitted with that bin's points moved rigidly to
either end of :func:`dpmodels.inference.binning.position_range` (the midpoint and the
means of the exponential densities through the bin's count and either
neighbour's; the whole bin next to an empty neighbour), and the moves are
summed over bins in absolute value.  This script compares, per coefficient,
the coverage and width of the default interval

``before``
    without the bound (the check's ``_position_fit`` switched off: same
    release, same bootstrap);
``now``
    the default;
``worst``
    the bound with every bin's whole width (the partial-identification
    bound: a bin's mean can be anywhere in it), in place of ``now``'s.

Widths are medians over the replicates, relative to ``before``.

Run (from the repository root)::

    python benchmarks/covariate_positions.py --reps 8
"""

import argparse
import sys
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

import dpmodels as dpm
from dpmodels.inference import binning

sys.path.insert(0, str(Path(__file__).resolve().parent))
import real_validity as RV  # noqa: E402
import validity as V  # noqa: E402

#: (kind, name, size, epsilon): kind "real" takes size as the resample multiple,
#: "synthetic" as n.
CELLS = [("real", "randhie_ols", 10, 3.0), ("real", "randhie_ols", 1, 1.0),
         ("synthetic", "linear", 20000, 1.0), ("synthetic", "logskew", 20000, 3.0),
         ("synthetic", "logit4", 20000, 3.0), ("synthetic", "cont5", 2000, 1.0)]

_CAUGHT: dict = {}


def _catch():
    """Wrap the binning diagnostic so that the last one run is kept."""
    call = binning.BinningDiagnostic.__call__
    if getattr(call, "_kept", False):
        return

    def kept(self, se):
        _CAUGHT["diagnostic"] = self
        return call(self, se)

    kept._kept = True
    binning.BinningDiagnostic.__call__ = kept


def worst_bound(diag) -> np.ndarray:
    """Per coefficient, the sum over covariate bins of the largest move of the
    estimate when the bin's points move to either edge of the bin."""
    domain = diag.release.domain
    frame = diag.cells.drop(columns=[diag.count_column])
    w = diag.cells[diag.count_column].to_numpy(float)
    wpos = np.clip(w, 0, None)
    bound = np.zeros(diag.start.size)
    for v in dict.fromkeys(diag.variables):
        axis = domain.axis(v)
        if v in diag.response or axis.kind != "continuous":
            continue
        coord = axis.to_coord(frame[v].to_numpy(float))
        lo, h = axis.coord_bounds[0], axis.width
        code = np.clip(np.floor((coord - lo) / h), 0, axis.bins - 1).astype(int)
        counts = np.bincount(code, weights=wpos, minlength=axis.bins)
        for b in np.flatnonzero(counts > 0):
            m = code == b
            current = np.average(coord[m], weights=wpos[m])
            moves = []
            for p in (lo + b * h, lo + (b + 1) * h):
                moved = frame.copy()
                c2 = coord.copy()
                c2[m] += p - current
                moved[v] = axis.to_values(c2)
                moves.append(np.abs(diag._fit(moved, w) - diag.start))
            bound += np.nan_to_num(np.fmax.reduce(moves))
    return bound


def _fit(fn, formula, df, eps, seed, kw, fit_kw, position=True):
    saved = binning.BinningDiagnostic._position_fit
    if not position:
        binning.BinningDiagnostic._position_fit = lambda self: None
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model = getattr(dpm, fn)(formula, data=df, epsilon=eps, random_state=seed + 1, **kw)
            return model.fit(random_state=seed + 2, **fit_kw)
    finally:
        binning.BinningDiagnostic._position_fit = saved


def one(kind, name, size, eps, rep):
    seed = 1000 * rep + 7
    rng = np.random.default_rng(seed)
    if kind == "real":
        spec = RV.CASES[name]
        full = RV.data_of(name)
        df = full.iloc[rng.integers(0, len(full), size * len(full))].reset_index(drop=True)
        fn, formula, fit_kw = "dp_" + spec["family"], spec["formula"], {}
        kw = dict(bounds=spec["bounds"], levels=spec["levels"])
        truth = RV.truth_of(name)
    else:
        sc = V.SCENARIOS[name]
        df = sc["draw"](rng, size)
        fn, formula, fit_kw, kw = sc["fn"], sc["formula"], sc.get("fit_kw", {}), dict(sc["kw"])
        truth = V.truth_of(name)
    kw["method"] = "histogram"
    res = _fit(fn, formula, df, eps, seed, kw, fit_kw)
    _CAUGHT.pop("diagnostic", None)
    before = _fit(fn, formula, df, eps, seed, kw, fit_kw, position=False)
    diag = _CAUGHT.pop("diagnostic")
    names = list(res.params.index)
    np.testing.assert_array_equal(res.params.to_numpy(), before.params.to_numpy())
    return pd.DataFrame(dict(coef=names, est=res.params.to_numpy(), se=res.bse.to_numpy(),
                             se_before=before.bse.to_numpy(), worst=worst_bound(diag),
                             truth=[truth.get(c, np.nan) for c in names], rep=rep))


def summarise(rows: pd.DataFrame) -> pd.DataFrame:
    z = 1.959963984540054
    d = rows[np.isfinite(rows["se_before"]) & rows["truth"].notna()].copy()
    err = (d["est"] - d["truth"]).abs()
    d["worst_se"] = np.sqrt(d["se_before"] ** 2 + d["worst"] ** 2)
    for k, col in (("before", "se_before"), ("now", "se"), ("worst", "worst_se")):
        d[k] = err <= z * d[col]
        d[f"{k}_x"] = d[col] / d["se_before"]
    g = d.groupby(["cell", "coef"], sort=False)
    out = g.agg(reps=("rep", "size"), before=("before", "mean"), now=("now", "mean"),
                now_width=("now_x", "median"), worst=("worst", "mean"),
                worst_width=("worst_x", "median"))
    return out.reset_index()


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--out", default="")
    args = ap.parse_args(argv)
    _catch()
    parts = []
    for kind, name, size, eps in CELLS:
        for rep in range(args.reps):
            part = one(kind, name, size, eps, rep)
            part["cell"] = f"{name} {'x' if kind == 'real' else 'n='}{size:g} eps {eps:g}"
            parts.append(part)
    rows = pd.concat(parts, ignore_index=True)
    if args.out:
        rows.to_csv(args.out, index=False)
    table = summarise(rows)
    with pd.option_context("display.width", 200, "display.max_rows", 500):
        print("Coverage of the truth before, now and with the whole-bin bound; median width over before's")
        print(table.round(2).to_string(index=False))


if __name__ == "__main__":
    main()
