"""``TrialIndex``: show the policy the trial's index in its run, a one-hot ``trials`` wide.

In a deterministic room, a plan across trials (try here first, there next) needs to know
which trial this is; measured on the hidden-goal room (``crl-trials-default-index``, 5 seeds):
cumulative success by trial 4 0.59 against 0.51, the same with the memory or without it. It
is not experience: guided and free trials alike see it. ``TrialMemory(trial_index=True)``
is the setting (saved with a run, checked against the policy's space);
:func:`~experience_wrappers.trials.wrapper.trial_env` installs this wrapper where it is set.
"""

from __future__ import annotations

from typing import Any, SupportsFloat

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from ..validators import check_int
from .checks import TRIAL_INDEX_KEY, TRIAL_INFO_KEY

__all__ = ["TrialIndex"]


class TrialIndex(gym.Wrapper):
    """Add ``trial_index``, the one-hot of ``info["trial"]["index"]``, to a trial env's Dict observation.

    Args:
        env: a :class:`~experience_wrappers.trials.wrapper.RunScopeWrapper` (or an env above one that keeps
            its Dict observation and its ``info["trial"]``).
        trials: trials per run, the one-hot's width.

    Raises:
        ValueError: the env's observation space is not a Dict or already has ``trial_index``;
            ``trials`` is not an int >= 1; a trial's index outside ``[0, trials)`` (the env runs
            more trials than this wrapper was told), or an env without ``info["trial"]``.
    """

    def __init__(self, env: gym.Env, trials: int) -> None:
        super().__init__(env)
        base = env.observation_space
        if not isinstance(base, spaces.Dict) or TRIAL_INDEX_KEY in base.spaces:
            raise ValueError(f"TrialIndex adds {TRIAL_INDEX_KEY!r} to a trial env's Dict observation; got {base}")
        self.trials = check_int("trials", trials, minimum=1)
        self._eye = np.eye(self.trials, dtype=np.float32)
        inner: Any = env  # the run-scope wrapper below: the memory's own wrapper is on it
        while isinstance(inner, gym.Wrapper) and "stacked" not in vars(inner):
            inner = inner.env
        if "stacked" in vars(inner):
            inner.stacked.add(TRIAL_INDEX_KEY)
        self.observation_space = spaces.Dict({**base.spaces,
                                              TRIAL_INDEX_KEY: spaces.Box(0.0, 1.0, (self.trials,), np.float32)})

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None
              ) -> tuple[dict[str, Any], dict[str, Any]]:
        obs, info = self.env.reset(seed=seed, options=options)
        return self._add(obs, info), info

    def step(self, action: Any) -> tuple[dict[str, Any], SupportsFloat, bool, bool, dict[str, Any]]:
        obs, reward, terminated, truncated, info = self.env.step(action)
        return self._add(obs, info), reward, terminated, truncated, info

    def _add(self, obs: dict[str, Any], info: dict[str, Any]) -> dict[str, Any]:
        trial = info.get(TRIAL_INFO_KEY)
        if not isinstance(trial, dict) or "index" not in trial:
            raise ValueError("TrialIndex reads the trial's index from info['trial']: put it on run scope's "
                             "ExperienceWrapper(env, memory, scope=\"run\", ...) "
                             f"(the env below gave the info keys {sorted(info)})")
        index = int(trial["index"])
        if not 0 <= index < self.trials:
            raise ValueError(f"trial index {index} outside [0, {self.trials}): the env runs more trials per run "
                             f"than TrialIndex(trials={self.trials}) shows")
        return {**obs, TRIAL_INDEX_KEY: self._eye[index].copy()}
