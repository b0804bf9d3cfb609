"""How well each fallback baseline stands in for paired credit: the critic's V(s0) against the
task's recent free episodes.

Paired credit (issue 13, item 2) judges a guided episode against the free episodes of its own
task instance. An env that cannot replay an instance falls back to a baseline: the critic's
value of the episode's first observation (``value_baseline=True``,
:func:`~experience_wrappers.credit.value_delta`) or, without it, the mean of the task's last
100 free episodes (the unpaired rule, :class:`~experience_wrappers.credit.FreeBaseline`).

This script trains the paired method (``crl-sil-obs-paired``, with the start values recorded
too: ``value_baseline=True``; the paired rule still credits, as it goes first) on an env that
replays instances, records every episode the manager receives, and asks, over the guided
episodes whose instance has free members: how close does each baseline come to the pairing's
own baseline, the mean discounted return of the free episodes of the same instance? Reported
per seed and pooled: Pearson's r and the RMSE of each baseline against it (the critic's units:
discounted returns), and the r of each rule's delta with the paired delta.

Run (about 2 minutes per 60k-step run)::

    python -m benchmarks.studies.credit_agreement --envs MiniHack-Room-Monster-5x5-v0 --seeds 0 1 2
    python -m benchmarks.studies.credit_agreement --envs MiniHack-Room-Ultimate-5x5-v0 --steps 60000 \\
        --out benchmarks/results/credit_agreement.json
"""

from __future__ import annotations

import argparse
import warnings
from collections import deque
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import attrs
import numpy as np

from benchmarks.harness.config import load_hyperparams
from benchmarks.harness.result_file import write_result
from benchmarks.harness.run import train_run, versions
from benchmarks.suites.arms import ARMS
from experience_wrappers import ExperienceManager
from experience_wrappers.credit import discounted_return
from experience_wrappers.manager import Episode

RESULTS = Path(__file__).resolve().parents[1] / "results"
ARM = attrs.evolve(ARMS["crl-sil-obs-paired"], name="crl-sil-obs-paired-vb",
                   wrapper={**ARMS["crl-sil-obs-paired"].wrapper, "experimental": {"value_baseline": True}})
#: free episodes the unpaired rule averages (``ManagerConfig.baseline_window``'s default)
WINDOW = 100


@contextmanager
def recording(into: list[dict[str, Any]], gamma: float) -> Iterator[None]:
    """Record a summary of every episode any :class:`ExperienceManager` receives, in order."""
    real = ExperienceManager.submit

    def submit(self: ExperienceManager, episode: Episode) -> None:
        inst = episode.instance
        into.append({"guided": bool(episode.guided), "ret": discounted_return(episode.rewards, gamma),
                     "start_value": None if episode.start_value is None else float(episode.start_value),
                     "instance": None if inst is None else (int(inst.seed), int(inst.group), int(inst.index))})
        return real(self, episode)

    ExperienceManager.submit = submit  # type: ignore[method-assign]
    try:
        yield
    finally:
        ExperienceManager.submit = real  # type: ignore[method-assign]


def baselines(episodes: list[dict[str, Any]], window: int = WINDOW) -> dict[str, np.ndarray]:
    """Per guided episode with a start value and free episodes of its own instance: its
    discounted return, the instance's mean free discounted return (the paired baseline), the
    mean of the last ``window`` free discounted returns before it (the unpaired baseline),
    and its start value (the value baseline).

    >>> eps = [{"guided": False, "ret": 1.0, "start_value": None, "instance": (0, 0, 0)},
    ...        {"guided": True, "ret": 0.5, "start_value": 0.8, "instance": (0, 0, 0)},
    ...        {"guided": False, "ret": 0.0, "start_value": None, "instance": (0, 0, 1)}]
    >>> {k: v.tolist() for k, v in baselines(eps).items()}
    {'guided': [0.5], 'paired': [1.0], 'unpaired': [1.0], 'value': [0.8]}
    """
    free_by_instance: dict[Any, list[float]] = {}
    for e in episodes:
        if not e["guided"] and e["instance"] is not None:
            free_by_instance.setdefault(e["instance"], []).append(e["ret"])
    recent: deque[float] = deque(maxlen=window)
    rows: list[tuple[float, float, float, float]] = []
    for e in episodes:
        if not e["guided"]:
            recent.append(e["ret"])
            continue
        free = free_by_instance.get(e["instance"])
        if free and recent and e["start_value"] is not None:
            rows.append((e["ret"], float(np.mean(free)), float(np.mean(recent)), e["start_value"]))
    a = np.asarray(rows, dtype=np.float64).reshape(-1, 4)
    return {"guided": a[:, 0], "paired": a[:, 1], "unpaired": a[:, 2], "value": a[:, 3]}


def _r(x: np.ndarray, y: np.ndarray) -> float | None:
    if len(x) < 3 or np.std(x) == 0 or np.std(y) == 0:
        return None
    return float(np.corrcoef(x, y)[0, 1])


def agreement(b: dict[str, np.ndarray]) -> dict[str, Any]:
    """Each fallback baseline against the paired one: r, RMSE, and r of the deltas."""
    out: dict[str, Any] = {"guided_episodes": len(b["paired"])}
    paired_delta = b["guided"] - b["paired"]
    for name in ("value", "unpaired"):
        out[name] = {"r": _r(b[name], b["paired"]),
                     "rmse": float(np.sqrt(np.mean((b[name] - b["paired"]) ** 2))) if len(b["paired"]) else None,
                     "delta_r": _r(b["guided"] - b[name], paired_delta)}
    return out


def _fmt(x: float | None) -> str:
    return "  n/a" if x is None else f"{x:5.2f}"


def _line(env_id: str, label: object, agr: dict[str, Any]) -> str:
    """One row of the printed table (a seed's, or ``all`` for the pooled episodes)."""
    v, u = agr["value"], agr["unpaired"]
    return (f"{env_id:30} {label!s:>4} {agr['guided_episodes']:>5}  {_fmt(v['r'])} {_fmt(u['r'])}   "
            f"{_fmt(v['rmse'])}    {_fmt(u['rmse'])}  {_fmt(v['delta_r'])} {_fmt(u['delta_r'])}")


def main(argv: list[str] | None = None) -> dict[str, Any]:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--envs", nargs="+", default=["MiniHack-Room-Monster-5x5-v0"])
    p.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    p.add_argument("--steps", type=int, default=60_000)
    p.add_argument("--out", type=Path, default=RESULTS / "credit_agreement.json")
    args = p.parse_args(argv)
    result: dict[str, Any] = {"arm": ARM.name, "arm_wrapper": ARM.wrapper, "group_size": ARM.group_size,
                              "steps": args.steps, "window": WINDOW, "versions": versions(), "runs": []}
    print(f"{'env':30} {'seed':>4} {'n':>5}   r(V)  r(unp) rmse(V) rmse(unp)  dr(V) dr(unp)")
    for env_id in args.envs:
        hyper = load_hyperparams(env_id)
        gamma = float(hyper.get("gamma", 0.99))
        pooled: list[dict[str, np.ndarray]] = []
        for seed in args.seeds:
            episodes: list[dict[str, Any]] = []
            with recording(episodes, gamma), warnings.catch_warnings():
                warnings.simplefilter("ignore")
                run = train_run(env_id, ARM, seed, hyper, total_steps=args.steps)
            b = baselines(episodes)
            pooled.append(b)
            agr = agreement(b)
            result["runs"].append({"env_id": env_id, "seed": seed, "final_outcome": run["final_outcome"],
                                   "episodes": len(episodes), **agr})
            print(_line(env_id, seed, agr))
        allb = {k: np.concatenate([b[k] for b in pooled]) for k in pooled[0]}
        agr = agreement(allb)
        result.setdefault("pooled", {})[env_id] = agr
        print(_line(env_id, "all", agr))
    write_result(args.out, result)
    return result


if __name__ == "__main__":
    main()
