"""Save and resume a Complementary RL run: the model plus the manager (bank, extractor, schedules)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from stable_baselines3 import PPO
from stable_baselines3.common.base_class import BaseAlgorithm
from stable_baselines3.common.vec_env import VecEnv

from experience_wrappers.replay import SuccessReplay

from .discovery import find_experience
from .lifecycle import advantage_normalisation_as_configured

__all__ = ["save_crl", "load_crl", "save_experience", "experience_dir_of", "REPLAY_FILE"]


#: The self-imitation replay's file name inside a :func:`save_crl` folder.
REPLAY_FILE = "replay.npz"


def experience_dir_of(model_zip: str | Path) -> Path:
    """The experience folder saved beside a model zip (``x_1000_steps.zip`` -> ``x_1000_steps_experience``).

    >>> experience_dir_of("runs/rl_model_1000_steps.zip").as_posix()
    'runs/rl_model_1000_steps_experience'
    """
    p = Path(model_zip)
    return p.with_name((p.name[:-4] if p.name.endswith(".zip") else p.name) + "_experience")


def save_experience(path: str | Path, model: BaseAlgorithm, env: VecEnv | None = None) -> Path:
    """Write the manager of ``env`` (default: the model's) to ``path``: bank, extractor, manager state.

    The manager's queue is processed first, so nothing in flight is lost.
    """
    venv = env or model.get_env()
    if venv is None:
        raise ValueError("no env: pass the training env")
    managers, _ = find_experience(venv)
    if len(managers) != 1:
        raise ValueError(f"saving supports one manager per env, found {len(managers)}")
    return managers[0].save(path)


def save_crl(path: str | Path, model: BaseAlgorithm, env: VecEnv | None = None,
             replay: SuccessReplay | None = None) -> Path:
    """Write ``path/model.zip`` and ``path/experience/`` (bank, extractor, manager state), and
    the self-imitation replay beside them as ``path/replay.npz``: ``replay``, or else the
    manager's own (``manager.replay``, which :class:`CRLCallback` keeps), if any.
    :func:`load_crl` puts it back on the manager.

    The model is saved with its own ``normalize_advantage`` (which :class:`CRLCallback`
    turns off while it trains), so ``PPO.load`` alone gives a plain PPO agent.
    """
    path = Path(path)
    path.mkdir(parents=True, exist_ok=True)
    save_experience(path / "experience", model, env)
    if replay is None:
        replay = find_experience(env or model.get_env())[0][0].replay
    if replay is not None:
        replay.save(path / REPLAY_FILE)
    with advantage_normalisation_as_configured(model):
        model.save(path / "model.zip")
    return path


def load_crl(path: str | Path, env: VecEnv, algorithm: type[BaseAlgorithm] = PPO, **kwargs: Any) -> BaseAlgorithm:
    """Load the model onto ``env`` and restore the env's manager (bank, extractor, schedules).

    ``path`` is a folder written by :func:`save_crl`, or a checkpoint zip written by
    :class:`~integrations.sb3.CRLCheckpointCallback` (its experience folder beside it).
    ``env`` must be built as for training (same wrappers, same spaces); its manager takes
    the saved bank, extractor and schedules (and the self-imitation replay, where the folder
    holds one), so ``model.learn(..., reset_num_timesteps=False, callback=CRLCallback())``
    resumes the run.
    """
    path = Path(path)
    if path.is_dir():
        model_zip, experience = path / "model.zip", path / "experience"
    else:
        model_zip = path if path.suffix == ".zip" else path.with_name(path.name + ".zip")
        experience = experience_dir_of(model_zip)
    for need in (model_zip, experience):
        if not need.exists():
            raise FileNotFoundError(f"{need} not found: load_crl needs a save_crl folder or a "
                                    "CRLCheckpointCallback zip with its _experience folder beside it")
    managers, _ = find_experience(env)
    if len(managers) != 1:
        raise ValueError(f"load_crl supports one manager per env, found {len(managers)}")
    replay_file = model_zip.parent / REPLAY_FILE if path.is_dir() else None
    replay = SuccessReplay.load(replay_file) if replay_file is not None and replay_file.exists() else None
    managers[0].restore(experience)
    model = algorithm.load(model_zip, env=env, **kwargs)
    if replay is not None:
        managers[0].replay = replay
    return model
