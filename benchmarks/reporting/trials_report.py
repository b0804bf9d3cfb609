"""Tables of the trials suites (held-out instances, frozen weights), from the files ``benchmarks.suites.trials`` writes.

``python -m benchmarks.reporting.trials_report`` prints the markdown; :func:`trials_section` is what
``python -m benchmarks.reporting.report`` puts in ``docs/benchmarks.md``. Every figure is a mean over
seeds with its 95 % bootstrap CI (each seed: 20 held-out instances x ``repeats`` runs of
``K`` trials).
"""

from __future__ import annotations

import argparse
import math
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.harness.result_file import read_result
from benchmarks.reporting.paired_runs import paired_table
from benchmarks.reporting.stats import bootstrap_ci, difference_ci

#: each family's suite: the folder under benchmarks/results and the ``suite`` of its result files
SUITES = {"darkroom": "trials-darkroom", "keydoor": "trials-keydoor", "maze": "incontext-maze",
          "ml1-reach": "metaworld-ml1-reach", "ml1-reach-moves": "metaworld-ml1-reach-moves",
          "ml1-push-moves": "metaworld-ml1-push-moves", "ml1-pick-place-moves": "metaworld-ml1-pick-place-moves",
          "ml10-moves": "metaworld-ml10-moves"}

RESULTS = Path(__file__).resolve().parents[1] / "results"
#: the row of an ``eval_search`` arm's weights evaluated without the search (its file's ``heldout_without_search``)
NO_SEARCH = " (same weights, no search)"
#: the row of an ``eval_deterministic`` arm's weights acting on their mean (its file's ``heldout_deterministic``)
DETERMINISTIC = " (same weights, deterministic)"
#: the row of an ``eval_ahead`` arm's weights with the run's own successes marked further on (``heldout_ahead``)
AHEAD = " (same weights, own successes marked ahead)"

ARM_ORDER = ["crl-trials", "crl-trials-novelty", "crl-trials-novelty-always", "crl-trials-novelty-successes",
             "crl-trials-novelty-frozen", "crl-trials-successes", "crl-trials-frozen", "crl-trials-random", "crl-trials-nodemos",
             "crl-trials-nosil", "crl-trials-imitate", "crl-trials-imitate-nearest",
             "crl-trials-imitate-nearest-frozen", "crl-trials-imitate-nearest-random",
             "crl-trials-imitate-nearest-strong", "crl-trials-imitate-nearest-strong-random", "ppo", "ppo-sil", "ppo-visible", "ppo-visible-solo", "ppo-visible-solo-unshared", "ppo-visible-solo-bonus-inf",
             "ppo-visible-solo-bonus-inf-1m",
             "ppo-visible-bonus-inf", "ppo-bonus-inf", "ppo-bonus-inf-600k", "ppo-sil-bonus-inf", "crl-trials-bonus-inf", "crl-trials-imitate-nearest-strong-bonus-inf",
             "crl-trials-best-bonus-inf", "crl-trials-best-noimitate-bonus-inf",
             "crl-trials-best-noimitate-random-bonus-inf", "crl-trials-best-noimitate-frozen-bonus-inf",
             "crl-trials-reached-noimitate-bonus-inf", "crl-trials-located-runlabels-noimitate-bonus-inf",
             "crl-trials-located-noimitate-bonus-inf", "crl-trials-located-handkeys-noimitate-bonus-inf",
             "crl-trials-located-handkeys-firstsuccess-noimitate-bonus-inf",
             "crl-trials-located-handkeys-exactlabels-noimitate-bonus-inf",
             "crl-trials-located-noentries-noimitate-bonus-inf", "crl-trials-located-meanlabels-noimitate-bonus-inf",
             "crl-trials-located-noentries-meanlabels-noimitate-bonus-inf",
             "crl-trials-located-noentries-random-noimitate-bonus-inf", "crl-trials-located-noimitate-frozen-bonus-inf",
             "crl-trials-located-noimitate-random-bonus-inf", "crl-trials-located-600k-noimitate-bonus-inf",
             "crl-trials-located-rewardobs-noimitate-bonus-inf",
             "crl-trials-located-noentries-rewardobs-noimitate-bonus-inf",
             "crl-trials-located-noentries-relocate-noimitate-bonus-inf",
             "crl-trials-located-noentries-relocate-all-noimitate-bonus-inf",
             "crl-trials-located-noentries-relocate-search-noimitate-bonus-inf",
             "crl-trials-located-noentries-relocate-evalsearch-noimitate-bonus-inf",
             "crl-trials-located-noentries-relocate-evalsearch-noimitate-bonus-inf" + NO_SEARCH,
             "crl-trials-located-noentries-relocate-evalsearch-600k-noimitate-bonus-inf",
             "crl-trials-located-noentries-relocate-evalsearch-600k-noimitate-bonus-inf" + NO_SEARCH,
             "ppo-bonus-inf-rewardobs", "recurrent-ppo-trials",
             "retrieve-and-play"]

#: the method's arm and the comparisons the targets name: (arm, condition of the method, condition of the arm, metric)
COMPARISONS: list[tuple[str, str, str, str]] = [
    ("crl-trials-novelty", "with_experience", "with_experience", "cumulative@K"),
    ("crl-trials-successes", "with_experience", "with_experience", "cumulative@K"),
    ("crl-trials-frozen", "with_experience", "with_experience", "cumulative@K"),
    ("crl-trials-random", "with_experience", "with_experience", "after_first_success"),
    ("crl-trials-nodemos", "with_experience", "with_experience", "after_first_success"),
    ("crl-trials-nodemos", "with_demonstration", "with_demonstration", "trial1"),
    ("recurrent-ppo-trials", "with_experience", "without_experience", "cumulative@K"),
    ("recurrent-ppo-trials", "with_experience", "without_experience", "after_first_success"),
    ("ppo", "with_experience", "without_experience", "cumulative@K"),
    ("ppo", "with_demonstration", "without_experience", "trial1"),
    ("ppo-sil", "with_demonstration", "without_experience", "trial1"),
    ("retrieve-and-play", "with_experience", "with_experience", "cumulative@K"),
    ("retrieve-and-play", "with_demonstration", "with_demonstration", "trial1"),
]

#: the novelty arm (``build_trials_method``'s default) against its own ablations and the memory peer
NOVELTY_COMPARISONS: list[tuple[str, str, str, str]] = [
    ("crl-trials-novelty-successes", "with_experience", "with_experience", "cumulative@K"),
    ("crl-trials-novelty-successes", "with_experience", "with_experience", "after_first_success"),
    ("crl-trials-novelty-frozen", "with_experience", "with_experience", "cumulative@K"),
    ("crl-trials-novelty-frozen", "with_experience", "with_experience", "after_first_success"),
    ("recurrent-ppo-trials", "with_experience", "without_experience", "cumulative@K"),
    ("retrieve-and-play", "with_experience", "with_experience", "after_first_success"),
]

#: the defaults with the entry-imitation loss, against the defaults and the lookup
IMITATE_COMPARISONS: list[tuple[str, str, str, str]] = [
    ("crl-trials-novelty-successes", "with_experience", "with_experience", "after_first_success"),
    ("crl-trials-novelty-successes", "with_demonstration", "with_demonstration", "trial1"),
    ("crl-trials-novelty-successes", "with_experience", "with_experience", "cumulative@K"),
    ("retrieve-and-play", "with_experience", "with_experience", "after_first_success"),
    ("retrieve-and-play", "with_demonstration", "with_demonstration", "trial1"),
]

#: entry imitation of the nearest shown success, for continuous states (``crl-trials-imitate-nearest``,
#: Meta-World): against the method without it, and the learning-free player
NEAREST_COMPARISONS: list[tuple[str, str, str, str]] = [
    ("crl-trials", "with_experience", "with_experience", "after_first_success"),
    ("crl-trials", "with_demonstration", "with_demonstration", "trial1"),
    ("crl-trials", "with_experience", "with_experience", "cumulative@K"),
    ("ppo", "with_experience", "without_experience", "cumulative@K"),
    ("retrieve-and-play", "with_demonstration", "with_demonstration", "trial1"),
    ("crl-trials-imitate-nearest-frozen", "with_experience", "with_experience", "after_first_success"),
    ("crl-trials-imitate-nearest-frozen", "with_experience", "with_experience", "cumulative@K"),
    ("crl-trials-imitate-nearest-random", "with_experience", "with_experience", "after_first_success"),
    ("crl-trials-imitate-nearest-strong", "with_demonstration", "with_demonstration", "trial1"),
    ("crl-trials-imitate-nearest-strong", "with_experience", "with_experience", "after_first_success"),
]

#: the strong nearest-success imitation (``crl-trials-imitate-nearest-strong``, Meta-World): against the
#: learning-free player, its random-retrieval ablation and the method without the loss
STRONG_COMPARISONS: list[tuple[str, str, str, str]] = [
    ("retrieve-and-play", "with_demonstration", "with_demonstration", "trial1"),
    ("retrieve-and-play", "with_experience", "with_experience", "after_first_success"),
    ("retrieve-and-play", "with_experience", "with_experience", "cumulative@K"),
    ("crl-trials-imitate-nearest-strong-random", "with_experience", "with_experience", "after_first_success"),
    ("crl-trials-imitate-nearest-strong-random", "with_experience", "with_experience", "cumulative@K"),
    ("crl-trials-imitate-nearest-strong-frozen", "with_experience", "with_experience", "cumulative@K"),
    ("crl-trials-imitate-nearest-strong-frozen", "with_demonstration", "with_demonstration", "trial1"),
    ("crl-trials-imitate-nearest-strong-solo", "with_demonstration", "with_demonstration", "trial1"),
    ("crl-trials-imitate-nearest-strong-solo", "with_experience", "with_experience", "after_first_success"),
    ("crl-trials", "with_demonstration", "with_demonstration", "trial1"),
]

#: the run's best step shown (``crl-trials-best-noimitate-bonus-inf``, Meta-World, issue 37): against the
#: learning-free player, PPO on the hidden goal, the strong imitation arm it replaces, its ablations
BEST_COMPARISONS: list[tuple[str, str, str, str]] = [
    ("retrieve-and-play", "with_demonstration", "with_demonstration", "trial1"),
    ("retrieve-and-play", "with_experience", "with_experience", "cumulative@K"),
    ("ppo", "with_experience", "without_experience", "cumulative@K"),
    ("crl-trials-imitate-nearest-strong-bonus-inf", "with_demonstration", "with_demonstration", "trial1"),
    ("crl-trials-imitate-nearest-strong-bonus-inf", "with_experience", "with_experience", "cumulative@K"),
    ("crl-trials-best-bonus-inf", "with_demonstration", "with_demonstration", "trial1"),
    ("crl-trials-best-noimitate-random-bonus-inf", "with_demonstration", "with_demonstration", "trial1"),
    ("crl-trials-best-noimitate-random-bonus-inf", "with_experience", "with_experience", "cumulative@K"),
    ("crl-trials-best-noimitate-frozen-bonus-inf", "with_demonstration", "with_demonstration", "trial1"),
    ("crl-trials-best-noimitate-frozen-bonus-inf", "with_experience", "with_experience", "cumulative@K"),
    ("crl-trials-best-noimitate-frozen-bonus-inf", "with_experience", "with_experience", "after_first_success"),
]

#: the best step marked by the state its reward came in (``run_best="reached"``) against the state its
#: action was taken from (``"taken"``, the arm above): following a success, and a demonstration over the trials
REACHED_COMPARISONS: list[tuple[str, str, str, str]] = [
    ("crl-trials-best-noimitate-bonus-inf", "with_experience", "with_experience", "after_first_success"),
    ("crl-trials-best-noimitate-bonus-inf", "with_experience", "with_experience", "cumulative@K"),
    ("crl-trials-best-noimitate-bonus-inf", "with_demonstration", "with_demonstration", "trial1"),
    ("crl-trials-best-noimitate-bonus-inf", "with_demonstration", "with_demonstration", "mean"),
    ("crl-trials-best-noimitate-bonus-inf", "with_demonstration", "with_demonstration", "after_first_success"),
]

#: the learned goal locator's guess shown until a success (``run_best="located"``) against the same marking
#: without it (``"reached"``: a failed trial's best-reward state), against the locator that learned only from
#: its own run's success (``-runlabels``, measured at commit adb34ba), and against PPO and RecurrentPPO
LOCATED_COMPARISONS: list[tuple[str, str, str, str]] = [
    ("crl-trials-located-runlabels-noimitate-bonus-inf", "with_experience", "with_experience", "cumulative@2"),
    ("crl-trials-located-runlabels-noimitate-bonus-inf", "with_experience", "with_experience", "cumulative@K"),
    ("crl-trials-reached-noimitate-bonus-inf", "with_experience", "with_experience", "cumulative@2"),
    ("crl-trials-reached-noimitate-bonus-inf", "with_experience", "with_experience", "cumulative@K"),
    ("crl-trials-reached-noimitate-bonus-inf", "with_experience", "with_experience", "after_first_success"),
    ("crl-trials-reached-noimitate-bonus-inf", "with_demonstration", "with_demonstration", "trial1"),
    ("ppo", "with_experience", "without_experience", "cumulative@K"),
    ("recurrent-ppo-trials", "with_experience", "without_experience", "cumulative@K"),
    # its ablations: the entries channel blank (the best step alone), the extractor frozen, random retrieval
    ("crl-trials-located-noentries-noimitate-bonus-inf", "with_experience", "with_experience", "cumulative@2"),
    ("crl-trials-located-noentries-noimitate-bonus-inf", "with_experience", "with_experience", "cumulative@K"),
    ("crl-trials-located-noentries-noimitate-bonus-inf", "with_experience", "with_experience", "after_first_success"),
    ("crl-trials-located-noentries-noimitate-bonus-inf", "with_demonstration", "with_demonstration",
     "after_first_success"),
    ("crl-trials-located-noentries-noimitate-bonus-inf", "with_demonstration", "with_demonstration", "trial1"),
    ("crl-trials-located-noimitate-frozen-bonus-inf", "with_experience", "with_experience", "cumulative@K"),
    ("crl-trials-located-noimitate-frozen-bonus-inf", "with_experience", "with_experience", "after_first_success"),
    ("crl-trials-located-noimitate-random-bonus-inf", "with_experience", "with_experience", "cumulative@K"),
    ("crl-trials-located-noimitate-random-bonus-inf", "with_experience", "with_experience", "after_first_success"),
    # the locator labelled by the mean of an instance's success ends rather than the newest
    ("crl-trials-located-meanlabels-noimitate-bonus-inf", "with_experience", "with_experience", "cumulative@2"),
    ("crl-trials-located-meanlabels-noimitate-bonus-inf", "with_experience", "with_experience", "cumulative@K"),
    # the last two rewards observed (ML1Trials(reward_observed=True)), and PPO given them alone
    ("crl-trials-located-rewardobs-noimitate-bonus-inf", "with_experience", "with_experience", "cumulative@2"),
    ("crl-trials-located-rewardobs-noimitate-bonus-inf", "with_experience", "with_experience", "cumulative@K"),
    ("crl-trials-located-rewardobs-noimitate-bonus-inf", "with_experience", "with_experience", "after_first_success"),
    ("ppo-bonus-inf-rewardobs", "with_experience", "without_experience", "cumulative@K"),
]

#: the located arm without the run's entries shown (``show_entries=False``, the ML1 reach configuration) against
#: its variants, its random-retrieval ablation and the peers
NOENTRIES_COMPARISONS: list[tuple[str, str, str, str]] = [
    ("crl-trials-located-noentries-rewardobs-noimitate-bonus-inf", "with_experience", "with_experience",
     "cumulative@2"),
    ("crl-trials-located-noentries-rewardobs-noimitate-bonus-inf", "with_experience", "with_experience",
     "after_first_success"),
    ("crl-trials-located-noentries-meanlabels-noimitate-bonus-inf", "with_experience", "with_experience",
     "cumulative@2"),
    ("crl-trials-located-noentries-random-noimitate-bonus-inf", "with_experience", "with_experience", "cumulative@K"),
    ("crl-trials-located-noentries-random-noimitate-bonus-inf", "with_demonstration", "with_demonstration", "trial1"),
    ("retrieve-and-play", "with_demonstration", "with_demonstration", "trial1"),
    ("ppo-bonus-inf", "with_experience", "without_experience", "cumulative@K"),
    ("ppo", "with_experience", "without_experience", "cumulative@K"),
    ("recurrent-ppo-trials", "with_experience", "without_experience", "cumulative@K"),
]

#: the no-entries arm guessing again within a trial (``TrialMemory(relocate_every=10)``) against the same arm
#: guessing at a trial's reset, and the peers: does a trial's own rewards place the goal while it goes on?
RELOCATE_COMPARISONS: list[tuple[str, str, str, str]] = [
    ("crl-trials-located-noentries-noimitate-bonus-inf", "with_experience", "with_experience", "trial1"),
    ("crl-trials-located-noentries-noimitate-bonus-inf", "with_experience", "with_experience", "cumulative@2"),
    ("crl-trials-located-noentries-noimitate-bonus-inf", "with_experience", "with_experience", "cumulative@K"),
    ("crl-trials-located-noentries-noimitate-bonus-inf", "with_experience", "with_experience", "after_first_success"),
    ("crl-trials-located-noentries-noimitate-bonus-inf", "with_demonstration", "with_demonstration", "trial1"),
    ("ppo-bonus-inf", "with_experience", "without_experience", "cumulative@2"),
    ("recurrent-ppo-trials", "with_experience", "without_experience", "cumulative@2"),
]

#: the relocating arm reading all of a run's failed trials together (``TrialMemory(locate_from="all")``) against
#: the same arm reading the best failed trial alone, and the peers: does a run whose first trial failed place the
#: goal from its trials together?
ALL_TRIALS_COMPARISONS: list[tuple[str, str, str, str]] = [
    ("crl-trials-located-noentries-relocate-noimitate-bonus-inf", "with_experience", "with_experience", "trial1"),
    ("crl-trials-located-noentries-relocate-noimitate-bonus-inf", "with_experience", "with_experience",
     "cumulative@2"),
    ("crl-trials-located-noentries-relocate-noimitate-bonus-inf", "with_experience", "with_experience",
     "cumulative@K"),
    ("crl-trials-located-noentries-relocate-noimitate-bonus-inf", "with_experience", "with_experience",
     "after_first_success"),
    ("crl-trials-located-noentries-relocate-noimitate-bonus-inf", "with_demonstration", "with_demonstration",
     "trial1"),
    ("crl-trials-located-noentries-noimitate-bonus-inf", "with_experience", "with_experience", "cumulative@2"),
    ("ppo-bonus-inf", "with_experience", "without_experience", "cumulative@2"),
    ("recurrent-ppo-trials", "with_experience", "without_experience", "cumulative@2"),
]

#: the relocating arm searching around its guess where a trial stalls (``TrialMemory(search=1.0)``) against the
#: same arm without the search: does a first trial that failed then place the goal? (the same rows as above)
SEARCH_COMPARISONS: list[tuple[str, str, str, str]] = ALL_TRIALS_COMPARISONS



#: push at 1M marked by where the object ended: against the whole state's mark at the same budget, the
#: learning-free peer on a demonstration, memoryless PPO and the goal shown (issue 37's push target)
OBJBEST_COMPARISONS: list[tuple[str, str, str, str]] = [
    ("crl-trials-best-noimitate-bonus-inf-1m", "with_demonstration", "with_demonstration", "trial1"),
    ("crl-trials-best-noimitate-bonus-inf-1m", "with_experience", "with_experience", "after_first_success"),
    ("retrieve-and-play", "with_demonstration", "with_demonstration", "trial1"),
    ("ppo-bonus-inf-1m", "with_demonstration", "without_experience", "trial1"),
    ("ppo-bonus-inf-1m", "with_experience", "without_experience", "cumulative@K"),
    ("ppo-bonus-inf-1m", "with_experience", "without_experience", "after_first_success"),
    ("ppo-visible-solo-bonus-inf-1m", "with_demonstration", "without_experience", "trial1"),
]

#: push and pick-place at 1M with a demonstration in every guided training run: against the same mark met in a quarter
#: of them, the learning-free peer on a demonstration, memoryless PPO and the goal shown
ALLDEMOS_COMPARISONS: list[tuple[str, str, str, str]] = [
    ("crl-trials-objbest-noentries-noimitate-bonus-inf-1m", "with_demonstration", "with_demonstration", "trial1"),
    ("crl-trials-objbest-noentries-noimitate-bonus-inf-1m", "with_experience", "with_experience", "after_first_success"),
    ("crl-trials-objbest-noentries-noimitate-bonus-inf-1m", "without_experience", "without_experience", "trial1"),
    ("retrieve-and-play", "with_demonstration", "with_demonstration", "trial1"),
    ("ppo-bonus-inf-1m", "with_demonstration", "without_experience", "trial1"),
    ("ppo-visible-solo-bonus-inf-1m", "with_demonstration", "without_experience", "trial1"),
]

#: the arms whose demonstrations mark the goal deeper than a success's edge (settled past it, or on the goal itself):
#: against the same arm with the demonstrations' own ends, memoryless PPO and PPO with the goal visible
ALLDEMOS = "crl-trials-objbest-alldemos-noentries-noimitate-bonus-inf-1m"
MARKED_COMPARISONS: list[tuple[str, str, str, str]] = [
    (ALLDEMOS, "with_demonstration", "with_demonstration", "trial1"),
    (ALLDEMOS, "with_experience", "with_experience", "after_first_success"),
    ("ppo-bonus-inf-1m", "with_demonstration", "without_experience", "trial1"),
    ("ppo-visible-solo-bonus-inf-1m", "with_demonstration", "without_experience", "trial1"),
]

#: the settled arm's weights with its own successes marked ahead (``eval_ahead``) against the same weights with
#: them marked where they came in (paired runs: the seeds that have both)
SETTLED = "crl-trials-objbest-settled-alldemos-noentries-noimitate-bonus-inf-1m"
AHEAD_COMPARISONS: list[tuple[str, str, str, str]] = [
    (SETTLED, "with_experience", "with_experience", name) for name in ("after_first_success", "mean", "cumulative@K")]

#: ML10's arm with REGENT's mix, sampling and on its mean: against the same arm without the mix and the
#: learning-free peer (which acts on the nearest shown success's action, deterministically)
MIX = "crl-trials-imitate-nearest-strong-mix-bonus-inf"
MIX_COMPARISONS: list[tuple[str, str, str, str]] = [
    (other, "with_demonstration", "with_demonstration", name)
    for other in ("crl-trials-imitate-nearest-strong-bonus-inf", "retrieve-and-play")
    for name in ("trial1", "cumulative@K")]


def _against_itself(arm: str) -> list[tuple[str, str, str, str]]:
    """An ``eval_search`` arm against the same weights evaluated without the search (paired runs)."""
    return [(arm + NO_SEARCH, c, c, name)
            for c, name in (("with_experience", "trial1"), ("with_experience", "cumulative@2"),
                            ("with_experience", "cumulative@K"), ("with_experience", "after_first_success"),
                            ("with_demonstration", "trial1"))]


#: the relocating arm evaluated with the search against the same weights evaluated without it (paired runs)
EVALSEARCH_COMPARISONS = _against_itself("crl-trials-located-noentries-relocate-evalsearch-noimitate-bonus-inf")

#: the same at 600k steps: against itself without the search, the 300k arm, RecurrentPPO at the same budget
#: and the peers at 300k
EVALSEARCH_600K_COMPARISONS: list[tuple[str, str, str, str]] = [
    *_against_itself("crl-trials-located-noentries-relocate-evalsearch-600k-noimitate-bonus-inf"),
    ("crl-trials-located-noentries-relocate-evalsearch-noimitate-bonus-inf", "with_experience", "with_experience",
     "cumulative@2"),
    ("crl-trials-located-noentries-relocate-evalsearch-noimitate-bonus-inf", "with_experience", "with_experience",
     "after_first_success"),
    ("retrieve-and-play", "with_demonstration", "with_demonstration", "trial1"),
    ("recurrent-ppo-trials-600k", "with_experience", "without_experience", "cumulative@2"),
    ("ppo-bonus-inf-600k", "with_experience", "without_experience", "cumulative@2"),
    ("recurrent-ppo-trials", "with_experience", "without_experience", "cumulative@2"),
    ("ppo-bonus-inf", "with_experience", "without_experience", "cumulative@2"),
]

#: the located arm with twice the budget (600k steps) against itself at 300k and the peers (at 300k, and
#: PPO and RecurrentPPO at 600k)
BUDGET_COMPARISONS: list[tuple[str, str, str, str]] = [
    ("crl-trials-located-noimitate-bonus-inf", "with_experience", "with_experience", "cumulative@2"),
    ("crl-trials-located-noimitate-bonus-inf", "with_experience", "with_experience", "cumulative@K"),
    ("crl-trials-located-noimitate-bonus-inf", "with_experience", "with_experience", "after_first_success"),
    ("crl-trials-located-noimitate-bonus-inf", "with_demonstration", "with_demonstration", "trial1"),
    ("crl-trials-located-noimitate-bonus-inf", "with_demonstration", "with_demonstration", "after_first_success"),
    ("retrieve-and-play", "with_demonstration", "with_demonstration", "trial1"),
    ("ppo-bonus-inf", "with_experience", "without_experience", "cumulative@K"),
    ("ppo-bonus-inf-600k", "with_experience", "without_experience", "cumulative@K"),
    ("ppo", "with_experience", "without_experience", "cumulative@K"),
    ("recurrent-ppo-trials", "with_experience", "without_experience", "cumulative@K"),
    ("recurrent-ppo-trials-600k", "with_experience", "without_experience", "cumulative@K"),
]

#: the located arm keyed by where Meta-World's hand and object are (``MetaWorldKeyEncoder``) against the same
#: arm keyed by the whole observation, the marking without a locator, and the peers
HANDKEYS_COMPARISONS: list[tuple[str, str, str, str]] = [
    ("crl-trials-located-noimitate-bonus-inf", "with_experience", "with_experience", "cumulative@2"),
    ("crl-trials-located-noimitate-bonus-inf", "with_experience", "with_experience", "cumulative@K"),
    ("crl-trials-located-noimitate-bonus-inf", "with_experience", "with_experience", "after_first_success"),
    ("crl-trials-located-noimitate-bonus-inf", "with_demonstration", "with_demonstration", "trial1"),
    ("crl-trials-reached-noimitate-bonus-inf", "with_experience", "with_experience", "cumulative@2"),
    ("crl-trials-located-handkeys-firstsuccess-noimitate-bonus-inf", "with_demonstration", "with_demonstration",
     "after_first_success"),
    ("retrieve-and-play", "with_demonstration", "with_demonstration", "trial1"),
    ("ppo", "with_experience", "without_experience", "cumulative@K"),
    ("recurrent-ppo-trials", "with_experience", "without_experience", "cumulative@K"),
    # diagnostic: the locator labelled by the training goals themselves (privileged; held-out goals untouched)
    ("crl-trials-located-handkeys-exactlabels-noimitate-bonus-inf", "with_experience", "with_experience",
     "cumulative@2"),
    ("crl-trials-located-handkeys-exactlabels-noimitate-bonus-inf", "with_experience", "with_experience",
     "cumulative@K"),
]

#: the trial index shown (``crl-trials-default-index``): against the defaults without it, and
#: against its own weights shown nothing of the run but the index
INDEX_COMPARISONS: list[tuple[str, str, str, str]] = [
    ("crl-trials-default-imitate", "with_experience", "with_experience", "cumulative@K"),
    ("crl-trials-default-imitate", "with_experience", "with_experience", "after_first_success"),
    ("crl-trials-default-index", "with_experience", "without_experience", "cumulative@K"),
    ("recurrent-ppo-trials", "with_experience", "without_experience", "cumulative@K"),
]

#: more training mazes (``crl-trials-1000``): against the method on 200 and the peers, one demonstration
MAZES_COMPARISONS: list[tuple[str, str, str, str]] = [
    ("crl-trials", "with_demonstration", "with_demonstration", "trial1"),
    ("crl-trials-default-imitate", "with_demonstration", "with_demonstration", "trial1"),
    ("retrieve-and-play", "with_demonstration", "with_demonstration", "trial1"),
    ("ppo", "with_demonstration", "without_experience", "trial1"),
    ("ppo-sil", "with_demonstration", "without_experience", "trial1"),
]

CONDITIONS = ("with_experience", "without_experience", "with_demonstration")


def load(family: str, root: Path = RESULTS, folder: Path | None = None) -> dict[str, list[dict[str, Any]]]:
    """``{arm: [result, ...]}`` of one family, sorted by seed: from ``root / <its suite>``, or from
    ``folder`` (what ``benchmarks.suites.trials --out`` wrote).

    Raises:
        ValueError: a file that is not a result file (damaged, or another JSON), named.
    """
    out: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for path in sorted((folder or root / SUITES[family]).glob("*/seed*.json")):
        res = read_result(path)
        out[res["arm"]].append(res)
        if "heldout_without_search" in res:  # an eval_search arm's weights evaluated without the search too
            out[res["arm"] + NO_SEARCH].append({**res, "arm": res["arm"] + NO_SEARCH,
                                                "heldout": res["heldout_without_search"]})
        if "heldout_deterministic" in res:  # an eval_deterministic arm's weights acting on their mean too
            out[res["arm"] + DETERMINISTIC].append({**res, "arm": res["arm"] + DETERMINISTIC,
                                                    "heldout": res["heldout_deterministic"]})
        if "heldout_ahead" in res:  # an eval_ahead arm's weights, the run's own successes marked further on
            settings = {k: v for k, v in res["heldout"].items() if k not in CONDITIONS}  # instances, repeats
            out[res["arm"] + AHEAD].append({**res, "arm": res["arm"] + AHEAD, "heldout": {
                **settings, "with_experience": res["heldout_ahead"]["with_experience"]}})
    for runs in out.values():
        runs.sort(key=lambda r: r["seed"])
    return dict(sorted(out.items(), key=lambda kv: ARM_ORDER.index(kv[0]) if kv[0] in ARM_ORDER else 99))


def metric(result: dict[str, Any], condition: str, name: str) -> float:
    """One seed's figure: ``trial1``, ``cumulative@K`` (or by trial ``n``, ``cumulative@n``), ``after_first_success``
    or ``mean`` (all trials); nan if absent."""
    m = result.get("heldout", {}).get(condition)
    if not m:
        return math.nan
    if name == "trial1":
        return float(m["success_by_trial"][0])
    if name == "cumulative@K":
        return float(m["cumulative_by_trial"][-1])
    if name.startswith("cumulative@"):  # by trial n
        return float(m["cumulative_by_trial"][int(name.split("@")[1]) - 1])
    if name == "mean":
        return float(np.mean(m["success_by_trial"]))
    value = m.get(name)
    return math.nan if value is None else float(value)


def cell(values: list[float]) -> str:
    v = [x for x in values if math.isfinite(x)]
    if not v:
        return "n/a"
    if len(v) == 1:
        return f"{v[0]:.2f} (1 seed)"
    lo, hi = bootstrap_ci(v)
    return f"{np.mean(v):.2f} [{lo:.2f}, {hi:.2f}]"


def by_trial_cell(runs: list[dict[str, Any]], condition: str) -> str:
    rows = [r["heldout"][condition]["success_by_trial"] for r in runs if r.get("heldout", {}).get(condition)]
    if not rows:
        return "n/a"
    return " / ".join(f"{x:.2f}" for x in np.mean(rows, axis=0))


def table(arms: dict[str, list[dict[str, Any]]]) -> list[str]:
    lines = ["| arm | seeds | steps | condition | success by trial (mean over seeds) | trial 1 | cumulative by trial K "
             "| after the first success |", "| --- | --- | --- | --- | --- | --- | --- | --- |"]
    for arm, runs in arms.items():
        for cond in CONDITIONS:
            if not any(r.get("heldout", {}).get(cond) for r in runs):
                continue
            lines.append(f"| {arm} | {len(runs)} ({', '.join(str(r['seed']) for r in runs)}) | "
                         f"{runs[0]['steps'] // 1000 if runs[0].get('train') else 0}k | {cond.replace('_', ' ')} | "
                         f"{by_trial_cell(runs, cond)} | {cell([metric(r, cond, 'trial1') for r in runs])} | "
                         f"{cell([metric(r, cond, 'cumulative@K') for r in runs])} | "
                         f"{cell([metric(r, cond, 'after_first_success') for r in runs])} |")
    return lines


def comparison_table(arms: dict[str, list[dict[str, Any]]], method: str = "crl-trials",
                     comparisons: list[tuple[str, str, str, str]] | None = None) -> list[str]:
    """``method`` minus each arm of ``comparisons`` (default :data:`COMPARISONS`) that has results."""
    if method not in arms:
        return []
    lines = [f"| {method} minus | metric | difference [95 % CI] | apart |", "| --- | --- | --- | --- |"]
    for other, cond_m, cond_o, name in COMPARISONS if comparisons is None else comparisons:
        if other not in arms:
            continue
        a = [metric(r, cond_m, name) for r in arms[method]]
        b = [metric(r, cond_o, name) for r in arms[other]]
        d, lo, hi = difference_ci(a, b)
        if not math.isfinite(d):
            continue
        apart = "above" if lo > 0 else "below" if hi < 0 else "overlap"
        lines.append(f"| {other} ({cond_o.replace('_', ' ')}) | {name} ({cond_m.replace('_', ' ')}) | "
                     f"{d:+.2f} [{lo:+.2f}, {hi:+.2f}] | {apart} |")
    return lines


def trials_section(root: Path = RESULTS, families: tuple[str, ...] = ("darkroom", "keydoor", "maze", "ml1-reach",
                                                                    "ml1-reach-moves", "ml1-push-moves",
                                                                    "ml1-pick-place-moves", "ml10-moves"),
                   folder: Path | None = None) -> list[str]:
    """The markdown of every trials family with results (empty when none); ``folder``: one family's
    own folder (see :func:`load`)."""
    out: list[str] = []
    for family in families:
        arms = load(family, root, folder)
        if not arms:
            continue
        first = next(iter(arms.values()))[0]
        others = ", ".join(f"`{arm}` on {runs[0]['train_instances']}" for arm, runs in arms.items()
                           if runs[0]["train_instances"] != first["train_instances"])
        trained = f"{first['train_instances']}" + (f" (but {others})" if others else "")
        out += [f"### {SUITES[family]}: {first['task']}", "",
                f"{first['trials']} trials per run; trained on {trained} instances, evaluated on "
                f"{len(first['heldout_instances'])} held-out instances with frozen weights (stochastic policy). "
                f"Files: `benchmarks/results/{SUITES[family]}/`; regenerate with `python -m benchmarks.suites.trials "
                f"--family {family} --arms ARM --seeds ...`.", ""]
        out += table(arms) + [""]
        for method, comparisons in (("crl-trials", COMPARISONS), ("crl-trials-novelty", NOVELTY_COMPARISONS),
                                    ("crl-trials-default-imitate", IMITATE_COMPARISONS),
                                    ("crl-trials-default-index", INDEX_COMPARISONS),
                                    ("crl-trials-1000", MAZES_COMPARISONS),
                                    ("crl-trials-imitate-nearest", NEAREST_COMPARISONS),
                                    ("crl-trials-imitate-nearest-strong", STRONG_COMPARISONS),
                                    ("crl-trials-best-noimitate-bonus-inf", BEST_COMPARISONS),
                                    ("crl-trials-objbest-noentries-noimitate-bonus-inf-1m", OBJBEST_COMPARISONS),
                                    (ALLDEMOS, ALLDEMOS_COMPARISONS),
                                    (SETTLED, MARKED_COMPARISONS), (SETTLED + AHEAD, AHEAD_COMPARISONS),
                                    ("crl-trials-objbest-goalmarked-alldemos-noentries-noimitate-bonus-inf-1m",
                                     MARKED_COMPARISONS),
                                    (MIX, MIX_COMPARISONS), (MIX + DETERMINISTIC, MIX_COMPARISONS),
                                    ("crl-trials-reached-noimitate-bonus-inf", REACHED_COMPARISONS),
                                    ("crl-trials-located-noimitate-bonus-inf", LOCATED_COMPARISONS),
                                    ("crl-trials-located-noentries-noimitate-bonus-inf", NOENTRIES_COMPARISONS),
                                    ("crl-trials-located-noentries-relocate-noimitate-bonus-inf",
                                     RELOCATE_COMPARISONS),
                                    ("crl-trials-located-noentries-relocate-all-noimitate-bonus-inf",
                                     ALL_TRIALS_COMPARISONS),
                                    ("crl-trials-located-noentries-relocate-search-noimitate-bonus-inf",
                                     SEARCH_COMPARISONS),
                                    ("crl-trials-located-noentries-relocate-evalsearch-noimitate-bonus-inf",
                                     EVALSEARCH_COMPARISONS),
                                    ("crl-trials-located-noentries-relocate-evalsearch-600k-noimitate-bonus-inf",
                                     EVALSEARCH_600K_COMPARISONS),
                                    ("crl-trials-located-600k-noimitate-bonus-inf", BUDGET_COMPARISONS),
                                    ("crl-trials-located-handkeys-noimitate-bonus-inf", HANDKEYS_COMPARISONS)):
            # (an eval_ahead row against its own arm: only paired, on the seeds that have both)
            comp = [] if method.endswith(AHEAD) else comparison_table(arms, method, comparisons)
            if len(comp) > 2:
                out += comp + [""]
            paired = paired_table(arms, method, [c for c in comparisons  # the rows of the same weights
                                                 if c[0] == method + NO_SEARCH or method == c[0] + AHEAD])
            if paired:
                out += paired + [""]
    return out


def headline(root: Path = RESULTS, family: str = "darkroom") -> list[str]:
    """The README's table of one trials family: per arm, held-out success on the first trial
    without experience, after the first success with experience, cumulative by trial K, and on
    the first trial with one demonstration (means over seeds, 95 % CIs)."""
    arms = load(family, root)
    if not arms:
        return ["(no trials results yet)"]
    lines = ["| arm | seeds | trial 1, no experience | after the first success | cumulative by trial 4 | "
             "trial 1, one demonstration |", "| --- | --- | --- | --- | --- | --- |"]
    trained = [int(r.get("steps") or 0) for runs in arms.values() for r in runs if r.get("steps")]
    usual = max(set(trained), key=trained.count) if trained else 0  # the family's usual budget
    for arm, runs in arms.items():
        mem = "with_experience" if any(r["heldout"].get("with_experience") for r in runs) else "without_experience"
        steps = {int(r.get("steps") or 0) for r in runs} - {0, usual}
        seeds = f"{len(runs)}" + (f" ({'/'.join(f'{s // 1000}k' for s in sorted(steps))} steps)" if steps else "")
        lines.append(f"| {arm} | {seeds} | {cell([metric(r, 'without_experience', 'trial1') for r in runs])} | "
                     f"{cell([metric(r, mem, 'after_first_success') for r in runs])} | "
                     f"{cell([metric(r, mem, 'cumulative@K') for r in runs])} | "
                     f"{cell([metric(r, 'with_demonstration', 'trial1') for r in runs])} |")
    return lines + ["", "Arms shown nothing (`ppo`, `ppo-sil`, `recurrent-ppo-trials`) report their runs as they are; "
                    "the recurrent policy carries its LSTM state across a run's trials."]


def replace_block(text: str, start: str, end: str, block: list[str]) -> str:
    """``text`` with the lines between the markers ``start`` and ``end`` replaced (unchanged without them)."""
    if start not in text or end not in text:
        return text
    before, rest = text.split(start, 1)
    _, after = rest.split(end, 1)
    return before + start + "\n" + "\n".join(block) + "\n" + end + after


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description="Print the trials suites' tables (markdown).")
    p.add_argument("--family", nargs="+", default=["darkroom"], choices=sorted(SUITES))
    p.add_argument("--results", type=Path, default=RESULTS, help="the results root (a folder per suite)")
    p.add_argument("--folder", type=Path, default=None,
                   help="one family's own folder (what `benchmarks.suites.trials --out DIR` wrote); one --family")
    args = p.parse_args(argv)
    if args.folder is not None and len(args.family) != 1:
        p.error("--folder holds one family's results: name that one --family")
    try:
        lines = trials_section(args.results, tuple(args.family), folder=args.folder)
    except ValueError as exc:
        p.error(str(exc))
    print("\n".join(lines) or "no trials results")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
