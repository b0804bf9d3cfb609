"""The compact experience input (experimental): one experience key (the shown entries' mean and
the fraction shown) instead of three, by ``CompactExperience`` and ``CompactExperienceVecEnv``."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
from stable_baselines3 import PPO
from stable_baselines3.common.env_util import make_vec_env

from experience_wrappers import ExperienceBank, ExperienceOptions, ExperienceWrapper
from experience_wrappers.experimental import (
    CompactExperience,
    compact_experience,
    compact_observation_space,
)
from integrations.sb3 import ComplementaryRL, CRLCallback, ExperienceVecEnv, crl_policy_kwargs
from integrations.sb3.experimental import CompactExperienceVecEnv
from tests.test_retrieval import _filled

SYNC = {"mode": "sync"}
SMALL = {"n_steps": 64, "batch_size": 64, "n_epochs": 1}


def test_the_compact_space_is_one_key_of_the_entry_width_plus_one():
    env = CompactExperience(ExperienceWrapper(gym.make("CartPole-v1"), ExperienceBank(), manager_kwargs=SYNC, k=3))
    d = env.env.manager.exp_dim
    space = env.observation_space
    assert sorted(space.spaces) == ["experience", "observation"]
    assert space["experience"].shape == (d + 1,) and space["experience"].dtype == np.float32
    obs, _ = env.reset(seed=0)
    assert obs in space
    obs, *_ = env.step(0)
    assert obs in space
    # a Dict observation keeps its own keys beside the one experience key
    base = gym.spaces.Dict({"pos": gym.spaces.Box(-1, 1, (2,)), "goal": gym.spaces.Discrete(3),
                            "experience": gym.spaces.Box(-np.inf, np.inf, (4, 8)),
                            "experience_utility": gym.spaces.Box(-np.inf, np.inf, (4,)),
                            "experience_mask": gym.spaces.Box(0, 1, (4,))})
    assert sorted(compact_observation_space(base).spaces) == ["experience", "goal", "pos"]
    with pytest.raises(ValueError, match="replaces the keys"):
        CompactExperience(gym.make("CartPole-v1"))  # not an experience wrapper's observation


def test_the_vec_env_gives_the_same_compact_space_and_observations_in_it():
    venv = CompactExperienceVecEnv(ExperienceVecEnv(make_vec_env("CartPole-v1", n_envs=3, seed=0), ExperienceBank(),
                                                    manager_kwargs=SYNC))
    d = venv.venv.manager.exp_dim
    assert sorted(venv.observation_space.spaces) == ["experience", "observation"]
    obs = venv.reset()
    assert obs["experience"].shape == (3, d + 1)
    ended = 0
    for _ in range(40):
        obs, _, dones, infos = venv.step(np.zeros(3, np.int64))
        for i in np.flatnonzero(dones):
            assert infos[i]["terminal_observation"]["experience"].shape == (d + 1,)
            ended += 1
    assert ended > 0 and obs["experience"].shape == (3, d + 1)
    assert venv.norm_obs_keys == ["observation"]
    venv.close()


def test_compact_is_the_mask_weighted_mean_of_what_the_wrapper_shows():
    env = _filled(k=4)
    compact = CompactExperience(env)
    env.set_force_guided(True)
    seen = set()
    for seed in range(50, 56):
        obs, info = compact.reset(seed=seed)
        ids = info["experience_ids"]
        assert ids, "a guided episode finds entries in a filled bank"
        values = env.bank.get(list(ids))["value"]  # read from the bank, not from the wrapper
        np.testing.assert_allclose(obs["experience"][:-1], values.mean(axis=0), rtol=1e-5, atol=1e-6)
        assert obs["experience"][-1] == pytest.approx(len(ids) / 4)
        seen.add(tuple(np.round(obs["experience"], 5)))
    # a probe that the channel carries the information: states shown other entries read differently
    assert len(seen) > 1
    v = np.arange(6, dtype=np.float32).reshape(1, 3, 2)
    np.testing.assert_allclose(compact_experience(v, np.array([[1, 0, 1]], np.float32)), [[2.0, 3.0, 2 / 3]])


def test_an_experience_free_episode_reads_as_zeros():
    env = _filled(k=4)
    compact = CompactExperience(env)
    env.set_force_guided(False)
    obs, info = compact.reset(seed=50)
    assert not info["experience_guided"]
    for _ in range(5):
        assert not obs["experience"].any()
        obs, *_ = compact.step(0)
    empty = ExperienceWrapper(gym.make("CartPole-v1"), ExperienceBank(), manager_kwargs=SYNC)
    empty.set_force_guided(True)  # an empty bank shows nothing: zeros as well
    assert not CompactExperience(empty).reset(seed=0)[0]["experience"].any()


def test_the_option_left_the_main_path_with_a_message_that_names_the_wrapper():
    with pytest.raises(TypeError, match="CompactExperience"):
        ExperienceWrapper(gym.make("CartPole-v1"), ExperienceBank(), experience_input="compact")
    with pytest.raises(TypeError, match="CompactExperienceVecEnv"):
        ComplementaryRL("CartPole-v1", n_envs=1, wrapper_kwargs={"experience_input": "compact"})
    # an older save's "full" changes nothing
    assert ExperienceOptions.of(experience_input="full", k=3) == ExperienceOptions(k=3)


def test_the_attention_extractor_refuses_the_compact_input_and_names_the_fix():
    env = CompactExperience(ExperienceWrapper(gym.make("CartPole-v1"), ExperienceBank(), manager_kwargs=SYNC))
    with pytest.raises(ValueError, match="CompactExperience.*SB3's default policy"):
        PPO("MultiInputPolicy", env, policy_kwargs=crl_policy_kwargs(), n_steps=64)


def test_ppo_with_the_default_policy_learns_on_the_compact_input():
    venv = CompactExperienceVecEnv(make_vec_env("CartPole-v1", n_envs=2, seed=0, wrapper_class=ExperienceWrapper,
                                                wrapper_kwargs={"bank": ExperienceBank(seed=0),
                                                                "manager_kwargs": SYNC}))
    model = PPO("MultiInputPolicy", venv, seed=0, **SMALL)
    d = venv.observation_space["experience"].shape[0]
    # SB3's CombinedExtractor flattens the two keys: CartPole's 4 values and the compact d
    assert model.policy.features_extractor.features_dim == 4 + d
    cb = CRLCallback(self_imitation=False)
    model.learn(384, callback=cb)  # the callback finds the experience below the compact wrapper
    assert model.num_timesteps >= 384
    assert len(cb.managers[0].bank) > 0
    buf = model.rollout_buffer.observations["experience"]
    assert buf.shape[-1] == d
    assert (buf[..., -1] > 0).any(), "some rollout steps were shown entries (fraction > 0)"
    venv.close()
