"""The public domain, the one-pass counting and the release's cell frame."""

from __future__ import annotations

import re
from dataclasses import asdict

import numpy as np
import pandas as pd
import pytest

import dpmodels as dpm
import dpmodels.data.counting as hist
from dpmodels.domain.axes import AUTO_BINS_C, AUTO_BINS_R, Axis, Domain, auto_bins, build_domain

from tests.conftest import HOUSING_BOUNDS, HOUSING_FORMULA, HOUSING_LEVELS


def test_encode_decode_roundtrip():
    dom = Domain((Axis("a", "continuous", bounds=(0, 1), bins=7),
                  Axis("b", "discrete", levels=("x", "y", "z")),
                  Axis("c", "continuous", bounds=(-1, 1), bins=1000)))
    rng = np.random.default_rng(0)
    codes = [rng.integers(0, s, 500) for s in dom.sizes]
    ids = dom.encode(codes)
    assert ids.dtype == np.uint64 and ids.max() < dom.size == 21_000
    for got, want in zip(dom.decode(ids), codes):
        np.testing.assert_array_equal(got, want)


def test_binning_clips_and_closes_last_bin():
    ax = Axis("x", "continuous", bounds=(0.0, 10.0), bins=5)
    codes, missing, bad = ax.codes(np.array([-3.0, 0.0, 1.99, 2.0, 9.99, 10.0, 55.0, np.nan]))
    np.testing.assert_array_equal(codes, [0, 0, 0, 1, 4, 4, 4, -1])
    np.testing.assert_array_equal(missing, [0, 0, 0, 0, 0, 0, 0, 1])
    assert not bad.any()
    np.testing.assert_allclose(ax.representatives(), [1, 3, 5, 7, 9])
    np.testing.assert_allclose(ax.edges, [0, 2, 4, 6, 8, 10])


@pytest.mark.parametrize("dense_limit", [1 << 24, 0])
def test_counts_equal_pandas_groupby(monkeypatch, dense_limit):
    monkeypatch.setattr(hist, "DENSE_COUNT_LIMIT", dense_limit)
    monkeypatch.setattr(hist, "CHUNK_ROWS", 777)  # several chunks, uneven last one
    rng = np.random.default_rng(1)
    n = 5_000
    df = pd.DataFrame({"x": rng.normal(5, 3, n), "g": rng.choice(list("pqr"), n),
                       "k": rng.integers(0, 3, n)})
    dom = build_domain(["x", "g", "k"], df.dtypes.to_dict(), bounds={"x": (0, 10)},
                       levels={"g": list("pqr"), "k": [0, 1, 2]}, bins=6, n=n, epsilon=1.0)
    counts = hist.count_cells({c: df[c] for c in dom.names}, dom)
    ref = pd.DataFrame({"x": np.clip(np.floor(df["x"] / 10 * 6), 0, 5).astype(int),
                        "g": df["g"].map({"p": 0, "q": 1, "r": 2}), "k": df["k"]})
    ref = ref.groupby(["x", "g", "k"]).size()
    ref_ids = dom.encode([ref.index.get_level_values(i).to_numpy() for i in range(3)])
    order = np.argsort(ref_ids)
    np.testing.assert_array_equal(counts.ids, ref_ids[order])
    np.testing.assert_array_equal(counts.counts, ref.to_numpy()[order])
    assert counts.counts.sum() == n


def test_auto_bins_is_a_pure_function_of_public_inputs():
    assert auto_bins(250_070, 1.0, 2, 24) == auto_bins(250_070, 1.0, 2, 24)
    # more noise (smaller epsilon) never asks for more bins; more rows never for fewer
    ks = [auto_bins(250_070, e, 2, 24) for e in (0.1, 0.3, 1, 3, 10)]
    assert ks == sorted(ks) and ks[0] < ks[-1]
    ns = [auto_bins(n, 1.0, 2, 24) for n in (1_000, 10_000, 100_000, 1_000_000)]
    assert ns == sorted(ns)
    # more cells in the other axes (smaller groups) never ask for more bins
    ds = [auto_bins(250_070, 1.0, 2, D) for D in (1, 24, 240, 2400)]
    assert ds == sorted(ds, reverse=True)
    # the rule's definition: K = round(C * (n epsilon / D) ** (2 / (d + 2 r))), unless a
    # cap binds
    for eps in (0.1, 0.3, 1.0, 3.0, 10.0):
        for d, D in ((1, 48), (2, 24), (3, 20)):
            k = auto_bins(250_070, eps, d, D)
            x = AUTO_BINS_C * (250_070 * eps / D) ** (2 / (d + 2 * AUTO_BINS_R))
            assert k - 0.5 <= x < k + 0.5
    # the caps: at least 2 bins, at most Lei's rate n ** (2 / (2 + d))
    assert auto_bins(50, 0.01, 2, 24) == 2
    assert auto_bins(10**12, 10.0, 1, 1) == 256
    # more continuous variables, fewer bins each (at the same n epsilon / D)
    assert auto_bins(250_070, 1.0, 1, 24) >= auto_bins(250_070, 1.0, 2, 24) >= \
        auto_bins(250_070, 1.0, 3, 24)
    assert auto_bins(100, 1e6, 2, 1) == 10  # Lei's rate: 100 ** (2 / 4)
    # exact counts: the largest K with D * K**d <= n
    k = auto_bins(250_070, float("inf"), 2, 24)
    assert 24 * k**2 <= 250_070 < 24 * (k + 1) ** 2


def test_auto_bins_ignores_the_data(housing_small):
    kw = dict(formula=HOUSING_FORMULA, epsilon=1.0, bounds=HOUSING_BOUNDS, levels=HOUSING_LEVELS,
              random_state=0)
    a = dpm.release(housing_small, **kw)
    shifted = housing_small.assign(size=housing_small["size"] * 0.5, price=9e5)
    b = dpm.release(shifted, **kw)
    assert a.report.variables == b.report.variables
    k = auto_bins(len(housing_small), 1.0, 2, 24)
    assert a.domain.axis("size").bins == k == a.domain.axis("price").bins


def test_release_cells_frame_and_marginal(housing_small):
    rel = dpm.release(housing_small, formula=HOUSING_FORMULA, epsilon=1.0, bounds=HOUSING_BOUNDS,
                      levels=HOUSING_LEVELS, bins=10, random_state=2)
    cells = rel.cells
    assert list(cells.columns) == ["price", "size", "year", "county", "count"]
    assert len(cells) == rel.report.released_cells
    assert cells["count"].sum() == rel.report.noisy_total
    assert (cells["count"] >= rel.report.threshold).all()
    assert set(np.unique(cells["size"])) <= set(np.arange(150, 3000, 300))
    assert cells["year"].dtype == housing_small["year"].dtype
    marg = rel.marginal(["county", "year"])
    ref = cells.groupby(["county", "year"], observed=True)["count"].sum()
    got = marg.set_index(["county", "year"])["count"]
    pd.testing.assert_series_equal(got.sort_index(), ref.sort_index(), check_names=False)
    with pytest.raises(dpm.UnknownVariableError, match="'nope'"):
        rel.marginal(["nope"])
    with pytest.raises(ValueError):
        rel.counts[0] = 5  # released arrays are read-only


def test_large_sparse_domain_releases_fast():
    rng = np.random.default_rng(0)
    n = 3_000
    df = pd.DataFrame({f"x{i}": rng.beta(2, 5, n) for i in range(6)})
    rel = dpm.release(df, columns=list(df.columns), epsilon=1.0,
                      bounds={c: (0, 1) for c in df.columns}, bins=100, threshold=40,
                      random_state=0)
    assert rel.report.domain_cells == 10**12
    # expected spurious cells: m * q^40 / (1 + q) with q = e^{-eps/2}, eps the cells' part
    # (95% of epsilon: the rest counts the rows outside the bounds, issue 43)
    q = np.exp(-rel.report.noise_epsilon / 2)
    assert rel.report.expected_spurious_cells == pytest.approx(1e12 * q**40 / (1 + q))
    assert rel.report.released_cells < 5_000


def _mask_numbers(text: str) -> str:
    text = "\n".join(line for line in text.splitlines() if not line.startswith(("Date:", "Time:")))
    return re.sub(r"[-+]?\d[\d,]*\.?\d*(e[-+]?\d+)?", "#", text)


def test_neighbouring_data_sets_give_identical_reports_and_summaries(housing_small):
    nb = housing_small.copy()
    nb.iloc[0, nb.columns.get_loc("price")] = 899_999.0  # replace one row's values
    nb.iloc[0, nb.columns.get_loc("county")] = "County6"
    kw = dict(epsilon=1.0, bounds=HOUSING_BOUNDS, levels=HOUSING_LEVELS, random_state=42)
    ma, mb = dpm.dp_ols(HOUSING_FORMULA, housing_small, **kw), dpm.dp_ols(HOUSING_FORMULA, nb, **kw)
    ra, rb = ma.fit(cov_type="naive"), mb.fit(cov_type="naive")
    da, db = asdict(ra.privacy), asdict(rb.privacy)
    noisy_fields = {"released_cells", "noisy_total"}
    assert {k: v for k, v in da.items() if k not in noisy_fields} == \
           {k: v for k, v in db.items() if k not in noisy_fields}
    # the same text up to numbers from the noisy counts, whose printed widths move the
    # table columns
    squeeze = lambda t: re.sub(r"[ =-]+", " ", _mask_numbers(t))  # noqa: E731
    sa, sb = ra.summary().as_text(), rb.summary().as_text()
    assert squeeze(sa) == squeeze(sb)
    # the default (bootstrap) covariance, likewise
    dpa, dpb = ma.fit(random_state=0), mb.fit(random_state=0)
    assert squeeze(dpa.summary().as_text()) == squeeze(dpb.summary().as_text())
    # the numbers that do differ are estimates from the noisy counts, not raw-data values
    assert ra.nobs == ra.privacy.noisy_total and rb.nobs == rb.privacy.noisy_total
