"""A key encoder's fingerprint: its keys of a few fixed observations, so a saved bank is only read
back through an encoder that keys observations as the one it was saved with.

A bank's entries are found by their keys. Restored into a manager whose encoder keys the same
observations otherwise (another class, or a :class:`~experience_wrappers.keys.RandomProjectionKeyEncoder`
of another seed, with the same ``key_dim``), every entry is still there and none is found: a
retrieval returns what lies nearest to a meaningless point. A key encoder is frozen (the same
observation, the same key, for the whole of training: :class:`~experience_wrappers.keys.KeyEncoder`),
so its keys of :data:`PROBES` observations drawn from the observation space with a fixed seed,
saved with the observations, identify what it does, whatever its class: a restore keys the saved
observations again and compares.
"""

from __future__ import annotations

import copy
import warnings
from typing import Any

import numpy as np
from gymnasium import spaces

from .base import KeyEncoder, stack_observations

__all__ = ["PROBES", "MAX_NUMBERS", "key_fingerprint", "same_keys"]

#: observations drawn (seed 0) from the observation space to key
PROBES = 2
#: the most numbers the probe observations may hold (a larger observation is not fingerprinted: the
#: fingerprint is saved as JSON)
MAX_NUMBERS = 20_000


def _keys(encoder: KeyEncoder, batch: Any) -> np.ndarray | None:
    try:
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            keys = np.asarray(encoder.encode(batch, np.zeros(PROBES, dtype=np.int64)), dtype=np.float64)
    except Exception:  # noqa: BLE001 - a fingerprint is a check where one can be made, never a new failure
        return None
    return keys if keys.shape == (PROBES, encoder.key_dim) and np.isfinite(keys).all() else None


def _as_batch(saved: Any, space: spaces.Space) -> Any:
    """Saved probe observations (lists) as a batch laid out as ``space``'s."""
    if isinstance(space, spaces.Dict):
        return {k: _as_batch(saved[k], sub) for k, sub in space.spaces.items()}
    if isinstance(space, spaces.Tuple):
        return tuple(_as_batch(x, sub) for x, sub in zip(saved, space.spaces, strict=True))
    return np.asarray(saved, dtype=space.dtype)


def _as_lists(batch: Any) -> Any:
    if isinstance(batch, dict):
        return {k: _as_lists(v) for k, v in batch.items()}
    if isinstance(batch, tuple):
        return [_as_lists(v) for v in batch]
    return np.asarray(batch).tolist()


def _numbers(batch: Any) -> int:
    if isinstance(batch, dict):
        return sum(_numbers(v) for v in batch.values())
    if isinstance(batch, tuple):
        return sum(_numbers(v) for v in batch)
    return int(np.asarray(batch).size)


def key_fingerprint(encoder: KeyEncoder, observation_space: spaces.Space) -> dict[str, Any] | None:
    """``{"observations": ..., "keys": ...}``: :data:`PROBES` observations drawn from ``observation_space``
    (seed 0; the space itself not drawn from) and ``encoder``'s keys of them, as lists. None where the
    space cannot be drawn from, its observations are larger than :data:`MAX_NUMBERS`, or the encoder
    refuses such draws (an encoder may read only the observations its env makes)."""
    try:
        space = copy.deepcopy(observation_space)
        space.seed(0)
        batch = stack_observations([space.sample() for _ in range(PROBES)])
    except Exception:  # noqa: BLE001 - as above
        return None
    if _numbers(batch) > MAX_NUMBERS:
        return None
    keys = _keys(encoder, batch)
    return None if keys is None else {"observations": _as_lists(batch), "keys": keys.tolist()}


def same_keys(saved: Any, encoder: KeyEncoder, observation_space: spaces.Space) -> bool:
    """Whether ``encoder`` keys a saved fingerprint's observations as the saved keys say (True where
    there is no fingerprint, or its observations cannot be read as ``observation_space``'s: no check)."""
    if not isinstance(saved, dict) or "observations" not in saved or "keys" not in saved:
        return True
    try:
        batch = _as_batch(saved["observations"], observation_space)
        theirs = np.asarray(saved["keys"], dtype=np.float64)
    except (KeyError, TypeError, ValueError):
        return True
    ours = _keys(encoder, batch)
    if ours is None:
        return True
    return theirs.shape == ours.shape and bool(np.allclose(theirs, ours, rtol=1e-4, atol=1e-5))
