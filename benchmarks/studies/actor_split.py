"""Where PPO + CRL's extra wall-clock goes on the actor's side: the wrapper's parts, timed.

Trains vanilla PPO and PPO + CRL (``ExperienceVecEnv``, learner in its own process) with the
same policy, alternating, and times the parts of a vector step from the outside (each method
wrapped by a timer for the run; nothing in the library changes): the inner VecEnv's
``step_wait`` (the env itself), ``ExperienceVecEnv.step_wait`` as a whole, and the injector's
``record``, ``finish`` (the episode hand-over: credit, the send to the learner, and writing the
learner's proposals into the bank), ``begin`` (episode starts) and ``retrieve`` (keys and a
bank query), and the callback (``CRLCallback``'s per-step and rollout-end work). The network's
share is what is left of ``learn()``. Timers add a little to CRL's wall-clock. Each run also
counts its episodes (an episode's reset is part of the env's time), and ``--mode`` puts the
CRL arm's learner elsewhere (``sync``: in the actor's thread, no second process).

Run::

    python -m benchmarks.studies.actor_split                       # MiniHack-Room-5x5, default policy, 16k steps, 2 rounds
    python -m benchmarks.studies.actor_split --policy same-net --rounds 1
    python -m benchmarks.studies.actor_split --mode sync --out benchmarks/results/actor_split-sync.json
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import torch
from stable_baselines3 import PPO

from benchmarks.harness.config import load_hyperparams
from benchmarks.harness.result_file import write_result
from benchmarks.harness.run import PPO_KEYS, versions
from experience_wrappers import ExperienceBank
from experience_wrappers.wrappers.injector import ExperienceInjector
from integrations.sb3 import CRLCallback, ExperienceVecEnv, find_experience
from integrations.sb3.env_families import build_env, family_of

RESULTS = Path(__file__).resolve().parents[1] / "results"
#: the injector's parts that are timed
PARTS = ("record", "finish", "begin", "retrieve")


@contextmanager
def timed(targets: list[tuple[type, str, str]], into: dict[str, float]) -> Iterator[None]:
    """Add each ``(class, method, name)``'s wall-clock to ``into[name]`` while inside."""
    saved: list[tuple[type, str, Callable[..., Any]]] = []

    def wrap(f: Callable[..., Any], name: str) -> Callable[..., Any]:
        def g(*a: Any, **k: Any) -> Any:
            t = time.perf_counter()
            try:
                return f(*a, **k)
            finally:
                into[name] = into.get(name, 0.0) + time.perf_counter() - t
        return g

    for cls, method, name in targets:
        saved.append((cls, method, cls.__dict__[method]))
        setattr(cls, method, wrap(cls.__dict__[method], name))
    try:
        yield
    finally:
        for cls, method, f in saved:
            setattr(cls, method, f)


def measure(env_id: str, crl: bool, steps: int, seed: int, policy: str, mode: str = "process") -> dict[str, Any]:
    """One run: ``learn()``'s wall-clock and the timed parts (seconds), and its episodes."""
    hyper = load_hyperparams(env_id)
    fam = family_of(env_id)
    env = build_env(env_id, int(hyper["n_envs"]), seed, ExperienceBank(seed=seed) if crl else None,
                    manager_kwargs={"mode": mode} if crl else None, family=fam, vec_wrapper=crl)
    policy_kwargs = {} if policy == "default" else dict(fam.base_policy_kwargs)
    model = PPO("MultiInputPolicy", env, seed=seed, policy_kwargs=policy_kwargs,
                **{k: hyper[k] for k in PPO_KEYS if k in hyper})
    inner_env = env
    if crl:
        assert isinstance(env, ExperienceVecEnv)  # build_env(..., vec_wrapper=True)
        inner_env = env.venv
    inner = type(inner_env)
    targets: list[tuple[type, str, str]] = [(inner, "step_wait", "env")]
    if crl:
        find_experience(env)[0][0].flush()  # the learner process is up before the clock starts
        targets += [(ExperienceVecEnv, "step_wait", "wrapper_total")]
        targets += [(ExperienceInjector, part, part) for part in PARTS]
        targets += [(CRLCallback, method, "callback") for method in ("_on_step", "_on_rollout_end")]
    parts: dict[str, float] = {}
    episodes = [0]

    def counting() -> Any:
        out = inner.step_wait(inner_env)  # looked up per call: the class's timed method
        episodes[0] += int(out[2].sum())
        return out
    with timed(targets, parts):
        inner_env.step_wait = counting  # type: ignore[method-assign]  # this instance's episodes (the class's step_wait is timed)
        t0 = time.perf_counter()
        model.learn(steps, callback=CRLCallback() if crl else None)
        wall = time.perf_counter() - t0
    out: dict[str, Any] = {"arm": "crl" if crl else "ppo", "seed": seed, "steps": int(model.num_timesteps),
                           "episodes": episodes[0], "wall_s": wall, **{f"{k}_s": v for k, v in parts.items()}}
    if crl:
        out["wrapper_own_s"] = parts["wrapper_total"] - parts["env"]
        out["rest_s"] = wall - parts["wrapper_total"]  # the network, the callback, PPO's update
        find_experience(env)[0][0].close()
    else:
        out["rest_s"] = wall - parts["env"]
    env.close()
    return out


def main(argv: list[str] | None = None) -> dict[str, Any]:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--env", default="MiniHack-Room-5x5-v0")
    p.add_argument("--policy", choices=("default", "same-net"), default="default",
                   help="SB3's default MultiInputPolicy for both, or the env family's network for both")
    p.add_argument("--steps", type=int, default=16_384)
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--torch-threads", type=int, default=1)
    p.add_argument("--mode", choices=("process", "async", "sync"), default="process",
                   help="the CRL arm's manager mode (where its learner runs)")
    p.add_argument("--out", type=Path, default=RESULTS / "actor_split.json")
    args = p.parse_args(argv)
    torch.set_num_threads(args.torch_threads)
    warnings.filterwarnings("ignore")
    runs = []
    for r in range(args.rounds):
        for crl in (False, True):
            out = measure(args.env, crl, args.steps, r, args.policy, args.mode)
            runs.append(out)
            print(f"round {r} {out['arm']:4} episodes {out['episodes']}  "
                  + "  ".join(f"{k} {v:.2f}" for k, v in out.items() if k.endswith("_s")))
    result = {"env_id": args.env, "policy": args.policy, "mode": args.mode, "steps": args.steps, "rounds": args.rounds,
              "torch_threads": args.torch_threads, "runs": runs, "versions": versions(),
              "command": " ".join(["python -m benchmarks.studies.actor_split", *(sys.argv[1:] if argv is None else argv)])}
    write_result(args.out, result)
    return result


if __name__ == "__main__":
    main()
