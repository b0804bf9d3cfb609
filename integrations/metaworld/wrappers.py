"""Gymnasium wrappers for Meta-World tasks: goal sampling, seeding and success flags; the one-hot task id."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, SupportsFloat, cast

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from experience_wrappers.validators import check_int
from integrations.metaworld.checks import arm_action, check_task_index
from integrations.metaworld.constants import MT10_TASKS

if TYPE_CHECKING:  # pragma: no cover - typing only
    from metaworld.sawyer_xyz_env import SawyerXYZEnv
    from metaworld.types import Task

__all__ = ["MetaWorldTaskWrapper", "TaskOneHotWrapper", "task_id_from_obs"]


class MetaWorldTaskWrapper(gym.Wrapper, gym.utils.RecordConstructorArgs):
    """Task sampling, seeding, success flags and a correct observation space for one Meta-World task.

    Wraps a (time-limited) ``SawyerXYZEnv``. On every ``reset()`` one of
    ``tasks`` (goal configurations) is drawn uniformly with the environment's
    generator, exactly like Meta-World's ``RandomTaskSelectWrapper``;
    ``reset(seed=s)`` re-seeds that generator first (the Sawyer environments
    ignore the ``seed`` argument of ``reset`` themselves), so seeded resets are
    reproducible.

    Info keys added on every ``reset`` and ``step``:

    * ``"success"`` (bool): ``True`` once the task's success criterion has been
      met at any step of the current episode, and for the rest of the episode.
      Its value at the last step is therefore the episode's outcome, as in
      Meta-World's evaluation (which stops an episode at its first success).
    * ``"is_success"`` (bool): the same flag, under the key SB3 reads
      (``Monitor``, ``EvalCallback``, ``HerReplayBuffer``).
    * ``"step_success"`` (bool): Meta-World's raw per-step criterion.
    * ``"task_id"`` (int) and ``"task_name"`` (str).

    Args:
        env: A Meta-World environment whose ``unwrapped`` is a ``SawyerXYZEnv``.
        tasks: Goal configurations (``metaworld.types.Task``) of ``env``'s task.
        task_id: Integer id of the task (its index in the benchmark).
        terminate_on_success: End the episode (``terminated=True``) at the first
            successful step. Off by default: Meta-World trains without it.

    Raises:
        ValueError: If ``tasks`` is empty or holds tasks of another environment.
    """

    def __init__(
        self,
        env: gym.Env,
        tasks: Sequence[Task],
        task_id: int = 0,
        terminate_on_success: bool = False,
    ) -> None:
        gym.utils.RecordConstructorArgs.__init__(
            self, tasks=tasks, task_id=task_id, terminate_on_success=terminate_on_success
        )
        gym.Wrapper.__init__(self, env)
        if isinstance(tasks, str | bytes):
            raise TypeError(f"tasks must be a sequence of Meta-World Tasks (e.g. from mt1_tasks or mt10_tasks), got "
                            f"{type(tasks).__name__} {tasks!r:.60}")
        tasks = tuple(tasks)
        if not tasks:
            raise ValueError("tasks must hold at least one Meta-World Task")
        for i, t in enumerate(tasks):
            if not (isinstance(getattr(t, "env_name", None), str) and isinstance(getattr(t, "data", None), bytes)):
                raise TypeError(f"tasks[{i}] is a {type(t).__name__} ({t!r:.60}), not a Meta-World Task (env_name, "
                                "data): take them from mt1_tasks / mt10_tasks, or a benchmark's train_tasks")
        names = {t.env_name for t in tasks}
        if len(names) != 1:
            raise ValueError(f"tasks must all belong to one Meta-World task, got {sorted(names)}")
        self.tasks: tuple[Task, ...] = tasks
        self.task_name: str = tasks[0].env_name
        self.task_id: int = check_int("task_id", task_id, minimum=0, numpy=True)
        self.terminate_on_success = bool(terminate_on_success)
        self._episode_success = False
        self._ready = False  # reset() has run

        raw = cast("SawyerXYZEnv", self.env.unwrapped)
        try:
            raw.set_task(tasks[0])
        except AssertionError as exc:
            raise ValueError(
                f"tasks are for {self.task_name!r}, which does not match the wrapped "
                f"environment {type(raw).__name__}"
            ) from exc
        # set_task() switches to the fully observable goal and invalidates the cached
        # space, but the declared observation_space still has goal bounds [0, 0].
        space = raw.sawyer_observation_space
        self._obs_low = space.low
        self._obs_high = space.high
        self.observation_space = spaces.Box(
            low=space.low, high=space.high, shape=space.shape,
            dtype=space.dtype,  # type: ignore[arg-type]  # gymnasium's stub wants a scalar type; a dtype works
        )

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        """Re-seeds (if ``seed``), samples a goal, and resets.

        Args:
            seed: Seed for the environment's generator (goal sampling, action and
                observation spaces).
            options: Passed through.

        Returns:
            ``(obs, info)``; ``obs`` is clipped to the declared bounds, as
            Meta-World already does in ``step()``.
        """
        raw = cast("SawyerXYZEnv", self.env.unwrapped)
        if seed is not None:  # (Meta-World's own seeding refuses a negative seed as gymnasium's error)
            seed = check_int("seed", seed, minimum=0, numpy=True)
            raw.seed(seed)
            self.observation_space.seed(seed)
        index = int(raw.np_random.choice(len(self.tasks)))
        raw.set_task(self.tasks[index])
        obs, info = self.env.reset(seed=None, options=options)
        obs = np.clip(obs, self._obs_low, self._obs_high).astype(self.observation_space.dtype)
        self._episode_success = False
        self._ready = True
        info = dict(info)
        info.update(self._flags(False))
        info["goal_index"] = index
        return obs, info

    def step(self, action: Any) -> tuple[np.ndarray, SupportsFloat, bool, bool, dict[str, Any]]:
        """Steps and adds the success flags and task id to ``info``.

        Args:
            action: A 4-vector in ``[-1, 1]`` (xyz end-effector delta, gripper).

        Returns:
            ``(obs, reward, terminated, truncated, info)``.
        """
        if not self._ready:  # (Meta-World's own check is a bare assert)
            raise RuntimeError("step() before reset(): reset the env first")
        obs, reward, terminated, truncated, info = self.env.step(arm_action(action))
        step_success = bool(float(info.get("success", 0.0)) >= 1.0)
        self._episode_success = self._episode_success or step_success
        info = dict(info)
        info.update(self._flags(step_success))
        if self.terminate_on_success and step_success:
            terminated = True
        return obs, float(reward), bool(terminated), bool(truncated), info

    @property
    def episode_success(self) -> bool:
        """Whether success has been reached in the current episode so far."""
        return self._episode_success

    def _flags(self, step_success: bool) -> dict[str, Any]:
        return {
            "success": self._episode_success,
            "is_success": self._episode_success,
            "step_success": step_success,
            "task_id": self.task_id,
            "task_name": self.task_name,
        }


class TaskOneHotWrapper(gym.ObservationWrapper, gym.utils.RecordConstructorArgs):
    """Appends a one-hot task id to a flat ``Box`` observation (the MT10/MT50 convention).

    Unlike Meta-World's ``OneHotWrapper``, the declared space keeps the
    observation's dtype, so observations are members of it.

    Args:
        env: Environment with a 1-D ``Box`` observation space.
        task_id: Index of the 1 in the one-hot vector.
        num_tasks: Length of the one-hot vector.

    Raises:
        TypeError: If the observation space is not a 1-D ``Box``.
        ValueError: If ``task_id`` is not in ``[0, num_tasks)``.
    """

    def __init__(self, env: gym.Env, task_id: int, num_tasks: int) -> None:
        gym.utils.RecordConstructorArgs.__init__(self, task_id=task_id, num_tasks=num_tasks)
        gym.ObservationWrapper.__init__(self, env)
        space = env.observation_space
        if not isinstance(space, spaces.Box) or len(space.shape) != 1:
            raise TypeError(f"TaskOneHotWrapper needs a 1-D Box observation space, got {space}")
        self.num_tasks: int = check_int("num_tasks", num_tasks, minimum=1, numpy=True)
        self.task_id: int = check_task_index(task_id, self.num_tasks)
        self.one_hot = np.zeros(self.num_tasks, dtype=space.dtype)
        self.one_hot[self.task_id] = 1
        self.observation_space = spaces.Box(
            low=np.concatenate([space.low, np.zeros(self.num_tasks, dtype=space.dtype)]),
            high=np.concatenate([space.high, np.ones(self.num_tasks, dtype=space.dtype)]),
            dtype=space.dtype,  # type: ignore[arg-type]  # gymnasium's stub wants a scalar type; a dtype works
        )

    def observation(self, observation: np.ndarray) -> np.ndarray:
        """Returns ``observation`` with the one-hot task id appended."""
        return np.concatenate([np.asarray(observation, dtype=self.one_hot.dtype), self.one_hot])


def task_id_from_obs(obs: np.ndarray, info: Mapping[str, Any] | None = None, *,
                     num_tasks: int = len(MT10_TASKS)) -> int:
    """Reads the task id from an observation that ends with a one-hot task vector.

    It takes the experience wrappers' ``task_id(obs, info)`` call as it is:
    ``ExperienceWrapper(env, bank, task_id=task_id_from_obs)``.

    Args:
        obs: A 1-D observation whose last ``num_tasks`` entries are the one-hot
            id (as produced by :class:`TaskOneHotWrapper`).
        info: The reset's info, when the wrappers call it (not read).
        num_tasks: Length of the one-hot vector (10 for MT10).

    Returns:
        The index of the 1.

    Raises:
        ValueError: If ``obs`` is not 1-D, is too short, or its tail is not a
            one-hot vector (exactly one 1, the rest 0).
    """
    arr = np.asarray(obs)
    if arr.ndim != 1:
        raise ValueError(
            f"task_id_from_obs expects one 1-D observation, got shape {arr.shape}; "
            "apply it per row for a batch"
        )
    if arr.shape[0] < num_tasks:
        raise ValueError(
            f"observation has {arr.shape[0]} entries, fewer than num_tasks={num_tasks}"
        )
    tail = arr[-num_tasks:]
    ones = np.flatnonzero(tail == 1)
    if ones.size != 1 or np.count_nonzero(tail) != 1:
        raise ValueError(
            f"the last {num_tasks} entries are not a one-hot task id: {tail.tolist()} "
            "(was the env made with one_hot=True?)"
        )
    return int(ones[0])
