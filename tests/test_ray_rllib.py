"""The RLlib adapter with real RLlib (new API stack): PPO on CartPole, 2 EnvRunners, local Ray.

RLlib pins a gymnasium that NLE does not accept, so this runs only in a virtual
environment with the ``[rllib]`` extra (``make test-rllib``, which CI runs after ``make test``);
elsewhere the module is skipped, unless ``CRL_REQUIRE_RLLIB`` is set (then it fails).
"""

from __future__ import annotations

import os

import gymnasium as gym
import numpy as np
import pytest

from integrations.ray.rllib import require_rllib

try:
    require_rllib()
except ImportError:
    if os.environ.get("CRL_REQUIRE_RLLIB"):  # `make test-rllib` (CI): a missing RLlib fails, never skips
        raise
    pytest.skip("RLlib is not installed (the [rllib] extra, in its own environment)", allow_module_level=True)

from ray.rllib.algorithms.ppo import PPOConfig  # noqa: E402
from ray.rllib.env.single_agent_episode import SingleAgentEpisode  # noqa: E402
from ray.tune.registry import register_env  # noqa: E402

from integrations.ray import start_service  # noqa: E402
from integrations.ray.rllib import experience_callback, experience_env_creator, subgroup_advantages  # noqa: E402
from tests.ray_support import local_ray  # noqa: E402


@pytest.fixture(scope="module")
def ray_local():
    yield from local_ray()


def _each_learner(algo, fn) -> list:
    res = algo.learner_group.foreach_learner(fn)
    return [r.get() for r in res.result_or_errors] if hasattr(res, "result_or_errors") else list(res)


def _check_piece(learner) -> list[float]:
    """Run the subgroup piece on two made-up episodes (one guided, one free) with the learner's module."""
    def episode(guided: bool, rewards: list[float]) -> SingleAgentEpisode:
        n = len(rewards)
        return SingleAgentEpisode(observations=[np.zeros(4, np.float32)] * (n + 1), actions=[0] * n,
                                  rewards=rewards, infos=[{"experience_guided": guided}] * (n + 1),
                                  len_lookback_buffer=0)

    eps = [episode(True, [0.0, 1.0]), episode(False, [0.0, 0.0, 0.0])]
    module_id = next(iter(learner.module.keys()))
    batch = {module_id: {"advantages": np.array([1.0, 3.0, 10.0, 20.0, 30.0], np.float32)}}
    out = subgroup_advantages()(rl_module=learner.module, episodes=eps, batch=batch)
    return np.asarray(out[module_id]["advantages"]).tolist()


@pytest.mark.timeout(240)
def test_ppo_with_two_env_runners_fills_the_service(ray_local):
    service = start_service(num_cpus=0, capacity=10_000)
    register_env("crl-cartpole", experience_env_creator(lambda cfg: gym.make("CartPole-v1"), service,
                                                        manager_kwargs={"segment_every": 4}))
    config = (PPOConfig()
              .environment("crl-cartpole")
              .env_runners(num_env_runners=2, num_envs_per_env_runner=1, num_cpus_per_env_runner=1)
              .learners(num_learners=0)
              .training(train_batch_size_per_learner=256, minibatch_size=64, num_epochs=1)
              .callbacks(experience_callback(service, total_steps=512, guided_ratio=(0.5, 0.8))))
    algo = config.build_algo()
    try:
        for _ in range(2):
            result = algo.train()
        assert result["crl"]["guided_ratio"] > 0.5  # the schedule moved with the steps sampled
        names = _each_learner(algo, lambda learner: [type(c).__name__ for c in learner._learner_connector.connectors])[0]
        assert names.index("SubgroupAdvantages") == names.index("GeneralAdvantageEstimation") + 1
        adv = _each_learner(algo, _check_piece)[0]
        np.testing.assert_allclose(adv, [-1.0, 1.0, -1.2247, 0.0, 1.2247], atol=1e-4)  # within each subgroup
        # in training, the piece saw both guided and free steps (the infos reached the Learner)
        shares = _each_learner(algo, lambda learner: [getattr(c, "last_guided_fraction", None)
                                                      for c in learner._learner_connector.connectors
                                                      if type(c).__name__ == "SubgroupAdvantages"])[0]
        assert shares and 0.0 < shares[0] < 1.0
    finally:
        algo.stop()
    space = gym.make("CartPole-v1")
    manager = service.manager(space.observation_space, space.action_space)
    manager.flush()
    assert manager.stats()["episodes_processed"] > 0 and len(service) > 0
    assert service.call("schedule")["guided_ratio"] > 0.5


@pytest.mark.timeout(240)
def test_ppo_on_a_metaworld_task(ray_local):
    pytest.importorskip("metaworld")
    from integrations.metaworld.envs import make_mt1_env

    def make(cfg):
        return make_mt1_env("reach-v3", seed=0, max_episode_steps=50)

    service = start_service(num_cpus=0, capacity=10_000)
    register_env("crl-reach", experience_env_creator(make, service, manager_kwargs={"segment_every": 10}))
    config = (PPOConfig()
              .environment("crl-reach")
              .env_runners(num_env_runners=2, num_envs_per_env_runner=1, num_cpus_per_env_runner=1)
              .learners(num_learners=0)
              .training(train_batch_size_per_learner=200, minibatch_size=100, num_epochs=1)
              .callbacks(experience_callback(service, total_steps=400)))
    algo = config.build_algo()
    try:
        result = algo.train()
    finally:
        algo.stop()
    env = make({})
    manager = service.manager(env.observation_space, env.action_space)
    manager.flush()
    assert manager.stats()["episodes_processed"] >= 4 and len(service) > 0
    assert service.dims["context_dim"] > 0  # entries carry the segment they were distilled from
    assert "crl" in result
