"""``EpisodeRecorder``: the episodes in flight of ``n`` envs, in preallocated per-env buffers.

An experience wrapper records every step of every env (the observation acted on, the action,
the reward) and hands a whole episode over when it ends. Copying each env's step into Python
lists costs a dict and an array per env and step; here one vector step is one row write per
observation key, into time-major buffers of shape ``(capacity, n_envs, ...)``: all envs step
together, so env ``r``'s episode is the rows from its start to now in column ``r``. Rows
before the oldest episode in flight are dropped when the buffers fill, and the buffers double
when that episode needs more. :meth:`EpisodeRecorder.take` returns what stacking the per-step
copies gave: the same values, shapes and dtypes (a dtype that changes within an episode is
promoted as ``np.stack`` promotes it).
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["EpisodeRecorder"]


class EpisodeRecorder:
    """Observations, actions and rewards of the episodes in flight of ``n_envs`` envs.

    Args:
        n_envs: number of envs.
        capacity: initial steps per env (doubled as needed).

    >>> rec = EpisodeRecorder(2)
    >>> for t in range(3):
    ...     rec.append({"x": np.full((2, 2), t, np.int16)}, np.array([t, -t]), np.array([1.0, 0.5]))
    >>> obs, actions, rewards = rec.take(1)
    >>> obs["x"].tolist(), obs["x"].dtype, actions.tolist(), rewards.tolist()
    ([[0, 0], [1, 1], [2, 2]], dtype('int16'), [0, -1, -2], [0.5, 0.5, 0.5])
    >>> rec.lengths.tolist()  # env 1 starts again; env 0's episode goes on
    [3, 0]
    """

    def __init__(self, n_envs: int, capacity: int = 64) -> None:
        self.n = int(n_envs)
        self._capacity = max(1, int(capacity))
        self._t = 0  # the next row
        self._start = np.zeros(self.n, np.int64)  # the row each env's episode starts at
        self._kind: str | None = None  # "dict", "tuple" or "array": the observations' structure
        self._keys: list[Any] = []
        self._key_set: frozenset[Any] = frozenset()
        self._bufs: list[np.ndarray] = []  # one per observation leaf, then actions, then rewards: (capacity, n, ...)
        self._usual: list[np.dtype] = []  # each leaf's first dtype
        # (leaf, env) -> (whether the usual dtype was seen, the other dtypes promoted): only for
        # episodes in which a leaf arrived with another dtype than its first one (rare)
        self._odd: dict[tuple[int, int], tuple[bool, np.dtype | None]] = {}

    @property
    def lengths(self) -> np.ndarray:
        """Steps recorded in each env's episode so far."""
        return self._t - self._start

    # ---------------------------------------------------------------- append
    def _leaves(self, obs: Any) -> list[np.ndarray]:
        if isinstance(obs, dict):
            return [np.asarray(obs[k]) for k in self._keys] if self._kind == "dict" else \
                [np.asarray(v) for v in obs.values()]
        if isinstance(obs, tuple):
            return [np.asarray(v) for v in obs]
        return [np.asarray(obs)]

    def _setup(self, obs: Any, leaves: list[np.ndarray]) -> None:
        self._kind = "dict" if isinstance(obs, dict) else "tuple" if isinstance(obs, tuple) else "array"
        self._keys = list(obs) if isinstance(obs, dict) else []
        self._key_set = frozenset(self._keys)  # (a dict in another order is the same structure)
        self._bufs = [np.zeros((self._capacity, self.n) + x.shape[1:], x.dtype) for x in leaves]
        self._usual = [x.dtype for x in leaves]

    def append(self, obs: Any, actions: Any, rewards: Any) -> None:
        """Append one step to every env's episode: ``obs``, ``actions`` and ``rewards`` hold one row per env."""
        if self._kind == "dict" and (not isinstance(obs, dict) or obs.keys() != self._key_set):
            raise ValueError(f"the observations changed structure during recording: {type(obs).__name__} with "
                             f"{list(obs) if isinstance(obs, dict) else 'no keys'}, expected keys {self._keys}")
        leaves = self._leaves(obs)
        leaves += [np.asarray(actions), np.asarray(rewards, dtype=np.float64)]
        if self._kind is None:
            self._setup(obs, leaves)
        elif len(leaves) != len(self._bufs):
            raise ValueError(f"the observations changed structure during recording: {type(obs).__name__} "
                             f"with {len(leaves) - 2} part(s), expected {len(self._bufs) - 2}")
        if self._t >= self._capacity:
            self._compact()
        t = self._t
        for j, x in enumerate(leaves):
            buf = self._bufs[j]
            if x.shape[:1] != (self.n,):
                raise ValueError(f"expected one row per env ({self.n}), got shape {x.shape}")
            if x.dtype != self._usual[j] or self._odd:
                self._track_dtype(j, x.dtype)
                if x.dtype != buf.dtype:
                    buf = self._bufs[j] = buf.astype(np.result_type(buf.dtype, x.dtype))
            buf[t] = x
        self._t = t + 1

    def _compact(self) -> None:
        """Drop the rows before the oldest episode in flight; double the capacity when the
        rows kept would fill more than half of it."""
        lo = int(self._start.min(initial=self._t))
        keep = self._t - lo
        if 2 * keep > self._capacity:
            self._capacity *= 2
        moved = []
        for buf in self._bufs:
            new = np.zeros((self._capacity,) + buf.shape[1:], buf.dtype) if buf.shape[0] != self._capacity else buf
            new[:keep] = buf[lo:self._t]  # (a copy where the rows overlap: numpy handles it)
            moved.append(new)
        self._bufs = moved
        self._start -= lo
        self._t = keep

    def _track_dtype(self, j: int, dtype: np.dtype) -> None:
        usual = dtype == self._usual[j]
        lengths = self.lengths.tolist()
        for r in range(self.n):
            seen, other = self._odd.get((j, r), (lengths[r] > 0, None))
            if usual:
                if (j, r) in self._odd:
                    self._odd[(j, r)] = (True, other)
            else:
                self._odd[(j, r)] = (bool(seen), dtype if other is None else np.result_type(other, dtype))

    # ------------------------------------------------------------------ take
    def take(self, r: int) -> tuple[Any, np.ndarray, np.ndarray]:
        """Env ``r``'s episode so far, as ``(observations, actions, rewards)`` stacked along a
        leading time axis (copies), and start it again."""
        if self._kind is None:
            raise ValueError(f"env {r} has no recorded step to take")
        start = int(self._start[r])
        parts = []
        for j, buf in enumerate(self._bufs):
            seen, other = self._odd.pop((j, r), (True, None))
            dtype = self._usual[j] if other is None else other if not seen else np.result_type(self._usual[j], other)
            parts.append(buf[start:self._t, r].astype(dtype, copy=True))
        self._start[r] = self._t
        *leaves, actions, rewards = parts
        if self._kind == "dict":
            obs: Any = dict(zip(self._keys, leaves, strict=True))
        elif self._kind == "tuple":
            obs = tuple(leaves)
        else:
            obs = leaves[0]
        return obs, actions, rewards

    def clear(self, r: int) -> None:
        """Drop env ``r``'s episode so far."""
        self._start[r] = self._t
        for j in range(len(self._bufs)):
            self._odd.pop((j, r), None)
