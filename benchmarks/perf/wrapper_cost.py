"""What the per-env ``ExperienceWrapper`` costs per env step, without PPO: the env's own step against the wrapped one.

``python -m benchmarks.perf.wrapper_cost --env MiniHack-Room-5x5-v0`` steps ``--n-envs`` envs in a
``DummyVecEnv`` with random actions (the same actions for every configuration) for ``--steps``
vector steps, alternating in each of ``--rounds`` rounds:

* ``plain``: the env as the library's env family builds it, no wrapper;
* ``free``: an ``ExperienceWrapper`` per env, every episode experience-free (recording, the
  checks, the info keys, the observation's experience keys: what every step pays);
* ``guided``: every episode guided, retrieving at reset and every ``retrieve_every`` (8) steps
  (key encoding and the bank query on top);
* ``guided-reset``: every episode guided, retrieving at reset only (``retrieve_every=0``).

The wrappers do not learn (``learn=False``): the manager's work (crediting, distillation,
writes) is out of the figures, which are the actor's per-step cost of the wrapper alone; the
bank is empty, so a query costs its least. It prints the median µs per env step of each
configuration and its difference from ``plain``; ``--out FILE`` writes them as JSON. The whole
training loop, the manager included, is measured by ``benchmarks.perf.overhead`` and
profiled by ``benchmarks.perf.step_profile``.
"""

from __future__ import annotations

import argparse
import time
import warnings
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.harness.cli_checks import check_output_file
from benchmarks.harness.result_file import write_result

__all__ = ["CONFIGS", "step_cost", "main"]

#: the configurations: (force guided, retrieve_every); None: no wrapper
CONFIGS: dict[str, tuple[bool, int] | None] = {"plain": None, "free": (False, 8), "guided": (True, 8),
                                               "guided-reset": (True, 0)}


def step_cost(env_id: str, config: str, n_envs: int, steps: int, seed: int) -> float:
    """µs per env step of ``steps`` vector steps of random actions in one configuration (:data:`CONFIGS`)."""
    from experience_wrappers import ExperienceBank
    from integrations.sb3.env_families import build_env, family_of

    setting = CONFIGS[config]
    wrapper_kwargs = None if setting is None else {"learn": False, "retrieve_every": setting[1]}
    venv = build_env(env_id, n_envs, seed, None if setting is None else ExperienceBank(seed=seed),
                     family=family_of(env_id), wrapper_kwargs=wrapper_kwargs,
                     manager_kwargs=None if setting is None else {"mode": "sync"})
    try:
        if setting is not None:
            for env in venv.envs:  # type: ignore[attr-defined]  # build_env's per-env wrappers: a DummyVecEnv
                while not hasattr(env, "set_force_guided"):
                    env = env.env
                env.set_force_guided(setting[0])
        venv.seed(seed)
        venv.reset()
        actions = np.stack([[venv.action_space.sample() for _ in range(n_envs)] for _ in range(steps)])
        t0 = time.perf_counter()
        for a in actions:
            venv.step(a)
        return 1e6 * (time.perf_counter() - t0) / (steps * n_envs)
    finally:
        venv.close()


def main(argv: list[str] | None = None) -> dict[str, Any]:
    warnings.filterwarnings("ignore")
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--env", default="MiniHack-Room-5x5-v0")
    p.add_argument("--n-envs", type=int, default=4)
    p.add_argument("--steps", type=int, default=3000, help="vector steps per configuration and round")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--configs", nargs="*", default=list(CONFIGS), choices=list(CONFIGS))
    p.add_argument("--out", type=Path, default=None)
    args = p.parse_args(argv)
    for flag in ("n_envs", "steps", "rounds"):
        if getattr(args, flag) <= 0:
            p.error(f"--{flag.replace('_', '-')} must be positive, got {getattr(args, flag)}")
    if args.out is not None:
        try:
            check_output_file(args.out, "--out")
        except ValueError as exc:
            p.error(str(exc))
    configs = ["plain"] + [c for c in args.configs if c != "plain"]
    per_round: dict[str, list[float]] = {c: [] for c in configs}
    for _ in range(args.rounds):
        for c in configs:
            per_round[c].append(step_cost(args.env, c, args.n_envs, args.steps, args.seed))
    median = {c: float(np.median(v)) for c, v in per_round.items()}
    print(f"{args.env}, {args.n_envs} envs, {args.steps} vector steps x {args.rounds} rounds: µs per env step")
    print(f"{'configuration':<14}{'median':>9}{'vs plain':>10}")
    for c in configs:
        print(f"{c:<14}{median[c]:>9.1f}{median[c] - median['plain']:>+10.1f}")
    result = {"env_id": args.env, "n_envs": args.n_envs, "steps": args.steps, "rounds": args.rounds,
              "seed": args.seed, "us_per_env_step": per_round, "median": median,
              "wrapper_us": {c: median[c] - median["plain"] for c in configs if c != "plain"}}
    if args.out is not None:
        write_result(args.out, result)
    return result


if __name__ == "__main__":
    main()
