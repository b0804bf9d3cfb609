"""``FlatKeyEncoder``: the flattened observation itself is the key."""

from __future__ import annotations

from typing import Any

import numpy as np
from gymnasium import spaces

from .base import KeyEncoder, batch_flatten, flat_dim

__all__ = ["FlatKeyEncoder"]


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
        return batch_flatten(self.observation_space, obs_batch)
