"""Bad input is refused with a clear error naming the variable, before any
noise is drawn (the generator's state is unchanged), and nothing in the
caller's data is modified."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import dpmodels as dpm

from tests.conftest import MIXED_BOUNDS, MIXED_LEVELS

INF = float("inf")


def _refused(exc, match, formula, data, **kw):
    rng = np.random.default_rng(123)
    state = rng.bit_generator.state
    before = data.copy(deep=True)
    with pytest.raises(exc, match=match):
        dpm.dp_ols(formula, data, random_state=rng, **kw)
    assert rng.bit_generator.state == state, "noise was drawn before the error"
    pd.testing.assert_frame_equal(data, before)


BASE = dict(epsilon=1.0, bounds=MIXED_BOUNDS, levels=MIXED_LEVELS)


@pytest.mark.parametrize(
    "exc, match, formula, kw",
    [
        (dpm.DomainError, r"'x' has no bounds", "y ~ x + C(g)", dict(BASE, bounds={"y": (-5, 20)})),
        (dpm.DomainError, r"'y' has no bounds", "y ~ x", dict(BASE, bounds={"x": (0, 10)})),
        (dpm.DomainError, r"C\(x\).*levels", "y ~ C(x)", BASE),
        (dpm.DomainError, r"'g' is not numeric", "y ~ g", dict(BASE, levels={})),
        (dpm.DomainError, r"bounds\['x'\]", "y ~ x", dict(BASE, bounds={"y": (0, 1), "x": (3, 1)})),
        (dpm.DomainError, r"levels\['g'\] is empty", "y ~ C(g)", dict(BASE, levels={"g": []})),
        (dpm.DomainError, r"both bounds and levels", "y ~ x", dict(BASE, levels={"x": [1, 2]})),
        (dpm.DomainError, r"bins for 'x'", "y ~ x", dict(BASE, bins={"x": 0})),
        (dpm.UndeclaredLevelError, r"'g'.*'hi'", "y ~ C(g)", dict(BASE, levels={"g": ["lo", "mid"]})),
        (dpm.UnknownVariableError, r"'z'.*not a column", "y ~ x + z", BASE),
        (dpm.UnknownVariableError, r"'zz'", "y ~ Q('zz')", BASE),
        (ValueError, r"epsilon must be > 0", "y ~ x", dict(BASE, epsilon=0.0)),
        (ValueError, r"epsilon must be > 0", "y ~ x", dict(BASE, epsilon=-1.0)),
        (ValueError, r"epsilon must be > 0", "y ~ x", dict(BASE, epsilon=float("nan"))),
        (ValueError, r"epsilon is required", "y ~ x", dict(BASE, epsilon=None)),
        (ValueError, r"threshold must be", "y ~ x", dict(BASE, threshold="big")),
        (ValueError, r"positive int", "y ~ x", dict(BASE, n=0)),
    ],
)
def test_bad_input_is_refused_before_noise(mixed_frame, exc, match, formula, kw):
    _refused(exc, match, formula, mixed_frame, **kw)


def test_error_classes_are_value_errors():
    for cls in (dpm.DomainError, dpm.UnknownVariableError, dpm.UndeclaredLevelError,
                dpm.MissingValueError, dpm.DomainTooLargeError, dpm.BudgetExceededError):
        assert issubclass(cls, ValueError)


def test_undeclared_level_found_in_a_late_chunk_still_raises_before_noise(monkeypatch):
    import dpmodels.data.counting as hist

    monkeypatch.setattr(hist, "CHUNK_ROWS", 100)
    df = pd.DataFrame({"y": np.zeros(1000), "g": ["a"] * 999 + ["b"]})
    _refused(dpm.UndeclaredLevelError, "'g'", "y ~ C(g)", df, epsilon=1.0,
             bounds={"y": (-1, 1)}, levels={"g": ["a"]})


def test_accountant_refuses_before_reading(mixed_frame):
    acct = dpm.Accountant(1.0)
    acct.spend(0.8, "earlier")
    _refused(dpm.BudgetExceededError, "accountant", "y ~ x", mixed_frame,
             accountant=acct, **BASE)
    assert acct.spent == pytest.approx(0.8) and len(acct.ledger) == 1
    text = str(acct)
    assert "0.8" in text and "earlier" in text
    # an error during counting charges nothing either
    bad = dict(BASE, levels={"g": ["lo"]}, epsilon=0.1)
    with pytest.raises(dpm.UndeclaredLevelError):
        dpm.dp_ols("y ~ C(g)", mixed_frame, accountant=acct, **bad)
    assert acct.spent == pytest.approx(0.8)
    with pytest.raises(dpm.BudgetExceededError):
        dpm.release(mixed_frame, columns=["y"], epsilon=INF, bounds=MIXED_BOUNDS, accountant=acct)


def test_accountant_sequential_composition(mixed_frame):
    # (exact sums, issue 43 audit item 8: eight spends of 0.125 fill 1.0; ten of the
    # float 0.1, each a little above 1/10, would not)
    acct = dpm.Accountant(1.0)
    for _ in range(8):
        dpm.release(mixed_frame, columns=["x"], epsilon=0.125, bounds=MIXED_BOUNDS, bins=4,
                    accountant=acct, random_state=0)
    assert acct.spent == 1.0
    assert acct.remaining == 0.0
    with pytest.raises(dpm.BudgetExceededError):
        acct.spend(0.01)
    with pytest.raises(ValueError):
        dpm.Accountant(0)


def test_domain_too_large_for_cell_ids():
    df = pd.DataFrame({f"x{i}": np.zeros(10) for i in range(5)})
    with pytest.raises(dpm.DomainTooLargeError, match="64-bit"):
        dpm.release(df, columns=list(df.columns), epsilon=1.0,
                    bounds={c: (0, 1) for c in df.columns}, bins=10_000)


def test_secure_entropy_by_default_and_seeded_flag(mixed_frame):
    a = dpm.release(mixed_frame, columns=["x"], epsilon=1.0, bounds=MIXED_BOUNDS, bins=4)
    b = dpm.release(mixed_frame, columns=["x"], epsilon=1.0, bounds=MIXED_BOUNDS, bins=4,
                    random_state=5)
    assert a.report.seeded is False and "secure entropy" in str(a.report)
    assert b.report.seeded is True and "seeded" in str(b.report)
