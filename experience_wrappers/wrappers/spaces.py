"""The wrapped observation space: the original observation plus the experience channel."""

from __future__ import annotations

import numpy as np
from gymnasium import spaces

__all__ = ["EXPERIENCE_KEYS", "BASE_KEY", "experience_space", "base_parts", "base_keys", "check_readable"]

BASE_KEY = "observation"
EXPERIENCE_KEYS = ("experience", "experience_utility", "experience_mask")
#: the observation spaces SB3's policies read (alone or as a Dict's values)
SB3_SPACES = (spaces.Box, spaces.Discrete, spaces.MultiDiscrete, spaces.MultiBinary)


def experience_space(base: spaces.Space, k: int, exp_dim: int) -> spaces.Dict:
    """The Dict space of wrapped observations.

    A Dict base keeps its own keys at the top level (SB3 rejects a Dict inside a Dict);
    any other base goes under ``"observation"``. Then ``experience`` ``(k, exp_dim)``,
    ``experience_utility`` ``(k,)`` and ``experience_mask`` ``(k,)``.

    >>> s = experience_space(spaces.Box(-1, 1, (3,)), k=2, exp_dim=4)
    >>> list(s.spaces), s["experience"].shape
    (['experience', 'experience_mask', 'experience_utility', 'observation'], (2, 4))
    >>> experience_space(spaces.Tuple((spaces.Discrete(2),)), k=2, exp_dim=4)
    Traceback (most recent call last):
    ...
    ValueError: Tuple observations are not supported: Tuple(Discrete(2)) (SB3 itself takes no Tuple observations, wrapped or not); flatten it first: gymnasium.wrappers.FlattenObservation(env) inside the ExperienceWrapper
    >>> experience_space(spaces.Text(5), k=2, exp_dim=4)
    Traceback (most recent call last):
    ...
    ValueError: Text observations are not supported: Text(1, 5, charset=...) (SB3's policies read Box, Discrete, MultiDiscrete, MultiBinary or a Dict of them); encode it as one of them
    """
    parts = base_parts(base, EXPERIENCE_KEYS, "ExperienceWrapper")
    parts["experience"] = spaces.Box(-np.inf, np.inf, (k, exp_dim), np.float32)
    parts["experience_utility"] = spaces.Box(-np.inf, np.inf, (k,), np.float32)
    parts["experience_mask"] = spaces.Box(0.0, 1.0, (k,), np.float32)
    return spaces.Dict(parts)


def base_parts(base: spaces.Space, reserved: tuple[str, ...], wrapper: str) -> dict[str, spaces.Space]:
    """The env's own observation as the keys of a wrapped Dict space (a Dict's own keys, any other
    space under ``"observation"``), checked where both scopes' wrappers take it.

    Raises:
        ValueError: a space SB3's policies do not read (a Tuple, Text, a Dict or Tuple inside the
            Dict, a Dict key of another space), or a Dict key in ``reserved`` (the keys ``wrapper`` adds).
    """
    if isinstance(base, spaces.Dict):
        other = {key: type(sub).__name__ for key, sub in base.spaces.items()
                 if not isinstance(sub, (*SB3_SPACES, spaces.Dict, spaces.Tuple))}
        if other:
            raise ValueError(f"the observation Dict's key(s) {other} are of a space SB3's policies do not read; they "
                             f"read {', '.join(t.__name__ for t in SB3_SPACES)} (encode the others as one of them)")
        nested = [key for key, sub in base.spaces.items() if isinstance(sub, (spaces.Dict, spaces.Tuple))]
        if nested:
            raise ValueError(
                f"nested observation spaces are not supported: the key(s) {nested} of the observation Dict hold a "
                "Dict or Tuple (SB3's MultiInputPolicy takes one level of keys as well); lift their keys to the top "
                f"level, or flatten them (gymnasium.wrappers.FlattenObservation) before the {wrapper}")
        clash = [key for key in base.spaces if key in reserved]
        if clash:
            raise ValueError(f"the observation already has the key(s) {clash}; the {wrapper} needs them")
        for key, sub in base.spaces.items():
            check_readable(sub, f"the observation Dict's key {key!r}", wrapper)
        return dict(base.spaces)
    if isinstance(base, spaces.Tuple):
        raise ValueError(
            f"Tuple observations are not supported: {base} (SB3 itself takes no Tuple observations, wrapped or "
            f"not); flatten it first: gymnasium.wrappers.FlattenObservation(env) inside the {wrapper}")
    if not isinstance(base, SB3_SPACES):
        raise ValueError(f"{type(base).__name__} observations are not supported: {base} (SB3's policies read "
                         f"{', '.join(t.__name__ for t in SB3_SPACES)} or a Dict of them); encode it as one of them")
    check_readable(base, "the observation", wrapper)
    return {BASE_KEY: base}


def check_readable(space: spaces.Space, what: str, wrapper: str) -> None:
    """Refuse a space of a kind SB3 reads but in a form its preprocessing breaks on (deep inside
    torch): discrete values that do not start at 0 (one-hot encoded as ``0 .. n-1``), a 0-d Box and a
    Box of no values (a 0 in its shape).

    >>> check_readable(spaces.Discrete(5, start=-2), "the observation", "ExperienceWrapper")
    Traceback (most recent call last):
    ...
    ValueError: the observation is Discrete(5, start=-2), but SB3's policies one-hot encode 0..n-1 whatever the start; shift it in a gymnasium.ObservationWrapper (observation - start, space Discrete(5)) inside the ExperienceWrapper
    """
    start = getattr(space, "start", None)
    if isinstance(space, (spaces.Discrete, spaces.MultiDiscrete)) and start is not None and np.any(start != 0):
        plain = f"Discrete({space.n})" if isinstance(space, spaces.Discrete) else \
            f"MultiDiscrete({space.nvec.tolist()})"
        raise ValueError(f"{what} is {space}, but SB3's policies one-hot encode 0..n-1 whatever the start; shift it in "
                         f"a gymnasium.ObservationWrapper (observation - start, space {plain}) inside the {wrapper}")
    if isinstance(space, spaces.Box) and space.shape == ():
        raise ValueError(f"{what} is a 0-d Box ({space}), which SB3's policies cannot flatten; give it shape (1,) "
                         f"(gymnasium.wrappers.ReshapeObservation(env, (1,))) inside the {wrapper}")
    if isinstance(space, spaces.Box) and space.shape and not int(np.prod(space.shape)):
        raise ValueError(f"{what} is a Box of no values ({space}): there is nothing to key or to read; drop it "
                         f"(a Dict key) or give the env an observation")


def base_keys(space: spaces.Dict) -> list[str]:
    """The keys of a wrapped Dict space that belong to the original observation."""
    return [key for key in space.spaces if key not in EXPERIENCE_KEYS]
