"""The core's parts measured to tie or hurt: importable, benchmarkable, not the defaults.

* :class:`ExperimentalOptions` (``ExperienceWrapper(..., experimental={...})``): the
  value-baseline fallback (the critic's ``V(s0)`` as the free baseline; no closer to the
  paired baseline than the task's recent free episodes, ``credit_agreement.json``).
* :class:`CompactExperience` (:mod:`.compact`): the experience in one observation key (the
  shown entries' mean and the fraction shown) instead of three, for SB3's default policy; it
  tied the full input (``overhead-compact.json``).

The SB3 side (the callback that fills in ``V(s0)``, neighbour imitation, the compact input of
an ``ExperienceVecEnv``) is in :mod:`integrations.sb3.experimental`. The action prior was
removed: it hurt where it was measured (``docs/what_to_use.md``).
"""

from ..wrappers.options import EXPERIMENTAL_FIELDS, ExperimentalOptions
from .compact import (
           CompactExperience,
           compact_experience,
           compact_observation,
           compact_observation_space,
)

__all__ = ["ExperimentalOptions", "EXPERIMENTAL_FIELDS", "CompactExperience", "compact_experience",
           "compact_observation", "compact_observation_space"]
