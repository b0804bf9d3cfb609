"""SB3 habits that must keep working with Complementary RL: VecNormalize, evaluation on the
training bank, checkpoints, advantage normalisation, an exception inside ``learn``."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import warnings

import numpy as np
import pytest
from stable_baselines3 import PPO
from stable_baselines3.common.callbacks import CallbackList
from stable_baselines3.common.evaluation import evaluate_policy as sb3_evaluate_policy
from stable_baselines3.common.vec_env import VecNormalize

from experience_wrappers import ExperienceBank, ExperienceWrapper
from integrations.sb3 import (
    CRLCallback,
    CRLCheckpointCallback,
    evaluate_frozen,
    find_experience,
    load_crl,
    save_crl,
)
from integrations.sb3.evaluation import no_learning
from integrations.sb3.vec_env import norm_obs_keys

from .test_sb3 import FAST, PPO_KW, wrapped_vec


def test_vec_normalize_never_normalises_the_experience_keys():
    venv = VecNormalize(wrapped_vec(2))  # the user's habit: every key normalised
    model = PPO("MultiInputPolicy", venv, **PPO_KW)
    with pytest.warns(UserWarning, match="experience keys"):
        model.learn(256, callback=CRLCallback(guided_ratio=1.0))
    assert venv.norm_obs_keys == ["observation"]
    obs = venv.reset()
    assert set(np.unique(obs["experience_mask"])) <= {0.0, 1.0}
    assert obs["experience_mask"].max() == 1.0  # guided and a non-empty bank: slots are shown as 1
    assert abs(obs["observation"]).max() <= 10.0  # the observation is still normalised (clipped)


def test_norm_obs_keys_gives_a_vec_normalize_that_needs_no_fix():
    venv = wrapped_vec(2)
    assert norm_obs_keys(venv) == ["observation"]
    venv = VecNormalize(venv, norm_obs_keys=norm_obs_keys(venv))
    model = PPO("MultiInputPolicy", venv, **PPO_KW)
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        model.learn(128, callback=CRLCallback())


def test_an_evaluation_env_on_the_training_bank_learns_nothing_by_default():
    bank = ExperienceBank()
    train = wrapped_vec(2, bank)
    mgr = find_experience(train)[0][0]
    model = PPO("MultiInputPolicy", train, **PPO_KW).learn(512, callback=CRLCallback())
    submitted, size = mgr.episodes_submitted, len(bank)
    assert submitted > 0 and size > 0
    evaluation = wrapped_vec(2, bank, seed=7, manager=mgr)  # learn=None: the default
    sb3_evaluate_policy(model, evaluation, n_eval_episodes=6)  # SB3's own helper, untouched
    evaluate_frozen(model, evaluation, n_eval_episodes=4, guided=True)
    assert (mgr.episodes_submitted, len(bank)) == (submitted, size)
    asked = wrapped_vec(1, bank, seed=8, manager=mgr, learn=True)  # learning when asked
    sb3_evaluate_policy(model, asked, n_eval_episodes=2)
    assert mgr.episodes_submitted == submitted + 2


def test_no_learning_freezes_the_training_env_itself_and_restores_it():
    bank = ExperienceBank()
    train = wrapped_vec(2, bank)
    model = PPO("MultiInputPolicy", train, **PPO_KW).learn(256, callback=CRLCallback())
    mgr = find_experience(train)[0][0]
    submitted = mgr.episodes_submitted
    with no_learning(train, guided=False):
        sb3_evaluate_policy(model, train, n_eval_episodes=4)
    assert mgr.episodes_submitted == submitted
    assert all(inj.learning and inj.force_guided is None for inj in find_experience(train)[1])


def test_checkpoints_keep_bank_extractor_manager_and_normalize_advantage(tmp_path):
    bank = ExperienceBank()
    train = wrapped_vec(2, bank)
    model = PPO("MultiInputPolicy", train, **PPO_KW)
    ckpt = CRLCheckpointCallback(save_freq=128, save_path=str(tmp_path), name_prefix="run")  # 128 x 2 envs
    model.learn(512, callback=CallbackList([CRLCallback(), ckpt]))
    assert model.normalize_advantage is True  # the callback gives it back after training
    zips = sorted(tmp_path.glob("run_*_steps.zip"))
    assert [z.name for z in zips] == ["run_256_steps.zip", "run_512_steps.zip"]
    last = tmp_path / "run_512_steps.zip"
    assert (tmp_path / "run_512_steps_experience").is_dir()
    assert PPO.load(last).normalize_advantage is True  # saved as the user configured it
    fresh = wrapped_vec(2, ExperienceBank(), seed=3)
    restored = load_crl(last, fresh)
    mgr = find_experience(fresh)[0][0]
    assert len(mgr.bank) == len(bank)
    assert mgr.rollouts == 3  # saved at the 4th rollout's last step, before its end was counted
    old = find_experience(train)[0][0].extractor.state_dict()
    for name, tensor in mgr.extractor.state_dict().items():
        assert np.allclose(tensor.numpy(), old[name].numpy())
    restored.learn(128, reset_num_timesteps=False, callback=CRLCallback())
    path = save_crl(tmp_path / "final", restored)
    assert PPO.load(path / "model.zip").normalize_advantage is True


def test_load_crl_says_what_is_missing(tmp_path):
    with pytest.raises(FileNotFoundError, match="_experience"):
        load_crl(tmp_path / "nothing_100_steps.zip", wrapped_vec(1))


def test_an_exception_inside_learn_ends_the_process_cleanly():
    script = textwrap.dedent("""
        import gymnasium as gym
        from stable_baselines3 import PPO
        from stable_baselines3.common.callbacks import BaseCallback, CallbackList
        from experience_wrappers import ExperienceBank, ExperienceWrapper
        from integrations.sb3 import CRLCallback

        class Boom(BaseCallback):
            def _on_step(self):
                return True
            def _on_rollout_end(self):
                raise RuntimeError("boom at a rollout end")

        env = ExperienceWrapper(gym.make("CartPole-v1"), ExperienceBank())
        model = PPO("MultiInputPolicy", env, n_steps=128, batch_size=64, n_epochs=1)
        model.learn(2048, callback=CallbackList([CRLCallback(), Boom()]))
    """)
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1, proc.stderr[-2000:]
    assert "boom at a rollout end" in proc.stderr
    assert "terminate called" not in proc.stderr


def test_crl_metrics_say_return_where_the_env_reports_no_success(tmp_path):
    from stable_baselines3.common.logger import configure

    model = PPO("MultiInputPolicy", wrapped_vec(2), **PPO_KW)
    model.set_logger(configure(str(tmp_path), ["csv"]))
    model.learn(512, callback=CRLCallback())
    header = (tmp_path / "progress.csv").read_text().splitlines()[0].split(",")
    assert "crl/guided_return" in header and "crl/free_return" in header
    assert not any(h.endswith("_success") for h in header)  # CartPole reports no success


def test_frame_stacking_below_the_wrapper_works_and_above_it_is_refused():
    import gymnasium as gym
    from gymnasium.wrappers import FrameStackObservation
    from stable_baselines3.common.env_util import make_vec_env
    from stable_baselines3.common.vec_env import VecFrameStack

    from experience_wrappers import ExperienceWrapper
    from integrations.sb3 import ExperienceVecEnv, crl_policy_kwargs

    bank = ExperienceBank()
    env = ExperienceWrapper(FrameStackObservation(gym.make("CartPole-v1"), 4), bank)
    assert env.observation_space["observation"].shape == (4, 4)
    PPO("MultiInputPolicy", env, **{**PPO_KW, "policy_kwargs": crl_policy_kwargs()}).learn(256, callback=CRLCallback())
    assert len(bank) > 0
    stacked_below = ExperienceVecEnv(VecFrameStack(make_vec_env("CartPole-v1", n_envs=2), 4), ExperienceBank())
    PPO("MultiInputPolicy", stacked_below, **PPO_KW).learn(128, callback=CRLCallback())
    model = PPO("MultiInputPolicy", VecFrameStack(wrapped_vec(2), 4), **PPO_KW)
    with pytest.raises(ValueError, match="FrameStackObservation"):
        model.learn(128, callback=CRLCallback())


@pytest.mark.parametrize("above, match", [("stack", r"'experience' with shape \(3, .*FrameStackObservation\(env, n\)"),
                                          ("flatten", r"folded.*ExperienceWrapper\(FlattenObservation\(env\), bank\)")])
def test_gymnasium_wrappers_above_the_wrapper_that_change_the_experience_are_refused(above, match):
    """FrameStackObservation above an ExperienceWrapper stacks the experience keys; FlattenObservation
    folds them into the observation (self-imitation's experience-free view cannot blank them). Each remedy names
    the wrapper found (probe 24: a FlattenObservation was told to put a FrameStackObservation below)."""
    import gymnasium as gym
    from gymnasium.wrappers import FlattenObservation, FrameStackObservation
    from stable_baselines3.common.vec_env import DummyVecEnv

    from experience_wrappers import ExperienceWrapper

    def make() -> gym.Env:
        env = ExperienceWrapper(gym.make("CartPole-v1"), ExperienceBank(), manager_kwargs={"mode": "sync"})
        return FrameStackObservation(env, 3) if above == "stack" else FlattenObservation(env)

    venv = DummyVecEnv([make])
    model = PPO("MultiInputPolicy" if above == "stack" else "MlpPolicy", venv, **PPO_KW)
    with pytest.raises(ValueError, match=match):
        model.learn(128, callback=CRLCallback())
    venv.close()


def test_tensorboard_gets_bank_histograms_and_a_figure(tmp_path):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    model = PPO("MultiInputPolicy", wrapped_vec(2), tensorboard_log=str(tmp_path), **PPO_KW)
    callback = CRLCallback()
    callback.log_bank_every = 2
    model.learn(512, callback=callback)
    (events,) = tmp_path.rglob("events.out.tfevents*")
    acc = EventAccumulator(str(events.parent), size_guidance={"histograms": 0, "images": 0}).Reload()
    assert {"bank/utility", "bank/retrievals", "bank/utility_extracted"} <= set(acc.Tags()["histograms"])
    assert "bank/retrievals_vs_utility" in acc.Tags()["images"]
    assert len(acc.Histograms("bank/utility")) == 2  # rollouts 2 and 4


def test_ppo_advantage_normalisation_is_off_while_training_and_back_after():
    from stable_baselines3.common.callbacks import BaseCallback

    class Seen(BaseCallback):
        def __init__(self):
            super().__init__()
            self.values = []

        def _on_step(self):
            return True

        def _on_rollout_end(self):
            self.values.append(self.model.normalize_advantage)

    seen = Seen()
    model = PPO("MultiInputPolicy", wrapped_vec(2), **PPO_KW)
    model.learn(256, callback=CallbackList([CRLCallback(), seen]))
    assert seen.values == [False, False] and model.normalize_advantage is True


def test_evaluate_policy_on_the_training_env_warns_once_and_no_learning_silences_it():
    sb3_evaluate = sb3_evaluate_policy
    venv = wrapped_vec(2)
    model = PPO("MultiInputPolicy", venv, **PPO_KW)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # training, and training again, never warn
        model.learn(128, callback=CRLCallback())
        model.learn(128, callback=CRLCallback(), reset_num_timesteps=False)
        with no_learning(venv):
            sb3_evaluate(model, venv, n_eval_episodes=2)
    with pytest.warns(UserWarning, match="outside model.learn.*no_learning"):
        sb3_evaluate(model, venv, n_eval_episodes=2)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # once
        sb3_evaluate(model, venv, n_eval_episodes=2)
    venv.close()


def test_a_degenerate_bank_is_named_once_with_the_remedy():
    from experience_wrappers.keys import CallableKeyEncoder

    same_key = CallableKeyEncoder(lambda obs, tasks: np.zeros((len(tasks), 4), np.float32), key_dim=4)
    venv = wrapped_vec(4, key_encoder=same_key)
    model = PPO("MultiInputPolicy", venv, **PPO_KW)
    with pytest.warns(UserWarning, match=r"the bank holds \d entries after \d+ episodes.*key_encoder=") as rec:
        model.learn(6144, callback=CRLCallback(self_imitation=False))  # > 200 short episodes
    assert sum("the bank holds" in str(w.message) for w in rec) == 1
    assert len(find_experience(venv)[0][0].bank) < 8
    venv.close()


class _Codes:
    """MiniGrid's habit: a Box(0, 255) image holding small codes (0-10); the agent's cell moves along a row."""

    def __new__(cls, high: int = 255):
        import gymnasium as gym

        class Codes(gym.Env):
            observation_space = gym.spaces.Box(0, high, (3, 5), np.uint8)
            action_space = gym.spaces.Discrete(2)

            def reset(self, seed=None, options=None):
                super().reset(seed=seed)
                self.pos, self.t = 0, 0
                return self._obs(), {}

            def _obs(self):
                grid = np.ones((3, 5), np.uint8)  # (walls and floor: codes 1, 2, ...)
                grid[1, self.pos] = 10
                return grid

            def step(self, action):
                self.t += 1
                self.pos = min(4, self.pos + 1) if int(action) else max(0, self.pos - 1)
                return self._obs(), 0.0, False, self.t >= 16, {}

        return Codes()


@pytest.mark.parametrize("high", [255, 10])
def test_keys_that_cannot_tell_the_first_episodes_states_apart_are_named_at_once(high):
    """Probe 24: on MiniGrid (codes 0-10 in a Box(0, 255)) the default keys of every state lay within 4e-4 of one
    another, under the dedup threshold, so the bank held 1 entry after 21 episodes; the degenerate-bank warning
    comes after 200 episodes. Bounds the values fill separate the states, and nothing is said."""
    env = ExperienceWrapper(_Codes(high), ExperienceBank(seed=0), manager_kwargs=FAST)
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        env.reset(seed=0)
        for t in range(64):
            if env.step(int(t % 3 != 0))[3]:  # (mostly right: 5 distinct states in an episode)
                env.reset()
    said = [str(w.message) for w in rec if "different observations of the first episode" in str(w.message)]
    if high == 255:
        assert len(said) == 1 and "declare the bounds the values take" in said[0]  # once, at the first episode
    else:
        assert said == [] and len(env.bank) > 1
    env.close()


def test_a_healthy_bank_is_not_called_degenerate():
    venv = wrapped_vec(4)
    model = PPO("MultiInputPolicy", venv, **PPO_KW)
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        model.learn(6144, callback=CRLCallback(self_imitation=False))
    assert len(find_experience(venv)[0][0].bank) >= 8
    venv.close()


def test_a_model_resumed_without_its_experience_is_named(tmp_path):
    venv = wrapped_vec(2)
    model = PPO("MultiInputPolicy", venv, **PPO_KW)
    model.learn(128, callback=CRLCallback(self_imitation=False))
    model.save(tmp_path / "plain.zip")  # SB3's own save: the model only
    fresh = wrapped_vec(2)
    loaded = PPO.load(tmp_path / "plain.zip", env=fresh)
    with pytest.warns(UserWarning, match="bank is empty: was it loaded with PPO.load.*load_crl"):
        loaded.learn(64, callback=CRLCallback(self_imitation=False), reset_num_timesteps=False)
    save_crl(tmp_path / "crl", model)  # the CRL-aware way: no warning
    again = wrapped_vec(2)
    back = load_crl(tmp_path / "crl", again)
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        back.learn(64, callback=CRLCallback(self_imitation=False), reset_num_timesteps=False)
    for v in (venv, fresh, again):
        v.close()


def test_training_in_chunks_before_an_episode_ends_is_not_taken_for_a_reload():
    """Pendulum's 200-step episodes: a second learn(64) on the same env warned "loaded with PPO.load?"."""
    from stable_baselines3.common.env_util import make_vec_env

    venv = make_vec_env("Pendulum-v1", n_envs=1, seed=0, wrapper_class=ExperienceWrapper,
                        wrapper_kwargs={"bank": ExperienceBank(), "manager_kwargs": FAST})
    model = PPO("MultiInputPolicy", venv, **PPO_KW)
    model.learn(64, callback=CRLCallback(self_imitation=False))
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        model.learn(64, callback=CRLCallback(self_imitation=False), reset_num_timesteps=False)
    assert len(find_experience(venv)[0][0].bank) == 0  # no episode ended: the case the warning looked at
    venv.close()


def test_predict_on_the_envs_own_observation_says_how_to_restore_the_experience(tmp_path):
    from integrations.sb3 import ExperiencePolicy

    venv = wrapped_vec(2)
    model = PPO(ExperiencePolicy, venv, **PPO_KW)
    model.save(tmp_path / "model")
    loaded = PPO.load(tmp_path / "model")  # SB3's habit: the model alone, no env, no bank
    raw = venv.envs[0].unwrapped.observation_space.sample()
    with pytest.raises(ValueError, match=r"own observation.*load_crl\(folder, env\)"):
        loaded.predict(raw)
    with pytest.raises(ValueError, match=r"without the keys \['experience', 'experience_mask'"):
        loaded.predict({"observation": raw})
    action, _ = loaded.predict(venv.reset())  # the wrapped observation still works, batched
    assert action.shape == (2,)


def test_sb3s_own_multi_input_policy_gives_an_index_error_which_is_why_the_method_uses_its_own():
    venv = wrapped_vec(1)
    plain = PPO("MultiInputPolicy", venv, **PPO_KW)
    with pytest.raises(IndexError):  # SB3's message says nothing of the experience
        plain.predict(venv.envs[0].unwrapped.observation_space.sample())


def test_closing_the_envs_stops_the_learner_process_their_wrappers_built_and_leaves_a_users_manager_open():
    """``venv.close()`` left each run's learner process running (about 320 MB each in a sweep) until the
    env was garbage-collected; now the last wrapper on a bank closes the manager the wrappers built."""
    import multiprocessing

    from stable_baselines3.common.env_util import make_vec_env

    from experience_wrappers import ExperienceManager, ManagerConfig
    from integrations.sb3 import ExperienceVecEnv

    def learners() -> set[int]:
        return {p.pid for p in multiprocessing.active_children()}

    before = learners()
    bank = ExperienceBank()
    venv = ExperienceVecEnv(make_vec_env("CartPole-v1", n_envs=2), bank, manager_kwargs={"mode": "process"})
    per_env = make_vec_env("CartPole-v1", n_envs=2, wrapper_class=ExperienceWrapper, wrapper_kwargs={"bank": bank})
    manager = find_experience(venv)[0][0]
    PPO("MultiInputPolicy", venv, **PPO_KW).learn(128, callback=CRLCallback())
    assert manager.holders == 3 and learners() - before and len(bank) > 0
    venv.close()
    assert bank.manager is manager and learners() - before  # the per-env wrappers still use it
    per_env.close()
    per_env.close()  # twice: nothing more to let go
    assert bank.manager is None and not learners() - before and len(bank) > 0  # the entries stay

    plain = make_vec_env("CartPole-v1", n_envs=1)
    mine = ExperienceManager(bank, plain.observation_space, plain.action_space, config=ManagerConfig(mode="sync"))
    given = make_vec_env("CartPole-v1", n_envs=1, wrapper_class=ExperienceWrapper, wrapper_kwargs={"bank": bank})
    assert find_experience(given)[0][0] is mine
    given.close()
    assert bank.manager is mine  # the user's: left to the user
    mine.close()


def test_a_learn_given_no_crl_callback_after_one_that_had_it_is_said():
    """Probe 19: the warning said "outside model.learn()" for episodes of a learn() given no CRLCallback."""
    venv = wrapped_vec(2)
    model = PPO("MultiInputPolicy", venv, **PPO_KW)
    model.learn(128, callback=CRLCallback())
    with pytest.warns(UserWarning, match=r"or in a learn\(\) given no CRLCallback \(give callback=CRLCallback\(\)"):
        model.learn(256, reset_num_timesteps=False)
    venv.close()
