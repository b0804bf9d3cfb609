"""ExperienceEvalCallback: periodic evaluation with and without experience on a separate env."""

from __future__ import annotations

import numpy as np
import pytest
from stable_baselines3 import PPO
from stable_baselines3.common.callbacks import CallbackList
from stable_baselines3.common.env_util import make_vec_env

from experience_wrappers import ExperienceBank, ExperienceWrapper
from integrations.sb3 import (
    CRLCallback,
    CRLCheckpointCallback,
    ExperienceEvalCallback,
    evaluate_frozen,
    evaluate_with_and_without_experience,
    find_experience,
)

from .test_sb3 import FAST, PPO_KW, wrapped_vec


def eval_vec(bank: ExperienceBank, manager=None, n_envs: int = 2):
    return make_vec_env("CartPole-v1", n_envs=n_envs, seed=100, wrapper_class=ExperienceWrapper,
                        wrapper_kwargs={"bank": bank, "learn": False, "manager": manager,
                                        "manager_kwargs": FAST})


def test_evaluates_at_each_interval_and_never_feeds_the_manager():
    bank = ExperienceBank()
    train = wrapped_vec(4, bank)
    mgr = find_experience(train)[0][0]
    evaluation = eval_vec(bank, mgr)
    cb = ExperienceEvalCallback(evaluation, eval_freq=256, n_eval_episodes=4, deterministic=False)
    model = PPO("MultiInputPolicy", train, **PPO_KW)
    model.learn(1024, callback=CallbackList([CRLCallback(), cb]))
    assert [h["steps"] for h in cb.history] == [256, 512, 768, 1024]
    assert cb.seconds > 0
    for h in cb.history:
        for setting in ("with_experience", "without_experience"):
            assert h[setting]["episodes"] == 4
            assert 0 < h[setting]["length"] <= 500
    assert len(bank) > 0
    submitted = mgr.episodes_submitted
    stats = bank.stats()
    record = cb.evaluate()
    assert mgr.episodes_submitted == submitted  # evaluation episodes are never handed over
    assert bank.stats() == stats  # nor counted as retrievals
    assert record["with_experience"]["episodes"] == 4
    logged = model.logger.name_to_value
    assert "eval/with_experience/return" in logged and "eval/without_experience/length" in logged
    assert "eval/with_experience/success" not in logged  # CartPole reports no success
    train.close()
    evaluation.close()


def test_an_env_without_experience_is_evaluated_once():
    model = PPO("MlpPolicy", make_vec_env("CartPole-v1", n_envs=2, seed=0), **PPO_KW)
    cb = ExperienceEvalCallback(make_vec_env("CartPole-v1", n_envs=2, seed=1), eval_freq=128, n_eval_episodes=2)
    model.learn(256, callback=cb)
    assert cb.with_experience is False
    assert [sorted(h) for h in cb.history] == [["steps", "without_experience"]] * 2


def test_the_training_env_is_refused():
    train = wrapped_vec(2)
    model = PPO("MultiInputPolicy", train, **PPO_KW)
    with pytest.raises(ValueError, match="separate env"):
        model.learn(128, callback=ExperienceEvalCallback(train, eval_freq=64))


@pytest.mark.parametrize("kwargs", [{"eval_freq": 0}, {"n_eval_episodes": -1}, {"eval_freq": 1.5},
                                    {"n_eval_episodes": True}])
def test_bad_arguments_raise(kwargs):
    with pytest.raises(ValueError, match=next(iter(kwargs))):
        ExperienceEvalCallback(make_vec_env("CartPole-v1", n_envs=1), **kwargs)


def test_eval_env_must_be_a_vec_env():
    import gymnasium as gym

    with pytest.raises(ValueError, match="VecEnv"):
        ExperienceEvalCallback(gym.make("CartPole-v1"))


@pytest.mark.parametrize(("call", "exc", "match"), [
    (lambda m, env: evaluate_with_and_without_experience(m, env, n_episodes=0), ValueError, "n_episodes"),
    (lambda m, env: evaluate_frozen(m, env, n_eval_episodes=0), ValueError, "n_eval_episodes"),
    (lambda m, env: evaluate_frozen(m, env, guided="yes"), TypeError, "guided must be a bool or None"),
    (lambda m, env: evaluate_frozen(m, env, guided=0.3), TypeError, "guided must be a bool or None")])
def test_the_evaluation_helpers_refuse_bad_arguments_and_leave_the_env_as_it_was(call, exc, match):
    env = wrapped_vec(n_envs=1)
    model = PPO("MultiInputPolicy", env, **PPO_KW)
    _, (inj,) = find_experience(env)
    with pytest.raises(exc, match=match):
        call(model, env)
    assert (inj.force_guided, inj.learn) == (None, None)


@pytest.mark.parametrize(("kwargs", "exc", "match"), [
    ({"save_freq": 0}, ValueError, "save_freq"), ({"save_freq": -5}, ValueError, "save_freq"),
    ({"save_freq": 2.5}, ValueError, "save_freq")])
def test_checkpoint_callback_arguments_are_checked_when_it_is_built(kwargs, exc, match, tmp_path):
    with pytest.raises(exc, match=match):
        CRLCheckpointCallback(save_path=str(tmp_path), **kwargs)
    (tmp_path / "file").write_text("mine")
    with pytest.raises(ValueError, match="is a file"):
        CRLCheckpointCallback(save_freq=10, save_path=str(tmp_path / "file"))
    assert (tmp_path / "file").read_text() == "mine"


def test_a_normalised_eval_env_gets_the_training_statistics_and_a_loaded_run_the_keys_they_cover(tmp_path):
    """ExperienceEvalCallback left the eval env's VecNormalize at its initial statistics (SB3's
    EvalCallback syncs them); load_crl onto a VecNormalize built as for training copied the
    statistics but not the keys they cover, and the first reset raised KeyError: 'experience'."""
    from stable_baselines3.common.vec_env import VecNormalize

    from integrations.sb3 import load_crl, save_crl
    from integrations.sb3.vec_env import norm_obs_keys

    bank = ExperienceBank(seed=0)

    def make():
        return make_vec_env("CartPole-v1", n_envs=2, seed=0, wrapper_class=ExperienceWrapper,
                            wrapper_kwargs={"bank": bank, "manager_kwargs": {"mode": "sync"}})

    t, e = make(), make()
    train = VecNormalize(t, norm_obs_keys=norm_obs_keys(t))
    evaluation = VecNormalize(e, norm_obs_keys=norm_obs_keys(e), training=False, norm_reward=False)
    cb = ExperienceEvalCallback(evaluation, eval_freq=128, n_eval_episodes=2)
    model = PPO("MultiInputPolicy", train, n_steps=64, batch_size=64, n_epochs=1, seed=0)
    model.learn(256, callback=[CRLCallback(self_imitation=False), cb])
    np.testing.assert_array_equal(evaluation.obs_rms["observation"].mean, train.obs_rms["observation"].mean)
    assert evaluation.obs_rms is not train.obs_rms  # (a copy: evaluation never moves the training statistics)
    save_crl(tmp_path / "run", model)
    bank.manager.close()
    bank2 = ExperienceBank(seed=0)
    fresh = VecNormalize(make_vec_env("CartPole-v1", n_envs=2, seed=0, wrapper_class=ExperienceWrapper,
                                      wrapper_kwargs={"bank": bank2, "manager_kwargs": {"mode": "sync"}}))
    loaded = load_crl(tmp_path / "run", fresh)  # built as for training: it names the experience keys
    obs = fresh.reset()
    loaded.predict(obs)
    assert sorted(fresh.norm_obs_keys) == sorted(train.norm_obs_keys)
    fresh.close()


def test_an_unnormalised_eval_env_beside_a_normalised_training_env_is_said():
    from stable_baselines3.common.vec_env import VecNormalize

    from integrations.sb3.vec_env import norm_obs_keys

    bank = ExperienceBank(seed=0)
    t = wrapped_vec(bank=bank)
    model = PPO("MultiInputPolicy", VecNormalize(t, norm_obs_keys=norm_obs_keys(t)), **PPO_KW)
    cb = ExperienceEvalCallback(eval_vec(bank), eval_freq=10_000)
    with pytest.warns(UserWarning, match="eval_env does not"):
        model.learn(64, callback=[CRLCallback(self_imitation=False), cb])
    bank.manager.close()


def test_an_evaluation_with_experience_on_an_empty_bank_is_said():
    """An eval env built on a new bank by mistake gave with and without figures alike, unremarked."""
    import warnings

    bank = ExperienceBank(seed=0)
    model = PPO("MultiInputPolicy", wrapped_vec(n_envs=1, bank=bank), **PPO_KW)
    fresh = ExperienceBank(seed=0)
    with pytest.warns(UserWarning, match="the env's bank is empty, and it is not the training env's"):
        evaluate_with_and_without_experience(model, eval_vec(fresh, n_envs=1), n_episodes=1)
    fresh.manager.close()
    with warnings.catch_warnings(record=True) as caught:  # the training bank, empty before learn(): as expected
        warnings.simplefilter("always")
        evaluate_with_and_without_experience(model, eval_vec(bank, n_envs=1), n_episodes=1)
    assert not any("bank is empty" in str(w.message) for w in caught)
    bank.manager.close()


def test_a_model_loaded_with_ppo_load_and_evaluated_on_an_empty_bank_is_said(tmp_path):
    """Probe 19: PPO.load saves no bank; evaluated on its own fresh env, with and without experience agreed, with
    nothing said (the warning was only for a separate eval env)."""
    model = PPO("MultiInputPolicy", wrapped_vec(n_envs=1), **PPO_KW)
    model.learn(128)
    model.save(tmp_path / "m")
    bank = ExperienceBank(seed=0)
    loaded = PPO.load(tmp_path / "m", env=wrapped_vec(n_envs=1, bank=bank))
    with pytest.warns(UserWarning, match=r"the env's bank is empty, though the model has trained 128 steps.*load_crl"):
        evaluate_with_and_without_experience(loaded, n_episodes=1)
    bank.manager.close()


def test_an_evaluation_on_the_training_env_from_inside_learn_is_said():
    """SB3 puts its own last observation back after the callback: the next action came from a state the
    env had left, unremarked."""
    from stable_baselines3.common.callbacks import BaseCallback

    class EvalInside(BaseCallback):
        def _on_step(self) -> bool:
            if self.n_calls == 8:
                evaluate_with_and_without_experience(self.model, n_episodes=1)
            return True

    model = PPO("MultiInputPolicy", wrapped_vec(n_envs=1), **PPO_KW)
    with pytest.warns(UserWarning, match="inside learn"):
        model.learn(64, callback=[CRLCallback(self_imitation=False), EvalInside()])
    import warnings

    with warnings.catch_warnings(record=True) as caught:  # between learn() calls: as documented
        warnings.simplefilter("always")
        evaluate_with_and_without_experience(model, n_episodes=1)
    assert not any("inside learn" in str(w.message) for w in caught)
