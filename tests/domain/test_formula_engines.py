"""statsmodels 0.15 builds formulas with patsy or formulaic
(``statsmodels.formula.options.formula_engine``).  dpmodels builds every
design with patsy whatever that option says (docs/index.md, "Formula
engines"): its releases and saved files are defined on patsy's designs.
These tests check that a user who switched statsmodels to formulaic still
gets the same dp fit, with statsmodels' parameter names."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import statsmodels.formula as smformula
import statsmodels.formula.api as smf

import dpmodels as dpm

pytest.importorskip("formulaic")

BOUNDS = {"price": (1e5, 9e5), "size": (0, 3000)}
LEVELS = {"county": [f"County{i}" for i in range(1, 7)], "year": [1, 2, 3, 4]}


@pytest.fixture
def formulaic_engine():
    before = smformula.options.formula_engine
    smformula.options.formula_engine = "formulaic"
    try:
        yield
    finally:
        smformula.options.formula_engine = before


def _fit(df, formula):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return dpm.dp_ols(formula, df, epsilon=1.0, bounds=BOUNDS, levels=LEVELS,
                          random_state=0).fit(random_state=0, n_boot=20)


@pytest.mark.parametrize("formula", ["price ~ size + year + C(county)",
                                     "np.log(price) ~ size + C(county)"])
def test_a_formulaic_statsmodels_gives_the_same_dp_fit(formula, formulaic_engine):
    df = dpm.datasets.housing(n=5_000, seed=0)
    with_formulaic = _fit(df, formula)
    reference = smf.ols(formula, df).fit()  # statsmodels, through formulaic
    assert smformula.options.formula_engine == "formulaic"
    assert list(with_formulaic.params.index) == list(reference.params.index)
    smformula.options.formula_engine = "patsy"
    with_patsy = _fit(df, formula)
    np.testing.assert_array_equal(with_formulaic.params, with_patsy.params)
    np.testing.assert_array_equal(with_formulaic.bse, with_patsy.bse)
