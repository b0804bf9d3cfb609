"""Turning trajectory segments into fixed-size context vectors, and back.

A *segment* is a run of steps ``t = 0 .. T-1`` of one episode. Each step becomes a row
``[state features, encoded action, reward, return-to-go]`` of length
:func:`segment_dim`. A segment is stored as one flat ``float32`` vector of length
:func:`context_size`: at most ``max_len`` rows (longer segments are subsampled in order,
always keeping the first and the last step), zero padding, and finally the number of
valid rows. A flat vector fits in numpy buffers and queues; :func:`decode_contexts`
turns a batch of them back into the padded sequences the extractor network reads.

:class:`ActionCoder` turns actions of any common gymnasium space into the fixed-length
float rows used above.
"""

from __future__ import annotations

import numpy as np
from gymnasium import spaces

from ..whole_numbers import whole

__all__ = [
    "ActionCoder",
    "segment_dim",
    "context_size",
    "subsample_indices",
    "encode_segment",
    "decode_contexts",
    "CONTEXT_MAX",
]

#: the largest magnitude a context holds: the bank stores contexts in float16 (65504)
CONTEXT_MAX = float(np.finfo(np.float16).max)


def _check_dim(name: str, value: object, minimum: int = 0) -> int:
    """``value`` as an int >= ``minimum``: numpy integers too, bools not (as ``validators.integral``,
    inlined: it runs on every segment encoded and every batch decoded)."""
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < minimum:
        raise ValueError(f"{name} must be an int >= {minimum}, got {value!r}")
    return int(value)


def _integer_valued(name: str, arr: np.ndarray) -> np.ndarray:
    """Return ``arr`` as int64, or raise when it holds non-integer values."""
    if arr.dtype == np.bool_ or np.issubdtype(arr.dtype, np.integer):
        return arr.astype(np.int64)
    if np.issubdtype(arr.dtype, np.floating):
        if not np.all(whole(arr)):
            raise ValueError(f"{name} must hold integer values, got {arr!r}")
        return arr.astype(np.int64)
    raise ValueError(f"{name} must be a numeric array, got dtype {arr.dtype}")


class ActionCoder:
    """Encode batches of actions from a gymnasium space as float32 rows of fixed length.

    * ``Discrete(n)``: a one-hot of length ``n`` (``discrete`` is True). Actions of shape
      ``(batch,)`` or ``(batch, 1)`` (Stable-Baselines3's buffer layout) are accepted.
    * ``MultiDiscrete(nvec)``: the one-hots of every component, concatenated
      (length ``nvec.sum()``).
    * ``MultiBinary(n)``: the 0/1 values themselves (length ``prod(shape)``).
    * ``Box``: each component mapped linearly from ``[low, high]`` to ``[-1, 1]`` where
      both bounds are finite; components with an infinite bound are kept raw and clipped
      to ``[-unbounded_clip, unbounded_clip]``. Values slightly outside finite bounds are
      clipped (policies often sample outside them and the env clips), NaN/inf raise.

    Args:
        action_space: the env's action space.
        unbounded_clip: clip range of Box components without finite bounds.

    Attributes:
        dim: length of an encoded action row.
        discrete: True for ``Discrete`` spaces (rows are one-hots of a single choice).

    Raises:
        TypeError: for an unsupported space (Dict, Tuple, Text, ...).

    >>> coder = ActionCoder(spaces.Discrete(3))
    >>> coder.dim, coder.discrete
    (3, True)
    >>> coder.encode(np.array([2, 0]))
    array([[0., 0., 1.],
           [1., 0., 0.]], dtype=float32)
    >>> ActionCoder(spaces.Box(-2.0, 2.0, (2,))).encode(np.array([[2.0, -1.0]]))
    array([[ 1. , -0.5]], dtype=float32)
    """

    def __init__(self, action_space: spaces.Space, unbounded_clip: float = 1.0) -> None:
        if not np.isfinite(unbounded_clip) or unbounded_clip <= 0:
            raise ValueError(f"unbounded_clip must be finite and > 0, got {unbounded_clip!r}")
        self.action_space = action_space
        self.unbounded_clip = float(unbounded_clip)
        self.discrete = isinstance(action_space, spaces.Discrete)
        if isinstance(action_space, spaces.Discrete):
            self.dim = int(action_space.n)
        elif isinstance(action_space, spaces.MultiDiscrete):
            self._nvec = np.asarray(action_space.nvec, dtype=np.int64).reshape(-1)
            self._start = np.asarray(action_space.start, dtype=np.int64).reshape(-1)
            self._offsets = np.concatenate([[0], np.cumsum(self._nvec)[:-1]]).astype(np.int64)
            self.dim = int(self._nvec.sum())
        elif isinstance(action_space, spaces.MultiBinary):
            self.dim = int(np.prod(action_space.shape))
        elif isinstance(action_space, spaces.Box):
            low = np.asarray(action_space.low, dtype=np.float64).reshape(-1)
            high = np.asarray(action_space.high, dtype=np.float64).reshape(-1)
            self._bounded = np.isfinite(low) & np.isfinite(high) & (high > low)
            self._low = np.where(self._bounded, low, 0.0)
            self._span = np.where(self._bounded, high - low, 1.0)
            self.dim = int(low.size)
        else:
            raise TypeError(
                "ActionCoder supports Discrete, MultiDiscrete, MultiBinary and Box action "
                f"spaces, got {action_space!r}"
            )
        if self.dim <= 0:
            raise ValueError(f"action_space must have at least one component, got {action_space!r}")

    def __repr__(self) -> str:
        return f"ActionCoder({self.action_space!r}, dim={self.dim})"

    def _batch(self, actions: object) -> np.ndarray:
        arr = np.asarray(actions)
        shape = tuple(self.action_space.shape or ())
        if self.discrete and arr.ndim == 2 and arr.shape[1] == 1:
            arr = arr[:, 0]
        if arr.ndim != len(shape) + 1 or tuple(arr.shape[1:]) != shape:
            raise ValueError(
                f"actions must have shape (batch, *{shape}) for {self.action_space!r}, "
                f"got shape {arr.shape}"
            )
        return arr

    def encode(self, actions: object) -> np.ndarray:
        """Encode a batch of actions (a leading batch axis) as ``(batch, dim)`` float32.

        Raises:
            ValueError: wrong shape, NaN/inf, or a discrete action outside the space.
        """
        arr = self._batch(actions)
        n = arr.shape[0]
        space = self.action_space
        out = np.zeros((n, self.dim), dtype=np.float32)
        if isinstance(space, spaces.Discrete):
            a = _integer_valued("actions", arr) - int(space.start)
            if np.any((a < 0) | (a >= self.dim)):
                raise ValueError(
                    f"actions must lie in [{space.start}, {space.start + space.n - 1}] for "
                    f"{space!r}, got {arr!r}"
                )
            out[np.arange(n), a] = 1.0
        elif isinstance(space, spaces.MultiDiscrete):
            a = _integer_valued("actions", arr).reshape(n, -1) - self._start
            if np.any((a < 0) | (a >= self._nvec)):
                raise ValueError(f"actions must lie inside {space!r}, got {arr!r}")
            rows = np.repeat(np.arange(n), a.shape[1])
            out[rows, (a + self._offsets).reshape(-1)] = 1.0
        elif isinstance(space, spaces.MultiBinary):
            a = _integer_valued("actions", arr).reshape(n, -1)
            if np.any((a != 0) & (a != 1)):
                raise ValueError(f"actions must be 0 or 1 for {space!r}, got {arr!r}")
            out[:] = a
        else:  # Box
            a = arr.astype(np.float64).reshape(n, -1)
            if not np.all(np.isfinite(a)):
                raise ValueError(f"actions must be finite for {space!r}, got {arr!r}")
            scaled = np.where(self._bounded, 2.0 * (a - self._low) / self._span - 1.0, a)
            limit = np.where(self._bounded, 1.0, self.unbounded_clip)
            out[:] = np.clip(scaled, -limit, limit)
        return out

    @property
    def box_scale(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """A Box's code rule, ``(bounded, low, span)`` per component: a bounded component's code ``c`` is the
        action ``low + (c + 1) / 2 * span``, another's is the action itself (what :meth:`decode` does, for a
        decoder of its own, a policy's in torch).

        Raises:
            TypeError: not a Box space.
        """
        if not isinstance(self.action_space, spaces.Box):
            raise TypeError(f"box_scale is a Box space's code rule, got {self.action_space!r}")
        return self._bounded.copy(), self._low.copy(), self._span.copy()

    def decode(self, codes: object) -> np.ndarray:
        """The actions of a batch of codes ``(batch, dim)``: :meth:`encode`'s inverse (Discrete and Box).

        ``Discrete``: the index of each row's largest entry; ``Box``: each component mapped back
        from ``[-1, 1]`` to ``[low, high]`` (components without finite bounds as they are), shaped
        as the space's actions. An encoded action decodes to itself (clipped to the bounds).

        Raises:
            TypeError: a MultiDiscrete or MultiBinary space.
            ValueError: codes not ``(batch, dim)``.

        >>> coder = ActionCoder(spaces.Box(-2.0, 2.0, (2,)))
        >>> coder.decode(coder.encode(np.array([[2.0, -1.0]]))).tolist()
        [[2.0, -1.0]]
        """
        c = np.asarray(codes, dtype=np.float64)
        if c.ndim != 2 or c.shape[1] != self.dim:
            raise ValueError(f"codes must have shape (batch, {self.dim}) for {self.action_space!r}, got {c.shape}")
        space = self.action_space
        if isinstance(space, spaces.Discrete):
            return (c.argmax(axis=1) + int(space.start)).astype(np.int64)
        if not isinstance(space, spaces.Box):
            raise TypeError(f"ActionCoder.decode supports Discrete and Box action spaces, got {space!r}")
        a = np.where(self._bounded, self._low + (np.clip(c, -1.0, 1.0) + 1.0) / 2.0 * self._span, c)
        return a.reshape((len(c), *tuple(space.shape))).astype(space.dtype)


def segment_dim(state_dim: int, action_dim: int) -> int:
    """Length of one step's row: state features, encoded action, reward, return-to-go.

    >>> segment_dim(4, 3)
    9
    """
    return _check_dim("state_dim", state_dim) + _check_dim("action_dim", action_dim) + 2


def context_size(state_dim: int, action_dim: int, max_len: int) -> int:
    """Length of a flat context: ``max_len`` rows plus the count of valid rows.

    >>> context_size(4, 3, max_len=8)
    73
    """
    return _check_dim("max_len", max_len, minimum=1) * segment_dim(state_dim, action_dim) + 1


def _as_float_array(name: str, value: object, ndim: int) -> np.ndarray:
    arr = np.asarray(value)
    if not (
        arr.dtype == np.bool_
        or np.issubdtype(arr.dtype, np.integer)
        or np.issubdtype(arr.dtype, np.floating)
    ):
        raise ValueError(f"{name} must be a real-valued array, got dtype {arr.dtype}")
    if arr.ndim != ndim:
        raise ValueError(f"{name} must be {ndim}-D, got shape {arr.shape}")
    arr = arr.astype(np.float64)
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} must be finite, got NaN or inf in {name} of shape {arr.shape}")
    return arr


def subsample_indices(length: int, max_len: int) -> np.ndarray:
    """Indices of the rows kept from a segment of ``length`` steps.

    All of them when ``length <= max_len``; else ``max_len`` evenly spaced indices in
    order, always including the first and the last step (only the first when
    ``max_len == 1``: its return-to-go already holds the segment's whole return).

    >>> subsample_indices(10, 4)
    array([0, 3, 6, 9])
    >>> subsample_indices(3, 4)
    array([0, 1, 2])
    """
    return _subsample(_check_dim("length", length, minimum=1), _check_dim("max_len", max_len, minimum=1))


def _subsample(length: int, max_len: int) -> np.ndarray:
    if length <= max_len:
        return np.arange(length)
    if max_len == 1:
        return np.zeros(1, dtype=np.int64)
    return np.unique(np.round(np.linspace(0, length - 1, max_len)).astype(np.int64))


def encode_segment(
    states: np.ndarray, actions: np.ndarray, rewards: np.ndarray, max_len: int
) -> np.ndarray:
    """Encode one segment as a flat ``float32`` context of length :func:`context_size`.

    Row ``t`` is ``[states[t], actions[t], rewards[t], rewards[t:].sum()]`` (the
    undiscounted return-to-go, computed on the full segment before subsampling).
    Segments longer than ``max_len`` are subsampled with :func:`subsample_indices`.
    Unused rows are zero; the last element is the number of valid rows. The bank stores
    contexts in float16, so values beyond its range (:data:`CONTEXT_MAX`, e.g. the
    return-to-go of a game with raw scores in the hundreds of thousands) are clipped to it.

    Args:
        states: ``(T, state_dim)`` state features.
        actions: ``(T, action_dim)`` encoded actions (see :meth:`ActionCoder.encode`).
        rewards: ``(T,)`` rewards.
        max_len: most rows kept.

    Raises:
        ValueError: for T < 1, mismatched lengths, wrong dimensions or NaN/inf.

    >>> ctx = encode_segment(np.zeros((2, 1)), np.eye(2), np.array([1.0, 2.0]), max_len=3)
    >>> ctx.reshape(-1)[:-1].reshape(3, 5)
    array([[0., 1., 0., 1., 3.],
           [0., 0., 1., 2., 2.],
           [0., 0., 0., 0., 0.]], dtype=float32)
    >>> float(ctx[-1])
    2.0
    """
    max_len = _check_dim("max_len", max_len, minimum=1)
    s = _as_float_array("states", states, 2)
    a = _as_float_array("actions", actions, 2)
    r = _as_float_array("rewards", rewards, 1)
    t = s.shape[0]
    if t < 1:
        raise ValueError(f"a segment needs at least one step, got states of shape {s.shape}")
    if a.shape[0] != t or r.shape[0] != t:
        raise ValueError(
            "states, actions and rewards must have the same length, got "
            f"{s.shape[0]}, {a.shape[0]} and {r.shape[0]}"
        )
    rtg = np.cumsum(r[::-1])[::-1]
    rows = np.concatenate([s, a, r[:, None], rtg[:, None]], axis=1)
    rows = rows[_subsample(t, max_len)]
    seg = rows.shape[1]
    out = np.zeros(max_len * seg + 1, dtype=np.float32)
    out[: rows.size] = rows.reshape(-1)
    out[-1] = rows.shape[0]
    if not np.all(np.isfinite(out)):
        raise ValueError("the encoded segment overflowed float32 (values too large to store)")
    # the bank keeps contexts in float16: larger rewards and returns (a game's raw score) saturate there
    np.clip(out, -CONTEXT_MAX, CONTEXT_MAX, out=out)
    return out


def decode_contexts(
    contexts: np.ndarray, state_dim: int, action_dim: int, max_len: int
) -> tuple[np.ndarray, np.ndarray]:
    """Split a batch of flat contexts into padded rows and valid lengths.

    Args:
        contexts: ``(B, context_size(state_dim, action_dim, max_len))``.
        state_dim: state feature length used when encoding.
        action_dim: encoded action length used when encoding.
        max_len: ``max_len`` used when encoding.

    Returns:
        ``inputs`` float32 ``(B, max_len, segment_dim)`` and ``lengths`` int64 ``(B,)``.

    Raises:
        ValueError: wrong shape, NaN/inf, or a row count outside ``[1, max_len]``.

    >>> ctx = encode_segment(np.ones((3, 2)), np.zeros((3, 1)), np.ones(3), max_len=4)
    >>> inputs, lengths = decode_contexts(ctx[None], 2, 1, 4)
    >>> inputs.shape, lengths
    ((1, 4, 5), array([3]))
    """
    size = context_size(state_dim, action_dim, max_len)
    arr = np.asarray(contexts)
    if arr.ndim != 2 or arr.shape[1] != size:
        raise ValueError(
            f"contexts must have shape (batch, {size}) for state_dim={state_dim}, "
            f"action_dim={action_dim}, max_len={max_len}, got shape {arr.shape}"
        )
    arr = arr.astype(np.float32, copy=False)
    if not np.all(np.isfinite(arr)):
        raise ValueError("contexts must be finite, got NaN or inf")
    counts = arr[:, -1]
    lengths = np.round(counts).astype(np.int64)
    bad = (lengths < 1) | (lengths > max_len) | (np.abs(counts - lengths) > 1e-3)
    if np.any(bad):
        raise ValueError(
            f"the last element of each context must be a row count in [1, {max_len}], "
            f"got {counts[bad][:5].tolist()}"
        )
    inputs = arr[:, :-1].reshape(arr.shape[0], int(max_len), (size - 1) // int(max_len))
    return np.ascontiguousarray(inputs, dtype=np.float32), lengths
