"""Credit, the reward rule: what a guided episode earned, and what each entry that guided it gets.

One home for the rule that the manager (bank utilities, extractor rewards), the SB3 callback
(distillation weights, the ``crl/outcome_delta`` log) and the benchmarks all follow:

* :func:`outcome_delta`: an episode's outcome against experience-free episodes of its task;
* :class:`FreeBaseline`: the windows of free outcomes, per task, that the delta is taken against;
* :func:`entry_reward`: the extractor reward of each entry that guided the episode (the delta,
  or a direct +1 / -1);
* :func:`distill_weight`: the weight of a guided episode's samples in experience distillation;
* :func:`utility_decay`: the decay of the bank's utility EMA over training;
* :class:`OutcomeTracker`: rolling guided and free outcomes and deltas, for logs and curves.

Plain numpy: no SB3, no integration.
"""

from __future__ import annotations

import logging
import math
from collections import defaultdict, deque

import numpy as np

log = logging.getLogger(__name__)

__all__ = ["EXTRACTOR_REWARDS", "FreeBaseline", "OutcomeTracker", "distill_weight", "entry_reward",
           "outcome_delta", "utility_decay"]

#: the rules :func:`entry_reward` knows (``ManagerConfig.extractor_reward``)
EXTRACTOR_REWARDS = ("delta", "direct")


def outcome_delta(outcome: float, free_mean: float | None, *, free_spread: float | None = None) -> float | None:
    """The outcome minus the mean outcome of free episodes, or None before any free episode.

    Args:
        outcome: the guided episode's outcome (its success, or its return).
        free_mean: mean outcome of the recent experience-free episodes of the same task
            (None: there is none yet, so there is no delta).
        free_spread: the standard deviation of those outcomes, or None. When given, the
            difference is divided by ``max(free_spread, 1)`` so that deltas of
            return-based outcomes stay on a scale the retrieval temperature suits.
            The manager gives it for return outcomes (success deltas already lie in
            [-1, 1]); :class:`~integrations.sb3.CRLCallback` gives none: its distillation
            weights and its ``crl/outcome_delta`` log use the unscaled difference.

    >>> outcome_delta(1.0, 0.25)
    0.75
    >>> outcome_delta(10.0, 4.0, free_spread=3.0), outcome_delta(10.0, 4.0, free_spread=0.5)
    (2.0, 6.0)
    >>> outcome_delta(1.0, None) is None
    True
    """
    if free_mean is None:
        return None
    d = outcome - free_mean
    if free_spread is not None:
        d /= max(free_spread, 1.0)
    return d


def entry_reward(delta: float, success: bool | None, rule: str = "delta") -> float:
    """The extractor reward of each entry that guided an episode with this ``delta``.

    Args:
        delta: the episode's :func:`outcome_delta` (as the manager computes it).
        success: the episode's success, or None where the env reports none.
        rule: ``"delta"`` (the reward is the delta) or ``"direct"`` (+1 for a success, -1
            for a failure; where the env reports no success, +1 when the delta is > 0).

    >>> entry_reward(0.25, True), entry_reward(0.25, False, "direct"), entry_reward(-2.0, None, "direct")
    (0.25, -1.0, -1.0)
    """
    if rule == "delta":
        return delta
    if rule != "direct":
        raise ValueError(f"rule must be one of {EXTRACTOR_REWARDS}, got {rule!r}")
    return 1.0 if (success if success is not None else delta > 0) else -1.0


def distill_weight(delta: float | None) -> float | None:
    """The weight of a guided episode's samples in experience distillation: ``min(delta, 1)``
    for an episode that beat the free baseline, None (not distilled) otherwise.

    >>> distill_weight(0.4), distill_weight(3.0), distill_weight(0.0), distill_weight(None)
    (0.4, 1.0, None, None)
    """
    if delta is None or not delta > 0:
        return None
    return min(delta, 1.0)


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
    ``window`` experience-free episodes of the same task (:func:`outcome_delta`). When
    outcomes are returns (no success signal), deltas are divided by the spread of those
    returns so that utilities stay on a scale the retrieval temperature suits; success
    deltas are kept as they are (they already lie in [-1, 1]).

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
        return outcome_delta(outcome, float(np.mean(q)), free_spread=None if is_success else float(np.std(q)))

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


class OutcomeTracker:
    """Rolling outcomes of guided and of free episodes, and outcome deltas, over the last ``window``.

    The manager, :class:`~integrations.sb3.CRLCallback` and the benchmarks' curve tracker
    each keep one (each sees episodes at its own place in the loop).

    >>> t = OutcomeTracker(window=2)
    >>> t.add(1.0, guided=True); t.add(0.0, guided=False); t.add(0.5, guided=False); t.add(1.0, guided=False)
    >>> t.add_delta(0.25)
    >>> t.means()
    {'guided': 1.0, 'free': 0.75, 'delta': 0.25}
    """

    def __init__(self, window: int = 100) -> None:
        self.guided: deque[float] = deque(maxlen=window)
        self.free: deque[float] = deque(maxlen=window)
        self.delta: deque[float] = deque(maxlen=window)

    def add(self, outcome: float, guided: bool) -> None:
        """Record a finished episode's outcome, as guided or free."""
        (self.guided if guided else self.free).append(outcome)

    def add_delta(self, delta: float) -> None:
        self.delta.append(delta)

    def means(self) -> dict[str, float | None]:
        """The mean of each window (``guided``, ``free``, ``delta``), None for an empty one."""
        return {name: float(np.mean(q)) if q else None
                for name, q in (("guided", self.guided), ("free", self.free), ("delta", self.delta))}


def _finite(name: str, x: float) -> float:
    v = float(x)
    if not math.isfinite(v):
        raise ValueError(f"{name} must be finite, got {x!r}: an episode with a NaN or inf reward or outcome "
                         "cannot be credited")
    return v
