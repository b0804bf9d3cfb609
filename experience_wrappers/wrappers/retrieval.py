"""The retrieval path: observations -> keys -> bank queries -> the observation's experience keys.

A :class:`Retriever` holds the frozen key encoder, the bank and the query settings (``k``,
query mode, task filter), and the entries currently shown to each of ``n`` envs. The
wrappers own one (through their :class:`~experience_wrappers.wrappers.ExperienceInjector`),
so a retrieval goes wrapper -> keys -> bank -> wrapper; the manager only receives the
finished episodes.

Two paths share the keys of a retrieval. The observation channel's query (``k`` entries,
``query_mode``: by default utility sampling among the nearest, with the retrieval-count
penalty) fills ``experience``, ``experience_utility`` and ``experience_mask``. With the
action prior on and ``prior_source="nearest"``, the action path makes its own query: the
``prior_k`` nearest entries (``"knn"``, retrievals not counted), of which those within
``prior_max_distance`` are mixed with equal weights into the prior shown; none within it:
no prior.

With ``experience_input="compact"`` the observation channel is one key instead:
``experience`` ``(d + 1,)``, the mask-weighted mean of the shown entries' values and the
fraction of the ``k`` slots shown (:mod:`~experience_wrappers.wrappers.compact`), kept up to
date with what each env is shown.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
from gymnasium import spaces

from ..bank import BankReplica, ExperienceBank
from ..bank.results import QueryResult
from ..keys import KeyEncoder
from ..keys.base import checked_keys
from ..manager import ExperienceSource
from ..manager.replicas import ReplicaHolder, read_target
from .compact import check_experience_input, compact_experience
from .options import ExperienceOptions, ExperimentalOptions
from .spaces import BASE_KEY, experience_space

__all__ = ["Retriever"]


class Retriever:
    """Makes the batched bank query for a set of envs and keeps what each env is shown.

    Args:
        key_encoder: the frozen key encoder of the (unwrapped) observations.
        bank: the bank queried.
        n_envs: number of envs whose shown entries are kept.
        k: entries shown per step.
        exp_dim: width of an entry's value (the extractor's output).
        prior_dim: width of an entry's action prior.
        query_mode: the observation channel's query mode (``"utility"``, ``"knn"``, ``"random"``).
        filter_by_task: retrieve only entries of each env's task (both paths).
        action_prior: add ``experience_action_prior`` to observations.
        prior_source: ``"nearest"``: the prior comes from the action path's own query, and
            every one of an env's ``k`` prior slots holds that one mixed prior (zeros where no
            entry lies within the floor: no advice, the policy acts alone); ``"shown"``: slot
            ``j`` holds the prior of the observation's entry ``j``.
        prior_k: nearest entries of the action path (1 or 2).
        prior_max_distance: the action path's distance floor, in the bank's distance units.
        experience_input: ``"full"`` (three keys: every shown entry) or ``"compact"`` (one
            key: their mean and the fraction of slots shown); the action prior needs ``"full"``.

    >>> from experience_wrappers.keys import RandomProjectionKeyEncoder
    >>> space = spaces.Box(-1, 1, (3,))
    >>> bank = ExperienceBank(seed=0)
    >>> r = Retriever(RandomProjectionKeyEncoder(space), bank, 2, k=2, exp_dim=4, prior_dim=0)
    >>> obs = np.zeros((2, 3), np.float32)
    >>> r.retrieve(np.arange(2), obs, np.zeros(2, np.int64)).mask.shape  # an empty bank: nothing shown
    (2, 2)
    >>> sorted(r.observation(obs)), r.observation(obs)["experience"].shape
    (['experience', 'experience_mask', 'experience_utility', 'observation'], (2, 2, 4))
    >>> c = Retriever(RandomProjectionKeyEncoder(space), bank, 2, k=2, exp_dim=4, prior_dim=0,
    ...               experience_input="compact")
    >>> sorted(c.observation(obs)), c.observation(obs)["experience"].shape
    (['experience', 'observation'], (2, 5))
    """

    def __init__(self, key_encoder: KeyEncoder, bank: ExperienceBank, n_envs: int, *, k: int, exp_dim: int,
                 prior_dim: int, query_mode: str = "utility", filter_by_task: bool = True,
                 action_prior: bool = False, prior_source: str = "nearest", prior_k: int = 1,
                 prior_max_distance: float = 0.5, experience_input: str = "full") -> None:
        # the same checks as ExperienceOptions' (one message for one mistake)
        ExperimentalOptions(prior_source=prior_source, prior_k=prior_k, prior_max_distance=prior_max_distance)
        self.experience_input = check_experience_input(experience_input, action_prior=action_prior)
        #: whether the observation carries the compact key (one row per env, kept by retrieve / clear)
        self.compact_input = self.experience_input == "compact"
        self.key_encoder, self.bank = key_encoder, bank
        #: the manager's replicas of the bank, read instead of it (set by :meth:`for_manager`; None: the bank)
        self.replicas: ReplicaHolder | None = None
        self.k, self.query_mode, self.filter_by_task = k, query_mode, filter_by_task
        self.exp_dim, self.prior_dim, self.action_prior = exp_dim, prior_dim, action_prior
        self.prior_source, self.prior_k = prior_source, prior_k
        self.prior_max_distance = float(prior_max_distance)
        #: whether the action path makes its own query
        self.nearest_prior = action_prior and prior_source == "nearest"
        #: the action path's entries of each env (-1: none within the floor), and their distances
        self.prior_ids = np.full((n_envs, prior_k), -1, np.int64)
        self.prior_distances = np.full((n_envs, prior_k), np.inf)
        self.values = np.zeros((n_envs, k, exp_dim), np.float32)
        self.utility = np.zeros((n_envs, k), np.float32)
        self.mask = np.zeros((n_envs, k), np.float32)
        self.prior = np.zeros((n_envs, k, prior_dim), np.float32)
        self.ids = np.full((n_envs, k), -1, np.int64)
        self.compact = np.zeros((n_envs, exp_dim + 1), np.float32)
        # each env's shown ids as a tuple, kept in step with ``ids`` and ``mask`` by
        # :meth:`retrieve` and :meth:`clear` (the only writers): read at every step for the infos
        self.shown: list[tuple[int, ...]] = [()] * n_envs

    @classmethod
    def for_manager(cls, manager: ExperienceSource, n_envs: int, options: ExperienceOptions) -> Retriever:
        """The retriever of ``n_envs`` envs on ``manager``'s bank and key encoder, set as ``options`` say.

        Warns (``UserWarning``) when the action prior is on and ``options.retrieve_every`` is 0
        or above the manager's ``prior_horizon``: a prior would be shown for more steps than
        it describes.
        """
        if options.action_prior:
            horizon = manager.config.prior_horizon
            every = options.retrieve_every
            if every == 0 or every > horizon:
                shown = "a whole episode" if every == 0 else f"{every} steps"
                warnings.warn(f"action_prior=True with retrieve_every={every}: a prior describes the manager's "
                              f"prior_horizon={horizon} steps but is shown for {shown}; set retrieve_every "
                              f"between 1 and {horizon} (or raise prior_horizon)", UserWarning, stacklevel=2)
        retriever = cls(manager.key_encoder, manager.bank, n_envs, k=options.k, exp_dim=manager.exp_dim,
                        prior_dim=manager.prior_dim, query_mode=options.query_mode,
                        filter_by_task=options.filter_by_task, action_prior=options.action_prior,
                        prior_source=options.prior_source, prior_k=options.prior_k,
                        prior_max_distance=options.prior_max_distance, experience_input=options.experience_input)
        retriever.replicas = manager.replicas
        return retriever

    def observation_space(self, base: spaces.Space) -> spaces.Dict:
        """The space of :meth:`observation`'s output for observations of ``base`` (no batch axis)."""
        return experience_space(base, self.k, self.exp_dim, self.prior_dim if self.action_prior else None,
                                self.experience_input)

    # -------------------------------------------------------------- the query
    def keys(self, obs: Any, task_ids: np.ndarray) -> np.ndarray:
        """Keys of a batch of observations, checked: ``(n, key_dim)`` finite float32 rows."""
        return checked_keys(self.key_encoder, obs, task_ids)

    def query(self, obs: Any, task_ids: np.ndarray, *, record: bool = True,
              rng: np.random.Generator | None = None) -> QueryResult:
        """The observation channel's bank query for a batch of observations (one row per observation).

        Args:
            obs: the batch (leading axis), laid out as the key encoder expects.
            task_ids: each observation's task.
            record: count the retrievals in the bank (False: evaluation).
            rng: the generator of the bank's draws (``"utility"`` and ``"random"`` modes).
        """
        task_ids = np.asarray(task_ids, dtype=np.int64)
        return self._query_keys(self.keys(obs, task_ids), task_ids, record, rng)

    @property
    def reader(self) -> ExperienceBank | BankReplica:
        """What the queries read: the bank, or the manager's replica of it (``read_replica``)."""
        return read_target(self.bank, self.replicas)

    def _query_keys(self, keys: np.ndarray, task_ids: np.ndarray, record: bool,
                    rng: np.random.Generator | None) -> QueryResult:
        return self.reader.query(keys, self.k, task_ids=task_ids if self.filter_by_task else None,
                               mode=self.query_mode, record=record, rng=rng)

    def _prior_query_keys(self, keys: np.ndarray, task_ids: np.ndarray) -> tuple[QueryResult, np.ndarray]:
        res = self.reader.query(keys, self.prior_k, task_ids=task_ids if self.filter_by_task else None,
                              mode="knn", record=False)
        return res, res.mask & (res.distances <= self.prior_max_distance)

    def retrieve(self, rows: np.ndarray, obs: Any, task_ids: np.ndarray, *, record: bool = True,
                 rng: np.random.Generator | None = None) -> QueryResult:
        """Query for the envs ``rows`` (``obs`` and ``task_ids`` hold those rows only) and show
        the answer to them from now on; returns the observation channel's answer (the action
        path's entries are in :attr:`prior_ids`)."""
        task_ids = np.asarray(task_ids, dtype=np.int64)
        keys = self.keys(obs, task_ids)
        res = self._query_keys(keys, task_ids, record, rng)
        self.mask[rows] = res.mask
        self.ids[rows] = res.ids
        self.utility[rows] = res.utility
        # an empty bank answers with zero-width values / priors: those slots stay zero
        if res.values.shape[-1] == self.values.shape[-1]:
            self.values[rows] = res.values
        if self.nearest_prior:
            self._show_nearest_prior(rows, keys, task_ids)
        elif res.prior.shape[-1] == self.prior.shape[-1]:
            self.prior[rows] = res.prior
        if self.compact_input:
            self.compact[rows] = compact_experience(self.values[rows], self.mask[rows])
        shown = self.mask[rows] > 0
        for j, r in enumerate(np.asarray(rows).reshape(-1).tolist()):
            self.shown[r] = tuple(self.ids[r][shown[j]].tolist())
        return res

    def _show_nearest_prior(self, rows: np.ndarray, keys: np.ndarray, task_ids: np.ndarray) -> None:
        """The action path: mix the entries within the floor (equal weights) into every prior slot."""
        pres, within = self._prior_query_keys(keys, task_ids)
        self.prior_ids[rows] = np.where(within, pres.ids, -1)
        self.prior_distances[rows] = np.where(within, pres.distances, np.inf)
        if pres.prior.shape[-1] != self.prior.shape[-1]:  # an empty bank: zero-width priors, no advice
            self.prior[rows] = 0
            return
        n_within = within.sum(axis=1, keepdims=True)
        mixed = (pres.prior * within[..., None]).sum(axis=1) / np.maximum(n_within, 1)
        self.prior[rows] = mixed[:, None, :].astype(np.float32, copy=False)

    def clear(self, r: int) -> None:
        """Show env ``r`` nothing (zeros, mask 0, ids -1): an experience-free episode."""
        self.values[r] = 0
        self.utility[r] = 0
        self.mask[r] = 0
        self.prior[r] = 0
        self.prior_ids[r] = -1
        self.prior_distances[r] = np.inf
        self.ids[r] = -1
        self.compact[r] = 0
        self.shown[r] = ()

    # --------------------------------------------------------- the observation
    def observation(self, obs: Any, rows: int | np.ndarray | None = None) -> dict[str, Any]:
        """``obs`` with the experience keys of what ``rows`` are shown.

        ``rows`` None: all envs, ``obs`` is their batch; an array of rows: ``obs`` holds those
        rows; an int ``r``: ``obs`` is env ``r``'s own observation (no batch axis).
        """
        sel = slice(None) if rows is None else rows if isinstance(rows, int) else np.asarray(rows)
        out = dict(obs) if isinstance(obs, dict) else {BASE_KEY: obs}
        if self.compact_input:
            out["experience"] = self.compact[sel].copy()
            return out
        out["experience"] = self.values[sel].copy()
        out["experience_utility"] = self.utility[sel].copy()
        out["experience_mask"] = self.mask[sel].copy()
        if self.action_prior:
            out["experience_action_prior"] = self.prior[sel].copy()
        return out

    def shown_ids(self, r: int) -> tuple[int, ...]:
        """Ids of the entries env ``r`` is shown (a tuple: cheap for SB3 to deep-copy in infos)."""
        return self.shown[r]
