"""``process`` mode's learner backend: the actor's side of the learner process.

The manager's credit runs here, on the caller's thread; the episode and its credits wait
until the next hand-over (every ``handover_every`` episodes, or earlier: :meth:`ProcessBackend.poll`).
The learner process (:mod:`.process`) distils and trains, and answers with proposed
entries (written into the bank here, by the :class:`~.episode_entries.EntryWriter`), figures
and errors.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

from gymnasium import spaces

from ..bank import Provenance
from ..extractor import ExtractorConfig
from ..keys import KeyEncoder
from .backend import Credit, CreditRule, LearnerFigures, Restore
from .config import ManagerConfig
from .episode import Episode
from .episode_entries import EntryWriter
from .inline_backend import read_generator
from .process import LEARNER_TORCH_THREADS, LearnerProcess, LearnerProcessError
from .threads import leave_cores, release

__all__ = ["ProcessBackend"]


class ProcessBackend:
    """The learner in a process of its own (started on construction; see :class:`.LearnerProcess`).

    Takes :class:`~.inline_backend.InlineBackend`'s arguments.

    Raises:
        TypeError: the key encoder cannot be pickled.
    """

    def __init__(self, key_encoder: KeyEncoder, action_space: spaces.Space, config: ManagerConfig,
                 extractor_config: ExtractorConfig, writer: EntryWriter, credit: CreditRule,
                 lock: threading.Lock) -> None:
        self.config = config
        self.writer = writer
        self.credit = credit
        self.lock = lock
        self.process = LearnerProcess(key_encoder, action_space, config, extractor_config)
        self.holds_cores = config.limit_actor_threads  # the actor's torch threads leave the learner its core
        if self.holds_cores:
            leave_cores(LEARNER_TORCH_THREADS)
        self.stats: dict[str, Any] = {"extractor_version": 0, "ssl_updates": 0, "last_losses": {},
                                      "episodes_processed": 0, "busy_seconds": 0.0}
        # credited episodes waiting to go to the learner process together (poll)
        self.waiting: list[tuple[Episode, list[Credit]]] = []
        # held from an episode's credit until it is sent, and over each poll, so that no
        # eviction's "forget" overtakes a credit of the evicted entry, whichever thread polls
        self.handover_lock = threading.RLock()
        self.closed = False  # close() stopped the learner process: polls and flushes do nothing, requests are refused
        self.episodes_processed = 0
        self.episodes_failed = 0
        self.processed_offset = 0  # episodes_processed minus the learner process's count
        self.failed_offset = 0  # minus the learner process's failures before a restore
        self.busy_seconds = 0.0  # this side's: credit and hand-over
        self.handed = 0  # episodes handed to this backend (the learner process's counts are of its life)
        self._error: BaseException | None = None

    # -------------------------------------------------------------- protocol
    @property
    def local(self) -> None:
        return None

    @property
    def distiller(self) -> None:
        return None

    @property
    def pid(self) -> int | None:
        return self.process.pid

    @property
    def pending(self) -> int:
        """Episodes handed to this backend that the learner process has not processed (nor failed on)."""
        done = int(self.stats["episodes_processed"]) + int(self.stats.get("episodes_failed", 0))
        return max(self.handed - done, 0)

    def episode(self, ep: Episode) -> None:
        """Credit here; the episode and its credits wait for the next hand-over."""
        t0 = time.perf_counter()
        with self.handover_lock:
            credits = self.credit(ep)  # (raises for a malformed episode: then it was never handed over)
            with self.lock:
                self.handed += 1
            self.waiting.append((ep, credits))
            if len(self.waiting) >= self.config.handover_every:
                self._poll_now()
        with self.lock:
            self.busy_seconds += time.perf_counter() - t0

    def merge(self) -> None:
        self._poll_now()  # the waiting episodes' credits reach the learner before the merge
        t0 = time.perf_counter()
        merged = self.writer.merge()
        if merged:
            self.process.send("merged", merged)
        with self.lock:
            self.busy_seconds += time.perf_counter() - t0

    def ingest(self, ep: Episode, provenance: Provenance, every: int | None, utility: float | None) -> int:
        """Distilled by the learner process while this thread waits."""
        return int(self.ask("ingest", ep, provenance, every, utility)[1])

    def poll(self) -> None:
        """Hand the waiting episodes over (one message), then write the entries the learner has
        proposed so far (never waits); under the hand-over lock, in that order."""
        self._poll_now()

    def _poll_now(self) -> None:
        if self.closed:  # (its learner has stopped: nothing to hand over or take)
            return
        with self.handover_lock:
            if self.waiting:
                self.process.send("episodes", self.waiting)
                self.waiting = []
            self.process.drain(self.on_learner)
        self.check()
        if not self.process.alive:  # killed (an OOM kill, say): said at the next poll, not at the end of training
            raise self.process.died()

    def flush(self, timeout: float | None = None) -> None:
        if not self.closed:
            self.ask("flush", timeout=timeout)

    def close(self) -> None:
        if self.closed:
            return
        try:
            if self.process.alive:
                self.flush()
        finally:
            self.closed = True
            self.process.stop()
            if self.holds_cores:
                self.holds_cores = False
                release()

    def check(self) -> None:
        if self._error is not None:
            err, self._error = self._error, None
            raise err

    def figures(self) -> LearnerFigures:
        s = self.stats
        return LearnerFigures(extractor_version=int(s["extractor_version"]), ssl_updates=int(s["ssl_updates"]),
                              last_losses=dict(s["last_losses"]), episodes_processed=self.episodes_processed,
                              episodes_failed=self.episodes_failed, busy_seconds=self.busy_seconds,
                              learner_busy_seconds=float(s["busy_seconds"]))

    def save(self, folder: Path) -> dict[str, str]:
        """The learner process writes its files (after what it was sent before)."""
        return dict(self.ask("save", str(folder))[1])

    def prepare_restore(self, blobs: dict[str, bytes], state: dict[str, Any], path: Path) -> Restore:
        generator_state = read_generator(blobs, path)

        def apply(episodes_processed: int) -> None:
            # the learner process parses its part, and raises (ManagerFileError) before it changes anything
            self.ask("restore", blobs, state, str(path), generator_state)
            with self.lock:
                self.processed_offset = episodes_processed - int(self.stats["episodes_processed"])
                self.failed_offset = -int(self.stats.get("episodes_failed", 0))  # the restored run's count: 0
                self.episodes_processed, self.episodes_failed = episodes_processed, 0
        return apply

    # -------------------------------------------------------------- messages
    def ask(self, kind: str, *payload: Any, timeout: float | None = None) -> tuple[Any, ...]:
        """Send a request and apply messages until its answer comes (after the waiting episodes)."""
        if self.closed and kind != "flush":
            raise RuntimeError(f"this manager is closed: its learner process has stopped, so it cannot {kind} "
                               "(save before close())")
        self.check()
        self._poll_now()
        token = self.process.token()
        self.process.send(kind, *payload, token)
        answer = self.process.wait_for(token, self.on_learner, timeout)  # LearnerProcessError, TimeoutError
        self.take_stats(answer[-1])
        self.check()
        return answer

    def take_stats(self, stats: dict[str, Any]) -> None:
        """Keep the learner process's latest figures; its episode counts become this side's."""
        self.stats = stats
        with self.lock:
            self.episodes_processed = int(stats["episodes_processed"]) + self.processed_offset
            self.episodes_failed = int(stats.get("episodes_failed", 0)) + self.failed_offset

    def on_learner(self, kind: str, payload: tuple[Any, ...]) -> None:
        """One message of the learner process."""
        if kind == "add":  # an ingested episode's entries
            proposal, version, utility, _ = payload
            self.writer.write([(proposal, version)], utility, self.forget)
        elif kind == "adds":  # the entries of a batch of episodes, one bank.add
            self.writer.write(payload[0], None, self.forget)
        elif kind == "stats":
            self.take_stats(payload[0])
        elif kind == "error":
            self._error = LearnerProcessError(f"the learner process failed:\n{payload[2]}")
        elif kind in ("done", "saved"):
            self.take_stats(payload[-1])

    def forget(self, ids: Any) -> None:
        """Evicted entries leave the learner process's samples."""
        self.process.send("forget", ids)
