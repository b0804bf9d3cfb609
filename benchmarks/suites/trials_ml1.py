"""The ML1 families of the trials suites (issue 37): Meta-World goals hidden, found from a run's own trials.

``ml1-reach``: :class:`integrations.metaworld.ml1_trials.ML1Trials` on ``reach-v3``, ML1's 50
training goals to train on and its 50 held-out goals to evaluate on (frozen weights), ``K = 4``
trials of 150 steps at most, each ending at Meta-World's ``info["success"]``; demonstrations
from Meta-World's scripted policy with the goal visible, recorded goal-hidden
(:func:`integrations.metaworld.ml1_demos.ml1_demonstrations`). The memory carries each step's
dense reward and marks a trial's outcome in its return column (``TrialMemory(dense_rewards=True)``).

PPO is the calibrated ``obsnorm-rs`` setting of ``benchmarks/suites/metaworld_calibration.py`` (held-out
success 1.00 at 200k steps with the goal visible, seed 0): its PPO keyword arguments (``n_steps``
512, batch 256, a linearly decayed learning rate from 3e-4, ``ent_coef`` 0, [256, 256] tanh
heads, ``log_std_init`` -0.5), the env's own observation key normalised by ``VecNormalize``
(:func:`~integrations.sb3.trials_method.build_trials_method`'s ``vec_normalize``; the entries,
their mask and the trial index never) and the reward scaled by 0.1 in the env rather than
normalised: the rewards the memory writes into its entries (below ``VecNormalize``) are then on
the scale PPO learns from, 0-1 per step, and no running statistic rescales them during training.
"""

from __future__ import annotations

from typing import Any

__all__ = ["ml1_family", "ml1_moves_family", "ml1_reach_family", "ml1_reach_moves_family", "ml1_push_moves_family",
           "ml1_pick_place_moves_family", "trial_cap", "CALIBRATED", "CAPS", "START_MOVES"]

#: the calibration's setting the ML1 families train with
CALIBRATED = "obsnorm-rs"
#: ``ml1-reach-moves``: random hand moves before each trial (the demonstrations start without them)
START_MOVES = 10


#: each task's trial cap but reach's (``integrations.metaworld.ml1_trials.TRIAL_CAP``, 150): about 3x
#: its scripted policy's mean length with the goal visible (reach: 49 steps, 33-72, on the held-out
#: goals; push: 61, 53-73; pick-place: 54, 48-61, on 20 held-out goals each, all succeeding), so a
#: trial can search and still finish
CAPS = {"push-v3": 180, "pick-place-v3": 160}


def trial_cap(task: str) -> int:
    """The trial cap of an ML1 task (:data:`CAPS`, reach's from the env module)."""
    from integrations.metaworld.ml1_trials import TRIAL_CAP

    return TRIAL_CAP if task == "reach-v3" else CAPS[task]


def ml1_family(task: str = "reach-v3", **env_kwargs: Any) -> dict[str, Any]:
    """The ML1 family of ``task`` (the fields :func:`benchmarks.suites.trials.run_one` reads);
    ``env_kwargs`` go to every :class:`~integrations.metaworld.ml1_trials.ML1Trials` (e.g. ``success_bonus``)."""
    from benchmarks.suites.metaworld_calibration import SETTINGS
    from integrations.metaworld.ml1_demos import ml1_demonstrations
    from integrations.metaworld.ml1_trials import ML1Trials, ml1_instances

    cap = trial_cap(task)
    train, held_out = ml1_instances()
    setting = SETTINGS[CALIBRATED]
    return {"task": f"metaworld.ML1({task!r}, seed=0), goal hidden (ML1's partially_observable), "
                    f"{cap}-step trials ending at info['success'], reward x{setting['reward_scale']}",
            "make": lambda: ML1Trials(task, cap, reward_scale=setting["reward_scale"], **env_kwargs),
            "make_visible": lambda: ML1Trials(task, cap, goal_visible=True, reward_scale=setting["reward_scale"],
                                              **env_kwargs),
            "train": train, "held_out": held_out, "horizon": cap, "trials": 4,
            "demonstration": ml1_demonstrations(task, cap, bool(env_kwargs.get("reward_observed", False))),
            "memory_kwargs": {"dense_rewards": True},
            "ppo": dict(setting["ppo"]), "calibration": CALIBRATED, "reward_scale": setting["reward_scale"],
            "vec_normalize": {"norm_obs": True, "norm_reward": False,
                              "gamma": float(setting["ppo"].get("gamma", 0.99))}}


def ml1_reach_family(**env_kwargs: Any) -> dict[str, Any]:
    """The ``ml1-reach`` family."""
    return ml1_family("reach-v3", **env_kwargs)


def ml1_moves_family(task: str = "reach-v3", **env_kwargs: Any) -> dict[str, Any]:
    """:func:`ml1_family` with :data:`START_MOVES` random hand moves before each trial (``ML1Trials(start_moves=...)``).

    Meta-World's resets are deterministic, so in ``ml1-reach`` a demonstration replays open loop
    (retrieve-and-play 1.00); here each trial starts elsewhere (every env its own move seed) while
    the demonstrations start where Meta-World puts the hand, so they must be followed, not replayed.
    """
    from itertools import count

    from integrations.metaworld.ml1_trials import ML1Trials

    fam = ml1_family(task, **env_kwargs)
    scale, cap = fam["reward_scale"], trial_cap(task)
    seeds = count()
    return {**fam, "task": fam["task"] + f", {START_MOVES} random hand moves before each trial",
            "make": lambda: ML1Trials(task, cap, reward_scale=scale, start_moves=START_MOVES,
                                      start_seed=next(seeds), **env_kwargs),
            "make_visible": lambda: ML1Trials(task, cap, goal_visible=True, reward_scale=scale,
                                              start_moves=START_MOVES, start_seed=next(seeds), **env_kwargs)}


def ml1_reach_moves_family(**env_kwargs: Any) -> dict[str, Any]:
    """The ``ml1-reach-moves`` family."""
    return ml1_moves_family("reach-v3", **env_kwargs)


def ml1_push_moves_family(**env_kwargs: Any) -> dict[str, Any]:
    """``ml1-push-moves``: push-v3's goals hidden, the hand moved before each trial (the object's place is seen)."""
    return ml1_moves_family("push-v3", **env_kwargs)


def ml1_pick_place_moves_family(**env_kwargs: Any) -> dict[str, Any]:
    """``ml1-pick-place-moves``: pick-place-v3's goals hidden, the hand moved before each trial."""
    return ml1_moves_family("pick-place-v3", **env_kwargs)
