"""Where a :class:`~experience_wrappers.trials.TrialMemory`'s learned parts are kept: its extractor
(``extractor.pt``) and, with ``run_best="located"``, its goal locator (``locator.pt``).

The bank holds only live runs' entries and is not kept. :meth:`TrialMemory.save
<experience_wrappers.trials.TrialMemory.save>` and :meth:`~experience_wrappers.trials.TrialMemory.load`
call these; a folder is loaded only into a memory built with the settings of training.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..bank.folder import META
from ..bank.save_load import replaced_folder
from ..errors import ExperienceFileError
from ..extractor import ExtractorTrainer

if TYPE_CHECKING:
    from .memory import TrialMemory

__all__ = ["check_extractor", "load_memory", "save_memory", "MEMORY_FORMAT"]

#: the ``format`` of a memory save's ``meta.json``, and the names such a save writes
MEMORY_FORMAT = "complementary-rl.trial-memory"
OWN_FILES = frozenset({"extractor.pt", "locator.pt", META})


def save_memory(memory: TrialMemory, folder: str | Path) -> Path:
    """Save the extractor and the goal locator (the bank holds only live runs' entries and is not kept).

    The folder rules of the library's other saves (:func:`~experience_wrappers.bank.save_load.replaced_folder`):
    the folder is swapped in whole, a folder holding anything but an earlier memory save is refused (the
    user's files are never replaced), and so are a file, the working directory and a folder above it.

    Raises:
        ValueError: ``folder`` is a file, under one, or the working directory (or above it).
        ExperienceFileError: ``folder`` holds files and is not a memory save.
    """
    folder = Path(folder)
    with replaced_folder(folder, MEMORY_FORMAT, OWN_FILES.__contains__, ExperienceFileError) as tmp:
        if memory.trainer is not None:
            memory.trainer.save(tmp / "extractor.pt")
        if memory.locator is not None:
            memory.locator.save(tmp / "locator.pt")
        (tmp / META).write_text(json.dumps({"format": MEMORY_FORMAT, "version": 1, "stats": memory.stats}))
    return folder


def load_memory(memory: TrialMemory, folder: str | Path) -> None:
    """Load an extractor and goal locator saved by :func:`save_memory` into ``memory`` (one built with the same settings).

    Raises:
        ValueError: the saved extractor reads other widths than this memory writes (another
            key width, action space, ``exp_dim`` or ``max_len``; or one of the two has no
            extractor, ``exp_dim=0``), or one of the two has a goal locator and the other not;
            the memory is left as it was.
        ExtractorFileError: the file is missing or damaged.
    """
    path, located = Path(folder) / "extractor.pt", Path(folder) / "locator.pt"
    if (memory.locator is None) == located.exists():
        raise ValueError(f"{str(folder)!r} {'holds' if located.exists() else 'has no'} goal locator (locator.pt) and "
                         f"this TrialMemory has run_best={memory.run_best or False!r}: build it as in training")
    if memory.learner is None and path.exists():
        raise ValueError(f"cannot load {str(path)!r} into this TrialMemory: it has exp_dim=0 (no extractor) "
                         "and the folder holds one; build the memory with the exp_dim of training")
    trainer = ExtractorTrainer.load(path) if memory.learner is not None else None
    if trainer is not None:
        check_extractor(memory, trainer.config.to_dict(), str(path))
    if memory.locator is not None:
        memory.locator.load(located)  # (its key width is the extractor's, checked above where there is one)
    if memory.learner is not None and trainer is not None:
        memory.learner.trainer = trainer
    memory.stats.update(_saved_stats(Path(folder), memory.stats))


def _saved_stats(folder: Path, like: dict[str, float]) -> dict[str, float]:
    """The memory's figures a save recorded (its ``meta.json``), the ones ``like`` has; none from a save
    written before they were recorded, or from an unreadable file (the figures are not the run's state)."""
    try:
        saved = json.loads((folder / META).read_bytes()).get("stats", {})
    except (OSError, ValueError, AttributeError, RecursionError):
        return {}
    return {k: float(v) for k, v in saved.items() if k in like and isinstance(v, int | float)
            and not isinstance(v, bool)} if isinstance(saved, dict) else {}


def check_extractor(memory: TrialMemory, saved: dict[str, Any], source: str) -> None:
    """Refuse an extractor config (``ExtractorConfig.to_dict()``) whose widths differ from ``memory``'s.

    Raises:
        ValueError: naming each setting that differs, as saved and as here.
    """
    assert memory.trainer is not None
    mine = memory.trainer.config.to_dict()
    names = {"state_dim": "key_dim", "action_dim": "action width", "exp_dim": "exp_dim", "max_len": "max_len",
             "discrete_actions": "discrete actions"}
    differ = [f"{label} {saved.get(key)!r} there, {mine[key]!r} here" for key, label in names.items()
              if saved.get(key) != mine[key]]
    if differ:
        raise ValueError(f"cannot load the extractor of {source} into this TrialMemory: {'; '.join(differ)}; "
                         "build the memory with the observation space, key encoder, action space, exp_dim and "
                         "max_len of training")
