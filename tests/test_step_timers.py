"""The step timers' parts name methods that exist, and own time adds up under nesting."""

from __future__ import annotations

import pytest

from benchmarks.perf.step_timers import PARTS, Timers, _targets


def test_every_timed_part_is_a_method_its_class_defines() -> None:
    targets = _targets()
    assert len(targets) == len(PARTS)
    assert all(callable(cls.__dict__[name]) for cls, name, _ in targets)


def test_a_failing_call_is_still_counted_and_the_class_restored() -> None:
    class Env:
        def step(self) -> None:
            raise RuntimeError("boom")

    ticks = iter(range(10))
    timers = Timers(clock=lambda: float(next(ticks)))
    original = Env.__dict__["step"]
    with timers.patched([(Env, "step", "env")]):
        with pytest.raises(RuntimeError, match="boom"):
            Env().step()
    assert timers.own["env"] == 1.0 and timers.calls["env"] == 1
    assert Env.__dict__["step"] is original
