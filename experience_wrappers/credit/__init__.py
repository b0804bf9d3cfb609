"""Credit, the reward rule: what a guided episode earned, and what each entry that guided it gets.

One home for the rule that the manager (bank utilities, extractor rewards), the SB3 callback
(the ``crl/outcome_delta`` log) and the benchmarks all follow:

* :func:`outcome_delta`: an episode's outcome against experience-free episodes of its task;
* :class:`FreeBaseline`: the windows of free outcomes, per task, that the delta is taken against;
* :func:`entry_reward`: the extractor reward of each entry that guided the episode (the delta,
  or a direct +1 / -1);
* :func:`utility_decay`: the decay of the bank's utility EMA over training;
* :class:`OutcomeTracker`: rolling guided and free outcomes and deltas, for logs and curves;
* :class:`PairedCredit`: the paired rule (the paper's groups): a guided episode's delta against
  the free episodes that replayed the same task instance, with the table of guided episodes
  that wait for them;
* :func:`shown_shares`: how an episode's delta is shared among the entries it was shown.

The rules are plain functions (:mod:`.rules`); the windows and tables that hold outcomes over
time are :mod:`.tracking`'s. Plain numpy: no SB3, no integration.
"""

from .rules import (
    EXTRACTOR_REWARDS,
    entry_reward,
    outcome_delta,
    paired_delta,
    shown_shares,
    utility_decay,
)
from .tracking import FreeBaseline, OutcomeTracker, PairedCredit, PairedResult

__all__ = ["EXTRACTOR_REWARDS", "FreeBaseline", "OutcomeTracker", "PairedCredit", "PairedResult",
           "entry_reward", "outcome_delta", "paired_delta", "shown_shares", "utility_decay"]
