"""Tests for :mod:`dpmodels.front.datasets`."""

import doctest

import numpy as np
import pandas as pd
import pytest
import statsmodels.formula.api as smf

from dpmodels.front.datasets import WAGES_BOUNDS, housing, wages

# Lei (2011), Table 1: non-private OLS of price ~ size + year + C(county).
LEI_TABLE1 = {
    "Intercept": 135141.0,
    "size": 209.0,
    "year": 56375.0,
    "C(county)[T.County2]": -53765.0,
    "C(county)[T.County3]": 146593.0,
    "C(county)[T.County4]": -27546.0,
    "C(county)[T.County5]": 45828.0,
    "C(county)[T.County6]": -140738.0,
}
COUNTIES = [f"County{i}" for i in range(1, 7)]


@pytest.fixture(scope="module")
def df():
    return housing()


def _check_valid(frame: pd.DataFrame, n: int) -> None:
    assert frame.shape == (n, 4)
    assert list(frame.columns) == ["price", "size", "year", "county"]
    assert frame["price"].dtype == np.float64
    assert frame["size"].dtype == np.float64
    assert frame["year"].dtype == np.int64
    assert frame["county"].dtype == object
    assert not isinstance(frame["county"].dtype, pd.CategoricalDtype)
    assert all(isinstance(c, str) for c in frame["county"])
    assert frame["price"].between(1e5, 9e5).all()
    assert (frame["size"] > 0).all() and (frame["size"] <= 3000).all()
    assert set(frame["year"]).issubset({1, 2, 3, 4})
    assert set(frame["county"]).issubset(COUNTIES)
    assert not frame.isna().any().any()
    assert isinstance(frame.index, pd.RangeIndex)


def test_default_shape_dtypes_and_bounds(df):
    _check_valid(df, 250_070)


def test_default_categories(df):
    counts = df["county"].value_counts()
    assert sorted(counts.index) == COUNTIES
    # Clearly unequal group sizes.
    assert counts.max() > 2 * counts.min()
    assert counts.nunique() == 6

    years = df["year"].value_counts(normalize=True)
    assert sorted(years.index) == [1, 2, 3, 4]
    assert np.allclose(years.values, 0.25, atol=0.03)


def test_size_distribution_is_right_skewed_and_smooth(df):
    size = df["size"]
    assert size.skew() > 0
    assert size.between(800, 2200).mean() > 0.75
    assert size.max() > 2800  # a tail toward the upper bound
    # Smooth density: counts within a 300-sqft bin are not flat (the bin
    # midpoint-to-edge density ratio differs from 1 in the bulk).
    counts, _ = np.histogram(size, bins=np.arange(900, 1201, 30))
    assert counts.max() / counts.min() > 1.05


def test_ols_matches_lei_table1(df):
    params = smf.ols("price ~ size + year + C(county)", df).fit().params
    assert set(params.index) == set(LEI_TABLE1)
    for name, target in LEI_TABLE1.items():
        assert params[name] == pytest.approx(target, rel=0.01), name


def test_deterministic():
    a = housing(n=5000, seed=3)
    b = housing(n=5000, seed=3)
    pd.testing.assert_frame_equal(a, b)
    c = housing(n=5000, seed=4)
    assert not a.equals(c)
    assert not np.allclose(a["price"].to_numpy(), c["price"].to_numpy())


def test_default_deterministic(df):
    pd.testing.assert_frame_equal(df, housing(seed=0))


@pytest.mark.parametrize("n", [1, 10, 2000, 12345])
def test_small_n(n):
    _check_valid(housing(n=n, seed=1), n)


def test_small_n_fit_is_reasonable():
    frame = housing(n=2000, seed=0)
    assert frame["county"].nunique() == 6
    params = smf.ols("price ~ size + year + C(county)", frame).fit().params
    assert params["size"] == pytest.approx(LEI_TABLE1["size"], rel=0.25)


@pytest.mark.parametrize("n", [0, -5])
def test_invalid_n(n):
    with pytest.raises(ValueError):
        housing(n=n)


def test_docstring_examples():
    import dpmodels.front.datasets as mod

    result = doctest.testmod(mod, verbose=False)
    assert result.attempted > 0
    assert result.failed == 0


# ---- wages ---------------------------------------------------------------------------------

WAGES_FORMULA = "wage ~ experience * C(sex) + tenure + C(region)"
REGIONS = [f"Region{i:02d}" for i in range(1, 11)]


@pytest.fixture(scope="module")
def wdf():
    return wages()


def test_wages_shape_dtypes_and_bounds(wdf):
    assert wdf.shape == (250_000, 5)
    assert list(wdf.columns) == ["wage", "experience", "tenure", "sex", "region"]
    for col in ("wage", "experience", "tenure"):
        lo, hi = WAGES_BOUNDS[col]
        assert wdf[col].dtype == np.float64
        assert (wdf[col] > lo).all() and (wdf[col] < hi).all()
    assert set(wdf["sex"]) == {"female", "male"}
    assert sorted(set(wdf["region"])) == REGIONS
    assert not wdf.isna().any().any()


def test_wages_has_the_designed_shape(wdf):
    # right-skewed continuous variables, piled up in the lower part of wide bounds
    for col in ("wage", "experience", "tenure"):
        assert wdf[col].skew() > 0.8, col
        lo, hi = WAGES_BOUNDS[col]
        assert wdf[col].median() < lo + 0.3 * (hi - lo), col
    # ten regions of unequal size
    shares = wdf["region"].value_counts(normalize=True)
    assert len(shares) == 10 and shares.max() > 3 * shares.min()
    # the interaction is real: the experience slope differs by sex
    params = smf.ols(WAGES_FORMULA, wdf).fit().params
    assert params["experience:C(sex)[T.male]"] == pytest.approx(0.15, abs=0.03)
    assert params["experience"] == pytest.approx(0.30, abs=0.05)
    assert params["tenure"] == pytest.approx(0.25, abs=0.03)
    assert params["C(region)[T.Region09]"] == pytest.approx(5.5, abs=0.2)


def test_wages_is_deterministic_and_seeded():
    a, b = wages(n=3000, seed=3), wages(n=3000, seed=3)
    pd.testing.assert_frame_equal(a, b)
    assert not a.equals(wages(n=3000, seed=4))
    assert len(wages(n=1, seed=0)) == 1
    with pytest.raises(ValueError):
        wages(n=0)
