"""Retrieve-and-play: the learning-free peer of a trials policy (REGENT's baseline, Sridhar et al. 2024)."""

from __future__ import annotations

from typing import Any

import numpy as np
from gymnasium import spaces

from .layout import EntryLayout
from .wrapper import ENTRIES_KEY, MASK_KEY

__all__ = ["RetrieveAndPlay"]


class RetrieveAndPlay:
    """Play the action of the nearest shown entry of a successful trial or a demonstration.

    It reads the rows a :class:`~experience_wrappers.trials.TrialsWrapper` shows (the same ``k``
    entries a learned policy reads): among those whose trial return is positive, the
    nearest (then the one fewest steps from the goal) gives the action; with none, a
    uniformly random action. Nothing is learned. It has the ``predict`` signature of an SB3
    model, so the same evaluation runs it.

    Args:
        layout: the memory's :class:`~experience_wrappers.trials.EntryLayout`.
        action_space: a Discrete action space.
        seed: seed of the random actions.

    >>> lay = EntryLayout(key_dim=2, action_dim=3, exp_dim=0, horizon=10)
    >>> rows = np.zeros((1, 2, lay.row_dim), np.float32)
    >>> rows[0, 1, lay.row_action_slice()] = [0, 0, 1]; rows[0, 1, lay.row_return_col] = 1.0
    >>> RetrieveAndPlay(lay, spaces.Discrete(3)).predict({"trial_entries": rows, "trial_mask": np.ones((1, 2))})[0]
    array([2])
    """

    def __init__(self, layout: EntryLayout, action_space: spaces.Space, seed: int = 0) -> None:
        if not isinstance(action_space, spaces.Discrete):
            raise ValueError(f"retrieve-and-play plays one-hot actions back: it needs a Discrete action space, got "
                             f"{action_space}")
        self.layout = layout
        self.n = int(action_space.n)
        self.rng = np.random.default_rng(seed)

    def predict(self, observation: dict[str, np.ndarray], state: Any = None, episode_start: Any = None,
                deterministic: bool = False) -> tuple[np.ndarray, None]:
        lay = self.layout
        rows = np.asarray(observation[ENTRIES_KEY])
        mask = np.asarray(observation[MASK_KEY]) > 0.5
        won = mask & (rows[..., lay.row_return_col] > 0)
        dist = np.where(won, rows[..., lay.row_distance_col], np.inf)
        stg = rows[..., lay.steps_to_go_col + 2]
        actions = self.rng.integers(self.n, size=len(rows))
        for i in np.flatnonzero(won.any(axis=1)).tolist():
            best = np.lexsort((stg[i], dist[i]))[0]
            actions[i] = int(np.argmax(rows[i, best, lay.row_action_slice()]))
        return actions, None
