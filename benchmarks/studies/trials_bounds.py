"""What an explorer that remembers its earlier trials can achieve in the trials rooms.

The calibration the trials targets need: cumulative success by trial ``k`` of an agent that
knows every cell its run visited before, with no learning.

* Hidden-goal room (10x10, start (0, 0), king moves, 25 moves a trial): each move reaches at
  most one new cell, so ``k`` trials find at most ``min(25k, 99)`` of the 99 goal cells; the
  hand-built plan :data:`GOAL_PLAN` meets that bound exactly (its only wasted move is trial
  4's first, back onto (1, 1)): 25, 50, 75 and 99 cells. It is replayed in the real env.
* Hidden key and door (7x7, 30 moves): a greedy explorer with memory (nearest cell not yet
  stood on while it looks for the key; straight to the key once known; then the nearest
  cell not yet stood on with the key while it looks for the door), on a grid model of the
  room. Trial 1's upper bound: with the key as the ``i``-th new cell, at most ``30 - i`` door
  cells can be tried after it.

``python -m benchmarks.studies.trials_bounds`` writes ``benchmarks/results/trials-bounds.json``.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import numpy as np

RESULTS = Path(__file__).resolve().parents[1] / "results"


def _row(y: int, xs: range) -> list[tuple[int, int]]:
    return [(x, y) for x in xs]


def _col(x: int, ys: range) -> list[tuple[int, int]]:
    return [(x, y) for y in ys]


def _r(a: int, b: int) -> range:
    return range(a, b + 1) if a <= b else range(a, b - 1, -1)


#: four paths of at most 25 king moves from (0, 0) whose union is every non-start cell of the 10x10 room
GOAL_PLAN: list[list[tuple[int, int]]] = [
    _row(0, _r(1, 9)) + _row(1, _r(9, 3)) + _row(2, _r(4, 9)) + _col(9, _r(3, 5)),
    _col(0, _r(1, 9)) + _col(1, _r(9, 3)) + _col(2, _r(4, 9)) + _row(9, _r(3, 5)),
    [(1, 1), (2, 1), (3, 2)] + _row(3, _r(4, 8)) + _row(4, _r(8, 4)) + _row(5, _r(4, 8)) + _col(9, _r(6, 9))
    + _row(9, _r(8, 6)),
    [(1, 1), (1, 2), (2, 3), (2, 2), (3, 3), (3, 4), (3, 5)] + _row(6, _r(3, 8)) + _row(7, _r(8, 3))
    + _row(8, _r(3, 8)),
]


def goal_plan_trials(goals: list[int], size: int = 10, cap: int = 25) -> dict[int, int]:
    """The trial (1-4) on which :data:`GOAL_PLAN`, replayed in :class:`HiddenGoalRoom`, stands on each goal."""
    from integrations.minihack.hidden_goal import MOVES, HiddenGoalRoom

    env, found = HiddenGoalRoom(size, cap), {}
    try:
        for goal in goals:
            for t, path in enumerate(GOAL_PLAN, start=1):
                env.reset(seed=goal)
                pos, done = (0, 0), False
                for cell in path:
                    obs, _, done, _, _ = env.step(MOVES.index((cell[0] - pos[0], cell[1] - pos[1])))
                    assert tuple(int(v) for v in obs) == cell, (goal, t, cell, obs)
                    pos = cell
                    if done:
                        break
                if done:
                    found[goal] = t
                    break
    finally:
        env.close()
    return found


def key_door_greedy(key: tuple[int, int], door: tuple[int, int], size: int = 7, cap: int = 30,
                    trials: int = 4) -> int:
    """The trial (1-based; ``trials + 1``: never) on which the greedy explorer with memory opens the door."""
    cells = [(x, y) for y in range(size) for x in range(size)][1:]
    rank = {c: i for i, c in enumerate(c for y in range(size) for c in _row(y, range(size) if y % 2 == 0
                                                                              else range(size - 1, -1, -1)))}
    keys, doors, known = set(cells), set(cells), None

    def cheb(a: tuple[int, int], b: tuple[int, int]) -> int:
        return max(abs(a[0] - b[0]), abs(a[1] - b[1]))

    for trial in range(1, trials + 1):
        pos, has = (0, 0), False
        for _ in range(cap):
            if has:
                target = min(doors - {known}, key=lambda c: (cheb(pos, c), rank[c]))
            elif known is not None:
                target = known
            else:
                target = min(keys, key=lambda c: (cheb(pos, c), rank[c]))
            pos = (pos[0] + int(np.sign(target[0] - pos[0])), pos[1] + int(np.sign(target[1] - pos[1])))
            keys.discard(pos)
            if pos == key:
                has, known = True, key
                doors.discard(key)
            elif has:
                if pos == door:
                    return trial
                doors.discard(pos)
    return trials + 1


def _cumulative(found_on: list[int], n: int, trials: int = 4) -> list[float]:
    return [round(sum(t <= k for t in found_on) / n, 3) for k in range(1, trials + 1)]


def main(argv: list[str] | None = None) -> dict[str, Any]:
    from integrations.minihack.hidden_goal import goal_cells, split_goals
    from integrations.minihack.hidden_key_door import seed_pair, split_pairs

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", type=Path, default=RESULTS / "trials-bounds.json")
    args = p.parse_args(argv)
    goals = [int(g) for g in goal_cells(10)]
    found = goal_plan_trials(goals)
    _, held = split_goals(10, 20, seed=0)
    size = 7
    xy = lambda c: (c % size, c // size)  # noqa: E731
    pairs = [(k, d) for k in range(1, size * size) for d in range(1, size * size) if k != d]
    greedy = [key_door_greedy(xy(k), xy(d)) for k, d in pairs]
    _, held_pairs = split_pairs(size, 80, 20, seed=0)
    greedy_held = [key_door_greedy(xy(k), xy(d)) for k, d in (seed_pair(s, size) for s in held_pairs)]
    out = {
        "darkroom": {"task": "HiddenGoalRoom-10x10, 25-step cap", "explorer": "GOAL_PLAN (hand-built, replayed in the env)",
                     "cumulative_by_trial_all_goals": _cumulative([found.get(g, 5) for g in goals], len(goals)),
                     "cumulative_by_trial_heldout": _cumulative([found.get(g, 5) for g in held], len(held)),
                     "upper_bound_by_trial": [round(min(25 * k, 99) / 99, 3) for k in range(1, 5)]},
        "keydoor": {"task": "HiddenKeyDoorRoom-7x7, 30-step cap", "explorer": "greedy with memory (grid model)",
                    "cumulative_by_trial_all_pairs": _cumulative(greedy, len(pairs)),
                    "cumulative_by_trial_heldout": _cumulative(greedy_held, len(held_pairs)),
                    "trial1_upper_bound": round(sum(30 - i for i in range(1, 31)) / len(pairs), 3)},
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(out, indent=1))
    print(json.dumps(out, indent=1))
    return out


if __name__ == "__main__":
    main()
