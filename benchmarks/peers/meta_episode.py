"""``MetaEpisode``: ``K`` trials of one instance as one episode, for a recurrent policy (RL^2).

A baseline of the benchmarks, not a part of the method. The strongest memory peer of the trials protocol (Duan et al. 2016, "RL^2"; Wang et al.
2016): a recurrent policy whose hidden state is carried across the ``K`` trials of one
instance, with no bank. The episode the learner sees is the whole run: a trial's end is
not an episode end (the env is reset underneath and the run goes on); the run ends after
its ``K``-th trial. The observation adds what RL^2 feeds back: the previous action
(one-hot for a Discrete action space; the action as it is for a Box one), the previous
reward, and a flag on a trial's first step.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, SupportsFloat

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from experience_wrappers.manager import success_from_info
from experience_wrappers.trials.checks import TRIAL_INFO_KEY
from experience_wrappers.validators import check_instances, check_int

__all__ = ["MetaEpisode"]


class MetaEpisode(gym.Wrapper):
    """Run ``trials`` trials of one instance (drawn from ``instances``) as one episode.

    Args:
        env: an env whose ``reset(seed=s)`` gives instance ``s`` every time, with a Discrete or Box
            action space (a Box action is fed back as it is, zeros before the run's first step).
        instances: the reset seeds to draw runs from.
        trials: trials per run.
        seed: seed of the instance draws.

    ``info["trial"]`` carries ``instance`` and ``index``; a trial's last step carries
    ``info["trial_success"]``.

    >>> from integrations.minihack.hidden_goal import HiddenGoalRoom
    >>> env = MetaEpisode(HiddenGoalRoom(max_steps=2), instances=[55], trials=2)
    >>> obs, info = env.reset()
    >>> sorted(obs), info["trial"]["index"]
    (['last_action', 'last_reward', 'observation', 'trial_start'], 0)
    >>> [env.step(0)[2:4] for _ in range(4)]   # two trials of two steps: one episode
    [(False, False), (False, False), (False, False), (False, True)]
    """

    def __init__(self, env: gym.Env, *, instances: Sequence[int], trials: int = 4, seed: int = 0) -> None:
        super().__init__(env)
        act = env.action_space
        if not isinstance(act, spaces.Discrete | spaces.Box):
            raise ValueError(f"MetaEpisode feeds back the last action: it needs a Discrete or Box action space, got "
                             f"{act}")
        self.instances = check_instances(instances)
        self.trials = check_int("trials", trials, minimum=1)
        self._rng = np.random.default_rng(int(seed))
        self._discrete = isinstance(act, spaces.Discrete)
        if isinstance(act, spaces.Discrete):
            self.n_actions = int(act.n)
            last_action = spaces.Box(0.0, 1.0, (self.n_actions,), np.float32)
        else:
            self.n_actions = int(np.prod(act.shape))
            last_action = spaces.Box(np.asarray(act.low, np.float32), np.asarray(act.high, np.float32),
                                     act.shape, np.float32)
        self._last_space = last_action
        self.observation_space = spaces.Dict({
            "observation": env.observation_space,
            "last_action": last_action,
            "last_reward": spaces.Box(-np.inf, np.inf, (1,), np.float32),
            "trial_start": spaces.Box(0.0, 1.0, (1,), np.float32),
        })
        self.instance = -1
        self.trial = 0

    def _obs(self, obs: Any, action: Any, reward: float, start: bool) -> dict[str, Any]:
        last = np.zeros(self._last_space.shape, np.float32)
        if action is not None and self._discrete:
            last[int(action)] = 1.0
        elif action is not None:  # a Box action as it is (within the bounds: SB3 clips before stepping)
            last[:] = np.clip(np.asarray(action, np.float32).reshape(last.shape), self._last_space.low,
                              self._last_space.high)
        return {"observation": obs, "last_action": last, "last_reward": np.array([reward], np.float32),
                "trial_start": np.array([float(start)], np.float32)}

    def _info(self) -> dict[str, Any]:
        return {TRIAL_INFO_KEY: {"instance": self.instance, "index": self.trial}}

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None
              ) -> tuple[dict[str, Any], dict[str, Any]]:
        """Start a run on a new instance (a ``seed`` given here is ignored: the instance decides it)."""
        self.instance = self.instances[int(self._rng.integers(len(self.instances)))]
        self.trial = 0
        obs, info = self.env.reset(seed=self.instance, options=options)
        return self._obs(obs, None, 0.0, True), {**info, **self._info()}

    def step(self, action: Any) -> tuple[dict[str, Any], SupportsFloat, bool, bool, dict[str, Any]]:
        a = int(np.asarray(action).item()) if self._discrete else np.asarray(action)
        obs, reward, terminated, truncated, info = self.env.step(a)
        info = {**info, **self._info()}
        if not (terminated or truncated):
            return self._obs(obs, a, float(reward), False), reward, False, False, info
        success = success_from_info(info)
        info["trial_success"] = bool(float(reward) > 0) if success is None else bool(success)
        if self.trial >= self.trials - 1:  # the run's last trial: the episode ends as the trial did
            return self._obs(obs, a, float(reward), False), reward, terminated, truncated, info
        self.trial += 1
        obs, _ = self.env.reset(seed=self.instance)
        return self._obs(obs, a, float(reward), True), reward, False, False, info
