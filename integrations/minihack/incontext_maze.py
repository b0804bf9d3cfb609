"""In-context imitation on held-out mazes: MazeWalk-9x9 episodes that start off the demonstrated path.

Family (C) of the trials benchmarks. An *instance* is a maze, the reset seed of
``MiniHack-MazeWalk-9x9-v0`` (not premapped: the agent sees the 9x9 crop around it).
:func:`maze_demonstration` records one scripted demonstration of a maze: the shortest
path to the stairs, planned by :class:`~integrations.minihack.MapNavigator` on the
premapped twin of the maze (the same seed gives the same maze), then replayed on the maze
itself for the observations. :class:`InContextMaze` starts each episode after
``random_steps`` random moves (a different draw each episode), so that replaying the
demonstration's actions open-loop fails, and truncates it after ``1.5x`` the shortest path
from where the episode starts (the demonstration's length when it starts where the
demonstration did); success is reaching the stairs.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from functools import lru_cache
from typing import Any, SupportsFloat

import gymnasium as gym
import numpy as np

from experience_wrappers.keys import CallableKeyEncoder
from experience_wrappers.validators import check_int, check_real

from .envs import make_minihack_env
from .pathing import door_mask, passable_mask, step_distances
from .scripted import NAVIGATOR_KEYS, MapNavigator

__all__ = ["InContextMaze", "maze_demonstration", "maze_distances", "split_mazes", "position_key_encoder", "MAZE_ID",
           "MAZE_KEYS"]

MAZE_ID = "MiniHack-MazeWalk-9x9-v0"
#: the observation keys the policy gets
MAZE_KEYS = ("glyphs_crop", "blstats")


def split_mazes(train: int = 200, held_out: int = 20) -> tuple[list[int], list[int]]:
    """Training mazes (seeds ``0 .. train - 1``) and held-out mazes (seeds from 100,000 on)."""
    return (list(range(check_int("train", train, minimum=1, maximum=100_000, numpy=True))),
            list(range(100_000, 100_000 + check_int("held_out", held_out, minimum=0, numpy=True))))


@lru_cache(maxsize=4096)
def maze_distances(seed: int) -> np.ndarray:
    """Moves from every screen cell (row, col) of maze ``seed`` to its stairs (-1: unreachable)."""
    env = make_minihack_env(MAZE_ID.replace("MazeWalk-", "MazeWalk-Mapped-"), observation_keys=("chars", "glyphs"))
    try:
        obs, _ = env.reset(seed=seed)
    finally:
        env.close()
    chars, glyphs = np.asarray(obs["chars"]), np.asarray(obs["glyphs"])
    stairs = np.argwhere(chars == ord(">"))
    if not len(stairs):
        raise RuntimeError(f"maze {seed} shows no stairs on its premapped twin")
    passable = passable_mask(chars, glyphs)
    passable[chars == ord("@")] = True
    return step_distances((int(stairs[0][0]), int(stairs[0][1])), passable, door_mask(glyphs))


@lru_cache(maxsize=4096)
def _demo(seed: int, keys: tuple[str, ...]) -> tuple[dict[str, np.ndarray], np.ndarray]:
    planner = make_minihack_env(MAZE_ID.replace("MazeWalk-", "MazeWalk-Mapped-"), observation_keys=NAVIGATOR_KEYS)
    try:
        nav = MapNavigator(planner, seed)
        obs, _ = planner.reset(seed=seed)
        nav.reset()
        actions = []
        for _ in range(200):
            a = nav(obs)
            actions.append(a)
            obs, _, term, trunc, info = planner.step(a)
            if term or trunc:
                break
        if not info.get("success"):
            raise RuntimeError(f"the navigator did not solve the premapped maze {seed}")
    finally:
        planner.close()
    env = make_minihack_env(MAZE_ID, observation_keys=keys)
    try:
        o, _ = env.reset(seed=seed)
        seen = []
        for a in actions:
            seen.append({k: np.array(v) for k, v in o.items()})
            o, _, term, trunc, info = env.step(a)
        if not info.get("success"):
            raise RuntimeError(f"the planned path does not solve maze {seed} replayed")
    finally:
        env.close()
    return {k: np.stack([s[k] for s in seen]) for k in seen[0]}, np.asarray(actions)


def maze_demonstration(seed: int, observation_keys: Sequence[str] = MAZE_KEYS
                       ) -> tuple[dict[str, np.ndarray], np.ndarray]:
    """One shortest demonstration of maze ``seed``: its observations and actions.

    The observations hold what :class:`InContextMaze` with the same ``observation_keys`` shows
    (``last_action`` included, as :func:`~integrations.minihack.make_minihack_env` adds it), so
    a trials memory built on that env's space accepts them.
    """
    return _demo(int(seed), tuple(observation_keys))


def position_key_encoder() -> CallableKeyEncoder:
    """Keys of a MiniHack observation: the hero's ``(x, y)`` from ``blstats``, scaled to about [0, 1]."""
    def encode(obs: Any, task_ids: np.ndarray) -> np.ndarray:
        return np.asarray(obs["blstats"], np.float32)[:, :2] / np.float32(80.0)
    return CallableKeyEncoder(encode, key_dim=2)


class InContextMaze(gym.Wrapper):
    """MazeWalk-9x9 with random starting moves and a cap of ``1.5x`` the shortest path from the start.

    Args:
        random_steps: random moves made at each reset before the agent acts.
        cap_factor: the episode is truncated after ``ceil(cap_factor * d)`` steps, ``d`` the
            shortest path's moves from where the episode starts (:func:`maze_distances`).
        observation_keys: the policy's observation keys.
        seed: seed of the random starting moves.
    """

    def __init__(self, random_steps: int = 3, cap_factor: float = 1.5,
                 observation_keys: Sequence[str] = MAZE_KEYS, seed: int = 0) -> None:
        if isinstance(observation_keys, str) or "blstats" not in observation_keys:
            raise ValueError(f"observation_keys must be a sequence of keys holding 'blstats' (where the hero "
                             f"stands sets the cap), got {observation_keys!r}")
        self.random_steps = check_int("random_steps", random_steps, minimum=0, numpy=True)
        self.cap_factor = check_real("cap_factor", cap_factor, minimum=1.0)  # a cap below the shortest path fails
        seed = check_int("seed", seed, minimum=0, numpy=True)
        super().__init__(make_minihack_env(MAZE_ID, observation_keys=tuple(observation_keys)))
        self.keys = tuple(observation_keys)
        self._rng = np.random.default_rng(seed)
        self.cap = 0
        self._steps = 0

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None
              ) -> tuple[Any, dict[str, Any]]:
        if seed is None:
            raise ValueError("InContextMaze resets onto a maze: give reset(seed=maze)")
        obs, info = self.env.reset(seed=seed, options=options)
        for _ in range(self.random_steps):
            obs, _, term, trunc, info = self.env.step(int(self._rng.integers(8)))
            if term or trunc:  # a random move onto the stairs: start again
                obs, info = self.env.reset(seed=seed, options=options)
        x, y = int(obs["blstats"][0]), int(obs["blstats"][1])
        self.cap = max(1, math.ceil(self.cap_factor * int(maze_distances(int(seed))[y, x])))
        self._steps = 0
        return obs, {**info, "cap": self.cap}

    def step(self, action: Any) -> tuple[Any, SupportsFloat, bool, bool, dict[str, Any]]:
        obs, reward, term, trunc, info = self.env.step(action)
        self._steps += 1
        if not term and self._steps >= self.cap:
            trunc = True
        return obs, reward, term, trunc, info
