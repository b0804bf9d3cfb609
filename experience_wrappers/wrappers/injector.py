"""Per-env episode state shared by the single-env wrapper and the VecEnv wrapper.

Both wrappers drive an :class:`ExperienceInjector` over ``n`` envs: it decides which
episodes are experience-guided, retrieves for all guided envs in one batched bank query,
records what happened, and hands finished episodes to the manager. Keeping this in one
place is what makes both wrappers produce the same observations.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Iterable
from typing import Any

import numpy as np
from gymnasium import spaces

from ..bank.config import MAX_K
from ..manager import Episode, ExperienceManager
from .checks import check_finite_rewards, observation_checker
from .spaces import BASE_KEY

__all__ = ["ExperienceInjector", "TaskIdSource", "subset_rows", "mark_training"]

TaskIdSource = int | Callable[[Any, dict], int]

#: per manager, the injectors of the env being trained on it (set by the SB3 callback)
_TRAINING: weakref.WeakKeyDictionary[ExperienceManager, weakref.WeakSet[ExperienceInjector]] = \
    weakref.WeakKeyDictionary()


def mark_training(manager: ExperienceManager, injectors: Iterable[ExperienceInjector]) -> None:
    """Declare ``injectors`` the ones being trained on ``manager``: from now on an injector of
    the same manager built with ``learn=None`` (an evaluation env) learns nothing."""
    _TRAINING[manager] = weakref.WeakSet(injectors)


def _take(obs: Any, i: int) -> Any:
    if isinstance(obs, dict):
        return {key: np.array(v[i], copy=True) for key, v in obs.items()}
    if isinstance(obs, tuple):
        return tuple(np.array(v[i], copy=True) for v in obs)
    return np.array(obs[i], copy=True)


def _stack(items: list[Any]) -> Any:
    first = items[0]
    if isinstance(first, dict):
        return {key: np.stack([it[key] for it in items]) for key in first}
    if isinstance(first, tuple):
        return tuple(np.stack([it[j] for it in items]) for j in range(len(first)))
    return np.stack(items)


def subset_rows(obs: Any, rows: np.ndarray) -> Any:
    """The given rows of a batch of observations (array, dict or tuple of arrays)."""
    if isinstance(obs, dict):
        return {key: np.asarray(v)[rows] for key, v in obs.items()}
    if isinstance(obs, tuple):
        return tuple(np.asarray(v)[rows] for v in obs)
    return np.asarray(obs)[rows]


class ExperienceInjector:
    """Experience state of ``n`` envs: guided flags, shown entries, recorded episodes.

    Args:
        manager: the manager (its bank, key encoder, guided ratio) that receives episodes.
        n_envs: number of envs.
        k: entries shown per step.
        retrieve_every: retrieve again every this many steps (0: only at episode start).
        task_id: a fixed task id, or ``fn(obs, info) -> int`` called at each reset.
        action_prior: add ``experience_action_prior`` to observations.
        query_mode: the bank's query mode (``"utility"``, ``"knn"``, ``"random"``).
        filter_by_task: retrieve only entries of the episode's task.
        learn: hand finished episodes to the manager and count retrievals: True, False,
            or None (the default): yes, unless the manager is being trained from another env
            (see :func:`mark_training`), so an evaluation env on the training bank never learns.
        seed: seed of the guided / free draws.
    """

    def __init__(self, manager: ExperienceManager, n_envs: int, observation_space: spaces.Space, *,
                 k: int = 4, retrieve_every: int = 0, task_id: TaskIdSource = 0,
                 action_prior: bool = False, query_mode: str = "utility", filter_by_task: bool = True,
                 learn: bool | None = None, seed: int | None = None) -> None:
        if isinstance(k, bool) or not isinstance(k, int) or not 0 < k <= MAX_K:
            raise ValueError(f"k must be an int in [1, {MAX_K}], got {k!r}")
        if isinstance(retrieve_every, bool) or not isinstance(retrieve_every, int) or retrieve_every < 0:
            raise ValueError(f"retrieve_every must be an int >= 0, got {retrieve_every!r}")
        if not isinstance(action_prior, bool):
            raise ValueError(f"action_prior must be a bool, got {action_prior!r}")
        if query_mode not in ("utility", "knn", "random"):
            raise ValueError(f"query_mode must be 'utility', 'knn' or 'random', got {query_mode!r}")
        if not (callable(task_id) or (isinstance(task_id, (int, np.integer)) and not isinstance(task_id, bool))):
            raise ValueError(f"task_id must be an int or a callable (obs, info) -> int, got {task_id!r}")
        self.manager = manager
        self.n = n_envs
        self.observation_space = observation_space
        self.check_observations = observation_checker(observation_space)  # values the space refuses: error
        self.k, self.retrieve_every = k, retrieve_every
        self.task_source = task_id
        self.action_prior = action_prior
        self.query_mode, self.filter_by_task, self.learn = query_mode, filter_by_task, learn
        self.force_guided: bool | None = None
        self.rng = np.random.default_rng(seed)
        d, p = manager.exp_dim, manager.prior_dim
        self.values = np.zeros((n_envs, k, d), np.float32)
        self.utility = np.zeros((n_envs, k), np.float32)
        self.mask = np.zeros((n_envs, k), np.float32)
        self.prior = np.zeros((n_envs, k, p), np.float32)
        self.ids = np.full((n_envs, k), -1, np.int64)
        self.guided = np.zeros(n_envs, bool)
        self.steps = np.zeros(n_envs, np.int64)
        self.task_ids = np.zeros(n_envs, np.int64)
        self.env_steps = 0
        self._obs: list[list[Any]] = [[] for _ in range(n_envs)]
        self._actions: list[list[Any]] = [[] for _ in range(n_envs)]
        self._rewards: list[list[float]] = [[] for _ in range(n_envs)]
        self._injected: list[set[int]] = [set() for _ in range(n_envs)]

    @property
    def learning(self) -> bool:
        """Whether finished episodes go to the manager and retrievals are counted (see ``learn``)."""
        if self.learn is not None:
            return bool(self.learn)
        trained = _TRAINING.get(self.manager)
        return trained is None or self in trained

    # ---------------------------------------------------------------- episodes
    def begin(self, rows: np.ndarray, obs: Any, infos: list[dict]) -> None:
        """Start new episodes in ``rows`` (``obs`` and ``infos`` hold those rows only)."""
        rows = np.asarray(rows, dtype=np.int64)
        self.check_observations(obs, "reset")
        if rows.size == 0:
            return
        ratio = self.manager.guided_ratio if self.force_guided is None else float(self.force_guided)
        draws = self.rng.random(len(rows))
        for j, r in enumerate(rows.tolist()):
            self.guided[r] = draws[j] < ratio
            self.steps[r] = 0
            self.task_ids[r] = self._task_of(_take(obs, j), infos[j] if j < len(infos) else {})
            self._obs[r], self._actions[r], self._rewards[r] = [], [], []
            self._injected[r] = set()
            self._clear(r)
        guided = self.guided[rows]
        if guided.any():
            self.retrieve(rows[guided], subset_rows(obs, np.flatnonzero(guided)))

    def _task_of(self, obs: Any, info: dict) -> int:
        if callable(self.task_source):
            t = self.task_source(obs, info)
            if isinstance(t, bool) or not isinstance(t, (int, np.integer)):
                raise ValueError(f"task_id function must return an int, got {t!r}")
            return int(t)
        return int(self.task_source)

    def _clear(self, r: int) -> None:
        self.values[r] = 0
        self.utility[r] = 0
        self.mask[r] = 0
        self.prior[r] = 0
        self.ids[r] = -1

    def retrieve(self, rows: np.ndarray, obs: Any) -> None:
        """One batched bank query for ``rows`` (``obs`` holds those rows only)."""
        self.check_observations(obs, "step")
        mgr = self.manager
        tasks = self.task_ids[rows]
        keys = mgr.encode_keys(obs, tasks)
        res = mgr.bank.query(keys, self.k, task_ids=tasks if self.filter_by_task else None,
                             mode=self.query_mode, record=self.learning, rng=self.rng)
        m = res.mask
        self.mask[rows] = m
        self.ids[rows] = res.ids
        self.utility[rows] = res.utility
        if res.values.shape[-1] == self.values.shape[-1]:
            self.values[rows] = res.values
        if res.prior.shape[-1] == self.prior.shape[-1]:
            self.prior[rows] = res.prior
        for j, r in enumerate(rows.tolist()):
            self._injected[r].update(res.ids[j][m[j]].tolist())

    def record(self, obs: Any, actions: np.ndarray, rewards: np.ndarray) -> None:
        """Record one step of every env: the observation acted on, the action, the reward."""
        check_finite_rewards(rewards, self.steps)
        self.check_observations(obs, "step")
        for r in range(self.n):
            self._obs[r].append(_take(obs, r))
            self._actions[r].append(np.array(actions[r], copy=True))
            self._rewards[r].append(float(rewards[r]))
        self.steps += 1
        self.env_steps += self.n

    def finish(self, r: int, success: bool | None) -> Episode:
        """Close env ``r``'s episode and hand it to the manager (when learning)."""
        ep = Episode(observations=_stack(self._obs[r]), actions=np.stack(self._actions[r]),
                     rewards=np.asarray(self._rewards[r], dtype=np.float64), success=success,
                     guided=bool(self.guided[r]),
                     injected_ids=np.fromiter(self._injected[r], dtype=np.int64, count=len(self._injected[r])),
                     task_id=int(self.task_ids[r]), env_steps=self.env_steps)
        self._obs[r], self._actions[r], self._rewards[r] = [], [], []
        if self.learning:
            self.manager.submit(ep)
        return ep

    def due(self) -> np.ndarray:
        """Envs in a guided episode whose step count calls for a new retrieval."""
        if self.retrieve_every <= 0:
            return np.zeros(0, dtype=np.int64)
        return np.flatnonzero(self.guided & (self.steps > 0) & (self.steps % self.retrieve_every == 0))

    # ------------------------------------------------------------ observations
    def observation(self, obs: Any, rows: np.ndarray | None = None) -> dict[str, np.ndarray]:
        """Wrapped observations of ``rows`` (all envs by default); ``obs`` holds those rows."""
        sel = slice(None) if rows is None else np.asarray(rows)
        out = dict(obs) if isinstance(obs, dict) else {BASE_KEY: obs}
        out["experience"] = self.values[sel].copy()
        out["experience_utility"] = self.utility[sel].copy()
        out["experience_mask"] = self.mask[sel].copy()
        if self.action_prior:
            out["experience_action_prior"] = self.prior[sel].copy()
        return out

    def observation_of(self, r: int, obs: Any) -> dict[str, Any]:
        """The wrapped observation of env ``r`` alone (no batch axis); ``obs`` is its own."""
        out = dict(obs) if isinstance(obs, dict) else {BASE_KEY: obs}
        out["experience"] = self.values[r].copy()
        out["experience_utility"] = self.utility[r].copy()
        out["experience_mask"] = self.mask[r].copy()
        if self.action_prior:
            out["experience_action_prior"] = self.prior[r].copy()
        return out

    def info(self, r: int) -> dict[str, Any]:
        """Per-step info of env ``r``. Plain Python values: SB3's DummyVecEnv deep-copies
        every info at every step, and a tuple of ints costs nothing to copy."""
        return {"experience_guided": bool(self.guided[r]),
                "experience_ids": tuple(self.ids[r][self.mask[r] > 0].tolist()),
                "experience_task_id": int(self.task_ids[r])}
