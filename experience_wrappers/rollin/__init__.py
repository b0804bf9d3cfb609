"""Guided roll-in (Jump-Start RL, Backplay): the bank acts first, then the policy takes over.

In a roll-in episode the bank's nearest *successful* entry chooses the action for the
first ``h`` steps, then the policy acts from wherever the guide left it. ``h`` follows a
curriculum: it starts near the demonstrations' length (the guide alone mostly solves the
task, so the policy learns the last steps first) and shrinks each time the roll-in
episodes succeed often enough at the current ``h``, until the policy starts from the true
start (Uchendu et al. 2022, "Jump-Start Reinforcement Learning"; Salimans & Chen 2018).

This package holds the engine-free parts (no SB3 import):

* :class:`RollInCurriculum` (:mod:`.curriculum`): the rule that moves ``h``.
* :class:`BankGuide` (:mod:`.guides`, as the two below): the guide, a state-keyed lookup of the nearest successful entry.
* :class:`ReplayGuide`: the control without a bank: a demonstration's recorded actions
  replayed open-loop on the instance it was recorded on.
* :func:`first_actions`: how an entry's next action is read back from what the bank stores.

The SB3 side (the VecEnv that executes the guide's actions, the callback that takes the
policy gradient off guide-acted steps) is :mod:`integrations.sb3.rollin_env` and :mod:`integrations.sb3.rollin_callbacks`.
"""

from .curriculum import RollInCurriculum
from .guides import (
    BankGuide,
    GuideResult,
    ReplayGuide,
    first_actions,
    instance_seeds,
    successful_provenances,
)

__all__ = ["RollInCurriculum", "BankGuide", "ReplayGuide", "GuideResult", "first_actions", "successful_provenances", "instance_seeds"]
