"""Flatten batches of observations of any common gymnasium space to float rows."""

from __future__ import annotations

from typing import Any

import numpy as np
from gymnasium import spaces

__all__ = ["batch_flatten", "flat_dim", "squash_unbounded"]


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
