"""The trials suites: experience the state lacks, on held-out instances with frozen weights.

``python -m benchmarks.suites.trials --family darkroom --arms crl-trials ppo --seeds 0 1 2 3 4``
trains each (arm, seed) on the family's training instances, then evaluates the frozen
policy on its held-out instances, ``K`` trials per run, and writes
``benchmarks/results/<suite>/<arm>/seed<N>.json`` (``trials-darkroom``, ``trials-keydoor``, ``incontext-maze``) with, beside the training curve,
``heldout``: ``{"instances", "trials", "with_experience", "without_experience",
"with_demonstration"}`` (each ``{"success_by_trial", "cumulative_by_trial",
"after_first_success", "runs"}``; what an arm cannot use is left out) and
``demonstrations_used``. A result file holds the settings it was made with: a rerun with the
same settings skips it (and says so), with other settings stops before training unless
``--force``.

Families: ``darkroom``, the hidden-goal room
(:class:`integrations.minihack.hidden_goal.HiddenGoalRoom`; 10x10, position-only
observation, a 25-step cap, 79 training goals and 20 held-out goals); ``keydoor``, the
hidden key-and-door room (:class:`integrations.minihack.hidden_key_door.HiddenKeyDoorRoom`;
7x7, position and a has-key bit, a 30-step cap where a fixed sweep finds 0.29 of the pairs,
80 training pairs and 20 held-out pairs); the Meta-World families with the goal hidden,
``ml1-reach``, ``ml1-reach-moves``, ``ml1-push-moves``, ``ml1-pick-place-moves``
(:mod:`benchmarks.suites.trials_ml1`) and ``ml10-moves``, held-out tasks
(:mod:`benchmarks.suites.trials_ml10`).

Arms (one network for all but the recurrent peer: :class:`~integrations.sb3.trials_features.TrialsFeaturesExtractor`
and a [64, 64] MLP; the same PPO hyperparameters, :data:`PPO_KWARGS`):
    ``crl-trials``: the method (:data:`METHOD`): guided trials read the nearest steps of
    their run's earlier trials, failures written, the extractor trained by paired credit,
    self-imitation of successful trials as they were seen (entries included), and a
    quarter of the guided training runs start with a demonstration of their training
    instance in their scope.
    Ablations, each the method with one change: ``crl-trials-successes`` (failed trials not
    written), ``crl-trials-frozen`` (the extractor never trained), ``crl-trials-random`` (a
    guided trial reads a finished run of another instance), ``crl-trials-nodemos`` (no
    demonstration in training), ``crl-trials-nosil`` (no self-imitation).
    ``crl-trials-novelty``: the method with a training-time exploration bonus (0.02) for each
    guided step onto an observation new to its run, while the run has neither a success nor a
    demonstration, so that reading the failed trials pays: does the memory of failures teach
    the policy to go elsewhere (cumulative success)? ``crl-trials-novelty-always``: the bonus
    in every guided training run, also after a success. ``crl-trials-novelty-successes`` and
    ``crl-trials-novelty-frozen``: the novelty arm without failed trials written, and with its
    extractor never trained (which part of its gain do the failures and the extractor carry?).
    ``crl-trials-novelty-paths``: the novelty arm (failures written) reading each earlier trial's
    path too (6 steps spread along it, besides its 2 nearest steps; all 3 earlier trials in 24
    slots): can a run's failed trials steer it somewhere new once the policy sees where they went?
    ``crl-trials-default-imitate``: the default method (the novelty bonus, failures not written)
    with the entry-imitation loss as well: does following a shown success need a loss on it?
    ``crl-trials-default-index``: that arm with the trial's index in its run shown to the
    policy (``TrialMemory(trial_index=True)``; guided and free trials alike): does a plan across
    trials need how many trials came before, rather than what they found?
    ``crl-trials-1000`` (mazes only): the method trained on 1,000 mazes instead of 200, the
    held-out mazes the same: does reading a new maze's demonstration need more training mazes?
    ``crl-trials-imitate``: no self-imitation and no demonstrations, but an imitation loss on
    the action of the shown successful step under the agent (:class:`~integrations.sb3.trials_imitation.EntryImitationCallback`).
    Peers: ``ppo`` (the same network shown nothing: PPO, and the no-retrieval ablation);
    ``ppo-sil`` (the same with self-imitation from a plain buffer of its successes);
    ``recurrent-ppo-trials`` (sb3-contrib's RecurrentPPO, its LSTM state carried across the
    ``K`` trials of a run: RL^2, no bank); ``retrieve-and-play`` (no learning: the nearest
    shown success entry's action, else a random one).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from collections.abc import Callable
from concurrent.futures import as_completed
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import attrs
import numpy as np

from benchmarks.harness.cli_checks import bad_seeds, check_output_folder
from benchmarks.harness.result_file import read_result, write_result
from benchmarks.harness.workers import Stopped, worker_pool
from benchmarks.reporting.trials_report import SUITES
from benchmarks.suites.trials_ml1 import (
    ml1_pick_place_moves_family,
    ml1_push_moves_family,
    ml1_reach_family,
    ml1_reach_moves_family,
)
from benchmarks.suites.trials_ml10 import ml10_moves_family
from integrations.sb3 import ExperiencePolicy
from integrations.sb3.trials_method import TRIALS_PPO_KWARGS

if TYPE_CHECKING:
    from experience_wrappers.trials import TrialMemory
    from experience_wrappers.trials.goal_locator import GoalLocator

RESULTS = Path(__file__).resolve().parents[1] / "results"

#: the method: guided trials read their run's earlier trials (and a demonstration where one was
#: placed), self-imitation of successful trials as they were seen, a quarter of the guided
#: training runs given a demonstration of their training instance
METHOD: dict[str, Any] = {"kind": "crl", "sil": True, "train_demo_ratio": 0.25}

ARMS: dict[str, dict[str, Any]] = {
    "crl-trials": METHOD,
    "crl-trials-successes": {**METHOD, "write_failures": False},
    "crl-trials-frozen": {**METHOD, "train_extractor": False},
    "crl-trials-random": {**METHOD, "scope": "other"},
    "crl-trials-nodemos": {**METHOD, "train_demo_ratio": 0.0},
    "crl-trials-nosil": {**METHOD, "sil": False},
    "crl-trials-imitate": {"kind": "crl", "imitate": True},
    "crl-trials-novelty": {**METHOD, "novelty_bonus": 0.02},
    "crl-trials-novelty-always": {**METHOD, "novelty_bonus": 0.02, "novelty_until_success": False},
    "crl-trials-novelty-successes": {**METHOD, "novelty_bonus": 0.02, "write_failures": False},
    "crl-trials-novelty-frozen": {**METHOD, "novelty_bonus": 0.02, "train_extractor": False},
    "crl-trials-novelty-paths": {**METHOD, "novelty_bonus": 0.02, "k": 24, "per_trial": 2, "path": 6},
    "crl-trials-default-imitate": {**METHOD, "novelty_bonus": 0.02, "write_failures": False, "imitate": True},
    "crl-trials-default-index": {**METHOD, "novelty_bonus": 0.02, "write_failures": False, "imitate": True,
                                 "trial_index": True},
    "crl-trials-1000": {**METHOD, "train_instances": 1000},
    # continuous states (Meta-World) never repeat exactly: imitate the nearest shown success, as retrieve-and-play plays it
    "crl-trials-imitate-nearest": {**METHOD, "imitate": {"max_distance": None}},
    "crl-trials-imitate-nearest-frozen": {**METHOD, "imitate": {"max_distance": None}, "train_extractor": False},
    "crl-trials-imitate-nearest-random": {**METHOD, "imitate": {"max_distance": None}, "scope": "other"},
    "crl-trials-imitate-nearest-strong": {**METHOD, "imitate": {"max_distance": None, "n_batches": 16}},
    # its ablation: the entries shown come from another instance's run (random retrieval)
    "crl-trials-imitate-nearest-strong-random": {**METHOD, "imitate": {"max_distance": None, "n_batches": 16},
                                                 "scope": "other"},
    # its ablation: the extractor never trained (does summing a trial's rewards into entries earn its place?)
    "crl-trials-imitate-nearest-strong-frozen": {**METHOD, "imitate": {"max_distance": None, "n_batches": 16},
                                                 "train_extractor": False},
    # and reading each earlier trial's (and the demonstration's) first and last steps too: where it
    # went, whatever the agent's state; on ML1 the last step of a success is the hidden goal
    "crl-trials-imitate-nearest-strong-path": {**METHOD, "imitate": {"max_distance": None, "n_batches": 16},
                                               "path": 2},
    # every env on a goal of its own (groups of 1, no free members, so no paired credit and the
    # extractor frozen): does a rollout of 8 goals instead of 2 lift the method as it lifted PPO?
    "crl-trials-imitate-nearest-strong-solo": {**METHOD, "imitate": {"max_distance": None, "n_batches": 16},
                                               "train_extractor": False, "group_size": 1, "free_members": 0},
    "ppo": {"kind": "crl", "scope": "none"},
    "ppo-sil": {"kind": "crl", "scope": "none", "sil": True},
    "ppo-visible": {"kind": "crl", "scope": "none", "goal": "visible"},
    # the ceiling with every env on its own goal (groups of 1): does replaying one goal per group of 4
    # leave a rollout too few goals? (ppo-visible reached 0.42 in trials, 1.00 in the calibration)
    "ppo-visible-solo": {"kind": "crl", "scope": "none", "goal": "visible", "group_size": 1, "free_members": 0},
    # issue 37's ceiling: ppo-visible-solo with the actor and the critic on features extractors of their own
    # (SB3 shares one by default: the entry reader's hidden-wide ReLU layer over the observation, trained
    # by the value loss as well as the policy's; the calibration's MlpPolicy has no trainable extractor)
    "ppo-visible-solo-unshared": {"kind": "crl", "scope": "none", "goal": "visible", "group_size": 1,
                                  "free_members": 0, "ppo": {"policy_kwargs": {"share_features_extractor": False}}},
    # issue 37's ceiling: ppo-visible-solo with the successful step paying its reward for every step after
    # it (r * gamma / (1 - gamma), the value of staying at the goal that the critic, blind to the time,
    # bootstraps at the cap) instead of for each step left to the cap: with the bonus to the cap, staying
    # just outside the success radius (reward ~0.99 a step, bootstrapped at the cap) is worth more than
    # succeeding
    "ppo-visible-solo-bonus-inf": {"kind": "crl", "scope": "none", "goal": "visible", "group_size": 1,
                                   "free_members": 0, "env_kwargs": {"success_bonus": "infinite"}},
    # and with a budget of 1M: what budget does a learned policy need to learn push (issue 37's push target
    # applies where PPO with the goal visible learns the task)?
    "ppo-visible-solo-bonus-inf-1m": {"kind": "crl", "scope": "none", "goal": "visible", "group_size": 1,
                                      "free_members": 0, "steps": 1_000_000,
                                      "env_kwargs": {"success_bonus": "infinite"}},
    # and with the protocol's groups (4 envs replaying one goal, one of them free): do groups still cap the
    # learner once the bonus is fixed?
    "ppo-visible-bonus-inf": {"kind": "crl", "scope": "none", "goal": "visible",
                              "env_kwargs": {"success_bonus": "infinite"}},
    # the same bonus for the method's best ML1 arm and for PPO on the hidden goal (issue 37)
    "crl-trials-imitate-nearest-strong-bonus-inf": {**METHOD, "imitate": {"max_distance": None, "n_batches": 16},
                                                    "env_kwargs": {"success_bonus": "infinite"}},
    "ppo-bonus-inf": {"kind": "crl", "scope": "none", "env_kwargs": {"success_bonus": "infinite"}},
    # the same at 1M steps, where PPO with the goal visible learns push (0.96 at trial 1, seed 0): the memoryless
    # floor of push at the budget its ceiling needs
    "ppo-bonus-inf-1m": {"kind": "crl", "scope": "none", "steps": 1_000_000,
                         "env_kwargs": {"success_bonus": "infinite"}},
    # issue 37's push ablation, one part at a time from ppo-bonus-inf (groups of replayed goals, nothing
    # shown): self-imitation of successful trials added (does it cost push?), then the method (the run's
    # entries read, a quarter of the guided runs given a demonstration, no marks): which part costs push?
    "ppo-sil-bonus-inf": {"kind": "crl", "scope": "none", "sil": True, "env_kwargs": {"success_bonus": "infinite"}},
    "crl-trials-bonus-inf": {**METHOD, "env_kwargs": {"success_bonus": "infinite"}},
    # issue 37: the run's best step (a success's last step, else the highest reward) shown as an offset from
    # the agent's state in an observation key of its own (RunBest), outside the pooled rows: where a
    # demonstration or a success ended is the hidden goal, and the policy can read it as a visible goal.
    # These arms mark the best step by the state its action was taken from (run_best="taken")
    "crl-trials-best-bonus-inf": {**METHOD, "imitate": {"max_distance": None, "n_batches": 16}, "run_best": "taken",
                                  "env_kwargs": {"success_bonus": "infinite"}},
    # and without entry imitation (which pulls towards the nearest shown success's action, not towards its end)
    "crl-trials-best-noimitate-bonus-inf": {**METHOD, "run_best": "taken", "env_kwargs": {"success_bonus": "infinite"}},
    # and at 1M steps, where PPO with the goal visible learns push (0.96 at trial 1, seed 0): once the policy pushes,
    # does the end of a demonstration or of the run's own success, shown as an offset, carry the hidden goal?
    "crl-trials-best-noimitate-bonus-inf-1m": {**METHOD, "run_best": "taken", "steps": 1_000_000,
                                               "env_kwargs": {"success_bonus": "infinite"}},
    # and marked by where the object is alone (keys "metaworld-object"), where the state's reward was received in
    # (run_best="reached"), the entries channel blank (RunBest alone, reach's configuration): push succeeds when
    # the puck reaches the goal, so a success's or a demonstration's end marks the goal by where the puck ended;
    # the whole state's offset (the arm above) also holds where the hand ended, beside the puck. Does a mark
    # the policy can read as where the puck must go carry the hidden goal once the policy pushes?
    "crl-trials-objbest-noentries-noimitate-bonus-inf-1m": {
        **METHOD, "run_best": "reached", "no_entries": True, "keys": "metaworld-object", "steps": 1_000_000,
        "env_kwargs": {"success_bonus": "infinite"}},
    # and with every guided training run given a demonstration (4x the method's quarter): a demonstration's end
    # marks the goal from the first trial of every guided run, so the policy meets a right mark in every guided
    # trial rather than in a quarter of the first ones. Is a mark not followed because it is met too seldom?
    "crl-trials-objbest-alldemos-noentries-noimitate-bonus-inf-1m": {
        **METHOD, "train_demo_ratio": 1.0, "run_best": "reached", "no_entries": True, "keys": "metaworld-object",
        "steps": 1_000_000, "env_kwargs": {"success_bonus": "infinite"}},
    # and with the demonstrations recorded 20 steps on past their success, kept as the run's mark once it has a
    # success of its own (first_success): benchmarks.studies.mark_offset found every mark a success leaves on the
    # success radius's edge on push and pick-place (0.074 from the goal on pick-place's 0.07), and 0.043 after 20
    # steps more. Is a mark inside the radius followed where one on its edge is not?
    "crl-trials-objbest-settled-alldemos-noentries-noimitate-bonus-inf-1m": {
        **METHOD, "train_demo_ratio": 1.0, "settle_demos": 20, "first_success": True, "run_best": "reached",
        # and (seeds 2 on) the same weights evaluated, paired, with the run's own successes marked 8 steps on along
        # their approach (TrialMemory(success_ahead=8), heldout_ahead): does a deeper own mark get followed?
        "eval_ahead": 8,
        "no_entries": True, "keys": "metaworld-object", "steps": 1_000_000, "env_kwargs": {"success_bonus": "infinite"}},
    # and with the run's own successes shown in training: the arm above gives every guided training run a
    # demonstration, kept as its mark (first_success), so the policy never trained on a mark its own success left,
    # and after a first success on held-out goals it follows one at 0.02. Here half of the guided runs get a
    # demonstration and half read their own trials, whose successes are marked 8 steps on along their approach
    # (success_ahead=8, in training and evaluation alike). Is an own success's mark followed once it is trained on?
    "crl-trials-objbest-settled-ahead-halfdemos-noentries-noimitate-bonus-inf-1m": {
        **METHOD, "train_demo_ratio": 0.5, "settle_demos": 20, "first_success": True, "run_best": "reached",
        "success_ahead": 8, "no_entries": True, "keys": "metaworld-object", "steps": 1_000_000,
        "env_kwargs": {"success_bonus": "infinite"}},
    # and (a diagnosis, not a method) with each demonstration ending in its goal: one step appended whose object sits
    # on the hidden goal itself (a copy of the demonstration's last state with the object's place set to the goal;
    # its action the last one repeated), so that the mark a demonstration leaves is the goal, not a point on the
    # success radius. If marks that are right are not followed either, the channel (or its training) fails,
    # not where the marks lie. Self-imitation reads the appended state too (one of each demonstration's ~100)
    "crl-trials-objbest-goalmarked-alldemos-noentries-noimitate-bonus-inf-1m": {
        **METHOD, "train_demo_ratio": 1.0, "goal_marked_demos": True, "first_success": True, "run_best": "reached",
        "no_entries": True, "keys": "metaworld-object", "steps": 1_000_000, "env_kwargs": {"success_bonus": "infinite"}},
    # REGENT's mix (Sridhar et al. 2025; integrations.sb3.experimental.retrieval_mix): the Gaussian's mean pulled to
    # the nearest shown success's action by exp(-d / 0.05) (the flat keys' distance: a demonstration followed by
    # retrieve-and-play on ml10-moves is 0.007 from its nearest step at the median, 0.03 at the 3rd quartile),
    # on ML10's arm: where the learned arm copies worse than retrieve-and-play (0.30 against 0.68 on held-out tasks),
    # does copying where the demonstration is near and acting where it is not do better than either? Evaluated
    # sampling, as the other learned arms, and (heldout_deterministic) on the policy's mean, as retrieve-and-play acts
    "crl-trials-imitate-nearest-strong-mix-bonus-inf": {
        **METHOD, "imitate": {"max_distance": None, "n_batches": 16}, "mix": 0.05, "eval_deterministic": True,
        "env_kwargs": {"success_bonus": "infinite"}},
    # its ablations: the run's best step and the entries from another goal's run (random retrieval); the
    # extractor frozen (does summing a trial up into each entry's vector earn its place?)
    "crl-trials-best-noimitate-random-bonus-inf": {**METHOD, "run_best": "taken", "scope": "other",
                                                   "env_kwargs": {"success_bonus": "infinite"}},
    "crl-trials-best-noimitate-frozen-bonus-inf": {**METHOD, "run_best": "taken", "train_extractor": False,
                                                   "env_kwargs": {"success_bonus": "infinite"}},
    # the best step marked by the state its reward was received in (run_best="reached"):
    # a success's end inside the goal's radius, where "taken" gives the state before it (outside)
    "crl-trials-reached-noimitate-bonus-inf": {**METHOD, "run_best": "reached",
                                               "env_kwargs": {"success_bonus": "infinite"}},
    # and, until the run succeeds, the key where a learned GoalLocator guesses it will from the run's
    # failed trials' keys and rewards (run_best="located"): does a learned summary of a trial earn its place?
    "crl-trials-located-noimitate-bonus-inf": {**METHOD, "run_best": "located",
                                               "env_kwargs": {"success_bonus": "infinite"}},
    # the same, keyed by where Meta-World's hand and object are (MetaWorldKeyEncoder: 6 of the 39
    # values) rather than the whole observation: the entries, RunBest's offset and the locator's rows
    "crl-trials-located-handkeys-noimitate-bonus-inf": {**METHOD, "run_best": "located", "keys": "metaworld",
                                                        "env_kwargs": {"success_bonus": "infinite"}},
    # the same, a run's first success (or its demonstration) kept as its best step rather than its newest:
    # are the policy's own successes worse marks than a demonstration's end?
    "crl-trials-located-handkeys-firstsuccess-noimitate-bonus-inf": {
        **METHOD, "run_best": "located", "keys": "metaworld", "first_success": True,
        "env_kwargs": {"success_bonus": "infinite"}},
    # the located arm with twice the budget: is following a success a matter of training?
    "crl-trials-located-600k-noimitate-bonus-inf": {**METHOD, "run_best": "located", "steps": 600_000,
                                                    "env_kwargs": {"success_bonus": "infinite"}},
    # the located arm with the entries channel blank (rows zero, mask 0): the policy reads only the run's
    # best step (RunBest); does reading the run's own rows help or hurt following a success?
    "crl-trials-located-noentries-noimitate-bonus-inf": {**METHOD, "run_best": "located", "no_entries": True,
                                                         "env_kwargs": {"success_bonus": "infinite"}},
    # and its random-retrieval ablation: the best step (and the locator's guess) of another goal's run
    "crl-trials-located-noentries-random-noimitate-bonus-inf": {
        **METHOD, "run_best": "located", "no_entries": True, "scope": "other",
        "env_kwargs": {"success_bonus": "infinite"}},
    # and the located arm's ablations: the extractor never trained; the entries and the best step from another
    # goal's run (random retrieval)
    "crl-trials-located-noimitate-frozen-bonus-inf": {**METHOD, "run_best": "located", "train_extractor": False,
                                                      "env_kwargs": {"success_bonus": "infinite"}},
    "crl-trials-located-noimitate-random-bonus-inf": {**METHOD, "run_best": "located", "scope": "other",
                                                      "env_kwargs": {"success_bonus": "infinite"}},
    # diagnostic (privileged, training goals only): the hand-keyed located arm with the locator's labels exact,
    # where the training goal is rather than where a success entered its radius; held-out goals are never
    # given. Are the labels what holds the locator's guesses (and trial 2) back?
    "crl-trials-located-handkeys-exactlabels-noimitate-bonus-inf": {
        **METHOD, "run_best": "located", "keys": "metaworld", "exact_labels": True,
        "env_kwargs": {"success_bonus": "infinite"}},
    # the located arm, and its no-entries form, with the locator's labels the mean of where an instance's
    # successes ended rather than the newest: are less biased labels what trial 2 needs?
    "crl-trials-located-meanlabels-noimitate-bonus-inf": {
        **METHOD, "run_best": "located", "mean_labels": True, "env_kwargs": {"success_bonus": "infinite"}},
    "crl-trials-located-noentries-meanlabels-noimitate-bonus-inf": {
        **METHOD, "run_best": "located", "no_entries": True, "mean_labels": True,
        "env_kwargs": {"success_bonus": "infinite"}},
    # the last two rewards in the observation (ML1Trials(reward_observed=True)): can a memoryless policy search
    # for the hidden goal within a trial by how the reward changes, and follow a mark to its end more surely?
    "crl-trials-located-rewardobs-noimitate-bonus-inf": {
        **METHOD, "run_best": "located", "env_kwargs": {"success_bonus": "infinite", "reward_observed": True}},
    # and the same without the run's entries shown (the ML1 reach configuration since the no-entries arm)
    "crl-trials-located-noentries-rewardobs-noimitate-bonus-inf": {
        **METHOD, "run_best": "located", "no_entries": True,
        "env_kwargs": {"success_bonus": "infinite", "reward_observed": True}},
    # the no-entries arm with the locator guessing again every 10 steps of a trial whose run has no success,
    # from the trial's own steps where they came closer (TrialMemory(relocate_every=10); the locator learns
    # from trials' prefixes too): can one trial's rewards place the goal while the trial goes on, the first
    # trial included (cumulative success by trial 2)?
    "crl-trials-located-noentries-relocate-noimitate-bonus-inf": {
        **METHOD, "run_best": "located", "no_entries": True, "relocate_every": 10,
        "env_kwargs": {"success_bonus": "infinite"}},
    # and reading all of the run's failed trials together (TrialMemory(locate_from="all"); the locator learns
    # from trials joined with earlier failed trials of their instance): does a run whose first trial failed
    # place the goal from two trials where one left it open (cumulative success by trial 2)?
    "crl-trials-located-noentries-relocate-all-noimitate-bonus-inf": {
        **METHOD, "run_best": "located", "no_entries": True, "relocate_every": 10, "locate_from": "all",
        "env_kwargs": {"success_bonus": "infinite"}},
    # the relocating arm searching around the guess where a trial stalls (TrialMemory(search=1.0): the shown mark
    # moved by a draw of the locator's own error): a trial standing at a wrong guess gathers rewards elsewhere
    # for the next guess; does the first trial's failure then place the goal (cumulative success by trial 2)?
    "crl-trials-located-noentries-relocate-search-noimitate-bonus-inf": {
        **METHOD, "run_best": "located", "no_entries": True, "relocate_every": 10, "search": 1.0,
        "env_kwargs": {"success_bonus": "infinite"}},
    # the relocating arm trained as it is and evaluated with the search (TrialMemory(search=1.0) in the frozen
    # memory): the ideal follower's gain came from searching at test time only; the same weights are also
    # evaluated without it (heldout_without_search), a paired comparison
    "crl-trials-located-noentries-relocate-evalsearch-noimitate-bonus-inf": {
        **METHOD, "run_best": "located", "no_entries": True, "relocate_every": 10, "eval_search": 1.0,
        "env_kwargs": {"success_bonus": "infinite"}},
    # and with twice the budget (the located arm's 600k): does a policy that follows the marks better take
    # cumulative success by trial 2 past 0.8?
    "crl-trials-located-noentries-relocate-evalsearch-600k-noimitate-bonus-inf": {
        **METHOD, "run_best": "located", "no_entries": True, "relocate_every": 10, "eval_search": 1.0,
        "steps": 600_000, "env_kwargs": {"success_bonus": "infinite"}},
    # memoryless PPO at the 600k arms' budget (the peer at the same budget; issue 37's <= 0.25 calibration)
    "ppo-bonus-inf-600k": {"kind": "crl", "scope": "none", "steps": 600_000,
                           "env_kwargs": {"success_bonus": "infinite"}},
    "ppo-bonus-inf-rewardobs": {"kind": "crl", "scope": "none",
                                "env_kwargs": {"success_bonus": "infinite", "reward_observed": True}},
    "recurrent-ppo-trials": {"kind": "recurrent"},
    # RL^2 at the 600k arm's budget (the peer at the same budget)
    "recurrent-ppo-trials-600k": {"kind": "recurrent", "steps": 600_000},
    "retrieve-and-play": {"kind": "play"},
}

#: an arm's ``keys``: the parts of Meta-World's observation its memory keys by (``MetaWorldKeyEncoder(parts=...)``)
KEYS = {"metaworld": ("hand", "object"), "metaworld-object": ("object",)}
#: PPO's settings for every arm (RecurrentPPO takes the same)
PPO_KWARGS: dict[str, Any] = TRIALS_PPO_KWARGS
N_ENVS = 8
GROUP_SIZE = 4
FREE_MEMBERS = 1
K_ENTRIES = 8
EXP_DIM = 8


# ---------------------------------------------------------------------------- families
def darkroom_family() -> dict[str, Any]:
    from integrations.minihack.hidden_goal import HiddenGoalRoom, goal_demonstration, split_goals
    train, held_out = split_goals(10, 20, seed=0)
    return {"task": "HiddenGoalRoom-10x10 (MiniHack level generator, position only, 25-step cap)",
            "make": lambda: HiddenGoalRoom(10, 25), "train": train, "held_out": held_out, "horizon": 25,
            "trials": 4, "demonstration": goal_demonstration}


def keydoor_family() -> dict[str, Any]:
    from integrations.minihack.hidden_goal import MOVES
    from integrations.minihack.hidden_key_door import (
        HiddenKeyDoorRoom,
        key_door_actions,
        seed_pair,
        split_pairs,
    )
    size, cap = 7, 30
    train, held_out = split_pairs(size, 80, 20, seed=0)

    def demonstration(seed: int) -> tuple[np.ndarray, np.ndarray]:
        key, _ = seed_pair(seed, size)
        actions = key_door_actions(seed, size)
        x = y = has = 0
        obs = []
        for a in actions:
            obs.append([x, y, has])
            x, y = x + MOVES[a][0], y + MOVES[a][1]
            has = has or int(y * size + x == key)
        return np.asarray(obs, np.float32), np.asarray(actions)

    return {"task": f"HiddenKeyDoorRoom-{size}x{size} (MiniHack level generator, position and has-key only, "
                    f"{cap}-step cap)",
            "make": lambda: HiddenKeyDoorRoom(size, cap), "train": train, "held_out": held_out, "horizon": cap,
            "trials": 4, "demonstration": demonstration}


def maze_family(train_mazes: int = 200) -> dict[str, Any]:
    from itertools import count

    from integrations.minihack import GlyphCNNExtractor
    from integrations.minihack.incontext_maze import (
        InContextMaze,
        maze_demonstration,
        position_key_encoder,
        split_mazes,
    )
    train, held_out = split_mazes(train_mazes, 20)
    seeds = count()
    return {"task": "MiniHack-MazeWalk-9x9-v0, 3 random moves before each episode, cap 1.5x the shortest path",
            "make": lambda: InContextMaze(seed=next(seeds)), "train": train, "held_out": held_out, "horizon": 40,
            "trials": 1, "demonstration": maze_demonstration, "demo_ratio": 1.0,
            "memory_kwargs": {"key_encoder": position_key_encoder()},
            "features_kwargs": {"base_extractor_class": GlyphCNNExtractor}}


FAMILIES: dict[str, Callable[..., dict[str, Any]]] = {"darkroom": darkroom_family, "keydoor": keydoor_family,
                                                      "maze": maze_family, "ml1-reach": ml1_reach_family,
                                                      "ml1-reach-moves": ml1_reach_moves_family,
                                                      "ml1-push-moves": ml1_push_moves_family,
                                                      "ml1-pick-place-moves": ml1_pick_place_moves_family,
                                                      "ml10-moves": ml10_moves_family}


# ---------------------------------------------------------------------------- one run
def _end_distance_callback(every: int = 8192, window: int = 400) -> Any:
    """A callback recording, for the ML1 families (issue 37), where the training trials end: every ``every``
    steps, over the last ``window`` trials, the success rate, the failed trials' end distance to the goal
    (Meta-World's ``info["obj_to_target"]``: median and quartiles) and the share of them that end within
    0.10 of it (the success radius is 0.05), and the policy's mean ``log_std``. A policy that learned to
    stop just outside the success radius shows failed trials ending at 0.05-0.10; one that goes elsewhere,
    far."""
    from collections import deque

    from stable_baselines3.common.callbacks import BaseCallback

    class EndDistance(BaseCallback):
        def __init__(self) -> None:
            super().__init__()
            self.recent: deque[tuple[float, float | None, int]] = deque(maxlen=window)
            self.curve: list[dict[str, Any]] = []
            self._next = every
            self._len: dict[int, int] = {}

        def _on_step(self) -> bool:
            for i, info in enumerate(self.locals["infos"]):
                self._len[i] = self._len.get(i, 0) + 1
                if "trial_success" not in info:
                    continue
                dist = info.get("obj_to_target")
                self.recent.append((float(info["trial_success"]), None if dist is None else float(dist),
                                    self._len.pop(i)))
            if self.num_timesteps >= self._next:
                self._next += every
                failed = np.array([d for s, d, _ in self.recent if not s and d is not None])
                lengths = [n for s, _, n in self.recent if s]
                log_std = getattr(self.model.policy, "log_std", None)
                self.curve.append({
                    "step": int(self.num_timesteps),
                    "success": round(float(np.mean([s for s, _, _ in self.recent])), 3) if self.recent else None,
                    "failed": int(len(failed)),
                    "failed_end_distance_q25_median_q75": [round(float(x), 4) for x in
                                                           np.percentile(failed, [25, 50, 75])] if len(failed) else None,
                    "failed_ending_within_0.10": round(float(np.mean(failed <= 0.10)), 3) if len(failed) else None,
                    "success_length_mean": round(float(np.mean(lengths)), 1) if lengths else None,
                    "log_std_mean": None if log_std is None else round(float(log_std.detach().mean()), 3)})
            return True

    return EndDistance()


def _with_locator(cls: type[TrialMemory], locator: type[GoalLocator], name: str) -> type[TrialMemory]:
    """``cls`` whose goal locator (where it has one) is a ``locator``, seeded as the memory."""
    def init(self: Any, *args: Any, **kwargs: Any) -> None:
        cls.__init__(self, *args, **kwargs)
        if self.locator is not None:
            self.locator = locator(self.key_dim, seed=int(kwargs.get("seed", 0)))
    return cast("type[TrialMemory]", type(name, (cls,), {"__init__": init}))


def _exact_labels_memory(cls: type[TrialMemory], train: list[int], family: str) -> type[TrialMemory]:
    """``cls`` whose goal locator labels every failed training trial with where its goal is (the
    diagnostic arm's privileged labels: Meta-World's goal position of the training instances,
    keyed by :class:`~integrations.metaworld.keys.MetaWorldKeyEncoder`, with the object where the
    trial left it); the agent's successes label nothing. Held-out instances have no label."""
    from experience_wrappers.trials.goal_locator import GoalLocator
    from integrations.metaworld.keys import MetaWorldKeyEncoder
    from integrations.metaworld.ml1_trials import goal_position, ml1_goal_tasks

    tasks = ml1_goal_tasks(_ML1_TASKS[family])
    at_goals = np.zeros((len(train), 7), np.float32)  # observations with the hand at each training goal
    at_goals[:, :3] = [goal_position(tasks[i]) for i in train]
    hand_keys = MetaWorldKeyEncoder().encode(at_goals, np.zeros(len(train), np.int64))[:, :3]
    goals = dict(zip(train, hand_keys, strict=True))

    class ExactGoalLocator(GoalLocator):
        def solved(self, instance: int, success_key: np.ndarray) -> None:
            pass

        def failed(self, instance: int, keys: np.ndarray, rewards: np.ndarray) -> None:
            goal = goals.get(int(instance))
            if goal is not None:  # the hand at the goal, the object where the trial left it
                self.add(keys, rewards, np.concatenate([goal, np.asarray(keys, np.float32)[-1, 3:]]))

    return _with_locator(cls, ExactGoalLocator, "ExactLabelsTrialMemory")


def _mean_labels_memory(cls: type[TrialMemory]) -> type[TrialMemory]:
    """``cls`` whose goal locator labels an instance's failed trials with the mean of where its
    successes ended (every success of the instance so far, demonstrations included), not the
    newest: a success ends where it entered the goal's radius, on the side it came from, and
    successes from several sides average towards the goal. No privileged information."""
    from experience_wrappers.trials.goal_locator import GoalLocator

    class MeanGoalLocator(GoalLocator):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            self.sums: dict[int, tuple[np.ndarray, int]] = {}  # instance -> (sum of its success ends, their count)

        def solved(self, instance: int, success_key: np.ndarray) -> None:
            total, n = self.sums.get(int(instance), (np.zeros(self.key_dim, np.float64), 0))
            total, n = total + np.asarray(success_key, np.float64), n + 1
            self.sums[int(instance)] = (total, n)
            super().solved(instance, (total / n).astype(np.float32))

    return _with_locator(cls, MeanGoalLocator, "MeanLabelsTrialMemory")


def _metaworld(family: str) -> bool:
    """A Meta-World family (ML1's or ML10's): the calibrated PPO, the env's own arguments."""
    return family.startswith(("ml1-", "ml10-"))


#: the Meta-World task of each ML1 family
_ML1_TASKS = {"ml1-reach": "reach-v3", "ml1-reach-moves": "reach-v3", "ml1-push-moves": "push-v3",
              "ml1-pick-place-moves": "pick-place-v3"}


def goal_marked(demonstration: Any, task: str) -> Any:
    """``demonstration(instance)`` with one step appended whose part that decides success (the hand on reach, the
    object on push and pick-place) sits on the instance's hidden goal: a copy of the last observation with that
    part's place set to the goal, the last action and reward repeated (the diagnosis arm above)."""
    from integrations.metaworld.ml1_trials import goal_position, ml1_goal_tasks, success_part

    cols = success_part(task)
    goals = ml1_goal_tasks(task)

    def marked(instance: int) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
        demo = demonstration(instance)
        if demo is None:
            return None
        obs, actions, rewards = demo
        last = np.array(obs[-1], copy=True)
        last[cols] = goal_position(goals[int(instance)])
        return (np.concatenate([obs, last[None]]), np.concatenate([actions, actions[-1:]]),
                np.concatenate([rewards, rewards[-1:]]))

    return marked


def run_one(family: str, arm: str, seed: int, steps: int, repeats: int) -> dict[str, Any]:
    """Train one arm on one seed and evaluate it on the held-out instances; the result's fields."""
    import torch
    from stable_baselines3.common.vec_env import DummyVecEnv

    from benchmarks.peers.retrieve_and_play import RetrieveAndPlay
    from experience_wrappers.experimental import PathTrialMemory
    from experience_wrappers.trials import TrialMemory
    from integrations.sb3.trials_evaluation import (
        evaluate_trials,
        frozen_predict,
        run_trials,
        trial_metrics,
    )
    from integrations.sb3.trials_logging import TrialsLogCallback
    from integrations.sb3.trials_method import build_trials_method

    torch.set_num_threads(1)
    spec = dict(ARMS[arm])
    spec.pop("steps", None)  # the arm's own budget (main passes it as ``steps``)
    train_instances = spec.pop("train_instances", None)  # an arm may train on more instances than its family's
    if train_instances and family != "maze":
        raise ValueError(f"arm {arm!r} sets its training mazes: run it with --family maze")
    env_kwargs = spec.pop("env_kwargs", None)  # an arm may build the family's env otherwise (ML1 families)
    eval_search = spec.pop("eval_search", None)  # TrialMemory(search=...) at evaluation only (trained without)
    eval_ahead = int(spec.pop("eval_ahead", 0))  # TrialMemory(success_ahead=...) at evaluation only, paired
    if env_kwargs and not _metaworld(family):
        raise ValueError(f"arm {arm!r} sets the env's arguments: run it with an ml1-* or ml10-* family")
    fam = (FAMILIES[family](train_instances) if train_instances else
           FAMILIES[family](**env_kwargs) if env_kwargs else FAMILIES[family]())
    settle = int(spec.pop("settle_demos", 0))  # demonstrations recorded on past their success, to where it settles
    if settle:
        if family not in _ML1_TASKS:
            raise ValueError(f"arm {arm!r} records ML1's demonstrations on past their success: run it with an ml1-* family")
        from integrations.metaworld.ml1_demos import ml1_demonstrations
        fam = {**fam, "demonstration": ml1_demonstrations(_ML1_TASKS[family], fam["horizon"],
                                                          bool((env_kwargs or {}).get("reward_observed", False)),
                                                          settle=settle)}
    if spec.pop("goal_marked_demos", False):
        if family not in _ML1_TASKS:
            raise ValueError(f"arm {arm!r} marks ML1's demonstrations by their goal: run it with an ml1-* family")
        fam = {**fam, "demonstration": goal_marked(fam["demonstration"], _ML1_TASKS[family])}
    kind = spec.pop("kind")
    if spec.pop("goal", "hidden") == "visible":  # the ceiling: the same task with its goal shown
        if "make_visible" not in fam:
            raise ValueError(f"arm {arm!r} shows the goal: family {family!r} has no goal-visible env")
        fam = {**fam, "make": fam["make_visible"], "task": fam["task"].replace("goal hidden", "goal VISIBLE")}
    demo_ratio = float(spec.pop("train_demo_ratio", 0.0))
    if demo_ratio:  # a family may give its demonstrations to every guided run (the in-context mazes)
        demo_ratio = float(fam.get("demo_ratio", demo_ratio))
    group_size = int(spec.pop("group_size", GROUP_SIZE))  # an arm may run every env on its own instance
    free_members = int(spec.pop("free_members", FREE_MEMBERS))
    sil = bool(spec.pop("sil", False))
    imitate = spec.pop("imitate", False)  # True, or EntryImitationCallback's arguments
    novelty = float(spec.pop("novelty_bonus", 0.0))
    novelty_until = bool(spec.pop("novelty_until_success", True))
    mix = spec.pop("mix", None)  # REGENT's mix (RetrievalMixPolicy): the scale of its distance weight
    # also evaluate the policy's mean (deterministic actions; retrieve-and-play's are) with a demonstration
    also_deterministic = bool(spec.pop("eval_deterministic", False))
    keys = spec.pop("keys", None)  # None: the memory's default (the flattened observation)
    if keys is not None:
        if keys not in KEYS:
            raise ValueError(f"arm {arm!r}: keys must be one of {sorted(KEYS)} or absent, got {keys!r}")
        from integrations.metaworld.keys import MetaWorldKeyEncoder
        spec["key_encoder"] = MetaWorldKeyEncoder(parts=KEYS[keys])
    from benchmarks.suites.metaworld_calibration import (
        ppo_settings,  # the ML1 families' calibrated settings
    )

    base_ppo = ppo_settings(fam.get("ppo", {}))
    arm_ppo = ppo_settings(spec.pop("ppo", {}))
    if "policy_kwargs" in arm_ppo:  # an arm's policy_kwargs add to the family's (net_arch, activation kept)
        arm_ppo["policy_kwargs"] = {**base_ppo.get("policy_kwargs", {}), **arm_ppo["policy_kwargs"]}
    ppo_kwargs = {**PPO_KWARGS, **base_ppo, **arm_ppo}
    vec_normalize = fam.get("vec_normalize")
    k_trials = fam["trials"]
    proto = fam["make"]()
    obs_space, act_space = proto.observation_space, proto.action_space
    proto.close()
    t0 = time.time()
    out: dict[str, Any] = {"suite": SUITES[family], "task": fam["task"], "arm": arm, "seed": seed,
                           "steps": steps, "trials": k_trials, "train_instances": len(fam["train"]),
                           "heldout_instances": list(fam["held_out"])}
    held = fam["held_out"]

    def memory(**overrides: Any) -> TrialMemory:
        # the arms write failed trials unless they say otherwise (the arms as recorded; the
        # library's TrialMemory has not written them by default since the novelty ablations)
        kw = {"k": K_ENTRIES, "exp_dim": EXP_DIM, "seed": seed, "write_failures": True, **fam.get("memory_kwargs", {}),
              **spec, **overrides}
        # the arms reading along paths (measured to hurt)
        cls: type[TrialMemory] = PathTrialMemory if "path" in kw else TrialMemory
        if kw.pop("first_success", False):  # the run's first success (a demonstration) stays its best step
            cls = cast("type[TrialMemory]", type("FirstSuccessTrialMemory", (cls,), {"newest_success": False}))
        if kw.pop("no_entries", False):  # the entries channel blank: nothing shown, RunBest alone
            kw["show_entries"] = False
        if kw.pop("mean_labels", False):  # the locator labelled by the mean of an instance's success ends
            cls = _mean_labels_memory(cls)
        if kw.pop("exact_labels", False):  # the locator labelled by the training goals (a diagnostic)
            if keys != "metaworld" or not family.startswith("ml1-"):
                raise ValueError(f"arm {arm!r}: exact labels need an ml1-* family and keys='metaworld'")
            cls = _exact_labels_memory(cls, fam["train"], family)
        return cls(obs_space, act_space, horizon=fam["horizon"], **kw)

    def evaluate(predict: Any, mem_factory: Callable[[], TrialMemory], conditions: tuple[str, ...]) -> dict[str, Any]:
        return evaluate_trials(predict, fam["make"], mem_factory, held, trials=k_trials, repeats=repeats,
                               conditions=conditions, demonstrations=fam["demonstration"], seed=seed,
                               keep_runs=True)

    heldout: dict[str, Any] = {"instances": len(held), "trials": k_trials, "repeats": repeats}
    if kind == "play":
        player = RetrieveAndPlay(memory().layout, act_space, seed=seed)
        heldout.update(evaluate(player.predict, memory, ("with_experience", "without_experience",
                                                         "with_demonstration")))
        out["train"] = None
    elif kind == "recurrent":
        from sb3_contrib import RecurrentPPO
        venv: Any = DummyVecEnv([_meta_episode(fam["make"], fam["train"], k_trials, seed * 1000 + i, monitor=True)
                            for i in range(N_ENVS)])
        if vec_normalize is not None:
            from stable_baselines3.common.vec_env import VecNormalize
            venv = VecNormalize(venv, norm_obs_keys=["observation"], **vec_normalize)
        log = TrialsLogCallback(k_trials, every=8192)
        rkw = dict(ppo_kwargs)
        model = RecurrentPPO("MultiInputLstmPolicy", venv, seed=seed, verbose=0,
                             policy_kwargs={"lstm_hidden_size": 64, "net_arch": [64, 64],
                                            **rkw.pop("policy_kwargs", {})}, **rkw)
        model.learn(steps, callback=log)
        venv.close()
        out["train"] = {"curve": log.curve, "final": log.snapshot()}
        ev = DummyVecEnv([_meta_episode(fam["make"], [g], k_trials, seed) for g in held])
        with frozen_predict(model) as predict:
            heldout["without_experience"] = trial_metrics(run_trials(ev, predict, runs_per_env=repeats,
                                                                     trials=k_trials, recurrent=True))
        heldout["note"] = "no bank: the LSTM state carried across the run's trials is its only memory"
        ev.close()
    else:
        mem = memory()
        policy: type[ExperiencePolicy] = ExperiencePolicy
        if mix is not None:
            from integrations.sb3.experimental.retrieval_mix import RetrievalMixPolicy
            policy = RetrievalMixPolicy
            ppo_kwargs = {**ppo_kwargs, "policy_kwargs": {**ppo_kwargs.get("policy_kwargs", {}),
                                                          "mix_layout": attrs.asdict(mem.layout), "mix_scale": mix}}
        run = build_trials_method(fam["make"], fam["train"], memory=mem, n_envs=N_ENVS, group_size=group_size,
                                  free_members=free_members, trials=k_trials, sil=sil,
                                  demonstrations=fam["demonstration"], demo_ratio=demo_ratio, imitate=imitate,
                                  novelty_bonus=novelty, novelty_until_success=novelty_until,
                                  ppo_kwargs=ppo_kwargs, features_kwargs=fam.get("features_kwargs"),
                                  vec_normalize=vec_normalize, seed=seed, policy=policy)
        method_model, method_venv = run.model, run.model.get_env()
        log = TrialsLogCallback(k_trials, every=8192)
        ends = _end_distance_callback() if family.startswith("ml1-") else None
        method_model.learn(steps, callback=[log, *run.callbacks, *([ends] if ends is not None else [])])
        assert method_venv is not None
        method_venv.close()
        out["train"] = {"curve": log.curve, "final": log.snapshot(), "memory": dict(mem.stats)}
        if ends is not None:
            out["train"]["end_distance"] = ends.curve

        def frozen_memory(**overrides: Any) -> TrialMemory:
            m = memory(train_extractor=False, **overrides)
            m.load_weights_of(mem)
            return m
        conditions = ("without_experience",) if spec.get("scope") == "none" else (
            "without_experience", "with_experience", "with_demonstration")
        with frozen_predict(method_model) as predict:
            if eval_search is None:
                heldout.update(evaluate(predict, frozen_memory, conditions))
            else:  # the same weights evaluated with the search and, paired, without it
                heldout.update(evaluate(predict, lambda: frozen_memory(search=eval_search), conditions))
                out["heldout_without_search"] = evaluate(predict, frozen_memory,
                                                         ("with_experience", "with_demonstration"))
            if eval_ahead:  # the run's own successes marked further on (a demonstration's mark is unchanged)
                out["heldout_ahead"] = {"success_ahead": eval_ahead, **evaluate(
                    predict, lambda: frozen_memory(success_ahead=eval_ahead), ("with_experience",))}
            if also_deterministic:  # the same weights acting on their mean (the file's heldout block samples)
                out["heldout_deterministic"] = evaluate_trials(
                    predict, fam["make"], frozen_memory, held, trials=k_trials, repeats=repeats,
                    conditions=("with_demonstration",), demonstrations=fam["demonstration"], seed=seed,
                    keep_runs=True, deterministic=True)
        # the locator's guesses, checked on the study's probes (Meta-World's own 39-wide observations)
        if mem.locator is not None and family.startswith("ml1-reach") and not (env_kwargs or {}).get("reward_observed"):
            from benchmarks.studies.goal_from_rewards import locator_placement
            out["locator_placement"] = locator_placement(frozen_memory(), seed)
    out["heldout"] = heldout
    out["demonstrations_used"] = {"training_runs_share": demo_ratio,
                                  "test_per_run": 1 if "with_demonstration" in heldout else 0}
    out["wall_s"] = round(time.time() - t0, 1)
    out["steps_per_s"] = round(steps / out["wall_s"], 1) if steps and kind != "play" else None
    return out


# ---------------------------------------------------------------------------- the suite
def _meta_episode(make: Callable[[], Any], instances: list[int], trials: int, seed: int,
                  monitor: bool = False) -> Callable[[], Any]:
    """An env factory: the ``trials`` trials of an instance as one episode (RecurrentPPO's peer)."""
    from stable_baselines3.common.monitor import Monitor

    from benchmarks.peers.meta_episode import MetaEpisode

    def build() -> Any:
        env = MetaEpisode(make(), instances=instances, trials=trials, seed=seed)
        return Monitor(env) if monitor else env
    return build

def _settings(family: str, arm: str, steps: int, repeats: int) -> dict[str, Any]:
    out = {"family": family, "arm": arm, "arm_settings": ARMS[arm], "steps": steps if ARMS[arm]["kind"] != "play" else 0,
           "repeats": repeats, "ppo": PPO_KWARGS, "n_envs": N_ENVS, "group_size": GROUP_SIZE,
           "free_members": FREE_MEMBERS, "k": K_ENTRIES, "exp_dim": EXP_DIM}
    if _metaworld(family):  # the calibrated PPO overrides the trials' defaults
        fam = FAMILIES[family]()
        out.update({"ppo": {**PPO_KWARGS, **fam["ppo"]}, "calibration": fam["calibration"],
                    "vec_normalize": fam["vec_normalize"], "horizon": fam["horizon"]})
    return out


def _commit() -> str | None:
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                              cwd=Path(__file__).parent, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return None


def _job(family: str, arm: str, seed: int, steps: int, repeats: int, path: str, commit: str | None) -> str:
    result = run_one(family, arm, seed, steps, repeats)
    result["settings"] = _settings(family, arm, steps, repeats)
    result["commit"] = commit  # the command's (its workers import the code when they start), not the end's
    write_result(Path(path), result)
    return path


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--family", default="darkroom", choices=sorted(FAMILIES))
    p.add_argument("--arms", nargs="+", default=["crl-trials", "ppo"], choices=sorted(ARMS))
    p.add_argument("--seeds", nargs="+", type=int, default=[0])
    p.add_argument("--steps", type=int, default=300_000,
                   help="training steps of each run (an arm that names its own budget, \"steps\" in ARMS, keeps it)")
    p.add_argument("--repeats", type=int, default=5, help="runs per held-out instance in evaluation")
    p.add_argument("--jobs", type=int, default=2)
    p.add_argument("--out", type=Path, default=None, help="folder (default benchmarks/results/<suite>: trials-darkroom, trials-keydoor, incontext-maze)")
    p.add_argument("--force", action="store_true", help="rerun and overwrite results made with other settings")
    args = p.parse_args(argv)
    if args.steps <= 0 or args.repeats <= 0 or args.jobs <= 0:
        p.error("--steps, --repeats and --jobs must be positive")
    seeds_problem = bad_seeds(args.seeds)
    if seeds_problem:
        p.error(seeds_problem)
    out = args.out or RESULTS / SUITES[args.family]
    try:
        check_output_folder(out, "--out")
    except ValueError as exc:
        p.error(str(exc))
    def steps_of(arm: str) -> int:
        return int(ARMS[arm].get("steps", args.steps))

    todo = []
    for arm in dict.fromkeys(args.arms):  # (named twice, run once)
        for seed in dict.fromkeys(args.seeds):
            path = out / arm / f"seed{seed}.json"
            if path.exists():
                try:
                    old = read_result(path, needs=("settings",))["settings"]
                except ValueError as exc:
                    if not args.force:
                        print(f"stop: {exc}", file=sys.stderr)
                        return 2
                    old = None
                new = _settings(args.family, arm, steps_of(arm), args.repeats)
                if old == new:
                    print(f"skip {path}: done with these settings")
                    continue
                if not args.force:
                    diff = sorted(k for k in new if (old or {}).get(k) != new[k])
                    print(f"stop: {path} was made with other settings (differ: {diff}); rerun with --force to "
                          f"replace it, or --out for a folder of its own", file=sys.stderr)
                    return 2
            todo.append((arm, seed, path))
    print(f"{len(todo)} runs to do, {args.jobs} at a time")
    commit = _commit()
    finished = 0
    try:
        with worker_pool(args.jobs) as pool:  # stopping this command stops its runs
            futures = [pool.submit(_job, args.family, arm, seed, steps_of(arm), args.repeats, str(path), commit)
                       for arm, seed, path in todo]
            for f in as_completed(futures):
                f.result()
                finished += 1
    except Stopped as stop:  # worker_pool has said so
        print(f"{finished} of {len(todo)} runs had finished", file=sys.stderr, flush=True)
        return stop.code if isinstance(stop.code, int) else 1
    where = "" if args.out is None else f" --folder {out}"
    print(f"report: python -m benchmarks.reporting.trials_report --family {args.family}{where}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
