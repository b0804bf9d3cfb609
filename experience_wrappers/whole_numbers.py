"""Whole numbers: the one rule for a discrete value held as a float.

Stored, a whole-valued float counts as the integer it holds: SB3's rollout buffer keeps
discrete actions as float32, and a demonstration file may hold ``1.0``; ``1.5``, NaN and inf
never do (:func:`whole`). Given to ``env.step``, a discrete space's action is an integer as
gymnasium's ``contains()`` says: ``1.0`` is not an action there, and casting it would make
``1.7`` one (:func:`is_step_action`). Every check of discrete actions, ids and observations
in the package takes its whole-number test from here, and its test of a value in a Box or discrete
space (:func:`inside`: the wrappers' checks, the manager's, demonstrations', self-imitation's).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from gymnasium import spaces

__all__ = ["whole", "inside", "is_step_action"]


def whole(x: np.ndarray) -> np.ndarray:
    """Elementwise, whether ``x`` holds a finite whole number (always, for integer and bool dtypes).

    >>> whole(np.array([1.0, 1.5, np.nan, -2.0])).tolist()
    [True, False, False, True]
    """
    if x.dtype.kind == "f":
        with np.errstate(invalid="ignore"):
            return np.isfinite(x) & (x == np.round(x))
    return np.ones(x.shape, dtype=bool)


def is_step_action(action: Any, space: spaces.Space) -> bool:
    """Whether ``action`` is one of ``space``'s as ``env.step`` takes it: for a ``Discrete`` or
    ``MultiDiscrete`` space integers (``1.0`` and ``True`` are not; ``np.int64(1)`` and ``1`` are), for a
    ``MultiBinary`` space integers or bools, for a Box its values in the space's dtype.

    >>> is_step_action(1, spaces.Discrete(2)), is_step_action(1.0, spaces.Discrete(2))
    (True, False)
    >>> is_step_action([0.5, 2.0], spaces.Box(-1, 1, (2,)))
    False
    """
    if isinstance(space, spaces.Discrete | spaces.MultiDiscrete | spaces.MultiBinary):
        kinds = "biu" if isinstance(space, spaces.MultiBinary) else "iu"
        if np.asarray(action).dtype.kind not in kinds:
            return False
    return bool(space.contains(np.asarray(action, dtype=space.dtype) if space.dtype is not None else action))


def inside(space: spaces.Box | spaces.Discrete | spaces.MultiDiscrete | spaces.MultiBinary,
           x: np.ndarray) -> np.ndarray:
    """Whether each element of ``x`` (numbers, any leading axes) is a value ``space`` allows: the
    one home of the membership rule (the wrappers' checks, the manager's, demonstrations', self-imitation's).

    Box: within the bounds, compared in the space's float dtype as its ``contains()`` does (NaN is
    outside); Discrete / MultiDiscrete: a whole number in ``start`` .. ``start + n - 1``;
    MultiBinary: 0 or 1.

    >>> inside(spaces.Discrete(3, start=1), np.array([0, 1, 3, 1.5])).tolist()
    [False, True, True, False]
    >>> inside(spaces.Box(-1, 1, (2,)), np.array([[0.0, np.nan], [1.0, -1.0]])).tolist()
    [[True, False], [True, True]]
    """
    if isinstance(space, spaces.Box):
        if space.dtype is not None and space.dtype.kind == "f":
            x = x.astype(space.dtype, copy=False)
        return (x >= space.low) & (x <= space.high)
    if isinstance(space, spaces.MultiBinary):
        return (x == 0) | (x == 1)
    start, n = (space.start, space.n) if isinstance(space, spaces.Discrete) else (space.start, space.nvec)
    return (whole(x) if x.dtype.kind == "f" else True) & (x >= start) & (x < start + n)
