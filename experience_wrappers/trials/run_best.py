"""``RunBest``: show the policy where its run's best trial got to, as an offset from where it stands.

A run's entries are read by nearness (:meth:`~experience_wrappers.trials.TrialMemory.read`): the
steps of earlier trials nearest the agent's state, with the actions they took. Where the goal is a
place the observation hides (Meta-World's ML1 with the goal hidden), what a successful trial or a
demonstration says most plainly is where it ended; where rewards are dense, a failed trial says
where it came closest. This wrapper adds that one point as an observation key of its own, outside
the pooled rows, so the policy reads it as it would read a visible goal:

    run_best = [best key - key of the current state | succeeded | its reward | present]

The *best* step of the run's entries (its earlier trials and a demonstration placed in the run) is
the last step of a successful trial (the newest such trial: ``TrialMemory.newest_success``), else
the step with the highest reward (with ``TrialMemory(dense_rewards=True)``; failed trials are
entries only with ``write_failures``).
Which state marks it is ``TrialMemory(run_best=...)``: ``"taken"`` (``True``), the state its
action was taken from; ``"reached"``, the state its reward was received in: the next step's, or
for a trial's last step the observation it ended in (which the trial env gives the memory; a
demonstration without one falls back to its last step). For a success that ends a trial on
reaching a goal's radius, the state the successful action was taken from lies just outside the
radius; on Meta-World reach the two tied (``crl-trials-reached-noimitate-bonus-inf``).
``"located"`` marks as ``"reached"`` and, until the run has a success, shows where a learned
:class:`~experience_wrappers.trials.goal_locator.GoalLocator` guesses the run will succeed, from
its failed trial of the highest reward. With ``TrialMemory(success_ahead=m)`` a run's own success
(not a demonstration's) is marked ``m`` steps further along its approach (its last
:data:`AHEAD_WINDOW` steps' mean move): where success is reaching a radius, the state it came in
lies on the radius's edge, and the goal lies ahead of it.
It is experience of the instance: free runs, and ``TrialMemory(scope="none")``, see zeros; with
``scope="other"`` it is the donor run's (the random-retrieval ablation). It is computed once per
trial, at reset (a run's entries change only when a trial ends); with
``TrialMemory(relocate_every=N)`` the locator guesses again every ``N`` steps of a trial whose run
has no success, from the trial's own steps where they came closer; with
``TrialMemory(locate_from="all")`` it reads the run's failed trials together (and the trial going
on); with ``TrialMemory(search=...)``, where the trial's best reward stopped rising, around the guess
(a draw of the locator's error's spread). ``TrialMemory(run_best=True)`` is the setting, saved with a run's memory settings;
:func:`~experience_wrappers.trials.wrapper.trial_env` installs this wrapper where it is set.
"""

from __future__ import annotations

import warnings
from typing import TYPE_CHECKING, Any, SupportsFloat

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from ..keys.base import add_batch_axis
from ..validators import check_int, check_real
from .checks import RUN_BEST_KEY

if TYPE_CHECKING:
    from .memory import TrialMemory
    from .wrapper import RunScopeWrapper

__all__ = ["AHEAD_WINDOW", "LOCATE_FROM", "ahead_steps", "LOCATE_HISTORY", "RUN_BEST", "STALL", "RunBest", "best_step", "failed_rows",
           "locator_options", "run_best_mode",
           "run_trials", "teach_locator", "trial_rows"]

#: the values ``TrialMemory(run_best=...)`` takes (``True`` is ``"taken"``)
RUN_BEST = (False, True, "reached", "taken", "located")
#: ``TrialMemory(success_ahead=m)``: a success's approach is the mean move of its last this many steps
AHEAD_WINDOW = 5
#: what the goal locator reads (``TrialMemory(locate_from=...)``): the run's failed trial of the highest
#: reward, or its newest failed trials together
LOCATE_FROM = ("best", "all")
#: with ``locate_from="all"``, the earlier failed trials read with the newest (a run of 4 trials: all of them)
LOCATE_HISTORY = 3
#: with ``TrialMemory(search=...)``, a trial has stalled where its best reward rose by at most this fraction since
#: the previous guess
STALL = 0.01


def run_best_mode(run_best: bool | str, dense_rewards: bool) -> str:
    """``TrialMemory(run_best=...)`` checked: ``""`` (not shown), ``"taken"`` (``True``), ``"reached"`` or ``"located"``.

    Raises:
        ValueError: not one of :data:`RUN_BEST`, or ``"located"`` without ``dense_rewards`` (the locator
            reads a failed trial's rewards; sparse ones say nothing of where it got to).
    """
    if not isinstance(run_best, bool | str) or run_best not in RUN_BEST:
        raise ValueError(f"run_best must be one of {RUN_BEST} (True is \"taken\"), got {run_best!r}")
    if run_best == "located" and not dense_rewards:
        raise ValueError("run_best=\"located\" needs dense_rewards=True: the goal locator reads a failed trial's "
                         "rewards, and sparse ones say nothing of where it got to")
    return "taken" if run_best is True else run_best or ""


def ahead_steps(success_ahead: Any, mode: str, horizon: Any, observation_space: spaces.Space, key_encoder: Any) -> int:
    """``TrialMemory(success_ahead=...)`` checked against its ``run_best`` mode (:func:`run_best_mode`'s) and
    ``horizon``. Warns where the default keys of ``observation_space`` hold one-hot parts (a ``Discrete``,
    ``MultiDiscrete`` or ``MultiBinary`` part): keys that change by jumps have no "further along", and a mark
    moved along them is no state.

    Raises:
        ValueError: not an int in ``[0, horizon]``, or > 0 without ``run_best``.
    """
    steps = check_int("success_ahead", success_ahead, minimum=0,
                      maximum=max(horizon, 1) if isinstance(horizon, int) else None)
    if steps and not mode:
        raise ValueError(f"success_ahead={steps} moves the run_best mark: it needs run_best")
    if steps and key_encoder is None and _one_hot(observation_space):
        warnings.warn(f"success_ahead={steps} moves a success's mark along its approach in key space, and the "
                      f"default keys of {observation_space} hold one-hot parts, which change by jumps: a mark moved "
                      "along them is no state. Use it where the keys move in straight lines (positions), or give a "
                      "key_encoder that keys by them", UserWarning, stacklevel=3)
    return steps


def _one_hot(space: spaces.Space) -> bool:
    if isinstance(space, spaces.Dict | spaces.Tuple):
        subs = space.spaces.values() if isinstance(space, spaces.Dict) else space.spaces
        return any(_one_hot(s) for s in subs)
    return isinstance(space, spaces.Discrete | spaces.MultiDiscrete | spaces.MultiBinary)


def locator_options(mode: str, relocate_every: int, locate_from: str, search: float, horizon: int
                    ) -> tuple[int, str, float]:
    """``TrialMemory``'s ``relocate_every``, ``locate_from`` and ``search`` checked against its ``run_best`` mode
    (:func:`run_best_mode`'s) and ``horizon``.

    Raises:
        ValueError: a value out of range, or an option of the goal locator without ``run_best="located"``
            (``search`` without ``relocate_every``).
    """
    relocate_every = check_int("relocate_every", relocate_every, minimum=0)
    if relocate_every and mode != "located":
        raise ValueError(f"relocate_every={relocate_every} guesses again with the goal locator: it needs "
                         f"run_best=\"located\", got run_best={mode or False!r}")
    if isinstance(horizon, int) and relocate_every >= horizon > 0:
        warnings.warn(f"relocate_every={relocate_every} is not below the horizon {horizon}: a trial ends before the "
                      "locator guesses again, so it never does (and learns from no trial's prefixes)", UserWarning,
                      stacklevel=3)
    if locate_from not in LOCATE_FROM:
        raise ValueError(f"locate_from must be one of {LOCATE_FROM}, got {locate_from!r}")
    if locate_from != "best" and mode != "located":
        raise ValueError(f"locate_from={locate_from!r} is what the goal locator reads: it needs "
                         f"run_best=\"located\", got run_best={mode or False!r}")
    search = check_real("search", search, minimum=0.0)
    if search and not relocate_every:
        raise ValueError(f"search={search} searches around the goal locator's guess where a trial stalls: it needs "
                         "relocate_every > 0 (the guesses within a trial)")
    return relocate_every, locate_from, search


def _shifted(memory: TrialMemory, keys: np.ndarray, end: np.ndarray | None) -> np.ndarray:
    """The keys each reward was received in: with ``run_best="taken"`` the steps' own, else the next
    step's and, for the last, the trial's end (its last step's where none is given)."""
    if memory.run_best == "taken":
        return keys
    return np.concatenate([keys[1:], (keys[-1] if end is None else end)[None]])


def trial_rows(memory: TrialMemory, ids: np.ndarray, end: np.ndarray | None, won: bool | None = None
               ) -> tuple[np.ndarray, np.ndarray, bool]:
    """A written trial's ``(keys (T, key_dim), rewards (T,), succeeded)``; each reward's key is the state it
    was received in (``"reached"``: the next step's, the trial's end for its last) or, with
    ``run_best="taken"``, the state its action was taken from. Without an end (a demonstration's), the
    last step's key stands for it. ``won``: the trial's outcome as written (:meth:`TrialMemory.outcomes_of`;
    None: read from its return column, which without ``dense_rewards`` holds the rewards' sum). A success
    with an end has its last key moved on by ``memory.success_ahead`` steps of its approach (the module doc;
    under ``"reached"`` a one-step success's approach is from its start, under ``"taken"`` it has none).
    Rewards are zeros without ``dense_rewards``."""
    lay = memory.layout
    values = memory.bank.get(ids)["value"]
    keys = _shifted(memory, values[:, :lay.key_dim], end)
    rewards = values[:, lay.reward_col] if lay.step_reward else np.zeros(len(values), np.float32)
    won = bool(values[0, lay.return_col] > 0) if won is None else bool(won)
    if won and end is not None and memory.success_ahead:  # a run's own success, moved on along its approach
        path = keys if memory.run_best == "taken" else np.concatenate([values[:1, :lay.key_dim], keys])
        window = min(AHEAD_WINDOW, len(path) - 1)
        if window:
            keys = keys.copy()
            keys[-1] = path[-1] + memory.success_ahead * (path[-1] - path[-1 - window]) / window
    return keys, rewards, won


def run_trials(memory: TrialMemory, scope: int) -> list[tuple[np.ndarray, np.ndarray, bool]]:
    """:func:`trial_rows` of each of ``scope``'s trials (and demonstrations), oldest first."""
    return [trial_rows(memory, ids, end, won) for ids, end, won in
            zip(memory.trials_of(scope), memory.ends_of(scope), memory.outcomes_of(scope), strict=True)]


def best_step(memory: TrialMemory, scope: int,
              trials: list[tuple[np.ndarray, np.ndarray, bool]] | None = None) -> np.ndarray | None:
    """``[key | succeeded | reward]`` of the best step of ``scope``'s entries (see the module doc); None: none.
    ``trials``: :func:`run_trials` of ``scope`` where the caller has read them already."""
    best: tuple[tuple[float, float], np.ndarray] | None = None  # ((succeeded, newer or higher), row)
    located: tuple[np.ndarray, np.ndarray] | None = None  # the failed trial with the highest reward
    failed: list[tuple[np.ndarray, np.ndarray]] = []  # the failed trials, oldest first
    for t, (keys, rewards, won) in enumerate(run_trials(memory, scope) if trials is None else trials):
        if not won and not memory.layout.step_reward:  # a failed trial's sparse rewards say nothing of where it got to
            continue
        if not won:
            failed.append((keys, rewards))
        step = len(keys) - 1 if won else int(np.argmax(rewards))
        score = (float(won), (t if memory.newest_success else -t) if won else float(rewards[step]))
        if best is None or score >= best[0]:
            best = (score, np.concatenate([keys[step], [float(won), rewards[step]]]))
            located = None if won else (keys, rewards)
    if best is not None and located is not None and memory.locator is not None:  # no success yet: the guess
        if memory.locate_from == "all":
            located = _joined(failed[-(LOCATE_HISTORY + 1):])
        best[1][:memory.key_dim] = memory.locator.locate(*located)
    return None if best is None else best[1].astype(np.float32)


def failed_rows(memory: TrialMemory, trials: list[tuple[np.ndarray, np.ndarray, bool]], newest: int
                ) -> tuple[np.ndarray, np.ndarray] | None:
    """The rows ``(keys, rewards)`` of the newest ``newest`` of a run's ``trials`` (:func:`run_trials`) joined,
    all failed ones (each reward's key the state it was received in); None: there are none, a success among
    them, or no dense rewards."""
    if not trials or newest <= 0 or not memory.layout.step_reward or any(won for *_, won in trials):
        return None
    return _joined([(keys, rewards) for keys, rewards, _ in trials[-newest:]])


def _joined(trials: list[tuple[np.ndarray, np.ndarray]]) -> tuple[np.ndarray, np.ndarray]:
    return np.concatenate([k for k, _ in trials]), np.concatenate([r for _, r in trials])


def teach_locator(memory: TrialMemory, instance: int, observations: Any, rewards: Any, success: bool,
                  end_observation: Any | None = None) -> None:
    """A trial of ``instance`` ended (any run's, guided or free, written or not; or a demonstration,
    ``success`` True without an end): ``memory.locator`` learns where the instance succeeds from it
    (:meth:`GoalLocator.solved <experience_wrappers.trials.goal_locator.GoalLocator.solved>`,
    :meth:`~experience_wrappers.trials.goal_locator.GoalLocator.failed`). Nothing without a locator
    or with ``train_extractor=False`` (an evaluation memory learns nothing)."""
    if memory.locator is None or not memory.train_extractor:
        return
    end = None if end_observation is None else memory.keys(add_batch_axis(end_observation))
    keys = _shifted(memory, memory.keys(observations), None if end is None else end[0])
    dense = rewards is not None and memory.layout.step_reward
    rewards = np.asarray(rewards, np.float32).reshape(-1) if dense else np.zeros(len(keys), np.float32)
    if success and dense:  # a trial's success: its prefixes teach guessing from a trial still going on too
        memory.locator.succeeded(instance, keys, rewards)
    elif success:  # a demonstration's (no rewards)
        memory.locator.solved(instance, keys[-1])
    else:
        memory.locator.failed(instance, keys, rewards)
    memory.stats.update(memory.locator.stats)


class RunBest(gym.Wrapper):
    """Add ``run_best`` (``key_dim + 3`` wide) to a run-scope trial env's Dict observation.

    Args:
        env: a :class:`~experience_wrappers.trials.wrapper.RunScopeWrapper`.

    Raises:
        ValueError: the env is not a run-scope ExperienceWrapper, or its observation already has ``run_best``.
    """

    def __init__(self, env: RunScopeWrapper) -> None:
        super().__init__(env)
        base = env.observation_space
        if getattr(env, "scope", None) != "run" or not isinstance(base, spaces.Dict) or RUN_BEST_KEY in base.spaces:
            raise ValueError(f"RunBest adds {RUN_BEST_KEY!r} to run scope's ExperienceWrapper(env, memory, "
                             f"scope=\"run\", ...); got {type(env).__name__} with {base}")
        self.memory: TrialMemory = env.memory
        if not self.memory.run_best:  # (its key would be zeros at every step)
            raise ValueError("RunBest shows the run's best step that TrialMemory(run_best=...) marks, and this memory "
                             "has run_best off: build it with run_best=True (\"taken\"), \"reached\" or \"located\"")
        env.stacked.add(RUN_BEST_KEY)  # (the memory's own wrapper is on it)
        own = self.memory.observation_space
        self._own = list(own.spaces) if isinstance(own, spaces.Dict) else None  # None: the env's is "observation"
        self._dim = self.memory.key_dim
        self.observation_space = spaces.Dict({**base.spaces, RUN_BEST_KEY: spaces.Box(
            -np.inf, np.inf, (self._dim + 3,), np.float32)})
        self._best: np.ndarray | None = None
        self._relocate = False  # guess again from this trial's own steps (relocate_every, no success in the run)
        self._rows: tuple[list[np.ndarray], list[float]] = ([], [])  # this trial's (key reached, reward) so far
        self._earlier: tuple[np.ndarray, np.ndarray] | None = None  # locate_from="all": the run's failed trials
        self._centre: np.ndarray | None = None  # search: the guess the shown mark was drawn around
        self._top: float | None = None  # search: the trial's best reward at the previous guess
        # search: its draws, seeded as the env's other draws (its seed, group, member and instances); a seeded
        # reset seeds them again
        self._rng = np.random.default_rng([env.base_seed, env.group, env.member, 0x5EA4C, *env.instances])

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None
              ) -> tuple[dict[str, Any], dict[str, Any]]:
        obs, info = self.env.reset(seed=seed, options=options)
        scope = self.env.read_scope  # type: ignore[attr-defined]
        trials = run_trials(self.memory, scope) if scope else []  # read once, for the best step and the locator
        self._best = best_step(self.memory, scope, trials) if scope else None
        # the run's own trial, read in its own run ("instance" scope), not yet a success in it
        self._relocate = bool(self.memory.relocate_every and scope and self.memory.scope == "instance"
                              and (self._best is None or self._best[self._dim] == 0.0))
        self._rows = ([], [])
        self._earlier = (failed_rows(self.memory, trials, LOCATE_HISTORY)
                         if self._relocate and self.memory.locate_from == "all" else None)
        self._centre = None if self._best is None else self._best[:self._dim].copy()
        self._top = None
        if seed is not None:
            self._rng = np.random.default_rng([seed, 0x5EA4C])
        return self._add(obs, self._key(obs) if self._best is not None else None), info

    def step(self, action: Any) -> tuple[dict[str, Any], SupportsFloat, bool, bool, dict[str, Any]]:
        obs, reward, terminated, truncated, info = self.env.step(action)
        key = self._key(obs) if self._best is not None or self._relocate else None
        if self._relocate and not (terminated or truncated):
            self._relocated(key, float(reward))  # type: ignore[arg-type]
        return self._add(obs, key), reward, terminated, truncated, info

    def _key(self, obs: dict[str, Any]) -> np.ndarray:
        own = obs["observation"] if self._own is None else {k: obs[k] for k in self._own}
        return self.memory.keys(add_batch_axis(own))[0]  # (a Discrete part may come as a Python int)

    def _relocated(self, key: np.ndarray, reward: float) -> None:
        """Add this step's row; every ``relocate_every`` steps, where this trial came closer (a higher
        reward) than the run's failed trial the guess is from, guess from this trial's rows instead
        (``locate_from="all"``: guess from them joined with the run's failed trials', closer or not)."""
        keys, rewards = self._rows
        keys.append(key)
        rewards.append(reward)
        if len(keys) % self.memory.relocate_every or self.memory.locator is None:
            return
        top = max(rewards)
        stalled = self._top is not None and top <= self._top + STALL * abs(self._top)
        self._top = top
        if self.memory.locate_from == "all":
            own = np.stack(keys), np.asarray(rewards, np.float32)
            rows = own if self._earlier is None else _joined([self._earlier, own])
            self._centre = self.memory.locator.locate(*rows)
            self._best = np.concatenate([self._centre, [0.0, float(rows[1].max())]]).astype(np.float32)
        elif self._best is None or top >= self._best[self._dim + 1]:
            self._centre = self.memory.locator.locate(np.stack(keys), np.asarray(rewards, np.float32))
            self._best = np.concatenate([self._centre, [0.0, top]]).astype(np.float32)
        if self.memory.search and stalled and self._best is not None and self._centre is not None:
            spread = self.memory.search * self.memory.locator.error_dims
            self._best[:self._dim] = self._centre + self._rng.normal(size=self._dim).astype(np.float32) * spread

    def _add(self, obs: dict[str, Any], key: np.ndarray | None) -> dict[str, Any]:
        out = np.zeros(self._dim + 3, np.float32)
        if self._best is not None and key is not None:
            out[:self._dim] = self._best[:self._dim] - key
            out[self._dim:] = (*self._best[self._dim:], 1.0)
        return {**obs, RUN_BEST_KEY: out}
