"""A hidden key-and-door room built with MiniHack's level generator: position and a has-key bit only.

Key-to-Door of meta-RL (Laskin et al. 2022), on MiniHack: an empty ``size x size`` room,
the hero starts in the top left corner, a key lies on one cell and the door on another.
The agent sees its ``(x, y)`` and whether it holds the key, nothing else: neither the key
nor the door shows before the agent stands on it. Standing on the key cell takes the key;
standing on the door cell with the key ends the trial with reward 1 (``info["success"]``);
``max_steps`` steps without it truncate it. NetHack moves the hero (walls, diagonal moves);
the key and the door are the wrapper's: the level holds a key object and a fountain on
their cells, which the position-only observation does not show.

An *instance* is a (key, door) pair of cells; ``reset(seed=s)`` with
``s = key * size**2 + door`` gives it every time. :func:`sweep_success` says what a fixed
memoryless sweep achieves: the size and cap are chosen so that it stays at or below 0.35.
"""

from __future__ import annotations

from typing import Any, SupportsFloat

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from experience_wrappers.validators import check_int

from .checks import discrete_action
from .hidden_goal import MOVES

__all__ = ["HiddenKeyDoorRoom", "split_pairs", "pair_seed", "seed_pair", "key_door_actions", "sweep_success"]


def pair_seed(key: int, door: int, size: int) -> int:
    """The reset seed of the instance with the key on cell ``key`` and the door on cell ``door``
    (distinct cells of the ``size`` x ``size`` room off the start cell 0)."""
    size = check_int("size", size, minimum=2, numpy=True)
    key = check_int("key", key, minimum=1, maximum=size * size - 1, numpy=True)
    door = check_int("door", door, minimum=1, maximum=size * size - 1, numpy=True)
    if key == door:
        raise ValueError(f"key and door must be distinct cells, got {key} for both")
    return key * size * size + door


def seed_pair(seed: int, size: int) -> tuple[int, int]:
    """``(key, door)`` of a reset seed (:func:`pair_seed`'s inverse)."""
    size = check_int("size", size, minimum=2, numpy=True)
    return divmod(check_int("seed", seed, minimum=0, maximum=size ** 4 - 1, numpy=True), size * size)


def split_pairs(size: int = 7, train: int = 80, held_out: int = 20, seed: int = 0) -> tuple[list[int], list[int]]:
    """Training and held-out instances (reset seeds), a fixed draw of distinct (key, door) pairs
    off the start cell.

    >>> tr, te = split_pairs()
    >>> len(tr), len(te), set(tr) & set(te)
    (80, 20, set())
    """
    size = check_int("size", size, minimum=2, numpy=True)
    cells = range(1, size * size)
    pairs = [(k, d) for k in cells for d in cells if k != d]
    train = check_int("train", train, minimum=1, maximum=len(pairs), numpy=True)
    held_out = check_int("held_out", held_out, minimum=0, maximum=len(pairs) - train, numpy=True)
    seed = check_int("seed", seed, minimum=0, numpy=True)
    order = np.random.default_rng(seed).permutation(len(pairs))[: train + held_out]
    chosen = [pair_seed(*pairs[int(i)], size) for i in order.tolist()]
    return sorted(chosen[held_out:]), sorted(chosen[:held_out])


def _path(start: tuple[int, int], goal: tuple[int, int]) -> list[int]:
    """Shortest 8-direction moves from ``start`` to ``goal``: diagonals first."""
    (x, y), (gx, gy) = start, goal
    out = []
    while (x, y) != (gx, gy):
        dx, dy = int(np.sign(gx - x)), int(np.sign(gy - y))
        out.append(MOVES.index((dx, dy)))
        x, y = x + dx, y + dy
    return out


def key_door_actions(seed: int, size: int = 7) -> list[int]:
    """A shortest demonstration: to the key, then to the door.

    >>> key_door_actions(pair_seed(2, 8, 7), 7)   # key (2, 0), door (1, 1)
    [1, 1, 6]
    """
    key, door = seed_pair(seed, size)
    pair_seed(key, door, size)  # distinct cells off the start, or named
    k, d = (key % size, key // size), (door % size, door // size)
    return _path((0, 0), k) + _path(k, d)


def sweep_success(size: int, cap: int, pairs: list[tuple[int, int]] | None = None) -> dict[str, float]:
    """What fixed memoryless sweeps achieve (computed on the grid, no learning): the best of a
    row-by-row and a column-by-column zigzag (the same moves with or without the key), and of
    the zigzag that turns back once it holds the key.

    A memoryless policy maps (position, has key) to a move; a zigzag visits new cells at each
    step, so it is among the best such policies for a hidden pair.
    """
    size = check_int("size", size, minimum=2, numpy=True)
    cap = check_int("cap", cap, minimum=1, numpy=True)
    cells = range(1, size * size)
    pairs = pairs or [(k, d) for k in cells for d in cells if k != d]

    def zigzag(by_rows: bool) -> list[tuple[int, int]]:
        order = []
        for a in range(size):
            line = list(range(size)) if a % 2 == 0 else list(range(size - 1, -1, -1))
            order += [(b, a) if by_rows else (a, b) for b in line]
        return order

    results = {}
    for name, by_rows in (("rows", True), ("columns", False)):
        route = zigzag(by_rows)
        index = {c: i for i, c in enumerate(route)}
        ok = 0
        for key, door in pairs:
            k, d = index[(key % size, key // size)], index[(door % size, door // size)]
            # the same route on: the door counts only after the key; turning back after the key
            # retraces the route, which reaches a door behind the key in k - d more steps
            ahead = d > k and d <= cap
            back = d < k and k + (k - d) <= cap
            ok += ahead or back
        results[name] = ok / len(pairs)
    return {"best": max(results.values()), **results}


class HiddenKeyDoorRoom(gym.Env):
    """The hidden key-and-door room (see the module's docstring).

    Args:
        size: the room's side.
        max_steps: the trial's step cap (truncation).

    >>> env = HiddenKeyDoorRoom()
    >>> s = pair_seed(2, 8, 7)
    >>> obs, _ = env.reset(seed=s)
    >>> for a in key_door_actions(s):
    ...     obs, r, term, trunc, info = env.step(a)
    >>> obs.tolist(), r, term, info["success"]
    ([1.0, 1.0, 1.0], 1.0, True, True)
    >>> env.close()
    """

    metadata: dict[str, Any] = {"render_modes": []}

    def __init__(self, size: int = 7, max_steps: int = 30) -> None:
        from integrations.minihack.envs import import_minihack
        import_minihack()
        from minihack import MiniHackNavigation
        self.size = check_int("size", size, minimum=3, maximum=20)
        self.max_steps = check_int("max_steps", max_steps, minimum=1)
        self.key, self.door = 1, 2
        self._nav = MiniHackNavigation(des_file=self._des(), observation_keys=("blstats",),
                                       max_episode_steps=10 * self.max_steps + 100, reward_win=0.0,
                                       reward_lose=0.0, penalty_step=0.0, penalty_time=0.0, autopickup=False)
        self.observation_space = spaces.Box(0.0, float(self.size - 1), (3,), np.float32)
        self.action_space = spaces.Discrete(len(MOVES))
        self._origin = np.zeros(2, np.int64)
        self._steps = 0
        self._has_key = False

    def _des(self) -> str:
        from minihack import LevelGenerator
        gen = LevelGenerator(w=self.size, h=self.size, lit=True)
        gen.set_start_pos((0, 0))
        gen.add_object("skeleton key", "(", place=(self.key % self.size, self.key // self.size))
        gen.add_fountain(place=(self.door % self.size, self.door // self.size))
        return gen.get_des()

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None
              ) -> tuple[np.ndarray, dict[str, Any]]:
        """Reset onto instance ``seed`` (:func:`pair_seed`); None keeps the instance."""
        if seed is not None:  # checked first (a numpy int passes, as gymnasium's own seeding would refuse it)
            seed = check_int("seed", seed, minimum=0, maximum=self.size ** 4 - 1, numpy=True)
        super().reset(seed=seed)
        if seed is not None:
            key, door = seed_pair(seed, self.size)
            if not (0 < key < self.size ** 2 and 0 < door < self.size ** 2 and key != door):
                raise ValueError(f"seed {seed} is not a (key, door) pair of distinct cells off the start")
            if (key, door) != (self.key, self.door):
                self.key, self.door = key, door
                self._nav.update(self._des())
        obs, _ = self._nav.reset()
        self._origin = np.array(obs["blstats"][:2], np.int64)
        self._steps = 0
        self._has_key = False
        return np.zeros(3, np.float32), {"key": self.key, "door": self.door}

    def step(self, action: Any) -> tuple[np.ndarray, SupportsFloat, bool, bool, dict[str, Any]]:
        obs, _, _, _, _ = self._nav.step(discrete_action(action, self.action_space, "the room"))
        self._steps += 1
        x, y = (np.array(obs["blstats"][:2], np.int64) - self._origin).tolist()
        cell = y * self.size + x
        self._has_key = self._has_key or cell == self.key
        success = self._has_key and cell == self.door
        truncated = not success and self._steps >= self.max_steps
        pos = np.array([x, y, float(self._has_key)], np.float32)
        return pos, float(success), success, truncated, {"success": success, "key": self.key, "door": self.door}

    def close(self) -> None:
        self._nav.close()
