"""Whether a run's env reports success, kept with the run: saved in ``method.json``, restored on load.

Many envs set ``info["is_success"]`` on a success and leave the key out otherwise
(:class:`~experience_wrappers.manager.SuccessReports`): once one episode has reported success, an episode
that ends without the key is a failure. A run learns that from its training episodes; a loaded run has
seen none yet, and without this record its evaluation would read every failed episode as unknown (a
task-scope outcome of the episode's return, a run-scope trial "succeeded" when its rewards sum above 0).
Both scopes save the record and give it back to the parts that read success
(:func:`restore_success`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from stable_baselines3.common.base_class import BaseAlgorithm
from stable_baselines3.common.vec_env import VecEnv

from experience_wrappers.manager import SuccessReports

from .discovery import find_experience

__all__ = ["SUCCESS_REPORTED", "known_reports", "success_readers", "success_record", "restore_success"]

#: ``method.json``'s key: the run's env has reported success (absent in saves made before it was recorded)
SUCCESS_REPORTED = "success_reported"


def known_reports(model: BaseAlgorithm, env: VecEnv, reported: bool = False) -> SuccessReports:
    """How success is read in an evaluation: as the model's training read it. Where an episode of its training
    reported success (SB3's ``ep_success_buffer`` holds ``info["is_success"]`` of the episodes that set it, and
    the experience wrappers of ``env`` read either key), or ``reported`` (a loaded run's record) says so, an
    episode that ends without the key is a failure."""
    reports = SuccessReports()
    reports.seen = (reported or bool(getattr(model, "ep_success_buffer", None))
                    or any(r.seen for r in success_readers(env)))
    return reports


def success_readers(env: VecEnv, *callbacks: Any) -> list[SuccessReports]:
    """The readings of success of ``env``'s experience wrappers (none without any) and of ``callbacks`` that
    have one (``reports``: :class:`~integrations.sb3.SelfImitationCallback`'s; None and others are skipped)."""
    try:
        readers = [inj.reports for inj in find_experience(env)[1]]
    except ValueError:  # no experience wrapper
        readers = []
    return readers + [cb.reports for cb in callbacks if isinstance(getattr(cb, "reports", None), SuccessReports)]


def success_record(reported: bool) -> dict[str, bool]:
    """What ``method.json`` holds of it: ``{SUCCESS_REPORTED: reported}``."""
    return {SUCCESS_REPORTED: bool(reported)}


def restore_success(saved: Mapping[str, Any], readers: Iterable[SuccessReports]) -> bool:
    """The saved record (False where a save has none); where it says the env reported success, each of
    ``readers`` (the loaded run's wrappers' or memory's readings) reads a missing key as a failure from now on."""
    reported = saved.get(SUCCESS_REPORTED, False) is True
    for reports in readers if reported else ():
        reports.seen = True
    return reported
