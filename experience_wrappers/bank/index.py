"""A thin, bounded wrapper over an hnswlib index whose labels are entry ids."""

from __future__ import annotations

import copy
from collections.abc import Callable
from pathlib import Path
from typing import Any

import hnswlib
import numpy as np

__all__ = ["HnswIndex", "INDEX_SLACK", "TIE_TOLERANCE", "tied"]

#: the index holds at most this many times the bank's capacity, deleted elements included
INDEX_SLACK = 2
#: two distances tie (:meth:`HnswIndex.search_checked`) within this relative (and absolute) margin:
#: hnswlib's float32 distances of equal keys are equal, those of near-equal keys within rounding
TIE_TOLERANCE = 1e-6


def tied(kth: Any, next_: Any) -> Any:
    """Whether the ``k``-th distance and the one after it tie (floats, or arrays of them elementwise):
    hnswlib may have missed a nearer entry (:meth:`HnswIndex.search_checked`)."""
    return next_ <= kth * (1.0 + TIE_TOLERANCE) + TIE_TOLERANCE


class HnswIndex:
    """hnswlib index with a hard element bound: live entries and deleted ones together.

    The index starts small and doubles up to :attr:`bound` (``INDEX_SLACK`` x ``capacity``)
    elements; removed labels are marked deleted and stay in the graph, which routes through
    them. A deleted element's slot is never reused: hnswlib's ``replace_deleted`` repairs the
    graph around the replaced node in a way that can leave it unreachable where many keys are
    at equal distances (one-hot keys: a quarter of exact matches missed after six cycles of
    20 tasks added and removed; ``tests/test_bank_churn.py``). When the deleted elements would
    outnumber the live ones, the owner rebuilds the index from its live entries
    (:meth:`needs_rebuild`).
    """

    def __init__(self, space: str, dim: int, capacity: int, M: int, ef_construction: int,
                 ef_search: int, seed: int = 0, initial: int = 1024) -> None:
        self.space, self.dim, self.capacity = space, int(dim), int(capacity)
        self.M, self.ef_construction, self.ef_search, self.seed = M, ef_construction, ef_search, seed
        self._index = hnswlib.Index(space=space, dim=self.dim)
        self._index.init_index(max_elements=min(self.bound, initial), M=M,
                               ef_construction=ef_construction, random_seed=seed)
        self._index.set_ef(ef_search)
        self._ef = ef_search
        self.live = 0  # non-deleted elements
        self.deleted = 0  # marked-deleted elements, still in the graph
        self.journal: list[tuple[str, np.ndarray]] | None = None  # a change's adds and removals (see undo)

    @property
    def raw(self) -> hnswlib.Index:
        """The hnswlib index itself: for a reader's single-key path (set its beam with
        :meth:`use_ef` first) and for the load checks of its build parameters and stored keys."""
        return self._index

    def use_ef(self, ef: int) -> None:
        """Set hnswlib's query beam width (a call into hnswlib only when it changes)."""
        if ef != self._ef:
            self._index.set_ef(ef)
            self._ef = ef

    @property
    def bound(self) -> int:
        """Most elements the index holds, deleted ones included."""
        return INDEX_SLACK * self.capacity

    def needs_rebuild(self, n: int) -> bool:
        """Whether, with ``n`` more elements, the deleted ones would outnumber the live ones: rebuild
        from the live entries instead.

        Deleted elements still take part in the graph's links; where they pile up around keys
        that many entries share (every trial of a run starts at one state), a new element can
        end up linked only from deleted ones and be missed. A rebuild costs an insert per live
        element and follows at least as many removals, so it adds at most one insert per removal
        (a stall of about 0.5 s at 4,096 entries of 64 dims, ``benchmarks/perf/bank_churn.py``); and the
        index never holds more than twice the live entries, within :attr:`bound`.
        """
        return self.deleted > self.live + n

    @property
    def max_elements(self) -> int:
        return int(self._index.get_max_elements())

    @property
    def element_count(self) -> int:
        """Elements hnswlib holds, deleted ones included (``live + deleted`` when consistent)."""
        return int(self._index.get_current_count())

    def add(self, keys: np.ndarray, ids: np.ndarray) -> None:
        n = len(ids)
        if n == 0:
            return
        if self.live + n > self.capacity or self.needs_rebuild(n):
            raise RuntimeError("index would exceed its bound; evict or rebuild first")  # bank invariant
        needed = self.live + self.deleted + n
        if needed > self.max_elements:
            self._index.resize_index(min(self.bound, max(needed, 2 * self.max_elements)))
        if self.journal is not None:
            self.journal.append(("add", np.array(ids, dtype=np.int64)))
        self._index.add_items(keys, ids, num_threads=1)
        self.live += n

    def remove(self, ids: np.ndarray) -> None:
        if self.journal is not None:
            self.journal.append(("remove", np.array(ids, dtype=np.int64)))
        for i in np.asarray(ids).tolist():
            self._index.mark_deleted(int(i))
        self.live -= len(ids)
        self.deleted += len(ids)

    def undo(self, journal: list[tuple[str, np.ndarray]], live: int) -> None:
        """Take back a failed change's adds and removals (``journal``, newest last), back to ``live``
        live elements: the elements it added are marked deleted (those hnswlib took before it
        failed), those it removed unmarked. Only flags change, so nothing is allocated: a change that
        failed for want of memory is still taken back.
        """
        for op, ids in reversed(journal):
            flag = self._index.mark_deleted if op == "add" else self._index.unmark_deleted
            for i in ids.tolist():
                try:
                    flag(int(i))
                except RuntimeError:  # an add that failed before hnswlib took this one; a removal that
                    pass  # failed before it marked this one
        self.live = int(live)
        self.deleted = self.element_count - self.live

    def search(self, queries: np.ndarray, k: int,
               filter_fn: Callable[[int], bool] | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Labels and distances of the ``k`` nearest; raises RuntimeError if hnswlib can't fill k."""
        self.use_ef(max(self.ef_search, k))
        if filter_fn is None:
            labels, dists = self._index.knn_query(queries, k=k, num_threads=1)
        else:
            labels, dists = self._index.knn_query(queries, k=k, num_threads=1, filter=filter_fn)
        return labels.astype(np.int64), dists.astype(np.float64)

    def search_checked(self, queries: np.ndarray, k: int, eligible: int,
                       filter_fn: Callable[[int], bool] | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """:meth:`search`, and which rows hnswlib may have answered wrongly: ``(labels, dists, unsure)``.

        Where many entries share one key (the start state of every task), their elements link
        mostly to each other, and a search that enters them can stay there: an exact match
        outside them is missed, with nothing to tell (200 equal keys: missed in 10 of 10 banks;
        ``tests/test_bank_ties.py``). Such a search returns the equal keys up to ``k`` and beyond, so
        this one asks hnswlib for ``k + 1`` (where ``eligible``, the entries the search may return,
        exceed ``k``) and marks a row ``unsure`` when its ``k``-th and ``(k + 1)``-th distances tie:
        its owner answers those rows exactly. Raises RuntimeError as :meth:`search` does.
        """
        extra = int(k < eligible)
        labels, dists = self.search(queries, k + extra, filter_fn)
        if not extra:
            return labels, dists, np.zeros(len(labels), dtype=bool)
        return labels[:, :k], dists[:, :k], tied(dists[:, k - 1], dists[:, k])

    def copy(self) -> HnswIndex:
        """An independent copy of the graph (hnswlib's own serialisation, in memory): a replica's index."""
        other = copy.copy(self)
        other._index = copy.copy(self._index)
        other._index.set_ef(self.ef_search)
        other._ef = self.ef_search
        other.journal = None
        return other

    def save(self, path: Path) -> None:
        self._index.save_index(str(path))

    @classmethod
    def load(cls, path: Path, space: str, dim: int, capacity: int, M: int, ef_construction: int,
             ef_search: int, seed: int, live: int, deleted: int) -> HnswIndex:
        self = cls.__new__(cls)
        self.space, self.dim, self.capacity = space, int(dim), int(capacity)
        self.M, self.ef_construction, self.ef_search, self.seed = M, ef_construction, ef_search, seed
        self._index = hnswlib.Index(space=space, dim=self.dim)
        self._index.load_index(str(path), max_elements=max(live + deleted, 1))
        self._index.set_ef(ef_search)
        self._ef = ef_search
        self.live, self.deleted = int(live), int(deleted)
        self.journal = None
        if int(self._index.get_current_count()) != live + deleted:
            raise ValueError(
                f"index holds {self._index.get_current_count()} elements, metadata says {live + deleted}"
            )
        return self
