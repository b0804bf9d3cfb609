"""The experience manager: episodes in; credits, bank entries and extractor updates out."""

from __future__ import annotations

import atexit
import logging
import threading
import weakref
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from gymnasium import spaces

from ..bank import ExperienceBank, Provenance
from ..bank.bank import NOT_PICKLABLE
from ..bank.config import MAX_DIM
from ..credit import FreeBaseline, OutcomeTracker, PairedCredit
from ..extractor import (
    ActionCoder,
    ExperienceExtractor,
    ExtractorConfig,
    ExtractorTrainer,
)
from ..keys import KeyEncoder, RandomProjectionKeyEncoder
from ..keys.base import check_key_encoder, checked_keys
from ..replay import SuccessReplay
from ..schedule import Schedule
from ..validators import check_int, check_real
from .backend import LearnerBackend, resolve_mode
from .config import ManagerConfig
from .crediting import attribute
from .episode import Episode, SuccessReports, check_episode
from .episode_entries import Distiller, EntryWriter
from .inline_backend import InlineBackend
from .learner import ExtractorLearner
from .process_backend import ProcessBackend
from .save_restore import restore_manager, save_manager
from .stats import manager_stats
from .thread_backend import ThreadBackend

if TYPE_CHECKING:
    from .protocol import ExperienceSource

__all__ = ["ExperienceManager", "check_ingest_args"]

log = logging.getLogger(__name__)


def check_ingest_args(segment_every: int | None, utility: float | None) -> None:
    """Raise ValueError for a bad ``segment_every`` or ``utility`` of :meth:`ExperienceManager.ingest`."""
    check_int("segment_every", segment_every, minimum=1, numpy=True, optional=True)
    check_real("utility", utility, optional=True)


class ExperienceManager:
    """Runs the loop: finished episodes in; credits, bank entries and extractor updates out.

    For every finished :class:`Episode` it (1) credits the entries that guided it with the
    outcome delta against experience-free episodes of the same task, (2) distils the
    episode: one segment every ``segment_every`` steps, keyed by the frozen key of the
    segment's first state, valued by the extractor's sampled experience vector, (3) trains
    the extractor when a batch of credited samples is ready, and a self-supervised step
    when a batch of fresh segments is. ``merge()`` folds near duplicates.

    Where (2)-(3) run is the learner backend's (:mod:`experience_wrappers.manager.backend`,
    chosen by ``config.mode``; ``"auto"``, the default, is ``process`` where a learner process can
    start, else ``async``): ``sync`` inside ``submit``; ``async`` on a worker thread
    (``submit`` only enqueues, and the credit runs there too); ``process`` in a learner process
    of its own (:mod:`experience_wrappers.manager.process`: the credit runs in ``submit``, the bank
    stays here, so queries never wait). Credited episodes go to it ``handover_every`` at a
    time, and earlier at :meth:`poll` (which the callback calls at every rollout's end),
    ``stats()``, ``flush()``, ``save()`` and merges; the entries it proposes are written into
    the bank, in one ``bank.add`` per message, when this side next polls (at those same
    points). ``flush()`` waits until every submitted episode is processed. The manager itself
    runs the loop: checks, counts, the schedule, saves and restores.

    Args:
        bank: the bank to write into.
        observation_space: the base env's observation space (before the wrapper).
        action_space: the env's action space.
        key_encoder: frozen key encoder (default: a seeded random projection), or its class, built
            as ``cls(observation_space)``.
        config: a :class:`ManagerConfig`.
    """

    STATE_FORMAT = "complementary-rl.manager"
    STATE_VERSION = 1

    def __init__(self, bank: ExperienceBank, observation_space: spaces.Space, action_space: spaces.Space,
                 *, key_encoder: KeyEncoder | type[KeyEncoder] | None = None, config: ManagerConfig | None = None) -> None:
        if not isinstance(bank, ExperienceBank):
            raise TypeError(f"bank must be an ExperienceBank, got {type(bank).__name__}")
        refuse_service_bank(bank)
        if bank.manager is not None:
            raise ValueError("this bank already has a manager; use manager_for_bank(bank, ...) to share it")
        if config is not None and not isinstance(config, ManagerConfig):
            raise TypeError(f"config must be a ManagerConfig, got {type(config).__name__} (ManagerConfig(**settings) "
                            "builds one from a dict)")
        self.config = config or ManagerConfig()
        self.bank = bank
        self.observation_space = observation_space
        self.action_space = action_space
        self.key_encoder = RandomProjectionKeyEncoder(observation_space) if key_encoder is None else \
            check_key_encoder(key_encoder, observation_space)
        self.action_coder = ActionCoder(action_space)
        self.extractor_config = ExtractorConfig(  # the defaults are ExtractorConfig's
            state_dim=self.key_encoder.key_dim, action_dim=self.action_coder.dim,
            discrete_actions=bool(self.action_coder.discrete), **self.config.extractor)
        if self.extractor_config.context_size > MAX_DIM:
            ec = self.extractor_config
            raise ValueError(f"an entry's context would be {ec.context_size:,} wide (max_len {ec.max_len} x (key_dim "
                             f"{ec.state_dim} + action_dim {ec.action_dim} + 2) + 1), past the {MAX_DIM:,} the bank "
                             "stores: key by a narrower encoder (e.g. RandomProjectionKeyEncoder(observation_space)) "
                             "or read fewer steps (extractor max_len)")
        #: what an entry's value holds: run scope's layout (``config.layout``), or None: the vector alone
        self.layout = self.config.entry_layout(self.key_encoder.key_dim, self.action_coder.dim)
        self.check_bank_dims(bank)
        #: guards the manager's counters and outcomes (the writer, crediting and stats take it)
        self.stats_lock = threading.Lock()
        #: the one writer of proposed entries into the bank (every backend writes through it)
        self.writer = EntryWriter(bank, self.stats_lock)
        #: where distillation and extractor training run (:mod:`.backend`)
        #: where the learner runs: ``config.mode``, with ``"auto"`` resolved (:func:`.backend.resolve_mode`)
        self.mode = resolve_mode(self.config.mode, self.key_encoder, action_space)
        self.backend: LearnerBackend = _BACKENDS[self.mode](
            self.key_encoder, action_space, self.config, self.extractor_config, self.writer,
            partial(attribute, self), self.stats_lock)
        self.baseline = FreeBaseline(self.config.baseline_window)
        # guided episodes of replayed instances waiting for their free episodes (worker only)
        self.paired = PairedCredit()
        self.schedule = Schedule()  # progress, guided ratio, rollouts: advanced by the callback
        #: the successful states kept for self-imitation (set by CRLCallback or ComplementaryRL; None: none)
        self.replay: SuccessReplay | None = None
        self.success_reports = SuccessReports()  # its envs report success (one reading for all; saved)
        # statistics
        self.episodes_submitted = 0
        self.outcomes = OutcomeTracker(100)  # guided and free outcomes, deltas (under stats_lock)
        self._closed = False
        self._open_lock = threading.Lock()  # submit and close: no episode taken after close drained the queue
        #: the wrappers using it (each until its ``close()``), and whether the last closes it (built for them)
        self.holders = 0
        self.closes_with_wrappers = False
        #: the ``learn`` call a CRLCallback trains this manager in, and that callback (its check
        #: that one ``learn`` has one CRLCallback; see ``integrations.sb3.guards``)
        self.learn_claim: tuple[Any, Any] | None = None
        #: the injectors of the env being trained on this manager (set by the SB3 callback through
        #: :func:`~experience_wrappers.wrappers.injector.mark_training`; None: not declared)
        self.training_injectors: weakref.WeakSet[Any] | None = None
        bank.attach_manager(self)
        # stop the worker thread or learner process when the interpreter exits, also after an
        # exception inside training (a thread still inside torch at exit aborts the process)
        atexit.register(_close_at_exit, weakref.ref(self))

    def __reduce__(self) -> Any:
        raise TypeError(NOT_PICKLABLE.format(what="an ExperienceManager"))

    # -------------------------------------------------------------- schedule
    # Views of ``self.schedule`` (what wrappers read); set them through the schedule.
    @property
    def guided_ratio(self) -> float:
        """Share of episodes drawn guided now (``schedule.guided_ratio``)."""
        return self.schedule.guided_ratio

    @property
    def progress(self) -> float:
        """Fraction of training done (``schedule.progress``): sets the utility decay."""
        return self.schedule.progress

    @property
    def rollouts(self) -> int:
        """Rollouts finished (``schedule.rollouts``)."""
        return self.schedule.rollouts

    # ------------------------------------------------------------------ setup
    @property
    def exp_dim(self) -> int:
        return self.config.exp_dim

    @property
    def learner(self) -> ExtractorLearner:
        """The extractor's learner (trainers, samples, version).

        Raises:
            RuntimeError: in ``process`` mode, where it lives in the learner process (its
                figures are in :meth:`stats`; :meth:`save` writes its extractors).
        """
        local = self.backend.local
        if local is None:
            raise RuntimeError("in mode='process' the extractor and its learner live in the learner process: "
                               "read their figures in stats(), or save() the manager and load its extractor.pt")
        return local

    @property
    def distiller(self) -> Distiller:
        """The distiller (segments and proposed entries); in this process unless ``mode="process"``."""
        distiller = self.backend.distiller
        if distiller is None:
            raise RuntimeError("in mode='process' the distiller lives in the learner process")
        return distiller

    @property
    def learner_pid(self) -> int | None:
        """The learner process's pid in ``process`` mode (None in the other modes)."""
        return self.backend.pid

    @property
    def extractor_version(self) -> int:
        """Outcome (policy-gradient) updates of the extractor so far: its version, stamped on new entries."""
        return self.backend.figures().extractor_version

    @property
    def trainer(self) -> ExtractorTrainer:
        """The shared extractor trainer (the learner's)."""
        return self.learner.trainer

    @property
    def extractor(self) -> ExperienceExtractor:
        """The shared extractor."""
        return self.learner.trainer.extractor

    def trainer_for(self, task_id: int) -> ExtractorTrainer:
        """The extractor trainer of a task: the shared one, or the task's own with
        ``extractor_per_task`` (created on first use, seeded from the manager seed and the task)."""
        return self.learner.trainer_for(task_id)

    @property
    def ssl_updates(self) -> int:
        """Self-supervised updates of the extractor so far."""
        return self.backend.figures().ssl_updates

    @property
    def last_losses(self) -> dict[str, float]:
        """The losses of the latest extractor updates."""
        return self.backend.figures().last_losses

    @property
    def episodes_processed(self) -> int:
        """Episodes the learner has processed (credited, distilled, trained on)."""
        return self.backend.figures().episodes_processed

    @property
    def entries_added(self) -> int:
        """New entries written into the bank by this manager."""
        return self.writer.entries_added

    @property
    def busy_seconds(self) -> float:
        """Seconds spent on episodes and merges on this side (either thread)."""
        return self.backend.figures().busy_seconds

    @property
    def context_dim(self) -> int:
        return self.extractor_config.context_size

    @property
    def bank_dims(self) -> dict[str, int]:
        """The widths of the entries this manager writes: ``key_dim``, ``value_dim``, ``context_dim``."""
        value_dim = self.config.exp_dim if self.layout is None else self.layout.value_dim
        return {"key_dim": self.key_encoder.key_dim, "value_dim": value_dim,
                "context_dim": self.extractor_config.context_size}

    def check_bank_dims(self, bank: ExperienceBank) -> None:
        """Refuse a bank whose widths are not this manager's (at construction and at restore)."""
        want = self.bank_dims
        if bank.dims is not None and bank.dims != want:
            raise ValueError(f"bank dims {bank.dims} do not match this manager's {want} (the key encoder or the "
                             "observation space, exp_dim, the action space or max_len differ); an ExperienceBank() "
                             "given no widths takes them from its first manager")

    # ------------------------------------------------------------- submission
    def submit(self, episode: Episode) -> None:
        """Hand a finished episode over (processed now in sync mode, queued in async mode, handed on in process mode).

        The learner backend credits, distils and trains on it where ``config.mode`` says.

        Raises:
            ValueError: the episode cannot be distilled (:func:`~.episode.check_episode`: a NaN
                reward, step counts that differ, actions or observations outside the spaces), checked
                here, in the caller's thread, before its credit reaches the baseline or the bank.
        """
        self.backend.check()
        check_episode(episode, self.observation_space, self.action_coder)
        with self._open_lock:  # (a close() in another thread waits: an episode taken is one it processes)
            self._check_open("submit")
            self.backend.episode(episode)
        with self.stats_lock:  # (counted once taken: an episode the backend refused is not submitted)
            self.episodes_submitted += 1

    def request_merge(self) -> None:
        """Merge near-duplicate entries (now in sync and process modes, on the worker in async mode).

        Raises:
            RuntimeError: the manager is closed (its worker or learner process has stopped).
        """
        self.backend.check()
        self._check_open("merge")
        self.backend.merge()

    def flush(self, timeout: float | None = None) -> None:
        """Wait until every submitted episode and request is processed."""
        self.backend.flush(timeout)

    def _check_open(self, what: str) -> None:
        if self._closed:
            raise RuntimeError(f"this manager is closed: it cannot {what} (its worker has stopped); build a new "
                               "manager on a bank loaded from a save (ExperienceBank.load) to go on")

    def let_go(self) -> None:
        """A wrapper that used this manager closed (:attr:`holders` counts them); a manager the wrappers built is
        closed with the last (its learner stops; the bank keeps its entries); a user's is left to the user."""
        self.holders = max(0, self.holders - 1)
        if self.holders == 0 and self.closes_with_wrappers and not self._closed:
            self.close()

    def close(self) -> None:
        """Process what is queued, then stop the worker; later submissions, ingests and merges raise RuntimeError.

        The bank is let go: a manager (or a wrapper) built on it after this serves it afresh.
        """
        with self._open_lock:
            self._closed = True
        try:
            self.backend.close()
        finally:
            self.bank.detach_manager(self)

    @property
    def pending(self) -> int:
        """Episodes and requests handed to the learner and not processed yet."""
        return self.backend.pending

    def poll(self) -> None:
        """``process`` mode: hand the waiting episodes over to the learner process now (one
        message), then write the entries it has proposed so far into the bank (never waits).
        Other modes: nothing.

        :class:`~integrations.sb3.CRLCallback` calls it at every rollout's end; ``stats()``,
        ``flush()``, ``save()``, merges and every ``handover_every``-th submission do it too.
        In that order, and under the hand-over lock: the waiting episodes' credits name entries
        that the messages applied here may evict (the ``forget`` sent then must reach the
        learner after the credits).
        """
        self.backend.poll()

    @property
    def reader(self) -> ExperienceBank:
        """What the wrappers' retrievals query: this manager's bank."""
        return self.bank

    def encode_keys(self, observations: Any, task_ids: np.ndarray) -> np.ndarray:
        """Keys of a batch of observations, checked: ``(n, key_dim)`` finite float32 rows."""
        return checked_keys(self.key_encoder, observations, task_ids)

    # ----------------------------------------------------------- demonstrations
    def ingest(self, episode: Episode, provenance: Provenance = Provenance.DEMO, segment_every: int | None = None,
               utility: float | None = None) -> int:
        """Distil an episode into the bank without crediting anything (for demonstrations).

        Args:
            episode: the episode to distil.
            provenance: provenance of its entries.
            segment_every: start a segment every this many steps (default: the config's
                ``segment_every``); 1 gives one entry per state, each with the action taken there.
            utility: initial utility of its entries (default: the bank's ``initial_utility``).

        Returns the number of segments written. Waits: in sync mode it runs on the calling
        thread; in async mode on the worker, after what is queued; in process mode the learner
        process distils it.
        """
        check_ingest_args(segment_every, utility)
        self.backend.check()
        self._check_open("ingest")
        check_episode(episode, self.observation_space, self.action_coder)
        return self.backend.ingest(episode, provenance, segment_every, utility)

    def write_entries(self, episode: Episode, provenance: Provenance = Provenance.EXTRACTED) -> np.ndarray:
        """Distil an episode into the bank now, crediting nothing; returns its new entries' ids.

        For a caller that keeps the ids (run scope's memory files each trial's entries under
        its run). Sync mode only, where the learner is the caller's.

        Raises:
            RuntimeError: the manager is not in sync mode, or is closed.
        """
        if self.mode != "sync":
            raise RuntimeError(f"write_entries needs a manager in mode='sync' (this one is {self.mode!r}): "
                               "use ingest(), which returns how many entries it wrote")
        self._check_open("write entries")
        check_episode(episode, self.observation_space, self.action_coder)
        assert isinstance(self.backend, InlineBackend)
        return self.backend.distil(episode, provenance)

    # ------------------------------------------------------------------ stats
    def stats(self) -> dict[str, float]:
        """Running figures for logging: outcomes of guided and free episodes, deltas, losses."""
        return manager_stats(self)

    def free_baseline(self, task_id: int = 0) -> float | None:
        return self.baseline.mean(task_id)

    # ------------------------------------------------------------- save/load
    def save(self, path: str | Path) -> Path:
        """Save bank, extractor and schedules to a folder (after processing what is queued).

        The folder must be new, empty, or one this method wrote; it is replaced whole and
        atomically (see :func:`~experience_wrappers.bank.save_load.replaced_folder`):
        files in it that the save does not write are kept, and a failed or killed save
        leaves the previous folder.
        """
        return save_manager(self, path)

    def restore(self, path: str | Path) -> None:
        """Replace this manager's bank content, extractor and schedules with those saved at ``path``.

        The bank object stays the same (``manager.bank`` is the bank the user built, now
        holding the saved entries and config), so the user's own ``bank.save(...)`` saves
        what was restored. Wrappers keep working: they reach the bank through the manager.
        Everything is read and checked first: a bad folder raises and changes nothing.
        A closed manager refuses (RuntimeError): the bank may be another manager's by then.
        """
        self._check_open("restore")
        restore_manager(self, path)


def refuse_service_bank(bank: ExperienceBank) -> None:
    """Refuse an experience service's bank (``integrations.ray``), whose learner runs in the service."""
    if getattr(bank, "served_remotely", False):
        raise ValueError("this bank is an experience service's (integrations.ray): its learner runs in the service; "
                         "wrap with service.wrap(env), or pass manager=service.manager(observation_space, action_space)")


#: the learner backend of each ``ManagerConfig.mode``
_BACKENDS: dict[str, type[InlineBackend] | type[ProcessBackend]] = {
    "sync": InlineBackend, "async": ThreadBackend, "process": ProcessBackend}


def _close_at_exit(ref: weakref.ReferenceType[ExperienceManager]) -> None:
    manager = ref()
    if manager is None:
        return
    try:
        manager.close()
    except Exception:  # the process is ending after an error already reported
        log.debug("manager close at exit failed", exc_info=True)


if TYPE_CHECKING:  # mypy checks that the manager serves every wrapper and the callback
    _serves: type[ExperienceSource] = ExperienceManager
