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
