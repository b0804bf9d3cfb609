"""Breadth-first paths over a NetHack map: what a scripted policy needs to walk somewhere.

The map is NLE's full-screen ``chars`` and ``glyphs`` (21 x 79). Cells are passable when
they show floor, corridor, stairs, an open door or doorway, an object or a monster;
walls, closed doors, water, lava, boulders and unseen cells are not. As in NetHack, a
door cell is entered and left orthogonally only.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable

import numpy as np

__all__ = ["MOVE_DELTAS", "passable_mask", "door_mask", "unseen_mask", "first_step", "frontier", "step_distances"]

# (dy, dx) of the eight compass moves, in the order N, E, S, W, NE, SE, SW, NW.
MOVE_DELTAS: tuple[tuple[int, int], ...] = ((-1, 0), (0, 1), (1, 0), (0, -1), (-1, 1), (1, 1), (1, -1), (-1, -1))

# NetHack's cmap indices (display.h): doorway, open vertical / horizontal door.
_S_STONE, _S_NDOOR, _S_VODOOR, _S_HODOOR = 0, 12, 13, 14
_WALKABLE_CHARS = frozenset(b".#<>_{")


def _cmap(glyphs: np.ndarray) -> np.ndarray:
    """The cmap index of every glyph, -1 where it is not a map feature."""
    from nle import nethack

    idx = glyphs.astype(np.int64) - nethack.GLYPH_CMAP_OFF
    return np.where((idx >= 0) & (idx < nethack.MAXPCHARS), idx, -1)


def door_mask(glyphs: np.ndarray) -> np.ndarray:
    """Cells showing a doorway or an open door (entered orthogonally only)."""
    cmap = _cmap(glyphs)
    return (cmap == _S_NDOOR) | (cmap == _S_VODOOR) | (cmap == _S_HODOOR)


def unseen_mask(chars: np.ndarray, glyphs: np.ndarray) -> np.ndarray:
    """Cells never seen: blank and shown as solid stone."""
    return (chars == ord(" ")) & (_cmap(glyphs) == _S_STONE)


def passable_mask(chars: np.ndarray, glyphs: np.ndarray) -> np.ndarray:
    """Cells a walker may step on (see the module docstring)."""
    from nle import nethack

    glyphs = np.asarray(glyphs)
    walk = np.isin(chars, list(_WALKABLE_CHARS))
    objects = np.vectorize(nethack.glyph_is_object, otypes=[bool])(glyphs)
    monsters = np.vectorize(nethack.glyph_is_monster, otypes=[bool])(glyphs)
    boulder = chars == ord("`")
    return (walk | door_mask(glyphs) | objects | monsters) & ~boulder


def frontier(passable: np.ndarray, unseen: np.ndarray) -> np.ndarray:
    """Passable cells next to (8-neighbourhood) an unseen cell: where exploring goes next."""
    padded = np.pad(unseen, 1)
    near = np.zeros_like(unseen)
    h, w = unseen.shape
    for dy, dx in MOVE_DELTAS:
        near |= padded[1 + dy:1 + dy + h, 1 + dx:1 + dx + w]
    return passable & near


def first_step(start: tuple[int, int], goals: Iterable[tuple[int, int]], passable: np.ndarray,
               doors: np.ndarray) -> int | None:
    """Index into :data:`MOVE_DELTAS` of the first move of a shortest path from ``start``
    (row, col) to the nearest of ``goals``; None when no goal is reachable or ``start`` is one.

    >>> free = np.ones((3, 4), bool); free[1, 1:3] = False
    >>> MOVE_DELTAS[first_step((1, 0), [(1, 3)], free, np.zeros_like(free))]
    (-1, 1)
    """
    targets = {(int(r), int(c)) for r, c in goals}
    if not targets or start in targets:
        return None
    h, w = passable.shape
    first: dict[tuple[int, int], int] = {start: -1}
    queue = deque([start])
    while queue:
        y, x = queue.popleft()
        for move, (dy, dx) in enumerate(MOVE_DELTAS):
            ny, nx = y + dy, x + dx
            if not (0 <= ny < h and 0 <= nx < w) or (ny, nx) in first or not passable[ny, nx]:
                continue
            if dy and dx and (doors[y, x] or doors[ny, nx]):
                continue
            first[(ny, nx)] = move if first[(y, x)] < 0 else first[(y, x)]
            if (ny, nx) in targets:
                return first[(ny, nx)]
            queue.append((ny, nx))
    return None


def step_distances(goal: tuple[int, int], passable: np.ndarray, doors: np.ndarray) -> np.ndarray:
    """Moves from every cell to ``goal`` (row, col) by a shortest path, under :func:`first_step`'s
    rules (moves are symmetric, so a search from the goal gives them); -1 where unreachable.

    >>> free = np.ones((3, 4), bool); free[1, 1:3] = False
    >>> step_distances((1, 3), free, np.zeros_like(free)).tolist()
    [[3, 2, 1, 1], [3, -1, -1, 0], [3, 2, 1, 1]]
    """
    h, w = passable.shape
    dist = np.full((h, w), -1, dtype=np.int64)
    dist[goal] = 0
    queue = deque([goal])
    while queue:
        y, x = queue.popleft()
        for dy, dx in MOVE_DELTAS:
            ny, nx = y + dy, x + dx
            if not (0 <= ny < h and 0 <= nx < w) or dist[ny, nx] >= 0 or not passable[ny, nx]:
                continue
            if dy and dx and (doors[y, x] or doors[ny, nx]):
                continue
            dist[ny, nx] = dist[y, x] + 1
            queue.append((ny, nx))
    return dist
