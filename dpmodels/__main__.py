"""The ``dpmodels`` command.

Usage::

    dpmodels demo [--epsilon EPS] [--seed SEED] [--n N]
    dpmodels --version

(``python -m dpmodels ...`` is equivalent.)  ``demo`` fits a differentially
private OLS to the synthetic housing data of :func:`dpmodels.datasets.housing`
and compares it with the non-private fit.
"""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Sequence

import statsmodels.formula.api as smf

from . import __version__, datasets, dp_ols
from .errors import DPModelsError

__all__ = ["main", "demo"]

#: The model of Lei (2011, Section 4.3).
DEMO_FORMULA = "price ~ size + year + C(county)"
#: Public bounds of the continuous variables (Lei's preprocessing filters).
DEMO_BOUNDS = {"price": (1e5, 9e5), "size": (0, 3000)}
#: Public level sets of the discrete variables.
DEMO_LEVELS = {"county": [f"County{i}" for i in range(1, 7)], "year": [1, 2, 3, 4]}


def demo(epsilon: float = 1.0, seed: int | None = None, n: int = 250_070, *, file=None) -> int:
    """Fit DP OLS to the housing data and compare it with the non-private fit.

    Builds ``datasets.housing(n=n, seed=0)``, fits
    ``dp_ols("price ~ size + year + C(county)", ...)`` with the public bounds
    ``price in [1e5, 9e5]``, ``size in [0, 3000]`` and the declared levels of
    ``county`` and ``year`` (default bins and threshold), prints its summary
    (with the privacy block), then each private coefficient beside the
    non-private OLS coefficient with the relative error in percent.

    Parameters
    ----------
    epsilon : float, default 1.0
        Privacy parameter of the release.
    seed : int, optional
        Seed of the privacy noise (reproducible output).  By default the noise
        comes from the operating system's secure entropy, so every run differs.
    n : int, default 250_070
        Number of rows of the simulated data set.
    file : file-like, optional
        Where to print (default: ``sys.stdout``).

    Returns
    -------
    int
        0 on success.
    """
    out = sys.stdout if file is None else file
    df = datasets.housing(n=n, seed=0)
    res = dp_ols(
        DEMO_FORMULA, data=df, epsilon=epsilon, bounds=DEMO_BOUNDS, levels=DEMO_LEVELS,
        random_state=seed,
    ).fit()
    ols = smf.ols(DEMO_FORMULA, data=df).fit()

    print(f"Differentially private OLS on datasets.housing(n={n}, seed=0): {DEMO_FORMULA}",
          file=out)
    print(file=out)
    print(res.summary(), file=out)
    print(file=out)
    print(_comparison_table(res.params, ols.params), file=out)
    return 0


def _comparison_table(private, nonprivate) -> str:
    """Private vs non-private coefficients with ``|b_dp / b_ols - 1|`` in percent."""
    names = list(nonprivate.index)
    private = private.reindex(names)
    head = ("term", "DP estimate", "OLS (non-private)", "rel. error %")
    rows = []
    errors = []
    for name in names:
        b_dp, b_ols = float(private[name]), float(nonprivate[name])
        rel = abs(b_dp / b_ols - 1.0) * 100.0 if b_ols != 0 else math.nan
        errors.append(rel)
        rows.append((name, f"{b_dp:,.2f}", f"{b_ols:,.2f}", f"{rel:.2f}"))
    finite = [e for e in errors if math.isfinite(e)]
    mean = f"{sum(finite) / len(finite):.2f}" if finite else "nan"
    widths = [max(len(r[i]) for r in rows + [head]) for i in range(4)]

    def fmt(r):
        return (f"{r[0]:<{widths[0]}}  " + "  ".join(f"{v:>{w}}" for v, w in zip(r[1:], widths[1:])))

    title = "Private vs non-private coefficients (rel. error = |b_dp / b_ols - 1|)"
    rule = "=" * max(len(fmt(head)), len(title))
    lines = [title, rule, fmt(head), "-" * len(rule)] + [fmt(r) for r in rows]
    lines += ["-" * len(rule), fmt(("mean", "", "", mean)), rule,
              "The OLS column is computed on the raw data for comparison only: it is NOT private."]
    return "\n".join(lines)


def _positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {text}")
    return value


def _positive_float(text: str) -> float:
    value = float(text)
    if not value > 0:  # also refuses nan
        raise argparse.ArgumentTypeError(f"must be > 0, got {text}")
    return value


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the ``dpmodels`` command."""
    parser = argparse.ArgumentParser(
        prog="dpmodels",
        description="Differentially private regression from statsmodels formulas "
                    "(Lei's perturbed histograms).",
    )
    parser.add_argument("--version", action="store_true",
                        help="print the dpmodels version and exit")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    p_demo = sub.add_parser(
        "demo", help="fit DP OLS to the synthetic housing data and compare with OLS",
        description="Fit dp_ols('price ~ size + year + C(county)') to "
                    "dpmodels.datasets.housing() and compare it with the non-private OLS fit.",
    )
    p_demo.add_argument("--epsilon", type=_positive_float, default=1.0,
                        help="privacy parameter (default: 1)")
    p_demo.add_argument("--seed", type=int, default=None,
                        help="seed of the privacy noise (default: OS secure entropy, "
                             "different every run)")
    p_demo.add_argument("--n", type=_positive_int, default=250_070,
                        help="number of simulated houses (default: 250070, as in Lei 2011)")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``dpmodels`` command.

    Parameters
    ----------
    argv : sequence of str, optional
        Command-line arguments without the program name (default:
        ``sys.argv[1:]``).

    Returns
    -------
    int
        The exit status: 0 on success, 1 if the fit failed, 2 on a usage error.
    """
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # --help or a usage error: return, don't exit
        return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 2)
    if args.version:
        print(f"dpmodels {__version__}")
        return 0
    if args.command == "demo":
        try:
            return demo(epsilon=args.epsilon, seed=args.seed, n=args.n)
        except (DPModelsError, ValueError) as exc:
            print(f"dpmodels demo: error: {exc}", file=sys.stderr)
            return 1
    parser.print_help(sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
