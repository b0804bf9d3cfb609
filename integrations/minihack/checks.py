"""Argument checks of the MiniHack factories; each raises a ``ValueError`` that names the argument."""

from __future__ import annotations

import difflib
from collections.abc import Mapping, Sequence
from typing import Any

import gymnasium as gym
import numpy as np

from experience_wrappers.validators import check_int
from experience_wrappers.whole_numbers import is_step_action

__all__ = ["check_env_id", "check_env_kwargs", "check_observation_keys", "check_seed", "discrete_action"]


def check_env_id(env_id: str) -> None:
    """A registered env id (MiniHack must be imported first), with close matches if not."""
    if not isinstance(env_id, str):
        raise ValueError(f"env_id must be a str, got {env_id!r}")
    if env_id not in gym.registry:
        close = difflib.get_close_matches(env_id, [k for k in gym.registry if "Hack" in k], n=3)
        hint = f"; did you mean {', '.join(close)}?" if close else ""
        raise ValueError(f"unknown MiniHack env id {env_id!r}{hint}")
    entry = gym.spec(env_id).entry_point
    package = entry.split(".", 1)[0] if isinstance(entry, str) else getattr(entry, "__module__", "").split(".")[0]
    if package not in ("minihack", "nle"):
        raise ValueError(f"{env_id!r} is not a MiniHack or NLE env (it comes from {package or entry!r}): this factory "
                         "builds those; make it with gymnasium.make (or stable_baselines3's make_vec_env)")


def check_observation_keys(observation_keys: Sequence[str], added_key: str | None) -> tuple[str, ...]:
    """NLE/MiniHack observation keys: a non-empty sequence of distinct valid names, as a tuple.

    Args:
        observation_keys: The keys asked for.
        added_key: A key a wrapper adds on top (``"last_action"``), which may not be asked
            for; ``None`` if no wrapper adds one.
    """
    if isinstance(observation_keys, str) or not isinstance(observation_keys, Sequence):
        raise ValueError(
            f"observation_keys must be a sequence of str, got {observation_keys!r}"
        )
    keys = tuple(observation_keys)
    if not keys:
        raise ValueError("observation_keys must not be empty")
    if added_key is not None and added_key in keys:
        raise ValueError(f"{added_key!r} is added by add_last_action, not an NLE key")
    valid = _valid_observation_keys()
    bad = [k for k in keys if not isinstance(k, str) or k not in valid]
    if bad:
        raise ValueError(
            f"unknown observation keys {bad!r}; valid keys are {sorted(valid)!r}"
        )
    if len(set(keys)) != len(keys):
        raise ValueError(f"observation_keys has duplicates: {keys!r}")
    return keys


def check_seed(seed: Any) -> int | None:
    """``None`` or an int >= 0 (a numpy int too), returned as a Python int: gymnasium's seeding takes no other."""
    return check_int("seed", seed, minimum=0, maximum=2**32 - 1, numpy=True, optional=True)


def check_env_kwargs(kwargs: Mapping[str, Any]) -> None:
    """The env constructor's keyword arguments this library relies on (``max_episode_steps``), and the
    crop's size, which MiniHack asserts odd (a bare ``AssertionError``) and NLE fails on below 1.

    >>> check_env_kwargs({"obs_crop_h": 4})
    Traceback (most recent call last):
    ...
    ValueError: obs_crop_h must be an odd int >= 1 (the cropped view is centred on the agent), got 4
    """
    if "max_episode_steps" in kwargs:
        check_int("max_episode_steps", kwargs["max_episode_steps"], minimum=1, numpy=True)
    for name in ("obs_crop_h", "obs_crop_w"):
        if name in kwargs and check_int(name, kwargs[name], minimum=1, numpy=True) % 2 != 1:
            raise ValueError(f"{name} must be an odd int >= 1 (the cropped view is centred on the agent), "
                             f"got {kwargs[name]!r}")


def _valid_observation_keys() -> set[str]:
    from minihack.base import MINIHACK_SPACE_FUNCS
    from nle import nethack

    # NLE's keys that MiniHack's observation builder does not return
    unsupported = {"internal", "program_state", "misc"}
    return (set(nethack.OBSERVATION_DESC) | set(MINIHACK_SPACE_FUNCS) | {"pixel"}) - unsupported


def discrete_action(action: Any, space: gym.Space, who: str) -> int:
    """``action`` as the int it is, if it is one of ``space``'s: a whole number (a numpy int or a 0-d or
    one-element int array passes), never ``1.7`` cut to 1 or ``-1`` read by NLE as its last action.

    >>> discrete_action(np.array([3]), gym.spaces.Discrete(8), "the env")
    3
    >>> discrete_action(-1, gym.spaces.Discrete(8), "the env")
    Traceback (most recent call last):
    ...
    ValueError: the env: action -1 is not one of its Discrete(8) (a whole number in 0..7)
    """
    assert isinstance(space, gym.spaces.Discrete)  # (the envs of this package act in Discrete spaces)
    arr = np.asarray(action)
    if arr.size == 1 and is_step_action(arr.reshape(()), space):
        return int(arr.reshape(()))
    low = int(space.start)
    raise ValueError(f"{who}: action {action!r} is not one of its {space} (a whole number in "
                     f"{low}..{low + int(space.n) - 1})")
