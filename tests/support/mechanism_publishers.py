"""What each mechanism outside the dp_* default routes publishes, with the numbers
that come from the noise masked (sample-and-aggregate, feature selection, the
projected models, local releases, synthetic rows, Unbounded declarations), and
the pair check, for the neighbour suites (tests/privacy/test_neighbours_mechanisms.py,
tests/contracts/test_engines_contract.py)."""

from __future__ import annotations

import dataclasses
import re
import warnings
from dataclasses import asdict

import numpy as np
import pandas as pd

import dpmodels as dpm
from tests.support.neighbours import (
    FACTORIES,
    Case,
    _diff,
    _frame_sig,
    _labels,
    _noise_driven,
    _warnings_sig,
    fit_published,
    mask,
)

UNBOUNDED = dpm.Unbounded(center=5, scale=2)

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


def _unbounded(case: Case) -> Case:
    """The case with x declared Unbounded(center=5, scale=2) instead of bounds
    (and used as x: a log of an Unbounded variable is refused by design)."""
    bounds = {k: v for k, v in case.kw["bounds"].items() if k != "x"}
    bounds["x"] = UNBOUNDED
    return dataclasses.replace(case, label="unbounded " + case.label,
                               formula=case.formula.replace("np.log1p(x)", "x"),
                               kw={**case.kw, "bounds": bounds})


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
