"""The retrieval path: observations -> keys -> bank queries -> the observation's experience keys.

A :class:`Retriever` holds the frozen key encoder, the bank and the query settings (``k``,
query mode, task filter), and the entries currently shown to each of ``n`` envs. The
wrappers own one (through their :class:`~experience_wrappers.wrappers.ExperienceInjector`),
so a retrieval goes wrapper -> keys -> bank -> wrapper; the manager only receives the
finished episodes.

The observation channel's query (``k`` entries, ``query_mode``: by default utility sampling
among the nearest, with the retrieval-count penalty) fills ``experience``,
``experience_utility`` and ``experience_mask``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from gymnasium import spaces

from ..bank import BankReplica, ExperienceBank
from ..bank.results import QueryResult
from ..keys import KeyEncoder
from ..keys.base import checked_keys
from ..manager import ExperienceSource
from .options import ExperienceOptions
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
        query_mode: the observation channel's query mode (``"utility"``, ``"knn"``, ``"random"``).
        filter_by_task: retrieve only entries of each env's task.

    >>> from experience_wrappers.keys import RandomProjectionKeyEncoder
    >>> space = spaces.Box(-1, 1, (3,))
    >>> bank = ExperienceBank(seed=0)
    >>> r = Retriever(RandomProjectionKeyEncoder(space), bank, 2, k=2, exp_dim=4)
    >>> obs = np.zeros((2, 3), np.float32)
    >>> r.retrieve(np.arange(2), obs, np.zeros(2, np.int64)).mask.shape  # an empty bank: nothing shown
    (2, 2)
    >>> sorted(r.observation(obs)), r.observation(obs)["experience"].shape
    (['experience', 'experience_mask', 'experience_utility', 'observation'], (2, 2, 4))
    """

    def __init__(self, key_encoder: KeyEncoder, bank: ExperienceBank, n_envs: int, *, k: int, exp_dim: int,
                 query_mode: str = "utility", filter_by_task: bool = True) -> None:
        self.key_encoder, self.bank = key_encoder, bank
        #: the manager whose ``reader`` the queries read (set by :meth:`for_manager`; None: ``bank``)
        self.source: ExperienceSource | None = None
        self.k, self.query_mode, self.filter_by_task = k, query_mode, filter_by_task
        self.exp_dim = exp_dim
        self.values = np.zeros((n_envs, k, exp_dim), np.float32)
        self.utility = np.zeros((n_envs, k), np.float32)
        self.mask = np.zeros((n_envs, k), np.float32)
        self.ids = np.full((n_envs, k), -1, np.int64)
        # each env's shown ids as a tuple, kept in step with ``ids`` and ``mask`` by
        # :meth:`retrieve` and :meth:`clear` (the only writers): read at every step for the infos
        self.shown: list[tuple[int, ...]] = [()] * n_envs

    @classmethod
    def for_manager(cls, manager: ExperienceSource, n_envs: int, options: ExperienceOptions) -> Retriever:
        """The retriever of ``n_envs`` envs on ``manager``'s bank and key encoder, set as ``options`` say."""
        retriever = cls(manager.key_encoder, manager.bank, n_envs, k=options.k, exp_dim=manager.exp_dim,
                        query_mode=options.query_mode, filter_by_task=options.filter_by_task)
        retriever.source = manager
        return retriever

    def observation_space(self, base: spaces.Space) -> spaces.Dict:
        """The space of :meth:`observation`'s output for observations of ``base`` (no batch axis)."""
        return experience_space(base, self.k, self.exp_dim)

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
        """What the queries read: the manager's ``reader`` (the bank, or a service's local copy of it)."""
        return self.bank if self.source is None else self.source.reader

    def _query_keys(self, keys: np.ndarray, task_ids: np.ndarray, record: bool,
                    rng: np.random.Generator | None) -> QueryResult:
        return self.reader.query(keys, self.k, task_ids=task_ids if self.filter_by_task else None,
                               mode=self.query_mode, record=record, rng=rng)

    def retrieve(self, rows: np.ndarray, obs: Any, task_ids: np.ndarray, *, record: bool = True,
                 rng: np.random.Generator | None = None) -> QueryResult:
        """Query for the envs ``rows`` (``obs`` and ``task_ids`` hold those rows only) and show
        the answer to them from now on; returns the bank's answer."""
        res = self.query(obs, task_ids, record=record, rng=rng)
        self.mask[rows] = res.mask
        self.ids[rows] = res.ids
        self.utility[rows] = res.utility
        # an empty bank answers with zero-width values: those slots stay zero
        if res.values.shape[-1] == self.values.shape[-1]:
            self.values[rows] = res.values
        shown = self.mask[rows] > 0
        for j, r in enumerate(np.asarray(rows).reshape(-1).tolist()):
            self.shown[r] = tuple(self.ids[r][shown[j]].tolist())
        return res

    def clear(self, r: int) -> None:
        """Show env ``r`` nothing (zeros, mask 0, ids -1): an experience-free episode."""
        self.values[r] = 0
        self.utility[r] = 0
        self.mask[r] = 0
        self.ids[r] = -1
        self.shown[r] = ()

    # --------------------------------------------------------- the observation
    def observation(self, obs: Any, rows: int | np.ndarray | None = None) -> dict[str, Any]:
        """``obs`` with the experience keys of what ``rows`` are shown.

        ``rows`` None: all envs, ``obs`` is their batch; an array of rows: ``obs`` holds those
        rows; an int ``r``: ``obs`` is env ``r``'s own observation (no batch axis).
        """
        sel = slice(None) if rows is None else rows if isinstance(rows, int) else np.asarray(rows)
        out = dict(obs) if isinstance(obs, dict) else {BASE_KEY: obs}
        out["experience"] = self.values[sel].copy()
        out["experience_utility"] = self.utility[sel].copy()
        out["experience_mask"] = self.mask[sel].copy()
        return out

    def shown_ids(self, r: int) -> tuple[int, ...]:
        """Ids of the entries env ``r`` is shown (a tuple: cheap for SB3 to deep-copy in infos)."""
        return self.shown[r]
