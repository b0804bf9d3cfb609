"""Fill a bank with demonstrations, through the extractor, before training."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from experience_wrappers import ExperienceManager
from experience_wrappers.bank import Provenance
from experience_wrappers.manager import Episode
from experience_wrappers.manager.manager import check_ingest_args

from .trajectories import as_demonstrations, validate_demonstration

__all__ = ["ingest_demonstrations"]


def ingest_demonstrations(manager: ExperienceManager, demonstrations: Iterable[Any] | Any,
                          task_id: int = 0, only_successful: bool = False, segment_every: int | None = None,
                          utility: float | None = None) -> int:
    """Distil demonstrations into the manager's bank as entries with provenance ``demo``.

    Each demonstration is cut into segments exactly as a finished episode is (keys from
    the frozen key encoder, values from the extractor, contexts holding the demonstrated
    actions). Nothing is credited: demonstrations earn utility like any entry, when they
    guide episodes that beat the free baseline. Every demonstration is validated before
    any is written, so a malformed one changes nothing in the bank.

    Args:
        manager: the manager of the bank to fill (``env.manager``, or
            ``integrations.sb3.find_experience(venv)[0][0]``).
        demonstrations: :class:`Demonstration` objects, dicts with observations / actions
            (/ rewards / infos), or ``imitation``-style trajectories (``obs``, ``acts``, ``rews``).
        task_id: task id of demonstrations that do not give one.
        only_successful: skip demonstrations whose success is known to be False.
        segment_every: start a segment every this many steps (default: the manager's
            ``segment_every``). 1 writes one entry per demonstrated state, each with the
            action taken there first in its context: the densest coverage.
        utility: initial utility of the entries (default: the bank's ``initial_utility``,
            as for extracted entries). A positive value lets retrieval prefer demonstrations
            until credit says otherwise.

    Returns:
        The number of segments written (before deduplication).

    Raises:
        ValueError: a demonstration is ragged, or its actions / observations are outside the spaces.
    """
    check_ingest_args(segment_every, utility)
    if not callable(getattr(manager, "ingest", None)):
        raise TypeError(f"manager must be the ExperienceManager of the bank to fill (env.manager, or "
                        f"integrations.sb3.find_experience(venv)[0][0]), got {type(manager).__name__}")
    demos = [validate_demonstration(d, manager.observation_space, manager.action_space, i)
             for i, d in enumerate(as_demonstrations(demonstrations, task_id))]
    written = 0
    for d in demos:
        if only_successful and d.success is False:
            continue
        ep = Episode(observations=d.observations, actions=d.actions, rewards=d.rewards, success=d.success,
                     guided=False, task_id=d.task_id)
        written += manager.ingest(ep, Provenance.DEMO, segment_every=segment_every, utility=utility)
    return written
