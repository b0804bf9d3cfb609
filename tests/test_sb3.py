"""Stable-Baselines3 integration: advantages, callback, VecEnv wrapper, policy pieces, persistence."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
import torch as th
from stable_baselines3 import PPO
from stable_baselines3.common.callbacks import BaseCallback, CallbackList
from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.utils import obs_as_tensor
from stable_baselines3.common.vec_env import DummyVecEnv, SubprocVecEnv

from experience_wrappers import ExperienceBank, ExperienceOptions, ExperienceWrapper
from experience_wrappers.advantages import regroup_advantages
from integrations.sb3 import (
    CRLCallback,
    ExperienceVecEnv,
    crl_policy_kwargs,
    evaluate_with_and_without_experience,
    find_experience,
    load_crl,
    save_crl,
)
from integrations.sb3.experience_features import ExperienceFeaturesExtractor

FAST = {"mode": "sync", "batch_size": 16, "ssl_batch_size": 16}
PPO_KW = {"n_steps": 64, "batch_size": 64, "n_epochs": 1, "seed": 0, "device": "cpu",
          "policy_kwargs": {"net_arch": [32, 32]}}


def wrapped_vec(n_envs: int = 4, bank: ExperienceBank | None = None, seed: int = 0, **wrapper_kwargs):
    kwargs = {"bank": bank if bank is not None else ExperienceBank(), "manager_kwargs": FAST}
    kwargs.update(wrapper_kwargs)
    return make_vec_env("CartPole-v1", n_envs=n_envs, seed=seed, wrapper_class=ExperienceWrapper,
                        wrapper_kwargs=kwargs)


class RecordLogs(BaseCallback):
    """Copies the logger's values at each rollout's end (after CRLCallback recorded them)."""

    def __init__(self) -> None:
        super().__init__()
        self.records: list[dict] = []

    def _on_step(self) -> bool:
        return True

    def _on_rollout_end(self) -> None:
        self.records.append(dict(self.model.logger.name_to_value))


# --------------------------------------------------------- regroup_advantages
def _check_normalised(out: np.ndarray, sel: np.ndarray, tol: float = 1e-9) -> None:
    assert out[sel].mean() == pytest.approx(0.0, abs=tol)
    assert out[sel].std() == pytest.approx(1.0, abs=max(tol, 1e-6))


def test_each_subgroup_gets_mean_0_std_1(rng):
    adv = rng.normal(size=(32, 4)) * 3 + 2
    guided = rng.random((32, 4)) < 0.4
    adv[guided] += 10.0  # guided episodes do better: one shared normalisation would penalise free ones
    out = regroup_advantages(adv, guided)
    assert out.shape == adv.shape
    _check_normalised(out, guided)
    _check_normalised(out, ~guided)
    # order within a subgroup is kept
    g = np.flatnonzero(guided.ravel())
    assert np.array_equal(np.argsort(adv.ravel()[g]), np.argsort(out.ravel()[g]))


def test_one_subgroup_empty(rng):
    adv = rng.normal(size=(16, 2)) + 5
    for guided in (np.zeros((16, 2), bool), np.ones((16, 2), bool)):
        out = regroup_advantages(adv, guided)
        _check_normalised(out, np.ones_like(guided))
        np.testing.assert_allclose(out, (adv - adv.mean()) / adv.std(), atol=1e-6)


def test_a_single_sample_subgroup_uses_the_whole_batch_statistics(rng):
    adv = rng.normal(size=(8, 2))
    guided = np.zeros((8, 2), bool)
    guided[3, 1] = True
    out = regroup_advantages(adv, guided)
    assert np.all(np.isfinite(out))
    # documented fallback: the lone guided sample is normalised with the whole batch's mean / std
    assert out[3, 1] == pytest.approx((adv[3, 1] - adv.mean()) / adv.std(), rel=1e-6)
    _check_normalised(out, ~guided)


def test_all_constant_advantages_are_only_centred():
    adv = np.full((10, 3), 2.5)
    guided = np.zeros((10, 3), bool)
    guided[:4] = True
    out = regroup_advantages(adv, guided)
    assert np.all(np.isfinite(out))
    np.testing.assert_array_equal(out, 0.0)
    # a constant subgroup next to a varying one: centred, not blown up
    adv2 = np.where(guided, 7.0, np.arange(30.0).reshape(10, 3))
    out2 = regroup_advantages(adv2, guided)
    np.testing.assert_array_equal(out2[guided], 0.0)
    _check_normalised(out2, ~guided)


def test_a_single_sample_batch_is_finite():
    out = regroup_advantages(np.array([[3.0]]), np.array([[True]]))
    assert out.tolist() == [[0.0]]


def test_shape_mismatch_raises():
    with pytest.raises(ValueError, match="shape"):
        regroup_advantages(np.zeros((4, 2)), np.zeros((4, 3), bool))


# ------------------------------------------------------------------ callback
def test_find_experience_on_per_env_wrappers(vec_env4):
    managers, injectors = find_experience(vec_env4)
    assert len(injectors) == 4 and len({id(i) for i in injectors}) == 4
    assert len(managers) == 1 and all(i.manager is managers[0] for i in injectors)


def test_one_rollout_turns_off_ppo_normalisation_and_regroups_the_buffer(vec_env4):
    venv = vec_env4
    model = PPO("MultiInputPolicy", venv, **PPO_KW)
    assert model.normalize_advantage
    cb = CRLCallback()
    model.learn(64 * 4, callback=cb)
    assert model.normalize_advantage is True  # off during training only, given back at its end
    buf = model.rollout_buffer
    # after training, SB3 has flattened the buffer env-major: undo that
    adv = buf.advantages.reshape(buf.n_envs, buf.buffer_size).T
    guided = cb._guided[: buf.buffer_size, : buf.n_envs]
    assert guided.any() and (~guided).any()
    for sel in (guided, ~guided):
        _check_normalised(adv.astype(np.float64), sel, tol=1e-5)  # the buffer is float32
    # the guided flags match the buffer's observations: guided samples show experience or had none yet
    obs_mask = buf.observations["experience_mask"].reshape(buf.n_envs, buf.buffer_size, -1).transpose(1, 0, 2)
    assert np.all(obs_mask[~guided] == 0)


def test_ppo_normalisation_is_off_for_its_updates_only_so_an_interrupted_learn_and_a_checkpoint_keep_the_users(
        tmp_path, monkeypatch):
    """Probe 23: CRLCallback turned PPO's normalize_advantage off for the whole learn(): a learn() interrupted while
    the envs stepped (Ctrl-C, an env's error) left the model with False (SB3's model.save then wrote it, and a later
    plain learn trained without it), and SB3's CheckpointCallback beside it wrote zips with False."""
    from stable_baselines3.common.callbacks import CheckpointCallback

    model = PPO("MultiInputPolicy", wrapped_vec(2), **PPO_KW)
    seen_by_update: list[bool] = []
    train = PPO.train

    def recorded_train(self: PPO) -> None:  # (SB3's own update, with the setting it reads recorded)
        seen_by_update.append(self.normalize_advantage)
        train(self)

    monkeypatch.setattr(PPO, "train", recorded_train)

    class Stop(BaseCallback):
        def _on_step(self) -> bool:
            assert self.model.normalize_advantage is True  # the user's, while the envs step
            if self.num_timesteps >= 64 * 2 * 2 + 10:
                raise KeyboardInterrupt
            return True

    with pytest.raises(KeyboardInterrupt):
        model.learn(64 * 2 * 4, callback=[CRLCallback(), CheckpointCallback(64, str(tmp_path)), Stop()])
    assert seen_by_update == [False, False]  # PPO's two updates still normalised nothing (done per subgroup)
    assert model.normalize_advantage is True and not hasattr(model, "_crl_user_normalize_advantage")
    zips = sorted(tmp_path.glob("*.zip"))
    assert len(zips) == 2 and all(PPO.load(z).normalize_advantage is True for z in zips)


def test_subgroup_advantages_off_keeps_ppo_normalisation():
    venv = wrapped_vec(2)
    model = PPO("MultiInputPolicy", venv, **PPO_KW)
    model.learn(64 * 2, callback=CRLCallback(subgroup_advantages=False))
    assert model.normalize_advantage is True


def test_end_to_end_dummy_vec_env_cartpole():
    bank = ExperienceBank()
    venv = wrapped_vec(4, bank=bank)
    model = PPO("MultiInputPolicy", venv, **{**PPO_KW, "n_steps": 128})
    logs = RecordLogs()
    cb = CRLCallback(guided_ratio=(0.5, 0.8), merge_every=2)
    model.learn(2560, callback=CallbackList([cb, logs]))
    mgr = cb.manager
    stats = mgr.stats()
    assert len(bank) > 20
    assert stats["episodes_processed"] > 50
    assert stats["extractor_updates"] - stats["ssl_updates"] > 0  # policy-gradient steps ran
    assert stats["ssl_updates"] > 0
    u = bank.entries()["utility"]
    assert np.any(u != 0) and np.all(np.isfinite(u))
    assert np.any(bank.entries()["n_credited"] > 0)
    assert len(logs.records) == 5
    for rec in logs.records:
        for key in ("bank/size", "bank/utilisation", "extractor/updates", "crl/guided_ratio", "crl/queue"):
            assert key in rec, key
    last = logs.records[-1]
    assert last["bank/size"] == pytest.approx(len(bank), abs=30)
    assert last["extractor/updates"] > 0
    ratios = [r["crl/guided_ratio"] for r in logs.records]
    assert ratios == sorted(ratios) and 0.5 <= ratios[0] < ratios[-1] <= 0.8
    assert "crl/free_return" in last and "crl/guided_return" in last  # CartPole reports no success
    assert mgr.rollouts == 5


@pytest.mark.default_mode
def test_default_flow_fills_the_bank_by_the_end_of_training():
    """The README's two lines: the default manager (``mode="auto"``) runs its learner in a
    process of its own; every episode is processed and written by the end of training."""
    bank = ExperienceBank()
    env = ExperienceWrapper(gym.make("CartPole-v1"), bank)
    assert env.manager.config.mode == "auto" and env.manager.mode == "process"
    model = PPO("MultiInputPolicy", env, **PPO_KW)
    cb = CRLCallback()
    model.learn(512, callback=cb)
    mgr = cb.manager
    assert mgr.pending == 0  # flushed at training end
    assert mgr.episodes_processed == mgr.episodes_submitted > 0
    assert len(bank) > 0
    mgr.close()


def test_end_to_end_subproc_vec_env_through_experience_vec_env():
    bank = ExperienceBank()
    sub = make_vec_env("CartPole-v1", n_envs=2, seed=0, vec_env_cls=SubprocVecEnv,
                       vec_env_kwargs={"start_method": "fork"})
    venv = ExperienceVecEnv(sub, bank, manager_kwargs=FAST)
    try:
        model = PPO("MultiInputPolicy", venv, **{**PPO_KW, "n_steps": 128})
        logs = RecordLogs()
        cb = CRLCallback()
        model.learn(1536, callback=CallbackList([cb, logs]))
        stats = cb.manager.stats()
        assert cb.manager is venv.manager
        assert len(bank) > 10
        assert stats["extractor_updates"] - stats["ssl_updates"] > 0
        assert np.any(bank.entries()["utility"] != 0)
        assert {"bank/size", "extractor/updates", "crl/guided_ratio"} <= set(logs.records[-1])
    finally:
        venv.close()


def test_per_env_wrappers_inside_subproc_vec_env_raise_a_clear_error(capfd):
    # each forked worker would hold a copy of the bank: the wrapper refuses to be built there, so
    # the VecEnv never starts (issue 24, case 12; the message is in the worker's traceback)
    with pytest.raises((EOFError, ConnectionError)):
        venv = make_vec_env("CartPole-v1", n_envs=2, seed=0, vec_env_cls=SubprocVecEnv,
                            vec_env_kwargs={"start_method": "fork"}, wrapper_class=ExperienceWrapper,
                            wrapper_kwargs={"bank": ExperienceBank(), "manager_kwargs": {"mode": "sync"}})
        venv.close()
    assert "ExperienceWrapper built inside a SubprocVecEnv worker process" in capfd.readouterr().err


def test_callback_on_an_unwrapped_env_raises_a_clear_error():
    model = PPO("MlpPolicy", make_vec_env("CartPole-v1", n_envs=1), **PPO_KW)
    with pytest.raises(ValueError, match="no experience wrapper found"):
        model.learn(64, callback=CRLCallback())


@pytest.mark.parametrize("kwargs", [{"guided_ratio": 1.5}, {"guided_ratio": (0.2, -0.1)},
                                    {"merge_every": -1}])
def test_callback_argument_checks(kwargs):
    with pytest.raises(ValueError):
        CRLCallback(**kwargs)


@pytest.mark.parametrize("kwargs", [{"distill_coef": 0.1}, {"prior_weight": (1.0, 0.0)}])
def test_the_callbacks_take_no_removed_argument(kwargs):
    with pytest.raises(TypeError, match="unexpected keyword"):  # distillation and the prior's weight were removed
        CRLCallback(**kwargs)  # type: ignore[call-arg]


# --------------------------------------------------------------- persistence
def test_save_crl_and_load_crl_resume(tmp_path):
    venv = wrapped_vec(2, seed=1)
    model = PPO("MultiInputPolicy", venv, **PPO_KW)
    cb = CRLCallback()
    model.learn(1024, callback=cb)
    mgr = cb.manager
    size, updates, processed = len(mgr.bank), mgr.trainer.updates, mgr.episodes_processed
    assert size > 0 and updates > 0
    save_crl(tmp_path / "run", model)
    assert (tmp_path / "run" / "model.zip").is_file() and (tmp_path / "run" / "experience").is_dir()

    fresh = ExperienceBank()
    venv2 = wrapped_vec(2, bank=fresh, seed=2)
    model2 = load_crl(tmp_path / "run", venv2)
    mgr2, = find_experience(venv2)[0]
    assert mgr2 is not mgr
    assert len(mgr2.bank) == size and mgr2.trainer.updates == updates
    assert mgr2.episodes_processed == processed and mgr2.rollouts == mgr.rollouts
    for name, t in mgr.extractor.state_dict().items():
        th.testing.assert_close(mgr2.extractor.state_dict()[name], t, rtol=0, atol=0)
    for name, t in model.policy.state_dict().items():
        th.testing.assert_close(model2.policy.state_dict()[name], t, rtol=0, atol=0)
    assert model2.num_timesteps == model.num_timesteps
    cb2 = CRLCallback()
    model2.learn(512, callback=cb2, reset_num_timesteps=False)
    assert model2.num_timesteps >= model.num_timesteps + 512
    assert cb2.manager is mgr2
    assert mgr2.episodes_processed > processed and mgr2.trainer.updates > updates
    assert mgr2.rollouts > mgr.rollouts
    assert all(w.bank is mgr2.bank for w in (e for e in venv2.envs))  # wrappers follow the manager


def test_save_crl_needs_an_experience_env(tmp_path):
    model = PPO("MlpPolicy", make_vec_env("CartPole-v1", n_envs=1), **PPO_KW)
    with pytest.raises(ValueError, match="no experience wrapper"):
        save_crl(tmp_path / "run", model)


# ------------------------------------------------- ExperienceVecEnv vs per-env
def _prefilled_bank_copies(tmp_path, n: int) -> list[ExperienceBank]:
    bank = ExperienceBank()
    env = ExperienceWrapper(gym.make("CartPole-v1"), bank, manager_kwargs={"mode": "sync", "segment_every": 4})
    env.action_space.seed(0)
    for i in range(6):
        env.reset(seed=i)
        done = False
        while not done:
            _, _, term, trunc, _ = env.step(env.action_space.sample())
            done = term or trunc
    bank.save(tmp_path / "bank")
    return [ExperienceBank.load(tmp_path / "bank") for _ in range(n)]


@pytest.mark.parametrize("as_options", [False, True])
@pytest.mark.parametrize("compact", [False, True])
def test_experience_vec_env_matches_per_env_wrappers(tmp_path, compact, as_options):
    from integrations.sb3.experimental import CompactExperienceVecEnv

    bank_a, bank_b = _prefilled_bank_copies(tmp_path, 2)
    assert len(bank_a) > 8
    kw: dict = {"k": 3, "retrieve_every": 4, "query_mode": "knn", "learn": False}
    if as_options:  # one options object serves both wrappers
        kw = {"options": ExperienceOptions(**kw)}
    per_env = DummyVecEnv([lambda: ExperienceWrapper(gym.make("CartPole-v1"), bank_a, **kw)] * 3)
    batched = ExperienceVecEnv(DummyVecEnv([lambda: gym.make("CartPole-v1")] * 3), bank_b, **kw)
    if compact:  # the experimental one-key input on both
        per_env, batched = CompactExperienceVecEnv(per_env), CompactExperienceVecEnv(batched)
    for v in (per_env, batched):
        v.seed(7)
    for e in per_env.envs:
        e.set_force_guided(True)
    batched.set_force_guided(True)
    assert per_env.observation_space == batched.observation_space
    obs_a, obs_b = per_env.reset(), batched.reset()
    rng = np.random.default_rng(0)
    n_done = 0
    shown = 0.0
    for _ in range(60):
        for key in obs_a:
            np.testing.assert_array_equal(obs_a[key], obs_b[key], err_msg=key)
        shown += obs_a["experience"][:, -1].sum() if compact else obs_a["experience_mask"].sum()
        actions = rng.integers(0, 2, 3)
        obs_a, rew_a, done_a, info_a = per_env.step(actions)
        obs_b, rew_b, done_b, info_b = batched.step(actions)
        np.testing.assert_array_equal(rew_a, rew_b)
        np.testing.assert_array_equal(done_a, done_b)
        for ia, ib in zip(info_a, info_b, strict=True):
            assert ia["experience_guided"] == ib["experience_guided"]
            np.testing.assert_array_equal(ia["experience_ids"], ib["experience_ids"])
            assert ("experience_outcome" in ia) == ("experience_outcome" in ib)
            if "experience_outcome" in ia:
                assert ia["experience_outcome"] == ib["experience_outcome"]
                for key, v in ia["terminal_observation"].items():
                    np.testing.assert_array_equal(v, ib["terminal_observation"][key], err_msg=key)
        n_done += int(done_a.sum())
    assert n_done > 0 and shown > 0
    # learn=False: neither bank changed
    np.testing.assert_array_equal(bank_a.entries()["n_retrieved"], bank_b.entries()["n_retrieved"])


def test_experience_vec_env_info_and_terminal_observation_in_space():
    sub = DummyVecEnv([lambda: gym.make("CartPole-v1")] * 2)
    venv = ExperienceVecEnv(sub, ExperienceBank(), manager_kwargs={"mode": "sync"})
    venv.seed(0)
    venv.reset()
    ended = 0
    for _ in range(80):
        obs, _, dones, infos = venv.step(np.ones(2, dtype=np.int64))
        for i in range(2):
            assert {key: v[i] for key, v in obs.items()} in venv.observation_space
        for i in np.flatnonzero(dones):
            ended += 1
            assert infos[i]["terminal_observation"] in venv.observation_space
            assert "experience_outcome" in infos[i]
    assert ended > 0 and venv.manager.episodes_processed == ended


# -------------------------------------------------------------- policy pieces
def test_features_extractor_shape_and_masking():
    venv = wrapped_vec(1, k=3)
    model = PPO("MultiInputPolicy", venv, **{**PPO_KW, "policy_kwargs": crl_policy_kwargs(attn_dim=16)})
    fx = model.policy.features_extractor
    assert isinstance(fx, ExperienceFeaturesExtractor)
    assert fx.features_dim == fx.base.features_dim + 16 + 1
    space = model.observation_space
    rng = np.random.default_rng(0)
    n, k, d = 4, 3, space["experience"].shape[1]
    obs = {"observation": rng.normal(size=(n, 4)).astype(np.float32),
           "experience": rng.normal(size=(n, k, d)).astype(np.float32),
           "experience_utility": rng.normal(size=(n, k)).astype(np.float32),
           "experience_mask": np.array([[0, 0, 0], [1, 1, 1], [1, 0, 0], [0, 0, 0]], np.float32)}
    with th.no_grad():
        out = fx(obs_as_tensor(obs, model.device))
        assert out.shape == (n, fx.features_dim)
        base_dim = fx.base.features_dim
        pooled, flag = out[:, base_dim:-1], out[:, -1]
        assert th.all(pooled[[0, 3]] == 0)  # all-masked rows pool to zeros
        assert th.all(pooled[[1, 2]].abs().sum(-1) > 0)
        assert flag.tolist() == [0.0, 1.0, 1.0, 0.0]
        assert th.all(th.isfinite(out))
        # masked tokens are ignored: changing them changes nothing
        changed = {key: v.copy() for key, v in obs.items()}
        changed["experience"][2, 1:] += 100.0
        changed["experience"][0] += 100.0
        out2 = fx(obs_as_tensor(changed, model.device))
        th.testing.assert_close(out2, out)
        changed["experience"][2, 0] += 1.0  # a shown token does matter
        assert not th.allclose(fx(obs_as_tensor(changed, model.device)), out)


def test_features_extractor_needs_the_experience_observation():
    with pytest.raises(ValueError, match="ExperienceWrapper"):
        ExperienceFeaturesExtractor(gym.spaces.Dict({"x": gym.spaces.Box(-1, 1, (2,))}))


def test_crl_policy_kwargs_trains():
    venv = wrapped_vec(2)
    model = PPO("MultiInputPolicy", venv, **{**PPO_KW, "policy_kwargs": crl_policy_kwargs(attn_dim=8)})
    model.learn(256, callback=CRLCallback())
    assert model.num_timesteps >= 256


# ---------------------------------------------------------------- evaluation
def test_evaluate_with_and_without_experience_restores_the_schedule():
    venv = wrapped_vec(2)
    model = PPO("MultiInputPolicy", venv, **PPO_KW)
    cb = CRLCallback()
    model.learn(512, callback=cb)
    mgr = cb.manager
    _, injectors = find_experience(venv)
    injectors[0].force_guided = False  # a user setting that must survive
    submitted = mgr.episodes_submitted
    size = len(mgr.bank)
    retrieved = mgr.bank.entries()["n_retrieved"].copy()
    out = evaluate_with_and_without_experience(model, n_episodes=4)
    assert set(out) == {"with_experience", "without_experience"}
    for res in out.values():
        assert res["episodes"] == 4.0 and res["return"] > 0 and np.isnan(res["success"])
        assert res["outcome"] == pytest.approx(res["return"])
    assert [inj.force_guided for inj in injectors] == [False, None]
    assert all(inj.learning for inj in injectors)
    assert mgr.episodes_submitted == submitted and len(mgr.bank) == size
    # evaluation episodes count no retrieval; the training episodes that the final reset
    # starts (guided ones retrieve) do
    entries = mgr.bank.entries()
    shown = np.concatenate([inj.retriever.ids[inj.retriever.mask > 0] for inj in injectors])
    expected = retrieved + np.array([np.sum(shown == i) for i in entries["id"]])
    np.testing.assert_array_equal(entries["n_retrieved"], expected)


def test_evaluation_shows_experience_only_in_the_guided_run():
    venv = wrapped_vec(1)
    model = PPO("MultiInputPolicy", venv, **PPO_KW)
    model.learn(256, callback=CRLCallback())
    seen = {"with": [], "without": []}
    original = model.predict

    def spy(obs, *args, **kwargs):
        seen[current].append(float(obs["experience_mask"].sum()))
        return original(obs, *args, **kwargs)

    model.predict = spy  # type: ignore[method-assign]
    current = "with"
    from integrations.sb3.evaluation import run_episodes
    _, (inj,) = find_experience(venv)
    inj.force_guided, inj.learn = True, False
    run_episodes(model, venv, 1)
    current = "without"
    inj.force_guided = False
    run_episodes(model, venv, 1)
    assert sum(seen["with"]) > 0 and sum(seen["without"]) == 0


class RecordGuided(BaseCallback):
    def __init__(self) -> None:
        super().__init__()
        self.flags: list[bool] = []

    def _on_step(self) -> bool:
        self.flags += [bool(i["experience_guided"]) for i in self.locals["infos"]]
        return True


@pytest.mark.parametrize("ratio", [0.0, 1.0])
def test_the_guided_ratio_holds_from_the_first_episode(ratio):
    # SB3 resets the env before callbacks start; the callback redraws those first episodes
    venv = wrapped_vec(4)
    find_experience(venv)[0][0].schedule.configure(guided=1.0 - ratio)  # the opposite of the schedule
    rec = RecordGuided()
    PPO("MultiInputPolicy", venv, **PPO_KW).learn(256, callback=CallbackList([CRLCallback(guided_ratio=ratio), rec]))
    assert len(rec.flags) == 256 and set(rec.flags) == {bool(ratio)}


def test_a_training_env_whose_wrappers_never_learn_is_said():
    """A training env built with learn=False trained 1,024 steps with its bank empty and nothing said."""
    venv = wrapped_vec(n_envs=2, learn=False)
    model = PPO("MultiInputPolicy", venv, **PPO_KW)
    with pytest.warns(UserWarning, match="built with learn=False"):
        model.learn(64, callback=CRLCallback(self_imitation=False))
    venv.close()


class _SuccessReported(gym.Wrapper):
    """CartPole that reports every episode's end as a success (``info["is_success"]``)."""

    def step(self, action):
        obs, reward, terminated, truncated, info = self.env.step(action)
        if terminated or truncated:
            info["is_success"] = True
        return obs, reward, terminated, truncated, info


def test_a_crl_callback_reused_on_another_model_logs_that_models_figures():
    """Probe 19: a callback used on a model whose env reports success, then on one whose env does not, logged the
    second model's returns as "crl/guided_success", mixed with the first model's successes."""
    cb = CRLCallback()
    succeeding = make_vec_env(lambda: _SuccessReported(gym.make("CartPole-v1")), n_envs=2, seed=0,
                              wrapper_class=ExperienceWrapper,
                              wrapper_kwargs={"bank": ExperienceBank(), "manager_kwargs": FAST})
    PPO("MultiInputPolicy", succeeding, **PPO_KW).learn(256, callback=cb)
    assert cb.outcome_kind == "success"
    logs = RecordLogs()
    PPO("MultiInputPolicy", wrapped_vec(2), **PPO_KW).learn(256, callback=CallbackList([cb, logs]))
    assert cb.outcome_kind == "return"
    assert not any(key.endswith("_success") for r in logs.records for key in r if key.startswith("crl/"))
    assert any(r.get("crl/free_return", 0) > 1 for r in logs.records)
