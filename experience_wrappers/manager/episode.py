"""A finished episode as the wrappers hand it to the manager, and how its success is read from the env's info."""

from __future__ import annotations

from typing import Any

import attrs
import numpy as np

from ..validators import success_flag

__all__ = ["Episode", "Instance", "NO_REPORT_EPISODES", "SuccessReports", "outcome_of", "success_from_info"]

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
