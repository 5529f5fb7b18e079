"""Report texts never contradict themselves: a negative noisy
count is shown as 0 rows with the noisy value beside it."""

from __future__ import annotations

import re

from dpmodels.core.report import MomentsReport, noisy_count_text


def _report(clipped: float, noisy: float) -> MomentsReport:
    return MomentsReport(epsilon=1.0, private=True, mechanism="noisy moments", split=(),
                         n=1000, n_source="rows handed in", variables=(), columns=("x", "y"),
                         radius=2.5, clipped_rows=clipped, noisy_rows=noisy, seeded=True)


def test_a_negative_noisy_count_is_not_printed_as_rows():
    text = str(_report(-30.0, -4.0))
    assert not re.search(r"(beyond it|Noisy rows):\s+-", text), text
    assert "beyond it: 0" in text and "Noisy rows:" in text
    assert re.search(r"Noisy rows:\s+0\n", text + "\n")


def test_a_positive_noisy_count_is_printed_as_it_is():
    text = str(_report(12.0, 998.0))
    assert "beyond it: 12\n" in text + "\n" or "beyond it: 12" in text
    assert noisy_count_text(998.0) == "998" and "Noisy rows:" in text
