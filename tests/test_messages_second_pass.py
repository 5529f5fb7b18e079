"""Issue 29, "Messages": errors a user meets in the first minutes say what to
do.  Each case printed something less useful before (quoted per test)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import dpmodels as dpm
from dpmodels.errors import DPModelsError, UndeclaredLevelError, UnknownVariableError


@pytest.fixture(scope="module")
def frame():
    rng = np.random.default_rng(0)
    df = pd.DataFrame({"x": rng.uniform(0.1, 10, 500), "g": rng.integers(1, 6, 500).astype(float)})
    df["y"] = df.x + rng.normal(0, 1, 500)
    return df


BOUNDS = {"x": (0.1, 10.0), "y": (-5.0, 15.0)}


def test_a_misspelt_argument_gets_did_you_mean(frame):
    # before: "dp_ols takes no option epsilion here (its options are missing, ...)"
    with pytest.raises(DPModelsError, match=r"epsilion.*did you mean 'epsilon'\?"):
        dpm.dp_ols("y ~ x", frame, epsilion=1.0, bounds=BOUNDS)
    with pytest.raises(DPModelsError, match=r"did you mean 'random_state'"):
        dpm.dp_logit("y ~ x", frame, epsilon=1.0, bounds=BOUNDS, random_sate=0)


def test_a_missing_numpy_import_is_named_as_such(frame):
    # before: "the formula uses 'np', which is not a column of the data (columns: ...)"
    namespace = {"dpm": dpm, "df": frame, "B": BOUNDS}  # a module without `import numpy`
    with pytest.raises(UnknownVariableError, match=r"add `import numpy as np`"):
        exec('dpm.dp_ols("y ~ np.log(x)", df, epsilon=1.0, bounds=B)', namespace)


def test_a_misspelt_column_gets_did_you_mean(frame):
    with pytest.raises(UnknownVariableError, match=r"'xx'.*did you mean 'x'\?"):
        dpm.dp_ols("y ~ xx", frame, epsilon=1.0, bounds=BOUNDS)


def test_undeclared_levels_are_shown_as_written_once_each(frame):
    # before: "(e.g. np.float64(4.0), np.float64(5.0))" or "(e.g. 5.0, 5.0, 5.0)"
    with pytest.raises(UndeclaredLevelError) as err:
        dpm.dp_ols("y ~ C(g)", frame, epsilon=1.0, bounds=BOUNDS, levels={"g": [1.0, 2.0, 3.0]})
    msg = str(err.value)
    assert "np.float64" not in msg
    shown = msg.split("(e.g. ", 1)[1].split(")", 1)[0].split(", ")
    assert len(shown) == len(set(shown)) and set(shown) <= {"4.0", "5.0"}


def test_a_transform_undefined_on_the_domain_is_refused_before_the_release():
    """np.log(popul + 0.1) of an Unbounded variable: its cells reach below -0.1.
    Before: statsmodels dropped those cells from the fit silently, then the
    bootstrap raised patsy's bare "factor contains missing values" after the
    budget was spent.  Now a DPModelsError names the term, before any charge."""
    from dpmodels.errors import DPModelsError

    rng = np.random.default_rng(1)
    df = pd.DataFrame({"popul": rng.lognormal(3, 1, 2000), "x": rng.uniform(0, 10, 2000)})
    df["y"] = df.x + rng.normal(0, 1, 2000)
    acct = dpm.Accountant(5.0)
    with pytest.raises(DPModelsError, match=r"np\.log\(popul \+ 0\.1\) is undefined"):
        dpm.dp_ols("y ~ np.log(popul + 0.1) + x", df, epsilon=1.0, accountant=acct,
                   bounds={"popul": dpm.Unbounded(50, 50), "y": (-5, 15), "x": (0, 10)})
    assert acct.spent == 0
    # a log whose argument is defined on the whole declared domain is served as before
    res = dpm.dp_ols("y ~ np.log(popul + 0.1) + x", df, epsilon=1.0, random_state=0,
                     bounds={"popul": (0, 500), "y": (-5, 15), "x": (0, 10)}).fit(n_boot=50)
    assert np.all(np.isfinite(np.asarray(res.params)))
