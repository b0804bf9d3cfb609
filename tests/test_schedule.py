"""The schedule: progress, rollouts and the guided ratio."""

from __future__ import annotations

import pytest

from experience_wrappers.schedule import Schedule, check_fraction_schedule, linear


@pytest.mark.parametrize(("progress", "ratio"), [(0.0, 0.5), (0.25, 0.575), (1.0, 0.8), (1.5, 0.8)])
def test_values_over_progress(progress, ratio):
    s = Schedule(guided=(0.5, 0.8))
    s.advance(progress)
    assert s.progress == progress
    assert s.guided_ratio == pytest.approx(ratio)


def test_defaults_and_constants():
    s = Schedule()
    assert (s.guided_ratio, s.progress, s.rollouts) == (0.5, 0.0, 0)
    s.configure(guided=0.3)
    s.advance(0.9)
    assert s.guided_ratio == 0.3


def test_at_reads_another_progress_without_moving():
    calls = []
    s = Schedule(guided=(0.0, 1.0), on_change=lambda *a: calls.append(a))
    s.advance(0.25)
    calls.clear()
    assert s.at(0.75).guided_ratio == 0.75
    assert s.progress == 0.25 and calls == []


def test_end_rollout_counts():
    s = Schedule()
    assert [s.end_rollout() for _ in range(3)] == [1, 2, 3] and s.rollouts == 3


def test_advance_reports_ratio_then_progress():
    calls = []
    s = Schedule(guided=(0.0, 1.0), on_change=lambda name, value: calls.append((name, value)))
    s.configure(guided=(0.2, 0.4))  # configuring reports nothing: the next advance does
    assert calls == []
    s.advance(0.5)
    assert calls == [("guided_ratio", pytest.approx(0.3)), ("progress", 0.5)]


@pytest.mark.parametrize("kwargs", [{"guided": 1.5}, {"guided": (0.2, -0.1)}, {"rollouts": -1}, {"rollouts": True},
                                    {"progress": float("nan")}])
def test_checks(kwargs):
    with pytest.raises(ValueError):
        Schedule(**kwargs)


@pytest.mark.parametrize("name", ["prior", "distill"])
def test_the_main_schedule_has_no_prior_or_distillation_field(name):
    with pytest.raises(TypeError):
        Schedule(**{name: 0.5})


def test_configure_checks():
    s = Schedule()
    with pytest.raises(ValueError, match="guided_ratio"):
        s.configure(guided=(0.0, 2.0))
    assert s.guided_ratio == 0.5


def test_state_round_trip():
    s = Schedule(guided=(0.5, 0.8))
    s.advance(0.5)
    s.end_rollout()
    state = s.state_dict()
    assert state == {"guided_ratio": pytest.approx(0.65), "progress": 0.5, "rollouts": 1}
    fresh = Schedule()
    fresh.load_state_dict(state)
    assert (fresh.guided_ratio, fresh.progress, fresh.rollouts) == (pytest.approx(0.65), 0.5, 1)
    with pytest.raises(ValueError):
        Schedule.parse_state({"guided_ratio": 3.0, "progress": 0.0, "rollouts": 0})
    with pytest.raises(KeyError):
        Schedule.parse_state({"progress": 0.0, "rollouts": 0})


def test_linear():
    assert linear((1.0, 0.0), -1.0) == 1.0 and linear(2, 0.5) == 2.0
    check_fraction_schedule("x", (0.0, 1.0))
