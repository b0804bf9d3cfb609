"""What a read replica that lags by up to one rollout changes in learning (issue 27).

``ManagerConfig(read_replica=True)`` makes the wrappers' retrievals read a copy of the bank
swapped in at each rollout's end, so the entries written during a rollout are seen from the
next one (lag up to one rollout) instead of at once (lag 0). With the manager in sync mode,
one torch thread and fixed seeds a run is deterministic, so the two lags run side by side on
the same seeds isolate the replica's effect on learning: the method of the ``keyroom-20`` suite
(``crl-sil-obs``: 20 demonstrations in the bank, self-imitation, the observation channel) on
MiniHack-KeyRoom-S5 for the suite's 72k steps, seeds 0-2. ``--replica write`` compares
instead a replica copied after each write of new entries and swapped in at the next retrieval
(``replica_swap="write"``): the same replica machinery without the rollout's staleness.

Per run: the training success rate over the last 100 episodes (``final_outcome``), the mean of
the last five curve points, the episodes, whether the fingerprints (episodes, weights) are
identical, and the final evaluation with experience (``--eval-episodes``). Then the lag-1 minus
lag-0 difference of the seeds' means with a bootstrap interval (:func:`.stats.difference_ci`).
Results go to ``benchmarks/results/replica_lag.json``.

Run::

    python -m benchmarks.studies.replica_lag                         # 3 seeds x 2 lags, about 20 minutes on 2 cores
    python -m benchmarks.studies.replica_lag --seeds 0 --steps 8192 --out /tmp/lag.json   # a quick look
    python -m benchmarks.studies.replica_lag --replica write --out benchmarks/results/replica_lag-write.json
"""

from __future__ import annotations

import argparse
import tempfile
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

import attrs
import numpy as np
import torch

from benchmarks.harness.config import load_hyperparams
from benchmarks.harness.result_file import write_result
from benchmarks.harness.run import train_run, versions
from benchmarks.reporting.stats import difference_ci
from benchmarks.suites.arms import ARMS

RESULTS = Path(__file__).resolve().parents[1] / "results"
ENV_ID, ARM, STEPS, DEMOS = "MiniHack-KeyRoom-S5-v0", "crl-sil-obs", 72_000, 20


#: lag -> how the retrievals read: the bank (0), a replica swapped at rollout ends (1), a replica
#: copied after each write and swapped at the next retrieval ("write")
READS: dict[Any, dict[str, Any]] = {0: {"read_replica": False}, 1: {"read_replica": True},
                                    "write": {"read_replica": True, "replica_swap": "write"}}


def one_run(env_id: str, arm_name: str, seed: int, lag: Any, steps: int, eval_episodes: int) -> dict[str, Any]:
    """One sync-mode run with the retrievals reading the bank (lag 0) or a replica (``READS``)."""
    arm = ARMS[arm_name]
    arm = attrs.evolve(arm, manager={**(arm.manager or {}), "mode": "sync", **READS[lag]})
    torch.manual_seed(seed)
    np.random.seed(seed)  # noqa: NPY002 - the global generator SB3 and the envs draw from
    with tempfile.TemporaryDirectory() as tmp:
        res = train_run(env_id, arm, seed, load_hyperparams(env_id), steps, eval_episodes=eval_episodes,
                        demonstrations=DEMOS, model_dir=tmp)
    keep = ("final_outcome", "final_outcome_mean_last", "episodes", "wall_s", "first_reached", "evaluation")
    out = {"seed": seed, "lag": lag, **{k: res.get(k) for k in keep}}
    out["curve_outcomes"] = [c["outcome"] for c in res.get("curve", [])]
    out["replica"] = {k: v for k, v in (res.get("crl") or {}).items() if "replica" in k}
    return out


def summarise(runs: list[dict[str, Any]], other: Any = 1) -> dict[str, Any]:
    """``other`` (a replica's reads) against lag 0, seed by seed."""
    by_lag = {lag: sorted((r for r in runs if r["lag"] == lag), key=lambda r: r["seed"]) for lag in (0, other)}
    by_lag[1] = by_lag[other]
    out: dict[str, Any] = {}
    for field in ("final_outcome", "final_outcome_mean_last"):
        a = [float(r[field]) for r in by_lag[1]]
        b = [float(r[field]) for r in by_lag[0]]
        _, lo, hi = difference_ci(a, b)
        out[field] = {"lag0_mean": float(np.mean(b)), "lag1_mean": float(np.mean(a)),
                      "difference": float(np.mean(a) - np.mean(b)), "ci": [lo, hi],
                      "per_seed": {str(r0["seed"]): [r0[field], r1[field]]
                                   for r0, r1 in zip(by_lag[0], by_lag[1], strict=True)}}
    out["identical_curves"] = [r0["curve_outcomes"] == r1["curve_outcomes"]
                               for r0, r1 in zip(by_lag[0], by_lag[1], strict=True)]
    return out


def main(argv: list[str] | None = None) -> dict[str, Any]:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--env", default=ENV_ID)
    p.add_argument("--arm", default=ARM)
    p.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    p.add_argument("--steps", type=int, default=STEPS)
    p.add_argument("--eval-episodes", type=int, default=0)
    p.add_argument("--jobs", type=int, default=2)
    p.add_argument("--replica", default="1", choices=["1", "write"],
                   help="the replica's reads against the bank's: 1 (swapped at rollout ends) or write (after each write)")
    p.add_argument("--out", type=Path, default=RESULTS / "replica_lag.json")
    args = p.parse_args(argv)
    other: Any = 1 if args.replica == "1" else "write"
    jobs = [(args.env, args.arm, seed, lag, args.steps, args.eval_episodes) for seed in args.seeds
            for lag in (0, other)]
    with ProcessPoolExecutor(max_workers=args.jobs) as pool:
        runs = list(pool.map(one_run, *zip(*jobs, strict=True)))
    for r in runs:
        print(f"seed {r['seed']} lag {r['lag']}: final success {r['final_outcome']:.2f} "
              f"(last five points {r['final_outcome_mean_last']:.2f}), {r['episodes']} episodes, "
              f"{r['wall_s']:.0f} s", flush=True)
    summary = summarise(runs, other)
    f = summary["final_outcome"]
    print(f"replica ({other}) - lag 0, final success: {f['difference']:+.3f} [{f['ci'][0]:+.3f}, {f['ci'][1]:+.3f}] "
          f"({f['lag0_mean']:.3f} -> {f['lag1_mean']:.3f})")
    result = {"env_id": args.env, "arm": args.arm, "steps": args.steps, "seeds": args.seeds, "mode": "sync",
              "replica": READS[other],
              "runs": runs, "summary": summary, "versions": versions(),
              "command": "python -m benchmarks.studies.replica_lag " + " ".join(argv or [])}
    write_result(args.out, result)
    return result


if __name__ == "__main__":
    main()
