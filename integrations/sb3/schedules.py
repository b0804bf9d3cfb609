"""Schedules over training: a value that is constant or linear in the progress, and the progress."""

from __future__ import annotations

from stable_baselines3.common.base_class import BaseAlgorithm

__all__ = ["linear", "training_progress"]


def linear(schedule: tuple[float, float] | float, progress: float) -> float:
    """A constant, or ``(start, end)`` interpolated linearly at ``progress`` (clipped to [0, 1]).

    >>> linear(0.3, 0.5), linear((1.0, 0.0), 0.25), linear((0.5, 0.8), 2.0)
    (0.3, 0.75, 0.8)
    """
    if isinstance(schedule, (int, float)):
        return float(schedule)
    start, end = schedule
    return float(start + (end - start) * min(max(progress, 0.0), 1.0))


def training_progress(model: BaseAlgorithm, num_timesteps: int) -> float:
    """Fraction of the current ``learn`` call done, in [0, 1]."""
    total = getattr(model, "_total_timesteps", 0) or 1
    return min(1.0, num_timesteps / total)
