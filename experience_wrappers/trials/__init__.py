"""Trials of one instance: runs of ``K`` trials whose guided trials read the run's earlier trials.

Where the observation lacks what changes from one instance to the next (a hidden goal, an
unseen map), the run's own earlier trials hold it: :class:`TrialMemory` keeps them in the
bank, scoped by run, with decodable content per entry
(:class:`~experience_wrappers.trials.layout.EntryLayout`), and :class:`TrialsWrapper` shows a
guided trial the nearest of them. The rest is public in the module that defines it:
:mod:`.layout`, :mod:`.wrapper` (the observation keys, ``trials_env_fns``), :mod:`.memory`
(``SCOPES``), :mod:`.meta_episode` (the RL^2 peer) and :mod:`.play` (retrieve-and-play).
"""

from .memory import TrialMemory
from .wrapper import TrialsWrapper

__all__ = ["TrialMemory", "TrialsWrapper"]
