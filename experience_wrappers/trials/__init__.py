"""Trials of one instance: runs of ``K`` trials whose guided trials read the run's earlier trials.

Where the observation lacks what changes from one instance to the next (a hidden goal, an
unseen map), the run's own earlier trials hold it: :class:`TrialMemory` keeps them in the
bank, scoped by run, with decodable content per entry (:class:`EntryLayout`), and
:class:`TrialsWrapper` shows a guided trial the nearest of them.
"""

from .layout import EntryLayout
from .memory import SCOPES, TrialMemory
from .meta_episode import MetaEpisode
from .play import RetrieveAndPlay
from .wrapper import (
    ENTRIES_KEY,
    MASK_KEY,
    TRIAL_INDEX_KEY,
    TRIAL_INFO_KEY,
    TrialsWrapper,
    trials_env_fns,
)

__all__ = ["EntryLayout", "TrialMemory", "TrialsWrapper", "trials_env_fns", "MetaEpisode", "RetrieveAndPlay", "SCOPES", "ENTRIES_KEY", "MASK_KEY",
           "TRIAL_INFO_KEY", "TRIAL_INDEX_KEY"]
