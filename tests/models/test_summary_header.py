"""The summary's header says which private model it is and shows the public n
and the noisy total apart."""

from __future__ import annotations

import re
import warnings

import numpy as np
import pytest

from tests.support.routes import FIT, ROUTES, _frame, N

EXPECTED = {"ols auto (moments)": "DP OLS (noisy moments)",
            "ols histogram": "DP OLS (histogram)",
            "logit newton": "DP Logit (Newton steps)",
            "logit histogram": "DP Logit (histogram)",
            "quantreg auto (steps)": "DP QuantReg (quantile steps)",
            "quantreg histogram": "DP QuantReg (histogram)",
            "mnlogit histogram": "DP MNLogit (histogram)"}


@pytest.mark.parametrize("route", sorted(EXPECTED))
def test_the_header_names_the_private_model_and_both_counts(route):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = ROUTES[route](_frame()).fit(random_state=0, **FIT)
    text = res.summary().as_text()
    assert re.search(r"Model:\s+" + re.escape(EXPECTED[route]) + r"\s", text)
    assert re.search(r"No\. Observations:\s+" + re.escape(f"{N:,}") + r"\s", text)
    noisy = re.search(r"Noisy total:\s+([\d,]+\.\d)", text)
    assert noisy and float(noisy.group(1).replace(",", "")) == pytest.approx(float(res.nobs),
                                                                              abs=0.05)
    assert "Freq" not in text
    assert np.isfinite(res.df_resid)
