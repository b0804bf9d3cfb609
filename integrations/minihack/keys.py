"""A frozen key encoder for MiniHack observations.

Keys must tell apart states a policy should act differently in: a different view of the
map, carrying the key or not, the message just shown, and the action just taken (so
that a no-op such as walking into a wall or ``apply`` with nothing to apply does not
retrieve the same hint forever). :class:`MiniHackKeyEncoder` builds one unit vector per
part of the observation from fixed, seeded random codes and adds them with weights.
"""

from __future__ import annotations

import re
import zlib
from collections.abc import Mapping
from typing import Any

import numpy as np
from gymnasium import spaces

from experience_wrappers.keys import KeyEncoder, normalise_rows

__all__ = ["DEFAULT_KEY_WEIGHTS", "DEFAULT_BLSTATS_KEY_FIELDS", "MiniHackKeyEncoder"]

#: Weight of each part of the key (parts whose observation key is absent are skipped).
DEFAULT_KEY_WEIGHTS: Mapping[str, float] = {
    "grid": 1.0,
    "inventory": 0.5,
    "blstats": 0.5,
    "last_action": 0.5,
    "message": 0.5,
}

#: blstats fields (``nle.nethack.NLE_BL_*`` indices) that enter the key: position, hit
#: points, depth, gold, armour class, levels, hunger, encumbrance, dungeon, level and
#: condition. Fields that change every step whatever the agent does (time, score,
#: experience points, energy) are left out, or no two steps would share a key.
DEFAULT_BLSTATS_KEY_FIELDS: tuple[int, ...] = (0, 1, 10, 11, 12, 13, 16, 17, 18, 21, 22, 23, 24, 25)

_GRID_KEYS = ("glyphs_crop", "chars_crop", "glyphs", "chars")
_INVENTORY_KEYS = ("inv_glyphs", "inv_oclasses")
_S_STONE_GLYPH = 2359  # nle.nethack.GLYPH_CMAP_OFF: unexplored / solid rock
_MESSAGE_TABLE = 4096
_VALUE_TABLE = 1024
_CACHE_LIMIT = 8192
_WORD = re.compile(rb"[a-z0-9']+")


def _codes(seed: int, tag: int, rows: int, dim: int) -> np.ndarray:
    """Seeded random +-1/sqrt(dim) codes: rows are unit vectors, near-orthogonal."""
    rng = np.random.default_rng([seed, 15485863, tag])
    return (rng.integers(0, 2, size=(rows, dim)) * 2 - 1).astype(np.float32) / np.sqrt(dim)


def _unit(x: np.ndarray, fallback: np.ndarray) -> np.ndarray:
    """Unit rows; all-zero rows become ``fallback`` (a unit code meaning "nothing")."""
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    out = x / np.maximum(norms, 1e-12)
    return np.where(norms > 1e-6, out, fallback[None, :]).astype(np.float32)


class MiniHackKeyEncoder(KeyEncoder):
    """Frozen, seeded keys from MiniHack observations: map view, inventory, stats, action, message.

    Each part present in the observation space becomes a unit vector, multiplied by its
    weight (:data:`DEFAULT_KEY_WEIGHTS`, override with ``weights``); the sum is
    unit-normalised. All codes are fixed random +-1 vectors drawn from ``seed``, so the
    encoder is frozen: the same observation always gives the same key.

    * ``grid``: the first of ``glyphs_crop``, ``chars_crop``, ``glyphs``, ``chars``
      present: the sum over cells of (code of the cell's position) * (code of its
      glyph), elementwise, which is near-orthogonal for different (position, glyph)
      pairs; unexplored rock (glyph 2359, char ``' '``) adds nothing.
    * ``inventory``: ``inv_glyphs`` (else ``inv_oclasses``): the bag of item codes plus a
      code of the exact set of items, so that picking up one more item (a key) moves the
      key clearly even when the hero already carries several.
    * ``blstats``: for each field of ``blstats_fields``, (code of field) * (code of value).
    * ``last_action``: a code per action, and one for "none" (just reset).
    * ``message``: the bag of its words' codes (hashed with CRC-32, stable across runs).
    * ``task``: a code per task id, weight ``task_weight`` (0: keys ignore the task).

    Empty parts (empty inventory or message, an all-rock view) get a code of their own,
    so every part weighs the same in every key. Keys of observation spaces without any
    of these keys cannot be built. Other keys (``"experience"``...) are ignored.

    Args:
        observation_space: the env's ``gymnasium.spaces.Dict`` observation space.
        key_dim: length of the key.
        seed: seed of all random codes.
        weights: part name -> weight (>= 0), overriding :data:`DEFAULT_KEY_WEIGHTS`.
        blstats_fields: blstats indices that enter the key.
        task_weight: weight of the task code.

    >>> space = spaces.Dict({"glyphs_crop": spaces.Box(0, 5976, (3, 3), np.int16),
    ...                      "last_action": spaces.Discrete(9)})
    >>> enc = MiniHackKeyEncoder(space, key_dim=64)
    >>> obs = {"glyphs_crop": np.full((3, 3), 2359, np.int16), "last_action": 8}
    >>> obs["glyphs_crop"][1, 1] = 333
    >>> k1 = enc(obs)
    >>> k1.shape, round(float(np.linalg.norm(k1)), 4), bool(np.array_equal(k1, enc(obs)))
    ((64,), 1.0, True)
    >>> k2 = enc(dict(obs, last_action=0))
    >>> bool(float(k1 @ k2) < 0.9)
    True
    """

    def __init__(
        self,
        observation_space: spaces.Dict,
        key_dim: int = 64,
        seed: int = 0,
        weights: Mapping[str, float] | None = None,
        blstats_fields: tuple[int, ...] = DEFAULT_BLSTATS_KEY_FIELDS,
        task_weight: float = 0.0,
    ) -> None:
        if not isinstance(observation_space, spaces.Dict):
            raise ValueError(
                f"MiniHackKeyEncoder needs a Dict observation space, got {observation_space!r}"
            )
        if isinstance(key_dim, bool) or not isinstance(key_dim, int) or key_dim <= 0:
            raise ValueError(f"key_dim must be a positive int, got {key_dim!r}")
        if isinstance(seed, bool) or not isinstance(seed, int | np.integer) or seed < 0:
            raise ValueError(f"seed must be an int >= 0, got {seed!r}")
        w = dict(DEFAULT_KEY_WEIGHTS)
        if weights is not None:
            unknown = set(weights) - set(DEFAULT_KEY_WEIGHTS)
            if unknown:
                raise ValueError(
                    f"unknown key parts {sorted(unknown)}; parts are {sorted(DEFAULT_KEY_WEIGHTS)}"
                )
            w.update(weights)
        for part, value in {**w, "task": task_weight}.items():
            if not np.isfinite(value) or value < 0:
                raise ValueError(f"weight of {part!r} must be finite and >= 0, got {value!r}")
        self.observation_space = observation_space
        self.key_dim = key_dim
        self.seed = int(seed)
        self.weights = {k: float(v) for k, v in w.items()}
        self.task_weight = float(task_weight)
        sub = observation_space.spaces
        d = key_dim

        self.grid_key = next((k for k in _GRID_KEYS if k in sub), None)
        if self.grid_key is not None:
            gs = sub[self.grid_key]
            if not isinstance(gs, spaces.Box) or len(gs.shape) != 2:
                raise ValueError(f"{self.grid_key!r} must be a 2-D Box, got {gs!r}")
            self._grid_shape = gs.shape
            self._grid_vocab = int(np.max(gs.high)) + 1
            self._grid_background = 32 if self.grid_key.startswith("chars") else _S_STONE_GLYPH
            self._grid_pos = _codes(seed, 1, int(np.prod(gs.shape)), d)
            self._grid_ids = _codes(seed, 2, self._grid_vocab, d)
            # the same table with the background glyph's row zeroed: background cells add nothing
            self._grid_ids_fg = self._grid_ids.copy()
            self._grid_ids_fg[self._grid_background] = 0.0
            self._grid_empty = _codes(seed, 3, 1, d)[0]

        self.inventory_key = next((k for k in _INVENTORY_KEYS if k in sub), None)
        if self.inventory_key is not None:
            inv = sub[self.inventory_key]
            if not isinstance(inv, spaces.Box) or len(inv.shape) != 1:
                raise ValueError(f"{self.inventory_key!r} must be a 1-D Box, got {inv!r}")
            self._inv_vocab = int(np.max(inv.high)) + 1
            # Empty slots: NO_GLYPH (= MAX_GLYPH, the upper bound) for glyphs, 18 for classes.
            self._inv_empty_id = self._inv_vocab - 1
            self._inv_codes = _codes(seed, 4, self._inv_vocab, d)
            self._inv_empty = _codes(seed, 5, 1, d)[0]
            self._inv_cache: dict[bytes, np.ndarray] = {}

        self.blstats_key = "blstats" if "blstats" in sub else None
        if self.blstats_key is not None:
            n_fields = int(np.prod(sub["blstats"].shape))
            fields = tuple(int(f) for f in blstats_fields)
            bad = [f for f in fields if not 0 <= f < n_fields]
            if bad:
                raise ValueError(f"blstats_fields {bad} are out of range for {n_fields} fields")
            self.blstats_fields = fields
            self._bl_fields = _codes(seed, 6, n_fields, d)
            self._bl_values = _codes(seed, 7, _VALUE_TABLE, d) * np.sqrt(d)  # +-1 entries
            self._bl_empty = _codes(seed, 8, 1, d)[0]

        self.last_action_key = "last_action" if "last_action" in sub else None
        if self.last_action_key is not None:
            la = sub["last_action"]
            if not isinstance(la, spaces.Discrete):
                raise ValueError(f"'last_action' must be Discrete, got {la!r}")
            self._n_last = int(la.n)
            self._la_start = int(la.start)
            self._la_codes = _codes(seed, 9, self._n_last, d)

        self.message_key = "message" if "message" in sub else None
        if self.message_key is not None:
            self._msg_codes = _codes(seed, 10, _MESSAGE_TABLE, d)
            self._msg_empty = _codes(seed, 11, 1, d)[0]
            self._msg_cache: dict[bytes, np.ndarray] = {}

        weighted = {
            "grid": self.grid_key, "inventory": self.inventory_key, "blstats": self.blstats_key,
            "last_action": self.last_action_key, "message": self.message_key,
        }
        if any(k is not None for k in weighted.values()) and not (
            self.task_weight > 0
            or any(self.weights[p] > 0 for p, k in weighted.items() if k is not None)
        ):
            raise ValueError("every part present in the observation has weight 0")
        if not any(
            (self.grid_key, self.inventory_key, self.blstats_key, self.last_action_key,
             self.message_key)
        ):
            raise ValueError(
                "the observation space has none of the keys MiniHackKeyEncoder reads "
                f"({', '.join(_GRID_KEYS + _INVENTORY_KEYS)}, blstats, last_action, message); "
                f"it has {sorted(sub)}"
            )

    @property
    def used_keys(self) -> tuple[str, ...]:
        """The observation keys that enter the key (all others are ignored)."""
        keys = (self.grid_key, self.inventory_key, self.blstats_key, self.last_action_key,
                self.message_key)
        return tuple(k for k in keys if k is not None)

    # -- parts ------------------------------------------------------------------------

    def _ints(self, batch: Mapping[str, Any], key: str, shape: tuple[int, ...]) -> np.ndarray:
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
            if not np.all(np.isfinite(x)) or np.any(x != np.round(x)):
                raise ValueError(f"{key!r} must hold integer ids, got non-integer values")
        elif x.dtype.kind not in "iub":
            raise ValueError(f"{key!r} must be an integer array, got dtype {x.dtype}")
        return x.astype(np.int64)

    def _grid(self, batch: Mapping[str, Any]) -> np.ndarray:
        ids = self._ints(batch, self.grid_key, tuple(self._grid_shape)).reshape(
            -1, int(np.prod(self._grid_shape))
        )
        if ids.size and (ids.min() < 0 or ids.max() >= self._grid_vocab):
            raise ValueError(
                f"{self.grid_key!r} ids must lie in [0, {self._grid_vocab}), got "
                f"[{ids.min()}, {ids.max()}]"
            )
        v = np.einsum("ncd,cd->nd", self._grid_ids_fg[ids], self._grid_pos) * np.sqrt(self.key_dim)
        return _unit(v, self._grid_empty)

    def _inventory_set_code(self, items: bytes) -> np.ndarray:
        code = self._inv_cache.get(items)
        if code is None:
            tag = 2_000_000 + zlib.crc32(items)
            code = _codes(self.seed, tag, 1, self.key_dim)[0]
            if len(self._inv_cache) >= _CACHE_LIMIT:
                self._inv_cache.clear()
            self._inv_cache[items] = code
        return code

    def _inventory(self, batch: Mapping[str, Any]) -> np.ndarray:
        ids = self._ints(batch, self.inventory_key, self.observation_space[self.inventory_key].shape)
        ids = ids.reshape(len(ids), -1)
        if ids.size and (ids.min() < 0 or ids.max() >= self._inv_vocab):
            raise ValueError(
                f"{self.inventory_key!r} ids must lie in [0, {self._inv_vocab}), got "
                f"[{ids.min()}, {ids.max()}]"
            )
        mask = ids != self._inv_empty_id
        bag = _unit((self._inv_codes[ids] * mask[..., None]).sum(axis=1), self._inv_empty)
        # The exact multiset of items: any change (picking up a key) flips this half.
        sets = np.stack(
            [self._inventory_set_code(np.sort(row[m]).tobytes()) for row, m in zip(ids, mask, strict=True)]
        )
        return normalise_rows(bag + sets)

    def _blstats(self, batch: Mapping[str, Any]) -> np.ndarray:
        x = self._ints(batch, "blstats", self.observation_space["blstats"].shape)
        if not self.blstats_fields:
            return np.tile(self._bl_empty, (len(x), 1))
        f = np.asarray(self.blstats_fields)
        values = np.mod(x[:, f], _VALUE_TABLE)
        v = (self._bl_fields[f][None] * self._bl_values[values]).sum(axis=1)
        return _unit(v, self._bl_empty)

    def _last_action(self, batch: Mapping[str, Any]) -> np.ndarray:
        a = self._ints(batch, "last_action", ()).reshape(-1) - self._la_start
        if a.size and (a.min() < 0 or a.max() >= self._n_last):
            raise ValueError(f"'last_action' must lie in [0, {self._n_last}), got {a.tolist()}")
        return self._la_codes[a]

    def _message_code(self, raw: bytes) -> np.ndarray:
        code = self._msg_cache.get(raw)
        if code is None:
            words = _WORD.findall(raw.lower())
            if words:
                rows = [zlib.crc32(w) % _MESSAGE_TABLE for w in words]
                code = _unit(self._msg_codes[rows].sum(axis=0, keepdims=True), self._msg_empty)[0]
            else:
                code = self._msg_empty
            if len(self._msg_cache) >= _CACHE_LIMIT:
                self._msg_cache.clear()
            self._msg_cache[raw] = code
        return code

    def _message(self, batch: Mapping[str, Any]) -> np.ndarray:
        m = self._ints(batch, "message", self.observation_space["message"].shape)
        m = m.reshape(len(m), -1).astype(np.uint8)
        return np.stack([self._message_code(bytes(row).split(b"\0", 1)[0]) for row in m])

    def _task(self, task_ids: np.ndarray) -> np.ndarray:
        out = np.empty((len(task_ids), self.key_dim), dtype=np.float32)
        for i, t in enumerate(task_ids):
            out[i] = _codes(self.seed, 1000 + int(t), 1, self.key_dim)[0]
        return out

    def encode(self, obs_batch: Any, task_ids: np.ndarray) -> np.ndarray:
        """Keys of a batch of observations: ``(n, key_dim)`` float32 unit rows.

        Args:
            obs_batch: dict of arrays with a leading batch axis (as a VecEnv returns).
            task_ids: ``(n,)`` integer task ids.

        Raises:
            ValueError: a missing key, wrong shape, non-integer or out-of-range ids, or
                ``task_ids`` of the wrong length.
        """
        if not isinstance(obs_batch, Mapping):
            raise ValueError(f"obs_batch must be a dict of arrays, got {type(obs_batch).__name__}")
        parts: list[tuple[float, np.ndarray]] = []
        if self.grid_key is not None:
            parts.append((self.weights["grid"], self._grid(obs_batch)))
        if self.inventory_key is not None:
            parts.append((self.weights["inventory"], self._inventory(obs_batch)))
        if self.blstats_key is not None:
            parts.append((self.weights["blstats"], self._blstats(obs_batch)))
        if self.last_action_key is not None:
            parts.append((self.weights["last_action"], self._last_action(obs_batch)))
        if self.message_key is not None:
            parts.append((self.weights["message"], self._message(obs_batch)))
        n = len(parts[0][1])
        for _, p in parts:
            if len(p) != n:
                raise ValueError("all observation keys must have the same batch size")
        task_ids = np.asarray(task_ids).reshape(-1)
        if len(task_ids) != n:
            raise ValueError(f"task_ids has {len(task_ids)} entries for a batch of {n}")
        keys = np.zeros((n, self.key_dim), dtype=np.float32)
        for weight, p in parts:
            if weight > 0:
                keys += weight * p
        if self.task_weight > 0:
            keys += self.task_weight * self._task(task_ids)
        return normalise_rows(keys)
