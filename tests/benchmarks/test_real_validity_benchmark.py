"""A small fast run of benchmarks/real_validity.py (the long runs live there):
the truth is statsmodels on the full real data, the CSV has a row per
replicate x method x coefficient, auto's pick and the named method give the
same fit, and the scoring counts a bad interval as bad and flags the cell."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

BENCH = Path(__file__).resolve().parents[2] / "benchmarks" / "real_validity.py"


@pytest.fixture(scope="module")
def bench():
    spec = importlib.util.spec_from_file_location("real_validity_bench", BENCH)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_truth_is_statsmodels_on_the_full_data(bench):
    import statsmodels.api as sm
    import statsmodels.formula.api as smf

    raw = sm.datasets.fair.load_pandas().data.copy()
    raw["affair"] = (raw["affairs"] > 0).astype(int)
    for v in ("rate_marriage", "religious", "occupation"):  # 1.0 -> 1: level names as coded
        raw[v] = raw[v].astype(int)
    ref = smf.logit(bench.FAIR_FORMULA, raw).fit(disp=0).params
    truth = bench.truth_of("fair_logit")
    assert list(truth) == list(ref.index)
    np.testing.assert_allclose([truth[k] for k in ref.index], ref.to_numpy(), rtol=1e-8)
    eng = sm.datasets.engel.load_pandas().data
    ref = smf.quantreg("np.log(foodexp) ~ np.log(income)", eng).fit(q=0.5).params
    truth = bench.truth_of("engel_quantreg")
    np.testing.assert_allclose([truth[k] for k in ref.index], ref.to_numpy(), rtol=1e-8)


def test_bounds_are_written_not_computed(bench):
    """Every case declares every variable its formula uses, as literals."""
    for case, spec in bench.CASES.items():
        data = bench.data_of(case)
        declared = set(spec["bounds"]) | set(spec["levels"])
        used = {v for v in data.columns if v in spec["formula"]}
        assert used <= declared, (case, used - declared)
        for lo, hi in spec["bounds"].values():
            assert isinstance(lo, float) and isinstance(hi, float) and lo < hi


def test_small_run_rows_and_alias(bench, tmp_path):
    out = tmp_path / "r.csv"
    bench.main(["--cases", "longley_ols", "--n-mult", "1", "--eps", "3", "--reps", "2",
                "--out", str(out), "--table", str(tmp_path / "r.md"), "--brief"])
    raw = pd.read_csv(out)
    ncoef = len(bench.truth_of("longley_ols"))
    methods = bench.methods_of("longley_ols")
    assert "peer-ssp" in methods and "moments" in methods
    assert len(raw) == 2 * len(methods) * ncoef
    per = raw.groupby(["rep", "method"])["coef"].apply(list)
    assert all(v == list(bench.truth_of("longley_ols")) for v in per)
    auto = raw[raw["method"] == "auto"]
    assert auto["picked"].str.contains("Private").all()
    text = (tmp_path / "r.md").read_text()
    assert "longley_ols" in text and "narrowest valid" in text
    # the named method auto picked reuses auto's fit; run again, it gives the same numbers
    picked = bench.RELEASE_METHOD[auto["picked"].iloc[0].split("/")[-1]]
    assert raw.loc[raw["method"] == picked, "alias"].all()
    out2 = tmp_path / "r2.csv"
    bench.main(["--cases", "longley_ols", "--n-mult", "1", "--eps", "3", "--reps", "1",
                "--methods", "auto", picked, "--no-alias", "--out", str(out2), "--brief"])
    again = pd.read_csv(out2)
    a, b = (again[again["method"] == m].set_index("coef") for m in ("auto", picked))
    assert not b["alias"].any()
    for col in ("est", "lo", "hi", "p"):
        np.testing.assert_array_equal(a[col].to_numpy(), b[col].to_numpy())


def _rows(lo, hi, est, p, truth=1.0, named=False, error=""):
    k = len(lo)
    return pd.DataFrame(dict(
        case="engel_quantreg", dataset="engel", family="quantreg", n_mult=1, n=235, eps=1.0,
        rep=range(k), seed=0, method="newton", picked="", alias=False, coef="x", truth=truth,
        error=error, seconds=0.1, release_warn=named, named=named, reason="",
        est=est, lo=lo, hi=hi, p=p, np_est=1.0, np_lo=0.5, np_hi=1.5))


def test_scoring_counts_bad_intervals_and_flags_the_cell(bench):
    good = _rows(lo=[0.5] * 40, hi=[1.5] * 40, est=[1.0] * 40, p=[0.01] * 40)
    s = bench.summarize(good).iloc[0]
    assert s["cover"] == 1.0 and s["sign"] == 0.0 and s["width"] == 1.0
    assert bench.violations(s) == []
    # an interval that excludes the truth does not cover it; 10 of 40 is beyond MC error
    bad = _rows(lo=[1.2] * 10 + [0.5] * 30, hi=[1.4] * 10 + [1.5] * 30, est=[1.3] * 10 + [1.0] * 30,
                p=[0.01] * 40)
    s = bench.summarize(bad).iloc[0]
    assert s["cover_k"] == 30 and s["cover"] == 0.75
    assert "cover*" in bench.violations(s)
    # significant with the wrong sign: counted, flagged
    wrong = _rows(lo=[-2.0] * 5 + [0.5] * 35, hi=[-1.0] * 5 + [1.5] * 35,
                  est=[-1.5] * 5 + [1.0] * 35, p=[0.001] * 40)
    s = bench.summarize(wrong).iloc[0]
    assert s["sign_k"] == 5 and "sign*" in bench.violations(s)
    cell = bench.cell_summary(bench.summarize(wrong)).iloc[0]
    assert cell["verdict"] == "fail" and "sign*" in cell["violations"]
    # an infinite interval with no warning naming the coefficient violates the information goal
    inf = _rows(lo=[-np.inf] * 3, hi=[np.inf] * 3, est=[0.0] * 3, p=[1.0] * 3, named=False)
    s = bench.summarize(inf).iloc[0]
    assert s["inf"] == 1.0 and s["cover"] == 1.0 and "unnamed-inf" in bench.violations(s)
    named = _rows(lo=[-np.inf] * 3, hi=[np.inf] * 3, est=[0.0] * 3, p=[1.0] * 3, named=True)
    assert bench.violations(bench.summarize(named).iloc[0]) == []
    # a failure is counted, not scored
    failed = _rows(lo=[np.nan] * 2, hi=[np.nan] * 2, est=[np.nan] * 2, p=[np.nan] * 2,
                   error="DPModelsError: too few rows")
    s = bench.summarize(failed).iloc[0]
    assert s["fail"] == 2 and s["ok"] == 0 and "DPModelsError x2" in s["fail_types"]
    assert "no-fit" in bench.violations(s)


def test_warning_names_whole_coefficients(bench):
    text = "the release carries no information about age:children, YEAR: the noisy mass"
    assert bench.names_in(text, "age:children") and bench.names_in(text, "YEAR")
    assert not bench.names_in(text, "age") and not bench.names_in(text, "children")
    assert bench.names_in("about C(educ)[T.2], np.log1p(popul).", "np.log1p(popul)")
    # a list in brackets names its first entry; a function's argument is not named
    assert bench.names_in("any coefficient (Intercept, age):", "Intercept")
    assert not bench.names_in("about np.log1p(popul).", "popul")


def test_peer_interval_is_valid_mechanism_output(bench):
    """The peer's design ranges come from the declared domain, and its interval
    is finite, ordered and shrinks with n (a working reference, not a stub)."""
    _, _, lo, hi = bench.design_domain("randhie_ols")
    assert lo[0] == 0.0 and np.isclose(hi[0], np.log1p(100.0))  # the response's range
    data = bench.data_of("randhie_ols")
    widths = []
    for mult in (1, 10):
        df = data.iloc[np.random.default_rng(0).integers(0, len(data), mult * 1000)]
        names, est, lo, hi = bench.ssp_interval("randhie_ols", df, 3.0,
                                                np.random.default_rng(1), n_boot=30)
        assert np.isfinite(lo).all() and (lo <= hi).all()
        widths.append(np.median(hi - lo))
    assert widths[1] < widths[0]


def test_multinomial_columns_are_labelled_by_their_level(bench):
    """A response level with no released cell is left out of dp_mnlogit's fit: the
    remaining column is that of level 2, not the first non-reference level."""

    class Res:
        params = pd.DataFrame({0: [0.1, 0.2]}, index=["Intercept", "x"])
        pvalues = pd.DataFrame({0: [0.5, 0.01]}, index=["Intercept", "x"])
        response_coding = "party levels in the order ['0', '2']; base level '0'"

        def conf_int(self, alpha):
            return np.array([[-1.0, 1.0], [0.1, 0.3]])

    names, est, lo, hi, p = bench.flatten(Res())
    assert names == ["2:Intercept", "2:x"] and list(hi) == [1.0, 0.3]
    Res.response_coding = "party levels in the order ['0', '1', '2']; base level '0'"
    Res.params = pd.DataFrame({0: [0.1], 1: [0.2]}, index=["Intercept"])
    Res.pvalues = Res.params
    assert bench.flatten(Res())[0] == ["1:Intercept", "2:Intercept"]
    assert bench.library_name("anes96_mnlogit", "2:age") == "age (party=2)"
