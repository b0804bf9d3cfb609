"""What a retrieval's key encoding costs: a MiniHack key encoder on a random walk's observations.

``--encoder default`` times the library's default encoder instead (a
:class:`~experience_wrappers.keys.RandomProjectionKeyEncoder` of the observation space: what the README's
two-line form keys by, having been given no key encoder).

``python -m benchmarks.perf.key_encoding --env MiniHack-Room-5x5-v0`` walks the env with random
actions for ``--steps`` steps (seeded), then, in each of ``--rounds`` rounds, encodes the walk's
observations one at a time, as the per-env wrapper's retrievals do, with a fresh encoder of the
env family's (so its caches start empty), and prints the CPU µs per observation (the process's
CPU time: other load on the machine stretches it less than the wall clock) and how many of the
observations repeat an earlier one's key (which the cache of whole keys then holds). ``--out FILE`` writes the figures as JSON.
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

__all__ = ["walk", "encode_cost", "main"]


def walk(env_id: str, steps: int, seed: int) -> tuple[list[dict[str, np.ndarray]], Any]:
    """``steps`` observations of random actions (each a batch of one) and the env's observation space."""
    from experience_wrappers.keys.base import add_batch_axis
    from integrations.sb3.env_families import family_of

    fam = family_of(env_id)
    if fam.make_env is None or fam.key_encoder is None:
        raise SystemExit(f"{env_id}: its env family has no key encoder of its own to time")
    env = fam.make_env(env_id)
    env.action_space.seed(seed)
    obs, _ = env.reset(seed=seed)
    out = []
    for _ in range(steps):
        obs, _, terminated, truncated, _ = env.step(env.action_space.sample())
        out.append(add_batch_axis(obs))
        if terminated or truncated:
            obs, _ = env.reset()
    space = env.observation_space
    env.close()
    return out, space


def encode_cost(env_id: str, observations: list[dict[str, np.ndarray]], space: Any, encoder_kind: str = "family"
                ) -> dict[str, float]:
    """CPU µs per observation of a fresh encoder over ``observations``, and the share its key cache held;
    ``encoder_kind`` ``"family"`` (the env family's) or ``"default"`` (the library's default)."""
    from experience_wrappers.keys import RandomProjectionKeyEncoder
    from integrations.sb3.env_families import family_of

    encoder = (RandomProjectionKeyEncoder(space) if encoder_kind == "default"
               else family_of(env_id).key_encoder(space))  # type: ignore[misc]  # (walk() checked it has one)
    task = np.zeros(1, np.int64)
    t0 = time.process_time()
    keys = [encoder.encode(obs, task) for obs in observations]
    cpu = time.process_time() - t0
    distinct = len({k.tobytes() for k in keys})  # (the same key: the same values entered it)
    return {"us_per_observation": 1e6 * cpu / len(observations),
            "repeated_share": 1.0 - distinct / len(observations)}


def main(argv: list[str] | None = None) -> dict[str, Any]:
    warnings.filterwarnings("ignore")
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--env", default="MiniHack-Room-5x5-v0")
    p.add_argument("--steps", type=int, default=6000)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--encoder", choices=("family", "default"), default="family",
                   help="the env family's key encoder, or the library's default (RandomProjectionKeyEncoder)")
    p.add_argument("--out", type=Path, default=None)
    args = p.parse_args(argv)
    if args.out is not None:
        check_output_file(args.out, "--out")
    observations, space = walk(args.env, args.steps, args.seed)
    rounds = [encode_cost(args.env, observations, space, args.encoder) for _ in range(args.rounds)]
    costs = [r["us_per_observation"] for r in rounds]
    for i, c in enumerate(costs):
        print(f"round {i}: {c:.1f} µs of CPU per observation")
    result = {"env": args.env, "encoder": args.encoder, "steps": args.steps, "seed": args.seed, "rounds": rounds,
              "median_us_per_observation": float(np.median(costs)),
              "repeated_share": rounds[0]["repeated_share"], "args": {k: str(v) for k, v in vars(args).items()}}
    print(f"median {result['median_us_per_observation']:.1f} µs per observation; "
          f"{result['repeated_share']:.0%} of the walk's observations repeat an earlier one")
    if args.out is not None:
        write_result(args.out, result)
    return result


if __name__ == "__main__":
    main()
