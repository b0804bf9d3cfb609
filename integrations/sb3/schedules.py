"""SB3's training progress, which the schedules (:mod:`experience_wrappers.schedule`) follow, and where a
run's ``learn`` goes on from."""

from __future__ import annotations

from stable_baselines3.common.base_class import BaseAlgorithm

__all__ = ["training_progress", "first_learn"]


def training_progress(model: BaseAlgorithm, num_timesteps: int) -> float:
    """SB3's own progress, in [0, 1]: the run's steps over its steps before this ``learn`` plus this call's
    (so each call ends at 1, and a second call of as many steps starts half-way)."""
    total = getattr(model, "_total_timesteps", 0) or 1
    return min(1.0, num_timesteps / total)


def first_learn(model: BaseAlgorithm) -> bool:
    """SB3's ``reset_num_timesteps`` for a run's ``learn``: True for a fresh model (its TensorBoard logs get a
    folder of their own, as SB3 gives a new run), False once it has trained (its steps and logs go on)."""
    return not model.num_timesteps
