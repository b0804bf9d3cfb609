"""The credit module: outcome deltas, per-entry rewards, distillation weights, outcome tracking."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from experience_wrappers.credit import (
    FreeBaseline,
    OutcomeTracker,
    distill_weight,
    entry_reward,
    outcome_delta,
    utility_decay,
)


def test_outcome_delta_by_hand():
    assert outcome_delta(1.0, 0.25) == 0.75
    assert outcome_delta(0.0, 0.25) == -0.25
    assert outcome_delta(10.0, 4.0, free_spread=3.0) == 2.0   # (10 - 4) / 3
    assert outcome_delta(10.0, 4.0, free_spread=0.5) == 6.0   # spread below 1: not magnified
    assert outcome_delta(-2.0, 4.0, free_spread=2.0) == -3.0
    assert outcome_delta(1.0, None) is None
    assert outcome_delta(1.0, None, free_spread=2.0) is None


def test_free_baseline_scales_return_deltas_only():
    b = FreeBaseline(window=3)
    for x in (0.0, 4.0, 8.0, 12.0):  # the window keeps 4, 8, 12: mean 8, std sqrt(32 / 3)
        b.add(0, x)
    std = float(np.std([4.0, 8.0, 12.0]))
    assert b.delta(0, 10.0, is_success=True) == 2.0
    assert b.delta(0, 10.0, is_success=False) == pytest.approx(2.0 / std)
    assert b.delta(1, 10.0, is_success=False) is None  # another task has no free episode
    assert b.mean(0) == 8.0


def test_free_baseline_delta_is_outcome_delta_with_the_spread():
    b = FreeBaseline()
    for x in (1.0, 3.0, 8.0):
        b.add(2, x)
    mean, std = float(np.mean([1.0, 3.0, 8.0])), float(np.std([1.0, 3.0, 8.0]))
    assert b.delta(2, 7.0, is_success=False) == outcome_delta(7.0, mean, free_spread=std)
    assert b.delta(2, 7.0, is_success=True) == outcome_delta(7.0, mean)


def test_free_baseline_refuses_non_finite_outcomes():
    b = FreeBaseline()
    with pytest.raises(ValueError, match="finite"):
        b.add(0, float("nan"))
    b.add(0, 1.0)
    with pytest.raises(ValueError, match="finite"):
        b.delta(0, float("inf"), is_success=True)


@pytest.mark.parametrize(("delta", "success", "rule", "want"), [
    (0.3, True, "delta", 0.3), (-0.7, None, "delta", -0.7),
    (0.3, False, "direct", -1.0), (-0.3, True, "direct", 1.0),   # success decides where it is known
    (0.3, None, "direct", 1.0), (0.0, None, "direct", -1.0), (-0.3, None, "direct", -1.0),
])
def test_entry_reward(delta, success, rule, want):
    assert entry_reward(delta, success, rule) == want


def test_entry_reward_refuses_an_unknown_rule():
    with pytest.raises(ValueError, match="rule"):
        entry_reward(0.1, True, "median")


def test_distill_weight():
    assert distill_weight(0.25) == 0.25
    assert distill_weight(1.0) == 1.0
    assert distill_weight(7.0) == 1.0
    assert distill_weight(0.0) is None
    assert distill_weight(-0.5) is None
    assert distill_weight(None) is None


def test_utility_decay_ends_and_clips():
    assert utility_decay(0.0) == 0.99 and utility_decay(1.0) == 0.95
    assert utility_decay(-1.0) == utility_decay(0.0) and utility_decay(2.0) == utility_decay(1.0)
    assert utility_decay(0.5, start=1.0, end=0.0) == pytest.approx(0.5)


def test_outcome_tracker_windows():
    t = OutcomeTracker(window=2)
    assert t.means() == {"guided": None, "free": None, "delta": None}
    for x in (0.0, 1.0, 1.0):
        t.add(x, guided=True)
    t.add(3.0, guided=False)
    t.add_delta(-1.0)
    t.add_delta(0.5)
    t.add_delta(1.5)
    assert t.means() == {"guided": 1.0, "free": 3.0, "delta": 1.0}


def test_old_import_paths_still_work():
    from experience_wrappers.credit import FreeBaseline as core
    from experience_wrappers.manager import FreeBaseline as package
    from experience_wrappers.manager import utility_decay as decay
    from experience_wrappers.manager.attribution import FreeBaseline as old

    assert core is package is old and decay is utility_decay


def test_core_rules_import_no_sb3():
    code = ("import sys, experience_wrappers.credit, experience_wrappers.schedule, experience_wrappers.advantages;"
            "bad = [m for m in sys.modules if m.startswith(('stable_baselines3', 'integrations'))];"
            "assert not bad, bad")
    subprocess.run([sys.executable, "-c", code], check=True)
