"""Neighbour imitation: rollout states labelled by the bank's nearest demonstration entry, and a
cloning step that raises the policy's own probability of the labelled action."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
import torch as th
from stable_baselines3 import PPO
from stable_baselines3.common.vec_env import DummyVecEnv

from experience_wrappers import ExperienceBank
from experience_wrappers.bank import Provenance
from experience_wrappers.manager import Episode
from experience_wrappers.rollin import BankGuide
from integrations.sb3 import ExperienceVecEnv
from integrations.sb3.experimental import NeighbourImitationCallback
from integrations.sb3.self_imitation import free_view


def _env_with_demo(action: int) -> ExperienceVecEnv:
    venv = ExperienceVecEnv(DummyVecEnv([lambda: gym.make("CartPole-v1")] * 2), ExperienceBank(seed=0),
                            manager_kwargs={"mode": "sync"})
    rng = np.random.default_rng(0)
    n = 40
    demo = Episode(observations=rng.normal(0, 0.05, (n, 4)).astype(np.float32),
                   actions=np.full(n, action, dtype=np.int64), rewards=np.ones(n), success=True, guided=False)
    venv.manager.ingest(demo, Provenance.DEMO, segment_every=1)
    return venv


def _p_action(model: PPO, obs: np.ndarray, action: int) -> float:
    with th.no_grad():
        t, _ = model.policy.obs_to_tensor(free_view({"observation": obs}, model.observation_space))
        return float(model.policy.get_distribution(t).distribution.probs[:, action].mean())


@pytest.mark.parametrize("action", [0, 1])
def test_neighbour_imitation_raises_the_own_probability_of_the_demonstrated_action(action):
    """Two runs from the same weights and seeds, with and without the callback: with it, the policy's
    own probability of the action the demonstration took near these states ends far higher."""
    probe = np.random.default_rng(1).normal(0, 0.05, (64, 4)).astype(np.float32)
    final = {}
    for with_nbr in (False, True):
        venv = _env_with_demo(action)
        model = PPO("MultiInputPolicy", venv, n_steps=64, batch_size=64, n_epochs=1, learning_rate=1e-3, seed=0)
        callbacks = []
        if with_nbr:
            cb = NeighbourImitationCallback(BankGuide(venv.manager, max_distance=1e9), coef=1.0, n_batches=32,
                                            batch_size=64, seed=0)
            callbacks.append(cb)
        model.learn(64 * 2 * 4, callback=callbacks)
        final[with_nbr] = _p_action(model, probe, action)
        if with_nbr:
            assert cb.history and cb.history[-1]["labelled"] == 1.0  # every state within the floor
        venv.close()
    assert final[True] > final[False] + 0.2, final


def test_states_beyond_the_floor_get_no_label():
    venv = _env_with_demo(1)
    model = PPO("MultiInputPolicy", venv, n_steps=32, batch_size=32, n_epochs=1, seed=0)
    cb = NeighbourImitationCallback(BankGuide(venv.manager, max_distance=0.0), n_batches=2, batch_size=32)
    model.learn(64, callback=cb)
    assert cb.history == [] and cb.stats["labelled"] == 0.0  # nothing labelled: no update ran
    venv.close()


def test_bad_arguments_are_refused():
    venv = _env_with_demo(1)
    guide = BankGuide(venv.manager)
    with pytest.raises(TypeError, match="BankGuide"):
        NeighbourImitationCallback(object())  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="coef"):
        NeighbourImitationCallback(guide, coef=-1.0)
    with pytest.raises(ValueError, match="n_batches"):
        NeighbourImitationCallback(guide, n_batches=-1)
    venv.close()
