"""The experience manager: episodes in; credits, bank entries and extractor updates out."""

from __future__ import annotations

import atexit
import io
import json
import logging
import queue
import re
import threading
import time
import warnings
import weakref
from pathlib import Path
from typing import Any

import numpy as np
import torch
from gymnasium import spaces

from ..bank import AddResult, ExperienceBank, Provenance
from ..bank.bank import NOT_PICKLABLE
from ..bank.folder import READ_ATTEMPTS, read_consistent
from ..bank.persistence import replaced_folder, sha256_file
from ..credit import (
    FreeBaseline,
    OutcomeTracker,
    PairedCredit,
    entry_reward,
    shown_shares,
    utility_decay,
    value_delta,
)
from ..errors import ManagerFileError
from ..extractor import (
    ActionCoder,
    ExperienceExtractor,
    ExtractorConfig,
    ExtractorTrainer,
)
from ..keys import KeyEncoder, RandomProjectionKeyEncoder
from ..keys.base import checked_keys
from ..replay import SuccessReplay
from ..schedule import Schedule
from ..validators import check_int, check_real
from .config import ManagerConfig
from .distil import Distiller, Proposal, add_arguments
from .episode import Episode
from .layout import same_layout
from .learner import ExtractorLearner
from .priors import prior_dim
from .process import LearnerProcess, LearnerProcessError

__all__ = ["ExperienceManager", "check_ingest_args", "manager_for_bank", "resolve_manager"]

log = logging.getLogger(__name__)

#: the fields of a credited entry that the learner process needs (its sample, and its ledger's counts)
_CREDITED_FIELDS = ("context", "value", "sample_logp", "task_id", "n_trained", "last_trained")

def manager_for_bank(bank: ExperienceBank, observation_space: spaces.Space, action_space: spaces.Space,
                     key_encoder: KeyEncoder | None = None, **config: Any) -> ExperienceManager:
    """The manager that serves ``bank``, created on first use, so every wrapper on one bank shares it.

    Later wrappers must have spaces of the same layout (:func:`same_layout`: Box bounds may
    differ, as between the tasks of MT10); the manager keeps the first spaces it was given.
    """
    mgr = bank.manager
    if mgr is None:
        mgr = ExperienceManager(bank, observation_space, action_space, key_encoder=key_encoder,
                                config=ManagerConfig(**config))
        return mgr
    if not same_layout(mgr.observation_space, observation_space) or not same_layout(mgr.action_space, action_space):
        raise ValueError(
            "this bank is already served by a manager for spaces of another layout (kind, keys, shapes "
            "or dtypes; Box bounds may differ) "
            f"(observation {mgr.observation_space}, action {mgr.action_space}); got observation "
            f"{observation_space}, action {action_space}. Use one bank per env family."
        )
    if key_encoder is not None and key_encoder is not mgr.key_encoder:
        raise ValueError("this bank's manager already has a different key_encoder; pass the same object")
    if config and ManagerConfig(**{**mgr.config.to_dict(), **config}) != mgr.config:
        raise ValueError(f"this bank's manager already has another config ({mgr.config}); got {config}")
    return mgr


def resolve_manager(bank: ExperienceBank, observation_space: spaces.Space, action_space: spaces.Space,
                    manager: ExperienceManager | None = None, key_encoder: KeyEncoder | None = None,
                    manager_kwargs: dict[str, Any] | None = None) -> ExperienceManager:
    """The manager a wrapper should use: the one given (which must serve ``bank``), else the bank's own."""
    if not isinstance(bank, ExperienceBank):
        raise TypeError(f"bank must be an ExperienceBank, got {type(bank).__name__}")
    if manager is None:
        return manager_for_bank(bank, observation_space, action_space, key_encoder=key_encoder,
                                **(manager_kwargs or {}))
    if manager.bank is not bank:
        raise ValueError("manager serves another bank than the one given")
    return manager


def check_ingest_args(segment_every: int | None, utility: float | None) -> None:
    """Raise ValueError for a bad ``segment_every`` or ``utility`` of :meth:`ExperienceManager.ingest`."""
    check_int("segment_every", segment_every, minimum=1, numpy=True, optional=True)
    check_real("utility", utility, optional=True)

def _own_state_name(name: str) -> bool:
    """Whether a top-level name in a manager folder is one :meth:`ExperienceManager.save` writes."""
    return name in ("meta.json", "manager.json", "extractor.pt", "samples.npz", "bank") or bool(
        re.fullmatch(r"extractor_task-?\d+\.pt", name))


class ExperienceManager:
    """Owns the distillation queue, outcome attribution, the extractor and bank maintenance.

    For every finished :class:`Episode` it (1) credits the entries that guided it with the
    outcome delta against experience-free episodes of the same task, (2) distils the
    episode: one segment every ``segment_every`` steps, keyed by the frozen key of the
    segment's first state, valued by the extractor's sampled experience vector, (3) trains
    the extractor when a batch of credited samples is ready, and a self-supervised step
    when a batch of fresh segments is. ``merge()`` folds near duplicates.

    In ``async`` mode all of that runs on a background thread: ``submit`` only enqueues.
    In ``process`` mode (1) runs in ``submit`` and (2)-(3) in a learner process of their own
    (:mod:`experience_wrappers.manager.process`: the bank stays here, so queries never wait).
    Credited episodes go to it ``handover_every`` at a time, and earlier at :meth:`poll` (which
    the callback calls at every rollout's end), ``stats()``, ``flush()``, ``save()`` and merges;
    the entries it proposes are written into the bank, in one ``bank.add`` per message, when
    this side next polls (at those same points). ``flush()`` waits until every submitted
    episode is processed.

    Args:
        bank: the bank to write into.
        observation_space: the base env's observation space (before the wrapper).
        action_space: the env's action space.
        key_encoder: frozen key encoder (default: a seeded random projection).
        config: a :class:`ManagerConfig`.
    """

    STATE_FORMAT = "complementary-rl.manager"
    STATE_VERSION = 1

    def __init__(self, bank: ExperienceBank, observation_space: spaces.Space, action_space: spaces.Space,
                 *, key_encoder: KeyEncoder | None = None, config: ManagerConfig | None = None) -> None:
        if not isinstance(bank, ExperienceBank):
            raise TypeError(f"bank must be an ExperienceBank, got {type(bank).__name__}")
        if bank.manager is not None:
            raise ValueError("this bank already has a manager; use manager_for_bank(bank, ...) to share it")
        self.config = config or ManagerConfig()
        self.bank = bank
        self.observation_space = observation_space
        self.action_space = action_space
        self.key_encoder = key_encoder or RandomProjectionKeyEncoder(observation_space)
        self.action_coder = ActionCoder(action_space)
        self.prior_dim = prior_dim(action_space, self.action_coder.dim)
        self.extractor_config = ExtractorConfig(
            state_dim=self.key_encoder.key_dim, action_dim=self.action_coder.dim,
            exp_dim=self.config.exp_dim, hidden=self.config.hidden, max_len=self.config.max_len,
            lr=self.config.lr, seed=self.config.seed, discrete_actions=bool(self.action_coder.discrete),
            **self.config.extractor)
        self._check_bank_dims(bank)
        self._stats_lock = threading.Lock()
        self._generator = torch.Generator().manual_seed(self.config.seed)
        # the extractor, its trainers, samples and version (touched by the worker only); in
        # process mode they live in the learner process, and this side keeps its latest figures
        self._learner: ExtractorLearner | None = None
        self._process: LearnerProcess | None = None
        self.distiller: Distiller | None = None
        self._learner_stats: dict[str, Any] = {"extractor_version": 0, "ssl_updates": 0, "last_losses": {},
                                               "episodes_processed": 0, "busy_seconds": 0.0}
        self._credits: list[tuple[np.ndarray, dict[str, np.ndarray], Any]] = []  # process mode: to send
        # process mode: credited episodes waiting to go to the learner process together (poll)
        self._waiting: list[tuple[Episode, list[tuple[np.ndarray, dict[str, np.ndarray], Any]]]] = []
        # process mode: held from an episode's credit until it is sent, and over each poll, so that
        # no eviction's "forget" overtakes a credit of the evicted entry, whichever thread polls
        self._handover_lock = threading.RLock()
        self._episodes_failed = 0  # process mode: episodes the learner process failed on (not pending)
        self._failed_offset = 0  # process mode: minus the learner process's failures before a restore
        self._processed_offset = 0  # process mode: episodes_processed minus the learner process's count
        if self.config.mode == "process":
            self._process = LearnerProcess(self.key_encoder, action_space, self.config, self.extractor_config)
        else:
            self._learner = ExtractorLearner(self.extractor_config, self.config, bank, self._stats_lock)
            self.distiller = Distiller(self.key_encoder, action_space, self.config, self._generator)
        self.baseline = FreeBaseline(self.config.baseline_window)
        # guided episodes of replayed instances waiting for their free episodes (worker only)
        self.paired = PairedCredit()
        self.schedule = Schedule()  # progress, guided ratio, rollouts: advanced by the callback
        #: the successful states kept beside the bank for self-imitation (set by the SB3
        #: integration's CRLCallback or ComplementaryRL; None: no self-imitation)
        self.replay: SuccessReplay | None = None
        # statistics
        self.episodes_submitted = 0
        self.episodes_processed = 0
        self.entries_added = 0
        self.value_credited = 0  # guided episodes judged against V(s0) (the value baseline)
        self.busy_seconds = 0.0  # time spent processing episodes and merges (either thread)
        self.outcomes = OutcomeTracker(100)  # guided and free outcomes, deltas (under _stats_lock)
        self._queue: queue.Queue[tuple[str, Any]] = queue.Queue()
        self._worker: threading.Thread | None = None
        self._error: BaseException | None = None
        self._closed = False
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
        if self._learner is None:
            raise RuntimeError("in mode='process' the extractor and its learner live in the learner process: "
                               "read their figures in stats(), or save() the manager and load its extractor.pt")
        return self._learner

    @property
    def learner_pid(self) -> int | None:
        """The learner process's pid in ``process`` mode (None in the other modes)."""
        return None if self._process is None else self._process.pid

    @property
    def extractor_version(self) -> int:
        """Outcome (policy-gradient) updates of the extractor so far: its version, stamped on new entries."""
        if self._learner is None:
            return int(self._learner_stats["extractor_version"])
        return self._learner.extractor_version

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
        if self._learner is None:
            return int(self._learner_stats["ssl_updates"])
        return self._learner.ssl_updates

    @property
    def last_losses(self) -> dict[str, float]:
        """The losses of the latest extractor updates."""
        if self._learner is None:
            return dict(self._learner_stats["last_losses"])
        return self._learner.last_losses

    @property
    def context_dim(self) -> int:
        return self.extractor_config.context_size

    def _check_bank_dims(self, bank: ExperienceBank) -> None:
        want = {"key_dim": self.key_encoder.key_dim, "value_dim": self.config.exp_dim,
                "prior_dim": self.prior_dim, "context_dim": self.extractor_config.context_size}
        if bank.dims is not None and bank.dims != want:
            raise ValueError(f"bank dims {bank.dims} do not match this manager's {want} "
                             "(key encoder, exp_dim, action space or max_len differ)")

    # ------------------------------------------------------------- submission
    def submit(self, episode: Episode) -> None:
        """Hand a finished episode over (processed now in sync mode, queued in async mode).

        Raises:
            ValueError: the episode has a NaN or inf reward (checked here, in the caller's
                thread, so nothing non-finite reaches the baseline or the bank).
        """
        self._raise_worker_error()
        if self._closed:
            raise RuntimeError("this manager is closed")
        rewards = np.asarray(episode.rewards, dtype=np.float64)
        if not np.all(np.isfinite(rewards)):
            bad = int(np.flatnonzero(~np.isfinite(rewards))[0])
            raise ValueError(f"the episode has reward {float(rewards[bad])!r} at step {bad}: rewards must be finite")
        with self._stats_lock:
            self.episodes_submitted += 1
        if self.config.mode == "sync":
            self._process_episode(episode)
        elif self._process is not None:
            self._hand_over(episode)
        else:
            self._ensure_worker()
            self._queue.put(("episode", episode))

    def request_merge(self) -> None:
        """Merge near-duplicate entries (now in sync and process modes, on the worker in async mode)."""
        self._raise_worker_error()
        if self.config.mode in ("sync", "process"):
            self._merge()
        else:
            self._ensure_worker()
            self._queue.put(("merge", None))

    def flush(self, timeout: float | None = None) -> None:
        """Wait until every submitted episode and request is processed."""
        if self._process is not None:
            self._ask("flush", timeout=timeout)
        if self._worker is not None:
            done = threading.Event()
            self._queue.put(("flush", done))
            if not done.wait(timeout):
                raise TimeoutError(f"the manager did not finish its queue within {timeout} s")
        self._raise_worker_error()

    def close(self) -> None:
        """Process what is queued, then stop the worker; later submissions raise RuntimeError."""
        self._closed = True
        if self._process is not None:
            try:
                if self._process.alive:
                    self.flush()
            finally:
                self._process.stop()
        if self._worker is not None and self._worker.is_alive():
            self._queue.put(("stop", None))
            self._worker.join()
        self._worker = None
        self._raise_worker_error()

    @property
    def pending(self) -> int:
        if self._process is not None:  # an episode the learner failed on is not pending
            return max(self.episodes_submitted - self.episodes_processed - self._episodes_failed, 0)
        return self._queue.qsize()

    def _ensure_worker(self) -> None:
        if self._worker is None or not self._worker.is_alive():
            self._worker = threading.Thread(target=self._run, name="crl-manager", daemon=True)
            self._worker.start()

    def _run(self) -> None:
        while True:
            kind, item = self._queue.get()
            try:
                if kind == "episode":
                    self._process_episode(item)
                elif kind == "merge":
                    self._merge()
                elif kind == "flush":
                    item.set()
                elif kind == "stop":
                    return
            except BaseException as exc:  # surfaced to the actor at its next call
                log.exception("experience manager worker failed")
                self._error = exc
                if kind == "flush":
                    item.set()
            finally:
                self._queue.task_done()

    def _raise_worker_error(self) -> None:
        if self._error is not None:
            err, self._error = self._error, None
            if isinstance(err, LearnerProcessError):  # its message holds the learner's traceback
                raise err
            raise RuntimeError("the experience manager's worker failed") from err

    # ------------------------------------------------------------- processing
    def _process_episode(self, ep: Episode) -> None:
        t0 = time.perf_counter()
        self._attribute(ep)
        self._distil(ep)
        self.learner.train_if_ready()
        with self._stats_lock:
            self.episodes_processed += 1
            self.busy_seconds += time.perf_counter() - t0

    # ---------------------------------------------------- the learner process
    def _hand_over(self, ep: Episode) -> None:
        """Process mode: credit here; the episode and its credits wait for the next hand-over
        (every ``handover_every`` episodes, or earlier: :meth:`poll`)."""
        t0 = time.perf_counter()
        with self._handover_lock:
            self._attribute(ep)  # the credits it gives are collected in self._credits
            credits, self._credits = self._credits, []
            self._waiting.append((ep, credits))
            if len(self._waiting) >= self.config.handover_every:
                self.poll()
        with self._stats_lock:
            self.busy_seconds += time.perf_counter() - t0

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
        if self._process is not None:
            with self._handover_lock:
                if self._waiting:
                    self._process.send("episodes", self._waiting)
                    self._waiting = []
                self._process.drain(self._on_learner)
            self._raise_worker_error()

    def _ask(self, kind: str, *payload: Any, timeout: float | None = None) -> tuple[Any, ...]:
        """Process mode: send a request and apply messages until its answer comes."""
        assert self._process is not None
        self._raise_worker_error()
        self.poll()  # the waiting episodes go first: the request is answered after them
        token = self._process.token()
        self._process.send(kind, *payload, token)
        answer = self._process.wait_for(token, self._on_learner, timeout)  # LearnerProcessError, TimeoutError
        self._take_stats(answer[-1])
        self._raise_worker_error()
        return answer

    def _take_stats(self, stats: dict[str, Any]) -> None:
        self._learner_stats = stats
        with self._stats_lock:
            self.episodes_processed = int(stats["episodes_processed"]) + self._processed_offset
            self._episodes_failed = int(stats.get("episodes_failed", 0)) + self._failed_offset

    def _on_learner(self, kind: str, payload: tuple[Any, ...]) -> None:
        """One message of the learner process."""
        if kind == "add":  # an ingested episode's entries
            proposal, version, utility, _ = payload
            self._write([(proposal, version)], utility)
        elif kind == "adds":  # the entries of a batch of episodes, one bank.add
            self._write(payload[0], None)
        elif kind == "trained":
            ids, step = payload
            self.bank.mark_trained(ids, step)
        elif kind == "stats":
            self._take_stats(payload[0])
        elif kind == "error":
            self._error = LearnerProcessError(f"the learner process failed:\n{payload[2]}")
        elif kind in ("done", "saved"):
            self._take_stats(payload[-1])

    def _write(self, proposals: list[tuple[Proposal, int]], utility: float | None) -> None:
        """Write proposed entries (each proposal with its extractor version) into the bank in one
        ``add``; evicted entries leave the learner's samples.

        One ``add`` for several episodes' proposals (process mode) differs from one per episode
        only in a full bank: the batch's new entries do not evict each other, where writes one
        by one could evict an earlier episode's fresh entries. If the bank refuses the batch,
        each proposal is written on its own and the first refusal raised after the others.
        """
        if len(proposals) > 1:
            try:
                res = self.bank.add(**add_arguments(proposals), utility=utility)
            except Exception:  # noqa: BLE001 - a refused add changes nothing: write them one by one
                res = None
            if res is not None:
                self._record_write(res)
                return
        refused: Exception | None = None
        for one in proposals:
            try:
                res = self.bank.add(**add_arguments([one]), utility=utility)
            except Exception as exc:  # noqa: BLE001 - raised after the others are written
                refused = refused or exc
                continue
            self._record_write(res)
        if refused is not None:
            raise refused

    def _record_write(self, res: AddResult) -> None:
        """After a write: evicted entries leave the learner's samples; the count of entries added."""
        if self._learner is not None:
            self._learner.forget(res.evicted)
        elif res.evicted.size:
            self._process.send("forget", res.evicted)  # type: ignore[union-attr]
        with self._stats_lock:
            self.entries_added += int(res.added.sum())

    def _attribute(self, ep: Episode) -> None:
        """Credit the entries that guided ``ep`` (rules: :mod:`experience_wrappers.credit`).

        An episode of a replayed instance (``ep.instance`` with at least one free member) is
        judged by the paired rule (:class:`~experience_wrappers.credit.PairedCredit`: the guided
        outcome minus the mean free outcome of the same instance; the guided episode waits in
        :attr:`paired` until those are in); any other guided episode against the task's recent
        free episodes (:class:`~experience_wrappers.credit.FreeBaseline`), unless it carries the
        critic's ``start_value`` (the value baseline, for envs that cannot replay an instance:
        :func:`~experience_wrappers.credit.value_delta`).
        """
        outcome = ep.outcome
        if not ep.guided:
            self.baseline.add(ep.task_id, outcome)
            with self._stats_lock:
                self.outcomes.add(outcome, guided=False)
        else:
            with self._stats_lock:
                self.outcomes.add(outcome, guided=True)
        inst = ep.instance
        if inst is not None and inst.free > 0 and inst.guided > 0:
            payload = self._credit_payload(ep) if ep.guided else None
            spread = None if ep.success is not None else self.baseline.spread(ep.task_id)
            for res in self.paired.add(inst.key, outcome, guided=ep.guided, members=inst.members, free=inst.free,
                                       payload=payload, free_spread=spread):
                if res.payload is not None:
                    ids, shares, success = res.payload  # what _credit_payload returned
                    self._credit(ids, shares, success, res.delta)
            return
        if not ep.guided:
            return
        if ep.start_value is not None:  # no instance to pair with: the critic's V(s0) (value_delta)
            spread = None if ep.success is not None else self.baseline.spread(ep.task_id)
            with self._stats_lock:
                self.value_credited += 1
            self._credit(*self._credit_payload(ep), value_delta(ep.rewards, ep.start_value, ep.gamma,
                                                                free_spread=spread))
            return
        delta = self.baseline.delta(ep.task_id, outcome, ep.success is not None)
        if delta is None:
            return
        self._credit(*self._credit_payload(ep), delta)

    @staticmethod
    def _credit_payload(ep: Episode) -> tuple[np.ndarray, np.ndarray | None, bool | None]:
        """The ids of the entries shown in ``ep`` (unique), their shares of its delta, its success."""
        ids = np.asarray(ep.injected_ids, dtype=np.int64)
        shares = shown_shares(ep.shown_steps, ep.length)
        if shares is None:
            return np.unique(ids), None, ep.success
        ids, first = np.unique(ids, return_index=True)
        return ids, shares[first], ep.success

    def _credit(self, ids: np.ndarray, shares: np.ndarray | None, success: bool | None, delta: float) -> None:
        """Credit ``delta`` (times each entry's share) to the entries ``ids``: bank utilities and extractor rewards."""
        if ids.size == 0:
            return
        with self._stats_lock:
            self.outcomes.add_delta(delta)
        decay = utility_decay(self.schedule.progress, self.config.decay_start, self.config.decay_end)
        reward = entry_reward(delta, success, self.config.extractor_reward)
        # every entry the whole delta, or (paired credit) its share by the steps it was shown
        found = self.bank.update(ids, delta if shares is None else delta * shares, decay)
        ids = ids[found]
        if ids.size:
            rewards = reward if shares is None else reward * shares[found]
            if self._learner is not None:
                self._learner.add_credit(ids, self.bank.get(ids), rewards)
            else:  # sent to the learner process with the episode (what its samples and ledger need)
                entries = self.bank.get(ids)
                self._credits.append((ids, {k: entries[k] for k in _CREDITED_FIELDS}, rewards))

    def encode_keys(self, observations: Any, task_ids: np.ndarray) -> np.ndarray:
        """Keys of a batch of observations, checked: ``(n, key_dim)`` finite float32 rows."""
        return checked_keys(self.key_encoder, observations, task_ids)

    def _distil(self, ep: Episode, provenance: Provenance = Provenance.EXTRACTED, every: int | None = None,
                utility: float | None = None) -> int:
        assert self.distiller is not None  # sync and async modes
        p = self.distiller.propose(ep, self.trainer_for(ep.task_id), provenance, every)
        if p is None:
            return 0
        if p.size:
            self._write([(p, self.extractor_version)], utility)
        self.learner.add_segments(p.all_contexts, ep.task_id)
        return p.size

    def _merge(self) -> None:
        self.poll()  # process mode: the waiting episodes' credits reach the learner before the merge
        t0 = time.perf_counter()
        merged = self.bank.merge().merged
        if self._learner is not None:
            self._learner.after_merge(merged)
        elif merged:
            self._process.send("merged", merged)  # type: ignore[union-attr]
        with self._stats_lock:
            self.busy_seconds += time.perf_counter() - t0

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

        Returns the number of segments written. Runs on the calling thread (in process mode,
        the learner process distils it while this thread waits).
        """
        check_ingest_args(segment_every, utility)
        if self._process is not None:
            self.poll()
            return int(self._ask("ingest", episode, provenance, segment_every, utility)[1])
        return self._distil(episode, provenance, segment_every, utility)

    # ------------------------------------------------------------------ stats
    def stats(self) -> dict[str, float]:
        """Running figures for logging: outcomes of guided and free episodes, deltas, losses."""
        self.poll()  # process mode: the waiting episodes go to the learner process
        with self._stats_lock:
            out: dict[str, float] = {
                "episodes_submitted": float(self.episodes_submitted),
                "episodes_processed": float(self.episodes_processed),
                "entries_added": float(self.entries_added),
                "extractor_updates": float(self.extractor_version + self.ssl_updates),
                "extractor_version": float(self.extractor_version),
                "ssl_updates": float(self.ssl_updates),
                "queue": float(self.pending),
                "guided_ratio": float(self.guided_ratio),
                "busy_seconds": float(self.busy_seconds),
            }
            if self.value_credited:
                out["value_credited"] = float(self.value_credited)
            for name, mean in self.outcomes.means().items():
                key = name if name == "delta" else f"{name}_outcome"
                out[key] = float("nan") if mean is None else mean
            out.update({f"loss_{k}": v for k, v in self.last_losses.items()})
            if self._process is not None:  # the learner process's own seconds (busy_seconds: this side's)
                out["learner_busy_seconds"] = float(self._learner_stats["busy_seconds"])
        if self.paired.credited or self.paired.open_instances or self.paired.dropped_instances:
            out.update(self.paired.stats())  # only once instances are replayed (paired credit)
        return out

    def free_baseline(self, task_id: int = 0) -> float | None:
        return self.baseline.mean(task_id)

    # ------------------------------------------------------------- save/load
    def save(self, path: str | Path) -> Path:
        """Save bank, extractor and schedules to a folder (after processing what is queued).

        The folder must be new, empty, or one this method wrote; it is replaced whole and
        atomically (see :func:`~experience_wrappers.bank.persistence.replaced_folder`):
        files in it that the save does not write are kept, and a failed or killed save
        leaves the previous folder.
        """
        self.flush()
        path = Path(path)
        with replaced_folder(path, self.STATE_FORMAT, _own_state_name, ManagerFileError) as tmp:
            self._write_state(tmp)
        return path

    def _write_state(self, tmp: Path) -> None:
        self.bank.save(tmp / "bank")
        bank_save_id = json.loads((tmp / "bank" / "meta.json").read_bytes()).get("save_id")
        if self._learner is None:  # the learner process writes its files (after what it was sent before)
            task_files = self._ask("save", str(tmp))[1]
        else:
            task_files = self._learner.save(tmp)
            np.savez(tmp / "samples.npz", **self._learner.sample_arrays(self.context_dim, self.exp_dim),  # type: ignore[arg-type]  # numpy stub: **arrays matched to allow_pickle: bool
                     generator=self._generator.get_state().numpy())
        state = {
            "format": self.STATE_FORMAT, "version": self.STATE_VERSION,
            "config": self.config.to_dict(), "extractor_config": self.extractor_config.to_dict(),
            "key_dim": self.key_encoder.key_dim, "key_encoder": type(self.key_encoder).__name__,
            **self.schedule.state_dict(),  # guided_ratio, progress, rollouts
            "episodes_submitted": self.episodes_submitted, "episodes_processed": self.episodes_processed,
            "entries_added": self.entries_added, "ssl_updates": self.ssl_updates,
            "extractor_version": self.extractor_version, "task_extractors": task_files,
            "baseline": self.baseline.state_dict(),
            "bank_save_id": bank_save_id,  # a restore checks that the bank it read is this save's
            "files": {n: sha256_file(tmp / n) for n in ("extractor.pt", "samples.npz", *task_files.values())},
        }
        (tmp / "manager.json").write_text(json.dumps(state, indent=1))
        files = {**state["files"], "manager.json": sha256_file(tmp / "manager.json")}
        (tmp / "meta.json").write_text(json.dumps({"format": self.STATE_FORMAT, "version": self.STATE_VERSION,
                                                   "files": files}))

    def restore(self, path: str | Path) -> None:
        """Replace this manager's bank content, extractor and schedules with those saved at ``path``.

        The bank object stays the same (``manager.bank`` is the bank the user built, now
        holding the saved entries and config), so the user's own ``bank.save(...)`` saves
        what was restored. Wrappers keep working: they reach the bank through the manager.
        Everything is read and checked first: a bad folder raises and changes nothing.
        """
        path = Path(path)
        for _ in range(READ_ATTEMPTS):
            # every file's bytes read once and checked against meta.json, then parsed from those bytes
            _, blobs = read_consistent(path, self.STATE_FORMAT, self.STATE_VERSION, ManagerFileError)
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
                              "restoring the bank as it is now, with the manager state as saved", stacklevel=2)
                log.warning("restore %s: bank save %s, the manager recorded %s; restoring the bank as it is now",
                               path, bank.save_id, state.get("bank_save_id"))
                break
            # a save replaced the folder between the two reads: read both again
        else:
            raise ManagerFileError(f"cannot load manager state from {str(path)!r}: the folder kept changing while it "
                                "was read (saves in progress?)")
        if state.get("extractor_config") != self.extractor_config.to_dict():
            raise ManagerFileError(f"saved extractor config {state.get('extractor_config')} does not match "
                                f"this manager's {self.extractor_config.to_dict()}")
        self._check_bank_dims(bank)
        # (in process mode the learner process parses its part, last, before anything here changes)
        learner = None if self._learner is None else self._learner.read_state(blobs, state, path)
        # read and check everything before touching this manager: a bad file changes nothing
        try:
            if "samples.npz" not in blobs:
                raise KeyError("samples.npz is not listed in meta.json")
            with np.load(io.BytesIO(blobs["samples.npz"]), allow_pickle=False) as z:
                generator_state = torch.from_numpy(z["generator"])
            schedule = Schedule.parse_state(state)  # guided_ratio, progress, rollouts
            scalars = {name: _count(state, name) for name in ("episodes_submitted", "episodes_processed",
                                                               "entries_added")}
            if state.get("key_dim", self.key_encoder.key_dim) != self.key_encoder.key_dim:
                raise ValueError(f"key_dim is {state.get('key_dim')!r}, this manager's key encoder makes "
                                 f"{self.key_encoder.key_dim}")
            baseline = FreeBaseline(self.config.baseline_window)
            baseline.load_state_dict(state["baseline"])
            torch.Generator().set_state(generator_state)
        except (OSError, KeyError, TypeError, ValueError, RuntimeError, AttributeError) as exc:
            raise ManagerFileError(f"manager state at {str(path)!r} is invalid ({type(exc).__name__}: {exc})") from exc
        self.flush()
        if self._learner is None:  # raises (ManagerFileError) before the learner process changes anything
            cols = bank.entries()
            counts = {k: cols[k] for k in ("id", "n_trained", "last_trained")}
            self._ask("restore", blobs, state, str(path), generator_state, counts)
            self._processed_offset = scalars["episodes_processed"] - int(self._learner_stats["episodes_processed"])
            self._failed_offset = -int(self._learner_stats.get("episodes_failed", 0))  # the restored run's count: 0
            self._episodes_failed = 0
        self.bank.replace_with(bank)
        if self._learner is not None:
            assert learner is not None  # read by self._learner above
            self._learner.adopt(learner)
        self._generator.set_state(generator_state)
        for name, value in scalars.items():
            setattr(self, name, value)
        self.schedule.load_state_dict(schedule)
        self.baseline = baseline


def _close_at_exit(ref: weakref.ReferenceType[ExperienceManager]) -> None:
    manager = ref()
    if manager is None:
        return
    try:
        manager.close()
    except Exception:  # the process is ending after an error already reported
        log.debug("manager close at exit failed", exc_info=True)


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
