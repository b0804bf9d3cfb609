"""Proposed entries into the bank: one ``add`` per batch of proposals, evictions sent to the learner."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..bank import AddResult
from .episode_entries import Proposal, add_arguments

if TYPE_CHECKING:
    from .manager import ExperienceManager

__all__ = ["record_write", "write_entries"]


def write_entries(mgr: ExperienceManager, proposals: list[tuple[Proposal, int]], utility: float | None) -> None:
    """Write proposed entries (each proposal with its extractor version) into the bank in one
    ``add``; evicted entries leave the learner's samples.

    One ``add`` for several episodes' proposals (process mode) differs from one per episode
    only in a full bank: the batch's new entries do not evict each other, where writes one
    by one could evict an earlier episode's fresh entries. If the bank refuses the batch,
    each proposal is written on its own and the first refusal raised after the others.
    """
    if len(proposals) > 1:
        try:
            res = mgr.bank.add(**add_arguments(proposals), utility=utility)
        except Exception:  # noqa: BLE001 - a refused add changes nothing: write them one by one
            res = None
        if res is not None:
            record_write(mgr, res)
            return
    refused: Exception | None = None
    for one in proposals:
        try:
            res = mgr.bank.add(**add_arguments([one]), utility=utility)
        except Exception as exc:  # noqa: BLE001 - raised after the others are written
            refused = refused or exc
            continue
        record_write(mgr, res)
    if refused is not None:
        raise refused


def record_write(mgr: ExperienceManager, res: AddResult) -> None:
    """After a write: evicted entries leave the learner's samples; the count of entries added."""
    if mgr._learner is not None:
        mgr._learner.forget(res.evicted)
    elif res.evicted.size:
        mgr._process.send("forget", res.evicted)  # type: ignore[union-attr]
    with mgr._stats_lock:
        mgr.entries_added += int(res.added.sum())
