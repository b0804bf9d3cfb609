"""The actor's threads beside a learner process: the machine's cores shared, not oversubscribed.

Torch runs its operations on as many threads as the machine has cores, and so does numpy's
BLAS (OpenBLAS, for a matrix product above a small size). A learner process (``process`` mode,
the default where one can start) adds a thread of its own
(:data:`~.process.LEARNER_TORCH_THREADS`), and threads that outnumber the cores wait on each
other at every parallel operation: on 2 cores, the README's two-line form on MiniHack-Room-5x5
(SB3's default policy, 4 envs, 16k steps, PPO alone at 1,773-1,870) ran at 910 and 915 steps/s
with torch's 2 threads, and at 1,315 and 1,378 with them lowered to 1
(``benchmarks/results/overhead-threads-{before,after}{1,2}.json``; ``python -m
benchmarks.perf.overhead --torch-threads 0`` leaves torch's setting as it is). Numpy's BLAS waits
the same way: the bank's within-batch dedup (a product of about 150 x 64 keys, made at every write
of the learner's proposals), timed beside a process that keeps the other core busy, took over 1 ms
in 92 of 900 calls with BLAS's own 2 threads (99th percentile 26 ms) and in 1 of 900 at one thread
(``python -m benchmarks.perf.blas_threads``: ``benchmarks/results/blas-threads.json``).

:func:`leave_cores` lowers this process's torch and BLAS threads to the cores the learner
processes leave (at least 1) while they run; :func:`release` restores each setting when the last
of them stops, unless it was changed meanwhile. The BLAS pools are found and set through
threadpoolctl. ``ManagerConfig(limit_actor_threads=False)`` leaves both alone.
"""

from __future__ import annotations

import logging
import os
import threading
from typing import Any

import torch
from threadpoolctl import ThreadpoolController

__all__ = ["available_cores", "blas_threads", "leave_cores", "limit_blas", "release"]

log = logging.getLogger(__name__)

_lock = threading.Lock()
_holders = 0  # learner processes running that asked for cores
_previous: int | None = None  # torch's setting before the first of them lowered it
_lowered_to: int | None = None  # what it was lowered to
_blas_limiter: Any = None  # threadpoolctl's record of the BLAS pools' settings before they were lowered
_blas_lowered_to: int | None = None
_controller: ThreadpoolController | None = None


def available_cores() -> int:
    """The cores this process may run on (its CPU affinity where the OS says; else the machine's)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def _blas() -> ThreadpoolController:
    global _controller
    if _controller is None:  # (finds the loaded libraries once: numpy's BLAS is loaded with numpy)
        _controller = ThreadpoolController()
    return _controller


def blas_threads() -> int | None:
    """The most threads any BLAS pool loaded in this process runs (None: none found)."""
    pools = _blas().select(user_api="blas").lib_controllers
    return max((int(p.num_threads) for p in pools), default=None)


def limit_blas(threads: int) -> Any:
    """Lower every BLAS pool of this process to ``threads`` (pools already at or below are left);
    returns threadpoolctl's limiter (``restore_original_limits()`` undoes it), None where nothing changed."""
    current = blas_threads()
    if current is None or current <= threads:
        return None
    # (the BLAS pools' controller alone: a limiter restores every pool its controller holds, torch's OpenMP too)
    return _blas().select(user_api="blas").limit(limits=threads)


def leave_cores(learner_threads: int) -> int:
    """Lower this process's torch and BLAS threads so that they and ``learner_threads`` fit the cores.

    Held until a matching :func:`release`. Returns the torch threads in effect.
    """
    global _holders, _previous, _lowered_to, _blas_limiter, _blas_lowered_to
    with _lock:
        _holders += 1
        cores = available_cores()
        target = max(1, cores - learner_threads)
        current = torch.get_num_threads()
        if current > target:
            if _previous is None:
                _previous = current
            torch.set_num_threads(target)
            _lowered_to = target
            log.info("torch threads %d -> %d in this process while a learner process runs beside it "
                     "(%d cores; ManagerConfig(limit_actor_threads=False) leaves them)", current, target, cores)
        if _blas_limiter is None:
            _blas_limiter = limit_blas(target)
            _blas_lowered_to = target
        return torch.get_num_threads()


def release() -> None:
    """One learner process stopped; the last restores torch's and BLAS's settings (if nobody changed them since)."""
    global _holders, _previous, _lowered_to, _blas_limiter, _blas_lowered_to
    with _lock:
        _holders = max(0, _holders - 1)
        if _holders:
            return
        if _blas_limiter is not None and blas_threads() == _blas_lowered_to:
            _blas_limiter.restore_original_limits()
        _blas_limiter, _blas_lowered_to = None, None
        if _previous is None:
            return
        if torch.get_num_threads() == _lowered_to:
            torch.set_num_threads(_previous)
        _previous, _lowered_to = None, None
