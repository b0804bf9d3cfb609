"""Schedules over training: SB3's training progress; ``linear`` lives in the core schedule module.

:func:`linear` is :func:`experience_wrappers.schedule.linear`, re-exported here.
"""

from __future__ import annotations

from stable_baselines3.common.base_class import BaseAlgorithm

from experience_wrappers.schedule import linear

__all__ = ["linear", "training_progress"]


def training_progress(model: BaseAlgorithm, num_timesteps: int) -> float:
    """Fraction of the current ``learn`` call done, in [0, 1]."""
    total = getattr(model, "_total_timesteps", 0) or 1
    return min(1.0, num_timesteps / total)
