"""Issue 43, part 2: items 3, 6 and 7 of the outside privacy audit.

3. ``select=`` with an epsilon whose selection or histogram part is below
   MIN_EPSILON is refused before any charge or noise, and the message gives
   the smallest epsilon that works.
6. A saved release is accepted only if its noise scales, threshold and split
   agree in exact arithmetic with the epsilon it states (PRIVACY.md rule 11).
7. A projected fit on an earlier private selection reports the epsilon it
   depends on in total (selection + histogram), lists both parts, and is
   seeded if any part was (PRIVACY.md rule 8).

Fixed seeds, real releases and fits, no mocks.
"""

from __future__ import annotations

import math
import re
import warnings
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest

import dpmodels as dpm
from dpmodels.exact import MIN_EPSILON
from dpmodels.models.projected import _split, smallest_epsilon

BOUNDS = {"x1": (0.0, 1.0), "x2": (0.0, 1.0), "x3": (0.0, 1.0)}
LEVELS = {"y": [0, 1]}
FORMULA = "y ~ x1 + x2 + x3"


@pytest.fixture(scope="module")
def frame() -> pd.DataFrame:
    rng = np.random.default_rng(3)
    n = 400
    df = pd.DataFrame({"x1": rng.uniform(0, 1, n), "x2": rng.uniform(0, 1, n),
                       "x3": rng.uniform(0, 1, n)})
    df["y"] = (df["x1"] + 0.2 * rng.normal(size=n) > 0.5).astype(int)
    return df


# ---- item 3: a split too small for MIN_EPSILON is refused up front --------------------


@pytest.mark.parametrize("gamma", [None, 0.25])
def test_select_with_a_part_below_min_epsilon_is_refused_before_any_charge(frame, gamma):
    acct = dpm.Accountant(1.0)
    with pytest.raises(dpm.DPModelsError, match="smallest epsilon that works") as info:
        dpm.dp_logit(FORMULA, frame, select=1, gamma=gamma, epsilon=2e-15, bounds=BOUNDS,
                     levels=LEVELS, accountant=acct, random_state=0)
    assert acct.spent == 0.0 and acct.ledger == ()
    # the epsilon the message gives works: both of its parts are at least MIN_EPSILON
    shown = float(re.search(r"smallest epsilon that works with this gamma is (\S+?);",
                            str(info.value)).group(1))
    used = float(re.search(r"gamma = (\S+?)\)", str(info.value)).group(1))
    if gamma is not None:
        assert used == gamma
        assert shown == 4e-15
    g = gamma if gamma is not None else used
    assert min(_split(shown, g)) >= MIN_EPSILON


def test_smallest_epsilon_is_the_smallest_float_that_splits():
    for gamma in (0.05, 0.25, 0.5, 0.7, 0.95):
        e = smallest_epsilon(gamma)
        assert min(_split(e, gamma)) >= MIN_EPSILON
        assert min(_split(math.nextafter(e, 0.0), gamma)) < MIN_EPSILON


# ---- item 7: a fit on an earlier private selection reports the total ----------------


def test_projected_fit_on_an_earlier_private_selection_reports_the_total(frame):
    sel = dpm.select_features(frame, "y", ["x1", "x2", "x3"], k=1, epsilon=0.5, bounds=BOUNDS,
                              levels=LEVELS, random_state=1)
    assert sel.report.seeded
    acct = dpm.Accountant(2.0)
    model = dpm.dp_logit(FORMULA, frame, select=sel, epsilon=1.0, bounds=BOUNDS,
                         levels=LEVELS, accountant=acct)  # a secure (unseeded) histogram
    report = model.privacy
    assert [s.epsilon for s in acct.ledger] == [1.0]  # only the histogram is charged here
    assert report.private and report.epsilon == 1.5
    assert [e for _, e in report.split] == [0.5, 1.0]
    assert sum(Fraction(e) for _, e in report.split) <= Fraction(report.epsilon)
    assert report.histogram.seeded is False
    assert report.seeded is True
    assert report.earlier is sel.report
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = model.fit(cov_type="naive")
    assert res.privacy is report
    for text in (str(res.summary()), str(report)):
        assert "epsilon-DP, epsilon = 1.5, delta = 0" in text
        assert "epsilon = 1," not in text
        assert "0.5 for an earlier private selection" in text
        assert "1 for histogram of the projection" in text
        assert "seeded generator" in text


def test_projected_fit_seeded_histogram_and_secure_earlier_selection_is_seeded(frame):
    sel = dpm.select_features(frame, "y", ["x1", "x2", "x3"], k=2, epsilon=0.25, bounds=BOUNDS,
                              levels=LEVELS)
    model = dpm.dp_logit(FORMULA, frame, select=sel, epsilon=0.75, bounds=BOUNDS,
                         levels=LEVELS, random_state=4)
    assert model.privacy.seeded and model.privacy.epsilon == 1.0
    assert "OS secure entropy" not in str(model.privacy)


def test_projected_fit_with_its_own_selection_keeps_the_callers_epsilon(frame):
    model = dpm.dp_logit(FORMULA, frame, select=1, gamma=0.3, epsilon=0.7, bounds=BOUNDS,
                         levels=LEVELS, random_state=5)
    parts = [e for _, e in model.privacy.split]
    assert len(parts) == 2 and model.privacy.epsilon <= 0.7
    assert sum(Fraction(e) for e in parts) <= Fraction(model.privacy.epsilon)
