"""Guided roll-in for SB3: the bank acts for the first ``h`` steps, the policy from there.

This module is the env side; the callbacks are :mod:`integrations.sb3.rollin_callbacks`.

* :class:`GuidedRollInVecEnv` executes the guide's action instead of the policy's on the
  first ``h`` steps of a roll-in episode and marks those steps (``info["rollin"]``).
* :class:`RollInCallback` takes the policy gradient off the marked steps (advantage 0 in
  the rollout buffer, after SB3 has computed returns and advantages), advances the
  curriculum from the outcomes of roll-in episodes, and logs ``rollin/*``.
* :class:`RollInView` shows another callback the steps as the env executed them (the
  guide's actions; optionally without the ends of rolled-in episodes).

The rules (curriculum, guide) live in the core, :mod:`experience_wrappers.rollin`.

Typical use (``venv`` an experience-wrapped VecEnv whose bank holds demonstrations)::

    guide = BankGuide(find_experience(venv)[0][0])
    curriculum = RollInCurriculum.for_lengths([len(d.actions) for d in demos], threshold=0.5)
    venv = GuidedRollInVecEnv(venv, guide, curriculum)
    model = PPO("MultiInputPolicy", venv, ...)
    model.learn(n, callback=CallbackList([CRLCallback(), RollInCallback()]))  # RollInCallback last
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from typing import Any

import attrs
import numpy as np
from gymnasium import spaces
from stable_baselines3.common.vec_env import VecEnv, VecEnvWrapper
from stable_baselines3.common.vec_env.base_vec_env import VecEnvObs, VecEnvStepReturn

from experience_wrappers.manager import success_from_info
from experience_wrappers.rollin import BankGuide, ReplayGuide, RollInCurriculum
from experience_wrappers.validators import check_int, check_real
from experience_wrappers.wrappers import EXPERIENCE_KEYS
from experience_wrappers.wrappers.env_checks import inside
from experience_wrappers.wrappers.spaces import BASE_KEY

from .reset_infos import reset_infos_below

__all__ = ["GuidedRollInVecEnv", "RollInEpisode", "find_rollin"]


@attrs.frozen
class RollInEpisode:
    """A finished roll-in episode: the ``h`` it began with, the steps the guide acted, its length and outcome."""

    h: int
    guided_steps: int
    length: int
    success: bool
    handed_over_early: bool


class GuidedRollInVecEnv(VecEnvWrapper):
    """Executes the guide's actions for the first ``h`` steps of roll-in episodes.

    At each episode start an env is drawn into roll-in with probability ``rollin_ratio``
    (with ``only_guided``, among the episodes the experience wrapper below drew guided,
    read from ``reset_infos[i]["experience_guided"]``; envs without that info are all
    candidates). In a roll-in episode, while fewer than ``h`` steps have passed (``h`` read
    from the curriculum at the episode's start), the action the policy chose is replaced by
    the guide's and ``info["rollin"] = True`` (and ``info["rollin_action"]``) marks the step.
    When the guide has no successful entry within its distance floor, it hands over early:
    the policy acts for the rest of the episode. The last step of an episode with at least
    one guide-acted step carries ``info["rollin_episode"]`` (a dict of :class:`RollInEpisode`),
    and the episode is queued for :meth:`pop_finished`.

    The policy's own actions are never modified in place: SB3 stores them, with their
    log-probabilities, in the rollout buffer, and :class:`RollInCallback` gives those steps
    advantage 0. Layers below (the experience wrapper, the bank, Monitor) see the executed
    action.

    With ``instance_seeds`` a roll-in episode is first reset onto a task instance drawn from
    them (``env_method("reset", seed=...)`` on that env, forced experience-guided where the
    env has ``set_force_guided``): the instances the demonstrations were recorded on, where
    the guide knows the way (Backplay: the policy starts where a demonstration stood). The
    env's own draw of instance is kept for every other episode. Without it the guide acts
    on whatever instance the env drew, as far as its nearest neighbours carry it (on
    KeyRoom-S5 with 20 demonstrations that is little: ~0.1 success at full ``h`` on new
    layouts, 1.0 on the demonstrated ones).

    The guide is a :class:`~experience_wrappers.rollin.BankGuide` (it reads each env's base
    observation and task id) or a :class:`~experience_wrappers.rollin.ReplayGuide` (it reads
    each episode's instance seed, -1 where the env drew its own, and the steps taken: it
    needs ``instance_seeds`` to act at all). A ``ReplayGuide`` needs no experience wrapper
    below: with a plain VecEnv give ``only_guided=False`` and roll in ``rollin_ratio`` of all
    episodes.

    Evaluation starts from true starts: build evaluation envs without this wrapper, or
    switch it off (``enabled = False``, or ``with env.disabled(): ...``).

    Args:
        venv: the VecEnv (usually experience-wrapped; any VecEnv for a ``ReplayGuide``).
        guide: a :class:`~experience_wrappers.rollin.BankGuide` or a
            :class:`~experience_wrappers.rollin.ReplayGuide`.
        curriculum: the :class:`~experience_wrappers.rollin.RollInCurriculum` giving ``h``.
        rollin_ratio: probability that an eligible episode is rolled in, in ``[0, 1]``.
        only_guided: roll in only episodes the experience wrapper drew guided.
        enabled: False: no roll-in at all (evaluation).
        instance_seeds: reset seeds of the instances roll-in episodes start on (None: the
            env's own draw).
        seed: seed of the roll-in draws.
    """

    def __init__(self, venv: VecEnv, guide: BankGuide | ReplayGuide, curriculum: RollInCurriculum, *, rollin_ratio: float = 1.0,
                 only_guided: bool = True, enabled: bool = True, instance_seeds: Sequence[int] | None = None,
                 seed: int | None = None) -> None:
        if not isinstance(guide, (BankGuide, ReplayGuide)):
            raise TypeError(f"guide must be a BankGuide or a ReplayGuide, got {type(guide).__name__}")
        if not isinstance(curriculum, RollInCurriculum):
            raise TypeError(f"curriculum must be a RollInCurriculum, got {type(curriculum).__name__}")
        check_real("rollin_ratio", rollin_ratio, minimum=0, maximum=1)
        for name, flag in (("only_guided", only_guided), ("enabled", enabled)):
            if not isinstance(flag, bool):
                raise ValueError(f"{name} must be a bool, got {flag!r}")
        if instance_seeds is not None:
            instance_seeds = [check_int("an instance seed", x, minimum=0, numpy=True) for x in instance_seeds]
            if not instance_seeds:
                raise ValueError("instance_seeds must hold at least one seed (None: the env's own draw), got none")
        if isinstance(guide, ReplayGuide):
            if instance_seeds is None:
                raise ValueError("a ReplayGuide replays demonstrations on their own instances: give instance_seeds")
            unknown = sorted(set(instance_seeds) - set(guide.seeds.tolist()))
            if unknown:
                raise ValueError(f"instance_seeds {unknown} have no demonstration in the ReplayGuide")
        if not isinstance(venv.action_space, spaces.Discrete):
            raise TypeError(f"GuidedRollInVecEnv needs a Discrete action space, got {venv.action_space!r}")
        if isinstance(guide, ReplayGuide):
            for i, acts in enumerate(guide.actions):
                bad = ~inside(venv.action_space, acts)
                if bad.any():
                    raise ValueError(f"the ReplayGuide's demonstration {i} (instance seed {int(guide.seeds[i])}) has "
                                     f"action {int(acts[bad][0])} at step {int(np.argmax(bad))}, not one of the env's "
                                     f"{venv.action_space}")
        super().__init__(venv)
        self.guide = guide
        self.curriculum = curriculum
        self.rollin_ratio = float(rollin_ratio)
        self.only_guided = only_guided
        self._enabled = enabled
        self.instance_seeds = None if instance_seeds is None else np.asarray(instance_seeds, dtype=np.int64)
        self.rng = np.random.default_rng(seed)
        n = self.num_envs
        self.rolling = np.zeros(n, dtype=bool)      # in a roll-in episode, the guide still acting
        self.h = np.zeros(n, dtype=np.int64)        # h of each env's episode
        self.steps = np.zeros(n, dtype=np.int64)
        self.guided_steps = np.zeros(n, dtype=np.int64)
        self.handed_over = np.zeros(n, dtype=bool)  # the guide found nothing before h
        self.returns = np.zeros(n, dtype=np.float64)
        self.task_ids = np.zeros(n, dtype=np.int64)
        self.instances = np.full(n, -1, dtype=np.int64)  # the instance seed a roll-in reset onto (-1: own draw)
        self._finished: list[RollInEpisode] = []
        #: the ``learn()`` call (SB3's ``model.start_time``) whose RollInCallback zeroes this env's guide-acted
        #: advantages: a CRLCallback initialised after it in the same call would undo them (guards.check_rollin_order)
        self.rollin_claim: int | None = None
        self._last_obs: Any = None
        self._actions: np.ndarray | None = None
        self._marked = np.zeros(n, dtype=bool)
        space = venv.observation_space
        self._base_keys: list[str] | None = None
        if isinstance(space, spaces.Dict):
            keys = [k for k in space.spaces if k not in EXPERIENCE_KEYS]
            manager = getattr(guide, "manager", None)  # a ReplayGuide has none: it gets every base key
            base_is_dict = manager is None or isinstance(manager.observation_space, spaces.Dict)
            self._base_keys = keys if base_is_dict or keys != [BASE_KEY] else None
            self._unwrap_base = not base_is_dict and keys == [BASE_KEY]
        else:
            self._unwrap_base = False

    # ---------------------------------------------------------------- switches
    @property
    def enabled(self) -> bool:
        return self._enabled

    @enabled.setter
    def enabled(self, value: bool) -> None:
        if not isinstance(value, bool):
            raise ValueError(f"enabled must be a bool, got {value!r}")
        self._enabled = value
        if not value:  # episodes in flight stop being guided
            self.rolling[:] = False

    @contextlib.contextmanager
    def disabled(self) -> Iterator[GuidedRollInVecEnv]:
        """No roll-in inside the block (evaluation from true starts); restores the switch after."""
        before = self._enabled
        self.enabled = False
        try:
            yield self
        finally:
            self._enabled = before

    def pop_finished(self) -> list[RollInEpisode]:
        """Roll-in episodes finished since the last call (oldest first)."""
        out, self._finished = self._finished, []
        return out

    # ---------------------------------------------------------------- episodes
    def _begin(self, rows: list[int], infos: list[dict[str, Any]]) -> None:
        h = int(self.curriculum.h)
        draws = self.rng.random(len(rows))
        for j, r in enumerate(rows):
            info = infos[j] if j < len(infos) and infos[j] is not None else {}
            eligible = self._enabled and h > 0 and (not self.only_guided or bool(info.get("experience_guided", True)))
            self.rolling[r] = eligible and draws[j] < self.rollin_ratio
            self.h[r] = h if self.rolling[r] else 0
            self.steps[r] = 0
            self.guided_steps[r] = 0
            self.handed_over[r] = False
            self.returns[r] = 0.0
            self.task_ids[r] = int(info.get("experience_task_id", 0))
            self.instances[r] = -1

    def _onto_instances(self, obs: Any, rows: list[int]) -> Any:
        """Reset the rolled-in envs among ``rows`` onto instance seeds; returns the batch with their new observations."""
        if self.instance_seeds is None:
            return obs
        for r in rows:
            if not self.rolling[r]:
                continue
            seed = int(self.rng.choice(self.instance_seeds))
            self.instances[r] = seed
            forced = self.venv.has_attr("set_force_guided") and self.only_guided
            if forced:
                self.venv.env_method("set_force_guided", True, indices=[r])
            try:
                new_obs, info = self.venv.env_method("reset", seed=seed, indices=[r])[0]
            finally:
                if forced:
                    self.venv.env_method("set_force_guided", None, indices=[r])
            if isinstance(obs, dict):
                for k in obs:
                    obs[k][r] = new_obs[k]
            else:
                obs[r] = new_obs
            self.reset_infos[r] = info  # (for the layers above: the reset this wrapper made)
            self.task_ids[r] = int(info.get("experience_task_id", self.task_ids[r]))
        return obs

    def _base(self, obs: Any, rows: np.ndarray) -> Any:
        if isinstance(obs, dict):
            if self._unwrap_base:
                return np.asarray(obs[BASE_KEY])[rows]
            keys = self._base_keys if self._base_keys is not None else list(obs)
            return {k: np.asarray(obs[k])[rows] for k in keys}
        return np.asarray(obs)[rows]

    def reset(self) -> VecEnvObs:
        obs = self.venv.reset()
        self.reset_infos = infos = reset_infos_below(self.venv)  # (kept for the layers above)
        rows = list(range(self.num_envs))
        self._begin(rows, infos)
        obs = self._onto_instances(obs, rows)
        self._last_obs = obs
        return obs

    def step_async(self, actions: np.ndarray) -> None:
        executed = np.array(actions, copy=True)  # never the policy's array: SB3 stores that one
        self._marked[:] = False
        due = np.flatnonzero(self.rolling & (self.steps < self.h))
        if due.size and self._last_obs is not None:
            if isinstance(self.guide, ReplayGuide):  # reads the position, not the state
                res = self.guide.act(None, self.task_ids[due], seeds=self.instances[due], steps=self.steps[due])
            else:
                res = self.guide.act(self._base(self._last_obs, due), self.task_ids[due])
            acting = due[res.found]
            executed.reshape(self.num_envs, -1)[acting, 0] = res.actions[res.found]
            self._marked[acting] = True
            gave_up = due[~res.found]
            self.handed_over[gave_up] = True
            self.rolling[gave_up] = False
        self._actions = executed
        self.venv.step_async(executed)

    def step_wait(self) -> VecEnvStepReturn:
        obs, rewards, dones, infos = self.venv.step_wait()
        assert self._actions is not None, "step_wait() without step_async()"
        flat = self._actions.reshape(self.num_envs, -1)[:, 0]
        for i in np.flatnonzero(self._marked).tolist():
            infos[i]["rollin"] = True
            infos[i]["rollin_action"] = int(flat[i])
        self.guided_steps += self._marked
        self.steps += 1
        self.returns += np.asarray(rewards, dtype=np.float64)
        self.rolling &= self.steps < self.h
        done_rows = np.flatnonzero(dones).tolist()
        for i in done_rows:
            if self.guided_steps[i] > 0:
                success = success_from_info(infos[i])
                ep = RollInEpisode(h=int(self.h[i]), guided_steps=int(self.guided_steps[i]),
                                   length=int(self.steps[i]),
                                   success=bool(self.returns[i] > 0) if success is None else success,
                                   handed_over_early=bool(self.handed_over[i]))
                self._finished.append(ep)
                infos[i]["rollin_episode"] = attrs.asdict(ep)
        if done_rows:
            self.reset_infos = reset_infos = reset_infos_below(self.venv)
            self._begin(done_rows, [reset_infos[i] for i in done_rows])
            obs = self._onto_instances(obs, done_rows)
        self._last_obs = obs
        return obs, rewards, dones, infos


def find_rollin(venv: VecEnv) -> GuidedRollInVecEnv:
    """The :class:`GuidedRollInVecEnv` in a stack of VecEnv wrappers (ValueError if none)."""
    env: Any = venv
    while isinstance(env, VecEnvWrapper):
        if isinstance(env, GuidedRollInVecEnv):
            return env
        env = env.venv
    raise ValueError("no GuidedRollInVecEnv in the training env: wrap the VecEnv with "
                     "GuidedRollInVecEnv(venv, guide, curriculum) before building the model")
