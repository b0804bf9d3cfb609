"""The key-encoder interface (observation and task id -> frozen key vector), the checks of its
keys, and the flattening both default encoders start from (:func:`batch_flatten`: batches of
observations of any common gymnasium space to float rows, with fixed rules)."""

from __future__ import annotations

import abc
from collections.abc import Sequence
from typing import Any

import numpy as np
from gymnasium import spaces

__all__ = ["KeyEncoder", "SpaceFlattener", "add_batch_axis", "batch_flatten", "check_key_encoder", "checked_keys",
           "flat_dim", "normalise_rows", "squash_unbounded"]


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
    bank's default thresholds apply (except an observation they project to zero, such as
    the centre of a bounded Box for :class:`~experience_wrappers.keys.RandomProjectionKeyEncoder`:
    its key is zero, which the default ``"l2"`` space takes and the ``"cosine"`` space refuses).
    """

    key_dim: int

    @abc.abstractmethod
    def encode(self, obs_batch: Any, task_ids: np.ndarray) -> np.ndarray:
        """Keys of a batch: ``(n, key_dim)`` float32, for ``n`` observations."""

    def check_space(self, observation_space: spaces.Space) -> None:  # noqa: B027 (a hook: overriding is optional)
        """Refuse (``ValueError``) an observation space this encoder cannot read.

        Called when a memory or a manager is built on the space, rather than at the first key. The
        default takes any space."""

    def _flattener(self) -> SpaceFlattener:
        """The :class:`SpaceFlattener` of this encoder's ``observation_space``, kept: made at its first key (a space
        it cannot flatten fails there, as it always has; an encoder pickled before it kept none gets one)."""
        flatten = self.__dict__.get("_flatten")
        if flatten is None:
            flatten = self._flatten = SpaceFlattener(self.observation_space)  # type: ignore[attr-defined]
        return flatten

    def __call__(self, obs: Any, task_id: int = 0) -> np.ndarray:
        """The key of one observation, shape ``(key_dim,)``."""
        batch = add_batch_axis(obs)
        return self.encode(batch, np.array([task_id], dtype=np.int64))[0]


def add_batch_axis(obs: Any) -> Any:
    """One observation (array, dict or tuple of arrays) as a batch of one."""
    if isinstance(obs, dict):  # (an array's batch of one is a view: one call per key, not a recursion)
        return {k: v[None] if type(v) is np.ndarray else add_batch_axis(v) for k, v in obs.items()}
    if isinstance(obs, tuple):
        return tuple(add_batch_axis(v) for v in obs)
    return np.asarray(obs)[None]


def stack_observations(frames: Sequence[Any]) -> Any:
    """Stack per-step observations (arrays or dicts of arrays) along a new time axis."""
    if isinstance(frames[0], dict):
        return {k: np.stack([f[k] for f in frames]) for k in frames[0]}
    return np.stack([np.asarray(f) for f in frames])


def check_key_encoder(encoder: object, observation_space: spaces.Space | None = None) -> KeyEncoder:
    """``encoder`` if it can serve as a key encoder: an object with a callable
    ``encode(obs_batch, task_ids)`` and an integer ``key_dim`` >= 1 (a numpy integer is stored
    back as a Python int); else a TypeError / ValueError naming what is missing. Given
    ``observation_space``, the encoder's ``check_space`` (where it has one) checks it can read it.

    A class (``FlatKeyEncoder``, ``MiniHackKeyEncoder``) is built from ``observation_space``
    (``cls(observation_space)``) and its instance checked: a run given the class saves it by name,
    where an instance holds state that a run's ``method.json`` cannot (a projection).

    >>> check_key_encoder(lambda obs: obs)
    Traceback (most recent call last):
    ...
    TypeError: key_encoder must be a KeyEncoder (an object with encode(obs_batch, task_ids) and an int key_dim), got a function
    >>> from experience_wrappers.keys import FlatKeyEncoder
    >>> check_key_encoder(FlatKeyEncoder, spaces.Box(0, 1, (3,))).key_dim
    3
    """
    if isinstance(encoder, type):
        if observation_space is None:
            raise TypeError(f"key_encoder must be a KeyEncoder instance here, got the class {encoder.__name__}: "
                            f"pass {encoder.__name__}(...)")
        cls = encoder
        try:
            encoder = cls(observation_space)
        except Exception as exc:
            raise TypeError(f"key_encoder={cls.__name__} (a class) is built as {cls.__name__}(observation_space), "
                            f"which failed ({type(exc).__name__}: {exc}); pass a class that builds from the "
                            "observation space, or an instance built as the encoder needs") from exc
    if not callable(getattr(encoder, "encode", None)):
        raise TypeError("key_encoder must be a KeyEncoder (an object with encode(obs_batch, task_ids) and an int "
                        f"key_dim), got a {type(encoder).__name__}")
    name = f"{type(encoder).__name__}.key_dim"
    if not hasattr(encoder, "key_dim"):
        raise TypeError(f"{name} is not set: a key encoder says how wide its keys are (key_dim = ...)")
    key_dim = encoder.key_dim  # type: ignore[attr-defined]
    if isinstance(key_dim, bool) or not isinstance(key_dim, (int, np.integer)):
        raise TypeError(f"{name} must be an int, got {key_dim!r} ({type(key_dim).__name__})")
    if key_dim < 1:
        raise ValueError(f"{name} must be >= 1, got {key_dim}")
    if not isinstance(key_dim, int):
        encoder.key_dim = int(key_dim)  # type: ignore[attr-defined]
    check_space = getattr(encoder, "check_space", None)  # (an encoder that is not a KeyEncoder may lack it)
    if observation_space is not None and callable(check_space):
        check_space(observation_space)
    return encoder  # type: ignore[return-value]


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
    Dict and Tuple spaces are concatenated in key order. An encoder that flattens every batch keeps a
    :class:`SpaceFlattener` of its space instead (the same rules, their constants worked out once).

    >>> s = spaces.Dict({"a": spaces.Discrete(3), "b": spaces.Box(-2.0, 2.0, (2,))})
    >>> batch_flatten(s, {"a": np.array([2]), "b": np.array([[2.0, -1.0]])}).tolist()
    [[0.0, 0.0, 1.0, 1.0, -0.5]]
    """
    return SpaceFlattener(space)(batch)


class SpaceFlattener:
    """:func:`batch_flatten` for one space, with the space's constants (a Box's bounds, centres and half
    widths; the offsets of a MultiDiscrete) worked out once: the default key encoders flatten every
    observation they key, and working them out again took most of a key's time (MiniHack's Dict of four
    Boxes: about 110 µs of 125). Picklable (the learner process gets the encoder).

    Raises:
        TypeError: a space it cannot flatten (a ``Text``, a ``Graph``): give the wrapper a key encoder
            that understands it.
    """

    def __init__(self, space: spaces.Space) -> None:
        self.space = space
        self.parts: list[tuple[Any, SpaceFlattener]] = []
        if isinstance(space, spaces.Box):
            self.size = space.shape and int(np.prod(space.shape)) or 1
            low = np.broadcast_to(space.low, space.shape).reshape(-1).astype(np.float64)
            high = np.broadcast_to(space.high, space.shape).reshape(-1).astype(np.float64)
            # bounds of 1e6 and wider (e.g. float32 max) say nothing about scale: squash those too
            self.bounded = np.isfinite(low) & np.isfinite(high) & (high > low) & (high - low < 1e6)
            lo, hi = np.where(self.bounded, low, -1.0), np.where(self.bounded, high, 1.0)
            self.mid, self.half = (hi + lo) / 2.0, (hi - lo) / 2.0
            self.some, self.every = bool(self.bounded.any()), bool(self.bounded.all())
        elif isinstance(space, spaces.MultiDiscrete):
            self.nvec = space.nvec.reshape(-1)
            self.start = np.broadcast_to(space.start, space.nvec.shape).reshape(-1)
            self.offsets = np.concatenate([[0], np.cumsum(self.nvec)[:-1]])
            self.width = int(self.nvec.sum())
        elif isinstance(space, spaces.Dict):
            self.parts = [(key, SpaceFlattener(sub)) for key, sub in space.spaces.items()]
        elif isinstance(space, spaces.Tuple):
            self.parts = [(i, SpaceFlattener(sub)) for i, sub in enumerate(space.spaces)]
        elif not isinstance(space, spaces.Discrete | spaces.MultiBinary):
            raise TypeError(f"cannot flatten observations of space {space!r}; give the wrapper a key_encoder "
                            "that understands it")

    def __call__(self, batch: Any) -> np.ndarray:
        """``batch`` (a leading axis) flattened to ``(n, flat_dim)`` float32 (:func:`batch_flatten`'s rules)."""
        space = self.space
        if isinstance(space, spaces.Box):
            x: np.ndarray = np.asarray(batch, dtype=np.float64)
            if x.shape[1:] != space.shape:
                raise ValueError(f"a batch of observations of {space} must have shape (n, *{space.shape}), got {x.shape}")
            x = x.reshape(len(x), self.size)
            if self.every:  # (the values np.where would pick)
                return ((x - self.mid) / self.half).astype(np.float32)
            out = squash_unbounded(x)
            if self.some:
                out = np.where(self.bounded, (x - self.mid) / self.half, out)
            return out.astype(np.float32)
        if isinstance(space, spaces.Discrete):
            idx = np.asarray(batch, dtype=np.int64).reshape(-1) - int(space.start)
            out = np.zeros((len(idx), int(space.n)), dtype=np.float32)
            out[np.arange(len(idx)), idx] = 1.0
            return out
        if isinstance(space, spaces.MultiDiscrete):
            x = np.asarray(batch, dtype=np.int64).reshape(len(batch), len(self.nvec))
            out = np.zeros((len(x), self.width), dtype=np.float32)
            rows = np.repeat(np.arange(len(x)), x.shape[1])
            out[rows, (x - self.start + self.offsets).reshape(-1)] = 1.0
            return out
        if isinstance(space, spaces.MultiBinary):
            return np.asarray(batch, dtype=np.float32).reshape(len(batch), -1)
        return np.concatenate([flatten(batch[key]) for key, flatten in self.parts], axis=1)
