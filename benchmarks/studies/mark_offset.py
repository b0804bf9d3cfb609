"""Where a success marks the goal on Meta-World ML1: the end of a demonstration against the goal itself.

``python -m benchmarks.studies.mark_offset [--out FILE]`` runs Meta-World's scripted policy (goal handed to it,
as :func:`integrations.metaworld.ml1_demos.scripted_demonstration` does) on the 50 held-out goals of each ML1
family of the trials suites (``ml1-reach-moves``, ``ml1-push-moves``, ``ml1-pick-place-moves``) and measures,
for the part whose place decides success (the hand on reach, the object on push and pick-place), its distance to
the hidden goal:

* ``taken``: in the state the successful action was taken from (the demonstration's last recorded step:
  ``run_best="taken"``, and a demonstration's mark under ``"reached"``, which has no later observation);
* ``reached``: in the state that action led to (a trial's own success under ``run_best="reached"``);
* ``settled``: after the scripted policy went on for ``--extra`` steps past the first success (the trial env ends
  a trial at success; these steps run on Meta-World's own env below it);
* ``pressed``: where the reward was highest while the successful action was repeated, as long as the reward
  rose, for at most ``--extra`` steps past the first success: a continuation that needs neither the goal nor a
  scripted policy (the run's own successes have neither), only the rewards a trial already reads;
* ``ahead``: ``reached`` moved ``--ahead`` steps further along the approach (the mean move of the part over the
  last ``run_best.AHEAD_WINDOW`` steps): the mark of ``TrialMemory(success_ahead=...)``, which needs only the
  trial's own states.

A policy that learns to take the part to a shown mark succeeds only where the mark lies inside the success
radius with room to spare: a mark on the radius's edge is a target that pays about as often as it misses.
Measured (``benchmarks/results/mark-offset.json``): ``pressed`` does not go deeper than ``reached``: Meta-World's
reward is flat (10) within 0.05 of the goal on reach, push and pick-place, so inside the radius the rewards say
nothing of where the goal is. ``ahead`` (8 steps) goes deeper from the trial's own states: at the median
pick-place 0.024 (98 % of goals within half the radius; ``settled`` 0.043), push 0.026 (``settled`` 0.025), reach
0.015.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.harness.result_file import write_result
from benchmarks.harness.run import versions

RESULTS = Path(__file__).resolve().parents[1] / "results"
#: each family's part (its columns: :func:`~integrations.metaworld.ml1_trials.success_part`) and Meta-World's
#: success radius for it
FAMILIES = {"ml1-reach-moves": ("hand", 0.05), "ml1-push-moves": ("object", 0.05),
            "ml1-pick-place-moves": ("object", 0.07)}


def offsets(family: str, extra: int = 20, ahead: int = 8) -> dict[str, Any]:
    """The distances of the five marks of each held-out goal's demonstration (module doc), with their quartiles."""
    from metaworld.policies import ENV_POLICY_MAP

    from benchmarks.suites.trials import FAMILIES as SUITE_FAMILIES
    from experience_wrappers.trials.run_best import AHEAD_WINDOW
    from integrations.metaworld.ml1_demos import GOAL_SLICE, scripted_action
    from integrations.metaworld.ml1_trials import success_part

    part, radius = FAMILIES[family]
    fam = SUITE_FAMILIES[family]()
    env = fam["make"]()
    cols = success_part(env.task_name)
    twin = fam["make"]()  # the same trials (its start moves drawn as env's), stepped alike, then pressed
    rows: dict[str, list[float]] = {"taken": [], "reached": [], "settled": [], "pressed": [], "ahead": []}
    try:
        for instance in fam["held_out"]:
            obs, _ = env.reset(seed=int(instance))
            twin.reset(seed=int(instance))
            goal = np.asarray(env.goal(), np.float64)
            policy_cls: Any = ENV_POLICY_MAP[env.env_name]
            policy = policy_cls()
            before, after, action = None, None, None
            path = [np.asarray(obs[cols], np.float64)]  # the part's places, the start's and each step's
            for _ in range(env.cap):
                _, action = scripted_action(policy, obs, goal)
                before = np.asarray(obs[cols], np.float64)
                obs, _, terminated, truncated, info = env.step(action)
                twin.step(action)
                path.append(np.asarray(obs[cols], np.float64))
                if info["success"]:
                    after = np.asarray(obs[cols], np.float64)
                    break
                if terminated or truncated:
                    break
            if after is None or before is None or action is None:
                continue  # the scripted policy did not succeed within the cap (no mark)
            raw_obs = np.asarray(obs[:GOAL_SLICE.stop], np.float64)
            env.raw.max_path_length += extra  # (the trial env caps Meta-World's own at the trial's end)
            pressed = _pressed(twin, action, twin.last_reward, after, cols, extra)
            for _ in range(extra):  # on past the first success, on Meta-World's own env
                _, action = scripted_action(policy, raw_obs, goal)
                raw_obs = np.asarray(env.raw.step(action)[0][:GOAL_SLICE.stop], np.float64)
            window = min(AHEAD_WINDOW, len(path) - 1)
            moved_on = after + ahead * (after - path[-1 - window]) / window
            for name, where in (("taken", before), ("reached", after), ("settled", raw_obs[cols]),
                                ("pressed", pressed), ("ahead", moved_on)):
                rows[name].append(float(np.linalg.norm(where - goal)))
    finally:
        env.close()
        twin.close()
    out: dict[str, Any] = {"part": part, "success_radius": radius, "goals": len(rows["taken"]), "extra_steps": extra,
                           "ahead_steps": ahead}
    for name, dist in rows.items():
        d = np.asarray(dist)
        out[name] = {"median": round(float(np.median(d)), 4), "q25": round(float(np.quantile(d, 0.25)), 4),
                     "q75": round(float(np.quantile(d, 0.75)), 4),
                     "inside_half_radius": round(float(np.mean(d <= radius / 2)), 3)}
    return out


def _pressed(env: Any, action: np.ndarray, reward: float, where: np.ndarray, cols: slice, extra: int
             ) -> np.ndarray:
    """The part's place at the highest reward while ``action`` is repeated, for as long as the reward rises (at
    most ``extra`` steps) from a success that paid ``reward`` with the part at ``where``."""
    best, top = where, reward
    for _ in range(extra):
        obs, r = env.step_on(action)
        if not r > top:
            break
        best, top = np.asarray(obs[cols], np.float64), r
    return best


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--families", nargs="+", default=list(FAMILIES), choices=list(FAMILIES))
    p.add_argument("--extra", type=int, default=20, help="scripted steps past the first success (settled)")
    p.add_argument("--ahead", type=int, default=8, help="steps of the approach a success is moved on (ahead)")
    p.add_argument("--out", type=Path, default=RESULTS / "mark-offset.json")
    args = p.parse_args(argv)
    if args.extra < 0 or args.ahead < 0:
        p.error("--extra and --ahead must be >= 0")
    families = {f: offsets(f, args.extra, args.ahead) for f in args.families}
    result = {"families": families, "versions": versions()}
    for family, row in families.items():
        print(family, json.dumps({k: row[k] for k in ("part", "success_radius", "goals", "taken", "reached",
                                                       "settled", "pressed", "ahead")}))
    write_result(args.out, result)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
