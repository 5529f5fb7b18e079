"""Bounds that clip most rows are not silent.

Every release that reads a continuous variable with finite declared bounds
spends ``CLIP_SHARE`` of its epsilon on a noisy count, per such variable, of
the rows outside its bounds (`dpmodels.data.clipping`): the report carries it
(``report.outside_bounds``, a "Rows outside bounds" row, an "epsilon part"),
and a `ClippingWarning` names every variable with a large noisy share outside.

The data of the issue: statsmodels' star98 expanded to one row per student
(NABOVE + NBELOW rows per school, n = 267,611), ``PCTAF ~ LOWINC + PTRATIO``
with bounds PCTAF (0, 30), LOWINC (0, 50), PTRATIO (5, 20): 63%, 46% and 97%
of the rows lie outside.
"""

from __future__ import annotations

import math
import warnings
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest

import dpmodels as dpm
from dpmodels.front import registry
from dpmodels.core.budget import parts_fit
from dpmodels.data.clipping import (
    CLIP_SHARE,
    LARGE_SDS,
    LARGE_SHARE,
    OutsideBounds,
    outside_noise_sd,
    split_label,
    unit_epsilon,
)
from dpmodels.core.errors import ClippingWarning, ReleaseWarning
from dpmodels.core.exact import discrete_laplace_variance

FORMULA = "PCTAF ~ LOWINC + PTRATIO"
TIGHT = {"PCTAF": (0.0, 30.0), "LOWINC": (0.0, 50.0), "PTRATIO": (5.0, 20.0)}
WIDE = {"PCTAF": (0.0, 100.0), "LOWINC": (0.0, 100.0), "PTRATIO": (0.0, 60.0)}
#: A noisy count is within this many noise SDs of the truth (discrete Laplace:
#: P(|Z| > 6 SD) = exp(-6 sqrt 2) = 2e-4 per count).
SDS = 6.0


@pytest.fixture(scope="module")
def students() -> pd.DataFrame:
    sm = pytest.importorskip("statsmodels.api")
    d = sm.datasets.star98.load_pandas().data
    w = (d["NABOVE"] + d["NBELOW"]).astype(int)
    return d.loc[d.index.repeat(w), list(TIGHT)].reset_index(drop=True)


def true_outside(df: pd.DataFrame, bounds) -> dict:
    return {v: int(((df[v] < lo) | (df[v] > hi)).sum()) for v, (lo, hi) in bounds.items()}


def _fit_release(method, data, bounds, epsilon=1.0, seed=0):
    """The release of ``FORMULA`` by ``method`` and the warnings raised."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        if method == "histogram":
            rel = dpm.release(data, formula=FORMULA, epsilon=epsilon, bounds=bounds, bins=8,
                              random_state=seed)
        else:
            rel = dpm.dp_ols(FORMULA, data, epsilon=epsilon, bounds=bounds, method=method,
                             random_state=seed).release
    return rel, [w for w in caught if issubclass(w.category, ClippingWarning)]


@pytest.mark.parametrize("method", ["moments", "histogram"])
def test_star98_reports_the_rows_outside_and_warns(students, method):
    rel, caught = _fit_release(method, students, TIGHT)
    out = rel.report.outside_bounds
    assert isinstance(out, OutsideBounds)
    assert out.names == tuple(TIGHT) and out.n == len(students) == 267_611
    d = len(TIGHT)
    eps_c = dict(rel.report.split)[split_label(d)]
    assert eps_c == pytest.approx(CLIP_SHARE * 1.0, rel=1e-12) and out.epsilon == eps_c
    # the noise SD is the discrete Laplace's of L1 sensitivity d: sqrt(2) d / eps_c
    sd = math.sqrt(discrete_laplace_variance(2 * eps_c / d))
    assert out.sd == pytest.approx(sd, rel=1e-9) and out.sd == pytest.approx(
        math.sqrt(2) * d / eps_c, rel=0.01)
    truth = true_outside(students, TIGHT)
    shares = dict(zip(out.names, out.shares))
    for v, c in zip(out.names, out.counts):
        assert abs(c - truth[v]) <= SDS * sd, (v, c, truth[v])
    assert shares["PCTAF"] == pytest.approx(0.634, abs=0.005)
    assert shares["LOWINC"] == pytest.approx(0.459, abs=0.005)
    assert shares["PTRATIO"] == pytest.approx(0.969, abs=0.005)
    assert out.flagged == tuple(TIGHT)
    # one warning, naming every variable, and saying what the estimates describe
    assert len(caught) == 1 and issubclass(caught[0].category, ReleaseWarning)
    msg = str(caught[0].message)
    assert all(v in msg for v in TIGHT) and "clipped data" in msg and "Widen" in msg
    # the report (and so the summary's privacy block) shows it
    text = str(rel.report)
    assert "Rows outside bounds:" in text and "PCTAF 63." in text and "PTRATIO 96.9%" in text
    assert "not the unclipped population" in text
    assert any(label.strip() == "epsilon part:" and "rows outside bounds" in value
               for label, value in rel.report.rows())


def test_star98_summary_says_the_estimates_describe_the_clipped_data(students):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = dpm.dp_ols(FORMULA, students, epsilon=1.0, bounds=TIGHT, method="moments",
                         random_state=0).fit(random_state=0, n_boot=50)
    text = res.summary().as_text()
    assert "Rows outside bounds:" in text and "not the unclipped population" in text


@pytest.mark.parametrize("method", ["moments", "histogram"])
def test_wide_bounds_report_about_zero_and_do_not_warn(students, method):
    assert not any(true_outside(students, WIDE).values())
    rel, caught = _fit_release(method, students, WIDE)
    out = rel.report.outside_bounds
    assert out.names == tuple(WIDE)
    assert all(abs(c) <= SDS * out.sd for c in out.counts), out.counts
    assert out.flagged == () and not caught
    assert "not the unclipped population" not in str(rel.report)


def test_the_warning_cut_leaves_room_for_the_noise():
    # flagged above LARGE_SHARE + LARGE_SDS noise SDs (of the share), not below
    n, sd = 1000, 40.0
    cut = LARGE_SHARE * n + LARGE_SDS * sd
    out = OutsideBounds(("a", "b"), (cut - 1.0, cut + 1.0), n, 0.05, sd)
    assert out.flagged == ("b",)
    # a variable with LARGE_SHARE outside is flagged by noise with probability <= 1%
    assert 0.5 * math.exp(-LARGE_SDS * math.sqrt(2)) < 0.01


@pytest.mark.parametrize("method", ["moments", "histogram", "newton-logit"])
def test_neighbours_differ_in_the_outside_count_only(method):
    """Replace-one neighbours whose clipped rows are the same (a row at the high
    bound moved far beyond it), one seed: the release is identical but for the
    outside count of that variable, which moves by exactly one."""
    rng = np.random.default_rng(3)
    n = 2000
    df = pd.DataFrame({"x": rng.uniform(0, 10, n), "w": rng.uniform(-1, 1, n)})
    df["y"] = 1 + df["x"] - df["w"] + rng.normal(0, 1, n)
    df["z"] = (df["y"] > 5).astype(np.int64)
    df.loc[0, "x"] = 10.0  # at the bound
    nb = df.copy()
    nb.loc[0, "x"] = 500.0  # outside: clipped back to 10
    bounds = {"x": (0.0, 10.0), "w": (-1.0, 1.0), "y": (-5.0, 20.0)}

    def make(data):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            if method == "histogram":
                return dpm.release(data, formula="y ~ x + w", epsilon=1.0, bounds=bounds,
                                   bins=6, random_state=4)
            if method == "moments":
                return dpm.dp_ols("y ~ x + w", data, epsilon=1.0, bounds=bounds,
                                  method="moments", random_state=4).release
            return dpm.dp_logit("z ~ x + w", data, epsilon=1.0, bounds=bounds,
                                levels={"z": [0, 1]}, method="newton", random_state=4).release

    a, b = make(df), make(nb)
    oa, ob = a.report.outside_bounds, b.report.outside_bounds
    assert oa.names == ob.names and "x" in oa.names
    diff = {nm: cb - ca for nm, ca, cb in zip(oa.names, oa.counts, ob.counts)}
    assert diff == {nm: (1.0 if nm == "x" else 0.0) for nm in oa.names}
    from dataclasses import replace

    assert replace(a.report, outside_bounds=None) == replace(b.report, outside_bounds=None)
    assert (oa.n, oa.epsilon, oa.sd) == (ob.n, ob.epsilon, ob.sd)
    for name in ("cell_ids", "counts", "sums", "second", "count", "beta", "information"):
        if hasattr(a, name):
            np.testing.assert_array_equal(np.asarray(getattr(a, name)),
                                          np.asarray(getattr(b, name)), err_msg=name)


def test_nothing_is_spent_when_no_variable_can_clip():
    rng = np.random.default_rng(0)
    df = pd.DataFrame({"y": rng.integers(0, 3, 500), "g": rng.choice(["a", "b"], 500)})
    rel = dpm.release(df, formula="y ~ C(g)", epsilon=1.0,
                      levels={"y": [0, 1, 2], "g": ["a", "b"]}, random_state=0)
    assert rel.report.outside_bounds is None and rel.report.split == ()
    assert rel.report.noise_scale == 2.0 and "Rows outside bounds" not in str(rel.report)


@pytest.mark.parametrize("epsilon", [1.0, 3.0, 0.1, 0.7, 1e-3, 2.0 / 3.0, 12.345])
@pytest.mark.parametrize("d", [1, 2, 3, 7])
def test_the_counts_noise_is_calibrated_in_exact_arithmetic(epsilon, d):
    eps_c = epsilon * CLIP_SHARE
    e = unit_epsilon(eps_c, d)
    # P(z) ~ exp(-e |z| / 2) on a vector of L1 sensitivity d: e * d / 2 <= eps_c, exactly
    assert Fraction(e) * d <= 2 * Fraction(eps_c)
    assert e == pytest.approx(2 * eps_c / d, rel=1e-15)
    assert outside_noise_sd(eps_c, d) == pytest.approx(
        math.sqrt(discrete_laplace_variance(e)))


@pytest.mark.parametrize("epsilon", [1.0, 3.0, 0.3])
def test_the_split_adds_up_exactly(students, epsilon):
    for method in ("moments", "histogram"):
        rel, _ = _fit_release(method, students.iloc[:5000], TIGHT, epsilon=epsilon)
        parts = [e for _, e in rel.report.split]
        assert parts_fit(epsilon, parts), rel.report.split
        assert sum(parts) == pytest.approx(epsilon, rel=1e-12)


def test_the_histogram_noise_uses_the_cells_part(students):
    rel, _ = _fit_release("histogram", students.iloc[:5000], TIGHT, epsilon=2.0)
    cells = rel.report.noise_epsilon
    assert cells == pytest.approx(2.0 * (1 - CLIP_SHARE), rel=1e-12) and cells < 2.0
    assert rel.report.noise_scale == 2.0 / cells
    assert rel.report.threshold == pytest.approx(0.5 * math.log(5000) / cells)


@pytest.mark.parametrize("method", ["moments", "histogram"])
def test_saved_releases_keep_the_counts_and_refuse_an_edited_part(tmp_path, students, method):
    import json

    rel, _ = _fit_release(method, students.iloc[:5000], TIGHT)
    path = tmp_path / "rel.json"
    rel.save(path)
    back = dpm.load_release(path)
    assert back.report == rel.report and back.report.outside_bounds == rel.report.outside_bounds
    doc = json.loads(path.read_text())
    doc["report"]["outside_bounds"]["epsilon"] = 1.0  # claims more than the split gave it
    path.write_text(json.dumps(doc))
    with pytest.raises(dpm.SavedReleaseError):
        dpm.load_release(path)


# ---- every mechanism of the registry ------------------------------------------------------

#: The mechanisms that cannot count centrally: a local release randomizes each row on its
#: own before anything is aggregated, so no central count of the raw values exists.
NOT_COUNTED = ("local",)


@pytest.mark.parametrize("entry", [e for e in __import__(
    "tests.contracts.test_mechanism_contract", fromlist=["ENTRIES"]).ENTRIES], ids=lambda e: e.id)
def test_every_mechanism_reports_the_rows_outside(entry):
    from tests.support.registry_entries import FRAME, base_kw, formula_of, recipe, report_of

    assert entry.mech in registry.MECHANISMS
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        made = recipe(entry).make(formula_of(entry.family), FRAME,
                                  **base_kw(entry, random_state=0))
    rep = report_of(made)
    assert hasattr(rep, "outside_bounds"), entry.id
    if entry.mech.name in NOT_COUNTED:
        assert rep.outside_bounds is None
        return
    out = rep.outside_bounds
    assert isinstance(out, OutsideBounds), (entry.id, out)
    # the formula's continuous variables with bounds (the response y only where it is
    # continuous); FRAME has no value outside them
    assert "x" in out.names and set(out.names) <= {"x", "y"}, out.names
    assert all(abs(c) <= SDS * out.sd for c in out.counts), out.counts
    assert "Rows outside bounds:" in str(rep)
    # its epsilon part is listed (a projected model: in its histogram's rows and split)
    assert any(label.strip() == "epsilon part:" and "rows outside bounds" in value
               for label, value in rep.rows()), rep.rows()
    split = getattr(rep, "histogram", rep).split
    assert any("rows outside bounds" in label for label, _ in split), split


def test_audit_of_the_outside_counts():
    """PRIVACY.md's empirical audit for the counts: neighbours whose exact counts
    differ by one in each of d = 3 variables (one row moved from inside every
    bound to outside every bound: the worst case of L1 sensitivity d).  The lower
    confidence bound of the loss of "every count >= k" never exceeds eps_c and
    comes close to it (a noise calibrated for sensitivity 1 instead of d would
    show a loss of 3 eps_c)."""
    from dpmodels.data.clipping import release_outside
    from dpmodels.core.randomness import random_source

    from tests.support.audit_tools import loss_lower_bound

    class Axis:
        def __init__(self, name):
            self.name = name

    axes = [Axis("a"), Axis("b"), Axis("c")]
    eps_c, R, alpha = 0.5, 20_000, 1e-3
    D, Dp = np.array([10, 10, 10]), np.array([11, 11, 11])
    bits_D, bits_Dp = random_source(101), random_source(202)
    vD = np.array([release_outside(D, axes, 100, eps_c, bits_D).counts for _ in range(R)])
    vDp = np.array([release_outside(Dp, axes, 100, eps_c, bits_Dp).counts for _ in range(R)])
    losses = []
    for k in (12, 13, 14):  # tail events: the loss is exactly eps_c for k >= 12
        xD, xDp = int((vD >= k).all(axis=1).sum()), int((vDp >= k).all(axis=1).sum())
        losses += [loss_lower_bound(xDp, xD, R, alpha / 12),
                   loss_lower_bound(xD, xDp, R, alpha / 12)]
    assert max(losses) <= eps_c, losses
    assert max(losses) >= 0.3, losses  # close to eps_c = 0.5 (not a check that cannot fail)
