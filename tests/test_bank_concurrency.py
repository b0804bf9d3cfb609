"""Threads adding, querying, crediting, merging and saving one bank at the same time."""

from __future__ import annotations

import sys
import threading

import numpy as np
import pytest

from experience_wrappers.bank import ExperienceBank

F32 = np.float32
N_THREADS, N_BATCHES, BATCH, DIM = 4, 15, 20, 16


@pytest.fixture(autouse=True)
def frequent_thread_switches():
    """Switch threads every few microseconds instead of every 5 ms, so races show up."""
    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-5)
    yield
    sys.setswitchinterval(old)


def _run_all(targets) -> list[BaseException]:
    errors: list[BaseException] = []
    barrier = threading.Barrier(len(targets))

    def wrap(fn):
        def go():
            try:
                barrier.wait()
                fn()
            except BaseException as exc:  # noqa: BLE001 - reported by the test
                errors.append(exc)
        return go

    threads = [threading.Thread(target=wrap(fn)) for fn in targets]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
        assert not t.is_alive(), "a thread hung (deadlock?)"
    return errors


@pytest.fixture
def keys() -> np.ndarray:
    """Distinct, well separated keys: random directions scaled far apart, one block per thread."""
    rng = np.random.default_rng(0)
    k = rng.normal(size=(N_THREADS, N_BATCHES * BATCH, DIM)).astype(F32) * 10
    return k


def test_concurrent_adds_and_queries_keep_every_entry_exactly_once(keys, tmp_path):
    total = N_THREADS * N_BATCHES * BATCH
    bank = ExperienceBank(capacity=total + 100, dedup_threshold=0.0, merge_threshold=0.01,
                          ef_construction=100, ef_search=64, seed=0)
    ids_by_thread: dict[int, list[np.ndarray]] = {t: [] for t in range(N_THREADS)}
    stop = threading.Event()
    side_effects = {"updates": 0, "merges": 0, "saves": 0, "merged": 0}

    def adder(t: int):
        def run():
            for b in range(N_BATCHES):
                chunk = keys[t, b * BATCH:(b + 1) * BATCH]
                vals = np.full((BATCH, 2), t, F32)
                res = bank.add(chunk, vals, task_ids=t % 2, utility=float(t))
                assert res.added.all() and not len(res.evicted)
                ids_by_thread[t].append(res.ids)
                own = bank.query(chunk, k=1, mode="knn", record=False)
                assert (own.ids[:, 0] == res.ids).mean() >= 0.9
                got = bank.query(chunk, k=3, mode="utility", task_ids=t % 2)
                assert got.mask.all()
                assert all(len(set(r)) == 3 for r in got.ids.tolist())
                bank.query(chunk[:2], k=2, mode="random")
        return run

    def meddler():
        rng = np.random.default_rng(1)
        i = 0
        while not stop.is_set() or i < 5:
            i += 1
            ent = bank.entries()
            if len(ent):
                pick = rng.choice(ent["id"], size=min(10, len(ent["id"])))
                bank.update(pick, rng.normal(size=len(pick)), 0.9)
                side_effects["updates"] += 1
            side_effects["merged"] += bank.merge().n_removed
            side_effects["merges"] += 1
            bank.stats()
            if i % 5 == 0:
                bank.save(tmp_path / "snapshot")
                side_effects["saves"] += 1

    adders = [adder(t) for t in range(N_THREADS)]

    def adders_then_stop():
        inner = _run_all(adders)
        stop.set()
        if inner:
            raise inner[0]

    errors = _run_all([adders_then_stop, meddler])
    assert not errors, errors
    assert side_effects["merged"] == 0  # keys are far apart: nothing to merge
    assert side_effects["updates"] > 0 and side_effects["saves"] > 0

    ent = bank.entries()
    ids = ent["id"]
    assert len(ids) == total and len(np.unique(ids)) == total
    returned = np.concatenate([np.concatenate(v) for v in ids_by_thread.values()])
    assert sorted(returned.tolist()) == sorted(ids.tolist()) == list(range(total))
    flat_keys = keys.reshape(-1, DIM)
    flat_ids = np.concatenate([np.concatenate(ids_by_thread[t]) for t in range(N_THREADS)])
    slot = {int(i): s for s, i in enumerate(ids.tolist())}
    order = [slot[int(i)] for i in flat_ids]
    np.testing.assert_array_equal(ent["key"][order], flat_keys)  # each id holds its own key
    np.testing.assert_array_equal(ent["value"][order][:, 0], np.repeat(np.arange(N_THREADS), N_BATCHES * BATCH))
    hit = bank.query(flat_keys, k=1, mode="knn", record=False)
    np.testing.assert_array_equal(hit.ids[:, 0], flat_ids)  # every key finds its own entry
    assert (ent["n_credited"] > 0).any()

    snap = ExperienceBank.load(tmp_path / "snapshot")  # a snapshot taken mid-flight is coherent
    sids = snap.entries()["id"]
    assert len(np.unique(sids)) == len(sids) <= total
    if len(snap):
        assert (snap.query(snap.entries()["key"][:20], k=1, mode="knn").ids[:, 0] == sids[:20]).all()


def test_concurrent_updates_are_not_lost():
    bank = ExperienceBank(capacity=16, dedup_threshold=0.0)
    ids = bank.add(np.eye(4, dtype=F32), np.ones((4, 1), F32)).ids

    def credit():
        for _ in range(200):
            bank.update(ids, np.ones(4), 0.5)

    assert not _run_all([credit] * 4)
    assert bank.entries()["n_credited"].tolist() == [800] * 4
    np.testing.assert_allclose(bank.entries()["utility"], 1.0)


def test_concurrent_recorded_queries_count_every_retrieval():
    bank = ExperienceBank(capacity=16, dedup_threshold=0.0)
    bank.add(np.eye(4, dtype=F32), np.ones((4, 1), F32))

    def look():
        for _ in range(100):
            bank.query(np.eye(4, dtype=F32), k=2, mode="knn")

    assert not _run_all([look] * 4)
    assert bank.entries()["n_retrieved"].sum() == 4 * 100 * 4 * 2
    assert bank.stats()["queries"] == 400


def test_a_consistency_check_beside_a_writing_thread_sees_a_consistent_bank(keys, tmp_path):
    bank = ExperienceBank(seed=0, dedup_threshold=0.0)
    rows = keys.reshape(-1, DIM)
    done = threading.Event()
    checks = []

    def write():
        try:
            for b in range(200):
                ids = bank.add(rows[(b * BATCH) % len(rows):][:BATCH], np.zeros((BATCH, 1), F32)).ids
                bank.remove(ids[: BATCH // 2])
        finally:
            done.set()

    def check():
        while not done.is_set():
            bank.check_consistency()  # raised BankStateError mid-write before it took the lock
            checks.append(len(bank))

    def save():
        for _ in range(3):
            bank.save(tmp_path / "bank")  # the save's own check runs under the lock it holds (no nesting)

    assert _run_all([write, check, save]) == []
    assert len(checks) > 10 and len(bank) == 200 * (BATCH - BATCH // 2)
