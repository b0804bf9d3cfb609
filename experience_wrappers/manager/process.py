"""The learner process (``ManagerConfig(mode="process")``): distillation and extractor training
in a process of their own, so that they never hold the actor's GIL.

The actor's process keeps the bank (every query stays local and never waits on the learner)
and the credit rule (a bank update and a few numbers per episode). The learner process
(``spawn``) keeps the extractor, its trainers, the credited samples and the segments. The
two talk through two ``multiprocessing`` queues, each with its own feeder thread, so a put
never blocks on the other side:

* actor -> learner: ``episodes`` (finished episodes, each with the credits its attribution
  produced and the credited entries' fields as the bank holds them: ``handover_every`` at a
  time, or fewer when the actor polls earlier), ``ingest``
  (a demonstration), ``forget`` (entries evicted), ``merged`` (entries merged away),
  ``flush``, ``save``, ``restore``, ``stop``;
* learner -> actor: ``adds`` (the entries it proposes for a batch of episodes, which the
  actor writes into the bank in one ``add``), ``add`` (an ingested episode's), ``stats``,
  ``done``, ``saved``, ``error``.

The learner never reads the bank, here as in the other modes: what it needs of a credited
entry comes with the credit, and it keeps its own training counts
(:class:`~experience_wrappers.manager.training_counts.TrainingCounts`). The actor's side of
this exchange is :class:`~experience_wrappers.manager.process_backend.ProcessBackend`.

Compared with ``sync`` mode, an episode's entries reach the bank a little later (when the
actor next polls: at every ``handover_every``-th submission, at each rollout's end through
the callback, and in ``stats()``, ``flush()`` and merges); the entries of a batch of
episodes are written with one ``add`` (in a full bank they do not evict each other), and an
eviction reaches the learner after the training steps of the batch it was written for: runs
are not bit-identical to ``sync`` ones. In a bank that never evicts or merges, they are,
batched or not (``tests/test_manager_process.py``).
"""

from __future__ import annotations

import logging
import multiprocessing as mp
import pickle
import queue
import signal
import threading
import time
import traceback
import weakref
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
from gymnasium import spaces

from ..bank import Provenance
from ..extractor import ExtractorConfig
from ..keys import KeyEncoder
from .config import ManagerConfig
from .episode_entries import Distiller, Proposal
from .learner import ExtractorLearner
from .spawn import refers_to_main, start_without_main
from .threads import limit_blas

__all__ = ["LearnerProcess", "LearnerProcessError"]

log = logging.getLogger(__name__)

#: torch (and numpy BLAS) threads in the learner process (one: it shares the machine with the actor)
LEARNER_TORCH_THREADS = 1
#: seconds between the learner process's checks that the actor's process still lives (when idle, and while it
#: works through a backlog of queued messages)
PARENT_CHECK_S = 2.0


class LearnerProcessError(RuntimeError):
    """The learner process failed or died; its traceback is in the message."""


class LearnerProcess:
    """The actor's handle on the learner process (started on construction, ``spawn``).

    Args:
        key_encoder: the frozen key encoder (pickled into the process).
        action_space: the env's action space.
        config: the manager's config.
        extractor_config: the extractor's config.

    Raises:
        TypeError: the key encoder or the action space cannot be pickled (``mode="process"`` needs them to).
    """

    def __init__(self, key_encoder: KeyEncoder, action_space: spaces.Space, config: ManagerConfig,
                 extractor_config: ExtractorConfig) -> None:
        init = {"key_encoder": key_encoder, "action_space": action_space, "config": config,
                "extractor_config": extractor_config}
        try:  # pickled once: checked here, sent as these bytes, read by the child (serve)
            settings = pickle.dumps(init)
        except Exception as exc:  # noqa: BLE001 - any pickling failure means the same thing
            raise TypeError(f"mode='process' sends the key encoder ({type(key_encoder).__name__}) and the action "
                            f"space ({type(action_space).__name__}) to the learner process, and one of them cannot "
                            f"be pickled ({exc!r}); use mode='async'") from exc
        ctx = mp.get_context("spawn")
        self.inbox: Any = ctx.Queue()  # to the learner
        self.outbox: Any = ctx.Queue()  # from the learner
        # the settings go through the inbox, not the process's arguments: spawn writes those into a
        # pipe the parent itself holds open until the write ends, so a child that dies before reading
        # them (a script without a main guard) would leave the parent blocked on a large key encoder
        self.process = ctx.Process(target=serve, args=(self.inbox, self.outbox), name="crl-learner", daemon=True)
        try:
            if refers_to_main(settings):  # the child needs the script's classes: it imports the script
                self.process.start()
            else:  # the script is not run again in the child: no main guard needed
                start_without_main(self.process)
        except RuntimeError as exc:
            if "bootstrapping phase" not in str(exc):
                raise
            raise RuntimeError(
                "mode='process' starts the learner with multiprocessing's 'spawn', which re-imports the "
                "main module where the learner's settings refer to it (here: a key encoder or an action space defined "
                "in the script): in a script, build the env and the model under "
                "`if __name__ == \"__main__\":` (or define the key encoder in a module of its own, or use "
                "mode='async')") from exc
        keep_one_end(self.outbox, self.inbox)  # (the child has its copies: start() has passed them)
        self.inbox.put(settings)  # the queue's feeder thread writes it: never blocks this thread
        # a manager dropped without close() still stops its process
        self._finalizer = weakref.finalize(self, _shutdown, self.process, self.inbox, self.outbox, 5.0)
        self._tokens = 0
        self._lock = threading.Lock()  # one caller at a time drains the outbox

    def send(self, kind: str, *payload: Any) -> None:
        self.inbox.put((kind, payload))

    def token(self) -> int:
        self._tokens += 1
        return self._tokens

    def drain(self, handle: Callable[[str, tuple[Any, ...]], None]) -> None:
        """Apply every message the learner has sent so far (never waits)."""
        with self._lock:
            while True:
                try:
                    kind, payload = self.outbox.get_nowait()
                except queue.Empty:
                    return
                except (EOFError, OSError):  # the learner died writing a message
                    raise self.died() from None
                handle(kind, payload)

    def wait_for(self, token: int, handle: Callable[[str, tuple[Any, ...]], None],
                 timeout: float | None = None) -> tuple[Any, ...]:
        """Apply messages until the answer ``token`` asked for comes; returns its payload.

        Raises:
            TimeoutError: no answer within ``timeout`` seconds.
            LearnerProcessError: the learner process died.
        """
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._lock:
            while True:
                wait = 0.5 if deadline is None else min(0.5, max(deadline - time.monotonic(), 0.0))
                try:
                    kind, payload = self.outbox.get(timeout=wait)
                except (EOFError, OSError):  # the learner died writing a message
                    raise self.died() from None
                except queue.Empty:
                    if not self.process.is_alive():
                        raise self.died() from None
                    if deadline is not None and time.monotonic() >= deadline:
                        raise TimeoutError(f"the learner process did not answer within {timeout} s") from None
                    continue
                if kind in ("done", "saved", "error") and payload[0] == token:
                    if kind == "error":
                        raise_learner_error(payload)
                    return payload
                handle(kind, payload)

    @property
    def alive(self) -> bool:
        return self.process.is_alive()

    def died(self) -> LearnerProcessError:
        """The error of a learner process that ended without being stopped, with what can still be done.

        A broken pipe can be seen before the process is reaped: it is joined first (at most a few
        seconds), so that its exit code is known and ``alive`` is False from here on (``close()``
        then stops without asking the dead learner for a flush)."""
        self.process.join(timeout=5.0)
        code = self.process.exitcode
        return LearnerProcessError(
            f"the learner process died (exit code {'unknown' if code is None else code}); the bank is intact "
            "(it lives in this process), but its manager cannot go on nor be replaced: save the bank (bank.save(folder)) and go on "
            "with ExperienceBank.load(folder) and new wrappers")

    @property
    def pid(self) -> int | None:
        return self.process.pid

    def stop(self, timeout: float = 30.0) -> None:
        """Ask the process to stop after its queue; kill it if it does not within ``timeout``."""
        self._finalizer.detach()
        _shutdown(self.process, self.inbox, self.outbox, timeout)


def _shutdown(process: Any, inbox: Any, outbox: Any, timeout: float) -> None:
    if process.is_alive():
        inbox.put(("stop", ()))
        process.join(timeout)
        if process.is_alive():
            process.kill()
            process.join()
    for q in (inbox, outbox):
        q.close()
        q.cancel_join_thread()


def raise_learner_error(payload: tuple[Any, ...]) -> None:
    """Raise the error the learner sent (its own type where it could be pickled)."""
    _, exc, text = payload
    if isinstance(exc, BaseException):
        raise exc from LearnerProcessError(f"raised in the learner process:\n{text}")
    raise LearnerProcessError(f"the learner process failed:\n{text}")


# ----------------------------------------------------------------- the learner process side
class _Learner:
    """The learner process's state: the extractor learner and the distiller."""

    def __init__(self, init: dict[str, Any], outbox: Any) -> None:
        torch.set_num_threads(LEARNER_TORCH_THREADS)
        limit_blas(LEARNER_TORCH_THREADS)  # numpy's BLAS too: its idle threads would spin on the actor's core
        self.outbox = outbox
        self.config: ManagerConfig = init["config"]
        self.lock = threading.Lock()
        self.learner = ExtractorLearner(init["extractor_config"], self.config, self.lock)
        self.generator = torch.Generator().manual_seed(self.config.seed)
        self.distiller = Distiller(init["key_encoder"], init["action_space"], self.config, self.generator)
        self.episodes = 0
        self.failed = 0  # episodes whose processing raised (reported, and not pending)
        self.busy = 0.0

    def stats(self) -> dict[str, Any]:
        return {"extractor_version": self.learner.extractor_version, "ssl_updates": self.learner.ssl_updates,
                "last_losses": dict(self.learner.last_losses), "episodes_processed": self.episodes,
                "episodes_failed": self.failed,
                "busy_seconds": self.busy}

    def distil(self, ep: Any, provenance: Provenance = Provenance.EXTRACTED,
               every: int | None = None) -> tuple[Proposal, int] | None:
        """The episode's proposal with the extractor version that made it (None: nothing to
        write); its segments join the self-supervised ones."""
        p = self.distiller.propose(ep, self.learner.trainer_for(ep.task_id), provenance, every)
        if p is None:
            return None
        self.learner.add_segments(p.all_contexts, p.task_id)
        return (p, self.learner.extractor_version) if p.size else None

    def handle(self, kind: str, payload: tuple[Any, ...]) -> bool:
        """One message; False to stop."""
        if kind == "episodes":
            (batch,) = payload
            t0 = time.perf_counter()
            proposals: list[tuple[Proposal, int]] = []
            try:
                for ep, credits in batch:  # in order, each as sync mode would: credit, distil, train
                    try:
                        for ids, entries, reward in credits:
                            self.learner.add_credit(ids, entries, reward)
                        made = self.distil(ep)
                        if made is not None:
                            proposals.append(made)
                        self.learner.train_if_ready()
                        self.episodes += 1
                    except Exception as exc:  # noqa: BLE001 - one bad episode costs only itself
                        self.failed += 1
                        report_error(self.outbox, kind, None, exc)
            finally:  # what was made reaches the actor, even when the loop is cut short
                self.busy += time.perf_counter() - t0
                if proposals:
                    self.outbox.put(("adds", (proposals,)))
                self.outbox.put(("stats", (self.stats(),)))
        elif kind == "ingest":
            ep, provenance, every, utility, token = payload
            made = self.distil(ep, provenance, every)
            if made is not None:
                self.outbox.put(("add", (*made, utility, token)))
            self.outbox.put(("done", (token, 0 if made is None else made[0].size, self.stats())))
        elif kind == "forget":
            (ids,) = payload
            self.learner.forget(ids)
        elif kind == "merged":
            (merged,) = payload
            self.learner.after_merge(merged)
        elif kind == "flush":
            (token,) = payload
            self.outbox.put(("done", (token, self.stats())))
        elif kind == "save":
            folder, token = payload
            self.outbox.put(("saved", (token, self.learner.save(Path(folder), self.generator), self.stats())))
        elif kind == "restore":
            blobs, state, path, generator_state, token = payload
            parsed = self.learner.read_state(blobs, state, Path(path))  # raises before changing anything
            self.learner.adopt(parsed)
            self.generator.set_state(generator_state)
            self.outbox.put(("done", (token, self.stats())))
        elif kind == "stop":
            return False
        else:
            raise ValueError(f"unknown message {kind!r}")
        return True


def serve(inbox: Any, outbox: Any) -> None:
    """The learner process's loop: its settings (the first message), then one message at a time,
    until ``stop``, or until the actor's process is gone (killed: nobody reads what this makes).

    Ctrl-C is ignored here: a terminal sends it to the actor too, whose exit stops this process
    (one traceback, the actor's, instead of two)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    keep_one_end(inbox, outbox)
    state = _Learner(pickle.loads(inbox.get()), outbox)  # the settings, pickled once by LearnerProcess
    parent = mp.parent_process()
    orphaned = False
    checked = time.monotonic()
    while True:
        try:
            kind, payload = inbox.get(timeout=PARENT_CHECK_S)
        except queue.Empty:
            kind = None
        except (EOFError, OSError):  # the actor died writing a message: its end of the inbox is closed
            orphaned = True
            break
        # the actor is looked for when the inbox is quiet, and every PARENT_CHECK_S while a backlog is
        # worked through (a killed actor's queued episodes would otherwise keep this process busy)
        if kind is None or time.monotonic() - checked > PARENT_CHECK_S:
            checked = time.monotonic()
            if parent is not None and not parent.is_alive():
                orphaned = True
                break
        if kind is None:
            continue
        try:
            if not state.handle(kind, payload):
                break
        except BaseException as exc:  # noqa: BLE001 - every failure goes back to the actor
            report_error(outbox, kind, payload[-1] if kind in ("ingest", "flush", "save", "restore") else None, exc)
    if orphaned:  # nobody reads the outbox any more: waiting for its pipe to drain would never end
        outbox.cancel_join_thread()
    outbox.close()
    outbox.join_thread()


def keep_one_end(reads: Any, writes: Any) -> None:
    """Close the ends of two queues' pipes that a process never uses: the write end of the queue it
    ``reads`` and the read end of the queue it ``writes`` (spawn gives the learner both ends, and the
    actor keeps both).

    A write end held by the reader itself kept its read from ever ending: a process killed while it
    wrote a message larger than the pipe left the other waiting for the rest, forever (the learner
    an orphan, or the actor hung instead of raising :class:`LearnerProcessError`). Closed, the read
    ends with EOF once the writer is gone.
    """
    for end in (getattr(reads, "_writer", None), getattr(writes, "_reader", None)):  # (multiprocessing's Queue)
        if end is not None:
            end.close()


def report_error(outbox: Any, kind: str, token: int | None, exc: BaseException) -> None:
    """Send the actor the failure of a ``kind`` message (raised again at its next call), logged here too."""
    text = traceback.format_exc()
    log.error("the learner process failed on %r: %s", kind, text)
    try:
        pickle.dumps(exc)
        sent: Any = exc
    except Exception:  # noqa: BLE001
        sent = None
    outbox.put(("error", (token, sent, text)))
