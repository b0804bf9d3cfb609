"""Where the per-step time goes, unprofiled: own wall-clock time of each part, PPO beside the method.

``python -m benchmarks.perf.step_timers --env MiniHack-Room-5x5-v0 --arms ppo-default crl-default``
trains the arms of :mod:`benchmarks.perf.overhead` (``crl-default``: the README's two lines with
SB3's default policy; ``ppo-default``: PPO with the same policy), alternating over ``--rounds``,
with a timer around each part of a step: the env (SB3's ``Monitor`` and below), SB3's vector env,
the policy's forward passes in the rollouts, PPO's update, and each part of this library (the
wrapper, recording, retrieval's key encoding and bank query, the episode's hand-over with its
credit, the learner process's messages and the entries they write (the bank's writes, their
dedup and index included, on their own), the callback,
self-imitation's recording and updates). Each part's *own* time is counted (the time of the
timed parts it calls is subtracted), so the parts add up to the run's wall-clock; what no timer
covers is SB3's own loop (``rest``). Figures are µs per env step, the median over rounds.

Unlike :mod:`benchmarks.perf.step_profile` (``cProfile``, which slows Python calls more than C
calls) the timers cost about a microsecond per timed call, so the figures are the run's own; the
timers see the actor's thread only (a learner process's work is not in them, a learner thread's
is skipped). Steps/s printed here include the timers; :mod:`benchmarks.perf.overhead` measures
the ratio without them.
"""

from __future__ import annotations

import argparse
import sys
import threading
import time
import warnings
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.harness.cli_checks import check_output_file
from benchmarks.harness.config import load_hyperparams
from benchmarks.harness.result_file import write_result

__all__ = ["PARTS", "Timers", "measure_parts", "main"]

RESULTS = Path(__file__).resolve().parents[1] / "results"

#: (module, class, method, part): the functions timed, by the part of a step they belong to
PARTS: tuple[tuple[str, str, str, str], ...] = (
    ("stable_baselines3.common.monitor", "Monitor", "step", "env (Monitor and below)"),
    ("stable_baselines3.common.monitor", "Monitor", "reset", "env (Monitor and below)"),
    ("stable_baselines3.common.vec_env.dummy_vec_env", "DummyVecEnv", "step_wait", "SB3 vector env"),
    ("stable_baselines3.common.vec_env.dummy_vec_env", "DummyVecEnv", "reset", "SB3 vector env"),
    ("stable_baselines3.common.policies", "ActorCriticPolicy", "forward", "policy forward (rollouts)"),
    ("stable_baselines3.common.policies", "ActorCriticPolicy", "predict_values", "policy forward (rollouts)"),
    ("stable_baselines3.ppo.ppo", "PPO", "train", "PPO update"),
    ("experience_wrappers.wrappers.experience_wrapper", "ExperienceWrapper", "step", "wrapper (checks, observation)"),
    ("experience_wrappers.wrappers.experience_wrapper", "ExperienceWrapper", "reset", "wrapper (checks, observation)"),
    ("experience_wrappers.wrappers.injector", "ExperienceInjector", "record", "recording a step"),
    ("experience_wrappers.wrappers.injector", "ExperienceInjector", "begin", "episode start (guided or free)"),
    ("experience_wrappers.wrappers.injector", "ExperienceInjector", "retrieve", "retrieval (other)"),
    ("experience_wrappers.wrappers.retrieval", "Retriever", "keys", "retrieval: key encoding"),
    ("experience_wrappers.wrappers.retrieval", "Retriever", "_query_keys", "retrieval: bank query"),
    ("experience_wrappers.wrappers.injector", "ExperienceInjector", "finish", "episode hand-over (credit)"),
    ("experience_wrappers.manager.process", "LearnerProcess", "send", "learner process: messages, entry writes"),
    ("experience_wrappers.manager.process", "LearnerProcess", "drain", "learner process: messages, entry writes"),
    ("experience_wrappers.bank.bank", "ExperienceBank", "add", "bank writes (dedup, eviction, index)"),
    ("integrations.sb3.callback", "CRLCallback", "_on_step", "CRL callback"),
    ("integrations.sb3.callback", "CRLCallback", "_on_rollout_start", "CRL callback"),
    ("integrations.sb3.callback", "CRLCallback", "_on_rollout_end", "CRL callback"),
    ("integrations.sb3.self_imitation", "SelfImitationCallback", "_on_step", "self-imitation: recording"),
    ("integrations.sb3.self_imitation", "SelfImitationCallback", "_on_rollout_start", "self-imitation: updates"),
)
REST = "rest (SB3's loop, rollout buffer)"


class Timers:
    """Own wall-clock time of labelled functions on one thread: a timed call's time less that of
    the timed calls it makes.

    ``clock``: seconds (``time.perf_counter``); the example counts its reads instead.

    >>> class A:
    ...     def outer(self):
    ...         self.inner()
    ...     def inner(self):
    ...         pass
    >>> ticks = iter(range(100))
    >>> timers = Timers(clock=lambda: next(ticks))   # outer reads 0, inner 1 and 2, outer 3
    >>> with timers.patched([(A, "outer", "outer"), (A, "inner", "inner")]):
    ...     A().outer()
    >>> timers.own["outer"], timers.own["inner"], timers.calls["inner"]
    (2.0, 1.0, 1)
    >>> A.outer.__name__   # restored
    'outer'
    """

    def __init__(self, clock: Callable[[], float] = time.perf_counter) -> None:
        self.clock = clock
        self.own: defaultdict[str, float] = defaultdict(float)
        self.calls: Counter[str] = Counter()
        self._children: list[float] = []  # the timed calls in flight: time of their timed children so far
        self._thread = threading.get_ident()

    def wrap(self, fn: Callable[..., Any], label: str) -> Callable[..., Any]:
        """``fn`` with its own time counted under ``label`` (calls from other threads are not counted)."""
        def timed(*args: Any, **kwargs: Any) -> Any:
            if threading.get_ident() != self._thread:
                return fn(*args, **kwargs)
            stack = self._children
            stack.append(0.0)
            clock = self.clock
            t0 = clock()
            try:
                return fn(*args, **kwargs)
            finally:
                elapsed = clock() - t0
                self.own[label] += elapsed - stack.pop()
                self.calls[label] += 1
                if stack:
                    stack[-1] += elapsed
        timed.__wrapped__ = fn  # type: ignore[attr-defined]
        return timed

    @contextmanager
    def patched(self, targets: list[tuple[type, str, str]]) -> Iterator[Timers]:
        """Time each ``(class, method, label)`` for the block; the classes' methods are put back after."""
        saved = [(cls, name, cls.__dict__[name]) for cls, name, _ in targets]
        try:
            for cls, name, label in targets:
                setattr(cls, name, self.wrap(getattr(cls, name), label))
            yield self
        finally:
            for cls, name, original in reversed(saved):
                setattr(cls, name, original)


def _targets() -> list[tuple[type, str, str]]:
    """:data:`PARTS` as (class, method, part), each method defined on its class (not inherited)."""
    import importlib

    out = []
    for module, cls_name, method, part in PARTS:
        cls = getattr(importlib.import_module(module), cls_name)
        if method not in cls.__dict__:
            raise AttributeError(f"{module}.{cls_name} defines no {method}(): update PARTS")
        out.append((cls, method, part))
    return out


def measure_parts(env_id: str, arm: str, steps: int, seed: int, n_envs: int | None) -> dict[str, Any]:
    """One run of an :mod:`~benchmarks.perf.overhead` arm under the timers: steps/s and µs per env step by part."""
    from benchmarks.perf.overhead import measure

    timers = Timers()
    learn_wall: list[float] = []
    from stable_baselines3 import PPO

    def learn(model: Any, *args: Any, **kwargs: Any) -> Any:
        t0 = time.perf_counter()
        try:
            return original_learn(model, *args, **kwargs)
        finally:
            learn_wall.append(time.perf_counter() - t0)

    original_learn = PPO.__dict__["learn"]
    PPO.learn = learn  # type: ignore[method-assign,assignment]
    try:
        with timers.patched(_targets()):
            res = measure(env_id, arm, steps, seed, n_envs=n_envs)
    finally:
        PPO.learn = original_learn  # type: ignore[method-assign]
    done = res["steps"]
    parts = {label: 1e6 * t / done for label, t in timers.own.items()}
    parts[REST] = 1e6 * (learn_wall[0] - sum(timers.own.values())) / done
    return {"arm": arm, "steps": done, "steps_per_s": res["steps_per_s"], "torch_threads": res["torch_threads"],
            "us_per_step": {k: round(v, 1) for k, v in parts.items()},
            "calls_per_step": {k: round(n / done, 3) for k, n in timers.calls.items()}}


def main(argv: list[str] | None = None) -> dict[str, Any]:
    from benchmarks.perf.overhead import ARMS

    warnings.filterwarnings("ignore")
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--env", default="MiniHack-Room-5x5-v0")
    p.add_argument("--arms", nargs="+", default=["ppo-default", "crl-default"], choices=ARMS)
    p.add_argument("--steps", type=int, default=16384)
    p.add_argument("--n-envs", type=int, default=4)
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--torch-threads", type=int, default=0,
                   help="torch threads of this process (0: torch's own setting, as a user's script has it)")
    p.add_argument("--out", type=Path, default=None, help="write the figures here (JSON)")
    args = p.parse_args(argv)
    if args.steps <= 0 or args.n_envs <= 0 or args.rounds <= 0:
        p.error("--steps, --n-envs and --rounds must be positive")
    try:  # before the measuring: a mistyped --out, or an env without PPO settings, would end it after the work
        if args.out is not None:
            check_output_file(args.out, "--out")
        load_hyperparams(args.env)
    except KeyError as exc:
        p.error(f"{str(exc).strip(chr(34))}: the arms train with the env's PPO settings; add a block for it "
                "there (rl-zoo3's, or SB3's defaults), or profile it with SB3's defaults: python -m "
                f"benchmarks.perf.step_profile --env {args.env}")
    except ValueError as exc:
        p.error(str(exc))
    import torch

    if args.torch_threads > 0:
        torch.set_num_threads(args.torch_threads)
    runs = []
    for r in range(args.rounds):
        for arm in args.arms:
            run = measure_parts(args.env, arm, args.steps, args.seed + r, args.n_envs)
            run["round"] = r
            runs.append(run)
            print(f"round {r} {arm:16} {run['steps_per_s']:7.0f} steps/s (timers on)", flush=True)
    median = {arm: {part: float(np.median([x["us_per_step"].get(part, 0.0) for x in runs if x["arm"] == arm]))
                    for part in {q for x in runs for q in x["us_per_step"]}} for arm in args.arms}
    parts = sorted({q for m in median.values() for q in m}, key=lambda q: -max(m.get(q, 0.0) for m in median.values()))
    print(f"\n{args.env}, {args.steps} steps, {args.n_envs} envs: own time per env step (µs), median of "
          f"{args.rounds} round(s), the actor's thread")
    print(f"{'part':44}" + "".join(f"{a:>18}" for a in args.arms))
    for q in parts:
        print(f"{q:44}" + "".join(f"{median[a].get(q, 0.0):18.1f}" for a in args.arms))
    print(f"{'total':44}" + "".join(f"{sum(median[a].values()):18.1f}" for a in args.arms))
    result = {"runs": runs, "median_us_per_step": median,
              "args": {k: str(v) for k, v in vars(args).items()},
              "command": "python -m benchmarks.perf.step_timers " + " ".join(sys.argv[1:] if argv is None else argv)}
    if args.out:
        write_result(args.out, result)
    return result


if __name__ == "__main__":
    main()
