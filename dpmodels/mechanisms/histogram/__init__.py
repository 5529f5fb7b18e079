"""The private histogram release: public domain -> exact counts -> noisy,
thresholded counts, with its privacy report.

This is the only public entry point that reads raw rows, and it reads them
once (through `dpmodels.data.counting.count_cells()`).  Every check on the
caller's input, every data-independent choice (bins, threshold, the bound
on spurious cells) and the budget check happen before that pass; noise is
drawn only after it succeeds.
"""

from __future__ import annotations

import math
import numbers
import os
import pathlib
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import ClassVar

import numpy as np
import pandas as pd

from ...core.accountant import Accountant
from ...core.budget import split_epsilon
from ...core.errors import DomainTooLargeError, DPModelsError, NotPrivateWarning, UnknownVariableError
from ...core.exact import MIN_EPSILON
from ...core.keywords import checked_keywords
from ...core.noise import NoisyCells, discrete_laplace_sf, noisy_signed_dense, noisy_threshold_sparse
from ...core.report import HISTOGRAM_PART, PrivacyReport, Release
from ...core.thresholds import AUTO_SPURIOUS_FRACTION, auto_threshold
from ...data.clipping import CLIP_SHARE, clipping_axes, exact_outside
from ...data.clipping import split_label as clip_split_label
from ...data.columns import columns_of, dtype_of, nrows, unreadable_values_error
from ...data.counting import count_cells
from ...data.engines import source_for
from ...data.validation import (
    INT64_MAX,
    check_dtypes,
    check_epsilon,
    check_noise_cells,
    check_release_arguments,
    check_row_count,
    check_used_columns,
)
from ...domain.axes import Domain, build_domain
from ...domain.formula import caller_namespace, formula_variables, user_stacklevel
from ...output.documents import SavedParts
from ...output.plots import plot_release
from ...output.saving import save_release
from ..pipeline import released_outside, run_release
from ..simulation import ReleaseSimulator
from ..synthetic import sample_release

__all__ = ["PrivateHistogram", "release", "DEFAULT_A", "DEFAULT_MAX_SPURIOUS_CELLS"]

#: Lei's (2011, §4.2) tuning constant of the enhanced threshold.
DEFAULT_A = 0.5
#: Default refusal limit on the expected number of spurious (empty but
#: released) cells, and on the domain size of a signed (unthresholded) release.
DEFAULT_MAX_SPURIOUS_CELLS = 2_000_000

MECHANISM = "discrete Laplace (two-sided geometric) on every cell of the joint histogram"


@dataclass(frozen=True)
class PrivateHistogram(Release):
    """A differentially private joint histogram.

    Holds the public domain, the released cells (sorted uint64 ids) with
    their noisy integer counts, and the privacy report.  Everything computed
    from it is post-processing and costs no privacy budget.

    Attributes
    ----------
    domain : Domain
        The public domain: each variable's bounds and bins or levels.
    cell_ids : numpy.ndarray
        The released cells' ids (sorted uint64; `Domain.decode()` turns
        them into per-variable codes).
    counts : numpy.ndarray
        The released noisy counts, one per cell (read-only).
    report : PrivacyReport
        The privacy report (also ``privacy``).
    variables : tuple of str
        The released variables, in domain order.
    count_column : str
        The name of the counts' column in `cells()` and `marginal()`
        frames ("count", or "count_" when a variable is called "count").
    """

    #: The release's kind in a saved file (`dpmodels.front.saved`).
    saved_kind: ClassVar[str] = "histogram"

    domain: Domain
    cell_ids: np.ndarray
    counts: np.ndarray
    report: PrivacyReport

    def saved_parts(self) -> SavedParts:
        """What `save()` writes: the file's release type, the public domain,
        the report and the released values (read back by this folder's
        ``codec.read``)."""
        return SavedParts(self.saved_kind, self.domain, self.report,
                          {"cell_ids": [int(i) for i in self.cell_ids.tolist()],
                           "counts": [int(c) for c in self.counts.tolist()]})

    def __post_init__(self):
        for arr in (self.cell_ids, self.counts):
            arr.setflags(write=False)

    @property
    def variables(self) -> tuple[str, ...]:
        """The released variables, in domain order."""
        return self.domain.names

    @property
    def count_column(self) -> str:
        """The name of the counts' column in cell frames ("count", underscored
        away from a variable of that name)."""
        name = "count"
        while name in self.domain.names:
            name += "_"
        return name

    @cached_property
    def cells(self) -> pd.DataFrame:
        """One row per released cell: each variable's representative value
        (bin midpoint or level) and the noisy ``count``."""
        frame = self.domain.frame(self.cell_ids)
        frame[self.count_column] = self.counts
        return frame

    def marginal(self, variables: Sequence[str]) -> pd.DataFrame:
        """Cell frame over a subset of the variables, released counts summed
        over the others (post-processing: free).

        Parameters
        ----------
        variables : sequence of str
            The released variables to keep.

        Returns
        -------
        pandas.DataFrame
            One row per released cell of the marginal: the variables and the
            summed noisy count (`count_column`).

        Examples
        --------
        >>> import numpy as np, pandas as pd, dpmodels as dpm
        >>> df = pd.DataFrame({"g": np.repeat(["a", "b"], 50), "x": np.arange(100.0)})
        >>> rel = dpm.release(df, columns=["g", "x"], epsilon=1.0, bounds={"x": (0, 100)},
        ...                   levels={"g": ["a", "b"]}, bins=5, random_state=0)
        >>> list(rel.marginal(["g"]).columns)
        ['g', 'count']
        """
        variables = list(dict.fromkeys(variables))
        missing = [v for v in variables if v not in self.domain.names]
        if missing:
            raise UnknownVariableError(
                f"the release has no variable {', '.join(map(repr, missing))}; it holds "
                f"{list(self.domain.names)}: make a release that includes it"
            )
        if variables == list(self.domain.names):
            return self.cells
        idx = [self.domain.names.index(v) for v in variables]
        sub = Domain(tuple(self.domain.axes[i] for i in idx))
        codes = self.domain.decode(self.cell_ids)
        sub_ids = sub.encode([codes[i] for i in idx]) if idx else np.zeros(self.cell_ids.size, np.uint64)
        uniq, inv = np.unique(sub_ids, return_inverse=True)
        sums = np.bincount(inv, weights=self.counts, minlength=uniq.size).astype(np.int64)
        keep = sums != 0
        frame = sub.frame(uniq[keep]) if idx else pd.DataFrame(index=range(int(keep.sum())))
        frame[self.count_column] = sums[keep]
        return frame

    def sample(self, size: int | None = None, random_state=None,
               within: str = "uniform") -> pd.DataFrame:
        """Synthetic rows drawn from the release (post-processing: free).

        Wasserman & Zhou's perturbed histogram sampling: each row's cell is
        drawn with probability proportional to its released count (a signed
        release's negative counts count as 0), then a point inside the cell.
        See `dpmodels.mechanisms.synthetic`.

        Parameters
        ----------
        size : int, optional
            Number of rows; None draws as many as the release's noisy total.
        random_state : None, int or numpy.random.Generator
            None: OS-seeded; a seed makes the draw reproducible.
        within : {"uniform", "density"}
            A continuous variable uniform inside its bin (on the axis's
            binning scale), or from the within-cell density fitted to the
            release (`dpmodels.domain.representatives`).

        Returns
        -------
        pandas.DataFrame
            One column per variable, in domain order: continuous variables
            float64, discrete ones in the type of their declared levels.

        Examples
        --------
        >>> import numpy as np, pandas as pd, dpmodels as dpm
        >>> df = pd.DataFrame({"g": np.repeat(["a", "b"], 50), "x": np.arange(100.0)})
        >>> rel = dpm.release(df, columns=["g", "x"], epsilon=1.0, bounds={"x": (0, 100)},
        ...                   levels={"g": ["a", "b"]}, bins=5, random_state=0)
        >>> rows = rel.sample(size=20, random_state=1)
        >>> rows.shape, rows["g"].dtype.name, rows["x"].dtype.name
        ((20, 2), 'category', 'float64')
        """
        return sample_release(self, size=size, random_state=random_state, within=within)

    def simulators(self, population: str = "deconvolved") -> list:
        """The simulations of this release that the parametric bootstrap
        (`dpmodels.inference.bootstrap.parametric_bootstrap()`) draws its replicate
        releases from: the discrete Laplace release of a population estimated
        from the cells (post-processing).  With ``population="deconvolved"``
        and a deconvolution that moved mass, the smooth population too (the
        bootstrap takes per coefficient the larger error of the two).  A
        release made by another mechanism (a local release's histogram)
        overrides this with its own mechanism's simulation."""
        sims = [ReleaseSimulator(self, population=population)]
        if population == "deconvolved" and sims[0].deconvolved:
            sims.append(ReleaseSimulator(self, population="smooth"))
        return sims

    def save(self, path: str | os.PathLike) -> pathlib.Path:
        """Write the release to a JSON file (gzip if ``path`` ends in ``.gz``):
        its public domain, released cells and counts and privacy report,
        nothing else (no raw row).  Read it back with
        `dpmodels.load_release()`; see `dpmodels.front.saved`.

        Parameters
        ----------
        path : str or os.PathLike
            The file to write (``.json`` or ``.json.gz``).

        Returns
        -------
        pathlib.Path
            The path written.

        Examples
        --------
        >>> import tempfile, numpy as np, pandas as pd, dpmodels as dpm
        >>> df = pd.DataFrame({"g": np.repeat(["a", "b"], 50)})
        >>> rel = dpm.release(df, columns=["g"], epsilon=1.0, levels={"g": ["a", "b"]},
        ...                   random_state=0)
        >>> path = rel.save(tempfile.mkdtemp() + "/g.json")
        >>> dpm.load_release(path).report == rel.report
        True
        """
        return save_release(self, path)

    def plot(self, x: str | None = None, y: str | None = None, ax=None):
        """Bars (``x``) or a heat map (``x`` by ``y``) of the released marginal
        counts, the threshold marked (post-processing: free); without ``x``,
        every variable's bars, one panel each.  Returns the matplotlib
        Figure.  See `dpmodels.output.plots.plot_release()`.

        Parameters
        ----------
        x : str, optional
            The variable on the horizontal axis (default: every variable).
        y : str, optional
            A second variable: a heat map of ``x`` by ``y``.
        ax : matplotlib Axes, optional
            Where to draw (default: a new figure).

        Returns
        -------
        matplotlib.figure.Figure
        """
        return plot_release(self, x, y, ax=ax)

    def __repr__(self) -> str:
        eps = self.report.epsilon
        return (
            f"PrivateHistogram(variables={list(self.domain.names)}, epsilon={eps:g}, "
            f"domain_cells={self.domain.size:,}, released_cells={self.cell_ids.size:,})"
        )

    def __str__(self) -> str:
        return repr(self) + "\n" + str(self.report)


@dataclass(frozen=True)
class ThresholdSpec:
    """A resolved threshold: rule name, integer cut k (keep counts >= k)."""

    rule: str
    value: float | None
    k: int | None
    A: float | None


def release_variables(cols: Sequence[str], formula: str | None, columns, namespace):
    """The variables a release counts: ``(names, discrete, scales)`` of the
    formula's variables (evaluated in ``namespace``), or the ``columns``
    given (none discrete, linear scales); an unknown column is an error."""
    if formula is not None:
        fv = formula_variables(formula, cols, namespace)
        return fv.names, fv.discrete, dict(fv.scales)
    if isinstance(columns, str):
        columns = [columns]
    names = tuple(dict.fromkeys(columns))
    unknown = [c for c in names if c not in cols]
    if unknown:
        raise UnknownVariableError(
            f"no column {', '.join(map(repr, unknown))} in the data (columns: {list(cols)[:20]})")
    return names, frozenset(), {}


def _exact_total(counts: np.ndarray) -> int:
    """Sum of int64 counts as an exact Python int (no int64 overflow)."""
    if counts.size == 0:
        return 0
    if int(np.abs(counts).max()) < (2**63 - 1) // counts.size:
        return int(counts.sum())
    return sum(int(c) for c in counts.tolist())


def resolve_threshold(threshold, epsilon: float, n: int, A: float, m: int | None = None,
                      max_spurious_cells: float = math.inf) -> ThresholdSpec:
    """Turn the ``threshold`` argument into a rule and an integer cut.

    Noisy counts are integers, so "keep counts >= t" is "keep counts >= ceil(t)".
    ``"auto"`` needs the domain size ``m`` (see `dpmodels.core.thresholds`).
    A cut that does not fit in a 64-bit integer (e.g. ``A * log(n) / epsilon``
    with a tiny epsilon) is refused with a `DPModelsError`.
    """
    if math.isinf(epsilon):
        return ThresholdSpec("none (exact counts, no noise)", None, None, None)
    if threshold is None:
        return ThresholdSpec("none (signed counts, Lei's Algorithm 1)", None, None, None)
    if isinstance(threshold, str):
        if threshold in ("enhanced", "auto"):
            if not (isinstance(A, numbers.Real) and not isinstance(A, bool)
                    and math.isfinite(A) and A > 0):
                raise DPModelsError(f"threshold_A must be a finite number > 0, got {A!r}")
            t: float = A * math.log(n) / epsilon
            if not (math.isfinite(t) and math.ceil(t) <= INT64_MAX):
                raise DPModelsError(
                    f"the {threshold} threshold threshold_A*log(n)/epsilon = {A:g}*log({n})/"
                    f"{epsilon:g} = {t:.3g} does not fit in a 64-bit integer: use a larger "
                    "epsilon or a smaller threshold_A"
                )
        if threshold == "enhanced":
            return ThresholdSpec("enhanced", t, math.ceil(t), float(A))
        if threshold == "auto":
            if m is None:
                raise ValueError('threshold="auto" needs the domain size m')
            k = auto_threshold(m, n, epsilon, float(A), max_spurious_cells=max_spurious_cells)
            if k > INT64_MAX:  # pragma: no cover - k stays near the enhanced cut
                raise DPModelsError(
                    f'threshold="auto" needs the cut {k}, which does not fit in a 64-bit '
                    "integer: use a larger epsilon or a smaller domain")
            bound = f"expected spurious mass <= {AUTO_SPURIOUS_FRACTION:.0%} of n"
            if k == math.ceil(t):  # the enhanced threshold already meets the bound
                return ThresholdSpec(f"auto ({bound}): enhanced, A={float(A):g}", t, k, float(A))
            return ThresholdSpec(f"auto ({bound}; above enhanced A={float(A):g})", float(k), k,
                                 float(A))
        if threshold == "zero":
            return ThresholdSpec("zero (negative counts set to 0, Lei's Algorithm 1')", 1.0, 1, None)
        raise DPModelsError(
            f'threshold must be "enhanced", "auto", "zero", a number or None, got {threshold!r}'
        )
    if (isinstance(threshold, bool) or not isinstance(threshold, numbers.Real)
            or not math.isfinite(threshold) or abs(int(math.ceil(threshold))) > INT64_MAX):
        raise DPModelsError(
            f'threshold must be "enhanced", "auto", "zero", a finite number (whose integer '
            f'cut fits in a 64-bit integer) or None, got {threshold!r}'
        )
    return ThresholdSpec("fixed", float(threshold), int(math.ceil(threshold)), None)


@checked_keywords
def release(
    data,
    *,
    columns: Sequence[str] | None = None,
    formula: str | None = None,
    epsilon: float,
    bounds: Mapping[str, tuple[float, float]] | None = None,
    levels: Mapping[str, Sequence] | None = None,
    bins: int | Mapping[str, int] | str = "auto",
    threshold: str | float | None = "enhanced",
    threshold_A: float = DEFAULT_A,
    n: int | None = None,
    random_state: None | int | np.random.Generator = None,
    accountant: Accountant | None = None,
    missing: str = "drop",
    max_spurious_cells: float = DEFAULT_MAX_SPURIOUS_CELLS,
    namespace: Mapping[str, object] | None = None,
    domain_check: Callable[[Domain], None] | None = None,
) -> PrivateHistogram:
    """Release an epsilon-differentially private joint histogram.

    Parameters
    ----------
    data : pandas.DataFrame, mapping of str to array-like, or an engine's frame
        The raw rows. Read once; never modified. A Polars DataFrame or
        LazyFrame, a Dask DataFrame, a DuckDB relation or a PySpark DataFrame
        is binned and counted inside its engine (`dpmodels.data.engines`):
        only the non-empty cells' counts reach this process.
    columns : sequence of str, optional
        The variables to release. Give this or ``formula``.
    formula : str, optional
        A patsy formula; its raw variables are released.
    epsilon : float
        Privacy parameter (> 0). ``float("inf")`` releases exact counts and
        is NOT private (for checks only).
    bounds : dict of str to (low, high) or Unbounded
        Public bounds of each continuous variable. Values outside are clipped
        into the edge bins.  A variable without public bounds may be declared
        `Unbounded` ``(center, scale)``: binned on a public
        logistic scale (see ``docs/unbounded.md``).
    levels : dict of str to list or "dtype"
        Public level set of each discrete variable (not needed for a bool
        column or a Polars Enum, whose type declares it).  ``"dtype"`` takes
        a pandas Categorical's categories as the declared levels: say so only
        when they were set from public knowledge, not built from the data.
    bins : int, dict or "auto"
        Equal-width bins per continuous variable (at most
        `dpmodels.domain.axes.MAX_BINS`); "auto" applies
        `dpmodels.domain.axes.auto_bins()` to public inputs only.  Every key of
        ``bounds``, ``levels`` and ``bins`` must be a column of the data (a
        typo is an error; columns the formula does not use are fine).
    threshold : "enhanced", "auto", "zero", float or None
        "enhanced" (default): keep cells whose noisy count is >=
        ``A*log(n)/epsilon`` (Lei 2011, §4.2); "auto": the smallest cut at
        or above the enhanced one whose expected spurious mass is at most 1%
        of n (and whose expected spurious cells are at most
        ``max_spurious_cells``), from (m, n, epsilon) only
        (`dpmodels.core.thresholds`; for large domains, see
        ``docs/scaling.md``); "zero": ``max(count, 0)`` (Algorithm 1'); a number:
        that threshold; None: signed counts (Algorithm 1; dense, so only for
        domains of at most ``max_spurious_cells`` cells).
    threshold_A : float
        Lei's constant A of the enhanced rule (default 0.5, finite and > 0),
        also the floor of "auto".
    n : int, optional
        The public number of rows; by default the number of rows handed in
        (before any missing-value drop).  A declared n more than a factor 2
        away from the rows handed in gives a `ReleaseWarning`
        (in-memory data).  Zero rows handed in is an error.
    random_state : None, int or numpy.random.Generator
        None draws from the OS's secure entropy; a seed makes the release
        reproducible (the report says so).
    accountant : Accountant, optional
        Charged ``epsilon``; refuses before reading data if it does not fit.
    missing : {"drop", "raise"}
        Rows with a missing value in a released variable are dropped (and not
        counted or reported), or refused.
    max_spurious_cells : float
        Refuse, before reading data, a release whose expected number of
        spurious cells ``m * P(Z >= t)`` exceeds this.  A finite number > 0:
        it bounds the release's memory (``inf`` is refused).
    namespace : mapping, optional
        Names a formula may use besides columns (defaults to the caller's).
    domain_check : callable, optional
        Called with the public `Domain` as soon as it
        is built, before the budget check, the pass over the rows and any
        noise; it raises to refuse the release (models use it to check their
        response's declared levels).

    Returns
    -------
    PrivateHistogram

    Raises
    ------
    DPModelsError
        Any bad argument (`dpmodels.data.validation`; a
        `DPModelsTypeError`, also a ``TypeError``,
        for a wrong type), raised before the accountant is charged, before
        any row is read and before any noise is drawn.

    Examples
    --------
    >>> import dpmodels as dpm
    >>> df = dpm.datasets.housing(n=5000, seed=1)
    >>> rel = dpm.release(df, formula="price ~ size + year + C(county)", epsilon=1.0,
    ...                   bounds={"price": (1e5, 9e5), "size": (0, 3000)},
    ...                   levels={"year": [1, 2, 3, 4],
    ...                           "county": [f"County{i}" for i in range(1, 7)]},
    ...                   bins=10, random_state=0)
    >>> rel.report.domain_cells
    2400
    >>> int(rel.cells["count"].min()) >= rel.report.threshold
    True
    """
    # ---- public inputs only, before any row is read -------------------------------
    check_release_arguments(  # every argument (dpmodels.data.validation); random_state first
        data, columns=columns, formula=formula, epsilon=epsilon, bounds=bounds, levels=levels,
        bins=bins, threshold=threshold, threshold_A=threshold_A, n=n,
        random_state=random_state, accountant=accountant, missing=missing,
        max_spurious_cells=max_spurious_cells, namespace=namespace, domain_check=domain_check)
    epsilon = check_epsilon(epsilon)
    source = source_for(data)  # a lazy/distributed engine, or None for in-memory data
    cols = source.columns() if source is not None else columns_of(data)
    if formula is not None and namespace is None:
        namespace = caller_namespace(1)
    names, discrete, scales = release_variables(cols, formula, columns, namespace)
    if source is None:
        check_used_columns(data, names)  # string labels, no duplicates, 1-d columns
    if n is None:
        n_public = source.nrows() if source is not None else nrows(data)
        check_row_count(None, n_public)  # no empty input
        n_source = "rows handed in"
    else:
        n_public, n_source = int(n), "declared by the caller"
    dtypes = (source.dtypes(names) if source is not None  # schema only, never values
              else {nm: dtype_of(data, nm) for nm in names})
    check_dtypes(dtypes)
    domain = build_domain(
        names, dtypes, discrete=discrete,
        bounds=bounds, levels=levels, bins=bins, n=max(n_public, 2), epsilon=epsilon,
        data_columns=cols, scales=scales,
    )
    if domain_check is not None:
        domain_check(domain)
    m = domain.size
    # a share of epsilon for the rows outside the bounds (dpmodels.data.clipping) when a
    # variable can clip; the cells' noise, threshold and spurious law use the rest
    clip_axes = clipping_axes(domain)
    eps_c, eps_h = math.inf, epsilon
    if clip_axes and math.isfinite(epsilon):
        eps_c, eps_h = split_epsilon(epsilon, [CLIP_SHARE, None])
        if eps_c < MIN_EPSILON:
            raise DPModelsError(f"epsilon={epsilon!r} is too small to split (the outside "
                                f"counts' part {eps_c:.3g} is below {MIN_EPSILON:g})")
    thr = resolve_threshold(threshold, eps_h, max(n_public, 2), threshold_A, m,
                            max_spurious_cells)
    if math.isinf(epsilon):
        expected_spurious = 0.0
    elif thr.k is None:
        expected_spurious = float(m)
    else:
        expected_spurious = m * discrete_laplace_sf(thr.k, eps_h)
    if expected_spurious > max_spurious_cells:
        what = ("a signed (unthresholded) release perturbs and keeps all"
                if thr.k is None else "the threshold lets through about")
        raise DomainTooLargeError(
            f"{what} {expected_spurious:.3g} cells of pure noise in a domain of {m:.3g} cells "
            f"(limit max_spurious_cells={max_spurious_cells:.3g}): use fewer bins or fewer "
            "variables, a higher threshold (threshold='auto', which scales with the domain; "
            "threshold='enhanced' with a larger threshold_A; or a number), or raise "
            "max_spurious_cells"
        )
    if math.isfinite(epsilon):  # the noise's memory, known from public inputs alone
        check_noise_cells(expected_spurious, m, signed=thr.k is None)
    if n is not None and source is None:  # (an engine would need a counting query)
        check_row_count(n, nrows(data))  # no empty input; a declared n far from it warns
    def announce() -> None:
        if math.isinf(epsilon):
            warnings.warn(
                "epsilon=inf: the release holds EXACT counts and is NOT differentially "
                "private. Use it only to check results against the non-private fit.",
                NotPrivateWarning, stacklevel=user_stacklevel(),
            )

    def read():  # the pass over the raw rows (and the count of rows outside the bounds)
        if source is not None:
            exact = source.count(domain, missing=missing)  # binned and counted in the engine
        else:
            try:
                exact = count_cells({nm: data[nm] for nm in names}, domain, missing=missing)
            except TypeError:  # e.g. unhashable values (lists, dicts) in a discrete column
                raise unreadable_values_error(data, domain) from None
        return exact, exact_outside(data, clip_axes)

    def measure(first, bits, budget: str) -> PrivateHistogram:
        # noise: only after the counts were taken without error (the noise source is the
        # OS secure generator unless seeded: rule 7)
        exact, outside_exact = first
        del first
        if math.isinf(epsilon):
            noisy = NoisyCells(exact.ids, exact.counts)
        else:
            if thr.k is None:
                noisy = noisy_signed_dense(bits, eps_h, exact.ids, exact.counts, m)
            else:
                noisy = noisy_threshold_sparse(bits, eps_h, exact.ids, exact.counts, m, thr.k)
        del exact
        outside = released_outside(outside_exact, clip_axes, n_public, eps_c, bits)
        split = (((HISTOGRAM_PART, eps_h), (clip_split_label(len(clip_axes)), eps_c))
                 if clip_axes and math.isfinite(epsilon) else ())

        report = PrivacyReport(
            epsilon=epsilon,
            private=math.isfinite(epsilon),
            mechanism=MECHANISM if math.isfinite(epsilon) else "none (exact counts)",
            noise_scale=2.0 / eps_h,
            sensitivity=2,
            threshold_rule=thr.rule,
            threshold_A=thr.A,
            threshold=thr.value,
            n=n_public,
            n_source=n_source,
            variables=tuple(domain.describe().items()),
            domain_cells=m,
            expected_spurious_cells=expected_spurious,
            released_cells=int(noisy.ids.size),
            noisy_total=_exact_total(noisy.counts),
            seeded=bits.seeded,
            budget=budget,
            split=split,
            outside_bounds=outside,
        )
        return PrivateHistogram(domain, noisy.ids, noisy.counts, report)

    return run_release(epsilon=epsilon, label=f"release of {list(names)}", accountant=accountant,
                       random_state=random_state, read=read, measure=measure, announce=announce)
