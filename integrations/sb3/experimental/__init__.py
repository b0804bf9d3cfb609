"""Parts measured to tie or hurt the method: importable and benchmarkable, not the defaults.

Each is kept because the benchmarks' arms still run it and a user may want to try it on a
task of their own; nothing on the main path (:mod:`integrations.sb3`, :mod:`experience_wrappers`)
imports this package. :class:`ExperimentalCRLCallback` is :class:`~integrations.sb3.CRLCallback`
with the value baseline's ``V(s0)`` added through its hooks; :class:`ExperimentalComplementaryRL`
is :class:`~integrations.sb3.ComplementaryRL` trained with it. What was measured
(``docs/benchmarks.md``, ``docs/what_to_use.md``):

* :class:`NeighbourImitationCallback`: cloning the nearest demonstration entry's action on
  the agent's own states. Measured to hurt on KeyRoom-S5 from 5 demonstrations
  (``keyroom-5``, 5 seeds: 0.34 against the method's 0.46, CI of the difference above zero).
* :class:`CompactExperienceVecEnv`: the experience in one observation key instead of three, for
  SB3's default policy (:mod:`experience_wrappers.experimental.compact`); it tied the full input.
* The value-baseline fallback (``ExperienceWrapper(..., experimental={"value_baseline": True})``
  with :class:`ExperimentalCRLCallback`, whose :class:`StartValues` fills in the critic's
  ``V(s0)`` as the free baseline): no closer to the paired baseline than the task's last
  100 free episodes (``credit_agreement.json``: r 0.35 against 0.46 on Room-Monster, 0.27
  against 0.28 on Room-Ultimate).

The action prior (the retrieved entries' actions shown as an observation key and mixed into
the policy's logits) and experience distillation toward those actions were removed: the
prior hurt on KeyRoom-S5 from 20 demonstrations (sampled 0.74, nearest 0.46, against the
method's 0.92) and distillation did no better than the observation channel
(``docs/what_to_use.md``).
"""

from .callback import ExperimentalCRLCallback
from .compact import CompactExperienceVecEnv
from .method import ExperimentalComplementaryRL
from .neighbour_imitation import NeighbourImitationCallback
from .value_baseline import StartValues

__all__ = ["ExperimentalCRLCallback", "ExperimentalComplementaryRL", "NeighbourImitationCallback", "StartValues",
           "CompactExperienceVecEnv"]
