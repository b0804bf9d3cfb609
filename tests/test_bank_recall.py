"""Recall@8 of the bank's kNN queries against hnswlib's exact brute-force index."""

from __future__ import annotations

import hnswlib
import numpy as np
import pytest

from experience_wrappers.bank import ExperienceBank
from experience_wrappers.bank.index import INDEX_SLACK

F32 = np.float32
K = 8


def clustered(n: int, d: int, n_clusters: int, spread: float, rng: np.random.Generator):
    """``n`` points around ``n_clusters`` Gaussian centres, and a sampler of queries like them."""
    centres = rng.normal(size=(n_clusters, d)).astype(F32)

    def sample(m: int) -> np.ndarray:
        return (centres[rng.integers(0, n_clusters, m)] + spread * rng.normal(size=(m, d))).astype(F32)

    return sample(n), sample


def recall(got: np.ndarray, exact: np.ndarray) -> float:
    return float(np.mean([len(set(a) & set(b)) / exact.shape[1]
                          for a, b in zip(got.tolist(), exact.tolist(), strict=True)]))


def exact_knn(keys: np.ndarray, ids: np.ndarray, queries: np.ndarray, space: str = "l2") -> np.ndarray:
    bf = hnswlib.BFIndex(space=space, dim=keys.shape[1])
    bf.init_index(max_elements=len(keys))
    bf.add_items(keys, ids)
    labels, _ = bf.knn_query(queries, k=K)
    return labels.astype(np.int64)


@pytest.mark.slow
def test_recall_at_8_on_20k_clustered_vectors():
    rng = np.random.default_rng(0)
    keys, sample = clustered(20_000, 32, 200, spread=0.8, rng=rng)
    bank = ExperienceBank(capacity=20_000, dedup_threshold=0.0, seed=0)  # default M/ef
    ids = bank.add(keys, np.zeros((len(keys), 1), F32)).ids
    assert len(bank) == 20_000
    queries = sample(1000)
    res = bank.query(queries, k=K, mode="knn", record=False)
    assert res.mask.all()
    r = recall(res.ids, exact_knn(keys, ids, queries))
    print(f"recall@8 = {r:.4f}")
    assert r >= 0.95, r


@pytest.mark.slow
def test_recall_after_heavy_churn():
    """A bank that keeps evicting (deleted elements in the index, rebuilt at its bound) still finds its neighbours."""
    rng = np.random.default_rng(1)
    keys, sample = clustered(12_000, 32, 100, spread=0.8, rng=rng)
    bank = ExperienceBank(capacity=3000, dedup_threshold=0.0, ef_construction=100, seed=0)
    for lo in range(0, len(keys), 500):
        bank.add(keys[lo:lo + 500], np.zeros((500, 1), F32), utility=rng.normal(size=500))
    assert len(bank) == 3000 and bank.core.index.max_elements <= INDEX_SLACK * 3000
    ent = bank.entries()
    queries = sample(500)
    res = bank.query(queries, k=K, mode="knn", record=False)
    r = recall(res.ids, exact_knn(ent["key"], ent["id"], queries))
    print(f"recall@8 = {r:.4f}")
    assert r >= 0.95, r
