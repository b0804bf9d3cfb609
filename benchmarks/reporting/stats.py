"""Statistics for the report: bootstrap confidence intervals of a mean and of a difference of means, independent
or paired (via scipy)."""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence

import numpy as np
from scipy import stats

__all__ = ["bootstrap_ci", "difference_ci", "paired_difference_ci"]


def bootstrap_ci(values: Sequence[float], n_boot: int = 2000, seed: int = 0) -> tuple[float, float]:
    """95 % percentile-bootstrap CI of the mean (``scipy.stats.bootstrap``); (nan, nan) for
    fewer than 2 values.

    >>> bootstrap_ci([1.0])
    (nan, nan)
    >>> bootstrap_ci([0.5, 0.5, 0.5])
    (0.5, 0.5)
    >>> lo, hi = bootstrap_ci([0.0, 1.0, 0.0, 1.0]); 0.0 <= lo < 0.5 < hi <= 1.0
    True
    """
    v = np.asarray(values, dtype=float)
    if len(v) < 2:
        return math.nan, math.nan
    if np.all(v == v[0]):
        return float(v[0]), float(v[0])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = stats.bootstrap((v,), np.mean, n_resamples=n_boot, confidence_level=0.95,
                              method="percentile", rng=np.random.default_rng(seed))
    return float(res.confidence_interval.low), float(res.confidence_interval.high)


def difference_ci(a: Sequence[float], b: Sequence[float], n_boot: int = 5000,
                  seed: int = 0) -> tuple[float, float, float]:
    """``mean(a) - mean(b)`` and its 95 % percentile-bootstrap CI (independent samples,
    ``scipy.stats.bootstrap``); NaNs for fewer than 2 finite values on either side.

    >>> d, lo, hi = difference_ci([1.0, 0.9, 1.0], [0.0, 0.1, 0.0])
    >>> round(d, 2), lo > 0
    (0.93, True)
    """
    x, y = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    x, y = x[np.isfinite(x)], y[np.isfinite(y)]
    if len(x) < 2 or len(y) < 2:
        return math.nan, math.nan, math.nan
    diff = float(x.mean() - y.mean())
    if np.ptp(np.concatenate([x, y])) == 0:
        return diff, diff, diff
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = stats.bootstrap((x, y), lambda u, v, axis=-1: u.mean(axis=axis) - v.mean(axis=axis),
                              n_resamples=n_boot, confidence_level=0.95, method="percentile",
                              vectorized=True, rng=np.random.default_rng(seed))
    return diff, float(res.confidence_interval.low), float(res.confidence_interval.high)


def paired_difference_ci(a: Sequence[float], b: Sequence[float], n_boot: int = 5000,
                         seed: int = 0) -> tuple[float, float, float]:
    """``mean(a - b)`` over paired units and its 95 % percentile-bootstrap CI (the pairs' differences
    resampled, ``scipy.stats.bootstrap``); NaNs for fewer than 2 pairs.

    >>> paired_difference_ci([1.0, 0.75, 0.5], [0.5, 0.25, 0.0])  # every pair 0.5 apart
    (0.5, 0.5, 0.5)
    >>> d, lo, hi = paired_difference_ci([0.5, 0.9, 0.9, 0.4, 0.8], [0.4, 0.6, 0.8, 0.2, 0.7])
    >>> round(d, 2), 0 < lo < d < hi
    (0.16, True)

    Raises:
        ValueError: ``a`` and ``b`` are of different lengths.
    """
    x, y = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if x.shape != y.shape:
        raise ValueError(f"paired samples must be of one length, got {len(x)} and {len(y)}")
    if len(x) < 2:
        return math.nan, math.nan, math.nan
    d = x - y
    if np.all(d == d[0]):
        return float(d[0]), float(d[0]), float(d[0])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = stats.bootstrap((d,), np.mean, n_resamples=n_boot, confidence_level=0.95, method="percentile",
                              rng=np.random.default_rng(seed))
    return float(d.mean()), float(res.confidence_interval.low), float(res.confidence_interval.high)
