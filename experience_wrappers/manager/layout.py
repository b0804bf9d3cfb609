"""Whether two spaces have one layout (a bank or a saved manager serves both): :func:`same_layout`,
and the same as JSON for a save (:func:`layout_of`)."""

from __future__ import annotations

from typing import Any

import numpy as np
from gymnasium import spaces

__all__ = ["same_layout", "layout_of"]


def same_layout(a: spaces.Space, b: spaces.Space) -> bool:
    """True when ``a`` and ``b`` have the same kind, keys, shapes, dtypes and sizes.

    Box bounds may differ: the tasks of a multi-task benchmark (Meta-World's MT10, for one)
    share one observation layout with per-task goal bounds, and one bank serves them all.

    >>> same_layout(spaces.Box(0, 1, (3,)), spaces.Box(-1, 2, (3,)))
    True
    >>> same_layout(spaces.Box(0, 1, (3,)), spaces.Box(0, 1, (4,)))
    False
    >>> same_layout(spaces.Dict({"a": spaces.Discrete(2)}), spaces.Dict({"a": spaces.Discrete(3)}))
    False
    """
    if type(a) is not type(b):
        return False
    if isinstance(a, spaces.Dict) and isinstance(b, spaces.Dict):
        return a.spaces.keys() == b.spaces.keys() and all(same_layout(a[k], b[k]) for k in a.spaces)
    if isinstance(a, spaces.Tuple) and isinstance(b, spaces.Tuple):
        return len(a) == len(b) and all(same_layout(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, spaces.Box):
        return a.shape == b.shape and a.dtype == b.dtype
    return a == b


def layout_of(space: spaces.Space) -> Any:
    """What :func:`same_layout` compares, as JSON (a saved manager's observation space): kind, keys,
    shapes, dtypes and sizes, not Box bounds.

    >>> layout_of(spaces.Dict({"a": spaces.Box(0, 1, (2,)), "b": spaces.Discrete(3)}))
    {'Dict': {'a': {'Box': [[2], 'float32']}, 'b': {'Discrete': [3, 0]}}}
    """
    if isinstance(space, spaces.Dict):
        return {"Dict": {key: layout_of(sub) for key, sub in space.spaces.items()}}
    if isinstance(space, spaces.Tuple):
        return {"Tuple": [layout_of(sub) for sub in space.spaces]}
    if isinstance(space, spaces.Box):
        return {"Box": [list(space.shape), str(space.dtype)]}
    if isinstance(space, spaces.Discrete):
        return {"Discrete": [int(space.n), int(space.start)]}
    if isinstance(space, spaces.MultiDiscrete):
        return {"MultiDiscrete": [space.nvec.tolist(), np.asarray(space.start).tolist()]}
    if isinstance(space, spaces.MultiBinary):
        return {"MultiBinary": list(np.atleast_1d(space.n).tolist())}
    return {type(space).__name__: repr(space)}
