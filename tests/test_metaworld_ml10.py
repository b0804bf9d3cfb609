"""ML10 in the trials protocol (issue 37): held-out tasks, the env that switches tasks at reset, the demonstrations."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("metaworld")

from integrations.metaworld.ml10_trials import (  # noqa: E402
    ML10_CAP,
    ML10_TRAIN,
    ML10Trials,
    ml10_demonstrations,
    ml10_goal_tasks,
    ml10_instances,
)

pytestmark = pytest.mark.filterwarnings("ignore:Constant\\(s\\) may be too high")

TRAIN_TASKS = {"reach-v3", "push-v3", "pick-place-v3", "door-open-v3", "drawer-close-v3", "button-press-topdown-v3",
               "peg-insert-side-v3", "window-open-v3", "sweep-v3", "basketball-v3"}
HELD_OUT_TASKS = {"drawer-open-v3", "door-close-v3", "shelf-place-v3", "sweep-into-v3", "lever-pull-v3"}


@pytest.fixture(scope="module")
def env() -> ML10Trials:
    return ML10Trials(start_moves=2, start_seed=0)


def test_held_out_instances_are_tasks_no_training_instance_is_drawn_from() -> None:
    tasks = ml10_goal_tasks()
    train, held_out = ml10_instances(per_task=3)
    assert train == list(range(ML10_TRAIN)) and len(held_out) == 15 and min(held_out) >= ML10_TRAIN
    assert {tasks[i].env_name for i in train} == TRAIN_TASKS
    assert {tasks[i].env_name for i in held_out} == HELD_OUT_TASKS  # 3 goals of each
    with pytest.raises(ValueError, match=r"per_task must be an int in \[1, 50\]"):
        ml10_instances(per_task=0)


def test_reset_switches_the_task_and_hides_the_goal(env: ML10Trials) -> None:
    tasks = ml10_goal_tasks()
    _, held_out = ml10_instances(per_task=1)
    for i in (0, 60, held_out[0], held_out[-1]):
        obs, info = env.reset(seed=i)
        assert info["instance"] == i and env.env_name == tasks[i].env_name
        assert obs.shape == (39,) and np.all(obs[36:39] == 0) and env.observation_space.contains(obs)
        obs, *_ = env.step(env.action_space.sample())
        assert np.all(obs[36:39] == 0) and env.observation_space.contains(obs)
    with pytest.raises(ValueError, match=r"instance 750 is not one of its instances .*held-out tasks 500-749"):
        env.reset(seed=750)


def test_a_held_out_tasks_demonstration_succeeds_and_shows_what_the_hidden_goal_env_shows() -> None:
    _, held_out = ml10_instances(per_task=1)
    demos = ml10_demonstrations()
    hidden = ML10Trials()
    for i in held_out[:2]:
        obs, actions, rewards = demos(i)
        assert len(obs) == len(actions) == len(rewards) and actions.shape[1] == 4
        assert np.all(obs[:, 36:39] == 0)
        first, _ = hidden.reset(seed=i)  # no start moves: the demonstration's first observation is the env's
        np.testing.assert_allclose(obs[0], first, atol=1e-6)
        for a in actions:  # replayed open loop on the hidden-goal env (deterministic resets), it succeeds
            _, _, terminated, truncated, info = hidden.step(a)
        assert info["success"] and terminated


def test_with_the_goal_visible_the_goal_is_shown_within_the_observation_space() -> None:
    _, held_out = ml10_instances(per_task=1)
    visible = ML10Trials(goal_visible=True)
    for i in held_out[:3]:
        obs, _ = visible.reset(seed=i)
        assert np.abs(obs[36:39]).max() > 0.05 and visible.observation_space.contains(obs)
    assert visible.observation_space != ML10Trials().observation_space  # the goal's bounds: zeros when hidden


def test_every_evaluated_held_out_goal_has_a_demonstration_within_the_cap() -> None:
    """The suite's with-demonstration condition needs one for every held-out instance it evaluates."""
    _, held_out = ml10_instances(per_task=10)
    demos = ml10_demonstrations(ML10_CAP)
    lengths = [len(demos(i)[1]) for i in held_out]  # None (no success) would not unpack
    assert max(lengths) <= ML10_CAP and len(lengths) == 50
