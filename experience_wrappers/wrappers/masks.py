"""Action masks (sb3-contrib's ``MaskablePPO`` convention) applied to the experience action prior."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import gymnasium as gym
import numpy as np

__all__ = ["mask_priors", "find_action_masks"]


def find_action_masks(env: gym.Env) -> Callable[[], Any] | None:
    """The env's ``action_masks()`` method (anywhere in its wrapper chain), or None.

    Only Discrete action spaces are masked: a prior row is then a distribution over the actions.
    """
    if not isinstance(env.action_space, gym.spaces.Discrete):
        return None
    try:
        fn = env.get_wrapper_attr("action_masks")
    except AttributeError:
        return None
    return fn if callable(fn) else None


def mask_priors(prior: np.ndarray, action_mask: Any) -> np.ndarray:
    """Zero the priors' mass on masked actions and renormalise each row; a row with no mass
    left on allowed actions becomes zero (no advice), as an empty slot is.

    >>> p = np.array([[0.7, 0.2, 0.1], [1.0, 0.0, 0.0]], dtype=np.float32)
    >>> mask_priors(p, [False, True, True]).astype(float).round(3).tolist()
    [[0.0, 0.667, 0.333], [0.0, 0.0, 0.0]]
    """
    allowed = np.asarray(action_mask, dtype=bool)
    out = np.where(allowed, prior, 0.0).astype(prior.dtype)
    total = out.sum(-1, keepdims=True)
    return np.divide(out, total, out=np.zeros_like(out), where=total > 0)
