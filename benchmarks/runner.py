"""Run a benchmark suite: every env x arm x seed, one result file per run, resumable.

Run::

    python -m benchmarks.runner --suite easy                  # in the foreground, progress bar
    python -m benchmarks.runner --suite easy --background     # detached; log in the results folder
    python -m benchmarks.runner --suite easy --seeds 0 1 --arms ppo crl --steps 60000 --jobs 2
    python -m benchmarks.runner --suite smoke --envs Acrobot-v1 --hyperparams my_ppo.yml   # any env

Result files: ``benchmarks/results/<suite>/<env>/<arm>/seed<k>.json``. A run whose file
exists is skipped, so an interrupted suite resumes where it stopped. ``python -m
benchmarks.report`` turns the files into ``docs/benchmarks.md``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import traceback
from concurrent.futures import ProcessPoolExecutor, as_completed
from multiprocessing import get_context
from pathlib import Path
from typing import Any

from tqdm import tqdm

from .arms import ARMS
from .config import HYPERPARAMS, load_hyperparams
from .suites import SUITES

RESULTS = Path(__file__).resolve().parent / "results"


def result_path(root: Path, suite: str, env_id: str, arm: str, seed: int) -> Path:
    return root / suite / env_id.replace("/", "_") / arm / f"seed{seed}.json"


def _one(job: dict[str, Any]) -> tuple[str, str, str | None]:
    """Run one job in a worker process; returns (path, status, traceback or None).

    Status: ``"done"``, ``"failed"``, or ``"skipped"`` when the result file appeared since the
    suite started (written by another runner on the same results folder).
    """
    import warnings

    warnings.filterwarnings("ignore")
    from .run import train_run

    if Path(job["path"]).exists():
        return job["path"], "skipped", None
    try:
        res = train_run(job["env_id"], ARMS[job["arm"]], job["seed"], job["hyper"], job["steps"],
                        job["eval_episodes"], eval_every=job["eval_every"])
        res["suite"] = job["suite"]
        res["command"] = job["command"]
        path = Path(job["path"])
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(res, indent=1, default=str))
        os.replace(tmp, path)
        return job["path"], "done", None
    except Exception:
        return job["path"], "failed", traceback.format_exc()


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description="Run a benchmark suite (env x arm x seed).")
    p.add_argument("--suite", required=True, choices=sorted(SUITES))
    p.add_argument("--envs", nargs="*", help="subset of the suite's envs")
    p.add_argument("--arms", nargs="*", help=f"arms (default: the suite's); known: {sorted(ARMS)}")
    p.add_argument("--seeds", nargs="*", type=int)
    p.add_argument("--steps", type=int, help="override the suite's step budget")
    p.add_argument("--eval-episodes", type=int)
    p.add_argument("--eval-every", type=int, help="evaluate every this many steps (0: only at the end)")
    p.add_argument("--jobs", type=int, default=1, help="runs in parallel (each uses one torch thread)")
    p.add_argument("--results", type=Path, default=RESULTS)
    p.add_argument("--hyperparams", type=Path, default=HYPERPARAMS,
                   help="zoo-style YAML with one block per env id (default: benchmarks/hyperparams/ppo.yml)")
    p.add_argument("--background", action="store_true", help="detach; log to <results>/<suite>/runner.log")
    args = p.parse_args(argv)
    suite = SUITES[args.suite]
    if args.background:
        log = args.results / args.suite / "runner.log"
        log.parent.mkdir(parents=True, exist_ok=True)
        cmd = [sys.executable, "-m", "benchmarks.runner", *[a for a in (argv or sys.argv[1:]) if a != "--background"]]
        with open(log, "a") as f:
            proc = subprocess.Popen(cmd, stdout=f, stderr=subprocess.STDOUT, start_new_session=True,
                                    cwd=Path(__file__).resolve().parent.parent)
        print(f"running in the background (pid {proc.pid}); log: {log}")
        return 0
    arms = tuple(args.arms or suite.arms)
    unknown = [a for a in arms if a not in ARMS]
    if unknown:
        p.error(f"unknown arms {unknown}; known: {sorted(ARMS)}")
    command = " ".join(["python -m benchmarks.runner", *(argv or sys.argv[1:])])
    jobs = []
    for env_id in args.envs or suite.envs:
        try:
            hyper = load_hyperparams(env_id, args.hyperparams)
        except KeyError as exc:
            p.error(str(exc))
        for seed in args.seeds if args.seeds is not None else suite.seeds:
            for arm in arms:
                path = result_path(args.results, suite.name, env_id, arm, seed)
                if path.exists():
                    continue
                jobs.append({"env_id": env_id, "arm": arm, "seed": seed, "hyper": hyper,
                             "steps": args.steps or suite.steps, "suite": suite.name, "path": str(path),
                             "eval_episodes": suite.eval_episodes if args.eval_episodes is None
                             else args.eval_episodes, "command": command,
                             "eval_every": suite.eval_every if args.eval_every is None else args.eval_every})
    print(f"suite {suite.name}: {len(jobs)} runs to do", flush=True)
    failures = 0
    with ProcessPoolExecutor(max_workers=max(1, args.jobs), mp_context=get_context("spawn"),
                             max_tasks_per_child=1) as pool:
        futures = [pool.submit(_one, j) for j in jobs]
        for fut in tqdm(as_completed(futures), total=len(futures), desc=suite.name, mininterval=5):
            path, status, err = fut.result()
            if status == "failed":
                failures += 1
                print(f"FAILED {path}\n{err}", flush=True)
            elif status == "skipped":
                print(f"skipped {path} (written meanwhile by another runner)", flush=True)
            else:
                print(f"done {path}", flush=True)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
