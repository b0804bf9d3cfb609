"""The credit rules, plain functions: an outcome's delta, the extractor's reward, shares, the utility step and its decay.

Part of :mod:`experience_wrappers.credit` (which exports them); the windows and tables that
hold outcomes over time are :mod:`.tracking`'s.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

__all__ = ["EXTRACTOR_REWARDS", "credit_utilities", "entry_reward", "finite_number", "outcome_delta", "paired_delta",
           "shown_shares", "utility_decay"]

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
            [-1, 1]); :class:`~integrations.sb3.CRLCallback` gives none: its ``crl/outcome_delta``
            log uses the unscaled difference.

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


def utility_decay(progress: float, start: float = 0.99, end: float = 0.95) -> float:
    """Cosine schedule of the utility EMA decay from ``start`` (progress 0) to ``end`` (progress 1).

    >>> utility_decay(0.0), utility_decay(1.0), round(utility_decay(0.5), 3)
    (0.99, 0.95, 0.97)
    """
    p = min(max(float(progress), 0.0), 1.0)
    return end + (start - end) * 0.5 * (1.0 + math.cos(math.pi * p))


def credit_utilities(utility: np.ndarray, n_credited: np.ndarray, slots: list[int], deltas: list[float], decay: float,
                     warmup: bool) -> None:
    """Credit entries in place, in order: ``u <- u + step * (delta - u)`` and ``n_credited += 1``.

    ``step`` is ``1 - decay`` (an exponential moving average), or with ``warmup``
    ``max(1 - decay, 1 / (n_credited + 2))``: a running mean over the first credits. The bank
    applies it to its utility columns (:meth:`~experience_wrappers.bank.ExperienceBank.update`).

    >>> u, n = np.zeros(1), np.zeros(1, np.int64)
    >>> credit_utilities(u, n, [0, 0], [1.0, 1.0], 0.9, warmup=True); u.round(3).tolist(), n.tolist()
    ([0.667], [2])
    """
    if len(set(slots)) == len(slots):  # each entry once (the usual credit): the same arithmetic, all at once
        at = np.asarray(slots, dtype=np.int64)
        step = np.maximum(1.0 - decay, 1.0 / (n_credited[at] + 2)) if warmup else 1.0 - decay
        utility[at] += step * (np.asarray(deltas, dtype=np.float64) - utility[at])
        n_credited[at] += 1
        return
    for s, delta in zip(slots, deltas, strict=True):  # an entry credited twice: in order
        step = max(1.0 - decay, 1.0 / (int(n_credited[s]) + 2)) if warmup else 1.0 - decay
        utility[s] += step * (delta - utility[s])
        n_credited[s] += 1


def paired_delta(outcome: float, free_outcomes: Sequence[float], *, free_spread: float | None = None) -> float:
    """A guided outcome minus the mean outcome of the free episodes on the same task instance.

    The paper's groups: guided and free rollouts of one task, the guided ones judged against
    the free ones of their own group. ``free_spread`` scales as in :func:`outcome_delta`
    (the manager gives the task's free-return spread for return outcomes, None for successes).

    >>> paired_delta(1.0, [0.0, 1.0])
    0.5
    >>> paired_delta(0.0, [0.0, 0.0]), paired_delta(12.0, [4.0, 6.0], free_spread=2.0)
    (0.0, 3.5)
    """
    if len(free_outcomes) == 0:
        raise ValueError("paired_delta needs at least one free outcome of the instance, got none")
    d = outcome_delta(finite_number("outcome", outcome), float(np.mean([finite_number("outcome", x) for x in free_outcomes])),
                      free_spread=free_spread)
    assert d is not None
    return d


def shown_shares(shown_steps: np.ndarray | None, length: int) -> np.ndarray | None:
    """Each entry's share of an episode's delta: the fraction of the episode's steps it was shown on.

    An entry shown on every step gets the whole delta (as every entry did before shares);
    one shown on a quarter of the steps gets a quarter. Entries shown side by side (``k``
    per step) do not split a step between them: each is judged by the steps it was there.
    None (no counts recorded): None, every entry gets the whole delta.

    >>> shown_shares(np.array([8, 2]), 8)
    array([1.  , 0.25])
    >>> shown_shares(None, 8) is None
    True
    """
    if shown_steps is None:
        return None
    steps = np.asarray(shown_steps, dtype=np.float64)
    if length <= 0:
        return np.zeros_like(steps)
    if np.any(steps < 0) or np.any(steps > length):
        raise ValueError(f"shown steps must lie in [0, {length}] (the episode's length), got {steps.tolist()}")
    return steps / float(length)


def finite_number(name: str, x: float) -> float:
    v = float(x)
    if not math.isfinite(v):
        raise ValueError(f"{name} must be finite, got {x!r}: an episode with a NaN or inf reward or outcome "
                         "cannot be credited")
    return v
