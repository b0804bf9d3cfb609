"""What bank operations return."""

from __future__ import annotations

import attrs
import numpy as np

__all__ = ["AddResult", "QueryResult", "MergeResult"]


@attrs.frozen
class AddResult:
    """Outcome of :meth:`ExperienceBank.add`, one row per item given.

    Attributes:
        ids: the entry each item now lives in: a new id, the id it was deduplicated into,
            or -1 when the item itself could not be kept (a batch larger than capacity, whose new
            entries may then also evict an entry an earlier item refreshed).
        added: True where the item became a new entry.
        evicted: ids evicted to make room.
    """

    ids: np.ndarray
    added: np.ndarray
    evicted: np.ndarray


@attrs.frozen
class QueryResult:
    """Retrieved entries, ``(B, k)`` per field; padded slots have ``mask == False``, id -1, zero values and utility, distance inf."""

    ids: np.ndarray
    values: np.ndarray
    utility: np.ndarray
    distances: np.ndarray
    mask: np.ndarray


@attrs.frozen
class MergeResult:
    """``merged[survivor_id] = [ids folded into it]``; the folded ids no longer exist."""

    merged: dict[int, list[int]]

    @property
    def n_removed(self) -> int:
        return sum(len(v) for v in self.merged.values())
