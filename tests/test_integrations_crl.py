"""PPO + Complementary RL on the integrations' real environments (tiny step counts)."""

from __future__ import annotations

import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env as gym_check_env
from stable_baselines3 import PPO
from stable_baselines3.common import env_checker as sb3_env_checker

from experience_wrappers import ExperienceBank, ExperienceWrapper
from integrations.sb3 import CRLCallback, crl_policy_kwargs, find_experience


def _learn(venv, policy_kwargs, steps=256):
    model = PPO("MultiInputPolicy", venv, n_steps=64, batch_size=64, n_epochs=1, policy_kwargs=policy_kwargs, seed=0)
    cb = CRLCallback()
    model.learn(steps, callback=cb)
    mgr = find_experience(venv)[0][0]
    mgr.flush()
    return model, mgr


def test_minihack_wrapped_checkers_and_short_learn():
    pytest.importorskip("minihack")
    from integrations.minihack import (
        GlyphCNNExtractor,
        MiniHackKeyEncoder,
        make_minihack_env,
        make_minihack_vec_env,
    )

    base = make_minihack_env("MiniHack-Room-5x5-v0")
    bank = ExperienceBank()
    env = ExperienceWrapper(base, bank, key_encoder=MiniHackKeyEncoder(base.observation_space),
                            manager_kwargs={"mode": "sync"})
    gym_check_env(env, skip_render_check=True)
    sb3_env_checker.check_env(env)
    obs, _ = env.reset(seed=0)
    assert obs in env.observation_space and "glyphs_crop" in obs  # the Dict's own keys stay on top

    bank2 = ExperienceBank()
    probe = make_minihack_env("MiniHack-Room-5x5-v0")
    venv = make_minihack_vec_env("MiniHack-Room-5x5-v0", n_envs=2, seed=0, wrapper_class=ExperienceWrapper,
                                 wrapper_kwargs={"bank": bank2, "key_encoder": MiniHackKeyEncoder(probe.observation_space),
                                                 "manager_kwargs": {"batch_size": 4, "ssl_batch_size": 8}})
    _, mgr = _learn(venv, crl_policy_kwargs(base_extractor_class=GlyphCNNExtractor))
    assert len(bank2) > 0 and mgr.stats()["episodes_processed"] > 0
    mgr.close()


def test_metaworld_wrapped_checkers_and_short_learn():
    pytest.importorskip("metaworld")
    from integrations.metaworld import make_mt1_env, make_mt10_env, task_id_from_obs

    env = ExperienceWrapper(make_mt10_env(3, seed=0), ExperienceBank(), task_id=lambda obs, info: task_id_from_obs(obs),
                            manager_kwargs={"mode": "sync"})
    gym_check_env(env, skip_render_check=True)
    original = sb3_env_checker._is_goal_env  # Meta-World's compute_reward makes SB3 think it is a GoalEnv
    sb3_env_checker._is_goal_env = lambda _env: False
    try:
        sb3_env_checker.check_env(env)
    finally:
        sb3_env_checker._is_goal_env = original
    obs, info = env.reset(seed=0)
    assert info["experience_task_id"] == 3 and obs in env.observation_space

    from stable_baselines3.common.env_util import make_vec_env

    bank = ExperienceBank()
    venv = make_vec_env(lambda: make_mt1_env("reach-v3", max_episode_steps=50), n_envs=2, seed=0,
                        wrapper_class=ExperienceWrapper, wrapper_kwargs={"bank": bank})
    _, mgr = _learn(venv, crl_policy_kwargs(), steps=256)
    assert len(bank) > 0
    entries = bank.entries()
    assert entries["context"].shape[1] == mgr.context_dim > 0  # the segments, Box actions included
    assert np.all(np.isfinite(entries["value"]))
    mgr.close()
