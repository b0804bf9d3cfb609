"""Scripted MiniHack policies for demonstrations.

:class:`StairsSeeker` walks toward the stairs when they are in view; :class:`MapNavigator`
plans over the whole seen map, explores, fetches a key and unlocks doors on the way.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np

from .pathing import MOVE_DELTAS, door_mask, first_step, frontier, passable_mask, unseen_mask

__all__ = ["StairsSeeker", "MapNavigator", "MOVES", "NAVIGATOR_KEYS"]

# MiniHack's navigation actions 0..7: N, E, S, W, NE, SE, SW, NW as (dy, dx).
MOVES = list(MOVE_DELTAS)


class StairsSeeker:
    """Step straight toward the ``>`` visible in ``chars_crop``; a random move when it is not.

    Needs an env made with ``"chars_crop"`` among its observation keys.

    Args:
        seed: seed of the random moves.
    """

    def __init__(self, seed: int = 0) -> None:
        self.rng = np.random.default_rng(seed)

    def __call__(self, obs: dict[str, Any]) -> int:
        if "chars_crop" not in obs:
            raise ValueError("StairsSeeker needs the 'chars_crop' observation key")
        chars = np.asarray(obs["chars_crop"])
        found = np.argwhere(chars == ord(">"))
        if not len(found):
            return int(self.rng.integers(len(MOVES)))
        centre = np.array(chars.shape) // 2
        dy, dx = np.sign(found[0] - centre)
        if dy == 0 and dx == 0:
            return int(self.rng.integers(len(MOVES)))
        return MOVES.index((int(dy), int(dx)))


NAVIGATOR_KEYS = ("chars", "glyphs", "blstats")
"""Observation keys :class:`MapNavigator` reads (record with them, train without them)."""


class MapNavigator:
    """Walk to the down stairs by breadth-first search over the seen map.

    Each step, in order of preference: the shortest path to a seen ``>``; with no key
    held, the path to a seen key and ``PICKUP`` on it; with a key held, ``APPLY`` next to
    a closed door (MiniHack's key-door envs then unlock and open it) or the path to a cell
    beside one; the path to the nearest seen cell next to unseen ones (exploring); a
    random move when nothing else is possible. It solves the Room, MazeWalk and KeyRoom
    tasks, not those needing items other than keys (River's boulders, for one).

    Needs the env itself (for its action list and MiniHack's ``key_in_inventory``) and an
    env made with the :data:`NAVIGATOR_KEYS` observation keys. Call :meth:`reset` at each
    episode start (:func:`~integrations.demos.record_demonstrations` does).

    Args:
        env: the MiniHack env it acts in (any wrappers on top).
        seed: seed of the random moves.
    """

    def __init__(self, env: gym.Env, seed: int = 0) -> None:
        from nle import nethack

        self.env = env
        self.rng = np.random.default_rng(seed)
        nle_env: Any = env.unwrapped  # NLE's env (untyped)
        actions = list(nle_env.actions)
        compass = [nethack.CompassDirection.N, nethack.CompassDirection.E, nethack.CompassDirection.S,
                   nethack.CompassDirection.W, nethack.CompassDirection.NE, nethack.CompassDirection.SE,
                   nethack.CompassDirection.SW, nethack.CompassDirection.NW]
        missing = [d.name for d in compass if d not in actions]
        if missing:
            raise ValueError(f"MapNavigator needs all eight compass moves; the env lacks {missing}")
        self.move_action = [actions.index(d) for d in compass]
        self.pickup = actions.index(nethack.Command.PICKUP) if nethack.Command.PICKUP in actions else None
        self.apply = actions.index(nethack.Command.APPLY) if nethack.Command.APPLY in actions else None
        self.key_pos: tuple[int, int] | None = None
        self.memory: dict[str, np.ndarray] = {}

    def reset(self) -> None:
        """Forget the previous episode's map memory."""
        self.key_pos = None
        self.memory = {}

    def _remember(self, name: str, mask: np.ndarray) -> np.ndarray:
        """``mask`` or-ed with every earlier one of this episode."""
        old = self.memory.get(name)
        self.memory[name] = mask if old is None or old.shape != mask.shape else old | mask
        return self.memory[name]

    def _has_key(self) -> bool:
        try:
            nle_env: Any = self.env.unwrapped  # NLE's env (untyped)
            return nle_env.key_in_inventory("key") is not None
        except (AssertionError, AttributeError, IndexError):
            return False

    def __call__(self, obs: dict[str, Any]) -> int:
        missing = [k for k in NAVIGATOR_KEYS if k not in obs]
        if missing:
            raise ValueError(f"MapNavigator needs the observation keys {NAVIGATOR_KEYS}; missing {missing}")
        chars, glyphs = np.asarray(obs["chars"]), np.asarray(obs["glyphs"])
        me = (int(obs["blstats"][1]), int(obs["blstats"][0]))
        # Remember what was seen: out of sight, dark floor turns blank again, and standing
        # in a doorway the map shows the agent instead of the door.
        passable = self._remember("passable", passable_mask(chars, glyphs))
        passable[me] = True
        doors = self._remember("doors", door_mask(glyphs))
        seen = self._remember("seen", ~unseen_mask(chars, glyphs))
        # Cells beside the agent are always seen, dark or not: blank there means rock.
        seen[max(me[0] - 1, 0):me[0] + 2, max(me[1] - 1, 0):me[1] + 2] = True
        unseen = ~seen

        def go(goals: Any) -> int | None:
            move = first_step(me, [tuple(g) for g in goals], passable, doors)
            return None if move is None else self.move_action[move]

        action = go(np.argwhere(chars == ord(">")))
        if action is not None:
            return action
        has_key = self._has_key()
        if not has_key and self.pickup is not None:
            seen = np.argwhere(chars == ord("("))
            if len(seen):
                self.key_pos = (int(seen[0][0]), int(seen[0][1]))
            if self.key_pos == me:
                return self.pickup
            if self.key_pos is not None and (action := go([self.key_pos])) is not None:
                return action
        if has_key and self.apply is not None:
            closed = np.argwhere(chars == ord("+"))
            h, w = chars.shape
            beside = [(int(y + dy), int(x + dx)) for y, x in closed for dy, dx in MOVE_DELTAS[:4]
                      if 0 <= y + dy < h and 0 <= x + dx < w]
            if me in beside:
                return self.apply
            if (action := go([b for b in beside if passable[b]])) is not None:
                return action
        explore = frontier(passable, unseen)
        explore[me] = False
        if (action := go(np.argwhere(explore))) is not None:
            return action
        return self.move_action[int(self.rng.integers(len(MOVE_DELTAS)))]
