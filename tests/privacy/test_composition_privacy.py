"""A result built on any non-private part says so: a model whose coefficients were chosen by a
non-private selection, or fitted on a non-private (epsilon = inf) release
saved and loaded again, never reports epsilon-DP."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pandas as pd
import pytest

import dpmodels as dpm
from dpmodels.core.errors import NotPrivateWarning, ReleaseWarning

BOUNDS = {"x": (0.0, 10.0), "z": (0.0, 10.0)}
LEVELS = {"yb": [0, 1], "yc": [0, 1, 2], "g": ["a", "b", "c"]}


@pytest.fixture(scope="module")
def frame() -> pd.DataFrame:
    rng = np.random.default_rng(8)
    n = 3_000
    x = rng.uniform(0, 10, n)
    return pd.DataFrame({"yb": (rng.random(n) < 1 / (1 + np.exp(3 - 0.6 * x))).astype(int),
                         "yc": rng.integers(0, 3, n), "x": x, "z": rng.uniform(0, 10, n),
                         "g": rng.choice(["a", "b", "c"], n)})


def _selection(frame, target, epsilon):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", NotPrivateWarning)
        return dpm.select_features(frame, target, ["x", "z", "g"], k=1, epsilon=epsilon,
                                   bounds=BOUNDS, levels=LEVELS, random_state=1)


@pytest.mark.parametrize("factory, target", [(dpm.dp_logit, "yb"), (dpm.dp_mnlogit, "yc")])
def test_a_model_on_a_non_private_selection_is_not_private(frame, factory, target):
    sel = _selection(frame, target, math.inf)
    assert not sel.report.private
    acct = dpm.Accountant(5.0)
    with pytest.warns(NotPrivateWarning, match="NOT differentially private"):
        model = factory(f"{target} ~ x + z + C(g)", frame, epsilon=1.0, bounds=BOUNDS,
                        levels=LEVELS, select=sel, random_state=2, accountant=acct)
    report = model.privacy
    assert report.private is False and math.isinf(report.epsilon)
    assert acct.spent == 1.0  # the histogram was still released and charged
    text = str(report)
    assert "NOT PRIVATE" in text and "epsilon = 1," not in text
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        summary = str(model.fit().summary())
    assert "NOT PRIVATE" in summary
    assert "epsilon-DP, epsilon = 1," not in summary


def test_a_model_on_a_private_selection_stays_private(frame):
    sel = _selection(frame, "yb", 0.5)
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        model = dpm.dp_logit("yb ~ x + z + C(g)", frame, epsilon=1.0, bounds=BOUNDS,
                             levels=LEVELS, select=sel, random_state=2)
    assert not [w for w in rec if issubclass(w.category, NotPrivateWarning)]
    # the selection's 0.5 and the histogram's 1 (issue 43, audit item 7)
    assert model.privacy.private is True and model.privacy.epsilon == 1.5
    assert "NOT PRIVATE" not in str(model.privacy)


def test_a_loaded_non_private_release_fits_a_non_private_model(frame, tmp_path):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rel = dpm.release(frame, formula="yb ~ x + C(g)", epsilon=math.inf, bounds=BOUNDS,
                          levels=LEVELS, bins=4)
        path = rel.save(tmp_path / "rel.json")
        loaded = dpm.load_release(path)
        res = dpm.dp_logit("yb ~ x + C(g)", loaded).fit()
    assert loaded.report.private is False
    assert res.privacy.private is False
    assert "NOT PRIVATE" in str(res.summary())
