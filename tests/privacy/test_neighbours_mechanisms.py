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

import re

import pytest

import dpmodels as dpm
from tests.support.mechanism_publishers import (
    UNBOUNDED,
    _check_pair,
    _local_published,
    _projected_published,
    _sa_published,
    _selection_published,
    _synthetic_published,
    _unbounded,
)
from tests.support.neighbours import (
    KINDS,
    _diff,
    compare,
    make_case,
)

#: Pairs per kind and mechanism (4 kinds each).
SEEDS = range(6)
#: For the fast mechanisms (the selection, the synthetic rows).
MORE_SEEDS = range(12)
#: Share of a mechanism's pairs that must be compared in full.
MIN_SHARE = 0.8


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


def _share(compared: int, total: int, what: str) -> None:
    print(f"{what}: {compared} of {total} pairs compared in full")
    assert total and compared >= MIN_SHARE * total, (
        f"{what}: only {compared} of {total} pairs compared in full")


# ---------------------------------------------------------------------------
# sample-and-aggregate
# ---------------------------------------------------------------------------


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
