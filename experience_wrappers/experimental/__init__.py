"""The core's parts measured to tie or hurt: importable, benchmarkable, not the defaults.

* :class:`CompactExperience` (:mod:`.compact`): the experience in one observation key (the
  shown entries' mean and the fraction shown) instead of three, for SB3's default policy; it
  tied the full input (``overhead-compact.json``).
* :class:`PathTrialMemory` (:mod:`.trial_paths`): run scope reading each earlier trial along
  its whole path besides its nearest steps; it hurt following a success (hidden-goal room) and
  a demonstration (Meta-World reach).

The SB3 side (the compact input of an ``ExperienceVecEnv``) is in
:mod:`integrations.sb3.experimental`, with what was removed and why (the action prior,
neighbour imitation, the value baseline: ``docs/what_to_use.md``).
"""

from .compact import (
           CompactExperience,
           compact_experience,
           compact_observation,
           compact_observation_space,
)
from .trial_paths import PathTrialMemory

__all__ = ["CompactExperience", "PathTrialMemory", "compact_experience",
           "compact_observation", "compact_observation_space"]
