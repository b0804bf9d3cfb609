"""SB3's training progress, which the schedules (:mod:`experience_wrappers.schedule`) follow."""

from __future__ import annotations

from stable_baselines3.common.base_class import BaseAlgorithm

__all__ = ["training_progress"]


def training_progress(model: BaseAlgorithm, num_timesteps: int) -> float:
    """Fraction of the current ``learn`` call done, in [0, 1]."""
    total = getattr(model, "_total_timesteps", 0) or 1
    return min(1.0, num_timesteps / total)
