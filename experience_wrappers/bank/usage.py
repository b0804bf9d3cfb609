"""A bank's figures for logging: size, utilisation, utility and retrieval counts."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .core import BankCore

__all__ = ["bank_stats"]


def bank_stats(core: BankCore) -> dict[str, float]:
    """What :meth:`ExperienceBank.stats` returns (read under the bank's read lock)."""
    with core.lock.read():
        store = core.store
        size = 0 if store is None else store.size
        out = {"size": float(size), "capacity": float(core.config.capacity),
               "queries": float(core.tick), "tasks": float(len(core.task_counts))}
        if store is None or size == 0:
            out.update(utilisation=0.0, mean_utility=0.0, min_utility=0.0, max_utility=0.0,
                       mean_retrieved=0.0, max_retrieved=0.0)
            return out
        last = store.view("last_retrieved")
        recent = (last >= 0) & (last >= core.tick - core.config.utilisation_window)
        u = store.view("utility")
        r = store.view("n_retrieved")
        out.update(utilisation=float(recent.mean()), mean_utility=float(u.mean()),
                   min_utility=float(u.min()), max_utility=float(u.max()),
                   mean_retrieved=float(r.mean()), max_retrieved=float(r.max()))
        return out
