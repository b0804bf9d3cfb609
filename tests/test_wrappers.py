"""``ExperienceWrapper``: spaces, env checkers, guided / free episodes, retrieval, errors."""

from __future__ import annotations

import warnings

import gymnasium as gym
import numpy as np
import pytest
from gymnasium import spaces
from gymnasium.utils.env_checker import check_env as gym_check_env
from stable_baselines3.common.env_checker import check_env as sb3_check_env

from experience_wrappers import ExperienceBank, ExperienceWrapper, KeyEncoder
from experience_wrappers.keys import RandomProjectionKeyEncoder, batch_flatten
from experience_wrappers.wrappers import EXPERIENCE_KEYS

SYNC = {"mode": "sync"}


class DictEnv(gym.Env):
    """A tiny env with a Dict observation (a Box and a Discrete part); success when it ends on action 1."""

    metadata = {"render_modes": []}

    def __init__(self, length: int = 6, extra_key: str | None = None) -> None:
        parts = {"pos": spaces.Box(-1.0, 1.0, (2,), np.float32), "room": spaces.Discrete(3)}
        if extra_key is not None:
            parts[extra_key] = spaces.Box(0.0, 1.0, (1,), np.float32)
        self.observation_space = spaces.Dict(parts)
        self.action_space = spaces.Discrete(2)
        self.length = length
        self.extra_key = extra_key

    def _obs(self) -> dict:
        obs = {"pos": self.np_random.uniform(-1, 1, 2).astype(np.float32),
               "room": np.int64(self.np_random.integers(3))}
        if self.extra_key is not None:
            obs[self.extra_key] = np.zeros(1, np.float32)
        return obs

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.t = 0
        return self._obs(), {}

    def step(self, action):
        self.t += 1
        done = self.t >= self.length
        return self._obs(), float(action), done, False, {"is_success": bool(done and action == 1)}


class NaNEnv(gym.Env):
    """Returns a NaN observation at reset (``at_reset``) or at step ``nan_step``."""

    def __init__(self, at_reset: bool = False, nan_step: int = 3) -> None:
        self.observation_space = spaces.Box(-1.0, 1.0, (3,), np.float32)
        self.action_space = spaces.Discrete(2)
        self.at_reset, self.nan_step = at_reset, nan_step

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.t = 0
        obs = np.zeros(3, np.float32)
        if self.at_reset:
            obs[1] = np.nan
        return obs, {}

    def step(self, action):
        self.t += 1
        obs = np.full(3, 0.1 * self.t, np.float32)
        if self.t == self.nan_step:
            obs[0] = np.nan
        return obs, 0.0, self.t >= 10, False, {}


def make_env(name: str) -> gym.Env:
    if name == "dict":
        return DictEnv()
    if name == "FrozenLake-v1":
        return gym.make(name, is_slippery=False)
    return gym.make(name)


def run_episode(env: gym.Env, seed: int | None = None, policy=None) -> list[tuple]:
    """Play one episode; returns (obs, info) pairs of every reset / step."""
    obs, info = env.reset(seed=seed)
    seen = [(obs, info)]
    done = False
    while not done:
        action = env.action_space.sample() if policy is None else policy(obs)
        obs, _, term, trunc, info = env.step(action)
        seen.append((obs, info))
        done = term or trunc
    return seen


def fill(env: ExperienceWrapper, episodes: int = 3, seed: int = 0) -> None:
    env.action_space.seed(seed)
    for i in range(episodes):
        run_episode(env, seed=seed + i)
    assert len(env.bank) > 0


# ----------------------------------------------------------------- env checks
ENV_NAMES = ["CartPole-v1", "dict", "FrozenLake-v1", "Taxi-v3"]


@pytest.mark.parametrize("name", ENV_NAMES)
@pytest.mark.parametrize("compact", [False, True])
def test_env_checkers_pass_on_a_fresh_bank(name, compact):
    env = ExperienceWrapper(make_env(name), ExperienceBank(), manager_kwargs=SYNC)
    if compact:  # the experimental one-key input on top
        from experience_wrappers.experimental import CompactExperience

        env = CompactExperience(env)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        gym_check_env(env, skip_render_check=True)
        sb3_check_env(env, warn=False)


@pytest.mark.parametrize("name", ENV_NAMES)
def test_env_checkers_pass_on_guided_episodes_with_knn_retrieval(name):
    env = ExperienceWrapper(make_env(name), ExperienceBank(), query_mode="knn", manager_kwargs=SYNC)
    env.set_force_guided(True)
    fill(env)
    obs, _ = env.reset(seed=0)
    assert obs["experience_mask"].sum() > 0  # the checks really see experience
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        gym_check_env(env, skip_render_check=True)
        sb3_check_env(env, warn=False)


@pytest.mark.parametrize("name", ENV_NAMES)
def test_every_observation_lies_in_the_space(name):
    env = ExperienceWrapper(make_env(name), ExperienceBank(), retrieve_every=2, manager_kwargs=SYNC, seed=0)
    env.action_space.seed(0)
    for i in range(6):
        env.set_force_guided(i % 2 == 1)
        for obs, _ in run_episode(env, seed=i):
            assert obs in env.observation_space
            assert obs["experience"].dtype == np.float32


def test_box_observation_goes_under_observation(cartpole_env):
    obs, _ = cartpole_env.reset(seed=0)
    assert set(obs) == {"observation", "experience", "experience_utility", "experience_mask"}
    assert obs["experience"].shape == (4, cartpole_env.manager.exp_dim)
    raw, _ = gym.make("CartPole-v1").reset(seed=0)
    np.testing.assert_array_equal(obs["observation"], raw)


def test_dict_keys_stay_at_the_top_level():
    env = ExperienceWrapper(DictEnv(), ExperienceBank(), k=3, manager_kwargs=SYNC)
    assert set(env.observation_space.spaces) == {"pos", "room", *EXPERIENCE_KEYS}
    assert env.observation_space["room"] == spaces.Discrete(3)
    obs, _ = env.reset(seed=1)
    raw, _ = DictEnv().reset(seed=1)
    assert set(obs) == {"pos", "room", *EXPERIENCE_KEYS}
    np.testing.assert_array_equal(obs["pos"], raw["pos"])
    assert obs["room"] == raw["room"]
    assert obs["experience"].shape[0] == 3


@pytest.mark.parametrize("clash", ["experience", "experience_mask", "experience_utility"])
def test_a_clashing_key_raises(clash):
    with pytest.raises(ValueError, match=clash):
        ExperienceWrapper(DictEnv(extra_key=clash), ExperienceBank(), manager_kwargs=SYNC)


# ----------------------------------------------------------- guided and free
def test_free_episodes_show_zeros_even_with_a_full_bank(cartpole_env):
    cartpole_env.set_force_guided(True)
    fill(cartpole_env)
    cartpole_env.set_force_guided(False)
    for obs, info in run_episode(cartpole_env, seed=10):
        assert np.all(obs["experience"] == 0) and np.all(obs["experience_utility"] == 0)
        assert np.all(obs["experience_mask"] == 0)
        assert info["experience_guided"] is False
        assert len(info["experience_ids"]) == 0


def test_guided_episodes_show_the_retrieved_entries(cartpole_env):
    env = cartpole_env
    env.set_force_guided(True)
    obs, info = env.reset(seed=0)
    assert info["experience_guided"] is True
    assert np.all(obs["experience_mask"] == 0)  # empty bank: nothing to show yet
    fill(env)

    def check(obs, info):
        m = obs["experience_mask"] > 0
        assert m.sum() == min(4, len(env.bank))
        ids = info["experience_ids"]
        assert len(ids) == m.sum() and info["experience_guided"] is True
        got = env.bank.get(ids)
        np.testing.assert_allclose(obs["experience"][m], got["value"], rtol=1e-6)
        np.testing.assert_allclose(obs["experience_utility"][m], got["utility"], atol=1e-6)
        assert np.all(obs["experience"][~m] == 0) and np.all(obs["experience_utility"][~m] == 0)

    # a step's info describes the observation the action was taken from (obs t <-> info t+1);
    # the reset info describes the reset observation. Checked while the episode runs: at its
    # end the episode is distilled and dedup may refresh the values of near entries.
    obs, info = env.reset(seed=20)
    check(obs, info)
    steps, done = 0, False
    while not done:
        new_obs, _, term, trunc, info = env.step(env.action_space.sample())
        steps += 1
        done = term or trunc
        if not done:
            check(obs, info)
            obs = new_obs
    assert steps > 8  # at least one re-retrieval (retrieve_every=8) was checked


def test_guided_ratio_sets_the_share_of_guided_episodes(cartpole_env):
    env = cartpole_env
    env.manager.schedule.configure(guided=0.0)
    assert not any(run_episode(env, seed=i)[0][1]["experience_guided"] for i in range(5))
    env.manager.schedule.configure(guided=1.0)
    assert all(run_episode(env, seed=i)[0][1]["experience_guided"] for i in range(5))
    env.manager.schedule.configure(guided=0.0)
    env.set_force_guided(True)
    assert run_episode(env, seed=0)[0][1]["experience_guided"]
    env.set_force_guided(None)
    assert not run_episode(env, seed=0)[0][1]["experience_guided"]


def test_info_carries_guided_ids_and_outcome_at_the_end():
    env = ExperienceWrapper(DictEnv(length=4), ExperienceBank(), manager_kwargs=SYNC)
    env.set_force_guided(True)
    fill(env)
    seen = run_episode(env, seed=3, policy=lambda obs: 1)
    for _, info in seen[:-1]:
        assert "experience_outcome" not in info
        assert info["experience_guided"] is True and len(info["experience_ids"]) > 0
    last = seen[-1][1]
    assert last["experience_guided"] is True
    assert last["experience_outcome"] == 1.0  # success, reported by is_success
    assert last["is_success"] is True  # the env's own info is kept
    assert len(last["experience_ids"]) > 0
    assert set(last["experience_ids"]) <= set(env.bank.entries()["id"].tolist())
    # without a success signal the outcome is the return
    cp = ExperienceWrapper(gym.make("CartPole-v1"), ExperienceBank(), manager_kwargs=SYNC)
    seen = run_episode(cp, seed=0)
    assert seen[-1][1]["experience_outcome"] == float(len(seen) - 1)


def test_finished_episodes_reach_the_manager(cartpole_env):
    mgr = cartpole_env.manager
    for i in range(3):
        run_episode(cartpole_env, seed=i)
    assert mgr.episodes_processed == 3
    assert mgr.entries_added == len(cartpole_env.bank) > 0


def test_learn_false_hands_nothing_over_and_leaves_counters_alone():
    bank = ExperienceBank()
    teacher = ExperienceWrapper(gym.make("CartPole-v1"), bank, manager_kwargs=SYNC)
    fill(teacher)
    evaluator = ExperienceWrapper(gym.make("CartPole-v1"), bank, learn=False)
    evaluator.set_force_guided(True)
    before = bank.entries()
    queries = bank.stats()["queries"]
    seen = run_episode(evaluator, seed=5)
    assert seen[0][0]["experience_mask"].sum() > 0
    assert teacher.manager.episodes_submitted == 3
    np.testing.assert_array_equal(bank.entries()["n_retrieved"], before["n_retrieved"])
    assert bank.stats()["queries"] == queries


@pytest.mark.parametrize("every", [0, 2, 5])
def test_retrieve_every_triggers_re_retrieval(every):
    env = ExperienceWrapper(gym.make("CartPole-v1"), ExperienceBank(), retrieve_every=every,
                            manager_kwargs=SYNC)
    env.set_force_guided(True)
    fill(env, episodes=2)
    env.reset(seed=100)
    start = env.bank.stats()["queries"]
    counts, ended = [], False
    for _ in range(10):
        _, _, term, trunc, _ = env.step(0)
        counts.append(env.bank.stats()["queries"] - start)
        if term or trunc:
            ended = True
            break
    assert len(counts) >= 6
    steps = np.arange(1, len(counts) + 1)
    expected = steps // every if every else np.zeros_like(steps)
    if ended:  # no retrieval on the terminal step
        expected[-1] = expected[-2]
    np.testing.assert_array_equal(counts, expected)


def test_free_episodes_never_query(cartpole_env):
    cartpole_env.set_force_guided(False)
    fill(cartpole_env)
    assert cartpole_env.bank.stats()["queries"] == 0


# ---------------------------------------------------------------------- errors
def test_nan_observation_at_step_raises_a_clear_error():
    env = ExperienceWrapper(NaNEnv(nan_step=3), ExperienceBank(), manager_kwargs=SYNC)
    env.reset(seed=0)
    env.step(0)
    env.step(0)
    with pytest.raises(ValueError, match="NaN or inf at step"):
        env.step(0)


def test_nan_observation_at_reset_raises_a_clear_error():
    env = ExperienceWrapper(NaNEnv(at_reset=True), ExperienceBank(), manager_kwargs=SYNC)
    with pytest.raises(ValueError, match="NaN or inf at reset"):
        env.reset(seed=0)


def test_step_before_reset_raises():
    env = ExperienceWrapper(gym.make("CartPole-v1"), ExperienceBank(), manager_kwargs=SYNC)
    with pytest.raises(RuntimeError, match="reset"):
        env.step(0)
    run_episode(env, seed=0)
    with pytest.raises(RuntimeError, match="reset"):
        env.step(0)  # after the episode ended


def test_bad_arguments_raise():
    with pytest.raises(TypeError, match="ExperienceBank"):
        ExperienceWrapper(gym.make("CartPole-v1"), object())  # type: ignore[arg-type]
    for kwargs, what in (({"k": 0}, "k must"), ({"retrieve_every": -1}, "retrieve_every"),
                         ({"query_mode": "best"}, "query_mode"), ({"task_id": "a"}, "task_id")):
        with pytest.raises(ValueError, match=what):
            ExperienceWrapper(gym.make("CartPole-v1"), ExperienceBank(), manager_kwargs=SYNC, **kwargs)


def test_key_encoder_of_another_size_than_the_bank_raises(tmp_path):
    space = gym.make("CartPole-v1").observation_space
    bank = ExperienceBank()
    fill(ExperienceWrapper(gym.make("CartPole-v1"), bank, manager_kwargs=SYNC))
    assert bank.dims["key_dim"] == 32
    small = RandomProjectionKeyEncoder(space, key_dim=16)
    # the bank's manager is alive: it refuses another key encoder
    with pytest.raises(ValueError, match="different key_encoder"):
        ExperienceWrapper(gym.make("CartPole-v1"), bank, key_encoder=small)
    # a bank loaded from disk gets a new manager, which checks the bank's dimensions
    bank.save(tmp_path / "bank")
    loaded = ExperienceBank.load(tmp_path / "bank")
    with pytest.raises(ValueError, match=r"bank dims .*'key_dim': 32.* do not match .*'key_dim': 16"):
        ExperienceWrapper(gym.make("CartPole-v1"), loaded, key_encoder=small)


class _WrongWidthEncoder(KeyEncoder):
    """Says key_dim 32 but returns the 4 flat CartPole values."""

    key_dim = 32

    def __init__(self, space: spaces.Space) -> None:
        self.space = space

    def encode(self, obs_batch, task_ids):
        return batch_flatten(self.space, obs_batch)


@pytest.mark.parametrize("guided", [True, False])
def test_key_encoder_returning_another_width_than_its_key_dim_raises(guided):
    base = gym.make("CartPole-v1")
    env = ExperienceWrapper(base, ExperienceBank(), key_encoder=_WrongWidthEncoder(base.observation_space),
                            manager_kwargs=SYNC)
    env.set_force_guided(guided)
    with pytest.raises(ValueError, match=r"returned keys of shape \(\d+, 4\), expected \(\d+, 32\)"):
        run_episode(env, seed=0)  # at the guided reset's query, or when the episode is distilled
    assert len(env.bank) == 0


# --------------------------------------------------------------------- sharing
def test_wrappers_on_one_bank_share_one_manager():
    bank = ExperienceBank()
    a = ExperienceWrapper(gym.make("CartPole-v1"), bank, manager_kwargs=SYNC)
    b = ExperienceWrapper(gym.make("CartPole-v1"), bank)
    c = ExperienceWrapper(gym.make("CartPole-v1"), ExperienceBank(), manager_kwargs=SYNC)
    assert a.manager is b.manager
    assert c.manager is not a.manager
    run_episode(a, seed=0)
    run_episode(b, seed=1)
    assert a.manager.episodes_processed == 2
    assert a.bank is b.bank is bank
    with pytest.raises(ValueError, match="another config"):
        ExperienceWrapper(gym.make("CartPole-v1"), bank, manager_kwargs={"mode": "async"})
    with pytest.raises(ValueError, match="another layout"):
        ExperienceWrapper(gym.make("MountainCar-v0"), bank)
    with pytest.raises(ValueError, match="another bank"):
        ExperienceWrapper(gym.make("CartPole-v1"), ExperienceBank(), manager=a.manager)


def test_constructor_arguments_are_recorded_without_copying_the_bank():
    bank = ExperienceBank()
    env = ExperienceWrapper(gym.make("CartPole-v1"), bank, k=2, retrieve_every=3, manager_kwargs=SYNC)
    assert env._saved_kwargs["bank"] is bank
    assert env._saved_kwargs["k"] == 2 and env._saved_kwargs["retrieve_every"] == 3
    spec = env.spec
    assert spec is not None
    wrapper_spec = spec.additional_wrappers[-1]
    assert wrapper_spec.name == "ExperienceWrapper"
    assert wrapper_spec.kwargs["bank"] is bank
    assert wrapper_spec.kwargs["manager_kwargs"] == SYNC


def test_task_id_function_is_called_at_each_reset():
    env = ExperienceWrapper(DictEnv(), ExperienceBank(), task_id=lambda obs, info: int(obs["room"]),
                            manager_kwargs=SYNC)
    for seed in range(4):
        obs, info = env.reset(seed=seed)
        assert info["experience_task_id"] == int(obs["room"])
    bad = ExperienceWrapper(DictEnv(), ExperienceBank(), task_id=lambda obs, info: "x", manager_kwargs=SYNC)
    with pytest.raises(ValueError, match="the task_id function's value must be an int, got 'x'"):
        bad.reset(seed=0)


def test_same_seed_gives_the_same_guided_draws():
    def draws(seed):
        env = ExperienceWrapper(gym.make("CartPole-v1"), ExperienceBank(), manager_kwargs=SYNC)
        env.reset(seed=seed)
        out = []
        for _ in range(8):
            out.append(env.reset()[1]["experience_guided"])
        return out

    a, b = draws(3), draws(3)
    assert a == b
    assert 0 < sum(a) < len(a) or draws(4) != a
