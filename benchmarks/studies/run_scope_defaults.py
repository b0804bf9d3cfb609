"""Run scope's defaults on a task no suite contains, through the public object only.

``python -m benchmarks.studies.run_scope_defaults --seeds 0 1 --steps 150000`` trains
``ComplementaryRL(env, scope="run", instances=train, demonstrations=demo)`` with every other
setting at its default, and its baseline ``experience=False`` (the same network and PPO, shown
nothing), on an 8x8 hidden-goal room with a 20-step cap (the suites use 10x10 and 25 steps),
then evaluates both on held-out goals with ``run.evaluate`` (frozen weights). One file per arm
and seed: ``benchmarks/results/run-scope-defaults/<arm>/seed<S>.json``. What a new user would
get from the defaults on a task of their own, with nothing tuned.
"""

from __future__ import annotations

import argparse
import functools
import time
from pathlib import Path
from typing import Any

from benchmarks.harness.cli_checks import bad_seeds, check_output_folder
from benchmarks.harness.result_file import write_result

__all__ = ["SIZE", "CAP", "run_one", "main"]

RESULTS = Path(__file__).resolve().parents[1] / "results" / "run-scope-defaults"
SIZE, CAP, HELD_OUT = 8, 20, 12
ARMS = {"defaults": {}, "no-experience": {"experience": False}}


def run_one(arm: str, seed: int, steps: int, repeats: int) -> dict[str, Any]:
    """Train one arm on one seed; its held-out evaluation and training figures."""
    import torch

    from integrations.minihack.hidden_goal import HiddenGoalRoom, goal_demonstration, split_goals
    from integrations.sb3 import ComplementaryRL

    torch.set_num_threads(1)
    train, held_out = split_goals(SIZE, HELD_OUT, seed=0)
    make = functools.partial(HiddenGoalRoom, SIZE, CAP)
    demo = functools.partial(goal_demonstration, size=SIZE)
    t0 = time.time()
    run = ComplementaryRL(make, scope="run", instances=train, demonstrations=demo, seed=seed, **ARMS[arm])
    try:
        run.learn(steps)
        train_s = time.time() - t0
        heldout = run.evaluate(held_out, repeats=repeats, conditions=[
            "without_experience", "with_experience", "with_demonstration"] if run.experience else None)
        return {"suite": "run-scope-defaults", "task": f"HiddenGoalRoom-{SIZE}x{SIZE}, {CAP}-step cap, goal hidden",
                "arm": arm, "settings": {"arm": ARMS[arm], "steps": steps, "repeats": repeats,
                                         "train_instances": len(train), "heldout_instances": held_out},
                "seed": seed, "steps": steps, "trials": run.trials, "heldout": heldout,
                "train": {"final": run.log_callback.snapshot(), "memory": dict(run.memory.stats)},
                "train_wall_s": round(train_s, 1), "steps_per_s": round(steps / train_s, 1)}
    finally:
        run.close()


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--arms", nargs="+", default=list(ARMS), choices=list(ARMS))
    p.add_argument("--seeds", nargs="+", type=int, default=[0])
    p.add_argument("--steps", type=int, default=150_000)
    p.add_argument("--repeats", type=int, default=5, help="runs per held-out goal and condition")
    p.add_argument("--out", type=Path, default=RESULTS)
    args = p.parse_args(argv)
    if args.steps <= 0 or args.repeats <= 0:
        p.error("--steps and --repeats must be positive")
    problem = bad_seeds(args.seeds)
    if problem:
        p.error(problem)
    try:
        check_output_folder(args.out, "--out")
    except ValueError as exc:
        p.error(str(exc))
    for arm in args.arms:
        for seed in args.seeds:
            write_result(args.out / arm / f"seed{seed}.json", run_one(arm, seed, args.steps, args.repeats))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
