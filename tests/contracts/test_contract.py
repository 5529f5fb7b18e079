"""One contract every dp_* model passes (in the spirit of scikit-learn's
estimator checks): privacy report present and complete, summaries in three
formats, bad inputs refused before any noise, the caller's data untouched,
epsilon=inf reproducing statsmodels on discrete data, neighbouring data sets
giving identical reports, and fits on a release costing nothing."""

from __future__ import annotations

import math
import warnings
from dataclasses import asdict, dataclass, field
from typing import Callable

import numpy as np
import pandas as pd
import pytest
import statsmodels.formula.api as smf

import dpmodels as dpm


@dataclass(frozen=True)
class Spec:
    factory: Callable
    formula: str
    reference: Callable
    fit_kw: dict = field(default_factory=dict)
    ref_fit_kw: dict = field(default_factory=dict)
    rtol: float = 1e-6


SPECS = {
    "ols": Spec(dpm.dp_ols, "y ~ k + C(g)", smf.ols),
    "logit": Spec(dpm.dp_logit, "yb ~ k + C(g)", smf.logit, ref_fit_kw={"disp": 0}),
    "quantreg": Spec(dpm.dp_quantreg, "y ~ k + C(g)", smf.quantreg, fit_kw={"q": 0.3},
                     ref_fit_kw={"q": 0.3, "p_tol": 1e-12, "max_iter": 5000}),
    "mnlogit": Spec(dpm.dp_mnlogit, "yc ~ k + C(g)", smf.mnlogit, ref_fit_kw={"disp": 0}),
}
LEVELS = {"y": list(range(-40, 80)), "yb": [0, 1], "yc": [0, 1, 2], "k": [1, 2, 3, 4],
          "g": ["a", "b", "c"]}
BOUNDS = {"x": (0.0, 10.0)}


@pytest.fixture
def frame() -> pd.DataFrame:
    rng = np.random.default_rng(2024)
    n = 4_000
    k = rng.integers(1, 5, n)
    g = rng.choice(["a", "b", "c"], n, p=[0.45, 0.35, 0.2])
    x = rng.uniform(0, 10, n)
    eta = -1.5 + 0.6 * k - 0.8 * (g == "b") + 0.5 * (g == "c")
    y = np.clip(np.round(5 + 4 * k - 3 * (g == "b") + rng.normal(0, 8, n)), -40, 79).astype(int)
    yb = (rng.random(n) < 1 / (1 + np.exp(-eta))).astype(int)
    u = rng.random(n)
    p1 = 1 / (1 + np.exp(-eta))
    yc = np.where(u < 0.25 * p1, 2, np.where(u < 0.6, 1, 0)).astype(int)
    return pd.DataFrame({"y": y, "yb": yb, "yc": yc, "k": k, "g": g, "x": x})


def _make(spec: Spec, data, **kw):
    args = dict(epsilon=1.0, levels=LEVELS, bounds=BOUNDS, random_state=0)
    args.update(kw)
    return spec.factory(spec.formula, data, **args)


def _fit(spec: Spec, model):
    return model.fit(**spec.fit_kw)


@pytest.fixture(params=list(SPECS), ids=list(SPECS))
def spec(request) -> Spec:
    return SPECS[request.param]


#: One fit per model, shared by the report and summary tests (each is a full dp bootstrap).
_FITS: dict = {}


def _fitted(spec: Spec, frame):
    if spec.formula not in _FITS:
        _FITS[spec.formula] = _fit(spec, _make(spec, frame))
    return _FITS[spec.formula]


def test_privacy_report_present_and_complete(spec, frame):
    res = _fitted(spec, frame)
    rep = res.privacy
    assert isinstance(rep, dpm.PrivacyReport)
    assert rep.private and rep.epsilon == 1.0 and rep.seeded
    assert rep.n == len(frame) and rep.sensitivity == 2
    assert rep.noise_scale == pytest.approx(2.0)
    assert rep.threshold == pytest.approx(0.5 * math.log(len(frame)))
    assert rep.domain_cells == math.prod(len(LEVELS[v]) for v in (spec.formula.split()[0], "k", "g"))
    assert {name for name, _ in rep.variables} == {spec.formula.split()[0], "k", "g"}
    assert rep.released_cells > 0 and rep.noisy_total > 0
    assert res.nobs == rep.noisy_total
    for label, value in rep.rows():
        assert value, label


def test_summary_renders_in_three_formats(spec, frame):
    smry = _fitted(spec, frame).summary()
    for text in (smry.as_text(), smry.as_html(), smry.as_latex()):
        assert "Differential privacy" in text
        assert "Released cells" in text and "Noisy total" in text


def _no_noise(exc, spec: Spec, data, match: str, **kw):
    rng = np.random.default_rng(99)
    state = rng.bit_generator.state
    before = data.copy(deep=True)
    with pytest.raises(exc, match=match):
        _make(spec, data, random_state=rng, **kw)
    assert rng.bit_generator.state == state
    pd.testing.assert_frame_equal(data, before)


def test_bad_inputs_refused_before_noise(spec, frame):
    resp = spec.formula.split()[0]
    bad_formula = Spec(spec.factory, spec.formula + " + x", spec.reference, spec.fit_kw)
    _no_noise(dpm.DomainError, bad_formula, frame, "'x' has no bounds", bounds={})
    _no_noise(dpm.UndeclaredLevelError, spec, frame, "'g'", levels=dict(LEVELS, g=["a", "b"]))
    _no_noise(dpm.UnknownVariableError, Spec(spec.factory, spec.formula + " + nope", spec.reference),
              frame, "'nope'")
    _no_noise(ValueError, spec, frame, "epsilon must be > 0", epsilon=0.0)
    _no_noise(ValueError, spec, frame, "epsilon must be > 0", epsilon=-2.0)
    _no_noise(ValueError, spec, frame, "epsilon must be > 0", epsilon=float("nan"))
    _no_noise(dpm.DomainError, spec, frame, "levels", levels=dict(LEVELS, g=[]))
    if spec.factory in (dpm.dp_logit, dpm.dp_mnlogit):
        _no_noise(dpm.DomainError, spec, frame.assign(**{resp: 0}), resp,
                  levels=dict(LEVELS, **{resp: [0]}))
    if spec.factory is dpm.dp_logit:
        _no_noise(dpm.DomainError, Spec(spec.factory, "yc ~ k + C(g)", spec.reference), frame, "yc")


def test_callers_frame_unchanged(spec, frame):
    before = frame.copy(deep=True)
    res = _fit(spec, _make(spec, frame))
    res.predict(frame.iloc[:10])
    res.summary()
    pd.testing.assert_frame_equal(frame, before)


def test_inf_epsilon_reproduces_statsmodels(spec, frame):
    with pytest.warns(dpm.NotPrivateWarning):
        res = _make(spec, frame, epsilon=float("inf")).fit(cov_type="naive", **spec.fit_kw)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ref = spec.reference(spec.formula, frame).fit(**spec.ref_fit_kw)
    got, want = np.asarray(res.params), np.asarray(ref.params)
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=spec.rtol, atol=spec.rtol * np.abs(want).max())
    if spec.factory is not dpm.dp_quantreg:  # same estimator: standard errors too
        np.testing.assert_allclose(np.asarray(res.bse), np.asarray(ref.bse), rtol=1e-6)
    assert list(pd.DataFrame(res.params).index) == list(pd.DataFrame(ref.params).index)
    assert res.nobs == len(frame)
    assert not res.privacy.private


def test_neighbouring_data_sets_give_identical_reports(spec, frame):
    nb = frame.copy()
    nb.loc[0, ["y", "yb", "yc", "k", "g"]] = [79, 1 - nb.loc[0, "yb"], 2, 4, "c"]
    ra = _fit(spec, _make(spec, frame, random_state=7)).privacy
    rb = _fit(spec, _make(spec, nb, random_state=7)).privacy
    da, db = asdict(ra), asdict(rb)
    for noisy in ("released_cells", "noisy_total"):
        da.pop(noisy), db.pop(noisy)
    assert da == db


def test_fit_on_release_costs_no_budget(spec, frame):
    acct = dpm.Accountant(1.0)
    model = _make(spec, frame, accountant=acct)
    assert acct.spent == pytest.approx(1.0)
    again = _fit(spec, spec.factory(spec.formula, model.release, accountant=acct))
    first = _fit(spec, model)
    np.testing.assert_allclose(np.asarray(again.params), np.asarray(first.params))
    assert acct.spent == pytest.approx(1.0) and len(acct.ledger) == 1
    with pytest.raises(dpm.BudgetExceededError):
        _make(spec, frame, accountant=acct, epsilon=0.01)
