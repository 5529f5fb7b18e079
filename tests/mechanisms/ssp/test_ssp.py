"""dp_ols(method="ssp"): the design's moments perturbed on the declared bounds
(dpmodels.mechanisms.ssp).

The contract suites (tests/contracts/) take the mechanism from its registry
entry: engines, neighbours, epsilon=inf, saved files, refusals before the
charge.  Here: the sensitivity of its one noisy vector against adversarial
neighbours, the split and noise it states, the claim check of its saved file,
the noise law, and the coverage of its intervals.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats

import dpmodels as dpm
from dpmodels.core.accountant import Accountant
from dpmodels.core.exact import discrete_laplace_variance
from dpmodels.front.saved import SavedReleaseError, release_document, release_from_document
from dpmodels.mechanisms.moments import moments_sensitivity, unit_epsilon
from dpmodels.mechanisms.ssp import PrivateSSP, public_radius, release_ssp
from dpmodels.mechanisms.moments.model import DPMomentsOLS
from dpmodels.mechanisms.ssp.model import DPSSPOLS
from tests.support.moment_sensitivity import (
    candidate_frame,
    contributions,
    rows_of,
    space_of,
    worst_pair,
)

SHAPES = {"factor": "y ~ x + C(g)", "log": "y ~ np.log(x) + z + C(h)",
          "interaction": "y ~ z + x:C(g)", "no-intercept": "y ~ 0 + C(g) + x"}
BOUNDS = {"x": (0.0, 10.0), "y": (-5.0, 15.0)}
LEVELS = {"g": ["a", "b", "c"]}


def frame(n: int = 3000, seed: int = 0, slope: float = 0.5) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    x = rng.uniform(0, 10, n)
    g = rng.choice(["a", "b", "c"], n)
    y = np.clip(1 + slope * x + (g == "b") + rng.normal(0, 1, n), -5, 15)
    return pd.DataFrame({"x": x, "g": g, "y": y})


@pytest.mark.parametrize("formula", list(SHAPES.values()), ids=list(SHAPES))
def test_sensitivity_bound_holds_for_adversarial_neighbours(formula):
    """Every pair of candidate rows (bounds, far outside, interior, missing)
    changes the released integer vector by at most the stated delta, with the
    public offsets, scales and radius; and the bound is not absurdly loose."""
    cands = candidate_frame(formula)
    space = space_of(formula, cands)
    radius = public_radius(space)
    M, delta = contributions(space, cands, np.zeros(space.q), np.ones(space.q), radius)
    _, _, dist = worst_pair(M)
    assert dist <= delta, (dist, delta)
    # not absurdly loose: measured 0.53-0.62 of delta (the moments' bound holds for any
    # offsets, scales and radius; at the public ones it is 1.6-1.9x the worst pair found)
    assert dist >= 0.5 * delta, (dist, delta)


def test_no_row_is_clipped_beyond_the_declared_bounds():
    """The public radius is the largest L1 norm of a row's design values (clamped
    to the declared ranges): every candidate row lies within it, and the rows at
    the bounds reach it, so the L1 ball never shrinks a row."""
    for formula in SHAPES.values():
        cands = candidate_frame(formula)
        space = space_of(formula, cands)
        U = np.concatenate(list(rows_of(space, cands)()))
        norms = np.abs(U).sum(axis=1)
        assert norms.max() <= public_radius(space), (formula, norms.max())
        assert norms.max() == pytest.approx(public_radius(space)), formula


def test_split_noise_and_charge():
    """All of epsilon on the moments, less the outside counts' share; the noise
    variances are the discrete Laplace law's at that part; the accountant is
    charged exactly epsilon."""
    acc = Accountant(total_epsilon=2.0)
    rel = release_ssp(frame(), formula="y ~ x + C(g)", epsilon=1.0, bounds=BOUNDS,
                      levels=LEVELS, random_state=1, accountant=acc)
    assert isinstance(rel, PrivateSSP) and rel.report.private
    parts = [e for _, e in rel.report.split]
    assert len(parts) == 2 and math.fsum(parts) <= 1.0 and parts[1] == pytest.approx(0.05)
    assert acc.spent == pytest.approx(1.0)
    g, _, w_s, delta = moments_sensitivity(rel.radius, rel.space, rel.offsets, rel.scales)
    var = discrete_laplace_variance(unit_epsilon(parts[0], delta / 2.0))
    assert rel.noise_var == (var / (w_s * g) ** 2, var / (w_s * g) ** 2, var / g**4)
    assert np.all(rel.offsets == 0) and np.all(rel.scales == 1)
    assert rel.radius == public_radius(rel.space)


def test_noise_law_of_the_count():
    """Over 300 seeds on the same rows, the noisy count's variance is the stated
    noise variance: the sample variance of 300 discrete Laplace draws has a
    relative SD of sqrt((kurtosis - 1) / 300) ~ 0.13; 4 SD."""
    df = frame(400)
    counts = [release_ssp(df, formula="y ~ x", epsilon=0.5, bounds=BOUNDS,
                          random_state=s).count for s in range(300)]
    rel = release_ssp(df, formula="y ~ x", epsilon=0.5, bounds=BOUNDS, random_state=0)
    ratio = np.var(counts, ddof=1) / rel.noise_var[0]
    assert abs(ratio - 1) < 4 * math.sqrt(5 / 300), ratio
    assert abs(np.mean(counts) - 400) < 4 * math.sqrt(rel.noise_var[0] / 300)


def test_saved_file_round_trip_and_claim_check(tmp_path):
    """The file reads back bit-identical; an edited epsilon, offset or radius is
    refused (the noise would not prove the stated guarantee)."""
    rel = release_ssp(frame(), formula="y ~ x + C(g)", epsilon=1.0, bounds=BOUNDS,
                      levels=LEVELS, random_state=2)
    back = dpm.load_release(rel.save(tmp_path / "ssp.json"))
    assert isinstance(back, PrivateSSP)
    np.testing.assert_array_equal(back.second, rel.second)
    a = DPSSPOLS("y ~ x + C(g)", rel).fit(cov_type="naive").params
    b = DPSSPOLS("y ~ x + C(g)", back).fit(cov_type="naive").params
    assert (a == b).all()
    for edit, message in ((lambda d: d["release"]["offsets"].__setitem__(0, 0.25),
                           "release.offsets"),
                          (lambda d: d["release"].__setitem__("radius", 99.0), "release.radius"),
                          (lambda d: (d["report"].__setitem__("epsilon", 2.0),
                                      d["guarantee"].__setitem__("epsilon", 2.0)),
                           "report.split's parts")):
        doc = release_document(rel)
        edit(doc)
        with pytest.raises(SavedReleaseError, match=message.replace(".", r"\.")):
            release_from_document(doc)


def test_refused_before_the_charge():
    """An undeclared level is found in the one pass, before the accountant is
    charged or noise drawn."""
    acc = Accountant(total_epsilon=1.0)
    with pytest.raises(dpm.UndeclaredLevelError):
        release_ssp(frame(), formula="y ~ x + C(g)", epsilon=1.0, bounds=BOUNDS,
                    levels={"g": ["a", "b"]}, random_state=0, accountant=acc)
    assert acc.spent == 0


def test_intervals_cover_the_slope():
    """60 seeded data sets (n = 3000, epsilon 1): the 95% intervals of the slope
    cover its true value at least as often as a valid 95% interval would with
    probability 0.999 (binomial lower tail), and are finite."""
    reps, hits = 60, 0
    for seed in range(reps):
        res = dpm.dp_ols("y ~ x + C(g)", frame(seed=100 + seed), epsilon=1.0, bounds=BOUNDS,
                         levels=LEVELS, method="ssp", random_state=seed).fit(n_boot=300)
        lo, hi = res.conf_int().loc["x"]
        assert np.isfinite(lo) and np.isfinite(hi)
        hits += lo <= 0.5 <= hi
    assert hits >= stats.binom.ppf(0.001, reps, 0.95), hits


def test_an_ssp_release_handed_in_is_fitted_by_its_own_model():
    """dp_ols on a PrivateSSP (method="auto" or "ssp") builds the ssp entry's model,
    found from the registry by the release's class; nothing is spent, and the fit is
    the moments model's on the same release."""
    rel = release_ssp(frame(), formula="y ~ x + C(g)", epsilon=1.0, bounds=BOUNDS,
                      levels=LEVELS, random_state=5)
    for method in ("auto", "ssp"):
        model = dpm.dp_ols("y ~ x + C(g)", rel, method=method)
        assert type(model) is DPSSPOLS and model.budget_spent == 0.0
    a = dpm.dp_ols("y ~ x + C(g)", rel).fit(cov_type="naive").params
    b = DPMomentsOLS("y ~ x + C(g)", rel).fit(cov_type="naive").params
    assert (a == b).all()
    with pytest.raises(dpm.DPModelsError, match="data is a ssp release: method='histogram'"):
        dpm.dp_ols("y ~ x + C(g)", rel, method="histogram")
    hist = dpm.release(frame(), columns=["y", "x", "g"], epsilon=1.0, bounds=BOUNDS,
                       levels=LEVELS, bins=3, random_state=0)
    with pytest.raises(dpm.DPModelsError, match="method='ssp' needs raw rows or a PrivateSSP"):
        dpm.dp_ols("y ~ x + C(g)", hist, method="ssp")
