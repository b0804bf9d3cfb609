"""Argument checks of the Meta-World factories, and the import that names the extra if it is missing."""

from __future__ import annotations

import difflib
from typing import Any

import numpy as np

from experience_wrappers.validators import check_int
from integrations.metaworld.constants import INSTALL_HINT, MAX_EPISODE_STEPS, REWARD_VERSIONS

__all__ = [
    "arm_action",
    "check_max_episode_steps",
    "check_num_goals",
    "check_reward_version",
    "check_seed",
    "check_task_index",
    "check_task_name",
    "require_metaworld",
]


def require_metaworld() -> Any:
    """Imports and returns the ``metaworld`` module, with an actionable error if absent.

    Returns:
        The imported ``metaworld`` module.

    Raises:
        ImportError: If Meta-World (or MuJoCo) is not installed or fails to import.
    """
    try:
        import metaworld
    except ImportError as exc:  # pragma: no cover - depends on the install
        raise ImportError(
            "Meta-World is required for integrations.metaworld but could not be imported "
            f"({exc}). Install it with `{INSTALL_HINT}` (metaworld==3.1.1, mujoco 3.3)."
        ) from exc
    return metaworld


def check_task_name(task_name: str) -> None:
    """Raises ``ValueError`` for a name that is not a Meta-World v3 task, with close matches."""
    names = list(require_metaworld().env_dict.ALL_V3_ENVIRONMENTS.keys())
    if not isinstance(task_name, str) or task_name not in names:
        close = difflib.get_close_matches(str(task_name), names, n=3)
        hint = f" Did you mean {close}?" if close else ""
        raise ValueError(
            f"Unknown Meta-World task {task_name!r}. Meta-World 3.x names its tasks "
            f"'<name>-v3' (e.g. 'reach-v3'); {len(names)} are available.{hint}"
        )


def check_max_episode_steps(max_episode_steps: int | None) -> int:
    """The horizon: a positive int, or :data:`MAX_EPISODE_STEPS` for ``None``."""
    if max_episode_steps is None:
        return MAX_EPISODE_STEPS
    return check_int("max_episode_steps", max_episode_steps, minimum=1, numpy=True,
                     optional=True, type_error=TypeError)  # type: ignore[return-value]


def check_seed(seed: int | None, name: str = "seed") -> int | None:
    """A seed: ``None`` or an int in ``[0, 2**32 - 1]`` (numpy's range; ``TypeError`` for another type)."""
    return check_int(name, seed, minimum=0, maximum=2**32 - 1, numpy=True, optional=True, type_error=TypeError)


def check_reward_version(version: str) -> str:
    """One of Meta-World's reward function versions (``"v1"``, ``"v2"``)."""
    if version not in REWARD_VERSIONS:
        raise ValueError(
            f"reward_function_version must be one of {REWARD_VERSIONS}, got {version!r}"
        )
    return version


def check_num_goals(num_goals: int) -> int:
    """Goals per task: an int >= 1 (``TypeError`` for another type)."""
    return check_int("num_goals", num_goals, minimum=1, numpy=True, type_error=TypeError)  # type: ignore[return-value]


def check_task_index(task_index: int, num_tasks: int) -> int:
    """A task index in ``[0, num_tasks)`` (``TypeError`` for another type)."""
    return check_int("task_index", task_index, minimum=0, maximum=num_tasks - 1, numpy=True,  # type: ignore[return-value]
                     type_error=TypeError)


def arm_action(action: Any) -> np.ndarray:
    """A Sawyer arm's action as float32: four finite numbers (xyz end-effector delta, gripper). A NaN
    would make MuJoCo reset the unstable physics silently (the hand jumps to a corner) and log to a
    file in the working directory; a wrong size fails inside Meta-World as a bare assert.

    >>> arm_action([0.1, 0, 0, 1]).dtype
    dtype('float32')
    >>> arm_action([float("nan"), 0, 0, 0])
    Traceback (most recent call last):
    ...
    ValueError: the arm's action must be 4 finite numbers (xyz delta, gripper), got [nan, 0, 0, 0]
    """
    arr = np.asarray(action, dtype=np.float32) if np.asarray(action).dtype.kind in "biuf" else None
    if arr is None or arr.shape != (4,) or not np.isfinite(arr).all():
        raise ValueError(f"the arm's action must be 4 finite numbers (xyz delta, gripper), got {action!r}")
    return arr
