"""``method="auto"`` reads the public n as the number of rows handed in,
whatever the container: a mapping of arrays has as
many rows as its columns are long, not as many as it has columns."""

from __future__ import annotations

import re
import warnings

import numpy as np
import pandas as pd
import pytest

import dpmodels as dpm
from dpmodels.core.errors import ReleaseWarning
from dpmodels.front.methods import choose_logit_method, choose_ols_method, public_rows

N = 60_000  # n * epsilon = 60,000 >= NEWTON_MIN_N_EPSILON at epsilon 1


def _frame(n: int = N) -> pd.DataFrame:
    rng = np.random.default_rng(4)
    x = rng.uniform(0, 10, n)
    yb = (rng.random(n) < 1 / (1 + np.exp(-(x - 5) / 2))).astype(int)
    return pd.DataFrame({"yb": yb, "x": x, "y": x + rng.normal(0, 1, n), "z": rng.uniform(0, 10, n),
                         "g": rng.choice(["a", "b"], n)})


BOUNDS = {"x": (0.0, 10.0), "y": (-5.0, 15.0), "z": (0.0, 10.0)}
LEVELS = {"yb": [0, 1], "g": ["a", "b"]}


def _as_dict(df: pd.DataFrame) -> dict:
    return {c: df[c].to_numpy() for c in df.columns}


def test_public_rows_of_every_container():
    df = _frame(1_000)
    assert public_rows(df) == public_rows(_as_dict(df)) == 1_000
    assert public_rows(_as_dict(df), n=5_000) == 5_000
    assert public_rows({"a": [1, 2], "b": [1]}) is None  # ragged: the release says why


def test_a_mapping_and_a_frame_of_the_same_rows_get_the_same_release():
    df = _frame()
    kw = dict(bounds=BOUNDS, levels=LEVELS, namespace={}, epsilon=1.0)
    # 1 continuous covariate, 2 level combinations: the n * epsilon rule decides
    on_frame = choose_logit_method("auto", "yb ~ x + C(g)", df, **kw)
    on_dict = choose_logit_method("auto", "yb ~ x + C(g)", _as_dict(df), **kw)
    assert on_frame == on_dict == "newton"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ReleaseWarning)
        model = dpm.dp_logit("yb ~ x + C(g)", _as_dict(df), epsilon=1.0, bounds=BOUNDS,
                             levels=LEVELS, random_state=2)
    assert type(model).__name__ == "DPNewtonLogit"


def test_the_sparse_grid_warning_counts_rows_not_columns():
    data = _as_dict(_frame(3_000))
    with pytest.warns(ReleaseWarning, match="cells for 3,000 rows") as rec:
        chosen = choose_ols_method("auto", "y ~ x + z", data, bounds=BOUNDS, levels=LEVELS,
                                   bins=200, namespace={}, epsilon=1.0)
    assert chosen == "moments"
    assert not any(re.search(r"for 5 rows", str(w.message)) for w in rec)


@pytest.mark.parametrize("factory, formula", [(dpm.dp_logit, "yb ~ x + z + y"),
                                              (dpm.dp_quantreg, "y ~ x + z + g"),
                                              (dpm.dp_ols, "y ~ x + z + yb")])
def test_epsilon_inf_works_with_the_default_method(factory, formula):
    """issue 26: the README's exact check (epsilon=inf) was refused by dp_logit's and
    dp_quantreg's default, which picks the Newton-type releases (private only)."""
    from dpmodels.core.errors import NotPrivateWarning

    df = _frame(3_000)
    levels = dict(LEVELS, g=["a", "b"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ReleaseWarning)
        warnings.simplefilter("ignore", NotPrivateWarning)
        finite = factory(formula.replace("+ g", "+ C(g)"), df, epsilon=1.0, bounds=BOUNDS,
                         levels=levels, random_state=1)
        exact = factory(formula.replace("+ g", "+ C(g)"), df, epsilon=float("inf"),
                        bounds=BOUNDS, levels=levels)
        res = exact.fit()
    assert type(finite).__name__ in ("DPNewtonLogit", "DPNewtonQuantReg", "DPMomentsOLS")
    assert not res.privacy.private and np.all(np.isfinite(res.params))


@pytest.mark.parametrize("factory, formula", [(dpm.dp_ols, "y ~ standardize(x) + z"),
                                              (dpm.dp_logit, "yb ~ center(x) + z"),
                                              (dpm.dp_quantreg, "y ~ scale(x) + z")])
def test_auto_takes_the_histogram_for_a_stateful_transform(factory, formula):
    """The default on a formula with center()/standardize()/scale() picked the
    moments or Newton-type release, which refuses it (its design is built on a
    public grid, where the transform would memorize the grid): the default
    call raised "use method='histogram'".  Auto now takes the histogram, which
    memorizes the transform on the released cells weighted by their counts."""
    df = _frame(N)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ReleaseWarning)
        model = factory(formula, df, epsilon=1.0, bounds=BOUNDS, levels=LEVELS, random_state=3)
        res = model.fit(cov_type="naive")
    assert type(model).__name__.startswith("DP") and model.release.report.epsilon == 1.0
    assert hasattr(model, "cells")  # the histogram route
    assert np.all(np.isfinite(np.asarray(res.params)))


@pytest.mark.parametrize("factory, formula, levels", [
    (dpm.dp_ols, "y ~ x + z + C(g)", LEVELS),
    (dpm.dp_logit, "yb ~ x + z + C(g)", LEVELS),
    (dpm.dp_quantreg, "y ~ x + z + C(g)", LEVELS)])
def test_auto_picks_the_same_release_for_a_polars_frame_as_for_pandas(factory, formula, levels):
    """issue 28: "a Polars frame and the same pandas frame gave different releases"
    (auto sent every engine frame to the histogram, though the moments, Newton
    and quantile-steps releases read a Polars DataFrame).  Same rows, same seed:
    the same model class and the same estimate."""
    pl = pytest.importorskip("polars")
    df = _frame()
    fits = []
    for data in (df, pl.from_pandas(df)):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ReleaseWarning)
            model = factory(formula, data, epsilon=1.0, bounds=BOUNDS, levels=levels,
                            random_state=5)
            fits.append((type(model).__name__, np.asarray(model.fit(cov_type="naive").params)))
    assert fits[0][0] == fits[1][0] and fits[0][0] != "DPOLS"
    np.testing.assert_array_equal(fits[0][1], fits[1][1])


def test_auto_takes_the_histogram_for_a_logit_its_factors_carry():
    """issue 26: on statsmodels' fair (4 continuous covariates, 240 level
    combinations) both releases were valid and the histogram's intervals were
    the ones with something to say (benchmarks/real_validity.py: finite for 11%
    and 17% of the coefficients at epsilon 1 and 3, the Newton steps' for 1% and
    0%); anes96's logit (6 continuous) and the synthetic logit4 (3 continuous, 4
    combinations) keep the Newton steps."""
    import importlib.util
    from pathlib import Path

    import numpy as np

    path = Path(__file__).resolve().parents[2] / "benchmarks" / "real_validity.py"
    spec = importlib.util.spec_from_file_location("real_validity_auto", path)
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    picked = {}
    for case in ("fair_logit", "anes96_logit"):
        c = bench.CASES[case]
        picked[case] = choose_logit_method("auto", c["formula"], bench.data_of(case),
                                           bounds=c["bounds"], levels=c["levels"],
                                           namespace={"np": np}, epsilon=1.0)
    assert picked == {"fair_logit": "histogram", "anes96_logit": "newton"}
    df = pd.DataFrame({"y": [0, 1], "x1": [0.0, 1.0], "x2": [0.0, 1.0], "x3": [0.0, 1.0],
                       "d": ["no", "yes"]})
    assert choose_logit_method("auto", "y ~ x1 + x2 + x3 + C(d)", df,
                               bounds={v: (0, 1) for v in ("x1", "x2", "x3")},
                               levels={"y": [0, 1], "d": ["no", "yes"]}, namespace={},
                               epsilon=1.0) == "newton"
