"""The manager's running figures for logging (:meth:`ExperienceManager.stats`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .manager import ExperienceManager

__all__ = ["manager_stats"]


def manager_stats(mgr: ExperienceManager) -> dict[str, float]:
    """What :meth:`ExperienceManager.stats` returns (after a :meth:`~ExperienceManager.poll`).

    Run scope's manager (an entry layout: :class:`~experience_wrappers.trials.TrialMemory`'s) is handed
    trials' entries, not episodes: its ``episodes_*`` stay 0, its outcomes are the trials' successes as
    they are credited (``guided_outcome``, ``free_outcome``), and it reports no ``guided_ratio`` (the
    groups decide which trials are guided)."""
    mgr.poll()  # process mode: the waiting episodes go to the learner process
    fig = mgr.backend.figures()
    pending = mgr.pending
    with mgr.stats_lock:
        out: dict[str, float] = {
            "episodes_submitted": float(mgr.episodes_submitted),
            "episodes_processed": float(fig.episodes_processed),
            "entries_added": float(mgr.writer.entries_added),
            "extractor_updates": float(fig.extractor_version + fig.ssl_updates),
            "extractor_version": float(fig.extractor_version),
            "ssl_updates": float(fig.ssl_updates),
            "queue": float(pending),
            "busy_seconds": float(fig.busy_seconds),
        }
        if mgr.layout is None:  # (run scope's layout: its groups decide which trials are guided, not this schedule)
            out["guided_ratio"] = float(mgr.guided_ratio)
        for name, mean in mgr.outcomes.means().items():
            key = name if name == "delta" else f"{name}_outcome"
            out[key] = float("nan") if mean is None else mean
        out.update({f"loss_{k}": v for k, v in fig.last_losses.items()})
        if fig.learner_busy_seconds is not None:  # a learner process's own seconds (busy_seconds: this side's)
            out["learner_busy_seconds"] = fig.learner_busy_seconds
    if mgr.paired.credited or mgr.paired.open_instances or mgr.paired.dropped_instances:
        out.update(mgr.paired.stats())  # only once instances are replayed (paired credit)
    return out
