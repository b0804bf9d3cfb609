"""The local stand-in of the experience service's learner (its bank's: :mod:`.remote_bank`).

:class:`RemoteManager` stands in for the service's :class:`~experience_wrappers.ExperienceManager` in a wrapper and in
:class:`~integrations.sb3.CRLCallback`: it encodes keys locally with the learner's frozen
key encoder, sends finished episodes without waiting, keeps the callback's schedules and
(``local_reads``) holds a read replica of the service's bank that the retrievals query here.
"""

from __future__ import annotations

import logging
import threading
import time
import weakref
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from experience_wrappers import SuccessReplay
from experience_wrappers.keys.base import checked_keys
from experience_wrappers.manager import Episode, SuccessReports
from experience_wrappers.schedule import Schedule
from experience_wrappers.validators import check_int

from ._require import require_ray
from .errors import ServiceError
from .replica_holder import ReplicaHolder

log = logging.getLogger(__name__)

if TYPE_CHECKING:
    from gymnasium import spaces

    from experience_wrappers import KeyEncoder, ManagerConfig
    from experience_wrappers.manager import ExperienceSource

    from .service import ExperienceService

__all__ = ["RemoteManager"]


class RemoteManager:
    """Stands in for the service's learner in this process.

    What a wrapper and :class:`~integrations.sb3.CRLCallback` use is here (it serves
    :class:`~experience_wrappers.manager.ExperienceSource`, as mypy checks):
    ``encode_keys`` (local: the learner's frozen key encoder was copied over),
    ``submit`` (batched: episodes are sent ``submit_batch`` at a time, or when the oldest
    has waited ``submit_delay`` seconds, in one call that does not wait; errors surface at
    a later call or at :meth:`flush`, which sends what is left),
    ``guided_ratio`` and ``progress`` (kept here, forwarded to the service),
    ``poll``, ``request_merge``, ``flush``, ``stats`` and ``free_baseline`` (cached for
    ``baseline_ttl`` seconds, as the callback asks for it once per finished episode).

    Local reads (``local_reads=True``, the default of ``service.manager``): :attr:`replicas`
    holds a :class:`~experience_wrappers.bank.BankReplica` of the service's bank, which the
    wrappers' retrievals query in this process (a local call, no round trip). It is fetched
    when the stand-in is made and refreshed at :meth:`poll` (each rollout's end under
    ``CRLCallback``) when the service's bank has changed since (one call that waits: the
    version check, plus the copy when it changed); the retrievals counted on it go back to
    the service then (and at :meth:`flush`). Where nothing polls (RLlib EnvRunners,
    per-env wrappers in ``SubprocVecEnv`` workers), an episode's start or end (when the
    wrappers read ``guided_ratio`` or submit) refreshes it once ``replica_ttl`` seconds have
    passed since the last refresh. What the retrievals see lags
    the bank by up to one rollout (``stats()``: ``replica_lag``, in bank versions, beside
    ``learner_backlog``, the episodes the learner has not processed yet).

    Several learners may share one service; the schedules they forward overwrite each
    other there (they only set the utility decay's schedule), while each keeps its own
    ``guided_ratio`` for its own episodes.

    Args:
        service: the service.
        info: what :meth:`ServiceActor.attach <integrations.ray.ServiceActor.attach>` returned.
        max_pending: sent calls not yet checked before the oldest are waited for.
        baseline_ttl: seconds a free baseline fetched from the service is reused.
        submit_batch: episodes sent per call.
        submit_delay: seconds an episode may wait for its batch to fill (checked at each
            submission and each key encoding, i.e. at every retrieval).
        follow_schedule: read ``guided_ratio`` from the service (at most once per
            ``baseline_ttl`` seconds) instead of keeping the value set here: for envs whose
            schedule is set by another process (RLlib's EnvRunners).
        local_reads: retrievals query a local replica of the bank (see above); False: every
            retrieval is a call to the service.
        replica_ttl: seconds after the last refresh at which an episode's start or end
            refreshes the replica itself (None: only :meth:`poll` refreshes it).
    """

    def __init__(self, service: ExperienceService, info: dict[str, Any], *, max_pending: int = 256,
                 baseline_ttl: float = 1.0, submit_batch: int = 16, submit_delay: float = 0.5,
                 follow_schedule: bool = False, local_reads: bool = True,
                 replica_ttl: float | None = 10.0) -> None:
        submit_batch = check_int("submit_batch", submit_batch, minimum=1)
        if not (np.isfinite(submit_delay) and submit_delay >= 0):
            raise ValueError(f"submit_delay must be a finite number >= 0, got {submit_delay!r}")
        if not isinstance(local_reads, bool):
            raise TypeError(f"local_reads must be a bool, got {local_reads!r}")
        if replica_ttl is not None and not (np.isfinite(replica_ttl) and replica_ttl > 0):
            raise ValueError(f"replica_ttl must be None or a finite number > 0, got {replica_ttl!r}")
        self.service = service
        self.bank = service.bank
        self.replica_ttl = replica_ttl
        #: replica refreshes asked of the service (one call each; ``replicas.swaps``: those that brought a copy)
        self.replica_checks = 0
        self._refreshed_at = time.monotonic()
        #: the local replica the retrievals query (``local_reads``); None: they go to the service's bank
        self.replicas: ReplicaHolder | None = ReplicaHolder(self.bank) if local_reads else None
        #: the injectors of the env being trained through this stand-in (see ``mark_training``)
        self.training_injectors: weakref.WeakSet[Any] | None = None
        #: the ``learn`` call a CRLCallback trains through this stand-in (see ``integrations.sb3.guards``)
        self.learn_claim: tuple[Any, Any] | None = None
        self.key_encoder: KeyEncoder = info["key_encoder"]
        self.config: ManagerConfig = info["config"]
        self.observation_space: spaces.Space = info["observation_space"]
        self.action_space: spaces.Space = info["action_space"]
        self.exp_dim = int(info["exp_dim"])
        self.max_pending = max_pending
        self.baseline_ttl = baseline_ttl
        self.submit_batch = submit_batch
        self.submit_delay = float(submit_delay)
        self._outbox: list[Episode] = []
        self._outbox_since = 0.0
        #: guards the outbox and the refs sent, which the late-send timer shares (:meth:`_send_late`)
        self._lock = threading.Lock()
        self._late_error: Exception | None = None  # the timer's failed send, raised at the next call
        self.follow_schedule = bool(follow_schedule)
        self._schedule_read = -np.inf
        # advanced by CRLCallback; each advance forwards the guided ratio and progress (setters below)
        self.schedule = Schedule(on_change=self._forward_schedule)
        #: this worker's successful-state replay for self-imitation (kept here, not in the service;
        #: set by CRLCallback)
        self.replay: SuccessReplay | None = None
        #: whether this worker's envs report success, read by all of its wrappers
        self.success_reports = SuccessReports()
        self.episodes_sent = 0
        self._guided_ratio = 0.5
        self._progress = 0.0
        self._pending: list[Any] = []
        self._baselines: dict[int, tuple[float, float | None]] = {}

    def __reduce__(self) -> tuple[Any, tuple[Any, ...]]:
        return (_manager_of, (self.service, self.observation_space, self.action_space, self.local_reads))

    def __repr__(self) -> str:
        return (f"RemoteManager(service={self.service.name!r}, pending={len(self._pending)}, "
                f"local_reads={self.local_reads})")

    @property
    def reader(self) -> Any:
        """What the wrappers' retrievals query: the local replica (``local_reads``), else the service's bank."""
        return self.bank if self.replicas is None else self.replicas.current

    @property
    def local_reads(self) -> bool:
        """Whether the retrievals query a local replica of the bank (fixed at construction)."""
        return self.replicas is not None

    # ------------------------------------------------------------- schedules
    def _forward_schedule(self, name: str, value: float) -> None:
        if name == "guided_ratio":
            self.guided_ratio = value
        elif name == "progress":
            self.progress = value

    @property
    def rollouts(self) -> int:
        """Rollouts finished (``schedule.rollouts``)."""
        return self.schedule.rollouts

    @property
    def guided_ratio(self) -> float:
        """The guided ratio (from the service in follow mode); read by wrappers at each episode start,
        which is also when queued episodes older than ``submit_delay`` go out."""
        self._send_due()
        if self.follow_schedule and time.monotonic() - self._schedule_read >= self.baseline_ttl:
            self._guided_ratio = float(self.service.call("schedule")["guided_ratio"])
            self._schedule_read = time.monotonic()
        return self._guided_ratio

    @guided_ratio.setter
    def guided_ratio(self, value: float) -> None:
        if float(value) != self._guided_ratio:
            self._guided_ratio = float(value)
            self._track(self.service.send("set_schedule", guided_ratio=self._guided_ratio))

    @property
    def progress(self) -> float:
        return self._progress

    @progress.setter
    def progress(self, value: float) -> None:
        if float(value) != self._progress:
            self._progress = float(value)
            self._track(self.service.send("set_schedule", progress=self._progress))

    # ------------------------------------------------------------------ keys
    def encode_keys(self, observations: Any, task_ids: np.ndarray) -> np.ndarray:
        """Keys of a batch of observations, as the service's learner computes them."""
        keys = checked_keys(self.key_encoder, observations, task_ids)
        self._send_due()
        return keys

    # ------------------------------------------------------------ episodes
    @property
    def episodes_submitted(self) -> int:
        """Episodes this client has handed over (sent, or queued to be sent)."""
        return self.episodes_sent

    def submit(self, episode: Episode) -> None:
        """Queue a finished episode for the service's learner (sent in batches; never waits for it).

        What is queued is sent at the latest about ``2 * submit_delay`` after the first of it, from a
        timer, also where no call follows (a Ray task that ends without ``close()``).
        """
        self._raise_late_error()
        if self.service.shut_down:  # (sent later from a timer, it would fail there, out of the caller's sight)
            raise ServiceError(f"the experience service {self.service.name!r} was shut down (service.shutdown()): "
                               "this env's episodes have nowhere to go; close the env, or wrap a new one on a new "
                               "service")
        with self._lock:
            if not self._outbox:
                self._outbox_since = time.monotonic()
                self._arm_late_send()
            self._outbox.append(episode)
        self.episodes_sent += 1
        if len(self._outbox) >= self.submit_batch:
            self._send_outbox()
        self._send_due()

    def _send_due(self) -> None:
        """Send the queued episodes if the oldest has waited ``submit_delay``, and refresh the
        replica if nothing has for ``replica_ttl`` seconds (cheap when neither is due)."""
        now = time.monotonic()
        if self._outbox and now - self._outbox_since >= self.submit_delay:
            self._send_outbox()
        if (self.replicas is not None and self.replica_ttl is not None
                and now - self._refreshed_at >= self.replica_ttl):
            self.refresh_replica()  # nothing has polled for replica_ttl seconds

    def _send_outbox(self) -> None:
        with self._lock:
            ref = self._send_queued()
        if ref is not None:
            self._track(ref)

    def _send_queued(self) -> Any:
        """Send what is queued (the caller holds the lock: taken and sent under it, batches reach the service
        in the order queued); the call's ref, or None where nothing was queued."""
        if not self._outbox:
            return None
        batch, self._outbox = self._outbox, []
        return self.service.send("submit", batch)

    def _raise_late_error(self) -> None:
        error, self._late_error = self._late_error, None
        if error is not None:
            raise error

    def _arm_late_send(self) -> None:
        if self.submit_delay > 0:
            timer = threading.Timer(2 * self.submit_delay, self._send_late)
            timer.daemon = True
            timer.start()

    def _send_late(self) -> None:
        """The timer's send of what is still queued: its ref is checked at the next call from here, and a
        failure to send is raised there (logged now: a task that ends has no next call)."""
        with self._lock:
            try:
                ref = self._send_queued()
            except Exception as exc:  # noqa: BLE001 - kept for the next call, which raises it
                self._late_error = exc
                log.warning("sending the queued episodes to the experience service failed: %r", exc)
                return
            if ref is not None:
                self._pending.append(ref)

    def poll(self) -> None:
        """Send the queued episodes now, then (``local_reads``) refresh the replica if the
        service's bank has changed (:class:`~integrations.sb3.CRLCallback` calls it at every
        rollout's end, as it does an in-process manager's ``poll``)."""
        self._send_outbox()
        if self.replicas is not None:
            self.refresh_replica()

    # ------------------------------------------------------------- replica
    def refresh_replica(self) -> bool:
        """Send the retrievals counted on the replica, and swap in the service's replica if the
        bank's version is not the replica's any more (one call that waits). Returns whether it
        swapped; False without ``local_reads``."""
        holder = self.replicas
        if holder is None:
            return False
        self._send_hits(holder.current.take_hits())  # sent first: the new copy counts them
        replica = self.service.replica_since(holder.current.version)
        self._refreshed_at = time.monotonic()
        self.replica_checks += 1
        if replica is None:
            return False
        holder.publish(replica)
        self._send_hits(holder.swap())  # counted by another thread in between
        return True

    def _send_hits(self, hits: np.ndarray) -> None:
        if len(hits):
            self._track(self.service.send("record_retrievals", hits))

    def request_merge(self) -> None:
        self._send_outbox()  # the merge comes after the episodes handed in before it
        self._track(self.service.send("request_merge"))

    def flush(self, timeout: float | None = None) -> None:
        """Send the queued episodes (and the retrievals counted on the replica), then wait until
        everything sent from here is processed."""
        self._hand_over(timeout)
        self.service.flush(timeout)

    def close(self) -> None:
        """Send what is queued here and wait until the service has it, within the handle's timeout: its
        calls answered, not the learner's backlog (other clients' episodes too) processed, which
        :meth:`flush` waits for and which would hold every client of the service meanwhile.

        After the service's :meth:`~integrations.ray.ExperienceService.shutdown` (which took what was
        queued then) there is nothing to send to: close returns."""
        if self.service.shut_down:
            with self._lock:
                self._outbox, self._pending = [], []
            return
        self._hand_over(self.service.timeout)

    def _hand_over(self, timeout: float | None) -> None:
        """Send the queued episodes and the replica's retrieval counts; wait for the calls sent from here."""
        self._raise_late_error()
        self._send_outbox()
        if self.replicas is not None:
            self._send_hits(self.replicas.current.take_hits())
        with self._lock:
            pending, self._pending = self._pending, []
        if pending:  # (nothing sent: nothing to wait for, even with the service gone)
            self.service.wait(pending, timeout=timeout)

    @property
    def pending(self) -> int:
        """Episodes queued here, plus calls sent from here that have not been checked yet."""
        return len(self._outbox) + len(self._pending)

    def _track(self, ref: Any) -> None:
        with self._lock:
            self._pending.append(ref)
            if len(self._pending) < self.max_pending:
                return
            pending, self._pending = self._pending, []
        ray = require_ray()
        ready, waiting = ray.wait(pending, num_returns=len(pending), timeout=0)
        try:
            self.service.wait(ready)  # raises the first error the service reported
            if len(waiting) >= self.max_pending:  # the service is behind: wait for the oldest half
                half = len(waiting) // 2
                self.service.wait(waiting[:half])
                waiting = waiting[half:]  # (only once answered: refs of a wait that raised stay tracked)
        finally:
            with self._lock:  # (with what the timer sent meanwhile)
                self._pending = waiting + self._pending

    # --------------------------------------------------------------- reads
    def stats(self) -> dict[str, float]:
        """The learner's figures (episodes processed, losses, queue, busy seconds), and how far
        behind things are: ``learner_backlog`` (episodes handed over, from every client, that
        the learner has not processed yet, with the ones still queued here), ``bank_version``
        and, with ``local_reads``, ``replica_lag`` (bank versions the replica is behind) and
        ``replica_swaps``."""
        out = dict(self.service.call("learner_stats"))
        out["client_pending"] = float(self.pending)
        out["learner_backlog"] = out.get("learner_backlog", 0.0) + len(self._outbox)
        holder = self.replicas
        if holder is not None:
            out["replica_lag"] = float(max(0.0, out["bank_version"] - holder.current.version))
            out["replica_swaps"] = float(holder.swaps)
        return out

    def free_baseline(self, task_id: int = 0) -> float | None:
        now = time.monotonic()
        hit = self._baselines.get(int(task_id))
        if hit is not None and now - hit[0] < self.baseline_ttl:
            return hit[1]
        value = self.service.call("free_baseline", int(task_id))
        self._baselines[int(task_id)] = (now, value)
        return value

    def save(self, path: str | Path) -> Path:
        """Save the learner's state (bank, extractor, schedules) on the service's machine."""
        self.flush()
        return self.service.save_state(path)

    def restore(self, path: str | Path) -> None:
        self.flush()
        self.service.restore_state(path)


def _manager_of(service: ExperienceService, observation_space: Any, action_space: Any,
                local_reads: bool | None = None) -> RemoteManager:
    return service.manager(observation_space, action_space, local_reads=local_reads)


if TYPE_CHECKING:  # mypy checks that RemoteManager serves every wrapper and the callback
    _serves: type[ExperienceSource] = RemoteManager
