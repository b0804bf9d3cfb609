"""A bounded store of successful states beside the bank: what self-imitation trains on.

The bank holds keys and entry content; a policy cannot be trained on keys. Self-imitation
(Oh et al., 2018) needs the states themselves, the actions taken there and the return that
followed. :class:`SuccessReplay` keeps them, by provenance: demonstrations are pinned (never
overwritten), the agent's own episodes share the rest of the capacity first-in first-out.
It is plain numpy (no torch, no SB3) and is saved as one ``.npz`` file.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from .validators import check_int, check_real

__all__ = ["SuccessReplay", "discounted_returns", "SOURCE_DEMO", "SOURCE_OWN"]

#: Provenance code of demonstrated states (pinned).
SOURCE_DEMO = 0
#: Provenance code of the agent's own states (first-in first-out).
SOURCE_OWN = 1

_FORMAT = 1


def discounted_returns(rewards: np.ndarray, gamma: float) -> np.ndarray:
    """Return-to-go ``R_t = sum_k gamma^k r_{t+k}`` of one finished episode.

    >>> discounted_returns(np.array([0.0, 0.0, 1.0]), 0.5).tolist()
    [0.25, 0.5, 1.0]
    """
    rewards = np.asarray(rewards, dtype=np.float64)
    if rewards.ndim != 1:
        raise ValueError(f"rewards must be 1-D, got shape {rewards.shape}")
    if not np.all(np.isfinite(rewards)):
        raise ValueError("rewards contain NaN or inf")
    gamma = check_real("gamma", gamma, minimum=0.0, maximum=1.0)
    out = np.empty_like(rewards)
    acc = 0.0
    for t in range(len(rewards) - 1, -1, -1):
        acc = rewards[t] + gamma * acc
        out[t] = acc
    return out


def _npz(path: str | os.PathLike[str]) -> Path:
    """``path`` with ``.npz`` appended unless it ends so (numpy's rule: ``replay_lr0.001`` is
    ``replay_lr0.001.npz``, not ``replay_lr0.npz``).

    >>> _npz("runs/replay_lr0.001").name, _npz("a.npz").name
    ('replay_lr0.001.npz', 'a.npz')
    """
    path = Path(path)
    return path if path.suffix == ".npz" else path.with_name(path.name + ".npz")


def _as_dict(obs: Any) -> dict[str, np.ndarray]:
    if isinstance(obs, Mapping):
        return {str(k): np.asarray(v) for k, v in obs.items()}
    return {"observation": np.asarray(obs)}


class SuccessReplay:
    """States, actions and returns of demonstrations and of the agent's own episodes.

    Demonstrations are pinned: they are never overwritten and count against the capacity
    (adding more than ``capacity`` demonstrated states raises). The agent's own states fill
    the rest, oldest out first.

    Args:
        capacity: states kept at most.

    >>> r = SuccessReplay(capacity=5)
    >>> r.add_episode({"x": np.zeros((3, 2))}, np.array([0, 1, 2]), np.array([0.0, 0.0, 1.0]),
    ...               gamma=0.9, source=SOURCE_DEMO)
    3
    >>> r.add_episode({"x": np.ones((4, 2))}, np.array([1, 1, 1, 1]), np.ones(4), gamma=0.9)
    2
    >>> len(r), r.counts()
    (5, {'demo': 3, 'own': 2})
    """

    def __init__(self, capacity: int = 50_000) -> None:
        check_int("capacity", capacity, minimum=1, numpy=True)
        self.capacity = int(capacity)
        self._obs: dict[str, np.ndarray] | None = None
        self._actions: np.ndarray | None = None
        self.returns = np.zeros(self.capacity, dtype=np.float32)
        self.source = np.full(self.capacity, -1, dtype=np.int8)
        self._n_demo = 0
        self._own_next = 0  # next slot to write among the own slots (FIFO over [n_demo, capacity))
        self.episodes = {"demo": 0, "own": 0}

    # ------------------------------------------------------------------ storage
    def _allocate(self, obs: dict[str, np.ndarray], actions: np.ndarray) -> None:
        self._obs = {k: np.zeros((self.capacity, *v.shape[1:]), dtype=v.dtype) for k, v in obs.items()}
        self._actions = np.zeros((self.capacity, *actions.shape[1:]), dtype=actions.dtype)

    def _check(self, obs: dict[str, np.ndarray], actions: np.ndarray, n: int) -> None:
        """Refuse another layout; widen the storage where an episode's dtype needs it (a float
        observation after integer demonstrations, an int8 store given 300), never cut a value."""
        assert self._obs is not None and self._actions is not None
        if set(obs) != set(self._obs):
            raise ValueError(f"observation keys {sorted(obs)} differ from the replay's {sorted(self._obs)}")
        for k, v in obs.items():
            if v.shape[1:] != self._obs[k].shape[1:]:
                raise ValueError(f"observation {k!r} has shape {v.shape[1:]} per step, the replay holds "
                                 f"{self._obs[k].shape[1:]}")
        if actions.shape[1:] != self._actions.shape[1:]:
            raise ValueError(f"actions have shape {actions.shape[1:]} per step, the replay holds "
                             f"{self._actions.shape[1:]}")
        for k, v in obs.items():
            if np.result_type(v.dtype, self._obs[k].dtype) != self._obs[k].dtype:
                self._obs[k] = self._obs[k].astype(np.result_type(v.dtype, self._obs[k].dtype))
        if np.result_type(actions.dtype, self._actions.dtype) != self._actions.dtype:
            self._actions = self._actions.astype(np.result_type(actions.dtype, self._actions.dtype))

    def add_episode(self, observations: Any, actions: np.ndarray, rewards: np.ndarray, gamma: float,
                    source: int = SOURCE_OWN) -> int:
        """Add one finished episode's states with their discounted return-to-go; returns states added.

        Args:
            observations: ``T`` observations (an array, or a dict of arrays with a time axis).
            actions: ``(T, ...)`` actions taken there.
            rewards: ``(T,)`` rewards.
            gamma: discount of the return.
            source: :data:`SOURCE_DEMO` (pinned) or :data:`SOURCE_OWN`.

        Raises:
            ValueError: lengths disagree, rewards are not finite, shapes differ from earlier
                episodes, or pinned demonstrations would exceed the capacity.
        """
        obs = _as_dict(observations)
        actions = np.asarray(actions)
        n = len(actions)
        if n == 0:
            return 0
        lengths = {k: len(v) for k, v in obs.items()}
        if any(length != n for length in lengths.values()):
            raise ValueError(f"{n} actions but observation lengths {lengths}")
        if isinstance(source, (bool, np.bool_)) or source not in (SOURCE_DEMO, SOURCE_OWN):
            raise ValueError(f"source must be SOURCE_DEMO (0) or SOURCE_OWN (1), got {source!r}")
        ret = discounted_returns(rewards, gamma)
        if len(ret) != n:
            raise ValueError(f"{n} actions but {len(ret)} rewards")
        if self._obs is None:
            self._allocate(obs, actions)
        self._check(obs, actions, n)
        assert self._obs is not None and self._actions is not None
        if source == SOURCE_DEMO:
            if self._n_demo + n > self.capacity:
                raise ValueError(f"{self._n_demo + n} demonstrated states exceed the capacity {self.capacity}")
            # demonstrations take the next front slots; an own state held there is dropped
            slots = np.arange(self._n_demo, self._n_demo + n)
            self._n_demo += n
            self._own_next = max(self._own_next, self._n_demo)
            self.episodes["demo"] += 1
        else:
            room = self.capacity - self._n_demo
            if room == 0:
                return 0
            if n > room:  # keep the episode's last states (nearest the outcome)
                obs = {k: v[-room:] for k, v in obs.items()}
                actions, ret, n = actions[-room:], ret[-room:], room
            offs = (self._own_next - self._n_demo + np.arange(n)) % room
            slots = self._n_demo + offs
            self._own_next = self._n_demo + int((offs[-1] + 1) % room)
            self.episodes["own"] += 1
        for k, v in obs.items():
            self._obs[k][slots] = v
        self._actions[slots] = actions
        self.returns[slots] = ret
        self.source[slots] = source
        return n

    # ------------------------------------------------------------------- access
    def __len__(self) -> int:
        return int(np.sum(self.source >= 0))

    def counts(self) -> dict[str, int]:
        """States held per provenance."""
        return {"demo": int(np.sum(self.source == SOURCE_DEMO)), "own": int(np.sum(self.source == SOURCE_OWN))}

    def indices(self) -> np.ndarray:
        """Slots that hold a state."""
        return np.flatnonzero(self.source >= 0)

    def batch(self, idx: np.ndarray) -> tuple[dict[str, np.ndarray], np.ndarray, np.ndarray]:
        """``(observations, actions, returns)`` of the given slots."""
        if self._obs is None or self._actions is None:
            raise ValueError("the replay is empty")
        idx = np.asarray(idx, dtype=np.int64)
        return {k: v[idx] for k, v in self._obs.items()}, self._actions[idx], self.returns[idx]

    # -------------------------------------------------------------- persistence
    def save(self, path: str | os.PathLike[str]) -> Path:
        """Write the replay to one ``.npz`` file (written to a temporary name, then renamed)."""
        path = _npz(path)
        arrays: dict[str, np.ndarray] = {"format": np.array(_FORMAT), "capacity": np.array(self.capacity),
                                         "returns": self.returns, "source": self.source,
                                         "state": np.array([self._n_demo, self._own_next]),
                                         "episodes": np.array([self.episodes["demo"], self.episodes["own"]])}
        if self._obs is not None and self._actions is not None:
            arrays["actions"] = self._actions
            arrays.update({f"obs/{k}": v for k, v in self._obs.items()})
        tmp = path.with_name(path.name + ".tmp")
        with open(tmp, "wb") as f:
            np.savez(f, **arrays)  # type: ignore[arg-type]  # numpy stub: **arrays matched to allow_pickle: bool
        os.replace(tmp, path)
        return path

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> SuccessReplay:
        """Read a replay written by :meth:`save`.

        Raises:
            ValueError: the file is not a replay of a known format.
        """
        path = Path(path)
        if not path.exists() and _npz(path).exists():
            path = _npz(path)
        with np.load(path, allow_pickle=False) as data:
            if "format" not in data or int(data["format"]) != _FORMAT:
                raise ValueError(f"{path} is not a SuccessReplay file of format {_FORMAT}")
            r = cls(int(data["capacity"]))
            r.returns = data["returns"].copy()
            r.source = data["source"].copy()
            r._n_demo, r._own_next = (int(x) for x in data["state"])
            r.episodes = dict(zip(("demo", "own"), (int(x) for x in data["episodes"]), strict=True))
            if "actions" in data:
                r._actions = data["actions"].copy()
                r._obs = {k[4:]: data[k].copy() for k in data.files if k.startswith("obs/")}
        return r
