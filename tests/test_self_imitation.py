"""Self-imitation into the policy's own logits (integrations/sb3/self_imitation.py)."""

from __future__ import annotations

import warnings

import gymnasium as gym
import numpy as np
import pytest
import torch as th
from stable_baselines3 import PPO

from experience_wrappers import ExperienceBank, ExperienceWrapper
from experience_wrappers.replay import SOURCE_DEMO, SOURCE_OWN, SuccessReplay
from integrations.sb3 import ExperiencePolicy
from integrations.sb3.self_imitation import (
    SelfImitationCallback,
    free_view,
    self_imitation_step,
    sil_weights,
)


def _model(seed: int = 0) -> PPO:
    env = ExperienceWrapper(gym.make("CartPole-v1"), ExperienceBank(seed=seed), seed=seed)
    return PPO(ExperiencePolicy, env, n_steps=64, batch_size=64, seed=seed,
               policy_kwargs={"net_arch": [16]}, learning_rate=1e-2)


def _states(n: int, seed: int = 0) -> np.ndarray:
    env = gym.make("CartPole-v1")
    out = []
    for i in range(n):
        obs, _ = env.reset(seed=seed + i)
        out.append(obs)
    return np.stack(out).astype(np.float32)


def _own_prob(model: PPO, states: np.ndarray, action: int) -> float:
    """Mean probability of ``action`` under the policy's own logits (free view: nothing shown)."""
    obs = free_view({"observation": states}, model.observation_space)
    with th.no_grad():
        t, _ = model.policy.obs_to_tensor(obs)
        dist = model.policy.get_distribution(t)
        return float(dist.distribution.probs[:, action].mean())


def test_sil_weights_is_the_positive_part_of_return_minus_value_clipped() -> None:
    w = sil_weights(th.tensor([1.0, 0.0, 5.0, -1.0]), th.tensor([0.25, 0.5, 1.0, -3.0]), max_weight=2.0)
    assert w.tolist() == [0.75, 0.0, 2.0, 2.0]


@pytest.mark.parametrize("weight", ["sil", "bc"])
def test_self_imitation_raises_the_own_probability_of_a_demonstrated_action(weight: str) -> None:
    model = _model()
    states = _states(64)
    replay = SuccessReplay(256)
    replay.add_episode({"observation": states}, np.ones(64, dtype=np.int64), np.r_[np.zeros(63), 1.0],
                       gamma=1.0, source=SOURCE_DEMO)
    before = _own_prob(model, states, 1)
    out = self_imitation_step(model, replay, weight=weight, n_batches=30, batch_size=64,
                              rng=np.random.default_rng(0))
    after = _own_prob(model, states, 1)
    assert out["states"] == 64 and out["valid"] > 0.5
    assert after > before + 0.2, (before, after)


def test_sil_ignores_states_whose_value_already_exceeds_the_return() -> None:
    model = _model()
    states = _states(16)
    replay = SuccessReplay(64)
    replay.add_episode({"observation": states}, np.ones(16, dtype=np.int64), np.full(16, -100.0), gamma=0.0)
    out = self_imitation_step(model, replay, weight="sil", n_batches=2, batch_size=16)
    assert out["valid"] == 0.0 and out["loss"] == 0.0


def test_replay_pins_demonstrations_and_evicts_own_states_first_in_first_out(tmp_path) -> None:
    r = SuccessReplay(10)
    r.add_episode({"x": np.zeros((4, 3))}, np.arange(4), np.zeros(4), gamma=0.9, source=SOURCE_DEMO)
    for i in range(5):
        r.add_episode({"x": np.full((3, 3), i + 1.0)}, np.full(3, i), np.r_[0.0, 0.0, 1.0], gamma=0.5)
    assert r.counts() == {"demo": 4, "own": 6}
    obs, acts, rets = r.batch(r.indices())
    demo = r.source[r.indices()] == SOURCE_DEMO
    assert np.all(obs["x"][demo] == 0.0)
    assert sorted(set(obs["x"][~demo][:, 0].tolist())) == [4.0, 5.0]  # the two newest episodes
    assert sorted(rets[~demo].tolist()) == [0.25, 0.25, 0.5, 0.5, 1.0, 1.0]
    path = r.save(tmp_path / "replay")
    back = SuccessReplay.load(path)
    obs2, acts2, rets2 = back.batch(back.indices())
    assert back.counts() == r.counts() and back.episodes == r.episodes
    np.testing.assert_array_equal(obs2["x"], obs["x"])
    np.testing.assert_array_equal(acts2, acts)
    np.testing.assert_array_equal(rets2, rets)
    back.add_episode({"x": np.ones((2, 3))}, np.zeros(2), np.zeros(2), gamma=0.5)  # still FIFO after load
    assert back.counts() == {"demo": 4, "own": 6}


def test_replay_refuses_bad_input() -> None:
    r = SuccessReplay(4)
    with pytest.raises(ValueError, match="capacity"):
        SuccessReplay(0)
    with pytest.raises(ValueError, match="exceed the capacity"):
        r.add_episode({"x": np.zeros((5, 1))}, np.zeros(5), np.zeros(5), gamma=0.9, source=SOURCE_DEMO)
    with pytest.raises(ValueError, match="NaN"):
        r.add_episode({"x": np.zeros((2, 1))}, np.zeros(2), np.array([0.0, np.nan]), gamma=0.9)
    with pytest.raises(ValueError, match="lengths"):
        r.add_episode({"x": np.zeros((3, 1))}, np.zeros(2), np.zeros(2), gamma=0.9)
    r.add_episode({"x": np.zeros((2, 1))}, np.zeros(2), np.zeros(2), gamma=0.9)
    with pytest.raises(ValueError, match="shape"):
        r.add_episode({"x": np.zeros((2, 2))}, np.zeros(2), np.zeros(2), gamma=0.9)
    with pytest.raises(ValueError, match="source"):
        r.add_episode({"x": np.zeros((2, 1))}, np.zeros(2), np.zeros(2), gamma=0.9, source=7)


def test_callback_records_own_episodes_with_the_actions_taken_and_their_returns() -> None:
    """On plain PPO (no experience wrapper): every finished CartPole episode enters the replay
    with its real return-to-go (1 per step, undiscounted here), and the update runs."""
    env = gym.make("CartPole-v1")
    model = PPO("MlpPolicy", env, n_steps=128, batch_size=64, n_epochs=1, gamma=1.0, seed=0,
                policy_kwargs={"net_arch": [16]})
    replay = SuccessReplay(10_000)
    cb = SelfImitationCallback(replay, keep="all", seed=0)
    model.learn(512, callback=cb)
    counts = replay.counts()
    assert counts["demo"] == 0 and counts["own"] > 0 and replay.episodes["own"] >= 5
    obs, acts, rets = replay.batch(replay.indices())
    assert set(acts.tolist()) <= {0, 1}
    assert rets.max() >= 5 and rets.min() == 1.0  # the last step of every episode has return 1
    assert obs["observation"].shape[1:] == (4,) and replay.source[replay.indices()].tolist() == [SOURCE_OWN] * len(acts)
    assert cb.stats and cb.stats["states"] > 0


def test_callback_pretrains_on_demonstrations_before_the_first_rollout() -> None:
    model = _model(1)
    states = _states(32, seed=100)
    replay = SuccessReplay(64)
    replay.add_episode({"observation": states}, np.ones(32, dtype=np.int64), np.ones(32), gamma=0.0,
                       source=SOURCE_DEMO)
    cb = SelfImitationCallback(replay, coef=0.0, keep="none", pretrain_steps=40, batch_size=32, seed=0)
    before = _own_prob(model, states, 1)
    model.learn(64, callback=cb)
    assert _own_prob(model, states, 1) > max(0.9, before + 0.3)


def test_save_crl_keeps_the_replay_beside_the_bank(tmp_path) -> None:
    from integrations.sb3 import save_crl
    from integrations.sb3.run_persistence import REPLAY_FILE

    model = _model(2)
    replay = SuccessReplay(64)
    replay.add_episode({"observation": _states(8)}, np.ones(8, dtype=np.int64), np.ones(8), gamma=0.5,
                       source=SOURCE_DEMO)
    path = save_crl(tmp_path / "run", model, replay=replay)
    back = SuccessReplay.load(path / REPLAY_FILE)
    assert back.counts() == {"demo": 8, "own": 0}
    np.testing.assert_array_equal(back.batch(back.indices())[2], replay.batch(replay.indices())[2])
    assert (path / "model.zip").exists() and (path / "experience").is_dir()


@pytest.mark.parametrize("obs, actions, match", [
    ({"obs": "states"}, np.ones(8, np.int64), r"unknown: \['obs'\]\) \(missing: \['observation'\]\)"),
    ({"observation": "narrow"}, np.ones(8, np.int64), r"observation 'observation' has shape \(3,\) per step"),
    ({"observation": "nan"}, np.ones(8, np.int64), "holds NaN or inf"),
    ({"observation": "states"}, np.full(8, 0.9), "is not a whole number"),
    ({"observation": "states"}, np.full(8, 5), r"action 5 is not one of Discrete\(2\)"),
])
def test_pinned_demonstrations_that_do_not_fit_the_model_are_refused_when_training_starts(obs, actions, match) -> None:
    """Probe 22: a misnamed key trained the policy on zeros (the free view fills a missing key); the
    others failed as torch's errors in the first update."""
    states = _states(8, seed=5)
    made = {"states": states, "narrow": states[:, :3], "nan": np.where(np.arange(4) == 2, np.nan, states)}
    replay = SuccessReplay(64)
    replay.add_episode({k: made[v] for k, v in obs.items()}, actions, np.ones(8), gamma=0.9, source=SOURCE_DEMO)
    model = _model(2)
    before = [p.detach().clone() for p in model.policy.parameters()]
    with pytest.raises(ValueError, match=match):
        model.learn(64, callback=SelfImitationCallback(replay, pretrain_steps=10, batch_size=8, seed=0))
    assert all(th.equal(a, b) for a, b in zip(before, model.policy.parameters(), strict=True))  # nothing trained


def test_a_users_self_imitation_beside_crlcallbacks_own_is_warned_of() -> None:
    """Probe 22: two replays trained beside each other, and save_crl saved CRLCallback's (empty) one."""
    from stable_baselines3.common.callbacks import CallbackList

    from integrations.sb3 import CRLCallback

    replay = SuccessReplay(64)
    replay.add_episode({"observation": _states(4)}, np.ones(4, np.int64), np.ones(4), gamma=0.9, source=SOURCE_DEMO)
    with pytest.warns(UserWarning, match="a SelfImitationCallback of yours runs beside it"):
        _model(3).learn(64, callback=CallbackList([CRLCallback(), SelfImitationCallback(replay)]))
    with warnings.catch_warnings():
        warnings.filterwarnings("error", message=".*SelfImitationCallback of yours.*")
        _model(3).learn(64, callback=CallbackList([CRLCallback(self_imitation=False), SelfImitationCallback(replay)]))


def test_with_demonstrations_pinned_an_env_without_success_reports_stops_only_the_recording() -> None:
    """Probe 22: on such an env self-imitation switched itself off whole (said in an INFO line), and the
    user's demonstrations were no longer trained on."""
    env = ExperienceWrapper(gym.make("CartPole-v1", max_episode_steps=8), ExperienceBank(seed=4), seed=4)
    model = PPO(ExperiencePolicy, env, n_steps=64, batch_size=64, seed=4, policy_kwargs={"net_arch": [16]},
                learning_rate=1e-2)
    states = _states(16, seed=50)
    replay = SuccessReplay(256)
    replay.add_episode({"observation": states}, np.ones(16, np.int64), np.ones(16), gamma=0.0, source=SOURCE_DEMO)
    cb = SelfImitationCallback(replay, only_with_success=True, n_batches=20, batch_size=16, seed=0)
    with pytest.warns(UserWarning, match="stops recording the agent's episodes"):
        model.learn(2048, callback=cb)  # CartPole reports no success: its 100 episodes of 8 steps end before
    assert cb.active and not cb.recording and replay.counts() == {"demo": 16, "own": 0}
    spent = cb.seconds["update"]
    model.learn(640, callback=cb, reset_num_timesteps=False)
    assert cb.seconds["update"] > spent and cb.stats["states"] == 16  # the updates go on, on the demonstrations


class _Walk(gym.Env):
    """Four cells; stepping right from the third is a success (reported on successes only)."""

    observation_space = gym.spaces.Box(0, 1, (1,), np.float32)
    action_space = gym.spaces.Discrete(2)

    def reset(self, seed=None, options=None):
        super().reset(seed=seed)
        self.pos, self.t = 0, 0
        return np.zeros(1, np.float32), {}

    def step(self, action):
        self.t += 1
        self.pos = max(0, min(3, self.pos + (1 if int(action) else -1)))
        won = self.pos == 3
        return np.array([self.pos / 3], np.float32), float(won), won, self.t >= 12, ({"is_success": True} if won else {})


@pytest.mark.parametrize("chunks", [(512,), (128,) * 4])
def test_a_run_trained_in_chunks_gets_a_self_imitation_update_after_every_ppo_update_and_clones_once(
        monkeypatch, chunks) -> None:
    """Probe 23: CRLCallback builds its self-imitation part at every learn(), and that part skipped its first rollout
    start as if no PPO update had run: a run trained in one-rollout chunks (to save or evaluate between them) got
    no self-imitation update at all (0 for 4 PPO updates), and its behaviour cloning ran again at every learn()."""
    import integrations.sb3.self_imitation as sil_module
    from integrations.demos import Demonstration
    from integrations.sb3 import ComplementaryRL

    counts = {"sil": 0, "bc": 0}
    real = sil_module.self_imitation_step

    def counted(*args, **kwargs):
        counts["bc" if kwargs.get("weight") == "bc" else "sil"] += 1
        return real(*args, **kwargs)

    monkeypatch.setattr(sil_module, "self_imitation_step", counted)  # (the real step, counted)
    demo = Demonstration(observations=np.array([[0.0], [1 / 3], [2 / 3]], np.float32), actions=np.ones(3, np.int64),
                         rewards=np.array([0.0, 0.0, 1.0]), success=True)
    run = ComplementaryRL(_Walk, n_envs=2, seed=0, manager_kwargs={"mode": "sync"}, policy_kwargs={"net_arch": [8]},
                          demonstrations=[demo], self_imitation={"pretrain_steps": 5},
                          algorithm_kwargs={"n_steps": 64, "batch_size": 64, "n_epochs": 1})  # a rollout: 128 steps
    try:
        for n in chunks:
            run.learn(n)
        assert counts == {"sil": 3, "bc": 1}  # 4 PPO updates: the last is followed by the next learn's (none here)
    finally:
        run.close()


def test_plain_learn_calls_of_sb3_resetting_the_step_count_also_get_every_update_and_one_cloning(monkeypatch) -> None:
    """Review of probe 23's fix: keyed on the step count, which SB3's learn() resets by default
    (reset_num_timesteps=True), a plain model.learn in chunks still cloned at every call and skipped updates."""
    import integrations.sb3.self_imitation as sil_module
    from integrations.sb3 import SelfImitationCallback

    counts = {"sil": 0, "bc": 0}
    real = sil_module.self_imitation_step

    def counted(*args, **kwargs):
        counts["bc" if kwargs.get("weight") == "bc" else "sil"] += 1
        return real(*args, **kwargs)

    monkeypatch.setattr(sil_module, "self_imitation_step", counted)
    replay = SuccessReplay(64)
    replay.add_episode(np.array([[0.0], [1 / 3], [2 / 3]], np.float32),
                       np.ones(3, np.int64), np.array([0.0, 0.0, 1.0]), gamma=0.9, source=SOURCE_DEMO)
    model = PPO("MlpPolicy", gym.wrappers.TimeLimit(_Walk(), 12), n_steps=32, batch_size=32, n_epochs=1, seed=0,
                policy_kwargs={"net_arch": [8]})
    callback = SelfImitationCallback(replay, pretrain_steps=2)
    for _ in range(4):
        model.learn(32, callback=callback)  # (SB3's default: reset_num_timesteps=True)
    assert counts == {"sil": 3, "bc": 1}
