"""Parts measured to tie or hurt the method: importable and benchmarkable, not the defaults.

Each is kept because the benchmarks' arms still run it and a user may want to try it on a
task of their own; nothing on the main path (:mod:`integrations.sb3`, :mod:`experience_wrappers`)
imports this package. :class:`ExperimentalCRLCallback` is :class:`~integrations.sb3.CRLCallback`
with ``prior_weight``, ``distill_coef`` and the value baseline's ``V(s0)`` added through its
hooks; :class:`ExperimentalComplementaryRL` is :class:`~integrations.sb3.ComplementaryRL`
trained with it. What was measured (``docs/benchmarks.md``, ``docs/what_to_use.md``):

* :class:`ActionPriorPolicy` and :func:`prior_mixture`: the retrieved entries' actions as a
  bias on the policy's logits. Measured to hurt on KeyRoom-S5 from 20 demonstrations at 72k
  steps: the sampled prior (``crl-sil``, ``keyroom-20``, 5 seeds) 0.74 against the method's
  0.92, the nearest-neighbour prior (``crl-sil-knn-prior``, ``keyroom-rollin``, seeds 0-2)
  0.46, 0.46 below the method (CI [+0.32, +0.57]).
* :func:`distillation_step` (``ExperimentalCRLCallback(distill_coef=...)``): distillation toward the
  retrieved actions on guided episodes that beat free ones. Measured no better than the
  observation channel (``ways``, Room-Monster-5x5, 2 seeds) and unable to make KeyRoom's
  demonstrated behaviour stick (``stretch``, 500k steps, seed 0: every arm ends at 0).
* :class:`NeighbourImitationCallback`: cloning the nearest demonstration entry's action on
  the agent's own states. Measured to hurt on KeyRoom-S5 from 5 demonstrations
  (``keyroom-5``, 5 seeds: 0.34 against the method's 0.46, CI of the difference above zero).
* The value-baseline fallback (``ExperienceWrapper(..., experimental={"value_baseline": True})``
  with :class:`ExperimentalCRLCallback`, whose :class:`StartValues` fills in the critic's
  ``V(s0)`` as the free baseline): no closer to the paired baseline than the task's last
  100 free episodes (``credit_agreement.json``: r 0.35 against 0.46 on Room-Monster, 0.27
  against 0.28 on Room-Ultimate).
"""

from .action_distillation import distillation_step
from .callback import ExperimentalCRLCallback
from .method import ExperimentalComplementaryRL
from .neighbour_imitation import NeighbourImitationCallback
from .policy import ActionPriorPolicy, prior_mixture
from .schedule import ExperimentalSchedule
from .value_baseline import StartValues

__all__ = ["ExperimentalCRLCallback", "ExperimentalComplementaryRL", "ActionPriorPolicy", "prior_mixture",
           "distillation_step", "NeighbourImitationCallback", "StartValues", "ExperimentalSchedule"]
