"""The reset infos of a stack of SB3 VecEnv wrappers.

SB3 keeps each env's last reset info in ``VecEnv.reset_infos``, but every ``VecEnvWrapper``
gets a list of its own at construction (empty dicts) that SB3's wrappers (``VecNormalize``,
``VecFrameStack``, ``VecMonitor``) never fill: read from the top, a stack loses the infos of
the env below. :func:`reset_infos_below` reads them where they were written.
"""

from __future__ import annotations

from typing import Any

from stable_baselines3.common.vec_env import VecEnv, VecEnvWrapper

__all__ = ["reset_infos_below"]


def reset_infos_below(venv: VecEnv) -> list[dict[str, Any]]:
    """The reset infos of ``venv``'s envs: the list of the nearest layer (``venv`` first, then
    the layers below it) that holds any, else the innermost VecEnv's (all empty); one dict per env.

    >>> from stable_baselines3.common.env_util import make_vec_env
    >>> from stable_baselines3.common.vec_env import VecMonitor
    >>> venv = VecMonitor(make_vec_env("CartPole-v1", n_envs=2))
    >>> venv.venv.reset_infos = [{"task": 1}, {"task": 2}]  # as the DummyVecEnv's reset sets them
    >>> venv.reset_infos, reset_infos_below(venv)
    ([{}, {}], [{'task': 1}, {'task': 2}])
    """
    env: VecEnv = venv
    while True:
        infos = getattr(env, "reset_infos", None)
        if infos is not None and any(infos):
            return list(infos)
        if not isinstance(env, VecEnvWrapper):
            return list(infos) if infos is not None else [{} for _ in range(venv.num_envs)]
        env = env.venv
