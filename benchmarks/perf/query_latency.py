"""Query latency of the in-process bank against raw hnswlib, side by side in one run.

For each size ``n`` one bank (``ExperienceBank(capacity=n, dedup_threshold=0)``, filled
through :meth:`~experience_wrappers.bank.ExperienceBank.add` with clustered keys) is built,
and every case (batch of ``B`` keys, ``B`` in ``--batches``) times, round by round:

* ``raw``: ``hnswlib.Index.knn_query(keys, k, num_threads=1)`` on the bank's own hnswlib
  index: the same graph, ``M``, ``ef_construction`` and ``ef_search``, so the difference is
  the bank's own work (checks, locks, id -> slot lookups, gathering the entries' columns,
  counting the hits);
* ``bank``: ``bank.query(keys, k, mode="knn")`` (retrievals recorded, the default);
* ``bank-norecord``: the same with ``record=False`` (evaluation);
* ``replica``: ``replica.query(keys, k, mode="knn")`` on a read replica of the bank
  (``bank.replica()``, taken after the fill: the same graph, copied), what a Ray worker's retrievals
  query with ``local_reads``: no lock, and a single key's checks done once per replica;
* ``replica-norecord``: the same with ``record=False``;
* ``raw-replica``: ``knn_query`` on the replica's own hnswlib index (its copy of the graph): the
  replica arms' ratios are to this arm, the bank arms' to ``raw``, so each is compared with raw
  hnswlib searching the same memory (with the arms alternating, a graph searched by three arms
  stays warmer in the caches than one searched by two).

The arms alternate inside each round and the order rotates from round to round, so machine
load hits each arm alike; each arm gets its own keys (drawn from the same clusters), so no arm
finds the graph warm from another arm's search of the same key. The ratios (bank p50 / raw
p50) are the figures to read, not the absolute times. The target (issue 14) is a ratio <= 1.2
for single keys and batches (issue 27: single keys at 1e4, 1e5 and 1e6). Results go to ``benchmarks/results/query_latency.json``.

``--large`` measures one bank of ``--large-size`` (1e6) entries instead: the process's peak
resident memory before and after the fill, the fill time and the same latency cases. It takes
minutes and about 2 GiB; run it in the background::

    python -m benchmarks.perf.query_latency                     # 1e4 and 1e5, B = 1, 8, 64
    nohup nice python -m benchmarks.perf.query_latency --large > /tmp/query_latency_large.log 2>&1 &
"""

from __future__ import annotations

import os

# One BLAS thread, like the single-threaded hnswlib calls (must be set before numpy is imported).
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import platform  # noqa: E402
import resource  # noqa: E402
import time  # noqa: E402
from collections.abc import Callable  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

from benchmarks.harness.cli_checks import check_output_file  # noqa: E402
from benchmarks.harness.result_file import write_result  # noqa: E402
from experience_wrappers.bank import BankConfig, ExperienceBank  # noqa: E402

RESULTS = Path(__file__).resolve().parents[1] / "results"
#: bank query p50 / raw hnswlib p50 at most this (issue 14)
TARGET_RATIO = 1.2
ARMS = ("raw", "bank", "bank-norecord", "raw-replica", "replica", "replica-norecord")
#: the raw hnswlib arm each arm is divided by (the same graph in memory)
RAW_OF = {"bank": "raw", "bank-norecord": "raw", "replica": "raw-replica", "replica-norecord": "raw-replica"}
F32 = np.float32


def peak_rss_bytes() -> int:
    """Peak resident memory of this process so far (Linux reports KiB)."""
    return int(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss) * 1024


def current_rss_bytes() -> int | None:
    """Resident memory now (``/proc/self/statm``; None where there is none)."""
    try:
        pages = int(Path("/proc/self/statm").read_text().split()[1])
    except (OSError, IndexError, ValueError):
        return None
    return pages * os.sysconf("SC_PAGE_SIZE")


def fill_bank(n: int, dim: int, value_dim: int, rng: np.random.Generator, args: argparse.Namespace,
              add_batch: int = 5000) -> tuple[ExperienceBank, Callable[[int], np.ndarray]]:
    """A bank of ``n`` clustered keys (100 per cluster), filled by ``add`` in batches; and a key sampler."""
    centres = rng.normal(size=(max(10, n // 100), dim)).astype(F32)

    def sample(m: int) -> np.ndarray:
        return (centres[rng.integers(0, len(centres), m)] + 0.8 * rng.normal(size=(m, dim))).astype(F32)

    bank = ExperienceBank(BankConfig(capacity=n, M=args.M, ef_construction=args.ef_construction,
                                     ef_search=args.ef_search, dedup_threshold=0.0, seed=0))
    for lo in range(0, n, add_batch):
        m = min(add_batch, n - lo)
        bank.add(sample(m), rng.normal(size=(m, value_dim)).astype(F32))
    assert len(bank) == n
    return bank, sample


def time_case(bank: ExperienceBank, keys: np.ndarray, batch: int, k: int) -> dict:
    """Per-call seconds of each arm on ``len(keys) // batch`` rounds of ``batch`` keys."""
    index = bank.core.index
    assert index is not None  # the bank holds entries
    raw = index._index  # the bank's own hnswlib index: same graph, same parameters
    replica = bank.replica()
    calls = {
        "raw": lambda q: raw.knn_query(q, k=k, num_threads=1),
        "bank": lambda q: bank.query(q if batch > 1 else q[0], k, mode="knn"),
        "bank-norecord": lambda q: bank.query(q if batch > 1 else q[0], k, mode="knn", record=False),
        "raw-replica": lambda q: replica._raw.knn_query(q, k=k, num_threads=1),
        "replica": lambda q: replica.query(q if batch > 1 else q[0], k, mode="knn"),
        "replica-norecord": lambda q: replica.query(q if batch > 1 else q[0], k, mode="knn", record=False),
    }
    times: dict[str, list[float]] = {arm: [] for arm in ARMS}
    per_round = batch * len(ARMS)
    for r, lo in enumerate(range(0, len(keys) - per_round + 1, per_round)):
        for j in range(len(ARMS)):
            arm = ARMS[(r + j) % len(ARMS)]  # rotate who goes first round by round
            q = keys[lo + j * batch: lo + (j + 1) * batch]  # each arm its own keys: no arm finds
            t = time.perf_counter()                         # the graph warm from another's search
            calls[arm](q)
            times[arm].append(time.perf_counter() - t)
    return times


def summarise(times: dict[str, list[float]], batch: int) -> dict:
    out: dict = {"batch": batch, "rounds": len(times["raw"])}
    for arm, samples in times.items():
        a = np.asarray(samples) * 1e6
        out[arm] = {"p50_us": float(np.median(a)), "p95_us": float(np.percentile(a, 95)), "mean_us": float(a.mean())}
    out["ratio"] = {arm: out[arm]["p50_us"] / out[RAW_OF[arm]]["p50_us"] for arm in RAW_OF}
    out["ratio_p95"] = {arm: out[arm]["p95_us"] / out[RAW_OF[arm]]["p95_us"] for arm in RAW_OF}
    out["met"] = bool(out["ratio"]["bank"] <= TARGET_RATIO)
    out["met_replica"] = bool(out["ratio"]["replica"] <= TARGET_RATIO)
    return out


def bench_size(n: int, args: argparse.Namespace, rng: np.random.Generator) -> dict:
    rss0 = current_rss_bytes()
    t = time.perf_counter()
    bank, sample = fill_bank(n, args.dim, args.value_dim, rng, args)
    res: dict = {"n": n, "fill_s": time.perf_counter() - t, "rss_before_fill": rss0,
                 "rss_after_fill": current_rss_bytes(), "peak_rss": peak_rss_bytes(), "cases": []}
    for batch in args.batches:
        rounds = max(args.min_rounds, args.calls // max(1, batch // 4))
        keys = sample(rounds * batch * len(ARMS))
        # warm-up: the first calls pay imports, allocations and a cold cache on every arm
        time_case(bank, keys[: batch * len(ARMS) * 20], batch, args.k)
        case = summarise(time_case(bank, keys, batch, args.k), batch)
        res["cases"].append(case)
        print(f"n={n:,} B={batch}: raw {case['raw']['p50_us']:,.1f} us, bank {case['bank']['p50_us']:,.1f} us "
              f"({case['ratio']['bank']:.2f}x), replica {case['replica']['p50_us']:,.1f} us "
              f"({case['ratio']['replica']:.2f}x)", flush=True)
    res["bank_stats"] = {key: bank.stats()[key] for key in ("size", "queries")}
    return res


def fmt_table(results: list[dict]) -> str:
    rows = [("n", "keys/call", "raw p50 us", "bank p50 us", "ratio", "no-record ratio", "raw (copy) p50 us",
             "replica p50 us", "ratio", "no-record ratio", f"bank / replica <= {TARGET_RATIO}x")]
    for r in results:
        for c in r["cases"]:
            met = "/".join("met" if c.get(key, False) else "not met" for key in ("met", "met_replica"))
            rows.append((f"{r['n']:,}", str(c["batch"]), f"{c['raw']['p50_us']:,.1f}", f"{c['bank']['p50_us']:,.1f}",
                         f"{c['ratio']['bank']:.2f}x", f"{c['ratio']['bank-norecord']:.2f}x",
                         f"{c['raw-replica']['p50_us']:,.1f}", f"{c['replica']['p50_us']:,.1f}", f"{c['ratio']['replica']:.2f}x",
                         f"{c['ratio']['replica-norecord']:.2f}x", met))
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(cell.rjust(w) for cell, w in zip(row, widths, strict=True)) for row in rows]
    lines.insert(1, "-" * len(lines[0]))
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> dict:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    p.add_argument("--batches", type=int, nargs="+", default=[1, 8, 64])
    p.add_argument("--large", action="store_true", help="one bank of --large-size entries instead of --sizes")
    p.add_argument("--large-size", type=int, default=1_000_000)
    p.add_argument("--dim", type=int, default=64)
    p.add_argument("--value-dim", type=int, default=16)
    p.add_argument("--M", type=int, default=16)
    p.add_argument("--ef-construction", type=int, default=200)
    p.add_argument("--ef-search", type=int, default=64)
    p.add_argument("--k", type=int, default=8)
    p.add_argument("--calls", type=int, default=3000, help="rounds of single keys (a batch of B gets calls // (B / 4), at least --min-rounds)")
    p.add_argument("--min-rounds", type=int, default=200)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", type=Path, default=None,
                   help="result file (default results/query_latency.json, or query_latency_large.json)")
    args = p.parse_args(argv)
    sizes = [args.large_size] if args.large else args.sizes
    out = args.out or RESULTS / ("query_latency_large.json" if args.large else "query_latency.json")
    small = [f"--{name.replace('_', '-')} {value}" for name, value, least in (
        ("sizes", min(sizes), 1), ("batches", min(args.batches), 1), ("dim", args.dim, 1),
        ("value_dim", args.value_dim, 1), ("M", args.M, 2), ("k", args.k, 1), ("calls", args.calls, 1),
        ("min_rounds", args.min_rounds, 1), ("ef_construction", args.ef_construction, 1),
        ("ef_search", args.ef_search, 1)) if value < least]
    if small:
        p.error(f"{', '.join(small)}: too small (sizes, batches, dims, k and counts at least 1, --M at least 2)")
    try:
        check_output_file(out, "--out")
    except ValueError as exc:
        p.error(str(exc))

    rng = np.random.default_rng(args.seed)
    results = [bench_size(n, args, rng) for n in sizes]
    table = fmt_table(results)
    print(table)
    report = {
        "args": {key: (str(v) if isinstance(v, Path) else v) for key, v in vars(args).items()},
        "machine": {"python": platform.python_version(), "numpy": np.__version__, "cpus": os.cpu_count(),
                    "platform": platform.platform(), "loadavg": os.getloadavg()},
        "target_ratio": TARGET_RATIO,
        "results": results,
        "table": table,
    }
    write_result(out, report)
    return report


if __name__ == "__main__":
    main()
