"""Saved releases (dpmodels/front/saved.py): round trips that give bit-identical
fits, the format's keys and versioning, refusals of inconsistent files, and
that a saved file holds nothing but the public release (PRIVACY.md rule 5)."""

from __future__ import annotations

import copy
import gzip
import json
import warnings

import numpy as np
import pandas as pd
import pytest

import dpmodels as dpm
from dpmodels.core.errors import DPModelsError
from dpmodels.front.saved import FORMAT, FORMAT_VERSION, SavedReleaseError
from tests.support.saved_edits import (
    _drop,
    _set,
)

#: A raw value no bound, level or released number can equal: it must never reach a file.
SENTINEL = 987654.3125
SENTINEL_TEXT = "987654"
SECRET = "SECRET-ROW-7731"

BOUNDS = {"x": (0.0, 10.0), "y": (-5.0, 20.0)}
LEVELS = {"g": ["lo", "mid", "hi"], "b": [0, 1], "k": ["a", "b", "c"]}
N_BOOT = 40


def _frame(n: int, seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    x = rng.uniform(0, 10, n)
    g = rng.choice(LEVELS["g"], n)
    y = 1 + 0.8 * x + 2.0 * (g == "hi") + rng.normal(0, 1, n)
    b = (rng.random(n) < 1 / (1 + np.exp(-(x - 5) / 2))).astype(int)
    k = np.where(x < 3, "a", np.where(x < 7, "b", "c"))
    flip = rng.random(n) < 0.3
    k[flip] = rng.choice(LEVELS["k"], int(flip.sum()))
    df = pd.DataFrame({"y": y, "x": x, "g": g, "b": b, "k": k, "memo": "ok"})
    # raw values that are clipped (x) or never released (memo): rule 5's canaries
    df.loc[0, "x"] = SENTINEL
    df.loc[1, "y"] = -SENTINEL
    df.loc[2, "memo"] = SECRET
    return df


@pytest.fixture(scope="module")
def data() -> pd.DataFrame:
    return _frame(20_000, 1)


@pytest.fixture(scope="module")
def releases(data, tmp_path_factory):
    """One release of each type, saved and loaded back (plain and gzip)."""
    hist = dpm.release(data, columns=["y", "x", "g", "b", "k"], epsilon=2.0, bounds=BOUNDS,
                       levels=LEVELS, bins=6, random_state=0)
    mom = dpm.release_moments(data, formula="y ~ x + C(g)", epsilon=1.0, bounds=BOUNDS,
                              levels=LEVELS, random_state=1)
    newton = dpm.release_newton(data, formula="b ~ x + C(g)", epsilon=1.0, bounds=BOUNDS,
                                levels=LEVELS, random_state=2)
    qmodel = dpm.dp_quantreg("y ~ x + C(g)", data, epsilon=1.0, bounds=BOUNDS, levels=LEVELS,
                             method="newton", q=[0.25, 0.5], random_state=3)
    originals = {"histogram": hist, "moments": mom, "newton": newton,
                 "quantile-steps": qmodel.release}
    root = tmp_path_factory.mktemp("saved")
    paths, loaded = {}, {}
    for kind, rel in originals.items():
        suffix = ".json.gz" if kind == "newton" else ".json"
        paths[kind] = rel.save(root / f"{kind}{suffix}")
        loaded[kind] = dpm.load_release(paths[kind])
    return originals, loaded, paths


def _same_fit(a, b):
    np.testing.assert_array_equal(np.asarray(a.params), np.asarray(b.params))
    np.testing.assert_array_equal(np.asarray(a.bse), np.asarray(b.bse))
    assert list(np.asarray(a.params).shape) == list(np.asarray(b.params).shape)
    assert a.privacy == b.privacy


# ---- round trips ---------------------------------------------------------------------------------


def test_save_returns_path_and_writes_the_format_keys(releases):
    originals, _, paths = releases
    for kind, path in paths.items():
        raw = path.read_bytes()
        doc = json.loads(gzip.decompress(raw) if path.name.endswith(".gz") else raw)
        assert doc["format"] == FORMAT and doc["format_version"] == FORMAT_VERSION
        assert doc["release_type"] == kind
        assert {"domain", "report", "release", "dpmodels_version"} <= set(doc)
        assert doc["report"]["epsilon"] == originals[kind].report.epsilon
        assert doc["guarantee"]["delta"] == 0 and "replace-one" in doc["guarantee"]["neighbouring"]
        assert not [p for p in path.parent.iterdir() if p.name.startswith(".")]  # no temp file
    assert paths["newton"].read_bytes()[:2] == b"\x1f\x8b"  # .gz is compressed


def test_loaded_histogram_is_the_same_value(releases):
    originals, loaded, _ = releases
    a, b = originals["histogram"], loaded["histogram"]
    assert a.domain == b.domain and a.report == b.report
    assert b.cell_ids.dtype == np.uint64 and b.counts.dtype == np.int64
    np.testing.assert_array_equal(a.cell_ids, b.cell_ids)
    np.testing.assert_array_equal(a.counts, b.counts)
    pd.testing.assert_frame_equal(a.cells, b.cells)


@pytest.mark.parametrize("kind", ["moments", "newton", "quantile-steps"])
def test_loaded_formula_release_is_the_same_value(releases, kind):
    originals, loaded, _ = releases
    a, b = originals[kind], loaded[kind]
    assert type(a) is type(b) and a.report == b.report
    assert a.space.formula == b.space.formula and a.space.exog_names == b.space.exog_names
    assert a.space.domain == b.space.domain
    for name in ("lo", "hi", "centre", "half", "constant", "constant_values"):
        np.testing.assert_array_equal(getattr(a.space, name), getattr(b.space, name))
    for name in ("offsets", "scales", "radius"):
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name))


def test_histogram_models_fit_bit_identically(releases):
    originals, loaded, _ = releases
    a, b = originals["histogram"], loaded["histogram"]
    fit = dict(n_boot=N_BOOT, random_state=7)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pairs = [
            (dpm.dp_ols("y ~ x + C(g)", rel).fit(**fit) for rel in (a, b)),
            (dpm.dp_logit("b ~ x + C(g)", rel).fit(**fit) for rel in (a, b)),
            (dpm.dp_quantreg("y ~ x + C(g)", rel).fit(q=0.5, **fit) for rel in (a, b)),
            (dpm.dp_mnlogit("k ~ x", rel).fit(**fit) for rel in (a, b)),
        ]
        for res_a, res_b in map(tuple, pairs):
            _same_fit(res_a, res_b)
            assert res_b.model.data.param_names == res_a.model.data.param_names


def test_moments_ols_fits_bit_identically(releases):
    originals, loaded, _ = releases
    res = [dpm.dp_ols("y ~ x + C(g)", rel, method="moments").fit(n_boot=N_BOOT, random_state=7)
           for rel in (originals["moments"], loaded["moments"])]
    _same_fit(*res)
    assert list(res[1].params.index) == ["Intercept", "C(g)[T.lo]", "C(g)[T.mid]", "x"]


def test_newton_logit_fits_bit_identically(releases):
    originals, loaded, _ = releases
    res = [dpm.dp_logit("b ~ x + C(g)", rel, method="newton").fit(n_boot=N_BOOT, random_state=7)
           for rel in (originals["newton"], loaded["newton"])]
    _same_fit(*res)


def test_quantile_steps_fit_bit_identically(releases):
    originals, loaded, _ = releases
    for q in (0.25, 0.5):
        res = [dpm.dp_quantreg("y ~ x + C(g)", rel, method="newton").fit(
            q=q, n_boot=N_BOOT, random_state=7)
            for rel in (originals["quantile-steps"], loaded["quantile-steps"])]
        _same_fit(*res)


def test_a_fit_on_a_loaded_release_spends_nothing(releases):
    _, loaded, _ = releases
    model = dpm.dp_ols("y ~ x", loaded["histogram"])
    assert model.budget_spent == 0.0
    with pytest.raises(DPModelsError, match="cannot change"):  # a fit cannot re-spend
        dpm.dp_ols("y ~ x", loaded["histogram"], epsilon=0.5)


def test_exact_and_log_scale_releases_round_trip(tmp_path):
    """epsilon=inf (non-finite numbers in the report), float and bool levels, a
    log-scale axis, a formula calling np.log."""
    rng = np.random.default_rng(4)
    df = pd.DataFrame({"z": rng.lognormal(0, 0.5, 3000), "f": rng.choice([0.5, 1.5], 3000),
                       "t": rng.random(3000) < 0.5})
    df["w"] = 1 + np.log(df["z"]) + df["f"] + rng.normal(0, 0.2, 3000)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        hist = dpm.release(df, formula="w ~ np.log(z) + C(f) + t", epsilon=float("inf"),
                           bounds={"z": (0.05, 20), "w": (-3, 6)}, levels={"f": [0.5, 1.5]},
                           bins=5)
        mom = dpm.release_moments(df, formula="w ~ np.log(z) + C(f)", epsilon=float("inf"),
                                  bounds={"z": (0.05, 20), "w": (-3, 6)},
                                  levels={"f": [0.5, 1.5]})
    assert hist.domain.axis("z").scale == "log"
    for rel in (hist, mom):
        back = dpm.load_release(rel.save(tmp_path / "r.json"))
        assert back.report == rel.report
    back = dpm.load_release(hist.save(tmp_path / "h.json"))
    assert back.domain == hist.domain
    assert back.domain.axis("f").levels == (0.5, 1.5)
    assert back.domain.axis("t").levels == (False, True)
    np.testing.assert_array_equal(
        dpm.dp_ols("w ~ np.log(z) + C(f) + t", back).fit(cov_type="naive").params,
        dpm.dp_ols("w ~ np.log(z) + C(f) + t", hist).fit(cov_type="naive").params)
    doc = json.loads((tmp_path / "r.json").read_text())
    assert doc["report"]["epsilon"] == "inf"  # strict JSON: no Infinity literal


def test_a_formula_function_comes_from_the_namespace(tmp_path, data):
    def half(v):
        return v / 2.0

    mom = dpm.release_moments(data, formula="y ~ half(x)", epsilon=1.0, bounds=BOUNDS,
                              random_state=0, namespace={"half": half})
    path = mom.save(tmp_path / "m.json")
    with pytest.raises(SavedReleaseError, match="namespace"):
        dpm.load_release(path, namespace={})
    assert dpm.load_release(path, namespace={"half": half}).space.exog_names == (
        "Intercept", "half(x)")


# ---- no raw value in the file --------------------------------------------------------------------


def test_saved_files_hold_no_raw_value(releases):
    _, _, paths = releases
    for kind, path in paths.items():
        raw = path.read_bytes()
        text = (gzip.decompress(raw) if path.name.endswith(".gz") else raw).decode()
        assert SENTINEL_TEXT not in text, kind
        assert SECRET not in text and "memo" not in text, kind
        assert "ok" not in json.loads(text)["domain"].__repr__(), kind


def test_the_sentinel_check_can_fail(data, tmp_path):
    """The canary is visible when it is public: declared as a bound it is written."""
    rel = dpm.release(data, columns=["x"], epsilon=1.0, bounds={"x": (0.0, SENTINEL)}, bins=4,
                      random_state=0)
    assert SENTINEL_TEXT in rel.save(tmp_path / "x.json").read_text()


def test_neighbouring_data_sets_write_the_same_metadata(tmp_path):
    """Rule 5: everything but the noisy values is identical across neighbours
    (one row replaced by an extreme one) with the same seed."""
    a = _frame(3000, 5)
    b = a.copy()
    b.loc[10, ["x", "y", "g"]] = [-SENTINEL, SENTINEL, "hi"]
    docs = []
    for i, df in enumerate((a, b)):
        rel = dpm.release(df, columns=["y", "x", "g"], epsilon=1.0, bounds=BOUNDS,
                          levels=LEVELS, bins=4, random_state=0)
        docs.append(json.loads(rel.save(tmp_path / f"{i}.json").read_text()))
    for doc in docs:
        for key in ("released_cells", "noisy_total"):
            doc["report"].pop(key)
        doc["report"]["outside_bounds"].pop("counts")  # noisy (issue 43)
        doc.pop("release")
    assert docs[0] == docs[1]


# ---- refusals ------------------------------------------------------------------------------------


def _doc(path) -> dict:
    raw = path.read_bytes()
    return json.loads(gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw)


def _refused(tmp_path, doc, match, **kwargs):
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(doc))
    with pytest.raises(SavedReleaseError, match=match) as info:
        dpm.load_release(bad, **kwargs)
    assert isinstance(info.value, DPModelsError)


def _edit(doc, edit):
    doc = copy.deepcopy(doc)
    edit(doc)
    return doc


def _histogram_edits(doc):
    rel = doc["release"]
    m = int(np.prod([a["bins"] if a["kind"] == "continuous" else len(a["levels"])
                     for a in doc["domain"]["axes"]]))
    t = doc["report"]["threshold"]
    return {
        "counts one short": (_set(["release", "counts"], rel["counts"][:-1]),
                             "counts has .* entries but release.cell_ids"),
        "negative count": (_set(["release", "counts"], [-3] + rel["counts"][1:]),
                           "below the release's threshold"),
        "fractional count": (_set(["release", "counts"], [rel["counts"][0] + 0.5]
                                  + rel["counts"][1:]), r"counts\[0\] .* not an integer"),
        "bool count": (_set(["release", "counts"], [True] + rel["counts"][1:]),
                       "not an integer"),
        "id outside domain": (_set(["release", "cell_ids"], rel["cell_ids"][:-1] + [m]),
                              "outside the domain's cells"),
        "negative id": (_set(["release", "cell_ids"], [-1] + rel["cell_ids"][1:]),
                        "outside the domain's cells"),
        "ids not increasing": (_set(["release", "cell_ids"], rel["cell_ids"][::-1]),
                               "strictly increasing"),
        "total mismatch": (_set(["report", "noisy_total"], doc["report"]["noisy_total"] + 1),
                           "noisy_total"),
        "domain cells mismatch": (_set(["report", "domain_cells"], m + 1), "domain_cells"),
        "threshold above counts": (_set(["report", "threshold"], t + 1000), "threshold"),
        "bounds reversed": (_set(["domain", "axes", 0, "bounds"], [20.0, -5.0]),
                            r"malformed: bounds\['y'\]"),
        "bounds not a pair": (_set(["domain", "axes", 0, "bounds"], [1.0]),
                              r"malformed: bounds\['y'\]"),
        "bins zero": (_set(["domain", "axes", 0, "bins"], 0), "malformed: bins for 'y'"),
        "bad scale": (_set(["domain", "axes", 0, "scale"], "cube"), "scale of 'y'"),
        "levels duplicated": (_set(["domain", "axes", 2, "levels"], ["lo", "lo", "hi"]),
                              "malformed: levels\\['g'\\] lists a value twice"),
        "levels empty": (_set(["domain", "axes", 2, "levels"], []), "levels\\['g'\\] is empty"),
        "level null": (_set(["domain", "axes", 2, "levels"], ["lo", None, "hi"]),
                       "not a level"),
        "levels not a list": (_set(["domain", "axes", 2, "levels"], "lo,mid,hi"),
                              "levels must be a list"),
        "unknown kind": (_set(["domain", "axes", 2, "kind"], "ordinal"), "kind must be"),
        "variable twice": (lambda d: d["domain"]["axes"].append(d["domain"]["axes"][0]),
                           "declares the variable 'y' twice"),
        "missing counts": (_drop(["release", "counts"]), "no key 'release.counts'"),
        "missing report field": (_drop(["report", "epsilon"]), "no key 'report.epsilon'"),
        "missing domain": (_drop(["domain"]), "no key 'domain'"),
        "missing version": (_drop(["format_version"]), "no key 'format_version'"),
        "wrong format": (_set(["format"], "something-else"), "not a saved dpmodels release"),
        "major version 2": (_set(["format_version"], "2.0"),
                            r"format version 2.0; this dpmodels reads version 1.x"),
        "bad version": (_set(["format_version"], "one"), "MAJOR.MINOR"),
        "unknown type": (_set(["release_type"], "sketch"), "release_type must be"),
        "private and inf": (_set(["report", "epsilon"], "inf"), "private exactly when"),
        "report variables": (_set(["report", "variables"], [["y", "continuous"]]),
                             "report.variables"),
        "report wrong type": (_set(["report", "type"], "MomentsReport"), "report.type"),
        "guarantee epsilon": (_set(["guarantee", "epsilon"], 0.1), "contradicts report.epsilon"),
        "missing guarantee": (_drop(["guarantee"]), "no key 'guarantee'"),
    }


def test_histogram_refusals(releases, tmp_path):
    _, _, paths = releases
    doc = _doc(paths["histogram"])
    dpm.load_release(paths["histogram"])  # the unedited file loads
    for name, (edit, match) in _histogram_edits(doc).items():
        try:
            _refused(tmp_path, _edit(doc, edit), match)
        except BaseException as exc:
            raise AssertionError(f"edit {name!r}: {exc}") from exc


def test_a_newer_minor_version_with_extra_keys_loads(releases, tmp_path):
    _, _, paths = releases
    doc = _doc(paths["histogram"])
    doc["format_version"] = "1.7"
    doc["future_key"] = {"anything": 1}
    path = tmp_path / "minor.json"
    path.write_text(json.dumps(doc))
    assert dpm.load_release(path).report == releases[0]["histogram"].report


def test_not_json_and_nonstandard_numbers_are_refused(releases, tmp_path):
    bad = tmp_path / "x.json"
    bad.write_text("not json at all")
    with pytest.raises(SavedReleaseError, match="not JSON"):
        dpm.load_release(bad)
    text = releases[2]["histogram"].read_text()
    bad.write_text(text.replace('"noisy_total": ', '"noisy_total": NaN, "x": ', 1))
    with pytest.raises(SavedReleaseError, match="non-standard JSON number NaN"):
        dpm.load_release(bad)
    bad.write_text(json.dumps([1, 2]))
    with pytest.raises(SavedReleaseError, match="not a saved dpmodels release"):
        dpm.load_release(bad)


@pytest.mark.parametrize("kind", ["moments", "newton", "quantile-steps"])
def test_formula_release_refusals(releases, tmp_path, kind):
    _, _, paths = releases
    doc = _doc(paths[kind])
    q = len(doc["release"]["design"]["lo"])
    edits = {
        "offsets too long": (_set(["release", "offsets"], doc["release"]["offsets"] + [0.0]),
                             rf"release.offsets must be a list of {q} entries"),
        "scales too short": (_set(["release", "scales"], doc["release"]["scales"][:-1]),
                             rf"release.scales must be a list of {q} entries"),
        "design columns": (_set(["release", "design", "exog_names"], ["a", "b"]),
                           "do not match the design"),
        "design range": (_set(["release", "design", "lo"], [-99.0] * q),
                         "release.design.lo does not match"),
        "formula": (_set(["release", "design", "formula"], "y ~ undefined_fn(x)"),
                    "cannot rebuild the design"),
        "radius": (_set(["release", "radius"], -1.0), "release.radius must be > 0"),
        "text number": (_set(["release", "radius"], "big"), "must be a number"),
        "missing design": (_drop(["release", "design"]), "release.design"),
        "split": (_set(["report", "split"], [["all", 0.5]]), "add up to"),
        "report columns": (_set(["report", "columns"], ["x"]), "report.columns"),
        "zero scale": (_set(["release", "scales"], [0.0] * q), "scales must be positive"),
        "bad bounds": (_set(["domain", "axes", 1, "bounds"], ["a", "b"]), "malformed"),
    }
    if kind == "moments":
        edits["second shape"] = (_set(["release", "second"], doc["release"]["second"][:-1]),
                                 rf"release.second must be a list of {q} entries")
        edits["sums"] = (_set(["release", "sums"], []), "release.sums must be a list")
        edits["noise_var"] = (_set(["release", "noise_var"], [1.0]), "release.noise_var")
        edits["negative variance"] = (_set(["release", "noise_var"], [1.0, -1.0, 1.0]),
                                      "negative or not finite")
        edits["asymmetric"] = (
            lambda d: d["release"]["second"][0].__setitem__(1, d["release"]["second"][0][1] + 1),
            "release.second must be symmetric")
    elif kind == "newton":
        edits["beta"] = (_set(["release", "beta"], doc["release"]["beta"][:-1]),
                         rf"release.beta must be a list of {q + 1} entries")
        edits["information"] = (_set(["release", "information"], [[0.0]]),
                                rf"release.information must be a list of {q + 1}")
        edits["moments mean"] = (_set(["release", "moments", "mean"], [0.0]),
                                 "release.moments.mean")
        edits["step variance"] = (_set(["release", "step_noise"], [[1.0, "nan"]]),
                                  "negative or not finite")
        edits["asymmetric"] = (
            lambda d: d["release"]["information"][0].__setitem__(1, 123.0),
            "release.information must be symmetric")
    else:
        edits["beta rows"] = (_set(["release", "beta"], doc["release"]["beta"][:1]),
                              "release.beta must be a list of 2 entries")
        edits["quantile"] = (_set(["release", "quantiles"], [0.25, 1.5]),
                             "strictly between 0 and 1")
        edits["steps"] = (_set(["release", "steps"], doc["release"]["steps"][:1]),
                          "one list per quantile")
        edits["residual counts"] = (
            _set(["release", "residual_counts"], doc["release"]["residual_counts"][:-1]),
            "residual grid has")
        edits["residual count float"] = (
            _set(["release", "residual_counts"], [0.5] + doc["release"]["residual_counts"][1:]),
            "not an integer")
        edits["edges"] = (_set(["release", "residual_edges"], [0.0, 1.0]),
                          "public residual grid")
        edits["level counts"] = (_set(["release", "level_counts"], [1.0]),
                                 "level_counts has 1 entries")
        edits["bandwidth"] = (_set(["release", "bandwidth"], [0.1, 0.0]),
                              "bandwidth must be positive")
        edits["band variance"] = (_set(["release", "band_prior_var"], [-1.0, 1.0]),
                                  "negative or not finite")
    dpm.load_release(paths[kind])
    for name, (edit, match) in edits.items():
        try:
            _refused(tmp_path, _edit(doc, edit), match)
        except BaseException as exc:
            raise AssertionError(f"edit {name!r}: {exc}") from exc


def test_an_unsaveable_level_is_refused_at_save(tmp_path):
    import datetime

    day = datetime.date(2020, 1, 1)
    df = pd.DataFrame({"d": [day] * 50})
    rel = dpm.release(df, columns=["d"], epsilon=1.0, levels={"d": [day]}, random_state=0)
    with pytest.raises(SavedReleaseError, match="cannot save the level"):
        rel.save(tmp_path / "d.json")
    assert not list(tmp_path.iterdir())  # nothing half-written


@pytest.mark.parametrize("threshold", [None, "zero", 3])
def test_signed_and_other_thresholds_round_trip(tmp_path, threshold):
    """Signed counts (threshold=None) may be negative; a cut keeps counts >= it."""
    df = _frame(500, 9)
    rel = dpm.release(df, columns=["x", "g"], epsilon=0.5, bounds=BOUNDS, levels=LEVELS,
                      bins=20, threshold=threshold, random_state=0)
    back = dpm.load_release(rel.save(tmp_path / "s.json"))
    np.testing.assert_array_equal(back.counts, rel.counts)
    assert back.report == rel.report
    if threshold is None:
        assert rel.counts.min() < 0  # the check below is not vacuous
        doc = _doc(tmp_path / "s.json")
        doc["report"]["threshold"] = 0.0
        _refused(tmp_path, doc, "below the release's threshold")
