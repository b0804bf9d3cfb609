"""Save and resume a Complementary RL run: the model plus the manager (bank, extractor, schedules)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from stable_baselines3 import PPO
from stable_baselines3.common.base_class import BaseAlgorithm
from stable_baselines3.common.vec_env import VecEnv

from .discovery import find_experience

__all__ = ["save_crl", "load_crl"]


def save_crl(path: str | Path, model: BaseAlgorithm, env: VecEnv | None = None) -> Path:
    """Write ``path/model.zip`` and ``path/experience/`` (bank, extractor, manager state).

    The manager's queue is processed first, so nothing in flight is lost.
    """
    path = Path(path)
    path.mkdir(parents=True, exist_ok=True)
    venv = env or model.get_env()
    if venv is None:
        raise ValueError("no env: pass the training env")
    managers, _ = find_experience(venv)
    if len(managers) != 1:
        raise ValueError(f"save_crl supports one manager per env, found {len(managers)}")
    managers[0].save(path / "experience")
    model.save(path / "model.zip")
    return path


def load_crl(path: str | Path, env: VecEnv, algorithm: type[BaseAlgorithm] = PPO, **kwargs: Any) -> BaseAlgorithm:
    """Load the model onto ``env`` and restore the env's manager from ``path/experience``.

    ``env`` must be built as for training (same wrappers, same spaces); its manager takes
    the saved bank, extractor and schedules, so ``model.learn(..., reset_num_timesteps=False,
    callback=CRLCallback())`` resumes the run.
    """
    path = Path(path)
    managers, _ = find_experience(env)
    if len(managers) != 1:
        raise ValueError(f"load_crl supports one manager per env, found {len(managers)}")
    managers[0].restore(path / "experience")
    return algorithm.load(path / "model.zip", env=env, **kwargs)
