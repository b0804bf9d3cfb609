"""The one writer of proposed entries into the bank: one ``add`` per batch of proposals, and merges."""

from __future__ import annotations

import threading
from collections.abc import Callable

import numpy as np

from ..bank import AddResult, ExperienceBank
from .episode_entries import Proposal, add_arguments

__all__ = ["EntryWriter"]


class EntryWriter:
    """Writes the learner's proposed entries into the bank and runs its merges.

    Every backend writes through it (:mod:`.backend`); it returns what the learner must
    forget (evicted entries) or fold (merged ones), and counts the entries added.

    Args:
        bank: the bank to write into.
        lock: guards ``entries_added`` (the manager's stats lock).
    """

    def __init__(self, bank: ExperienceBank, lock: threading.Lock) -> None:
        self.bank = bank
        self.lock = lock
        self.entries_added = 0

    def write(self, proposals: list[tuple[Proposal, int]], utility: float | None,
              forget: Callable[[np.ndarray], None]) -> np.ndarray:
        """Write proposed entries (each proposal with its extractor version) in one ``add``;
        the entries evicted to make room go to ``forget`` (they leave the learner's samples).
        Returns the ids of the rows written, in order (a row the bank folded into a near
        duplicate gives that entry's id).

        One ``add`` for several episodes' proposals (process mode) differs from one per episode
        only in a full bank: the batch's new entries do not evict each other, where writes one
        by one could evict an earlier episode's fresh entries. If the bank refuses the batch,
        each proposal is written on its own and the first refusal raised after the others.
        """
        if len(proposals) > 1:
            try:
                res = self.bank.add(**add_arguments(proposals), utility=utility)
            except Exception:  # noqa: BLE001 - a refused add changes nothing: write them one by one
                res = None
            if res is not None:
                return self._record(res, forget)
        refused: Exception | None = None
        ids = []
        for one in proposals:
            try:
                res = self.bank.add(**add_arguments([one]), utility=utility)
            except Exception as exc:  # noqa: BLE001 - raised after the others are written
                refused = refused or exc
                continue
            ids.append(self._record(res, forget))
        if refused is not None:
            raise refused
        return np.concatenate(ids) if ids else np.zeros(0, np.int64)

    def merge(self) -> dict[int, list[int]]:
        """Merge the bank's near duplicates; returns survivor id -> the ids merged into it."""
        return self.bank.merge().merged

    def _record(self, res: AddResult, forget: Callable[[np.ndarray], None]) -> np.ndarray:
        if res.evicted.size:
            forget(res.evicted)
        with self.lock:
            self.entries_added += int(res.added.sum())
        return np.asarray(res.ids, np.int64)
