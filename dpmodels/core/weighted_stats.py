"""Residual diagnostics for frequency-weighted data.

A cell with count w stands for w identical rows, so every statistic here
equals the unweighted statistic of the expanded data set (tested against
scipy and statsmodels on expanded data).  The normality tests follow
D'Agostino (1970) for the skewness and Anscombe & Glynn (1983) for the
kurtosis, with n the total weight.
"""

from __future__ import annotations

import numpy as np
from scipy import stats

__all__ = ["weighted_moments", "weighted_jarque_bera", "weighted_omni_normtest"]


def weighted_moments(x: np.ndarray, w: np.ndarray) -> tuple[float, float, float]:
    """Total weight n, skewness (biased, as scipy) and kurtosis (Pearson, not excess)."""
    x = np.asarray(x, float)
    w = np.asarray(w, float)
    n = w.sum()
    d = x - (w @ x) / n
    m2 = (w @ d**2) / n
    m3 = (w @ d**3) / n
    m4 = (w @ d**4) / n
    return float(n), float(m3 / m2**1.5), float(m4 / m2**2)


def weighted_jarque_bera(x, w) -> tuple[float, float, float, float]:
    """Jarque-Bera statistic, p-value, skewness and kurtosis of the expanded data."""
    n, skew, kurt = weighted_moments(x, w)
    jb = n / 6.0 * (skew**2 + (kurt - 3.0) ** 2 / 4.0)
    return jb, float(stats.chi2.sf(jb, 2)), skew, kurt


def _skew_z(skew: float, n: float) -> float:
    y = skew * np.sqrt((n + 1) * (n + 3) / (6.0 * (n - 2)))
    beta2 = 3.0 * (n * n + 27 * n - 70) * (n + 1) * (n + 3) / ((n - 2) * (n + 5) * (n + 7) * (n + 9))
    w2 = -1.0 + np.sqrt(2.0 * (beta2 - 1.0))
    delta = 1.0 / np.sqrt(0.5 * np.log(w2))
    alpha = np.sqrt(2.0 / (w2 - 1.0))
    y = y if y != 0 else 1.0
    return float(delta * np.arcsinh(y / alpha))


def _kurt_z(kurt: float, n: float) -> float:
    mean = 3.0 * (n - 1) / (n + 1)
    var = 24.0 * n * (n - 2) * (n - 3) / ((n + 1) ** 2 * (n + 3) * (n + 5))
    x = (kurt - mean) / np.sqrt(var)
    root_b1 = (6.0 * (n * n - 5 * n + 2) / ((n + 7) * (n + 9))
               * np.sqrt(6.0 * (n + 3) * (n + 5) / (n * (n - 2) * (n - 3))))
    a = 6.0 + 8.0 / root_b1 * (2.0 / root_b1 + np.sqrt(1.0 + 4.0 / root_b1**2))
    denom = 1.0 + x * np.sqrt(2.0 / (a - 4.0))
    if denom == 0:
        return float("nan")
    term = np.sign(denom) * abs((1.0 - 2.0 / a) / abs(denom)) ** (1.0 / 3.0)
    return float(((1.0 - 2.0 / (9.0 * a)) - term) / np.sqrt(2.0 / (9.0 * a)))


def weighted_omni_normtest(x, w) -> tuple[float, float]:
    """D'Agostino-Pearson omnibus K^2 statistic and p-value of the expanded data."""
    n, skew, kurt = weighted_moments(x, w)
    k2 = _skew_z(skew, n) ** 2 + _kurt_z(kurt, n) ** 2
    return float(k2), float(stats.chi2.sf(k2, 2))
