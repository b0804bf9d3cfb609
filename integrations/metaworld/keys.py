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
lies in it too).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from experience_wrappers.keys import KeyEncoder

__all__ = ["HAND_HIGH", "HAND_LOW", "MetaWorldKeyEncoder"]

#: the bounds of the hand's position in Meta-World's observation space (``SawyerXYZEnv``'s)
HAND_LOW = np.array([-0.525, 0.348, -0.0525], np.float32)
HAND_HIGH = np.array([0.525, 1.025, 0.7], np.float32)
#: the observation's columns the key reads: the hand's position, the first object's
COLUMNS = np.array([0, 1, 2, 4, 5, 6])


class MetaWorldKeyEncoder(KeyEncoder):
    """Key = ``[hand xyz, object xyz]`` of a Meta-World observation, in ``[-1, 1]`` by the hand's bounds.

    Give it to a memory as ``TrialMemory(..., key_encoder=MetaWorldKeyEncoder())`` (or in
    ``ComplementaryRL(memory_kwargs=...)``, where it is saved with the run's settings). Keys are
    not normalised: distances keep the workspace's scale (a goal radius of 0.05 m is about 0.1).

    >>> enc = MetaWorldKeyEncoder()
    >>> obs = np.zeros((1, 39), np.float32); obs[0, :3] = HAND_HIGH; obs[0, 4:7] = HAND_LOW
    >>> enc.encode(obs, np.zeros(1, np.int64)).tolist()
    [[1.0, 1.0, 1.0, -1.0, -1.0, -1.0]]
    """

    key_dim = len(COLUMNS)

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
        if not np.isfinite(obs[:, COLUMNS]).all():
            raise ValueError("MetaWorldKeyEncoder got an observation with NaN or inf where the hand or the object is")
        low, high = np.tile(HAND_LOW, 2), np.tile(HAND_HIGH, 2)
        return ((obs[:, COLUMNS] - low) / (high - low) * 2.0 - 1.0).astype(np.float32)
