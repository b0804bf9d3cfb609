"""What numpy's BLAS threads cost the actor beside a busy core: the bank's within-batch dedup, timed.

``python -m benchmarks.perf.blas_threads`` starts a process that keeps one core busy (as a
learner process does), then, in each of ``--rounds`` rounds, times ``--calls`` of the bank's
within-batch dedup distances (:func:`~experience_wrappers.bank.search.near_duplicate_distances`
on ``--batch`` keys of 64 dims, the size of a learner's batch of proposals on MiniHack-Room-5x5)
with numpy's BLAS at its own thread setting (a thread per core) and lowered to the cores the busy
process leaves (:func:`~experience_wrappers.manager.threads.limit_blas`, what
:func:`~experience_wrappers.manager.threads.leave_cores` does while a learner process runs), the two
in turns. A product of that size is split across BLAS's threads, and a thread that must wait for
a core held by the other process stalls the call for a scheduler's time slice. It prints, per
setting, the median, 99th percentile and largest time of a call in µs, how many calls took over
1 ms, and the seconds of all calls. ``--out FILE`` writes the figures as JSON.
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import statistics
import time
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.harness.cli_checks import check_output_file
from benchmarks.harness.result_file import write_result

__all__ = ["time_calls", "main"]


def _spin(stop: Any) -> None:
    x = 0
    while not stop.is_set():
        x += 1


def time_calls(keys: np.ndarray, calls: int, pause_s: float) -> list[float]:
    """Seconds of each of ``calls`` dedup-distance calls on ``keys``, ``pause_s`` apart (the actor's
    other work between two writes)."""
    from experience_wrappers.bank.search import near_duplicate_distances

    out = []
    for _ in range(calls):
        t0 = time.perf_counter()
        near_duplicate_distances(keys, keys, "l2")
        out.append(time.perf_counter() - t0)
        time.sleep(pause_s)
    return out


def main(argv: list[str] | None = None) -> dict[str, Any]:
    from experience_wrappers.manager.threads import available_cores, blas_threads, limit_blas

    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--batch", type=int, default=150, help="keys in the batch (64 dims)")
    p.add_argument("--calls", type=int, default=300)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--pause-ms", type=float, default=2.0, help="ms between two calls")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", type=Path, default=None, help="write the figures here (JSON)")
    args = p.parse_args(argv)
    if min(args.batch, args.calls, args.rounds) <= 0 or args.pause_ms < 0:
        p.error("--batch, --calls and --rounds must be positive, --pause-ms >= 0")
    if args.out is not None:
        check_output_file(args.out, "--out")
    cores, own = available_cores(), blas_threads()
    if own is None:
        raise SystemExit("numpy's BLAS has no thread pool that threadpoolctl can find: nothing to compare")
    keys = np.random.default_rng(args.seed).standard_normal((args.batch, 64)).astype(np.float32)
    lowered = max(1, cores - 1)
    settings = {f"BLAS's own ({own} threads)": None, f"lowered to the cores left ({lowered})": lowered}
    ctx = mp.get_context("spawn")
    stop = ctx.Event()
    busy = ctx.Process(target=_spin, args=(stop,), daemon=True)
    busy.start()
    times: dict[str, list[float]] = {name: [] for name in settings}
    try:
        time.sleep(0.5)
        for _ in range(args.rounds):
            for name, threads in settings.items():
                limiter = None if threads is None else limit_blas(threads)
                try:
                    times[name] += time_calls(keys, args.calls, args.pause_ms / 1e3)
                finally:
                    if limiter is not None:
                        limiter.restore_original_limits()
    finally:
        stop.set()
        busy.join(5)
    summary = {}
    print(f"dedup distances of {args.batch} x 64 keys, {args.calls} calls x {args.rounds} rounds, one core kept busy "
          f"by another process ({cores} cores)")
    print(f"{'BLAS threads':36s} {'median µs':>10s} {'p99 µs':>10s} {'max µs':>10s} {'> 1 ms':>7s} {'total s':>8s}")
    for name, ts in times.items():
        a = np.asarray(ts)
        row = {"median_us": statistics.median(ts) * 1e6, "p99_us": float(np.percentile(a, 99)) * 1e6,
               "max_us": float(a.max()) * 1e6, "over_1ms": int((a > 1e-3).sum()), "calls": len(ts),
               "total_s": float(a.sum())}
        summary[name] = row
        print(f"{name:36s} {row['median_us']:10.0f} {row['p99_us']:10.0f} {row['max_us']:10.0f} "
              f"{row['over_1ms']:7d} {row['total_s']:8.3f}")
    result = {"config": vars(args) | {"out": None if args.out is None else str(args.out), "cores": cores},
              "summary": summary}
    if args.out is not None:
        write_result(args.out, result)
    return result


if __name__ == "__main__":
    main()
