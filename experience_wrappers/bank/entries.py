"""Columnar storage of bank entries, addressed by stable ids.

Entries live in dense numpy columns. Removing an entry moves the last row into its
slot, so the columns stay dense; ids never change, only slots do. This module knows
nothing about indexing, locking or retrieval.
"""

from __future__ import annotations

from collections.abc import Iterable
from itertools import repeat
from typing import Any

import numpy as np

from .idmap import SortedIds

__all__ = ["EntryStore", "COLUMNS"]

# name -> (dtype, per-entry width key or None for scalars)
COLUMNS: dict[str, tuple[type, str | None]] = {
    "id": (np.int64, None),
    "key": (np.float32, "key_dim"),
    "value": (np.float32, "value_dim"),
    "context": (np.float16, "context_dim"),
    "sample_logp": (np.float32, None),
    "utility": (np.float64, None),
    "n_retrieved": (np.int64, None),
    "n_credited": (np.int64, None),
    "last_retrieved": (np.int64, None),
    "task_id": (np.int64, None),
    "provenance": (np.int8, None),
    "created_step": (np.int64, None),
    "extractor_version": (np.int64, None),
}

DIM_NAMES = ("key_dim", "value_dim", "context_dim")

#: up to this many ids, :meth:`EntryStore.find` reads the dict (cheaper than a search of the sorted copy)
_FEW_IDS = 32


class EntryStore:
    """Dense, growable columns of entries with an id -> slot map.

    >>> s = EntryStore({"key_dim": 2, "value_dim": 1, "context_dim": 0})
    >>> slots = s.append(2)
    >>> s.cols["id"][slots] = [7, 8]; s.reindex(slots)
    >>> s.remove_ids([7]); s.size, s.slots_of([8]).tolist()
    (1, [0])
    """

    def __init__(self, dims: dict[str, int], initial: int = 64) -> None:
        self.dims = {name: int(dims[name]) for name in DIM_NAMES}
        self.size = 0
        self.cols: dict[str, np.ndarray] = {}
        for name, (dtype, width) in COLUMNS.items():
            shape: tuple[int, ...] = (initial,) if width is None else (initial, self.dims[width])
            self.cols[name] = np.zeros(shape, dtype=dtype)
        self._slot: dict[int, int] = {}
        #: the id -> slot map as sorted arrays, for :meth:`find` (None: built on the next find)
        self._sorted: SortedIds | None = None
        #: the undo journal of the running bank transaction (see :mod:`.transaction`), or None
        self.journal: Any = None

    # -- views -----------------------------------------------------------------
    def view(self, name: str) -> np.ndarray:
        """The live rows of one column (a view: do not keep it across writes)."""
        return self.cols[name][: self.size]

    def __contains__(self, entry_id: int | np.integer) -> bool:
        return int(entry_id) in self._slot

    def ids(self) -> np.ndarray:
        return self.view("id").copy()

    @property
    def id_count(self) -> int:
        """Ids in the id map (``size`` when consistent)."""
        return len(self._slot)

    def slots_or(self, entry_ids: list[int], default: int) -> list[int]:
        """The slot of each of ``entry_ids``, or ``default`` where one is not in the id map."""
        get = self._slot.get
        return [get(i, default) for i in entry_ids]

    def set_slot(self, entry_id: int, slot: int | None) -> None:
        """Put ``entry_id`` at ``slot`` in the id map (None: take it out); a rollback's step."""
        if slot is None:
            self._slot.pop(entry_id, None)
        else:
            self._slot[entry_id] = slot

    def slots_of(self, ids: Iterable[int]) -> np.ndarray:
        """Slots of ids that must exist (KeyError otherwise)."""
        return np.fromiter((self._slot[int(i)] for i in ids), dtype=np.int64)

    def find(self, ids: np.ndarray) -> np.ndarray:
        """Slots of ids (any shape), -1 where an id is not in the store.

        A few ids (one query key's ``k``) are looked up in the id map itself; more are searched
        in its sorted copy (:class:`~.idmap.SortedIds`, built on the first call after a change
        that could not update it in place), one vectorised step instead of scattered dict reads.
        """
        ids = np.asarray(ids)
        if ids.size <= _FEW_IDS:
            return np.fromiter(map(self._slot.get, ids.ravel().tolist(), repeat(-1)), dtype=np.int64,
                               count=ids.size).reshape(ids.shape)
        index = self._sorted
        if index is None or index.stale:
            index = self._sorted = SortedIds(self._slot)
        return index.lookup(ids)

    def forget_sorted(self) -> None:
        """Call after changing the id map other than through this class's methods (a rollback)."""
        self._sorted = None

    # -- writes ----------------------------------------------------------------
    def touch(self, slots: Any) -> None:
        """Call before writing into existing rows directly: the journal keeps them for a rollback."""
        if self.journal is not None:
            self.journal.touch_rows(self, slots)

    def reserve(self, n: int) -> None:
        """Grow the columns to hold ``n`` rows (no row changes: nothing to roll back)."""
        cap = len(self.cols["id"])
        if n > cap:
            new_cap = max(n, 2 * cap)
            for name, col in self.cols.items():
                grown = np.zeros((new_cap,) + col.shape[1:], dtype=col.dtype)
                grown[: self.size] = col[: self.size]
                self.cols[name] = grown

    def append(self, n: int) -> np.ndarray:
        """Reserve ``n`` zeroed rows at the end; returns their slots (ids set by the caller)."""
        need = self.size + n
        self.reserve(need)
        slots = np.arange(self.size, need, dtype=np.int64)
        self.touch(slots)  # rows freed earlier in a transaction may be written again
        for col in self.cols.values():
            col[slots] = 0
        self.size = need
        return slots

    def reindex(self, slots: np.ndarray) -> None:
        """Record the ids written into ``slots``."""
        ids = self.cols["id"]
        if self.journal is not None:
            self.journal.touch_ids(self, ids[np.asarray(slots, dtype=np.int64)])
        slots = np.asarray(slots, dtype=np.int64)
        try:
            for s in slots.tolist():
                self._slot[int(ids[s])] = int(s)
        finally:
            if self._sorted is not None and not self._sorted.append(ids[slots], slots):
                self._sorted = None  # not new ids past the last: rebuilt on the next find

    def remove_ids(self, ids: Iterable[int]) -> None:
        """Remove entries by id, keeping the columns dense (swap with the last row)."""
        moved: dict[int, int] = {}  # id -> its new slot (-1: removed), for the sorted copy
        try:
            for entry_id in ids:
                slot = self._slot[int(entry_id)]
                last = self.size - 1
                if self.journal is not None:
                    self.journal.touch_rows(self, [slot, last])
                    self.journal.touch_ids(self, [int(entry_id), int(self.cols["id"][last])])
                del self._slot[int(entry_id)]
                moved[int(entry_id)] = -1
                if slot != last:
                    for col in self.cols.values():
                        col[slot] = col[last]
                    self._slot[int(self.cols["id"][slot])] = slot
                    moved[int(self.cols["id"][slot])] = slot
                self.size = last
        finally:
            if self._sorted is not None and moved and not self._sorted.assign(
                    np.fromiter(moved.keys(), np.int64, len(moved)), np.fromiter(moved.values(), np.int64, len(moved))):
                self._sorted = None

    def load_columns(self, cols: dict[str, np.ndarray]) -> None:
        """Replace everything with ``cols`` (already validated)."""
        n = len(cols["id"])
        self.size = 0
        self.append(n)
        for name in COLUMNS:
            self.cols[name][:n] = cols[name]
        self._slot = {}
        self._sorted = None
        self.reindex(np.arange(n))

    def copy(self) -> EntryStore:
        """An independent copy of the live rows (id map included; no journal): a replica's entries."""
        other = EntryStore.__new__(EntryStore)
        other.dims = dict(self.dims)
        other.size = self.size
        other.cols = {name: col[: max(self.size, 1)].copy() for name, col in self.cols.items()}
        other._slot = dict(self._slot)
        other._sorted = None
        other.journal = None
        return other

    def snapshot(self) -> dict[str, np.ndarray]:
        """Copies of the live rows of every column."""
        return {name: self.view(name).copy() for name in COLUMNS}
