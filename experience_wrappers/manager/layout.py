"""Whether two spaces have one layout (a bank or a saved manager serves both): :func:`layout_of`
states the layout (as JSON, for a save), :func:`same_layout` compares two."""

from __future__ import annotations

from typing import Any

import numpy as np
from gymnasium import spaces

__all__ = ["same_layout", "layout_of"]


def same_layout(a: spaces.Space, b: spaces.Space) -> bool:
    """True when ``a`` and ``b`` have one :func:`layout_of`: the same kind, keys, shapes, dtypes and sizes.

    Box bounds may differ: the tasks of a multi-task benchmark (Meta-World's MT10, for one)
    share one observation layout with per-task goal bounds, and one bank serves them all.

    >>> same_layout(spaces.Box(0, 1, (3,)), spaces.Box(-1, 2, (3,)))
    True
    >>> same_layout(spaces.Box(0, 1, (3,)), spaces.Box(0, 1, (4,)))
    False
    >>> same_layout(spaces.Dict({"a": spaces.Discrete(2)}), spaces.Dict({"a": spaces.Discrete(3)}))
    False
    """
    return bool(layout_of(a) == layout_of(b))


def layout_of(space: spaces.Space) -> Any:
    """A space's layout as JSON (what :func:`same_layout` compares, and what a saved manager records of its
    observation space): its kind (the class's name, so a subclass of ``Box`` is not a ``Box``), keys,
    shapes, dtypes and sizes, not Box bounds. A space of another kind is laid out by its ``repr``.

    >>> layout_of(spaces.Dict({"a": spaces.Box(0, 1, (2,)), "b": spaces.Discrete(3)}))
    {'Dict': {'a': {'Box': [[2], 'float32']}, 'b': {'Discrete': [3, 0]}}}
    """
    kind = type(space).__name__
    if isinstance(space, spaces.Dict):
        return {kind: {key: layout_of(sub) for key, sub in space.spaces.items()}}
    if isinstance(space, spaces.Tuple):
        return {kind: [layout_of(sub) for sub in space.spaces]}
    if isinstance(space, spaces.Box):
        return {kind: [list(space.shape), str(space.dtype)]}
    if isinstance(space, spaces.Discrete):
        return {kind: [int(space.n), int(space.start)]}
    if isinstance(space, spaces.MultiDiscrete):
        return {kind: [space.nvec.tolist(), np.asarray(space.start).tolist(), str(space.dtype)]}
    if isinstance(space, spaces.MultiBinary):
        return {kind: list(np.atleast_1d(space.n).tolist())}
    return {kind: repr(space)}
