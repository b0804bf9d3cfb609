"""Scale-out of the experience service on a local Ray cluster.

Measures, on one machine:

* **rollout throughput**: env steps/s per worker of 1, 2 and 4 rollout workers (Ray actors,
  one process each), each stepping a ``DummyVecEnv`` of ``--n-envs`` envs of each ``--envs``
  (CartPole-v1, MiniHack-Room-5x5-v0), in four arms side by side: without experience (the
  machine's own ceiling), with an in-process bank and learner (``ExperienceVecEnv``, ``async``),
  and through one shared service (``service.vec_env``: one batched retrieval per vector step,
  finished episodes sent to the service's learner in batches) with remote reads (each
  retrieval a call to the service) and with local reads (each worker queries a replica of
  the service's bank in its own process, refreshed at ``poll()``, which the worker calls
  every ``--rollout-steps`` vector steps as CRLCallback does at each rollout's end); the
  retrieval latency the workers see, the refresh's, and the learner's lag (episodes
  submitted and not processed when the run ends; bank versions the replicas are behind);
* **per-call latency** of the service: round trips from one client to an otherwise idle
  service whose bank holds ``--bank-size`` entries (``len``, query of 1 and of 16 keys,
  add and update of 8), and the queries' latency seen by the rollout workers under load;
* **query capacity**: queries/s the service answers when ``--clients`` clients query it
  at once, for single keys and for batches of 16, beside the same bank queried in-process;
* **where the learner runs**: wall-clock of PPO + CRL on CartPole for ``--learner-steps``
  steps with the learner on the PPO process's thread (``sync``), on a thread beside it
  (``async``), and in the service's process (``service``), beside vanilla PPO.

Actions are random (no policy network), so the env steps are as cheap as they get and the
service's cost shows in full. The design target is throughput linear in workers up to the
service's query capacity; on a machine with fewer cores than workers, the curve is bound
by the cores instead, which the no-service column shows.

Results go to ``benchmarks/results/scaleout.json`` and a table into ``docs/scaling.md``
(between ``<!-- scaleout:start -->`` and ``<!-- scaleout:end -->``).

Run::

    python -m benchmarks.perf.scaleout                           # 1, 2, 4 workers, 8 s each
    python -m benchmarks.perf.scaleout --workers 1 2 --seconds 4 --no-doc
    python -m benchmarks.perf.scaleout --envs MiniHack-Room-5x5-v0 --learner-steps 0 --no-doc
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.harness.cli_checks import check_output_file
from benchmarks.harness.result_file import read_result, write_result
from benchmarks.harness.run import versions

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "benchmarks" / "results"
DOC = ROOT / "docs" / "scaling.md"
START, END = "<!-- scaleout:start -->", "<!-- scaleout:end -->"
KEY_DIM, VALUE_DIM = 32, 16
#: the rollout arms: no experience, the service read remotely, read locally, an in-process bank and learner
#: (last: its learner's thread keeps working through its backlog until the worker is killed)
ARMS = ("none", "remote", "local", "in_process")


def load_average() -> str | None:
    """The machine's 1, 5 and 15 minute load averages (``uptime``'s), or None where unknown."""
    try:
        return ", ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        return None


def report_command(argv: list[str] | None) -> str:
    return " ".join(["python -m benchmarks.perf.scaleout", *(argv if argv is not None else sys.argv[1:])])


def pct(samples: list[float] | np.ndarray) -> dict[str, float]:
    """p50 / p95 / mean of latencies in seconds, in milliseconds."""
    a = np.asarray(samples, dtype=np.float64) * 1e3
    if a.size == 0:
        return {"p50_ms": float("nan"), "p95_ms": float("nan"), "mean_ms": float("nan"), "n": 0}
    return {"p50_ms": float(np.percentile(a, 50)), "p95_ms": float(np.percentile(a, 95)),
            "mean_ms": float(a.mean()), "n": int(a.size)}


class RolloutWorker:
    """Steps a DummyVecEnv of one env id with random actions, in one of :data:`ARMS`."""

    def __init__(self, env_id: str, n_envs: int, seed: int) -> None:
        import torch

        import integrations.ray.remote  # noqa: F401  (the library and torch: paid once, here)

        torch.set_num_threads(1)
        self.env_id, self.n_envs, self.seed = env_id, n_envs, seed
        self.venv: Any = None
        self.latencies: list[float] = []
        self.rng = np.random.default_rng(seed)

    def setup(self, arm: str, service: Any) -> tuple[Any, Any]:
        """Build the arm's VecEnv (``service``: the service, for ``remote`` and ``local``); returns
        the base envs' observation and action spaces."""
        from gymnasium import spaces

        from experience_wrappers import ExperienceBank
        from integrations.sb3 import ExperienceVecEnv
        from integrations.sb3.env_families import family_of

        if arm not in ARMS:
            raise ValueError(f"arm must be one of {ARMS}, got {arm!r}")
        if self.venv is not None:
            raise RuntimeError("a worker measures one arm per setup: call teardown() first")
        fam = family_of(self.env_id)
        venv: Any = fam.make_vec(self.env_id, self.n_envs, self.seed)  # the arms wrap it differently
        base_spaces = (venv.observation_space, venv.action_space)
        key_encoder = fam.key_encoder(venv.observation_space) if fam.key_encoder else None
        wrapper: dict[str, Any] = {"k": 4, "retrieve_every": 8, "seed": self.seed}
        if arm == "in_process":
            venv = ExperienceVecEnv(venv, ExperienceBank(seed=self.seed), key_encoder=key_encoder,
                                    manager_kwargs={"mode": "async"}, **wrapper)
        elif arm in ("remote", "local"):
            venv = service.vec_env(venv, key_encoder=key_encoder,
                                   manager_kwargs={"local_reads": arm == "local"}, **wrapper)
        if arm != "none":
            retriever = venv.injector.retriever
            query = retriever._query_keys

            def timed_query(*args: Any, **kwargs: Any) -> Any:
                t0 = time.perf_counter()
                out = query(*args, **kwargs)
                self.latencies.append(time.perf_counter() - t0)
                return out

            retriever._query_keys = timed_query  # the wrapper's retrievals, timed
        self.venv = venv
        action_space = venv.action_space
        assert isinstance(action_space, spaces.Discrete)  # a Discrete-action env
        self.n_actions = int(action_space.n)
        self.venv.reset()
        return base_spaces

    def teardown(self) -> None:
        """Close the envs without waiting for a learner (the service is killed next, its backlog
        unprocessed; an in-process learner's thread ends with this process)."""
        if self.venv is not None:
            base = getattr(self.venv, "venv", self.venv)
            base.close()
            self.venv = None

    def run(self, seconds: float, rollout_steps: int) -> dict[str, Any]:
        """Step for ``seconds``; the manager's ``poll()`` every ``rollout_steps`` vector steps."""
        self.latencies.clear()
        manager = getattr(self.venv, "manager", None)
        polls: list[float] = []
        steps = episodes = vec_steps = 0
        t0 = time.perf_counter()
        while time.perf_counter() - t0 < seconds:
            _, _, dones, _ = self.venv.step(self.rng.integers(self.n_actions, size=self.n_envs))
            steps += self.n_envs
            episodes += int(dones.sum())
            vec_steps += 1
            if manager is not None and vec_steps % rollout_steps == 0:
                t1 = time.perf_counter()
                manager.poll()  # what CRLCallback does at each rollout's end
                polls.append(time.perf_counter() - t1)
        elapsed = time.perf_counter() - t0
        out: dict[str, Any] = {"steps": steps, "episodes": episodes, "seconds": elapsed,
                               "steps_per_s": steps / elapsed, "query": pct(self.latencies), "poll": pct(polls)}
        if manager is not None:
            st = manager.stats()
            out["backlog"] = float(st.get("learner_backlog", st["queue"]))
            if "replica_lag" in st:
                out.update(replica_lag=st["replica_lag"], replica_swaps=st["replica_swaps"])
        return out


class QueryClient:
    """Queries the service as fast as it answers, for a fixed time."""

    def __init__(self, service: Any, seed: int) -> None:
        self.service = service
        self.keys = np.random.default_rng(seed).standard_normal((4096, KEY_DIM)).astype(np.float32)

    def ready(self) -> bool:
        return len(self.service) > 0

    def run(self, seconds: float, batch: int) -> dict[str, float]:
        calls, i = 0, 0
        t0 = time.perf_counter()
        while time.perf_counter() - t0 < seconds:
            self.service.query(self.keys[i:i + batch], 4)
            calls += 1
            i = (i + batch) % (len(self.keys) - batch)
        return {"calls": calls, "seconds": time.perf_counter() - t0}


def rollout(ray: Any, env_id: str, workers: int, args: argparse.Namespace) -> list[dict[str, Any]]:
    """One pool of ``workers`` workers on ``env_id``, measured in each arm in turn (a fresh
    service for each service arm); one result per arm."""
    from integrations.ray import start_service

    remote = ray.remote(num_cpus=0)(RolloutWorker)
    pool = [remote.remote(env_id, args.n_envs, seed) for seed in range(workers)]
    results = []
    for arm in args.arms:
        service = start_service(num_cpus=0, seed=0) if arm in ("remote", "local") else None
        ray.get([w.setup.remote(arm, service) for w in pool])
        out = ray.get([w.run.remote(args.seconds, args.rollout_steps) for w in pool])
        per = [float(o["steps_per_s"]) for o in out]
        result: dict[str, Any] = {
            "env": env_id, "workers": workers, "arm": arm, "service": service is not None,
            "steps_per_s": float(sum(per)), "per_worker_steps_per_s": per,
            "mean_per_worker_steps_per_s": float(np.mean(per)), "episodes": int(sum(o["episodes"] for o in out)),
        }
        if arm != "none":
            result["query_p50_ms_per_worker"] = [float(o["query"]["p50_ms"]) for o in out]
            result["query_p95_ms_max"] = float(max(o["query"]["p95_ms"] for o in out))
            result["poll_p50_ms_per_worker"] = [float(o["poll"]["p50_ms"]) for o in out]
            result["poll_max_ms"] = float(max(o["poll"]["p95_ms"] for o in out))
            result["backlog_per_worker"] = [o["backlog"] for o in out]
        if arm == "local":
            result["replica_lag_per_worker"] = [o["replica_lag"] for o in out]
            result["replica_swaps_per_worker"] = [o["replica_swaps"] for o in out]
        if service is not None:
            learner = service.call("learner_stats")
            result["learner"] = {k: learner[k] for k in ("episodes_submitted", "episodes_processed", "learner_backlog",
                                                          "bank_version", "entries_added", "busy_seconds")}
            result["bank_size"] = len(service)
            result["service_replicas_made"] = int(service.ping()["replicas_made"])
        ray.get([w.teardown.remote() for w in pool])
        if service is not None:  # killed, not shut down: a shutdown would first work through the backlog
            ray.kill(service.actor, no_restart=True)
        results.append(result)
        print(f"{env_id} workers={workers} {arm}: {result['mean_per_worker_steps_per_s']:.0f} steps/s per worker"
              + (f", query p50 {np.mean(result['query_p50_ms_per_worker']):.3f} ms" if arm != "none" else ""),
              flush=True)
    for w in pool:
        ray.kill(w)
    return results


def latency(service: Any, rounds: int) -> dict[str, Any]:
    rng = np.random.default_rng(1)
    keys = rng.standard_normal((rounds * 16 + 16, KEY_DIM)).astype(np.float32)
    calls = {
        "len": lambda i: len(service),
        "query_1": lambda i: service.query(keys[i:i + 1], 4),
        "query_16": lambda i: service.query(keys[i:i + 16], 4),
        "add_8": lambda i: service.add(keys[i:i + 8] + 100.0, np.ones((8, VALUE_DIM), np.float32)),
        "update_8": lambda i: service.update(np.arange(i, i + 8), np.ones(8), 0.99),
    }
    out = {}
    for name, fn in calls.items():
        fn(0)
        samples = []
        for r in range(rounds):
            t0 = time.perf_counter()
            fn(r * 16)
            samples.append(time.perf_counter() - t0)
        out[name] = pct(samples)
    return out


def capacity(ray: Any, service: Any, local_bank: Any, clients: int, seconds: float) -> dict[str, Any]:
    remote = ray.remote(num_cpus=0)(QueryClient)
    pool = [remote.remote(service, seed) for seed in range(clients)]
    ray.get([c.ready.remote() for c in pool])
    out: dict[str, Any] = {"clients": clients}
    for batch in (1, 16):
        res = ray.get([c.run.remote(seconds, batch) for c in pool])
        qps = sum(r["calls"] / r["seconds"] for r in res)
        out[f"batch_{batch}"] = {"calls_per_s": float(qps), "keys_per_s": float(qps * batch)}
        keys = np.random.default_rng(7).standard_normal((4096, KEY_DIM)).astype(np.float32)
        calls, i, t0 = 0, 0, time.perf_counter()
        while time.perf_counter() - t0 < seconds:
            local_bank.query(keys[i:i + batch], 4)
            calls += 1
            i = (i + batch) % (len(keys) - batch)
        local = calls / (time.perf_counter() - t0)
        out[f"batch_{batch}"].update(in_process_calls_per_s=float(local), in_process_keys_per_s=float(local * batch))
    for c in pool:
        ray.kill(c)
    return out


def learner_placement(steps: int, seed: int = 0) -> dict[str, Any]:
    """Wall-clock of ``model.learn(steps)`` with the learner in sync, async and service modes."""
    import torch
    from stable_baselines3 import PPO
    from stable_baselines3.common.env_util import make_vec_env

    from experience_wrappers import ExperienceBank
    from integrations.ray import start_service
    from integrations.sb3 import CRLCallback, ExperienceVecEnv

    torch.set_num_threads(1)
    out: dict[str, Any] = {"env": "CartPole-v1", "steps": steps, "n_envs": 4,
                           "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}
    for arm in ("ppo", "sync", "async", "service"):
        venv = make_vec_env("CartPole-v1", n_envs=4, seed=seed)
        service = None
        if arm in ("sync", "async"):
            venv = ExperienceVecEnv(venv, ExperienceBank(seed=seed), manager_kwargs={"mode": arm}, seed=seed)
        elif arm == "service":
            service = start_service(num_cpus=0, seed=seed)
            venv = service.vec_env(venv, seed=seed)
        policy = "MlpPolicy" if arm == "ppo" else "MultiInputPolicy"
        model = PPO(policy, venv, n_steps=128, batch_size=64, n_epochs=4, seed=seed, device="cpu")
        t0 = time.perf_counter()
        model.learn(steps, callback=None if arm == "ppo" else CRLCallback())  # CRL: ends with a flush
        wall = time.perf_counter() - t0
        row: dict[str, Any] = {"wall_s": wall, "steps_per_s": steps / wall}
        if arm != "ppo":
            wrapped: Any = venv  # an ExperienceVecEnv or the service's: both have a manager
            st = wrapped.manager.stats()
            row.update(episodes_processed=st["episodes_processed"], learner_busy_s=st["busy_seconds"])
        out[arm] = row
        venv.close()
        if service is not None:
            service.shutdown()
    sync = out["sync"]
    out["manager_share_of_sync"] = sync["learner_busy_s"] / sync["wall_s"]
    for arm in ("async", "service"):
        out[arm]["vs_sync"] = out[arm]["wall_s"] / sync["wall_s"]
    return out


def _mean(xs: list[float]) -> float:
    return float(np.mean(xs)) if xs else float("nan")


def fmt_rollout(report: dict[str, Any], env_id: str) -> list[str]:
    """The rollout table of one env: per-worker steps/s in each arm, latencies and lag."""
    rows = {(r["workers"], r["arm"]): r for r in report["rollout"] if r["env"] == env_id}
    a = report["args"]
    lines = [f"**{env_id}**, {a['n_envs']} envs per worker, random actions, {a['seconds']:g} s per point, "
             f"`poll()` every {a['rollout_steps']} vector steps:", "",
             "| workers | steps/s per worker: no experience | in-process bank | service, remote reads | "
             "service, local reads | local / no experience | local / in-process | local, per worker vs 1 worker | "
             "retrieval p50 (ms): remote / local | refresh p50 (ms) | learner: processed / sent (backlog) | "
             "replica lag (versions) |",
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]

    def rate(w: int, arm: str) -> str:
        r = rows.get((w, arm))
        return "-" if r is None else f"{r['mean_per_worker_steps_per_s']:.0f}"

    one_local = rows.get((min(a["workers"]), "local"))
    for w in a["workers"]:
        if not any((w, arm) in rows for arm in ARMS):
            continue
        none, loc, rem = rows.get((w, "none")), rows.get((w, "local")), rows.get((w, "remote"))

        def ratio(r: dict[str, Any] | None, base: dict[str, Any] | None) -> str:
            return "-" if r is None or base is None else \
                f"{r['mean_per_worker_steps_per_s'] / base['mean_per_worker_steps_per_s']:.2f}x"

        vs_none, vs_in, vs_one = ratio(loc, none), ratio(loc, rows.get((w, "in_process"))), ratio(loc, one_local)
        p50 = " / ".join("-" if r is None else f"{_mean(r['query_p50_ms_per_worker']):.3f}" for r in (rem, loc))
        refresh = "-" if loc is None else f"{_mean(loc['poll_p50_ms_per_worker']):.1f}"
        learned = lag = "-"
        if loc is not None:
            le = loc["learner"]
            learned = (f"{le['episodes_processed']:.0f} / {le['episodes_submitted']:.0f} "
                       f"({le['learner_backlog']:.0f})")
            lag = ", ".join(f"{x:.0f}" for x in loc["replica_lag_per_worker"])
        lines.append(f"| {w} | {rate(w, 'none')} | {rate(w, 'in_process')} | {rate(w, 'remote')} | "
                     f"{rate(w, 'local')} | {vs_none} | {vs_in} | {vs_one} | {p50} | {refresh} | {learned} | {lag} |")
    return lines


def fmt_table(report: dict[str, Any]) -> str:
    a = report["args"]
    load = report.get("load")
    lines = [
        f"Measured {report['date']} on {report['machine']['cpus']} CPU cores"
        + (f" (load average before the run: {load})" if load else "")
        + f"; `{report.get('command', 'python -m benchmarks.perf.scaleout')}`; `benchmarks/results/scaleout.json`.",
    ]
    for env_id in a["envs"]:
        lines += ["", *fmt_rollout(report, env_id)]
    lat = report["latency"]
    lines += ["", f"Per-call latency, one client, idle service, bank of {report['args']['bank_size']:,} entries "
              f"(key {KEY_DIM}, value {VALUE_DIM}, k = 4):", "",
              "| call | p50 (ms) | p95 (ms) |", "| --- | --- | --- |"]
    for name, v in lat.items():
        lines.append(f"| `{name}` | {v['p50_ms']:.2f} | {v['p95_ms']:.2f} |")
    cap = report["capacity"]
    lines += ["", f"Query capacity, {cap['clients']} clients at once (same bank):", "",
              "| keys per call | service calls/s | service keys/s | in-process calls/s (one thread) |",
              "| --- | --- | --- | --- |"]
    for b in (1, 16):
        v = cap[f"batch_{b}"]
        lines.append(f"| {b} | {v['calls_per_s']:.0f} | {v['keys_per_s']:.0f} | {v['in_process_calls_per_s']:.0f} |")
    lp = report.get("learner_placement")
    if lp:
        lines += ["", f"Where the learner runs (measured {lp.get('date', report['date'])}; "
                  f"`--only-learner --learner-steps {lp['steps']}` reruns this part alone): PPO + CRL on "
                  f"{lp['env']}, {lp['steps']:,} steps, {lp['n_envs']} envs (`ExperienceVecEnv`), one seed, "
                  "one round; the manager's share of the sync wall-clock is "
                  f"{100 * lp['manager_share_of_sync']:.0f} %:", "",
                  "| learner | wall-clock (s) | steps/s | vs sync |", "| --- | --- | --- | --- |"]
        names = {"ppo": "none (vanilla PPO)", "sync": "PPO's thread (`sync`)", "async": "a thread beside PPO (`async`)",
                 "service": "the service's process (Ray actor)"}
        for arm, label in names.items():
            v = lp[arm]
            ratio = f"{v['vs_sync']:.2f}x" if "vs_sync" in v else ("1.00x" if arm == "sync" else "-")
            lines.append(f"| {label} | {v['wall_s']:.1f} | {v['steps_per_s']:.0f} | {ratio} |")
    return "\n".join(lines)


def write_doc(table: str, path: Path = DOC) -> None:
    text = path.read_text() if path.exists() else f"# Scaling\n\n{START}\n{END}\n"
    if START not in text or END not in text:
        text = text.rstrip() + f"\n\n## Measured scale-out\n\n{START}\n{END}\n"
    head, rest = text.split(START, 1)
    _, tail = rest.split(END, 1)
    path.write_text(f"{head}{START}\n{table}\n{END}{tail}")


def main(argv: list[str] | None = None) -> dict[str, Any]:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--workers", type=int, nargs="+", default=[1, 2, 4])
    p.add_argument("--seconds", type=float, default=6.0, help="measuring time per point")
    p.add_argument("--envs", "--env", nargs="+", default=["CartPole-v1", "MiniHack-Room-5x5-v0"])
    p.add_argument("--arms", nargs="+", choices=ARMS, default=list(ARMS), help="the rollout arms measured")
    p.add_argument("--rollout-steps", type=int, default=128,
                   help="vector steps between two poll() calls (a rollout's end under CRLCallback)")
    p.add_argument("--n-envs", type=int, default=4)
    p.add_argument("--bank-size", type=int, default=10_000)
    p.add_argument("--clients", type=int, default=4)
    p.add_argument("--latency-rounds", type=int, default=300)
    p.add_argument("--learner-steps", type=int, default=8192,
                   help="PPO + CRL steps per learner placement (0: skip, keep the figures already in --out)")
    p.add_argument("--only-learner", action="store_true",
                   help="measure only where the learner runs; keep the other figures of --out")
    p.add_argument("--address", default=None, help="an existing Ray cluster (default: a local one)")
    p.add_argument("--out", type=Path, default=RESULTS / "scaleout.json")
    p.add_argument("--no-doc", action="store_true",
                   help="do not rewrite the table in docs/scaling.md (never rewritten for an --out elsewhere)")
    args = p.parse_args(argv)
    for name in ("seconds", "rollout_steps", "n_envs", "bank_size", "clients", "latency_rounds"):
        if not getattr(args, name) > 0:
            p.error(f"--{name.replace('_', '-')} must be > 0, got {getattr(args, name)}")
    if min(args.workers) < 1 or args.learner_steps < 0:
        p.error(f"--workers must be >= 1 and --learner-steps >= 0, got {args.workers} and {args.learner_steps}")
    try:
        check_output_file(args.out, "--out")
    except ValueError as exc:
        p.error(str(exc))
    if args.only_learner and not args.out.is_file():
        p.error(f"--only-learner keeps the other figures of --out, and there is no {args.out}")
    if args.out.resolve() != (RESULTS / "scaleout.json").resolve():
        args.no_doc = True  # (the project's page shows the project's figures only)

    from experience_wrappers import ExperienceBank
    from integrations.ray import ensure_connected, start_service

    cpus = os.cpu_count() or 1
    init = {} if args.address else {"num_cpus": max(max(args.workers), args.clients, cpus)}
    ray = ensure_connected(args.address, **init)
    report: dict[str, Any] = {
        "command": report_command(argv),
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "machine": {"cpus": cpus, "platform": platform.platform()}, "versions": versions("ray"),
        "load": load_average(),
        "args": {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()},
        "rollout": [],
    }
    if args.only_learner:
        report = {**read_result(args.out, needs=()), "learner_placement": learner_placement(args.learner_steps)}
        report["learner_placement"]["command"] = report_command(argv)
        return _write(report, args)
    for env_id in args.envs:
        for w in args.workers:
            report["rollout"] += rollout(ray, env_id, w, args)

    rng = np.random.default_rng(0)
    keys = rng.standard_normal((args.bank_size, KEY_DIM)).astype(np.float32)
    values = rng.standard_normal((args.bank_size, VALUE_DIM)).astype(np.float32)
    bank_config = {"seed": 0, "capacity": max(4096, 2 * args.bank_size)}
    local = ExperienceBank(**bank_config)
    service = start_service(num_cpus=0, **bank_config)
    for lo in range(0, args.bank_size, 2000):
        service.add(keys[lo:lo + 2000], values[lo:lo + 2000])
        local.add(keys[lo:lo + 2000], values[lo:lo + 2000])
    report["latency"] = latency(service, args.latency_rounds)
    print("latency:", json.dumps({k: round(v["p50_ms"], 3) for k, v in report["latency"].items()}), flush=True)
    report["capacity"] = capacity(ray, service, local, args.clients, args.seconds)
    print("capacity:", json.dumps(report["capacity"]), flush=True)
    service.shutdown()
    if args.learner_steps:
        report["learner_placement"] = learner_placement(args.learner_steps)
    elif args.out.exists():  # not measured this time: keep the last measurement (it carries its date)
        kept = read_result(args.out, needs=()).get("learner_placement")
        if kept:
            report["learner_placement"] = kept

    return _write(report, args)


def _write(report: dict[str, Any], args: argparse.Namespace) -> dict[str, Any]:
    """Write the result file, print the table and (unless ``--no-doc``) put it in the docs page."""
    write_result(args.out, report)
    table = fmt_table(report)
    print(table)
    if not args.no_doc:
        write_doc(table)
    return report


if __name__ == "__main__":
    main()
