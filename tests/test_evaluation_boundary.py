"""Evaluation, roll-in, replay and checkpoints at the boundary (a hostile user's cases): what an
evaluation reports is what it says (roll-in off, the env's own returns, successes reported only on
success counted right, masks used), evaluation changes nothing it should not, and bad input or a
wrong order is refused where it is given."""

from __future__ import annotations

import warnings

import gymnasium as gym
import numpy as np
import pytest
from gymnasium import spaces
from stable_baselines3 import A2C, PPO
from stable_baselines3.common.callbacks import CallbackList
from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.vec_env import DummyVecEnv, VecEnvWrapper, VecMonitor, VecNormalize

from experience_wrappers import ExperienceBank, ExperienceManager, ExperienceWrapper, ManagerConfig
from experience_wrappers.keys import KeyEncoder
from experience_wrappers.manager import Episode
from experience_wrappers.replay import SOURCE_DEMO, SuccessReplay
from experience_wrappers.rollin import BankGuide, ReplayGuide, RollInCurriculum
from integrations.demos import ingest_demonstrations
from integrations.sb3 import (
    CRLCallback,
    CRLCheckpointCallback,
    ExperienceEvalCallback,
    ExperiencePolicy,
    GuidedRollInVecEnv,
    RollInCallback,
    crl_policy_kwargs,
    evaluate_frozen,
    evaluate_with_and_without_experience,
    find_experience,
    load_crl,
)
from integrations.sb3.evaluation import run_episodes

SYNC = {"mode": "sync"}
PPO_KW = {"n_steps": 32, "batch_size": 64, "n_epochs": 1, "seed": 0}


def frozen_lake() -> gym.Env:
    return gym.make("FrozenLake-v1", is_slippery=False)


def cartpole_vec(n: int = 2, bank: ExperienceBank | None = None):
    return make_vec_env("CartPole-v1", n_envs=n, wrapper_class=ExperienceWrapper,
                        wrapper_kwargs={"bank": bank or ExperienceBank(), "manager_kwargs": SYNC})


def rollin_model():
    """PPO on FrozenLake behind a roll-in env whose guide replays one demonstration (6 steps, return 1)."""
    bank = ExperienceBank()
    base = make_vec_env(frozen_lake, n_envs=2, wrapper_class=ExperienceWrapper,
                        wrapper_kwargs={"bank": bank, "manager_kwargs": SYNC})
    manager = find_experience(base)[0][0]
    ingest_demonstrations(manager, {"obs": [0, 4, 8, 9, 10, 14], "acts": [1, 1, 2, 2, 1, 2],
                                    "rews": [0, 0, 0, 0, 0, 1]}, segment_every=1)
    curriculum = RollInCurriculum(h=6, threshold=0.5, window=4)
    venv = GuidedRollInVecEnv(base, BankGuide(manager), curriculum, seed=0)
    return PPO(ExperiencePolicy, venv, policy_kwargs=crl_policy_kwargs(), **PPO_KW), venv, curriculum


class GuideSteps(VecEnvWrapper):
    """Counts the steps a roll-in guide acted (``info["rollin"]``) below it."""

    def __init__(self, venv) -> None:
        super().__init__(venv)
        self.guided = 0

    def reset(self):
        return self.venv.reset()

    def step_wait(self):
        obs, rewards, dones, infos = self.venv.step_wait()
        self.guided += sum(bool(info.get("rollin")) for info in infos)
        return obs, rewards, dones, infos


def test_evaluation_switches_the_roll_in_off_and_feeds_its_curriculum_nothing():
    model, venv, curriculum = rollin_model()
    seen = GuideSteps(venv)
    run_episodes(model, seen, 4, seed=0)  # a bare loop: the roll-in is on and the guide acts
    assert seen.guided > 0 and venv.pop_finished()
    seen.guided, h = 0, curriculum.h
    evaluate_with_and_without_experience(model, seen, n_episodes=6, seed=0)
    evaluate_frozen(model, seen, n_eval_episodes=4, guided=True)
    assert seen.guided == 0  # the policy acted at every step
    assert venv.pop_finished() == [] and curriculum.h == h and venv.enabled  # (on again after)


class SuccessOnlyWhenSucceeding(gym.Env):
    """Reports ``is_success`` on successes only (a common pattern); every third episode succeeds."""

    observation_space, action_space = spaces.Box(-1, 1, (2,), np.float32), spaces.Discrete(2)

    def __init__(self) -> None:
        self.episodes = 0

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.t, self.episodes = 0, self.episodes + 1
        return np.zeros(2, np.float32), {}

    def step(self, action):
        self.t += 1
        done = self.t >= 3
        win = done and self.episodes % 3 == 0
        return np.zeros(2, np.float32), float(win), done, False, ({"is_success": True} if win else {})


def test_an_env_that_reports_success_only_on_success_has_its_other_episodes_counted_as_failures():
    venv = DummyVecEnv([lambda: ExperienceWrapper(SuccessOnlyWhenSucceeding(), ExperienceBank(),
                                                  manager_kwargs=SYNC)])
    model = PPO(ExperiencePolicy, venv, policy_kwargs=crl_policy_kwargs(), **PPO_KW)
    res = evaluate_with_and_without_experience(model, n_episodes=9)
    for stats in res.values():
        assert stats["success"] == pytest.approx(stats["return"])  # the return is the success here
        assert stats["success"] < 1.0


def test_evaluation_under_vec_normalize_reports_the_envs_returns_and_keeps_its_statistics():
    train = VecNormalize(cartpole_vec(), norm_obs_keys=["observation"])
    model = PPO(ExperiencePolicy, train, policy_kwargs=crl_policy_kwargs(), **PPO_KW)
    model.learn(64, callback=CRLCallback())
    count, ret_count = train.obs_rms["observation"].count, train.ret_rms.count
    res = evaluate_with_and_without_experience(model, n_episodes=4, seed=0)
    for stats in res.values():  # CartPole pays 1 a step: the return is the length
        assert stats["return"] == pytest.approx(stats["length"])
    evaluate_frozen(model, train, n_eval_episodes=2)
    assert train.obs_rms["observation"].count == count and train.ret_rms.count == ret_count
    assert train.training  # restored


def test_evaluation_refuses_a_str_for_deterministic_and_a_model_of_other_spaces():
    venv = cartpole_vec()
    model = PPO(ExperiencePolicy, venv, policy_kwargs=crl_policy_kwargs(), **PPO_KW)
    with pytest.raises(TypeError, match="deterministic must be a bool, got 'no'"):
        evaluate_with_and_without_experience(model, n_episodes=2, deterministic="no")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="deterministic must be a bool"):
        ExperienceEvalCallback(cartpole_vec(), deterministic="false")  # type: ignore[arg-type]
    assert ExperienceEvalCallback(cartpole_vec(), eval_freq=np.int64(64)).eval_freq == 64
    lake = make_vec_env(frozen_lake, n_envs=1, wrapper_class=ExperienceWrapper,
                        wrapper_kwargs={"bank": ExperienceBank(), "manager_kwargs": SYNC})
    with pytest.raises(ValueError, match="Observation spaces do not match"):
        evaluate_with_and_without_experience(model, lake, n_episodes=2)
    with pytest.raises(ValueError, match="Observation spaces do not match"):
        evaluate_frozen(model, lake, n_eval_episodes=2)


def test_evaluate_frozen_uses_the_action_masks_of_a_maskable_model():
    sb3_contrib = pytest.importorskip("sb3_contrib")

    class Masked(gym.Env):
        """Action 0 is masked out; taking it ends the episode with -1, the others with +1."""
        observation_space, action_space = spaces.Box(-1, 1, (2,), np.float32), spaces.Discrete(3)

        def action_masks(self):
            return np.array([False, True, True])

        def reset(self, *, seed=None, options=None):
            super().reset(seed=seed)
            return np.zeros(2, np.float32), {}

        def step(self, action):
            return np.zeros(2, np.float32), (-1.0 if int(action) == 0 else 1.0), True, False, {}

    venv = make_vec_env(Masked, n_envs=2, wrapper_class=ExperienceWrapper,
                        wrapper_kwargs={"bank": ExperienceBank(), "manager_kwargs": SYNC})
    model = sb3_contrib.MaskablePPO("MultiInputPolicy", venv, **PPO_KW)
    rewards, _ = evaluate_frozen(model, venv, n_eval_episodes=20, deterministic=False, return_episode_rewards=True)
    assert min(rewards) == 1.0


def test_an_evaluation_env_that_wraps_the_training_env_is_refused():
    train = cartpole_vec()
    model = PPO(ExperiencePolicy, train, policy_kwargs=crl_policy_kwargs(), **PPO_KW)
    callback = ExperienceEvalCallback(VecMonitor(train), eval_freq=32, n_eval_episodes=2)
    with pytest.raises(ValueError, match="nor a wrapper of it"):
        model.learn(64, callback=CallbackList([CRLCallback(), callback]))


def test_an_evaluation_episode_that_never_ends_is_said():
    class Counting(SuccessOnlyWhenSucceeding):
        """Ends after 10,050 steps (an env without a time limit, cut short for the test)."""

        def step(self, action):
            self.t += 1
            return np.zeros(2, np.float32), 0.0, self.t >= 10_050, False, {}

    venv = DummyVecEnv([lambda: ExperienceWrapper(Counting(), ExperienceBank(), manager_kwargs=SYNC)])
    model = PPO(ExperiencePolicy, venv, policy_kwargs=crl_policy_kwargs(), **PPO_KW)
    with pytest.warns(UserWarning, match="evaluation episode has run 10,000 steps without ending"):
        evaluate_with_and_without_experience(model, n_episodes=1)


def test_the_callbacks_in_the_wrong_order_are_refused():
    model, _, _ = rollin_model()
    with pytest.raises(ValueError, match="CRLCallback comes after RollInCallback"):
        model.learn(32, callback=CallbackList([RollInCallback(), CRLCallback()]))
    model.learn(64, callback=CallbackList([CRLCallback(), RollInCallback()]))  # the right order trains


def test_a_replay_guide_with_actions_outside_the_space_is_refused_at_construction():
    bank = ExperienceBank()
    base = make_vec_env(frozen_lake, n_envs=1, wrapper_class=ExperienceWrapper,
                        wrapper_kwargs={"bank": bank, "manager_kwargs": SYNC})
    with pytest.raises(ValueError, match=r"demonstration 0 \(instance seed 3\) has action 7 at step 1"):
        GuidedRollInVecEnv(base, ReplayGuide([3], [[1, 7]]), RollInCurriculum(h=2), instance_seeds=[3])


def test_the_replay_widens_its_storage_rather_than_cut_a_value_and_keeps_dotted_names(tmp_path):
    replay = SuccessReplay(capacity=10)
    replay.add_episode({"pos": np.array([[0], [1]], dtype=np.int64)}, np.array([0, 1]), np.array([0.0, 1.0]),
                       gamma=0.9, source=SOURCE_DEMO)
    replay.add_episode({"pos": np.array([[0.25], [0.5]], dtype=np.float32)}, np.array([1, 1]),
                       np.array([0.0, 1.0]), gamma=0.9)
    narrow = SuccessReplay(capacity=4)
    narrow.add_episode({"x": np.array([[1]], np.int8)}, np.array([0]), np.array([1.0]), gamma=0.9)
    narrow.add_episode({"x": np.array([[300]], np.int64)}, np.array([0]), np.array([1.0]), gamma=0.9)
    obs, _, _ = replay.batch(replay.indices())
    assert obs["pos"].ravel().tolist() == [0.0, 1.0, 0.25, 0.5]
    assert narrow.batch(narrow.indices())[0]["x"].ravel().tolist() == [1, 300]
    a, b = replay.save(tmp_path / "replay_lr0.001"), narrow.save(tmp_path / "replay_lr0.003")
    assert a.name == "replay_lr0.001.npz" and b.name == "replay_lr0.003.npz"
    assert len(SuccessReplay.load(tmp_path / "replay_lr0.001")) == 4
    with pytest.raises(ValueError, match="gamma must be a finite number in"):
        replay.add_episode({"pos": np.zeros((1, 1))}, np.array([0]), np.array([1.0]), gamma="0.9")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="source must be SOURCE_DEMO"):
        replay.add_episode({"pos": np.zeros((1, 1))}, np.array([0]), np.array([1.0]), gamma=0.9, source=True)


class _NoWidth(KeyEncoder):
    def encode(self, obs_batch, task_ids):
        return np.zeros((len(task_ids), 2), np.float32)


class _Tiny(KeyEncoder):
    """Keys 1,000 times smaller than unit rows: every entry would fold into one."""
    key_dim = 4

    def encode(self, obs_batch, task_ids):
        x = np.asarray(obs_batch, np.float32).reshape(len(task_ids), -1)
        return 1e-3 * x / np.maximum(np.linalg.norm(x, axis=1, keepdims=True), 1e-9)


def test_a_key_encoder_of_the_users_is_checked_where_it_is_given_and_its_scale_said():
    space, actions = spaces.Box(-1, 1, (4,), np.float32), spaces.Discrete(2)
    with pytest.raises(TypeError, match="_NoWidth.key_dim is not set"):
        ExperienceManager(ExperienceBank(), space, actions, key_encoder=_NoWidth())
    with pytest.raises(TypeError, match=r"key_encoder=_Tiny \(a class\) is built as _Tiny\(observation_space\), which failed"):
        ExperienceManager(ExperienceBank(), space, actions, key_encoder=_Tiny)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="got a function"):
        ExperienceManager(ExperienceBank(), space, actions, key_encoder=lambda o, t: o)  # type: ignore[arg-type]
    floaty = _Tiny()
    floaty.key_dim = 4.0  # type: ignore[assignment]
    with pytest.raises(TypeError, match=r"_Tiny.key_dim must be an int, got 4.0"):
        ExperienceManager(ExperienceBank(), space, actions, key_encoder=floaty)
    numpy_width = _Tiny()
    numpy_width.key_dim = np.int64(4)  # type: ignore[assignment]
    ExperienceManager(ExperienceBank(), space, actions, key_encoder=numpy_width)
    assert type(numpy_width.key_dim) is int
    manager = ExperienceManager(ExperienceBank(), space, actions, key_encoder=_Tiny(), config=ManagerConfig(mode="sync"))
    rng = np.random.default_rng(0)
    ep = Episode(observations=rng.uniform(-1, 1, (6, 4)).astype(np.float32), actions=np.zeros(6, np.int64),
                 rewards=np.ones(6), success=True, guided=False)
    with pytest.warns(UserWarning, match="keys of median norm 0.001"):
        manager.submit(ep)
        manager.flush()
    manager.close()


def test_a_checkpoint_callback_without_one_bank_is_refused_when_learn_starts(tmp_path):
    plain = make_vec_env("CartPole-v1", n_envs=1)
    model = PPO("MlpPolicy", plain, **PPO_KW)
    with pytest.raises(ValueError, match="no experience wrapper found"):
        model.learn(32, callback=CRLCheckpointCallback(save_freq=10_000, save_path=str(tmp_path)))
    two = DummyVecEnv([lambda: ExperienceWrapper(gym.make("CartPole-v1"), ExperienceBank(), manager_kwargs=SYNC)
                       for _ in range(2)])
    with pytest.raises(ValueError, match="CRLCheckpointCallback supports one manager per env, found 2"):
        PPO(ExperiencePolicy, two, policy_kwargs=crl_policy_kwargs(), **PPO_KW).learn(
            32, callback=CRLCheckpointCallback(save_freq=10_000, save_path=str(tmp_path)))


def test_a_checkpoint_zip_is_refused_as_another_algorithm(tmp_path):
    venv = cartpole_vec(1)
    model = PPO(ExperiencePolicy, venv, policy_kwargs=crl_policy_kwargs(), **PPO_KW)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model.learn(32, callback=CallbackList([CRLCallback(), CRLCheckpointCallback(save_freq=32, save_path=str(tmp_path))]))
    zips = sorted(tmp_path.glob("*_steps.zip"))
    assert zips and (tmp_path / (zips[0].stem + "_meta.json")).is_file()
    with pytest.raises(ValueError, match="it was saved by PPO"):
        load_crl(zips[0], cartpole_vec(1), algorithm=A2C)
    assert isinstance(load_crl(zips[0], cartpole_vec(1)), PPO)


# ------------------------------------------------------------------ issue 35's own-envs probe
class ImagePosEnv(gym.Env):
    """A channel-last image (SB3 wraps it in VecTransposeImage) beside a position far from 0."""

    def __init__(self, dict_obs: bool = True) -> None:
        image = spaces.Box(0, 255, (36, 36, 3), np.uint8)
        self.dict_obs = dict_obs
        self.observation_space = spaces.Dict({"img": image, "pos": spaces.Box(0.0, 100.0, (2,), np.float32)}) \
            if dict_obs else image
        self.action_space = spaces.Box(-1.0, 1.0, (2,), np.float32)
        self.t = 0

    def _obs(self):
        img = np.full((36, 36, 3), 10 * self.t % 255, np.uint8)
        return {"img": img, "pos": np.array([90.0, 80.0 + self.t], np.float32)} if self.dict_obs else img

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.t = 0
        return self._obs(), {}

    def step(self, action):
        self.t += 1
        return self._obs(), float(self.t), False, self.t >= 5, {"is_success": self.t >= 5}


@pytest.mark.parametrize("dict_obs", [True, False])
def test_a_channel_last_image_env_is_evaluated_as_the_model_sees_it(dict_obs):
    # SB3 trains on VecTransposeImage(env); the evaluations compared the model's channel-first space with
    # the env's channel-last one and refused the model they had just trained
    bank = ExperienceBank()
    venv = make_vec_env(lambda: ImagePosEnv(dict_obs), n_envs=1, wrapper_class=ExperienceWrapper,
                        wrapper_kwargs={"bank": bank, "manager_kwargs": SYNC})
    eval_env = make_vec_env(lambda: ImagePosEnv(dict_obs), n_envs=1, wrapper_class=ExperienceWrapper,
                            wrapper_kwargs={"bank": bank, "learn": False, "manager": find_experience(venv)[0][0]})
    model = PPO("MultiInputPolicy", venv, **{**PPO_KW, "batch_size": 32})
    model.learn(32, callback=CallbackList([CRLCallback(), ExperienceEvalCallback(eval_env, eval_freq=16,
                                                                                 n_eval_episodes=1)]))
    assert evaluate_with_and_without_experience(model, eval_env, n_episodes=1)["with_experience"]["episodes"] == 1
    assert evaluate_frozen(model, eval_env, n_eval_episodes=1)[0] == pytest.approx(15.0)
    wrong = make_vec_env(lambda: ImagePosEnv(not dict_obs), n_envs=1, wrapper_class=ExperienceWrapper,
                         wrapper_kwargs={"bank": ExperienceBank()})
    with pytest.raises(ValueError, match="Observation spaces do not match"):
        evaluate_frozen(model, wrong, n_eval_episodes=1)


def test_frozen_predict_normalises_under_sb3s_image_transpose():
    # a VecNormalize under SB3's VecTransposeImage: run scope's evaluation predicted on raw observations
    from integrations.sb3.trials_evaluation import frozen_predict

    venv = VecNormalize(DummyVecEnv([ImagePosEnv]), norm_obs_keys=["pos"])
    model = PPO("MultiInputPolicy", venv, **{**PPO_KW, "batch_size": 32})
    model.learn(64)
    assert type(model.get_env()).__name__ == "VecTransposeImage"
    obs, _ = ImagePosEnv().reset()
    batch = {key: value[None] for key, value in obs.items()}
    normalize = model.get_env().venv
    with frozen_predict(model) as predict:
        action, _ = predict(batch, deterministic=True)
        assert not normalize.training
    assert normalize.training
    want, _ = model.predict(normalize.normalize_obs(batch), deterministic=True)
    raw, _ = model.predict(batch, deterministic=True)
    np.testing.assert_array_equal(action, want)
    assert not np.array_equal(action, raw)


@pytest.mark.parametrize("space, match", [
    (spaces.Discrete(5, start=-2), r"Discrete\(5, start=-2\), but SB3's policies one-hot encode"),
    (spaces.MultiDiscrete([3, 3], start=[1, 1]), r"MultiDiscrete.*one-hot encode"),
    (spaces.Box(0.0, 1.0, ()), r"0-d Box"),
    (spaces.Box(0.0, 1.0, (0,)), r"a Box of no values"),
    (spaces.Dict({"a": spaces.Box(0.0, 1.0, (2, 0)), "b": spaces.Discrete(2)}), r"key 'a' is a Box of no values"),
    (spaces.Dict({"pos": spaces.Discrete(4, start=1)}), r"observation Dict's key 'pos' is Discrete\(4, start=1\)"),
])
def test_observations_sb3_cannot_preprocess_are_refused_at_the_wrapper(space, match):
    class Env(gym.Env):
        observation_space, action_space = space, spaces.Discrete(2)

        def reset(self, *, seed=None, options=None):
            return self.observation_space.sample(), {}

        def step(self, action):
            return self.observation_space.sample(), 0.0, True, False, {}

    with pytest.raises(ValueError, match=match):
        ExperienceWrapper(Env(), ExperienceBank())


class Pattern(gym.Env):
    """Three steps, a reward of 1 each; success (reported on successes only) for the actions 1, 0, 1 while the
    class allows it (in training: a random policy finds it; in the evaluations below: never)."""

    observation_space = spaces.Box(0, 1, (3,), np.float32)
    action_space = spaces.Discrete(2)
    allowed = True

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.acts: list[int] = []
        return np.eye(3, dtype=np.float32)[0], {}

    def step(self, action):
        self.acts.append(int(action))
        done = len(self.acts) == 3
        won = done and self.acts == [1, 0, 1] and type(self).allowed
        return np.eye(3, dtype=np.float32)[min(len(self.acts), 2)], 1.0, done, False, ({"is_success": True} if won
                                                                                       else {})


@pytest.mark.parametrize("experience", [True, False])
def test_an_evaluation_reads_an_episode_without_the_success_key_as_a_failure_once_training_saw_one(
        tmp_path, experience) -> None:
    """An env that reports success on successes only: its evaluated episodes that end without the key are failures
    (success 0, outcome 0), not unknown (success NaN, outcome the return, 3 here: a condition that never succeeds
    would outscore one that does), as training read them; and so in a loaded run, which has seen no episode yet."""
    from integrations.sb3 import ComplementaryRL

    Pattern.allowed = True
    run = ComplementaryRL(Pattern, n_envs=1, seed=0, experience=experience, self_imitation=False,
                          algorithm_kwargs={"n_steps": 64, "batch_size": 64})
    run.learn(192)
    assert any(run.model.ep_success_buffer)
    run.save(tmp_path / "r")
    back = ComplementaryRL.load(tmp_path / "r", env=Pattern)
    try:
        Pattern.allowed = False
        for r in (run, back):
            for res in r.evaluate(4, seed=0).values():
                assert (res["success"], res["outcome"], res["return"]) == (0.0, 0.0, 3.0)
    finally:
        Pattern.allowed = True
        run.close()
        back.close()


def test_complementary_rl_evaluate_leaves_the_banks_retrieval_counters_as_they_were() -> None:
    """``run.evaluate()`` resets its envs after the evaluation and drops that reset (the next learn() starts them
    again), but the reset's retrievals were counted: each evaluation raised ``n_retrieved`` and the bank's query
    count, which utility sampling and ``utilisation`` read, with entries no episode was shown."""
    from integrations.sb3 import ComplementaryRL

    run = ComplementaryRL("CartPole-v1", n_envs=2, seed=0, self_imitation=False, manager_kwargs=SYNC,
                          algorithm_kwargs={"n_steps": 64, "batch_size": 64, "n_epochs": 1},
                          policy_kwargs={"net_arch": [8]})
    run.learn(256)
    assert len(run.bank) > 0

    def counters():
        got = run.bank.entries()
        return got["n_retrieved"].tolist(), got["last_retrieved"].tolist(), run.bank.stats()["queries"]

    before = counters()
    for seed in (0, 1, 2):
        run.evaluate(2, seed=seed)
        assert counters() == before
    with pytest.raises(TypeError, match="resume"):
        evaluate_with_and_without_experience(run.model, n_episodes=2, resume="no")
    run.learn(128)  # training counts again
    assert counters() != before
    run.close()


class _OwnReturns(gym.Wrapper):
    """Records each episode's return as the env gave it (below gymnasium's NormalizeReward)."""

    returns: list[float] = []

    def reset(self, **kwargs):
        self.total = 0.0
        return self.env.reset(**kwargs)

    def step(self, action):
        obs, reward, terminated, truncated, info = self.env.step(action)
        self.total += float(reward)
        if terminated or truncated:
            type(self).returns.append(self.total)
        return obs, reward, terminated, truncated, info


def test_an_evaluation_reports_the_envs_own_returns_and_freezes_gymnasiums_normalisers():
    """Probe 24: under gymnasium's NormalizeReward (above the wrapper) and NormalizeObservation (below it) the
    evaluation reported normalised returns (-47.8 and -6.7 for two conditions that ran the same episodes) and
    moved both wrappers' statistics, which SB3's VecNormalize keeps; and the keys' drift went unsaid."""
    from gymnasium.wrappers import NormalizeObservation, NormalizeReward

    from integrations.sb3 import evaluate_with_and_without_experience

    _OwnReturns.returns = []
    with pytest.warns(UserWarning, match="a NormalizeObservation below it keeps updating its statistics"):
        env = NormalizeReward(_OwnReturns(ExperienceWrapper(
            gym.wrappers.TimeLimit(NormalizeObservation(gym.make("Pendulum-v1").unwrapped), 50), ExperienceBank(seed=0),
            learn=False, manager_kwargs={"mode": "sync"})))
    venv = DummyVecEnv([lambda: env])
    model = PPO("MultiInputPolicy", venv, n_steps=64, batch_size=64, seed=0, policy_kwargs={"net_arch": [8]})
    model.learn(128)  # (the statistics move while training)
    inner = env.env.env.env.env
    assert isinstance(inner, NormalizeObservation)
    before = (float(np.asarray(env.return_rms.var).ravel()[0]), float(inner.obs_rms.count))
    _OwnReturns.returns = []
    res = evaluate_with_and_without_experience(model, n_episodes=2, seed=0, resume=False)
    assert (float(np.asarray(env.return_rms.var).ravel()[0]), float(inner.obs_rms.count)) == before
    own = _OwnReturns.returns
    assert len(own) == 4  # two with, two without: the same seeded episodes (an empty bank that learns nothing)
    assert res["with_experience"]["return"] == pytest.approx(np.mean(own[:2]), rel=1e-5)
    assert res["without_experience"]["return"] == pytest.approx(np.mean(own[2:]), rel=1e-5)
    # and the evaluations that step the env outside no_learning (run_episodes itself: ComplementaryRL.evaluate's
    # experience-free one, the eval callback's), which the review found neither freezing nor rescaling
    _OwnReturns.returns = []
    alone = run_episodes(model, venv, 2, seed=0)
    assert (float(np.asarray(env.return_rms.var).ravel()[0]), float(inner.obs_rms.count)) == before
    assert alone["return"] == pytest.approx(np.mean(_OwnReturns.returns), rel=1e-5)
    venv.close()
