"""A frozen key encoder for MiniHack observations.

Keys must tell apart states a policy should act differently in: a different view of the
map, carrying the key or not, the message just shown, and the action just taken (so
that a no-op such as walking into a wall or ``apply`` with nothing to apply does not
retrieve the same hint forever). :class:`MiniHackKeyEncoder` builds one unit vector per
part of the observation from fixed, seeded random codes and adds them with weights; each
part is a small class of :mod:`integrations.minihack.key_parts`.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
from gymnasium import spaces

from experience_wrappers.keys import KeyEncoder, normalise_rows
from experience_wrappers.validators import check_int
from integrations.minihack.key_parts import (
    GRID_KEYS,
    INVENTORY_KEYS,
    BlstatsPart,
    GridPart,
    InventoryPart,
    KeyPart,
    LastActionPart,
    MessagePart,
    codes,
)

__all__ = ["DEFAULT_KEY_WEIGHTS", "DEFAULT_BLSTATS_KEY_FIELDS", "KEY_CACHE_SIZE", "MiniHackKeyEncoder"]

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

#: Keys of recent observations that :class:`MiniHackKeyEncoder` keeps. A key is a function of the
#: values that enter it, and a MiniHack run sees the same view, items, stats and last action again
#: and again (about half of 4,000 random steps on Room-5x5, KeyRoom-S5 and MazeWalk-9x9 repeat an
#: earlier one), so a repeated observation's key is looked up, not encoded again (about 100 µs per
#: observation, in numpy calls on tiny arrays). A key that is not there mostly shares its parts with
#: keys seen before (the same items, the same view after another action), so each part's recent rows
#: are kept as well, as many. The caches are emptied when full, and not pickled.
KEY_CACHE_SIZE = 4096


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
        observation_space: spaces.Space,  # a Dict, checked below
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
        key_dim = check_int("key_dim", key_dim, minimum=1)
        check_int("seed", seed, minimum=0, numpy=True)
        self.observation_space = observation_space
        self.key_dim = key_dim
        self.seed = int(seed)
        self.weights = _weights(weights, task_weight)
        self.task_weight = float(task_weight)
        self._keys_cache: dict[bytes, np.ndarray] = {}
        self._parts_cache: dict[str, dict[bytes, np.ndarray]] = {}  # per part: its rows seen recently
        sub = observation_space.spaces
        built = (
            GridPart.build(sub, self.seed, key_dim),
            InventoryPart.build(sub, self.seed, key_dim),
            BlstatsPart.build(sub, self.seed, key_dim, fields=blstats_fields),
            LastActionPart.build(sub, self.seed, key_dim),
            MessagePart.build(sub, self.seed, key_dim),
        )
        #: The parts present in the observation space, in the order they are added.
        self.parts: tuple[KeyPart, ...] = tuple(p for p in built if p is not None)
        keys = {p.name: p.key for p in self.parts}
        self.grid_key: str | None = keys.get("grid")
        self.inventory_key: str | None = keys.get("inventory")
        self.blstats_key: str | None = keys.get("blstats")
        self.last_action_key: str | None = keys.get("last_action")
        self.message_key: str | None = keys.get("message")
        if self.blstats_key is not None:
            self.blstats_fields = built[2].fields  # type: ignore[union-attr]
        if self.parts and not (
            self.task_weight > 0 or any(self.weights[p.name] > 0 for p in self.parts)
        ):
            raise ValueError("every part present in the observation has weight 0")
        if not self.parts:
            raise ValueError(
                "the observation space has none of the keys MiniHackKeyEncoder reads "
                f"({', '.join(GRID_KEYS + INVENTORY_KEYS)}, blstats, last_action, message); "
                f"it has {sorted(sub)}"
            )
        if all(p.name == "last_action" for p in self.parts):
            warnings.warn(
                f"MiniHackKeyEncoder reads only last_action of this observation ({sorted(sub)}): every state "
                f"after the same action gets the same key; observe one of {', '.join(GRID_KEYS)} or blstats "
                "for keys that tell states apart", UserWarning, stacklevel=2)

    @property
    def used_keys(self) -> tuple[str, ...]:
        """The observation keys that enter the key (all others are ignored)."""
        return tuple(p.key for p in self.parts)

    def check_space(self, observation_space: spaces.Space) -> None:
        """Refuse an env's observation space that lacks a key this encoder reads, or holds it in another
        shape: an encoder built for another env's observation (its keys failed at the first episode, in the
        learner process, or not at all where no episode was guided)."""
        sub = observation_space.spaces if isinstance(observation_space, spaces.Dict) else {}
        mine = self.observation_space.spaces
        for key in self.used_keys:
            theirs = sub.get(key)
            if theirs is None or theirs.shape != mine[key].shape:
                got = "lacks it" if theirs is None else f"holds it with shape {theirs.shape}"
                raise ValueError(f"this MiniHackKeyEncoder reads {key!r} of shape {mine[key].shape} (built on an "
                                 f"observation of {sorted(mine)}), and this env's observation {got} (it has "
                                 f"{sorted(sub)}): build the encoder on this env's observation space "
                                 "(MiniHackKeyEncoder(env.observation_space))")

    def _task(self, task_ids: np.ndarray) -> np.ndarray:
        out = np.empty((len(task_ids), self.key_dim), dtype=np.float32)
        for i, t in enumerate(task_ids):
            out[i] = codes(self.seed, 1000 + int(t), 1, self.key_dim)[0]
        return out

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state["_keys_cache"] = {}  # caches, not state: pickles stay small and equal
        state["_parts_cache"] = {}
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self.__dict__.setdefault("_keys_cache", {})  # encoders pickled before the caches
        self.__dict__.setdefault("_parts_cache", {})

    def encode(self, obs_batch: Any, task_ids: np.ndarray) -> np.ndarray:
        """Keys of a batch of observations: ``(n, key_dim)`` float32 unit rows.

        The keys of observations seen recently are looked up (:data:`KEY_CACHE_SIZE`); the
        others are encoded, and checked, in one batch.

        Args:
            obs_batch: dict of arrays with a leading batch axis (as a VecEnv returns).
            task_ids: ``(n,)`` integer task ids.

        Raises:
            ValueError: a missing key, wrong shape, non-integer or out-of-range ids, or
                ``task_ids`` of the wrong length.
        """
        if not isinstance(obs_batch, Mapping):
            raise ValueError(f"obs_batch must be a dict of arrays, got {type(obs_batch).__name__}")
        task_ids = np.asarray(task_ids).reshape(-1)
        rows = self._cache_rows(obs_batch, task_ids)
        if rows is None:  # not a batch the cache reads: the full path says what is wrong
            return self._encode(obs_batch, task_ids)
        found = _through_cache(self._keys_cache, rows, lambda missing: self._encode(obs_batch, task_ids)
                               if missing is None else self._encode(
                                   {p.key: np.asarray(obs_batch[p.key])[missing] for p in self.parts},
                                   task_ids[missing]))
        return np.stack(found) if found else np.zeros((0, self.key_dim), np.float32)

    def _cache_rows(self, batch: Mapping[str, Any], task_ids: np.ndarray) -> list[bytes] | None:
        """One string per row of the values that enter its key, with their dtypes (the shapes
        are the parts' own); None where the batch is not one whose rows the cache can read."""
        n = len(task_ids)
        head, values = [], []
        for p in self.parts:
            x = batch.get(p.key)
            if x is None:
                return None
            x = np.asarray(x)
            if x.shape != (n, *p.shape):
                return None
            head.append(x.dtype.str)
            values.append(p.key_values(x))
        if self.task_weight > 0:
            if task_ids.dtype.kind not in "iu":
                return None
            values.append(task_ids.astype(np.int64))
        prefix = "|".join(head).encode()
        return [prefix + b"".join(v[i].tobytes() for v in values) for i in range(n)]

    def _encode(self, obs_batch: Mapping[str, Any], task_ids: np.ndarray) -> np.ndarray:
        """The keys of a batch, encoded and checked (each part's rows seen recently looked up)."""
        parts = [(self.weights[p.name], self._part(p, obs_batch)) for p in self.parts]
        n = len(parts[0][1])
        for _, p in parts:
            if len(p) != n:
                raise ValueError("all observation keys must have the same batch size")
        if len(task_ids) != n:
            raise ValueError(f"task_ids has {len(task_ids)} entries for a batch of {n}")
        keys = np.zeros((n, self.key_dim), dtype=np.float32)
        for weight, p in parts:
            if weight > 0:
                keys += weight * p
        if self.task_weight > 0:
            keys += self.task_weight * self._task(task_ids)
        return normalise_rows(keys)

    def _part(self, part: KeyPart, batch: Mapping[str, Any]) -> np.ndarray:
        """``part(batch)``, its rows seen recently looked up: a key that misses the cache of keys
        mostly shares its parts with keys seen before (the same inventory, the same view after
        another action), and a part's row is a function of its own values (``key_values``, with
        their dtype). A batch whose values the part would refuse goes to the part, which says why."""
        x = batch.get(part.key)
        if x is None:
            return part(batch)  # (raises: the key is missing)
        x = np.asarray(x)
        if x.shape[1:] != part.shape or x.ndim != len(part.shape) + 1:
            return part(batch)  # (raises: the shape is wrong)
        values = part.key_values(x)
        prefix = x.dtype.str.encode()
        rows = [prefix + values[i].tobytes() for i in range(len(x))]
        found = _through_cache(self._parts_cache.setdefault(part.name, {}), rows,
                               lambda missing: part(batch) if missing is None else part({part.key: x[missing]}))
        return np.stack(found) if found else part(batch)


def _through_cache(cache: dict[bytes, np.ndarray], rows: list[bytes],
                   compute: Callable[[list[int] | None], np.ndarray]) -> list[np.ndarray]:
    """Each row's value from ``cache``; those it lacks from ``compute(missing)`` (``None``: every row of
    the batch, which the caller then gives whole), kept as copies. The cache is emptied when it would
    pass :data:`KEY_CACHE_SIZE`."""
    found: list[np.ndarray | None] = [cache.get(row) for row in rows]
    missing = [i for i, value in enumerate(found) if value is None]
    if missing:
        new = compute(None if len(missing) == len(rows) else missing)
        if len(cache) + len(missing) > KEY_CACHE_SIZE:
            cache.clear()
        for j, i in enumerate(missing):
            found[i] = cache[rows[i]] = new[j].copy()
    return found  # type: ignore[return-value]  # (every row now found)


def _weights(weights: Mapping[str, float] | None, task_weight: float) -> dict[str, float]:
    """:data:`DEFAULT_KEY_WEIGHTS` overridden by ``weights``; every weight (the task's too) finite and >= 0."""
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
    return {k: float(v) for k, v in w.items()}
