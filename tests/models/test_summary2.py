"""summary2() of every dp_* model: statsmodels' summary2 layout with the same
privacy block, notes and residual diagnostics as summary()."""

from __future__ import annotations

import re
import warnings

import numpy as np
import pandas as pd
import pytest

import dpmodels as dpm

N = 4000
BOUNDS = {"x": (0, 10), "z": (0, 1), "w": (0, 1), "v": (0, 1), "y": (-10, 20)}
LEVELS = {"g": ["a", "b", "c"], "b": [0, 1]}


@pytest.fixture(scope="module")
def frame():
    rng = np.random.default_rng(3)
    df = pd.DataFrame({"x": rng.uniform(0, 10, N), "z": rng.uniform(0, 1, N),
                       "w": rng.uniform(0, 1, N), "v": rng.uniform(0, 1, N),
                       "g": rng.choice(["a", "b", "c"], N)})
    df["y"] = 1 + 0.5 * df["x"] + rng.normal(size=N)
    df["b"] = (df["y"] > 3.5).astype(int)
    return df


CASES = [
    (dpm.dp_ols, "y ~ x + C(g)", dict(method="histogram")),
    (dpm.dp_ols, "y ~ x + z + w + v", dict(method="moments")),
    (dpm.dp_logit, "b ~ x + z + w + v", {}),
    (dpm.dp_quantreg, "y ~ x + z + w + v", dict(method="newton")),
    (dpm.dp_quantreg, "y ~ x + C(g)", dict(method="histogram")),
    (dpm.dp_mnlogit, "g ~ x", {}),
]


def _notes1(text: str) -> list[str]:
    """summary()'s notes: one line each after the last rule."""
    body = re.split(r"\n=+\n", text)[-1]
    return [" ".join(n.split()) for n in body.splitlines() if n.strip()]


def _notes2(text: str) -> list[str]:
    """summary2()'s notes: numbered after "Notes:", wrapped."""
    body = text.split("Notes:", 1)[1]
    body = re.sub(r"-\n", "-", body)  # statsmodels' wrap breaks after hyphens
    return [" ".join(n.split()) for n in re.split(r"\n?\[\d+\] ", body)[1:]]


def _model(fn, formula, frame, kw):
    """The case's model on the test frame, epsilon 1, seeded; release warnings silenced."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn(formula, frame, epsilon=1.0, bounds=BOUNDS, levels=LEVELS, random_state=0, **kw)


each_case = pytest.mark.parametrize("fn, formula, kw", CASES,
                                    ids=[f"{c[0].__name__}:{c[1]}" for c in CASES])


@each_case
def test_summary2_carries_the_privacy_block_and_the_notes_of_summary(frame, fn, formula, kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = _model(fn, formula, frame, kw).fit(random_state=0)
        s1, s2 = res.summary().as_text(), str(res.summary2())
    assert "Differential privacy" in s2
    flat = " ".join(s2.split())  # long values wrap onto continuation lines
    for label, value in res.privacy.rows():
        assert f"{label.strip()} {' '.join(value.split())}" in flat
    assert _notes2(s2) == _notes1(s1) and len(_notes1(s1)) >= 2
    # the coefficient table reads the dp estimates and standard errors
    params = np.asarray(res.params, float).ravel(order="F")
    bse = np.asarray(res.bse, float).ravel(order="F")
    for p, s in zip(params, bse):
        if np.isfinite(s):
            assert f"{p:.4f}" in s2 and f"{s:.4f}" in s2


def test_ols_summary2_diagnostics_agree_with_summary(frame):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        hist = dpm.dp_ols("y ~ x + C(g)", frame, epsilon=1.0, bounds=BOUNDS, levels=LEVELS,
                          method="histogram", random_state=0).fit(random_state=0)
        mom = dpm.dp_ols("y ~ x + z + w + v", frame, epsilon=1.0, bounds=BOUNDS,
                         method="moments", random_state=0).fit(random_state=0)

    def value(text, label):
        m = re.search(re.escape(label) + r"\s+(\S+)", text)
        return m.group(1)

    s1, s2 = hist.summary().as_text(), str(hist.summary2())
    for label in ("Omnibus:", "Skew:", "Kurtosis:", "Jarque-Bera (JB):"):
        # the cells' normality tests would ignore the privacy noise (tests/contracts/test_results_contract.py)
        assert value(s1, label) == value(s2, label) == "n/a"
    assert "Durbin-Watson" not in s2  # cells have no order, as in summary()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        exact = dpm.dp_ols("y ~ x + C(g)", frame, epsilon=np.inf, bounds=BOUNDS, levels=LEVELS,
                           method="histogram").fit()
    s1, s2 = exact.summary().as_text(), str(exact.summary2())
    for label in ("Omnibus:", "Skew:", "Kurtosis:", "Jarque-Bera (JB):"):
        assert float(value(s2, label)) == pytest.approx(float(value(s1, label)), abs=2e-3)
    m2 = str(mom.summary2())
    for label in ("Omnibus:", "Skew:", "Jarque-Bera (JB):"):
        assert value(m2, label) == "n/a"  # moments release no residuals


@each_case
def test_print_release_is_its_description_and_privacy_report(frame, fn, formula, kw):
    release = _model(fn, formula, frame, kw).release
    lines = str(release).splitlines()
    assert lines[0] == repr(release)
    assert lines[1] == "Privacy report"
    assert "\n".join(lines[1:]) == str(release.privacy if hasattr(release, "privacy")
                                       else release.report)
    assert any(ln.startswith("Mechanism:") for ln in lines)
