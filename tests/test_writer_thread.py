"""The one ordered worker thread under ``async`` mode's learner and ``process`` mode's bank writes."""

from __future__ import annotations

import threading

import pytest

from experience_wrappers.manager.writer_thread import WriterThread


def test_jobs_run_in_order_and_call_waits_for_what_was_queued_before_it() -> None:
    w = WriterThread("t")
    gate, out = threading.Event(), []
    w.put(lambda: (gate.wait(10), out.append("first")))
    w.put(lambda: out.append("second"))
    assert w.pending == 2
    gate.set()
    assert w.call(lambda: list(out)) == ["first", "second"]
    assert w.pending == 0
    w.close()
    assert not w.started


def test_a_failed_job_is_raised_once_at_the_next_check_and_the_thread_keeps_serving() -> None:
    w = WriterThread("t", failure="the learner failed")
    w.put(lambda: 1 / 0)
    w.join()
    with pytest.raises(RuntimeError, match="the learner failed") as info:
        w.check()
    assert isinstance(info.value.__cause__, ZeroDivisionError)
    w.check()  # reported once
    assert w.call(lambda: 7) == 7
    # a called function's own error is raised to its caller, after an earlier job's failure
    w.put(lambda: [][0])
    with pytest.raises(RuntimeError, match="the learner failed"):
        w.call(lambda: 1 / 0)
    with pytest.raises(ValueError, match="mine"):
        w.call(lambda: (_ for _ in ()).throw(ValueError("mine")))
    w.close()


def test_call_times_out_while_an_earlier_job_runs() -> None:
    w = WriterThread("t")
    gate = threading.Event()
    w.put(lambda: gate.wait(10))
    with pytest.raises(TimeoutError, match="within 0.05 s"):
        w.call(lambda: None, timeout=0.05)
    gate.set()
    w.close()
