"""The default key encoder: a frozen, seeded random projection of the flattened observation
(:func:`~.base.batch_flatten`: fixed rules, nothing fitted to data; its :class:`~.base.SpaceFlattener`
kept)."""

from __future__ import annotations

from typing import Any

import numpy as np
from gymnasium import spaces

from ..validators import check_bool, check_int
from .base import KeyEncoder, flat_dim, normalise_rows

__all__ = ["RandomProjectionKeyEncoder"]


class RandomProjectionKeyEncoder(KeyEncoder):
    """Flatten, normalise with fixed rules, project with a seeded Gaussian matrix, unit-normalise.

    Nothing is fitted to data, so keys never change meaning during training. A constant
    coordinate of 1 is appended to the flat observation before it is projected
    (``keep_scale``): unit-normalising would otherwise keep only its direction, and the
    states ``x`` and ``2 x`` of a small Box (positions in a corridor) would share a key, and
    its centre have a zero key. When the flat observation and that coordinate fit in
    ``key_dim`` the projection is skipped (they are the key, zero-padded), which keeps every
    distinction the observation makes. ``task_weight`` > 0 adds a seeded random direction per
    task id, so tasks separate in key space even when their observations look alike.

    Args:
        observation_space: the space of the observations to encode (the base env's).
        key_dim: length of the key.
        seed: seed of the projection.
        task_weight: weight of the task direction (0: keys ignore the task id).
        keep_scale: append the constant coordinate (default); False keys by the direction alone
            (the keys before this option, which an encoder pickled before it keeps).

    >>> enc = RandomProjectionKeyEncoder(spaces.Box(-1.0, 1.0, (100,)), key_dim=16)
    >>> k = enc(np.zeros(100, dtype=np.float32) + 0.5)
    >>> k.shape, round(float(np.linalg.norm(k)), 4)
    ((16,), 1.0)
    >>> corridor = RandomProjectionKeyEncoder(spaces.Box(0.0, 10.0, (1,)), key_dim=4)
    >>> corridor.encode(np.array([[2.0], [4.0], [5.0]], dtype=np.float32), np.zeros(3, np.int64)).astype(float).round(3).tolist()
    [[-0.514, 0.857, 0.0, 0.0], [-0.196, 0.981, 0.0, 0.0], [0.0, 1.0, 0.0, 0.0]]
    """

    def __init__(
        self,
        observation_space: spaces.Space,
        key_dim: int = 32,
        seed: int = 0,
        task_weight: float = 0.0,
        keep_scale: bool = True,
    ) -> None:
        key_dim = check_int("key_dim", key_dim, minimum=1)
        if not np.isfinite(task_weight) or task_weight < 0:
            raise ValueError(f"task_weight must be finite and >= 0, got {task_weight!r}")
        self.observation_space = observation_space
        self.key_dim = key_dim
        self.seed = seed
        self.task_weight = float(task_weight)
        self.keep_scale = check_bool("keep_scale", keep_scale)
        self.input_dim = flat_dim(observation_space)
        rng = np.random.default_rng(seed)
        self._bias: np.ndarray | None = None
        if self.input_dim + self.keep_scale <= key_dim:
            self._proj = None
        else:
            self._proj = (rng.standard_normal((self.input_dim, key_dim)) / np.sqrt(key_dim)).astype(
                np.float32
            )
            if self.keep_scale:  # the constant coordinate's row of the projection (drawn after the others)
                self._bias = (rng.standard_normal(key_dim) / np.sqrt(key_dim)).astype(np.float32)

    def __setstate__(self, state: dict[str, Any]) -> None:
        """An encoder pickled before ``keep_scale`` keys as it did: by the direction alone."""
        state.setdefault("keep_scale", False)
        state.setdefault("_bias", None)
        self.__dict__.update(state)

    def _task_directions(self, task_ids: np.ndarray) -> np.ndarray:
        out = np.empty((len(task_ids), self.key_dim), dtype=np.float32)
        for i, t in enumerate(task_ids):
            v = np.random.default_rng([self.seed, 7919, int(t) % 2 ** 64]).standard_normal(self.key_dim)
            out[i] = v / np.linalg.norm(v)
        return out

    def encode(self, obs_batch: Any, task_ids: np.ndarray) -> np.ndarray:
        x = self._flattener()(obs_batch)
        if self._proj is None:
            keys = np.zeros((len(x), self.key_dim), dtype=np.float32)
            keys[:, : self.input_dim] = x
            if self.keep_scale:
                keys[:, self.input_dim] = 1.0
        else:
            keys = x @ self._proj
            if self._bias is not None:
                keys += self._bias
        keys = normalise_rows(keys)
        if self.task_weight > 0:
            keys = normalise_rows(keys + self.task_weight * self._task_directions(np.asarray(task_ids)))
        return keys
