"""Inputs checked at the boundary of the wrappers, the VecEnv and the callback (issue 24, cases
11, 12 and 14): success flags, rewards, flags and seeds, per-env wrappers in forked
subprocesses, mixed observation shapes, a non-vectorised env given to ``load_crl``.

Each error names what the user (or the env) did, where it arrived, not at an episode's end
deep in the extractor.
"""

from __future__ import annotations

import multiprocessing
import os
import warnings
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
from gymnasium import spaces
from stable_baselines3 import PPO
from stable_baselines3.common.vec_env import DummyVecEnv, SubprocVecEnv

from experience_wrappers import ExperienceBank, ExperienceWrapper
from experience_wrappers.manager import success_from_info
from experience_wrappers.wrappers import ExperienceOptions
from integrations.sb3 import CRLCallback, ExperienceVecEnv, load_crl, save_crl

FAST = {"mode": "sync", "batch_size": 16, "ssl_batch_size": 16}
HAS_FORK = hasattr(os, "fork") and "fork" in multiprocessing.get_all_start_methods()


class FlagEnv(gym.Env):
    """A real env: Box observations of ``shape``, episodes of ``length`` steps, each step
    rewarded ``reward``; the last step's info is ``{key: success}`` (nothing when ``key`` is None)."""

    def __init__(self, reward: Any = 0.0, success: Any = True, key: str | None = "is_success",
                 length: int = 3, shape: tuple[int, ...] = (3,)) -> None:
        self.observation_space = spaces.Box(-1.0, 1.0, shape, np.float32)
        self.action_space = spaces.Discrete(2)
        self.reward, self.success, self.key, self.length = reward, success, key, length
        self.t = 0

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[np.ndarray, dict]:
        super().reset(seed=seed)
        self.t = 0
        return np.zeros(self.observation_space.shape, np.float32), {}

    def step(self, action: Any) -> tuple[np.ndarray, Any, bool, bool, dict]:
        self.t += 1
        done = self.t >= self.length
        info = {self.key: self.success} if done and self.key is not None else {}
        return np.zeros(self.observation_space.shape, np.float32), self.reward, done, False, info


def _wrapped(env: gym.Env, bank: ExperienceBank | None = None, **kwargs: Any) -> ExperienceWrapper:
    return ExperienceWrapper(env, bank if bank is not None else ExperienceBank(), manager_kwargs=FAST, **kwargs)


def _run_episode(env: ExperienceWrapper) -> dict:
    env.reset(seed=0)
    while True:
        *_, terminated, truncated, info = env.step(0)
        if terminated or truncated:
            return info


# ------------------------------------------------------------- case 11: success, rewards, flags
def test_a_reset_in_training_that_cuts_an_episode_short_warns_once_and_a_finished_episode_does_not():
    env = _wrapped(FlagEnv(length=5))
    env.injector.in_learn = True  # (what CRLCallback sets while model.learn() runs)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        _run_episode(env)
        env.reset(seed=1)  # after an episode that ended: nothing to say
    env.step(0)
    env.step(0)
    with pytest.warns(UserWarning, match="episode of 2 steps was still going on: it is dropped"):
        env.reset(seed=2)  # (what a TimeLimit outside the wrapper does at every episode)
    env.step(0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        env.reset(seed=3)  # once is enough
    assert env.manager.episodes_submitted == 1


def test_a_time_limit_outside_the_wrapper_is_warned_about_in_learn():
    env = gym.wrappers.TimeLimit(_wrapped(gym.make("CartPole-v1")), 5)  # every episode cut at 5 steps
    model = PPO("MultiInputPolicy", env, n_steps=64, batch_size=64, n_epochs=1, seed=0)
    with pytest.warns(UserWarning, match="TimeLimit .* outside the ExperienceWrapper"):
        model.learn(64, callback=CRLCallback())


def test_returns_beyond_float16_are_written_saturated_not_refused_by_the_bank():
    # a game's raw score: 30 steps of 5,000 sum to 150,000, past the float16 the bank stores contexts in
    env = _wrapped(FlagEnv(reward=5_000.0, length=30))
    info = _run_episode(env)
    env.manager.flush()
    assert info["experience_outcome"] == 1.0
    assert len(env.bank) > 0


@pytest.mark.parametrize(("flag", "exc"), [
    ("False", TypeError), ("True", TypeError), (float("nan"), ValueError), (0.5, ValueError),
    ([0, 1], ValueError), (None, None)])
def test_a_success_flag_that_is_not_a_bool_or_0_1_is_refused_at_the_episode_end(flag, exc):
    env = _wrapped(FlagEnv(success=flag))
    if exc is None:  # None: no success reported, as before
        assert success_from_info({"is_success": None}) is None
        _run_episode(env)
        return
    with pytest.raises(exc, match=r"info\['is_success'\] must be a bool or 0/1"):
        _run_episode(env)
    assert env.manager.episodes_submitted == 0  # nothing was filed as a success (or a failure)


@pytest.mark.parametrize(("flag", "success"), [
    (True, True), (False, False), (np.bool_(True), True), (1, True), (0.0, False), (np.float32(1.0), True),
    (np.array([True]), True), (np.int64(0), False)])
def test_bools_numpy_bools_and_0_1_numbers_still_read_as_success(flag, success):
    assert success_from_info({"success": flag}) is success
    env = _wrapped(FlagEnv(success=flag, key="success"))
    _run_episode(env)
    assert env.manager.episodes_submitted == 1


@pytest.mark.parametrize("reward", ["1", b"1", None, np.array([1.0, 2.0]), 1e300, -1e31, float("inf")])
def test_a_reward_that_is_not_a_real_number_is_refused_at_the_step_that_returned_it(reward):
    env = _wrapped(FlagEnv(reward=reward, length=50))
    env.reset(seed=0)
    with pytest.raises((TypeError, ValueError), match=r"FlagEnv's step\(\) returned rewards? .*\(env 0, step 0 of its episode"):
        env.step(0)  # the first step, not the episode's end


def test_a_string_reward_is_a_type_error_naming_the_envs_step():
    env = _wrapped(gym.wrappers.TimeLimit(FlagEnv(reward="1", length=50), 100))
    env.reset(seed=0)
    with pytest.raises(TypeError, match=r"FlagEnv's step\(\) returned reward '1' \(a str\).*real number"):
        env.step(0)


@pytest.mark.parametrize("reward", [1, 1.5, np.float32(-2.0), np.int64(3), True, np.array(0.5), np.array([0.5])])
def test_real_rewards_pass(reward):
    env = _wrapped(FlagEnv(reward=reward))
    _run_episode(env)
    assert env.manager.episodes_submitted == 1


@pytest.mark.parametrize("field", ["learn", "filter_by_task", "paired"])
@pytest.mark.parametrize("value", ["no", 0, None])
def test_flags_must_be_bools(field, value):
    if field == "learn" and value is None:  # learn=None: the default (decided by the callback)
        _wrapped(FlagEnv(), learn=None)
        return
    with pytest.raises(TypeError, match=rf"{field} must be a bool.*got {value!r}"):
        _wrapped(FlagEnv(), **{field: value})


def test_learn_no_does_not_learn_it_is_refused():
    with pytest.raises(TypeError, match="learn must be a bool or None, got 'no'"):
        ExperienceWrapper(FlagEnv(), ExperienceBank(), learn="no")


# ------------------------------------------------------------------ case 12: fork
def _forked_wrapper_factory(bank: ExperienceBank):
    def make() -> gym.Env:
        return ExperienceWrapper(FlagEnv(), bank, manager_kwargs=FAST)
    return make


@pytest.mark.skipif(not HAS_FORK, reason="needs fork")
@pytest.mark.timeout(120)
def test_per_env_wrappers_under_a_forked_subproc_vec_env_are_refused(capfd):
    bank = ExperienceBank()
    # each worker would hold a copy of the bank: its episodes would never reach this one
    with pytest.raises((EOFError, ConnectionError)):
        venv = SubprocVecEnv([_forked_wrapper_factory(bank) for _ in range(2)], start_method="fork")
        venv.close()
    err = capfd.readouterr().err
    assert "inside a SubprocVecEnv worker process" in err
    assert "ExperienceVecEnv(SubprocVecEnv" in err
    assert len(bank) == 0


@pytest.mark.skipif(not HAS_FORK, reason="needs fork")
@pytest.mark.timeout(120)
def test_experience_vec_env_over_a_forked_subproc_vec_env_still_learns():
    bank = ExperienceBank()
    venv = ExperienceVecEnv(SubprocVecEnv([lambda: FlagEnv()] * 2, start_method="fork"), bank, manager_kwargs=FAST)
    try:
        venv.reset()
        for _ in range(12):
            venv.step(np.zeros(2, dtype=np.int64))
    finally:
        venv.close()
    assert venv.manager.episodes_submitted == 8


# --------------------------------------------------------- case 14: unclear errors
@pytest.mark.parametrize(("seed", "exc"), [("abc", TypeError), (-1, ValueError), (1.5, TypeError)])
def test_a_bad_reset_seed_is_refused_by_name(seed, exc):
    env = _wrapped(FlagEnv())
    with pytest.raises(exc, match=rf"reset\(seed=\.\.\.\) must be an int >= 0 or None, got {seed!r}"):
        env.reset(seed=seed)


@pytest.mark.parametrize(("seed", "exc"), [("abc", TypeError), (-1, ValueError)])
def test_a_bad_options_seed_is_refused_by_name(seed, exc):
    with pytest.raises(exc, match=rf"seed must be an int >= 0 or None, got {seed!r}"):
        ExperienceOptions(seed=seed)
    with pytest.raises(exc, match="seed must be"):
        ExperienceWrapper(FlagEnv(), ExperienceBank(), seed=seed)


@pytest.mark.parametrize(("kwargs", "exc", "match"), [
    (dict(guided_ratio="0.5"), TypeError, "guided_ratio must be a number or a pair of numbers \\(start, end\\), got '0.5'"),
    (dict(guided_ratio=(0.5, "0.8")), TypeError, r"guided_ratio must be a number or a pair of numbers \(start, end\)"),
    (dict(guided_ratio=(0.1, 0.2, 0.3)), TypeError, r"guided_ratio must be a number or a pair of numbers \(start, end\)"),
    (dict(guided_ratio=float("nan")), ValueError, r"guided_ratio values must be in \[0, 1\]"),
    (dict(merge_every="5"), ValueError, "merge_every must be an int >= 0, got '5'"),
    (dict(subgroup_advantages="no"), TypeError, "subgroup_advantages must be a bool, got 'no'"),
    (dict(flush_at_end=1), TypeError, "flush_at_end must be a bool, got 1"),
    (dict(verbose="1"), TypeError, "verbose must be an int >= 0, got '1'"),
])
def test_callback_arguments_are_checked_by_name(kwargs, exc, match):
    with pytest.raises(exc, match=match):
        CRLCallback(**kwargs)


def test_callback_numbers_still_accept_numpy_and_tuples():
    cb = CRLCallback(guided_ratio=np.float64(0.25))
    assert cb.guided_ratio == 0.25 and CRLCallback(guided_ratio=(np.float32(0.5), 1)).guided_ratio[1] == 1


def test_experience_vec_env_over_envs_of_mixed_observation_shapes_is_refused_at_construction():
    venv = DummyVecEnv([lambda: FlagEnv(shape=(3,)), lambda: FlagEnv(shape=(5,))])
    with pytest.raises(ValueError, match=r"env 1's observation space .*\(5,\).* env 0's .*\(3,\)"):
        ExperienceVecEnv(venv, ExperienceBank(), manager_kwargs=FAST)


@pytest.mark.parametrize(("make", "match"), [
    (lambda: gym.make_vec("CartPole-v1", num_envs=2), "CartPoleVectorEnv, a gymnasium VectorEnv .*make_vec_env"),
    (lambda: gym.make("CartPole-v1"), r"a single env \(CartPole-v1\): wrap it as DummyVecEnv")])
def test_experience_vec_env_takes_sb3_vec_envs_only_and_says_how_to_build_one(make, match):
    env = make()
    try:
        with pytest.raises(TypeError, match=match):
            ExperienceVecEnv(env, ExperienceBank())
    finally:
        env.close()


def test_experience_vec_env_accepts_boxes_that_differ_in_bounds_only():
    def env(high: float) -> gym.Env:
        e = FlagEnv()
        e.observation_space = spaces.Box(-high, high, (3,), np.float32)
        return e
    venv = ExperienceVecEnv(DummyVecEnv([lambda: env(1.0), lambda: env(2.0)]), ExperienceBank(), manager_kwargs=FAST)
    venv.reset()


def test_load_crl_with_a_single_env_asks_for_a_vec_env(tmp_path):
    bank = ExperienceBank()
    venv = DummyVecEnv([lambda: _wrapped(FlagEnv(), bank)])
    model = PPO("MultiInputPolicy", venv, n_steps=16, batch_size=16, device="cpu")
    path = save_crl(tmp_path / "run", model)
    single = _wrapped(FlagEnv(), ExperienceBank())
    with pytest.raises(TypeError, match=r"load_crl.*takes .*VecEnv.*, got ExperienceWrapper.*"
                                        r"DummyVecEnv\(\[lambda: env\]\)"):
        load_crl(path, single)
    assert len(single.bank) == 0


def test_check_vec_env_names_the_caller_and_the_remedy():
    from integrations.sb3.guards import check_vec_env

    with pytest.raises(TypeError, match=r"save_crl takes a stable_baselines3 VecEnv.*got CartPoleEnv"):
        check_vec_env(gym.make("CartPole-v1").unwrapped, "save_crl")
    check_vec_env(DummyVecEnv([FlagEnv]), "load_crl")
