"""A multinomial logit on statsmodels' anes96 that separates at small epsilon, and
the checks that every infinite interval is named by a warning (tests/models/
test_separation_names.py, tests/inference/test_unmeasured_everywhere.py)."""

from __future__ import annotations

import re
import warnings

import numpy as np
import pandas as pd
import pytest

from dpmodels.core.errors import ReleaseWarning

MN_FORMULA = "party ~ selfLR + np.log1p(popul) + age + income"
MN_BOUNDS = {"selfLR": (1.0, 7.0), "age": (18.0, 99.0), "popul": (0.0, 8000.0),
             "income": (1.0, 24.0)}
MN_LEVELS = {"party": [0, 1, 2]}
UNMEASURED = "the bootstrap could not measure the error of"

_NAME_CHARS = r"A-Za-z0-9_.:(\[\]"


def names_in(text: str, name: str) -> bool:
    """``name`` in ``text`` as a whole name (as benchmarks/real_validity.py matches)."""
    pat = (rf"(?<![{_NAME_CHARS}]){re.escape(name)}"
           r"(?![A-Za-z0-9_(\[\]])(?![.:][A-Za-z0-9_(])")
    return re.search(pat, text) is not None


@pytest.fixture(scope="module")
def anes96():
    from statsmodels.datasets import anes96 as data

    d = data.load_pandas().data
    out = d[["popul", "selfLR", "age", "income"]].astype(float)
    pid = d["PID"].astype(np.int64)
    out["party"] = np.where(pid <= 2, 0, np.where(pid == 3, 1, 2)).astype(np.int64)
    return out


def _resample(df: pd.DataFrame, seed: int) -> pd.DataFrame:
    idx = np.random.default_rng(seed).integers(0, len(df), len(df))
    return df.iloc[idx].reset_index(drop=True)


#: At n = 944 and epsilon 0.3 every continuous variable of the case gets 2 bins, whose
#: coefficients the binning check now flags as unmeasured (binning.coarse_columns); the
#: multinomial tests here are about separation, so they switch that check off.
NO_BINNING = {"cov_kwds": {"binning_check": False}}


def _fit(fn, *args, fit_seed: int, fit_kw=None, **kwargs):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        res = fn(*args, **kwargs).fit(random_state=fit_seed, **(fit_kw or {}))
    return res, [w for w in caught if issubclass(w.category, ReleaseWarning)]


def _mn_flat(res):
    """(names as the warnings write them, interval widths, SEs), equation by equation."""
    endog, ymap = res.model.endog_names, res.model._ynames_map
    names = [f"{x} ({endog}={ymap[j]})" for j in range(1, int(res.model.J))
             for x in res.model.exog_names]
    ci = np.asarray(res.conf_int(), float).reshape(-1, 2)
    return names, ci[:, 1] - ci[:, 0], np.asarray(res.bse, float).T.ravel()


def _logit_flat(res):
    ci = np.asarray(res.conf_int(), float)
    return list(res.model.exog_names), ci[:, 1] - ci[:, 0], np.asarray(res.bse, float)


def _check_every_infinite_interval_is_named(names, width, se, caught):
    text = "\n".join(str(w.message) for w in caught)
    infinite = ~np.isfinite(width) | ~np.isfinite(se)
    assert infinite.any(), "the case should produce infinite intervals"
    unnamed = [nm for nm, inf in zip(names, infinite) if inf and not names_in(text, nm)]
    assert not unnamed, f"infinite intervals not named by any warning: {unnamed}\n{text}"
    # the new warning names only coefficients whose interval is infinite
    lost = [str(w.message) for w in caught if str(w.message).startswith(UNMEASURED)]
    assert len(lost) == 1, "one warning names the unmeasured coefficients"
    # the list of names, before the reason ("(the released cells ..." or "(k of B ...")
    head = re.match(re.escape(UNMEASURED) + r" (.*?) \((?:the |\d+ of )", lost[0]).group(1)
    named = [nm for nm in names if names_in(head, nm)]
    assert named and all(infinite[names.index(nm)] for nm in named)
    return lost[0]
