"""The actor's torch threads beside a learner process: the machine's cores shared, not oversubscribed.

Torch runs its operations on as many threads as the machine has cores. A learner process
(``process`` mode, the default where one can start) adds a thread of its own
(:data:`~.process.LEARNER_TORCH_THREADS`), and threads that outnumber the cores wait on each
other at every parallel operation: on 2 cores, the README's two-line form on MiniHack-Room-5x5
(SB3's default policy, 4 envs, 16k steps, PPO alone at 1,773-1,870) ran at 910 and 915 steps/s
with torch's 2 threads, and at 1,315 and 1,378 with them lowered to 1
(``benchmarks/results/overhead-threads-{before,after}{1,2}.json``; ``python -m
benchmarks.perf.overhead --torch-threads 0`` leaves torch's setting as it is).

:func:`leave_cores` lowers this process's threads to the cores the learner processes leave
(at least 1) while they run; :func:`release` restores the setting when the last of them
stops, unless it was changed meanwhile. ``ManagerConfig(limit_actor_threads=False)`` leaves
torch alone.
"""

from __future__ import annotations

import logging
import os
import threading

import torch

__all__ = ["available_cores", "leave_cores", "release"]

log = logging.getLogger(__name__)

_lock = threading.Lock()
_holders = 0  # learner processes running that asked for cores
_previous: int | None = None  # torch's setting before the first of them lowered it
_lowered_to: int | None = None  # what it was lowered to


def available_cores() -> int:
    """The cores this process may run on (its CPU affinity where the OS says; else the machine's)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def leave_cores(learner_threads: int) -> int:
    """Lower this process's torch threads so that they and ``learner_threads`` fit the cores.

    Held until a matching :func:`release`. Returns the threads in effect.
    """
    global _holders, _previous, _lowered_to
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
        return torch.get_num_threads()


def release() -> None:
    """One learner process stopped; the last restores torch's setting (if nobody changed it since)."""
    global _holders, _previous, _lowered_to
    with _lock:
        _holders = max(0, _holders - 1)
        if _holders or _previous is None:
            return
        if torch.get_num_threads() == _lowered_to:
            torch.set_num_threads(_previous)
        _previous, _lowered_to = None, None
