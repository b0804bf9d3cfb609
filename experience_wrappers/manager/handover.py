"""``process`` mode's hand-over: credited episodes to the learner process, its messages back.

The manager credits an episode on the caller's thread (:func:`.crediting.attribute`); the
episode and its credits wait here until the next hand-over (every ``handover_every`` episodes,
or earlier: :func:`poll`). The learner process answers with proposed entries (written into the
bank), training marks, figures and errors (:func:`on_learner`).
"""

from __future__ import annotations

import time
from functools import partial
from typing import TYPE_CHECKING, Any

from .crediting import attribute
from .episode import Episode
from .process import LearnerProcessError

if TYPE_CHECKING:
    from .manager import ExperienceManager

__all__ = ["ask", "hand_over", "on_learner", "poll", "take_stats"]


def hand_over(mgr: ExperienceManager, ep: Episode) -> None:
    """Process mode: credit here; the episode and its credits wait for the next hand-over
    (every ``handover_every`` episodes, or earlier: :func:`poll`)."""
    t0 = time.perf_counter()
    with mgr._handover_lock:
        attribute(mgr, ep)  # the credits it gives are collected in mgr._credits
        credits, mgr._credits = mgr._credits, []
        mgr._waiting.append((ep, credits))
        if len(mgr._waiting) >= mgr.config.handover_every:
            poll(mgr)
    with mgr._stats_lock:
        mgr.busy_seconds += time.perf_counter() - t0


def poll(mgr: ExperienceManager) -> None:
    """:meth:`ExperienceManager.poll <experience_wrappers.manager.ExperienceManager.poll>`'s body
    (its docstring says what, when and in which order)."""
    if mgr._process is not None:
        with mgr._handover_lock:
            if mgr._waiting:
                mgr._process.send("episodes", mgr._waiting)
                mgr._waiting = []
            mgr._process.drain(partial(on_learner, mgr))
        mgr._raise_worker_error()


def ask(mgr: ExperienceManager, kind: str, *payload: Any, timeout: float | None = None) -> tuple[Any, ...]:
    """Process mode: send a request and apply messages until its answer comes."""
    assert mgr._process is not None
    mgr._raise_worker_error()
    poll(mgr)  # the waiting episodes go first: the request is answered after them
    token = mgr._process.token()
    mgr._process.send(kind, *payload, token)
    answer = mgr._process.wait_for(token, partial(on_learner, mgr), timeout)  # LearnerProcessError, TimeoutError
    take_stats(mgr, answer[-1])
    mgr._raise_worker_error()
    return answer


def take_stats(mgr: ExperienceManager, stats: dict[str, Any]) -> None:
    """Keep the learner process's latest figures; its episode counts become this side's."""
    mgr._learner_stats = stats
    with mgr._stats_lock:
        mgr.episodes_processed = int(stats["episodes_processed"]) + mgr._processed_offset
        mgr._episodes_failed = int(stats.get("episodes_failed", 0)) + mgr._failed_offset


def on_learner(mgr: ExperienceManager, kind: str, payload: tuple[Any, ...]) -> None:
    """One message of the learner process."""
    if kind == "add":  # an ingested episode's entries
        proposal, version, utility, _ = payload
        mgr._write([(proposal, version)], utility)
    elif kind == "adds":  # the entries of a batch of episodes, one bank.add
        mgr._write(payload[0], None)
    elif kind == "trained":
        ids, step = payload
        mgr.bank.mark_trained(ids, step)
    elif kind == "stats":
        take_stats(mgr, payload[0])
    elif kind == "error":
        mgr._error = LearnerProcessError(f"the learner process failed:\n{payload[2]}")
    elif kind in ("done", "saved"):
        take_stats(mgr, payload[-1])
