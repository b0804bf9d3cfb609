"""ML1 in the trials protocol: one of ML1's goals per ``reset(seed=...)``, the goal hidden, a trial capped.

An *instance* is one of ``metaworld.ML1(task, seed=0)``'s goals: instances ``0 .. 49`` are its 50
training goals (``train_tasks``), ``50 .. 99`` its 50 held-out goals (``test_tasks``); the
held-out ones are never trained on (:func:`ml1_instances`). ``reset(seed=s)`` gives instance ``s``
every time (Meta-World's resets are deterministic once a task is set: the hand starts where it
always does, the goal and objects where the task's ``rand_vec`` puts them).

The goal is hidden as ML1 hides it (its tasks' own ``partially_observable=True``: the goal's three
entries, ``obs[36:39]``, are zeros); ``goal_visible=True`` re-encodes the tasks with the goal shown
(the MT setting; the ceiling arm). Success is Meta-World's own ``info["success"]``; a trial ends at
its first successful step (``terminated``) or at the cap (``truncated``).

Rewards are Meta-World's dense reward (pinned version :data:`REWARD_FUNCTION_VERSION`, 0-10 per
step) times ``reward_scale`` (0.1: 0-1 per step, the calibrated ``obsnorm-rs`` setting). Ending
a trial at success would cut the dense reward stream short, and the calibration trained without
ending at success: so the successful step also pays, with ``success_bonus``, what staying at the
goal until the cap would have paid (that step's reward for each remaining step, discounted by
``gamma``), which leaves PPO's preference between reaching and hovering as it was.

Meta-World's resets are deterministic, so a demonstration of an instance replays open loop to
success (retrieve-and-play: 1.00 on the held-out goals). ``start_moves`` makes each trial start
after that many random hand moves (drawn per reset from ``start_seed``; the goal is the
instance's), so that a demonstration must be followed rather than replayed, as the in-context
maze family does with its random moves.
"""

from __future__ import annotations

import functools
import pickle
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, SupportsFloat

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from experience_wrappers.validators import check_bool, check_int, check_real
from integrations.metaworld.checks import arm_action, check_seed, check_task_name
from integrations.metaworld.constants import NUM_GOALS, REWARD_FUNCTION_VERSION
from integrations.metaworld.goals import build_benchmark

if TYPE_CHECKING:  # pragma: no cover - typing only
    from metaworld.types import Task

__all__ = ["ML1Trials", "ml1_instances", "ml1_goal_tasks", "visible_tasks", "goal_position", "success_part", "TRIAL_CAP",
           "BENCHMARK_SEED"]

#: the trial cap: about 3x the scripted reach policy's mean length (49 steps on the held-out
#: goals, 33-72; benchmarks/results/metaworld-calibration/reach-v3_references.json), twice its
#: longest, and the calibration's cap, so that the calibrated PPO settings carry over
TRIAL_CAP = 150
#: the seed of ``metaworld.ML1(task, seed)``: which 50 + 50 goals the benchmark draws
BENCHMARK_SEED = 0


def ml1_instances(goals: int = NUM_GOALS) -> tuple[list[int], list[int]]:
    """The training and held-out instances: ``(list(range(50)), list(range(50, 100)))``; with ``goals=n``, the
    first ``n`` of each (ML1's training goals, then its test goals: never the one among the other).

    >>> train, held_out = ml1_instances()
    >>> len(train), len(held_out), set(train) & set(held_out)
    (50, 50, set())
    """
    goals = check_int("goals", goals, minimum=1, maximum=NUM_GOALS, numpy=True)  # ML1 draws 50 of each
    return list(range(goals)), list(range(NUM_GOALS, NUM_GOALS + goals))  # (held out: ML1's test goals)


@functools.lru_cache(maxsize=8)
def _ml1(task: str, seed: int) -> tuple[tuple[Task, ...], tuple[Task, ...]]:
    import metaworld

    check_task_name(task)  # (Meta-World's own error does not list the names)

    bench = build_benchmark(lambda: metaworld.ML1(task, seed=seed), NUM_GOALS)
    return tuple(bench.train_tasks), tuple(bench.test_tasks)


def ml1_goal_tasks(task: str = "reach-v3", goal_visible: bool = False,
                   seed: int = BENCHMARK_SEED) -> tuple[Task, ...]:
    """ML1's 100 goals of ``task`` in instance order: its 50 training tasks, then its 50 test tasks.

    ``goal_visible`` re-encodes each with ``partially_observable=False`` (the goal in ``obs[36:39]``).
    """
    train, test = _ml1(task, int(seed))
    tasks = train + test
    return visible_tasks(tasks) if goal_visible else tasks


def visible_tasks(tasks: Sequence[Task]) -> tuple[Task, ...]:
    """``tasks`` re-encoded with ``partially_observable=False``: the goal in ``obs[36:39]`` (Meta-World's MT setting)."""
    from metaworld.types import Task

    out = []
    for t in tasks:
        data = pickle.loads(t.data)
        data["partially_observable"] = False
        out.append(Task(env_name=t.env_name, data=pickle.dumps(data)))
    return tuple(out)


def goal_position(task: Task) -> np.ndarray:
    """The goal position of an ML1 task: the last 3 entries of its ``rand_vec`` (reach, push, pick-place)."""
    return np.asarray(pickle.loads(task.data)["rand_vec"], dtype=np.float64)[-3:].copy()


def success_part(task: str) -> slice:
    """The observation's columns of the part whose place decides success: the hand on reach, the object on push
    and pick-place (the tasks whose goal :func:`goal_position` reads).

    >>> success_part("reach-v3"), success_part("push-v3")
    (slice(0, 3, None), slice(4, 7, None))
    """
    if task == "reach-v3":
        return slice(0, 3)
    if task in ("push-v3", "pick-place-v3"):
        return slice(4, 7)
    raise ValueError(f"success_part knows reach-v3, push-v3 and pick-place-v3, got {task!r}")


class ML1Trials(gym.Env):
    """One Meta-World ML1 task whose ``reset(seed=s)`` sets instance ``s`` (see the module's docstring).

    Args:
        task: the ML1 task (``"reach-v3"``).
        cap: the trial's step cap (truncation).
        goal_visible: show the goal (the ceiling); False (default): ML1's hidden goal.
        reward_scale: multiplies Meta-World's reward.
        success_bonus: the successful step also pays its reward for each step left to the cap,
            discounted by ``gamma`` (True or ``"cap"``, see the module's docstring); ``"infinite"``:
            for every step after it, discounted, ``reward * gamma / (1 - gamma)`` (what a critic
            that does not see the time bootstraps at the cap for a trial that stays near the
            goal without ending: issue 37); False: no bonus.
        gamma: the discount of ``success_bonus`` (PPO's).
        start_moves: random hand moves before each trial's first observation (0, the default: none;
            every trial of an instance then starts in the same state).
        start_seed: seed of those moves.
        reward_observed: append the last two steps' rewards (scaled, without the success bonus; zeros
            at a trial's start) to the observation, 41 wide: where the goal is hidden, how the reward
            changed with the last move is what a memoryless policy can search by within a trial
            (RL^2's input, without its recurrence).

    ``info`` carries Meta-World's ``success`` (this step's, so True only on a trial's last step),
    ``is_success`` (the same, for SB3) and ``instance``; the hidden goal, for analysis, is :meth:`goal`.

    >>> env = ML1Trials()
    >>> obs, info = env.reset(seed=3)
    >>> obs.shape, obs[36:].tolist(), info["instance"]
    ((39,), [0.0, 0.0, 0.0], 3)
    """

    metadata: dict[str, Any] = {"render_modes": []}

    @property
    def max_steps(self) -> int:
        """A trial's step cap (``cap``): what ``ComplementaryRL(scope="run")`` takes as the memory's horizon."""
        return self.cap

    def __init__(self, task: str = "reach-v3", cap: int = TRIAL_CAP, *, goal_visible: bool = False,
                 reward_scale: float = 0.1, success_bonus: bool | str = True, gamma: float = 0.99,
                 start_moves: int = 0, start_seed: int = 0, reward_observed: bool = False) -> None:
        if not isinstance(task, str):  # (a list failed as "unhashable" in the task table's cache)
            raise TypeError(f"task must be an ML1 task name (a str, e.g. 'reach-v3'), got {task!r}")
        self.task_name = task
        self.cap = check_int("cap", cap, minimum=1)
        self.goal_visible = check_bool("goal_visible", goal_visible)
        reward_scale = check_real("reward_scale", reward_scale)
        if not reward_scale > 0:
            raise ValueError(f"reward_scale must be a finite number > 0, got {reward_scale!r}")
        if not 0.0 <= check_real("gamma", gamma) <= 1.0:
            raise ValueError(f"gamma must be in [0, 1], got {gamma!r}")
        if success_bonus not in (True, False, "cap", "infinite"):
            raise ValueError(f"success_bonus must be True, False, 'cap' or 'infinite', got {success_bonus!r}")
        if success_bonus == "infinite" and not float(gamma) < 1.0:
            raise ValueError("success_bonus='infinite' needs gamma < 1")
        self.reward_scale, self.gamma = float(reward_scale), float(gamma)
        #: "cap", "infinite" or None (no bonus)
        # by equality, as bool() read it before: 1 is True ("cap"), 0 False (no bonus)
        self.success_bonus: str | None = ("cap" if success_bonus in (True, "cap") else
                                          "infinite" if success_bonus == "infinite" else None)
        self.tasks = self._goal_tasks(task, self.goal_visible)
        self.start_moves = check_int("start_moves", start_moves, minimum=0)
        self._moves = np.random.default_rng(check_seed(start_seed, "start_seed"))
        #: a Meta-World env per task name, made when an instance of it is first reset (ML1: one task);
        #: ``raw`` is the current instance's
        self._raws: dict[str, Any] = {}
        self.raw: Any = self._raw_of(self.tasks[0].env_name)
        self.raw.set_task(self.tasks[0])
        self._box = box = self._observation_box()
        if not isinstance(reward_observed, bool):
            raise TypeError(f"reward_observed must be a bool, got {reward_observed!r}")
        self.reward_observed = reward_observed
        self._rewards = np.zeros(2, np.float32)  # the last step's reward, the one before
        self.observation_space = self._box if not reward_observed else spaces.Box(
            np.concatenate([box.low, [-np.inf, -np.inf]]).astype(box.dtype),
            np.concatenate([box.high, [np.inf, np.inf]]).astype(box.dtype), dtype=box.dtype)  # type: ignore[arg-type]
        act = self.raw.action_space
        assert isinstance(act, spaces.Box)
        self.action_space = spaces.Box(act.low, act.high, act.shape, np.float32)
        self.instance = 0
        self._t = 0
        self._ready = False  # reset() has run (Meta-World's own check of a step before it is a bare assert)
        self._over = False  # the trial ended (a success or the cap): step() needs a reset

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None
              ) -> tuple[np.ndarray, dict[str, Any]]:
        """Start a trial of instance ``seed`` (None: the current instance again).

        Raises:
            ValueError: ``seed`` is not an instance (``0 .. 99``).
            TypeError: ``seed`` is not an int.
        """
        if seed is not None:
            seed = check_int("seed", seed, numpy=True, type_error=TypeError, hint=" (an instance)")
            if not 0 <= seed < len(self.tasks):
                raise ValueError(f"{type(self).__name__}({self.task_name!r}): instance {seed} is not one of its "
                                 f"instances ({self._instances_text()})")
            self.instance = int(seed)
        super().reset(seed=seed)
        self.raw = self._raw_of(self.tasks[self.instance].env_name)
        self.raw.set_task(self.tasks[self.instance])
        obs, _ = self.raw.reset()
        for _ in range(self.start_moves):
            obs, *_ = self.raw.step(self._moves.uniform(-1.0, 1.0, 4).astype(np.float32))
        self._t = 0
        self._ready, self._over = True, False
        self._rewards[:] = 0.0
        return self._observe(obs), {"instance": self.instance, "success": False, "is_success": False}

    def step(self, action: Any) -> tuple[np.ndarray, SupportsFloat, bool, bool, dict[str, Any]]:
        if not self._ready:
            raise RuntimeError("step() before reset(): reset the env first")
        if self._over:  # (Meta-World's own env would raise its "reset the env manually" at its path length)
            raise RuntimeError("step() after the trial ended (a success or its cap): reset the env for the next "
                               "trial (step_on() goes on past a success without a trial)")
        obs, reward, _, _, info = self.raw.step(arm_action(action))
        self._t += 1
        success = bool(float(info.get("success", 0.0)) >= 1.0)
        r = float(reward) * self.reward_scale
        self._rewards[:] = (r, self._rewards[0])
        if success and self.success_bonus == "cap":
            left = self.cap - self._t
            r += r * sum(self.gamma ** j for j in range(1, left + 1))
        elif success and self.success_bonus == "infinite":
            r += r * self.gamma / (1.0 - self.gamma)
        out = {**info, "success": success, "is_success": success, "instance": self.instance}
        truncated = (not success) and self._t >= self.cap
        self._over = success or truncated
        return self._observe(obs), r, success, truncated, out

    def step_on(self, action: Any) -> tuple[np.ndarray, float]:
        """A step of Meta-World's own env after the trial ended (a demonstration going on past its success, to
        where the object settles): ``(observation as this env shows it, reward x reward_scale)``. The trial is
        not stepped; the next ``reset`` starts a new one.

        Raises:
            RuntimeError: before a reset.
        """
        if not self._ready:
            raise RuntimeError("step_on() before reset(): reset the env first")
        self.raw.max_path_length = max(self.raw.max_path_length, self.raw.curr_path_length + 2)
        obs, reward, *_ = self.raw.step(arm_action(action))
        r = float(reward) * self.reward_scale
        self._rewards[:] = (r, self._rewards[0])
        return self._observe(obs), r

    @property
    def last_reward(self) -> float:
        """The last step's reward times ``reward_scale``, without the success bonus (0.0 at a trial's start)."""
        return float(self._rewards[0])

    @property
    def env_name(self) -> str:
        """The Meta-World task of the current instance (ML1: ``task`` itself)."""
        return str(self.tasks[self.instance].env_name)

    def goal(self) -> np.ndarray:
        """The current instance's goal position (reach, push and pick-place: see :func:`goal_position`).

        For other tasks it is the last three values of the task's random vector, which for many of
        them is where the object starts, not the goal: the scripted policies the demonstrations
        use read their goal there and succeed regardless on the tasks tried (ML10's), but as a
        goal it is right for those three tasks only."""
        return goal_position(self.tasks[self.instance])

    def _goal_tasks(self, task: str, goal_visible: bool) -> tuple[Task, ...]:
        """The instances' Meta-World tasks, in instance order (ML1: :func:`ml1_goal_tasks`)."""
        return ml1_goal_tasks(task, goal_visible)

    def _raw_of(self, name: str) -> Any:
        """The Meta-World env of task ``name`` (made on first use), truncating after this env's cap."""
        if name not in self._raws:
            import metaworld

            raw = metaworld.env_dict.ALL_V3_ENVIRONMENTS[name](reward_function_version=REWARD_FUNCTION_VERSION)
            raw.max_path_length = self.cap + self.start_moves + 1  # this env truncates at the cap first
            self._raws[name] = raw
        return self._raws[name]

    def _observation_box(self) -> spaces.Box:
        """Meta-World's observation bounds of the instances' task (ML1: the one task's)."""
        box = self.raw.sawyer_observation_space
        return spaces.Box(box.low, box.high, box.shape, box.dtype)

    def _instances_text(self) -> str:
        return f"0 .. {len(self.tasks) - 1}: training 0-{NUM_GOALS - 1}, held-out {NUM_GOALS}-{2 * NUM_GOALS - 1}"

    def _observe(self, obs: np.ndarray) -> np.ndarray:
        """Meta-World's observation clipped to its space, with the last rewards where they are observed."""
        space = self._box
        out = np.clip(obs, space.low, space.high).astype(space.dtype)
        return np.concatenate([out, self._rewards.astype(space.dtype)]) if self.reward_observed else out

    def close(self) -> None:
        for raw in self._raws.values():
            raw.close()
        super().close()
