"""The files a :class:`~integrations.sb3.CRLCheckpointCallback` checkpoint writes beside SB3's zip, and
their names: the experience folder, the self-imitation replay, the algorithm that saved it (so that
:func:`~integrations.sb3.load_crl` refuses another by name) and where SB3 puts the ``VecNormalize``
statistics."""

from __future__ import annotations

import json
import re
from pathlib import Path

from stable_baselines3.common.base_class import BaseAlgorithm
from stable_baselines3.common.vec_env import VecEnv

from experience_wrappers.errors import RunFileError

from .discovery import one_manager

__all__ = ["experience_dir_of", "replay_file_of", "meta_file_of", "vec_normalize_file_of", "save_checkpoint",
           "algorithm_of_checkpoint"]

#: a checkpoint zip's name (SB3's ``CheckpointCallback``): its prefix and steps, for the files beside it
_CHECKPOINT = re.compile(r"^(?P<prefix>.*)_(?P<steps>\d+)_steps\.zip$")


def experience_dir_of(model_zip: str | Path) -> Path:
    """The experience folder saved beside a model zip (``x_1000_steps.zip`` -> ``x_1000_steps_experience``).

    >>> experience_dir_of("runs/rl_model_1000_steps.zip").as_posix()
    'runs/rl_model_1000_steps_experience'
    """
    return _beside(model_zip, "_experience")


def replay_file_of(model_zip: str | Path) -> Path:
    """The self-imitation replay saved beside a checkpoint zip (``x_1000_steps.zip`` -> ``x_1000_steps_replay.npz``).

    >>> replay_file_of("runs/rl_model_1000_steps.zip").as_posix()
    'runs/rl_model_1000_steps_replay.npz'
    """
    return _beside(model_zip, "_replay.npz")


def vec_normalize_file_of(model_zip: Path) -> Path | None:
    """Where SB3's ``CheckpointCallback(save_vecnormalize=True)`` writes the statistics of a checkpoint zip."""
    m = _CHECKPOINT.match(model_zip.name)
    return None if m is None else model_zip.with_name(f"{m['prefix']}_vecnormalize_{m['steps']}_steps.pkl")


def save_checkpoint(model_zip: Path, model: BaseAlgorithm, env: VecEnv | None = None) -> None:
    """Write what :func:`load_crl` restores beside a checkpoint zip, before the zip: the experience
    folder (:func:`experience_dir_of`), the algorithm's name (:func:`meta_file_of`) and the self-imitation replay (:func:`replay_file_of`; an old
    file of that name is removed where there is no replay, so that it is never read as this one's). A zip of
    that name already there (an earlier run's checkpoint at the same steps) is removed first, so that a save
    that fails half-way never leaves it beside this one's experience, where it would load as one checkpoint."""
    manager = one_manager(env or model.get_env(), "the checkpoint")
    model_zip.unlink(missing_ok=True)
    manager.save(experience_dir_of(model_zip))
    meta = meta_file_of(model_zip)
    tmp = meta.with_name(meta.name + ".tmp")
    tmp.write_text(json.dumps({"algorithm": type(model).__name__}))
    tmp.replace(meta)
    replay_file = replay_file_of(model_zip)
    if manager.replay is not None:
        manager.replay.save(replay_file)
    else:
        replay_file.unlink(missing_ok=True)


def meta_file_of(model_zip: str | Path) -> Path:
    """What saved a checkpoint zip (``x_1000_steps.zip`` -> ``x_1000_steps_meta.json``: its algorithm).

    >>> meta_file_of("runs/rl_model_1000_steps.zip").as_posix()
    'runs/rl_model_1000_steps_meta.json'
    """
    return _beside(model_zip, "_meta.json")


def algorithm_of_checkpoint(model_zip: Path) -> str | None:
    """The algorithm's name that saved a checkpoint zip (None: a checkpoint of an earlier version, without it).

    Raises:
        RunFileError: the file beside the zip cannot be read.
    """
    try:
        saved = json.loads(meta_file_of(model_zip).read_bytes())
    except FileNotFoundError:
        return None
    except (OSError, ValueError, RecursionError) as exc:
        raise RunFileError(f"cannot load the checkpoint {str(model_zip)!r}: {meta_file_of(model_zip).name} cannot be "
                           f"read ({exc})") from exc
    name = saved.get("algorithm") if isinstance(saved, dict) else None
    if not isinstance(name, str):
        raise RunFileError(f"cannot load the checkpoint {str(model_zip)!r}: {meta_file_of(model_zip).name} names no "
                           "algorithm")
    return name


def _beside(model_zip: str | Path, suffix: str) -> Path:
    """The file named as ``model_zip`` without ``.zip``, plus ``suffix``, in its folder."""
    p = Path(model_zip)
    return p.with_name((p.name[:-4] if p.name.endswith(".zip") else p.name) + suffix)
