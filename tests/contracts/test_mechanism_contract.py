"""One contract for every registered mechanism and model.

The suite is parametrized over the registry, :data:`dpmodels.front.registry.MECHANISMS`
x each mechanism's families (one entry per mechanism that serves no family:
the release functions of their own, ``select_features`` and
``smoothed_sample``).  Nothing here lists the mechanisms: the call that
exercises an entry is *derived* from its registry entry and one shared
synthetic frame (``FRAME``: a continuous response, a binary one, a 3-level
one, a continuous covariate entered as ``np.log(x)``, a factor; plus an
integer response and an integer covariate for the exact checks):

* ``method=`` when the entry has one;
* else an option a route recognises (``ROUTE_OPTIONS``: ``select=`` for the
  projected histograms);
* else, for a mechanism whose release the caller makes with its own
  function (``own_function``), that release handed in as ``data``;
* a mechanism that serves no family is its release function, called with
  the arguments its signature names (``DERIVED``).

A ``dp_*`` candidate counts only when the call really reaches the entry:
its builder of that family is the one dispatch runs (recorded, not
re-implemented).  An entry no candidate reaches FAILS, naming the entry, so a
mechanism registered without a way to exercise it breaks CI until one is
added here.

The checks, each its own parametrized test:

1. ``test_report``: the privacy report is a ``ReleaseReport`` with every
   field non-empty, states the guarantee (``epsilon-DP, epsilon = 1,
   delta = 0``), its epsilon is the one asked for and the accountant was
   charged exactly that; results carry the same report and print it.
2. ``test_results_save_load`` (``res.save`` and statsmodels' ``load_pickle``
   / ``type(res).load``, docs/reporting.md) and ``test_release_file_round_trip``
   (``release.save`` and ``dpm.load_release``, docs/saved-releases.md):
   bit-identical params, covariance and summary (less its clock).
3. ``test_pickle_round_trip``: results and model pickle and come back the same.
4. ``test_epsilon_inf``: what each mechanism's docs promise at ``epsilon=inf``
   (its registry entry's ``inf``, a key of ``registry.INF_PROMISES``; ``INF_CHECKS``
   checks each promise, with its source); an entry that names no promise FAILS.
5. ``test_neighbours``: two data sets that differ in one row, the same seed:
   everything published but the numbers computed from the noise is identical
   (PRIVACY.md rule 5).
6. ``test_bad_input``: an undeclared bound, an undeclared level and a wrong
   epsilon are refused with a DPModelsError subclass before any noise is
   drawn or budget charged (PRIVACY.md rule 10).
7. ``test_validity``: a plasmode cell on a real data set bundled with
   statsmodels per family (benchmarks/real_validity.py's loaders, declared
   domains and truths): the 95% intervals cover the truth at a rate no lower
   than the binomial bound (nominal 95%, one-sided, Bonferroni over the cells),
   and every infinite interval comes with a warning naming its coefficient
   (the information goal of docs/inference.md).

Budget: the whole file runs in well under a minute on 2 cores (small n,
``n_boot`` small where a fit takes it, one fit per entry shared by the checks).
"""

from __future__ import annotations

import math
import pickle
import re
import warnings
from dataclasses import asdict, fields, is_dataclass, replace

import numpy as np
import pandas as pd
import pytest
import statsmodels.formula.api as smf
from scipy import stats

import dpmodels as dpm
from dpmodels.core.errors import DomainError, DPModelsError, UndeclaredLevelError
from dpmodels.core.report import Release, ReleaseReport
from dpmodels.front import registry
from dpmodels.front.registry import INF_PROMISES
from tests.support.benchmark_cases import load_benchmark
from tests.support.neighbours import NOISE_DRIVEN, _diff, mask
from tests.support.registry_entries import (
    BOUNDS,
    ENTRIES,
    EPSILON,
    EXACT_RESPONSE,
    FAMILY_ENTRIES,
    FAMILY_FUNCTIONS,
    FRAME,
    INF_BINS,
    Q_EXACT,
    SYNTHETIC_ROWS,
    Entry,
    N,
    _entry_params,
    assert_same_results,
    base_kw,
    built,
    cov_of,
    exact_formula_of,
    fit_kwargs,
    formula_of,
    neighbour_of,
    recipe,
    report_of,
    variables,
)

# ---------------------------------------------------------------------------
# 0. every entry has a call
# ---------------------------------------------------------------------------


def test_the_registry_is_enumerated():
    """Every mechanism of the registry is an entry (per family), every family has one."""
    assert {e.mech.name for e in ENTRIES} == {m.name for m in registry.MECHANISMS}
    assert {e.family for e in FAMILY_ENTRIES} == set(registry.FAMILIES)
    assert len(ENTRIES) == sum(max(len(m.families), 1) for m in registry.MECHANISMS)


@pytest.mark.parametrize("entry", _entry_params(ENTRIES))
def test_call_is_derived(entry):
    r = recipe(entry)
    assert r.entry is entry and r.how in ("method", "option", "release as data", "own function")


# ---------------------------------------------------------------------------
# 1. the report
# ---------------------------------------------------------------------------

GUARANTEE = re.compile(r"epsilon-DP, epsilon = (?P<eps>[^\s,]+)")


@pytest.mark.parametrize("entry", _entry_params(ENTRIES))
def test_report(entry):
    b = built(entry)
    rep = report_of(b.made)
    assert isinstance(rep, ReleaseReport), type(rep)
    for name in ReleaseReport.FIELDS:
        value = getattr(rep, name)
        assert value is not None and value != "", f"{entry.id}: report.{name} is empty"
    if is_dataclass(rep):
        for f in fields(rep):
            assert getattr(rep, f.name) is not None or f.name in ("threshold", "threshold_A",
                                                                  "selection", "earlier"), \
                f"{entry.id}: report.{f.name} is None"
    assert rep.epsilon == EPSILON and rep.private and rep.is_finite, rep.epsilon
    assert rep.seeded is True and rep.n == len(FRAME)
    # charged exactly what was asked, in one entry or in its parts
    assert b.accountant.ledger, f"{entry.id}: nothing charged"
    assert b.accountant.spent == pytest.approx(EPSILON, rel=1e-12, abs=0), b.accountant.ledger
    assert rep.budget != "no accountant", rep.budget
    rows = rep.rows()
    assert rows and all(isinstance(k, str) and k.strip() and isinstance(v, str) and v.strip()
                        for k, v in rows), rows
    label, guarantee = rows[0]
    assert label == "Privacy:", rows[0]
    found = GUARANTEE.search(guarantee)
    assert found and found["eps"] == f"{EPSILON:g}", guarantee
    assert "delta = 0" in guarantee or "pure epsilon-DP" in guarantee, guarantee
    text = str(rep)
    assert text.splitlines()[0] == rep.title and "NOT PRIVATE" not in text
    assert guarantee in text
    html = rep._repr_html_()
    assert html.startswith("<table><caption>") and html.count("<tr>") == len(rows)
    if b.res is not None:
        assert b.res.privacy is rep, f"{entry.id}: the results carry another report"
        summary = b.res.summary().as_text()
        assert "Differential privacy" in summary and f"epsilon = {EPSILON:g}" in summary
        release = getattr(b.made, "release", None)
        if release is not None:
            assert isinstance(release, Release) and isinstance(release.report, ReleaseReport)


# ---------------------------------------------------------------------------
# 2. save and load
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("entry", _entry_params(ENTRIES))
def test_results_save_load(entry, tmp_path):
    """``res.save`` and statsmodels' ``load_pickle`` / ``type(res).load``
    (docs/reporting.md, "Saving results": every result of every mechanism)."""
    from statsmodels.iolib.smpickle import load_pickle

    b = built(entry)
    if b.res is None:
        obj = b.made
        if hasattr(obj, "save"):
            pytest.fail(f"{entry.id}: {type(obj).__name__} has a save, but this suite knows no "
                        "loader for it: add its round trip here")
        pytest.skip(f"{type(obj).__name__} is not a results object and has no save "
                    "(docs/reporting.md saves results, docs/saved-releases.md releases)")
    path = tmp_path / "res.pickle"
    b.res.save(path)
    for back in (load_pickle(path), type(b.res).load(path)):
        assert_same_results(back, b.res, f"{entry.id}: saved and loaded")
        assert asdict(back.privacy) == asdict(b.res.privacy)


@pytest.mark.parametrize("entry", _entry_params(ENTRIES))
def test_release_file_round_trip(entry, tmp_path):
    """``release.save`` and ``dpm.load_release`` (docs/saved-releases.md: every
    release type with a saved kind); the formula's fit on the loaded release is
    bit-identical to the same fit on the release object and to the model's."""
    b = built(entry)
    release = getattr(b.made, "release", None)
    if release is None:
        pytest.skip(f"{type(b.made).__name__} holds no release to save")
    if getattr(type(release), "saved_kind", None) is None:
        pytest.skip(f"{type(release).__name__} has no saved format (docs/saved-releases.md "
                    "lists the histogram, moments, Newton, quantile-steps and local releases); its "
                    "results save (test_results_save_load)")
    path = release.save(tmp_path / "release.json")
    loaded = dpm.load_release(path)
    # a local release's histogram is a view: it saves (and loads as) its LocalRelease
    saved = release.local if type(release).__name__ == "LocalHistogram" else release
    assert type(loaded).__name__ == type(saved).__name__, (type(loaded), type(saved))
    assert asdict(loaded.report) == asdict(release.report)
    formula = b.made.formula
    refit = {"method": entry.mech.method} if entry.mech.method else {}
    if entry.family == "quantreg":
        refit["q"] = 0.5
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        on_loaded = FAMILY_FUNCTIONS[entry.family](formula, loaded, **refit)
        a = on_loaded.fit(**b.fit_kw)
        if type(on_loaded) is type(b.made):  # the same model: its own fit is the reference
            o = b.res
        else:  # (a route's model, e.g. a projection: the plain model on the same release)
            o = FAMILY_FUNCTIONS[entry.family](formula, release, **refit).fit(**b.fit_kw)
    assert_same_results(a, o, f"{entry.id}: the fit on the loaded release")
    np.testing.assert_array_equal(np.asarray(a.params), np.asarray(b.res.params))
    np.testing.assert_array_equal(cov_of(a), cov_of(b.res))


# ---------------------------------------------------------------------------
# 3. pickle
# ---------------------------------------------------------------------------


def _published_values(obj) -> dict:
    """What a release function's output publishes besides its report."""
    out = {}
    for name, value in vars(obj).items() if hasattr(obj, "__dict__") else ():
        if isinstance(value, pd.DataFrame):
            out[name] = value
        elif isinstance(value, (tuple, str, int, float)):
            out[name] = value
    if is_dataclass(obj):
        for f in fields(obj):
            value = getattr(obj, f.name)
            if isinstance(value, (pd.DataFrame, tuple, str, int, float)):
                out[f.name] = value
    return out


@pytest.mark.parametrize("entry", _entry_params(ENTRIES))
def test_pickle_round_trip(entry):
    b = built(entry)
    if b.res is None:  # a release function's output: same report, same published values
        back = pickle.loads(pickle.dumps(b.made))
        assert asdict(report_of(back)) == asdict(report_of(b.made))
        want, got = _published_values(b.made), _published_values(back)
        assert want and want.keys() == got.keys()
        for name in want:
            if isinstance(want[name], pd.DataFrame):
                pd.testing.assert_frame_equal(got[name], want[name])
            else:
                assert got[name] == want[name], name
        return
    back = pickle.loads(pickle.dumps(b.res))
    assert_same_results(back, b.res, f"{entry.id}: pickled results")
    model = pickle.loads(pickle.dumps(b.made))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        again = model.fit(**b.fit_kw)
    assert_same_results(again, b.res, f"{entry.id}: fit of the pickled model")


# ---------------------------------------------------------------------------
# 4. epsilon = inf: what each mechanism promises
# ---------------------------------------------------------------------------


def _inf(entry: Entry, formula: str, data=FRAME, **kw):
    """The entry at epsilon=inf (a NotPrivateWarning required)."""
    with pytest.warns(dpm.NotPrivateWarning):
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", category=FutureWarning)
            return recipe(entry).make(formula, data, **base_kw(entry, epsilon=math.inf, **kw))


def _statsmodels(family: str, formula: str, data, q: float | None = None):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if family == "ols":
            return smf.ols(formula, data).fit()
        if family == "logit":
            return smf.logit(formula, data).fit(disp=0)
        if family == "mnlogit":
            return smf.mnlogit(formula, data).fit(disp=0)
        return smf.quantreg(formula, data).fit(q=q, p_tol=1e-12, max_iter=5000)


def _assert_reproduces(entry: Entry, res, ref, *, bse: bool, rtol=1e-6):
    got, want = np.asarray(res.params, float), np.asarray(ref.params, float)
    assert got.shape == want.shape, (got.shape, want.shape)
    np.testing.assert_allclose(got, want, rtol=rtol, atol=rtol * np.abs(want).max(),
                               err_msg=f"{entry.id}: params at epsilon=inf")
    if bse:
        np.testing.assert_allclose(np.asarray(res.bse, float), np.asarray(ref.bse, float),
                                   rtol=rtol, err_msg=f"{entry.id}: bse at epsilon=inf")
    assert list(pd.DataFrame(res.params).index) == list(pd.DataFrame(ref.params).index)
    assert not res.privacy.private and "NOT PRIVATE" in res.summary().as_text()


def _inf_exact_histogram(entry: Entry):
    """docs/privacy.md, "Not private": exact counts, no threshold; a fit on purely
    discrete variables reproduces statsmodels exactly (bse too: the same estimator,
    but for quantile regression's, whose sandwich is the histogram's own)."""
    formula = exact_formula_of(entry.family)
    q = {"q": Q_EXACT} if entry.family == "quantreg" else {}
    model = _inf(entry, formula, **q)
    res = model.fit(cov_type="naive", **q)
    ref = _statsmodels(entry.family, model.formula, FRAME, q=Q_EXACT)
    _assert_reproduces(entry, res, ref, bse=entry.family != "quantreg")
    assert res.nobs == len(FRAME)


def _inf_moments(entry: Entry):
    """dpmodels/mechanisms/moments/ and docs/reporting.md: exact moments (no clipping, no
    quantization): statsmodels' OLS and its classical standard errors, a
    continuous covariate and its log included."""
    model = _inf(entry, formula_of(entry.family))
    res = model.fit(cov_type="naive")
    ref = _statsmodels("ols", formula_of(entry.family), FRAME)
    _assert_reproduces(entry, res, ref, bse=True, rtol=1e-9)
    assert res.nobs == len(FRAME)


def _inf_noiseless_steps(entry: Entry):
    """dpmodels/mechanisms/newton/ and quantile_steps.py (issue 43 part 5): the same
    pipeline without its noise, NOT private: the report and the summary say
    which pipeline ran and that it is not statsmodels' fit (clipped, quantized,
    a few steps), and the estimate is close to statsmodels' on these rows."""
    q = {"q": Q_EXACT} if entry.family == "quantreg" else {}
    model = _inf(entry, formula_of(entry.family), **q)
    res = model.fit(cov_type="naive", **q)
    assert not res.privacy.private and res.privacy.split == ()
    assert res.privacy.mechanism.startswith("none: ")
    text = " ".join(res.summary().as_text().split())
    assert "NOT PRIVATE" in text and "Pipeline:" in text and "NOT statsmodels' fit" in text
    ref = _statsmodels(entry.family, model.formula, FRAME, q=Q_EXACT)
    got, want = np.asarray(res.params, float), np.asarray(ref.params, float)
    assert np.all(np.abs(got - want) <= 0.1 * np.abs(want).max() + 4 * np.asarray(ref.bse)), (
        got, want)


def _inf_local(entry: Entry):
    """docs/local.md: every row's true cell, NOT private, and "the fits equal those
    on a central epsilon=inf release with midpoints" (on discrete variables:
    statsmodels)."""
    formula = exact_formula_of(entry.family)
    q = {"q": Q_EXACT} if entry.family == "quantreg" else {}
    res = _inf(entry, formula, **q).fit(cov_type="naive", **q)
    _assert_reproduces(entry, res, _statsmodels(entry.family, formula, FRAME, q=Q_EXACT),
                       bse=entry.family != "quantreg")
    # with a continuous covariate: the central exact release, cells at their midpoints
    formula = formula_of(entry.family)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", category=dpm.ReleaseWarning)
        local = _inf(entry, formula, bins=INF_BINS, **q).fit(cov_type="naive", **q)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        central = FAMILY_FUNCTIONS[entry.family](
            formula, FRAME, **base_kw(entry, epsilon=math.inf, bins=INF_BINS, **q),
            method="histogram", representatives="midpoint").fit(cov_type="naive", **q)
    np.testing.assert_allclose(np.asarray(local.params), np.asarray(central.params), rtol=1e-8,
                               err_msg=f"{entry.id}: local vs central at epsilon=inf")


def _inf_projected(entry: Entry):
    """tests/mechanisms/selection/test_selection.py and dpmodels/models/projected.py: the greedy
    (non-private) selection, flagged NOT PRIVATE, and the exact histogram of the
    projection: statsmodels on the restricted formula (discrete variables)."""
    model = _inf(entry, exact_formula_of(entry.family))
    assert not model.privacy.private
    res = model.fit(cov_type="naive")
    ref = _statsmodels(entry.family, model.formula, FRAME)
    _assert_reproduces(entry, res, ref, bse=True)
    greedy = _greedy_first(EXACT_RESPONSE[entry.family], ["k", "g"])
    assert model.privacy.selected == (greedy,), (model.privacy.selected, greedy)


def _inf_sample_aggregate(entry: Entry):
    """dpmodels/mechanisms/sample_aggregate/: "epsilon=inf publishes the exact average of the
    blocks' estimates (failed blocks left out), without clamping or noise, and their
    exact sample variance": statsmodels on each block of the release's partition
    (a uniform permutation from the seeded source, as tests/mechanisms/sample_aggregate/test_sample_aggregate.py
    rebuilds it), averaged."""
    from dpmodels.core.randomness import random_source
    from dpmodels.core.streams import RowStreams
    from dpmodels.mechanisms.sample_aggregate import row_order

    formula, blocks, seed = formula_of(entry.family), 4, 5
    model = _inf(entry, formula, blocks=blocks, bias_correction=None, random_state=seed)
    rel = model.release
    assert rel.blocks == blocks and not rel.report.private
    assert np.all(rel.noise_scale == 0) and np.all(np.isinf(rel.lo)) and np.all(np.isinf(rel.hi))
    order = row_order(RowStreams.from_source(random_source(seed)), len(FRAME))
    est = []
    for rows in np.array_split(order, blocks):
        if entry.family == "quantreg":  # the blocks' estimator: QuantReg as the release
            # fits it (statsmodels' tolerance, max_iter=1000), not _statsmodels' tighter
            # p_tol, which on a slowly converging block differs by ~1e-3
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                fit = smf.quantreg(formula, FRAME.iloc[rows]).fit(q=0.5, max_iter=1000)
        else:
            fit = _statsmodels(entry.family, formula, FRAME.iloc[rows], q=0.5)
        est.append(np.asarray(fit.params, float).ravel(order="F"))
    want = np.mean(est, axis=0)
    res = model.fit()
    got = np.asarray(res.params, float).ravel(order="F")
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6 * np.abs(want).max(),
                               err_msg=f"{entry.id}: epsilon=inf vs the blocks' average")
    spread = np.var(np.array(est) @ np.asarray(rel.A, float).T + np.asarray(rel.b, float),
                    axis=0, ddof=1)
    np.testing.assert_allclose(rel.spread, spread, rtol=1e-5, atol=1e-9)
    assert "NOT PRIVATE" in res.summary().as_text()


def _greedy_first(target: str, candidates: list[str]) -> str:
    """Vinterbo's score of one candidate: the pairs of rows with different targets
    that it tells apart (exact, on the raw rows): the greedy first choice."""
    def pairs(*cols):
        return int((FRAME.groupby(list(cols)).size().to_numpy(np.int64) ** 2).sum())

    n2 = len(FRAME) ** 2
    score = {c: n2 - pairs(target) - pairs(c) + pairs(target, c) for c in candidates}
    return max(score, key=score.get)


def _inf_select_features(entry: Entry):
    """dpmodels/mechanisms/selection/: "epsilon=inf: the selection is the non-private greedy
    choice", flagged NOT PRIVATE (discrete candidates: the exact score)."""
    target, *cands = variables(exact_formula_of(None))
    sel = _inf(entry, exact_formula_of(None))
    assert not sel.report.private and "NOT PRIVATE" in str(sel.report)
    assert sel.selected == (_greedy_first(target, cands),), sel.selected


def _inf_smoothed_sample(entry: Entry):
    """docs/synthetic.md: "epsilon=inf samples the plain histogram (delta = 0; NOT
    private)": every synthetic row is a cell of the data (discrete variables)."""
    formula = exact_formula_of(None)
    syn = _inf(entry, formula)
    assert syn.report.delta == 0 and not syn.report.private and "NOT PRIVATE" in str(syn.report)
    cols = variables(formula)
    seen = set(map(tuple, FRAME[cols].astype(object).to_numpy().tolist()))
    drawn = set(map(tuple, syn.frame[cols].astype(object).to_numpy().tolist()))
    assert len(syn.frame) == SYNTHETIC_ROWS and drawn <= seen, drawn - seen


#: The check of each promise at epsilon=inf (`dpmodels.front.registry.INF_PROMISES`; each
#: entry names its promise, ``Mechanism.inf``, and the check's docstring says where the
#: promise is written).  A promise without a check here fails test_every_promise_is_checked.
INF_CHECKS = {
    "exact histogram": _inf_exact_histogram,
    "exact moments": _inf_moments,
    "noiseless steps": _inf_noiseless_steps,
    "exact local": _inf_local,
    "greedy projection": _inf_projected,
    "exact block average": _inf_sample_aggregate,
    "greedy selection": _inf_select_features,
    "plain histogram sample": _inf_smoothed_sample,
}


def test_every_promise_is_checked():
    assert set(INF_CHECKS) == set(INF_PROMISES), set(INF_CHECKS) ^ set(INF_PROMISES)


@pytest.mark.parametrize("entry", _entry_params(ENTRIES))
def test_epsilon_inf(entry):
    promise = entry.mech.inf
    if promise not in INF_PROMISES:
        pytest.fail(f"{entry.id}: its registry entry names no epsilon=inf promise (inf="
                    f"{promise!r}): name one of {sorted(INF_PROMISES)} (what its docs promise), "
                    "or add the new promise to INF_PROMISES and its check to INF_CHECKS")
    INF_CHECKS[promise](entry)


# ---------------------------------------------------------------------------
# 5. neighbours
# ---------------------------------------------------------------------------

_HEX = re.compile(r"0x[0-9a-fA-F]+")


def _public_report(report) -> object:
    """The report with the fields its class declares noisy (``NOISY_FIELDS``) left
    out; a report that declares none has every number masked.  "selected" is the
    noisy selection: when it differs the rest is not compared (a noise-driven path)."""
    noisy = getattr(type(report), "NOISY_FIELDS", None)
    if noisy is None or not is_dataclass(report):
        return mask(_HEX.sub("#", repr(report)))
    out = {}
    for f in fields(report):
        if f.name in noisy:
            continue
        value = getattr(report, f.name)
        if f.name == "split":
            value = tuple((mask(label), e) for label, e in value)
        if f.name == "outside_bounds" and value is not None:  # its counts are noisy (issue 43)
            value = replace(value, counts=())
        out[f.name] = value
    return out


def _labels(obj):
    if isinstance(obj, pd.DataFrame):
        return {"index": list(obj.index), "columns": list(obj.columns)}
    if isinstance(obj, pd.Series):
        return {"index": list(obj.index), "name": obj.name}
    return (type(obj).__name__, np.shape(obj))


def _frame_sig(frame: pd.DataFrame) -> dict:
    return {"columns": list(frame.columns), "dtypes": [str(d) for d in frame.dtypes],
            "index": type(frame.index).__name__, "len": len(frame)}


def published(entry: Entry, data) -> tuple[dict, dict]:
    """(release part, rest) of what the entry publishes on ``data``, numbers that
    come from the noise masked."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        warnings.filterwarnings("ignore", category=FutureWarning)
        made = recipe(entry).make(formula_of(entry.family), data,
                                  **base_kw(entry, random_state=7))
        rep = report_of(made)
        rel = getattr(made, "release", None)
        part = {"made": type(made).__name__, "release": type(rel).__name__,
                "report": _public_report(rep), "report text": mask(str(rep)),
                "repr": mask(_HEX.sub("#", repr(made))),
                "selected": getattr(rep, "selected", None)}
        if rel is not None:
            part["release report"] = _public_report(rel.report)
            part["release repr"] = mask(_HEX.sub("#", repr(rel)))
        rest: dict = {}
        if hasattr(made, "fit"):
            try:
                res = made.fit(**fit_kwargs(made))
                smry = res.summary()
                rest.update(params=_labels(res.params), bse=_labels(res.bse),
                            conf_int=_labels(res.conf_int()),
                            exog_names=list(np.atleast_1d(res.model.exog_names)),
                            endog_names=res.model.endog_names, nobs_type=type(res.nobs).__name__,
                            privacy=res.privacy is rep, summary=mask(smry.as_text()),
                            summary_html=mask(smry.as_html()))
            except DPModelsError as exc:  # a fit the noisy release made impossible
                rest["error"] = (type(exc).__name__, mask(str(exc)))
        else:
            for name, value in _published_values(made).items():
                rest[name] = _frame_sig(value) if isinstance(value, pd.DataFrame) else (
                    mask(repr(value)) if name != "selected" else value)
        part["warnings"] = sorted({(w.category.__name__, mask(str(w.message))) for w in caught
                                   if w.category.__name__ not in NOISE_DRIVEN})
        rest["noise-driven warnings"] = sorted(
            {(w.category.__name__, mask(str(w.message))) for w in caught
             if w.category.__name__ in NOISE_DRIVEN})
    return part, rest


def _binning_flags(rest: dict):
    found = re.search(r"WARNING:binningmaybias(.*?)byupto", rest.get("summary", ""))
    return found.group(1) if found else None


def _reliability_masked(rest: dict) -> dict:
    """The summaries without their note that more than 10% of the bootstrap's
    replicates could not be fitted: whether it is there is computed from the
    noisy release and its replicates (the count itself is masked already)."""
    out = dict(rest)
    for key in ("summary", "summary_html"):
        if isinstance(out.get(key), str):
            out[key] = out[key].replace(":standarderrorsareunreliable.", ".")
    return out


@pytest.mark.parametrize("entry", _entry_params(ENTRIES))
def test_neighbours(entry):
    a_part, a_rest = published(entry, FRAME)
    b_part, b_rest = published(entry, neighbour_of(FRAME))
    noise_path = (a_part["selected"] != b_part["selected"]
                  or a_rest["noise-driven warnings"] != b_rest["noise-driven warnings"]
                  or ("error" in a_rest) != ("error" in b_rest)
                  or _binning_flags(a_rest) != _binning_flags(b_rest))
    a_rest, b_rest = _reliability_masked(a_rest), _reliability_masked(b_rest)
    if a_part["selected"] != b_part["selected"]:  # the selection is the noisy output
        for part in (a_part, b_part):
            part.pop("selected"), part.pop("report"), part.pop("report text"), part.pop("repr")
    assert a_part == b_part, f"{entry.id}: the releases differ\n{_diff(a_part, b_part)}"
    if noise_path:
        pytest.skip(f"{entry.id}: the neighbours took different noise-driven paths: "
                    "the release part was compared, not the fits")
    assert a_rest == b_rest, f"{entry.id}: the results differ\n{_diff(a_rest, b_rest)}"


# ---------------------------------------------------------------------------
# 6. bad input, refused before any noise or charge
# ---------------------------------------------------------------------------


def _undeclared_level(df: pd.DataFrame) -> pd.DataFrame:
    out = df.copy()
    out.loc[len(out) - 3, "g"] = "zz"  # late in the data
    return out


#: (id, data change, argument change, error class, message pattern)
BAD_INPUTS = {
    "undeclared-bound": (None, {"bounds": {"y": BOUNDS["y"]}}, DomainError, r"'x'"),
    "undeclared-level": (_undeclared_level, {}, UndeclaredLevelError, r"'g'"),
    "epsilon-zero": (None, {"epsilon": 0.0}, DPModelsError, r"epsilon"),
    "epsilon-negative": (None, {"epsilon": -1.0}, DPModelsError, r"epsilon"),
    "epsilon-nan": (None, {"epsilon": float("nan")}, DPModelsError, r"epsilon"),
}


@pytest.mark.parametrize("case", list(BAD_INPUTS))
@pytest.mark.parametrize("entry", _entry_params(ENTRIES))
def test_bad_input(entry, case):
    change, args, error, pattern = BAD_INPUTS[case]
    data = change(FRAME) if change else FRAME.copy()
    before = data.copy(deep=True)
    acct = dpm.Accountant(10.0)
    rng = np.random.default_rng(99)
    state = rng.bit_generator.state
    kw = base_kw(entry, random_state=rng, accountant=acct)
    kw.update(args)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(DPModelsError) as info:
            recipe(entry).make(formula_of(entry.family), data, **kw)
    assert isinstance(info.value, error), f"{entry.id}: {type(info.value).__name__}: {info.value}"
    assert re.search(pattern, str(info.value)), f"{entry.id}: {info.value}"
    assert acct.spent == 0 and acct.ledger == (), f"{entry.id}: charged, then refused"
    assert rng.bit_generator.state == state, f"{entry.id}: noise drawn, then refused"
    pd.testing.assert_frame_equal(data, before)


# ---------------------------------------------------------------------------
# 7. validity on real data (plasmode)
# ---------------------------------------------------------------------------

#: One real data set bundled with statsmodels per family: (benchmarks/real_validity.py's
#: case, whose loader, declared bounds and levels are used, and a small formula of its
#: variables).  The truth is statsmodels' fit of the formula the model estimates on all
#: the real rows (the projected model's restricted formula: its estimand).
VALIDITY_CELLS = {
    "ols": ("randhie_ols", "np.log1p(mdvis) ~ lncoins + C(idp) + physlm"),
    "logit": ("fair_logit", "affair ~ np.log(yrs_married) + age + C(religious)"),
    "quantreg": ("engel_quantreg", "np.log(foodexp) ~ np.log(income)"),
    "mnlogit": ("anes96_mnlogit", "party ~ selfLR + np.log1p(popul)"),
}
#: Rows per replicate and replicates per cell: the suite's own n and epsilon (EPSILON), a
#: few replicates (the benchmark runs 100).
VALIDITY_N = N
VALIDITY_REPS = 4
VALIDITY_ENTRIES = FAMILY_ENTRIES
#: Nominal level of the intervals, and the one-sided level of the binomial test (5%
#: over all the cells: Bonferroni).
NOMINAL = 0.95
ALPHA = 0.05 / len(VALIDITY_ENTRIES)


@pytest.fixture(scope="module")
def bench():
    return load_benchmark("real_validity")


def coverage_floor(m: int, nominal: float = NOMINAL, alpha: float = ALPHA) -> int:
    """The fewest covering intervals out of ``m`` that valid intervals reach but with
    probability at most ``alpha``: the smallest k with P(Bin(m, nominal) <= k) > alpha
    (fewer is the one-sided binomial test's rejection)."""
    k = 0
    while k < m and stats.binom.cdf(k, m, nominal) <= alpha:
        k += 1
    return k


@pytest.mark.parametrize("entry", _entry_params(ENTRIES))
def test_validity(entry, bench):
    if entry.family is None:
        pytest.skip(f"{entry.id} publishes no coefficients and no intervals "
                    "(a selection or synthetic rows): nothing to cover a truth")
    case, formula = VALIDITY_CELLS[entry.family]
    spec = bench.CASES[case]
    full = bench.data_of(case)
    covered, scored, infinite, refused, unnamed = 0, 0, 0, [], []
    for rep in range(VALIDITY_REPS):
        rng = np.random.default_rng([2027, rep])
        df = full.iloc[rng.integers(0, len(full), VALIDITY_N)].reset_index(drop=True)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                model = recipe(entry).make(formula, df, **base_kw(
                    entry, bounds=spec["bounds"], levels=spec["levels"], random_state=rep))
                res = model.fit(**fit_kwargs(model, random_state=100 + rep))
            except DPModelsError as exc:  # a refusal: counted, not scored (as the benchmark)
                refused.append(f"{type(exc).__name__}: {str(exc)[:80]}")
                continue
        said = "\n".join(str(w.message) for w in caught
                         if issubclass(w.category, dpm.ReleaseWarning))
        names, est, lo, hi, _ = bench.flatten(res)
        truth = bench.truth_of(case, getattr(model, "formula", formula))
        for coef, t in truth.items():
            if coef not in names:
                continue  # left out of the fit (a level with no released cell): not scored
            j = names.index(coef)
            scored += 1
            covered += bool(lo[j] <= t <= hi[j])
            if not np.isfinite(hi[j] - lo[j]):
                infinite += 1
                # the information goal (docs/inference.md): a warning names the coefficient
                if not bench.names_in(said, bench.library_name(case, coef)):
                    unnamed.append((rep, coef))
    assert scored, f"{entry.id}: no replicate was fitted ({refused})"
    assert not unnamed, f"{entry.id} on {case}: infinite intervals no warning names: {unnamed}"
    floor = coverage_floor(scored)
    assert covered >= floor, (
        f"{entry.id} on {case}: {covered} of {scored} intervals ({infinite} infinite) cover "
        "the truth, below the "
        f"binomial floor {floor} (nominal {NOMINAL:.0%}, one-sided {ALPHA:.2g}); refused: "
        f"{refused}")
