"""A scripted MiniHack policy for demonstrations: walk toward the stairs when they are in view."""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["StairsSeeker", "MOVES"]

# MiniHack's navigation actions 0..7: N, E, S, W, NE, SE, SW, NW as (dy, dx).
MOVES = [(-1, 0), (0, 1), (1, 0), (0, -1), (-1, 1), (1, 1), (1, -1), (-1, -1)]


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
