"""What a bank holds and its rule modules work on: entries, index, counters, locks, as one object.

:class:`~experience_wrappers.bank.ExperienceBank` is the public surface; its rules live beside
it (:mod:`.writes`, :mod:`.search`, :mod:`.transaction`, :mod:`.arguments`, :mod:`.usage`,
:mod:`.consistency`, :mod:`.replica`) and read and change a :class:`BankCore`, never the bank's
private attributes. A bank's core is ``bank.core``: an interface for those modules, not for
users (whose entry points are the bank's methods); read it under ``core.lock``, change it
inside a transaction (:func:`.transaction.transaction`).
"""

from __future__ import annotations

import threading
from collections import Counter
from typing import TYPE_CHECKING

import numpy as np

from .arguments import check_widths
from .config import BankConfig
from .entries import EntryStore
from .index import HnswIndex
from .search import TaskMembers, nearest
from .state import BankState
from .transaction import RWLock

if TYPE_CHECKING:
    from .transaction import Transaction

__all__ = ["BankCore"]


class BankCore:
    """A bank's working state.

    Attributes:
        config: the bank's :class:`BankConfig`.
        lock: readers share it, a change holds it alone.
        count_lock: guards the retrieval counters and the sampler, which queries change under
            the shared ``lock``.
        rng: the sampler of utility and random queries.
        next_id: the id the next new entry gets.
        tick: how many recorded queries ran (the retrieval clock).
        version: changes committed so far (every write transaction): a replica records the one it copies.
        task_counts: entries per task.
        members: each task's entries, for task-filtered search.
        store: the entries (None before the first add).
        index: the HNSW index over their keys (None before the first add).
        txn: the transaction of the change in progress (None between changes).
        fixed_widths: the context width given before the first add (0: taken from it).
    """

    def __init__(self, config: BankConfig, fixed_widths: dict[str, int]) -> None:
        self.config = config
        self.lock = RWLock()
        self.count_lock = threading.Lock()
        self.rng = np.random.default_rng(config.seed)
        self.next_id = 0
        self.tick = 0
        self.version = 0
        self.task_counts: Counter[int] = Counter()
        self.members = TaskMembers()
        self.store: EntryStore | None = None
        self.index: HnswIndex | None = None
        self.txn: Transaction | None = None
        self.fixed_widths = fixed_widths

    def init_dims(self, dims: dict[str, int]) -> None:
        """Make the entries store and the index for entries of these widths (each at most ``MAX_DIM``)."""
        check_widths(dims)
        c = self.config
        self.store = EntryStore(dims)
        self.index = HnswIndex(c.space, dims["key_dim"], c.capacity, c.M, c.ef_construction, c.ef_search,
                               seed=c.seed or 0)

    def nearest(self, keys: np.ndarray, m: int, tasks: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
        """Up to ``m`` nearest ids per row (same task when ``tasks`` is given); see :func:`.search.nearest`."""
        assert self.store is not None and self.index is not None
        return nearest(self.store, self.index, keys, m, tasks, self.task_counts, self.members, self.config.space)

    def keys_of(self, ids: np.ndarray) -> np.ndarray:
        """Stored keys of entry ids (any shape); an id not in the bank (-1) gets the first entry's key."""
        assert self.store is not None
        return self.store.cols["key"][np.maximum(self.store.find(ids), 0)]

    def state(self, save_id: str | None = None) -> BankState:
        """This core's state as a :class:`BankState` (its own objects, not copies)."""
        return BankState(config=self.config, next_id=self.next_id, tick=self.tick, rng=self.rng,
                         store=self.store, index=self.index, save_id=save_id,
                         fixed_widths=dict(self.fixed_widths))

    def adopt(self, state: BankState) -> None:
        """Take ``state``'s config, counters, sampler, entries and index (a change: the version moves)."""
        self.version += 1
        self.config = state.config
        self.rng = state.rng
        self.next_id, self.tick = state.next_id, state.tick
        self.store, self.index = state.store, state.index
        self.fixed_widths = dict(state.fixed_widths)
        self.task_counts = Counter() if state.store is None else Counter(state.store.view("task_id").tolist())
        self.members = TaskMembers()
