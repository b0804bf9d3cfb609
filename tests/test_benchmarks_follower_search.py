"""The follower of ``benchmarks.studies.follower_search``: the mark it heads for is the one RunBest shows."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("metaworld")


def test_the_follower_heads_for_the_shown_mark_read_back_in_metres_else_the_prior() -> None:
    from benchmarks.studies.follower_search import Follower
    from experience_wrappers.trials import TrialMemory
    from integrations.metaworld.ml1_trials import ML1Trials

    env = ML1Trials("reach-v3", 150)
    space = env.observation_space
    memory = TrialMemory(space, env.action_space, horizon=150, exp_dim=0, dense_rewards=True, run_best="located")
    here, there = np.zeros(39), np.zeros(39)
    here[:3], there[:3] = [0.0, 0.6, 0.2], [0.1, 0.8, 0.05]
    keys = memory.keys(np.stack([here, there]))
    shown = np.zeros(memory.key_dim + 3, np.float32)
    shown[:memory.key_dim], shown[-1] = keys[1] - keys[0], 1.0
    prior = np.array([0.0, 0.7, 0.1])
    follower = Follower(space, prior, noise=0.0, seed=0)
    np.testing.assert_allclose(follower.goal({"observation": here, "run_best": shown}), there[:3], atol=1e-5)
    shown[-1] = 0.0  # nothing shown: the training goals' mean
    np.testing.assert_array_equal(follower.goal({"observation": here, "run_best": shown}), prior)
    action = follower.act({"observation": here, "run_best": shown})
    assert action.shape == (4,) and action.dtype == np.float32 and np.all(np.abs(action) <= 1.0)
    env.close()
