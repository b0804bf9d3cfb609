"""Statistics for the report: bootstrap confidence intervals of a mean (via scipy)."""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence

import numpy as np
from scipy import stats

__all__ = ["bootstrap_ci"]


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
