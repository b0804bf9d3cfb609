"""The compact experience input of an ``ExperienceVecEnv`` (experimental: it tied the full input).

:class:`CompactExperienceVecEnv` is :class:`~experience_wrappers.experimental.CompactExperience`
for a vector env: one experience key (the shown entries' mean and the fraction shown) instead of
three, in the observations and in each ``info["terminal_observation"]``. What it carries and
what was measured: :mod:`experience_wrappers.experimental.compact`.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from stable_baselines3.common.vec_env import VecEnv, VecEnvWrapper
from stable_baselines3.common.vec_env.base_vec_env import VecEnvObs, VecEnvStepReturn

from experience_wrappers.experimental.compact import compact_observation, compact_observation_space

__all__ = ["CompactExperienceVecEnv"]


class CompactExperienceVecEnv(VecEnvWrapper):
    """An :class:`~integrations.sb3.ExperienceVecEnv` (or a VecEnv of ``ExperienceWrapper`` s) with
    the compact input; ``find_experience`` and the callback reach the experience below it.

    >>> from stable_baselines3.common.env_util import make_vec_env
    >>> from experience_wrappers import ExperienceBank
    >>> from integrations.sb3 import ExperienceVecEnv
    >>> venv = CompactExperienceVecEnv(ExperienceVecEnv(make_vec_env("CartPole-v1", n_envs=2), ExperienceBank(),
    ...                                                 manager_kwargs={"mode": "sync"}))
    >>> sorted(venv.reset()), venv.observation_space["experience"].shape
    (['experience', 'observation'], (17,))
    """

    def __init__(self, venv: VecEnv) -> None:
        super().__init__(venv, observation_space=compact_observation_space(venv.observation_space))  # type: ignore[arg-type]

    def reset(self) -> VecEnvObs:
        return compact_observation(self.venv.reset())  # type: ignore[arg-type]

    def step_wait(self) -> VecEnvStepReturn:
        obs, rewards, dones, infos = self.venv.step_wait()
        for i in np.flatnonzero(dones).tolist():
            terminal: Any = infos[i].get("terminal_observation")
            if isinstance(terminal, dict):
                infos[i]["terminal_observation"] = compact_observation(terminal)
        return compact_observation(obs), rewards, dones, infos  # type: ignore[arg-type]
