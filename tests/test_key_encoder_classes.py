"""A key encoder given as its class is built from the observation space, shared by the wrappers
of one bank, and saved by name with a run (an instance holds state a run's method.json cannot)."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
from gymnasium import spaces

from experience_wrappers import ExperienceBank, ExperienceManager, ExperienceWrapper, ManagerConfig
from experience_wrappers.keys import FlatKeyEncoder, RandomProjectionKeyEncoder
from integrations.minihack.hidden_goal import HiddenGoalRoom
from integrations.sb3 import ComplementaryRL

SMALL = {"n_steps": 32, "batch_size": 32, "n_epochs": 1}


def test_a_class_is_built_from_the_managers_observation_space() -> None:
    space = spaces.Box(-1, 1, (3,), np.float32)
    with pytest.raises(TypeError, match="config must be a ManagerConfig, got dict"):
        ExperienceManager(ExperienceBank(), space, spaces.Discrete(2), config={"mode": "sync"})  # type: ignore[arg-type]
    mgr = ExperienceManager(ExperienceBank(), space, spaces.Discrete(2), key_encoder=FlatKeyEncoder,
                            config=ManagerConfig(mode="sync"))
    assert isinstance(mgr.key_encoder, FlatKeyEncoder) and mgr.key_encoder.key_dim == 3
    keys = mgr.encode_keys(np.array([[0.5, 0.0, -1.0]], np.float32), np.zeros(1, np.int64))
    assert keys.shape == (1, 3)
    mgr.close()


def test_the_wrappers_of_one_bank_share_the_encoder_the_class_built() -> None:
    bank = ExperienceBank()
    a = ExperienceWrapper(gym.make("CartPole-v1"), bank, key_encoder=FlatKeyEncoder, manager_kwargs={"mode": "sync"})
    b = ExperienceWrapper(gym.make("CartPole-v1"), bank, key_encoder=FlatKeyEncoder, manager_kwargs={"mode": "sync"})
    assert a.manager is b.manager and type(a.manager.key_encoder) is FlatKeyEncoder
    with pytest.raises(ValueError, match="different key_encoder"):
        ExperienceWrapper(gym.make("CartPole-v1"), bank, key_encoder=RandomProjectionKeyEncoder)
    a.close()
    b.close()


def test_a_task_scope_run_given_the_class_saves_and_loads_with_it(tmp_path) -> None:
    run = ComplementaryRL("CartPole-v1", n_envs=2, seed=1, algorithm_kwargs=SMALL,
                          wrapper_kwargs={"key_encoder": FlatKeyEncoder}, manager_kwargs={"mode": "sync"})
    try:
        run.learn(64)
        assert type(run.manager.key_encoder) is FlatKeyEncoder
        run.save(tmp_path / "run")
    finally:
        run.close()
    back = ComplementaryRL.load(tmp_path / "run")
    try:
        assert type(back.manager.key_encoder) is FlatKeyEncoder and back.manager.key_encoder.key_dim == 4
        back.learn(64, reset_num_timesteps=False)
    finally:
        back.close()


def test_a_run_scope_run_given_the_class_saves_and_loads_with_it(tmp_path) -> None:
    kw = {"instances": [5, 6], "n_envs": 4, "trials": 2, "algorithm_kwargs": SMALL,
          "memory_kwargs": {"horizon": 8, "k": 4, "exp_dim": 4, "key_encoder": RandomProjectionKeyEncoder}}
    run = ComplementaryRL(lambda: HiddenGoalRoom(5, 8), scope="run", **kw)
    try:
        run.learn(64)
        assert type(run.memory.key_encoder) is RandomProjectionKeyEncoder
        run.save(tmp_path / "run")
    finally:
        run.close()
    back = ComplementaryRL.load(tmp_path / "run", env=lambda: HiddenGoalRoom(5, 8))
    try:
        assert type(back.memory.key_encoder) is RandomProjectionKeyEncoder
        assert back.memory.key_encoder.key_dim == run.memory.key_encoder.key_dim
    finally:
        back.close()
