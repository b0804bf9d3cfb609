"""One rule for a discrete value held as a float (experience_wrappers.whole_numbers): stored, a
whole-valued float counts; given to env.step, it does not. Every check of discrete actions follows it."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
from gymnasium import spaces
from hypothesis import given
from hypothesis import strategies as st

from experience_wrappers.extractor import ActionCoder
from experience_wrappers.trials.checks import check_demonstration_actions
from experience_wrappers.whole_numbers import is_step_action, whole
from integrations.demos import record_demonstrations
from integrations.demos.trajectories import check_action_values
from integrations.minihack.checks import discrete_action


@given(st.floats(allow_nan=True, allow_infinity=True, width=64))
def test_whole_is_finite_and_integral(x):
    assert bool(whole(np.array([x]))[0]) == (np.isfinite(x) and float(x).is_integer())


def test_integer_and_bool_arrays_are_whole():
    assert whole(np.array([[1, -3]])).all() and whole(np.array([True, False])).all()


@pytest.mark.parametrize("space", [spaces.Discrete(3), spaces.MultiDiscrete([3, 3])])
def test_stored_whole_floats_count_everywhere_actions_are_stored(space):
    """A demonstration's (or SB3's buffer's) float actions 1.0 / 2.0 pass every stored-action check."""
    actions = np.array([1.0, 2.0]) if isinstance(space, spaces.Discrete) else np.array([[1.0, 2.0], [0.0, 2.0]])
    check_action_values(actions, space, "demo")
    check_demonstration_actions(space, actions, 2, "demo")
    assert ActionCoder(space).encode(actions).shape[0] == 2


@pytest.mark.parametrize("bad", [1.5, np.nan, np.inf])
def test_stored_non_whole_floats_are_refused_everywhere_actions_are_stored(bad):
    space = spaces.Discrete(3)
    actions = np.array([1.0, bad])
    with pytest.raises(ValueError, match="whole number"):
        check_action_values(actions, space, "demo")
    with pytest.raises(ValueError):
        check_demonstration_actions(space, actions, 2, "demo")
    with pytest.raises(ValueError, match="integer values"):
        ActionCoder(space).encode(actions)


@pytest.mark.parametrize("action,ok", [(1, True), (np.int64(1), True), (np.array(1), True), (1.0, False),
                                       (np.float32(1.0), False), (True, False), (np.array([1]), False), (5, False)])
def test_a_step_action_is_an_integer_of_the_space(action, ok):
    assert is_step_action(action, spaces.Discrete(3)) is ok


def test_recording_and_minihack_steps_take_the_step_rule():
    """1.0 is refused where an action is given to env.step (as gymnasium's contains refuses it)."""
    with pytest.raises(ValueError, match="not an action of the env's Discrete\\(2\\)"):
        record_demonstrations(gym.make("CartPole-v1"), lambda obs: 1.0, 1)
    for bad in (1.0, True, np.float64(2.0)):
        with pytest.raises(ValueError, match="is not one of its Discrete"):
            discrete_action(bad, spaces.Discrete(8), "the env")
    assert discrete_action(np.array([3]), spaces.Discrete(8), "the env") == 3
    assert is_step_action(np.array([1, 0], np.int8), spaces.MultiBinary(2))
    assert is_step_action(np.array([True, False]), spaces.MultiBinary(2))
