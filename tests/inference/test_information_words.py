"""Each mechanism explains a coefficient without information in its own terms: the
moments, Newton and quantile-steps fits have no
threshold and no cells, and their summaries never say they do."""

from __future__ import annotations

import re
import warnings

import numpy as np
import pandas as pd
import pytest

import dpmodels as dpm

BOUNDS = {"y": (0.0, 10.0), "x": (0.0, 10.0), "z": (0.0, 10.0)}
LEVELS = {"yb": [0, 1], "g": ["a", "b", "ghost"]}  # "ghost": declared, no row


@pytest.fixture(scope="module")
def frame() -> pd.DataFrame:
    rng = np.random.default_rng(12)
    n = 4_000
    x = rng.uniform(0, 10, n)
    return pd.DataFrame({"y": np.clip(1 + 0.5 * x + rng.normal(0, 1, n), 0, 10), "x": x,
                         "z": rng.uniform(0, 10, n), "g": rng.choice(["a", "b"], n),
                         "yb": (rng.random(n) < 1 / (1 + np.exp(2 - 0.4 * x))).astype(int)})


FITS = {
    "moments": (dpm.dp_ols, "y ~ x + z + C(g)", {"method": "moments"}, r"noisy moments"),
    "newton": (dpm.dp_logit, "yb ~ x + z + C(g)", {"method": "newton"},
               r"noisy information of the Newton steps"),
    "quantile-steps": (dpm.dp_quantreg, "y ~ x + z + C(g)", {"method": "newton"},
                       r"noisy count of rows with a 1"),
}


@pytest.mark.parametrize("name", list(FITS))
def test_no_information_is_explained_in_the_mechanisms_words(frame, name):
    factory, formula, extra, words = FITS[name]
    with warnings.catch_warnings(record=True) as told:
        warnings.simplefilter("always")
        res = factory(formula, frame, epsilon=1.0, bounds=BOUNDS, levels=LEVELS,
                      random_state=3, **extra).fit(random_state=3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        naive = factory(formula, frame, epsilon=1.0, bounds=BOUNDS, levels=LEVELS,
                        random_state=3, **extra).fit(cov_type="naive")
    # the warnings say it in the mechanism's words too
    said = [str(w.message) for w in told if issubclass(w.category, dpm.ReleaseWarning)
            and "ghost" in str(w.message)]
    assert said and not [m for m in said for wrong in ("threshold", "spurious", "cells")
                         if wrong in m], said
    text = str(res.summary())
    assert re.search(r"no information about[^:]*C\(g\)\[T\.ghost\]", text), text
    assert re.search(words, text), text
    for wrong in ("threshold", "spurious", "cells"):
        assert wrong not in text.split("Differential privacy")[-1].split("=====")[-1], wrong
    naive_text = str(naive.summary())
    assert "thresholding" not in naive_text and "binning" not in naive_text


def test_the_histogram_keeps_its_own_words(frame):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = dpm.dp_ols("y ~ x + C(g)", frame, epsilon=1.0, bounds=BOUNDS, levels=LEVELS,
                         method="histogram", random_state=3).fit(n_boot=40, random_state=3)
    text = str(res.summary())
    assert re.search(r"no information about[^:]*C\(g\)\[T\.ghost\].*spurious", text)
