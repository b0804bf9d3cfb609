"""Meta-World's goal draws: benchmarks built with a chosen goal count, cached per seed.

A benchmark (``metaworld.MT1(name, seed)`` or ``metaworld.MT10(seed)``) draws
:data:`NUM_GOALS` goal configurations per task once, from ``seed``. Meta-World reads the
goal count from the module global ``metaworld._N_GOALS``; :func:`build_benchmark` sets it
only for the duration of a build, under a lock. With an integer seed the draws are cached
per process (building MT10 with 50 goals costs about 10 s).
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING

from integrations.metaworld.checks import (
    check_num_goals,
    check_seed,
    check_task_index,
    require_metaworld,
)
from integrations.metaworld.constants import MT10_TASKS, NUM_GOALS

if TYPE_CHECKING:  # pragma: no cover - typing only
    from metaworld import Benchmark
    from metaworld.types import Task

__all__ = ["build_benchmark", "mt1_tasks", "mt10_goals", "mt10_tasks"]

_GOALS_LOCK = threading.Lock()


def build_benchmark(factory: Callable[[], Benchmark], num_goals: int) -> Benchmark:
    """Builds a benchmark with ``num_goals`` goals per task.

    Meta-World reads the module global ``metaworld._N_GOALS`` (its own
    ``num_goals`` option of ``gym.make`` sets it for good); here it is set only
    for the duration of the build.
    """
    metaworld = require_metaworld()
    with _GOALS_LOCK:
        previous = metaworld._N_GOALS
        metaworld._N_GOALS = num_goals
        try:
            return factory()
        finally:
            metaworld._N_GOALS = previous


def mt1_tasks(task_name: str, seed: int | None, num_goals: int) -> tuple[Task, ...]:
    """The goals ``metaworld.MT1(task_name, seed)`` draws (cached for an integer seed)."""
    if seed is None:
        return _mt1_tasks(task_name, None, num_goals)
    return _mt1_tasks_cached(task_name, seed, num_goals)


@functools.lru_cache(maxsize=8)
def _mt1_tasks_cached(task_name: str, seed: int, num_goals: int) -> tuple[Task, ...]:
    return _mt1_tasks(task_name, seed, num_goals)


def _mt1_tasks(task_name: str, seed: int | None, num_goals: int) -> tuple[Task, ...]:
    metaworld = require_metaworld()
    benchmark = build_benchmark(lambda: metaworld.MT1(task_name, seed=seed), num_goals)
    return tuple(benchmark.train_tasks)


@functools.lru_cache(maxsize=4)
def _mt10_benchmark_cached(seed: int, num_goals: int) -> Benchmark:
    return _mt10_benchmark(seed, num_goals)


def _mt10_benchmark(seed: int | None, num_goals: int) -> Benchmark:
    metaworld = require_metaworld()
    return build_benchmark(lambda: metaworld.MT10(seed=seed), num_goals)


def mt10_goals(seed: int | None, num_goals: int) -> dict[int, tuple[Task, ...]]:
    """Each MT10 task index -> its goals, as ``metaworld.MT10(seed)`` draws them (cached for an integer seed)."""
    num_goals = check_num_goals(num_goals)
    if seed is None:
        benchmark = _mt10_benchmark(None, num_goals)
    else:
        benchmark = _mt10_benchmark_cached(seed, num_goals)
    return {
        i: tuple(t for t in benchmark.train_tasks if t.env_name == name)
        for i, name in enumerate(MT10_TASKS)
    }


def mt10_tasks(
    task_index: int, seed: int | None = None, num_goals: int = NUM_GOALS
) -> tuple[Task, ...]:
    """Returns the goal configurations of one MT10 task, as ``metaworld.MT10(seed)`` draws them.

    Building the MT10 benchmark costs about 10 s with 50 goals per task (500
    simulated resets); with an integer ``seed`` it is built once per process
    and cached.

    Args:
        task_index: Index of the task in :data:`MT10_TASKS`.
        seed: Seed of the goal draw; ``None`` draws fresh goals (not cached).
        num_goals: Goals per task; Meta-World's benchmark uses 50. Fewer is
            faster to build (tests), but the goals then differ from the
            canonical ones.

    Returns:
        The task's ``metaworld.types.Task`` objects, in benchmark order.
    """
    task_index = check_task_index(task_index, len(MT10_TASKS))
    return mt10_goals(check_seed(seed), num_goals)[task_index]
