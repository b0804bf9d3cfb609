"""Per-env episode state shared by the single-env wrapper and the VecEnv wrapper.

Both wrappers drive an :class:`ExperienceInjector` over ``n`` envs: it decides which
episodes are experience-guided, has its :class:`~experience_wrappers.wrappers.retrieval.Retriever`
retrieve for all guided envs in one batched bank query, records what happened, and hands
finished episodes to the manager. Keeping this in one place is what makes both wrappers
produce the same observations.
"""

from __future__ import annotations

import warnings
import weakref
from collections.abc import Iterable
from typing import Any

import numpy as np
from gymnasium import spaces

from ..health import key_collapse
from ..manager import Episode, ExperienceSource, Instance, SuccessReports
from .env_checks import check_rewards, observation_checker
from .instances import INSTANCE_INFO_KEY, guided_members
from .options import ExperienceOptions, TaskIdSource, check_task_id
from .recorder import EpisodeRecorder
from .retrieval import Retriever

__all__ = ["ExperienceInjector", "TaskIdSource", "subset_rows", "mark_training", "FULL_CHECKS", "CHECK_EVERY", "LONG_EPISODE"]

#: the recorded steps (vector steps) of an injector whose observations are all checked against the space
#: (:func:`~.env_checks.observation_checker`); after them one step in :data:`CHECK_EVERY` on average is, at
#: random gaps (1 to ``2 * CHECK_EVERY - 1`` steps: a fixed stride would never see a step of an episode whose
#: length it divides), and every observation a retrieval reads or a reset returns still is. An env that breaks
#: its space does so early, and the check of every step was the largest cost of the per-env wrapper (28 µs of
#: 83 per step on MiniHack); NaN and inf in an observation and every reward are still checked at every step
FULL_CHECKS = 1_000
CHECK_EVERY = 16
#: an episode this long without ending is said once (its steps are held in memory until it ends, and
#: nothing reaches the bank before: an env without a time limit, say)
LONG_EPISODE = 10_000
#: per manager, the episodes its key encoder's check (:meth:`ExperienceInjector._check_keys`) has still to look at
#: for a few distinct observations (0: checked, or given up on an env whose episodes never hold them)
_KEY_CHECKS: weakref.WeakKeyDictionary[Any, int] = weakref.WeakKeyDictionary()
KEY_CHECK_EPISODES = 100
_NO_ROWS = np.zeros(0, dtype=np.int64)
_ROW_0 = np.zeros(1, dtype=np.int64)
_NO_ROWS.setflags(write=False)
_ROW_0.setflags(write=False)

def mark_training(manager: ExperienceSource, injectors: Iterable[ExperienceInjector]) -> None:
    """Declare ``injectors`` the ones being trained on ``manager``: from now on an injector of
    the same manager built with ``learn=None`` (an evaluation env) learns nothing."""
    manager.training_injectors = weakref.WeakSet(injectors)


def _take(obs: Any, i: int) -> Any:
    if isinstance(obs, dict):
        return {key: np.array(v[i], copy=True) for key, v in obs.items()}
    if isinstance(obs, tuple):
        return tuple(np.array(v[i], copy=True) for v in obs)
    return np.array(obs[i], copy=True)


def subset_rows(obs: Any, rows: np.ndarray) -> Any:
    """The given rows of a batch of observations (array, dict or tuple of arrays)."""
    if isinstance(obs, dict):
        return {key: np.asarray(v)[rows] for key, v in obs.items()}
    if isinstance(obs, tuple):
        return tuple(np.asarray(v)[rows] for v in obs)
    return np.asarray(obs)[rows]


class ExperienceInjector:
    """Experience state of ``n`` envs: guided flags, shown entries, recorded episodes.

    The entries shown, and the bank query that picks them, are its :attr:`retriever`'s
    (built on the manager's key encoder and bank); the manager only receives finished episodes.

    Args:
        manager: the manager that receives episodes (and whose key encoder and bank the
            retriever uses).
        n_envs: number of envs.
        observation_space: the space of one env's (unwrapped) observation.
        options: the settings (:class:`ExperienceOptions`; its manager fields are not used here).
        **kwargs: :class:`ExperienceOptions` fields, over ``options`` (one set of defaults:
            :class:`ExperienceOptions`'s).
    """

    def __init__(self, manager: ExperienceSource, n_envs: int, observation_space: spaces.Space,
                 options: ExperienceOptions | None = None, **kwargs: Any) -> None:
        options = ExperienceOptions.of(options, **kwargs)
        self.manager = manager
        self.n = n_envs
        self.observation_space = observation_space
        self.check_observations = observation_checker(observation_space)  # values the space refuses: error
        self.retriever = Retriever.for_manager(manager, n_envs, options)
        self.retrieve_every = options.retrieve_every
        self.task_source = options.task_id
        self.learn = options.learn
        self.paired = options.paired
        self._warned_unpaired = False
        self._warned_task = False  # a fixed task id where the env reports another (info["task_id"]), said once
        self.force_guided: bool | None = None
        #: inside ``model.learn`` (set by :class:`~integrations.sb3.CRLCallback`); None: never
        #: trained by one, so no warning about episodes outside training
        self.in_learn: bool | None = None
        self._warned_outside = False
        self._warned_long = False
        self.rng = np.random.default_rng(options.seed)
        self.guided = np.zeros(n_envs, bool)
        self.steps = np.zeros(n_envs, np.int64)
        self.task_ids = np.zeros(n_envs, np.int64)
        self.env_steps = 0
        self._recorded = 0  # record() calls: which observations are checked against the space
        self._next_check = FULL_CHECKS + 1
        self._check_rng = np.random.default_rng([0 if options.seed is None else int(options.seed), 0xC4EC])
        self.recorder = EpisodeRecorder(n_envs)  # the episodes in flight
        # an episode's success from its last info (a missing key, once any env on the manager reported: False)
        self.reports: SuccessReports = manager.success_reports
        self._injected: list[set[int]] = [set() for _ in range(n_envs)]
        # paired credit: each env's replayed instance and the steps each entry was shown
        self.instances: list[Instance | None] = [None] * n_envs
        self._shown: list[dict[int, int]] = [{} for _ in range(n_envs)]

    @property
    def learning(self) -> bool:
        """Whether finished episodes go to the manager and retrievals are counted (see ``learn``)."""
        if self.learn is not None:
            return bool(self.learn)
        trained = self.manager.training_injectors
        return trained is None or self in trained

    # ---------------------------------------------------------------- episodes
    def begin(self, rows: np.ndarray, obs: Any, infos: list[dict]) -> None:
        """Start new episodes in ``rows`` (``obs`` and ``infos`` hold those rows only)."""
        rows = np.asarray(rows, dtype=np.int64)
        self.check_observations(obs, "reset")
        if rows.size == 0:
            return
        ratio = self.manager.guided_ratio if self.force_guided is None else float(self.force_guided)
        if self.paired:
            guided = [self._paired_draw(r, infos[j] if j < len(infos) else {}, ratio)
                      for j, r in enumerate(rows.tolist())]
        else:
            draws = self.rng.random(len(rows))
            guided = (draws < ratio).tolist()
        for j, r in enumerate(rows.tolist()):
            self.guided[r] = guided[j]
            self._shown[r] = {}
            self.steps[r] = 0
            # a task function reads the observation (a copy); a fixed task needs none
            self.task_ids[r] = (self._task_of(_take(obs, j), infos[j] if j < len(infos) else {})
                                if callable(self.task_source) else int(self.task_source))
            if not self._warned_task and not callable(self.task_source) and j < len(infos):
                self._check_reported_task(infos[j])
            self.recorder.clear(r)
            self._injected[r] = set()
            self.retriever.clear(r)
        guided = self.guided[rows]
        if guided.any():  # (checked above: the observations a reset returned)
            self._retrieve(rows[guided], subset_rows(obs, np.flatnonzero(guided)))

    def _paired_draw(self, r: int, info: dict, ratio: float) -> bool:
        """Env ``r``'s role in its replayed instance (guided or free), from the reset info of
        :class:`~experience_wrappers.wrappers.ReplayInstances`; records the instance."""
        spec = info.get(INSTANCE_INFO_KEY)
        if self.force_guided is not None:  # forced (evaluation): no pairs, every episode the same
            self.instances[r] = None
            return bool(self.force_guided)
        if not isinstance(spec, dict):  # this env cannot replay an instance: the unpaired rule
            self.instances[r] = None
            if not self._warned_unpaired:
                self._warned_unpaired = True
                warnings.warn(
                    f"paired=True, but {'the env' if self.n == 1 else f'env {r}'}'s reset info has no "
                    f"{INSTANCE_INFO_KEY!r}, so it does not replay "
                    "task instances: its guided episodes are credited against the task's recent free episodes "
                    "instead of free episodes of the same instance. To pair "
                    "them, build the envs with experience_wrappers.wrappers.paired_env_fns(...) (each env in "
                    "ReplayInstances, below the VecEnv and below the experience wrapper)", UserWarning, stacklevel=2)
            return bool(self.rng.random() < ratio)
        size, member, index = int(spec["size"]), int(spec["member"]), int(spec["index"])
        m = guided_members(ratio, size)
        self.instances[r] = Instance(group=int(spec["group"]), index=index, members=size, guided=m,
                                     seed=int(spec["seed"]))
        return (member + index) % size < m

    def _check_reported_task(self, info: dict) -> None:
        """Warn (once) where the env reports a task id (``info["task_id"]``, Meta-World's) other than the fixed one."""
        reported = info.get("task_id")
        if isinstance(reported, int | np.integer) and not isinstance(reported, bool) and reported != self.task_source:
            self._warned_task = True
            warnings.warn(f"the env reports info['task_id'] = {int(reported)}, and the experience wrapper files every "
                          f"episode under task {self.task_source} (task_id={self.task_source}): the tasks share their "
                          "entries and their free baselines. Pass task_id=lambda obs, info: info['task_id'] (or each "
                          "env's own fixed id)", UserWarning, stacklevel=3)

    def _task_of(self, obs: Any, info: dict) -> int:
        if callable(self.task_source):
            return check_task_id(self.task_source(obs, info), "the task_id function's value")
        return int(self.task_source)

    def retrieve(self, rows: np.ndarray, obs: Any) -> None:
        """One batched bank query for ``rows`` (``obs`` holds those rows only), through the retriever;
        the observations are checked against the space first."""
        self.check_observations(obs, "step")
        self._retrieve(rows, obs)

    def _retrieve(self, rows: np.ndarray, obs: Any) -> None:
        res = self.retriever.retrieve(rows, obs, self.task_ids[rows], record=self.learning, rng=self.rng)
        for j, r in enumerate(rows.tolist()):
            self._injected[r].update(res.ids[j][res.mask[j]].tolist())

    def record(self, obs: Any, actions: np.ndarray, rewards: Any, source: str = "the env") -> None:
        """Record one step of every env: the observation acted on, the action, the reward.

        The observations are checked against the space at every step of the first
        :data:`FULL_CHECKS`, then at random steps, one in :data:`CHECK_EVERY` on average.

        ``rewards`` as the env returned them, one per env; :func:`~.env_checks.check_rewards`
        refuses any that is not a finite real number, naming ``source`` (whose step returned it).
        """
        rewards = check_rewards(rewards, self.steps, source)
        self._recorded += 1
        if self._recorded <= FULL_CHECKS or self._recorded >= self._next_check:
            self.check_observations(obs, "step")
            if self._recorded >= self._next_check:
                self._next_check = self._recorded + int(self._check_rng.integers(1, 2 * CHECK_EVERY))
        self.recorder.append(obs, actions, rewards)
        if self._recorded % 1024 == 0 and not self._warned_long and self.recorder.lengths.max() >= LONG_EPISODE:
            self._warned_long = True
            warnings.warn(f"an episode has run {int(self.recorder.lengths.max()):,} steps without ending: its steps "
                          "are held in memory until it ends, and only a finished episode reaches the bank; give "
                          "the env a time limit (gymnasium.wrappers.TimeLimit)", UserWarning, stacklevel=3)
        if self.paired:  # the entries the action of each guided env was taken with
            retriever = self.retriever
            for r in np.flatnonzero(self.guided).tolist():
                shown = self._shown[r]
                for i in retriever.shown[r]:
                    shown[i] = shown.get(i, 0) + 1
        self.steps += 1
        self.env_steps += self.n

    def finish(self, r: int, success: bool | None) -> Episode:
        """Close env ``r``'s episode and hand it to the manager (when learning)."""
        ids = np.fromiter(self._injected[r], dtype=np.int64, count=len(self._injected[r]))
        shown = None
        if self.paired:
            counts = self._shown[r]
            shown = np.asarray([counts.get(i, 0) for i in ids.tolist()], dtype=np.int64)
        observations, actions, rewards = self.recorder.take(r)
        ep = Episode(observations=observations, actions=actions, rewards=rewards, success=success,
                     guided=bool(self.guided[r]), injected_ids=ids,
                     task_id=int(self.task_ids[r]), env_steps=self.env_steps,
                     instance=self.instances[r], shown_steps=shown)
        if self.learning:
            if _KEY_CHECKS.get(self.manager, KEY_CHECK_EPISODES):
                self._check_keys(ep)
            if self.in_learn is False and not self._warned_outside:
                self._warned_outside = True
                warnings.warn("an episode finished on the training env after CRLCallback's last learn() ended: "
                              "outside model.learn() (SB3's evaluate_policy on it?), or in a learn() given no "
                              "CRLCallback (give callback=CRLCallback() to every learn: it schedules the guided "
                              "episodes and credits them). It goes into the bank like a training episode; evaluate "
                              "inside integrations.sb3.evaluation.no_learning(env), or on a separate env built on the same "
                              "bank, which learns nothing", UserWarning, stacklevel=2)
            self.manager.submit(ep)
        return ep

    def _check_keys(self, ep: Episode) -> None:
        """Once per manager (its first episode with a few distinct observations): warn where the key
        encoder cannot tell them apart (:func:`~experience_wrappers.health.key_collapse`)."""
        checked, collapsed = key_collapse(self.manager, ep.observations, ep.length, ep.task_id)
        _KEY_CHECKS[self.manager] = 0 if checked else _KEY_CHECKS.get(self.manager, KEY_CHECK_EPISODES) - 1
        if collapsed is not None:
            warnings.warn(collapsed, UserWarning, stacklevel=4)

    def due(self) -> np.ndarray:
        """Envs in a guided episode whose step count calls for a new retrieval."""
        if self.retrieve_every <= 0:
            return _NO_ROWS
        if self.n == 1:  # the per-env wrapper: plain scalars, not four numpy operations on arrays of one
            step = int(self.steps[0])
            return _ROW_0 if self.guided[0] and step > 0 and step % self.retrieve_every == 0 else _NO_ROWS
        return np.flatnonzero(self.guided & (self.steps > 0) & (self.steps % self.retrieve_every == 0))

    # ------------------------------------------------------------------- infos
    def info(self, r: int) -> dict[str, Any]:
        """Per-step info of env ``r``. Plain Python values: SB3's DummyVecEnv deep-copies
        every info at every step, and a tuple of ints costs nothing to copy."""
        return {"experience_guided": bool(self.guided[r]),
                "experience_ids": self.retriever.shown_ids(r),
                "experience_task_id": int(self.task_ids[r])}

    def infos(self) -> list[dict[str, Any]]:
        """:meth:`info` of every env, built in one pass."""
        return [{"experience_guided": g, "experience_ids": s, "experience_task_id": t}
                for g, s, t in zip(self.guided.tolist(), self.retriever.shown, self.task_ids.tolist(), strict=True)]
