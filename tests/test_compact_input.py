"""``experience_input="compact"``: one experience key (the shown entries' mean and the fraction shown)."""

from __future__ import annotations

import json

import attrs
import gymnasium as gym
import numpy as np
import pytest
from stable_baselines3 import PPO
from stable_baselines3.common.env_util import make_vec_env

from experience_wrappers import ExperienceBank, ExperienceOptions, ExperienceWrapper
from experience_wrappers.wrappers import Retriever, experience_space
from experience_wrappers.wrappers.compact import compact_experience
from integrations.sb3 import ComplementaryRL, CRLCallback, ExperienceVecEnv, crl_policy_kwargs
from integrations.sb3.method import METHOD_FILE
from tests.test_retrieval import _filled, _observations

SYNC = {"mode": "sync"}
SMALL = {"n_steps": 64, "batch_size": 64, "n_epochs": 1}


def test_the_compact_space_is_one_key_of_the_entry_width_plus_one():
    env = ExperienceWrapper(gym.make("CartPole-v1"), ExperienceBank(), manager_kwargs=SYNC, k=3,
                            experience_input="compact")
    d = env.manager.exp_dim
    space = env.observation_space
    assert sorted(space.spaces) == ["experience", "observation"]
    assert space["experience"].shape == (d + 1,) and space["experience"].dtype == np.float32
    obs, _ = env.reset(seed=0)
    assert obs in space
    obs, *_ = env.step(0)
    assert obs in space
    # a Dict observation keeps its own keys beside the one experience key
    base = gym.spaces.Dict({"pos": gym.spaces.Box(-1, 1, (2,)), "goal": gym.spaces.Discrete(3)})
    assert sorted(experience_space(base, 4, 8, "compact").spaces) == ["experience", "goal", "pos"]


def test_the_vec_env_gives_the_same_compact_space_and_observations_in_it():
    venv = ExperienceVecEnv(make_vec_env("CartPole-v1", n_envs=3, seed=0), ExperienceBank(), manager_kwargs=SYNC,
                            experience_input="compact")
    d = venv.manager.exp_dim
    assert sorted(venv.observation_space.spaces) == ["experience", "observation"]
    obs = venv.reset()
    assert obs["experience"].shape == (3, d + 1)
    for _ in range(40):
        obs, _, dones, infos = venv.step(np.zeros(3, np.int64))
        for i in np.flatnonzero(dones):
            assert infos[i]["terminal_observation"]["experience"].shape == (d + 1,)
    assert obs["experience"].shape == (3, d + 1)
    assert venv.norm_obs_keys == ["observation"]
    venv.close()


@pytest.mark.parametrize("mode", ["knn", "utility"])
def test_compact_is_the_mask_weighted_mean_of_what_the_retriever_shows(mode):
    env = _filled()
    mgr = env.manager
    obs, tasks = _observations(6), np.zeros(6, np.int64)
    full = Retriever(mgr.key_encoder, mgr.bank, 6, k=3, exp_dim=mgr.exp_dim,
                     query_mode=mode)
    compact = Retriever(mgr.key_encoder, mgr.bank, 6, k=3, exp_dim=mgr.exp_dim,
                        query_mode=mode, experience_input="compact")
    full.retrieve(np.arange(6), obs, tasks, record=False, rng=np.random.default_rng(1))
    compact.retrieve(np.arange(6), obs, tasks, record=False, rng=np.random.default_rng(1))
    got = compact.observation(obs)["experience"]
    assert got.shape == (6, mgr.exp_dim + 1)
    # the same entries are shown; the compact key is their mean, and the fraction of slots shown
    np.testing.assert_array_equal(compact.ids, full.ids)
    for r in range(6):
        ids = compact.shown_ids(r)
        assert ids, "every row finds entries in a filled bank"
        values = mgr.bank.get(list(ids))["value"]  # read from the bank, not from the retriever
        np.testing.assert_allclose(got[r, :-1], values.mean(axis=0), rtol=1e-5, atol=1e-6)
        assert got[r, -1] == pytest.approx(len(ids) / 3)
    np.testing.assert_allclose(got, compact_experience(full.values, full.mask), rtol=1e-6)
    # a probe that the channel carries the information: states shown other entries read differently
    assert len({tuple(np.round(row, 5)) for row in got}) > 1
    # one row alone is that row, without the batch axis
    np.testing.assert_array_equal(compact.observation(obs[2], 2)["experience"], got[2])
    compact.clear(2)
    assert not compact.observation(obs)["experience"][2].any()


def test_an_experience_free_episode_reads_as_zeros_and_a_guided_one_does_not():
    env = _filled(experience_input="compact", k=4)
    env.set_force_guided(False)
    obs, info = env.reset(seed=50)
    assert not info["experience_guided"]
    for _ in range(5):
        assert not obs["experience"].any()
        obs, *_ = env.step(0)
    env.set_force_guided(True)
    obs, info = env.reset(seed=50)
    assert info["experience_guided"] and info["experience_ids"]
    assert obs["experience"][-1] == pytest.approx(len(info["experience_ids"]) / 4)
    values = env.bank.get(list(info["experience_ids"]))["value"]
    np.testing.assert_allclose(obs["experience"][:-1], values.mean(axis=0), rtol=1e-5, atol=1e-6)
    # an empty bank shows nothing: zeros as well
    empty = ExperienceWrapper(gym.make("CartPole-v1"), ExperienceBank(), manager_kwargs=SYNC,
                              experience_input="compact")
    empty.set_force_guided(True)
    assert not empty.reset(seed=0)[0]["experience"].any()


def test_bad_values_raise_value_errors_that_name_the_field():
    with pytest.raises(ValueError, match=r"experience_input must be 'full' or 'compact', got 'mean'"):
        ExperienceOptions(experience_input="mean")
    with pytest.raises(ValueError, match="experience_input must be"):
        ExperienceWrapper(gym.make("CartPole-v1"), ExperienceBank(), experience_input=None)
    with pytest.raises(ValueError, match="experience_input must be"):
        Retriever(None, ExperienceBank(), 1, k=2, exp_dim=4, experience_input="Compact")  # type: ignore[arg-type]
    assert ExperienceOptions().experience_input == "full"


def test_the_attention_extractor_refuses_the_compact_input_and_names_the_fix():
    env = ExperienceWrapper(gym.make("CartPole-v1"), ExperienceBank(), manager_kwargs=SYNC,
                            experience_input="compact")
    with pytest.raises(ValueError, match="experience_input='full'.*SB3's default policy"):
        PPO("MultiInputPolicy", env, policy_kwargs=crl_policy_kwargs(), n_steps=64)
    with pytest.raises(ValueError, match="experience_input='full'"):
        ComplementaryRL("CartPole-v1", n_envs=1, wrapper_kwargs={"experience_input": "compact"})


def test_ppo_with_the_default_policy_learns_on_the_compact_input():
    venv = make_vec_env("CartPole-v1", n_envs=2, seed=0, wrapper_class=ExperienceWrapper,
                        wrapper_kwargs={"bank": ExperienceBank(seed=0), "manager_kwargs": SYNC,
                                        "experience_input": "compact"})
    model = PPO("MultiInputPolicy", venv, seed=0, **SMALL)
    d = venv.observation_space["experience"].shape[0]
    # SB3's CombinedExtractor flattens the two keys: CartPole's 4 values and the compact d
    assert model.policy.features_extractor.features_dim == 4 + d
    cb = CRLCallback(self_imitation=False)
    model.learn(384, callback=cb)
    assert model.num_timesteps >= 384
    bank = cb.managers[0].bank
    assert len(bank) > 0
    buf = model.rollout_buffer.observations["experience"]
    assert buf.shape[-1] == d
    assert (buf[..., -1] > 0).any(), "some rollout steps were shown entries (fraction > 0)"
    venv.close()


def test_the_option_round_trips_through_the_options_and_a_saved_run(tmp_path):
    opts = ExperienceOptions(k=3, experience_input="compact")
    assert ExperienceOptions(**attrs.asdict(opts, recurse=False)) == opts
    assert ExperienceOptions.of(opts, k=2).experience_input == "compact"
    run = ComplementaryRL("CartPole-v1", n_envs=2, seed=1, policy="MultiInputPolicy", algorithm_kwargs=SMALL,
                          self_imitation=False, wrapper_kwargs={"experience_input": "compact"})
    d = run.manager.exp_dim
    assert run.env.observation_space["experience"].shape == (d + 1,)
    run.learn(128)
    run.save(tmp_path / "run")
    settings = json.loads((tmp_path / "run" / METHOD_FILE).read_text())
    assert settings["wrapper_kwargs"] == {"experience_input": "compact"}
    back = ComplementaryRL.load(tmp_path / "run", policy="MultiInputPolicy")
    assert back.env.observation_space["experience"].shape == (d + 1,)
    assert sorted(back.env.observation_space.spaces) == ["experience", "observation"]
    back.learn(64, reset_num_timesteps=False)
    run.close()
    back.close()
    # a file saved before the option (no experience_input in wrapper_kwargs) loads with the full input
    old = ComplementaryRL("CartPole-v1", n_envs=1, seed=1, algorithm_kwargs=SMALL, self_imitation=False)
    old.save(tmp_path / "old")
    assert "experience_input" not in json.loads((tmp_path / "old" / METHOD_FILE).read_text())["wrapper_kwargs"]
    old_back = ComplementaryRL.load(tmp_path / "old")
    assert old_back.env.observation_space["experience"].shape == (4, old_back.manager.exp_dim)
    old.close()
    old_back.close()
