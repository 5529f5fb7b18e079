"""The neighbour property test (PRIVACY.md rule 5) extended to the mechanisms
of issue 14: everything each publishes is a function of its noisy output and
the public inputs, metadata included.

The pairs are test_neighbours' generated data sets and their replace-one
neighbours (kinds "missing", "move", "bound", "empty"; int, str, category,
bool and float columns in their generated dtypes), released with the same
``random_state`` through:

* ``method="sample-aggregate"`` (all four ``dp_*``; half the pairs with
  ``param_bounds``, half with the private range): the release's report and
  text, names, array dtypes and shapes, the results' params / bse / conf_int
  / tvalues / pvalues / cov_params labels, nobs, the summary (text, HTML)
  masked, predictions' labels, warnings (and a few Polars pairs, which must
  also publish what pandas publishes);
* ``dpm.select_features`` (its report, text, HTML and repr) and ``select=``
  for ``dp_logit`` / ``dp_mnlogit`` (the projected report, the histogram's
  report, cells frame, the fit);
* ``dpm.local.randomize`` (the local report, its text, the release's
  frames and arrays' metadata) and ``dp_*`` fitted on the local release;
* ``dpm.smoothed_sample`` (report compared unmasked: it holds no noisy
  value; the frame's columns, dtypes, index, length, attrs) and
  ``PrivateHistogram.sample`` (frames' columns, dtypes, index, attrs);
* ``dpm.Unbounded``: x declared ``Unbounded(center=5, scale=2)`` instead of
  bounds, through the four histogram models (test_neighbours' ``compare``),
  the smoothed sample, the local release and the selection; the mechanisms
  that need finite bounds refuse it with the same message on both.

Numbers computed from noisy outputs are masked (``mask``).  What depends on
the noise and may differ between neighbours, and is then compared only in
the part that does not depend on it (as test_neighbours does):
a noise-driven warning or binning note (``_noise_driven``), the selected
set of a private selection.  Each mechanism
must still compare most of its pairs in full (asserted).
"""

from __future__ import annotations

import dataclasses
import re
import warnings
from dataclasses import asdict

import numpy as np
import pandas as pd
import pytest

import dpmodels as dpm

from tests.support.neighbours import (
    FACTORIES,
    KINDS,
    Case,
    _diff,
    _frame_sig,
    _labels,
    _noise_driven,
    _warnings_sig,
    compare,
    fit_published,
    make_case,
    mask,
)

#: Pairs per kind and mechanism (4 kinds each).
SEEDS = range(6)
#: For the fast mechanisms (the selection, the synthetic rows).
MORE_SEEDS = range(12)
#: Share of a mechanism's pairs that must be compared in full.
MIN_SHARE = 0.8
UNBOUNDED = dpm.Unbounded(center=5, scale=2)


# ---------------------------------------------------------------------------
# shared helpers
# ---------------------------------------------------------------------------


class _Recorder:
    """Records every warning (as test_neighbours' ``published``)."""

    def __enter__(self):
        self._cm = warnings.catch_warnings(record=True)
        self.caught = self._cm.__enter__()
        warnings.simplefilter("always")
        return self

    def __exit__(self, *exc):
        return self._cm.__exit__(*exc)

    def sig(self):
        return _warnings_sig(self.caught)


def _sized_sig(frame: pd.DataFrame) -> dict:
    """As ``_frame_sig`` (columns, dtypes, index type), and the length and attrs (for frames whose length is public)."""
    return {**_frame_sig(frame), "len": len(frame), "index values": list(frame.index)[:3],
            "attrs": dict(frame.attrs)}


def _array_sig(a) -> tuple:
    a = np.asarray(a)
    return (str(a.dtype), a.shape)


def _error(exc: Exception) -> dict:
    return {"error": (type(exc).__name__, mask(str(exc)))}


def _check_pair(label: str, a: tuple[dict, dict], b: tuple[dict, dict], differs=None) -> bool:
    """test_neighbours' ``compare`` on two published (release, rest) pairs:
    the release parts must be equal; the rest too unless the two took
    different noise-driven paths (a noise-driven warning or binning note, a
    refusal on one side only, or ``differs(rest_a, rest_b)``).  Returns
    whether the rest was compared."""
    (rel_a, rest_a), (rel_b, rest_b) = a, b
    assert rel_a == rel_b, f"{label}: the releases differ\n{_diff(rel_a, rel_b)}"
    if (("error" in rest_a) != ("error" in rest_b) or _noise_driven(rest_a, rest_b)
            or (differs is not None and differs(rest_a, rest_b))):
        return False
    assert rest_a == rest_b, f"{label}: the results differ\n{_diff(rest_a, rest_b)}"
    return True


def _cases(kinds=KINDS, seeds=SEEDS, models=None):
    """The generated pairs (the models' pairs only, when ``models`` is given)."""
    for kind in kinds:
        if models is None:
            for seed in seeds:
                yield make_case(seed, kind)
            continue
        found, seed = 0, 0
        while found < len(seeds):
            case = make_case(seed, kind)
            seed += 1
            if case.model in models:
                found += 1
                yield case


def _unbounded(case: Case) -> Case:
    """The case with x declared Unbounded(center=5, scale=2) instead of bounds
    (and used as x: a log of an Unbounded variable is refused by design)."""
    bounds = {k: v for k, v in case.kw["bounds"].items() if k != "x"}
    bounds["x"] = UNBOUNDED
    return dataclasses.replace(case, label="unbounded " + case.label,
                               formula=case.formula.replace("np.log1p(x)", "x"),
                               kw={**case.kw, "bounds": bounds})


def _share(compared: int, total: int, what: str) -> None:
    print(f"{what}: {compared} of {total} pairs compared in full")
    assert total and compared >= MIN_SHARE * total, (
        f"{what}: only {compared} of {total} pairs compared in full")


# ---------------------------------------------------------------------------
# sample-and-aggregate
# ---------------------------------------------------------------------------


def _new_rows(case: Case) -> pd.DataFrame:
    """The same four rows for both data sets, for ``predict`` (nullable Int64
    columns as int64: patsy cannot read them in a new frame, see the report)."""
    rows = case.base.iloc[:4]
    return rows.astype({c: "int64" for c in rows.columns if str(rows[c].dtype) == "Int64"})


def _sa_published(case: Case, data, param_bounds) -> tuple[dict, dict]:
    kw = {k: v for k, v in case.kw.items() if k != "bins"}  # not a histogram: no bins
    q = case.fit_kw.get("q")
    extra = {"q": q} if q is not None else {}
    with _Recorder() as rec:
        warnings.filterwarnings("ignore", category=FutureWarning)
        try:
            model = FACTORIES[case.model](case.formula, data, random_state=7,
                                          method="sample-aggregate", param_bounds=param_bounds,
                                          **kw, **extra)
        except dpm.DPModelsError as exc:
            return _error(exc), {"warnings": rec.sig()}
        rel = model.release
        # range_source included: decided from public k, p, epsilon
        rep = _outside_public(asdict(rel.report))
        release = {
            "report": rep,
            "report text": mask(str(rel.report)),
            "report html": mask(rel.report._repr_html_()),
            "release repr": mask(repr(rel)),
            "release str": mask(str(rel)),
            "model repr": mask(repr(model)),
            "names": (rel.family, rel.formula, rel.q, rel.exog_names, rel.endog_name,
                      rel.ynames, rel.names, rel.blocks),
            "model names": (model.exog_names, model.endog_names, model.privacy is rel.report,
                            model.budget_spent),
            "arrays": [_array_sig(getattr(rel, f)) for f in (
                "A", "b", "lo", "hi", "working", "noise_scale", "spread", "params", "bse")],
        }
        rest = fit_published(model, {"cov_type": "naive", **case.fit_kw})
        if "error" not in rest:
            res = model.fit(**case.fit_kw)
            ci = res.conf_int()
            rest.update({
                "conf_int shape": np.shape(ci),
                "tvalues": _labels(res.tvalues), "pvalues": _labels(res.pvalues),
                "cov_params": _labels(res.cov_params()),
                "nobs": res.nobs, "repr": mask(repr(res)),
                "params dtype": str(pd.DataFrame(res.params).dtypes.tolist()),
                "predict": _labels(res.predict(_new_rows(case))),
            })
        rest["warnings"] = rec.sig()
    return release, rest


def test_sample_aggregate_neighbours():
    compared = total = 0
    for case in _cases():
        seed = int(case.label.split("-")[2])
        pb = (-30.0, 30.0) if seed % 2 else None
        a = _sa_published(case, case.base, pb)
        b = _sa_published(case, case.neighbour, pb)
        assert "error" not in a[0], f"{case.label}: {a[0]}"
        compared += _check_pair(f"sample-aggregate {case.label} (param_bounds={pb})", a, b)
        total += 1
    _share(compared, total, "sample-aggregate")


def test_sample_aggregate_polars_neighbours():
    """Polars frames (an int column with a null, Enums): the neighbours publish
    the same, and what pandas publishes."""
    from tests.support.neighbours import _to_polars

    for kind in KINDS:
        case = make_case(0, kind, "polars")
        a = _sa_published(case, _to_polars(case.base), (-30.0, 30.0))
        b = _sa_published(case, _to_polars(case.neighbour), (-30.0, 30.0))
        assert _check_pair(f"sample-aggregate polars {case.label}", a, b)
        pandas = _sa_published(case, case.base, (-30.0, 30.0))
        assert _check_pair(f"sample-aggregate polars/pandas {case.label}", a, pandas)


# ---------------------------------------------------------------------------
# private feature selection and the projected models
# ---------------------------------------------------------------------------


def _target_and_candidates(case: Case) -> tuple[str, list[str]]:
    """The response of a logit / mnlogit case; else the first discrete predictor."""
    discrete = list(case.variables)
    target = "r" if "r" in case.variables else discrete[0]
    return target, [c for c in case.base.columns if c not in ("y", target)]


def _outside_public(rep: dict) -> dict:
    """A report's dict without the noisy counts of rows outside the bounds
    (issue 43): their names, n, epsilon part and noise SD stay compared."""
    if rep.get("outside_bounds"):
        rep["outside_bounds"] = {k: v for k, v in rep["outside_bounds"].items() if k != "counts"}
    return rep


_OUTSIDE_ROW = re.compile(r"(Rows outside bounds:)(.*?)(\n\S|</td>|$)", re.S)


def _outside_masked(text: str) -> str:
    """A report's text or HTML, the numbers of its "Rows outside bounds" row masked."""
    return _OUTSIDE_ROW.sub(lambda m: m.group(1) + re.sub(r"\d[\d,.]*", "#", m.group(2))
                            + m.group(3), text)


def _selection_published(case: Case, data, k) -> tuple[dict, dict]:
    target, candidates = _target_and_candidates(case)
    with _Recorder() as rec:
        sel = dpm.select_features(data, target, candidates, k=k, random_state=7, **case.kw)
        rep = _outside_public(asdict(sel.report))
        chosen = rep.pop("selected")
        text = str(sel.report)

        def without_choice(s):  # the lines that print the (noisy) choice
            return mask(re.sub(r"(Selected|Dropped):.*", r"\1: <choice>", s))

        release = {"report": rep, "report text": without_choice(text),
                   "report html": without_choice(sel.report._repr_html_()),
                   "target": sel.target, "privacy": sel.privacy is sel.report,
                   "warnings": rec.sig()}
        rest = {"selected": chosen, "dropped": sel.dropped, "report text": mask(text),
                "report html": mask(sel.report._repr_html_()), "repr": mask(repr(sel)),
                "warnings": rec.sig()}
    return release, rest


def test_select_features_neighbours():
    compared = total = 0
    for case in _cases(seeds=MORE_SEEDS):
        k = None if int(case.label.split("-")[2]) % 2 else 1
        a = _selection_published(case, case.base, k)
        b = _selection_published(case, case.neighbour, k)
        compared += _check_pair(f"select_features {case.label} (k={k})", a, b,
                                differs=lambda x, y: x["selected"] != y["selected"])
        total += 1
    _share(compared, total, "select_features")


def _projected_published(case: Case, data, select) -> tuple[dict, dict]:
    with _Recorder() as rec:
        warnings.filterwarnings("ignore", category=FutureWarning)
        model = FACTORIES[case.model](case.formula, data, random_state=7, select=select,
                                      gamma=0.5, **case.kw)
        pr = model.privacy
        proj = asdict(pr)
        sel = proj.pop("selection")
        hist = proj.pop("histogram")
        choice = {key: proj.pop(key) for key in ("selected", "dropped", "formula")}
        if sel is not None:
            choice["selection.selected"] = sel.pop("selected")
        for noisy in ("released_cells", "noisy_total"):
            hist.pop(noisy)
        # the histogram's domain is the selected variables' (so are its outside counts)
        hist_choice = {key: hist.pop(key) for key in ("variables", "domain_cells",
                                                      "expected_spurious_cells")}
        hist_choice["outside_bounds"] = _outside_public(hist).pop("outside_bounds", None)
        release = {"projected": proj, "selection": sel, "histogram": hist,
                   "selection object": (type(model.selection).__name__,
                                        getattr(model.selection, "target", None)),
                   "type": type(model).__name__}
        rel = model.release
        rest = dict(choice, **{
            "histogram by choice": hist_choice,
            "report text": mask(str(pr)), "report html": mask(pr._repr_html_()),
            "model repr": mask(repr(model)),
            "release.cells": _frame_sig(rel.cells), "model.cells": _frame_sig(model.cells),
            "variables": tuple(model.variables),
            "release report text": mask(str(rel.report)), "release repr": mask(repr(rel)),
        })
        fit = fit_published(model, {"cov_type": "naive", **case.fit_kw})
        fit.pop("privacy")  # the projected report is compared above
        if "error" not in fit:
            res = model.fit(cov_type="naive")
            fit["privacy is the model's"] = res.privacy is pr
        rest.update(fit)
        rest["warnings"] = rec.sig()
    return release, rest


def test_projected_models_neighbours():
    compared = total = 0
    for case in _cases(models=("logit", "mnlogit")):
        seed = int(case.label.split("-")[2])
        select = "auto" if seed % 3 == 2 else 1
        a = _projected_published(case, case.base, select)
        b = _projected_published(case, case.neighbour, select)
        compared += _check_pair(f"select={select!r} {case.label}", a, b,
                                differs=lambda x, y: x["selected"] != y["selected"])
        total += 1
    _share(compared, total, "projected (select=)")


# ---------------------------------------------------------------------------
# local privacy
# ---------------------------------------------------------------------------


def _local_published(case: Case, data, fit_kw: dict) -> tuple[dict, dict]:
    kw = {k: v for k, v in case.kw.items() if k in ("epsilon", "bounds", "levels", "bins")}
    with _Recorder() as rec:
        warnings.filterwarnings("ignore", category=FutureWarning)  # (PySpark's on pandas 3)
        rel = dpm.local.randomize(data, formula=case.formula, random_state=7, **kw)
        rep = asdict(rel.report)
        rep.pop("noisy_total")
        release = {
            "report": rep, "report text": mask(str(rel.report)),
            "report html": mask(rel.report._repr_html_()),
            "repr": mask(repr(rel)), "str": mask(str(rel)),
            "domain": rel.domain.describe(), "names": rel.variables, "n": rel.n,
            "channel": rel.channel, "privacy": rel.privacy is rel.report,
            "cells": _sized_sig(rel.cells),
            "arrays": [_array_sig(a) for a in (rel.report_counts, rel.estimate, rel.projected)],
            "reports": None if rel.reports is None else _array_sig(rel.reports),
            "histogram.cells": _frame_sig(rel.histogram.cells),
            "histogram repr": mask(repr(rel.histogram)),
            "histogram report": rel.histogram.report is rel.report,
            "release warnings": rec.sig(),
        }
        model = FACTORIES[case.model](case.formula, rel)
        rest = {"model": type(model).__name__, "model repr": mask(repr(model)),
                "model.cells": _frame_sig(model.cells), "variables": tuple(model.variables)}
        rest.update(fit_published(model, {**case.fit_kw, **fit_kw}))
        rest["warnings"] = rec.sig()
    return release, rest


def test_local_release_and_fits_neighbours():
    compared = total = 0
    for case in _cases():
        seed = int(case.label.split("-")[2])
        fit_kw = {"n_boot": 10, "random_state": 3} if seed == 0 else {"cov_type": "naive"}
        a = _local_published(case, case.base, fit_kw)
        b = _local_published(case, case.neighbour, fit_kw)
        compared += _check_pair(f"local {case.label}", a, b)
        total += 1
    _share(compared, total, "local")


# ---------------------------------------------------------------------------
# synthetic rows
# ---------------------------------------------------------------------------


def _synthetic_published(case: Case, data, within: str) -> tuple[dict, dict]:
    columns = list(case.base.columns)
    kw = {k: v for k, v in case.kw.items() if k in ("epsilon", "bounds", "levels", "bins")}
    with _Recorder() as rec:
        syn = dpm.smoothed_sample(data, columns=columns, size=12, random_state=7, **kw)
        # nothing in the smoothed sample's report is computed from the data but the noisy
        # counts of rows outside the bounds (issue 43): only those are masked
        out = syn.report.outside_bounds
        report = (syn.report if out is None else dataclasses.replace(
            syn.report, outside_bounds=dataclasses.replace(out, counts=())))
        release = {"report": report, "report text": _outside_masked(str(syn.report)),
                   "report html": _outside_masked(syn.report._repr_html_()),
                   "repr": _outside_masked(repr(syn)),
                   "privacy": syn.privacy is syn.report, "len": len(syn),
                   "domain": syn.domain.describe(), "frame": _sized_sig(syn.frame),
                   "warnings": rec.sig()}
    with _Recorder() as rec:
        hist = dpm.release(data, columns=columns, random_state=7, **kw)
        fixed = hist.sample(size=15, random_state=3, within=within)
        total = hist.sample(random_state=3)  # as many rows as the noisy total
        rest = {"release repr": mask(repr(hist)), "fixed size": _sized_sig(fixed),
                "noisy total": {**_frame_sig(total), "attrs": dict(total.attrs)},
                "warnings": rec.sig()}
    return release, rest


def test_synthetic_rows_neighbours():
    compared = total = 0
    for case in _cases(seeds=MORE_SEEDS):
        within = "density" if int(case.label.split("-")[2]) % 2 else "uniform"
        a = _synthetic_published(case, case.base, within)
        b = _synthetic_published(case, case.neighbour, within)
        compared += _check_pair(f"synthetic {case.label} (within={within})", a, b)
        total += 1
    _share(compared, total, "synthetic")


# ---------------------------------------------------------------------------
# Unbounded
# ---------------------------------------------------------------------------


def test_unbounded_neighbours():
    """x declared Unbounded(5, 2): the histogram models (test_neighbours'
    compare), the smoothed sample, the local release, the selection; the
    sample-and-aggregate release refuses it alike on both data sets."""
    compared = total = 0
    for case in _cases(seeds=range(4)):
        case = _unbounded(case)
        assert case.kw["bounds"]["x"] == UNBOUNDED and "log1p" not in case.formula
        same, rel, _ = compare(case)
        compared += same
        if "x" in rel["model.cells"]["columns"]:
            x = rel["model.cells"]["columns"].index("x")
            assert rel["model.cells"]["dtypes"][x] == "float64", case.label
        a = _synthetic_published(case, case.base, "uniform")
        b = _synthetic_published(case, case.neighbour, "uniform")
        assert "unbounded" in a[0]["domain"]["x"]
        compared += _check_pair(f"synthetic {case.label}", a, b)
        a = _local_published(case, case.base, {"cov_type": "naive"})
        b = _local_published(case, case.neighbour, {"cov_type": "naive"})
        compared += _check_pair(f"local {case.label}", a, b)
        a = _selection_published(case, case.base, 1)
        b = _selection_published(case, case.neighbour, 1)
        compared += _check_pair(f"select_features {case.label}", a, b,
                                differs=lambda x, y: x["selected"] != y["selected"])
        a = _sa_published(case, case.base, None)
        b = _sa_published(case, case.neighbour, None)
        if re.search(r"\bx\b", case.formula):
            assert a[0].get("error", ("",))[0] == "DomainError", (case.label, a[0])
            assert a == b, f"{case.label}: the refusals differ\n{_diff(a[0], b[0])}"
        else:  # x not in the model: an ordinary sample-and-aggregate pair
            compared += _check_pair(f"sample-aggregate {case.label}", a, b)
            total += 1
        total += 4
    _share(compared, total, "unbounded")


def test_an_injected_metadata_leak_is_caught(monkeypatch):
    """The check can fail: a smoothed sample whose discrete columns take the
    data's dtype (an int column with a missing value is float64) is caught."""
    real = dpm.smoothed_sample

    def leaky(data, **kw):
        out = real(data, **kw)
        for name in kw["columns"]:
            if out.frame[name].dtype != "category" and out.domain.axis(name).kind == "discrete":
                out.frame[name] = out.frame[name].astype(data[name].dtype)
        return out

    monkeypatch.setattr(dpm, "smoothed_sample", leaky)
    case = make_case(0, "missing")
    a = _synthetic_published(case, case.base, "uniform")
    b = _synthetic_published(case, case.neighbour, "uniform")
    with pytest.raises(AssertionError, match="the releases differ"):
        _check_pair(case.label, a, b)
