"""A manager's save and restore: bank, extractor, samples and schedules in one folder.

:meth:`ExperienceManager.save` and :meth:`ExperienceManager.restore` call these. The folder is
replaced whole and atomically (:func:`~experience_wrappers.bank.save_load.replaced_folder`);
a restore reads and checks every file before it changes anything.
"""

from __future__ import annotations

import json
import logging
import re
import warnings
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..bank import ExperienceBank
from ..bank.folder import READ_ATTEMPTS, read_consistent
from ..bank.save_load import replaced_folder, sha256_file
from ..credit import FreeBaseline
from ..errors import ManagerFileError
from ..keys.fingerprint import key_fingerprint, same_keys
from ..schedule import Schedule
from .layout import layout_of, saved_layout_matches

if TYPE_CHECKING:
    from .manager import ExperienceManager

__all__ = ["own_state_name", "restore_manager", "save_manager", "write_state"]

log = logging.getLogger(__name__)


def own_state_name(name: str) -> bool:
    """Whether a top-level name in a manager folder is one :meth:`ExperienceManager.save` writes."""
    return name in ("meta.json", "manager.json", "extractor.pt", "samples.npz", "bank") or bool(
        re.fullmatch(r"extractor_task-?\d+\.pt", name))


def save_manager(mgr: ExperienceManager, path: str | Path) -> Path:
    """What :meth:`ExperienceManager.save` does: flush, then write the folder whole and atomically."""
    mgr.flush()
    path = Path(path)
    with replaced_folder(path, mgr.STATE_FORMAT, own_state_name, ManagerFileError) as tmp:
        write_state(mgr, tmp)
    return path


def write_state(mgr: ExperienceManager, tmp: Path) -> None:
    """Write the manager's files into ``tmp`` (the new folder, before it replaces the old one)."""
    mgr.bank.save(tmp / "bank")
    bank_save_id = json.loads((tmp / "bank" / "meta.json").read_bytes()).get("save_id")
    task_files = mgr.backend.save(tmp)  # extractors and samples.npz (in process mode, the learner process's)
    fig = mgr.backend.figures()
    state = {
        "format": mgr.STATE_FORMAT, "version": mgr.STATE_VERSION,
        "config": mgr.config.to_dict(), "extractor_config": mgr.extractor_config.to_dict(),
        "key_dim": mgr.key_encoder.key_dim, "key_encoder": type(mgr.key_encoder).__name__,
        "key_fingerprint": key_fingerprint(mgr.key_encoder, mgr.observation_space),
        "observation_layout": layout_of(mgr.observation_space),  # (its keys are keys of this layout)
        **mgr.schedule.state_dict(),  # guided_ratio, progress, rollouts
        "episodes_submitted": mgr.episodes_submitted, "episodes_processed": fig.episodes_processed,
        "entries_added": mgr.writer.entries_added, "ssl_updates": fig.ssl_updates,
        "extractor_version": fig.extractor_version, "task_extractors": task_files,
        "baseline": mgr.baseline.state_dict(),
        "success_reported": mgr.success_reports.seen,  # (a loaded run's failures are failures, not returns)
        "bank_save_id": bank_save_id,  # a restore checks that the bank it read is this save's
        "files": {n: sha256_file(tmp / n) for n in ("extractor.pt", "samples.npz", *task_files.values())},
    }
    (tmp / "manager.json").write_text(json.dumps(state, indent=1))
    files = {**state["files"], "manager.json": sha256_file(tmp / "manager.json")}
    (tmp / "meta.json").write_text(json.dumps({"format": mgr.STATE_FORMAT, "version": mgr.STATE_VERSION,
                                               "files": files}))


def restore_manager(mgr: ExperienceManager, path: str | Path) -> None:
    """What :meth:`ExperienceManager.restore` does: read and check everything, then replace."""
    path = Path(path)
    for _ in range(READ_ATTEMPTS):
        # every file's bytes read once and checked against meta.json, then parsed from those bytes
        _, blobs = read_consistent(path, mgr.STATE_FORMAT, mgr.STATE_VERSION, ManagerFileError)
        try:
            state = json.loads(blobs["manager.json"])
        except (KeyError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise ManagerFileError(f"cannot load manager state from {str(path)!r}: {exc!r}") from exc
        if not isinstance(state, dict):
            raise ManagerFileError(f"cannot load manager state from {str(path)!r}: manager.json is not a dict")
        bank = ExperienceBank.load(path / "bank")
        if state.get("bank_save_id") in (None, bank.save_id):  # None: saved before the ids existed
            break
        if _unchanged(path, blobs):  # the bank alone was saved again in place, after the manager
            warnings.warn(f"{str(path / 'bank')!r} holds bank save {bank.save_id}, saved after the manager "
                          f"state beside it (which recorded bank save {state.get('bank_save_id')}): "
                          "restoring the bank as it is now, with the manager state as saved", stacklevel=3)
            log.warning("restore %s: bank save %s, the manager recorded %s; restoring the bank as it is now",
                           path, bank.save_id, state.get("bank_save_id"))
            break
        # a save replaced the folder between the two reads: read both again
    else:
        raise ManagerFileError(f"cannot load manager state from {str(path)!r}: the folder kept changing while it "
                            "was read (saves in progress?)")
    saved_config = state.get("extractor_config")
    if not isinstance(saved_config, dict):
        raise ManagerFileError(f"manager state at {str(path)!r} has no extractor config")
    differ = mgr.extractor_config.shape_differences(saved_config)
    if differ:  # (training knobs and the seed may differ: this manager's own are taken)
        said = ", ".join(f"{k} {saved!r} (this manager's {mine!r})" for k, (saved, mine) in differ.items())
        spaces_differ = set(differ) & {"state_dim", "action_dim", "discrete_actions"}  # (made from the spaces)
        remedy = ("build the manager on the observation and action spaces it was saved with" if spaces_differ else
                  "build the manager with the saved settings (e.g. extractor={'exp_dim': ...})")
        raise ManagerFileError(f"the extractor saved at {str(path)!r} has another shape: {said}; {remedy} "
                               "to restore it")
    saved_layout = state.get("observation_layout")  # (saves before it was written have none)
    if saved_layout is not None and not saved_layout_matches(saved_layout, mgr.observation_space):
        raise ManagerFileError(f"the manager state at {str(path)!r} was saved for observations laid out as "
                               f"{saved_layout}, this manager's are {layout_of(mgr.observation_space)}: its entries "
                               "are keyed by another observation")
    mgr.check_bank_dims(bank)
    if not same_keys(state.get("key_fingerprint"), mgr.key_encoder, mgr.observation_space):
        # (a warning, not a refusal: a shared bank may be read by envs whose Box bounds differ, MT10's)
        warnings.warn(
            f"the manager state at {str(path)!r} was saved with a key encoder that keys observations otherwise "
            f"than this manager's (saved: {state.get('key_encoder')}, this one: {type(mgr.key_encoder).__name__}; "
            "their keys of the same observations differ): its entries will not be found where they were written. "
            "Build the manager, or the wrappers, with the key encoder it was saved with (the same class and "
            "settings, such as a RandomProjectionKeyEncoder's seed, and the same observation bounds)",
            UserWarning, stacklevel=3)
    # the learner's part (in process mode the learner process parses it, last, before anything changes)
    apply_learner = mgr.backend.prepare_restore(blobs, state, path)
    # read and check everything before touching this manager: a bad file changes nothing
    try:
        schedule = Schedule.parse_state(state)  # guided_ratio, progress, rollouts
        scalars = {name: _count(state, name) for name in ("episodes_submitted", "episodes_processed",
                                                           "entries_added")}
        if state.get("key_dim", mgr.key_encoder.key_dim) != mgr.key_encoder.key_dim:
            raise ValueError(f"key_dim is {state.get('key_dim')!r}, this manager's key encoder makes "
                             f"{mgr.key_encoder.key_dim}")
        baseline = FreeBaseline(mgr.config.baseline_window)
        baseline.load_state_dict(state["baseline"])
        reported = state.get("success_reported", False)  # (saves before it was recorded have none)
        if not isinstance(reported, bool):
            raise ValueError(f"success_reported is {reported!r}, expected true or false")
    except (OSError, KeyError, TypeError, ValueError, RuntimeError, AttributeError) as exc:
        raise ManagerFileError(f"manager state at {str(path)!r} is invalid ({type(exc).__name__}: {exc})") from exc
    mgr.flush()
    apply_learner(scalars["episodes_processed"])  # a learner process may still refuse: nothing changed yet
    mgr.bank.replace_with(bank)
    mgr.episodes_submitted = scalars["episodes_submitted"]
    mgr.writer.entries_added = scalars["entries_added"]
    mgr.schedule.load_state_dict(schedule)
    mgr.baseline = baseline
    # whether the env reports success is the env's, not the run's: what either the save or this manager knows
    mgr.success_reports.seen = mgr.success_reports.seen or reported


def _count(state: dict[str, Any], name: str) -> int:
    """A saved counter: a non-negative int (not a bool, float or str), else ``ValueError``."""
    value = state[name]
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"{name} is {value!r}, expected a non-negative integer")
    return value


def _unchanged(path: Path, blobs: dict[str, bytes]) -> bool:
    """Whether the manager folder at ``path`` still holds the ``manager.json`` read as ``blobs``."""
    try:
        return (path / "manager.json").read_bytes() == blobs.get("manager.json")
    except OSError:
        return False
