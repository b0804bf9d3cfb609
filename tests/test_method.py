"""The method in one object (integrations/sb3/method.py) and the two-line form's self-imitation."""

from __future__ import annotations

import json

import gymnasium as gym
import numpy as np
import pytest
import torch as th
from stable_baselines3 import A2C, PPO

from experience_wrappers import ExperienceBank, ExperienceWrapper
from experience_wrappers.replay import SuccessReplay
from integrations.sb3 import (
    ComplementaryRL,
    CRLCallback,
    ExperiencePolicy,
    find_experience,
    load_crl,
    save_crl,
)
from integrations.sb3.self_imitation import SELF_IMITATION_DEFAULTS, free_view

SMALL = {"n_steps": 64, "batch_size": 64, "n_epochs": 1}


def _params(model) -> list[np.ndarray]:
    return [p.detach().cpu().numpy().copy() for p in model.policy.parameters()]


def test_the_two_line_form_runs_self_imitation_on_the_managers_replay_and_saves_it(tmp_path) -> None:
    bank = ExperienceBank(seed=0)
    env = ExperienceWrapper(gym.make("CartPole-v1"), bank, seed=0)
    model = PPO("MultiInputPolicy", env, seed=0, **SMALL)
    cb = CRLCallback(self_imitation={"only_with_success": False})  # CartPole reports no success
    model.learn(256, callback=cb)
    manager = find_experience(model.get_env())[0][0]
    assert cb.sil is not None and manager.replay is cb.sil.replay
    # CartPole reports no success: an episode with a positive return counts, so states are kept
    assert manager.replay.counts()["own"] > 0
    n = len(manager.replay)
    save_crl(tmp_path / "run", model)
    env2 = ExperienceWrapper(gym.make("CartPole-v1"), ExperienceBank(seed=1), seed=1)
    from stable_baselines3.common.vec_env import DummyVecEnv

    venv = DummyVecEnv([lambda: env2])
    load_crl(tmp_path / "run", venv)
    assert len(find_experience(venv)[0][0].replay) == n


def test_by_default_self_imitation_stops_on_an_env_that_reports_no_success(caplog, monkeypatch) -> None:
    from experience_wrappers.manager import episode

    monkeypatch.setattr(episode, "NO_REPORT_EPISODES", 5)  # (100 by default)
    env = ExperienceWrapper(gym.make("CartPole-v1"), ExperienceBank(seed=0), seed=0)
    model = PPO("MultiInputPolicy", env, seed=0, **SMALL)
    cb = CRLCallback()
    with caplog.at_level("INFO", logger="integrations.sb3.self_imitation"):
        model.learn(256, callback=cb)
    assert cb.sil is not None and not cb.sil.active and len(cb.sil.replay) == 0
    assert caplog.text.count("self-imitation is off: this env reported no success") == 1


class _SuccessOnly(gym.Wrapper):
    """CartPole that sets ``info["is_success"] = True`` when an episode lasts 20 steps, and no key otherwise."""

    def reset(self, **kwargs):
        self.t = 0
        return self.env.reset(**kwargs)

    def step(self, action):
        obs, reward, terminated, truncated, info = self.env.step(action)
        self.t += 1
        if self.t >= 20:
            truncated, info = True, {**info, "is_success": True}
        return obs, reward, terminated, truncated, info


def test_an_env_that_reports_successes_only_keeps_self_imitation_and_its_failures_are_failures() -> None:
    env = ExperienceWrapper(_SuccessOnly(gym.make("CartPole-v1")), ExperienceBank(seed=0), seed=0)
    model = PPO("MultiInputPolicy", env, seed=0, **SMALL)
    cb = CRLCallback()
    outcomes = []
    real_finish = env.injector.finish
    env.injector.finish = lambda r, success: outcomes.append(success) or real_finish(r, success)
    model.learn(1024, callback=cb)
    assert cb.sil is not None and cb.sil.active and cb.sil.replay.counts()["own"] > 0  # before: off, nothing kept
    first = outcomes.index(True)
    assert None not in outcomes[first:] and False in outcomes[first:]  # a missing key after a success: a failure


def test_crl_callback_self_imitation_can_be_turned_off_and_checks_its_arguments() -> None:
    env = ExperienceWrapper(gym.make("CartPole-v1"), ExperienceBank(seed=0), seed=0)
    model = PPO("MultiInputPolicy", env, seed=0, **SMALL)
    cb = CRLCallback(self_imitation=False)
    model.learn(64, callback=cb)
    assert cb.sil is None and find_experience(model.get_env())[0][0].replay is None
    with pytest.raises(ValueError, match="keep must be"):
        CRLCallback(self_imitation={"keep": "some"})
    with pytest.raises(TypeError, match="self_imitation must be True, False or a mapping"):
        CRLCallback(self_imitation="yes")  # type: ignore[arg-type]


def test_crl_callback_leaves_self_imitation_off_on_another_algorithm() -> None:
    env = ExperienceWrapper(gym.make("CartPole-v1"), ExperienceBank(seed=0), seed=0)
    model = A2C("MultiInputPolicy", env, seed=0, n_steps=8)
    cb = CRLCallback()
    # probe 19: said as a warning (a log line at INFO was unseen, and demonstrations given for it never trained on)
    with pytest.warns(UserWarning, match="self-imitation is off: the callback's self-imitation updates a PPO policy, and this model is A2C"):
        model.learn(32, callback=cb)
    assert cb.sil is None


def test_the_object_holds_the_measured_defaults_and_round_trips(tmp_path) -> None:
    assert ComplementaryRL("CartPole-v1", n_envs=1).self_imitation == SELF_IMITATION_DEFAULTS
    run = ComplementaryRL("CartPole-v1", n_envs=2, seed=3, algorithm_kwargs=SMALL,
                          self_imitation={"only_with_success": False})  # CartPole reports no success
    assert run.rollin is None
    assert run.manager is not None and run.manager.replay is run.replay
    run.learn(256)
    assert run.crl_callback is not None and run.sil_callback is run.crl_callback.sil
    assert run.model.num_timesteps >= 256 and len(run.bank) > 0 and len(run.replay) > 0
    ev = run.evaluate(2)
    assert set(ev) == {"with_experience", "without_experience"}
    run.save(tmp_path / "run")
    back = ComplementaryRL.load(tmp_path / "run")
    assert back.seed == 3 and back.model.n_envs == 2
    assert len(back.bank) == len(run.bank) and len(back.replay) == len(run.replay)
    assert isinstance(back.model.policy, ExperiencePolicy)  # an unwrapped observation gets a clear error
    with pytest.raises(ValueError, match="ComplementaryRL.load"):
        back.model.predict(np.zeros(4, dtype=np.float32))
    for a, b in zip(_params(run.model), _params(back.model), strict=True):
        np.testing.assert_array_equal(a, b)
    torch_state = th.random.get_rng_state()
    seeded = run.evaluate(6, seed=7)  # seeded: the same figures twice, and from the save
    assert th.equal(th.random.get_rng_state(), torch_state)  # (its own RNG: the global one untouched)
    figures = json.dumps(seeded, sort_keys=True)  # (NaN success: compared as text)
    assert json.dumps(run.evaluate(6, seed=7), sort_keys=True) == figures
    assert json.dumps(back.evaluate(6, seed=7), sort_keys=True) == figures
    assert json.dumps(run.evaluate(6, seed=8), sort_keys=True) != figures
    with pytest.raises(TypeError, match="seed"):
        run.evaluate(2, seed=1.5)
    back.learn(128, reset_num_timesteps=False)  # resumes
    assert back.model.num_timesteps >= run.model.num_timesteps + 128
    run.close()
    back.close()


def test_a_factory_env_and_the_plain_peer() -> None:
    run = ComplementaryRL(lambda: gym.make("CartPole-v1"), experience=False, n_envs=2, algorithm_kwargs=SMALL,
                          self_imitation={"only_with_success": False})
    assert run.bank is None and run.crl_callback is None and run.sil_callback is not None
    assert not isinstance(run.env.observation_space, gym.spaces.Dict)  # SB3's own network, no experience keys
    run.learn(128)
    assert run.sil_callback.active and len(run.replay) > 0
    run.close()


def test_clear_errors_at_the_boundary(tmp_path) -> None:
    with pytest.raises(ValueError, match="no scripted demonstrator"):
        ComplementaryRL("CartPole-v1", demonstrations=3)
    with pytest.raises(ValueError, match="roll-in starts from demonstrations"):
        ComplementaryRL("CartPole-v1", rollin=True)
    with pytest.raises(TypeError, match="env must be a gymnasium env id or a factory"):
        ComplementaryRL(3)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="n_envs must be a positive int"):
        ComplementaryRL("CartPole-v1", n_envs=0)
    with pytest.raises(ValueError, match="group_size .* needs experience=True"):
        ComplementaryRL("CartPole-v1", experience=False, group_size=2)
    with pytest.raises(ValueError, match="callback_kwargs"):
        ComplementaryRL("CartPole-v1", experience=False, callback_kwargs={"merge_every": 2})
    with pytest.raises(FileNotFoundError, match="ComplementaryRL.save"):
        ComplementaryRL.load(tmp_path)


def test_demonstrations_reach_the_bank_the_replay_and_the_policy_before_the_first_rollout() -> None:
    """The effect: 200 cloning steps on 3 KeyRoom demonstrations raise the probability the
    policy's own logits give the demonstrated actions, against the same run without them."""
    env_id = "MiniHack-KeyRoom-S5-v0"
    run = ComplementaryRL(env_id, demonstrations=3, n_envs=2, seed=0, algorithm_kwargs=SMALL)
    rec = run.demonstrations_record
    assert rec["episodes"] == 3 and rec["bank_size"] == rec["segments"] > 0
    assert run.replay.counts()["demo"] == sum(len(d.actions) for d in run.demonstrations)
    obs, actions, _ = run.replay.batch(run.replay.indices())

    def prob(model) -> float:
        with th.no_grad():
            t, _ = model.policy.obs_to_tensor(free_view(obs, model.observation_space))
            dist = model.policy.get_distribution(t).distribution
            return float(dist.probs[np.arange(len(actions)), actions].mean())

    before = prob(run.model)
    run.learn(64)
    after = prob(run.model)
    assert after > before + 0.1, (before, after)
    run.close()


def test_rollin_and_a_loaded_run_record_the_demonstrations_again_without_adding_them(tmp_path) -> None:
    run = ComplementaryRL("MiniHack-KeyRoom-S5-v0", demonstrations=2, rollin=True, n_envs=2, seed=0,
                          algorithm_kwargs=SMALL)
    assert run.rollin_env is not None and run.rollin_callback is run.callbacks[-1]
    assert run.sil_callback is not None  # under roll-in, self-imitation sees the executed actions
    run.learn(128)
    bank_size, replay_size = len(run.bank), len(run.replay)
    run.save(tmp_path / "r")
    back = ComplementaryRL.load(tmp_path / "r")
    assert len(back.bank) == bank_size and len(back.replay) == replay_size
    assert back.rollin_env is not None and back.rollin_seeds == run.rollin_seeds
    run.close()
    back.close()


def test_an_own_replay_passed_to_save_crl_still_wins(tmp_path) -> None:
    run = ComplementaryRL("CartPole-v1", n_envs=1, algorithm_kwargs=SMALL)
    other = SuccessReplay(8)
    save_crl(tmp_path / "x", run.model, run.env, replay=other)
    assert len(SuccessReplay.load(tmp_path / "x" / "replay.npz")) == 0
    run.close()


def test_rollin_on_given_demonstrations_needs_their_seeds():
    from integrations.minihack import scripted_demonstrations

    demos = scripted_demonstrations("MiniHack-KeyRoom-S5-v0", n_episodes=1, seed=5)
    with pytest.raises(ValueError, match="needs their reset seeds"):
        ComplementaryRL("MiniHack-KeyRoom-S5-v0", demonstrations=demos, rollin=True, n_envs=1,
                        algorithm_kwargs=SMALL)


def test_an_evaluation_of_a_paired_run_takes_its_own_seeds_not_the_trainings_instances(tmp_path) -> None:
    """With ``group_size`` the envs replay one instance per episode index; an evaluation's episodes
    must start where its seed says (the same figures twice, and from the save) and leave the
    training's instance counters where they were (the env is reset once afterwards)."""
    from experience_wrappers.wrappers import ReplayInstances

    run = ComplementaryRL(lambda: gym.make("CartPole-v1"), n_envs=4, group_size=2, seed=0, algorithm_kwargs=SMALL,
                          self_imitation={"only_with_success": False})
    try:
        run.learn(128)
        replays = [e.env for e in run.env.unwrapped.envs]
        while not all(isinstance(r, ReplayInstances) for r in replays):
            replays = [r if isinstance(r, ReplayInstances) else r.env for r in replays]
        before = [r.episodes for r in replays]
        first = json.dumps(run.evaluate(8, seed=1), sort_keys=True)
        assert [r.episodes for r in replays] == [b + 1 for b in before]  # the reset after it, no more
        assert json.dumps(run.evaluate(8, seed=1), sort_keys=True) == first
        assert all(r.replaying for r in replays)
        run.save(tmp_path / "run")
    finally:
        run.close()
    back = ComplementaryRL.load(tmp_path / "run", env=lambda: gym.make("CartPole-v1"))
    try:
        assert json.dumps(back.evaluate(8, seed=1), sort_keys=True) == first
    finally:
        back.close()


def test_a_closed_task_scope_run_refuses_to_learn_evaluate_or_save_as_the_run_scope_does(tmp_path) -> None:
    """After close() the manager's worker and the envs are gone: learn said to build a manager on a
    loaded bank, and evaluate still ran on the closed envs."""
    run = ComplementaryRL("CartPole-v1", n_envs=1, algorithm_kwargs=SMALL, self_imitation=False)
    run.close()
    run.close()  # again: nothing
    for call, what in ((lambda: run.learn(64), "learn"), (lambda: run.evaluate(2), "evaluate"),
                       (lambda: run.save(tmp_path / "r"), "save")):
        with pytest.raises(RuntimeError, match=f"this run is closed: it cannot {what}"):
            call()
    assert not (tmp_path / "r").exists()


def test_a_loaded_roll_in_run_refuses_other_demonstrations_than_it_rolled_in_from(tmp_path) -> None:
    """The docs said "pass the same ones" and nothing checked: demonstrations of other actions loaded."""
    from experience_wrappers.rollin import instance_seeds
    from integrations.minihack import make_minihack_env, scripted_demonstrations

    demos = scripted_demonstrations("MiniHack-Room-5x5-v0", n_episodes=2, seed=5)
    seeds = instance_seeds(make_minihack_env("MiniHack-Room-5x5-v0"), demos, 5)
    kw = {"n_envs": 1, "seed": 0, "algorithm_kwargs": SMALL}
    run = ComplementaryRL("MiniHack-Room-5x5-v0", demonstrations=demos, rollin={"instance_seeds": seeds}, **kw)
    try:
        run.save(tmp_path / "r")
    finally:
        run.close()
    other = [dict(observations=d.observations, actions=(np.asarray(d.actions) + 1) % 8, rewards=d.rewards,
                  success=d.success) for d in demos]
    with pytest.raises(ValueError, match="not the ones this run rolled in from"):
        ComplementaryRL.load(tmp_path / "r", demonstrations=other)
    ComplementaryRL.load(tmp_path / "r", demonstrations=demos).close()
    as_read = [dict(observations={k: v.astype(np.float64) for k, v in d.observations.items()},  # (as JSON gives them)
                    actions=np.asarray(d.actions, np.int32), rewards=d.rewards, success=d.success) for d in demos]
    ComplementaryRL.load(tmp_path / "r", demonstrations=as_read).close()  # the same values in other dtypes


def test_a_learn_that_raises_leaves_the_model_as_configured(tmp_path) -> None:
    """SB3 calls no callback's end when learn() raises: the model kept normalize_advantage=False (a later
    plain use or SB3 save carried it) and the wrappers stayed marked as inside learn()."""
    from stable_baselines3.common.callbacks import BaseCallback

    class Boom(BaseCallback):
        def _on_step(self) -> bool:
            if self.n_calls == 20:
                raise RuntimeError("boom")
            return True

    run = ComplementaryRL("CartPole-v1", n_envs=1, algorithm_kwargs=SMALL, self_imitation=False)
    try:
        assert run.model.normalize_advantage
        with pytest.raises(RuntimeError, match="boom"):
            run.learn(256, callback=Boom())
        assert run.model.normalize_advantage is True
        assert not any(inj.in_learn for inj in find_experience(run.env)[1])
        run.learn(64)  # and it trains on
    finally:
        run.close()
