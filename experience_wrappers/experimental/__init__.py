"""The core's parts measured to tie or hurt: importable, benchmarkable, not the defaults.

* :class:`CompactExperience` (:mod:`.compact`): the experience in one observation key (the
  shown entries' mean and the fraction shown) instead of three, for SB3's default policy; it
  tied the full input (``overhead-compact.json``).

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

__all__ = ["CompactExperience", "compact_experience",
           "compact_observation", "compact_observation_space"]
