"""The key-encoder interface: observation (and task id) -> frozen key vector."""

from __future__ import annotations

import abc
from collections.abc import Sequence
from typing import Any

import numpy as np

__all__ = ["KeyEncoder", "add_batch_axis", "normalise_rows", "checked_keys"]


def normalise_rows(x: np.ndarray, eps: float = 1e-8) -> np.ndarray:
    """Scale each row to unit L2 norm (rows of zeros stay zero).

    >>> normalise_rows(np.array([[3.0, 4.0], [0.0, 0.0]], dtype=np.float32)).tolist()
    [[0.6000000238418579, 0.800000011920929], [0.0, 0.0]]
    """
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    return (x / np.maximum(norms, eps)).astype(np.float32, copy=False)


class KeyEncoder(abc.ABC):
    """Maps observations to key vectors for bank retrieval.

    A key encoder is frozen: the same observation must give the same key for the whole
    of training, or entries written early could never be found again. Subclasses set
    ``key_dim`` and implement :meth:`encode` on a *batch* of observations, laid out as
    a vector env returns them (an array with a leading batch axis, or a dict of such
    arrays). Keys are float32 rows; the default encoders return unit-norm rows so the
    bank's default thresholds apply.
    """

    key_dim: int

    @abc.abstractmethod
    def encode(self, obs_batch: Any, task_ids: np.ndarray) -> np.ndarray:
        """Keys of a batch: ``(n, key_dim)`` float32, for ``n`` observations."""

    def __call__(self, obs: Any, task_id: int = 0) -> np.ndarray:
        """The key of one observation, shape ``(key_dim,)``."""
        batch = add_batch_axis(obs)
        return self.encode(batch, np.array([task_id], dtype=np.int64))[0]


def add_batch_axis(obs: Any) -> Any:
    """One observation (array, dict or tuple of arrays) as a batch of one."""
    if isinstance(obs, dict):
        return {k: add_batch_axis(v) for k, v in obs.items()}
    if isinstance(obs, tuple):
        return tuple(add_batch_axis(v) for v in obs)
    return np.asarray(obs)[None]


def stack_observations(frames: Sequence[Any]) -> Any:
    """Stack per-step observations (arrays or dicts of arrays) along a new time axis."""
    if isinstance(frames[0], dict):
        return {k: np.stack([f[k] for f in frames]) for k in frames[0]}
    return np.stack([np.asarray(f) for f in frames])


def checked_keys(encoder: KeyEncoder, observations: Any, task_ids: np.ndarray) -> np.ndarray:
    """Keys of a batch of observations, checked: ``(n, key_dim)`` finite float32 rows.

    Raises:
        ValueError: the encoder returned another shape, or NaN / inf.
    """
    task_ids = np.asarray(task_ids, dtype=np.int64)
    keys = np.asarray(encoder.encode(observations, task_ids), dtype=np.float32)
    want = (len(task_ids), encoder.key_dim)
    if keys.shape != want:
        raise ValueError(f"the key encoder {type(encoder).__name__} returned keys of shape "
                         f"{keys.shape}, expected {want} (its key_dim is {encoder.key_dim})")
    if not np.all(np.isfinite(keys)):
        raise ValueError("the key encoder returned NaN or inf: check the observation for NaN")
    return keys
