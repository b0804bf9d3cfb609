"""Factories of single Meta-World task environments: MT1 (one task, random goals) and one MT10 task."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import gymnasium as gym

from integrations.metaworld.checks import (
    check_max_episode_steps,
    check_num_goals,
    check_reward_version,
    check_seed,
    check_task_index,
    check_task_name,
    require_metaworld,
)
from integrations.metaworld.constants import MT10_TASKS, NUM_GOALS, REWARD_FUNCTION_VERSION
from integrations.metaworld.goals import mt1_tasks, mt10_tasks
from integrations.metaworld.wrappers import MetaWorldTaskWrapper, TaskOneHotWrapper

if TYPE_CHECKING:  # pragma: no cover - typing only
    from metaworld.types import Task

__all__ = ["make_mt1_env", "make_mt10_env"]


def _build_env(
    task_name: str,
    tasks: Sequence[Task],
    task_id: int,
    seed: int | None,
    max_episode_steps: int | None,
    terminate_on_success: bool,
    reward_function_version: str,
    env_kwargs: dict[str, Any],
) -> MetaWorldTaskWrapper:
    metaworld = require_metaworld()
    steps = check_max_episode_steps(max_episode_steps)
    env_cls = metaworld.env_dict.ALL_V3_ENVIRONMENTS[task_name]
    raw = env_cls(
        reward_function_version=check_reward_version(reward_function_version), **env_kwargs
    )
    # The Sawyer env raises once curr_path_length reaches max_path_length; keep it
    # in step with the TimeLimit so horizons above 500 work too.
    raw.max_path_length = steps
    if seed is not None:
        raw.seed(seed)
    env: gym.Env = gym.wrappers.TimeLimit(raw, max_episode_steps=steps)
    return MetaWorldTaskWrapper(
        env, tasks, task_id=task_id, terminate_on_success=terminate_on_success
    )


def make_mt1_env(
    task_name: str = "reach-v3",
    seed: int | None = None,
    max_episode_steps: int | None = None,
    *,
    terminate_on_success: bool = False,
    reward_function_version: str = REWARD_FUNCTION_VERSION,
    task_id: int = 0,
    num_goals: int = NUM_GOALS,
    **kwargs: Any,
) -> gym.Env:
    """Makes one Meta-World task with random goals (the MT1 setting).

    Equivalent in task content to ``gym.make("Meta-World/MT1", env_name=task_name,
    seed=seed)``: ``metaworld.MT1(task_name, seed)`` draws 50 goal
    configurations, and each ``reset()`` picks one uniformly. See
    :class:`MetaWorldTaskWrapper` for the info keys (``info["success"]`` is a bool
    that stays ``True`` once reached, ``info["is_success"]`` the same).

    Args:
        task_name: A Meta-World v3 task, e.g. ``"reach-v3"``.
        seed: Seeds the goal draw and the environment's generator. ``None``:
            unseeded.
        max_episode_steps: Episode horizon (default 500, Meta-World's).
        terminate_on_success: End episodes at their first successful step.
        reward_function_version: ``"v2"`` (pinned default, see
            :data:`REWARD_FUNCTION_VERSION`) or ``"v1"``.
        task_id: Value reported as ``info["task_id"]`` and ``env.task_id``.
        num_goals: Goal configurations drawn (Meta-World: 50).
        **kwargs: Passed to the Sawyer environment's constructor
            (``render_mode``, ``camera_name``, ``camera_id``, ``width``, ``height``).

    Returns:
        A ``gymnasium.Env`` with a 39-dim ``float64`` observation and a 4-dim
        ``float32`` action space in ``[-1, 1]``.

    Raises:
        ImportError: If Meta-World is not installed.
        ValueError: For an unknown task name or bad arguments.
    """
    require_metaworld()
    check_task_name(task_name)
    seed = check_seed(seed)
    tasks = mt1_tasks(task_name, seed, check_num_goals(num_goals))
    return _build_env(
        task_name,
        tasks,
        task_id=task_id,
        seed=seed,
        max_episode_steps=max_episode_steps,
        terminate_on_success=terminate_on_success,
        reward_function_version=reward_function_version,
        env_kwargs=kwargs,
    )


def make_mt10_env(
    task_index: int,
    seed: int | None = None,
    one_hot: bool = True,
    max_episode_steps: int | None = None,
    *,
    env_seed: int | None = None,
    tasks: Sequence[Task] | None = None,
    num_goals: int = NUM_GOALS,
    terminate_on_success: bool = False,
    reward_function_version: str = REWARD_FUNCTION_VERSION,
    **kwargs: Any,
) -> gym.Env:
    """Makes task ``task_index`` of MT10 as a single-task environment.

    The goals are those of ``metaworld.MT10(seed)`` (the same as
    ``gym.make_vec("Meta-World/MT10", seed=seed)``), so ten of these, one per
    task index, form MT10; :func:`make_mt10_vec_env` does that for SB3. With
    ``one_hot=True`` the 10-dim one-hot task id is appended to the observation
    (49 dims), Meta-World's ``use_one_hot=True`` convention, so one policy can
    tell the tasks apart. ``env.task_id`` (also through
    ``env.get_wrapper_attr("task_id")``) and ``info["task_id"]`` hold the index.

    Args:
        task_index: Index into :data:`MT10_TASKS` (0..9).
        seed: Seed of the benchmark's goal draw (cached per process), and of the
            environment's generator unless ``env_seed`` is given.
        one_hot: Append the one-hot task id to the observation.
        max_episode_steps: Episode horizon (default 500).
        env_seed: Seed of the environment's generator (goal choice at reset);
            defaults to ``seed``.
        tasks: Precomputed goal configurations for this task (e.g. from
            :func:`mt10_tasks`); skips building the benchmark.
        num_goals: Goals per task when the benchmark is built here (Meta-World: 50).
        terminate_on_success: End episodes at their first successful step.
        reward_function_version: ``"v2"`` (pinned default) or ``"v1"``.
        **kwargs: Passed to the Sawyer environment's constructor.

    Returns:
        A ``gymnasium.Env`` (39 + 10 dims with ``one_hot``).

    Raises:
        ImportError: If Meta-World is not installed.
        ValueError: For a bad task index or tasks of the wrong environment.
    """
    require_metaworld()
    task_index = check_task_index(task_index, len(MT10_TASKS))
    seed = check_seed(seed)
    env_seed = seed if env_seed is None else check_seed(env_seed, "env_seed")
    task_name = MT10_TASKS[task_index]
    if tasks is None:
        tasks = mt10_tasks(task_index, seed, num_goals)
    env: gym.Env = _build_env(
        task_name,
        tasks,
        task_id=task_index,
        seed=env_seed,
        max_episode_steps=max_episode_steps,
        terminate_on_success=terminate_on_success,
        reward_function_version=reward_function_version,
        env_kwargs=kwargs,
    )
    if one_hot:
        env = TaskOneHotWrapper(env, task_index, len(MT10_TASKS))
    return env
