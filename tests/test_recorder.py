"""EpisodeRecorder: per-env buffers give the episodes that per-step copies into lists gave."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
from stable_baselines3.common.env_util import make_vec_env

from experience_wrappers.wrappers.recorder import EpisodeRecorder


class _ListRecorder:
    """The recording the injector did before: a copy per env and step, stacked at the end."""

    def __init__(self, n: int) -> None:
        self.obs: list[list] = [[] for _ in range(n)]
        self.actions: list[list] = [[] for _ in range(n)]
        self.rewards: list[list] = [[] for _ in range(n)]

    def append(self, obs, actions, rewards) -> None:
        for r in range(len(self.obs)):
            if isinstance(obs, dict):
                self.obs[r].append({k: np.array(v[r], copy=True) for k, v in obs.items()})
            else:
                self.obs[r].append(np.array(obs[r], copy=True))
            self.actions[r].append(np.array(actions[r], copy=True))
            self.rewards[r].append(float(rewards[r]))

    def take(self, r: int):
        items = self.obs[r]
        obs = ({k: np.stack([o[k] for o in items]) for k in items[0]} if isinstance(items[0], dict)
               else np.stack(items))
        out = obs, np.stack(self.actions[r]), np.asarray(self.rewards[r], dtype=np.float64)
        self.obs[r], self.actions[r], self.rewards[r] = [], [], []
        return out


def _assert_same(got, want) -> None:
    (g_obs, g_act, g_rew), (w_obs, w_act, w_rew) = got, want
    if isinstance(w_obs, dict):
        assert list(g_obs) == list(w_obs)
        for k in w_obs:
            assert g_obs[k].dtype == w_obs[k].dtype and g_obs[k].shape == w_obs[k].shape
            np.testing.assert_array_equal(g_obs[k], w_obs[k])
    else:
        assert g_obs.dtype == w_obs.dtype and g_obs.shape == w_obs.shape
        np.testing.assert_array_equal(g_obs, w_obs)
    assert g_act.dtype == w_act.dtype and g_act.shape == w_act.shape
    np.testing.assert_array_equal(g_act, w_act)
    assert g_rew.dtype == w_rew.dtype
    np.testing.assert_array_equal(g_rew, w_rew)


class _DictObs(gym.ObservationWrapper):
    """CartPole's observation as a Dict of two dtypes (a float Box and an int16 step count)."""

    def __init__(self, env: gym.Env) -> None:
        super().__init__(env)
        self.observation_space = gym.spaces.Dict({
            "state": env.observation_space, "t": gym.spaces.Box(0, 500, (1,), np.int16)})
        self._t = 0

    def reset(self, **kwargs):
        self._t = 0
        return super().reset(**kwargs)

    def step(self, action):
        self._t += 1
        return super().step(action)

    def observation(self, obs):
        return {"state": obs, "t": np.array([self._t], np.int16)}


@pytest.mark.parametrize("dict_obs", [False, True])
def test_episodes_of_a_real_vec_env_equal_the_per_step_copies(dict_obs):
    n = 3
    venv = make_vec_env("CartPole-v1", n_envs=n, seed=0, wrapper_class=_DictObs if dict_obs else None)
    rng = np.random.default_rng(0)
    new, old = EpisodeRecorder(n, capacity=4), _ListRecorder(n)  # capacity 4: grown many times
    obs, finished = venv.reset(), 0
    for _ in range(300):
        actions = rng.integers(0, 2, n)
        next_obs, rewards, dones, _ = venv.step(actions)
        new.append(obs, actions, rewards)
        old.append(obs, actions, rewards)
        for r in np.flatnonzero(dones).tolist():
            _assert_same(new.take(r), old.take(r))
            finished += 1
        obs = next_obs
    assert finished > 10
    for r in range(n):  # the episodes still in flight
        _assert_same(new.take(r), old.take(r))
    venv.close()


def test_a_dtype_that_changes_within_an_episode_is_promoted_as_stacking_promotes_it():
    new, old = EpisodeRecorder(2), _ListRecorder(2)
    for dtype in (np.float32, np.float32, np.float64, np.float32):
        obs = np.ones((2, 3), dtype)
        new.append(obs, np.zeros(2, np.int64), np.ones(2))
        old.append(obs, np.zeros(2, np.int64), np.ones(2))
    _assert_same(new.take(0), old.take(0))  # float64, as np.stack gives
    for _ in range(2):  # a new episode of the first dtype only: float32 again
        obs = np.ones((2, 3), np.float32)
        new.append(obs, np.zeros(2, np.int64), np.ones(2))
        old.append(obs, np.zeros(2, np.int64), np.ones(2))
    _assert_same(new.take(0), old.take(0))
    _assert_same(new.take(1), old.take(1))


def test_take_returns_copies_and_clear_drops_an_episode():
    rec = EpisodeRecorder(1)
    rec.append(np.zeros((1, 2)), np.zeros(1), np.zeros(1))
    obs, _, _ = rec.take(0)
    rec.append(np.ones((1, 2)), np.zeros(1), np.zeros(1))
    assert obs.tolist() == [[0.0, 0.0]]
    rec.clear(0)
    rec.append(np.full((1, 2), 2.0), np.zeros(1), np.zeros(1))
    assert rec.take(0)[0].tolist() == [[2.0, 2.0]]
    with pytest.raises(ValueError, match="one row per env"):
        rec.append(np.zeros((2, 2)), np.zeros(2), np.zeros(2))


def test_a_dict_in_another_order_is_the_same_structure_and_another_key_set_is_refused():
    rec = EpisodeRecorder(2)
    rec.append({"a": np.zeros((2, 3)), "b": np.ones((2,))}, np.array([0, 1]), np.array([0.0, 1.0]))
    rec.append({"b": np.full((2,), 2.0), "a": np.full((2, 3), 3.0)}, np.array([1, 0]), np.array([0.5, 0.5]))
    obs, actions, _ = rec.take(0)
    assert obs["a"][:, 0].tolist() == [0.0, 3.0] and obs["b"].tolist() == [1.0, 2.0] and actions.tolist() == [0, 1]
    for changed in ({"a": np.zeros((2, 3)), "c": np.ones((2,))}, (np.zeros((2, 3)), np.ones((2,)))):
        with pytest.raises(ValueError, match="changed structure"):
            rec.append(changed, np.array([0, 1]), np.array([0.0, 1.0]))
