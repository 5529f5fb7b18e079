"""Results and models of every default route pickle: ``pickle.dumps(res)`` failed on the
default OLS, logit and
quantile routes and on sample-and-aggregate (patsy's ``NotImplementedError``:
patsy cannot pickle a DesignInfo), and ``pickle.loads`` of the histogram
routes' results failed (statsmodels rebuilds the design by searching the
caller's stack frames for the formula's names).  The pickle must give back the
same estimate, covariance, intervals, summary and predictions, and carry
nothing but the release and public inputs (rule 5 of PRIVACY.md)."""

from __future__ import annotations

import pickle
import re
import warnings

import numpy as np
import pandas as pd
import pytest

import dpmodels as dpm

N = 3000
SENTINEL = 7.123456789012345  # one raw value of x: it must not be in any pickle


def _frame(seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    df = pd.DataFrame({"x": rng.uniform(1, 10, N), "g": rng.choice(["a", "b", "c"], N)})
    df.loc[0, "x"] = SENTINEL
    df["y"] = (1 + 0.5 * df.x + (df.g == "b") + rng.normal(0, 1, N)).clip(-20, 20)
    df["t"] = (rng.random(N) < 1 / (1 + np.exp(-(df.x - 5) / 2))).astype(int)
    df["k"] = rng.integers(0, 3, N)
    return df


B = {"x": (1, 10), "y": (-20, 20)}
L = {"g": ["a", "b", "c"], "t": [0, 1], "k": [0, 1, 2]}
F = "y ~ np.log(x) + C(g)"
ROUTES = {
    "ols auto (moments)": lambda d: dpm.dp_ols(F, d, epsilon=1, bounds=B, levels=L),
    "ols histogram": lambda d: dpm.dp_ols(F, d, epsilon=1, bounds=B, levels=L,
                                          method="histogram"),
    "ols histogram, standardize": lambda d: dpm.dp_ols("y ~ standardize(x) + C(g)", d,
                                                       epsilon=1, bounds=B, levels=L),
    "ols sample-aggregate": lambda d: dpm.dp_ols(F, d, epsilon=1, bounds=B, levels=L,
                                                 method="sample-aggregate"),
    "logit newton": lambda d: dpm.dp_logit("t ~ np.log(x) + C(g)", d, epsilon=2, bounds=B,
                                           levels=L, method="newton"),
    "logit histogram": lambda d: dpm.dp_logit("t ~ np.log(x) + C(g)", d, epsilon=1,
                                              bounds=B, levels=L, method="histogram"),
    "quantreg auto (steps)": lambda d: dpm.dp_quantreg(F, d, epsilon=1, bounds=B, levels=L),
    "quantreg histogram": lambda d: dpm.dp_quantreg(F, d, epsilon=1, bounds=B, levels=L,
                                                    method="histogram"),
    "mnlogit histogram": lambda d: dpm.dp_mnlogit("k ~ np.log(x)", d, epsilon=1, bounds=B,
                                                  levels=L),
    "mnlogit sample-aggregate": lambda d: dpm.dp_mnlogit("k ~ np.log(x)", d, epsilon=1,
                                                         bounds=B, levels=L,
                                                         method="sample-aggregate"),
    "logit sample-aggregate": lambda d: dpm.dp_logit("t ~ np.log(x) + C(g)", d, epsilon=1,
                                                     bounds=B, levels=L,
                                                     method="sample-aggregate"),
    "ols local release": lambda d: dpm.dp_ols(
        "y ~ np.log(x) + C(g)", dpm.local.randomize(d, formula="y ~ np.log(x) + C(g)",
                                                    epsilon=4, bounds=B, levels=L, bins=4)),
}
#: Newton-type fits: the calibration's 1,000 replicates are not needed here
FIT = {"n_boot": 100}


def _undated(text: str) -> str:
    """A summary without statsmodels' clock (its Date and Time fields)."""
    return re.sub(r"(Date|Time):\s+\S+( \S+ \S+ \S+)?", "", text)


@pytest.fixture(scope="module")
def data():
    return _frame()


@pytest.mark.parametrize("route", sorted(ROUTES))
def test_results_pickle_and_come_back_the_same(route, data):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = ROUTES[route](data.copy())
        res = model.fit(random_state=0, **({} if "sample-aggregate" in route else FIT))
    blob = pickle.dumps(res)
    back = pickle.loads(blob)
    np.testing.assert_array_equal(np.asarray(back.params), np.asarray(res.params))
    np.testing.assert_array_equal(np.asarray(back.bse), np.asarray(res.bse))
    np.testing.assert_array_equal(np.asarray(back.conf_int()), np.asarray(res.conf_int()))
    assert _undated(back.summary().as_text()) == _undated(res.summary().as_text())
    new = _frame(1).iloc[:25]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        np.testing.assert_allclose(np.asarray(back.predict(new)), np.asarray(res.predict(new)))
    # the model object pickles too, and nothing raw rides along
    model_blob = pickle.dumps(model)
    for b in (blob, model_blob):
        assert np.float64(SENTINEL).tobytes() not in b


def test_a_global_named_like_a_column_is_not_pickled(data):
    """patsy reads ``x`` from the data, so the model's namespace keeps no global of
    that name (here the raw values themselves), and no pickle carries it."""
    x = data["x"].to_numpy().copy()  # noqa: F841 - in the caller's namespace on purpose
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = dpm.dp_ols("y ~ x + C(g)", data, epsilon=1, bounds=B, levels=L,
                           method="histogram", random_state=0)
        res = model.fit(random_state=0, n_boot=50)
    assert "x" not in model.namespace
    for b in (pickle.dumps(model), pickle.dumps(res)):
        assert np.float64(SENTINEL).tobytes() not in b


def test_a_pickle_loads_in_a_fresh_interpreter(tmp_path, data):
    """The usual use: results pickled in one session, loaded in another (where
    no formula namespace, local model class or patsy design exists yet)."""
    import subprocess
    import sys

    routes = ["ols auto (moments)", "ols histogram", "logit newton", "ols local release"]
    expected = {}
    for i, route in enumerate(routes):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model = ROUTES[route](data.copy())
            res = model.fit(random_state=0, **FIT)
        (tmp_path / f"{i}.pkl").write_bytes(pickle.dumps((model, res)))
        expected[i] = (np.asarray(res.params, float), np.asarray(res.predict(_frame(1)[:5])))
    script = (
        "import pickle, sys, warnings, numpy as np\n"
        "warnings.simplefilter('ignore')\n"
        "sys.path.insert(0, sys.argv[2])\n"
        "from tests.models.test_pickling import _frame\n"
        "out = {}\n"
        f"for i in range({len(routes)}):\n"
        "    model, res = pickle.load(open(f'{sys.argv[1]}/{i}.pkl', 'rb'))\n"
        "    out[i] = (np.asarray(res.params, float), np.asarray(res.predict(_frame(1)[:5])))\n"
        "pickle.dump(out, open(f'{sys.argv[1]}/out.pkl', 'wb'))\n")
    from pathlib import Path

    root = str(Path(__file__).resolve().parents[2])
    subprocess.run([sys.executable, "-c", script, str(tmp_path), root], check=True, cwd=tmp_path)
    got = pickle.loads((tmp_path / "out.pkl").read_bytes())
    for i in expected:
        np.testing.assert_array_equal(got[i][0], expected[i][0])
        np.testing.assert_allclose(got[i][1], expected[i][1])
