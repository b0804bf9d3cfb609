"""Sync-mode equivalence: short seeded runs whose every episode outcome and final weights are fingerprinted.

Run it before and after a change that must preserve behaviour, and compare the two files:

    python -m benchmarks.harness.equivalence --out before.json      # on the old commit
    python -m benchmarks.harness.equivalence --out after.json       # on the new one
    python -m benchmarks.harness.equivalence --compare before.json after.json

With the manager in sync mode, one torch thread and fixed seeds, a run is deterministic, so a
refactoring that keeps behaviour gives identical episode sequences, bank contents and weights.
Make both files on one machine: the same commit fingerprinted on another machine (another CPU,
another BLAS path) can differ in the weights' last bits, and from there in the episodes. Make them
in the same hour of the day too, or under one fixed clock (``faketime -f '@2026-12-06 23:30:00'
python -m ...``): NetHack reads the wall clock (its night and midnight rules), and the
Room-Monster run's fingerprints at 00:00-00:59 differ from those at 23:00-23:59 for the same commit.

Where a change of path makes the fingerprints differ, rerun a suite's arm on the new code and
compare its seeds with the published ones (final success and area under the curve, the
difference with its 95 % bootstrap CI)::

    python -m benchmarks.harness.runner --suite keyroom-20 --arms crl-sil-obs --seeds 0 1 2 3 4 --results /tmp/new
    python -m benchmarks.harness.equivalence --compare-runs benchmarks/results/keyroom-20/MiniHack-KeyRoom-S5-v0/crl-sil-obs \
        /tmp/new/keyroom-20/MiniHack-KeyRoom-S5-v0/crl-sil-obs --out benchmarks/results/equivalence-X-keyroom-20.json

A trials suite's arm compares the same way, on its held-out figures (cumulative success by the
last trial, success after the first success)::

    python -m benchmarks.suites.trials --family darkroom --arms crl-trials-default-imitate --seeds 0 1 2 3 4 \
        --steps 150000 --out /tmp/new/trials-darkroom
    python -m benchmarks.harness.equivalence --compare-runs benchmarks/results/trials-darkroom/crl-trials-default-imitate \
        /tmp/new/trials-darkroom/crl-trials-default-imitate
"""

from __future__ import annotations

import argparse
import hashlib
import io
import json
import sys
import tempfile
import zipfile
from pathlib import Path
from typing import Any

import attrs
import numpy as np
import torch

from benchmarks.suites.arms import ARMS

from .cli_checks import check_output_file
from .config import load_hyperparams
from .result_file import read_result, write_result
from .run import train_run

__all__ = ["CASES", "TRIALS_CASES", "fingerprint_run", "fingerprint_trials", "compare_runs", "main"]

#: (env id, arm, steps): the library's default arm and the method arm (bank, demonstrations, self-imitation)
CASES: tuple[tuple[str, str, int], ...] = (
    ("MiniHack-Room-Monster-5x5-v0", "crl", 8192),
    ("MiniHack-KeyRoom-S5-v0", "crl-sil-obs", 4096),
    ("CartPole-v1", "crl", 4096),
)
#: (env, steps): run scope's defaults (``ComplementaryRL(scope="run")``: the novelty bonus, successes
#: written, entry imitation, self-imitation, demonstrations in a quarter of the guided runs)
TRIALS_CASES: tuple[tuple[str, int], ...] = (("HiddenGoalRoom-10x10", 4096),)


def _timeless(values: Any) -> Any:
    """``values`` without wall-clock fields (seconds, rates), which differ between identical runs."""
    if isinstance(values, dict):
        return {k: _timeless(v) for k, v in values.items()
                if not any(t in k for t in ("_s", "time", "per_s", "latency", "wall"))}
    if isinstance(values, list):
        return [_timeless(v) for v in values]
    return values


def _digest(values: Any) -> str:
    return hashlib.sha256(json.dumps(values, sort_keys=True, default=str).encode()).hexdigest()[:16]


def _weights(state: dict[str, Any]) -> dict[str, str]:
    """``weights_digest`` (names and values, by name) and ``weights_values_digest`` (the values
    alone, whatever their names and order: a parameter renamed keeps its digest)."""
    w = hashlib.sha256()
    tensors = []
    for name in sorted(state):
        x = state[name].detach().cpu().numpy()
        w.update(name.encode())
        w.update(x.tobytes())
        tensors.append(hashlib.sha256(str(x.shape).encode() + x.tobytes()).hexdigest())
    return {"weights_digest": w.hexdigest()[:16], "weights_values_digest": _digest(sorted(tensors))}


def fingerprint_run(env_id: str, arm_name: str, steps: int, seed: int = 0) -> dict[str, Any]:
    """One sync-mode run; the episode outcomes, lengths and the curve, with a digest of each."""
    arm = ARMS[arm_name]
    arm = attrs.evolve(arm, manager={**(arm.manager or {}), "mode": "sync"}) if arm.crl else arm
    torch.manual_seed(seed)
    np.random.seed(seed)  # noqa: NPY002 - the global generator, which SB3 and the envs draw from, is what must be fixed
    with tempfile.TemporaryDirectory() as tmp:
        res = train_run(env_id, arm, seed, load_hyperparams(env_id), steps, eval_episodes=0, model_dir=tmp)
        with zipfile.ZipFile(f"{tmp}/model.zip") as z:
            weights = torch.load(io.BytesIO(z.read("policy.pth")), map_location="cpu")
    crl = _timeless(res.get("crl"))
    return {"env_id": env_id, "arm": arm_name, "steps": steps, "seed": seed, "episodes": res["episodes"],
            "curve_digest": _digest(_timeless(res.get("curve"))), **_weights(weights),
            "bank_digest": _digest(_timeless(res.get("bank_curve"))), "crl_digest": _digest(crl),
            "crl_values_digest": _digest(sorted(map(str, _leaves(crl))))}


def fingerprint_trials(env: str, steps: int, seed: int = 0) -> dict[str, Any]:
    """A short run of run scope's defaults on the hidden-goal room: every trial's outcome in order
    (instance, trial, guided, success), the memory's counts and the final weights, digested."""
    from stable_baselines3.common.callbacks import BaseCallback

    from integrations.minihack.hidden_goal import HiddenGoalRoom, goal_demonstration, split_goals
    from integrations.sb3 import ComplementaryRL

    class Outcomes(BaseCallback):
        def __init__(self) -> None:
            super().__init__()
            self.rows: list[Any] = []

        def _on_step(self) -> bool:
            for info in self.locals["infos"]:
                if "trial_success" in info:
                    t = info["trial"]
                    self.rows.append([t["instance"], t["index"], t["run"], t["guided"], info["trial_success"]])
            return True

    torch.manual_seed(seed)
    np.random.seed(seed)  # noqa: NPY002 - as in fingerprint_run
    train, _ = split_goals()
    run = ComplementaryRL(HiddenGoalRoom, scope="run", instances=train, demonstrations=goal_demonstration,
                          seed=seed)
    try:
        outcomes = Outcomes()
        run.model.learn(steps, callback=[outcomes, *run.callbacks])
        weights = _weights(run.model.policy.state_dict())
        memory = _timeless(dict(run.memory.stats))
    finally:
        run.close()
    return {"env_id": env, "arm": "run-scope-defaults", "steps": steps, "seed": seed, "episodes": len(outcomes.rows),
            "curve_digest": _digest(outcomes.rows), **weights,
            "crl_digest": _digest(memory), "crl_values_digest": _digest(sorted(map(str, _leaves(memory))))}


def _leaves(values: Any) -> list[Any]:
    """The leaf values of nested dicts and lists, names dropped (a renamed counter keeps its value)."""
    if isinstance(values, dict):
        return [x for v in values.values() for x in _leaves(v)]
    if isinstance(values, list):
        return [x for v in values for x in _leaves(v)]
    return [values]


def _trials_metric(name: str) -> Any:
    """A held-out figure of a trials result (``benchmarks.suites.trials``), with experience."""
    def value(run: dict) -> float:
        got = run["heldout"]["with_experience"]
        return float(got["cumulative_by_trial"][-1] if name == "cumulative" else got[name])
    return value


def compare_runs(before: str, after: str) -> dict[str, Any]:
    """The seeds of one arm's result files in two folders (``seed*.json``), after minus before with
    its 95 % bootstrap CI per figure: a learning suite's final success and area under the curve, or
    a trials suite's held-out cumulative success by the last trial and success after the first
    success (with experience). ``within`` says whether the CI of the first figure's difference
    spans zero; ``metrics`` names the figures in that order."""
    from pathlib import Path

    from benchmarks.reporting.results_reading import auc
    from benchmarks.reporting.stats import difference_ci

    runs = [{int(f.stem[4:]): read_result(f, needs=()) for f in sorted(Path(d).glob("seed*.json"))}
            for d in (before, after)]
    for folder, side in zip((before, after), runs, strict=True):
        if len(side) < 2:  # (a difference's CI needs two seeds a side)
            raise ValueError(f"{folder} holds {len(side)} seed*.json file{'s' if len(side) != 1 else ''}: give an arm's "
                             "folder of one result per seed (e.g. benchmarks/results/keyroom-20/<env>/<arm>), "
                             "two seeds at least")
    trials = any("heldout" in r and "with_experience" in (r["heldout"] or {}) for side in runs for r in side.values())
    figures = ({"final": _trials_metric("cumulative"), "after_first_success": _trials_metric("after_first_success")}
               if trials else {"final": lambda r: float(r["final_outcome"]), "auc": auc})
    out: dict[str, Any] = {"before": before, "after": after, "metrics": list(figures)}
    for name, value in figures.items():
        a, b = ([value(r) for _, r in sorted(side.items())] for side in runs)
        d, lo, hi = difference_ci(b, a)
        out[name] = {"before": a, "after": b, "before_mean": float(np.mean(a)), "after_mean": float(np.mean(b)),
                     "difference": d, "ci": [lo, hi]}
    out["seeds"] = {"before": sorted(runs[0]), "after": sorted(runs[1])}
    out["within"] = bool(out["final"]["ci"][0] <= 0 <= out["final"]["ci"][1])
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", help="write the fingerprints here (JSON)")
    p.add_argument("--compare", nargs=2, metavar=("BEFORE", "AFTER"), help="compare two fingerprint files")
    p.add_argument("--compare-runs", nargs=2, metavar=("BEFORE_DIR", "AFTER_DIR"),
                   help="compare one arm's seeds in two result folders (final success, AUC, CIs)")
    p.add_argument("--scope", choices=("all", "task", "run"), default="all",
                   help="the task-scope cases (CASES), the run-scope ones (TRIALS_CASES), or all")
    args = p.parse_args(argv)
    if args.out:
        try:
            check_output_file(Path(args.out), "--out")
        except ValueError as exc:
            p.error(str(exc))
    if args.compare_runs:
        try:
            res = compare_runs(*args.compare_runs)
        except ValueError as exc:
            p.error(str(exc))
        for name in res["metrics"]:
            r = res[name]
            print(f"{name:6s} before {r['before_mean']:.3f} ({', '.join(f'{x:.2f}' for x in r['before'])})  after "
                  f"{r['after_mean']:.3f} ({', '.join(f'{x:.2f}' for x in r['after'])})  after - before "
                  f"{r['difference']:+.3f} [{r['ci'][0]:+.3f}, {r['ci'][1]:+.3f}]")
        if args.out:
            write_result(Path(args.out), res, announce=False)
        return 0 if res["within"] else 1
    if args.compare:
        try:
            a, b = ({(r["env_id"], r["arm"]): r for r in json.loads(Path(f).read_text())} for f in args.compare)
        except (OSError, ValueError, TypeError, KeyError) as exc:
            p.error(f"--compare reads two fingerprint files (written by --out): {type(exc).__name__}: {exc}")
        same = True
        for case in sorted(a.keys() | b.keys()):
            x, y = a.get(case), b.get(case)
            if x is None or y is None:
                print(f"{case[0]:32s} {case[1]:18s} only in {'AFTER' if x is None else 'BEFORE'}")
                continue
            diff = [k for k in x if k in y and x[k] != y[k]]  # a field one file lacks is not compared
            same &= not diff
            print(f"{case[0]:32s} {case[1]:18s} {'identical' if not diff else 'DIFFERS: ' + ', '.join(diff)}")
        return 0 if same else 1
    torch.set_num_threads(1)
    rows = []
    for env_id, arm, steps in CASES if args.scope != "run" else ():
        rows.append(fingerprint_run(env_id, arm, steps))
        print(json.dumps(rows[-1]), flush=True)
    for env, steps in TRIALS_CASES if args.scope != "task" else ():
        rows.append(fingerprint_trials(env, steps))
        print(json.dumps(rows[-1]), flush=True)
    if args.out:
        write_result(Path(args.out), rows, announce=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
