"""Safe changes of a bank: one writer at a time, and all or nothing.

Readers and writers take the bank's :class:`RWLock` (many readers or one writer; a waiting
writer blocks new readers).

Every method of :class:`~experience_wrappers.bank.ExperienceBank` that changes entries runs
its checks first, then its changes inside :func:`transaction`. The journal keeps each row
as it was before its first change in the transaction (and the id -> slot map, the size,
the id counter and the task counts); if anything raises before the end (an error from
hnswlib or numpy, an exception raised by a signal handler), the journal puts every row
back and, when the index was already touched, rebuilds the index from the restored
entries. So a failed change leaves the bank's content exactly as it was.

In the main thread, SIGINT (Ctrl-C) is held back for the few microseconds to milliseconds
a change takes and raised as ``KeyboardInterrupt`` right after it: an interrupted ``add``
either happened completely or not at all.
"""

from __future__ import annotations

import _signal  # type: ignore[import-not-found]  # signal's C functions: signal.signal and getsignal convert to and from enums, a few µs per call
import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

import numpy as np

from .entries import EntryStore
from .index import HnswIndex

if TYPE_CHECKING:
    from .core import BankCore

__all__ = ["RWLock", "Journal", "Transaction", "transaction", "writing", "interrupts_deferred", "rebuild_index"]

_ABSENT = -1
_SIGINT = int(signal.SIGINT)


class RWLock:
    """Many readers or one writer; a waiting writer blocks new readers (no starvation).

    >>> lock = RWLock()
    >>> with lock.read():
    ...     pass
    >>> with lock.write():
    ...     pass
    """

    def __init__(self) -> None:
        self._mutex = threading.Lock()  # held directly on the fast paths: Condition's own methods cost more
        self._cond = threading.Condition(self._mutex)
        self._readers = 0
        self._writer = False
        self._writers_waiting = 0
        self._reader = _ReadGuard(self)  # stateless, so one serves every reader

    def read(self) -> _ReadGuard:
        """Hold the lock as a reader for a ``with`` block."""
        return self._reader

    def acquire_read(self) -> None:
        with self._mutex:
            while self._writer or self._writers_waiting:
                self._cond.wait()
            self._readers += 1

    def release_read(self) -> None:
        with self._mutex:
            self._readers -= 1
            if self._readers == 0 and self._writers_waiting:  # only writers wait for readers
                self._cond.notify_all()

    @contextmanager
    def write(self) -> Iterator[None]:
        with self._cond:
            self._writers_waiting += 1
            try:
                while self._writer or self._readers:
                    self._cond.wait()
            finally:
                self._writers_waiting -= 1
            self._writer = True
        try:
            yield
        finally:
            with self._cond:
                self._writer = False
                self._cond.notify_all()


class _ReadGuard:
    """``with lock.read():`` as a plain class: cheaper than a generator-based context manager,
    which matters on the bank's query path (a few microseconds per call)."""

    __slots__ = ("_lock",)

    def __init__(self, lock: RWLock) -> None:
        self._lock = lock

    def __enter__(self) -> None:
        self._lock.acquire_read()

    def __exit__(self, *exc: object) -> None:
        self._lock.release_read()


class Journal:
    """Undo log of an :class:`EntryStore`: rows before their first change, the size, the id map.

    >>> s = EntryStore({"key_dim": 1, "value_dim": 1, "context_dim": 0})
    >>> slots = s.append(2); s.cols["id"][slots] = [5, 6]; s.reindex(slots)
    >>> s.journal = j = Journal(s)
    >>> s.remove_ids([5]); s.size
    1
    >>> j.undo(s); s.journal = None; s.size, s.view("id").tolist(), s.slots_of([5, 6]).tolist()
    (2, [5, 6], [0, 1])
    """

    def __init__(self, store: EntryStore) -> None:
        self.size = store.size
        self.touched: set[int] = set()  # the slots whose rows are kept
        # the kept rows, a batch per call that kept any: their slots and each column's values there
        self.rows: list[tuple[np.ndarray, dict[str, np.ndarray]]] = []
        self.slot_of: dict[int, int] = {}

    def touch_rows(self, store: EntryStore, slots: Any) -> None:
        """Remember ``slots`` as they are now (only rows that existed when the journal began); one
        copy per column for the call's new slots (a credit touches tens of rows at once)."""
        arr = np.atleast_1d(np.asarray(slots, dtype=np.int64))
        new = [s for s in dict.fromkeys(arr[arr < self.size].tolist()) if s not in self.touched]
        if new:
            self.touched.update(new)
            at = np.asarray(new, dtype=np.int64)
            self.rows.append((at, {name: col[at] for name, col in store.cols.items()}))  # (fancy indexing copies)

    def touch_ids(self, store: EntryStore, ids: Any) -> None:
        """Remember where ``ids`` live now (or that they are absent)."""
        new = [i for i in np.atleast_1d(np.asarray(ids, dtype=np.int64)).tolist() if i not in self.slot_of]
        if new:
            self.slot_of.update(zip(new, store.slots_or(new, _ABSENT), strict=True))

    def undo(self, store: EntryStore) -> None:
        """Put every remembered row, the size and the id map back."""
        for at, values in self.rows:
            for name, value in values.items():
                store.cols[name][at] = value
        store.size = self.size
        store.forget_sorted()
        for i, s in self.slot_of.items():
            store.set_slot(i, None if s == _ABSENT else s)


class Transaction:
    """The state of one bank change that a rollback needs; see :func:`transaction`."""

    def __init__(self, core: BankCore) -> None:
        self.core = core
        self.store = core.store
        self.index = core.index
        self.task_counts = core.task_counts.copy()
        self.journal = Journal(self.store) if self.store is not None else None
        if self.store is not None:
            self.store.journal = self.journal
        self.index_live = 0 if self.index is None else self.index.live
        self.index_journal: list[tuple[str, np.ndarray]] = []
        if self.index is not None:
            self.index.journal = self.index_journal

    def close(self) -> None:
        if self.store is not None:
            self.store.journal = None
        if self.index is not None:
            self.index.journal = None

    def rollback(self) -> None:
        core = self.core
        core.members.clear()
        # next_id is not rewound: the ids the failed change handed out stay in the index as deleted elements,
        # and hnswlib takes a label it holds as that element again (no new element), so a later change reusing
        # them made the index's counters drift from its elements (a bank that then refused to save)
        core.task_counts = self.task_counts
        if self.store is None:  # the change created the store: drop it again
            core.store, core.index = None, None
            return
        assert self.journal is not None
        self.journal.undo(self.store)
        core.store = self.store
        assert self.index is not None  # made with the store
        self.index.undo(self.index_journal, self.index_live)  # (a rebuilt index is dropped: the old one is kept)
        core.index = self.index


@contextmanager
def transaction(core: BankCore) -> Iterator[Transaction]:
    """Run a change of a bank's ``core`` (caller holds its write lock): all of it, or none of it."""
    txn = Transaction(core)
    core.txn = txn
    try:
        yield txn
        core.version += 1  # a replica older than this is stale (see .replica)
    except BaseException:
        txn.close()
        txn.rollback()
        raise
    finally:
        core.txn = None
        txn.close()


@contextmanager
def writing(core: BankCore) -> Iterator[Transaction]:
    """A write of a bank: Ctrl-C held back (:func:`interrupts_deferred`), ``core``'s write lock
    held, and all of it or none of it (:func:`transaction`)."""
    with interrupts_deferred(), core.lock.write(), transaction(core) as txn:
        yield txn


@contextmanager
def interrupts_deferred() -> Iterator[None]:
    """Hold SIGINT back inside the block (main thread, default handler only), then raise it.

    Other threads never receive ``KeyboardInterrupt``, and a custom SIGINT handler is the
    caller's own business, so both are left alone.
    """
    if (threading.current_thread() is not threading.main_thread()
            or _signal.getsignal(_SIGINT) is not signal.default_int_handler):
        yield
        return
    received: list[int] = []
    previous = _signal.getsignal(_SIGINT)
    try:  # installed inside the try: an exception right after it still restores the handler
        _signal.signal(_SIGINT, lambda signum, frame: received.append(signum))
        yield
    finally:
        _signal.signal(_SIGINT, previous)
        if received:
            raise KeyboardInterrupt


def rebuild_index(core: BankCore) -> HnswIndex:
    """A fresh HNSW index over the bank's entries (where deleted elements would outnumber the live ones)."""
    store, c = core.store, core.config
    assert store is not None
    index = HnswIndex(c.space, store.dims["key_dim"], c.capacity, c.M, c.ef_construction, c.ef_search,
                      seed=c.seed or 0, initial=max(1, store.size))
    index.add(store.view("key").copy(), store.view("id").copy())
    return index
