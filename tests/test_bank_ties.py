"""Exact matches among many equal keys: an HNSW search that enters a crowd of entries sharing one key
can stay there and miss a nearer entry; a tie at the k-th distance sends the row to exact search
(`HnswIndex.search_checked`), on every path that asks hnswlib: the bank's kNN fast path, its general
steps, a search filtered to a large task, and a replica's single-key path."""

from __future__ import annotations

import numpy as np
import pytest

from experience_wrappers.bank import ExperienceBank
from experience_wrappers.bank.search import EXACT_SCOPE

F32 = np.float32
D = 8


def crowd(n: int = 200, **config) -> tuple[ExperienceBank, np.ndarray, int]:
    """``n`` entries of one key (each in a task of its own, so dedup keeps them all), then one entry
    near it: the bank, that entry's key and its id."""
    bank = ExperienceBank(seed=0, **config)
    start = np.zeros((n, D), F32)
    start[:, 0] = 1.0
    bank.add(start, np.zeros((n, 1), F32), task_ids=np.arange(n))
    target = np.zeros(D, F32)
    target[0], target[1] = 1.0, 0.2
    return bank, target, int(bank.add(target, np.ones((1, 1), F32), task_ids=7).ids[0])


@pytest.mark.parametrize("space", ["l2", "cosine"])
@pytest.mark.parametrize("k", [1, 4])
def test_an_exact_match_beside_200_equal_keys_is_found(space, k):
    # before the tie check, hnswlib returned four of the equal keys at 0.04 and missed the entry at 0
    bank, target, tid = crowd(space=space)
    result = bank.query(target, k=k, mode="knn", record=False)
    assert result.ids[0, 0] == tid and result.distances[0, 0] == pytest.approx(0.0, abs=1e-6)
    assert result.mask.all()


def test_the_answer_is_the_exact_one_for_every_key_of_a_crowded_bank():
    bank, _, _ = crowd(150, dedup_threshold=0.0)
    rng = np.random.default_rng(0)
    keys = rng.normal(size=(40, D)).astype(F32) * 0.05
    keys[:, 0] += 1.0
    bank.add(keys, np.ones((40, 1), F32), task_ids=3)
    entries = bank.entries()
    for key in entries["key"][-40:]:
        result = bank.query(key, k=3, mode="knn", record=False)
        d = ((entries["key"] - key) ** 2).sum(axis=1)
        np.testing.assert_allclose(result.distances[0], np.sort(d)[:3], rtol=1e-4, atol=1e-6)


def test_a_single_task_bank_without_dedup_finds_the_exact_match():
    bank = ExperienceBank(seed=0, dedup_threshold=0.0)  # one task: the only-task path searches unfiltered
    start = np.zeros((300, D), F32)
    start[:, 0] = 1.0
    bank.add(start, np.zeros((300, 1), F32))
    target = start[0].copy()
    target[2] = 0.1
    tid = int(bank.add(target, np.ones((1, 1), F32)).ids[0])
    assert bank.query(target, k=2, mode="knn", task_ids=0, record=False).ids[0, 0] == tid


def test_a_search_filtered_to_a_large_task_finds_the_exact_match():
    n = EXACT_SCOPE + 300  # past the exact scope: hnswlib's filtered search answers
    bank = ExperienceBank(seed=0, capacity=2 * n, dedup_threshold=0.0)
    rng = np.random.default_rng(1)
    spread = rng.normal(size=(n - 300, D)).astype(F32)
    start = np.zeros((300, D), F32)
    start[:, 0] = 1.0
    bank.add(np.concatenate([spread, start]), np.zeros((n, 1), F32), task_ids=5)
    bank.add(start[:50], np.zeros((50, 1), F32), task_ids=6)  # another task: the search is filtered
    target = start[0].copy()
    target[1] = 0.2
    tid = int(bank.add(target, np.ones((1, 1), F32), task_ids=5).ids[0])
    assert bank.query(target, k=4, mode="knn", task_ids=5, record=False).ids[0, 0] == tid


def test_a_replica_answers_as_its_bank_does():
    bank, target, tid = crowd()
    replica = bank.replica()
    for k in (1, 4):
        answer = replica.query(target, k=k, mode="knn", record=False)
        np.testing.assert_array_equal(answer.ids, bank.query(target, k=k, mode="knn", record=False).ids)
        assert answer.ids[0, 0] == tid
