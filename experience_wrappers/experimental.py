"""The core's parts measured to tie or hurt: importable, benchmarkable, not the defaults.

* :class:`ExperimentalOptions` (``ExperienceWrapper(..., experimental={...})``): the action
  prior (the retrieved entries' actions as ``experience_action_prior``; measured to hurt on
  KeyRoom-S5 from 20 demonstrations: 0.74 sampled, ``keyroom-20``, 5 seeds, against the
  method's 0.92; 0.46 nearest, ``keyroom-rollin``, seeds 0-2) and the value-baseline fallback (the critic's ``V(s0)`` as the
  free baseline; no closer to the paired baseline than the task's recent free episodes,
  ``credit_agreement.json``).

The SB3 side (the policy that reads the prior, distillation, neighbour imitation) is in
:mod:`integrations.sb3.experimental`.
"""

from .wrappers.options import EXPERIMENTAL_FIELDS, ExperimentalOptions

__all__ = ["ExperimentalOptions", "EXPERIMENTAL_FIELDS"]
