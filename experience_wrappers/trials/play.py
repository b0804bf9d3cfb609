"""Retrieve-and-play: the learning-free peer of a trials policy (REGENT's baseline, Sridhar et al. 2024)."""

from __future__ import annotations

from typing import Any

import numpy as np
from gymnasium import spaces

from ..extractor import ActionCoder
from .layout import EntryLayout
from .wrapper import ENTRIES_KEY, MASK_KEY

__all__ = ["RetrieveAndPlay", "success_actions", "success_codes"]


def success_actions(rows: np.ndarray, mask: np.ndarray, layout: EntryLayout,
                    max_distance: float = np.inf) -> tuple[np.ndarray, np.ndarray]:
    """The (Discrete) action of the nearest shown entry of a successful trial (or a demonstration), per row.

    Among the entries whose trial return is positive and whose distance is at most
    ``max_distance``, the nearest, then the one fewest steps from its trial's end.
    Returns ``(actions (n,), found (n,) bool)``; ``actions`` is 0 where none was found.
    The action is the index of its one-hot code (:func:`success_codes` gives the code itself).

    Raises:
        ValueError: ``rows`` are not ``(n, k, layout.row_dim)`` (see :func:`success_codes`).
    """
    codes, found = success_codes(rows, mask, layout, max_distance)
    return np.where(found, codes.argmax(-1), 0), found


def success_codes(rows: np.ndarray, mask: np.ndarray, layout: EntryLayout,
                  max_distance: float = np.inf) -> tuple[np.ndarray, np.ndarray]:
    """The action code of the nearest shown entry of a successful trial, per row (as :func:`success_actions`).

    Returns ``(codes (n, action_dim), found (n,) bool)``; a row's code is meaningless where
    ``found`` is False.

    Raises:
        ValueError: ``rows`` are not ``(n, k, layout.row_dim)`` (rows of another memory's layout,
            whose columns would be read as the wrong fields).
    """
    rows = np.asarray(rows)
    if rows.ndim != 3 or rows.shape[-1] != layout.row_dim:
        raise ValueError(f"the entry rows are {rows.shape[-1] if rows.ndim else 0} wide (shape {rows.shape}), and "
                         f"the layout read with reads rows {layout.row_dim} wide ({layout}): use the layout of the "
                         "memory the envs read (memory.layout)")
    won = (np.asarray(mask) > 0.5) & (rows[..., layout.row_return_col] > 0)
    won &= rows[..., layout.row_distance_col] <= max_distance
    dist = np.where(won, rows[..., layout.row_distance_col], np.inf)
    stg = np.where(won, rows[..., layout.steps_to_go_col + 2], np.inf)
    nearest = dist == dist.min(axis=-1, keepdims=True)
    best = np.argmin(np.where(nearest, stg, np.inf), axis=-1)
    codes = np.take_along_axis(rows[..., layout.row_action_slice()], best[:, None, None], axis=1)[:, 0]
    return codes, np.asarray(won.any(axis=-1))


class RetrieveAndPlay:
    """Play the action of the nearest shown entry of a successful trial or a demonstration.

    It reads the rows a :class:`~experience_wrappers.trials.TrialsWrapper` shows (the same ``k``
    entries a learned policy reads): among those whose trial return is positive, the
    nearest (then the one fewest steps from the goal) gives the action; with none, a
    uniformly random action. With a Box action space the stored action code is decoded back
    to the action (:meth:`ActionCoder.decode <experience_wrappers.extractor.ActionCoder.decode>`:
    the action taken, clipped to the bounds), and the random action is uniform in the box.
    Nothing is learned. It has the ``predict`` signature of an SB3
    model, so the same evaluation runs it.

    Args:
        layout: the memory's :class:`~experience_wrappers.trials.layout.EntryLayout`.
        action_space: a Discrete or Box action space (the memory's).
        seed: seed of the random actions.

    Rows of another width than the layout's are refused (:func:`success_actions`), and so
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
