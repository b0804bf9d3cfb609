"""Paired comparisons of two evaluations of the same trained weights, from the runs the trials suites keep.

An ``eval_search`` arm evaluates one set of weights twice, with and without a test-time setting, on the
same held-out instances, repeats and env seeds; its result file keeps every run's successes by trial
(``evaluate_trials(keep_runs=True)``, ordered by instance then repeat). The unit of a pair is one held-out
instance of one seed: its metric over its repeats in each evaluation. Their differences, resampled
together, say what the setting does to these weights, a far narrower interval than two rows of seeds
treated as independent. It is conditional on the weights: it leaves out how much training varies from seed
to seed, so it is only for two evaluations of one file, never for two arms (trained apart), whose
comparison is over seeds (:func:`benchmarks.reporting.stats.difference_ci`).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from benchmarks.reporting.stats import paired_difference_ci

__all__ = ["instance_metric", "paired_difference", "paired_table"]


def instance_metric(successes: Any, instances: int, name: str) -> np.ndarray:
    """Per instance, ``name`` (``trial1``, ``cumulative@K``, ``cumulative@n`` for n in 1..trials, ``mean``) over its
    repeats, from ``successes`` ``(instances x repeats, trials)`` ordered by instance then repeat.

    >>> instance_metric([[0, 1], [1, 1], [0, 0], [0, 1]], 2, "trial1").tolist()
    [0.5, 0.0]
    >>> instance_metric([[0, 1], [1, 1], [0, 0], [0, 1]], 2, "cumulative@K").tolist()
    [1.0, 0.5]

    Raises:
        ValueError: ``successes`` does not split into ``instances`` equal groups; a metric not made of
            per-run figures (``after_first_success`` is a rate over the trials that follow a success);
            ``cumulative@n`` past the trials held.
    """
    s = np.asarray(successes, dtype=float)
    if s.ndim != 2 or instances < 1 or len(s) % instances:
        raise ValueError(f"successes of shape {s.shape} do not split into {instances} instances' runs")
    if name == "trial1":
        per_run = s[:, 0]
    elif name == "mean":
        per_run = s.mean(axis=1)
    elif name.startswith("cumulative@"):
        n = s.shape[1] if name == "cumulative@K" else int(name.split("@")[1])
        if not 1 <= n <= s.shape[1]:
            raise ValueError(f"{name}: the runs hold trials 1 to {s.shape[1]}")
        per_run = s[:, :n].max(axis=1)
    else:
        raise ValueError(f"{name!r} is not a per-run metric; pair trial1, mean or cumulative@n")
    return per_run.reshape(instances, -1).mean(axis=1)


def paired_difference(a: list[dict[str, Any]], b: list[dict[str, Any]], cond_a: str, cond_b: str,
                      name: str) -> tuple[float, float, float, int, list[int]] | None:
    """``a`` minus ``b`` (two evaluations in the same result files, by seed) paired by seed and held-out instance:
    the mean difference, its 95 % CI, the number of pairs and the seeds paired; None when no seed of both kept
    its runs of the same held-out instances and repeats."""
    by_seed = {r["seed"]: r for r in b}
    xs: list[np.ndarray] = []
    ys: list[np.ndarray] = []
    seeds: list[int] = []
    for r in a:
        other = by_seed.get(r["seed"])
        if other is None:
            continue
        ma, mb = r["heldout"].get(cond_a) or {}, other["heldout"].get(cond_b) or {}
        same = (r.get("heldout_instances") == other.get("heldout_instances")
                and r["heldout"].get("repeats") == other["heldout"].get("repeats"))
        n = len(r.get("heldout_instances") or [])
        if not same or "successes" not in ma or "successes" not in mb or len(ma["successes"]) != len(mb["successes"]) \
                or not n or len(ma["successes"]) % n:  # (a damaged file is left out, not fatal to the report)
            continue
        xs.append(instance_metric(ma["successes"], n, name))
        ys.append(instance_metric(mb["successes"], n, name))
        seeds.append(int(r["seed"]))
    if not xs:
        return None
    d, lo, hi = paired_difference_ci(np.concatenate(xs).tolist(), np.concatenate(ys).tolist())
    return d, lo, hi, sum(len(x) for x in xs), seeds


def paired_table(arms: dict[str, list[dict[str, Any]]], method: str,
                 comparisons: list[tuple[str, str, str, str]]) -> list[str]:
    """``method`` minus each row of ``comparisons`` paired by held-out instance, where both kept their runs
    (empty when none did; ``after_first_success`` is left out). Give it only rows that are other evaluations
    of ``method``'s own files (the same weights): the interval is conditional on them."""
    lines = [f"| {method} minus, same weights paired by held-out instance | metric | difference [95 % CI] | "
             "pairs (seeds) |",
             "| --- | --- | --- | --- |"]
    for other, cond_m, cond_o, name in comparisons:
        if method not in arms or other not in arms or name == "after_first_success":
            continue
        got = paired_difference(arms[method], arms[other], cond_m, cond_o, name)
        if got is None or not math.isfinite(got[0]):
            continue
        d, lo, hi, pairs, seeds = got
        lines.append(f"| {other} ({cond_o.replace('_', ' ')}) | {name} ({cond_m.replace('_', ' ')}) | "
                     f"{d:+.2f} [{lo:+.2f}, {hi:+.2f}] | {pairs} ({', '.join(map(str, seeds))}) |")
    return lines if len(lines) > 2 else []
