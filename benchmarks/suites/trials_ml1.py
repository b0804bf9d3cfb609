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

__all__ = ["ml1_reach_family", "ml1_reach_moves_family", "CALIBRATED",
           "START_MOVES"]

#: the calibration's setting the ML1 families train with
CALIBRATED = "obsnorm-rs"
#: ``ml1-reach-moves``: random hand moves before each trial (the demonstrations start without them)
START_MOVES = 10


def ml1_reach_family() -> dict[str, Any]:
    """The ``ml1-reach`` family (the fields :func:`benchmarks.suites.trials.run_one` reads)."""
    from benchmarks.suites.metaworld_calibration import SETTINGS
    from integrations.metaworld.ml1_demos import ml1_demonstrations
    from integrations.metaworld.ml1_trials import TRIAL_CAP, ML1Trials, ml1_instances

    train, held_out = ml1_instances()
    setting = SETTINGS[CALIBRATED]
    return {"task": f"metaworld.ML1('reach-v3', seed=0), goal hidden (ML1's partially_observable), "
                    f"{TRIAL_CAP}-step trials ending at info['success'], reward x{setting['reward_scale']}",
            "make": lambda: ML1Trials("reach-v3", TRIAL_CAP, reward_scale=setting["reward_scale"]),
            "make_visible": lambda: ML1Trials("reach-v3", TRIAL_CAP, goal_visible=True,
                                              reward_scale=setting["reward_scale"]),
            "train": train, "held_out": held_out, "horizon": TRIAL_CAP, "trials": 4,
            "demonstration": ml1_demonstrations("reach-v3", TRIAL_CAP),
            "memory_kwargs": {"dense_rewards": True},
            "ppo": dict(setting["ppo"]), "calibration": CALIBRATED, "reward_scale": setting["reward_scale"],
            "vec_normalize": {"norm_obs": True, "norm_reward": False,
                              "gamma": float(setting["ppo"].get("gamma", 0.99))}}


def ml1_reach_moves_family() -> dict[str, Any]:
    """``ml1-reach`` with :data:`START_MOVES` random hand moves before each trial (``ML1Trials(start_moves=...)``).

    Meta-World's resets are deterministic, so in ``ml1-reach`` a demonstration replays open loop
    (retrieve-and-play 1.00); here each trial starts elsewhere (every env its own move seed) while
    the demonstrations start where Meta-World puts the hand, so they must be followed, not replayed.
    """
    from itertools import count

    from integrations.metaworld.ml1_trials import TRIAL_CAP, ML1Trials

    fam = ml1_reach_family()
    scale = fam["reward_scale"]
    seeds = count()
    return {**fam, "task": fam["task"] + f", {START_MOVES} random hand moves before each trial",
            "make": lambda: ML1Trials("reach-v3", TRIAL_CAP, reward_scale=scale, start_moves=START_MOVES,
                                      start_seed=next(seeds)),
            "make_visible": lambda: ML1Trials("reach-v3", TRIAL_CAP, goal_visible=True, reward_scale=scale,
                                              start_moves=START_MOVES, start_seed=next(seeds))}
