"""The privacy report carried by every release and every results object.

Every field is a public input (epsilon, n, the domain, the threshold rule)
or a function of the noisy release (released cells, noisy total): nothing
here is computed from the raw rows (PRIVACY.md rule 5).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

if TYPE_CHECKING:
    from ..data.clipping import OutsideBounds

__all__ = ["Release", "ReleaseReport", "PrivacyReport", "MomentsReport", "opening_rows", "closing_rows",
           "report_text", "report_html", "noisy_count_text", "outside_rows", "HISTOGRAM_PART",
           "noise_epsilon"]


class Release:
    """The base of every release: a frozen value made once from raw rows that
    carries its privacy report (``report``, also ``privacy``).  Everything
    computed from a release is post-processing: it costs no budget.

    `PrivateHistogram` answers any formula over its
    variables; `PrivateMoments`,
    `PrivateNewton` and
    `PrivateQuantileSteps` answer the formula
    they were made for (``release.space.formula``); a
    `PrivateSampleAggregate` holds the
    estimate itself; a `LocalRelease` holds every row
    randomized.  The report derives from `ReleaseReport`.  Deriving from
    this class is also how a check of the caller's arguments tells a release
    from raw data without importing a mechanism.

    Attributes
    ----------
    report : ReleaseReport
        The release's privacy report.
    """

    __slots__ = ()

    report: ReleaseReport

    @property
    def privacy(self) -> ReleaseReport:
        """The privacy report (alias of ``report``)."""
        return self.report


def report_text(report, title: str = "Privacy report") -> str:
    """A report's rows as aligned text under ``title`` (flagged NOT PRIVATE at
    ``epsilon=inf``): the ``__str__`` of every report class."""
    rows = report.rows()
    width = max(len(k) for k, _ in rows)
    title += "" if report.private else "  ** NOT PRIVATE: epsilon = inf **"
    return "\n".join([title, "=" * len(title)] + [f"{k:<{width}}  {v}" for k, v in rows])


def report_html(report, caption: str = "Privacy report") -> str:
    """A report's rows as an HTML table: the ``_repr_html_`` of every report class."""
    import html

    body = "".join(
        f"<tr><th style='text-align:left'>{html.escape(k)}</th><td>{html.escape(v)}</td></tr>"
        for k, v in report.rows())
    return f"<table><caption>{html.escape(caption)}</caption>{body}</table>"


def opening_rows(report) -> list[tuple[str, str]]:
    """The first rows of a central release's report: the guarantee, the
    mechanism and, when the report has a ``split``, each part of epsilon."""
    eps = "inf (NOT PRIVATE)" if not report.private else f"{report.epsilon:g}"
    rows = [("Privacy:", f"epsilon-DP, epsilon = {eps}, delta = 0"),
            ("Mechanism:", report.mechanism)]
    rows += [("  epsilon part:", f"{e:.4g} for {label}")
             for label, e in getattr(report, "split", ())]
    return rows


def noisy_count_text(count: float) -> str:
    """A noisy count as a reader can take it: a negative one (noise larger
    than the count) is shown as 0, never as a negative number of rows (the
    noisy value stays on the report's field).  The text has the same shape
    whatever the noise, so neighbouring data sets publish the same words.

    Examples
    --------
    >>> noisy_count_text(1234.0), noisy_count_text(-30.0)
    ('1,234', '0')
    """
    return f"{max(count, 0.0):,.0f}"


def noise_epsilon(report) -> float:
    """The epsilon of a histogram release's cells' noise: its report's
    ``noise_epsilon`` (the cells' part when epsilon was split), else its
    ``epsilon``."""
    return float(getattr(report, "noise_epsilon", report.epsilon))


def outside_rows(report) -> list[tuple[str, str]]:
    """The row of the noisy counts of rows outside the declared bounds
    (`dpmodels.data.clipping.OutsideBounds`), when the release has them."""
    outside = getattr(report, "outside_bounds", None)
    return [] if outside is None else [("Rows outside bounds:", outside.text())]


def closing_rows(report) -> list[tuple[str, str]]:
    """The rows every report ends with: each variable's public domain, the
    noisy counts of rows outside the bounds (when released), the randomness
    and the budget."""
    return [(f"  {name}:", desc) for name, desc in report.variables] + outside_rows(report) + [
        ("Randomness:", "seeded generator (reproducible, for tests and docs)"
         if report.seeded else "OS secure entropy"),
        ("Budget:", report.budget),
    ]


class ReleaseReport:
    """The base of every release's privacy report.

    A report is a frozen value made with its release, public like it: every
    field is a public input or a function of the noisy release, so it can be
    published with the estimates.  Each mechanism's report carries at least `FIELDS` (as
    fields or properties) and says what it released in `rows()`, (label,
    value) pairs in display order; the base turns them into text
    (``str(report)``, titled `title`) and an HTML table (its
    ``_repr_html_``).  Results print it under their summary.

    Attributes
    ----------
    epsilon : float
        The release's privacy parameter (pure DP, delta = 0); ``inf`` when
        not private.
    private : bool
        False only for ``epsilon=inf``.
    mechanism : str
        The mechanism's name.
    n : int
        The public number of rows.
    seeded : bool
        True when a ``random_state`` made the noise reproducible.
    budget : str
        How the release was charged to an `Accountant`.
    title : str
        The text report's title.

    Examples
    --------
    >>> import dpmodels as dpm
    >>> df = dpm.datasets.housing(200)
    >>> rel = dpm.release(df, columns=["price"], epsilon=1.0, bounds={"price": (1e5, 9e5)},
    ...                   random_state=0)
    >>> isinstance(rel.report, ReleaseReport), str(rel.report).splitlines()[0]
    (True, 'Privacy report')
    """

    #: What every report carries: the guarantee (``epsilon``; ``private`` is
    #: False only at ``epsilon = inf``), the ``mechanism``, the public ``n``,
    #: whether a ``seeded`` generator drew the noise, and the accountant's
    #: ``budget`` line.
    FIELDS = ("epsilon", "private", "mechanism", "n", "seeded", "budget")
    #: The report's fields that are computed from the noise, declared by each
    #: mechanism's report; every other field is a public input, equal on
    #: neighbouring data sets (PRIVACY.md rule 5; the neighbour tests compare them).
    #: None: not declared, and the neighbour tests mask every number.
    NOISY_FIELDS: ClassVar[tuple[str, ...] | None] = None
    #: The fields a saved file holds, each with the JSON type its reader checks
    #: (`dpmodels.output.documents.report_in()`): "float", "float?" (a float or
    #: null), "int", "bool", "str", "strs", "pairs" (name, text) or "split"
    #: (label, epsilon); a type ending in "|absent" may be missing from older files.
    #: ``outside_bounds`` is read when present.  Empty: the report cannot be saved.
    SAVED_FIELDS: ClassVar[Mapping[str, str]] = {}
    #: The noisy counts of rows outside each bounded variable's declared bounds
    #: (a `dpmodels.data.clipping.OutsideBounds`, from a share of epsilon listed in the
    #: report's split), or None when no variable can clip or the mechanism does
    #: not count them.  Shown as "Rows outside bounds" in the report.
    outside_bounds: OutsideBounds | None = None
    # declared for the type checker; each report's dataclass fields
    epsilon: float
    private: bool
    #: The text report's title.
    title = "Privacy report"
    #: The HTML table's caption ("" for the title).
    html_title = ""

    def rows(self) -> list[tuple[str, str]]:
        """(label, value) pairs, in display order, for summaries."""
        raise NotImplementedError(f"{type(self).__name__} must say what it released (rows)")

    def __str__(self) -> str:
        return report_text(self, self.title)

    def _repr_html_(self) -> str:
        return report_html(self, self.html_title or self.title)

    @property
    def is_finite(self) -> bool:
        """True unless ``epsilon = inf`` (a release that is not private)."""
        return math.isfinite(self.epsilon)


#: The label of a histogram's cells in its report's split.
HISTOGRAM_PART = "histogram cells (L1 sensitivity 2)"


@dataclass(frozen=True)
class PrivacyReport(ReleaseReport):
    """What was released and under which guarantee.

    Attributes
    ----------
    epsilon : float
        Privacy parameter of the release (pure DP, delta = 0); ``inf`` when
        not private.
    private : bool
        False only for ``epsilon=inf`` (no noise).
    mechanism : str
        The mechanism's name, as the summary's privacy block prints it.
    noise_scale : float
        Scale ``2 / epsilon`` of the discrete Laplace noise per cell.
    sensitivity : int
        L1 sensitivity of the histogram under replace-one neighbours (2).
    threshold_rule : str
        "enhanced", "fixed", "zero", "none (signed counts)" or "none (exact)".
    threshold_A : float or None
        Lei's tuning constant for the enhanced rule.
    threshold : float or None
        The threshold value t; cells with noisy count >= t are kept.
    n : int
        The public number of rows.
    n_source : str
        "rows handed in" or "declared by the caller".
    variables : tuple of (name, description)
        The public domain of each variable.
    domain_cells : int
        Number m of cells in the domain, all of them perturbed.
    expected_spurious_cells : float
        Upper bound ``m * P(Z >= t)`` on the expected number of empty cells
        that cross the threshold (Vinterbo 2012, eq. 7), known before any
        row is read.
    released_cells : int
        Number of cells in the release.
    noisy_total : int
        Sum of the released counts.
    seeded : bool
        True when a ``random_state`` made the noise reproducible.
    budget : str
        How the release was charged to an accountant, if any.
    split : tuple of (str, float)
        How epsilon was split when a variable can clip: the cells'
        part (`HISTOGRAM_PART`) and the outside counts' part
        (`dpmodels.data.clipping`); empty when the cells took all of epsilon.
    outside_bounds : OutsideBounds or None
        Noisy counts of rows outside each bounded variable's declared bounds;
        None when no variable can clip.
    """

    #: The fields computed from the noise (the released cells and the noisy total); the others
    #: are public inputs, equal on neighbouring data sets.
    NOISY_FIELDS: ClassVar[tuple[str, ...] | None] = ("released_cells", "noisy_total")
    SAVED_FIELDS: ClassVar[Mapping[str, str]] = {
        "epsilon": "float", "private": "bool", "mechanism": "str", "noise_scale": "float",
        "sensitivity": "int", "threshold_rule": "str", "threshold_A": "float?",
        "threshold": "float?", "n": "int", "n_source": "str", "variables": "pairs",
        "domain_cells": "int", "expected_spurious_cells": "float", "released_cells": "int",
        "noisy_total": "int", "seeded": "bool", "budget": "str",
        "split": "split|absent"}  # a histogram saved before its epsilon was split (issue 43)

    epsilon: float
    private: bool
    mechanism: str
    noise_scale: float
    sensitivity: int
    threshold_rule: str
    threshold_A: float | None
    threshold: float | None
    n: int
    n_source: str
    variables: tuple[tuple[str, str], ...]
    domain_cells: int
    expected_spurious_cells: float
    released_cells: int
    noisy_total: int
    seeded: bool
    budget: str = "no accountant"
    split: tuple = ()
    outside_bounds: OutsideBounds | None = None

    @property
    def noise_epsilon(self) -> float:
        """The epsilon of the cells' noise (scale ``2 / noise_epsilon``): the
        split's `HISTOGRAM_PART`, or all of ``epsilon`` without a split.  What
        every computation of the noise law from the report reads."""
        for label, part in self.split:
            if label == HISTOGRAM_PART:
                return float(part)
        return self.epsilon

    def rows(self) -> list[tuple[str, str]]:
        """(label, value) pairs, in display order, for summaries."""
        if self.threshold is None:
            thr = self.threshold_rule
        elif self.threshold_rule == "enhanced":
            thr = f"enhanced, A={self.threshold_A:g}: t = A*log(n)/eps = {self.threshold:.4g}"
        else:
            thr = f"{self.threshold_rule}: t = {self.threshold:.4g}"
        rows = opening_rows(self) + [
            ("Noise scale:", "none" if not self.private else
             f"{'2/epsilon' if not self.split else '2/(cells part)'} = "
             f"{self.noise_scale:.4g} (L1 sensitivity {self.sensitivity})"),
            ("Threshold:", thr),
            ("Public n:", f"{self.n} ({self.n_source})"),
            ("Domain cells:", f"{self.domain_cells:,}"),
            ("E[spurious cells] <=", f"{self.expected_spurious_cells:.4g}"),
            ("Released cells:", f"{self.released_cells:,}"),
            ("Noisy total:", f"{self.noisy_total:,}"),
        ]
        return rows + closing_rows(self)


@dataclass(frozen=True)
class MomentsReport(ReleaseReport):
    """The privacy report of a noisy-moments release (`dpmodels.mechanisms.moments`).

    Attributes
    ----------
    epsilon : float
        Total privacy parameter (pure DP, delta = 0); ``inf`` when not private.
    private : bool
        False only for ``epsilon=inf`` (no noise: not private).
    mechanism : str
        The mechanism's name, as the summary's privacy block prints it.
    split : tuple of (str, float)
        How epsilon was split between the mechanism's parts (they add up to
        ``epsilon``).
    n : int
        The public number of rows.
    n_source : str
        "rows handed in" or "declared by the caller".
    variables : tuple of (name, description)
        The public domain of each variable.
    columns : tuple of str
        The design columns whose moments were released (response last).
    radius : float
        The L1 clipping radius of the scaled rows (inf when not private).
    clipped_rows : float
        Noisy number of rows at or beyond the radius (from the radius histogram).
    noisy_rows : float
        Noisy number of rows with no missing value.
    seeded : bool
        True when a ``random_state`` made the noise reproducible.
    budget : str
        How the release was charged to an `Accountant` ("no accountant" when none).
    outside_bounds : OutsideBounds or None
        Noisy counts of rows outside each bounded variable's declared bounds
        (`dpmodels.data.clipping`); None when no variable can clip.
    """

    #: The fields computed from the noise (the clipping radius, the clipped and the
    #: noisy rows); the others are public inputs, equal on neighbouring data sets.
    NOISY_FIELDS: ClassVar[tuple[str, ...] | None] = ("radius", "clipped_rows", "noisy_rows")
    SAVED_FIELDS: ClassVar[Mapping[str, str]] = {
        "epsilon": "float", "private": "bool", "mechanism": "str", "split": "split", "n": "int",
        "n_source": "str", "variables": "pairs", "columns": "strs", "radius": "float",
        "clipped_rows": "float", "noisy_rows": "float", "seeded": "bool", "budget": "str"}

    epsilon: float
    private: bool
    mechanism: str
    split: tuple
    n: int
    n_source: str
    variables: tuple
    columns: tuple
    radius: float
    clipped_rows: float
    noisy_rows: float
    seeded: bool
    budget: str = "no accountant"
    outside_bounds: OutsideBounds | None = None

    def rows(self) -> list[tuple[str, str]]:
        """(label, value) pairs, in display order, for summaries."""
        rows = opening_rows(self)
        rows += [
            ("Public n:", f"{self.n} ({self.n_source})"),
            ("Noisy rows:", noisy_count_text(self.noisy_rows)),
            ("Clip radius:", "none" if not math.isfinite(self.radius) else
             f"{self.radius:.4g} (L1, scaled units); {'noisy ' if self.private else ''}rows "
             f"at or beyond it: {noisy_count_text(self.clipped_rows)}"),
        ]
        return rows + closing_rows(self)
