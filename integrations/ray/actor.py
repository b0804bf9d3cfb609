"""The process side of the experience service: one bank and its learner inside a Ray actor.

:class:`ServiceActor` is a plain class; :func:`~integrations.ray.start_service` turns it
into a Ray actor. Ray runs an actor's calls one at a time, in the order each caller sent
them, so every call sees the bank between two whole calls: an ``add`` of a batch is
never seen half done, a ``save`` is a snapshot between calls, and two writers' credits
never interleave inside one ``update``. The learner (an
:class:`~experience_wrappers.ExperienceManager`, attached on first use) runs in this
process, in ``async`` mode on its own thread, so it never holds a PPO process's GIL.

Clients that read locally (``RemoteManager(local_reads=True)``) ask for a read replica of the
bank when theirs is of an older version (:meth:`ServiceActor.replica_since`) and hand back the
retrievals they counted on it (:meth:`ServiceActor.record_retrievals`).
"""

from __future__ import annotations

import os
import pickle
import socket
import sys
import time
import warnings
from pathlib import Path
from typing import Any

import numpy as np
from gymnasium import spaces

from experience_wrappers import BankConfig, ExperienceBank, ExperienceManager, KeyEncoder
from experience_wrappers.bank.results import AddResult, MergeResult, QueryResult
from experience_wrappers.manager import Episode, manager_for_bank

__all__ = ["ServiceActor"]


class ServiceActor:
    """One :class:`ExperienceBank` and, once attached, its :class:`ExperienceManager`.

    Args:
        config: the bank's config (a new bank), ignored when ``restore`` holds a bank.
        dims: ``key_dim`` / ``value_dim`` / ``context_dim`` fixed up front.
        restore: a bank folder (written by :meth:`save`) to start from when it exists; a
            restarted actor (``max_restarts``) reloads from it, so it comes back with the
            contents of the last save there.
        torch_threads: torch's intra-op threads in this process (the learner's); None leaves
            torch's default (one per core, which oversubscribes a node shared with rollouts).
        switch_interval: Python's GIL switch interval in this process, in seconds. The
            learner's thread and the thread answering calls share the GIL; Python's default
            (5 ms) lets a busy learner delay each answer by up to that much.

    >>> actor = ServiceActor(BankConfig(capacity=16), torch_threads=None, switch_interval=None)
    >>> actor.add(np.eye(3, dtype=np.float32), np.ones((3, 2), dtype=np.float32)).ids.tolist()
    [0, 1, 2]
    >>> actor.len(), actor.query(np.eye(3)[:1], 1, mode="knn").ids.tolist()
    (3, [[0]])
    """

    def __init__(self, config: BankConfig | None = None, dims: dict[str, int] | None = None,
                 restore: str | None = None, torch_threads: int | None = 1,
                 switch_interval: float | None = 0.0005) -> None:
        if torch_threads is not None:
            import torch

            torch.set_num_threads(int(torch_threads))
        if switch_interval is not None:
            sys.setswitchinterval(float(switch_interval))
        self.restored = bool(restore) and Path(str(restore)).exists()
        if self.restored:
            self.bank = ExperienceBank.load(str(restore))
        else:
            self.bank = ExperienceBank(config or BankConfig(), **(dims or {}))
        self.manager: ExperienceManager | None = None
        self.schedule_values = {"guided_ratio": 0.5, "progress": 0.0}
        self.calls = 0
        # the service's version is its bank's plus this base, raised when the bank is replaced
        # (load, restore_state), so that versions only grow and a client's replica of the old bank is stale
        #: whether Ray restarted this actor (``max_restarts``): its learner and queue are gone, its bank
        #: came back from ``restore``; its versions start past any its earlier life handed out
        self.restarted = _reconstructed()
        self._version_base = time.time_ns() // 1_000 if self.restarted else 0
        self._replica: tuple[int, bytes] | None = None  # the last replica handed out, pickled, and its version
        #: replicas copied from the bank for clients (not counting the ones served from the cache)
        self.replicas_made = 0

    # ----------------------------------------------------------------- status
    def ping(self) -> dict[str, Any]:
        """Where the service runs and how big its bank is (also a cheap liveness check)."""
        return {"pid": os.getpid(), "host": socket.gethostname(), "size": len(self.bank),
                "calls": self.calls, "attached": self.manager is not None, "restored": self.restored, "restarted": self.restarted,
                "version": self.version(), "replicas_made": self.replicas_made}

    def describe(self) -> dict[str, Any]:
        """The bank's config and dims (what a client caches)."""
        return {"config": self.bank.config, "dims": self.bank.dims}

    # --------------------------------------------------------------- replicas
    def version(self) -> int:
        """The bank's version as clients see it: the changes committed so far (it only grows,
        also across :meth:`load` and :meth:`restore_state`)."""
        return self._version_base + self.bank.version

    def replica_since(self, version: int) -> bytes | None:
        """A read replica of the bank, pickled (its ``version`` is :meth:`version`'s at the copy), or
        None when ``version`` is the bank's now. Clients asking for the same version share one copy.

        Pickled here, not by Ray: Ray hands numpy arrays over from its object store without a
        copy, read-only, and a replica counts its retrievals in its own columns.
        """
        if not isinstance(version, (int, np.integer)) or isinstance(version, bool):
            raise TypeError(f"version must be an int, got {version!r}")
        now = self.version()
        if int(version) == now:
            return None
        self.calls += 1
        if self._replica is None or self._replica[0] != now:
            replica = self.bank.replica()
            # the service's version: the copy's own (the learner's thread may have written since ``now``)
            replica.version += self._version_base
            self._replica = (replica.version, pickle.dumps(replica, protocol=pickle.HIGHEST_PROTOCOL))
            self.replicas_made += 1
        return self._replica[1]

    def record_retrievals(self, ids: Any) -> int:
        """Count a client's retrievals on its replica (:meth:`ExperienceBank.record_retrievals`)."""
        self.calls += 1
        return self.bank.record_retrievals(ids)

    def _bank_replaced(self, old_version: int) -> None:
        self._version_base = old_version + 1 - self.bank.version
        self._replica = None

    # ------------------------------------------------------------- bank calls
    def add(self, keys: np.ndarray, values: np.ndarray, **kwargs: Any) -> AddResult:
        self.calls += 1
        return self.bank.add(keys, values, **kwargs)

    def query(self, keys: np.ndarray, k: int = 4, **kwargs: Any) -> QueryResult:
        self.calls += 1
        return self.bank.query(keys, k, **kwargs)

    def update(self, ids: Any, deltas: Any, decay: float) -> np.ndarray:
        self.calls += 1
        return self.bank.update(ids, deltas, decay)

    def get(self, ids: Any) -> dict[str, np.ndarray]:
        self.calls += 1
        return self.bank.get(ids)

    def contains(self, entry_id: int) -> bool:
        return entry_id in self.bank

    def entries(self) -> dict[str, np.ndarray]:
        self.calls += 1
        return self.bank.entries()

    def stats(self) -> dict[str, float]:
        self.calls += 1
        return self.bank.stats()

    def len(self) -> int:
        return len(self.bank)

    def merge(self, threshold: float | None = None) -> MergeResult:
        self.calls += 1
        return self.bank.merge(threshold)

    def evict(self, n: int) -> np.ndarray:
        self.calls += 1
        return self.bank.evict(n)

    def remove(self, ids: Any) -> int:
        self.calls += 1
        return self.bank.remove(ids)

    def save(self, path: str, overwrite: bool = False) -> str:
        """Save the bank to a folder (``ExperienceBank.load`` reads it anywhere)."""
        self.calls += 1
        return str(self.bank.save(path, overwrite=overwrite))

    def load(self, path: str) -> int:
        """Replace the bank with the one saved at ``path``; returns its size.

        Refused once a learner is attached (its extractor and samples belong to the old
        bank): save and restore both with :meth:`save_state` / :meth:`restore_state`.
        """
        if self.manager is not None:
            raise RuntimeError("this service has a learner attached; load its whole state with "
                               "restore_state(path) (a folder written by save_state) instead")
        old = self.version()
        self.bank = ExperienceBank.load(path)
        self._bank_replaced(old)
        return len(self.bank)

    # ---------------------------------------------------------------- learner
    def attach(self, observation_space: spaces.Space, action_space: spaces.Space,
               key_encoder: KeyEncoder | None = None, manager_kwargs: dict[str, Any] | None = None
               ) -> dict[str, Any]:
        """Create the learner for these spaces, or check that the existing one fits them.

        Returns what a client needs to act like the learner locally: the frozen key encoder,
        ``exp_dim`` and the config. Once the learner exists, a key encoder
        given here must be of the same type and ``key_dim`` as its own (a pickled copy of it
        is); every client then encodes with the learner's own.
        """
        kwargs = {"mode": "async", **(manager_kwargs or {})}
        if self.manager is None:
            self.manager = manager_for_bank(self.bank, observation_space, action_space,
                                            key_encoder=key_encoder, **kwargs)
            self.set_schedule(**self.schedule_values)
        else:  # raises ValueError when the spaces or the config disagree
            manager_for_bank(self.bank, observation_space, action_space,
                             key_encoder=None, **(manager_kwargs or {}))
            mine = self.manager.key_encoder
            if key_encoder is not None and (type(key_encoder) is not type(mine)
                                            or key_encoder.key_dim != mine.key_dim):
                raise ValueError(f"this service's learner already has a {type(mine).__name__} key encoder "
                                 f"(key_dim {mine.key_dim}); got a {type(key_encoder).__name__} "
                                 f"(key_dim {key_encoder.key_dim}). Clients use the learner's own encoder: "
                                 "pass none, or the same one")
        m = self.manager
        return {"key_encoder": m.key_encoder, "exp_dim": m.exp_dim,
                "config": m.config, "observation_space": m.observation_space,
                "action_space": m.action_space}

    def _learner(self) -> ExperienceManager:
        if self.manager is None:
            if self.restarted:
                raise RuntimeError("the experience service was restarted (max_restarts) and lost its learner, with "
                                   "the episodes queued in it: call service.manager(observation_space, action_space) "
                                   "again (its bank came back from restore=)")
            raise RuntimeError("no learner attached to this service: call "
                               "service.manager(observation_space, action_space) first")
        return self.manager

    def submit(self, episodes: list[Episode]) -> int:
        """Hand finished episodes to the learner (queued on its thread in async mode)."""
        m = self._learner()
        self.calls += 1
        for ep in episodes:
            m.submit(ep)
        return len(episodes)

    def request_merge(self) -> None:
        self._learner().request_merge()

    def flush(self, timeout: float | None = None) -> None:
        if self.manager is not None:
            self.manager.flush(timeout)

    def set_schedule(self, guided_ratio: float | None = None, progress: float | None = None) -> None:
        """The callback's schedules (the learner's utility decay follows ``progress``); kept
        until a learner attaches when none has yet."""
        for name, value in (("guided_ratio", guided_ratio), ("progress", progress)):
            if value is not None:
                value = float(value)
                if not 0.0 <= value <= 1.0:
                    raise ValueError(f"{name} must be in [0, 1], got {value!r}")
                self.schedule_values[name] = value
                if self.manager is not None and name == "guided_ratio":
                    self.manager.schedule.configure(guided=value)
                elif self.manager is not None:
                    self.manager.schedule.advance(value)

    def schedule(self) -> dict[str, float]:
        """The last schedule values received (what clients that follow the schedule read)."""
        return dict(self.schedule_values)

    def learner_stats(self) -> dict[str, float]:
        """The learner's stats, with ``bank_version`` (:meth:`version`) and ``learner_backlog``
        (episodes received from every client and not processed yet)."""
        out = self._learner().stats()
        out["bank_version"] = float(self.version())
        out["learner_backlog"] = max(0.0, out["episodes_submitted"] - out["episodes_processed"])
        return out

    def free_baseline(self, task_id: int = 0) -> float | None:
        return self._learner().free_baseline(task_id)

    def save_state(self, path: str) -> str:
        """Save bank, extractor and schedules (the learner's own folder format)."""
        return str(self._learner().save(path))

    def restore_state(self, path: str) -> int:
        """Restore what :meth:`save_state` wrote; returns the bank's size."""
        m = self._learner()
        old = self.version()
        m.restore(path)
        self.bank = m.bank
        self._bank_replaced(old)
        return len(self.bank)

    def close(self) -> None:
        """Process what is queued and stop the learner's thread."""
        if self.manager is not None:
            self.manager.close()


def _reconstructed() -> bool:
    """Whether this actor is a restart of an earlier one (Ray's runtime context; False outside an actor)."""
    try:
        import ray

        with warnings.catch_warnings():  # (Ray's property reads its own deprecated actor_id)
            warnings.simplefilter("ignore")
            return bool(ray.get_runtime_context().was_current_actor_reconstructed)
    except Exception:  # noqa: BLE001 - not in an actor (tests build ServiceActor directly), or an older Ray
        return False
