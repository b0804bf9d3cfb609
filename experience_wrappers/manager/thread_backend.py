"""``async`` mode's learner backend: :class:`~.inline_backend.InlineBackend`'s steps on a worker thread.

The caller only enqueues; the worker thread takes episodes, merges, demonstrations and
flushes in order, so the actor never waits for credit, distillation or training (it shares
the GIL with them). A failure on the worker is kept and raised at the caller's next call.
"""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Callable
from typing import Any

from ..bank import Provenance
from .episode import Episode
from .inline_backend import InlineBackend

__all__ = ["ThreadBackend"]

log = logging.getLogger(__name__)


class ThreadBackend(InlineBackend):
    """The learner in this process, run on a worker thread (started on first use).

    Takes :class:`~.inline_backend.InlineBackend`'s arguments.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._queue: queue.Queue[tuple[str, Any]] = queue.Queue()
        self._worker: threading.Thread | None = None
        self._error: BaseException | None = None

    @property
    def pending(self) -> int:
        return self._queue.qsize()

    def episode(self, ep: Episode) -> None:
        self._put("episode", ep)

    def merge(self) -> None:
        self._put("merge", None)

    def ingest(self, ep: Episode, provenance: Provenance, every: int | None, utility: float | None) -> int:
        """Distilled on the worker, after what is queued (the learner is the worker's alone); waits,
        and raises here what the distillation raised."""
        done = threading.Event()
        out: list[int | Exception] = []
        self._put("ingest", ((ep, provenance, every, utility), out, done))
        done.wait()
        self.check()
        if isinstance(out[0], Exception):
            raise out[0]
        return out[0]

    def on_writer(self, job: Callable[[], None]) -> None:
        self._put("job", job)

    def flush(self, timeout: float | None = None) -> None:
        if self._worker is not None:
            done = threading.Event()
            self._queue.put(("flush", done))
            if not done.wait(timeout):
                raise TimeoutError(f"the manager did not finish its queue within {timeout} s")
        self.check()

    def close(self) -> None:
        if self._worker is not None and self._worker.is_alive():
            self._queue.put(("stop", None))
            self._worker.join()
        self._worker = None
        self.check()

    def check(self) -> None:
        if self._error is not None:
            err, self._error = self._error, None
            raise RuntimeError("the experience manager's worker failed") from err

    def _put(self, kind: str, item: Any) -> None:
        if self._worker is None or not self._worker.is_alive():
            self._worker = threading.Thread(target=self._run, name="crl-manager", daemon=True)
            self._worker.start()
        self._queue.put((kind, item))

    def _run(self) -> None:
        """Take the queue's items until a ``stop``; an error is kept for the caller's next call."""
        while True:
            kind, item = self._queue.get()
            try:
                if kind == "episode":
                    InlineBackend.episode(self, item)
                elif kind == "merge":
                    InlineBackend.merge(self)
                elif kind == "job":
                    item()
                elif kind == "ingest":
                    args, out, _ = item
                    try:
                        out.append(InlineBackend.ingest(self, *args))
                    except Exception as exc:  # noqa: BLE001 - the caller's error: raised in ingest
                        out.append(exc)
                elif kind == "flush":
                    item.set()
                elif kind == "stop":
                    return
            except BaseException as exc:  # surfaced to the caller at its next call
                log.exception("experience manager worker failed")
                self._error = exc
            finally:
                if kind in ("flush", "ingest"):
                    (item if kind == "flush" else item[2]).set()
                self._queue.task_done()
