"""Save and resume a Complementary RL run: the model plus the manager (bank, extractor, schedules)."""

from __future__ import annotations

import io
import json
import pickle
import uuid
import warnings
import zipfile
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Protocol

import gymnasium as gym
from stable_baselines3 import PPO
from stable_baselines3.common.base_class import BaseAlgorithm
from stable_baselines3.common.save_util import load_from_zip_file
from stable_baselines3.common.vec_env import VecEnv, VecNormalize, unwrap_vec_normalize

from experience_wrappers.bank.folder import META, READ_ATTEMPTS, check_folder_path
from experience_wrappers.bank.save_load import replaced_folder
from experience_wrappers.errors import RunFileError
from experience_wrappers.manager import ExperienceManager, ExperienceSource
from experience_wrappers.replay import SuccessReplay

from .checkpoint_files import (
    algorithm_of_checkpoint,
    experience_dir_of,
    replay_file_of,
    vec_normalize_file_of,
)
from .discovery import one_manager
from .guards import check_vec_env
from .lifecycle import advantage_normalisation_as_configured, take_statistics
from .method_settings import resolve_algorithm

__all__ = ["save_crl", "load_crl", "save_experience", "save_run", "load_run", "REPLAY_FILE", "VEC_NORMALIZE_FILE",
           "RUN_FORMAT", "METHOD_FILE", "SavesExperience", "read_method_file", "check_same_save"]


#: The self-imitation replay's file name inside a :func:`save_crl` folder.
REPLAY_FILE = "replay.npz"
#: the ``VecNormalize`` statistics of a run whose env has one (pickled without its envs, as SB3's ``VecNormalize.save``)
VEC_NORMALIZE_FILE = "vecnormalize.pkl"
#: a :func:`save_crl` folder's format (its ``meta.json``) and the names a save writes there
RUN_FORMAT, RUN_VERSION = "complementary-rl-run", 1
RUN_NAMES = frozenset({"model.zip", "experience", REPLAY_FILE, VEC_NORMALIZE_FILE, META})
#: the settings file of a :meth:`~integrations.sb3.ComplementaryRL.save` folder (a run folder besides)
METHOD_FILE = "method.json"


class SavesExperience(Protocol):
    """What :func:`save_run` writes as ``experience/``: a manager, or a run-scope run's ``TrialMemory``."""

    def save(self, folder: Path) -> Any: ...


def save_experience(path: str | Path, model: BaseAlgorithm, env: VecEnv | None = None) -> Path:
    """Write the manager of ``env`` (default: the model's) to ``path``: bank, extractor, manager state.

    The manager's queue is processed first, so nothing in flight is lost.
    """
    return one_manager(env or model.get_env(), "save_experience").save(path)


def save_crl(path: str | Path, model: BaseAlgorithm, env: VecEnv | None = None,
             replay: SuccessReplay | None = None, *, lineage: list[str] | None = None) -> Path:
    """Write a run folder: ``path/model.zip``, ``path/experience/`` (bank, extractor, manager
    state), the self-imitation replay as ``path/replay.npz`` (``replay``, or else the manager's
    own, ``manager.replay``, which :class:`CRLCallback` keeps, if any), the statistics of a
    ``VecNormalize`` in the env's wrappers as ``path/vecnormalize.pkl`` and ``path/meta.json`` (with
    the algorithm's name). :func:`load_crl` puts them all back.

    All or nothing: the run is written into a new folder beside ``path`` that then takes
    its place in one step, so a failed or killed save (a full disk while the model is
    written) leaves the previous run as it was, never a new bank beside an old model. Files of
    yours in the folder (notes, logs) are kept. A folder that holds anything but a run saved
    by this function is refused (:class:`~experience_wrappers.errors.RunFileError`), so an
    unrelated ``model.zip`` is never replaced.

    ``lineage``: the save ids of the run that saves (see :func:`save_run`); with it, a stale
    save (the folder holds a save the run neither loaded nor wrote) is refused.

    The model is saved with its own ``normalize_advantage`` (which :class:`CRLCallback`
    turns off while it trains), so ``PPO.load`` alone gives a plain PPO agent.
    """
    manager = one_manager(env or model.get_env(), "save_crl")
    return save_run(path, model, manager, manager.replay if replay is None else replay, lineage=lineage)


def save_run(path: str | Path, model: BaseAlgorithm, manager: SavesExperience | None,
             replay: SuccessReplay | None = None, *, files: Callable[[str], Mapping[str, bytes]] | None = None,
             own: frozenset[str] = RUN_NAMES, lineage: list[str] | None = None, overwrite: bool = False) -> Path:
    """Write a run folder whole and atomically: ``model.zip``, ``experience/`` (where there is a
    ``manager``), ``replay.npz`` (where there is a ``replay``), ``vecnormalize.pkl`` (where the
    model's env has a ``VecNormalize``), ``meta.json`` with a new save id and the algorithm's name,
    and ``files(save_id)`` (name -> bytes; ``own`` must name them).

    The folder is swapped in by :func:`~experience_wrappers.bank.save_load.replaced_folder`: a
    folder that is not empty and not a run folder is refused, the user's files in it are kept,
    and a failed save leaves the previous run as it was.

    ``lineage``: the save ids this run descends from (the save it was loaded from, then those it
    wrote), as the bank keeps them. When it is not empty, a folder holding a save outside it
    is refused (:class:`~experience_wrappers.errors.RunFileError` naming both saves): another
    run saved there since, and saving would drop it. The new save's id is appended once
    committed. An empty lineage (a run never loaded nor saved) is refused a folder that holds another
    run's save unless ``overwrite`` (the user names the folder to replace); without a lineage
    (``None``: :func:`save_crl` called without one) any run folder may be replaced.
    """
    path = Path(path)
    check_folder_path(path, replaced=True)  # before the earlier layout is adopted into it
    if path.suffix == ".zip" and not path.exists():  # (SB3's model.save writes a file there)
        warnings.warn(f"a run is saved as a folder: {str(path)!r} will be a folder named so, holding model.zip and "
                      "the experience; load it with load_crl or ComplementaryRL.load", UserWarning, stacklevel=3)
    _adopt_earlier_run_folder(path)
    save_id = uuid.uuid4().hex[:16]
    with replaced_folder(path, RUN_FORMAT, own.__contains__, RunFileError) as tmp:
        _check_not_stale(path, lineage, overwrite)  # under the folder's lock: no save can commit in between
        if METHOD_FILE not in own and (path / METHOD_FILE).is_file():
            raise RunFileError(f"refusing to save into {str(path)!r}: it holds a ComplementaryRL run (its "
                               f"{METHOD_FILE}), which this save would leave with another run's files, so that it "
                               "no longer loads; save that run with its own run.save, or save this one into "
                               "another folder")
        if manager is not None:
            manager.save(tmp / "experience")
        if replay is not None:
            replay.save(tmp / REPLAY_FILE)
        venv = model.get_env()
        vec = unwrap_vec_normalize(venv) if venv is not None else None
        if vec is not None:
            (tmp / VEC_NORMALIZE_FILE).write_bytes(pickle.dumps(vec))  # VecNormalize pickles without its envs
        with advantage_normalisation_as_configured(model):
            model.save(tmp / "model.zip")
        for name, data in (files(save_id) if files is not None else {}).items():
            (tmp / name).write_bytes(data)
        (tmp / META).write_text(json.dumps({"format": RUN_FORMAT, "version": RUN_VERSION, "save_id": save_id,
                                            "replay": replay is not None, "vec_normalize": vec is not None,
                                            "algorithm": type(model).__name__}))
    if lineage is not None:
        lineage.append(save_id)
    return path


def read_method_file(folder: Path) -> dict[str, Any]:
    """The settings a :meth:`ComplementaryRL.save <integrations.sb3.ComplementaryRL.save>` wrote
    (``method.json``), of either scope.

    Raises:
        FileNotFoundError: the folder has no ``method.json``.
        RunFileError: it cannot be read, or holds no run's settings.
    """
    path = folder / METHOD_FILE
    if not path.is_file():
        zips = folder.is_dir() and any(folder.glob("*.zip"))  # save_crl's model.zip, a checkpoint's
        raise FileNotFoundError(f"{path} not found: ComplementaryRL.load reads a folder written by ComplementaryRL.save"
                                + ("; this one holds model zips: a save_crl folder or a CRLCheckpointCallback's "
                                   "checkpoint loads with load_crl" if zips else ""))
    try:
        saved = json.loads(path.read_text())
    except (OSError, ValueError, RecursionError) as exc:
        raise RunFileError(f"cannot load run from {str(folder)!r}: {METHOD_FILE} cannot be read ({exc})") from exc
    if not isinstance(saved, dict) or "algorithm" not in saved:
        raise RunFileError(f"cannot load run from {str(folder)!r}: {METHOD_FILE} is not a run's settings")
    return saved


def check_same_save(folder: Path, method_save_id: Any, lineage: list[str]) -> None:
    """Refuse a load whose ``method.json`` (of save ``method_save_id``) and run files (the save
    ``lineage`` now starts with) are of two saves: the folder was replaced while it was read.
    A ``method.json`` of an earlier version has no save id and passes."""
    if method_save_id is not None and lineage[:1] != [method_save_id]:
        if not lineage and not (folder / META).is_file():
            raise RunFileError(f"cannot load run from {str(folder)!r}: {META} is missing (the save wrote it, with the "
                               "save's id); restore it, or load a whole save")
        raise RunFileError(f"cannot load run from {str(folder)!r}: {METHOD_FILE} is of save {method_save_id}, the "
                           f"run's files of save {lineage[0] if lineage else None} (the folder was replaced while it "
                           "was read, or written by save_crl since): load it again")


def _check_not_stale(path: Path, lineage: list[str] | None, overwrite: bool = False) -> None:
    """Refuse to replace a run save that the saving run neither loaded nor wrote (the bank's rule), unless
    ``overwrite``; without a lineage (``None``) nothing is checked."""
    if lineage is None or overwrite:
        return
    meta = _run_meta(path) if (path / META).is_file() else None
    current = None if meta is None else meta.get("save_id")
    if not isinstance(current, str) or current in lineage:
        return
    mine = (f" (this run's latest save: {lineage[-1]}; another run saved there since, or the folder is another "
            "run's)") if lineage else ""
    raise RunFileError(
        f"refusing to save into {str(path)!r}: it holds run save {current}, which this run neither loaded nor "
        f"wrote{mine}, so saving would drop run save {current}. Load that save to go on from it, save into a new "
        "folder, or pass overwrite=True to replace it")


def load_crl(path: str | Path, env: VecEnv, algorithm: type[BaseAlgorithm] | str = PPO, *,
             lineage: list[str] | None = None, replace_experience: bool = False, **kwargs: Any) -> BaseAlgorithm:
    """Load the model onto ``env`` and restore the env's manager (bank, extractor, schedules).

    ``path`` is a folder written by :func:`save_crl`, or a checkpoint zip written by
    :class:`~integrations.sb3.CRLCheckpointCallback` (its experience folder beside it).
    ``env`` must be a VecEnv built as for training (same wrappers, same spaces); its manager
    takes the saved bank, extractor and schedules (and the self-imitation replay, where the
    folder holds one), so ``model.learn(..., reset_num_timesteps=False, callback=CRLCallback())``
    resumes the run.

    All or nothing: the model, the replay and the manager state are all read and checked
    before the manager changes, so a load that fails (another observation space, a damaged
    ``model.zip``) leaves the env's bank as it was. A run folder that a save replaces while
    it is read is read again.

    ``lineage``: where given, it becomes ``[the save id read]`` (empty for a checkpoint zip or
    a folder of an earlier version): pass it to :func:`save_crl` to refuse stale saves.
    ``replace_experience``: load onto an env whose bank already holds entries, which the saved
    ones replace (refused otherwise: build the env on a new ``ExperienceBank()``, or save its run
    first). Other keyword arguments go to the algorithm's ``load``.
    """
    check_vec_env(env, "load_crl")
    algorithm = resolve_algorithm(algorithm)  # (a class, or its name in SB3 or sb3-contrib: "PPO", "RecurrentPPO")
    if not isinstance(replace_experience, bool):
        raise TypeError(f"replace_experience must be a bool, got {replace_experience!r}")
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
    manager = one_manager(env, "load_crl")
    if len(manager.bank) and not replace_experience:
        raise ValueError(f"the env's bank holds {len(manager.bank)} entries, which load_crl would replace with the "
                         f"saved run's: build the env on a new ExperienceBank() to load onto (or save its run first), "
                         "or pass replace_experience=True")
    return _read_run(path, model_zip, experience, manager.restore, env, algorithm, kwargs, lineage, manager)[0]


def load_run(path: str | Path, env: VecEnv, algorithm: type[BaseAlgorithm] = PPO, *,
             lineage: list[str] | None = None, restore: Callable[[Path], Any] | None = None,
             **kwargs: Any) -> tuple[BaseAlgorithm, SuccessReplay | None]:
    """The model (onto ``env``) and the replay of a run folder written without a manager
    (:func:`save_run` with none, or with a run-scope memory), read as :func:`load_crl` reads
    (one save, whole).

    ``restore``: called with the folder's ``experience/`` after the model was read (a memory's
    ``load``, which checks before it changes anything). ``lineage`` and ``kwargs`` as for
    :func:`load_crl`.
    """
    check_vec_env(env, "load_run")
    path = Path(path)
    if not (path / "model.zip").is_file():
        raise FileNotFoundError(f"{path / 'model.zip'} not found: not a saved run folder")
    return _read_run(path, path / "model.zip", path / "experience", restore, env, algorithm, kwargs, lineage)


def _read_run(path: Path, model_zip: Path, experience: Path | None, restore: Callable[[Path], Any] | None,
              env: VecEnv, algorithm: type[BaseAlgorithm], kwargs: dict[str, Any],
              lineage: list[str] | None, manager: ExperienceSource | None = None,
              ) -> tuple[BaseAlgorithm, SuccessReplay | None]:
    """Read the model, the replay, the ``VecNormalize`` statistics and (with ``restore``) the
    experience, all of one save; the env's statistics and manager change only once all are read."""
    folder = path.is_dir()
    for _ in range(READ_ATTEMPTS):
        meta = _run_meta(path) if folder else None
        saved_by = meta.get("algorithm") if meta is not None else None if folder else algorithm_of_checkpoint(model_zip)
        if isinstance(saved_by, str) and saved_by != algorithm.__name__:
            raise ValueError(f"cannot load run from {str(path)!r} as {algorithm.__name__}: it was saved by {saved_by}; "
                             f"pass its algorithm ({saved_by}), nothing was changed")
        model = _load_model(algorithm, model_zip, env, kwargs)  # checks the spaces: nothing has changed yet
        replay_file = path / REPLAY_FILE if folder else replay_file_of(model_zip)
        replay = _read_replay(path, replay_file, meta)
        stats = _read_statistics(path, path / VEC_NORMALIZE_FILE if folder else vec_normalize_file_of(model_zip), meta)
        if restore is not None and experience is not None:
            restore(experience)  # reads and checks everything before it changes what it restores
        if not folder or _run_meta(path) == meta:
            break
        # a save replaced the run folder while it was read: read it again, whole
    else:
        raise RunFileError(f"cannot load run from {str(path)!r}: the folder kept changing while it was read "
                           "(saves in progress?)")
    _restore_statistics(env, stats, path)
    if replay is not None and manager is not None:
        manager.replay = replay
    if lineage is not None:
        save_id = meta.get("save_id") if meta is not None else None
        lineage[:] = [save_id] if isinstance(save_id, str) else []
    return model, replay


def _read_replay(path: Path, replay_file: Path, meta: dict[str, Any] | None) -> SuccessReplay | None:
    """The saved self-imitation replay (None where there is none); a missing or damaged file is a :class:`RunFileError`."""
    if meta is not None and meta.get("replay") and not replay_file.exists():
        raise RunFileError(f"cannot load run from {str(path)!r}: {REPLAY_FILE} is missing (the save wrote "
                           "self-imitation's replay there); restore the file, or load a whole save")
    if not replay_file.exists():
        return None
    try:
        return SuccessReplay.load(replay_file)
    except (zipfile.BadZipFile, OSError, EOFError, KeyError, ValueError) as exc:
        raise RunFileError(f"cannot load run from {str(path)!r}: {replay_file.name} cannot be read "
                           f"({type(exc).__name__}: {exc}); nothing was changed") from exc


def _read_statistics(path: Path, stats_file: Path | None, meta: dict[str, Any] | None) -> VecNormalize | None:
    """The saved ``VecNormalize`` (its statistics; None where none was saved), read and checked."""
    if meta is not None and meta.get("vec_normalize") and (stats_file is None or not stats_file.exists()):
        raise RunFileError(f"cannot load run from {str(path)!r}: {VEC_NORMALIZE_FILE} is missing (the save wrote the "
                           "env's VecNormalize statistics there); restore it, or load a whole save")
    if stats_file is None or not stats_file.exists():
        return None
    try:
        saved = pickle.loads(stats_file.read_bytes())  # noqa: S301 (a run this library wrote, as SB3's VecNormalize.load)
    except (pickle.UnpicklingError, EOFError, AttributeError, ValueError, OSError) as exc:
        raise RunFileError(f"cannot load run from {str(path)!r}: {stats_file.name} cannot be read ({exc})") from exc
    if not isinstance(saved, VecNormalize):
        raise RunFileError(f"cannot load run from {str(path)!r}: {stats_file.name} holds a "
                           f"{type(saved).__name__}, not VecNormalize statistics")
    return saved


def _restore_statistics(env: VecEnv, saved: VecNormalize | None, path: Path) -> None:
    """Copy saved ``VecNormalize`` statistics into the env's own; say where one of the two is missing."""
    vec = unwrap_vec_normalize(env)
    if saved is not None and vec is not None:
        take_statistics(vec, saved, copied=False)
    elif saved is not None:
        warnings.warn(f"the run in {str(path)!r} was trained under VecNormalize (its statistics are saved), but the "
                      "env has none: observations reach the policy unnormalised. Build the env as for training, "
                      "VecNormalize included", UserWarning, stacklevel=3)
    elif vec is not None and vec.norm_obs:
        warnings.warn(f"the env has a VecNormalize, but the run in {str(path)!r} saved no statistics (a checkpoint "
                      "of CRLCheckpointCallback(save_vecnormalize=False), or a run saved without one): its "
                      "statistics start again from the env's own", UserWarning, stacklevel=3)


def _load_model(algorithm: type[BaseAlgorithm], model_zip: Path, env: VecEnv, kwargs: dict[str, Any]) -> BaseAlgorithm:
    """The model from the zip's bytes (read once), onto ``env``; a damaged zip is a :class:`RunFileError`."""
    data = model_zip.read_bytes()
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as z:
            bad = z.testzip()  # every member's CRC
            if "data" not in z.namelist():  # (a zip cut short can read as the archive inside it)
                raise zipfile.BadZipFile("it holds no SB3 model (no 'data' member): cut short?")
        if bad is not None:
            raise zipfile.BadZipFile(f"{bad} is damaged (CRC mismatch)")
        return algorithm.load(io.BytesIO(data), env=env, **kwargs)
    except ValueError as exc:
        if "spaces do not match" not in str(exc):
            raise
        saved, _, _ = load_from_zip_file(io.BytesIO(data), load_data=True, print_system_info=False)
        assert saved is not None  # (SB3 checked the spaces from it)
        name = "observation" if str(exc).startswith("Observation") else "action"
        raise ValueError(f"cannot load run from {str(model_zip.parent)!r} onto this env: "
                         f"{_space_difference(saved[f'{name}_space'], getattr(env, f'{name}_space'))}; build the env "
                         "as for training (the same env and wrappers); nothing was changed") from None
    except (zipfile.BadZipFile, EOFError, KeyError, json.JSONDecodeError, UnicodeDecodeError, RuntimeError) as exc:
        raise RunFileError(f"cannot load run from {str(model_zip.parent)!r}: {model_zip.name} cannot be read "
                           f"({type(exc).__name__}: {exc}); nothing was changed") from exc


def _space_difference(saved: gym.Space, given: gym.Space) -> str:
    """How the space a model was saved with differs from an env's, key by key for Dict spaces."""
    said: list[str] = []
    if isinstance(saved, gym.spaces.Dict) and isinstance(given, gym.spaces.Dict):
        ours, theirs = set(saved.spaces), set(given.spaces)
        said = [f"{key!r}: saved {saved[key]}, the env's {given[key]}" for key in sorted(ours & theirs)
                if saved[key] != given[key]]
        said += [f"{key!r} only in the saved model" for key in sorted(ours - theirs)]
        said += [f"{key!r} only in the env" for key in sorted(theirs - ours)]
    return "the observation keys differ: " + "; ".join(said) if said else \
        f"the model was trained on {saved}, the env gives {given}"


def _run_meta(path: Path) -> dict[str, Any] | None:
    """A run folder's ``meta.json`` (None for a folder of an earlier version, which has none)."""
    try:
        meta = json.loads((path / META).read_bytes())
    except FileNotFoundError:
        return None
    except (OSError, ValueError, RecursionError) as exc:
        raise RunFileError(f"cannot load run from {str(path)!r}: {META} cannot be read ({exc})") from exc
    if not isinstance(meta, dict) or meta.get("format") != RUN_FORMAT:
        raise RunFileError(f"cannot load run from {str(path)!r}: {META} is not that of a save_crl folder")
    if not isinstance(meta.get("version"), int) or meta["version"] > RUN_VERSION:
        raise RunFileError(f"cannot load run from {str(path)!r}: format version {meta.get('version')!r}, this "
                           f"library reads up to {RUN_VERSION}; upgrade the library")
    return meta


def _adopt_earlier_run_folder(path: Path) -> None:
    """Give a run folder of an earlier version (model.zip, experience/, no meta.json) its
    ``meta.json``, so that a new save may replace it (and a ``ComplementaryRL`` folder saved
    without experience by an earlier version: model.zip and its method.json); any other folder
    is left for :func:`replaced_folder` to refuse."""
    if not path.is_dir() or (path / META).exists():
        return
    try:
        if (path / "model.zip").is_file() and not (path / "experience").exists():
            settings = json.loads((path / METHOD_FILE).read_bytes())
            manager_meta = {"format": ExperienceManager.STATE_FORMAT} if (
                isinstance(settings, dict) and settings.get("experience") is False) else None
        else:
            manager_meta = json.loads((path / "experience" / META).read_bytes())
    except (OSError, ValueError, RecursionError):
        return
    if isinstance(manager_meta, dict) and manager_meta.get("format") == ExperienceManager.STATE_FORMAT:
        (path / META).write_text(json.dumps({"format": RUN_FORMAT, "version": RUN_VERSION, "save_id": None}))
