"""The bank's utility rules: crediting an entry, and which entries eviction takes first."""

from __future__ import annotations

import numpy as np

from .provenance import CURATED

__all__ = ["credit", "eviction_order"]


def credit(utility: np.ndarray, n_credited: np.ndarray, slots: list[int], deltas: list[float], decay: float,
           warmup: bool) -> None:
    """Credit entries in place, in order: ``u <- u + step * (delta - u)`` and ``n_credited += 1``.

    ``step`` is ``1 - decay`` (an exponential moving average), or with ``warmup``
    ``max(1 - decay, 1 / (n_credited + 2))``: a running mean over the first credits.

    >>> u, n = np.zeros(1), np.zeros(1, np.int64)
    >>> credit(u, n, [0, 0], [1.0, 1.0], 0.9, warmup=True); u.round(3).tolist(), n.tolist()
    ([0.667], [2])
    """
    for s, delta in zip(slots, deltas, strict=True):
        step = max(1.0 - decay, 1.0 / (int(n_credited[s]) + 2)) if warmup else 1.0 - decay
        utility[s] += step * (delta - utility[s])
        n_credited[s] += 1


def eviction_order(ids: np.ndarray, utility: np.ndarray, provenance: np.ndarray) -> np.ndarray:
    """Positions in eviction order: lowest utility first, then oldest (lowest id); curated
    entries (demonstrations) only after every other entry.

    >>> eviction_order(np.array([0, 1, 2]), np.array([0.5, 0.1, 0.1]), np.array([0, 1, 0])).tolist()
    [2, 0, 1]
    """
    return np.lexsort((ids, utility, np.isin(provenance, CURATED)))
