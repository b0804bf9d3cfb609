"""An SB3 ``VecEnv`` over the ten MT10 tasks (Meta-World's own ``make_vec`` gives a gymnasium one)."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import gymnasium as gym
from stable_baselines3.common.monitor import Monitor
from stable_baselines3.common.vec_env import DummyVecEnv, SubprocVecEnv, VecEnv

from experience_wrappers import ExperienceWrapper
from experience_wrappers.validators import check_int
from integrations.metaworld.checks import (
    check_max_episode_steps,
    check_reward_version,
    check_seed,
    require_metaworld,
)
from integrations.metaworld.constants import MT10_TASKS, NUM_GOALS, REWARD_FUNCTION_VERSION
from integrations.metaworld.factories import make_mt10_env
from integrations.metaworld.goals import mt10_goals

__all__ = ["make_mt10_vec_env"]


def make_mt10_vec_env(
    n_envs_per_task: int = 1,
    seed: int | None = 0,
    vec_env_cls: type[DummyVecEnv] | type[SubprocVecEnv] = DummyVecEnv,
    wrapper_class: Callable[..., gym.Env] | None = None,
    wrapper_kwargs: dict[str, Any] | None = None,
    *,
    one_hot: bool = True,
    max_episode_steps: int | None = None,
    terminate_on_success: bool = False,
    monitor_dir: str | None = None,
    vec_env_kwargs: dict[str, Any] | None = None,
    reward_function_version: str = REWARD_FUNCTION_VERSION,
    num_goals: int = NUM_GOALS,
) -> VecEnv:
    """Builds an SB3 ``VecEnv`` over the ten MT10 tasks, for one multi-task policy.

    This is the SB3 counterpart of ``gym.make_vec("Meta-World/MT10",
    use_one_hot=True)`` (a gymnasium ``VectorEnv`` SB3 cannot use). Env ``r``
    runs task ``r % 10``: ranks 0-9 are tasks 0-9, ranks 10-19 again, and so on.
    The benchmark is built once here and its goals are handed to the workers,
    so ``SubprocVecEnv`` does not rebuild it in every process.

    Each env is ``make_mt10_env`` -> ``Monitor(info_keywords=("success", "task_id"))``
    -> ``wrapper_class(**wrapper_kwargs)`` (the order of SB3's ``make_vec_env``),
    so ``info["episode"]`` holds ``r``, ``l``, ``t``, ``success`` and ``task_id``.

    Args:
        n_envs_per_task: Copies of each task (``10 * n_envs_per_task`` envs).
        seed: Seeds the goal draw; env ``r`` is seeded with ``seed + r``.
        vec_env_cls: ``DummyVecEnv`` or ``SubprocVecEnv`` (or compatible).
        wrapper_class: Optional wrapper applied after ``Monitor``.
        wrapper_kwargs: Keyword arguments for ``wrapper_class``. An
            :class:`~experience_wrappers.ExperienceWrapper` without ``task_id`` gets each env's task index
            (its entries and free baselines the task's own, not pooled under task 0).
        one_hot: Append the one-hot task id to observations.
        max_episode_steps: Episode horizon (default 500).
        terminate_on_success: End episodes at their first success.
        monitor_dir: Where ``Monitor`` writes ``<rank>.monitor.csv``; ``None``: no files.
        vec_env_kwargs: Keyword arguments for ``vec_env_cls`` (e.g. ``start_method``).
        reward_function_version: ``"v2"`` (pinned default) or ``"v1"``.
        num_goals: Goals per task (Meta-World: 50).

    Returns:
        The ``VecEnv``; ``vec_env.get_attr("task_id")`` lists each env's task id.

    Raises:
        ImportError: If Meta-World is not installed.
        ValueError: If ``n_envs_per_task`` is not a positive int.
    """
    require_metaworld()
    n_envs_per_task = check_int("n_envs_per_task", n_envs_per_task, minimum=1, numpy=True,  # type: ignore[assignment]
                                type_error=TypeError)
    seed = check_seed(seed)
    check_reward_version(reward_function_version)
    check_max_episode_steps(max_episode_steps)
    if wrapper_kwargs is not None and wrapper_class is None:
        raise ValueError("wrapper_kwargs given without wrapper_class")
    goals = mt10_goals(seed, num_goals)
    if monitor_dir is not None:
        os.makedirs(monitor_dir, exist_ok=True)

    def make_env_fn(rank: int) -> Callable[[], gym.Env]:
        task_index = rank % len(MT10_TASKS)

        def _init() -> gym.Env:
            env = make_mt10_env(
                task_index,
                seed=seed,
                one_hot=one_hot,
                max_episode_steps=max_episode_steps,
                env_seed=None if seed is None else seed + rank,
                tasks=goals[task_index],
                terminate_on_success=terminate_on_success,
                reward_function_version=reward_function_version,
            )
            filename = None if monitor_dir is None else os.path.join(monitor_dir, str(rank))
            env = Monitor(env, filename=filename, info_keywords=("success", "task_id"))
            if wrapper_class is not None:
                kwargs = dict(wrapper_kwargs or {})
                if isinstance(wrapper_class, type) and issubclass(wrapper_class, ExperienceWrapper):
                    kwargs.setdefault("task_id", task_index)  # each env one task: its entries and baseline its own
                env = wrapper_class(env, **kwargs)
            return env

        return _init

    n_envs = len(MT10_TASKS) * int(n_envs_per_task)
    vec_env = vec_env_cls([make_env_fn(rank) for rank in range(n_envs)], **(vec_env_kwargs or {}))
    if seed is not None:
        vec_env.seed(seed)
    return vec_env
