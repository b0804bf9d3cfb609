"""The id -> slot map of the entries as sorted numpy arrays, for lookups of many ids at once.

:class:`~experience_wrappers.bank.entries.EntryStore` keeps the map in a dict (the truth, which
its writes and the transaction journal change); :class:`SortedIds` is a copy of it that
:meth:`EntryStore.find <experience_wrappers.bank.entries.EntryStore.find>` searches with
``np.searchsorted``: a query's ids (``k`` per key) are looked up in one vectorised step
instead of one dict lookup each, whose scattered reads cost more than the HNSW search for
large batches. New ids are larger than every id before them, so adds append; a removed id
keeps its place with slot -1 until the copy is rebuilt.
"""

from __future__ import annotations

import numpy as np

__all__ = ["SortedIds"]


class SortedIds:
    """Ids in ascending order and their slots (-1: removed), built from an id -> slot dict.

    >>> m = SortedIds({7: 0, 3: 1})
    >>> m.lookup(np.array([[3, 7, 5]])).tolist()
    [[1, 0, -1]]
    >>> m.append(np.array([9]), np.array([2])), m.assign(np.array([7]), np.array([-1]))
    (True, True)
    >>> m.lookup(np.array([9, 7])).tolist()
    [2, -1]
    """

    def __init__(self, slot_of: dict[int, int]) -> None:
        n = len(slot_of)
        ids = np.fromiter(slot_of.keys(), dtype=np.int64, count=n)
        slots = np.fromiter(slot_of.values(), dtype=np.int64, count=n)
        order = np.argsort(ids, kind="stable")
        room = max(64, 2 * n)
        self.ids = np.empty(room, dtype=np.int64)
        self.slots = np.empty(room, dtype=np.int64)
        self.ids[:n], self.slots[:n] = ids[order], slots[order]
        self.n = n  # ids held, removed ones included
        self.removed = 0

    @property
    def stale(self) -> bool:
        """Whether removed ids outnumber half the live ones (then rebuilding is cheaper than searching them)."""
        return self.removed > max(64, (self.n - self.removed) // 2)

    def lookup(self, ids: np.ndarray) -> np.ndarray:
        """Slots of ``ids`` (any shape), -1 where an id is absent."""
        ids = np.asarray(ids)
        if self.n == 0:
            return np.full(ids.shape, -1, dtype=np.int64)
        held = self.ids[: self.n]
        pos = np.searchsorted(held, ids)
        np.minimum(pos, self.n - 1, out=pos)
        slots = self.slots[pos]
        slots[held[pos] != ids] = -1
        return slots

    def append(self, ids: np.ndarray, slots: np.ndarray) -> bool:
        """Add new ids with their slots; False (nothing added) unless they are ascending and
        larger than every id held: the caller then rebuilds."""
        ids = np.asarray(ids, dtype=np.int64)
        m = len(ids)
        if m == 0:
            return True
        if (self.n and ids[0] <= self.ids[self.n - 1]) or (m > 1 and not bool((ids[1:] > ids[:-1]).all())):
            return False
        need = self.n + m
        if need > len(self.ids):
            room = max(need, 2 * len(self.ids))
            for name in ("ids", "slots"):
                grown = np.empty(room, dtype=np.int64)
                grown[: self.n] = getattr(self, name)[: self.n]
                setattr(self, name, grown)
        self.ids[self.n:need], self.slots[self.n:need] = ids, slots
        self.n = need
        return True

    def assign(self, ids: np.ndarray, slots: np.ndarray) -> bool:
        """Set the slots of ids held (-1 removes one); False (nothing set) if an id is not held."""
        ids = np.asarray(ids, dtype=np.int64)
        if len(ids) == 0:
            return True
        held = self.ids[: self.n]
        pos = np.minimum(np.searchsorted(held, ids), max(self.n - 1, 0))
        if self.n == 0 or not bool((held[pos] == ids).all()):
            return False
        slots = np.asarray(slots, dtype=np.int64)
        self.removed += int(np.count_nonzero(slots < 0)) - int(np.count_nonzero(self.slots[pos] < 0))
        self.slots[pos] = slots
        return True
