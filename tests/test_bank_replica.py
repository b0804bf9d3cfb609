"""Read replicas (:class:`~experience_wrappers.bank.BankReplica`): a replica answers exactly as the
bank did at the version it copied, whatever the bank does next; its single-key path answers as the
bank's steps; its retrieval counts reach the bank; it is read without the bank's lock; the holder
a service's worker swaps it in with (``integrations.ray.replica_holder``); the manager's own read
replica was removed and is refused by name."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from experience_wrappers import ExperienceBank, ManagerConfig
from experience_wrappers.bank import BankReplica
from integrations.ray.replica_holder import ReplicaHolder
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
    # a huge finite key (its squared norm overflows hnswlib's float32 distances) takes the bank's steps,
    # which refuse it
    for key in (np.full(6, 1e30, F32), np.full(6, 1e17, F32)):
        with pytest.raises(ValueError, match=r"within \+-1e\+15"):
            replica.query(key, 2, mode="knn")


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
    assert holder.swap().size == 0 and holder.current is first  # nothing published: nothing swapped
    bank.add(np.eye(4, dtype=F32), np.ones((4, 2), F32))
    assert bank.version - holder.current.version == 1 and len(holder.current) == 0
    newer = bank.replica()
    holder.publish(newer)
    holder.publish(first)  # an older copy published later does not replace the newer one
    assert len(holder.current) == 0  # readers see the copy only after they swap
    holder.swap()
    assert len(holder.current) == 4 and holder.current.version == bank.version and holder.swaps == 1


def test_queries_on_a_replica_never_wait_for_a_write_to_its_bank():
    bank = ExperienceBank(capacity=64, seed=0)
    bank.add(np.eye(4, dtype=F32), np.ones((4, 2), F32))
    replica = bank.replica()
    held, release = threading.Event(), threading.Event()

    def writer() -> None:
        with bank.core.lock.write():  # a write in progress, as long as the test says
            held.set()
            release.wait(10)

    t = threading.Thread(target=writer)
    t.start()
    held.wait(5)
    answered = threading.Event()

    def read() -> None:
        replica.query(np.eye(4, dtype=F32)[:1], 2, mode="knn")
        answered.set()

    reader = threading.Thread(target=read)
    reader.start()
    try:
        assert answered.wait(5), "a query on the replica waited for the bank's write lock"
    finally:
        release.set()
        t.join()
        reader.join()


def test_the_removed_manager_replica_is_refused_by_name_and_dropped_from_old_saves():
    for name, value in (("read_replica", True), ("read_replica", False), ("replica_swap", "write")):
        with pytest.raises(TypeError, match=f"{name}=.*removed.*retrievals read the bank"):
            ManagerConfig(**{name: value})
    saved = {**ManagerConfig(mode="sync").to_dict(), "read_replica": True, "replica_swap": "rollout"}
    assert ManagerConfig.from_dict(saved) == ManagerConfig(mode="sync")  # an older save loads; reads go to the bank
    assert "read_replica" not in ManagerConfig().to_dict()
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
