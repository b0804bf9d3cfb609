"""Run a benchmark suite, or PPO vs PPO + CRL on any env: every env x arm x seed, one result file per run.

Run (``crl-bench`` is the same command, installed by ``pip install``; both work from any folder)::

    crl-bench --env Acrobot-v1                                # any gymnasium id: ppo vs crl, seed 0
    crl-bench --env Acrobot-v1 --seeds 0 1 2 --hyperparams n_envs:4 learning_rate:1e-3
    crl-bench --env MiniHack-Room-5x5-v0 --name my-room --save-model --tensorboard runs/tb
    crl-bench --env CartPole-v1 --algo recurrent-ppo          # or a2c, maskable-ppo (the sb3 extra)
    python -m benchmarks.harness.runner --suite easy          # a suite of benchmarks/suites/suites.py
    python -m benchmarks.harness.runner --suite easy --background  # detached; log in the results folder
    python -m benchmarks.harness.runner --suite easy --seeds 0 1 --arms ppo crl --steps 60000 --jobs 2

``--hyperparams`` takes a zoo-style YAML (one block per env id) and/or ``key:value``
overrides, as rl-zoo3 does. With ``--env``, an env without a block gets
:data:`DEFAULT_HYPERPARAMS` (printed, and stored in the result file with their source).
Keys the runner cannot apply (``policy``, ``policy_kwargs``, ``normalize``, ...) are refused
before any run starts, as is an env id that gymnasium does not know.

Result files: ``<results>/<suite>/<env>/<arm>/seed<k>.json``, where ``<suite>`` is
``--name`` (default: the env id) for ``--env`` runs, and ``<results>`` is
``benchmarks/results`` inside the repository, ``./crl-results`` elsewhere (``--results``).
A run whose file exists is skipped, so an interrupted suite resumes where it stopped.
Stopping the runner (Ctrl-C, SIGTERM: exit code 143; even ``kill -9``) stops its runs
(:mod:`benchmarks.harness.workers`), and a stopped run writes no result file. Every argument
(seeds, hyperparameters and their file, the output folders) is checked before the first run.
``python -m benchmarks.reporting.report --results <results> --out report.md`` turns the files into tables
and figures.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import traceback
from concurrent.futures import as_completed
from pathlib import Path
from typing import Any

import attrs
import numpy as np
from tqdm import tqdm

from benchmarks.suites.arms import ARMS
from benchmarks.suites.suites import SUITES, Suite

from . import zoo
from .algos import ALGOS, algorithm_class, check_algo_arm
from .cli_checks import bad_seeds, check_gym_id, check_output_folder
from .config import HYPERPARAMS, load_hyperparams, read_hyperparams_file, yaml_problem
from .result_file import read_result, write_result
from .workers import Stopped, worker_pool

RESULTS = Path(__file__).resolve().parents[1] / "results"
REPO = Path(__file__).resolve().parents[2]

#: Hyperparameters of an ``--env`` run whose YAML has no block for it (SB3's PPO defaults, but
#: shorter rollouts and more envs, as the suites use).
DEFAULT_HYPERPARAMS: dict[str, Any] = {"n_envs": 8, "n_timesteps": 100_000, "learning_rate": 3.0e-4,
                                       "n_steps": 128, "batch_size": 256, "n_epochs": 4, "ent_coef": 0.0,
                                       "gamma": 0.99}
#: rl-zoo3 keys the runner applies: the PPO arguments of ``benchmarks.harness.run.PPO_KEYS``, plus these.
RUN_KEYS = ("n_envs", "n_timesteps")
#: rl-zoo3 keys it refuses, and why.
REFUSED_KEYS = {
    "normalize": "the runner does not add VecNormalize (see docs/quickstart.md for VecNormalize with CRL)",
    "frame_stack": "the runner does not stack frames",
    "env_wrapper": "the runner builds its envs through the env family (integrations/sb3/env_families.py)",
    "callback": "the runner chooses the callbacks per arm",
    "n_eval_envs": "use --eval-episodes / --eval-every",
}


def default_results() -> Path:
    """``benchmarks/results`` when run from the repository, else ``./crl-results``."""
    return RESULTS if Path.cwd().resolve() == REPO else Path.cwd() / "crl-results"


def parse_hyperparams(items: list[str] | None) -> tuple[Path | None, dict[str, Any]]:
    """Split ``--hyperparams`` into a YAML path and ``key:value`` overrides (values read as YAML).

    >>> parse_hyperparams(["n_envs:4", "learning_rate:1e-3", "gamma:0.98"])
    (None, {'n_envs': 4, 'learning_rate': 0.001, 'gamma': 0.98})
    """
    import yaml

    path, overrides = None, {}
    for item in items or []:
        if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*:.+", item) and not Path(item).exists():
            key, value = item.split(":", 1)
            try:
                parsed = yaml.safe_load(value)
            except yaml.YAMLError as exc:
                raise ValueError(f"--hyperparams {item}: the value {value!r} is not valid YAML "
                                 f"({yaml_problem(exc)})") from None
            if isinstance(parsed, str):  # "1e-3" is a string to YAML 1.1
                try:
                    parsed = float(parsed)
                except ValueError:
                    pass
            overrides[key] = parsed
        elif path is None:
            path = Path(item)
        else:
            raise ValueError(f"--hyperparams takes one YAML file, got {path} and {item}")
    return path, overrides


def check_hyperparams(hyper: dict[str, Any], where: str) -> None:
    """Raise ValueError naming every key the runner would not apply, and why."""
    from .run import PPO_KEYS

    known = {*PPO_KEYS, *RUN_KEYS, *zoo.SKIPPED_KEYS, *zoo.NOTE_KEYS}
    bad = [k for k in hyper if k not in known]
    if bad:
        why = "; ".join(f"{k}: {REFUSED_KEYS.get(k, 'not a key the runner knows')}" for k in bad)
        raise ValueError(f"{where}: hyperparameter(s) {bad} would not be applied ({why}). The runner applies "
                         f"{sorted({*PPO_KEYS, *RUN_KEYS})}; remove the others, or train with the library directly "
                         "(docs/quickstart.md)")
    problems = zoo.check_values(hyper)
    if problems:
        raise ValueError(f"{where}: {'; '.join(problems)}")


def check_env_id(env_id: str) -> None:
    """Raise ValueError if gymnasium (with MiniHack loaded for ``MiniHack-`` ids) has no such env."""
    if env_id.startswith("Meta-World/"):
        if env_id != "Meta-World/MT10":
            raise ValueError(f"unknown Meta-World benchmark {env_id!r}; the runner knows Meta-World/MT10")
        return
    if env_id.startswith("MiniHack-"):
        try:
            import minihack  # noqa: F401  (registers the MiniHack ids)
        except ImportError as exc:
            raise ValueError(f"{env_id!r} needs MiniHack: pip install 'complementary-rl[minihack]'") from exc
    try:
        check_gym_id(env_id)  # (gymnasium's "module:EnvId" form imports the module first)
    except ValueError as exc:
        raise ValueError(f"unknown env id {exc}") from None


def result_path(root: Path, suite: str, env_id: str, arm: str, seed: int) -> Path:
    return root / suite / env_id.replace("/", "_") / arm / f"seed{seed}.json"


#: the job fields a result is tied to: a result made with other values is not reused
SETTINGS_KEYS = ("steps", "hyper", "algo", "eval_episodes", "eval_every", "demonstrations", "model_dir")


def job_settings(job: dict[str, Any]) -> dict[str, Any]:
    """What produced a result: the job's settings and its arm's configuration, as JSON stores them.

    >>> job_settings({"arm": "ppo", "steps": 8, "hyper": {"n_envs": 2}, "algo": "ppo"})["steps"]
    8
    """
    raw = {k: job.get(k) for k in SETTINGS_KEYS}
    raw["model_dir"] = bool(raw["model_dir"])  # saved or not; the path itself follows the result's
    raw["arm"] = attrs.asdict(ARMS[job["arm"]])
    return json.loads(json.dumps(raw, default=str))


def settings_diff(old: dict[str, Any] | None, new: dict[str, Any]) -> list[str]:
    """The settings that differ between a stored result and a new job (empty: reuse it).

    A result written before settings were recorded (``old`` None) is reused as it is.

    >>> settings_diff({"steps": 8, "algo": "ppo"}, {"steps": 16, "algo": "ppo"})
    ['steps: 8 -> 16']
    """
    if old is None:
        return []
    return [f"{k}: {old.get(k)!r} -> {new[k]!r}" if k != "arm" and k != "hyper" else f"{k}: changed"
            for k in sorted(new) if old.get(k) != new[k]]


def summary_lines(paths: list[Path]) -> list[str]:
    """The table printed at the end of a run: per env and arm, seeds, final success (or return), steps/s."""
    groups: dict[tuple[str, str], list[dict[str, Any]]] = {}
    unreadable = []
    for path in paths:
        if path.exists():
            try:
                r = read_result(path, needs=("env_id", "arm", "seed"))
            except ValueError:  # (a damaged file a failed --force rerun left): named under the table
                unreadable.append(path)
                continue
            groups.setdefault((r["env_id"], r["arm"]), []).append(r)
    lines = [f"{'env':28} {'arm':22} {'seeds':>8} {'final':>16} {'steps/s':>8}"]
    for (env_id, arm), runs in sorted(groups.items()):
        finals = [r["final_outcome"] for r in runs if r.get("final_outcome") is not None]
        unit = "success" if runs[0].get("uses_success") else "return"
        if not finals:
            final = "n/a"
        elif len(finals) == 1:
            final = f"{finals[0]:.2f} {unit}"
        else:
            final = f"{np.mean(finals):.2f} ± {np.std(finals):.2f} {unit}"
        seeds = ",".join(str(r["seed"]) for r in sorted(runs, key=lambda r: r["seed"]))
        lines.append(f"{env_id:28} {arm:22} {seeds:>8} {final:>16} {np.mean([r['steps_per_s'] for r in runs]):>8.0f}")
    lines += [f"unreadable (not a result file): {path}" for path in unreadable]
    return lines


def _one(job: dict[str, Any]) -> tuple[str, str, str | None]:
    """Run one job in a worker process; returns (path, status, traceback or None).

    Status: ``"done"``, ``"failed"``, or ``"skipped"`` when the result file appeared since the
    suite started (written by another runner on the same results folder).
    """
    import warnings

    warnings.filterwarnings("ignore")
    from .run import train_run

    if Path(job["path"]).exists() and not job.get("replace"):
        return job["path"], "skipped", None
    try:
        outputs = {k: job[k] for k in ("model_dir", "tensorboard_log", "algo") if job.get(k)}
        res = train_run(job["env_id"], ARMS[job["arm"]], job["seed"], job["hyper"], job["steps"],
                        job["eval_episodes"], eval_every=job["eval_every"],
                        demonstrations=job.get("demonstrations"), **outputs)
        res["suite"] = job["suite"]
        res["command"] = job["command"]
        res["settings"] = job_settings(job)
        if "hyper_source" in job:
            res["hyperparameters_source"] = job["hyper_source"]
        write_result(Path(job["path"]), res, announce=False, default=str)  # atomic, at the very end
        return job["path"], "done", None
    except Exception:
        return job["path"], "failed", traceback.format_exc()


def _env_suite(args: argparse.Namespace) -> Suite:
    """The suite of an ``--env`` run: named by ``--name`` or the env id, ppo vs crl, seed 0."""
    name = args.name or "_".join(e.replace("/", "_") for e in args.env) + ("" if args.algo == "ppo" else f"-{args.algo}")
    return Suite(name, tuple(args.env), ("ppo", "crl"), (0,), eval_episodes=20, thresholds=(0.5, 0.8, 0.9, 0.95))


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="crl-bench", description="PPO vs PPO + Complementary RL: every env x arm x "
                                "seed, one result file per run (resumable).")
    which = p.add_mutually_exclusive_group(required=True)
    which.add_argument("--env", nargs="+", metavar="ENV_ID",
                       help="any registered gymnasium id(s) (MiniHack ids through the MiniHack factory)")
    which.add_argument("--suite", choices=sorted(SUITES), help="a suite of benchmarks/suites/suites.py")
    p.add_argument("--name", help="the suite name that --env runs are filed under (default: the env id)")
    p.add_argument("--envs", nargs="*", help="subset of the suite's envs")
    p.add_argument("--arms", nargs="*", help=f"arms (default: the suite's; ppo crl for --env); known: {sorted(ARMS)}")
    p.add_argument("--seeds", nargs="*", type=int)
    p.add_argument("--steps", type=int, help="override the step budget (default: the suite's, or n_timesteps)")
    p.add_argument("--eval-episodes", type=int)
    p.add_argument("--eval-every", type=int, help="evaluate every this many steps (0: only at the end)")
    p.add_argument("--jobs", type=int, default=1, help="runs in parallel (each uses one torch thread)")
    p.add_argument("--results", type=Path, default=None,
                   help="result folder (default: benchmarks/results in the repository, else ./crl-results)")
    p.add_argument("--hyperparams", nargs="*", metavar="YAML_OR_KEY:VALUE",
                   help="a zoo-style YAML with one block per env id (default: benchmarks/hyperparams/ppo.yml) "
                        "and/or key:value overrides, e.g. n_envs:4 learning_rate:1e-3")
    p.add_argument("--save-model", action="store_true",
                   help="save each run's model (and its bank, extractor, manager) beside its result file")
    p.add_argument("--tensorboard", type=Path, metavar="DIR",
                   help="write each run's TensorBoard log under DIR/<suite>/<env>/<arm>/seed<k>")
    p.add_argument("--algo", default="ppo", choices=sorted(ALGOS),
                   help="the on-policy algorithm (default ppo; the others file their runs under <suite>-<algo>)")
    p.add_argument("--background", action="store_true", help="detach; log to <results>/<suite>/runner.log")
    p.add_argument("--force", action="store_true",
                   help="rerun and replace results made with other settings (default: stop and say what differs)")
    args = p.parse_args(argv)
    for name in ("env", "envs", "arms", "seeds"):  # named twice, run once (not two runs racing for one file)
        if getattr(args, name):
            setattr(args, name, list(dict.fromkeys(getattr(args, name))))
    for name in ("steps", "eval_episodes", "eval_every"):
        value = getattr(args, name)
        if value is not None and (value <= 0 if name == "steps" else value < 0):
            p.error(f"--{name.replace('_', '-')} must be {'positive' if name == 'steps' else '>= 0'}, got {value}")
    if args.jobs <= 0:
        p.error(f"--jobs must be positive, got {args.jobs}")
    if args.eval_every and args.eval_episodes == 0:
        p.error(f"--eval-every {args.eval_every} evaluates 0 episodes (--eval-episodes 0): give episodes, or "
                "--eval-every 0 for no evaluation during training")
    seeds_problem = bad_seeds(args.seeds)
    if seeds_problem:
        p.error(seeds_problem)
    if args.env and args.envs:
        p.error("--envs selects within a --suite; with --env, list the env ids there")
    if args.name is not None and (not args.name.strip() or args.name in (".", "..") or "/" in args.name
                                  or "\\" in args.name):
        p.error(f"--name is a folder name under --results (no path separators, not '.' or '..'), got {args.name!r}")
    suite = _env_suite(args) if args.env else SUITES[args.suite]
    if args.suite and args.algo != "ppo":
        suite = attrs.evolve(suite, name=f"{suite.name}-{args.algo}")
    results = args.results or default_results()
    try:  # before --background makes its log folder there, and before any run
        check_output_folder(results, "--results")
        if args.tensorboard is not None:
            check_output_folder(args.tensorboard, "--tensorboard")
    except ValueError as exc:
        p.error(str(exc))
    arms = tuple(args.arms or suite.arms)
    unknown = [a for a in arms if a not in ARMS]
    if unknown:
        p.error(f"unknown arms {unknown}; known: {sorted(ARMS)}")
    try:
        algorithm_class(args.algo)
        for arm in arms:
            check_algo_arm(args.algo, ARMS[arm])
    except (ValueError, ImportError) as exc:
        p.error(str(exc))
    try:
        yaml_path, overrides = parse_hyperparams(args.hyperparams)
    except ValueError as exc:
        p.error(str(exc))
    yaml_path = yaml_path or HYPERPARAMS
    if not yaml_path.exists():
        p.error(f"no hyperparameter file {yaml_path}")
    try:
        read_hyperparams_file(yaml_path)  # broken YAML, or not a zoo file: said once, before any run
    except ValueError as exc:
        p.error(str(exc))
    envs = args.env or args.envs or suite.envs
    for env_id in envs:  # fail once, before any worker starts
        try:
            check_env_id(env_id)
        except ValueError as exc:
            p.error(str(exc))
    if args.background:  # after every check: a mistake is said here, not in the log
        log = results / suite.name / "runner.log"
        log.parent.mkdir(parents=True, exist_ok=True)
        cmd = [sys.executable, "-m", "benchmarks.harness.runner", *[a for a in (argv or sys.argv[1:]) if a != "--background"]]
        if args.results is None:
            cmd += ["--results", str(results)]
        with open(log, "a") as f:
            proc = subprocess.Popen(cmd, stdout=f, stderr=subprocess.STDOUT, start_new_session=True)
        print(f"running in the background (pid {proc.pid}); log: {log}")
        return 0
    command = " ".join(["python -m benchmarks.harness.runner", *(argv or sys.argv[1:])])
    print(f"results: {results}", flush=True)
    jobs = []
    stale: list[str] = []
    every_path: list[Path] = []
    for env_id in envs:
        try:
            hyper = load_hyperparams(env_id, yaml_path)
            source = f"{yaml_path}"
        except KeyError as exc:
            if not args.env:
                p.error(str(exc))
            hyper, source = dict(DEFAULT_HYPERPARAMS), "defaults (benchmarks.harness.runner.DEFAULT_HYPERPARAMS)"
        if overrides:
            hyper.update(overrides)
            source += " + --hyperparams " + " ".join(f"{k}:{v}" for k, v in overrides.items())
        try:
            check_hyperparams(hyper, f"{env_id} ({source})")
        except ValueError as exc:
            p.error(str(exc))
        for line in zoo.skipped(hyper):
            print(f"{env_id}: skipping {line}", flush=True)
        rollout = int(hyper.get("n_steps", 0)) * int(hyper.get("n_envs", 1))
        if args.steps is not None and 0 < args.steps < rollout:
            print(f"{env_id}: --steps {args.steps} is less than one rollout ({hyper.get('n_envs', 1)} envs x n_steps "
                  f"{hyper.get('n_steps')} = {rollout} steps), which SB3 collects whole: each run trains {rollout}",
                  flush=True)
        hyper = zoo.applied(hyper) | ({"tuned_from": hyper["tuned_from"]} if "tuned_from" in hyper else {})
        if args.env:
            print(f"{env_id}: hyperparameters from {source}: {hyper}", flush=True)
        for seed in args.seeds if args.seeds is not None else suite.seeds:
            for arm in arms:
                path = result_path(results, suite.name, env_id, arm, seed)
                every_path.append(path)
                job = {"env_id": env_id, "arm": arm, "seed": seed, "hyper": hyper, "hyper_source": source,
                       "steps": args.steps or suite.steps, "suite": suite.name, "path": str(path),
                       "eval_episodes": suite.eval_episodes if args.eval_episodes is None
                       else args.eval_episodes, "command": command,
                       "eval_every": suite.eval_every if args.eval_every is None else args.eval_every,
                       "algo": args.algo,
                       "demonstrations": suite.demonstrations}
                if args.save_model:
                    job["model_dir"] = str(path.with_name(f"seed{seed}_model"))
                if args.tensorboard:
                    job["tensorboard_log"] = str(args.tensorboard / suite.name / env_id.replace("/", "_") / arm
                                                 / f"seed{seed}")
                if path.exists():
                    try:
                        diff = settings_diff(read_result(path, needs=()).get("settings"), job_settings(job))
                    except ValueError as exc:  # damaged, or not a result file: --force replaces it
                        if not args.force:
                            p.error(str(exc))
                        diff = ["not a result file"]
                    if not diff:
                        continue  # done with these settings (or before settings were recorded)
                    if not args.force:
                        stale.append(f"{path}: {'; '.join(diff)}")
                        continue
                    job["replace"] = True  # (the old file stays until the new one replaces it, atomically)
                jobs.append(job)
    if stale:
        print("stop: these results were made with other settings:\n  " + "\n  ".join(stale[:10])
              + (f"\n  ... and {len(stale) - 10} more" if len(stale) > 10 else "")
              + "\nrun again with --name NEW (or --results DIR) to file the new runs apart, or --force to replace "
                "them", file=sys.stderr)
        return 2
    print(f"suite {suite.name}: {len(jobs)} runs to do" + ("" if jobs else " (every result exists with these "
                                                            "settings; --force reruns them)"), flush=True)
    failures = finished = 0
    try:
        with worker_pool(max(1, args.jobs), max_tasks_per_child=1) as pool:  # stopping the runner stops them
            futures = [pool.submit(_one, j) for j in jobs]
            for fut in tqdm(as_completed(futures), total=len(futures), desc=suite.name, mininterval=5):
                done_path, status, err = fut.result()
                finished += 1
                if status == "failed":
                    failures += 1
                    print(f"FAILED {done_path}\n{err}", flush=True)
                elif status == "skipped":
                    print(f"skipped {done_path} (written meanwhile by another runner)", flush=True)
                else:
                    print(f"done {done_path}", flush=True)
    except Stopped as stop:  # worker_pool has said so
        print(f"{finished} of {len(jobs)} runs had finished", file=sys.stderr, flush=True)
        return stop.code if isinstance(stop.code, int) else 1
    print("\n" + "\n".join(summary_lines(every_path)))
    print(f"\nreport: python -m benchmarks.reporting.report --results {results} --suites {suite.name} "
          f"--out {results / suite.name / 'report.md'}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
