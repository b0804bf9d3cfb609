"""The env a run-scope run is built on: its step cap, and what a save records of it.

A run built from a factory saves no env (a function cannot be written); a load is given the
factory again. What the run learned holds only on the env it trained on: its trials' cap (the
memory's ``horizon``, which times every entry's steps) and its task. So a save records
:func:`env_facts` of the env (its class, the horizon the run resolved, a digest of the first
training instance's first observation) and :func:`check_env_facts` compares them on load: a
different class or horizon is refused, a different first observation is warned of (an env
whose reset also reads the wall clock, as NetHack does, may differ for the same task).
"""

from __future__ import annotations

import difflib
import hashlib
import inspect
import logging
import warnings
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces

__all__ = ["ENV_FACTS", "capped", "check_env_facts", "checked_memory_kwargs", "env_facts", "step_cap"]

#: the key of ``method.json`` that holds :func:`env_facts`
ENV_FACTS = "env_facts"


def step_cap(env: gym.Env, enforced_only: bool = False) -> int | None:
    """An env's own step cap: its spec's ``max_episode_steps``, a ``TimeLimit`` among its wrappers, or
    an int ``max_steps`` of the env itself (this library's MiniHack rooms, NLE's; not with
    ``enforced_only``: only gymnasium's caps are known to end an episode); None: none."""
    cap = env.spec.max_episode_steps if env.spec is not None else None
    layer: gym.Env = env
    while not cap and isinstance(layer, gym.Wrapper):
        cap = getattr(layer, "_max_episode_steps", None) if isinstance(layer, gym.wrappers.TimeLimit) else None
        layer = layer.env
    own = getattr(env.unwrapped, "max_steps", None)
    if not cap and not enforced_only and isinstance(own, int) and not isinstance(own, bool) and own > 0:
        cap = own
    return int(cap) if cap else None


def capped(make_env: Callable[[], gym.Env], horizon: int) -> gym.Env:
    """``make_env()`` truncated at ``horizon`` steps (a trial's cap where the env's own is longer or absent)."""
    return gym.wrappers.TimeLimit(make_env(), horizon)


def observation_digest(space: spaces.Space, obs: Any) -> str | None:
    """A short digest of one observation (flattened by its space); None where the space does not flatten."""
    try:
        flat = np.asarray(spaces.flatten(space, obs), np.float64)
    except Exception:  # noqa: BLE001 - a space gymnasium cannot flatten (Text, Graph, ...): nothing to compare
        return None
    return hashlib.sha256(flat.tobytes()).hexdigest()[:16]


def _reset(env: gym.Env, instance: int) -> Any:
    try:
        return env.reset(seed=instance)[0]
    except Exception as exc:  # noqa: BLE001 - whatever the env raises, named with the instance
        raise ValueError(f"the env cannot reset to instance {instance} (reset(seed={instance}) raised "
                         f"{type(exc).__name__}: {exc})") from exc


def env_facts(env: gym.Env, instances: Sequence[int], horizon: int) -> dict[str, Any]:
    """What a save records of the env a run trains on: the unwrapped env's class, the run's ``horizon`` and the
    digest of ``reset(seed=instances[0])``'s observation (None where two such resets differ: a reset the seed
    does not decide). Resets ``env`` to the first instance twice and to the lowest and highest once each, so
    an instance it cannot reset to is said before training.

    Raises:
        ValueError: the env cannot reset to one of those instances (named, with what it raised).
    """
    first = [observation_digest(env.observation_space, _reset(env, instances[0])) for _ in range(2)]
    for instance in sorted({min(instances), max(instances)} - {instances[0]}):
        _reset(env, instance)
    cls = env_class(env)
    if first[0] != first[1]:
        logging.getLogger(__name__).info(
            "%s: two reset(seed=%d) gave different observations. A run's trials are one instance only where the reset "
            "seed fixes what they share (a hidden goal, a map); a start that varies on purpose (random moves) is fine, "
            "a goal drawn from the env's own generator is not", cls, instances[0])
    return {"env_class": cls, "horizon": int(horizon),
            "first_observation": first[0] if first[0] == first[1] else None}


def checked_memory_kwargs(memory_kwargs: Mapping[str, Any] | None, like: Mapping[str, Any] | None = None
                          ) -> dict[str, Any]:
    """``memory_kwargs`` as a run saves them and a load compares them: each name a
    :class:`~experience_wrappers.trials.TrialMemory` argument (checked before an env is made), ``run_best=True``
    under its other name, ``"taken"`` (so a load that names either matches a save that named the other).
    ``like``: a save's (for a load's ``memory_kwargs``): a setting it has not recorded (one newer than the save)
    that is given at its default is left out, as the save has it.

    Raises:
        TypeError: an unknown name, named with the close ones.
    """
    from experience_wrappers.trials import TrialMemory

    kwargs = dict(memory_kwargs or {})
    params = inspect.signature(TrialMemory).parameters
    names = [n for n in params if n not in ("observation_space", "action_space")]
    for name in kwargs:
        if name not in names:
            close = difflib.get_close_matches(str(name), names, n=3)
            raise TypeError(f"memory_kwargs[{name!r}] is not a TrialMemory setting"
                            + (f" (did you mean {' or '.join(map(repr, close))}?)" if close else "")
                            + f"; its settings: {', '.join(names)}")
    if kwargs.get("run_best") is True:
        kwargs["run_best"] = "taken"
    if isinstance(like, Mapping):
        kwargs = {n: v for n, v in kwargs.items()
                  if n in like or not (type(v) is type(params[n].default) and v == params[n].default)}
    return kwargs


def check_env_facts(saved: Mapping[str, Any] | None, given: Mapping[str, Any] | None) -> None:
    """Refuse a load onto an env of another class or trial cap than the saved run's; warn where its first
    observation differs. ``saved`` None (a save made before these were recorded): nothing to compare; ``given``
    None: the run's env has not been made.

    Raises:
        ValueError: the env's class, or the horizon its step cap gives, is not the saved run's.
    """
    if not saved or not given:
        return
    if saved.get("env_class") != given["env_class"]:
        raise ValueError(f"this run was trained on {saved.get('env_class')} and the env given makes "
                         f"{given['env_class']}: pass env=the factory the run was built with")
    if saved.get("horizon") != given["horizon"]:
        raise ValueError(f"this run's trials were capped at {saved.get('horizon')} steps (the memory's horizon, which "
                         f"times its entries) and the env given caps them at {given['horizon']}: pass env=the factory "
                         "the run was built with (the same step cap)")
    if None not in (saved.get("first_observation"), given["first_observation"]) and \
            saved["first_observation"] != given["first_observation"]:
        warnings.warn("the env given starts the run's first training instance elsewhere than the env the run was "
                      "saved on (its first observation differs): if it is another task or another version of the "
                      "env, the loaded policy and memory do not hold there (an env whose reset also reads the wall "
                      "clock, as NetHack's does, may differ on the same task)", UserWarning, stacklevel=3)


def env_class(env: gym.Env) -> str:
    """``module:qualname`` of the env's unwrapped class, as a save records it (:func:`env_facts`)."""
    cls = type(env.unwrapped)
    return f"{cls.__module__}:{cls.__qualname__}"


def check_env_class(saved: Mapping[str, Any] | None, make_env: Callable[[], gym.Env]) -> None:
    """The class part of :func:`check_env_facts`, before a loaded run is built (which checks its demonstrations
    against the env given: the env's class is said first). Makes and closes one env.

    Raises:
        ValueError: the env ``make_env`` makes is of another class than the saved run's.
    """
    if not saved or not saved.get("env_class"):
        return
    proto = make_env()
    try:
        given = env_class(proto)
    finally:
        proto.close()
    check_env_facts({"env_class": saved["env_class"]}, {"env_class": given, "horizon": None,
                                                        "first_observation": None})
