"""The value baseline: guided episodes that no free episode of the same instance can pair with
are credited against the critic's V(s0), seen without experience."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
import torch as th
from hypothesis import given, settings
from hypothesis import strategies as st
from stable_baselines3 import PPO
from stable_baselines3.common.vec_env import DummyVecEnv

from experience_wrappers import ExperienceBank, ExperienceWrapper
from experience_wrappers.credit import value_delta
from experience_wrappers.manager import Episode
from experience_wrappers.wrappers import EXPERIENCE_KEYS
from integrations.sb3 import CRLCallback, ExperienceVecEnv
from integrations.sb3.experimental import ExperimentalCRLCallback
from integrations.sb3.self_imitation import free_view


@settings(max_examples=50, deadline=None)
@given(st.lists(st.floats(-10, 10), min_size=0, max_size=30), st.floats(-50, 50))
def test_undiscounted_value_delta_is_the_return_minus_the_value(rewards, v):
    assert value_delta(rewards, v, 1.0) == pytest.approx(sum(rewards) - v, abs=1e-9)


def test_value_delta_refuses_a_bad_discount():
    with pytest.raises(ValueError, match="gamma"):
        value_delta([1.0], 0.0, 1.5)


def _manager_with_one_entry():
    env = ExperienceWrapper(gym.make("CartPole-v1"), ExperienceBank(seed=0), manager_kwargs={"mode": "sync"})
    mgr = env.manager
    obs = np.zeros((3, 4), dtype=np.float32)
    mgr.ingest(Episode(observations=obs, actions=np.zeros(3, dtype=np.int64), rewards=np.ones(3), success=None,
                       guided=False), segment_every=3, utility=0.0)
    (entry,) = mgr.bank.entries()["id"].tolist()
    return mgr, entry


def _guided(entry: int, rewards, start_value):
    n = len(rewards)
    return Episode(observations=np.zeros((n, 4), dtype=np.float32), actions=np.zeros(n, dtype=np.int64),
                   rewards=np.asarray(rewards, dtype=np.float64), success=None, guided=True,
                   injected_ids=np.array([entry]), start_value=start_value, gamma=1.0)


def _utility(mgr, entry: int) -> float:
    return float(mgr.bank.get([entry])["utility"][0])


@pytest.mark.parametrize(("start_value", "sign"), [(0.5, 1.0), (5.0, -1.0)])
def test_a_guided_episode_with_a_start_value_is_credited_against_it(start_value, sign):
    mgr, entry = _manager_with_one_entry()
    mgr.submit(_guided(entry, [1.0, 1.0], start_value))  # return 2: above V = 0.5, below V = 5
    assert mgr.stats()["value_credited"] == 1.0
    assert np.sign(_utility(mgr, entry)) == sign


def test_without_a_start_value_or_free_episodes_there_is_no_credit():
    mgr, entry = _manager_with_one_entry()
    mgr.submit(_guided(entry, [1.0, 1.0], None))  # the free baseline is still empty
    assert _utility(mgr, entry) == 0.0
    assert "value_credited" not in mgr.stats()


def test_the_experimental_callback_fills_in_v_of_the_first_observation_seen_without_experience():
    """With learning rate 0 the critic never changes, so each guided episode's start value must be
    the critic's value of its first observation with the experience keys zeroed."""
    venv = ExperienceVecEnv(DummyVecEnv([lambda: gym.make("CartPole-v1")] * 4), ExperienceBank(seed=0),
                            experimental={"value_baseline": True}, manager_kwargs={"mode": "sync"})
    episodes: list[Episode] = []
    submit = venv.manager.submit

    def keep(ep: Episode) -> None:
        episodes.append(ep)
        submit(ep)
    venv.manager.submit = keep  # type: ignore[method-assign]
    model = PPO("MultiInputPolicy", venv, n_steps=64, batch_size=64, n_epochs=1, learning_rate=0.0, seed=0)
    model.learn(512, callback=ExperimentalCRLCallback(guided_ratio=0.5))
    guided = [ep for ep in episodes if ep.guided and ep.length > 1]
    assert guided and all(ep.start_value is not None for ep in guided)
    assert all(ep.start_value is None for ep in episodes if not ep.guided)
    first = {"observation": np.stack([ep.observations[0] for ep in guided])}
    assert not set(first) & set(EXPERIENCE_KEYS)
    with th.no_grad():
        tensor, _ = model.policy.obs_to_tensor(free_view(first, model.observation_space))
        want = model.policy.predict_values(tensor).reshape(-1).numpy()
    np.testing.assert_allclose([ep.start_value for ep in guided], want, rtol=1e-5, atol=1e-6)
    assert all(ep.gamma == model.gamma for ep in guided)
    assert venv.manager.stats()["value_credited"] == len(guided)
    venv.close()


def test_the_main_callback_refuses_the_value_baseline_it_would_not_fill_in():
    venv = ExperienceVecEnv(DummyVecEnv([lambda: gym.make("CartPole-v1")] * 2), ExperienceBank(seed=0),
                            experimental={"value_baseline": True}, manager_kwargs={"mode": "sync"})
    model = PPO("MultiInputPolicy", venv, n_steps=64, batch_size=64, n_epochs=1, seed=0)
    with pytest.raises(ValueError, match="ExperimentalCRLCallback"):
        model.learn(64, callback=CRLCallback())
    venv.close()
