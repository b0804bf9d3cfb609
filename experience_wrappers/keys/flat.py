"""``FlatKeyEncoder``: the flattened observation itself is the key."""

from __future__ import annotations

from typing import Any

import numpy as np
from gymnasium import spaces

from .base import KeyEncoder, flat_dim
from .random_projection import RandomProjectionKeyEncoder

__all__ = ["FlatKeyEncoder", "default_run_keys", "FLAT_KEYS_MAX"]

#: the widest observation that run scope keys by itself by default (:func:`default_run_keys`)
FLAT_KEYS_MAX = 256


class FlatKeyEncoder(KeyEncoder):
    """The key of an observation is the observation, flattened (:func:`batch_flatten`: Box bounds
    mapped to [-1, 1], discrete values one-hot), neither projected nor normalised.

    Two visits of one state are at distance 0, and distances keep the observation's own scale:
    what run scope's step entries are keyed by, where a trial's later step is looked up among
    its earlier trials' steps. The task id is ignored.

    >>> enc = FlatKeyEncoder(spaces.Box(0.0, 4.0, (2,)))
    >>> enc(np.array([0.0, 3.0])).tolist(), enc.key_dim
    ([-1.0, 0.5], 2)
    """

    def __init__(self, observation_space: spaces.Space) -> None:
        self.observation_space = observation_space
        self.key_dim = flat_dim(observation_space)

    def encode(self, obs_batch: Any, task_ids: np.ndarray) -> np.ndarray:
        return self._flattener()(obs_batch)


def default_run_keys(observation_space: spaces.Space) -> KeyEncoder:
    """Run scope's default key encoder: the flattened observation (:class:`FlatKeyEncoder`) where
    it is at most :data:`FLAT_KEYS_MAX` wide. A wider one (an image) would make each step entry,
    and the policy's input of ``k`` of them, as wide, and its extractor context past what the bank
    stores: it is projected to 32 (:class:`~.random_projection.RandomProjectionKeyEncoder`, unit
    rows; two visits of one state still at distance 0).

    >>> default_run_keys(spaces.Box(0.0, 4.0, (2,))).key_dim, default_run_keys(spaces.Box(0, 255, (40, 40, 3))).key_dim
    (2, 32)
    """
    if flat_dim(observation_space) <= FLAT_KEYS_MAX:
        return FlatKeyEncoder(observation_space)
    return RandomProjectionKeyEncoder(observation_space)
