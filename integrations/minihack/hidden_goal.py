"""A hidden-goal room built with MiniHack's level generator: the observation is the position only.

The Dark-Room of meta-RL (Laskin et al. 2022; RA-DT, Schmied et al. 2024, built it with
MiniHack's level generator): an empty ``size x size`` room, the hero starts in the top
left corner, the goal (the down stairs) lies on one of the other cells, and the agent
sees only its own ``(x, y)``: nothing shows the goal before the agent stands on it. An
*instance* is a goal cell; ``reset(seed=s)`` puts the goal on cell ``s`` (cell
``y * size + x``; cell 0 is the start), every time. Reaching the goal ends the trial
with reward 1 (``info["success"]`` True); ``max_steps`` steps without it truncate it.

A fixed memoryless sweep finds about a quarter of the goals within 25 steps in the
10x10 room: an agent that does better must carry what earlier trials of the instance
showed.
"""

from __future__ import annotations

from typing import Any, SupportsFloat

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from experience_wrappers.validators import check_int

from .checks import discrete_action

__all__ = ["HiddenGoalRoom", "goal_cells", "split_goals", "shortest_path_actions", "goal_demonstration", "MOVES"]

#: MiniHack navigation's actions (nethack.CompassDirection order) as (dx, dy), y pointing down
MOVES: tuple[tuple[int, int], ...] = ((0, -1), (1, 0), (0, 1), (-1, 0), (1, -1), (1, 1), (-1, 1), (-1, -1))


#: the sides of a room the level generator builds (HiddenGoalRoom's ``size``)
MIN_SIZE, MAX_SIZE = 2, 20


def _size(size: Any) -> int:
    return check_int("size", size, minimum=MIN_SIZE, maximum=MAX_SIZE, numpy=True)


def _goal(goal: Any, size: int) -> int:
    return check_int("goal", goal, minimum=1, maximum=size * size - 1, numpy=True,
                     hint=" (a cell y * size + x of the room other than the start, 0)")


def goal_cells(size: int = 10) -> list[int]:
    """Every goal cell of a ``size x size`` room: all but the start (cell 0)."""
    return list(range(1, _size(size) ** 2))


def split_goals(size: int = 10, held_out: int = 20, seed: int = 0) -> tuple[list[int], list[int]]:
    """Training and held-out goal cells, a fixed split: ``(train, held_out)``.

    >>> train, test = split_goals()
    >>> len(train), len(test), set(train) & set(test)
    (79, 20, set())
    """
    cells = np.random.default_rng(check_int("seed", seed, minimum=0, numpy=True)).permutation(goal_cells(size))
    held_out = check_int("held_out", held_out, minimum=0, maximum=len(cells) - 1, numpy=True,
                         hint=f" (of the {len(cells)} goal cells, at least one left to train on)")
    held = sorted(int(c) for c in cells[:held_out])
    return sorted(int(c) for c in cells[held_out:]), held


def shortest_path_actions(goal: int, size: int = 10) -> list[int]:
    """A shortest path from the start to ``goal``: diagonal steps first, then straight ones.

    >>> shortest_path_actions(23)   # (3, 2): two steps south-east, one east
    [5, 5, 1]
    """
    size = _size(size)
    goal = _goal(goal, size)
    gx, gy = goal % size, goal // size
    diag = min(gx, gy)
    straight = (1 if gx > gy else 2)  # east or south
    return [5] * diag + [straight] * (max(gx, gy) - diag)


def goal_demonstration(goal: int, size: int = 10) -> tuple[np.ndarray, np.ndarray]:
    """One scripted demonstration of a goal: the positions a shortest path starts its steps from, and its moves.

    >>> obs, actions = goal_demonstration(23)
    >>> obs.tolist(), actions.tolist()
    ([[0.0, 0.0], [1.0, 1.0], [2.0, 2.0]], [5, 5, 1])
    """
    actions = shortest_path_actions(goal, size)
    pos, obs = np.zeros(2, np.float32), []
    for a in actions:
        obs.append(pos.copy())
        pos = pos + np.asarray(MOVES[a], np.float32)
    return np.stack(obs), np.asarray(actions)


class HiddenGoalRoom(gym.Env):
    """The hidden-goal room (see the module's docstring).

    Args:
        size: the room's side.
        max_steps: the trial's step cap (truncation).
        lit: whether NetHack lights the room (it makes no difference to the position observation).

    >>> env = HiddenGoalRoom()
    >>> obs, _ = env.reset(seed=23)
    >>> obs.tolist()
    [0.0, 0.0]
    >>> for a in shortest_path_actions(23):
    ...     obs, r, term, trunc, info = env.step(a)
    >>> obs.tolist(), r, term, info["success"]
    ([3.0, 2.0], 1.0, True, True)
    >>> env.close()
    """

    metadata: dict[str, Any] = {"render_modes": []}

    def __init__(self, size: int = 10, max_steps: int = 25, lit: bool = True) -> None:
        from integrations.minihack.envs import import_minihack
        import_minihack()
        from minihack import MiniHackNavigation
        self.size = _size(size)
        self.max_steps = check_int("max_steps", max_steps, minimum=1)
        self.lit = bool(lit)
        self.goal = 1
        self._nav = MiniHackNavigation(des_file=self._des(self.goal), observation_keys=("blstats",),
                                       max_episode_steps=10 * self.max_steps + 100, reward_win=1.0,
                                       reward_lose=0.0, penalty_step=0.0, penalty_time=0.0, autopickup=False)
        self.observation_space = spaces.Box(0.0, float(self.size - 1), (2,), np.float32)
        self.action_space = spaces.Discrete(len(MOVES))
        self._origin = np.zeros(2, np.int64)
        self._steps = 0

    def _des(self, goal: int) -> str:
        from minihack import LevelGenerator
        gen = LevelGenerator(w=self.size, h=self.size, lit=self.lit)
        gen.set_start_pos((0, 0))
        gen.add_goal_pos((goal % self.size, goal // self.size))
        return gen.get_des()

    def _position(self, obs: dict[str, np.ndarray]) -> np.ndarray:
        return np.array(obs["blstats"][:2], np.int64)  # a copy: NetHack overwrites its buffers

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None
              ) -> tuple[np.ndarray, dict[str, Any]]:
        """Reset onto instance ``seed`` (a goal cell in ``1 .. size**2 - 1``); None keeps the goal."""
        if seed is not None:  # checked first (a numpy int passes, as gymnasium's own seeding would refuse it)
            seed = check_int("seed", seed, minimum=1, maximum=self.size * self.size - 1, numpy=True)
        super().reset(seed=seed)
        if seed is not None:
            goal = seed
            if goal != self.goal:
                self.goal = goal
                self._nav.update(self._des(goal))
        obs, info = self._nav.reset()
        self._origin = self._position(obs)
        self._steps = 0
        return np.zeros(2, np.float32), {"goal": self.goal}

    def step(self, action: Any) -> tuple[np.ndarray, SupportsFloat, bool, bool, dict[str, Any]]:
        obs, reward, terminated, _, info = self._nav.step(discrete_action(action, self.action_space, "the room"))
        self._steps += 1
        success = bool(reward > 0)
        if success:  # NetHack's status line is cleared when the task ends: the hero stands on the goal
            pos = np.array([self.goal % self.size, self.goal // self.size], np.float32)
        else:
            pos = (self._position(obs) - self._origin).astype(np.float32)
        truncated = not terminated and self._steps >= self.max_steps
        return pos, float(success), bool(terminated), truncated, {"success": success, "goal": self.goal}

    def close(self) -> None:
        self._nav.close()
