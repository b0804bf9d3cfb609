"""Checks on what the wrapped env returns: finite observations inside their space, finite rewards.

Observations become keys, and keys decide what is retrieved and where new entries go, so
an observation the space does not allow would be filed under a wrong key without a word:
a Discrete ``-1`` one-hot encodes as the last value. Such values are refused here with the
offending value and the space in the message. Box values outside the bounds are warned
about once per wrapper and key instead (as gymnasium's env checker does): many envs
overshoot their declared bounds slightly. Rewards must be finite: a NaN reward would make
the free-episode baseline, and every delta after it, NaN.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
from gymnasium import spaces

__all__ = ["check_finite_observation", "check_finite_rewards", "observation_checker"]


def check_finite_observation(obs: Any, where: str) -> None:
    """Raise a clear ValueError when a float observation holds NaN or inf.

    >>> check_finite_observation(np.array([0.0, np.nan]), "reset")
    Traceback (most recent call last):
    ...
    ValueError: the env returned an observation with NaN or inf at reset: [ 0. nan]
    """
    parts = obs.values() if isinstance(obs, dict) else obs if isinstance(obs, tuple) else (obs,)
    for part in parts:
        arr = np.asarray(part)
        if arr.dtype.kind == "f" and not np.all(np.isfinite(arr)):
            raise ValueError(f"the env returned an observation with NaN or inf at {where}: {arr}")


def check_finite_rewards(rewards: Any, steps: Any) -> None:
    """Raise ValueError when a reward is NaN or inf, naming the env and its step.

    >>> check_finite_rewards(np.array([0.0, np.nan]), np.array([3, 7]))
    Traceback (most recent call last):
    ...
    ValueError: the env returned reward nan (env 1, step 7 of its episode): rewards must be finite
    """
    r = np.asarray(rewards, dtype=np.float64)
    if not np.all(np.isfinite(r)):
        i = int(np.flatnonzero(~np.isfinite(r))[0])
        step = int(np.asarray(steps).reshape(-1)[i]) if np.size(steps) > i else 0
        raise ValueError(f"the env returned reward {float(r[i])!r} (env {i}, step {step} of its episode): rewards "
                         "must be finite")


Check = Callable[[Any, str], None]


def observation_checker(space: spaces.Space) -> Check:
    """A function ``check(batch, where)`` for batches (leading axis) of observations of ``space``.

    Built once per wrapper (bounds are prepared here, so a step costs a few numpy
    reductions). It raises ValueError for a wrong shape, a Discrete / MultiDiscrete value out
    of range, a MultiBinary value other than 0 and 1, or a missing Dict key; it warns once
    (``UserWarning``) per key about Box values outside the bounds.

    >>> check = observation_checker(spaces.Discrete(3))
    >>> check(np.array([0, 2]), "step")
    >>> check(np.array([-1]), "reset")
    Traceback (most recent call last):
    ...
    ValueError: the env returned an observation outside its space at reset: value -1 is not in Discrete(3) (0 to 2); its key would be wrong
    """
    warned: set[str] = set()
    return _checker(space, "", warned)


def _label(path: str) -> str:
    return f" under key {path!r}" if path else ""


def _fail(where: str, path: str, why: str) -> ValueError:
    return ValueError(f"the env returned an observation outside its space at {where}{_label(path)}: {why}")


def _checker(space: spaces.Space, path: str, warned: set[str]) -> Check:
    if isinstance(space, spaces.Dict):
        subs = {key: _checker(sub, f"{path}/{key}" if path else str(key), warned)
                for key, sub in space.spaces.items()}

        def check_dict(batch: Any, where: str) -> None:
            if not isinstance(batch, dict):
                raise _fail(where, path, f"expected a dict with keys {sorted(subs)}, got {type(batch).__name__}")
            for key, sub in subs.items():
                if key not in batch:
                    raise _fail(where, path, f"the key {key!r} is missing")
                sub(batch[key], where)
        return check_dict
    if isinstance(space, spaces.Tuple):
        parts = [_checker(sub, f"{path}/{i}", warned) for i, sub in enumerate(space.spaces)]

        def check_tuple(batch: Any, where: str) -> None:
            for i, sub in enumerate(parts):
                sub(batch[i], where)
        return check_tuple
    if isinstance(space, spaces.Box):
        return _box_checker(space, path, warned)
    if isinstance(space, spaces.Discrete):
        lo, hi = int(space.start), int(space.start) + int(space.n) - 1

        def check_discrete(batch: Any, where: str) -> None:
            x = np.asarray(batch)
            if x.size and (x.min() < lo or x.max() > hi or (x.dtype.kind == "f" and np.any(x != np.round(x)))):
                bad = x.reshape(-1)[np.argmax((x.reshape(-1) < lo) | (x.reshape(-1) > hi))]
                raise _fail(where, path, f"value {bad.item()!r} is not in {space} ({lo} to {hi}); its key would be wrong")
        return check_discrete
    if isinstance(space, spaces.MultiDiscrete):
        start = np.broadcast_to(space.start, space.nvec.shape)
        top = start + space.nvec - 1

        def check_multi(batch: Any, where: str) -> None:
            x = np.asarray(batch)
            if x.shape[1:] != space.shape:
                raise _fail(where, path, f"shape {x.shape[1:]} is not the space's {space.shape}")
            if x.size and (np.any(x < start) or np.any(x > top)):
                raise _fail(where, path, f"{x.tolist()} is not in {space}; its key would be wrong")
        return check_multi
    if isinstance(space, spaces.MultiBinary):
        def check_binary(batch: Any, where: str) -> None:
            x = np.asarray(batch)
            if x.size and not np.all((x == 0) | (x == 1)):
                raise _fail(where, path, f"{x.tolist()} is not 0/1 as {space} requires")
        return check_binary

    def check_nothing(batch: Any, where: str) -> None:
        return None
    return check_nothing


def _box_checker(space: spaces.Box, path: str, warned: set[str]) -> Check:
    low = np.broadcast_to(space.low, space.shape)
    high = np.broadcast_to(space.high, space.shape)
    finite_low, finite_high = bool(np.isfinite(low).any()), bool(np.isfinite(high).any())
    # the common case, one bound for every element: compare the batch's min and max only
    scalar = low.size > 0 and bool(np.all(low == low.flat[0]) and np.all(high == high.flat[0]))
    lo_s, hi_s = (float(low.flat[0]), float(high.flat[0])) if scalar else (0.0, 0.0)
    # integer bounds that span the whole dtype (uint8 in [0, 255]): a value of that dtype always fits
    whole = space.dtype is not None and np.dtype(space.dtype).kind in "iu" and bool(
        np.all(low <= np.iinfo(space.dtype).min) and np.all(high >= np.iinfo(space.dtype).max))

    def check_box(batch: Any, where: str) -> None:
        x = np.asarray(batch)
        if x.shape[1:] != space.shape:
            raise _fail(where, path, f"shape {x.shape[1:]} is not the space's {space.shape}")
        if path in warned or not x.size or not (finite_low or finite_high) or (whole and x.dtype == space.dtype):
            return
        if scalar:
            outside = (finite_low and x.min() < lo_s) or (finite_high and x.max() > hi_s)
        else:
            outside = bool(np.any(x < low) or np.any(x > high))
        if outside:
            warned.add(path)
            flat = x.reshape(len(x), -1)
            bad = (flat < low.reshape(-1)) | (flat > high.reshape(-1))
            r, c = np.unravel_index(int(np.argmax(bad)), bad.shape)
            warnings.warn(f"the env returned an observation outside its Box bounds at {where}{_label(path)}: "
                          f"{flat[r, c].item()!r} at index {tuple(int(i) for i in np.unravel_index(c, space.shape))} is "
                          f"outside [{low.reshape(-1)[c].item()!r}, {high.reshape(-1)[c].item()!r}]; keys of such observations do not "
                          "mean what the bounds promise (said once per wrapper)", UserWarning, stacklevel=4)
    return check_box
