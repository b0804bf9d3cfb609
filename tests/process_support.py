"""What a learner-process test's child script imports (a key encoder function the learner process can unpickle)."""

from __future__ import annotations

import time

import numpy as np

#: a batch of at least this many observations makes :func:`slow_keys` sleep (the learner kept busy)
SLOW_BATCH = 1000


def slow_keys(obs: np.ndarray, tasks: np.ndarray) -> np.ndarray:
    """The observations as keys; a batch of :data:`SLOW_BATCH` or more first sleeps 3 s."""
    if len(obs) >= SLOW_BATCH:
        time.sleep(3.0)
    return np.asarray(obs, dtype=np.float32)


def write_then_die(outbox: object) -> None:
    """Put a message far larger than a pipe, then die (SIGKILL) while the queue's thread writes it."""
    import os
    import signal

    outbox.put(b"x" * (8 << 20))  # type: ignore[attr-defined]
    time.sleep(0.5)  # (nobody reads yet: the pipe is full, the message half written)
    os.kill(os.getpid(), signal.SIGKILL)
