"""The local copy of a service's bank that a worker's retrievals query (``local_reads``).

A :class:`~experience_wrappers.bank.BankReplica` is swapped in whole: no retrieval waits for
the service or takes a lock. :meth:`RemoteManager.refresh_replica
<integrations.ray.RemoteManager.refresh_replica>` fetches a newer copy (at each rollout's
end, or after ``replica_ttl`` seconds), publishes it here and swaps it in; the retrievals the
old copy counted go back to the service.
"""

from __future__ import annotations

import threading
from typing import Any

import numpy as np

from experience_wrappers.bank import BankReplica

__all__ = ["ReplicaHolder"]


class ReplicaHolder:
    """The replica readers query now (:attr:`current`) and the one published for the next swap.

    Args:
        bank: the bank (a ``RemoteBank``, or an ``ExperienceBank``) whose ``replica()`` makes the first copy.

    >>> from experience_wrappers import ExperienceBank
    >>> bank = ExperienceBank(capacity=8)
    >>> holder = ReplicaHolder(bank)
    >>> _ = bank.add(np.eye(2, dtype=np.float32), np.ones((2, 1), np.float32))
    >>> len(holder.current), bank.version - holder.current.version   # the bank changed since the copy
    (0, 1)
    >>> holder.publish(bank.replica()); _ = holder.swap(); len(holder.current), holder.swaps
    (2, 1)
    """

    def __init__(self, bank: Any) -> None:
        self.current: BankReplica = bank.replica()
        self._next: BankReplica | None = None
        self._lock = threading.Lock()
        #: replicas swapped in so far
        self.swaps = 0

    def publish(self, replica: BankReplica) -> None:
        """Offer ``replica`` for the next swap (kept only if newer than the one offered before)."""
        with self._lock:
            if self._next is None or self._next.version < replica.version:
                self._next = replica

    def swap(self) -> np.ndarray:
        """Query the published copy from now on (if there is one); returns the retrievals the
        replica swapped out counted since the last swap, for the bank's ``record_retrievals``."""
        with self._lock:
            published, self._next = self._next, None
        old = self.current
        if published is not None:
            self.current = published
            self.swaps += 1
        return old.take_hits()
