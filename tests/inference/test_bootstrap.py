"""The bootstrap's cell design: replicate points moved without rebuilding
the design where the formula is affine in the continuous variables."""

import numpy as np
import patsy
import pytest

import dpmodels as dpm
from dpmodels.inference.bootstrap import CellDesign
from dpmodels.domain.representatives import Representer

from tests.conftest import HOUSING_BOUNDS, HOUSING_FORMULA, HOUSING_LEVELS


def _design(rel, formula):
    """A CellDesign of ``formula`` on the density representatives of ``rel``."""
    names = list(rel.domain.names)
    rep = Representer.from_release(rel, names, "density")
    base = rep.frame(rep.ids, rep.counts)
    base.attrs = {}
    y_dm, X_dm = patsy.dmatrices(formula, base, eval_env=patsy.EvalEnvironment([{"np": np}]))
    infos = [y_dm.design_info, X_dm.design_info]

    def build(frame):
        y, X = patsy.build_design_matrices(infos, frame)
        return np.asarray(X, float), np.asarray(y, float)[:, 0], np.ones(len(frame), bool)

    design = CellDesign(rel.domain, names, build, representer=rep)
    design.rows(np.asarray(rep.ids, np.uint64))
    return design, rep, build


@pytest.fixture(scope="module")
def housing_release(housing_small):
    return dpm.release(housing_small, formula=HOUSING_FORMULA, epsilon=1.0,
                       bounds=HOUSING_BOUNDS, levels=HOUSING_LEVELS, bins=6, random_state=3)


@pytest.mark.parametrize("formula, affine", [
    ("price ~ size + year + C(county)", True),
    ("price ~ size * C(county)", True),           # a slope per county: affine in size
    ("np.log(price) ~ size", False),              # the response is not affine in price
    ("price ~ size + I(size ** 2)", False),
    ("price ~ size + I(size * price)", False),    # affine in each, not jointly
])
def test_design_moves_with_the_points_exactly_or_is_rebuilt(housing_release, formula, affine):
    design, rep, build = _design(housing_release, formula)
    slopes = design._design_slopes()
    assert (slopes is not None) == affine
    if not affine:
        return
    # a replicate-like histogram: its one-step representer moves every cell's points
    rng = np.random.default_rng(0)
    counts = np.maximum(rep.counts + rng.integers(-3, 4, rep.counts.size), 1)
    rel = housing_release.report
    own = Representer(rep.domain, rep.ids, counts, method="density", epsilon=rel.epsilon,
                      threshold=rel.threshold, n=rel.n, start=rep, one_step=True)
    pts = own.frame(rep.ids, counts, "__w__")
    rows = design.rows(np.asarray(rep.ids, np.uint64))
    X, y = design._moved(slopes, rows, own.points(rep.ids, counts))
    fresh = pts.drop(columns=["__w__"])
    fresh.attrs = {}
    Xb, yb, _ = build(fresh)
    stored = design._frames[0]["size"].to_numpy()
    assert np.abs(pts["size"].to_numpy() - stored).max() > 1.0  # the points did move
    np.testing.assert_allclose(X, Xb, rtol=1e-12, atol=1e-9)
    np.testing.assert_allclose(y, yb, rtol=1e-12)
    # points that do not match the stored ones one to one (midpoints: one per cell) are refused
    mid = Representer(rep.domain, rep.ids, counts, method="midpoint").points(rep.ids, counts)
    assert design._moved(slopes, rows, mid) is None
