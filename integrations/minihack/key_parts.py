"""The parts of a MiniHack key: one small encoder per part of the observation.

Each part reads one observation key and turns a batch of it into unit rows of length
``key_dim`` from fixed, seeded random codes; :class:`~integrations.minihack.keys.MiniHackKeyEncoder`
adds the parts with weights. A part's ``build`` finds its key in the observation space
(``None`` if absent) and checks the key's space. Every code is drawn from
``(seed, tag)`` alone, so a part gives the same vectors whatever the other parts are.

>>> from gymnasium import spaces
>>> part = LastActionPart.build({"last_action": spaces.Discrete(9)}, seed=0, key_dim=8)
>>> part.name, part.key, part({"last_action": np.array([8, 0])}).shape
('last_action', 'last_action', (2, 8))
"""

from __future__ import annotations

import re
import zlib
from collections.abc import Callable, Mapping, Sequence
from typing import Any, ClassVar

import numpy as np
from gymnasium import spaces

from experience_wrappers.keys import normalise_rows
from experience_wrappers.whole_numbers import whole

__all__ = [
    "GRID_KEYS",
    "INVENTORY_KEYS",
    "BlstatsPart",
    "GridPart",
    "InventoryPart",
    "KeyPart",
    "LastActionPart",
    "MessagePart",
    "codes",
]

#: Grid observation keys, in order of preference (the first present is used).
GRID_KEYS: tuple[str, ...] = ("glyphs_crop", "chars_crop", "glyphs", "chars")
#: Inventory observation keys, in order of preference.
INVENTORY_KEYS: tuple[str, ...] = ("inv_glyphs", "inv_oclasses")

_S_STONE_GLYPH = 2359  # nle.nethack.GLYPH_CMAP_OFF: unexplored / solid rock
_MESSAGE_TABLE = 4096
_VALUE_TABLE = 1024
_CACHE_LIMIT = 8192
_WORD = re.compile(rb"[a-z0-9']+")


def codes(seed: int, tag: int, rows: int, dim: int) -> np.ndarray:
    """Seeded random +-1/sqrt(dim) codes: rows are unit vectors, near-orthogonal.

    >>> c = codes(0, 1, 3, 16)
    >>> c.shape, bool(np.allclose(np.linalg.norm(c, axis=1), 1)), bool(np.array_equal(c, codes(0, 1, 3, 16)))
    ((3, 16), True, True)
    """
    rng = np.random.default_rng([seed, 15485863, tag])
    return (rng.integers(0, 2, size=(rows, dim)) * 2 - 1).astype(np.float32) / np.sqrt(dim)


def _unit(x: np.ndarray, fallback: np.ndarray) -> np.ndarray:
    """Unit rows; all-zero rows become ``fallback`` (a unit code meaning "nothing")."""
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    out = x / np.maximum(norms, 1e-12)
    return np.where(norms > 1e-6, out, fallback[None, :]).astype(np.float32)


def _ints(batch: Mapping[str, Any], key: str, shape: tuple[int, ...]) -> np.ndarray:
    """``batch[key]`` as int64 ids of shape ``(n, *shape)``, or a ``ValueError`` that says why not."""
    try:
        x = np.asarray(batch[key])
    except KeyError:
        raise ValueError(f"observation batch lacks key {key!r}") from None
    if x.ndim == len(shape):  # one row given without a batch axis
        raise ValueError(
            f"{key!r} must have a leading batch axis: shape (n, *{shape}), got {x.shape}"
        )
    if x.shape[1:] != shape:
        raise ValueError(f"{key!r} must have shape (n, *{shape}), got {x.shape}")
    if x.dtype.kind == "f":
        if not np.all(whole(x)):
            raise ValueError(f"{key!r} must hold integer ids, got non-integer values")
    elif x.dtype.kind not in "iub":
        raise ValueError(f"{key!r} must be an integer array, got dtype {x.dtype}")
    return x.astype(np.int64)


def _check_range(key: str, ids: np.ndarray, vocab: int) -> None:
    if ids.size and (ids.min() < 0 or ids.max() >= vocab):
        raise ValueError(f"{key!r} ids must lie in [0, {vocab}), got [{ids.min()}, {ids.max()}]")


def _cached(cache: dict[bytes, np.ndarray], key: bytes, make: Callable[[], np.ndarray]) -> np.ndarray:
    """``cache[key]``, made by ``make()`` if absent; the cache is emptied when it holds too many."""
    code = cache.get(key)
    if code is None:
        code = make()
        if len(cache) >= _CACHE_LIMIT:
            cache.clear()
        cache[key] = code
    return code


class KeyPart:
    """One part of a key: reads observation key ``key`` and returns ``(n, key_dim)`` float32 rows.

    Subclasses set ``name`` (the part's weight name in
    :data:`~integrations.minihack.keys.DEFAULT_KEY_WEIGHTS`) and ``keys`` (the
    observation keys it can read, in order of preference).
    """

    name: ClassVar[str]
    keys: ClassVar[tuple[str, ...]]

    def __init__(self, key: str, space: spaces.Space, seed: int, key_dim: int) -> None:
        self.key = key
        self.shape: tuple[int, ...] = tuple(space.shape or ())
        self.seed = seed
        self.key_dim = key_dim

    @classmethod
    def build(cls, spaces_by_key: Mapping[str, spaces.Space], seed: int, key_dim: int,
              **options: Any) -> KeyPart | None:
        """The part for the first of ``keys`` in ``spaces_by_key``; ``None`` if none is there."""
        key = next((k for k in cls.keys if k in spaces_by_key), None)
        return None if key is None else cls(key, spaces_by_key[key], seed, key_dim, **options)

    def __call__(self, batch: Mapping[str, Any]) -> np.ndarray:
        raise NotImplementedError

    def key_values(self, x: np.ndarray) -> np.ndarray:
        """The values of a batch ``x`` of this part's observation key (shape ``(n, *shape)``) that
        enter the key: two observations with the same values get the same part (the encoder's
        cache of keys reads them)."""
        return x


class _IdsPart(KeyPart):
    """A part that reads a Box of integer ids (``ndim`` axes) in ``[0, vocab)``, ``vocab`` = its high + 1."""

    ndim: ClassVar[int]

    def __init__(self, key: str, space: spaces.Space, seed: int, key_dim: int) -> None:
        if not isinstance(space, spaces.Box) or len(space.shape) != self.ndim:
            raise ValueError(f"{key!r} must be a {self.ndim}-D Box, got {space!r}")
        super().__init__(key, space, seed, key_dim)
        self.vocab = int(np.max(space.high)) + 1


class GridPart(_IdsPart):
    """The map view: the sum over cells of (code of the cell's position) * (code of its glyph).

    The sum is near-orthogonal for different (position, glyph) pairs; unexplored rock
    (glyph 2359, char ``' '``) adds nothing, and an all-rock view gets a code of its own.
    """

    name = "grid"
    keys = GRID_KEYS
    ndim = 2

    def __init__(self, key: str, space: spaces.Space, seed: int, key_dim: int) -> None:
        super().__init__(key, space, seed, key_dim)
        background = 32 if key.startswith("chars") else _S_STONE_GLYPH
        self._pos = codes(seed, 1, int(np.prod(self.shape)), key_dim)
        # the glyph codes with the background glyph's row zeroed: background cells add nothing
        self._ids_fg = codes(seed, 2, self.vocab, key_dim)
        self._ids_fg[background] = 0.0
        self._empty = codes(seed, 3, 1, key_dim)[0]

    def __call__(self, batch: Mapping[str, Any]) -> np.ndarray:
        ids = _ints(batch, self.key, self.shape).reshape(-1, int(np.prod(self.shape)))
        _check_range(self.key, ids, self.vocab)
        v = np.einsum("ncd,cd->nd", self._ids_fg[ids], self._pos) * np.sqrt(self.key_dim)
        return _unit(v, self._empty)


class InventoryPart(_IdsPart):
    """The inventory: the bag of item codes plus a code of the exact set of items.

    The set code moves the key clearly when one more item (a key) is picked up, even
    when the hero already carries several.
    """

    name = "inventory"
    keys = INVENTORY_KEYS
    ndim = 1

    def __init__(self, key: str, space: spaces.Space, seed: int, key_dim: int) -> None:
        super().__init__(key, space, seed, key_dim)
        # Empty slots: NO_GLYPH (= MAX_GLYPH, the upper bound) for glyphs, 18 for classes.
        self._empty_id = self.vocab - 1
        self._codes = codes(seed, 4, self.vocab, key_dim)
        self._empty = codes(seed, 5, 1, key_dim)[0]
        self._cache: dict[bytes, np.ndarray] = {}

    def _set_code(self, items: bytes) -> np.ndarray:
        return _cached(self._cache, items,
                       lambda: codes(self.seed, 2_000_000 + zlib.crc32(items), 1, self.key_dim)[0])

    def __call__(self, batch: Mapping[str, Any]) -> np.ndarray:
        ids = _ints(batch, self.key, self.shape)
        ids = ids.reshape(len(ids), -1)
        _check_range(self.key, ids, self.vocab)
        mask = ids != self._empty_id
        bag = _unit((self._codes[ids] * mask[..., None]).sum(axis=1), self._empty)
        # The exact multiset of items: any change (picking up a key) flips this half.
        sets = np.stack(
            [self._set_code(np.sort(row[m]).tobytes()) for row, m in zip(ids, mask, strict=True)]
        )
        return normalise_rows(bag + sets)


class BlstatsPart(KeyPart):
    """The bottom-line stats: for each field of ``fields``, (code of field) * (code of value)."""

    name = "blstats"
    keys = ("blstats",)

    def __init__(self, key: str, space: spaces.Space, seed: int, key_dim: int,
                 fields: Sequence[int] = ()) -> None:
        super().__init__(key, space, seed, key_dim)
        n_fields = int(np.prod(self.shape))
        self.fields = tuple(int(f) for f in fields)
        bad = [f for f in self.fields if not 0 <= f < n_fields]
        if bad:
            raise ValueError(f"blstats_fields {bad} are out of range for {n_fields} fields")
        self._fields = codes(seed, 6, n_fields, key_dim)
        self._values = codes(seed, 7, _VALUE_TABLE, key_dim) * np.sqrt(key_dim)  # +-1 entries
        self._empty = codes(seed, 8, 1, key_dim)[0]

    def __call__(self, batch: Mapping[str, Any]) -> np.ndarray:
        x = _ints(batch, self.key, self.shape)
        if not self.fields:
            return np.tile(self._empty, (len(x), 1))
        f = np.asarray(self.fields)
        values = np.mod(x[:, f], _VALUE_TABLE)
        v = (self._fields[f][None] * self._values[values]).sum(axis=1)
        return _unit(v, self._empty)

    def key_values(self, x: np.ndarray) -> np.ndarray:
        """Only ``fields`` enter the key (the step counter and the score change at every step)."""
        return x[:, list(self.fields)]


class LastActionPart(KeyPart):
    """The action just taken: a code per action, and one for "none" (just reset)."""

    name = "last_action"
    keys = ("last_action",)

    def __init__(self, key: str, space: spaces.Space, seed: int, key_dim: int) -> None:
        if not isinstance(space, spaces.Discrete):
            raise ValueError(f"'last_action' must be Discrete, got {space!r}")
        super().__init__(key, space, seed, key_dim)
        self.n = int(space.n)
        self._start = int(space.start)
        self._codes = codes(seed, 9, self.n, key_dim)

    def __call__(self, batch: Mapping[str, Any]) -> np.ndarray:
        a = _ints(batch, self.key, ()).reshape(-1) - self._start
        _check_range(self.key, a, self.n)
        return self._codes[a]


class MessagePart(KeyPart):
    """The message: the bag of its words' codes (hashed with CRC-32, stable across runs)."""

    name = "message"
    keys = ("message",)

    def __init__(self, key: str, space: spaces.Space, seed: int, key_dim: int) -> None:
        super().__init__(key, space, seed, key_dim)
        self._codes = codes(seed, 10, _MESSAGE_TABLE, key_dim)
        self._empty = codes(seed, 11, 1, key_dim)[0]
        self._cache: dict[bytes, np.ndarray] = {}

    def _code(self, raw: bytes) -> np.ndarray:
        return _cached(self._cache, raw, lambda: self._words_code(raw))

    def _words_code(self, raw: bytes) -> np.ndarray:
        words = _WORD.findall(raw.lower())
        if not words:
            return self._empty
        rows = [zlib.crc32(w) % _MESSAGE_TABLE for w in words]
        return _unit(self._codes[rows].sum(axis=0, keepdims=True), self._empty)[0]

    def __call__(self, batch: Mapping[str, Any]) -> np.ndarray:
        m = _ints(batch, self.key, self.shape)
        m = m.reshape(len(m), -1).astype(np.uint8)
        return np.stack([self._code(bytes(row).split(b"\0", 1)[0]) for row in m])
