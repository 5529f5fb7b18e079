"""The privacy block added to statsmodels summaries (text, HTML and LaTeX)."""

from __future__ import annotations

import re
import textwrap
from typing import Any

import numpy as np
from statsmodels.iolib.summary import Summary, summary_return
from statsmodels.iolib.table import SimpleTable
from statsmodels.iolib.tableformatting import fmt_2cols

from ..core.report import MomentsReport, PrivacyReport, ReleaseReport

__all__ = ["DPSummary", "privacy_table", "add_privacy_block", "add_privacy_block2",
           "inference_notes", "dp_header", "dp_header2", "dp_model_name", "public_df_resid",
           "not_private_warning", "inf_pipeline"]


#: Width at which the privacy block's values wrap (summary() and summary2()).
SUMMARY_WIDTH = 60


def wrapped_rows(report: ReleaseReport, width: int) -> list[tuple[str, str]]:
    """The report's (label, value) rows with long values wrapped onto
    continuation rows (empty label), so a summary keeps a terminal's width."""
    rows = []
    for label, value in report.rows():
        lines = textwrap.wrap(value, width, break_on_hyphens=False) or [""]
        rows += [(label, lines[0])] + [("", more) for more in lines[1:]]
    return rows


def privacy_table(report: ReleaseReport) -> SimpleTable:
    """The privacy report as a two-column statsmodels table."""
    rows = wrapped_rows(report, SUMMARY_WIDTH)
    title = "Differential privacy" + ("" if report.private else " -- NOT PRIVATE (epsilon = inf)")
    width = max(len(v) for _, v in rows)
    return SimpleTable(
        [[v.ljust(width)] for _, v in rows],
        stubs=[k for k, _ in rows],
        title=title,
        txt_fmt=dict(fmt_2cols, data_aligns="l"),
    )


class DPSummary(Summary):
    """A statsmodels `Summary` with a
    privacy table.  LaTeX output renders the privacy table as its own
    tabular, since statsmodels merges its tables into one column layout."""

    privacy_table: SimpleTable | None = None

    def as_latex(self) -> str:
        main = [t for t in self.tables if t is not self.privacy_table]
        latex = summary_return(main, return_fmt="latex")
        if self.privacy_table is not None:
            latex += "\n" + self.privacy_table.as_latex_tabular()
        if self.extra_txt is not None:
            latex += "\n\n" + self.extra_txt.replace("\n", " \\newline\n ")
        return latex


#: The header's name of each release a results object is fitted on (its ``source``).
_SOURCES = {"cells": "histogram", "moments": "noisy moments", "newton": "Newton steps"}
#: The header's name of each dpmodels statsmodels model.
_FAMILIES = {"FreqWLS": "OLS", "FreqLogit": "Logit", "FreqMNLogit": "MNLogit",
             "FreqQuantReg": "QuantReg"}


def dp_header(smry: Summary, results) -> None:
    """Make the top table of a dp fit's statsmodels summary say which private
    model it is and show the public n and the noisy total apart: "Model: DP
    OLS (noisy moments)" (not the helper class, "FreqWLS"), "No. Observations:"
    the public n, and "Noisy total:" (in place of the clock's "Time:") the
    noisy number of rows the fit weighs (statsmodels' nobs, which its degrees
    of freedom use), "Df Residuals:" the public n less the parameters
    (`public_df_resid()`: never above n).  A header or diagnostics statistic the release does not
    give (numpy's ``nan``: Durbin-Watson of cells, the moments' residual
    diagnostics, a test with no measured coefficient) reads "n/a"."""
    report = getattr(results, "privacy", None)
    if report is None or not smry.tables:
        return
    values = {"Model:": dp_model_name(results), "No. Observations:": f"{int(report.n):,}"}
    for k, table in enumerate(smry.tables):
        if k == 1:  # the coefficients' table shows what the fit gives
            continue
        for row in table:
            for cell in row:  # a statistic the release does not give: n/a, not numpy's nan
                if str(cell.data).strip().lower() == "nan":
                    cell.data = "n/a"
    for row in smry.tables[0]:
        cells = list(row)
        for i, cell in enumerate(cells[:-1]):
            key = str(cell.data).strip()
            if key in values:
                cells[i + 1].data = values[key]
            elif key == "Time:":
                cell.data = "Noisy total:"
                cells[i + 1].data = f"{float(results.nobs):,.1f}"
            elif key == "Df Residuals:" and (df := public_df_resid(results)) is not None:
                cells[i + 1].data = f"{df:,}"


def dp_model_name(results) -> str:
    """The dp model's name a summary's header shows, e.g. "DP OLS (noisy moments)"."""
    family = _FAMILIES.get(type(results.model).__name__, type(results.model).__name__)
    source = _SOURCES.get(getattr(results, "source", "cells"), "histogram")
    if family == "QuantReg" and source == "Newton steps":
        source = "quantile steps"
    return f"DP {family} ({source})"


def public_df_resid(results) -> int | None:
    """Residual degrees of freedom from the public n: n less the number of
    estimated parameters (statsmodels' ``df_resid`` is the noisy total's, which
    can exceed n).  None without a privacy report."""
    report = getattr(results, "privacy", None)
    n = getattr(report, "n", None)
    if n is None:
        return None
    used = int(round(float(results.nobs) - float(results.df_resid)))
    return max(int(n) - used, 0)


def dp_header2(smry, results) -> None:
    """`dp_header()` for statsmodels' ``summary2``: "Model:" the dp model,
    "No. Observations:" the public n, "Df Residuals:" from the public n,
    "Noisy total:" (in place of "Date:") the noisy number of rows the fit
    weighs, and a statistic the release does not give (NaN) "n/a"."""
    import pandas as pd

    report = getattr(results, "privacy", None)
    if report is None or not smry.tables:
        return
    df = public_df_resid(results)
    values = {"Model:": dp_model_name(results), "No. Observations:": f"{int(report.n):,}"}
    if df is not None:
        values["Df Residuals:"] = f"{df:,}"
    for k, table in enumerate(smry.tables):
        if k == 1 or not isinstance(table, pd.DataFrame):  # the coefficients: what the fit gives
            continue
        table = table.copy()
        for j in range(table.shape[1]):
            for i in range(table.shape[0]):
                cell = str(table.iat[i, j]).strip()
                if cell.lower() == "nan":
                    table.iat[i, j] = "n/a"
                elif k == 0 and j + 1 < table.shape[1]:
                    if cell in values:
                        table.iat[i, j + 1] = values[cell]
                    elif cell == "Date:":
                        table.iat[i, j] = "Noisy total:"
                        table.iat[i, j + 1] = f"{float(results.nobs):,.1f}"
        smry.tables[k] = table


def not_private_warning(report: ReleaseReport, results=None) -> str:
    """The summary's warning at ``epsilon = inf``: NOT private, and which
    pipeline ran and how far it is from statsmodels' own fit, as far as the
    release tells (`inf_pipeline()`)."""
    pipeline = inf_pipeline(report, results)
    return ("WARNING: epsilon = inf. These results are NOT differentially private."
            + (" " + pipeline if pipeline else ""))


def inf_pipeline(report: ReleaseReport, results=None) -> str:
    """At ``epsilon = inf``: the mechanism that ran without its noise and what
    still separates it from statsmodels' fit on the raw rows (binning,
    clipping, quantization, a fixed number of steps), with the distance where
    the release measures it (the last step's move); "" when private."""
    if report.private:
        return ""
    release: Any = getattr(results, "release", None)
    mechanism = str(getattr(report, "mechanism", ""))
    if isinstance(report, MomentsReport) and mechanism.startswith("none (exact moments)"):
        return ("Pipeline: the noisy moments without noise, i.e. the exact moments of the "
                "rows (values outside the bounds clipped to them): the estimates are "
                "statsmodels' OLS on those rows, to rounding.")
    if isinstance(report, MomentsReport) and mechanism.startswith("none: "):  # Newton-type
        quantile = hasattr(release, "quantiles")
        try:
            if quantile:
                i = release.index(getattr(results, "q", None))
                move = release.design_params(release.beta[i]) - release.design_params(
                    release.start[i])
            else:
                move = release.design_params(release.beta) - release.design_params(
                    release.start)
            names = list(getattr(results.model, "exog_names", []))
            j = int(np.argmax(np.abs(move)))
            moved = (f"; the last step moved the coefficients by at most {abs(move[j]):.3g} "
                     f"({names[j] if j < len(names) else j}), a measure of how far the steps are "
                     "from converged")
        except Exception:  # (a results object without its release: say what ran)
            moved = ""
        return (f"Pipeline: {mechanism.removeprefix('none: ')}: NOT statsmodels' fit, which "
                f"converges on the unclipped, unquantized rows{moved}.")
    if isinstance(report, PrivacyReport):
        binned = [(name, m.group(1)) for name, desc in report.variables
                  for m in [re.search(r"(\d+) bins", desc)] if m is not None]
        if not binned:
            return ("Pipeline: the histogram without noise or threshold, i.e. the exact counts "
                    "of the discrete variables: the fit is statsmodels' on those rows.")
        cut = ", ".join(f"{name} ({k} bins)" for name, k in binned)
        return (f"Pipeline: the histogram without noise or threshold, i.e. the exact counts of "
                f"the BINNED rows: {cut} enter at their bins' representative points, so these "
                "estimates are NOT statsmodels' fit on the raw rows (the release cannot say how "
                "far they are from it; the binning check, where shown, bounds the bins' shift).")
    return ""


def add_privacy_block(smry: Summary, report: ReleaseReport | None, notes: list[str] | None = None,
                      results=None) -> DPSummary:
    """Return ``smry`` as a `DPSummary` with the privacy table and notes
    appended (and, given the ``results``, the header of `dp_header()`)."""
    if results is not None:
        dp_header(smry, results)
    out = DPSummary()
    out.tables = list(smry.tables)
    out.extra_txt = smry.extra_txt
    if report is not None:
        out.privacy_table = privacy_table(report)
        out.tables.append(out.privacy_table)
    # (statsmodels' add_extra_txt replaces the text: the warning and the notes go at once)
    extra = ([not_private_warning(report, results)]
             if report is not None and not report.private else [])
    if extra or notes:
        out.add_extra_txt(extra + list(notes or []))
    return out




def add_privacy_block2(smry, report: ReleaseReport | None, notes: list[str] | None = None,
                       results=None):
    """Append the privacy report and the notes to a statsmodels ``summary2``
    (`statsmodels.iolib.summary2.Summary`), as ``summary()`` shows them (and,
    given the ``results``, the header of `dp_header2()`)."""
    import pandas as pd

    if results is not None:
        dp_header2(smry, results)

    if report is not None:
        title = "Differential privacy" + ("" if report.private else
                                          " -- NOT PRIVATE (epsilon = inf)")
        rows = wrapped_rows(report, SUMMARY_WIDTH)  # summary2 pads every table to the widest
        smry.add_df(pd.DataFrame(rows, columns=[title, ""]), index=False, header=True,
                    align="l")
        if not report.private:
            smry.add_text(not_private_warning(report, results))
    if notes:
        smry.add_text("Notes:")
        for i, note in enumerate(notes, 1):
            smry.add_text(f"[{i}] {note}")
    return smry


def inference_notes(results) -> list[str]:
    """Summary notes saying which covariance the standard errors use.

    Under cov_type "dp" (a `DPInference` attached),
    the bootstrap's description, failed replicates and the binning warning;
    under "naive" on a private release, that the standard errors ignore the
    privacy noise.
    """
    inference = getattr(results, "dp_inference", None)
    if inference is not None and getattr(results, "cov_type", None) == "dp":
        names = getattr(results.model, "exog_names", None)
        params = getattr(results, "params", None)
        if names is not None and params is not None and getattr(params, "ndim", 1) == 2:
            ynames = getattr(results.model, "_ynames_map", {})
            eqs = [ynames.get(j, j) for j in range(1, params.shape[1] + 1)]
            names = [f"{x} (eq. {e})" for e in eqs for x in names]
        return inference.notes(names)
    privacy = getattr(results, "privacy", None)
    if privacy is not None and not privacy.private:
        return ["epsilon=inf (NOT private): no privacy noise; standard errors are statsmodels' "
                "classical ones (the exact check)."]
    if privacy is not None and privacy.private:
        if isinstance(privacy, MomentsReport):  # moments, Newton and quantile steps
            return ["Covariance type naive: standard errors treat the noisy statistics as "
                    "exact; they do not include the privacy noise or the clipping of rows to "
                    "the private radius (use cov_type='dp')."]
        return ["Covariance type naive: standard errors treat the noisy counts as data; they do "
                "not include the privacy noise, thresholding or binning (use cov_type='dp')."]
    return []
