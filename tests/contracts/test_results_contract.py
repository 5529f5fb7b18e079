"""The results contract: for every (mechanism, family) of the
registry, every public name of ``dir(results)`` is declared in
`dpmodels.inference.dp_results.CONTRACTS` as an honest function of the release
("release"), statsmodels' own ("statsmodels"), or refused with a message
naming the dp alternative.  The entries and their fits are those of
tests/contracts/test_mechanism_contract.py (derived from the registry, not listed
here), so a mechanism added to the registry is checked too, and a
statsmodels upgrade that adds a member fails here until it is classified.

Also the issue's other findings: summary2()'s header (the dp model's name,
the public n, Df Residuals never above n), summaries that do not print
refused statistics, ``release.plot()`` without arguments, and a Newton
release handed to a family it does not serve.
"""

from __future__ import annotations

import inspect
import re
import warnings

import numpy as np
import pandas as pd
import pytest

import dpmodels as dpm
from dpmodels.inference.dp_results import (
    CONTRACTS,
    RELEASE,
    STATSMODELS,
    Refusal,
    ResultsRefusedError,
    results_contract,
)
from dpmodels.core.errors import DPModelsError

from tests.support.registry_entries import FAMILY_ENTRIES, built

ENTRY_PARAMS = [pytest.param(e, id=e.id) for e in FAMILY_ENTRIES]


def _res(entry):
    res = built(entry).res
    assert res is not None, entry.id
    return res


def _public(res) -> list[str]:
    return sorted(n for n in dir(res) if not n.startswith("_"))


def _trigger(res, name: str):
    """Read ``name`` and, for a method, call it (a required argument: the
    results themselves, as a restricted fit of the same release)."""
    member = getattr(res, name)
    if callable(member) and not isinstance(member, (np.ndarray, pd.Series, pd.DataFrame)):
        try:
            sig = inspect.signature(member)
        except (TypeError, ValueError):
            return member()
        required = [p for p in sig.parameters.values()
                    if p.default is p.empty and p.kind in (p.POSITIONAL_ONLY,
                                                            p.POSITIONAL_OR_KEYWORD)]
        return member(*[res] * len(required))
    return member


@pytest.mark.parametrize("entry", ENTRY_PARAMS)
def test_every_public_name_is_classified(entry):
    res = _res(entry)
    contract = results_contract(res)
    cls = type(getattr(res, "_results", res)).__qualname__
    assert cls in CONTRACTS, f"{entry.id}: results class {cls} has no table in CONTRACTS"
    # the names before and after a summary (statsmodels' summary() sets members on the
    # instance, e.g. OLS's diagn), so the outcome does not depend on which test ran first
    names = set(_public(res))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res.summary()
    names |= set(_public(res))
    missing = sorted(n for n in names if n not in contract)
    assert not missing, (
        f"{entry.id} ({cls}): public names not classified in dpmodels.inference.dp_results.CONTRACTS "
        f"(release / statsmodels / Refusal): {missing}")
    for name, how in contract.items():
        assert how in (RELEASE, STATSMODELS) or isinstance(how, Refusal), (entry.id, name)


@pytest.mark.parametrize("entry", ENTRY_PARAMS)
def test_refused_names_raise_naming_the_alternative(entry):
    res = _res(entry)
    refused = {n: how for n, how in results_contract(res).items()
               if isinstance(how, Refusal) and n in dir(res)}
    inner = getattr(res, "_results", res)
    for name, how in refused.items():
        if not how.applies(inner):
            continue
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with pytest.raises(DPModelsError) as err:
                _trigger(res, name)
        assert how.use in str(err.value), (entry.id, name, str(err.value))
        if not how.own:
            assert isinstance(err.value, ResultsRefusedError), (entry.id, name)
            assert not hasattr(res, name), (entry.id, name)


@pytest.mark.parametrize("entry", ENTRY_PARAMS)
def test_released_and_statsmodels_names_are_readable(entry):
    """Every non-refused attribute (not a method) reads without error."""
    res = _res(entry)
    broken = []
    for name, how in results_contract(res).items():
        if isinstance(how, Refusal) or name not in dir(res):
            continue
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                getattr(res, name)
            except Exception as exc:  # noqa: BLE001  (each one named below)
                broken.append(f"{name}: {type(exc).__name__}: {exc}")
    assert not broken, f"{entry.id}: {broken}"


@pytest.mark.parametrize("entry", ENTRY_PARAMS)
def test_summaries_print_no_refused_statistic(entry):
    """summary() and summary2() show a refused statistic as n/a or not at all,
    and summary2()'s header says the dp model, the public n and a Df Residuals
    no larger than n."""
    res = _res(entry)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        s1, s2 = res.summary().as_text(), str(res.summary2())
    inner = getattr(res, "_results", res)
    contract = results_contract(res)
    labels = {"llf": "Log-Likelihood:", "aic": "AIC:", "bic": "BIC:", "llnull": "LL-Null:",
              "llr_pvalue": "LLR p-value:", "prsquared": "Pseudo R-squ"}
    for name, label in labels.items():
        how = contract.get(name)
        if isinstance(how, Refusal) and how.applies(inner):
            for text in (s1, s2):
                m = re.search(re.escape(label) + r"\S*[ \t]+(\S+)", text)
                assert m is None or m.group(1) == "n/a", (entry.id, label, m.group(0))
    n = int(res.privacy.n)
    assert "Freq" not in s2.split("Differential privacy")[0], entry.id
    assert re.search(r"Model:\s+DP ", s2), entry.id
    obs = re.search(r"No\. Observations:\s+([\d,]+)", s2)
    assert obs and int(obs.group(1).replace(",", "")) == n, (entry.id, obs)
    for text in (s1, s2):
        df = re.search(r"Df Residuals:\s+(-?[\d,]+)", text)
        if df:
            assert int(df.group(1).replace(",", "")) <= n, (entry.id, df.group(0))


# ---- the examples, each failing on the code before it --------------------------------

@pytest.fixture(scope="module")
def binary():
    rng = np.random.default_rng(4)
    n = 4000
    df = pd.DataFrame({"a": rng.uniform(-2, 2, n), "b": rng.uniform(-2, 2, n)})
    df["y"] = (rng.random(n) < 1 / (1 + np.exp(-(0.3 + df.a - df.b)))).astype(int)
    return df


def _newton(df, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return dpm.dp_logit("y ~ a + b", df, epsilon=1.0, levels={"y": [0, 1]},
                            bounds={"a": (-2, 2), "b": (-2, 2)}, method="newton",
                            random_state=0, **kw).fit(n_boot=20, random_state=0)


def test_newton_pred_table_is_refused_naming_the_alternative(binary):
    res = _newton(binary)
    with pytest.raises(ResultsRefusedError, match="predict"):
        res.pred_table()
    with pytest.raises(ResultsRefusedError, match="wald_test"):
        res.llf  # noqa: B018
    assert "n/a" in res.summary().as_text()


def test_histogram_likelihood_is_refused_and_not_printed(binary):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = dpm.dp_logit("y ~ a + b", binary, epsilon=1.0, levels={"y": [0, 1]},
                           bounds={"a": (-2, 2), "b": (-2, 2)}, method="histogram",
                           random_state=0).fit(n_boot=20, random_state=0)
    for name in ("llf", "aic", "bic", "llnull", "prsquared", "llr_pvalue"):
        with pytest.raises(ResultsRefusedError, match="wald"):
            getattr(res, name)
    assert getattr(res, "llf", None) is None  # an AttributeError too
    text = res.summary().as_text()
    assert re.search(r"Log-Likelihood:\s+n/a", text) and re.search(r"Pseudo R-squ.:\s+n/a", text)
    m = re.search(r"Log-Likelihood:\s+(\S+)", str(res.summary2()))
    assert m is None or m.group(1) == "n/a"
    # the prediction table of noisy cells is the release's own
    assert np.asarray(res.pred_table()).sum() == pytest.approx(res.nobs)


def test_ols_histogram_summary_prints_no_cell_likelihood_or_normality_test():
    rng = np.random.default_rng(1)
    df = pd.DataFrame({"x": rng.uniform(0, 1, 220)})
    df["y"] = 1 + df.x + rng.normal(0, 0.2, 220)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = dpm.dp_ols("y ~ x", df, epsilon=1.0, bounds={"x": (0, 1), "y": (-1, 3)},
                         method="histogram", random_state=3).fit(n_boot=20, random_state=0)
    s1, s2 = res.summary().as_text(), str(res.summary2())
    for label in ("Log-Likelihood:", "AIC:", "BIC:", "Omnibus:", "Jarque-Bera (JB):"):
        m = re.search(re.escape(label) + r"\s+(\S+)", s1)
        assert m.group(1) == "n/a", label
        m = re.search(re.escape(label) + r"\s+(\S+)", s2)
        assert m is None or m.group(1) == "n/a", label
    assert re.search(r"Model:\s+DP OLS \(histogram\)", s2)
    assert re.search(r"No\. Observations:\s+220\b", s2)
    for text in (s1, s2):
        assert int(re.search(r"Df Residuals:\s+(\d+)", text).group(1)) == 218


def test_release_plot_without_arguments_plots_every_variable():
    pytest.importorskip("matplotlib")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rng = np.random.default_rng(0)
    df = pd.DataFrame({"x": rng.uniform(0, 10, 500), "g": rng.choice(["a", "b"], 500)})
    rel = dpm.release(df, columns=["x", "g"], epsilon=1.0, bounds={"x": (0, 10)},
                      levels={"g": ["a", "b"]}, bins=4, random_state=0)
    fig = rel.plot()
    try:
        titles = [ax.get_title() for ax in fig.axes]
        assert any("of x" in t for t in titles) and any("of g" in t for t in titles)
    finally:
        plt.close(fig)


def test_a_release_handed_to_a_family_it_does_not_serve_names_the_one_it_does():
    from dpmodels.mechanisms.quantile_steps import release_quantile_steps

    rng = np.random.default_rng(0)
    df = pd.DataFrame({"x": rng.uniform(0, 1, 2000)})
    df["y"] = 1 + df.x + rng.normal(0, 0.3, 2000)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rel = release_quantile_steps(df, formula="y ~ x", epsilon=1.0,
                                     bounds={"x": (0, 1), "y": (-2, 4)}, random_state=0)
    for fn in (dpm.dp_ols, dpm.dp_logit):
        with pytest.raises(DPModelsError, match="dp_quantreg") as err:
            fn("y ~ x", rel)
        assert "epsilon is required" not in str(err.value)
