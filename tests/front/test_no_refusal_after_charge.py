"""No default fit raises after the budget is spent.

The default logit (the Newton steps, at 6 continuous covariates) refused
anes96's ``vote ~ selfLR + age + educ + income + TVnews + np.log(popul + 0.1)``
(n = 944, epsilon 1) in 6 of 16 seeds with "the release is degenerate: its
noisy number of rows (1) ...", after the accountant was charged: the 1 was the
first Newton step's noisy information entry floored at 1, not a row count.
Now the fit reads the count from the steps that carry most of epsilon where
the first one is swamped, and where the noise swamps every count it returns
results whose intervals say so (infinite, with a warning naming the
coefficients), never an exception after the spend.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
import statsmodels.api as sm

import dpmodels as dpm
from dpmodels.core.errors import ReleaseWarning
from dpmodels.mechanisms.moments.model import check_noisy_rows

ANES_FORMULA = "vote ~ selfLR + age + educ + income + TVnews + np.log(popul + 0.1)"
#: from the ANES 1996 codebook
ANES_BOUNDS = {"selfLR": (1, 7), "age": (18, 100), "educ": (1, 7), "income": (1, 24),
               "TVnews": (0, 7), "popul": (0, 8000)}


def _anes():
    data = sm.datasets.anes96.load_pandas().data.copy()
    data["vote"] = data["vote"].astype(int)
    return data


def _fit_recorded(build, **fit_kw):
    """``(model, results, warnings)``; the model's budget is charged to a fresh
    accountant, so an exception says whether it came after the charge."""
    acc = dpm.Accountant(10)
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        model = build(acc)
        try:
            res = model.fit(**fit_kw)
            res.summary().as_text()
        except Exception as exc:  # pragma: no cover - the failure this file is about
            raise AssertionError(f"raised after a charge of {acc.spent}: {exc!r}") from exc
    return model, res, rec


def _check_honest(res, rec) -> None:
    """No NaN standard error; every infinite one named by a ReleaseWarning;
    nothing calls a noisy information entry a number of rows."""
    bse = np.asarray(res.bse, float)
    assert not np.isnan(bse).any()
    texts = [str(w.message) for w in rec if issubclass(w.category, ReleaseWarning)]
    inf = np.isinf(bse) if bse.ndim == 1 else np.isinf(bse).any(axis=1)
    for name in np.asarray(res.params.index)[inf]:
        assert any(name in t for t in texts), (name, texts)
    assert not any("noisy number of rows (1)" in t for t in texts)


@pytest.mark.parametrize("seed", [4, 6])
def test_anes96_default_logit_does_not_raise_after_the_charge(seed):
    """Seeds 4 and 6 raised "the release is degenerate: its noisy number of rows
    (1)" at epsilon 1 (6 of seeds 0-15 did; none at epsilon 3)."""
    data = _anes()
    model, res, rec = _fit_recorded(
        lambda acc: dpm.dp_logit(ANES_FORMULA, data, epsilon=1.0, bounds=ANES_BOUNDS,
                                 levels={"vote": [0, 1]}, random_state=seed, accountant=acc),
        random_state=seed, n_boot=200)
    assert model.method == "newton"  # the default at six continuous covariates
    _check_honest(res, rec)
    # the count the fit weighs is at most the public n, never the floored entry, and
    # the report's "Noisy rows" is that count
    assert 1.0 < res.nobs <= len(data)
    assert res.privacy.noisy_rows == pytest.approx(res.nobs)
    # the noise is large against n = 944: the intervals say so
    assert np.isinf(np.asarray(res.bse)).any()


def _tiny(seed: int, n: int = 40) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    df = pd.DataFrame(rng.uniform(0, 1, (n, 3)), columns=["x1", "x2", "x3"])
    df["y"] = df.x1 + rng.normal(0, 0.3, n)
    df["yb"] = (rng.random(n) < 0.5).astype(int)
    return df


TINY_BOUNDS = {"y": (-2, 3), "x1": (0, 1), "x2": (0, 1), "x3": (0, 1)}


def _swamped_release(fn, method, **kw):
    """The first of seeds 0-29 whose release (40 rows, epsilon 0.3) has a swamped
    count, as ``(seed, model)`` (releases only: no fit)."""
    for seed in range(30):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model = fn("~ x1 + x2 + x3", _tiny(seed), epsilon=0.3, bounds=TINY_BOUNDS,
                       method=method, random_state=seed, **kw)
        count = (model.release.count if method == "moments" else model._count())
        if not check_noisy_rows(count, 4):
            return seed, model
    raise AssertionError("no swamped release in 30 seeds")  # pragma: no cover


@pytest.mark.parametrize("family", ["ols", "quantreg", "logit"])
def test_a_swamped_release_gives_infinite_intervals_and_a_warning(family):
    """Where the noise swamps every count the fit could weigh, the results say
    so: every standard error infinite (dp and naive), the warning names every
    coefficient and says the noise swamped the count; no negative "Df Residuals"."""
    if family == "ols":
        fn, method = (lambda f, df, **kw: dpm.dp_ols("y " + f, df, **kw)), "moments"
    elif family == "quantreg":
        fn, method = (lambda f, df, **kw: dpm.dp_quantreg("y " + f, df, **kw)), "newton"
    else:
        def fn(f, df, **kw):
            return dpm.dp_logit("yb " + f, df, levels={"yb": [0, 1]}, **kw)
        method = "newton"
    try:
        seed, model = _swamped_release(fn, method)
    except AssertionError:
        if family == "logit":  # the pooled count rarely stays swamped
            pytest.skip("no swamped Newton-logit release in 30 seeds")
        raise
    for cov_type in ("dp", "naive"):
        with warnings.catch_warnings(record=True) as rec:
            warnings.simplefilter("always")
            res = model.fit(cov_type=cov_type, **(
                dict(random_state=seed, n_boot=50) if cov_type == "dp" else {}))
            text = " ".join(res.summary().as_text().split())
        assert np.isinf(np.asarray(res.bse, float)).all(), cov_type
        msgs = [str(w.message) for w in rec if issubclass(w.category, ReleaseWarning)]
        swamped = [m for m in msgs if "noise swamped" in m]
        assert swamped and all(nm in swamped[0] for nm in res.params.index)
        assert "Df Residuals: -" not in text
        assert not [w for w in rec if issubclass(w.category, RuntimeWarning)]


def _small(n: int, seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(1000 + seed)
    X = rng.normal(size=(n, 6)).clip(-3, 3)
    df = pd.DataFrame(X, columns=list("abcdef"))
    df["g"] = rng.choice(["u", "v", "w"], n)
    eta = 0.3 + X[:, :3] @ [0.8, -0.5, 0.3]
    df["y"] = 1 + X @ [1, -0.5, 0.25, 0, 0.5, 0] + rng.normal(size=n)
    df["yb"] = (rng.random(n) < 1 / (1 + np.exp(-eta))).astype(int)
    df["yc"] = rng.choice(["p", "q", "r"], n)
    return df


SMALL_BOUNDS = {v: (-3, 3) for v in "abcdef"} | {"y": (-10, 12)}
SMALL_LEVELS = {"g": ["u", "v", "w"], "yb": [0, 1], "yc": ["p", "q", "r"]}
SMALL_CALLS = {
    "ols": (dpm.dp_ols, "y ~ a + b + c + d + e + f + C(g)"),
    "logit": (dpm.dp_logit, "yb ~ a + b + c + d + e + f"),
    "quantreg": (dpm.dp_quantreg, "y ~ a + b + c + d + e + f"),
    "mnlogit": (dpm.dp_mnlogit, "yc ~ a + b + C(g)"),
}


@pytest.mark.parametrize("family", sorted(SMALL_CALLS))
@pytest.mark.parametrize("n", [300, 1000])
def test_small_n_defaults_never_raise_after_the_charge(family, n):
    """Each family's default (method "auto") at n = 300 and 1,000, 6-9
    coefficients, epsilon 1, three seeds (one for the slower quantile steps):
    results (perhaps uninformative), never an exception once the accountant
    is charged.  (Before issue 44, over seeds 0-7, the logit raised in 3 at
    n = 300 (seeds 2, 4, 6) and 1 at n = 1,000 (seed 4), the quantile steps in
    1 at n = 300 (seed 4).)"""
    fn, formula = SMALL_CALLS[family]
    for seed in (4,) if family == "quantreg" else (2, 4, 6):
        df = _small(n, seed)
        _, res, rec = _fit_recorded(
            lambda acc, df=df, seed=seed: fn(formula, df, epsilon=1.0, bounds=SMALL_BOUNDS,
                                             levels=SMALL_LEVELS, random_state=seed,
                                             accountant=acc),
            random_state=seed, n_boot=50)
        _check_honest(res, rec)
