"""Read replicas (:class:`~experience_wrappers.bank.BankReplica`): a replica answers exactly as the
bank did at the version it copied, whatever the bank does next; its single-key path answers as the
bank's steps; its retrieval counts reach the bank; the manager's replica is swapped at polls and
read without the bank's lock."""

from __future__ import annotations

import threading

import gymnasium as gym
import numpy as np
import pytest

from experience_wrappers import ExperienceBank, ExperienceManager, ManagerConfig
from experience_wrappers.bank import BankReplica
from experience_wrappers.manager import Episode
from experience_wrappers.manager.replicas import ReplicaHolder
from experience_wrappers.wrappers import ExperienceOptions
from experience_wrappers.wrappers.retrieval import Retriever
from tests.test_bank_query_fast_path import assert_same_result, churned_bank

F32 = np.float32


@pytest.mark.parametrize("seed", [0, 1])
def test_a_replica_answers_as_the_bank_did_at_its_version_after_any_change(seed):
    bank = churned_bank(seed, tasks=2)
    rng = np.random.default_rng(seed)
    keys = rng.normal(size=(12, 6)).astype(F32)
    tasks = rng.integers(0, 2, 12)
    calls = [dict(k=3, mode="knn"), dict(k=3, mode="knn", task_ids=tasks), dict(k=5, mode="utility", task_ids=tasks),
             dict(k=2, mode="random")]
    before = []
    for kw in calls:
        before.append(bank.query(keys, record=False, rng=np.random.default_rng(7), **kw))
    replica = bank.replica()
    # the bank moves on: new entries, evictions, credit, removals, a merge
    bank.add(keys + 1e-4, rng.normal(size=(12, 3)), context=rng.normal(size=(12, 2)), task_ids=tasks)
    bank.update(bank.entries()["id"][:30], np.ones(30), 0.5)
    bank.remove(bank.entries()["id"][:10])
    bank.merge(threshold=0.5)
    assert replica.version < bank.version
    for kw, want in zip(calls, before, strict=True):
        got = replica.query(keys, record=False, rng=np.random.default_rng(7), **kw)
        assert_same_result(got, want)


@pytest.mark.parametrize("k", [1, 4, 9])
def test_the_single_key_path_answers_as_the_banks_steps(k):
    bank = churned_bank(3)
    replica = bank.replica()
    assert replica._raw is not None  # the path is on for this bank
    for key in np.random.default_rng(k).normal(size=(25, 6)).astype(F32):
        for task_ids in (None, 0, np.zeros(1, np.int64)):
            want = bank.query(key, k, mode="knn", task_ids=task_ids, record=False)
            assert_same_result(replica.query(key, k, mode="knn", task_ids=task_ids, record=False), want)


def test_the_single_key_path_refuses_what_the_bank_refuses():
    bank = churned_bank(0)
    replica = bank.replica()
    for bad in (np.full(6, np.nan, F32), np.array([np.inf, 0, 0, 0, 0, 0], F32)):
        with pytest.raises(ValueError, match="NaN or inf"):
            replica.query(bad, 2, mode="knn")
    with pytest.raises(ValueError, match="6 columns"):
        replica.query(np.zeros(5, F32), 2, mode="knn")
    with pytest.raises(ValueError, match="k must be"):
        replica.query(np.zeros(6, F32), 0, mode="knn")
    # a huge finite key (its squared norm overflows float32) takes the bank's steps and is answered
    assert replica.query(np.full(6, 1e30, F32), 2, mode="knn").mask.all()


def test_recorded_retrievals_reach_the_bank_through_take_hits():
    bank = churned_bank(1)
    replica = bank.replica()
    keys = np.random.default_rng(0).normal(size=(5, 6)).astype(F32)
    picked = [replica.query(key, 3, mode="knn").ids.ravel() for key in keys]  # single-key path
    picked.append(replica.query(keys, 2, mode="utility").ids.ravel())  # the general steps
    picked.append(replica.query(keys, 2, mode="knn", record=False).ids.ravel())  # not counted
    hits = replica.take_hits()
    np.testing.assert_array_equal(np.sort(hits), np.sort(np.concatenate(picked[:-1])))
    assert len(replica.take_hits()) == 0  # taken once
    counts_before = bank.entries()
    gone = int(hits[0])
    bank.remove([gone])
    assert bank.record_retrievals(hits) == int((hits != gone).sum())
    after = bank.entries()
    slot = {int(i): j for j, i in enumerate(counts_before["id"])}
    for j, entry_id in enumerate(after["id"].tolist()):
        want = counts_before["n_retrieved"][slot[entry_id]] + int((hits == entry_id).sum())
        assert after["n_retrieved"][j] == want
    # the replica's own counts rose at once (utility sampling's retrieval penalty sees them)
    assert replica._bank.entries()["n_retrieved"].sum() == bank.entries()["n_retrieved"].sum() - sum(
        counts_before["n_retrieved"]) + counts_before["n_retrieved"][slot[gone]] + int((hits == gone).sum())


def test_versions_count_changes_not_queries():
    bank = ExperienceBank(capacity=8)
    assert bank.version == 0
    bank.add(np.eye(3, dtype=F32), np.ones((3, 2), F32))
    v = bank.version
    bank.query(np.eye(3, dtype=F32)[0], 1)
    bank.record_retrievals([0, 1])
    assert bank.version == v
    bank.update([0], [1.0], 0.5)
    assert bank.version == v + 1
    with pytest.raises(ValueError):
        bank.update([0], [np.nan], 0.5)  # refused before anything changes: no new version
    assert bank.version == v + 1


def test_an_empty_replica_answers_nothing():
    replica = ExperienceBank(capacity=8).replica()
    res = replica.query(np.zeros(3, F32), 2, mode="knn")
    assert len(replica) == 0 and not res.mask.any() and len(replica.take_hits()) == 0


def test_the_holder_publishes_only_changes_and_swaps_whole():
    bank = ExperienceBank(capacity=64, seed=0)
    holder = ReplicaHolder(bank)
    first = holder.current
    holder.publish()
    assert holder.swap().size == 0 and holder.current is first  # nothing changed: nothing copied
    bank.add(np.eye(4, dtype=F32), np.ones((4, 2), F32))
    assert holder.lag == 1 and len(holder.current) == 0
    holder.publish()
    assert len(holder.current) == 0  # readers see the copy only after they swap
    holder.swap()
    assert len(holder.current) == 4 and holder.lag == 0 and holder.swaps == 1


def _episode(obs_dim: int = 4, steps: int = 12, success: bool = True, ids=()) -> Episode:
    rng = np.random.default_rng(steps)
    return Episode(observations=rng.normal(size=(steps, obs_dim)).astype(F32), actions=rng.integers(0, 2, steps),
                   rewards=np.ones(steps), success=success, guided=bool(len(ids)),
                   injected_ids=np.asarray(ids, np.int64))


def _cartpole_manager(mode: str) -> ExperienceManager:
    env = gym.make("CartPole-v1")
    mgr = ExperienceManager(ExperienceBank(seed=0), env.observation_space, env.action_space,
                            config=ManagerConfig(mode=mode, read_replica=True, extractor={"seed": 0}))
    env.close()
    return mgr


@pytest.mark.parametrize("mode", ["sync", "async", "process"])
def test_the_managers_replica_shows_new_entries_after_the_next_poll(mode):
    mgr = _cartpole_manager(mode)
    try:
        retriever = Retriever.for_manager(mgr, 2, ExperienceOptions(k=2, query_mode="knn"))
        obs = np.zeros((2, 4), F32)
        mgr.submit(_episode())
        mgr.flush()
        if mode == "process":  # the entries come back at the next poll, on the writer thread
            mgr.poll()
            mgr.flush()
        assert len(mgr.bank) > 0 and len(mgr.reader) == 0  # written, not yet seen
        assert not retriever.retrieve(np.arange(2), obs, np.zeros(2, np.int64)).mask.any()
        mgr.poll()
        mgr.flush()  # async: the copy is made on the worker
        mgr.poll()
        assert len(mgr.reader) == len(mgr.bank) and mgr.stats()["replica_lag"] == 0
        res = retriever.retrieve(np.arange(2), obs, np.zeros(2, np.int64))
        assert res.mask.all()
        mgr.poll()
        mgr.flush()
        retrieved = mgr.bank.entries()["n_retrieved"].sum()
        assert retrieved == res.mask.sum()  # the replica's retrievals were counted in the bank
    finally:
        mgr.close()


def test_retrievals_from_the_replica_never_wait_for_a_write():
    mgr = _cartpole_manager("sync")
    try:
        mgr.submit(_episode())
        mgr.poll()
        retriever = Retriever.for_manager(mgr, 1, ExperienceOptions(k=2, query_mode="knn"))
        held, release = threading.Event(), threading.Event()

        def writer() -> None:
            with mgr.bank.core.lock.write():  # a write in progress, as long as the test says
                held.set()
                release.wait(10)

        t = threading.Thread(target=writer)
        t.start()
        held.wait(5)
        answered = threading.Event()

        def read() -> None:
            retriever.retrieve(np.arange(1), np.zeros((1, 4), F32), np.zeros(1, np.int64))
            answered.set()

        reader = threading.Thread(target=read)
        reader.start()
        try:
            assert answered.wait(5), "a retrieval waited for the bank's write lock"
        finally:
            release.set()
            t.join()
            reader.join()
    finally:
        mgr.close()


def test_the_replica_setting_round_trips_and_is_checked():
    cfg = ManagerConfig(read_replica=True)
    assert ManagerConfig.from_dict(cfg.to_dict()).read_replica is True
    with pytest.raises(TypeError, match="read_replica"):
        ManagerConfig(read_replica="yes")
    assert isinstance(ExperienceBank(capacity=4).replica(), BankReplica)


def test_a_pickled_replica_answers_as_the_original():
    import pickle

    bank = churned_bank(2, tasks=2)
    replica = bank.replica()
    copy = pickle.loads(pickle.dumps(replica))
    assert copy.version == replica.version and len(copy) == len(replica)
    keys = np.random.default_rng(1).normal(size=(6, 6)).astype(F32)
    for key in keys:
        assert_same_result(copy.query(key, 3, mode="knn", record=False), replica.query(key, 3, mode="knn", record=False))
    tasks = np.array([0, 1, 1, 0, 0, 1])
    assert_same_result(copy.query(keys, 4, mode="knn", task_ids=tasks, record=False),
                       replica.query(keys, 4, mode="knn", task_ids=tasks, record=False))


def test_many_single_key_retrievals_are_all_counted():
    bank = churned_bank(0)
    replica = bank.replica()
    keys = np.random.default_rng(3).normal(size=(2500, 6)).astype(F32)
    picked = np.concatenate([replica.query(key, 2, mode="knn").ids.ravel() for key in keys])
    hits = replica.take_hits()
    np.testing.assert_array_equal(np.sort(hits), np.sort(picked))
    assert replica._bank.entries()["n_retrieved"].sum() - bank.entries()["n_retrieved"].sum() == len(picked)


def test_a_replica_unpickled_into_read_only_arrays_still_counts_its_retrievals():
    """As Ray's object store hands numpy arrays back: read-only buffers."""
    import pickle

    buffers: list = []
    data = pickle.dumps(churned_bank(1).replica(), protocol=5, buffer_callback=buffers.append)
    assert buffers  # the columns travel out of band, as through Ray
    frozen = []
    for b in buffers:
        arr = np.frombuffer(b.raw(), dtype=np.uint8).copy()
        arr.flags.writeable = False
        frozen.append(arr)
    copy = pickle.loads(data, buffers=frozen)
    key = np.zeros(6, F32)
    copy.query(key, 2, mode="knn")
    copy.query(key[None], 2, mode="utility")  # the general steps write the counts too
    assert len(copy.take_hits()) == 4


def test_the_single_key_path_searches_with_the_banks_ef_after_a_larger_query():
    bank = ExperienceBank(capacity=400, seed=0, ef_search=8, dedup_threshold=0.0)
    rng = np.random.default_rng(0)
    bank.add(rng.normal(size=(300, 6)).astype(F32), rng.normal(size=(300, 2)))
    bank.query(rng.normal(size=6).astype(F32), 40, mode="knn")  # ef raised to 40 on the bank's index
    replica = bank.replica()
    replica.query(rng.normal(size=(2, 6)).astype(F32), 30, mode="knn")  # and on the copy's, by the general steps
    for key in rng.normal(size=(30, 6)).astype(F32):
        want = bank.query(key, 3, mode="knn", record=False)
        assert_same_result(replica.query(key, 3, mode="knn", record=False), want)


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_a_replica_swapped_on_write_shows_new_entries_at_the_next_retrieval(mode):
    env = gym.make("CartPole-v1")
    mgr = ExperienceManager(ExperienceBank(seed=0), env.observation_space, env.action_space,
                            config=ManagerConfig(mode=mode, read_replica=True, replica_swap="write"))
    env.close()
    try:
        retriever = Retriever.for_manager(mgr, 1, ExperienceOptions(k=2, query_mode="knn"))
        mgr.submit(_episode())
        mgr.flush()  # no poll: the copy made after the write is read at once
        res = retriever.retrieve(np.arange(1), np.zeros((1, 4), F32), np.zeros(1, np.int64))
        assert res.mask.all() and len(mgr.reader) == len(mgr.bank)
        mgr.submit(_episode(steps=20))
        mgr.flush()
        retriever.retrieve(np.arange(1), np.zeros((1, 4), F32), np.zeros(1, np.int64))  # swaps the older copy out
        mgr.submit(_episode(steps=16))
        mgr.flush()  # its write publishes a copy, and hands the swapped-out copy's retrievals to the bank
        assert mgr.bank.entries()["n_retrieved"].sum() >= 2
    finally:
        mgr.close()


def test_the_swap_setting_is_checked():
    with pytest.raises(ValueError, match="replica_swap"):
        ManagerConfig(read_replica=True, replica_swap="never")


@pytest.mark.parametrize("mode", ["sync", "async", "process"])
def test_a_save_right_after_retrievals_holds_what_the_replica_counted(mode, tmp_path):
    """The retrievals a replica counted since the last poll are in the save (they were left out: 0 saved)."""
    mgr = _cartpole_manager(mode)
    try:
        mgr.submit(_episode())
        mgr.flush()
        for _ in range(3):  # the entries reach the bank, then the replica
            mgr.poll()
            mgr.flush()
        retriever = Retriever.for_manager(mgr, 2, ExperienceOptions(k=2, query_mode="knn"))
        res = retriever.retrieve(np.arange(2), np.zeros((2, 4), F32), np.zeros(2, np.int64))
        assert res.mask.sum() == 4
        saved = ExperienceBank.load(mgr.save(tmp_path / "run") / "bank")
        assert saved.entries()["n_retrieved"].sum() == 4
        assert mgr.bank.entries()["n_retrieved"].sum() == 4  # counted once, not again at the next poll
        mgr.poll()
        mgr.flush()
        assert mgr.bank.entries()["n_retrieved"].sum() == 4
    finally:
        mgr.close()
