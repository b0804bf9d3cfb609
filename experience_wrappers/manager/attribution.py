"""Outcome attribution: the delta a guided episode earned against experience-free ones."""

from __future__ import annotations

import logging
import math
from collections import defaultdict, deque

import numpy as np

log = logging.getLogger(__name__)

__all__ = ["FreeBaseline", "utility_decay"]


def utility_decay(progress: float, start: float = 0.99, end: float = 0.95) -> float:
    """Cosine schedule of the utility EMA decay from ``start`` (progress 0) to ``end`` (progress 1).

    >>> utility_decay(0.0), utility_decay(1.0), round(utility_decay(0.5), 3)
    (0.99, 0.95, 0.97)
    """
    p = min(max(float(progress), 0.0), 1.0)
    return end + (start - end) * 0.5 * (1.0 + math.cos(math.pi * p))


class FreeBaseline:
    """Running outcome statistics of experience-free episodes, per task.

    The delta of a guided episode is its outcome minus the mean outcome of the last
    ``window`` experience-free episodes of the same task. When outcomes are returns
    (no success signal), deltas are divided by the spread of those returns so that
    utilities stay on a scale the retrieval temperature suits; success deltas are kept
    as they are (they already lie in [-1, 1]).

    >>> b = FreeBaseline(window=3)
    >>> b.delta(0, 1.0, is_success=True) is None   # no free episode yet
    True
    >>> b.add(0, 0.0); b.add(0, 1.0)
    >>> b.delta(0, 1.0, is_success=True)
    0.5

    Outcomes must be finite: a NaN or inf is refused where it arrives (``ValueError``), so
    it never enters the window, whose mean every later delta depends on.
    """

    def __init__(self, window: int = 100) -> None:
        if window <= 0:
            raise ValueError(f"window must be > 0, got {window!r}")
        self.window = window
        self._outcomes: dict[int, deque[float]] = defaultdict(lambda: deque(maxlen=window))

    def add(self, task_id: int, outcome: float) -> None:
        self._outcomes[int(task_id)].append(_finite("outcome", outcome))

    def mean(self, task_id: int) -> float | None:
        q = self._outcomes.get(int(task_id))
        return float(np.mean(q)) if q else None

    def delta(self, task_id: int, outcome: float, is_success: bool) -> float | None:
        """The delta of a guided outcome, or None before any free episode of the task."""
        outcome = _finite("outcome", outcome)
        q = self._outcomes.get(int(task_id))
        if not q:
            return None
        d = outcome - float(np.mean(q))
        if not is_success:
            d /= max(float(np.std(q)), 1.0)
        return d

    def state_dict(self) -> dict[str, list[float]]:
        return {str(t): list(q) for t, q in self._outcomes.items()}

    def load_state_dict(self, state: dict[str, list[float]]) -> None:
        """Restore the windows; NaN or inf outcomes (saved by earlier versions) are dropped, with a warning."""
        outcomes: dict[int, list[float]] = {}
        dropped = 0
        for t, values in state.items():
            vals = [float(v) for v in values]
            kept = [v for v in vals if math.isfinite(v)]
            dropped += len(vals) - len(kept)
            outcomes[int(t)] = kept
        if dropped:
            log.warning("dropped %d NaN or inf outcomes from a saved free-episode baseline", dropped)
        self._outcomes.clear()
        for t, kept in outcomes.items():
            self._outcomes[t].extend(kept)


def _finite(name: str, x: float) -> float:
    v = float(x)
    if not math.isfinite(v):
        raise ValueError(f"{name} must be finite, got {x!r}: an episode with a NaN or inf reward or outcome "
                         "cannot be credited")
    return v
