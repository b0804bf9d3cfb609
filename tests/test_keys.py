"""Key encoders and the flattening rules they rest on."""

from __future__ import annotations

import pickle

import gymnasium as gym
import numpy as np
import pytest
from gymnasium import spaces

from experience_wrappers.keys import (
    CallableKeyEncoder,
    RandomProjectionKeyEncoder,
    batch_flatten,
    flat_dim,
)
from experience_wrappers.keys.base import squash_unbounded

BIG = spaces.Box(-1.0, 1.0, (100,), np.float32)


def ids(n: int, task: int = 0) -> np.ndarray:
    return np.full(n, task, dtype=np.int64)


# ------------------------------------------------------------ random projection
def test_same_seed_gives_same_keys_and_other_seed_other_keys(rng):
    obs = rng.uniform(-1, 1, (5, 100)).astype(np.float32)
    a = RandomProjectionKeyEncoder(BIG, key_dim=16, seed=3).encode(obs, ids(5))
    b = RandomProjectionKeyEncoder(BIG, key_dim=16, seed=3).encode(obs, ids(5))
    c = RandomProjectionKeyEncoder(BIG, key_dim=16, seed=4).encode(obs, ids(5))
    np.testing.assert_array_equal(a, b)
    assert not np.allclose(a, c)
    assert a.dtype == np.float32 and a.shape == (5, 16)


def test_keys_are_unit_norm(rng):
    enc = RandomProjectionKeyEncoder(BIG, key_dim=16)
    keys = enc.encode(rng.uniform(-1, 1, (20, 100)), ids(20))
    np.testing.assert_allclose(np.linalg.norm(keys, axis=1), 1.0, atol=1e-5)


def test_same_obs_same_key_different_obs_different_keys(rng):
    enc = RandomProjectionKeyEncoder(BIG, key_dim=16)
    obs = rng.uniform(-1, 1, (10, 100)).astype(np.float32)
    keys = enc.encode(obs, ids(10))
    # single-observation call agrees with the batched one, and repeated calls agree
    for i in range(10):
        np.testing.assert_allclose(enc(obs[i]), keys[i], atol=1e-6)
        np.testing.assert_array_equal(enc(obs[i]), enc(obs[i].copy()))
    d = np.linalg.norm(keys[:, None] - keys[None], axis=-1)
    off_diagonal = d[~np.eye(10, dtype=bool)]
    assert off_diagonal.min() > 0.05


def test_low_dim_obs_is_kept_without_projection():
    space = spaces.Box(-2.0, 2.0, (3,), np.float32)
    enc = RandomProjectionKeyEncoder(space, key_dim=8)
    obs = np.array([[1.0, -2.0, 0.5]], dtype=np.float32)
    key = enc.encode(obs, ids(1))[0]
    scaled = np.array([0.5, -1.0, 0.25, 1.0])  # the observation mapped to [-1, 1], then the constant 1
    np.testing.assert_allclose(key[:4], scaled / np.linalg.norm(scaled), atol=1e-6)
    np.testing.assert_array_equal(key[4:], 0.0)
    # obs that differ only in scale along a kept direction stay distinguishable per coordinate
    other = enc.encode(np.array([[1.0, -2.0, -0.5]], dtype=np.float32), ids(1))[0]
    assert np.sign(other[2]) == -np.sign(key[2])


def test_cartpole_keys_are_finite_and_distinguish_states():
    env = gym.make("CartPole-v1")
    enc = RandomProjectionKeyEncoder(env.observation_space, key_dim=32)
    obs, _ = env.reset(seed=0)
    rows = [obs]
    for _ in range(5):
        obs, *_ = env.step(1)
        rows.append(obs)
    keys = enc.encode(np.stack(rows), ids(len(rows)))
    assert np.all(np.isfinite(keys))
    np.testing.assert_array_equal(keys[:, 5:], 0.0)  # 4-dim obs and the constant: no projection
    assert len({k.tobytes() for k in keys}) == len(rows)


def test_task_weight_separates_tasks(rng):
    obs = rng.uniform(-1, 1, (4, 100)).astype(np.float32)
    plain = RandomProjectionKeyEncoder(BIG, key_dim=16)
    np.testing.assert_array_equal(plain.encode(obs, ids(4, 0)), plain.encode(obs, ids(4, 1)))
    enc = RandomProjectionKeyEncoder(BIG, key_dim=16, task_weight=2.0)
    k0, k1 = enc.encode(obs, ids(4, 0)), enc.encode(obs, ids(4, 1))
    np.testing.assert_allclose(np.linalg.norm(k1, axis=1), 1.0, atol=1e-5)
    # the same observation under two tasks lies farther apart than two observations of one task
    cross = np.linalg.norm(k0 - k1, axis=1).min()
    within = np.linalg.norm(k0[:, None] - k0[None], axis=-1)[~np.eye(4, dtype=bool)].max()
    assert cross > within
    # the task direction is a fixed function of (seed, task): repeatable
    np.testing.assert_array_equal(k1, enc.encode(obs, ids(4, 1)))


@pytest.mark.parametrize("bad", [0, -3, 2.5, True])
def test_bad_key_dim_raises(bad):
    with pytest.raises(ValueError, match="key_dim"):
        RandomProjectionKeyEncoder(BIG, key_dim=bad)


@pytest.mark.parametrize("bad", [-1.0, float("nan"), float("inf")])
def test_bad_task_weight_raises(bad):
    with pytest.raises(ValueError, match="task_weight"):
        RandomProjectionKeyEncoder(BIG, task_weight=bad)


# ------------------------------------------------------------------ flattening
def test_flatten_bounded_box_maps_to_unit_interval():
    space = spaces.Box(np.array([0.0, -10.0], np.float32), np.array([4.0, 10.0], np.float32))
    out = batch_flatten(space, np.array([[0.0, 10.0], [2.0, -5.0], [4.0, 0.0]]))
    np.testing.assert_allclose(out, [[-1.0, 1.0], [0.0, -0.5], [1.0, 0.0]])
    assert out.dtype == np.float32


def test_flatten_unbounded_box_is_squashed():
    space = spaces.Box(-np.inf, np.inf, (2,), np.float32)
    x = np.array([[0.0, 3.0], [-100.0, 1e9]])
    np.testing.assert_allclose(batch_flatten(space, x), squash_unbounded(x), rtol=1e-6)
    np.testing.assert_allclose(batch_flatten(space, np.array([[np.e - 1, 0.0]])), [[1.0, 0.0]], rtol=1e-6)


def test_flatten_huge_bounds_like_cartpole_are_squashed():
    # CartPole: two bounded dims and two without useful bounds (inf, or float32 max in
    # older gymnasium releases); the latter must be squashed, not divided by ~3e38
    x = np.array([[4.8, 2.0, -0.2095, -3.0]], dtype=np.float32)
    f32max = np.finfo(np.float32).max
    for high_free in (np.inf, f32max):
        high = np.array([4.8, high_free, 0.41887903, high_free], dtype=np.float32)
        space = spaces.Box(-high, high, dtype=np.float32)
        out = batch_flatten(space, x)[0]
        assert out[0] == pytest.approx(1.0, rel=1e-5)
        assert out[2] == pytest.approx(-0.2095 / 0.41887903, rel=1e-4)
        assert out[1] == pytest.approx(np.log1p(2.0), rel=1e-6)
        assert out[3] == pytest.approx(-np.log1p(3.0), rel=1e-6)
    real = batch_flatten(gym.make("CartPole-v1").observation_space, x)[0]
    assert real[1] == pytest.approx(np.log1p(2.0), rel=1e-6)
    big = spaces.Box(-1e7, 1e7, (1,), np.float32)
    assert batch_flatten(big, np.array([[5.0]]))[0, 0] == pytest.approx(np.log1p(5.0), rel=1e-6)
    just_under = spaces.Box(-4e5, 4e5, (1,), np.float32)  # span 8e5 < 1e6: scaled, not squashed
    assert batch_flatten(just_under, np.array([[2e5]]))[0, 0] == pytest.approx(0.5)


def test_flatten_multidimensional_box_rows():
    space = spaces.Box(0, 255, (2, 3), np.uint8)
    batch = np.zeros((4, 2, 3), dtype=np.uint8)
    batch[1] = 255
    out = batch_flatten(space, batch)
    assert out.shape == (4, 6) == (4, flat_dim(space))
    np.testing.assert_allclose(out[0], -1.0)
    np.testing.assert_allclose(out[1], 1.0)


def test_flatten_discrete_is_one_hot_with_start():
    space = spaces.Discrete(3, start=1)
    out = batch_flatten(space, np.array([1, 3, 2]))
    np.testing.assert_array_equal(out, [[1, 0, 0], [0, 0, 1], [0, 1, 0]])
    assert out.shape[1] == flat_dim(space)


def test_flatten_multidiscrete_is_concatenated_one_hots():
    space = spaces.MultiDiscrete([2, 3])
    out = batch_flatten(space, np.array([[1, 0], [0, 2]]))
    np.testing.assert_array_equal(out, [[0, 1, 1, 0, 0], [1, 0, 0, 0, 1]])
    assert out.shape[1] == flat_dim(space)


def test_flatten_multibinary_stays_binary():
    space = spaces.MultiBinary(4)
    out = batch_flatten(space, np.array([[1, 0, 0, 1], [0, 1, 1, 0]], dtype=np.int8))
    np.testing.assert_array_equal(out, [[1, 0, 0, 1], [0, 1, 1, 0]])
    assert out.dtype == np.float32


def test_flatten_dict_concatenates_in_key_order():
    space = spaces.Dict({"b": spaces.Box(-2.0, 2.0, (2,)), "a": spaces.Discrete(3)})
    batch = {"a": np.array([2, 0]), "b": np.array([[2.0, -1.0], [0.0, 0.0]])}
    out = batch_flatten(space, batch)
    # gymnasium sorts Dict keys: "a" comes first
    np.testing.assert_allclose(out, [[0, 0, 1, 1.0, -0.5], [1, 0, 0, 0.0, 0.0]])
    assert out.shape[1] == flat_dim(space)


def test_flatten_tuple_concatenates_in_order():
    space = spaces.Tuple((spaces.Discrete(2), spaces.Box(0.0, 1.0, (1,))))
    out = batch_flatten(space, (np.array([1, 0]), np.array([[1.0], [0.5]])))
    np.testing.assert_allclose(out, [[0, 1, 1.0], [1, 0, 0.0]])


def test_flatten_unknown_space_raises_type_error():
    with pytest.raises(TypeError, match="key_encoder"):
        batch_flatten(spaces.Text(5), np.array(["hello"]))


def test_random_projection_on_dict_observation():
    space = spaces.Dict({"pos": spaces.Box(-1.0, 1.0, (2,)), "room": spaces.Discrete(4)})
    enc = RandomProjectionKeyEncoder(space, key_dim=16)
    k_a = enc({"pos": np.array([0.1, 0.2], np.float32), "room": 1})
    k_b = enc({"pos": np.array([0.1, 0.2], np.float32), "room": 2})
    assert k_a.shape == (16,) and not np.allclose(k_a, k_b)


# --------------------------------------------------------------------- callable
def test_callable_encoder_returns_float32_rows():
    enc = CallableKeyEncoder(lambda obs, tasks: obs[:, :2] * 2, key_dim=2)
    keys = enc.encode(np.arange(6, dtype=np.int64).reshape(3, 2), ids(3))
    assert keys.dtype == np.float32
    np.testing.assert_array_equal(keys, [[0, 2], [4, 6], [8, 10]])
    np.testing.assert_array_equal(enc(np.array([1, 2])), [2, 4])


def test_callable_encoder_wrong_shape_raises():
    enc = CallableKeyEncoder(lambda obs, tasks: obs, key_dim=2)
    with pytest.raises(ValueError, match=r"shape \(3, 5\), expected \(3, 2\)"):
        enc.encode(np.ones((3, 5)), ids(3))
    one_row = CallableKeyEncoder(lambda obs, tasks: obs[:1, :2], key_dim=2)
    with pytest.raises(ValueError, match="expected"):
        one_row.encode(np.ones((3, 5)), ids(3))


def test_callable_encoder_nan_raises():
    enc = CallableKeyEncoder(lambda obs, tasks: obs, key_dim=2)
    with pytest.raises(ValueError, match="NaN or inf"):
        enc.encode(np.array([[0.0, np.nan]]), ids(1))
    with pytest.raises(ValueError, match="NaN or inf"):
        enc.encode(np.array([[np.inf, 0.0]]), ids(1))


def test_callable_encoder_bad_arguments():
    with pytest.raises(TypeError, match="callable"):
        CallableKeyEncoder("not a function", key_dim=2)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="key_dim"):
        CallableKeyEncoder(lambda o, t: o, key_dim=0)


def test_small_box_states_that_differ_in_scale_get_keys_of_their_own():
    # unit-normalising the observation alone kept its direction only: positions 0, 2 and 4.9 of a
    # corridor shared one key, 5.0 (the centre) had a zero key, and (3, 3) and (4, 4) of a grid one key
    corridor = RandomProjectionKeyEncoder(spaces.Box(0.0, 10.0, (1,)))
    keys = corridor.encode(np.arange(11, dtype=np.float32)[:, None], np.zeros(11, np.int64))
    assert len(np.unique(keys.round(5), axis=0)) == 11
    np.testing.assert_allclose(np.linalg.norm(keys, axis=1), 1.0, rtol=1e-6)  # the centre's too
    grid = RandomProjectionKeyEncoder(spaces.Box(0.0, 4.0, (2,)))
    cells = np.array([(r, c) for r in range(5) for c in range(5)], dtype=np.float32)
    assert len(np.unique(grid.encode(cells, np.zeros(25, np.int64)).round(5), axis=0)) == 25
    wide = RandomProjectionKeyEncoder(spaces.Box(-1.0, 1.0, (100,)), key_dim=16)  # projected
    x = np.random.default_rng(0).uniform(-0.5, 0.5, (1, 100)).astype(np.float32)
    assert not np.allclose(wide.encode(x, np.zeros(1, np.int64)), wide.encode(2 * x, np.zeros(1, np.int64)))


def test_an_encoder_pickled_before_keep_scale_keys_by_direction_as_it_did():
    enc = RandomProjectionKeyEncoder(spaces.Box(0.0, 10.0, (1,)))
    state = dict(enc.__dict__)
    del state["keep_scale"], state["_bias"]  # what an encoder pickled before the option holds
    old = RandomProjectionKeyEncoder.__new__(RandomProjectionKeyEncoder)
    old.__setstate__(state)
    keys = old.encode(np.array([[2.0], [4.0]], np.float32), np.zeros(2, np.int64))
    np.testing.assert_array_equal(keys[0], keys[1])  # the direction alone
    restored = pickle.loads(pickle.dumps(enc))
    assert restored.keep_scale and restored.encode(np.array([[2.0]], np.float32), np.zeros(1, np.int64))[0, 1] > 0
    with pytest.raises(TypeError, match="keep_scale must be a bool"):
        RandomProjectionKeyEncoder(spaces.Box(0.0, 1.0, (1,)), keep_scale="yes")


@pytest.mark.parametrize("space,batch", [
    (spaces.Box(-1, 1, (4,)), np.zeros((0, 4))),
    (spaces.MultiDiscrete([2, 3]), np.zeros((0, 2), np.int64)),
    (spaces.Dict({"a": spaces.Box(0, 1, (2,)), "b": spaces.Discrete(3)}), {"a": np.zeros((0, 2)), "b": np.zeros(0, int)}),
])
def test_an_empty_batch_has_no_keys(space, batch):
    """(n, key_dim) for n = 0 too, not a reshape error."""
    enc = RandomProjectionKeyEncoder(space)
    assert enc.encode(batch, np.zeros(0, np.int64)).shape == (0, enc.key_dim)


def test_a_batch_of_another_shape_is_named():
    enc = RandomProjectionKeyEncoder(spaces.Box(-1, 1, (4,)))
    with pytest.raises(ValueError, match=r"must have shape \(n, \*\(4,\)\), got \(2, 5\)"):
        enc.encode(np.zeros((2, 5)), np.zeros(2, np.int64))
