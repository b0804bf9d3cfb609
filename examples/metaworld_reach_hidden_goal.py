"""Meta-World reach with the goal hidden: a trained agent on held-out goals, with and without a demonstration.

``metaworld.ML1("reach-v3")`` hides the goal (its three entries of the observation are zeros);
an instance is one of its goals, 50 for training and 50 held out. Each trial starts after 10
random hand moves, so a demonstration (Meta-World's scripted policy, recorded with the goal
hidden) must be followed, not replayed. The run scope trains on the training goals, then runs
4 trials per held-out goal with frozen weights: shown nothing, reading the run's own earlier
trials, and with one demonstration of the goal placed in the run first.

    python examples/metaworld_reach_hidden_goal.py --steps 300000 --out runs/reach   # about 20 min on 2 cores
    python examples/metaworld_reach_hidden_goal.py --load runs/reach                 # evaluate a saved run

The settings are the measured arm's (``crl-trials-located-noentries-noimitate-bonus-inf`` of the
``ml1-reach-moves`` family: the run's best step shown as an offset from the hand, in an
observation key of its own, and until the run succeeds where a learned goal locator guesses it
will from the run's failed trials, ``TrialMemory(run_best="located")``; the run's entries not shown
as rows, ``show_entries=False`` (following a success 0.94 without them against 0.84 with, 5 seeds);
no entry-imitation loss; the
successful step paying its reward for every step after it, ``ML1Trials(success_bonus="infinite")``;
PPO as calibrated on reach with the goal visible; ``benchmarks/results/metaworld-ml1-reach-moves``,
figures in docs/trials.md). A short run (``--steps 20000``) learns little; the effect needs the
full budget.
"""

from __future__ import annotations

import argparse
import functools

import torch
from stable_baselines3.common.utils import LinearSchedule

from integrations.metaworld.ml1_demos import ml1_demonstrations
from integrations.metaworld.ml1_trials import TRIAL_CAP, ML1Trials, ml1_instances
from integrations.sb3 import ComplementaryRL

#: PPO as calibrated on reach with the goal visible (``benchmarks.suites.metaworld_calibration``, ``obsnorm-rs``)
PPO = {"n_steps": 512, "batch_size": 256, "n_epochs": 10, "learning_rate": LinearSchedule(3e-4, 0.0, 1.0),
       "gamma": 0.99, "gae_lambda": 0.95, "clip_range": 0.2, "ent_coef": 0.0, "vf_coef": 0.5, "max_grad_norm": 0.5}
POLICY = {"net_arch": {"pi": [256, 256], "vf": [256, 256]}, "activation_fn": torch.nn.Tanh, "log_std_init": -0.5}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--steps", type=int, default=300_000)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", default=None, help="save the trained run here")
    p.add_argument("--load", default=None, help="evaluate a run saved with --out instead of training")
    p.add_argument("--goals", type=int, default=50, help="held-out goals to evaluate (at most 50)")
    p.add_argument("--repeats", type=int, default=2, help="runs of 4 trials per held-out goal")
    p.add_argument("--n-steps", type=int, default=PPO["n_steps"], help="PPO's rollout per env (the measured: 512)")
    args = p.parse_args()

    train, held_out = ml1_instances()
    make = functools.partial(ML1Trials, "reach-v3", TRIAL_CAP, reward_scale=0.1, start_moves=10,
                             success_bonus="infinite")
    demonstrations = ml1_demonstrations("reach-v3", TRIAL_CAP)  # the scripted policy, recorded with the goal hidden
    if args.load:
        run = ComplementaryRL.load(args.load, env=make, demonstrations=demonstrations)
        print(f"loaded {args.load}")
    else:
        run = ComplementaryRL(make, scope="run", instances=train, trials=4, demonstrations=demonstrations,
                              novelty_bonus=0.0, imitate=False,
                              memory_kwargs={"write_failures": True, "dense_rewards": True, "run_best": "located",
                                             "show_entries": False},
                              algorithm_kwargs={**PPO, "n_steps": args.n_steps}, policy_kwargs=POLICY,
                              vec_normalize={"norm_obs": True, "norm_reward": False, "gamma": 0.99}, seed=args.seed)
        run.learn(args.steps)
        print(f"trained {args.steps} steps on {len(train)} goals")
        if args.out:
            print(f"saved {run.save(args.out, overwrite=True)}")

    goals = held_out[: max(1, min(args.goals, len(held_out)))]
    res = run.evaluate(goals, repeats=args.repeats)  # frozen weights, a fresh memory per condition
    for cond in ("without_experience", "with_experience", "with_demonstration"):
        m = res[cond]
        print(f"{cond.replace('_', ' ')}: success by trial {[round(x, 2) for x in m['success_by_trial']]}, "
              f"cumulative {[round(x, 2) for x in m['cumulative_by_trial']]}")
    run.close()


if __name__ == "__main__":
    main()
