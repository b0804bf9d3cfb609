"""Wrap any function as a key encoder."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ..validators import check_int
from .base import KeyEncoder

__all__ = ["CallableKeyEncoder"]


class CallableKeyEncoder(KeyEncoder):
    """A key encoder from a plain function ``fn(obs_batch, task_ids) -> (n, key_dim)``.

    The function must be deterministic and fixed for the whole of training.

    >>> enc = CallableKeyEncoder(lambda obs, tasks: obs[:, :2], key_dim=2)
    >>> enc.encode(np.ones((3, 5)), np.zeros(3, dtype=np.int64)).shape
    (3, 2)
    """

    def __init__(self, fn: Callable[[Any, np.ndarray], np.ndarray], key_dim: int) -> None:
        if not callable(fn):
            raise TypeError(f"fn must be callable, got {fn!r}")
        key_dim = check_int("key_dim", key_dim, minimum=1)
        self.fn = fn
        self.key_dim = key_dim

    def encode(self, obs_batch: Any, task_ids: np.ndarray) -> np.ndarray:
        keys = np.asarray(self.fn(obs_batch, task_ids), dtype=np.float32)
        n = len(task_ids)
        if keys.shape != (n, self.key_dim):
            raise ValueError(
                f"key function returned shape {keys.shape}, expected ({n}, {self.key_dim})"
            )
        if not np.all(np.isfinite(keys)):
            raise ValueError("key function returned NaN or inf")
        return keys
