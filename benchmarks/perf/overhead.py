"""Wall-clock overhead of Complementary RL against vanilla PPO, measured side by side.

For each env (CartPole-v1, the worst case since its steps cost almost nothing, and
MiniHack-Room-5x5-v0), the arms are trained for the same number of steps, alternating
arm by arm over ``--rounds`` rounds so that machine noise hits all of them alike:

* ``ppo``: vanilla PPO (MultiInputPolicy on MiniHack's Dict observation, MlpPolicy on CartPole);
* ``crl-same-net``: PPO + CRL with the *same* policy network as ``ppo`` (the glyph CNN ignores
  the experience keys; on CartPole a CombinedExtractor reads them): the cost of the wrapper,
  retrieval, manager and callback alone;
* ``crl-same-net-vec``: as ``crl-same-net`` with one ``ExperienceVecEnv`` around the VecEnv
  (one batched retrieval per vector step) instead of a wrapper per env;
* ``crl``: PPO + CRL with the attention features extractor (the library's default policy);
* ``crl-sync``: as ``crl`` but with the manager in sync mode (distillation and extractor
  training on the actor's thread): async vs sync wall-clock at equal steps, and the
  manager's share of the sync wall-clock, which bounds what a background worker can save;
* ``crl-process``, ``crl-same-net-vec-process``, ``crl-default-vec-process``: as ``crl``,
  ``crl-same-net-vec`` and ``crl-default-vec`` with the learner in a process of its own
  (``ManagerConfig(mode="process")``: distillation and extractor training leave the actor's
  process; the bank and the credit stay); ``crl-process`` against ``crl-sync`` gives the
  process learner's wall-clock against sync mode; they hand episodes to the learner process
  ``ManagerConfig.handover_every`` (16) at a time;
* ``crl-process-each``, ``crl-same-net-vec-process-each``, ``crl-default-vec-process-each``: the same with
  ``handover_every=1``: each episode sent, and its entries written, on its own (as before the
  batched hand-over): what the batching saves, measured side by side;
* ``crl-default``: the README's two-line form as a user writes it on an existing script: an
  ``ExperienceWrapper`` per env, SB3's default policy, ``CRLCallback()`` with its defaults;
  compared with ``ppo-default``; ``crl-default-async``: the same with the learner on a thread
  (``mode="async"``, the default before ``"auto"``), beside it in the same rounds;
  ``crl-default-nosil``: without self-imitation (``CRLCallback(self_imitation=False)``), and
  ``crl-default-nocallback``: the wrappers alone, no callback: what each part of the two lines costs;
* ``ppo-default`` and ``crl-default-vec``: SB3's default policy for both (no policy
  arguments: ``MultiInputPolicy``'s ``CombinedExtractor`` on a Dict observation, which on the
  CRL arm also reads the experience keys; ``MlpPolicy`` on CartPole's PPO), the CRL arm through
  one ``ExperienceVecEnv``; ``crl-default-vec`` is compared with ``ppo-default``;
* ``crl-default-vec-compact`` and ``crl-default-vec-process-compact``: as ``crl-default-vec``
  and ``crl-default-vec-process`` with the compact input (``CompactExperienceVecEnv``: one experience key of
  ``d + 1`` values instead of three keys: what SB3's default policy pays for the channel's
  layout), compared with ``ppo-default``.

It prints steps/s, the ratios to ``ppo``, async vs sync, and a profile of one CRL run on
CartPole (where the time goes); results go to ``benchmarks/results/overhead.json``.

Run::

    python -m benchmarks.perf.overhead                    # 2 rounds x 8192 steps per arm and env
    python -m benchmarks.perf.overhead --steps 4096 --rounds 1 --envs CartPole-v1
    python -m benchmarks.perf.overhead --arms ppo crl-same-net-vec ppo-default crl-default-vec --no-profile
    python -m benchmarks.perf.overhead --envs MiniHack-Room-5x5-v0 --arms crl-default --n-envs 4 --steps 16384 --rounds 3 --no-profile
"""

from __future__ import annotations

import argparse
import cProfile
import io
import pstats
import sys
import time
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import torch
from stable_baselines3 import PPO

from benchmarks.harness.cli_checks import bad_seeds, check_output_file
from benchmarks.harness.config import load_hyperparams
from benchmarks.harness.result_file import write_result
from benchmarks.harness.run import PPO_KEYS, versions
from benchmarks.harness.zoo import schedule
from experience_wrappers import ExperienceBank
from integrations.sb3 import CRLCallback, crl_policy_kwargs, find_experience
from integrations.sb3.env_families import build_env, family_of

BASELINE_NOTE = "ppo; ppo-default for the default-policy arms"
RESULTS = Path(__file__).resolve().parents[1] / "results"
ARMS = ("ppo", "crl-same-net", "crl-same-net-vec", "crl", "crl-sync", "ppo-default", "crl-default",
        "crl-default-async", "crl-default-nosil", "crl-default-nocallback", "crl-default-vec", "crl-process", "crl-same-net-vec-process", "crl-default-vec-process", "crl-process-each",
        "crl-same-net-vec-process-each", "crl-default-vec-process-each",
        "crl-default-vec-compact", "crl-default-vec-process-compact")
#: the PPO arm each arm's steps/s are divided by
BASELINE = {arm: "ppo-default" if "default" in arm else "ppo"
            for arm in ARMS}


def measure(env_id: str, arm: str, steps: int, seed: int, profile: bool = False,
            n_envs: int | None = None) -> dict[str, Any]:
    """Train one arm for ``steps`` and time ``model.learn`` (env and model construction excluded);
    ``n_envs`` None: the env's hyperparameter block's."""
    hyper = load_hyperparams(env_id)
    if n_envs is not None:
        hyper["n_envs"] = n_envs
    fam = family_of(env_id)
    crl = arm.startswith("crl")
    bank = ExperienceBank(seed=seed) if crl else None
    mode = "sync" if arm == "crl-sync" else "process" if "-process" in arm else None
    manager_kwargs: dict[str, Any] | None = None if mode is None else {"mode": mode}
    if arm.endswith("-each"):
        manager_kwargs = {"mode": "process", "handover_every": 1}
    if arm.endswith("-async"):
        manager_kwargs = {"mode": "async"}
    env = build_env(env_id, int(hyper["n_envs"]), seed, bank, manager_kwargs=manager_kwargs, family=fam,
                    vec_wrapper="-vec" in arm)
    if arm.endswith("-compact"):  # one experience key instead of three (experimental)
        from integrations.sb3.experimental import CompactExperienceVecEnv

        env = CompactExperienceVecEnv(env)
    if "default" in arm:
        policy_kwargs: dict[str, Any] = {}  # SB3's defaults
    elif arm == "ppo":
        policy_kwargs = dict(fam.base_policy_kwargs)
    elif arm.startswith("crl-same-net"):
        policy_kwargs = dict(fam.base_policy_kwargs)
    else:
        base_cls, base_kwargs = fam.base_extractor or (None, None)
        policy_kwargs = crl_policy_kwargs(base_extractor_class=base_cls, base_extractor_kwargs=base_kwargs)
    policy = "MultiInputPolicy" if hasattr(env.observation_space, "spaces") else "MlpPolicy"
    ppo_kwargs: dict[str, Any] = {k: schedule(hyper[k]) for k in PPO_KEYS if k in hyper}  # "lin_1e-3": a schedule
    model = PPO(policy, env, seed=seed, policy_kwargs=policy_kwargs, **ppo_kwargs)
    callback = None
    if crl and not arm.endswith("-nocallback"):
        callback = CRLCallback(self_imitation=False) if arm.endswith("-nosil") else CRLCallback()
    if crl:  # a learner process is started (spawn, imports) before the clock starts, as the env is
        find_experience(env)[0][0].flush()
    prof = cProfile.Profile() if profile else None
    t0, c0 = time.perf_counter(), time.process_time()
    if prof:
        prof.enable()
    model.learn(steps, callback=callback)
    if prof:
        prof.disable()
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    # cpu_s: this process's CPU seconds in learn (a learner process's are not counted); a shared
    # machine's load disturbs it less than the wall-clock
    out: dict[str, Any] = {"env_id": env_id, "arm": arm, "steps": int(model.num_timesteps), "wall_s": wall,
                           "steps_per_s": model.num_timesteps / wall, "cpu_s": cpu,
                           "torch_threads": torch.get_num_threads()}  # in effect during learn
    if crl:
        mgr = find_experience(env)[0][0]
        t1 = time.perf_counter()
        mgr.flush()
        out["flush_s"] = time.perf_counter() - t1
        out["episodes_processed"] = mgr.stats()["episodes_processed"]
        out["manager_busy_s"] = mgr.stats()["busy_seconds"]  # in process mode: the actor's side only
        if "learner_busy_seconds" in mgr.stats():
            out["learner_busy_s"] = mgr.stats()["learner_busy_seconds"]
        out["bank_size"] = len(mgr.bank)
        mgr.close()
    if prof:
        s = io.StringIO()
        pstats.Stats(prof, stream=s).sort_stats("tottime").print_stats(25)
        out["profile_tottime"] = s.getvalue()
    env.close()
    return out


def main(argv: list[str] | None = None) -> dict[str, Any]:
    warnings.filterwarnings("ignore")
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--envs", nargs="*", default=["CartPole-v1", "MiniHack-Room-5x5-v0"])
    p.add_argument("--steps", type=int, default=8192)
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--torch-threads", type=int, default=1,
                   help="torch threads of this process (0: torch's own setting, as a user's script has it; "
                        "the manager may lower it while its learner process runs: ManagerConfig.limit_actor_threads)")
    p.add_argument("--n-envs", type=int, default=None, help="envs per run (default: the hyperparameter block's)")
    p.add_argument("--arms", nargs="*", default=list(ARMS), choices=ARMS,
                   help="arms to run (each with its PPO baseline, added when missing)")
    p.add_argument("--no-profile", action="store_true", help="skip the profile of one CRL run on CartPole")
    p.add_argument("--out", type=Path, default=RESULTS / "overhead.json")
    args = p.parse_args(argv)
    if args.steps <= 0 or args.rounds <= 0 or (args.n_envs is not None and args.n_envs <= 0):
        p.error("--steps, --rounds and --n-envs must be positive")
    if not args.envs or not args.arms:
        p.error("--envs and --arms name at least one each (without them, nothing is measured)")
    if args.torch_threads < 0:
        p.error(f"--torch-threads must be >= 0 (0: torch's own setting), got {args.torch_threads}")
    seeds_problem = bad_seeds([args.seed, args.seed + args.rounds - 1])  # (round r runs seed + r)
    if seeds_problem:
        p.error(seeds_problem.replace("--seeds", "--seed"))
    try:
        check_output_file(args.out, "--out")
        for env_id in args.envs:
            load_hyperparams(env_id)
    except (ValueError, KeyError) as exc:
        p.error(str(exc).strip('"'))
    arms = [a for a in ARMS if a in args.arms or any(BASELINE[b] == a for b in args.arms)]
    if args.torch_threads > 0:
        torch.set_num_threads(args.torch_threads)
    runs: list[dict[str, Any]] = []
    for r in range(args.rounds):
        for env_id in args.envs:
            for arm in arms:
                res = measure(env_id, arm, args.steps, args.seed + r, n_envs=args.n_envs)
                res["round"] = r
                runs.append(res)
                print(f"round {r} {env_id:24} {arm:16} {res['steps_per_s']:8.0f} steps/s "
                      f"({res['wall_s']:.1f} s)", flush=True)
    summary: dict[str, Any] = {}
    print(f"\n{'env':24} {'arm':16} {'steps/s':>9} {'x ppo':>7} {'median x':>9}  (x its baseline: {BASELINE_NOTE}; "
          "median x: median over rounds of each round's ratio)")
    for env_id in args.envs:
        sps = {arm: float(np.mean([x["steps_per_s"] for x in runs if x["env_id"] == env_id and x["arm"] == arm]))
               for arm in arms}
        walls = {arm: float(np.mean([x["wall_s"] + x.get("flush_s", 0.0) for x in runs
                                     if x["env_id"] == env_id and x["arm"] == arm])) for arm in arms}
        # each round's arm against its baseline run just before it, then the median over rounds:
        # robust to a machine whose load changes between rounds
        paired = {a: float(np.median([x["steps_per_s"] / y["steps_per_s"] for x in runs for y in runs
                                      if x["env_id"] == y["env_id"] == env_id and x["round"] == y["round"]
                                      and x["arm"] == a and y["arm"] == BASELINE[a]])) for a in arms}
        summary[env_id] = {"steps_per_s": sps, "ratio_to_ppo": {a: sps[a] / sps[BASELINE[a]] for a in arms},
                           "ratio_to_ppo_median_of_rounds": paired,
                           "baseline": {a: BASELINE[a] for a in arms}, "wall_s_incl_flush": walls}
        for arm in arms:
            print(f"{env_id:24} {arm:16} {sps[arm]:9.0f} {sps[arm] / sps[BASELINE[arm]]:7.2f} {paired[arm]:9.2f}")
        if "crl" in arms and "crl-sync" in arms:
            summary[env_id]["async_vs_sync_wall"] = walls["crl"] / walls["crl-sync"]
            sync_runs = [x for x in runs if x["env_id"] == env_id and x["arm"] == "crl-sync"]
            # In sync mode the manager runs on the actor's thread: its share of the wall-clock is
            # the most any background worker could take off it (Amdahl).
            summary[env_id]["sync_manager_share"] = float(np.mean([x["manager_busy_s"] / x["wall_s"]
                                                                   for x in sync_runs]))
            print(f"{env_id:24} async/sync wall-clock (incl. final flush): "
                  f"{summary[env_id]['async_vs_sync_wall']:.2f}; manager share of sync wall-clock (the most "
                  f"async can save): {summary[env_id]['sync_manager_share']:.0%}")
        if "crl-process" in arms and "crl-sync" in arms:
            summary[env_id]["process_vs_sync_wall"] = walls["crl-process"] / walls["crl-sync"]
            print(f"{env_id:24} process/sync wall-clock (incl. final flush): "
                  f"{summary[env_id]['process_vs_sync_wall']:.2f}")
    result: dict[str, Any] = {"runs": runs, "summary": summary}
    if not args.no_profile:
        prof = measure("CartPole-v1", "crl", args.steps, args.seed, profile=True)
        print("\nprofile of one CRL run on CartPole (top functions by own time):")
        print("\n".join(prof["profile_tottime"].splitlines()[:40]))
        result["profile_cartpole_crl"] = prof["profile_tottime"]
    result.update({"args": {k: str(v) for k, v in vars(args).items()}, "versions": versions(),
                   "command": "python -m benchmarks.perf.overhead " + " ".join(sys.argv[1:] if argv is None else argv)})
    print()
    write_result(args.out, result)
    return result


if __name__ == "__main__":
    main()
