"""Demonstration trajectories: a plain record, conversion from common formats, validation."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import attrs
import numpy as np
from gymnasium import spaces

from experience_wrappers.keys.base import stack_observations
from experience_wrappers.manager import success_from_info
from experience_wrappers.validators import success_flag
from experience_wrappers.whole_numbers import whole
from experience_wrappers.wrappers.env_checks import first_row_outside
from experience_wrappers.wrappers.options import check_task_id

__all__ = ["Demonstration", "as_demonstration", "validate_demonstration"]


def _stacked(obs: Any) -> Any:
    """Observations recorded step by step from a Dict env (a list of dicts) as one dict of arrays."""
    if not isinstance(obs, list | tuple) or not obs or not all(isinstance(o, dict) for o in obs):
        return obs
    keys = list(obs[0])
    for t, o in enumerate(obs):
        if sorted(o) != sorted(keys):
            raise ValueError(f"a demonstration's observations are dicts of other keys at step {t} ({sorted(o)}) than at "
                             f"step 0 ({sorted(keys)})")
    try:
        return stack_observations(obs)
    except ValueError as exc:  # a key whose shape changes between steps
        raise ValueError(f"a demonstration's observation keys do not stack over the steps: {exc}") from None


@attrs.define(kw_only=True)
class Demonstration:
    """One demonstrated episode.

    Attributes:
        observations: the observations the actions were taken from, ``T`` of them (an
            array with a leading time axis or a dict of such arrays). ``T + 1`` are also
            accepted (the final observation, as ``imitation`` stores it, is dropped). A list of
            per-step dicts (as recorded from a Dict env's steps) is stacked into a dict of arrays.
        actions: ``(T, ...)`` actions.
        rewards: ``(T,)`` rewards (zeros when unknown).
        success: whether the episode succeeded (read from the last info when not given).
        task_id: the task id of the episode.
    """

    observations: Any = attrs.field(converter=_stacked)  # (a list of per-step dicts, as recorded, stacked)
    actions: np.ndarray
    rewards: np.ndarray
    success: bool | None = None
    task_id: int = 0


def _length(obs: Any) -> int:
    if isinstance(obs, dict):
        lengths = {k: len(v) for k, v in obs.items()}
        if len(set(lengths.values())) != 1:
            raise ValueError(f"observation keys have different lengths: {lengths}")
        return next(iter(lengths.values()))
    return len(obs)


def _trim(obs: Any, n: int) -> Any:
    if isinstance(obs, dict):
        return {k: np.asarray(v)[:n] for k, v in obs.items()}
    return np.asarray(obs)[:n]


def as_demonstration(item: Any, task_id: int = 0) -> Demonstration:
    """Convert a demonstration from a :class:`Demonstration`, a dict or an ``imitation``-style trajectory.

    Dicts need ``observations`` (or ``obs``; from a Dict env, a dict of arrays or a list of
    per-step dicts) and ``actions`` (or ``acts``), and may give
    ``rewards`` (``rews``), ``infos``, ``success`` and ``task_id``. Objects with ``obs``,
    ``acts`` and optionally ``rews`` / ``infos`` attributes (``imitation``'s
    ``Trajectory`` and ``TrajectoryWithRew``) work as they are.

    >>> d = as_demonstration({"obs": np.zeros((4, 2)), "acts": np.array([0, 1, 0]),
    ...                       "infos": [{}, {}, {"is_success": True}]})
    >>> len(d.actions), d.success
    (3, True)
    """
    if isinstance(item, Demonstration):
        return item
    get = item.get if isinstance(item, dict) else (lambda name, default=None: getattr(item, name, default))
    obs = get("observations", None)
    obs = get("obs", None) if obs is None else obs
    acts = get("actions", None)
    acts = get("acts", None) if acts is None else acts
    if obs is None or acts is None:
        pair = " (an (observations, actions) pair is run scope's form; here give a dict of the two)" \
            if isinstance(item, np.ndarray | tuple | list) else ""
        raise ValueError(f"a demonstration needs observations and actions, got {type(item).__name__} "
                         f"with {sorted(item) if isinstance(item, dict) else 'neither'}{pair}")
    acts = np.asarray(acts)
    rews = get("rewards", None)
    rews = get("rews", None) if rews is None else rews
    rews = np.zeros(len(acts)) if rews is None else np.asarray(rews, dtype=np.float64)
    infos = get("infos", None)
    success = get("success", None)
    if success is None and infos is not None and len(infos):
        success = success_from_info(dict(infos[-1]))
    if success is not None:  # "False" is a non-empty str: never read as a flag
        success = success_flag("the demonstration's success", success)
    t = get("task_id", None)
    return Demonstration(observations=obs, actions=acts, rewards=rews, success=success,
                         task_id=check_task_id(task_id if t is None else t, "the demonstration's task_id"))


def check_action_values(actions: np.ndarray, action_space: spaces.Space, where: str) -> None:
    """Refuse a discrete space's actions that are not whole numbers (1.5 would be cut to 1), and
    ``Discrete`` actions of more than one value per step, naming the demonstration (``where``)."""
    if not isinstance(action_space, spaces.Discrete | spaces.MultiDiscrete | spaces.MultiBinary):
        return
    if actions.dtype.kind not in "biuf":
        raise ValueError(f"{where}: actions must be numbers for {action_space}, got dtype {actions.dtype}")
    ok = whole(actions).reshape(len(actions), -1).all(axis=1)
    if not ok.all():
        bad = np.flatnonzero(~ok)
        raise ValueError(f"{where}: action {int(bad[0])} = {actions[bad[0]].tolist()!r} is not a whole number, as "
                         f"{action_space} needs")
    if isinstance(action_space, spaces.Discrete) and actions.shape[1:] not in ((), (1,)):
        raise ValueError(f"{where}: actions of shape {actions.shape} for {action_space}: one value per step "
                         "(shape (T,) or (T, 1))")


def validate_demonstration(demo: Demonstration, observation_space: spaces.Space,
                           action_space: spaces.Space, index: int = 0) -> Demonstration:
    """Check lengths, observations and actions against the spaces; returns a trimmed copy (``Discrete``
    actions given as ``(T, 1)`` come back as ``(T,)``, the shape the env takes them in).

    For a Dict observation space, keys the space does not have are dropped (a scripted
    policy may have read extra keys while recording); a key the space has and the
    demonstration lacks is an error.

    Raises:
        ValueError: naming the demonstration's index and what is wrong.
    """
    where = f"demonstration {index}"
    if np.ndim(demo.actions) == 0:
        raise ValueError(f"{where}: actions must be an array with one row per step, got {demo.actions!r}")
    n = len(demo.actions)
    if n == 0:
        raise ValueError(f"{where} has no actions")
    n_obs = _length(demo.observations)
    if n_obs not in (n, n + 1):
        raise ValueError(f"{where}: {n_obs} observations for {n} actions (ragged); expected {n} or {n + 1}")
    if np.ndim(demo.rewards) != 1:
        raise ValueError(f"{where}: rewards must be 1-D (one per action), got shape {np.shape(demo.rewards)}")
    check_action_values(np.asarray(demo.actions), action_space, where)
    if len(demo.rewards) != n:
        raise ValueError(f"{where}: {len(demo.rewards)} rewards for {n} actions (ragged)")
    if not np.all(np.isfinite(demo.rewards)):
        raise ValueError(f"{where}: rewards contain NaN or inf")
    try:
        obs = _trim(demo.observations, n)
    except ValueError as exc:  # numpy's "inhomogeneous shape": a ragged list of observations
        raise ValueError(f"{where}: its observations do not stack into one array (a step of another "
                         f"shape?): {exc}") from None
    if isinstance(observation_space, spaces.Dict) and isinstance(obs, dict):
        missing = sorted(set(observation_space.spaces) - set(obs))
        if missing:
            raise ValueError(f"{where}: observations lack the keys {missing} of the observation space")
        obs = {k: obs[k] for k in observation_space.spaces}
    for t in range(n):
        a = demo.actions[t]
        a = a.item() if isinstance(action_space, spaces.Discrete) and np.ndim(a) else a
        if not action_space.contains(np.asarray(a, dtype=action_space.dtype) if not isinstance(
                action_space, spaces.Discrete) else np.int64(a)):
            raise ValueError(f"{where}: action {t} = {demo.actions[t]!r} is not in the action space {action_space}")
    first = {k: v[0] for k, v in obs.items()} if isinstance(obs, dict) else obs[0]
    if isinstance(observation_space, spaces.Dict) and not isinstance(first, dict):
        raise ValueError(f"{where}: the env observes a Dict, the demonstration gives {type(first).__name__}")
    bad = first_row_outside(obs, observation_space, n)
    if bad is not None:
        raise ValueError(f"{where}: observation {bad} is not in the observation space {observation_space}")
    actions = np.asarray(demo.actions)
    if isinstance(action_space, spaces.Discrete):  # (T, 1) as SB3's buffers hold them: one value per step, as the
        actions = actions.reshape(n)  # env takes them (the replay then holds the agent's own actions alike)
    return Demonstration(observations=obs, actions=actions, rewards=demo.rewards,
                         success=demo.success, task_id=demo.task_id)


def as_demonstrations(items: Iterable[Any] | Any, task_id: int = 0) -> list[Demonstration]:
    """A list of demonstrations from one or many items (see :func:`as_demonstration`)."""
    if items is None:
        raise TypeError("demonstrations must be a demonstration or an iterable of them, got None")
    if isinstance(items, (Demonstration, dict)) or hasattr(items, "acts"):
        items = [items]
    return [as_demonstration(it, task_id) for it in items]
