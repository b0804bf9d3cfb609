"""Throughput, latency, recall and memory of the experience bank against raw hnswlib and brute force.

For each size ``n`` the same clustered data (``--dim``, Gaussian clusters) goes into

* the bank (``ExperienceBank(capacity=n, dedup_threshold=0)``, kNN mode, no recording),
* a raw ``hnswlib.Index`` with the same ``M``, ``ef_construction``, ``ef_search`` and space,
  fed in the same batches with one thread, as the bank does,
* numpy brute force (queries only; subsampled above ``--bf-max``).

Reported per arm: add throughput, single-key and batch-of-``--batch`` query latency (p50/p95)
(for the bank also a utility-mode query and a guided episode's credit, ``bank.update`` of 8 and
of 32 entries),
query throughput, recall@k against exact neighbours, and for the bank the ratios to raw
hnswlib and the bytes per entry (live entry columns + saved index file, divided by ``n``).
At the smallest size at most 1e4 the add throughput with the default dedup is measured too.

    python -m benchmarks.perf.bank_perf --sizes 10000 100000
    python -m benchmarks.perf.bank_perf --sizes 10000 100000 1000000 --out benchmarks/results/bank_perf.json
"""

from __future__ import annotations

import os

# One BLAS thread, like the single-threaded hnswlib arms (and a multi-threaded BLAS spins badly
# on a shared machine). Must be set before numpy is imported; the caller's setting wins.
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import platform  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import hnswlib  # noqa: E402
import numpy as np  # noqa: E402

from benchmarks.harness.result_file import write_result  # noqa: E402
from experience_wrappers.bank import BankConfig, ExperienceBank  # noqa: E402

F32 = np.float32
#: the credits timed (``bank.update`` of this many entries): a short guided episode's and a long one's
CREDIT_SIZES = (8, 32)


def clustered(n: int, d: int, n_clusters: int, spread: float, rng: np.random.Generator):
    centres = rng.normal(size=(n_clusters, d)).astype(F32)

    def sample(m: int) -> np.ndarray:
        lab = rng.integers(0, n_clusters, m)
        return (centres[lab] + spread * rng.normal(size=(m, d)).astype(F32)).astype(F32)

    return sample(n), sample


class BruteForce:
    """Exact squared-L2 neighbours by blocked float32 matrix products (numpy, norms precomputed)."""

    def __init__(self, data: np.ndarray) -> None:
        self.data = data
        self.sq = (data.astype(np.float64) ** 2).sum(1).astype(F32)

    def knn(self, queries: np.ndarray, k: int, chunk: int = 256) -> np.ndarray:
        out = np.empty((len(queries), k), dtype=np.int64)
        for lo in range(0, len(queries), chunk):
            q = queries[lo:lo + chunk]
            d = self.sq[None, :] - 2.0 * (q @ self.data.T)  # |q|^2 is constant per row
            part = np.argpartition(d, k, axis=1)[:, :k]
            order = np.argsort(np.take_along_axis(d, part, 1), axis=1)
            out[lo:lo + chunk] = np.take_along_axis(part, order, 1)
        return out


def recall(got: np.ndarray, exact: np.ndarray) -> float:
    hits = [len(set(a) & set(b)) for a, b in zip(got.tolist(), exact.tolist(), strict=True)]
    return float(np.sum(hits) / exact.size)


def pct(samples: list[float]) -> dict[str, float]:
    a = np.asarray(samples) * 1e6
    return {"p50_us": float(np.percentile(a, 50)), "p95_us": float(np.percentile(a, 95)),
            "mean_us": float(a.mean())}


def interleaved(fns: dict, items: list) -> dict[str, list[float]]:
    """Time every function on every item, alternating between them item by item.

    On a shared machine the load drifts; alternating puts the arms under the same load, so
    their ratio means something even when the absolute numbers move.
    """
    out: dict[str, list[float]] = {name: [] for name in fns}
    for x in items:
        for name, fn in fns.items():
            t = time.perf_counter()
            fn(x)
            out[name].append(time.perf_counter() - t)
    return out


def bench_size(n: int, args: argparse.Namespace, rng: np.random.Generator) -> dict:
    d, k = args.dim, args.k
    n_clusters = max(10, n // args.points_per_cluster)
    data, sample = clustered(n, d, n_clusters, args.spread, rng)
    values = rng.normal(size=(n, args.value_dim)).astype(F32)
    queries = sample(args.queries)
    batches = [queries[lo:lo + args.batch] for lo in range(0, args.queries - args.batch + 1, args.batch)]
    ids = np.arange(n, dtype=np.int64)
    res: dict = {"n": n, "dim": d, "clusters": n_clusters}
    chunks = [(data[lo:lo + args.add_batch], ids[lo:lo + args.add_batch], values[lo:lo + args.add_batch])
              for lo in range(0, n, args.add_batch)]

    # raw hnswlib with the bank's parameters, and the bank; fed the same batches, one thread each
    raw = hnswlib.Index(space=args.space, dim=d)
    raw.init_index(max_elements=n, M=args.M, ef_construction=args.ef_construction, random_seed=0)
    raw.set_ef(args.ef_search)
    cfg = BankConfig(capacity=n, space=args.space, M=args.M, ef_construction=args.ef_construction,
                     ef_search=args.ef_search, dedup_threshold=0.0, seed=0)
    bank = ExperienceBank(cfg)
    adds = interleaved({"raw": lambda c: raw.add_items(c[0], c[1], num_threads=1),
                        "bank": lambda c: bank.add(c[0], c[2])}, chunks)
    raw_add, bank_add = sum(adds["raw"]), sum(adds["bank"])
    assert len(bank) == n

    # the utility arm gets another key than the kNN arms of the same round, so that it does not
    # find the bank's index warm from the kNN query just before
    other = np.roll(queries, len(queries) // 2, axis=0)
    single = interleaved({
        "raw": lambda q: raw.knn_query(q[0][None], k=k, num_threads=1),
        "bank": lambda q: bank.query(q[0], k=k, mode="knn", record=False),
        "utility": lambda q: bank.query(q[1], k=k, mode="utility", record=False),
    }, list(zip(queries, other, strict=True)))
    batch = interleaved({
        "raw": lambda q: raw.knn_query(q, k=k, num_threads=1),
        "bank": lambda q: bank.query(q, k=k, mode="knn", record=False),
    }, batches)
    # a guided episode's credit: one bank.update of the entries it was shown (a few retrievals of k)
    credits = {m: interleaved({"update": lambda c: bank.update(c, np.full(len(c), 0.5), 0.99)},
                              [rng.choice(ids, m, replace=False) for _ in range(args.credits)])["update"]
               for m in CREDIT_SIZES}
    raw_single, bank_single, util_single = single["raw"], single["bank"], single["utility"]
    raw_batch, bank_batch = batch["raw"], batch["bank"]
    raw_labels, _ = raw.knn_query(queries, k=k, num_threads=1)
    bank_labels = bank.query(queries, k=k, mode="knn", record=False).ids
    with tempfile.TemporaryDirectory() as tmp:
        raw.save_index(os.path.join(tmp, "raw.bin"))
        raw_bytes = os.path.getsize(os.path.join(tmp, "raw.bin"))
    raw = None  # free it before the brute-force arm

    store = bank.core.store
    assert store is not None  # the bank holds entries
    entry_bytes = sum(col[: store.size].nbytes for col in store.cols.values())
    alloc_bytes = sum(col.nbytes for col in store.cols.values())
    with tempfile.TemporaryDirectory() as tmp:
        saved = bank.save(Path(tmp) / "bank")
        index_bytes = sum(f.stat().st_size for f in saved.glob("index*.bin"))  # (named by content since format 3)
        folder_bytes = sum(p.stat().st_size for p in saved.iterdir())

    # ---- numpy brute force (queries only), and the exact neighbours for recall
    brute = BruteForce(data)
    n_exact = args.queries if n <= args.bf_max else min(args.queries, args.bf_queries)
    exact = brute.knn(queries[:n_exact], k)
    bf = {}
    if n <= args.bf_max:
        bf_single = interleaved({"bf": lambda q: brute.knn(q[None], k)}, list(queries[: args.bf_queries]))["bf"]
        bf_batch = interleaved({"bf": lambda q: brute.knn(q, k)},
                               batches[: max(1, args.bf_queries // args.batch)])["bf"]
        bf = {"single": pct(bf_single), "batch": pct(bf_batch),
              "qps_batch": args.batch / float(np.mean(bf_batch))}

    res["raw"] = {
        "add_per_s": n / raw_add, "single": pct(raw_single), "batch": pct(raw_batch),
        "qps_single": 1.0 / float(np.mean(raw_single)), "qps_batch": args.batch / float(np.mean(raw_batch)),
        "recall": recall(raw_labels[:n_exact], exact), "index_bytes_per_entry": raw_bytes / n,
    }
    res["bank"] = {
        "add_per_s": n / bank_add, "single": pct(bank_single), "batch": pct(bank_batch),
        "utility_single": pct(util_single), **{f"credit_{m}": pct(t) for m, t in credits.items()},
        "qps_single": 1.0 / float(np.mean(bank_single)), "qps_batch": args.batch / float(np.mean(bank_batch)),
        "recall": recall(bank_labels[:n_exact], exact),
        "entry_bytes_per_entry": entry_bytes / n, "allocated_entry_bytes_per_entry": alloc_bytes / n,
        "index_bytes_per_entry": index_bytes / n, "bytes_per_entry": (entry_bytes + index_bytes) / n,
        "saved_folder_bytes_per_entry": folder_bytes / n,
    }
    res["bruteforce"] = bf
    res["recall_queries"] = n_exact
    res["ratio"] = {
        "single_p50": res["bank"]["single"]["p50_us"] / res["raw"]["single"]["p50_us"],
        "single_p95": res["bank"]["single"]["p95_us"] / res["raw"]["single"]["p95_us"],
        "batch_p50": res["bank"]["batch"]["p50_us"] / res["raw"]["batch"]["p50_us"],
        "batch_p95": res["bank"]["batch"]["p95_us"] / res["raw"]["batch"]["p95_us"],
        "add": res["raw"]["add_per_s"] / res["bank"]["add_per_s"],
    }

    if n <= 10_000 and not args.skip_dedup_arm:  # add throughput with the default dedup
        common = dict(capacity=n, space=args.space, M=args.M, ef_construction=args.ef_construction,
                      ef_search=args.ef_search, seed=0)
        on, off = ExperienceBank(**common), ExperienceBank(**common, dedup_threshold=0.0)
        kept = []
        t = interleaved({"on": lambda c: kept.append(int(on.add(c[0], c[2]).added.sum())),
                         "off": lambda c: off.add(c[0], c[2])}, chunks)
        res["bank_dedup"] = {"add_per_s": n / sum(t["on"]), "add_per_s_dedup_off": n / sum(t["off"]),
                             "kept": sum(kept), "dedup_threshold": on.config.dedup_threshold}
    return res


def fmt_table(results: list[dict]) -> str:
    rows = [("n", "arm", "add/s", "1-key p50 us", "1-key p95 us", "batch p50 us", "batch p95 us",
             "qps (batch)", "recall@k", "bytes/entry")]
    for r in results:
        for arm in ("raw", "bank", "bruteforce"):
            a = r[arm]
            if not a:
                rows.append((f"{r['n']:,}", arm, "-", "skipped", "", "", "", "", "", ""))
                continue
            rows.append((
                f"{r['n']:,}", arm,
                f"{a['add_per_s']:,.0f}" if "add_per_s" in a else "-",
                f"{a['single']['p50_us']:,.0f}", f"{a['single']['p95_us']:,.0f}",
                f"{a['batch']['p50_us']:,.0f}", f"{a['batch']['p95_us']:,.0f}",
                f"{a['qps_batch']:,.0f}",
                f"{a['recall']:.4f}" if "recall" in a else "1 (exact)",
                f"{a['bytes_per_entry']:,.0f}" if "bytes_per_entry" in a
                else (f"{a['index_bytes_per_entry']:,.0f} (index)" if "index_bytes_per_entry" in a else "-"),
            ))
        ra = r["ratio"]
        rows.append((f"{r['n']:,}", "bank/raw", f"{1 / ra['add']:.2f}x",
                     f"{ra['single_p50']:.2f}x", f"{ra['single_p95']:.2f}x",
                     f"{ra['batch_p50']:.2f}x", f"{ra['batch_p95']:.2f}x", "", "", ""))
        u = r["bank"]["utility_single"]
        rows.append((f"{r['n']:,}", "bank utility", "", f"{u['p50_us']:,.0f}", f"{u['p95_us']:,.0f}",
                     "", "", "", "", ""))
        for m in CREDIT_SIZES:  # (files made before the credit was timed have none)
            if f"credit_{m}" in r["bank"]:
                c = r["bank"][f"credit_{m}"]
                rows.append((f"{r['n']:,}", f"bank credit of {m}", "", f"{c['p50_us']:,.0f}", f"{c['p95_us']:,.0f}",
                             "", "", "", "", ""))
        if "bank_dedup" in r:
            bd = r["bank_dedup"]
            rows.append((f"{r['n']:,}", f"bank dedup={bd['dedup_threshold']}", f"{bd['add_per_s']:,.0f}",
                         "", "", "", "", "", f"kept {bd['kept']:,}", ""))
            rows.append((f"{r['n']:,}", "bank dedup=0 (same run)", f"{bd['add_per_s_dedup_off']:,.0f}",
                         "", "", "", "", "", "", ""))
    widths = [max(len(str(row[i])) for row in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(str(c).rjust(w) for c, w in zip(row, widths, strict=True)) for row in rows]
    lines.insert(1, "-" * len(lines[0]))
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> dict:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    p.add_argument("--dim", type=int, default=64)
    p.add_argument("--value-dim", type=int, default=16)
    p.add_argument("--space", default="l2", choices=["l2", "cosine", "ip"])
    p.add_argument("--M", type=int, default=16)
    p.add_argument("--ef-construction", type=int, default=200)
    p.add_argument("--ef-search", type=int, default=64)
    p.add_argument("--k", type=int, default=8)
    p.add_argument("--queries", type=int, default=2000, help="single-key latency samples")
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--add-batch", type=int, default=1000, help="entries per add call")
    p.add_argument("--points-per-cluster", type=int, default=100)
    p.add_argument("--spread", type=float, default=0.8, help="cluster std relative to centre scale")
    p.add_argument("--bf-max", type=int, default=100_000, help="largest n timed by brute force")
    p.add_argument("--bf-queries", type=int, default=256,
                   help="brute-force timing samples; also recall queries above --bf-max")
    p.add_argument("--credits", type=int, default=500, help="credits (bank.update) timed per size")
    p.add_argument("--skip-dedup-arm", action="store_true")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", type=Path, default=Path(__file__).resolve().parents[1] / "results" / "bank_perf.json")
    args = p.parse_args(argv)

    rng = np.random.default_rng(args.seed)
    results = []
    for n in args.sizes:
        t = time.perf_counter()
        r = bench_size(n, args, rng)
        r["wall_s"] = time.perf_counter() - t
        results.append(r)
        print(f"n={n:,} done in {r['wall_s']:.0f} s", flush=True)
    print(fmt_table(results))
    report = {
        "args": {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()},
        "machine": {"python": platform.python_version(), "numpy": np.__version__,
                    "cpus": os.cpu_count(), "platform": platform.platform()},
        "targets": {"single_latency_ratio_max": 1.3, "recall_at_1e5_min": 0.95},
        "results": results,
    }
    write_result(args.out, report)
    return report


if __name__ == "__main__":
    main()
