"""A writer-preferring reader-writer lock."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["RWLock"]


class RWLock:
    """Many readers or one writer; a waiting writer blocks new readers (no starvation).

    >>> lock = RWLock()
    >>> with lock.read():
    ...     pass
    >>> with lock.write():
    ...     pass
    """

    def __init__(self) -> None:
        self._mutex = threading.Lock()  # held directly on the fast paths: Condition's own methods cost more
        self._cond = threading.Condition(self._mutex)
        self._readers = 0
        self._writer = False
        self._writers_waiting = 0
        self._reader = _ReadGuard(self)  # stateless, so one serves every reader

    def read(self) -> _ReadGuard:
        """Hold the lock as a reader for a ``with`` block."""
        return self._reader

    def acquire_read(self) -> None:
        with self._mutex:
            while self._writer or self._writers_waiting:
                self._cond.wait()
            self._readers += 1

    def release_read(self) -> None:
        with self._mutex:
            self._readers -= 1
            if self._readers == 0 and self._writers_waiting:  # only writers wait for readers
                self._cond.notify_all()

    @contextmanager
    def write(self) -> Iterator[None]:
        with self._cond:
            self._writers_waiting += 1
            try:
                while self._writer or self._readers:
                    self._cond.wait()
            finally:
                self._writers_waiting -= 1
            self._writer = True
        try:
            yield
        finally:
            with self._cond:
                self._writer = False
                self._cond.notify_all()


class _ReadGuard:
    """``with lock.read():`` as a plain class: cheaper than a generator-based context manager,
    which matters on the bank's query path (a few microseconds per call)."""

    __slots__ = ("_lock",)

    def __init__(self, lock: RWLock) -> None:
        self._lock = lock

    def __enter__(self) -> None:
        self._lock.acquire_read()

    def __exit__(self, *exc: object) -> None:
        self._lock.release_read()
