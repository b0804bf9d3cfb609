"""Reading benchmark result files: the results folder, the runs of each suite, a run's learning curve and AUC.

One home for what :mod:`.report` (tables, figures) and :mod:`.compare` (CIs of differences)
both read, so neither imports the other for it.
"""

from __future__ import annotations

import math
from collections import defaultdict
from pathlib import Path

import numpy as np

from benchmarks.harness.result_file import read_result

__all__ = ["RESULTS", "load_results", "curve_of", "auc"]

RESULTS = Path(__file__).resolve().parents[1] / "results"


def load_results(root: Path, suites: list[str] | None = None) -> dict[str, dict[str, dict[str, list[dict]]]]:
    """``out[suite][env][arm] = [result, ...]`` sorted by seed."""
    out: dict[str, dict[str, dict[str, list[dict]]]] = defaultdict(lambda: defaultdict(lambda: defaultdict(list)))
    for path in sorted(root.glob("*/*/*/seed*.json")):
        suite = path.parts[-4]
        if suites and suite not in suites:
            continue
        res = read_result(path, needs=("env_id", "arm", "seed"))
        out[suite][res["env_id"]][res["arm"]].append(res)
    for envs in out.values():
        for arms in envs.values():
            for runs in arms.values():
                runs.sort(key=lambda r: r["seed"])
    return out


def curve_of(run: dict, key: str = "outcome") -> tuple[np.ndarray, np.ndarray]:
    pts = [(c["steps"], c[key]) for c in run["curve"] if c.get(key) is not None]
    if not pts:
        return np.zeros(0), np.zeros(0)
    s, v = zip(*pts, strict=True)
    return np.asarray(s, dtype=float), np.asarray(v, dtype=float)


def auc(run: dict) -> float:
    """Mean rolling outcome over the run (area under the curve divided by the steps)."""
    s, v = curve_of(run)
    if len(s) < 2:
        return math.nan
    return float(np.trapezoid(v, s) / (s[-1] - s[0]))
