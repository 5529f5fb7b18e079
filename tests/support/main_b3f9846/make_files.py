"""How the files beside this script were made: results pickled and releases saved
by main at commit b3f9846, before the package was split into layers, so that they
name the old module paths (dpmodels.release, dpmodels.report, dpmodels.domain, ...).
tests/package/test_old_paths.py loads them.  Kept as the record; run from a checkout of that
commit: ``python make_files.py OUT_DIR`` (modules.txt: ``git ls-tree`` of its dpmodels).
"""
import json, pickle, sys, warnings
from pathlib import Path
import numpy as np, pandas as pd
import dpmodels as dpm


def main() -> None:
    out = Path(sys.argv[1])    ; out.mkdir(parents=True, exist_ok=True)
    N = 2000
    rng = np.random.default_rng(0)
    df = pd.DataFrame({"x": rng.uniform(1, 10, N), "g": rng.choice(["a", "b", "c"], N)})
    df["y"] = (1 + 0.5 * df.x + (df.g == "b") + rng.normal(0, 1, N)).clip(-20, 20)
    df["t"] = (rng.random(N) < 1 / (1 + np.exp(-(df.x - 5) / 2))).astype(int)
    df["k"] = rng.integers(0, 3, N)
    B = {"x": (1, 10), "y": (-20, 20)}
    L = {"g": ["a", "b", "c"], "t": [0, 1], "k": [0, 1, 2]}
    kw = dict(bounds=B, levels=L, random_state=1)
    fits = {
        "ols_histogram": lambda: dpm.dp_ols("y ~ x + C(g)", df, epsilon=1, method="histogram", **kw),
        "ols_moments": lambda: dpm.dp_ols("y ~ x + C(g)", df, epsilon=1, method="moments", **kw),
        "logit_newton": lambda: dpm.dp_logit("t ~ x + C(g)", df, epsilon=2, method="newton", **kw),
        "logit_histogram": lambda: dpm.dp_logit("t ~ x + C(g)", df, epsilon=1, method="histogram", **kw),
        "quantreg_steps": lambda: dpm.dp_quantreg("y ~ x + C(g)", df, epsilon=1, **kw),
        "mnlogit_histogram": lambda: dpm.dp_mnlogit("k ~ x", df, epsilon=1, **kw),
        "ols_sample_aggregate": lambda: dpm.dp_ols("y ~ x + C(g)", df, epsilon=1,
                                                   method="sample-aggregate", **kw),
    }
    params = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for name, make in fits.items():
            res = make().fit(n_boot=50) if "sample" not in name else make().fit()
            (out / f"{name}.pkl").write_bytes(pickle.dumps(res))
            params[name] = {"params": [float(v) for v in res.params],
                            "bse": [float(v) for v in res.bse],
                            "names": list(res.params.index)}
        rels = {
            "histogram": dpm.release(df, columns=["y", "x", "g"], epsilon=1, bounds=B, levels=L,
                                     random_state=2),
            "moments": dpm.release_moments(df, formula="y ~ x + C(g)", epsilon=1, bounds=B, levels=L,
                                           random_state=2),
        }
        for kind, rel in rels.items():
            rel.save(out / f"release_{kind}.json")
            (out / f"release_{kind}.pkl").write_bytes(pickle.dumps(rel))
    (out / "expected.json").write_text(json.dumps(params, indent=1))
    print(sorted(p.name for p in out.iterdir()))


if __name__ == "__main__":
    main()
