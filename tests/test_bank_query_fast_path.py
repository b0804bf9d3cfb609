"""The bank's kNN fast path (:func:`~experience_wrappers.bank.search.knn_unfiltered`) answers
exactly as the general query steps do, on a real hnswlib index, and the sorted id lookup
(:class:`~experience_wrappers.bank.idmap.SortedIds`) follows every change of the entries."""

from __future__ import annotations

import numpy as np
import pytest

import experience_wrappers.bank.search as search_module
import experience_wrappers.bank.writes as writes
from experience_wrappers.bank import ExperienceBank
from experience_wrappers.bank.idmap import SortedIds

F32 = np.float32
FIELDS = ("ids", "values", "utility", "distances", "mask")


def churned_bank(seed: int, tasks: int = 1) -> ExperienceBank:
    """A bank after adds with evictions, dedup refreshes, removals, credits and a merge."""
    rng = np.random.default_rng(seed)
    bank = ExperienceBank(capacity=300, seed=seed, dedup_threshold=0.05)
    for step in range(8):
        keys = rng.normal(size=(90, 6)).astype(F32)
        if step:
            keys[:5] = bank.entries()["key"][:5] + 1e-3  # refreshes
        bank.add(keys, rng.normal(size=(90, 3)), context=rng.normal(size=(90, 2)), task_ids=rng.integers(0, tasks, 90),
                 utility=rng.normal(size=90))
        ids = bank.entries()["id"]
        bank.remove(rng.choice(ids, 7, replace=False))
        bank.update(rng.choice(ids, 20), rng.normal(size=20), 0.9)
    bank.merge(threshold=0.5)
    return bank


def both_paths(seed: int, monkeypatch: pytest.MonkeyPatch, calls) -> list:
    """``calls(bank)`` on two identical banks: one with the fast path, one with the general steps;
    the answers and, after them, every entry of each bank."""
    out = []
    for fast in (True, False):
        bank = churned_bank(seed)
        with monkeypatch.context() as m:
            if not fast:
                m.setattr(search_module, "knn_unfiltered", lambda *args: None)
            answers = calls(bank)
        out.append((answers, bank.entries(), bank.stats()))
    return out


def assert_same_result(a, b) -> None:
    for name in FIELDS:
        x, y = getattr(a, name), getattr(b, name)
        assert x.dtype == y.dtype and x.shape == y.shape, name
        np.testing.assert_array_equal(x, y, err_msg=name)


@pytest.mark.parametrize("seed", [0, 1])
def test_fast_path_answers_exactly_as_the_general_steps(seed, monkeypatch):
    queries = np.random.default_rng(100 + seed).normal(size=(40, 6)).astype(F32)

    def calls(bank):
        n = len(bank)
        return [bank.query(queries[0], k=1, mode="knn"),  # one key, as a vector
                bank.query(queries[1:2], k=8, mode="knn"),
                bank.query(queries[:33], k=5, mode="knn"),  # a batch; entries hit by several rows
                bank.query(queries[:7], k=4, mode="knn", task_ids=0),  # a filter that filters nothing
                bank.query(queries[:3], k=n, mode="knn"),  # k = the bank's size
                bank.query(queries[:3], k=n + 2, mode="knn"),  # more than the bank holds: padded
                bank.query(queries[5:9], k=6, mode="knn", record=False),
                bank.query(queries[:0], k=3, mode="knn")]  # no keys

    (fast, fast_entries, fast_stats), (general, general_entries, general_stats) = both_paths(seed, monkeypatch, calls)
    for a, b in zip(fast, general, strict=True):
        assert_same_result(a, b)
    assert fast_stats == general_stats  # the query counter (tick) included
    assert fast_entries.keys() == general_entries.keys()
    for name in fast_entries:  # hit counts and last-retrieved ticks included
        np.testing.assert_array_equal(fast_entries[name], general_entries[name], err_msg=name)


def test_queries_the_fast_path_does_not_take_are_unchanged(monkeypatch):
    taken = []
    real = search_module.knn_unfiltered
    monkeypatch.setattr(search_module, "knn_unfiltered", lambda *args: taken.append(1) or real(*args))
    bank = churned_bank(3, tasks=2)
    q = np.random.default_rng(0).normal(size=(4, 6)).astype(F32)
    bank.query(q, k=3, mode="knn", task_ids=[0, 1, 0, 1])  # filtered by task
    bank.query(q, k=3, mode="utility")
    bank.query(q, k=3, mode="random")
    assert not taken
    bank.query(q, k=3, mode="knn")
    assert taken == [1]


def test_sorted_ids_follow_adds_removals_rollbacks_and_loads(tmp_path, monkeypatch):
    bank = churned_bank(5)
    store = bank.core.store
    every = np.arange(bank.core.next_id + 3)  # absent and removed ids too

    def expected():
        return np.array([store._slot.get(int(i), -1) for i in every])

    np.testing.assert_array_equal(store.find(every), expected())
    bank.add(np.random.default_rng(9).normal(size=(400, 6)).astype(F32), np.zeros((400, 3)),
             context=np.zeros((400, 2)))  # more than the capacity: evictions, appends
    np.testing.assert_array_equal(store.find(every), expected())
    before = store.find(every)

    def fail(*args):
        raise RuntimeError("injected")

    for rebuild in (False, True):  # the index's add, or its rebuild at the bound, fails
        with monkeypatch.context() as m, pytest.raises(RuntimeError, match="injected"):
            m.setattr(bank.core.index, "needs_rebuild", lambda n, rebuild=rebuild: rebuild)
            m.setattr(bank.core.index, "add", fail)  # the add evicts, appends, then fails and rolls back
            m.setattr(writes, "rebuild_index", fail)
            bank.add(np.ones((250, 6), F32), np.zeros((250, 3)), context=np.zeros((250, 2)))
        assert bank.core.store is not None
        np.testing.assert_array_equal(bank.core.store.find(every), before)
    bank.check_consistency()
    loaded = ExperienceBank.load(bank.save(tmp_path / "bank"))
    np.testing.assert_array_equal(loaded.core.store.find(every), before)


def test_sorted_ids_rebuild_when_appends_are_not_past_the_last():
    m = SortedIds({5: 0})
    assert not m.append(np.array([4]), np.array([1]))
    assert not m.append(np.array([8, 7]), np.array([1, 2]))
    assert not m.assign(np.array([6]), np.array([1]))
    assert m.lookup(np.array([5, 4, 8])).tolist() == [0, -1, -1]
    assert SortedIds({}).lookup(np.array([[1, 2]])).tolist() == [[-1, -1]]
