"""ML10 in the trials protocol: held-out *tasks*, one of ML10's task-and-goal pairs per ``reset(seed=...)``.

``metaworld.ML10(seed=0)`` has 10 training tasks (reach, push, pick-place, door-open, drawer-close,
button-press-topdown, peg-insert-side, window-open, sweep, basketball) and 5 held-out tasks that
no training instance is drawn from (drawer-open, door-close, shelf-place, sweep-into, lever-pull),
50 goals each. An *instance* here is one of them: ``0 .. 499`` its 500 training pairs
(``train_tasks``, in Meta-World's order), ``500 .. 749`` its 250 held-out pairs (``test_tasks``);
:func:`ml10_instances` gives both lists, the held-out ones ``per_task`` goals of each held-out
task. The goal is hidden as ML10 hides it (``obs[36:39]`` zeros): a held-out task's goal and what
to do with it come from a demonstration placed in the run, or from the run's own trials.

:class:`ML10Trials` is :class:`~integrations.metaworld.ml1_trials.ML1Trials` over these pairs (a
Meta-World env per task name, made when an instance of it is first reset, switched at reset; the same cap, reward scale, success bonus and
start moves). :func:`ml10_demonstrations` runs each task's scripted policy with the goal visible
and records the observations with the goal zeroed: exactly what the hidden-goal env shows
(Meta-World's ``partially_observable`` only zeros those three entries).
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Any

import numpy as np
from gymnasium import spaces

from experience_wrappers.validators import check_bool, check_int
from integrations.metaworld.constants import NUM_GOALS
from integrations.metaworld.goals import build_benchmark
from integrations.metaworld.ml1_trials import ML1Trials, visible_tasks

if TYPE_CHECKING:  # pragma: no cover - typing only
    from metaworld.types import Task

__all__ = ["ML10Trials", "ml10_instances", "ml10_goal_tasks", "ml10_demonstrations", "ML10_CAP",
           "ML10_TRAIN", "ML10_HELD_OUT"]

#: the trial cap: about 3.5x the scripted policies' mean length over the 15 tasks (about 80 steps, 36-265
#: over 8 goals of each task with 10 random moves first), above the longest demonstration of the
#: evaluated held-out goals (shelf-place's 262 of :func:`ml10_instances`'s 50, all succeeding)
ML10_CAP = 300
#: instances ``0 .. ML10_TRAIN - 1`` are ML10's training pairs, the next ``ML10_HELD_OUT`` its held-out ones
ML10_TRAIN, ML10_HELD_OUT = 10 * NUM_GOALS, 5 * NUM_GOALS


@functools.lru_cache(maxsize=2)
def _ml10(seed: int) -> tuple[Task, ...]:
    import metaworld

    bench = build_benchmark(lambda: metaworld.ML10(seed=seed), NUM_GOALS)
    return tuple(bench.train_tasks) + tuple(bench.test_tasks)


def ml10_goal_tasks(goal_visible: bool = False, seed: int = 0) -> tuple[Task, ...]:
    """ML10's 750 task-and-goal pairs in instance order (its training pairs, then its held-out ones);
    ``goal_visible`` re-encodes each with the goal shown."""
    tasks = _ml10(int(seed))
    return visible_tasks(tasks) if goal_visible else tasks


def ml10_instances(per_task: int = 10, seed: int = 0) -> tuple[list[int], list[int]]:
    """The training instances (all 500) and ``per_task`` held-out instances of each of the 5 held-out tasks.

    Raises:
        ValueError: ``per_task`` is not in ``1 .. 50``.
    """
    per_task = check_int("per_task", per_task, minimum=1, maximum=NUM_GOALS, numpy=True)
    tasks = ml10_goal_tasks(seed=seed)
    held: dict[str, list[int]] = {}
    for i in range(ML10_TRAIN, ML10_TRAIN + ML10_HELD_OUT):
        held.setdefault(str(tasks[i].env_name), []).append(i)
    return list(range(ML10_TRAIN)), [i for ids in held.values() for i in ids[:per_task]]


class ML10Trials(ML1Trials):
    """ML10's training and held-out task-and-goal pairs, one per ``reset(seed=instance)``.

    Args:
        cap: the trial's step cap (default :data:`ML10_CAP`).
        kwargs: :class:`~integrations.metaworld.ml1_trials.ML1Trials`'s (``goal_visible``,
            ``reward_scale``, ``success_bonus``, ``gamma``, ``start_moves``, ``start_seed``,
            ``reward_observed``).

    ``env_name`` is the current instance's Meta-World task.
    """

    def __init__(self, cap: int = ML10_CAP, **kwargs: Any) -> None:
        super().__init__("ML10", cap, **kwargs)

    def _goal_tasks(self, task: str, goal_visible: bool) -> tuple[Task, ...]:
        return ml10_goal_tasks(goal_visible)

    def _observation_box(self) -> spaces.Box:
        """The 15 tasks' observation bounds together (each env is made only when an instance of it is reset)."""
        low, high = _bounds(self.goal_visible)
        box = self.raw.sawyer_observation_space
        return spaces.Box(low, high, box.shape, box.dtype)

    def _instances_text(self) -> str:
        return (f"0 .. {len(self.tasks) - 1}: training 0-{ML10_TRAIN - 1}, held-out tasks "
                f"{ML10_TRAIN}-{ML10_TRAIN + ML10_HELD_OUT - 1}")


@functools.lru_cache(maxsize=2)
def _bounds(goal_visible: bool) -> tuple[np.ndarray, np.ndarray]:
    """The observation bounds of ML10's 15 tasks together, the goal's hidden (zeros) or shown (each env
    made once, set to one of its tasks, which sets what the goal's bounds are, then closed)."""
    import metaworld

    first: dict[str, Task] = {}
    for t in ml10_goal_tasks(goal_visible):
        first.setdefault(str(t.env_name), t)
    lows, highs = [], []
    for name, task in first.items():
        raw = metaworld.env_dict.ALL_V3_ENVIRONMENTS[name]()
        raw.set_task(task)
        lows.append(raw.sawyer_observation_space.low)
        highs.append(raw.sawyer_observation_space.high)
        raw.close()
    return np.min(lows, 0), np.max(highs, 0)


@functools.lru_cache(maxsize=2)
def _demo_env(cap: int, reward_observed: bool) -> ML10Trials:
    return ML10Trials(cap, goal_visible=True, reward_observed=reward_observed)


def ml10_demonstrations(cap: int = ML10_CAP, reward_observed: bool = False) -> Any:
    """A ``demonstrations(instance)`` function for ML10's instances (cached per instance).

    It gives ``(observations, actions, rewards)`` of the instance's task's scripted policy, run with
    the goal visible and recorded with the goal zeroed, up to its first success, or None where it does
    not succeed within ``cap``. ``reward_observed``: the observations carry the last rewards, as an
    ``ML10Trials(reward_observed=True)`` env's do.
    """
    from integrations.metaworld.ml1_demos import scripted_demonstration

    cap = check_int("cap", cap, minimum=1, numpy=True)
    reward_observed = check_bool("reward_observed", reward_observed, numpy=True)

    @functools.lru_cache(maxsize=1024)
    def demonstrations(instance: int) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
        instance = check_int("instance", instance, minimum=0, maximum=ML10_TRAIN + ML10_HELD_OUT - 1, numpy=True,
                             type_error=TypeError)  # (as ml1_demonstrations: 5.9 is no instance)
        obs, actions, rewards, success = scripted_demonstration(_demo_env(cap, reward_observed), instance)
        return (obs, actions, rewards) if success else None

    return demonstrations
