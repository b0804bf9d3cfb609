"""Whether two spaces lay observations out alike: what one manager per bank needs."""

from __future__ import annotations

from gymnasium import spaces

__all__ = ["same_layout"]


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
