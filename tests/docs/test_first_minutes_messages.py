"""Errors a user meets in the first minutes say what to do.  Each case printed something
less useful before (quoted per test)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import dpmodels as dpm
from dpmodels.core.errors import DPModelsError, UndeclaredLevelError, UnknownVariableError


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



@pytest.mark.parametrize("bad, good", [("moment", "moments"),
                                       ("sample_aggregate", "sample-aggregate"),
                                       ("histogramm", "histogram")])
def test_a_misspelt_method_gets_did_you_mean_before_any_spend(frame, bad, good):
    acct = dpm.Accountant(5.0)
    with pytest.raises(DPModelsError, match=rf"got {bad!r} \(did you mean {good!r}\?\)"):
        dpm.dp_ols("y ~ x", frame, epsilon=1.0, bounds=BOUNDS, method=bad, accountant=acct)
    assert acct.spent == 0


def test_a_method_far_from_every_choice_gets_the_list_only(frame):
    with pytest.raises(DPModelsError, match=r"must be one of \[.*\], got 'ridge'$"):
        dpm.dp_ols("y ~ x", frame, epsilon=1.0, bounds=BOUNDS, method="ridge")

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
    from dpmodels.core.errors import DPModelsError

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


# ---- "did you mean" for a misspelt keyword at every public entry point -------------------

_LEVELS = {"g": [1.0, 2.0, 3.0, 4.0, 5.0], "yb": [0, 1]}


@pytest.fixture(scope="module")
def choice_frame(frame):
    out = frame.copy()
    out["yb"] = (out.y > out.y.median()).astype(int)
    return out


#: (entry point, call with one misspelt keyword, the keyword, its correction): the
#: spend is charged to ``acct``, which must stay at 0.
ENTRY_POINTS = [
    ("release", lambda df, acct: dpm.release(
        df, formula="y ~ x", epsilion=1.0, bounds=BOUNDS, accountant=acct),
     "epsilion", "epsilon"),
    ("release_moments", lambda df, acct: dpm.release_moments(
        df, formula="y ~ x", epsilon=1.0, bound=BOUNDS, accountant=acct), "bound", "bounds"),
    ("release_newton", lambda df, acct: dpm.release_newton(
        df, formula="yb ~ x", epsilon=1.0, bounds=BOUNDS, levles=_LEVELS, accountant=acct),
     "levles", "levels"),
    ("release_sample_aggregate", lambda df, acct: dpm.release_sample_aggregate(
        df, family="ols", formula="y ~ x", epsilon=1.0, bounds=BOUNDS, accountant=acct,
        blokcs=5), "blokcs", "blocks"),
    ("select_features", lambda df, acct: dpm.select_features(
        df, "yb", ["x", "g"], epsilon=1.0, bounds=BOUNDS, levels=_LEVELS, accountant=acct,
        randomstate=0), "randomstate", "random_state"),
    ("smoothed_sample", lambda df, acct: dpm.smoothed_sample(
        df, columns=["x", "y"], epsilon=1.0, size=100, bounds=BOUNDS, accountant=acct,
        bnis=5), "bnis", "bins"),
    ("plan", lambda df, acct: dpm.plan("y ~ x", n=500, epsilon=1.0, bounds=BOUNDS, rep=2),
     "rep", "reps"),
    ("local.randomize", lambda df, acct: dpm.local.randomize(
        df, columns=["x"], epsilon=1.0, bounds=BOUNDS, accountant=acct, randomstate=0),
     "randomstate", "random_state"),
    ("dp_mnlogit", lambda df, acct: dpm.dp_mnlogit(
        "yb ~ x", df, epsilon=1.0, bounds=BOUNDS, levels=_LEVELS, accountant=acct,
        treshold=3), "treshold", "threshold"),
    ("dp_quantreg", lambda df, acct: dpm.dp_quantreg(
        "y ~ x", df, epsilon=1.0, bounds=BOUNDS, accountant=acct, random_stat=0),
     "random_stat", "random_state"),
]


@pytest.mark.parametrize("call, bad, good", [e[1:] for e in ENTRY_POINTS],
                         ids=[e[0] for e in ENTRY_POINTS])
def test_every_entry_point_names_a_misspelt_keyword_and_its_correction(
        choice_frame, call, bad, good):
    # before (all but the dp_* functions): "release() got an unexpected keyword
    # argument 'epsilion'", without the correction
    acct = dpm.Accountant(5.0)
    with pytest.raises(DPModelsError) as err:
        call(choice_frame, acct)
    assert bad in str(err.value) and f"did you mean {good!r}?" in str(err.value)
    assert acct.spent == 0  # refused before anything was spent


#: (model, fit keyword misspelt, its correction): the results' fit of every route.
FITS = [
    (lambda df: dpm.dp_ols("y ~ x", df, epsilon=1.0, bounds=BOUNDS, method="histogram",
                           random_state=0), "n_boots", "n_boot"),
    (lambda df: dpm.dp_ols("y ~ x", df, epsilon=1.0, bounds=BOUNDS, method="moments",
                           random_state=0), "randomstate", "random_state"),
    (lambda df: dpm.dp_logit("yb ~ x", df, epsilon=1.0, bounds=BOUNDS, levels=_LEVELS,
                             method="histogram", random_state=0), "n_boots", "n_boot"),
    (lambda df: dpm.dp_logit("yb ~ x", df, epsilon=1.0, bounds=BOUNDS, levels=_LEVELS,
                             method="newton", random_state=0), "covtype", "cov_type"),
    (lambda df: dpm.dp_quantreg("y ~ x", df, epsilon=1.0, bounds=BOUNDS, method="histogram",
                                random_state=0), "randomstate", "random_state"),
    (lambda df: dpm.dp_quantreg("y ~ x", df, epsilon=1.0, bounds=BOUNDS, method="newton",
                                random_state=0), "n_boots", "n_boot"),
    (lambda df: dpm.dp_mnlogit("yb ~ x", df, epsilon=1.0, bounds=BOUNDS, levels=_LEVELS,
                               random_state=0), "randomstate", "random_state"),
    (lambda df: dpm.dp_ols("y ~ x", df, epsilon=1.0, bounds=BOUNDS,
                           method="sample-aggregate", random_state=0), "covtype", "cov_type"),
]


@pytest.mark.parametrize("make, bad, good", FITS, ids=[
    "ols-histogram", "ols-moments", "logit-histogram", "logit-newton", "quantreg-histogram",
    "quantreg-newton", "mnlogit", "ols-sample-aggregate"])
def test_fit_names_a_misspelt_keyword_instead_of_dropping_it(choice_frame, make, bad, good):
    # before: DPLogit.fit(n_boots=500) passed n_boots on to statsmodels, which ignored it
    # (200 replicates drawn, no message); DPMomentsOLS.fit gave a bare TypeError
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = make(choice_frame)
    with pytest.raises(TypeError, match=rf"'{bad}': did you mean '{good}'\?"):
        model.fit(**{bad: 1})


def test_fit_still_passes_statsmodels_options_on(choice_frame):
    # a keyword close to none of fit's own parameters goes to statsmodels as before
    model = dpm.dp_logit("yb ~ x", choice_frame, epsilon=1.0, bounds=BOUNDS, levels=_LEVELS,
                         method="histogram", random_state=0)
    res = model.fit(cov_type="naive", disp=0, gtol=1e-8)
    assert np.all(np.isfinite(np.asarray(res.params)))


def test_load_release_names_a_misspelt_keyword(tmp_path):
    with pytest.raises(TypeError, match=r"'namepsace': did you mean 'namespace'\?"):
        dpm.load_release(tmp_path / "none.json", namepsace={})


def test_the_suggestion_is_the_closest_name_or_the_list():
    from dpmodels.core.keywords import refuse_keywords, suggestion

    assert suggestion("n_boots", ["n_boot", "cov_type", "random_state"]) == "n_boot"
    assert suggestion("colour", ["n_boot", "cov_type"]) is None
    with pytest.raises(TypeError, match=r"'colour' \(it takes cov_type, n_boot\)"):
        refuse_keywords("fit", ["colour"], ["n_boot", "cov_type"])
    refuse_keywords("fit", [], ["n_boot"])  # nothing unknown: no error


# ---- the binning warning says what to do ---------------------------------------------------


def test_the_binning_warning_names_the_bins_and_the_methods_that_remove_it():
    """Before: "WARNING: binning may bias Intercept, ... by up to 9.8 standard errors
    (...). Use more bins (more data or a larger epsilon) or a design less sensitive
    to binning." -- no value to try and no other release named."""
    import re

    from dpmodels.cli.commands import DEMO_BOUNDS, DEMO_FORMULA, DEMO_LEVELS

    df = dpm.datasets.housing(n=20_000, seed=0)

    def fit(**kw):
        return dpm.dp_ols(DEMO_FORMULA, df, epsilon=1.0, bounds=DEMO_BOUNDS, levels=DEMO_LEVELS,
                          method="histogram", random_state=0, **kw).fit(random_state=0)

    res = fit()  # 5 bins each: the check puts the bias at several standard errors
    line = next(s for s in res.summary().as_text().splitlines() if "binning may bias" in s)
    assert 'method="moments" (dp_ols)' in line and 'method="sample-aggregate"' in line
    bins = re.search(r"try bins=(\{[^}]*\}) first", line)
    assert bins is not None, line
    suggested = eval(bins.group(1))  # a dict literal of variable -> int
    assert set(suggested) == {"price", "size"} and all(b > 5 for b in suggested.values())
    # the bins it names cut the measured bias at least fourfold (h**2: bins x4 -> /16)
    before = np.nanmax(res.dp_inference.binning.ratio)
    after = np.nanmax(fit(bins=suggested).dp_inference.binning.ratio)
    assert after < before / 4, (before, after)
    # the release it names bins nothing: no binning warning
    moments = dpm.dp_ols(DEMO_FORMULA, df, epsilon=1.0, bounds=DEMO_BOUNDS, levels=DEMO_LEVELS,
                         method="moments", random_state=0).fit(random_state=0)
    assert "binning may bias" not in moments.summary().as_text()
