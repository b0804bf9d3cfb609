"""How often the extractor trained on each bank entry, and when last: the learner's own count.

The extractor's outcome update weighs each sample by how often its entry was already
trained on (:func:`~experience_wrappers.extractor.losses.count_aware_weights`). Those counts
belong to the learner, wherever it runs (a thread beside the actor, or a process of its
own): the bank stores entries, and the learner never reads it back. The learner learns of
the bank's changes that matter here from the manager: evictions (:meth:`TrainingCounts.forget`)
and merges (:meth:`TrainingCounts.after_merge`, which sums a cluster's counts into its
survivor as the bank's merge rule combines the entries, :func:`~experience_wrappers.bank.merge.combine_cluster`).
An entry the learner never trained on counts 0, last trained never (-1).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import numpy as np

__all__ = ["TrainingCounts"]


class TrainingCounts:
    """Per entry id: ``n_trained`` (training passes so far) and ``last_trained`` (the extractor
    version of the latest pass, -1: never).

    >>> c = TrainingCounts()
    >>> c.mark(np.array([3, 4]), 1); c.mark(np.array([3]), 2)
    >>> c.get(np.array([3, 4, 9]))
    (array([2, 1, 0]), array([ 2,  1, -1]))
    >>> c.after_merge({4: [3]}); c.get(np.array([4]))
    (array([3]), array([2]))
    """

    def __init__(self) -> None:
        self.counts: dict[int, tuple[int, int]] = {}  # id -> (n_trained, last_trained)

    def __len__(self) -> int:
        return len(self.counts)

    def get(self, ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``n_trained`` and ``last_trained`` of ``ids`` (0 and -1 for entries never trained on)."""
        rows = [self.counts.get(int(i), (0, -1)) for i in np.asarray(ids).tolist()]
        return (np.array([r[0] for r in rows], dtype=np.int64).reshape(-1),
                np.array([r[1] for r in rows], dtype=np.int64).reshape(-1))

    def mark(self, ids: np.ndarray, step: int) -> None:
        """Count one training pass on each of ``ids`` at extractor version ``step``."""
        for i in np.asarray(ids).tolist():
            n, _ = self.counts.get(int(i), (0, -1))
            self.counts[int(i)] = (n + 1, int(step))

    def forget(self, ids: Iterable[int]) -> None:
        """Entries that left the bank (evicted or removed)."""
        for i in np.asarray(list(ids), dtype=np.int64).reshape(-1).tolist():
            self.counts.pop(i, None)

    def after_merge(self, merged: Mapping[int, list[int]]) -> None:
        """A merged cluster's survivor takes the sum of its members' counts and the latest pass;
        the merged-away entries are gone."""
        for survivor, gone in merged.items():
            members = [self.counts.pop(int(g), (0, -1)) for g in gone if int(g) != int(survivor)]
            own = self.counts.get(int(survivor), (0, -1))
            total = own[0] + sum(m[0] for m in members)
            if total:
                self.counts[int(survivor)] = (total, max([own[1], *(m[1] for m in members)]))

    def arrays(self) -> dict[str, np.ndarray]:
        """The counts as arrays (saved in ``samples.npz``)."""
        ids = np.fromiter(self.counts, dtype=np.int64, count=len(self.counts))
        vals = np.array(list(self.counts.values()), dtype=np.int64).reshape(-1, 2)
        return {"trained_ids": ids, "n_trained": vals[:, 0].copy(), "last_trained": vals[:, 1].copy()}

    @classmethod
    def from_arrays(cls, ids: np.ndarray, n_trained: np.ndarray, last_trained: np.ndarray) -> TrainingCounts:
        """Counts read back from :meth:`arrays`.

        Raises:
            ValueError: arrays of different lengths, or counts out of range.
        """
        ids, n, last = (np.asarray(a).reshape(-1) for a in (ids, n_trained, last_trained))
        if not (len(ids) == len(n) == len(last)):
            raise ValueError(f"training counts of different lengths ({len(ids)}, {len(n)}, {len(last)})")
        if len(ids) and (n.min() < 0 or last.min() < -1):
            raise ValueError("training counts must be >= 0 and last_trained >= -1")
        out = cls()
        out.counts = {int(i): (int(a), int(b)) for i, a, b in zip(ids.tolist(), n.tolist(), last.tolist(),
                                                                    strict=True)}
        return out
