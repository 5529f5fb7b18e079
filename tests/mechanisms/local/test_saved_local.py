"""Saved local releases (release_type "local", dpmodels/front/saved.py): a
:class:`~dpmodels.mechanisms.local.LocalRelease` of every channel round-trips exactly
(plain and gzip, also through its histogram), fits on it are bit-identical, the
file holds only the public release (PRIVACY.md rules 5 and 10), and corrupted
files are refused naming the key."""

from __future__ import annotations

import copy
import gzip
import json
import math
import warnings

import numpy as np
import pandas as pd
import pytest

import dpmodels as dpm
from dpmodels.core.errors import DPModelsError
from dpmodels.mechanisms.local import Channel, LocalHistogram, LocalRelease, randomize
from dpmodels.front.saved import FORMAT, FORMAT_VERSION, SavedReleaseError, save_release

from tests.support.saved_edits import _drop, _set  # the file edits of the refusal tests

#: Raw values no bound, level or released number can equal: they must never reach a file.
SENTINEL = 987654.3125
SENTINEL_TEXT = "987654"
SECRET = "SECRET-ROW-7731"

BOUNDS = {"x": (0.0, 10.0), "y": (-5.0, 15.0)}
LEVELS = {"g": ["lo", "mid", "hi"]}
FORMULA = "y ~ x + C(g)"
#: The channels the code has (Channel.name): k-RR, OUE and, at epsilon=inf, identity.
CHANNELS = {"krr": ("krr", 2.0), "oue": ("oue", 1.0), "identity": ("auto", math.inf)}


def _frame(n: int, seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    x = rng.uniform(0, 10, n)
    g = rng.choice(LEVELS["g"], n)
    y = 1 + 0.8 * x + 2.0 * (g == "hi") + rng.normal(0, 1, n)
    df = pd.DataFrame({"y": y, "x": x, "g": g, "memo": "ok"})
    df.loc[3, "y"] = np.nan  # one row in the missing cell (missing="drop")
    df.loc[0, "x"] = SENTINEL  # clipped to the edge bin: never written
    df.loc[1, "y"] = -SENTINEL
    df.loc[2, "memo"] = SECRET  # never released
    return df


def _randomize(df, name, **kw):
    channel, eps = CHANNELS[name]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # NotPrivateWarning at epsilon=inf
        return randomize(df, columns=["y", "x", "g"], epsilon=eps, bounds=BOUNDS, levels=LEVELS,
                         bins=4, channel=channel, random_state=5, **kw)


@pytest.fixture(scope="module")
def local(tmp_path_factory):
    """A local release of each channel, saved (gzip for OUE) and loaded back."""
    df = _frame(4000, 1)
    root = tmp_path_factory.mktemp("saved-local")
    originals, paths, loaded = {}, {}, {}
    for name in CHANNELS:
        rel = _randomize(df, name)
        assert rel.channel.name == name
        originals[name] = rel
        paths[name] = rel.save(root / (f"{name}.json.gz" if name == "oue" else f"{name}.json"))
        loaded[name] = dpm.load_release(paths[name])
    return originals, loaded, paths


def _doc(path) -> dict:
    raw = path.read_bytes()
    return json.loads(gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw)


def _same_release(a: LocalRelease, b: LocalRelease) -> None:
    assert type(b) is LocalRelease
    assert b.domain == a.domain and b.channel == a.channel and b.report == a.report
    assert b.report_counts.dtype == np.int64
    np.testing.assert_array_equal(b.report_counts, a.report_counts)
    np.testing.assert_array_equal(b.estimate, a.estimate)
    np.testing.assert_array_equal(b.projected, a.projected)
    assert isinstance(b.histogram, LocalHistogram) and b.histogram.local is b
    np.testing.assert_array_equal(b.histogram.cell_ids, a.histogram.cell_ids)
    np.testing.assert_array_equal(b.histogram.counts, a.histogram.counts)
    pd.testing.assert_frame_equal(b.cells, a.cells)


# ---- round trips ---------------------------------------------------------------------------------


@pytest.mark.parametrize("name", list(CHANNELS))
def test_local_release_round_trips(local, name):
    originals, loaded, paths = local
    _same_release(originals[name], loaded[name])
    assert loaded[name].reports is None  # no row's report is written
    doc = _doc(paths[name])
    assert doc["format"] == FORMAT and doc["format_version"] == FORMAT_VERSION == "1.0"
    assert doc["release_type"] == "local" and doc["report"]["type"] == "LocalReport"
    assert set(doc["release"]) == {"channel", "report_counts"}
    ch = originals[name].channel
    assert doc["release"]["channel"] == {
        "name": name, "k": ch.k, "epsilon": "inf" if name == "identity" else ch.epsilon,
        "p": ch.p, "q": ch.q}
    assert len(doc["release"]["report_counts"]) == ch.k == 4 * 4 * 3 + 1  # + the missing cell
    assert doc["guarantee"]["epsilon"] == doc["report"]["epsilon"]
    assert ("local" in doc["guarantee"]["definition"]) == (name != "identity")


def test_gzip_round_trip(local):
    _, _, paths = local
    assert paths["oue"].read_bytes()[:2] == b"\x1f\x8b"  # .gz is compressed
    assert not [p for p in paths["oue"].parent.iterdir() if p.name.startswith(".")]  # no temp


@pytest.mark.parametrize("name", ["krr", "oue"])
def test_the_histogram_saves_its_local_release(local, tmp_path, name):
    originals, _, paths = local
    rel = originals[name]
    path = rel.histogram.save(tmp_path / "h.json.gz")
    assert path.read_bytes()[:2] == b"\x1f\x8b"
    assert _doc(path) == _doc(paths[name])  # the same document as the release's own save
    _same_release(rel, dpm.load_release(path))


def test_missing_raise_round_trips(tmp_path):
    df = _frame(2000, 2).dropna()
    rel = _randomize(df, "krr", missing="raise")
    assert rel.channel.k == 4 * 4 * 3
    _same_release(rel, dpm.load_release(rel.save(tmp_path / "r.json")))


def test_a_histogram_without_its_local_release_is_refused(local, tmp_path):
    hist = local[0]["krr"].histogram
    bare = LocalHistogram(hist.domain, hist.cell_ids, hist.counts, hist.report)
    with pytest.raises(DPModelsError, match="no local release"):
        bare.save(tmp_path / "bare.json")
    with pytest.raises(SavedReleaseError, match="no local release"):
        save_release(bare, tmp_path / "bare.json")
    assert not (tmp_path / "bare.json").exists()


@pytest.mark.parametrize("name", list(CHANNELS))
def test_fits_on_a_loaded_local_release_are_bit_identical(local, name):
    originals, loaded, _ = local
    fit = dict(n_boot=30, random_state=7)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        a = dpm.dp_ols(FORMULA, originals[name]).fit(**fit)
        b = dpm.dp_ols(FORMULA, loaded[name]).fit(**fit)
        c = dpm.dp_ols(FORMULA, loaded[name].histogram).fit(**fit)
    for res in (b, c):
        np.testing.assert_array_equal(np.asarray(res.params), np.asarray(a.params))
        np.testing.assert_array_equal(np.asarray(res.bse), np.asarray(a.bse))
        assert res.privacy == a.privacy
        assert res.model.data.param_names == a.model.data.param_names
    assert dpm.dp_ols(FORMULA, loaded[name]).budget_spent == 0.0


def test_a_logit_on_a_loaded_local_release_is_bit_identical(tmp_path):
    df = _frame(3000, 3)
    df["b"] = (df["y"] > 5).astype(int)
    rel = randomize(df, columns=["b", "x", "g"], epsilon=2.0, bounds=BOUNDS,
                    levels={**LEVELS, "b": [0, 1]}, bins=4, random_state=9)
    back = dpm.load_release(rel.save(tmp_path / "b.json"))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        a, b = (dpm.dp_logit("b ~ x + C(g)", r).fit(n_boot=20, random_state=1) for r in (rel, back))
    np.testing.assert_array_equal(np.asarray(a.params), np.asarray(b.params))
    np.testing.assert_array_equal(np.asarray(a.bse), np.asarray(b.bse))


# ---- only what is public -------------------------------------------------------------------------


def test_saved_local_files_hold_no_raw_value(local):
    _, _, paths = local
    for name, path in paths.items():
        text = json.dumps(_doc(path))
        assert SENTINEL_TEXT not in text, name
        assert SECRET not in text and "memo" not in text and '"ok"' not in text, name


def test_the_sentinel_check_can_fail(tmp_path):
    """The canary is visible when it is public: declared as a bound it is written."""
    rel = randomize(_frame(500, 4), columns=["x"], epsilon=1.0, bounds={"x": (0.0, SENTINEL)},
                    bins=4, random_state=0)
    assert SENTINEL_TEXT in rel.save(tmp_path / "x.json").read_text()


def test_neighbouring_data_sets_write_the_same_metadata(tmp_path):
    """Rule 5: with the same seed, neighbours (one row replaced by an extreme
    one) write identical files but for the released report counts and the
    noisy total computed from them."""
    a = _frame(2000, 6)
    b = a.copy()
    b.loc[10, ["x", "y", "g"]] = [-SENTINEL, SENTINEL, "hi"]
    docs = []
    for i, df in enumerate((a, b)):
        docs.append(_doc(_randomize(df, "krr").save(tmp_path / f"{i}.json")))
    for doc in docs:  # (the one row's report may or may not change them)
        doc["release"].pop("report_counts")
        doc["report"].pop("noisy_total")
    assert docs[0] == docs[1]


# ---- refusals ------------------------------------------------------------------------------------


def _edits(doc) -> dict:
    body, rep = doc["release"], doc["report"]
    counts, ch = body["report_counts"], body["channel"]
    n = rep["n"]
    edits = {
        "no report_counts": (_drop(["release", "report_counts"]),
                             "no key 'release.report_counts'"),
        "no channel": (_drop(["release", "channel"]), "no key 'release.channel'"),
        "no channel k": (_drop(["release", "channel", "k"]), "no key 'release.channel.k'"),
        "no report p": (_drop(["report", "p"]), "no key 'report.p'"),
        "counts one short": (_set(["release", "report_counts"], counts[:-1]),
                             "release.report_counts has .* entries; the channel has k"),
        "counts one long": (_set(["release", "report_counts"], counts + [0]),
                            "release.report_counts has .* entries"),
        "a float count": (_set(["release", "report_counts"], [counts[0] + 0.5] + counts[1:]),
                          r"release.report_counts\[0\] = .* is not an integer"),
        "a bool count": (_set(["release", "report_counts"], [True] + counts[1:]),
                         r"release.report_counts\[0\] = True is not an integer"),
        "counts not a list": (_set(["release", "report_counts"], {"0": 1}),
                              "release.report_counts must be a list"),
        "a negative count": (_set(["release", "report_counts"], [-1] + counts[1:]),
                             "release.report_counts holds -1"),
        "a count above n": (_set(["release", "report_counts"], [n + 1] + counts[1:]),
                            f"release.report_counts holds {n + 1}, outside"),
        "unknown channel": (_set(["release", "channel", "name"], "olh"),
                            "release.channel.name must be one of .* got 'olh'"),
        "channel k": (_set(["release", "channel", "k"], ch["k"] + 1),
                      "release.channel.k is .* but the channel has k"),
        "channel p": (_set(["release", "channel", "p"], 0.25), "release.channel.p is 0.25"),
        "report q": (_set(["report", "q"], 0.125), "report.q is 0.125"),
        "report k": (_set(["report", "k"], rep["k"] - 1), "report.k is"),
        "report channel": (_set(["report", "channel"], "oue" if ch["name"] != "oue" else "krr"),
                           "report.channel is"),
        "report missing": (_set(["report", "missing"], "keep"), "report.missing must be"),
        "missing raise with the missing cell": (_set(["report", "missing"], "raise"),
                                                "report.k is .* but the channel has k"),
        "domain cells": (_set(["report", "domain_cells"], rep["domain_cells"] + 1),
                         "report.domain_cells is"),
        "noisy total": (_set(["report", "noisy_total"], rep["noisy_total"] - 1),
                        "report.noisy_total is .* but the saved report counts give"),
        "report n": (_set(["report", "n"], n + 7),
                     "report.noisy_total is" if ch["name"] == "oue"
                     else "release.report_counts add up to .* not report.n"),
        "channel epsilon vs report": (_set(["release", "channel", "epsilon"], 0.5),
                                      "release.channel.epsilon is 0.5"),
        "report epsilon": (_set(["report", "epsilon"], 0.5), "epsilon"),
        "report type": (_set(["report", "type"], "PrivacyReport"),
                        "report.type is 'PrivacyReport'; this release type carries a LocalReport"),
        "variables": (_set(["report", "variables"], rep["variables"][:-1]),
                      "report.variables does not describe the saved domain"),
        "a domain axis lost": (_set(["domain", "axes"], doc["domain"]["axes"][:-1]),
                               "report.domain_cells is"),
    }
    if ch["name"] != "oue":
        edits["counts not adding up to n"] = (
            _set(["release", "report_counts"], [counts[0] + 1] + counts[1:]),
            "release.report_counts add up to .* not report.n")
    return edits


@pytest.mark.parametrize("name", list(CHANNELS))
def test_corrupted_local_files_are_refused(local, tmp_path, name):
    _, _, paths = local
    doc = _doc(paths[name])
    dpm.load_release(paths[name])  # the unedited file loads
    bad = tmp_path / "bad.json"
    for label, (edit, match) in _edits(doc).items():
        edited = copy.deepcopy(doc)
        edit(edited)
        bad.write_text(json.dumps(edited))
        try:
            with pytest.raises(SavedReleaseError, match=match) as info:
                dpm.load_release(bad)
        except BaseException as exc:
            raise AssertionError(f"edit {label!r}: {exc}") from exc
        assert isinstance(info.value, DPModelsError), label


def test_identity_channel_needs_an_infinite_epsilon(local, tmp_path):
    _, _, paths = local
    doc = _doc(paths["krr"])
    doc["release"]["channel"]["name"] = "identity"
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(doc))
    with pytest.raises(SavedReleaseError, match="the identity channel has epsilon = inf"):
        dpm.load_release(bad)


def test_old_files_still_load_and_a_newer_minor_version_too(local, tmp_path):
    """The format stays 1.x: a histogram file of 1.0 loads as before, and a
    local file stamped with a newer minor version (extra keys) loads too."""
    originals, _, paths = local
    central = dpm.release(_frame(1000, 8), columns=["x", "g"], epsilon=1.0, bounds=BOUNDS,
                          levels=LEVELS, bins=4, random_state=0)
    doc = json.loads(central.save(tmp_path / "c.json").read_text())
    assert doc["format_version"] == "1.0"
    assert dpm.load_release(tmp_path / "c.json").report == central.report
    doc = _doc(paths["krr"])
    doc["format_version"] = "1.9"
    doc["release"]["future_key"] = [1, 2]
    path = tmp_path / "minor.json"
    path.write_text(json.dumps(doc))
    _same_release(originals["krr"], dpm.load_release(path))


def test_channel_choose_names_are_all_readable():
    """Every channel Channel.choose can make is one the reader knows."""
    from dpmodels.mechanisms.local.codec import CHANNELS as _LOCAL_CHANNELS

    made = {Channel.choose(4, 1.0).name, Channel.choose(400, 1.0).name,
            Channel.choose(4, math.inf).name, Channel.choose(4, 1.0, "oue").name}
    assert made == set(_LOCAL_CHANNELS)
