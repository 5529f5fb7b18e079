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
