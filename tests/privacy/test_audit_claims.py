"""What the reports and docs claim, as the outside privacy audit checked it (its items 3,
6 and 7).

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

import copy
import json
import math
import re
import warnings
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest

import dpmodels as dpm
from dpmodels.core.exact import MIN_EPSILON
from dpmodels.models.projected import _parts_work, _split, smallest_epsilon
from dpmodels.front.saved import release_from_document
from dpmodels.output.saving import SavedReleaseError, release_document

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
        assert shown == 8e-14  # the histogram's outside counts take 5% of its quarter
    g = gamma if gamma is not None else used
    assert min(_split(shown, g)) >= MIN_EPSILON and _parts_work(shown, g, True)


def test_select_refuses_before_any_charge_when_the_histograms_own_split_is_too_small(frame):
    # epsilon = 2e-14: the selection's 1.5e-14 and the histogram's 5e-15 are above
    # MIN_EPSILON, but the histogram's outside counts would get 2.5e-16 (refused after
    # the selection was charged, before)
    acct = dpm.Accountant(1.0)
    with pytest.raises(dpm.DPModelsError, match="smallest epsilon that works"):
        dpm.dp_logit(FORMULA, frame, select=1, gamma=0.25, epsilon=2e-14, bounds=BOUNDS,
                     levels=LEVELS, accountant=acct, random_state=0)
    assert acct.spent == 0.0 and acct.ledger == ()


def test_select_checks_the_spurious_cell_limit_on_the_cells_part_before_any_charge(frame):
    from dpmodels.core.budget import split_epsilon
    from dpmodels.data.clipping import CLIP_SHARE
    from dpmodels.core.noise import discrete_laplace_sf
    from dpmodels.mechanisms.histogram import resolve_threshold

    eps_h = _split(1.1, 0.5)[1]
    cells = split_epsilon(eps_h, [CLIP_SHARE, None])[1]
    m = 2 * 10  # y x one selected variable of 10 bins

    def spurious(e):
        return m * discrete_laplace_sf(resolve_threshold("enhanced", e, 400, 0.5).k, e)

    assert spurious(eps_h) < spurious(cells)  # the same cut, more noise on the cells' part
    limit = (spurious(eps_h) + spurious(cells)) / 2  # passed at eps_h, not at the cells'
    acct = dpm.Accountant(2.0)
    with pytest.raises(dpm.DomainTooLargeError, match="refused before the selection"):
        dpm.dp_logit(FORMULA, frame, select=1, gamma=0.5, epsilon=1.1, bounds=BOUNDS,
                     levels=LEVELS, bins=10, max_spurious_cells=limit, accountant=acct,
                     random_state=0)
    assert acct.spent == 0.0 and acct.ledger == ()


def test_smallest_epsilon_is_the_smallest_float_that_splits():
    for gamma in (0.05, 0.25, 0.5, 0.7, 0.95):
        e = smallest_epsilon(gamma)
        assert min(_split(e, gamma)) >= MIN_EPSILON
        assert min(_split(math.nextafter(e, 0.0), gamma)) < MIN_EPSILON
        for clip in (False, True):
            e = smallest_epsilon(gamma, clip)
            assert _parts_work(e, gamma, clip)
            assert not _parts_work(math.nextafter(e, 0.0), gamma, clip)


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


# ---- item 6: a saved release proves the guarantee it states (PRIVACY.md rule 11) -----

XB = {"x": (0.0, 10.0), "y": (-5.0, 30.0)}


@pytest.fixture(scope="module")
def saved() -> dict:
    """One release of each formula kind and histograms under every threshold rule, as
    the documents `save()` writes."""
    rng = np.random.default_rng(43)
    n = 4_000
    x = rng.uniform(0, 10, n)
    df = pd.DataFrame({"x": x, "y": 1 + 2 * x + rng.normal(size=n),
                       "b": (rng.random(n) < 1 / (1 + np.exp(3 - 0.6 * x))).astype(int),
                       "g": rng.choice(["a", "b"], n)})
    lv = {"b": [0, 1], "g": ["a", "b"]}
    out = {}
    for name, thr in (("enhanced", "enhanced"), ("auto", "auto"), ("zero", "zero"),
                      ("signed", None), ("fixed", 7.5)):
        out[f"histogram-{name}"] = dpm.release(
            df, columns=["y", "x", "g"], epsilon=1.0, bounds=XB, levels=lv, bins=5,
            threshold=thr, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out["histogram-inf"] = dpm.release(df, columns=["x", "g"], epsilon=math.inf,
                                           bounds=XB, levels=lv, bins=5)
        out["moments-inf"] = dpm.release_moments(df, formula="y ~ x", epsilon=math.inf,
                                                 bounds=XB)
    out["moments"] = dpm.release_moments(df, formula="y ~ x + C(g)", epsilon=1.0, bounds=XB,
                                         levels=lv, random_state=1)
    out["newton"] = dpm.release_newton(df, formula="b ~ x + C(g)", epsilon=1.0, bounds=XB,
                                       levels=lv, random_state=2)
    out["quantile-steps"] = dpm.dp_quantreg("y ~ x + C(g)", df, epsilon=1.0, bounds=XB,
                                            levels=lv, method="newton", q=[0.25, 0.5],
                                            random_state=3).release
    return {k: json.loads(json.dumps(release_document(r))) for k, r in out.items()}


def _load(doc):
    return release_from_document(copy.deepcopy(doc), {})


def _with_epsilon(doc, eps, scale_split=False):
    doc = copy.deepcopy(doc)
    doc["guarantee"]["epsilon"] = eps
    doc["report"]["epsilon"] = eps
    if scale_split and doc["report"].get("split"):  # the parts scaled to add up to it
        old = sum(e for _, e in doc["report"]["split"])
        doc["report"]["split"] = [[lab, e * eps / old] for lab, e in doc["report"]["split"]]
    return doc


def _cells_epsilon(doc) -> float:
    """The epsilon a histogram document's cells claim: their part of the split, if any."""
    split = doc["report"].get("split") or []
    return split[0][1] if split else doc["report"]["epsilon"]


def test_every_genuine_saved_release_loads(saved):
    for doc in saved.values():
        rel = _load(doc)
        assert rel.report.epsilon == doc["report"]["epsilon"] or math.isinf(rel.report.epsilon)


def test_histogram_file_with_an_edited_epsilon_is_refused(saved):
    doc = saved["histogram-enhanced"]
    assert _load(doc).report.epsilon == 1.0
    # the audit's file: epsilon 0.1, noise scale and threshold still those of epsilon 1
    with pytest.raises(SavedReleaseError, match="noise_scale|split"):
        _load(_with_epsilon(doc, 0.1))
    with pytest.raises(SavedReleaseError, match="noise_scale|split"):
        _load(_with_epsilon(doc, 0.1, scale_split=True))
    # the noise scale edited too: the threshold still gives epsilon 1 away
    edited = _with_epsilon(doc, 0.1, scale_split=True)
    edited["report"]["noise_scale"] = 2.0 / _cells_epsilon(edited)
    with pytest.raises(SavedReleaseError, match="threshold|split"):
        _load(edited)
    # the threshold moved too: the released counts and the spurious-cell bound still
    # give epsilon 1 away
    edited["report"]["threshold"] = 0.5 * math.log(4000) / _cells_epsilon(edited)
    with pytest.raises(SavedReleaseError, match="threshold|expected_spurious_cells|split"):
        _load(edited)
    edited["report"]["threshold"] = 1.0
    edited["report"]["threshold_rule"] = "fixed"
    edited["report"]["threshold_A"] = None
    with pytest.raises(SavedReleaseError, match="expected_spurious_cells|split"):
        _load(edited)


@pytest.mark.parametrize("kind", ["histogram-auto", "histogram-zero", "histogram-signed",
                                  "histogram-fixed"])
def test_histogram_files_of_every_threshold_rule_with_an_edited_epsilon_are_refused(saved,
                                                                                    kind):
    doc = saved[kind]
    _load(doc)
    with pytest.raises(SavedReleaseError, match="noise_scale|split"):
        _load(_with_epsilon(doc, 0.1, scale_split=True))
    edited = _with_epsilon(doc, 0.1, scale_split=True)
    edited["report"]["noise_scale"] = 2.0 / _cells_epsilon(edited)
    if kind == "histogram-signed":  # every cell kept: the noise scale is the whole claim
        edited["report"]["noise_scale"] = doc["report"]["noise_scale"]
    with pytest.raises(SavedReleaseError, match="noise_scale|threshold|spurious|split"):
        _load(edited)


@pytest.mark.parametrize("kind", ["moments", "newton", "quantile-steps"])
def test_formula_file_with_an_edited_epsilon_and_split_is_refused(saved, kind):
    doc = saved[kind]
    _load(doc)
    with pytest.raises(SavedReleaseError):
        _load(_with_epsilon(doc, 0.1, scale_split=True))


@pytest.mark.parametrize("kind", ["moments", "newton", "quantile-steps"])
def test_split_with_a_negative_part_is_refused(saved, kind):
    doc = copy.deepcopy(saved[kind])
    split = doc["report"]["split"]
    split[0][1], split[1][1] = split[0][1] + 1.0, split[1][1] - 1.0  # same sum
    assert split[1][1] < 0
    with pytest.raises(SavedReleaseError, match="split"):
        _load(doc)


def test_audit_split_2_minus_1_0_is_refused(saved):
    doc = copy.deepcopy(saved["moments"])
    split = doc["report"]["split"]
    doc["report"]["split"] = [[split[0][0], 2.0], [split[1][0], -1.0]] + [
        [lab, 0.0] for lab, _ in split[2:]]
    with pytest.raises(SavedReleaseError, match="split"):
        _load(doc)


@pytest.mark.parametrize("kind", ["moments", "newton", "quantile-steps"])
def test_split_above_epsilon_by_5e_10_is_refused(saved, kind):
    doc = copy.deepcopy(saved[kind])
    doc["report"]["split"][-1][1] += 5e-10
    with pytest.raises(SavedReleaseError, match="split"):
        _load(doc)


def test_moments_noise_variance_edited_is_refused(saved):
    doc = copy.deepcopy(saved["moments"])
    doc["release"]["noise_var"] = [v / 100 for v in doc["release"]["noise_var"]]
    with pytest.raises(SavedReleaseError, match="noise_var"):
        _load(doc)


def test_quantile_step_noise_edited_is_refused(saved):
    doc = copy.deepcopy(saved["quantile-steps"])
    doc["release"]["steps"][0][0] = [v / 100 for v in doc["release"]["steps"][0][0]]
    with pytest.raises(SavedReleaseError, match="noise"):
        _load(doc)


def test_non_private_files_cannot_claim_a_split(saved):
    doc = copy.deepcopy(saved["moments-inf"])
    doc["report"]["split"] = [["moments", 1.0]]
    with pytest.raises(SavedReleaseError, match="split"):
        _load(doc)


@pytest.mark.parametrize("kind, key", [
    ("newton", ["release", "step_noise", 0]), ("newton", ["release", "noise_var"]),
    ("quantile-steps", ["release", "ls_noise"]),
    ("quantile-steps", ["release", "band_prior_var"]),
    ("quantile-steps", ["release", "level_noise_var"]),
])
def test_edited_noise_variances_are_refused(saved, kind, key):
    doc = copy.deepcopy(saved[kind])
    *path, last = key
    holder = doc
    for k in path:
        holder = holder[k]
    value = holder[last]
    holder[last] = ([v / 100 for v in value] if isinstance(value, list) else value / 100)
    with pytest.raises(SavedReleaseError, match=str(key[1])):
        _load(doc)
