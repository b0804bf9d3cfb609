"""A frozen key encoder for Meta-World observations: where the hand and the object are.

Meta-World's 39-wide observation is the hand's position (``[0:3]``), the gripper's opening
(``[3]``), the first object's position and quaternion (``[4:11]``), a second object's
(``[11:18]``), the same 18 values of the previous frame (``[18:36]``) and the goal (``[36:39]``,
zeros with the goal hidden). Where a task's instances differ by a hidden goal, what a trial
says about the goal is where the hand and the object went: a key of the whole observation
mixes those 6 values with 33 others (the previous frame, the quaternions, the gripper) that a
reader of run scope's entries, :class:`~experience_wrappers.trials.run_best.RunBest`'s offset
or a :class:`~experience_wrappers.trials.goal_locator.GoalLocator` must first learn to ignore.
:class:`MetaWorldKeyEncoder` keys by the 6 alone, each mapped to ``[-1, 1]`` by the hand's
bounds (Meta-World's workspace; an object's position, unbounded in the observation space,
lies in it too). ``MetaWorldKeyEncoder(parts=("object",))`` keys by the object alone: where a
task's success is the object reaching the goal (push), the end of a success marks the goal by
where the object is, whatever the hand did.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from gymnasium import spaces

from experience_wrappers.keys import KeyEncoder

__all__ = ["HAND_HIGH", "HAND_LOW", "MetaWorldKeyEncoder"]

#: the bounds of the hand's position in Meta-World's observation space (``SawyerXYZEnv``'s)
HAND_LOW = np.array([-0.525, 0.348, -0.0525], np.float32)
HAND_HIGH = np.array([0.525, 1.025, 0.7], np.float32)
#: the width of Meta-World's observation (the goal's columns, zeros where it is hidden, are its last three)
META_WORLD_WIDTH = 39
#: the observation's columns of each part a key may read: the hand's position, the first object's
PARTS = {"hand": (0, 1, 2), "object": (4, 5, 6)}


class MetaWorldKeyEncoder(KeyEncoder):
    """Key = ``[hand xyz, object xyz]`` of a Meta-World observation, in ``[-1, 1]`` by the hand's bounds.

    Args:
        parts: which positions the key holds, in this order: ``"hand"``, ``"object"`` or both (the default).

    Raises:
        ValueError: ``parts`` is empty, repeats a part or names another.

    Give it to a memory as ``TrialMemory(..., key_encoder=MetaWorldKeyEncoder())`` (or in
    ``ComplementaryRL(memory_kwargs=...)``, where it is saved with the run's settings). Keys are
    not normalised: distances keep the workspace's scale (a goal radius of 0.05 m is about 0.1).

    >>> enc = MetaWorldKeyEncoder()
    >>> obs = np.zeros((1, 39), np.float32); obs[0, :3] = HAND_HIGH; obs[0, 4:7] = HAND_LOW
    >>> enc.encode(obs, np.zeros(1, np.int64)).tolist()
    [[1.0, 1.0, 1.0, -1.0, -1.0, -1.0]]
    >>> MetaWorldKeyEncoder(parts=("object",)).encode(obs, np.zeros(1, np.int64)).tolist()
    [[-1.0, -1.0, -1.0]]
    """

    def __init__(self, parts: tuple[str, ...] = ("hand", "object")) -> None:
        if isinstance(parts, spaces.Space):  # built as a class, cls(observation_space)
            raise TypeError("MetaWorldKeyEncoder is built from the parts it keys by, not from an observation space: "
                            "give an instance, key_encoder=MetaWorldKeyEncoder() (or MetaWorldKeyEncoder(parts="
                            "(\"object\",)))")
        if isinstance(parts, str) or not isinstance(parts, tuple | list):
            raise TypeError(f"parts must be a tuple of {sorted(PARTS)}, got {parts!r}")
        if not parts or len(set(parts)) != len(parts) or not set(parts) <= set(PARTS):
            raise ValueError(f"parts must name each of {sorted(PARTS)} at most once, at least one, got {parts!r}")
        self.parts = tuple(parts)

    @property
    def key_dim(self) -> int:  # type: ignore[override]
        """3 values per part."""
        return 3 * len(self.parts)

    @property
    def columns(self) -> np.ndarray:
        """The observation's columns the key reads."""
        return np.array([c for part in self.parts for c in PARTS[part]])

    def check_space(self, observation_space: spaces.Space) -> None:
        """Refuse (``ValueError``) a space that is not Meta-World's observation.

        Meta-World's is a flat Box at least 39 wide (the goal at ``[36:39]``) whose first three columns are
        bounded by the hand's workspace (:data:`HAND_LOW`, :data:`HAND_HIGH`), by which keys are scaled.
        Another env's observation (MuJoCo's Reacher: 10 wide, unbounded) would be keyed by columns that are
        not where a hand and an object are."""
        box = observation_space
        if not isinstance(box, spaces.Box) or len(box.shape) != 1 or box.shape[0] < META_WORLD_WIDTH:
            raise ValueError(f"MetaWorldKeyEncoder reads Meta-World's observation (a flat Box at least "
                             f"{META_WORLD_WIDTH} wide: the hand at [0:3], the object at [4:7]), got {box}")
        low, high = np.asarray(box.low[:3], np.float64), np.asarray(box.high[:3], np.float64)
        if not (np.allclose(low, HAND_LOW, atol=1e-3) and np.allclose(high, HAND_HIGH, atol=1e-3)):
            raise ValueError(f"MetaWorldKeyEncoder scales the hand's columns [0:3] by Meta-World's workspace "
                             f"{HAND_LOW.tolist()} to {HAND_HIGH.tolist()}; this space bounds them by {low.tolist()} "
                             f"to {high.tolist()}: not Meta-World's observation (or one normalised before the memory)")

    def encode(self, obs_batch: Any, task_ids: np.ndarray) -> np.ndarray:
        """Keys of a batch of observations ``(n, 39)`` (at least 7 wide); ``task_ids`` ``(n,)``.

        Raises:
            TypeError: a dict observation (Meta-World's is one array).
            ValueError: another shape, NaN or inf in the columns read, ``task_ids`` of another length.
        """
        if isinstance(obs_batch, dict):
            raise TypeError(f"MetaWorldKeyEncoder reads Meta-World's observation array, got a dict of "
                            f"{sorted(obs_batch)}")
        obs = np.asarray(obs_batch, np.float32)
        if obs.ndim != 2 or obs.shape[1] < 7:
            raise ValueError(f"MetaWorldKeyEncoder reads Meta-World observations (a batch of rows at least 7 wide: "
                             f"the hand at [0:3], the object at [4:7]), got shape {obs.shape}")
        if np.size(task_ids) != len(obs):
            raise ValueError(f"task_ids must hold one id per observation ({len(obs)}), got {np.size(task_ids)}")
        columns = self.columns
        if not np.isfinite(obs[:, columns]).all():
            raise ValueError("MetaWorldKeyEncoder got an observation with NaN or inf where the hand or the object is")
        low, high = np.tile(HAND_LOW, len(self.parts)), np.tile(HAND_HIGH, len(self.parts))
        return ((obs[:, columns] - low) / (high - low) * 2.0 - 1.0).astype(np.float32)
