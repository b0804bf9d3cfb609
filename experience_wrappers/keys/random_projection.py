"""The default key encoder: a frozen, seeded random projection of the flattened observation.

:func:`batch_flatten` is the flattening it projects: batches of observations of any common
gymnasium space to float rows, with fixed rules (nothing fitted to data).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from gymnasium import spaces

from ..validators import check_int
from .base import KeyEncoder, normalise_rows

__all__ = ["RandomProjectionKeyEncoder", "batch_flatten", "flat_dim", "squash_unbounded"]


# -- flattening: a batch of observations of any common space to float rows ----------------------------

def flat_dim(space: spaces.Space) -> int:
    """Length of the flat row :func:`batch_flatten` produces for ``space``."""
    return int(spaces.flatdim(space))


def squash_unbounded(x: np.ndarray) -> np.ndarray:
    """A fixed squashing ``sign(x) * log1p(|x|)`` for values without known bounds."""
    return np.sign(x) * np.log1p(np.abs(x))


def batch_flatten(space: spaces.Space, batch: Any) -> np.ndarray:
    """Flatten a batch (leading axis) of observations of ``space`` to ``(n, flat_dim)`` float32.

    Box values are mapped to [-1, 1] when both bounds are finite (and less than 1e6 apart), otherwise squashed with
    :func:`squash_unbounded`; Discrete and MultiDiscrete become one-hot; MultiBinary stays 0/1;
    Dict and Tuple spaces are concatenated in key order.

    >>> s = spaces.Dict({"a": spaces.Discrete(3), "b": spaces.Box(-2.0, 2.0, (2,))})
    >>> batch_flatten(s, {"a": np.array([2]), "b": np.array([[2.0, -1.0]])}).tolist()
    [[0.0, 0.0, 1.0, 1.0, -0.5]]
    """
    if isinstance(space, spaces.Box):
        x: np.ndarray = np.asarray(batch, dtype=np.float64).reshape(len(batch), -1)
        low = np.broadcast_to(space.low, space.shape).reshape(-1).astype(np.float64)
        high = np.broadcast_to(space.high, space.shape).reshape(-1).astype(np.float64)
        # bounds of 1e6 and wider (e.g. float32 max) say nothing about scale: squash those too
        bounded = np.isfinite(low) & np.isfinite(high) & (high > low) & (high - low < 1e6)
        out = squash_unbounded(x)
        if bounded.any():
            lo, hi = np.where(bounded, low, -1.0), np.where(bounded, high, 1.0)
            mid, half = (hi + lo) / 2.0, (hi - lo) / 2.0
            out = np.where(bounded, (x - mid) / half, out)
        return out.astype(np.float32)
    if isinstance(space, spaces.Discrete):
        idx = np.asarray(batch, dtype=np.int64).reshape(-1) - int(space.start)
        out = np.zeros((len(idx), int(space.n)), dtype=np.float32)
        out[np.arange(len(idx)), idx] = 1.0
        return out
    if isinstance(space, spaces.MultiDiscrete):
        x = np.asarray(batch, dtype=np.int64).reshape(len(batch), -1)
        nvec = space.nvec.reshape(-1)
        start = np.broadcast_to(space.start, space.nvec.shape).reshape(-1)
        offsets = np.concatenate([[0], np.cumsum(nvec)[:-1]])
        out = np.zeros((len(x), int(nvec.sum())), dtype=np.float32)
        rows = np.repeat(np.arange(len(x)), x.shape[1])
        out[rows, (x - start + offsets).reshape(-1)] = 1.0
        return out
    if isinstance(space, spaces.MultiBinary):
        return np.asarray(batch, dtype=np.float32).reshape(len(batch), -1)
    if isinstance(space, spaces.Dict):
        parts = [batch_flatten(sub, batch[key]) for key, sub in space.spaces.items()]
        return np.concatenate(parts, axis=1)
    if isinstance(space, spaces.Tuple):
        parts = [batch_flatten(sub, batch[i]) for i, sub in enumerate(space.spaces)]
        return np.concatenate(parts, axis=1)
    raise TypeError(
        f"cannot flatten observations of space {space!r}; give the wrapper a key_encoder "
        "that understands it"
    )


# -- the encoder ---------------------------------------------------------------------------------------


class RandomProjectionKeyEncoder(KeyEncoder):
    """Flatten, normalise with fixed rules, project with a seeded Gaussian matrix, unit-normalise.

    Nothing is fitted to data, so keys never change meaning during training. When the flat
    observation is no longer than ``key_dim`` the projection is skipped (the normalised
    observation itself is the key, zero-padded), which keeps every distinction the
    observation makes. ``task_weight`` > 0 adds a seeded random direction per task id,
    so tasks separate in key space even when their observations look alike.

    Args:
        observation_space: the space of the observations to encode (the base env's).
        key_dim: length of the key.
        seed: seed of the projection.
        task_weight: weight of the task direction (0: keys ignore the task id).

    >>> enc = RandomProjectionKeyEncoder(spaces.Box(-1.0, 1.0, (100,)), key_dim=16)
    >>> k = enc(np.zeros(100, dtype=np.float32) + 0.5)
    >>> k.shape, round(float(np.linalg.norm(k)), 4)
    ((16,), 1.0)
    """

    def __init__(
        self,
        observation_space: spaces.Space,
        key_dim: int = 32,
        seed: int = 0,
        task_weight: float = 0.0,
    ) -> None:
        check_int("key_dim", key_dim, minimum=1)
        if not np.isfinite(task_weight) or task_weight < 0:
            raise ValueError(f"task_weight must be finite and >= 0, got {task_weight!r}")
        self.observation_space = observation_space
        self.key_dim = key_dim
        self.seed = seed
        self.task_weight = float(task_weight)
        self.input_dim = flat_dim(observation_space)
        rng = np.random.default_rng(seed)
        if self.input_dim <= key_dim:
            self._proj = None
        else:
            self._proj = (rng.standard_normal((self.input_dim, key_dim)) / np.sqrt(key_dim)).astype(
                np.float32
            )

    def _task_directions(self, task_ids: np.ndarray) -> np.ndarray:
        out = np.empty((len(task_ids), self.key_dim), dtype=np.float32)
        for i, t in enumerate(task_ids):
            v = np.random.default_rng([self.seed, 7919, int(t)]).standard_normal(self.key_dim)
            out[i] = v / np.linalg.norm(v)
        return out

    def encode(self, obs_batch: Any, task_ids: np.ndarray) -> np.ndarray:
        x = batch_flatten(self.observation_space, obs_batch)
        if self._proj is None:
            keys = np.zeros((len(x), self.key_dim), dtype=np.float32)
            keys[:, : self.input_dim] = x
        else:
            keys = x @ self._proj
        keys = normalise_rows(keys)
        if self.task_weight > 0:
            keys = normalise_rows(keys + self.task_weight * self._task_directions(np.asarray(task_ids)))
        return keys
