"""Recall and exact-match rate of the bank's search after add/remove churn, beside a fresh bank.

The shape of run scope: entries come in tasks of ``--task-size`` (a run's steps), are read,
then the oldest tasks are removed and as many new ones added, ``--cycles`` times. For each
size ``n`` and key kind the bank (``capacity=n``, ``dedup_threshold=0``) is measured when
first filled ("fresh") and after the churn ("churned"), with ``--queries`` stored keys as
queries, each query

* filtered to its own task (``task_ids``) and unfiltered;
* **exact-match rate**: the nearest result is at distance 0 (the stored key itself, or a
  duplicate of it);
* **recall@k**, tie-aware: the share of the ``k`` results no farther than the exact ``k``-th
  nearest distance (keys with many equal distances have many correct answers).

Key kinds: ``onehot`` (a ``Discrete(64)`` observation: 64 cells, so many exact duplicates),
``tied`` (integer grid points in 4 dims, values 0-5: many equal distances, no one-hot), and
``gaussian`` (continuous, 64 dims). Also reported: how often the index was rebuilt at its
bound and the slowest add (a rebuild's stall). First, the cost of one task-filtered query, exact
over the task against hnswlib's filtered search, for tasks of ``--scope-sizes`` entries in a bank of
``--scope-bank`` (the crossover behind ``EXACT_SCOPE``).

    python -m benchmarks.perf.bank_churn --sizes 1000 10000 100000
    python -m benchmarks.perf.bank_churn --sizes 1000 10000 100000 1000000 --out benchmarks/results/bank_churn.json
"""

from __future__ import annotations

import os

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):  # one BLAS thread, as bank_perf
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import platform  # noqa: E402
import time  # noqa: E402
from collections.abc import Callable  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

from benchmarks.harness.result_file import write_result  # noqa: E402
from experience_wrappers.bank import ExperienceBank  # noqa: E402
from experience_wrappers.bank.search import pairwise_distances  # noqa: E402

F32 = np.float32
KINDS = ("onehot", "tied", "gaussian")


def key_maker(kind: str, rng: np.random.Generator) -> Callable[[int], np.ndarray]:
    """``make(m)``: ``m`` keys of ``kind``."""
    if kind == "onehot":
        def make(m: int) -> np.ndarray:
            keys = np.zeros((m, 64), F32)
            keys[np.arange(m), rng.integers(0, 64, m)] = 1.0
            return keys
    elif kind == "tied":
        def make(m: int) -> np.ndarray:
            return rng.integers(0, 6, (m, 4)).astype(F32)
    elif kind == "gaussian":
        def make(m: int) -> np.ndarray:
            return rng.normal(size=(m, 64)).astype(F32)
    else:
        raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")
    return make


def exact_kth(queries: np.ndarray, keys: np.ndarray, k: int, chunk: int = 128) -> np.ndarray:
    """The exact ``k``-th nearest squared-L2 distance of each query among ``keys``."""
    out = np.empty(len(queries))
    for lo in range(0, len(queries), chunk):
        d = pairwise_distances(queries[lo:lo + chunk], keys, "l2")
        kk = min(k, d.shape[1]) - 1
        out[lo:lo + chunk] = np.partition(d, kk, axis=1)[:, kk]
    return out


def measure(bank: ExperienceBank, k: int, n_queries: int, rng: np.random.Generator) -> dict:
    """Exact-match rate and tie-aware recall@k, filtered and unfiltered, on stored keys as queries."""
    ent = bank.entries()
    rows = rng.choice(len(ent["id"]), size=min(n_queries, len(ent["id"])), replace=False)
    q, tasks = ent["key"][rows], ent["task_id"][rows]
    out = {}
    for name, filt in (("filtered", True), ("unfiltered", False)):
        t0 = time.perf_counter()
        res = bank.query(q, k=k, mode="knn", task_ids=tasks if filt else None, record=False)
        seconds = time.perf_counter() - t0
        if filt:
            kth = np.array([exact_kth(q[i:i + 1], ent["key"][ent["task_id"] == tasks[i]], k)[0]
                            for i in range(len(q))])
            wanted = np.array([min(k, int((ent["task_id"] == t).sum())) for t in tasks])
        else:
            kth = exact_kth(q, ent["key"], k)
            wanted = np.full(len(q), min(k, len(ent["id"])))
        d = np.where(res.mask, res.distances, np.inf)
        good = (d <= kth[:, None] + 1e-5).sum(1)
        out[name] = {"exact_match": float(np.mean(d[:, 0] <= 1e-5)),
                     "recall_at_k": float(np.sum(np.minimum(good, wanted)) / wanted.sum()),
                     "query_us": 1e6 * seconds / len(q)}
    return out


def churn_size(n: int, kind: str, args: argparse.Namespace) -> dict:
    rng = np.random.default_rng(args.seed)
    make = key_maker(kind, rng)
    bank = ExperienceBank(capacity=n, dedup_threshold=0.0, seed=args.seed)
    ts = args.task_size
    n_tasks = n // ts
    live: list[tuple[int, np.ndarray]] = []
    next_task = 0
    rebuilds, slowest = 0, 0.0

    def add_tasks(m: int) -> None:
        nonlocal next_task, rebuilds, slowest
        for lo in range(0, m, args.tasks_per_add):
            count = min(args.tasks_per_add, m - lo)
            keys = make(count * ts)
            tasks = np.repeat(np.arange(next_task, next_task + count), ts)
            before = bank.core.index
            t0 = time.perf_counter()
            ids = bank.add(keys, np.zeros((len(keys), 1), F32), task_ids=tasks).ids
            slowest = max(slowest, time.perf_counter() - t0)
            rebuilds += before is not None and bank.core.index is not before  # not the first add's new index
            for j in range(count):
                live.append((next_task + j, ids[j * ts:(j + 1) * ts]))
            next_task += count

    t0 = time.perf_counter()
    add_tasks(n_tasks)
    fill_s = time.perf_counter() - t0
    fresh = measure(bank, args.k, args.queries, rng)
    turn = max(1, int(n_tasks * args.turnover))
    for _ in range(args.cycles):
        gone, live[:] = live[:turn], live[turn:]
        bank.remove(np.concatenate([ids for _, ids in gone]))
        add_tasks(turn)
    churned = measure(bank, args.k, args.queries, rng)
    bank.check_consistency()
    row = {"n": n, "kind": kind, "entries": len(bank), "tasks": n_tasks, "fill_s": fill_s,
           "cycles": args.cycles, "removed_per_cycle": turn * ts, "rebuilds": rebuilds,
           "slowest_add_s": slowest, "index_elements": bank.core.index.element_count if bank.core.index else 0,
           "fresh": fresh, "churned": churned}
    print(f"n={n:>8} {kind:>8}  fresh: filtered exact {fresh['filtered']['exact_match']:.4f} "
          f"recall {fresh['filtered']['recall_at_k']:.4f}, unfiltered exact {fresh['unfiltered']['exact_match']:.4f} "
          f"recall {fresh['unfiltered']['recall_at_k']:.4f} | churned: filtered exact "
          f"{churned['filtered']['exact_match']:.4f} recall {churned['filtered']['recall_at_k']:.4f}, unfiltered "
          f"exact {churned['unfiltered']['exact_match']:.4f} recall {churned['unfiltered']['recall_at_k']:.4f} "
          f"| rebuilds {rebuilds}, slowest add {slowest:.2f}s", flush=True)
    return row


def scope_sweep(sizes: list[int], bank_size: int, seed: int, repeats: int = 200) -> list[dict]:
    """Per-query time of a task-filtered kNN query (k = 4, 64-dim Gaussian keys, one task of each size
    in a bank of ``bank_size``): exact search over the task against hnswlib's filtered search.

    The crossover sets :data:`~experience_wrappers.bank.search.EXACT_SCOPE`.
    """
    from experience_wrappers.bank import search

    rng = np.random.default_rng(seed)
    rows = []
    for size in sizes:
        bank = ExperienceBank(capacity=bank_size, dedup_threshold=0.0, ef_construction=100, seed=seed)
        tasks = np.where(np.arange(bank_size) < size, 0, 1)
        bank.add(rng.normal(size=(bank_size, 64)).astype(F32), np.zeros((bank_size, 1), F32), task_ids=tasks)
        q = rng.normal(size=(1, 64)).astype(F32)
        times = {}
        for name, limit in (("exact", bank_size), ("filtered", 0)):
            saved, search.EXACT_SCOPE = search.EXACT_SCOPE, limit
            try:
                bank.query(q, k=4, mode="knn", task_ids=0, record=False)  # warm the task's caches
                t0 = time.perf_counter()
                for _ in range(repeats):
                    bank.query(q, k=4, mode="knn", task_ids=0, record=False)
                times[f"{name}_us"] = 1e6 * (time.perf_counter() - t0) / repeats
            finally:
                search.EXACT_SCOPE = saved
        rows.append({"task_size": size, "bank_size": bank_size, **times})
        print(f"task of {size:>5} in {bank_size}: exact {times['exact_us']:.0f} µs, "
              f"hnswlib filtered {times['filtered_us']:.0f} µs", flush=True)
    return rows


def main(argv: list[str] | None = None) -> dict:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--sizes", type=int, nargs="+", default=[1000, 10_000, 100_000])
    p.add_argument("--kinds", nargs="+", default=list(KINDS), choices=KINDS)
    p.add_argument("--task-size", type=int, default=15, help="entries per task (a run's steps)")
    p.add_argument("--tasks-per-add", type=int, default=20, help="tasks written per add call")
    p.add_argument("--cycles", type=int, default=6)
    p.add_argument("--turnover", type=float, default=0.5, help="share of the tasks replaced per cycle")
    p.add_argument("--k", type=int, default=8)
    p.add_argument("--queries", type=int, default=500)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--scope-sizes", type=int, nargs="*", default=[64, 256, 1024, 2048, 4096],
                   help="task sizes of the exact-against-filtered timing (none: skip it)")
    p.add_argument("--scope-bank", type=int, default=16_384, help="bank size of that timing")
    p.add_argument("--out", type=Path, default=None, help="result file (JSON); none: print only")
    args = p.parse_args(argv)
    if args.task_size < 1 or args.cycles < 0 or not 0 < args.turnover <= 1 or min(args.sizes) < args.task_size:
        p.error("need --task-size >= 1, --cycles >= 0, 0 < --turnover <= 1 and every size >= --task-size")
    sweep = scope_sweep(args.scope_sizes, args.scope_bank, args.seed) if args.scope_sizes else []
    rows = [churn_size(n, kind, args) for n in args.sizes for kind in args.kinds]
    result = {"benchmark": "bank_churn", "args": {k: (str(v) if isinstance(v, Path) else v)
                                                  for k, v in vars(args).items()}, "exact_scope": sweep,
              "machine": {"python": platform.python_version(), "processor": platform.processor(),
                          "cpus": os.cpu_count()}, "rows": rows}
    if args.out is not None:
        write_result(args.out, result)
    return result


if __name__ == "__main__":
    main()
