"""Where distillation and extractor training run: the learner backend the manager talks to.

:class:`~experience_wrappers.manager.ExperienceManager` runs the loop (episodes in, merges,
saves) and keeps the bank; a :class:`LearnerBackend` does the rest, behind one protocol,
in one of three places (``ManagerConfig.mode``):

* ``"sync"``: :class:`~.inline_backend.InlineBackend`, inside the call (deterministic);
* ``"async"``: :class:`~.thread_backend.ThreadBackend`, the same steps on a worker thread;
* ``"process"``: :class:`~.process_backend.ProcessBackend`, a learner process of its own;
* ``"auto"`` (the default): ``"process"`` where it can run, else ``"async"``
  (:func:`resolve_mode`).

For each episode a backend runs, in order: the manager's credit (:func:`.crediting.attribute`,
given to it as ``credit``), the credited samples into the learner, the episode's distillation
into proposed entries, their write into the bank (:class:`~.episode_entries.EntryWriter`, the
one place that writes entries), and the extractor's updates when a batch is ready. Only
*where* and *when* differ.
"""

from __future__ import annotations

import logging
import multiprocessing as mp
import pickle
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import attrs
import numpy as np

from ..bank import Provenance
from .episode import Episode
from .spawn import refers_to_main

if TYPE_CHECKING:
    from .episode_entries import Distiller
    from .learner import ExtractorLearner

__all__ = ["Credit", "CreditRule", "LearnerBackend", "LearnerFigures", "Restore", "resolve_mode"]

log = logging.getLogger(__name__)

#: one credit of an episode: the credited entries' ids, their fields (``crediting.CREDITED_FIELDS``)
#: and the extractor's reward (one for all, or one per entry; the learner's ``add_credit`` spreads it)
Credit = tuple[np.ndarray, dict[str, np.ndarray], float | np.ndarray]

#: the manager's credit rule: an episode's credits (run by the backend, where its mode says)
CreditRule = Callable[[Episode], list[Credit]]

#: applies a parsed restore (raises, changing nothing, only before it applies anything); its
#: argument is the saved ``episodes_processed``
Restore = Callable[[int], None]


@attrs.frozen
class LearnerFigures:
    """The learner's running figures (what :meth:`ExperienceManager.stats` logs)."""

    extractor_version: int = 0
    ssl_updates: int = 0
    last_losses: dict[str, float] = attrs.field(factory=dict)
    episodes_processed: int = 0
    #: episodes whose processing failed (reported; not pending)
    episodes_failed: int = 0
    #: seconds this side spent on episodes and merges
    busy_seconds: float = 0.0
    #: seconds a learner process spent (None: the learner runs in this process)
    learner_busy_seconds: float | None = None


class LearnerBackend(Protocol):
    """The manager's learner, wherever it runs (see the module doc).

    Every method is called from the manager's side. Errors of work done elsewhere (a worker
    thread, a learner process) are kept and raised by :meth:`check` at the manager's next call.
    """

    @property
    def local(self) -> ExtractorLearner | None:
        """The learner object, when it lives in this process (None in a learner process)."""

    @property
    def distiller(self) -> Distiller | None:
        """The distiller, when it lives in this process."""

    @property
    def pid(self) -> int | None:
        """The learner process's pid (None: the learner runs in this process)."""

    @property
    def pending(self) -> int:
        """Episodes and requests handed over and not processed yet."""

    def episode(self, ep: Episode) -> None:
        """Credit, distil and train on a finished episode (now, queued, or handed over)."""

    def merge(self) -> None:
        """Merge the bank's near duplicates and fold the learner's samples (in order with episodes)."""

    def ingest(self, ep: Episode, provenance: Provenance, every: int | None, utility: float | None) -> int:
        """Distil an episode into the bank without credit; returns the entries written. Waits."""

    def poll(self) -> None:
        """Apply what the learner has produced so far, never waiting (a learner process's entries)."""

    def flush(self, timeout: float | None = None) -> None:
        """Wait until everything handed over is processed."""

    def close(self) -> None:
        """Process what is queued, then stop (a worker thread, a learner process)."""

    def check(self) -> None:
        """Raise a failure of the learner's since the last call."""

    def figures(self) -> LearnerFigures:
        """The learner's running figures."""

    def save(self, folder: Path) -> dict[str, str]:
        """Write the learner's files into a manager folder; returns the per-task extractor files."""

    def prepare_restore(self, blobs: dict[str, bytes], state: dict[str, Any], path: Path) -> Restore:
        """Parse the learner's part of a saved manager folder, changing nothing; returns what applies it.

        Raises:
            ManagerFileError: a file is missing or damaged.
        """


def resolve_mode(mode: str, key_encoder: object, action_space: object = None) -> str:
    """The backend ``mode`` runs on: ``"auto"`` is ``"process"`` where a learner process can
    start, else ``"async"`` (said in the log); the other modes are themselves.

    A learner process needs a key encoder and an action space that pickle (a ``CallableKeyEncoder``
    around a lambda does not) and whose classes are not defined in the main script (the child would run
    the script again: :mod:`.spawn`), and a process allowed to have children (a daemonic one,
    such as a ``multiprocessing.Pool`` worker, is not). Measured (``docs/scaling.md``): with the learner in
    a process the two-line form runs at 0.62x PPO's steps/s on MiniHack-Room-5x5 and 0.63x on
    CartPole, against 0.44x and 0.50x with the worker thread, which shares the actor's GIL.

    >>> resolve_mode("sync", None), resolve_mode("auto", lambda: 0)
    ('sync', 'async')
    """
    if mode != "auto":
        return mode
    if mp.current_process().daemon:
        log.info("mode='auto': the learner runs on a thread (mode='async'): a daemonic process cannot start "
                 "a learner process")
        return "async"
    what = f"the key encoder {type(key_encoder).__name__} or the action space {type(action_space).__name__}"
    try:
        pickled = pickle.dumps((key_encoder, action_space))
    except Exception as exc:  # noqa: BLE001 - any pickling failure means the same thing
        log.info("mode='auto': the learner runs on a thread (mode='async'): %s cannot be sent to a learner "
                 "process (%r)", what, exc)
        return "async"
    if refers_to_main(pickled):  # the child would run the script again, which needs a main guard
        log.info("mode='auto': the learner runs on a thread (mode='async'): %s is defined in the main script, "
                 "which a learner process would have to run again; define it in a module (or ask for "
                 "mode='process' under a main guard)", what)
        return "async"
    return "process"
