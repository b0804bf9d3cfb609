"""Meta-World (v3 tasks, ``metaworld`` 3.1.x) environment factories for SB3 training.

Meta-World ships its environments through gymnasium's registry
(``gym.make("Meta-World/MT1", env_name=..., seed=...)`` and
``gym.make_vec("Meta-World/MT10", vector_strategy="sync", seed=...)``). Those
factories are built for Meta-World's own evaluation loop and have properties
that get in the way of a Stable-Baselines3 training run:

* ``gym.make_vec("Meta-World/MT10")`` returns a *gymnasium* ``VectorEnv``, which
  SB3 cannot consume; here each task is a plain ``gymnasium.Env`` and
  :func:`make_mt10_vec_env` assembles them into an SB3 ``VecEnv``.
* ``reset(seed=...)`` is ignored by the Sawyer environments (they only know the
  old ``env.seed()``), so seeded resets are not reproducible. The wrapper here
  re-seeds the environment's generator when a seed is passed.
* The declared observation space is computed before the task is set, so its
  goal bounds are ``[0, 0]`` while observations carry the goal: observations lie
  outside the space (gymnasium's checker warns on every ``gym.make``). The
  wrapper declares the space of the fully observable task. Meta-World's
  ``OneHotWrapper`` also declares a ``float32`` space for ``float64``
  observations; :class:`TaskOneHotWrapper` keeps ``float64``.
* ``info["success"]`` is a per-step float. Here it is a bool that stays
  ``True`` once success was reached in the episode (see :class:`MetaWorldTaskWrapper`).

Task sampling follows Meta-World: a benchmark (``metaworld.MT1(name, seed)`` or
``metaworld.MT10(seed)``) draws 50 goal configurations per task once, from
``seed`` (``num_goals`` changes the 50); every ``reset()`` then picks one of them uniformly with the
environment's own generator (``RandomTaskSelectWrapper`` semantics). Goals are
observed (the MT setting: ``partially_observable=False``), in ``obs[36:39]``.

Nothing in :mod:`experience_wrappers` imports this module.
"""

from __future__ import annotations

import difflib
import functools
import os
import threading
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, SupportsFloat

import gymnasium as gym
import numpy as np
from gymnasium import spaces
from stable_baselines3.common.monitor import Monitor
from stable_baselines3.common.vec_env import DummyVecEnv, VecEnv

if TYPE_CHECKING:  # pragma: no cover - typing only
    from metaworld import Benchmark
    from metaworld.types import Task

__all__ = [
    "INSTALL_HINT",
    "MAX_EPISODE_STEPS",
    "MT10_TASKS",
    "NUM_GOALS",
    "REWARD_FUNCTION_VERSION",
    "MetaWorldTaskWrapper",
    "TaskOneHotWrapper",
    "make_mt10_env",
    "make_mt10_vec_env",
    "make_mt1_env",
    "mt10_tasks",
    "task_id_from_obs",
]

REWARD_FUNCTION_VERSION: str = "v2"
"""Meta-World reward function version used by every factory here (pinned).

Meta-World v3 tasks implement two dense reward functions: ``"v2"`` (the
shaped rewards of Meta-World v2, the library default) and ``"v1"`` (the
original ones). Published success rates and learning curves swing a lot with
this choice, so it is pinned here and recorded with results; change it only
on purpose, through the ``reward_function_version`` argument.
"""

MAX_EPISODE_STEPS: int = 500
"""Meta-World's episode horizon (``SawyerXYZEnv.max_path_length``)."""

MT10_TASKS: tuple[str, ...] = (
    "reach-v3",
    "push-v3",
    "pick-place-v3",
    "door-open-v3",
    "drawer-open-v3",
    "drawer-close-v3",
    "button-press-topdown-v3",
    "peg-insert-side-v3",
    "window-open-v3",
    "window-close-v3",
)
"""The ten MT10 tasks in Meta-World's canonical order (``metaworld.env_dict.MT10_V3``).

The position of a task in this tuple is its MT10 task id and the index of the
1 in its one-hot vector.
"""

INSTALL_HINT = "pip install complementary-rl[metaworld]"

_REWARD_VERSIONS = ("v1", "v2")


def _require_metaworld() -> Any:
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


def _all_task_names() -> list[str]:
    metaworld = _require_metaworld()
    return list(metaworld.env_dict.ALL_V3_ENVIRONMENTS.keys())


def _check_task_name(task_name: str) -> None:
    names = _all_task_names()
    if not isinstance(task_name, str) or task_name not in names:
        close = difflib.get_close_matches(str(task_name), names, n=3)
        hint = f" Did you mean {close}?" if close else ""
        raise ValueError(
            f"Unknown Meta-World task {task_name!r}. Meta-World 3.x names its tasks "
            f"'<name>-v3' (e.g. 'reach-v3'); {len(names)} are available.{hint}"
        )


def _check_max_episode_steps(max_episode_steps: int | None) -> int:
    if max_episode_steps is None:
        return MAX_EPISODE_STEPS
    if isinstance(max_episode_steps, bool) or not isinstance(max_episode_steps, int | np.integer):
        raise TypeError(
            f"max_episode_steps must be a positive int or None, got {type(max_episode_steps).__name__}"
        )
    if max_episode_steps <= 0:
        raise ValueError(f"max_episode_steps must be positive, got {max_episode_steps}")
    return int(max_episode_steps)


def _check_seed(seed: int | None, name: str = "seed") -> int | None:
    if seed is None:
        return None
    if isinstance(seed, bool) or not isinstance(seed, int | np.integer):
        raise TypeError(f"{name} must be an int or None, got {type(seed).__name__}")
    if seed < 0:
        raise ValueError(f"{name} must be non-negative, got {seed}")
    return int(seed)


def _check_reward_version(version: str) -> str:
    if version not in _REWARD_VERSIONS:
        raise ValueError(
            f"reward_function_version must be one of {_REWARD_VERSIONS}, got {version!r}"
        )
    return version


NUM_GOALS: int = 50
"""Goal configurations a Meta-World benchmark draws per task (``metaworld._N_GOALS``)."""

_GOALS_LOCK = threading.Lock()


def _check_num_goals(num_goals: int) -> int:
    if isinstance(num_goals, bool) or not isinstance(num_goals, int | np.integer):
        raise TypeError(f"num_goals must be an int, got {type(num_goals).__name__}")
    if num_goals < 1:
        raise ValueError(f"num_goals must be >= 1, got {num_goals}")
    return int(num_goals)


def _build_benchmark(factory: Callable[[], Benchmark], num_goals: int) -> Benchmark:
    """Builds a benchmark with ``num_goals`` goals per task.

    Meta-World reads the module global ``metaworld._N_GOALS`` (its own
    ``num_goals`` option of ``gym.make`` sets it for good); here it is set only
    for the duration of the build.
    """
    metaworld = _require_metaworld()
    with _GOALS_LOCK:
        previous = metaworld._N_GOALS
        metaworld._N_GOALS = num_goals
        try:
            return factory()
        finally:
            metaworld._N_GOALS = previous


@functools.lru_cache(maxsize=8)
def _mt1_tasks_cached(task_name: str, seed: int, num_goals: int) -> tuple[Task, ...]:
    return _mt1_tasks(task_name, seed, num_goals)


def _mt1_tasks(task_name: str, seed: int | None, num_goals: int) -> tuple[Task, ...]:
    metaworld = _require_metaworld()
    benchmark = _build_benchmark(lambda: metaworld.MT1(task_name, seed=seed), num_goals)
    return tuple(benchmark.train_tasks)


@functools.lru_cache(maxsize=4)
def _mt10_benchmark_cached(seed: int, num_goals: int) -> Benchmark:
    return _mt10_benchmark(seed, num_goals)


def _mt10_benchmark(seed: int | None, num_goals: int) -> Benchmark:
    metaworld = _require_metaworld()
    return _build_benchmark(lambda: metaworld.MT10(seed=seed), num_goals)


def _mt10_goals(seed: int | None, num_goals: int) -> dict[int, tuple[Task, ...]]:
    num_goals = _check_num_goals(num_goals)
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
    task_index = _check_task_index(task_index, len(MT10_TASKS))
    return _mt10_goals(_check_seed(seed), num_goals)[task_index]


def _check_task_index(task_index: int, num_tasks: int) -> int:
    if isinstance(task_index, bool) or not isinstance(task_index, int | np.integer):
        raise TypeError(f"task_index must be an int, got {type(task_index).__name__}")
    if not 0 <= task_index < num_tasks:
        raise ValueError(f"task_index must be in [0, {num_tasks}), got {task_index}")
    return int(task_index)


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
        tasks = tuple(tasks)
        if not tasks:
            raise ValueError("tasks must hold at least one Meta-World Task")
        names = {t.env_name for t in tasks}
        if len(names) != 1:
            raise ValueError(f"tasks must all belong to one Meta-World task, got {sorted(names)}")
        self.tasks: tuple[Task, ...] = tasks
        self.task_name: str = tasks[0].env_name
        self.task_id: int = int(task_id)
        self.terminate_on_success = bool(terminate_on_success)
        self._episode_success = False

        raw = self.env.unwrapped
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
            low=space.low, high=space.high, shape=space.shape, dtype=space.dtype
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
        raw = self.env.unwrapped
        if seed is not None:
            raw.seed(int(seed))
            self.observation_space.seed(int(seed))
        index = int(raw.np_random.choice(len(self.tasks)))
        raw.set_task(self.tasks[index])
        obs, info = self.env.reset(seed=None, options=options)
        obs = np.clip(obs, self._obs_low, self._obs_high).astype(self.observation_space.dtype)
        self._episode_success = False
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
        obs, reward, terminated, truncated, info = self.env.step(action)
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
        if (
            isinstance(num_tasks, bool)
            or not isinstance(num_tasks, int | np.integer)
            or num_tasks < 1
        ):
            raise ValueError(f"num_tasks must be a positive int, got {num_tasks!r}")
        self.task_id: int = _check_task_index(task_id, int(num_tasks))
        self.num_tasks = int(num_tasks)
        self.one_hot = np.zeros(self.num_tasks, dtype=space.dtype)
        self.one_hot[self.task_id] = 1
        self.observation_space = spaces.Box(
            low=np.concatenate([space.low, np.zeros(self.num_tasks, dtype=space.dtype)]),
            high=np.concatenate([space.high, np.ones(self.num_tasks, dtype=space.dtype)]),
            dtype=space.dtype,
        )

    def observation(self, observation: np.ndarray) -> np.ndarray:
        """Returns ``observation`` with the one-hot task id appended."""
        return np.concatenate([np.asarray(observation, dtype=self.one_hot.dtype), self.one_hot])


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
    metaworld = _require_metaworld()
    steps = _check_max_episode_steps(max_episode_steps)
    env_cls = metaworld.env_dict.ALL_V3_ENVIRONMENTS[task_name]
    raw = env_cls(
        reward_function_version=_check_reward_version(reward_function_version), **env_kwargs
    )
    # The Sawyer env raises once curr_path_length reaches max_path_length; keep it
    # in step with the TimeLimit so horizons above 500 work too.
    raw.max_path_length = steps
    if seed is not None:
        raw.seed(seed)
    env = gym.wrappers.TimeLimit(raw, max_episode_steps=steps)
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
    _require_metaworld()
    _check_task_name(task_name)
    seed = _check_seed(seed)
    num_goals = _check_num_goals(num_goals)
    if seed is None:
        tasks = _mt1_tasks(task_name, None, num_goals)
    else:
        tasks = _mt1_tasks_cached(task_name, seed, num_goals)
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
    _require_metaworld()
    task_index = _check_task_index(task_index, len(MT10_TASKS))
    seed = _check_seed(seed)
    env_seed = seed if env_seed is None else _check_seed(env_seed, "env_seed")
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


def make_mt10_vec_env(
    n_envs_per_task: int = 1,
    seed: int | None = 0,
    vec_env_cls: type[VecEnv] = DummyVecEnv,
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
        wrapper_kwargs: Keyword arguments for ``wrapper_class``.
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
    _require_metaworld()
    if isinstance(n_envs_per_task, bool) or not isinstance(n_envs_per_task, int | np.integer):
        raise TypeError(f"n_envs_per_task must be an int, got {type(n_envs_per_task).__name__}")
    if n_envs_per_task < 1:
        raise ValueError(f"n_envs_per_task must be >= 1, got {n_envs_per_task}")
    seed = _check_seed(seed)
    _check_reward_version(reward_function_version)
    _check_max_episode_steps(max_episode_steps)
    if wrapper_kwargs is not None and wrapper_class is None:
        raise ValueError("wrapper_kwargs given without wrapper_class")
    goals = _mt10_goals(seed, num_goals)
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
                env = wrapper_class(env, **(wrapper_kwargs or {}))
            return env

        return _init

    n_envs = len(MT10_TASKS) * int(n_envs_per_task)
    vec_env = vec_env_cls([make_env_fn(rank) for rank in range(n_envs)], **(vec_env_kwargs or {}))
    if seed is not None:
        vec_env.seed(seed)
    return vec_env


def task_id_from_obs(obs: np.ndarray, num_tasks: int = len(MT10_TASKS)) -> int:
    """Reads the task id from an observation that ends with a one-hot task vector.

    Args:
        obs: A 1-D observation whose last ``num_tasks`` entries are the one-hot
            id (as produced by :class:`TaskOneHotWrapper`).
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
