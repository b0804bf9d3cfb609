"""``Retriever`` and ``ExperienceOptions``: the retrieval path and the wrappers' shared settings."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
import pytest

from experience_wrappers import ExperienceBank, ExperienceOptions, ExperienceWrapper
from experience_wrappers.wrappers import Retriever

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
    retriever = Retriever(mgr.key_encoder, mgr.bank, 5, k=3, exp_dim=mgr.exp_dim,
                          query_mode=mode, filter_by_task=filter_by_task)
    got = retriever.retrieve(np.arange(5), obs, tasks, record=False, rng=np.random.default_rng(3))
    want = mgr.bank.query(mgr.key_encoder.encode(obs, tasks), 3, task_ids=tasks if filter_by_task else None,
                          mode=mode, record=False, rng=np.random.default_rng(3))
    for field in ("ids", "values", "utility", "mask"):
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
    retriever = Retriever.for_manager(mgr, 3, ExperienceOptions(k=2, query_mode="knn", retrieve_every=4))
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
