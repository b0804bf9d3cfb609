"""Run scope's ``ExperienceWrapper``: one env replays one instance for ``K`` trials and reads its earlier trials.

``ExperienceWrapper(env, memory, scope="run", instances=..., trials=K)`` builds a
:class:`RunScopeWrapper` (a subclass of :class:`~experience_wrappers.ExperienceWrapper`, the
task scope's wrapper, registered for ``scope="run"``).

The protocol of meta-RL benchmarks (Dark Room, Key-to-Door; Laskin et al. 2022, Lee et al.
2023) in the paper's groups: the envs of a group replay one instance for ``K``
consecutive trials (a *run*); ``free_members`` of them are experience-free (the baseline of
paired credit), the others are guided. A guided trial is shown the ``k`` entries of its
run's earlier trials nearest to its state (see :class:`~experience_wrappers.trials.TrialMemory`);
trial 1 of a run is shown nothing, unless a demonstration of the instance was placed in
the run's scope. Held-out instances, frozen weights: give ``instances`` the held-out
seeds and ``learn=False``.

The env must give the same instance for the same ``reset(seed=...)`` (the instance *is*
the reset seed); instances are drawn per run, the same for every member of a group, by the
task scope's mechanism for groups (:class:`~experience_wrappers.wrappers.ReplayInstances`
with ``instances`` and ``repeats``, which the wrapper builds below itself).
"""

from __future__ import annotations

import copy
import warnings
from collections.abc import Callable, Sequence
from typing import Any, SupportsFloat

import gymnasium as gym
import numpy as np
from gymnasium import spaces
from gymnasium.envs.registration import EnvSpec, WrapperSpec
from gymnasium.utils import RecordConstructorArgs

from ..bank import ExperienceBank
from ..keys.base import add_batch_axis
from ..validators import check_bool, check_int, check_real
from ..wrappers.env_checks import (
    check_finite_observation,
    check_rewards,
    env_name,
    observation_checker,
    reward_row,
)
from ..wrappers.experience_wrapper import ExperienceWrapper, check_not_wrapped
from ..wrappers.instances import INSTANCE_INFO_KEY, ReplayInstances
from ..wrappers.recorder import EpisodeRecorder
from .checks import (
    ENTRIES_KEY,
    MASK_KEY,
    RUN_BEST_KEY,
    TRIAL_INDEX_KEY,
    TRIAL_INFO_KEY,
    check_instances,
    demonstration_of,
    demonstration_parts,
    trials_observation_space,
)
from .memory import TrialMemory
from .novelty import NoveltyBonus
from .run_best import RunBest, teach_locator
from .trial_index import TrialIndex

__all__ = ["RunScopeWrapper", "TRIAL_INFO_KEY", "ENTRIES_KEY", "MASK_KEY", "TRIAL_INDEX_KEY", "RUN_BEST_KEY", "trial_env",
           "trials_env_fns"]

#: ``demonstrations(instance)`` -> ``(observations, actions)`` of one demonstration of it, or None
DemoSource = Callable[[int], tuple[Any, Any] | None]


class RunScopeWrapper(ExperienceWrapper, scope="run"):
    """Replay an instance for ``trials`` trials; guided trials read their run's earlier trials.

    Built by ``ExperienceWrapper(env, memory, scope="run", ...)``; :attr:`manager` is the
    memory's (its bank, :attr:`bank`, holds the runs' entries).

    Args:
        env: an env whose ``reset(seed=s)`` gives instance ``s`` every time.
        memory: the :class:`TrialMemory` every wrapper of the VecEnv shares.
        scope: ``"run"``.
        instances: the reset seeds to draw runs from (training or held-out instances): a non-empty
            sequence of ints >= 0 (a str, a bare int, ``1.7``, NaN or a negative seed is refused).
        trials: trials per run (``K``).
        group, member, group_size: this env's group and place in it; members of a group run
            the same instances in the same order.
        free_members: experience-free members per group (the last ones).
        guided: force every run guided (True) or free (False); None: by member.
        learn: credit guided trials and train the extractor (False: evaluation; trials are
            still written, so later trials of a run read the earlier ones).
        demonstrations: ``fn(instance) -> (observations, actions)`` placed in a guided run's
            scope before its first trial (None: no demonstrations).
        demo_ratio: the share of guided runs given a demonstration (drawn per run).
        seed: seed of the instance draws.

    The observation is a Dict: the env's observation (its own keys if a Dict, else
    ``"observation"``), ``trial_entries`` ``(k, row_dim)`` (see
    :class:`~experience_wrappers.manager.entry_layout.EntryLayout`) and ``trial_mask`` ``(k,)``. ``info["trial"]``
    carries ``instance``, ``index`` (0-based), ``run``, ``guided`` and ``demonstrated`` (a
    demonstration was placed in the run); at a trial's end ``info["trial_success"]``. The
    trial's index shown to the policy, where the run's best trial got to
    (:class:`~experience_wrappers.trials.run_best.RunBest`) and the exploration bonus are wrappers
    of their own on top (:class:`~experience_wrappers.trials.trial_index.TrialIndex`,
    :class:`~experience_wrappers.trials.novelty.NoveltyBonus`): :func:`trial_env` stacks a
    trial env with them as its memory and arguments say.

    The env's observations get the main path's checks
    (:mod:`~experience_wrappers.wrappers.env_checks`): NaN or inf, and values the space refuses,
    raise a ValueError naming the env, the trial and the step; Box values outside the bounds
    warn once. A demonstration is checked the same way (:meth:`TrialMemory.add_demonstration`).

    Raises:
        TypeError, ValueError: ``instances`` is not a non-empty sequence of ints >= 0, or the
            memory was built for another observation or action space than the env's; ``memory``
            is not a :class:`TrialMemory` (an ``ExperienceBank`` is task scope's).

    >>> from experience_wrappers import ExperienceWrapper
    >>> from integrations.minihack.hidden_goal import HiddenGoalRoom
    >>> room = HiddenGoalRoom()
    >>> memory = TrialMemory(room.observation_space, room.action_space, horizon=25)
    >>> env = ExperienceWrapper(room, memory, scope="run", instances=[3, 4], trials=4)
    >>> type(env).__name__, env.scope, env.bank is memory.bank
    ('RunScopeWrapper', 'run', True)
    """

    def __init__(self, env: gym.Env, memory: TrialMemory, *, scope: str = "run",
                 instances: Sequence[int] | None = None, trials: int = 4, group: int = 0, member: int = 0, group_size: int = 2, free_members: int = 1,
                 guided: bool | None = None, learn: bool = True, demonstrations: DemoSource | None = None,
                 demo_ratio: float = 1.0, seed: int = 0) -> None:
        if scope != "run":
            raise ValueError(f"RunScopeWrapper is run scope's wrapper, got scope={scope!r}")
        if not isinstance(memory, TrialMemory):
            raise TypeError(f"run scope reads a TrialMemory, got {type(memory).__name__}"
                            + (" (a bank is task scope's: ExperienceWrapper(env, bank))"
                               if isinstance(memory, ExperienceBank) else ""))
        if instances is None:
            raise TypeError("run scope needs instances=: the reset seeds its runs are drawn from (training or held-out)")
        check_not_wrapped(env, type(self).__name__)
        self.instances = check_instances(instances)
        _check_spaces(env, memory)
        self.trials = check_int("trials", trials, minimum=1)
        self.group_size = check_int("group_size", group_size, minimum=1)
        self.member = check_int("member", member, minimum=0, maximum=self.group_size - 1)
        self.free_members = check_int("free_members", free_members, minimum=0, maximum=self.group_size)
        self.group = check_int("group", group, minimum=0)
        #: the seed the run's draws come from (instances, demonstrations, donors, RunBest's search), with its group and member
        self.base_seed = check_int("seed", seed, minimum=0, numpy=True)
        guided = None if guided is None else check_bool("guided", guided, hint=" or None (by the member's role)")
        if demonstrations is not None and not callable(demonstrations):
            raise TypeError(f"demonstrations must be a function instance -> (observations, actions[, rewards]) or "
                            f"None, got {type(demonstrations).__name__} {demonstrations!r:.60}")
        RecordConstructorArgs.__init__(self, _disable_deepcopy=True, memory=memory, scope="run",
                                       instances=self.instances, trials=self.trials, group=self.group,
                                       member=self.member, group_size=self.group_size,
                                       free_members=self.free_members, guided=guided, learn=learn,
                                       demonstrations=demonstrations, demo_ratio=demo_ratio, seed=seed)
        # the group's runs: one instance drawn per run, replayed for its trials (the task scope's groups)
        gym.Wrapper.__init__(self, ReplayInstances(env, group=self.group, member=self.member, size=self.group_size,
                                                   seed=int(seed), instances=self.instances, repeats=self.trials))
        self.memory = memory
        self.manager = memory.manager
        self._user_env = env  # below this wrapper's own ReplayInstances
        self._source = f"{env_name(env)}'s step()"  # whose step returned a reward (named once, as task scope does)
        #: guided or free by default: ``guided`` as given, else by this member's role in its group
        self._default_guided = (self.member < self.group_size - self.free_members) if guided is None else bool(guided)
        self.guided = self._guided_next = self._default_guided
        self.learn, self.demonstrations = check_bool("learn", learn), demonstrations
        self.demo_ratio = check_real("demo_ratio", demo_ratio, minimum=0, maximum=1)
        self._demonstrated = False  # a demonstration was placed in this run
        self._demo_rng = np.random.default_rng([int(seed), self.group, self.member, 0xDE])
        self._donor_rng = np.random.default_rng([int(seed), self.group, self.member, 0xD0])
        base = env.observation_space
        self._dict_obs = isinstance(base, spaces.Dict)
        self._check_obs = observation_checker(base)  # the main path's checks: refused values, bounds warned once
        lay = memory.layout
        self.observation_space = trials_observation_space(base, memory.k, lay.row_dim, None)
        self.run = -1
        self.trial = 0
        self.instance = -1
        #: the run's scope in the memory (0: none, a free run)
        self.run_scope = 0
        self._donor = 0  # the finished run of another instance read with scope="other"
        #: the trial's steps (the observation acted on, the action, the reward): the main path's recorder
        self._recorder = EpisodeRecorder(1)
        self._reports = memory.success_reports  # (shared by the memory's wrappers: a missing key is a failure once one reported)
        self._last_obs: Any = None
        self._ended = True  # no trial in flight: step() needs a reset() first
        self._return = 0.0
        self._shown: set[int] = set()
        self._rows = np.zeros((memory.k, lay.row_dim), np.float32)
        self._mask = np.zeros(memory.k, np.float32)
        self._run_open = False
        #: the keys the memory's own wrappers above it add (RunBest, TrialIndex: each adds its own;
        #: trial_env puts them there); the first reset says which of the memory's keys none adds
        self.stacked: set[str] = set()
        self._lack_said = False
        _check_member_free(memory, self)
        memory.wrappers.add(self)

    # (gymnasium's Env declares spec an attribute, its Wrapper a property)
    @property
    def spec(self) -> EnvSpec | None:  # type: ignore[override]
        """The env's spec with this wrapper (its :class:`ReplayInstances` below it is its own: rebuilt
        with it, so left out, and ``gym.make(spec)`` builds one, not two)."""
        inner = self._user_env.spec
        if inner is None:
            return None
        out = copy.deepcopy(inner)
        out.additional_wrappers += (WrapperSpec(name=self.class_name(), entry_point=f"{self.__module__}:{type(self).__name__}",
                                                kwargs=dict(self._saved_kwargs)),)
        return out

    # --------------------------------------------------------------- runs
    def set_force_guided(self, value: bool | None) -> None:
        """Force every run guided (True) or free (False) from the next run on (a run is one or the
        other throughout); None restores the default (``guided`` as built, else this member's role)."""
        self._guided_next = self._default_guided if value is None else bool(value)

    @property
    def read_scope(self) -> int:
        """The run scope this trial reads (0: none)."""
        if not self.guided or self.memory.scope == "none":
            return 0
        return self._donor if self.memory.scope == "other" else self.run_scope

    def _start_run(self, run: int, instance: int) -> None:
        self.guided = self._guided_next
        self.run = run
        self._run_open = True
        self._demonstrated = False
        self.instance = instance
        self.run_scope = self.memory.new_scope() if self.guided else 0
        self._donor = self.memory.donor(self.instance, self._donor_rng) if self.guided else 0
        if self.guided and self.demonstrations is not None and self._demo_rng.random() < self.demo_ratio:
            source = f"demonstrations({self.instance})"
            demo = demonstration_parts(demonstration_of(self.demonstrations, self.instance), source)
            if demo is not None:
                self.memory.add_demonstration(self.run_scope, *demo, source=source)
                self._demonstrated = True
                if self.learn:  # where a demonstration ends, its instance succeeds
                    teach_locator(self.memory, instance, demo[0], None, True)

    def _end_run(self) -> None:
        self._run_open = False
        if self.guided:
            self.memory.retire(self.run_scope, self.instance)
        self.run_scope = self._donor = 0

    def close(self) -> None:
        self.memory.wrappers.discard(self)
        if self.run_scope:
            self.memory.forget(self.run_scope)
        self.run_scope = self._donor = 0
        super().close()

    # --------------------------------------------------------- observation
    def _read(self, obs: Any) -> None:
        scope = self.read_scope
        if scope == 0:
            self._rows[:] = 0
            self._mask[:] = 0
            return
        same = np.array([0.0 if self.memory.scope == "other" else 1.0])
        rows, mask, ids = self.memory.read(np.array([scope]), add_batch_axis(obs), same)
        self._rows[:] = rows[0]
        self._mask[:] = mask[0]
        self._shown.update(int(i) for i in ids[0][mask[0]].tolist())

    def _wrap(self, obs: Any) -> dict[str, Any]:
        out = dict(obs) if self._dict_obs else {"observation": obs}
        out[ENTRIES_KEY] = self._rows.copy()
        out[MASK_KEY] = self._mask.copy()
        return out

    def _info(self) -> dict[str, Any]:
        return {TRIAL_INFO_KEY: {"instance": self.instance, "index": self.trial, "run": self.run,
                                 "guided": self.guided, "demonstrated": self._demonstrated}}

    # ------------------------------------------------------------ gym API
    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None
              ) -> tuple[dict[str, Any], dict[str, Any]]:
        """Start the run's next trial (a new run after the last); a ``seed`` given here is ignored:
        the instance decides the reset seed (:class:`~experience_wrappers.wrappers.ReplayInstances`
        below this wrapper draws it)."""
        self.memory.check_process()
        shown = [k for k, on in ((RUN_BEST_KEY, self.memory.run_best), (TRIAL_INDEX_KEY, self.memory.trial_index))
                 if on and k not in self.stacked]
        if shown and not self._lack_said:
            self._lack_said = True  # (said once)
            warnings.warn(f"this memory shows {shown}, which trial_env(env, memory, ...) puts above "
                          "ExperienceWrapper(env, memory, scope=\"run\", ...); built alone, its observations lack "
                          f"{shown} (a policy trained with them refuses them): build it with trial_env", UserWarning,
                          stacklevel=2)
        obs, info = self.env.reset(options=options)
        spec = info[INSTANCE_INFO_KEY]
        if spec["repeat"] == 0:
            if self._run_open:  # the last trial was cut short: the run ends
                self._end_run()
            self._start_run(spec["run"], spec["instance"])
        self.trial = spec["repeat"]
        self._check(obs, "reset")
        self._recorder.clear(0)
        self._last_obs, self._return, self._shown, self._ended = obs, 0.0, set(), False
        self._read(obs)
        return self._wrap(obs), {**info, **self._info()}

    def step(self, action: Any) -> tuple[dict[str, Any], SupportsFloat, bool, bool, dict[str, Any]]:
        if self._ended:
            raise RuntimeError("step() called before reset() or after the trial ended; call reset()")
        obs, reward, terminated, truncated, info = self.env.step(action)
        step = int(self._recorder.lengths[0])
        # the main path's reward checks: one finite real number, named where it arrives
        r = float(check_rewards(reward_row(reward), np.array([step]), self._source)[0])
        self._check(obs, f"step {step + 1}")
        self._recorder.append(add_batch_axis(self._last_obs), np.asarray([action]), [r])
        self._return += r
        self._last_obs = obs
        if not (terminated or truncated) and step + 1 >= self.memory.layout.horizon:
            truncated = True  # a trial is cut at the memory's horizon (an env without a cap would never end it)
        info = {**info, **self._info()}
        if terminated or truncated:
            won = self._success(info)
            info["trial_success"] = won
            self._ended = True
            self._finish(won)
        else:
            self._read(obs)
        return self._wrap(obs), reward, terminated, truncated, info

    def _success(self, info: dict[str, Any]) -> bool:
        """A trial's success: the env's report (:class:`~experience_wrappers.manager.SuccessReports`: a
        missing key is a failure once the env has reported one), else a positive sum of its rewards (warned)."""
        success = self._reports(info)
        if success is not None:
            return success
        warnings.warn(f"{env_name(self.env)} reports no success (info['success'] or info['is_success'] on a trial's "
                      "last step): a trial counts as a success when its rewards sum above 0, which an env with "
                      "positive step rewards makes of every trial. Report success in the info", UserWarning,
                      stacklevel=3)
        return bool(self._return > 0)

    def _check(self, obs: Any, when: str) -> None:
        """The main path's checks of an observation the env returned, naming the env, the trial and the step."""
        where = f"{when} of trial {self.trial} (run {self.run}, instance {self.instance}) of {env_name(self.env)}"
        check_finite_observation(obs, where)
        self._check_obs(add_batch_axis(obs), where)

    def _finish(self, success: bool) -> None:
        mem = self.memory
        # a trial is written where someone reads it: the run's later trials, or (scope "other") other runs;
        # with scope "none" no one does
        read_later = self.trial < self.trials - 1 or mem.scope == "other"
        observations, actions, rewards = self._recorder.take(0)
        if self.guided and mem.scope != "none" and read_later:
            mem.write_trial(self.run_scope, observations, actions, rewards, success, end_observation=self._last_obs)
        if self.learn:  # every trial of a training run says where its instance succeeds, or where it does not
            teach_locator(mem, self.instance, observations, rewards, success, self._last_obs)
        if self.learn and self.free_members and self.free_members < self.group_size:
            mem.finish_trial((self.group, self.run, self.trial), float(success), guided=self.guided,
                             members=self.group_size, free=self.free_members, shown=self._shown)
        if self.trial >= self.trials - 1:
            self._end_run()


def _check_spaces(env: gym.Env, memory: TrialMemory) -> None:
    """Refuse a memory built for another observation or action space than the env's (its keys and
    action codes would not mean what they say)."""
    for what, mine, theirs in (("observation", env.observation_space, memory.observation_space),
                               ("action", env.action_space, memory.action_space)):
        if mine != theirs:
            raise ValueError(f"ExperienceWrapper(scope=\"run\"): the memory was built for the {what} space {theirs}, and "
                             f"{env_name(env)} has {mine}; build the TrialMemory with the env's {what}_space")


def trial_env(env: gym.Env, memory: TrialMemory, *, novelty_bonus: float = 0.0, novelty_until_success: bool = True,
              **kwargs: Any) -> gym.Env:
    """One trial env: run scope's :class:`ExperienceWrapper <RunScopeWrapper>` on ``env`` (``kwargs`` its arguments), with the
    trial's index shown where ``memory.trial_index`` (:class:`~experience_wrappers.trials.trial_index.TrialIndex`)
    and, on a training env (``learn`` True, the default) with ``novelty_bonus`` > 0, the
    exploration bonus (:class:`~experience_wrappers.trials.novelty.NoveltyBonus`); never at evaluation.

    Raises:
        ValueError: ``novelty_bonus`` is not a finite number >= 0; the RunScopeWrapper's errors.
    """
    bonus = check_real("novelty_bonus", novelty_bonus, minimum=0)
    out: gym.Env = ExperienceWrapper(env, memory, scope="run", **kwargs)
    trials = out.trials  # type: ignore[attr-defined]
    if memory.run_best:
        out = RunBest(out)  # type: ignore[arg-type]
    if memory.trial_index:
        out = TrialIndex(out, trials)
    if bonus and kwargs.get("learn", True):
        out = NoveltyBonus(out, bonus, until_success=novelty_until_success)
    return out


def trials_env_fns(make_env: Callable[[], gym.Env], memory: TrialMemory, n_envs: int, *,
                   instances: Sequence[int], trials: int = 4, group_size: int = 4, free_members: int = 1,
                   seed: int = 0, wrapper: Callable[[gym.Env], gym.Env] | None = None,
                   **kwargs: Any) -> list[Callable[[], gym.Env]]:
    """Constructors of ``n_envs`` trial envs in groups of ``group_size`` on one memory (for a DummyVecEnv).

    Each is a :func:`trial_env` (``kwargs``: the other arguments of it and of :class:`RunScopeWrapper`:
    ``guided``, ``learn``, ``demonstrations``, ``novelty_bonus``); ``wrapper`` (a ``Monitor``,
    say) goes above it.

    Raises:
        ValueError: ``n_envs`` is not a multiple of ``group_size``; ``novelty_bonus`` is not a
            finite number >= 0.
        TypeError, ValueError: ``instances`` is not a non-empty sequence of ints >= 0
            (:func:`~experience_wrappers.trials.checks.check_instances`).
    """
    n_envs = check_int("n_envs", n_envs, minimum=1)
    instances = check_instances(instances)
    group_size = check_int("group_size", group_size, minimum=1)
    if n_envs % group_size:
        raise ValueError(f"n_envs must be a multiple of group_size ({group_size}), got n_envs={n_envs}")
    check_real("novelty_bonus", kwargs.get("novelty_bonus", 0.0), minimum=0)  # before any env is built

    def fn(i: int) -> Callable[[], gym.Env]:
        def make() -> gym.Env:
            env = trial_env(make_env(), memory, instances=instances, trials=trials, group=i // group_size,
                            member=i % group_size, group_size=group_size, free_members=free_members, seed=seed,
                            **kwargs)
            return wrapper(env) if wrapper is not None else env
        return make

    return [fn(i) for i in range(n_envs)]


def _check_member_free(memory: TrialMemory, wrapper: RunScopeWrapper) -> None:
    """Warn where another open learning wrapper on ``memory`` plays the same member of the same group (envs
    built by hand with the defaults, ``group=0, member=0``): they replay the same instances, every run is
    guided, and no guided trial ever meets its group's free one, so nothing is credited."""
    if not wrapper.learn:
        return
    me = (wrapper.base_seed, wrapper.group, wrapper.member)
    if any(w.learn and (w.base_seed, w.group, w.member) == me for w in memory.wrappers):
        warnings.warn(f"another wrapper on this memory already plays member {wrapper.member} of group "
                      f"{wrapper.group} (seed {wrapper.base_seed}): the two replay the same instances as one member, "
                      f"and a group's guided trials are credited against its free member (member >= group_size - "
                      "free_members) stepping alongside them; give each env its own group and member "
                      "(ComplementaryRL(scope='run') builds the groups)", UserWarning, stacklevel=3)
