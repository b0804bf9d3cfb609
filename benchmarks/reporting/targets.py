"""The benchmark issue's targets, checked against the result files.

Each suite has targets (``ppo`` vs ``crl``) from the benchmarks issue; :func:`check_all`
evaluates every one for which results exist and returns :class:`Check` records that the
report renders as a table, met or missed, with the measured figures and seed counts:

* ``easy`` / ``easy-60k``: steps to 90 % <= 0.6x PPO's; std of final success across seeds
  <= 0.6x PPO's; CRL never ends below PPO (mean final success, and no seed below PPO's worst).
* ``medium``: CRL reaches PPO's mean final success in <= 0.6x the steps PPO took to first
  reach it (its budget when it got there only at the end); ends >= 10
  points above PPO with the 95 % bootstrap CIs apart; smaller std across seeds.
* ``mt10``: final success >= 7.3 points above PPO's.
* ``stretch``: any sustained success (mean final success > 0) of ``crl-demos``, the arm
  that starts from demonstrations (:data:`METHOD_ARM`).
* ``keyroom-20-300k`` (experience that reaches the policy): the method ends with sustained success
  >= 0.8 and >= 0.6 evaluated without experience (>= 3 seeds), above each simple peer
  (``ppo-bc``, ``ppo-kickstart``, ``ppo-sil``: the 95 % bootstrap CI of the difference above 0),
  and vanilla PPO stays near 0 (mean final success <= 0.05).
* overhead (the report's overhead result files: the latest side-by-side runs, one per env):
  PPO+CRL steps/s >= 0.9x PPO's; the learner off the actor's thread (a thread, or a process
  of its own) at <= 0.8x the sync wall-clock where the manager takes >= 30 % of it.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import attrs
import numpy as np

from .stats import bootstrap_ci, difference_ci

__all__ = ["Check", "check_all", "check_overhead", "render_checks", "steps_to_level"]

MIN_SEEDS = {"easy": 5, "easy-60k": 5, "medium": 5, "mt10": 3, "stretch": 1, "keyroom-20-300k": 3}
METHOD_ARM = {"stretch": "crl-demos", "keyroom-20": "crl-sil-obs", "keyroom-20-300k": "crl-sil-obs"}
#: The simple peers the method must beat, per suite (:func:`_check_peers`).
PEERS = {"keyroom-20-300k": ("ppo-bc", "ppo-kickstart", "ppo-sil")}
"""The arm checked against ``ppo`` where it is not ``crl``."""


@attrs.frozen
class Check:
    """One target of one suite and task: what it asks, what was measured, whether it is met.

    ``met`` is None when the results cannot decide (an arm missing, or no seed reached a level).
    """

    suite: str
    task: str
    target: str
    measured: str
    met: bool | None
    seeds: str = ""


def steps_to_level(run: dict[str, Any], level: float, min_episodes: int = 100) -> int | None:
    """First step at which the run's rolling success is >= ``level`` (over >= ``min_episodes``
    finished episodes, like the runner's own thresholds), or None if it never was.

    >>> run = {"curve": [{"steps": 1024, "episodes": 50, "outcome": 0.9},
    ...                  {"steps": 2048, "episodes": 120, "outcome": 0.7},
    ...                  {"steps": 3072, "episodes": 190, "outcome": 0.8}]}
    >>> steps_to_level(run, 0.75), steps_to_level(run, 0.95)
    (3072, None)
    """
    for c in run["curve"]:
        if c.get("outcome") is not None and c.get("episodes", 0) >= min_episodes and c["outcome"] >= level:
            return int(c["steps"])
    return None


def _finals(runs: list[dict]) -> list[float]:
    return [float(r["final_outcome"]) for r in runs if r.get("final_outcome") is not None]


def _seeds(ppo: list[dict], crl: list[dict]) -> str:
    return f"{len(ppo)} / {len(crl)}"


def _verdict(ok: bool, n_min: int, ppo: list[dict], crl: list[dict]) -> bool:
    return bool(ok) and min(len(ppo), len(crl)) >= n_min


def _std(vals: list[float]) -> float:
    return float(np.std(vals)) if vals else math.nan


def _check_easy(suite: str, task: str, ppo: list[dict], crl: list[dict]) -> list[Check]:
    seeds, n_min = _seeds(ppo, crl), MIN_SEEDS.get(suite, 1)
    out = []
    reach = {name: [r["first_reached"].get("0.9") for r in runs] for name, runs in (("ppo", ppo), ("crl", crl))}
    if all(v is not None for vals in reach.values() for v in vals):
        ratio = np.mean(reach["crl"]) / np.mean(reach["ppo"])
        out.append(Check(suite, task, "steps to 90 % <= 0.6x PPO's",
                         f"{np.mean(reach['crl']) / 1000:.1f}k vs {np.mean(reach['ppo']) / 1000:.1f}k "
                         f"= {ratio:.2f}x", _verdict(ratio <= 0.6, n_min, ppo, crl), seeds))
    else:
        missing = {k: sum(v is None for v in vals) for k, vals in reach.items()}
        out.append(Check(suite, task, "steps to 90 % <= 0.6x PPO's",
                         f"seeds that never reached 90 %: ppo {missing['ppo']}, crl {missing['crl']}", None, seeds))
    fp, fc = _finals(ppo), _finals(crl)
    sp, sc = _std(fp), _std(fc)
    std_ok = sc <= 0.6 * sp if sp > 0 else sc == 0
    out.append(Check(suite, task, "std of final success across seeds <= 0.6x PPO's",
                     f"{sc:.3f} vs {sp:.3f}", _verdict(std_ok, n_min, ppo, crl), seeds))
    below = np.mean(fc) < np.mean(fp) or min(fc) < min(fp)
    out.append(Check(suite, task, "never ends below PPO (mean, and worst seed)",
                     f"mean {np.mean(fc):.3f} vs {np.mean(fp):.3f}; worst {min(fc):.3f} vs {min(fp):.3f}",
                     _verdict(not below, n_min, ppo, crl), seeds))
    return out


def _check_medium(suite: str, task: str, ppo: list[dict], crl: list[dict]) -> list[Check]:
    seeds, n_min = _seeds(ppo, crl), MIN_SEEDS.get(suite, 1)
    fp, fc = _finals(ppo), _finals(crl)
    level = float(np.mean(fp))
    budget = max(int(r["total_steps"]) for r in ppo)
    # "the steps PPO needed": when PPO's curve is not monotonic (it can pass its final level
    # early and fall back), the first time each PPO seed reached the level, else the budget
    ppo_steps = float(np.mean([s if s is not None else budget for s in (steps_to_level(r, level) for r in ppo)]))
    steps = [steps_to_level(r, level) for r in crl]
    reached = [s for s in steps if s is not None]
    if reached:
        ratio = np.mean(reached) / ppo_steps
        measured = (f"PPO's mean final {level:.2f}, first reached by PPO at {ppo_steps / 1000:.0f}k; "
                    f"CRL at {np.mean(reached) / 1000:.0f}k = {ratio:.2f}x ({len(reached)}/{len(crl)} seeds)")
        met: bool | None = _verdict(bool(ratio <= 0.6) and len(reached) == len(crl), n_min, ppo, crl)
    else:
        measured, met = f"PPO's mean final {level:.2f}; no CRL seed reached it", False
    out = [Check(suite, task, "reaches PPO's mean final success in <= 0.6x the steps", measured, met, seeds)]
    (pl, ph), (cl, ch) = bootstrap_ci(fp), bootstrap_ci(fc)
    diff = float(np.mean(fc) - np.mean(fp))
    apart = not math.isnan(cl) and not math.isnan(ph) and cl > ph
    out.append(Check(suite, task, "ends >= 10 points above PPO, 95 % CIs apart",
                     f"{np.mean(fc):.2f} [{cl:.2f}, {ch:.2f}] vs {np.mean(fp):.2f} [{pl:.2f}, {ph:.2f}] "
                     f"({diff * 100:+.1f} points)", _verdict(diff >= 0.10 and apart, n_min, ppo, crl), seeds))
    out.append(Check(suite, task, "smaller spread of final success across seeds",
                     f"std {_std(fc):.3f} vs {_std(fp):.3f}", _verdict(_std(fc) < _std(fp), n_min, ppo, crl),
                     seeds))
    return out


def _check_mt10(suite: str, task: str, ppo: list[dict], crl: list[dict]) -> list[Check]:
    fp, fc = _finals(ppo), _finals(crl)
    diff = float(np.mean(fc) - np.mean(fp))
    return [Check(suite, task, "final success >= 7.3 points above PPO's",
                  f"{np.mean(fc):.3f} vs {np.mean(fp):.3f} ({diff * 100:+.1f} points)",
                  _verdict(diff >= 0.073, MIN_SEEDS["mt10"], ppo, crl), _seeds(ppo, crl))]


def _check_stretch(suite: str, task: str, ppo: list[dict], crl: list[dict]) -> list[Check]:
    fp, fc = _finals(ppo), _finals(crl)
    return [Check(suite, task, f"any sustained success of `{METHOD_ARM[suite]}` (mean final success > 0)",
                  f"{np.mean(fc):.3f} vs ppo {np.mean(fp):.3f}", bool(np.mean(fc) > 0), _seeds(ppo, crl))]


def _eval_without(runs: list[dict]) -> list[float]:
    return [float(r["evaluation"]["without_experience"]["success"]) for r in runs
            if (r.get("evaluation") or {}).get("without_experience", {}).get("success") is not None]


def _check_peers(suite: str, task: str, arms: dict[str, list[dict]]) -> list[Check]:
    """The method's level (with and without experience), its lead over each simple peer, and PPO near 0."""
    method = arms[METHOD_ARM[suite]]
    n_min, fm = MIN_SEEDS.get(suite, 1), _finals(method)
    out = [Check(suite, task, "sustained success (last 100 episodes) >= 0.8", f"{np.mean(fm):.2f} ({len(fm)} seeds)",
                 len(fm) >= n_min and bool(np.mean(fm) >= 0.8), f"- / {len(fm)}")]
    ev = _eval_without(method)
    if ev:
        out.append(Check(suite, task, "evaluated without experience >= 0.6", f"{np.mean(ev):.2f} ({len(ev)} seeds)",
                         len(ev) >= n_min and bool(np.mean(ev) >= 0.6), f"- / {len(ev)}"))
    for peer in PEERS.get(suite, ()):
        fp = _finals(arms.get(peer, []))
        if not fp:
            out.append(Check(suite, task, f"above `{peer}`", "not run", None))
            continue
        d, lo, hi = difference_ci(fm, fp)
        where = "CI above 0" if lo > 0 else "CI below 0" if hi < 0 else "CI overlaps 0"
        out.append(Check(suite, task, f"above `{peer}` (final success, 95 % CI of the difference above 0)",
                         f"{np.mean(fm):.2f} vs {np.mean(fp):.2f}: {d:+.2f} [{lo:+.2f}, {hi:+.2f}] ({where})",
                         None if math.isnan(lo) else bool(lo > 0) and min(len(fm), len(fp)) >= n_min,
                         f"{len(fp)} / {len(fm)}"))
    fp = _finals(arms.get("ppo", []))
    if fp:
        out.append(Check(suite, task, "vanilla PPO stays near 0 (mean final success <= 0.05)", f"{np.mean(fp):.3f}",
                         bool(np.mean(fp) <= 0.05), f"{len(fp)} / -"))
    return out


CHECKERS = {"easy": _check_easy, "easy-60k": _check_easy, "medium": _check_medium,
            "mt10": _check_mt10, "stretch": _check_stretch}


#: the overhead arms whose steps/s are checked against 0.9x their PPO baseline's
OVERHEAD_ARMS = ("crl-same-net", "crl-same-net-vec", "crl", "crl-default-vec", "crl-same-net-vec-process",
                 "crl-default-vec-process", "crl-process")
#: the manager's share of the sync wall-clock from which the async target applies (below, reported)
ASYNC_SHARE = 0.3


def check_overhead(path: Path) -> list[Check]:
    """The wall-clock targets, from the overhead benchmark's result file (if it exists).

    Steps/s >= 0.9x PPO's (each arm against its own PPO baseline); the learner off the
    actor's thread (``async``, a thread; ``process``, a process of its own) at <= 0.8x the
    sync wall-clock where the manager's share of the sync wall-clock is >= 30 % (elsewhere
    the ratio is reported, met or not being ``-``: the share bounds what it can save).
    """
    if not path.exists():
        return []
    summary = json.loads(path.read_text())["summary"]
    out = []
    for env_id, s in sorted(summary.items()):
        ratios = s["ratio_to_ppo"]
        for arm in OVERHEAD_ARMS:
            if arm in ratios:
                r = float(ratios[arm])
                out.append(Check("overhead", env_id, f"`{arm}` steps/s >= 0.9x its PPO's", f"{r:.2f}x",
                                 bool(r >= 0.9)))
        share = s.get("sync_manager_share")
        for key, what in (("async_vs_sync_wall", "async (thread)"), ("process_vs_sync_wall", "learner process")):
            if key in s:
                a = float(s[key])
                applies = share is None or float(share) >= ASYNC_SHARE
                if applies:
                    note = "" if share is None else f" (manager share of sync {float(share):.0%})"
                    target = f"{what} wall-clock <= 0.8x sync{note}"
                else:  # the share bounds what any worker can save: reported, not judged
                    target = (f"{what} wall-clock vs sync, reported (manager share of sync {float(share):.0%}, "
                              f"below {ASYNC_SHARE:.0%})")
                out.append(Check("overhead", env_id, target, f"{a:.2f}x", bool(a <= 0.8) if applies else None))
    return out


def check_all(results: dict[str, dict[str, dict[str, list[dict]]]],
              overhead: Path | Sequence[Path] | None = None) -> list[Check]:
    """Every target whose suite has both a ``ppo`` and its method arm (:data:`METHOD_ARM`,
    else ``crl``) in ``results``; and the overhead targets of each ``overhead`` result file."""
    out: list[Check] = []
    for suite, checker in CHECKERS.items():
        method = METHOD_ARM.get(suite, "crl")
        for task, arms in sorted(results.get(suite, {}).items()):
            if arms.get("ppo") and arms.get(method) and _finals(arms["ppo"]) and _finals(arms[method]):
                out += checker(suite, task, arms["ppo"], arms[method])
    for suite in PEERS:
        for task, arms in sorted(results.get(suite, {}).items()):
            if _finals(arms.get(METHOD_ARM[suite], [])):
                out += _check_peers(suite, task, arms)
    for path in [overhead] if isinstance(overhead, Path) else overhead or ():
        out += check_overhead(path)
    return out


def render_checks(checks: list[Check]) -> list[str]:
    """Markdown table of the checks (``met``: yes / **no** / undecided)."""
    if not checks:
        return ["(no suite with both `ppo` and `crl` results yet)"]
    word = {True: "yes", False: "**no**", None: "undecided"}
    lines = ["| suite | task | target | measured (CRL vs PPO) | seeds (ppo / crl) | met |",
             "| --- | --- | --- | --- | --- | --- |"]
    for c in checks:
        lines.append(f"| {c.suite} | {c.task} | {c.target} | {c.measured} | {c.seeds or '-'} | {word[c.met]} |")
    return lines
