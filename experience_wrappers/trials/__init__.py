"""Trials of one instance: runs of ``K`` trials whose guided trials read the run's earlier trials.

Where the observation lacks what changes from one instance to the next (a hidden goal, an
unseen map), the run's own earlier trials hold it: :class:`TrialMemory` keeps them in the
bank, scoped by run, with decodable content per entry
(:class:`~experience_wrappers.manager.entry_layout.EntryLayout`), and run scope's wrapper,
``ExperienceWrapper(env, memory, scope="run", ...)`` (:class:`~.wrapper.RunScopeWrapper`), shows a
guided trial the nearest of them. The rest is public in the module that defines it:
:mod:`.wrapper` (the observation keys, ``trial_env``, ``trials_env_fns``), :mod:`.memory`
(``SCOPES``), :mod:`.novelty`, :mod:`.trial_index`, :mod:`.run_best` and :mod:`.nearest_success` (the action entry
imitation copies). The peers (retrieve-and-play, RL^2's meta-episodes) are baselines: ``benchmarks/peers/``.
"""

from .memory import TrialMemory
from .wrapper import RunScopeWrapper  # noqa: F401  (registers ExperienceWrapper's scope="run")

__all__ = ["TrialMemory"]
