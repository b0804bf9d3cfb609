"""Whether two spaces have one layout (a bank or a saved manager serves both): :func:`layout_of`
states the layout (as JSON, for a save), :func:`same_layout` compares two."""

from __future__ import annotations

from typing import Any

import numpy as np
from gymnasium import spaces

__all__ = ["same_layout", "layout_of", "saved_layout_matches"]


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


def saved_layout_matches(saved: Any, space: spaces.Space) -> bool:
    """Whether a save's recorded layout is ``space``'s: today's :func:`layout_of`, or the one saves wrote
    before it named a space by its class and a MultiDiscrete's dtype (a Box subclass was a ``Box`` then,
    and a MultiDiscrete's layout had no dtype)."""
    return bool(saved == layout_of(space) or saved == _layout(space, older=True))


def layout_of(space: spaces.Space) -> Any:
    """A space's layout as JSON (what :func:`same_layout` compares, and what a saved manager records of its
    observation space): its kind (the class's name, so a subclass of ``Box`` is not a ``Box``), keys,
    shapes, dtypes and sizes, not Box bounds. A space of another kind is laid out by its ``repr``.

    >>> layout_of(spaces.Dict({"a": spaces.Box(0, 1, (2,)), "b": spaces.Discrete(3)}))
    {'Dict': {'a': {'Box': [[2], 'float32']}, 'b': {'Discrete': [3, 0]}}}
    """
    return _layout(space, older=False)


def _layout(space: spaces.Space, older: bool) -> Any:
    base = next((k for k in _KINDS if isinstance(space, k)), None)
    kind = base.__name__ if older and base is not None else type(space).__name__
    if isinstance(space, spaces.Dict):
        return {kind: {key: _layout(sub, older) for key, sub in space.spaces.items()}}
    if isinstance(space, spaces.Tuple):
        return {kind: [_layout(sub, older) for sub in space.spaces]}
    if isinstance(space, spaces.Box):
        return {kind: [list(space.shape), str(space.dtype)]}
    if isinstance(space, spaces.Discrete):
        return {kind: [int(space.n), int(space.start)]}
    if isinstance(space, spaces.MultiDiscrete):
        sizes = [space.nvec.tolist(), np.asarray(space.start).tolist()]
        return {kind: sizes if older else [*sizes, str(space.dtype)]}
    if isinstance(space, spaces.MultiBinary):
        return {kind: list(np.atleast_1d(space.n).tolist())}
    return {kind: repr(space)}


#: the kinds a layout names (older saves named a subclass by the kind it derives from)
_KINDS = (spaces.Dict, spaces.Tuple, spaces.Box, spaces.Discrete, spaces.MultiDiscrete, spaces.MultiBinary)
