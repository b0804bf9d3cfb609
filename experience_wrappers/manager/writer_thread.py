"""A thread that runs jobs in order, off the caller's thread.

``async`` mode's learner runs on one (:class:`~.thread_backend.ThreadBackend`: credit,
distillation and training).
"""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Callable
from typing import Any, TypeVar

__all__ = ["WriterThread"]

log = logging.getLogger(__name__)

T = TypeVar("T")


class WriterThread:
    """Runs jobs in the order given on one daemon thread (started on the first job).

    A job's failure is kept and raised by the next :meth:`check` (every caller-facing call
    checks) as a ``RuntimeError`` saying ``failure`` (default: "the NAME thread failed"), the
    job's exception as its cause; the jobs after it still run.

    >>> out = []
    >>> w = WriterThread("doc")
    >>> w.put(lambda: out.append(1)); w.put(lambda: out.append(2)); w.join(); out
    [1, 2]
    >>> w.close()
    """

    def __init__(self, name: str, failure: str | None = None) -> None:
        self.name = name
        self.failure = failure or f"the {name} thread failed"
        self._queue: queue.Queue[Callable[[], None] | None] = queue.Queue()
        self._thread: threading.Thread | None = None
        self._error: BaseException | None = None
        self._start_lock = threading.Lock()  # callers on several threads start one thread, not one each

    @property
    def pending(self) -> int:
        """Jobs queued or running."""
        return self._queue.unfinished_tasks

    def put(self, job: Callable[[], None]) -> None:
        with self._start_lock:
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._run, name=self.name, daemon=True)
                self._thread.start()
            self._queue.put(job)

    @property
    def started(self) -> bool:
        """Whether a job was given since the thread was made or last closed (it starts on the first)."""
        return self._thread is not None

    def call(self, fn: Callable[[], T], timeout: float | None = None) -> T:
        """Run ``fn`` on the thread after the jobs given so far, wait for it and return its result.

        Raises:
            TimeoutError: it had not run within ``timeout`` seconds.
            RuntimeError: an earlier job failed (see :meth:`check`); raised instead of ``fn``'s
                own error.
            Exception: what ``fn`` raised.
        """
        done = threading.Event()
        out: list[tuple[bool, Any]] = []

        def job() -> None:
            try:
                out.append((True, fn()))
            except Exception as exc:  # noqa: BLE001 - the caller's error: raised in call
                out.append((False, exc))
            finally:
                done.set()
        self.put(job)
        if not done.wait(timeout):
            raise TimeoutError(f"the {self.name} thread did not run what was queued within {timeout} s")
        self.check()
        ok, value = out[0]
        if not ok:
            raise value
        return value  # type: ignore[no-any-return]

    def join(self) -> None:
        """Wait until every job given so far has run."""
        if self._thread is not None:
            self._queue.join()

    def check(self) -> None:
        if self._error is not None:
            err, self._error = self._error, None
            raise RuntimeError(self.failure) from err

    def close(self) -> None:
        """Run what is queued, then stop the thread."""
        with self._start_lock:
            thread = self._thread
            if thread is not None and thread.is_alive():
                self._queue.put(None)
        if thread is not None and thread.is_alive():
            thread.join()
        with self._start_lock:
            if self._thread is thread:
                self._thread = None

    def _run(self) -> None:
        while True:
            job = self._queue.get()
            try:
                if job is None:
                    return
                job()
            except BaseException as exc:  # raised to the caller at its next check
                log.exception("%s thread: a job failed", self.name)
                self._error = exc
            finally:
                self._queue.task_done()
