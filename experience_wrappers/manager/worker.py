"""``async`` mode's worker thread: it processes the queued episodes, merges and flushes in order."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .manager import ExperienceManager

__all__ = ["run_worker"]

log = logging.getLogger(__name__)


def run_worker(mgr: ExperienceManager) -> None:
    """Take the queue's items until a ``stop``; an error is kept for the actor's next call."""
    while True:
        kind, item = mgr._queue.get()
        try:
            if kind == "episode":
                mgr._process_episode(item)
            elif kind == "merge":
                mgr._merge()
            elif kind == "flush":
                item.set()
            elif kind == "stop":
                return
        except BaseException as exc:  # surfaced to the actor at its next call
            log.exception("experience manager worker failed")
            mgr._error = exc
            if kind == "flush":
                item.set()
        finally:
            mgr._queue.task_done()
