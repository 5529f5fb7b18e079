"""Sufficient-statistics perturbation on the declared bounds: the design's
moments with all of epsilon on the moments.

The noisy-moments release (`dpmodels.mechanisms.moments`) spends 15% of
epsilon on private centres, scales and a clipping radius.  The textbook
mechanism (sufficient-statistics perturbation, as in Vu & Slavkovic 2009 and
the parametric-bootstrap baseline of Ferrando, Wang & Sheldon 2022 in
``benchmarks/power.py``) keeps that share: the rows are centred at and scaled
by the public ranges of their design columns and never clipped beyond them,
so its noise is scaled to the worst row of the declared box.  It is the valid
textbook reference inside the library.  Measured, the moments' intervals are
narrower in every cell, even where the bounds fit the data
(``benchmarks/results/ssp_vs_moments.md``, ``power_ssp_s47.md``): their private
radius fits the rows the data hold.

Mechanism (epsilon-DP, delta = 0, replace-one neighbours, public n)
------------------------------------------------------------------
1. **Public design space**, as the moments' step 1: patsy on a grid of
   public values fixes the columns and a public range per column; a row's
   design values are clamped to it and mapped to ``u_j`` in [-1, 1] (0/1
   dummies as they are).
2. **Moments (all of epsilon, less the outside counts' share when a
   variable can clip).**  Offsets 0, scales 1 and the public radius
   ``R = q_free + groups`` (a row's largest L1 norm: one per free coordinate,
   one per group of exclusive dummies), so no row is shrunk; quantized with
   the moments' quantum for R, and released with the moments' integer
   vector and its replace-one L1 sensitivity (`moments_sensitivity()`),
   exact discrete Laplace noise on every entry.

The public centres, scales and radius depend on public inputs only, so the
whole of epsilon goes to one noisy vector (PRIVACY.md rule 8: the report's
split lists it, and the outside counts' part when a variable can clip).
``epsilon=inf`` releases the exact moments, as the moments release does
(NOT private).  The release is a `PrivateMoments`; `dp_ols(method="ssp")`
fits it with the moments' least squares and parametric bootstrap
(`dpmodels.mechanisms.ssp.model`).  Tests:
``tests/mechanisms/ssp/test_ssp.py`` (sensitivity, split, noise law, claim
check, coverage).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import fields
from typing import ClassVar

import numpy as np

from ...core.accountant import Accountant
from ...core.budget import split_epsilon
from ...core.errors import DPModelsError
from ...core.exact import MIN_EPSILON, discrete_laplace
from ...core.keywords import checked_keywords
from ...core.report import MomentsReport
from ...data.clipping import (
    CLIP_SHARE,
    clipping_axes,
)
from ...data.clipping import split_label as clip_split_label
from ...domain.formula import caller_namespace
from ..moments import (
    CENTRE_SQUARES,
    DesignSpace,
    Passes,
    PrivateMoments,
    describe_axis,
    design_space,
    exact_statistics,
    moments_sensitivity,
    public_inputs,
    release_moments,
    row_units,
    unit_epsilon,
)
from ..pipeline import released_outside, run_release

__all__ = ["PrivateSSP", "release_ssp", "public_radius"]


class PrivateSSP(PrivateMoments):
    """Noisy moments of a formula's design on its declared bounds
    (`release_ssp()`): a `PrivateMoments` whose offsets are 0, scales 1 and
    radius the public `public_radius()`; everything derived from it is
    post-processing."""

    #: The release's kind in a saved file (`dpmodels.front.saved`).
    saved_kind: ClassVar[str] = "ssp"

    def __repr__(self) -> str:
        return (f"PrivateSSP({self.space.formula!r}, epsilon={self.report.epsilon:g}, "
                f"q={self.space.q})")


def public_radius(space: DesignSpace) -> float:
    """The largest L1 norm of a row of ``space``'s design in ``u`` units: 1 per
    free coordinate and 1 per group of exclusive dummies (public)."""
    return float(sum(row_units(space, np.ones(space.q))))


@checked_keywords
def release_ssp(
    data,
    *,
    formula: str,
    epsilon: float,
    bounds=None,
    levels=None,
    n: int | None = None,
    random_state=None,
    accountant: Accountant | None = None,
    missing: str = "drop",
    namespace: Mapping[str, object] | None = None,
    domain_check=None,
    chunk_rows: int = 1 << 18,
) -> PrivateSSP:
    """Release epsilon-DP moments of ``formula``'s design on its declared
    bounds (see the module notes).

    Parameters
    ----------
    data : pandas.DataFrame, mapping of str to array-like, or an engine's frame
        Raw rows, read once, never modified.
    formula : str
        A patsy formula with a numeric response.
    epsilon : float
        Privacy parameter (> 0); ``inf`` releases exact moments (NOT private).
    bounds, levels :
        Public domain, as for `dpmodels.release()`; the bounds are the scale of
        the noise, so declare them as tight as public knowledge allows.
    n : int, optional
        The public number of rows (default: rows handed in).
    random_state : None, int or Generator
        None draws from the OS's secure entropy.
    accountant : Accountant, optional
    missing : {"drop", "raise"}
    namespace : mapping, optional
        Names the formula may use besides columns.
    domain_check : callable, optional
        Called with the public domain before anything is read.
    chunk_rows : int
        Rows per chunk of the pass (memory only).

    Returns
    -------
    PrivateSSP

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> rng = np.random.default_rng(0)
    >>> df = pd.DataFrame({"x": rng.uniform(0, 1, 5000)})
    >>> df["y"] = 1 + 2 * df["x"] + rng.normal(0, 0.1, 5000)
    >>> rel = release_ssp(df, formula="y ~ x", epsilon=1.0,
    ...                   bounds={"x": (0, 1), "y": (0, 4)}, random_state=0)
    >>> rel.radius, rel.offsets.tolist(), rel.scales.tolist()   # public: no epsilon on them
    (2.0, [0.0, 0.0], [1.0, 1.0])
    >>> [round(part, 2) for _, part in rel.report.split]   # the moments, the outside counts
    [0.95, 0.05]
    """
    if namespace is None:
        namespace = caller_namespace(1)
    if isinstance(epsilon, (int, float)) and not isinstance(epsilon, bool) and epsilon == math.inf:
        # the exact moments (NOT private): the moments release's, which centres and
        # scales them at the data's own means for accuracy
        exact = release_moments(
            data, formula=formula, epsilon=epsilon, bounds=bounds, levels=levels, n=n,
            random_state=random_state, accountant=accountant, missing=missing,
            namespace=namespace, domain_check=domain_check, chunk_rows=chunk_rows)
        return PrivateSSP(**{f.name: getattr(exact, f.name) for f in fields(exact)})
    pub = public_inputs(data, formula=formula, epsilon=epsilon, bounds=bounds, levels=levels,
                        n=n, random_state=random_state, accountant=accountant,
                        missing=missing, namespace=namespace, domain_check=domain_check)
    epsilon, domain, names = pub.epsilon, pub.domain, pub.fv.names
    space = design_space(formula, domain, namespace, centre_squares=CENTRE_SQUARES)
    offsets, scales, radius = np.zeros(space.q), np.ones(space.q), public_radius(space)
    clip_axes = clipping_axes(domain)  # variables that can clip: their outside counts
    if clip_axes:  # the parts' exact sum is at most epsilon (dpmodels.core.budget)
        eps_c, eps_m = split_epsilon(epsilon, [CLIP_SHARE, None])
    else:
        eps_c, eps_m = math.inf, epsilon
    delta = moments_sensitivity(radius, space, offsets, scales)[3]
    if min(eps_c, eps_m) < MIN_EPSILON or unit_epsilon(eps_m, delta / 2.0) < MIN_EPSILON:
        raise DPModelsError(f"epsilon={epsilon!r} is too small to split (parts below "
                            f"{MIN_EPSILON:g})")

    def read():  # the one pass over the raw rows: every check of the rows happens in it
        passes = Passes(pub.data, space, domain, missing, chunk_rows, outside=clip_axes)
        return passes, passes.run(lambda rows_of: (exact_statistics(
            rows_of, space, offsets, scales, radius, chunk_rows), rows_of.outside))

    def measure(first, bits, budget: str) -> PrivateSSP:
        _, (stats, outside_exact) = first
        eps_unit = unit_epsilon(eps_m, stats.delta / 2.0)
        noisy_vector = [t + int(z) for t, z in zip(
            stats.vector, discrete_laplace(bits, eps_unit, len(stats.vector)))]
        count, sums, second = stats.decode(noisy_vector)
        split: tuple[tuple[str, float], ...] = ((
            f"moments on the declared bounds (L1 sensitivity {stats.delta:.4g} in units of "
            f"1/{stats.g}**2)", eps_m),)
        if clip_axes:
            split += ((clip_split_label(len(clip_axes)), eps_c),)
        outside = released_outside(outside_exact, clip_axes, pub.n, eps_c, bits)
        report = MomentsReport(
            epsilon=epsilon, private=True,
            mechanism=("noisy moments of the design on the declared bounds (sufficient-"
                       "statistics perturbation: rows centred and scaled by the public ranges, "
                       "not clipped), exact discrete Laplace"),
            split=split, n=pub.n, n_source=pub.n_source,
            variables=tuple((a.name, describe_axis(a)) for a in domain.axes),
            columns=space.exog_names + (space.endog_name,), radius=radius, clipped_rows=0.0,
            noisy_rows=count, seeded=bits.seeded, budget=budget, outside_bounds=outside)
        return PrivateSSP(space, float(count), np.asarray(sums, float), second,
                          stats.noise_var(eps_unit), radius, offsets, scales, report)

    return run_release(epsilon=epsilon, label=f"ssp moments of {list(names)}",
                       accountant=accountant, random_state=random_state, read=read,
                       measure=measure)
