"""The README's main job: a short PPO vs PPO + Complementary RL comparison on a real environment.

Trains vanilla PPO and PPO + Complementary RL (the library's defaults) with the same
policy network, PPO hyperparameters and seed, then prints both learning outcomes and
an evaluation of the CRL agent with and without experience. Writes
``benchmarks/results/demo.json`` and the two learning curves as ``benchmarks/results/demo.png``.

Run::

    python -m benchmarks.demo                      # MiniHack-Room-Monster-5x5-v0, 20k steps
    python -m benchmarks.demo --env CartPole-v1 --steps 20000
"""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path

from .arms import ARMS
from .config import load_hyperparams
from .report import plot_curves
from .run import train_run

RESULTS = Path(__file__).resolve().parent / "results"


def main(argv: list[str] | None = None) -> dict:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--env", default="MiniHack-Room-Monster-5x5-v0")
    p.add_argument("--steps", type=int, default=20_000)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--eval-episodes", type=int, default=32)
    p.add_argument("--out", type=Path, default=RESULTS / "demo.json",
                   help="result file; the learning curves go beside it as a .png")
    args = p.parse_args(argv)
    hyper = load_hyperparams(args.env)
    results = {}
    for arm in ("ppo", "crl"):
        print(f"training {arm} on {args.env} for {args.steps} steps (seed {args.seed}) ...", flush=True)
        results[arm] = train_run(args.env, ARMS[arm], args.seed, hyper, args.steps, args.eval_episodes)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=1, default=str))
    what = "success" if results["ppo"]["uses_success"] else "return"
    print(f"\n{args.env}, {args.steps} steps, seed {args.seed}; rolling {what} over the last 100 episodes")
    print(f"{'arm':6} {'final ' + what:>16} {'steps/s':>9} {'wall s':>8}  evaluation ({args.eval_episodes} episodes)")
    for arm, r in results.items():
        ev = r.get("evaluation", {})
        parts = [f"{k.replace('_experience', '')}: {v[what if what == 'return' else 'success']:.3f}"
                 for k, v in ev.items()]
        final = r["final_outcome"]
        final_s = "n/a" if final is None or math.isnan(final) else f"{final:.3f}"
        print(f"{arm:6} {final_s:>16} {r['steps_per_s']:>9.0f} {r['wall_s']:>8.1f}  {', '.join(parts)}")
    png = args.out.with_suffix(".png")
    plot_curves(args.env, {arm: [r] for arm, r in results.items()}, png)
    print(f"\nwrote {args.out} and the learning curves in {png}")
    return results


if __name__ == "__main__":
    main()
