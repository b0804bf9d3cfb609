"""How far one env step reaches into the library: a trace of the step that ends an episode.

``python -m benchmarks.perf.trace_step [--out FILE]`` wraps CartPole in an ``ExperienceWrapper``
(manager in sync mode, so the episode's hand-over, credit, distillation and bank writes all
happen inside that step), steps it with fixed actions until the step before an episode ends,
then profiles the episode-ending step and counts, within this repository's packages: the
files entered, the distinct functions, the calls, the file-to-file transitions (a call whose
caller sits in another file), how often the path crosses between ``bank/`` and
``manager/``, and how often ``bank/bank.py`` is entered from outside ``bank/``. ``--scope run``
traces the step that ends a trial of a run instead (:func:`trace_trial_end`). A smaller
number is a path a newcomer can follow; the figures are compared before and after a
restructuring.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("experience_wrappers", "integrations")


def _ours(filename: str) -> str | None:
    try:
        rel = Path(filename).resolve().relative_to(ROOT)
    except ValueError:
        return None
    return rel.as_posix() if rel.parts and rel.parts[0] in PACKAGES else None


def trace_episode_end(seed: int = 0) -> dict[str, Any]:
    """The counts of the episode-ending step (see the module doc)."""
    import gymnasium as gym

    from experience_wrappers import ExperienceBank, ExperienceWrapper

    env = ExperienceWrapper(gym.make("CartPole-v1"), ExperienceBank(seed=seed), manager_kwargs={"mode": "sync"})
    for episode in range(3):  # a few episodes first, so the bank and the baseline hold something
        env.reset(seed=seed + episode)
        while True:
            _, _, terminated, truncated, _ = env.step(0)
            if terminated or truncated:
                break
    env.reset(seed=seed + 3)
    # CartPole with a fixed action ends within ~10 steps: find the last step, replay up to it
    steps = 0
    while True:
        steps += 1
        _, _, terminated, truncated, _ = env.step(0)
        if terminated or truncated:
            break
    env.reset(seed=seed + 3)
    for _ in range(steps - 1):
        env.step(0)

    return _trace(lambda: env.step(0), env)


def trace_trial_end(seed: int = 0) -> dict[str, Any]:
    """The counts of the step that ends a guided trial in run scope, as :func:`trace_episode_end`
    counts them: a group of two run-scope ``ExperienceWrapper`` s over the hidden-goal room (one guided, one
    free) on one memory; the traced step writes the guided trial, credits it against the free
    trial of its instance and index, and trains the extractor."""
    from experience_wrappers import ExperienceWrapper
    from experience_wrappers.trials import TrialMemory
    from integrations.minihack.hidden_goal import HiddenGoalRoom

    cap = 6
    room = HiddenGoalRoom(5, cap)
    memory = TrialMemory(room.observation_space, room.action_space, horizon=cap, k=4, exp_dim=4, write_failures=True,
                         batch_size=4, seed=seed)  # the traced step credits its k=4 shown entries: one update
    guided, free = (ExperienceWrapper(HiddenGoalRoom(5, cap), memory, scope="run", instances=[7], trials=8,
                                      member=m, group_size=2, free_members=1, seed=seed) for m in (0, 1))
    for env in (guided, free):
        env.reset(seed=seed)
    for _ in range(3):  # three trials of each first: credited pairs, the extractor trained
        for env in (free, guided):
            for _ in range(cap):
                env.step(0)
            env.reset()
    for _ in range(cap):  # the free member's trial of this index ends first
        free.step(0)
    for _ in range(cap - 1):
        guided.step(0)
    before = memory.stats["extractor_updates"]
    result = _trace(lambda: guided.step(0), guided)
    result["extractor_updated"] = memory.stats["extractor_updates"] > before
    return result


def _trace(step: Any, wrapper: Any) -> dict[str, Any]:
    """Profile ``step()`` (which must end an episode or trial) and count what it enters.

    The env under ``wrapper`` is not the library's path: what its own ``step`` calls is not
    counted (CartPole's lies outside the packages anyway; the hidden-goal room's is in them).
    """
    calls: list[tuple[str, str, str | None]] = []  # (file, function, caller's file)
    stack: list[str | None] = []
    env_step = type(wrapper.unwrapped).step.__code__
    in_env = 0  # depth inside the env's own step

    def profile(frame: Any, event: str, arg: Any) -> None:
        nonlocal in_env
        if in_env or (event == "call" and frame.f_code is env_step):
            in_env += 1 if event == "call" else -1 if event == "return" else 0
            return
        if event == "call":
            f = _ours(frame.f_code.co_filename)
            if f is not None:
                caller = next((c for c in reversed(stack) if c is not None), None)
                calls.append((f, f"{f}:{frame.f_code.co_qualname}", caller))
            stack.append(f)
        elif event == "return" and stack:
            stack.pop()

    sys.setprofile(profile)
    try:
        _, _, terminated, truncated, _ = step()
    finally:
        sys.setprofile(None)
    assert terminated or truncated, "the traced step must end the episode"

    def area(f: str | None) -> str | None:
        if f is None:
            return None
        return "bank" if "/bank/" in f else "manager" if "/manager/" in f else "other"

    transitions = sum(1 for f, _, c in calls if c is not None and c != f)
    crossings = sum(1 for f, _, c in calls if {area(f), area(c)} == {"bank", "manager"})
    bank_py_from_outside = sum(1 for f, _, c in calls if f.endswith("bank/bank.py") and c is not None
                               and "/bank/" not in c)
    per_file = Counter(f for f, _, _ in calls)
    return {"files": len(per_file), "functions": len({fn for _, fn, _ in calls}), "calls": len(calls),
            "file_transitions": transitions, "bank_manager_crossings": crossings,
            "bank_py_entered_from_outside_bank": bank_py_from_outside,
            "calls_per_file": dict(per_file.most_common())}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", type=Path, help="write the counts here (JSON)")
    p.add_argument("--scope", choices=("task", "run"), default="task",
                   help="task: an ExperienceWrapper's episode end; run: a run-scope ExperienceWrapper's trial end")
    args = p.parse_args(argv)
    result = trace_episode_end() if args.scope == "task" else trace_trial_end()
    summary = {k: v for k, v in result.items() if k != "calls_per_file"}
    print(json.dumps(summary))
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
