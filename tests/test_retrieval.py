"""``Retriever`` and ``ExperienceOptions``: the retrieval path and the wrappers' shared settings."""

from __future__ import annotations

import warnings
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
import torch as th

from experience_wrappers import ExperienceBank, ExperienceOptions, ExperienceWrapper
from experience_wrappers.wrappers import Retriever
from integrations.sb3.experimental import prior_mixture

SYNC = {"mode": "sync"}


def _filled(episodes: int = 4, **options: Any) -> ExperienceWrapper:
    """A CartPole wrapper (``options``: its keywords) whose bank holds the entries of a few random episodes."""
    env = ExperienceWrapper(gym.make("CartPole-v1"), ExperienceBank(seed=0), manager_kwargs={**SYNC, "segment_every": 4},
                            **options)
    env.action_space.seed(0)
    for i in range(episodes):
        env.reset(seed=i)
        done = False
        while not done:
            _, _, term, trunc, _ = env.step(env.action_space.sample())
            done = term or trunc
    assert len(env.bank) > 8
    return env


def _observations(n: int) -> np.ndarray:
    env = gym.make("CartPole-v1")
    return np.stack([env.reset(seed=100 + i)[0] for i in range(n)])


@pytest.mark.parametrize("mode", ["knn", "utility", "random"])
@pytest.mark.parametrize("filter_by_task", [True, False])
def test_the_retriever_answers_as_a_direct_bank_query_on_the_encoded_keys(mode, filter_by_task):
    env = _filled()
    mgr = env.manager
    obs, tasks = _observations(5), np.zeros(5, np.int64)
    retriever = Retriever(mgr.key_encoder, mgr.bank, 5, k=3, exp_dim=mgr.exp_dim, prior_dim=mgr.prior_dim,
                          query_mode=mode, filter_by_task=filter_by_task)
    got = retriever.retrieve(np.arange(5), obs, tasks, record=False, rng=np.random.default_rng(3))
    want = mgr.bank.query(mgr.key_encoder.encode(obs, tasks), 3, task_ids=tasks if filter_by_task else None,
                          mode=mode, record=False, rng=np.random.default_rng(3))
    for field in ("ids", "values", "utility", "prior", "mask"):
        np.testing.assert_array_equal(getattr(got, field), getattr(want, field), err_msg=field)
    assert want.mask.any()
    # what it shows is that answer
    np.testing.assert_array_equal(retriever.ids, np.where(want.mask, want.ids, -1))
    out = retriever.observation(obs)
    np.testing.assert_array_equal(out["experience"], want.values)
    np.testing.assert_array_equal(out["experience_mask"], want.mask.astype(np.float32))
    assert retriever.shown_ids(0) == tuple(want.ids[0][want.mask[0]].tolist())


def test_one_env_alone_is_its_row_of_the_batch_without_the_batch_axis():
    env = _filled()
    mgr = env.manager
    obs = _observations(3)
    retriever = Retriever.for_manager(mgr, 3, ExperienceOptions(k=2, query_mode="knn", experimental={"action_prior": True},
                                                                 retrieve_every=4))
    retriever.retrieve(np.arange(3), obs, np.zeros(3, np.int64), record=False)
    batch = retriever.observation(obs)
    for r in range(3):
        one = retriever.observation(obs[r], r)
        assert one.keys() == batch.keys()
        for key in one:
            np.testing.assert_array_equal(one[key], batch[key][r], err_msg=key)
        assert one in retriever.observation_space(env.env.observation_space)
    retriever.clear(1)
    assert retriever.shown_ids(1) == () and not retriever.observation(obs)["experience"][1].any()


def test_the_wrapper_retrieves_through_its_own_retriever():
    env = _filled()
    retriever = env.injector.retriever
    assert retriever.bank is env.bank and retriever.key_encoder is env.manager.key_encoder
    env.set_force_guided(True)
    obs, info = env.reset(seed=7)
    assert info["experience_ids"] == retriever.shown_ids(0) and len(info["experience_ids"]) > 0


def test_keywords_and_an_options_object_build_the_same_wrapper():
    opts = ExperienceOptions(k=3, retrieve_every=2, query_mode="knn", learn=False, seed=5)
    bank = _filled().bank
    a = ExperienceWrapper(gym.make("CartPole-v1"), bank, options=opts)
    b = ExperienceWrapper(gym.make("CartPole-v1"), bank, k=3, retrieve_every=2, query_mode="knn", learn=False, seed=5)
    assert a.options == b.options == opts
    assert a.observation_space == b.observation_space
    for env in (a, b):
        env.set_force_guided(True)
    oa, _ = a.reset(seed=1)
    ob, _ = b.reset(seed=1)
    for key in oa:
        np.testing.assert_array_equal(oa[key], ob[key], err_msg=key)
    # keywords given with options override its fields
    c = ExperienceWrapper(gym.make("CartPole-v1"), bank, options=opts, k=2)
    assert c.options.k == 2 and c.options.query_mode == "knn"
    assert c.observation_space["experience"].shape[0] == 2


def test_options_are_checked_once_with_the_value_in_the_message():
    with pytest.raises(ValueError, match=r"k must be an int in \[1, 65536\], got True"):
        ExperienceOptions(k=True)
    with pytest.raises(ValueError, match="retrieve_every must be an int >= 0, got -1"):
        ExperienceOptions(retrieve_every=-1)
    with pytest.raises(TypeError, match="filter_by_task must be a bool, got 1"):
        ExperienceOptions(filter_by_task=1)
    with pytest.raises(ValueError, match="task_id must be an int or a callable"):
        ExperienceOptions(task_id=1.5)
    assert ExperienceOptions(task_id=np.int64(2)).task_id == 2
    with pytest.raises(TypeError, match=r"unexpected keyword argument\(s\) \['kk'\]"):
        ExperienceWrapper(gym.make("CartPole-v1"), ExperienceBank(), kk=3)
    with pytest.raises(TypeError, match="options must be an ExperienceOptions, got dict"):
        ExperienceWrapper(gym.make("CartPole-v1"), ExperienceBank(), options={"k": 3})


# ------------------------------------------------------------------ the action path
def _prior_retriever(env: ExperienceWrapper, n: int, experimental: dict | None = None, **options) -> Retriever:
    opts = ExperienceOptions(experimental={"action_prior": True, **(experimental or {})}, retrieve_every=4, **options)
    return Retriever.for_manager(env.manager, n, opts)


def _nearest(env: ExperienceWrapper, obs: np.ndarray, m: int) -> tuple[np.ndarray, np.ndarray]:
    """The exact ``m`` nearest ids of each observation's key, and their squared-l2 distances."""
    mgr = env.manager
    keys = mgr.key_encoder.encode(obs, np.zeros(len(obs), np.int64))
    entries = mgr.bank.entries()
    d = ((keys[:, None, :] - entries["key"][None]) ** 2).sum(-1)
    order = np.argsort(d, axis=1)[:, :m]
    return entries["id"][order], np.take_along_axis(d, order, axis=1)


def _mixture(obs: dict) -> tuple[np.ndarray, np.ndarray]:
    mix, any_mask = prior_mixture({k: th.as_tensor(v) for k, v in obs.items() if k.startswith("experience")})
    return mix.numpy(), any_mask.squeeze(-1).numpy()


def test_the_prior_comes_from_the_nearest_entry_where_utility_sampling_shows_another():
    env = _filled()
    bank = env.bank
    obs = _observations(4)
    near, _ = _nearest(env, obs, 1)
    ids = bank.entries()["id"]
    # the nearest entries worthless, every other one worth much: utility sampling passes them by
    bank.update(ids, np.where(np.isin(ids, near[:, 0]), -50.0, 50.0), decay=0.0)
    r = _prior_retriever(env, 4, k=1, query_mode="utility", experimental={"prior_max_distance": 4.0})
    n_retrieved = bank.entries()["n_retrieved"].copy()
    res = r.retrieve(np.arange(4), obs, np.zeros(4, np.int64), record=False, rng=np.random.default_rng(0))
    assert not np.isin(res.ids[:, 0], near[:, 0]).any()  # the observation channel shows others
    np.testing.assert_array_equal(r.prior_ids[:, 0], near[:, 0])  # the prior is the nearest's
    out = r.observation(obs)
    want = bank.get(near[:, 0])["prior"]
    np.testing.assert_allclose(out["experience_action_prior"][:, 0], want)
    np.testing.assert_array_equal(out["experience"], res.values)  # the observation channel is unchanged
    mix, has = _mixture(out)
    assert has.all() and np.allclose(mix, want, atol=1e-6)
    # the action path's look-ups are not retrievals
    np.testing.assert_array_equal(bank.entries()["n_retrieved"], n_retrieved)


def test_an_entry_beyond_the_floor_gives_no_prior_and_the_policy_acts_alone():
    env = _filled()
    obs = _observations(3)
    _, dist = _nearest(env, obs, 1)
    floor = float(np.median(dist[:, 0]))
    r = _prior_retriever(env, 3, experimental={"prior_max_distance": floor})
    res = r.retrieve(np.arange(3), obs, np.zeros(3, np.int64), record=False)
    assert res.mask.all()  # the observation channel shows its entries either way
    beyond = dist[:, 0] > floor
    assert beyond.any() and (~beyond).any()
    assert (r.prior_ids[beyond] == -1).all() and (r.prior_ids[~beyond] >= 0).all()
    out = r.observation(obs)
    assert not out["experience_action_prior"][beyond].any()
    mix, has = _mixture(out)
    np.testing.assert_array_equal(has, ~beyond)
    assert not mix[beyond].any()


def test_prior_k_2_mixes_the_two_nearest_with_equal_weights():
    env = _filled()
    obs = _observations(3)
    near, _ = _nearest(env, obs, 2)
    r = _prior_retriever(env, 3, k=3, experimental={"prior_k": 2, "prior_max_distance": 4.0})
    r.retrieve(np.arange(3), obs, np.zeros(3, np.int64), record=False)
    np.testing.assert_array_equal(r.prior_ids, near)
    priors = env.bank.get(near.ravel())["prior"].reshape(3, 2, -1)
    out = r.observation(obs)["experience_action_prior"]
    assert out.shape == (3, 3, priors.shape[-1])
    for j in range(3):  # every slot holds the one mixed prior
        np.testing.assert_allclose(out[:, j], priors.mean(axis=1), rtol=1e-6)


def test_the_shown_source_keeps_the_observation_entries_priors():
    env = _filled()
    obs = _observations(3)
    r = _prior_retriever(env, 3, k=2, query_mode="knn", experimental={"prior_source": "shown"})
    res = r.retrieve(np.arange(3), obs, np.zeros(3, np.int64), record=False)
    np.testing.assert_array_equal(r.observation(obs)["experience_action_prior"], res.prior)
    assert (r.prior_ids == -1).all()


def test_the_action_path_options_are_checked():
    with pytest.raises(ValueError, match=r"prior_k must be an int in \[1, 2\], got 0"):
        ExperienceOptions(experimental={"prior_k": 0})
    with pytest.raises(ValueError, match=r"prior_k must be an int in \[1, 2\], got 3"):
        ExperienceOptions(experimental={"prior_k": 3})
    with pytest.raises(ValueError, match="prior_max_distance must be a finite number >= 0, got -0.1"):
        ExperienceOptions(experimental={"prior_max_distance": -0.1})
    with pytest.raises(ValueError, match="prior_max_distance must be a finite number >= 0, got nan"):
        ExperienceOptions(experimental={"prior_max_distance": float("nan")})
    with pytest.raises(ValueError, match="prior_source must be 'nearest' or 'shown', got 'utility'"):
        ExperienceOptions(experimental={"prior_source": "utility"})
    env = _filled()
    mgr = env.manager
    with pytest.raises(ValueError, match="prior_k must be"):
        Retriever(mgr.key_encoder, mgr.bank, 1, k=2, exp_dim=mgr.exp_dim, prior_dim=mgr.prior_dim,
                  action_prior=True, prior_k=3)


def test_a_prior_shown_longer_than_it_describes_warns():
    env = _filled()
    with pytest.warns(UserWarning, match="retrieve_every=8: a prior describes the manager's prior_horizon=4"):
        Retriever.for_manager(env.manager, 1, ExperienceOptions(experimental={"action_prior": True}))
    with pytest.warns(UserWarning, match="shown for a whole episode"):
        Retriever.for_manager(env.manager, 1, ExperienceOptions(experimental={"action_prior": True}, retrieve_every=0))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        Retriever.for_manager(env.manager, 1, ExperienceOptions(experimental={"action_prior": True}, retrieve_every=4))
        Retriever.for_manager(env.manager, 1, ExperienceOptions(retrieve_every=8))  # no prior: no warning


@pytest.mark.slow
def test_the_nearest_prior_agrees_with_the_demonstrator_more_often_than_the_shown_entries():
    """KeyRoom-S5: a bank of 100 scripted demonstrations (one entry per state), held-out
    demonstrated states; the prior's most likely action against the demonstrator's."""
    minihack = pytest.importorskip("integrations.minihack")
    from integrations.demos import ingest_demonstrations

    env_id = "MiniHack-KeyRoom-S5-v0"
    demos = minihack.scripted_demonstrations(env_id, 100, seed=0)
    held = minihack.scripted_demonstrations(env_id, 10, seed=1000)
    base = minihack.make_minihack_env(env_id, seed=0)
    wrapper = ExperienceWrapper(base, ExperienceBank(seed=0), key_encoder=minihack.MiniHackKeyEncoder(base.observation_space),
                                manager_kwargs={**SYNC, "extractor": {"seed": 0}})
    manager = wrapper.manager
    ingest_demonstrations(manager, demos, segment_every=1)
    states = {key: np.concatenate([d.observations[key] for d in held]) for key in held[0].observations}
    actions = np.concatenate([d.actions for d in held]).astype(np.int64)
    n = len(actions)

    def agreement(**experimental) -> float:
        r = Retriever.for_manager(manager, n, ExperienceOptions(experimental={"action_prior": True, **experimental},
                                                                retrieve_every=4))
        r.retrieve(np.arange(n), states, np.zeros(n, np.int64), record=True, rng=np.random.default_rng(0))
        mix, has = _mixture(r.observation(states))
        return float(np.mean(has & (mix.argmax(-1) == actions)))

    old = agreement(prior_source="shown")  # the default observation query: utility sampling of 4 of 16
    new = agreement()  # the action path: the nearest entry within 0.5
    wrapper.close()
    assert new > old + 0.1 and new > 0.7, f"agreement with the demonstrator: nearest {new:.2f}, shown {old:.2f}"
