"""Shared fixtures: one torch thread, a seeded rng, wrapped CartPole envs on fresh banks.

Managers are registered per bank (a weak registry), so every fixture builds its own
``ExperienceBank``: two tests never share a manager.
"""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
import torch

from experience_wrappers import ExperienceBank, ExperienceWrapper


@pytest.fixture(autouse=True, scope="session")
def _one_torch_thread():
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(0)


@pytest.fixture
def cartpole_env():
    env = ExperienceWrapper(gym.make("CartPole-v1"), ExperienceBank(), manager_kwargs={"mode": "sync"})
    yield env
    env.close()


@pytest.fixture
def vec_env4():
    from stable_baselines3.common.env_util import make_vec_env

    venv = make_vec_env("CartPole-v1", n_envs=4, seed=0, wrapper_class=ExperienceWrapper,
                        wrapper_kwargs={"bank": ExperienceBank(), "manager_kwargs": {"mode": "sync"}})
    yield venv
    venv.close()

