"""The ML10 family of the trials suites (issue 37): held-out *tasks*, from a demonstration or the run's trials.

``ml10-moves``: :class:`integrations.metaworld.ml10_trials.ML10Trials`, trained on ML10's 500
training task-and-goal pairs (10 tasks x 50 goals), evaluated with frozen weights on 10 goals of
each of its 5 held-out tasks (drawer-open, door-close, shelf-place, sweep-into, lever-pull: tasks
never trained on), ``K = 4`` trials of :data:`~integrations.metaworld.ml10_trials.ML10_CAP` steps
at most, each after :data:`~benchmarks.suites.trials_ml1.START_MOVES` random hand moves. The
demonstrations are each task's scripted policy with the goal visible, recorded goal-hidden
(:func:`integrations.metaworld.ml10_trials.ml10_demonstrations`). PPO is the ML1 families'
calibrated setting (reach's), as are the reward scale and the observation normalisation.
"""

from __future__ import annotations

from itertools import count
from typing import Any

__all__ = ["ml10_moves_family"]


def ml10_moves_family(**env_kwargs: Any) -> dict[str, Any]:
    """The ``ml10-moves`` family (the fields :func:`benchmarks.suites.trials.run_one` reads); ``env_kwargs``
    go to every :class:`~integrations.metaworld.ml10_trials.ML10Trials` (e.g. ``success_bonus``)."""
    from benchmarks.suites.trials_ml1 import START_MOVES, ml1_family
    from integrations.metaworld.ml10_trials import (
        ML10_CAP,
        ML10Trials,
        ml10_demonstrations,
        ml10_instances,
    )

    base = ml1_family("reach-v3", **env_kwargs)  # the calibrated PPO, reward scale and normalisation
    scale = base["reward_scale"]
    train, held_out = ml10_instances(per_task=10)
    seeds = count()
    return {**base,
            "task": f"metaworld.ML10(seed=0): 500 training task-and-goal pairs, 10 goals of each of its 5 held-out "
                    f"tasks; goal hidden, {ML10_CAP}-step trials ending at info['success'], reward x{scale}, "
                    f"{START_MOVES} random hand moves before each trial",
            "make": lambda: ML10Trials(ML10_CAP, reward_scale=scale, start_moves=START_MOVES,
                                       start_seed=next(seeds), **env_kwargs),
            "make_visible": lambda: ML10Trials(ML10_CAP, goal_visible=True, reward_scale=scale,
                                               start_moves=START_MOVES, start_seed=next(seeds), **env_kwargs),
            "train": train, "held_out": held_out, "horizon": ML10_CAP,
            "demonstration": ml10_demonstrations(ML10_CAP, bool(env_kwargs.get("reward_observed", False)))}
