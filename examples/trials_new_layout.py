"""Experience at deployment: a trained agent on a layout it never saw, with and without a demonstration.

The hidden-goal room (MiniHack's level generator; the agent sees only its position): the
policy is trained on 79 goals, then run on held-out goals with its weights frozen. Its
runs of 4 trials read their own earlier trials, and (the "with demonstration" condition) one scripted
demonstration of the new layout is placed in the run's memory first. Nothing is retrained.

    python examples/trials_new_layout.py --steps 150000 --out runs/darkroom   # train, about 6 min on 2 cores
    python examples/trials_new_layout.py --load runs/darkroom                 # evaluate a saved run

Measured (benchmarks/results/trials-darkroom, 150k steps, 5 seeds): see docs/trials.md.
A short run (``--steps 20000``) learns little; the effect needs the full budget.
"""

from __future__ import annotations

import argparse

from integrations.minihack.hidden_goal import HiddenGoalRoom, split_goals
from integrations.minihack.hidden_goal import goal_demonstration as demonstration
from integrations.sb3 import ComplementaryRL


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--steps", type=int, default=150_000)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", default=None, help="save the trained run here")
    p.add_argument("--load", default=None, help="evaluate a run saved with --out instead of training")
    p.add_argument("--goals", type=int, default=20, help="held-out goals to evaluate (at most 20)")
    p.add_argument("--repeats", type=int, default=3, help="runs of 4 trials per held-out goal")
    args = p.parse_args()

    train, held_out = split_goals()
    if args.load:
        run = ComplementaryRL.load(args.load, env=HiddenGoalRoom, demonstrations=demonstration)
        print(f"loaded {args.load}")
    else:
        run = ComplementaryRL(HiddenGoalRoom, scope="run", instances=train, trials=4, demonstrations=demonstration,
                              seed=args.seed)
        run.learn(args.steps)
        print(f"trained {args.steps} steps on {len(train)} goals: {int(run.memory.stats['trials_written'])} "
              f"trials written, {int(run.memory.stats['extractor_updates'])} extractor updates")
        if args.out:
            print(f"saved {run.save(args.out, overwrite=True)}")

    goals = held_out[: max(1, min(args.goals, len(held_out)))]
    res = run.evaluate(goals, repeats=args.repeats)  # frozen weights, a fresh memory per condition
    for cond in ("without_experience", "with_experience", "with_demonstration"):
        m = res[cond]
        print(f"{cond.replace('_', ' ')}: success by trial {m['success_by_trial']}, "
              f"cumulative {m['cumulative_by_trial']}")
    print(f"held-out goals {len(goals)}, runs {res['with_experience']['runs']}: first trial "
          f"{res['without_experience']['success_by_trial'][0]:.2f} without experience, "
          f"{res['with_demonstration']['success_by_trial'][0]:.2f} with one demonstration")
    run.close()


if __name__ == "__main__":
    main()
