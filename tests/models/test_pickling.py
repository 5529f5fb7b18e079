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
import pytest

import dpmodels as dpm
from tests.support.routes import (
    FIT,
    ROUTES,
    SENTINEL,
    B,
    L,
    _frame,
)


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
        "from tests.support.routes import _frame\n"
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
