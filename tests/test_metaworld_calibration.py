"""The Meta-World calibration benchmark: its goals and its scripted references (real Meta-World episodes)."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

pytest.importorskip("metaworld")

from benchmarks.suites import metaworld_calibration as cal  # noqa: E402


def _goals(tasks: tuple) -> np.ndarray:
    return np.stack([pickle.loads(t.data)["rand_vec"] for t in tasks])


def test_heldout_goals_are_ml1_test_goals_disjoint_from_training() -> None:
    train, test = cal.ml1_tasks(goal="visible")
    assert len(train) == len(test) == 50
    a, b = _goals(train), _goals(test)
    # no held-out goal configuration is a training one
    assert not any(np.allclose(x, y) for x in a for y in b)
    # the hidden variant holds the same goals, only their observability differs
    h_train, h_test = cal.ml1_tasks(goal="hidden")
    assert np.array_equal(_goals(h_test), b) and np.array_equal(_goals(h_train), a)
    assert all(pickle.loads(t.data)["partially_observable"] for t in h_test)
    assert not any(pickle.loads(t.data)["partially_observable"] for t in test)


def test_goal_visible_and_hidden_observations() -> None:
    for goal, seen in (("visible", True), ("hidden", False)):
        train, _ = cal.ml1_tasks(goal=goal)
        env = cal.make_env(train, seed=0)
        obs, info = env.reset(seed=0)
        raw = env.unwrapped
        target = np.asarray(raw._target_pos)  # type: ignore[attr-defined]
        np.testing.assert_allclose(cal.goal_position(train[info["goal_index"]]), target)
        if seen:
            np.testing.assert_allclose(obs[36:39], target, atol=1e-6)
        else:
            assert np.all(obs[36:39] == 0)
        _, _, terminated, truncated, info = env.step(np.zeros(4, np.float32))
        assert "success" in info and not terminated and not truncated
        env.close()


@pytest.mark.filterwarnings("ignore:Constant\\(s\\) may be too high:UserWarning")
def test_references_come_from_real_episodes() -> None:
    ref = cal.references(n_goals=2)
    scripted = ref["scripted_goal_visible"]
    assert scripted["episodes"] == 2 and len(scripted["per_goal"]) == 2
    assert 0.0 <= scripted["success"] <= 1.0
    # the scripted reach policy with the goal visible succeeds well within the cap
    assert scripted["success"] == 1.0 and scripted["steps_max"] < cal.CAP
    blind = ref["mean_goal"]["scripted_to_mean_goal"]
    assert blind["episodes"] == 2 and 0.0 <= blind["success"] <= 1.0
    assert len(ref["mean_goal"]["goal"]) == 3


@pytest.mark.parametrize("args", [["--steps", "-10"], ["--steps", "0"], ["--seed", "-1"], ["--eval-every", "0"]])
def test_the_command_refuses_bad_arguments_before_training(args: list[str], tmp_path, capsys) -> None:
    from benchmarks.suites.metaworld_calibration import main

    with pytest.raises(SystemExit):
        main([*args, "--out", str(tmp_path)])
    assert "error" in capsys.readouterr().err and not list(tmp_path.iterdir())  # nothing written
