"""Where the per-step time goes on your env: the README's two-line form against plain PPO, profiled.

``python -m benchmarks.perf.step_profile --env CartPole-v1 --steps 8192`` trains, one after the
other on the same seed, plain PPO and the README's two-line form (an ``ExperienceWrapper`` per
env, ``ExperiencePolicy`` with :func:`~integrations.sb3.crl_policy_kwargs`, ``CRLCallback()``
with its defaults; SB3's default PPO settings; ``--n-envs`` envs in a ``DummyVecEnv``), each
under ``cProfile``, and prints the own time per environment step of each area of the code:
the env, SB3, torch, numpy, hnswlib and each part of this library (the wrapper, key
encoding, retrieval, the manager, the bank, the extractor, the callback, self-imitation),
for both runs and their difference: what experience costs per step, and where. MiniHack ids
get MiniHack's env factory and glyph CNN (the library's env families); any other id
``gym.make``. ``--top N`` also lists the ``N`` functions of this library (and its MiniHack
adapter) with the most own time per step in the experience run, so the area that costs most
can be opened at the function. ``--out FILE`` writes the figures as JSON. ``--mode sync`` runs the manager on
the actor's thread: in the default (``auto``: the learner in a process of its own, where one can
start) and in ``async`` mode (a thread) the learner's work (distillation, extractor training) is
not in the profile, which sees the actor's thread only.

``--clock cpu`` times by the process's CPU time (``time.process_time``) rather than the wall
clock: other load on the machine then does not stretch the figures, but the actor's waits
(for the learner process, for the env's I/O) are not counted.

A profiler slows Python calls more than C calls, so the areas' shares are indicative and the
steps/s printed (profiled) are lower than unprofiled; ``benchmarks.perf.overhead`` measures the
unprofiled ratio side by side.
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import time
import warnings
from pathlib import Path
from typing import Any

from benchmarks.harness.cli_checks import check_gym_id, check_output_file
from benchmarks.harness.result_file import write_result

__all__ = ["area_of", "profile_run", "main"]

#: this library's parts, by the folder or file a function lives in (the first that matches)
LIBRARY_AREAS: tuple[tuple[str, str], ...] = (
    ("experience_wrappers/wrappers/retrieval", "retrieval"),
    ("experience_wrappers/wrappers/", "wrapper (record, inject, checks)"),
    ("experience_wrappers/keys/", "key encoding"),
    ("experience_wrappers/bank/", "bank"),
    ("experience_wrappers/manager/", "manager (credit, distil, write)"),
    ("experience_wrappers/credit/", "manager (credit, distil, write)"),
    ("experience_wrappers/extractor/", "extractor"),
    ("integrations/sb3/self_imitation", "self-imitation"),
    ("integrations/sb3/", "callback and policy (integrations/sb3)"),
    # MiniHack's key encoder and the policy's glyph CNN are the library's, not the env's
    ("integrations/minihack/key_parts", "key encoding"),
    ("integrations/minihack/keys", "key encoding"),
    ("integrations/minihack/glyph_features", "policy network (MiniHack glyph CNN)"),
    ("integrations/minihack/", "env (MiniHack adapter)"),
    ("experience_wrappers/", "library, other"),
)


def area_of(filename: str, function: str) -> str:
    """The area a profiled function belongs to, from its file (C functions: from their name).

    >>> area_of("/x/experience_wrappers/bank/search.py", "query")
    'bank'
    >>> area_of("/x/integrations/minihack/key_parts.py", "__call__")
    'key encoding'
    >>> area_of("~", "<method 'knn_query' of 'hnswlib.Index' objects>")
    'hnswlib'
    """
    path = filename.replace("\\", "/")
    for key, area in LIBRARY_AREAS:
        if key in path:
            return area
    for key, area in (("stable_baselines3", "SB3"), ("/torch/", "torch"), ("/numpy/", "numpy"),
                      ("/gymnasium/", "env (gymnasium)"), ("/nle/", "env (NLE)"), ("/minihack/", "env (MiniHack)"),
                      ("/metaworld/", "env (Meta-World)"), ("/mujoco/", "env (Meta-World)"), ("hnswlib", "hnswlib")):
        if key in path or key.strip("/") in function:
            return area
    if path == "~":
        return "torch" if "torch" in function else "numpy" if "numpy" in function else "built-ins"
    return "other"


def profile_run(env_id: str, experience: bool, steps: int, n_envs: int, seed: int,
                mode: str = "auto", top: int = 0, policy: str = "reader", clock: str = "wall") -> dict[str, Any]:
    """Train one run under ``cProfile``; its steps/s, its own time per env step by area (µs) and,
    with ``top``, the library's ``top`` functions by own time per step (``top_functions``).

    ``policy``: ``"reader"``, the family's network (with experience: ``ExperiencePolicy`` and its
    reader on it); ``"default"``, SB3's default policy for both (no policy arguments). ``clock``:
    ``"wall"`` (``time.perf_counter``) or ``"cpu"`` (``time.process_time``; steps/s then per CPU second)."""
    import torch
    from stable_baselines3 import PPO

    from experience_wrappers import ExperienceBank
    from integrations.sb3 import CRLCallback, ExperiencePolicy, crl_policy_kwargs
    from integrations.sb3.env_families import build_env, family_of

    torch.manual_seed(seed)
    fam = family_of(env_id)
    bank = ExperienceBank(seed=seed) if experience else None
    env = build_env(env_id, n_envs, seed, bank, family=fam, manager_kwargs={"mode": mode} if experience else None)
    if policy == "default":
        model = PPO("MultiInputPolicy" if hasattr(env.observation_space, "spaces") else "MlpPolicy", env, seed=seed)
    elif experience:
        base_cls, base_kwargs = fam.base_extractor or (None, None)
        model = PPO(ExperiencePolicy, env, seed=seed,
                    policy_kwargs=crl_policy_kwargs(base_extractor_class=base_cls, base_extractor_kwargs=base_kwargs))
    else:
        policy = "MultiInputPolicy" if hasattr(env.observation_space, "spaces") else "MlpPolicy"
        model = PPO(policy, env, seed=seed, policy_kwargs=dict(fam.base_policy_kwargs))
    timer = time.process_time if clock == "cpu" else time.perf_counter
    prof = cProfile.Profile(timer)
    t0 = timer()
    prof.enable()
    model.learn(steps, callback=CRLCallback() if experience else None)
    prof.disable()
    wall = timer() - t0
    env.close()
    done = int(model.num_timesteps)
    areas: dict[str, float] = {}
    ours: list[tuple[float, str, str, int]] = []  # (own time, area, function, calls)
    stats = pstats.Stats(prof).stats  # type: ignore[attr-defined]  # (file, line, name) -> (cc, nc, tottime, cumtime, callers)
    for (filename, line, function), (_cc, calls, tottime, _cum, _callers) in stats.items():
        area = area_of(filename, function)
        areas[area] = areas.get(area, 0.0) + tottime
        if any(key in filename.replace("\\", "/") for key, _ in LIBRARY_AREAS):
            ours.append((tottime, area, f"{_short(filename)}:{line}:{function}", calls))
    ours.sort(reverse=True)
    return {"env_id": env_id, "experience": experience, "steps": done, "wall_s": round(wall, 2),
            "steps_per_s_profiled": round(done / wall, 1),
            "us_per_step": {a: round(1e6 * t / done, 1) for a, t in sorted(areas.items(), key=lambda kv: -kv[1])},
            "top_functions": [{"function": f, "area": a, "us_per_step": round(1e6 * t / done, 1),
                               "calls_per_step": round(n / done, 2)} for t, a, f, n in ours[:top]]}


def _short(filename: str) -> str:
    """A profiled file's path from the package on (``experience_wrappers/bank/search.py``).

    >>> _short("/x/y/experience_wrappers/bank/search.py")
    'experience_wrappers/bank/search.py'
    """
    path = filename.replace("\\", "/")
    for package in ("experience_wrappers/", "integrations/"):
        if package in path:
            return package + path.split(package, 1)[1]
    return path


def main(argv: list[str] | None = None) -> int:
    warnings.filterwarnings("ignore")
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--env", default="CartPole-v1", help="a gymnasium id (MiniHack ids get MiniHack's factory)")
    p.add_argument("--steps", type=int, default=8192)
    p.add_argument("--n-envs", type=int, default=4)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--mode", choices=("auto", "process", "async", "sync"), default="auto",
                   help="the manager's mode (sync: its work on the actor's thread, so in the profile)")
    p.add_argument("--policy", choices=("reader", "default"), default="reader",
                   help="reader: the README's two-line form (ExperiencePolicy with the reader on the env's network) "
                        "against PPO with that network; default: SB3's default policy on both")
    p.add_argument("--clock", choices=("wall", "cpu"), default="wall",
                   help="cpu: time by the process's CPU time (a loaded machine does not stretch it; waits are not counted)")
    p.add_argument("--top", type=int, default=15, help="list this library's N costliest functions (0: none)")
    p.add_argument("--out", type=Path, default=None, help="write the figures here (JSON)")
    args = p.parse_args(argv)
    if args.steps <= 0 or args.n_envs <= 0 or args.top < 0:
        p.error("--steps and --n-envs must be positive, --top at least 0")
    try:
        if args.out is not None:
            check_output_file(args.out, "--out")
    except ValueError as exc:
        p.error(str(exc))
    try:
        if not args.env.startswith("MiniHack"):  # (MiniHack's ids are registered by its factory)
            check_gym_id(args.env)
    except ValueError as exc:
        p.error(f"--env {args.env}: {str(exc).split(': ', 1)[1]}")
    import torch

    torch.set_num_threads(1)
    ppo = profile_run(args.env, False, args.steps, args.n_envs, args.seed, policy=args.policy, clock=args.clock)
    crl = profile_run(args.env, True, args.steps, args.n_envs, args.seed, args.mode, top=args.top, policy=args.policy,
                      clock=args.clock)
    names = sorted(set(ppo["us_per_step"]) | set(crl["us_per_step"]),
                   key=lambda a: -(crl["us_per_step"].get(a, 0.0) - ppo["us_per_step"].get(a, 0.0)))
    print(f"{args.env}, {args.steps} steps, {args.n_envs} envs, manager {args.mode}, {args.policy} policy; "
          f"own {'CPU' if args.clock == 'cpu' else 'wall'} time per env step (µs) on the actor's thread, under cProfile")
    print(f"{'area':42} {'PPO':>8} {'two-line CRL':>13} {'difference':>11}")
    for a in names:
        x, y = ppo["us_per_step"].get(a, 0.0), crl["us_per_step"].get(a, 0.0)
        print(f"{a:42} {x:8.1f} {y:13.1f} {y - x:+11.1f}")
    total_ppo, total_crl = sum(ppo["us_per_step"].values()), sum(crl["us_per_step"].values())
    print(f"{'total':42} {total_ppo:8.1f} {total_crl:13.1f} {total_crl - total_ppo:+11.1f}")
    print(f"steps/s under the profiler{' (per CPU second)' if args.clock == 'cpu' else ''}: PPO {ppo['steps_per_s_profiled']:.0f}, two-line CRL "
          f"{crl['steps_per_s_profiled']:.0f} ({crl['steps_per_s_profiled'] / ppo['steps_per_s_profiled']:.2f}x)")
    if crl["top_functions"]:
        print(f"\nthe library's {len(crl['top_functions'])} costliest functions in the two-line form (own time)")
        print(f"{'function':72} {'µs/step':>8} {'calls/step':>10}")
        for row in crl["top_functions"]:
            print(f"{row['function'][-72:]:72} {row['us_per_step']:8.1f} {row['calls_per_step']:10.2f}")
    if args.out:
        write_result(args.out, {"args": {k: str(v) for k, v in vars(args).items()}, "ppo": ppo, "crl": crl})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
