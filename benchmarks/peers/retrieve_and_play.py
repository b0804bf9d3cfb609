"""Retrieve-and-play: the learning-free peer of a trials policy (REGENT's baseline, Sridhar et al. 2024).

A baseline of the benchmarks, not a part of the method: it plays the action of the nearest shown
success (:mod:`experience_wrappers.trials.nearest_success`) with no learning.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from gymnasium import spaces

from experience_wrappers.extractor import ActionCoder
from experience_wrappers.manager.entry_layout import EntryLayout
from experience_wrappers.trials.checks import ENTRIES_KEY, MASK_KEY
from experience_wrappers.trials.nearest_success import success_codes

__all__ = ["RetrieveAndPlay"]


class RetrieveAndPlay:
    """Play the action of the nearest shown entry of a successful trial or a demonstration.

    It reads the rows a :class:`~experience_wrappers.trials.wrapper.RunScopeWrapper` shows (the same ``k``
    entries a learned policy reads): among those whose trial return is positive, the
    nearest (then the one fewest steps from the goal) gives the action; with none, a
    uniformly random action. With a Box action space the stored action code is decoded back
    to the action (:meth:`ActionCoder.decode <experience_wrappers.extractor.ActionCoder.decode>`:
    the action taken, clipped to the bounds), and the random action is uniform in the box.
    Nothing is learned. It has the ``predict`` signature of an SB3
    model, so the same evaluation runs it.

    Args:
        layout: the memory's :class:`~experience_wrappers.manager.entry_layout.EntryLayout`.
        action_space: a Discrete or Box action space (the memory's).
        seed: seed of the random actions.

    Rows of another width than the layout's are refused (:func:`~experience_wrappers.trials.nearest_success.success_codes`), and so
    is a layout of another layout's envs in :func:`~integrations.sb3.trials_evaluation.run_trials`.

    >>> lay = EntryLayout(key_dim=2, action_dim=3, exp_dim=0, horizon=10)
    >>> rows = np.zeros((1, 2, lay.row_dim), np.float32)
    >>> rows[0, 1, lay.row_action_slice()] = [0, 0, 1]; rows[0, 1, lay.row_return_col] = 1.0
    >>> RetrieveAndPlay(lay, spaces.Discrete(3)).predict({"trial_entries": rows, "trial_mask": np.ones((1, 2))})[0]
    array([2])
    """

    def __init__(self, layout: EntryLayout, action_space: spaces.Space, seed: int = 0) -> None:
        if not isinstance(action_space, spaces.Discrete | spaces.Box):
            raise ValueError(f"retrieve-and-play plays stored actions back: it needs a Discrete or Box action space, "
                             f"got {action_space}")
        self.coder = ActionCoder(action_space)
        if layout.action_dim != self.coder.dim:
            raise ValueError(f"retrieve-and-play: the layout's actions are {layout.action_dim} wide, the action space "
                             f"{action_space} has {self.coder.dim}: use the layout of the memory built for this "
                             "action space (memory.layout)")
        self.layout = layout
        self.action_space = action_space
        self.rng = np.random.default_rng(seed)

    def predict(self, observation: dict[str, np.ndarray], state: Any = None, episode_start: Any = None,
                deterministic: bool = False) -> tuple[np.ndarray, None]:
        rows = np.asarray(observation[ENTRIES_KEY])
        codes, found = success_codes(rows, observation[MASK_KEY], self.layout)
        n = len(rows)
        space = self.action_space
        if isinstance(space, spaces.Discrete):
            played = codes.argmax(-1) + int(space.start)
            return np.where(found, played, self.rng.integers(int(space.n), size=n) + int(space.start)), None
        assert isinstance(space, spaces.Box)
        played = self.coder.decode(codes)
        randoms = self.rng.uniform(space.low, space.high, size=(n, *space.shape)).astype(space.dtype)
        return np.where(found.reshape((n,) + (1,) * len(space.shape)), played, randoms), None
