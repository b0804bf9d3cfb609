"""The SB3 side's parts measured to tie, and candidates being measured: importable and benchmarkable, not the defaults.

Nothing on the main path (:mod:`integrations.sb3`, :mod:`experience_wrappers`) imports this
package. What was measured (``docs/benchmarks.md``, ``docs/what_to_use.md``):

* :class:`CompactExperienceVecEnv`: the experience in one observation key instead of three, for
  SB3's default policy (:mod:`experience_wrappers.experimental.compact`); it tied the full input.
* :class:`RetrievalMixPolicy` (a candidate): REGENT's mix of the nearest shown success's action into a
  continuous policy's mean, by distance (:mod:`.retrieval_mix`); on ML10's held-out tasks (one seed) it lifted
  the learned arm from 0.30 to 0.37 at trial 1 and stayed below retrieve-and-play (0.68).

Removed, for what they measured: the action prior and distillation toward its actions (the
prior hurt on KeyRoom-S5 from 20 demonstrations: sampled 0.74, nearest 0.46, against the
method's 0.92); neighbour imitation, cloning the nearest demonstration entry's action on the
agent's own states (KeyRoom-S5 from 5 demonstrations, ``keyroom-5``, 5 seeds: 0.34 against the
method's 0.46; the imitation of a shown entry that helped is run scope's
:class:`~integrations.sb3.trials_imitation.EntryImitationCallback`); the value baseline, the critic's ``V(s0)`` as a
guided episode's baseline (no closer to the paired baseline than the task's last 100 free
episodes: ``credit_agreement.json``, r 0.35 against 0.46 on Room-Monster, 0.27 against 0.28 on
Room-Ultimate).
"""

from .compact import CompactExperienceVecEnv
from .retrieval_mix import RetrievalMixPolicy

__all__ = ["CompactExperienceVecEnv", "RetrievalMixPolicy"]
