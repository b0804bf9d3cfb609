"""The benchmark CLIs' worker pool: stopping the runner stops its runs.

:func:`worker_pool` is a :class:`~concurrent.futures.ProcessPoolExecutor` (spawned workers)
that does not outlive its runner:

* SIGTERM to the runner (``kill PID``, a job scheduler's stop) ends it with exit code 143
  (128 + 15) after terminating the workers; Ctrl-C (KeyboardInterrupt) does the same with the
  usual KeyboardInterrupt exit. A run stopped so writes no result file: result files are
  written at the end of a run, atomically (:func:`benchmarks.harness.result_file.write_result`).
* If the runner dies without a chance to clean up (``kill -9``), each worker is killed by the
  kernel (Linux: ``prctl(PR_SET_PDEATHSIG)``, set when the worker starts).

``crl-bench`` (:mod:`benchmarks.harness.runner`) and ``python -m benchmarks.suites.trials`` both use it.
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys
import threading
from collections.abc import Iterator, MutableMapping
from concurrent.futures import ProcessPoolExecutor
from contextlib import contextmanager
from multiprocessing import get_context
from types import FrameType
from typing import Any

__all__ = ["Stopped", "worker_pool"]

_PR_SET_PDEATHSIG = 1  # linux/prctl.h


class Stopped(SystemExit):
    """Raised in the runner by the SIGTERM handler of :func:`worker_pool` (exit code 128 + signal)."""


def _die_with_parent(parent_pid: int) -> None:
    """Pool initializer: ask the kernel to kill this worker when its parent dies (Linux only)."""
    if not sys.platform.startswith("linux"):
        return
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
    except (OSError, AttributeError):  # no libc prctl: the runner's own handler still stops us
        return
    if os.getppid() != parent_pid:  # the parent died before prctl took effect
        os._exit(1)


def _raise_stopped(signum: int, frame: FrameType | None) -> None:
    raise Stopped(128 + signum)


def _terminate(pool: ProcessPoolExecutor, processes: MutableMapping[int, Any], timeout: float = 5.0) -> None:
    """Cancel what has not started, then terminate (and if need be kill) every worker of ``pool``,
    and wait for the pool's manager thread to see them gone.

    Without that last wait the interpreter's exit can race the manager thread: Python 3.11's
    ``concurrent.futures`` exit hook wakes the thread through a pipe the thread is closing, and
    prints a traceback ("Exception ignored in threading._shutdown") after the stop message.
    """
    # shutdown(wait=False) forgets the thread: kept to join it below (typeshed mistypes the attribute)
    manager: threading.Thread | None = getattr(pool, "_executor_manager_thread", None)
    pool.shutdown(wait=False, cancel_futures=True)
    for _ in range(2):  # a second pass catches a worker spawned meanwhile to replace a finished one
        procs = list(processes.values())
        for p in procs:
            if p.is_alive():
                p.terminate()
        for p in procs:
            p.join(timeout)
            if p.is_alive():
                p.kill()
                p.join(timeout)
    if manager is not None:
        manager.join(timeout)


@contextmanager
def worker_pool(max_workers: int, *, max_tasks_per_child: int | None = None) -> Iterator[ProcessPoolExecutor]:
    """A spawn-context process pool whose workers stop when the runner is stopped or dies.

    Inside the ``with`` block SIGTERM raises :class:`Stopped` (exit code 143) in the main
    thread; on it, on Ctrl-C and on any other exception the pending runs are cancelled and the
    workers terminated before the exception goes on. On a normal exit the pool waits for its
    runs as a plain ``with ProcessPoolExecutor(...)`` does.
    """
    pool = ProcessPoolExecutor(max_workers=max_workers, mp_context=get_context("spawn"),
                               initializer=_die_with_parent, initargs=(os.getpid(),),
                               max_tasks_per_child=max_tasks_per_child)
    processes: MutableMapping[int, Any] = pool._processes  # the live dict: the pool adds its workers to it
    in_main = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGTERM, _raise_stopped) if in_main else None
    try:
        yield pool
        pool.shutdown(wait=True)
    except BaseException as exc:
        if in_main:  # a second SIGTERM must not cut the clean-up short (kill -9 still does)
            signal.signal(signal.SIGTERM, signal.SIG_IGN)
        _terminate(pool, processes)
        if isinstance(exc, (Stopped, KeyboardInterrupt)):
            print(f"\nstopped by {'SIGTERM' if isinstance(exc, Stopped) else 'Ctrl-C'}: the runs in progress were "
                  "ended and wrote no result file; run the same command again to do the rest",
                  file=sys.stderr, flush=True)
        raise
    finally:
        if in_main:
            signal.signal(signal.SIGTERM, previous)
