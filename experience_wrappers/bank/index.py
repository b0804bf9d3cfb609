"""A thin, bounded wrapper over an hnswlib index whose labels are entry ids."""

from __future__ import annotations

import copy
from collections.abc import Callable
from pathlib import Path

import hnswlib
import numpy as np

__all__ = ["HnswIndex"]


class HnswIndex:
    """hnswlib index with deletion reuse and a hard element bound.

    The index starts small and doubles up to ``capacity``; deleted labels are marked and
    their slots reused by later adds (``allow_replace_deleted``), so the index never grows
    past ``capacity`` elements however many entries come and go.
    """

    def __init__(self, space: str, dim: int, capacity: int, M: int, ef_construction: int,
                 ef_search: int, seed: int = 0, initial: int = 1024) -> None:
        self.space, self.dim, self.capacity = space, int(dim), int(capacity)
        self.M, self.ef_construction, self.ef_search, self.seed = M, ef_construction, ef_search, seed
        self._index = hnswlib.Index(space=space, dim=self.dim)
        self._index.init_index(max_elements=min(self.capacity, initial), M=M,
                               ef_construction=ef_construction, random_seed=seed,
                               allow_replace_deleted=True)
        self._index.set_ef(ef_search)
        self._ef = ef_search
        self.live = 0  # non-deleted elements
        self.deleted = 0  # marked-deleted slots available for reuse

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
        if self.live + n > self.capacity:
            raise RuntimeError("index would exceed capacity; evict first")  # bank invariant
        reuse = min(n, self.deleted)
        needed = self.live + self.deleted + (n - reuse)
        if needed > self.max_elements:
            self._index.resize_index(min(self.capacity, max(needed, 2 * self.max_elements)))
        # reuse deleted slots first, then fresh ones
        if reuse:
            self._index.add_items(keys[:reuse], ids[:reuse], num_threads=1, replace_deleted=True)
        if n > reuse:
            self._index.add_items(keys[reuse:], ids[reuse:], num_threads=1)
        self.live += n
        self.deleted -= reuse

    def remove(self, ids: np.ndarray) -> None:
        for i in np.asarray(ids).tolist():
            self._index.mark_deleted(int(i))
        self.live -= len(ids)
        self.deleted += len(ids)

    def search(self, queries: np.ndarray, k: int,
               filter_fn: Callable[[int], bool] | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Labels and distances of the ``k`` nearest; raises RuntimeError if hnswlib can't fill k."""
        ef = max(self.ef_search, k)
        if ef != self._ef:  # set_ef only when it changes: it is a call into hnswlib on every query
            self._index.set_ef(ef)
            self._ef = ef
        if filter_fn is None:
            labels, dists = self._index.knn_query(queries, k=k, num_threads=1)
        else:
            labels, dists = self._index.knn_query(queries, k=k, num_threads=1, filter=filter_fn)
        return labels.astype(np.int64), dists.astype(np.float64)

    def copy(self) -> HnswIndex:
        """An independent copy of the graph (hnswlib's own serialisation, in memory): a replica's index."""
        other = copy.copy(self)
        other._index = copy.copy(self._index)
        other._index.set_ef(self.ef_search)
        other._ef = self.ef_search
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
        self._index.load_index(str(path), max_elements=max(live + deleted, 1),
                               allow_replace_deleted=True)
        self._index.set_ef(ef_search)
        self._ef = ef_search
        self.live, self.deleted = int(live), int(deleted)
        if int(self._index.get_current_count()) != live + deleted:
            raise ValueError(
                f"index holds {self._index.get_current_count()} elements, metadata says {live + deleted}"
            )
        return self
