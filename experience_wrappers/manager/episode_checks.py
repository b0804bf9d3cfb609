"""What a submitted episode must be before the manager takes it: checked in the caller's thread.

An episode the manager cannot distil must be refused where it is handed over, before it
reaches anything: in ``sync`` mode its credit would have moved the free baseline and the
bank's utilities before distillation refused it, and in ``async`` and ``process`` modes the
error would surface later, from the worker, as "the worker failed", and stop the manager.
:func:`check_episode` costs a few numpy reductions per episode (one ``isfinite`` over each
float array, the action coder's encoding); the wrappers check every observation against its
space as it arrives, so this is the check of a user who builds episodes by hand.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from gymnasium import spaces

from ..extractor import ActionCoder
from .episode import Episode

__all__ = ["check_episode"]


def check_episode(ep: Episode, observation_space: spaces.Space, action_coder: ActionCoder) -> None:
    """Refuse an episode the manager cannot distil: non-finite rewards, actions and observations
    whose step counts differ from the rewards', actions outside the space (the coder's rule), and
    observations whose shape is not the space's or that hold non-numbers, NaN or inf.

    Raises:
        ValueError: naming what is wrong (and the first bad step where there is one).
    """
    rewards = np.asarray(ep.rewards)
    if rewards.ndim != 1 or rewards.dtype.kind not in "biuf":
        raise ValueError(f"the episode's rewards must be a 1-D array of numbers, one per step; got "
                         f"dtype {rewards.dtype}, shape {rewards.shape}")
    if not np.all(np.isfinite(rewards)):
        bad = int(np.flatnonzero(~np.isfinite(rewards))[0])
        raise ValueError(f"the episode has reward {float(rewards[bad])!r} at step {bad}: rewards must be finite")
    n = len(rewards)
    if np.ndim(ep.actions) == 0 or len(ep.actions) != n:
        raise ValueError(f"the episode has {_count(ep.actions)} actions for {n} rewards: one of each per step")
    if n:
        try:
            action_coder.encode(ep.actions)
        except (TypeError, ValueError) as exc:
            raise ValueError(f"the episode's actions do not fit the manager's action space: {exc}") from None
    _check_observations(ep.observations, observation_space, n, "the episode's observations")


def _count(x: Any) -> str:
    return "no array of" if np.ndim(x) == 0 else str(len(x))


def _check_observations(batch: Any, space: spaces.Space, n: int, where: str) -> None:
    if isinstance(space, spaces.Dict):
        if not isinstance(batch, dict):
            raise ValueError(f"{where} must be a dict of arrays (one per key of {space}), got {type(batch).__name__}")
        missing = [k for k in space.spaces if k not in batch]
        if missing:
            raise ValueError(f"{where} lack the keys {missing} of the manager's observation space")
        for key, sub in space.spaces.items():
            _check_observations(batch[key], sub, n, f"{where}[{key!r}]")
        return
    if not isinstance(space, spaces.Box | spaces.Discrete | spaces.MultiDiscrete | spaces.MultiBinary):
        return  # (other kinds: the key encoder's to read)
    x = np.asarray(batch)
    shape = (n, *(space.shape or ()))
    if x.shape != shape and not (isinstance(space, spaces.Discrete) and x.shape == (n, 1)):
        raise ValueError(f"{where} have shape {x.shape}; {n} steps of {space} are {shape}")
    if x.dtype.kind not in "biuf":
        raise ValueError(f"{where} have dtype {x.dtype}, not numbers")
    if x.dtype.kind == "f" and not np.all(np.isfinite(x)):
        step = int(np.argmax(~np.isfinite(x).reshape(n, -1).all(axis=1)))
        raise ValueError(f"{where} hold NaN or inf at step {step}")
