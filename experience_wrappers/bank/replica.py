"""A read replica of the bank: a copy of its entries and index that readers query without locks.

Writes (adds, credit, merges, evictions) go to the bank; readers (an experience service's
workers with ``local_reads``) query a :class:`BankReplica` taken from it with
:meth:`ExperienceBank.replica() <experience_wrappers.bank.ExperienceBank.replica>`, and swap a
newer one in whole (:class:`~integrations.ray.replica_holder.ReplicaHolder`), so no read ever
waits for a write. A replica answers exactly as the bank did at the version it
copied (the same steps, :mod:`.search`), draws from a generator of its own, and keeps the
retrievals it counts (:meth:`BankReplica.take_hits`) for the bank
(:meth:`ExperienceBank.record_retrievals`).

Single-key kNN queries, the retrieval of one env, take a path of their own here: the replica
never changes, so what the bank checks per call under its lock (its size, its tasks, the id
-> slot map) is worked out once, when the replica is made.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any

import numpy as np

from .arguments import MAX_KEY, MIN_COSINE_NORM
from .index import tied
from .results import QueryResult
from .state import BankState

if TYPE_CHECKING:
    from .bank import ExperienceBank

__all__ = ["BankReplica"]

#: a dense id -> row table is kept while the largest id is at most this many times the entry
#: count (plus a constant): ids only grow, so a long run with many evictions falls back to the bank's lookup
_DENSE_FACTOR, _DENSE_SLACK = 8, 1 << 20
#: the single-key path's picks are counted in the copy every this many queries (or when read)
_FOLD_EVERY = 1024


#: the single-key path leaves a key whose distances reach this to the bank's steps (which check it)
_HUGE = MAX_KEY ** 2

class BankReplica:
    """A read-only copy of an :class:`~experience_wrappers.bank.ExperienceBank` at one version.

    Build it with ``bank.replica()``. :meth:`query` takes the bank's arguments and gives its
    answers; retrievals it records raise its own counts (so utility sampling's retrieval
    penalty sees them at once) and are kept until :meth:`take_hits` hands them to the bank
    (8 bytes a pick: take them now and then, or query with ``record=False``).
    Safe to query from several threads.

    >>> from experience_wrappers.bank import ExperienceBank
    >>> bank = ExperienceBank(capacity=8)
    >>> _ = bank.add(np.eye(3, dtype=np.float32), np.ones((3, 2), dtype=np.float32))
    >>> replica = bank.replica()
    >>> _ = bank.add(-np.eye(3, dtype=np.float32), np.zeros((3, 2), dtype=np.float32))
    >>> len(replica), len(bank), replica.version < bank.version
    (3, 6, True)
    >>> replica.query(np.array([1.0, 0, 0], np.float32), k=1, mode="knn").ids.tolist()
    [[0]]
    >>> replica.take_hits().tolist(), bank.record_retrievals([0])
    ([0], 1)
    """

    def __init__(self, bank: ExperienceBank, version: int) -> None:
        """Use :meth:`of` (``bank.replica()``); ``bank`` here is the private copy answering queries."""
        self._bank = bank
        self.version = int(version)
        self._hits: list[np.ndarray] = []  # ids picked by recorded queries, for the bank
        self._fast_rows: list[np.ndarray] = []  # rows the single-key path picked, not yet counted here
        self._hits_lock = threading.Lock()
        store, index = bank.core.store, bank.core.index
        self._size = 0 if store is None else store.size
        # the single-key kNN path's tables (None: that path is off)
        self._raw: Any = None
        self._row_of: np.ndarray | None = None
        self._only_task: int | None = None
        if store is None or index is None or self._size == 0 or bank.config.utility_floor is not None:
            return
        ids = store.view("id")
        top = int(ids.max())
        if top <= _DENSE_FACTOR * self._size + _DENSE_SLACK:
            self._row_of = np.full(top + 1, -1, np.int64)
            self._row_of[ids] = np.arange(self._size)
        tasks = bank.core.task_counts
        self._only_task = next(iter(tasks)) if len(tasks) == 1 else None
        if self._row_of is None:
            return
        self._raw, self._index = index.raw, index
        self._one_shape = (store.dims["key_dim"],)  # one key
        self._cosine = bank.config.space == "cosine"
        self._k_max = min(self._size, index.ef_search)  # hnswlib's ef must cover k
        cols = store.cols
        self._value, self._utility = cols["value"], cols["utility"]
        self._n_retrieved, self._ids = cols["n_retrieved"], cols["id"]
        # per k: the all-true mask, shared read-only by every answer
        self._constant: dict[int, np.ndarray] = {}

    @classmethod
    def of(cls, bank: ExperienceBank) -> BankReplica:
        """A copy of ``bank`` now (taken under its read lock: it waits for a write in progress)."""
        core = bank.core
        with core.lock.read(), core.count_lock:
            store = None if core.store is None else core.store.copy()
            index = None if core.index is None else core.index.copy()
            # draws of its own: a generator spawned from the bank's (whose own stream is unchanged)
            state = BankState(config=core.config, next_id=core.next_id, tick=core.tick,
                              rng=core.rng.spawn(1)[0], store=store, index=index,
                              fixed_widths=dict(core.fixed_widths))
            version = core.version
        return cls(type(bank).from_state(state), version)

    def __reduce__(self) -> Any:
        """Pickled as its copy's state (entries, index, config, version): a replica can be sent to
        another process (a Ray worker) and queried there; its uncounted retrievals stay behind."""
        core = self._bank.core
        return (_rebuild, (type(self._bank), core.config, core.next_id, core.tick, core.rng, core.store, core.index,
                           self.version))

    # ---------------------------------------------------------------- reads
    def __len__(self) -> int:
        return self._size

    @property
    def config(self) -> Any:
        """The bank's :class:`~experience_wrappers.bank.BankConfig` at the copy."""
        return self._bank.config

    @property
    def dims(self) -> dict[str, int] | None:
        return self._bank.dims

    def __repr__(self) -> str:
        return f"BankReplica(size={self._size}, version={self.version}, dims={self.dims})"

    def query(self, keys: Any, k: int = 4, *, task_ids: Any = None, mode: str = "utility",
              temperature: float | None = None, record: bool = True,
              rng: np.random.Generator | None = None) -> QueryResult:
        """:meth:`ExperienceBank.query <experience_wrappers.bank.ExperienceBank.query>` on the copy:
        the same arguments, checks and answers."""
        raw = self._raw
        if (raw is not None and mode == "knn" and type(keys) is np.ndarray and keys.shape == self._one_shape
                and type(k) is int and 0 < k <= self._k_max and temperature is None and rng is None
                and keys.dtype == np.float32 and (task_ids is None or self._asks_only_task(task_ids))
                and type(record) is bool):
            fast = self._one_key(raw, keys, k, record)
            if fast is not None:
                return fast
        if self._fast_rows:
            self._fold()  # the counts this query may read (utility sampling's retrieval penalty)
        result = self._bank.query(keys, k, task_ids=task_ids, mode=mode, temperature=temperature,
                                  record=record, rng=rng)
        if record:
            picked = result.ids[result.mask]
            if len(picked):
                with self._hits_lock:
                    self._hits.append(picked)
        return result

    def _asks_only_task(self, task_ids: Any) -> bool:
        only = self._only_task
        if only is None:
            return False
        if type(task_ids) is int:
            return task_ids == only
        return isinstance(task_ids, np.ndarray) and task_ids.shape == (1,) and int(task_ids[0]) == only

    def _one_key(self, raw: Any, key: np.ndarray, k: int, record: bool) -> QueryResult | None:
        """The ``k`` nearest entries of one key (what the bank's kNN steps give); None: let them answer."""
        if self._cosine and not float(np.dot(key, key)) >= MIN_COSINE_NORM ** 2:
            return None  # a direction-less key: the bank's steps refuse it
        index = self._index
        extra = int(k < self._size)  # one more, to see a tie at the k-th distance (HnswIndex.search_checked)
        index.use_ef(max(index.ef_search, k + extra))  # a general query with a larger k may have raised it
        try:
            labels, dists = raw.knn_query(key, k=k + extra, num_threads=1)
        except RuntimeError:  # hnswlib could not fill k: the general steps search exactly
            return None
        last = float(dists[0, -1])  # the key's check, after the search: a NaN, inf or huge value in the key
        if not -_HUGE < last < _HUGE:  # makes the distances NaN, infinite or huge (stored keys are within MAX_KEY)
            return None  # the bank's steps check the key (and raise)
        if extra:
            if tied(float(dists[0, k - 1]), last):
                return None  # a tie: hnswlib may have missed a nearer entry; the general steps answer exactly
            labels, dists = labels[:, :k], dists[:, :k]
        ids = labels.view(np.int64)
        rows = self._row_of[ids]  # type: ignore[index]  # set with _raw
        if record:
            with self._hits_lock:  # counted in the copy when another path reads the counts (_fold)
                self._fast_rows.append(rows[0])
            if len(self._fast_rows) >= _FOLD_EVERY:
                self._fold()
        mask = self._constant.get(k)
        if mask is None:
            mask = self._constant[k] = np.ones((1, k), dtype=bool)
            mask.flags.writeable = False
        return QueryResult(ids=ids, values=self._value[rows], utility=self._utility[rows],
                           distances=dists.astype(np.float64), mask=mask)

    def _fold(self) -> None:
        """Count the single-key path's picks in the copy's columns, and keep their ids for the bank."""
        with self._hits_lock:
            if not self._fast_rows:
                return
            rows, self._fast_rows = np.concatenate(self._fast_rows), []
            np.add.at(self._n_retrieved, rows, 1)
            self._hits = [np.concatenate([*self._hits, self._ids[rows]])]  # 8 bytes a pick until taken

    # ------------------------------------------------------------ hits out
    def take_hits(self) -> np.ndarray:
        """The ids this replica's recorded queries returned since the last call (one per pick), for
        :meth:`ExperienceBank.record_retrievals`; the list starts again empty."""
        self._fold()
        with self._hits_lock:
            hits, self._hits = self._hits, []
        return np.concatenate(hits).astype(np.int64, copy=False) if hits else np.zeros(0, np.int64)


def _rebuild(bank_class: type[ExperienceBank], config: Any, next_id: int, tick: int, rng: np.random.Generator,
             store: Any, index: Any, version: int) -> BankReplica:
    """A pickled replica, rebuilt (see :meth:`BankReplica.__reduce__`)."""
    if store is not None:  # columns unpickled from shared memory (Ray's object store) arrive read-only
        store.cols = {name: col if col.flags.writeable else col.copy() for name, col in store.cols.items()}
    state = BankState(config=config, next_id=next_id, tick=tick, rng=rng, store=store, index=index)
    return BankReplica(bank_class.from_state(state), version)
