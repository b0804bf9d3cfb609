"""Which entries each task holds, worked out once per task after a write: the task-filtered search's input.

A task-filtered query needs the task's entries: their slots, for the exact search that
answers a task of at most :data:`~experience_wrappers.bank.search.EXACT_SCOPE` entries, and
their ids, for hnswlib's filter on a larger task. Both are found on first use and kept
until the next change to the entries (:meth:`TaskMembers.clear`, called by every write and
by a rollback).
"""

from __future__ import annotations

import numpy as np

from .entries import EntryStore

__all__ = ["TaskMembers"]


class TaskMembers:
    """Per task: the slots and ids of its entries in one :class:`~.entries.EntryStore`, cached.

    >>> store = EntryStore({"key_dim": 2, "value_dim": 1, "prior_dim": 0, "context_dim": 0})
    >>> slots = store.append(3)
    >>> store.cols["id"][slots] = [10, 11, 12]
    >>> store.cols["task_id"][slots] = [5, 6, 5]
    >>> store.reindex(slots)
    >>> members = TaskMembers()
    >>> members.slots(store, 5).tolist(), sorted(members.ids(store, 5))
    ([0, 2], [10, 12])
    """

    def __init__(self) -> None:
        self._slots: dict[int, np.ndarray] = {}
        self._ids: dict[int, frozenset[int]] = {}

    def clear(self) -> None:
        """Forget every task's members: the entries changed."""
        self._slots.clear()
        self._ids.clear()

    def slots(self, store: EntryStore, task: int) -> np.ndarray:
        """The slots of ``task``'s entries, in slot order (read-only)."""
        s = self._slots.get(task)
        if s is None:
            s = np.flatnonzero(store.view("task_id") == task)
            s.flags.writeable = False
            self._slots[task] = s
        return s

    def ids(self, store: EntryStore, task: int) -> frozenset[int]:
        """The ids of ``task``'s entries (hnswlib's filter tests membership in it)."""
        s = self._ids.get(task)
        if s is None:
            s = frozenset(store.view("id")[self.slots(store, task)].tolist())
            self._ids[task] = s
        return s
