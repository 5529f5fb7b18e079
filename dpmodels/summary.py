"""The privacy block added to statsmodels summaries (text, HTML and LaTeX)."""

from __future__ import annotations

from statsmodels.iolib.summary import Summary
from statsmodels.iolib.table import SimpleTable

from .report import PrivacyReport

__all__ = ["privacy_table", "add_privacy_block"]


def privacy_table(report: PrivacyReport) -> SimpleTable:
    """The privacy report as a two-column statsmodels table."""
    rows = report.rows()
    title = "Differential privacy" + ("" if report.private else " -- NOT PRIVATE (epsilon = inf)")
    return SimpleTable(
        [[v] for _, v in rows],
        stubs=[k for k, _ in rows],
        title=title,
        txt_fmt={"data_aligns": "l", "colsep": "  "},
    )


def add_privacy_block(smry: Summary, report: PrivacyReport | None, notes: list[str] | None = None) -> Summary:
    """Append the privacy table (and notes) to a statsmodels Summary in place."""
    if report is not None:
        smry.tables.append(privacy_table(report))
        if not report.private:
            smry.add_extra_txt(["WARNING: epsilon = inf. These results are NOT differentially private."])
    if notes:
        smry.add_extra_txt(notes)
    return smry
