"""``async`` mode's learner backend: :class:`~.inline_backend.InlineBackend`'s steps on a worker thread.

The caller only enqueues; the worker thread (a :class:`~.writer_thread.WriterThread`) takes
episodes, merges, demonstrations and flushes in order, so the actor never waits for credit,
distillation or training (it shares the GIL with them). A failure on the worker is kept and
raised at the caller's next call.
"""

from __future__ import annotations

from typing import Any

from ..bank import Provenance
from .episode import Episode
from .inline_backend import InlineBackend
from .writer_thread import WriterThread

__all__ = ["ThreadBackend"]


class ThreadBackend(InlineBackend):
    """The learner in this process, run on a worker thread (started on first use).

    Takes :class:`~.inline_backend.InlineBackend`'s arguments.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._worker = WriterThread("crl-manager", failure="the experience manager's worker failed")

    @property
    def pending(self) -> int:
        return self._worker.pending

    def episode(self, ep: Episode) -> None:
        self._worker.put(lambda: InlineBackend.episode(self, ep))

    def merge(self) -> None:
        self._worker.put(lambda: InlineBackend.merge(self))

    def ingest(self, ep: Episode, provenance: Provenance, every: int | None, utility: float | None) -> int:
        """Distilled on the worker, after what is queued (the learner is the worker's alone); waits,
        and raises here what the distillation raised."""
        return self._worker.call(lambda: InlineBackend.ingest(self, ep, provenance, every, utility))

    def flush(self, timeout: float | None = None) -> None:
        if self._worker.started:
            try:
                self._worker.call(lambda: None, timeout)
            except TimeoutError:
                raise TimeoutError(f"the manager did not finish its queue within {timeout} s") from None
        self.check()

    def close(self) -> None:
        self._worker.close()
        self.check()

    def check(self) -> None:
        self._worker.check()
