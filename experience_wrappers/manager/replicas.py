"""The read replica the actor's retrievals query (``ManagerConfig(read_replica=True)``).

The bank takes every write where the learner writes (credit, new entries, merges,
evictions); the wrappers' retrieval path reads a :class:`~experience_wrappers.bank.BankReplica`,
a copy swapped in whole, so no retrieval waits for a write or takes the bank's lock. The copy
is made on the writer's side (:meth:`ReplicaHolder.publish`) and swapped in by the reader at
its next poll (:meth:`ReplicaHolder.swap`, each rollout's end under
:class:`~integrations.sb3.CRLCallback`); the retrievals the old copy counted go back to the bank
(:meth:`~experience_wrappers.bank.ExperienceBank.record_retrievals`). Where each backend
publishes: ``sync`` and ``process`` at the poll, on the caller's thread, after the poll's
writes; ``async`` on the worker, after the episodes queued before the poll. What the
retrievals see lags the bank by up to one rollout (``async``: plus the worker's backlog).
"""

from __future__ import annotations

import threading

import numpy as np

from ..bank import BankReplica, ExperienceBank

__all__ = ["ReplicaHolder", "read_target"]


def read_target(bank: ExperienceBank, holder: ReplicaHolder | None) -> ExperienceBank | BankReplica:
    """What a retrieval queries: the bank itself, or the holder's replica of it (``read_replica``)."""
    return bank if holder is None else holder.reader()


class ReplicaHolder:
    """The replica readers query now (:attr:`current`) and the one published for the next swap.

    >>> bank = ExperienceBank(capacity=8)
    >>> holder = ReplicaHolder(bank)
    >>> _ = bank.add(np.eye(2, dtype=np.float32), np.ones((2, 1), np.float32))
    >>> len(holder.current), holder.lag
    (0, 1)
    >>> holder.publish(); _ = holder.swap(); len(holder.current), holder.lag
    (2, 0)
    """

    def __init__(self, bank: ExperienceBank, swap: str = "rollout") -> None:
        self.bank = bank
        #: ``"rollout"``: readers take a published copy at :meth:`swap`; ``"write"``: at their next read
        self.swap_on = swap
        self.current: BankReplica = bank.replica()
        self._next: BankReplica | None = None
        self._retired: list[BankReplica] = []  # swapped out by a reader: their counts go to the bank
        self._lock = threading.Lock()
        #: replicas swapped in so far
        self.swaps = 0

    @property
    def lag(self) -> int:
        """Changes the bank has committed since the replica readers query now."""
        return self.bank.version - self.current.version

    def reader(self) -> BankReplica:
        """What a read queries now: with ``swap="write"`` the latest published copy (taken here),
        else :attr:`current`."""
        if self._next is not None and self.swap_on == "write":
            with self._lock:
                published, self._next = self._next, None
                if published is not None:
                    self._retired.append(self.current)
                    self.current = published
                    self.swaps += 1
        return self.current

    def hand_in(self, current: bool = False) -> int:
        """Count in the bank the retrievals the swapped-out copies counted (and, with ``current``,
        the copy readers query now: what a save must hold); returns how many."""
        with self._lock:
            copies, self._retired = self._retired, []
        if current:
            copies.append(self.current)
        n = 0
        for old in copies:
            hits = old.take_hits()
            if len(hits):
                n += len(hits)
                self.bank.record_retrievals(hits)
        return n

    def publish(self, replica: BankReplica | None = None) -> None:
        """Writer side: copy the bank for the next swap, unless the latest copy is of this version;
        or publish ``replica``, a copy made elsewhere (an experience service's, for its clients)."""
        self.hand_in()  # copies a reader swapped out: their retrievals reach the bank here
        if replica is None:
            with self._lock:
                latest = self._next or self.current
            if latest.version == self.bank.version:
                return
            replica = self.bank.replica()
        with self._lock:
            if self._next is None or self._next.version < replica.version:
                self._next = replica

    def swap(self) -> np.ndarray:
        """Reader side: query the published copy from now on (if there is one); returns the
        retrievals the replica counted since the last swap, for ``bank.record_retrievals``."""
        with self._lock:
            published, self._next = self._next, None
        old = self.current
        if published is not None:
            self.current = published
            self.swaps += 1
        return old.take_hits()

    def refresh(self) -> None:
        """Both sides on this thread: count the retrievals, copy the bank, swap the copy in."""
        self.hand_in(current=True)
        self.publish()
        self.swap()
