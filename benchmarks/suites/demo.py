"""The README's main job: PPO against the method on a task where they differ, same seed.

Trains vanilla PPO and the method (``crl-sil-obs``, as :class:`~integrations.sb3.ComplementaryRL`
builds it: scripted demonstrations in the bank and pinned in the replay, the observation
channel, self-imitation) with the same policy network, PPO hyperparameters and seed, on
MiniHack-KeyRoom-S5 from 20 demonstrations for 30k steps; prints both rolling successes, an
evaluation with and without experience, and a one-line verdict. Writes
``benchmarks/results/demo.json`` and the learning curves as ``benchmarks/results/demo.png``.
With ``--demos 0`` the method runs on the agent's own successes (``crl-sil-own``), so any
env id works.

Run::

    python -m benchmarks.suites.demo                                   # KeyRoom-S5, 20 demonstrations, 30k steps
    python -m benchmarks.suites.demo --env CartPole-v1 --demos 0 --steps 20000
"""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path

from benchmarks.harness.config import load_hyperparams
from benchmarks.harness.run import train_run
from benchmarks.harness.runner import DEFAULT_HYPERPARAMS
from benchmarks.reporting.report import plot_curves

from .arms import ARMS

RESULTS = Path(__file__).resolve().parents[1] / "results"


def main(argv: list[str] | None = None) -> dict:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--env", default="MiniHack-KeyRoom-S5-v0")
    p.add_argument("--demos", type=int, default=20, help="scripted demonstrations (MiniHack navigation; 0: none)")
    p.add_argument("--steps", type=int, default=30_000)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--eval-episodes", type=int, default=32)
    p.add_argument("--out", type=Path, default=RESULTS / "demo.json",
                   help="result file; the learning curves go beside it as a .png")
    args = p.parse_args(argv)
    if args.steps <= 0 or args.demos < 0 or args.eval_episodes <= 0:
        p.error("--steps and --eval-episodes must be positive, --demos >= 0")
    try:
        hyper = load_hyperparams(args.env)
    except KeyError:
        hyper = dict(DEFAULT_HYPERPARAMS)
    method = "crl-sil-obs" if args.demos else "crl-sil-own"
    results = {}
    for arm in ("ppo", method):
        print(f"training {arm} on {args.env} for {args.steps} steps (seed {args.seed}"
              + (f", {args.demos} demonstrations" if arm == method and args.demos else "") + ") ...", flush=True)
        results[arm] = train_run(args.env, ARMS[arm], args.seed, hyper, args.steps, args.eval_episodes,
                                 demonstrations=args.demos or None)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=1, default=str))
    what = "success" if results["ppo"]["uses_success"] else "return"
    print(f"\n{args.env}, {args.steps} steps, seed {args.seed}; rolling {what} over the last 100 episodes")
    print(f"{'arm':12} {'final ' + what:>16} {'steps/s':>9} {'wall s':>8}  evaluation ({args.eval_episodes} episodes)")
    for arm, r in results.items():
        ev = r.get("evaluation", {})
        parts = [f"{k.replace('_experience', '')}: {v[what if what == 'return' else 'success']:.3f}"
                 for k, v in ev.items()]
        final = r["final_outcome"]
        final_s = "n/a" if final is None or math.isnan(final) else f"{final:.3f}"
        print(f"{arm:12} {final_s:>16} {r['steps_per_s']:>9.0f} {r['wall_s']:>8.1f}  {', '.join(parts)}")
    print(verdict(results["ppo"], results[method], method, args.seed))
    png = args.out.with_suffix(".png")
    plot_curves(args.env, {arm: [r] for arm, r in results.items()}, png)
    print(f"\nwrote {args.out} and the learning curves in {png}")
    return results


def verdict(ppo: dict, crl: dict, method: str, seed: int) -> str:
    """One line: which arm ended higher, by how much, on how many seeds.

    >>> verdict({"final_outcome": 0.0, "uses_success": True}, {"final_outcome": 0.62, "uses_success": True},
    ...         "crl-sil-obs", 0)
    'verdict: crl-sil-obs ends at 0.62, PPO at 0.00 (+0.62), on 1 seed (seed 0): one run each, an illustration; the 5-seed figures are in docs/benchmarks.md'
    """
    a, b = ppo["final_outcome"], crl["final_outcome"]
    if a is None or b is None or math.isnan(a) or math.isnan(b):
        return "verdict: no finished episodes to compare"
    unit = "" if crl["uses_success"] else " (return)"
    return (f"verdict: {method} ends at {b:.2f}{unit}, PPO at {a:.2f} ({b - a:+.2f}), on 1 seed (seed {seed}): "
            "one run each, an illustration; the 5-seed figures are in docs/benchmarks.md")


if __name__ == "__main__":
    main()
