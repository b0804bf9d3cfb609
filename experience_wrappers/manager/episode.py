"""A finished episode as the wrappers hand it to the manager, how its success is read from the env's info,
and what it must be before the manager takes it (:func:`check_episode`, in the caller's thread)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import attrs
import numpy as np
from gymnasium import spaces

from ..validators import MAX_ABS_REWARD, success_flag
from ..whole_numbers import inside

if TYPE_CHECKING:
    from ..extractor import ActionCoder

__all__ = ["Episode", "Instance", "NO_REPORT_EPISODES", "SuccessReports", "check_episode", "outcome_of",
           "success_from_info"]

#: episodes ended without a success key, none ever with one, after which :class:`SuccessReports`
#: says the env reports no success
NO_REPORT_EPISODES = 100


def success_from_info(info: dict[str, Any]) -> bool | None:
    """Success as the env reports it (``info["success"]``, else SB3's ``info["is_success"]``), or None.

    A flag must be a bool, a numpy bool or 0/1 (:func:`~experience_wrappers.validators.success_flag`):
    ``"False"`` or NaN raise instead of counting as a success.

    >>> success_from_info({"is_success": 1.0}), success_from_info({})
    (True, None)
    """
    for key in ("success", "is_success"):
        if key in info and info[key] is not None:
            return success_flag(f"info[{key!r}]", info[key])
    return None


class SuccessReports:
    """Success of the episodes of one env (or one set of envs), read from their last infos.

    Many envs set ``info["is_success"] = True`` on a success and leave the key out otherwise:
    once an episode has reported success (either key, either value), an episode that ends
    without a key is a failure (False); before that, its success is unknown (None).
    :attr:`reports_none` is True once :data:`NO_REPORT_EPISODES` episodes have ended, none with a key.

    >>> reports = SuccessReports()
    >>> reports({}), reports({"is_success": True}), reports({})
    (None, True, False)
    """

    def __init__(self) -> None:
        self.seen = False  # an episode reported success (either key)
        self.missing = 0  # episodes ended without a key, before the first that had one

    def __call__(self, info: dict[str, Any]) -> bool | None:
        """The success of the episode whose last info is ``info``."""
        success = success_from_info(info)
        if success is not None:
            self.seen = True
            return success
        if self.seen:
            return False
        self.missing += 1
        return None

    @property
    def reports_none(self) -> bool:
        """Whether the env reports no success (:data:`NO_REPORT_EPISODES` episodes and no key yet)."""
        return not self.seen and self.missing >= NO_REPORT_EPISODES


@attrs.frozen(kw_only=True)
class Instance:
    """The replayed task instance an episode started from, and its group's make-up.

    The envs of a group reset their ``index``-th episodes onto the same instance
    (:class:`~experience_wrappers.wrappers.ReplayInstances`); ``guided`` of its ``members``
    episodes are experience-guided, the rest free. :class:`~experience_wrappers.credit.PairedCredit`
    judges the guided ones against the free ones.

    Attributes:
        group: the group of envs.
        index: the episode index within each member env (the n-th episode of every member).
        members: the group's size (episodes of the instance).
        guided: how many of them are guided.
        seed: the instance's reset seed (tells apart groups of different VecEnvs on one manager).
    """

    group: int
    index: int
    members: int
    guided: int
    seed: int = 0

    @property
    def free(self) -> int:
        return self.members - self.guided

    @property
    def key(self) -> tuple[int, int, int]:
        return (self.seed, self.group, self.index)


@attrs.define(kw_only=True)
class Episode:
    """One finished episode.

    Attributes:
        observations: the observations actions were taken from, one per step, stacked
            (an array with a leading time axis, or a dict of such arrays).
        actions: ``(T, ...)`` actions as the env received them.
        rewards: ``(T,)`` rewards.
        success: success at the end as the env reported it, or None when it does not say.
        guided: whether the episode was experience-guided.
        injected_ids: every entry id shown to the agent during the episode.
        task_id: the task of the episode.
        env_steps: the global step count when it ended (for provenance).
        instance: the replayed task instance it started from (None: not replayed, so the
            credit is the unpaired baseline's).
        shown_steps: per entry of ``injected_ids``, the steps on which it was shown (None:
            not counted; every entry then gets the whole delta).
    """

    observations: Any
    actions: np.ndarray
    rewards: np.ndarray
    success: bool | None
    guided: bool
    injected_ids: np.ndarray = attrs.field(factory=lambda: np.zeros(0, dtype=np.int64))
    task_id: int = 0
    env_steps: int = 0
    instance: Instance | None = None
    shown_steps: np.ndarray | None = None

    @property
    def length(self) -> int:
        return len(self.rewards)

    @property
    def episode_return(self) -> float:
        return float(np.sum(self.rewards))

    @property
    def outcome(self) -> float:
        return outcome_of(self.success, self.episode_return)


def outcome_of(success: bool | None, episode_return: float) -> float:
    """The outcome the method optimises: success (0/1) when the env reports it, else the return.

    >>> outcome_of(True, -3.0), outcome_of(None, 12.5)
    (1.0, 12.5)
    """
    return float(success) if success is not None else float(episode_return)


# -- what a submitted episode must be ------------------------------------------------------------
# An episode the manager cannot distil must be refused where it is handed over, before it
# reaches anything: in ``sync`` mode its credit would have moved the free baseline and the
# bank's utilities before distillation refused it, and in ``async`` and ``process`` modes the
# error would surface later, from the worker, as "the worker failed", and stop the manager.
# :func:`check_episode` costs a few numpy reductions per episode (one ``isfinite`` over each
# float array, the action coder's encoding). The wrappers check observations against their space
# as they arrive (every one in the first episodes, a sample after); this check reads every step of
# every episode handed over, a user's hand-built ones included.

def check_episode(ep: Episode, observation_space: spaces.Space, action_coder: ActionCoder) -> None:
    """Refuse an episode the manager cannot distil: non-finite rewards, actions and observations
    whose step counts differ from the rewards', actions outside the space (the coder's rule), and
    observations whose shape is not the space's or that hold non-numbers, NaN or inf.

    Also its flags and ids: ``success`` None or a bool (0/1), ``guided`` a bool, ``task_id`` an
    integer, ``injected_ids`` integers, ``shown_steps`` None or one non-negative count per injected id;
    rewards within :data:`~experience_wrappers.validators.MAX_ABS_REWARD`, discrete observations in
    their space's range.

    Raises:
        ValueError: naming what is wrong (and the first bad step where there is one).
    """
    _check_flags(ep)
    rewards = np.asarray(ep.rewards)
    if rewards.ndim != 1 or rewards.dtype.kind not in "biuf":
        raise ValueError(f"the episode's rewards must be a 1-D array of numbers, one per step; got "
                         f"dtype {rewards.dtype}, shape {rewards.shape}")
    with np.errstate(invalid="ignore"):
        ok = np.abs(rewards.astype(np.float64)) <= MAX_ABS_REWARD  # (NaN fails it too)
    if not ok.all():
        bad = int(np.flatnonzero(~ok)[0])
        raise ValueError(f"the episode has reward {float(rewards[bad])!r} at step {bad}: rewards must be finite "
                         f"and at most {MAX_ABS_REWARD:g} in magnitude")
    n = len(rewards)
    if np.ndim(ep.actions) == 0 or len(ep.actions) != n:
        raise ValueError(f"the episode has {_count(ep.actions)} actions for {n} rewards: one of each per step")
    if n:
        try:
            action_coder.encode(ep.actions)
        except (TypeError, ValueError) as exc:
            raise ValueError(f"the episode's actions do not fit the manager's action space: {exc}") from None
    _check_observations(ep.observations, observation_space, n, "the episode's observations")


def _check_flags(ep: Episode) -> None:
    if ep.success is not None:
        try:
            success_flag("the episode's success", ep.success)
        except TypeError as exc:
            raise ValueError(str(exc)) from None
    if not isinstance(ep.guided, bool | np.bool_):
        raise ValueError(f"the episode's guided must be a bool, got {ep.guided!r}")
    if isinstance(ep.task_id, bool | np.bool_) or not isinstance(ep.task_id, int | np.integer):
        raise ValueError(f"the episode's task_id must be an integer, got {ep.task_id!r}")
    ids = np.asarray(ep.injected_ids)
    if ids.ndim != 1 or (ids.size and ids.dtype.kind not in "iu"):
        raise ValueError(f"the episode's injected_ids must be a 1-D array of entry ids (integers), got {ep.injected_ids!r}")
    if ep.shown_steps is not None:
        shown = np.asarray(ep.shown_steps)
        if shown.shape != ids.shape or (shown.size and (shown.dtype.kind not in "iu" or shown.min() < 0)):
            raise ValueError(f"the episode's shown_steps must hold one non-negative count per injected id "
                             f"({ids.size}), got {ep.shown_steps!r}")


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
    if isinstance(space, spaces.Discrete | spaces.MultiDiscrete | spaces.MultiBinary) and x.size:
        ok = inside(space, x)
        if not ok.all():
            step = int(np.argmax(~ok.reshape(n, -1).all(axis=1)))
            raise ValueError(f"{where} hold a value outside {space} at step {step}: "
                             f"{np.asarray(x[step]).tolist()!r}")
