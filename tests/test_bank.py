"""Behaviour of :class:`ExperienceBank`: dedup, eviction, update, merge, queries, stats, input checks."""

from __future__ import annotations

import numpy as np
import pytest

from experience_wrappers.bank import BankConfig, ExperienceBank, Provenance
from experience_wrappers.bank.index import INDEX_SLACK
from experience_wrappers.bank.merge import merge_weights
from experience_wrappers.bank.search import pairwise_distances

F32 = np.float32


def make(**overrides) -> ExperienceBank:
    base = dict(capacity=64, seed=0, ef_search=128, ef_construction=128)
    base.update(overrides)
    return ExperienceBank(**base)


def row(*xs: float) -> np.ndarray:
    return np.array([xs], dtype=F32)


def by_id(bank: ExperienceBank, entry_id: int) -> dict[str, np.ndarray]:
    got = bank.get([entry_id])
    return {k: v[0] for k, v in got.items()}


def assert_entries_equal(a: dict[str, np.ndarray], b: dict[str, np.ndarray]) -> None:
    assert a.keys() == b.keys()
    for name in a:
        np.testing.assert_array_equal(a[name], b[name], err_msg=name)


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(1234)


@pytest.fixture
def filled(rng) -> ExperienceBank:
    """40 entries, 2 tasks, random utilities, d=6, value_dim=3, context_dim=2."""
    bank = make(capacity=64, dedup_threshold=0.0, utility_floor=None)
    bank.add(rng.normal(size=(40, 6)).astype(F32), rng.normal(size=(40, 3)).astype(F32),
             task_ids=np.arange(40) % 2, utility=rng.normal(size=40),
             context=rng.normal(size=(40, 2)))
    return bank


# ---------------------------------------------------------------------- dedup
def test_dedup_against_bank_refreshes_value_and_keeps_key_utility_counters():
    bank = make(dedup_threshold=0.01)
    first = bank.add(row(0, 0), row(1, 1), utility=0.7, sample_logp=-1.0, extractor_version=1)
    eid = int(first.ids[0])
    bank.query(row(0, 0), k=1, mode="knn")  # n_retrieved = 1
    bank.update([eid], [1.7], 0.5)  # utility 1.2, n_credited 1
    res = bank.add(row(0.05, 0), row(5, 6), utility=-3.0, sample_logp=-2.0, extractor_version=4)
    assert res.ids.tolist() == [eid] and res.added.tolist() == [False]
    assert len(bank) == 1
    e = by_id(bank, eid)
    np.testing.assert_array_equal(e["value"], [5, 6])  # refreshed
    assert e["sample_logp"] == np.float32(-2.0) and e["extractor_version"] == 4
    np.testing.assert_array_equal(e["key"], [0, 0])  # kept
    assert e["utility"] == pytest.approx(1.2)  # kept, not the -3.0 given
    assert e["n_retrieved"] == 1 and e["n_credited"] == 1


def test_dedup_respects_threshold_and_task():
    bank = make(dedup_threshold=0.01)
    bank.add(row(0, 0), row(1, 1), task_ids=0)
    other_task = bank.add(row(0.01, 0), row(2, 2), task_ids=1)
    too_far = bank.add(row(0.2, 0), row(3, 3), task_ids=0)  # squared distance 0.04 >= 0.01
    assert other_task.added.tolist() == [True] and too_far.added.tolist() == [True]
    assert len(bank) == 3


def test_dedup_within_batch_later_item_wins():
    bank = make(dedup_threshold=0.01)
    keys = np.array([[0, 0], [0.01, 0], [0.02, 0], [3, 3]], F32)
    vals = np.array([[1], [2], [3], [9]], F32)
    res = bank.add(keys, vals, utility=[0.5, 1.0, 2.0, 0.0], sample_logp=[-1, -2, -3, -4])
    leader = int(res.ids[0])
    assert res.ids.tolist()[:3] == [leader] * 3
    assert res.added.tolist() == [True, False, False, True]
    assert len(bank) == 2
    e = by_id(bank, leader)
    np.testing.assert_array_equal(e["key"], [0, 0])  # the first item's key
    np.testing.assert_array_equal(e["value"], [3])  # the last item's content
    assert e["sample_logp"] == -3.0
    assert e["utility"] == 0.5  # the first item's utility


def test_dedup_within_batch_only_for_same_task():
    bank = make(dedup_threshold=0.01)
    res = bank.add(np.zeros((3, 2), F32), np.arange(3, dtype=F32)[:, None], task_ids=[0, 1, 0])
    assert res.added.tolist() == [True, True, False]
    assert res.ids[2] == res.ids[0] != res.ids[1]


def test_batch_refreshing_one_entry_twice_keeps_the_later_item():
    bank = make(dedup_threshold=0.01)
    eid = int(bank.add(row(0, 0), row(0)).ids[0])
    res = bank.add(np.array([[0.01, 0], [0, 0.01]], F32), np.array([[1], [2]], F32))
    assert res.ids.tolist() == [eid, eid] and not res.added.any()
    np.testing.assert_array_equal(by_id(bank, eid)["value"], [2])


def test_dedup_item_goes_to_nearer_of_bank_entry_and_earlier_batch_item():
    bank = make(dedup_threshold=0.02)
    old = int(bank.add(row(0, 0), row(0)).ids[0])
    # (0.2, 0) is new; (0.11, 0) is 0.0121 from the bank entry but 0.0081 from (0.2, 0)
    res = bank.add(np.array([[0.2, 0], [0.11, 0], [0.09, 0]], F32), np.array([[1], [2], [3]], F32))
    new = int(res.ids[0])
    assert res.ids.tolist() == [new, new, old]
    np.testing.assert_array_equal(by_id(bank, new)["value"], [2])
    np.testing.assert_array_equal(by_id(bank, old)["value"], [3])


def test_dedup_off_keeps_exact_duplicates():
    bank = make(dedup_threshold=0.0)
    res = bank.add(np.zeros((3, 2), F32), np.ones((3, 1), F32))
    assert res.added.all() and len(bank) == 3


# ------------------------------------------------------------------- eviction
def test_eviction_lowest_utility_then_oldest():
    bank = make(capacity=4, dedup_threshold=0.0)
    ids = bank.add(np.eye(4, dtype=F32), np.ones((4, 1), F32), utility=[0.5, -1, -1, 2]).ids
    res = bank.add(np.full((2, 4), 5, F32) + np.eye(2, 4, dtype=F32), np.ones((2, 1), F32), utility=9)
    assert res.evicted.tolist() == [ids[1], ids[2]]  # both -1: the older first
    assert bank.evict(1).tolist() == [ids[0]]  # then 0.5
    assert sorted(bank.entries()["id"].tolist()) == sorted([ids[3], *res.ids.tolist()])
    assert bank.evict(10).tolist() == [ids[3], *res.ids.tolist()]  # 2 < 9 = 9, older first
    assert len(bank) == 0 and bank.evict(3).tolist() == []


def test_eviction_uses_existing_entries_only_and_ties_go_to_the_oldest():
    bank = make(capacity=3, dedup_threshold=0.0)
    first = bank.add(np.eye(3, dtype=F32), np.ones((3, 1), F32)).ids  # all utility 0
    res = bank.add(row(7, 7, 7), row(1), utility=-100.0)  # the new one is kept anyway
    assert res.evicted.tolist() == [first[0]] and res.added.tolist() == [True]
    assert int(res.ids[0]) in bank


def test_batch_larger_than_capacity_keeps_its_last_entries():
    bank = make(capacity=3, dedup_threshold=0.0)
    old = bank.add(row(100, 100), row(0)).ids
    res = bank.add(np.arange(10, dtype=F32)[:, None] * [1, 0], np.arange(5, dtype=F32)[:5, None].repeat(2, 0))
    assert res.ids[:7].tolist() == [-1] * 7
    assert res.added.tolist() == [False] * 7 + [True] * 3
    assert res.evicted.tolist() == old.tolist()
    assert sorted(bank.entries()["id"].tolist()) == sorted(res.ids[7:].tolist())


def test_refreshed_entry_evicted_in_the_same_add_reports_minus_one():
    bank = make(capacity=2, dedup_threshold=0.01)
    ids = bank.add(np.array([[0, 0], [1, 0]], F32), np.array([[1], [2]], F32), utility=[0.0, 1.0]).ids
    res = bank.add(np.array([[0, 0.001], [5, 5], [9, 9]], F32), np.array([[10], [20], [30]], F32))
    assert sorted(res.evicted.tolist()) == sorted(ids.tolist())
    assert res.ids[0] == -1  # it refreshed ids[0], which then made room
    assert all(int(i) in bank for i in res.ids[1:])


def test_capacity_and_index_size_stay_bounded_over_many_cycles(rng):
    cap = 50
    bank = make(capacity=cap, dedup_threshold=0.0, M=8, ef_construction=64, ef_search=64)
    self_hits = []
    for cycle in range(40):
        keys = rng.normal(size=(17, 8)).astype(F32)
        res = bank.add(keys, np.ones((17, 1), F32), utility=rng.normal(size=17), task_ids=cycle % 3)
        assert len(bank) <= cap
        assert bank.core.index.max_elements <= INDEX_SLACK * cap
        # a task of at most EXACT_SCOPE entries is searched exactly: every key finds its own entry
        hit = bank.query(keys, k=1, mode="knn", task_ids=cycle % 3, record=False)
        self_hits.append(np.mean(hit.ids[:, 0] == res.ids))
        if cycle % 7 == 3:
            assert bank.remove(bank.entries()["id"][:5]) == 5
        if cycle % 5 == 4:
            bank.merge(0.5)
        ids = bank.entries()["id"]
        assert len(np.unique(ids)) == len(ids) and ids.max() < 17 * (cycle + 1)
    assert bank.core.index.max_elements <= INDEX_SLACK * cap  # bounded however many entries came and went
    assert np.mean(self_hits) == 1.0


# --------------------------------------------------------------------- update
def test_update_ema_arithmetic_with_repeats_and_unknown_ids():
    bank = make(dedup_threshold=0.0, initial_utility=1.0)
    a, b = bank.add(np.eye(2, dtype=F32), np.ones((2, 1), F32)).ids.tolist()
    found = bank.update([a, 999, a, b], [3.0, 100.0, 5.0, -1.0], 0.5)
    assert found.tolist() == [True, False, True, True]
    # a: 0.5*1 + 0.5*3 = 2, then 0.5*2 + 0.5*5 = 3.5; b: 0.5*1 + 0.5*(-1) = 0
    assert by_id(bank, a)["utility"] == pytest.approx(3.5)
    assert by_id(bank, b)["utility"] == pytest.approx(0.0)
    assert by_id(bank, a)["n_credited"] == 2 and by_id(bank, b)["n_credited"] == 1
    assert 999 not in bank


def test_utility_warmup_averages_the_first_credits_then_decays():
    bank = make(dedup_threshold=0.0, initial_utility=0.0, utility_warmup=True)
    (a,) = bank.add(np.eye(2, dtype=F32)[:1], np.ones((1, 1), F32)).ids.tolist()
    for delta in (1.0, 1.0, 0.0, 1.0):
        bank.update([a], [delta], 0.99)
    # the mean of the initial utility (0) and the deltas: (0 + 1 + 1 + 0 + 1) / 5
    assert by_id(bank, a)["utility"] == pytest.approx(0.6)
    plain = make(dedup_threshold=0.0, initial_utility=0.0)
    (b,) = plain.add(np.eye(2, dtype=F32)[:1], np.ones((1, 1), F32)).ids.tolist()
    for delta in (1.0, 1.0, 0.0, 1.0):
        plain.update([b], [delta], 0.99)
    assert by_id(plain, b)["utility"] == pytest.approx(0.029504, abs=1e-6)  # what the plain EMA keeps
    # once 1 / (n + 2) falls below 1 - decay, the EMA's own step takes over
    for _ in range(200):
        bank.update([a], [0.0], 0.5)
    assert by_id(bank, a)["utility"] == pytest.approx(0.0, abs=1e-12)


def test_update_decay_bounds_and_scalar_id():
    bank = make(dedup_threshold=0.0)
    a = int(bank.add(row(0, 1), row(1), utility=2.0).ids[0])
    assert bank.update(a, 7.0, 1.0).tolist() == [True]
    assert by_id(bank, a)["utility"] == 2.0  # decay 1: unchanged (still credited)
    bank.update(a, 7.0, 0.0)
    assert by_id(bank, a)["utility"] == 7.0  # decay 0: the delta
    assert by_id(bank, a)["n_credited"] == 2


def test_update_on_empty_bank_finds_nothing():
    assert make().update([0, 1], [1.0, 2.0], 0.9).tolist() == [False, False]


# ---------------------------------------------------------------------- merge
def _merge_bank() -> tuple[ExperienceBank, list[int]]:
    bank = make(dedup_threshold=0.0, merge_threshold=0.05, merge_k=8)
    keys = np.array([[0, 0], [0.05, 0], [0, 0.05], [0.02, 0.02], [5, 5]], F32)
    vals = np.array([[1, 0], [0, 1], [2, 2], [-1, 3], [7, 7]], F32)
    ids = bank.add(keys, vals, task_ids=[0, 0, 0, 1, 0], utility=[0.5, 1.0, 0.2, 3.0, 0.0],
                   step=0, extractor_version=1).ids.tolist()
    bank.update([ids[0], ids[0], ids[2]], [0.5, 0.5, 0.2], 1.0)  # credits only: n_credited 2, 0, 1
    bank.query(keys[:3], k=1, mode="knn")  # n_retrieved 1 each
    return bank, ids


def test_merge_folds_a_cluster_into_its_highest_utility_member():
    bank, ids = _merge_bank()
    before = {i: by_id(bank, i) for i in ids}
    total = {c: bank.entries()[c].sum() for c in ("n_retrieved", "n_credited")}
    res = bank.merge()
    lead, rest = ids[1], [ids[0], ids[2]]  # utility 1.0 is the highest of task 0's cluster
    assert {k: sorted(v) for k, v in res.merged.items()} == {lead: sorted(rest)}
    assert res.n_removed == 2 and len(bank) == 3
    assert all(i not in bank for i in rest)
    assert ids[3] in bank and ids[4] in bank  # other task / far away: untouched
    assert by_id(bank, ids[3])["provenance"] == Provenance.EXTRACTED
    e = by_id(bank, lead)
    members = [before[i] for i in (lead, *rest)]
    u = np.array([m["utility"] for m in members])
    nc = np.array([m["n_credited"] for m in members])
    w = merge_weights(u, nc)
    np.testing.assert_allclose(e["value"], (w[:, None] * np.stack([m["value"] for m in members])).sum(0),
                               rtol=1e-6)
    assert e["utility"] == pytest.approx(((1 + nc) * u).sum() / (1 + nc).sum())
    np.testing.assert_array_equal(e["key"], before[lead]["key"])
    assert e["provenance"] == Provenance.MERGED
    assert np.isnan(e["sample_logp"])
    assert e["n_retrieved"] == 3 and e["n_credited"] == 3
    assert "n_trained" not in e  # the learner's count (manager.training_counts), not the bank's
    for c, t in total.items():  # counters are conserved
        assert bank.entries()[c].sum() == t


def test_merge_weights_favour_utility_and_credit():
    w = merge_weights(np.array([1.0, 0.0, 0.0]), np.array([0, 0, 3]))
    assert w.sum() == pytest.approx(1.0)
    assert w[0] / w[1] == pytest.approx(np.e) and w[2] / w[1] == pytest.approx(4.0)


def test_merge_threshold_zero_or_tiny_is_a_noop_and_bad_threshold_raises():
    bank, _ = _merge_bank()
    before = bank.entries()
    assert bank.merge(0.0).merged == {}
    assert bank.merge(1e-6).merged == {}
    for bad in (-1.0, float("nan"), float("inf")):
        with pytest.raises(ValueError, match="threshold"):
            bank.merge(bad)
    assert_entries_equal(before, bank.entries())


def test_merge_never_joins_tasks():
    bank = make(dedup_threshold=0.0, merge_k=8)
    ids = bank.add(np.zeros((6, 3), F32), np.ones((6, 1), F32), task_ids=[0, 1, 2, 0, 1, 2]).ids
    task_of = dict(zip(ids.tolist(), [0, 1, 2, 0, 1, 2], strict=True))
    res = bank.merge(1.0)
    assert len(res.merged) == 3 and len(bank) == 3
    assert sorted(bank.entries()["task_id"].tolist()) == [0, 1, 2]
    for lead, rest in res.merged.items():
        assert len(rest) == 1 and task_of[rest[0]] == task_of[lead]


# -------------------------------------------------------------------- queries
def test_knn_exact_order_on_small_bank(filled, rng):
    ent = filled.entries()
    q = rng.normal(size=(5, 6)).astype(F32)
    res = filled.query(q, k=7, mode="knn", record=False)
    d = pairwise_distances(q, ent["key"], "l2")
    expected = ent["id"][np.argsort(d, axis=1)[:, :7]]
    np.testing.assert_array_equal(res.ids, expected)
    assert res.mask.all()
    np.testing.assert_allclose(res.distances, np.sort(d, axis=1)[:, :7], rtol=1e-4, atol=1e-5)
    slots = np.vectorize({int(i): s for s, i in enumerate(ent["id"])}.get)(res.ids)
    np.testing.assert_array_equal(res.values, ent["value"][slots])
    np.testing.assert_array_equal(res.utility, ent["utility"][slots])


@pytest.mark.parametrize("space", ["cosine", "ip"])
def test_knn_order_in_other_spaces(space, rng):
    bank = make(space=space, dedup_threshold=0.0)
    keys = rng.normal(size=(30, 5)).astype(F32)
    keys /= np.linalg.norm(keys, axis=1, keepdims=True)
    ids = bank.add(keys, np.ones((30, 1), F32)).ids
    q = keys[:4] + 0.1 * rng.normal(size=(4, 5)).astype(F32)
    res = bank.query(q, k=5, mode="knn", record=False)
    expected = ids[np.argsort(pairwise_distances(q, keys, space), axis=1)[:, :5]]
    np.testing.assert_array_equal(res.ids, expected)


def test_task_filter_knn(filled, rng):
    ent = filled.entries()
    q = rng.normal(size=(4, 6)).astype(F32)
    tasks = np.array([1, 0, 1, 0])
    res = filled.query(q, k=5, mode="knn", task_ids=tasks, record=False)
    for r in range(4):
        sel = ent["task_id"] == tasks[r]
        d = pairwise_distances(q[r:r + 1], ent["key"][sel], "l2")[0]
        assert res.ids[r].tolist() == ent["id"][sel][np.argsort(d)[:5]].tolist()
    for mode in ("knn", "utility", "random"):
        res = filled.query(q, k=5, mode=mode, task_ids=1, record=False)
        got = res.ids[res.mask]
        assert len(got) == 20 and set(filled.get(got)["task_id"].tolist()) == {1}


@pytest.mark.parametrize("mode", ["knn", "utility", "random"])
def test_task_without_entries_gives_all_false_mask(filled, mode):
    res = filled.query(np.zeros((3, 6), F32), k=4, mode=mode, task_ids=7)
    assert res.mask.shape == (3, 4) and not res.mask.any()
    assert (res.ids == -1).all() and np.isinf(res.distances).all()
    assert res.values.shape == (3, 4, 3) and not res.values.any()
    assert filled.entries()["n_retrieved"].sum() == 0


@pytest.mark.parametrize("mode", ["knn", "utility", "random"])
def test_k_larger_than_bank_pads_the_mask(mode):
    bank = make(dedup_threshold=0.0)
    ids = bank.add(np.eye(3, dtype=F32), np.ones((3, 2), F32)).ids
    res = bank.query(np.ones((2, 3), F32), k=10, mode=mode, record=False)
    assert res.ids.shape == (2, 10) and res.values.shape == (2, 10, 2)
    assert res.mask.sum(1).tolist() == [3, 3]
    for r in range(2):
        assert sorted(res.ids[r][res.mask[r]].tolist()) == sorted(ids.tolist())
    assert (res.ids[~res.mask] == -1).all() and (res.values[~res.mask] == 0).all()
    assert (res.utility[~res.mask] == 0).all()


@pytest.mark.parametrize("mode", ["knn", "utility", "random"])
def test_empty_bank_queries_return_masks(mode):
    never = make()
    res = never.query(np.zeros((2, 5), F32), k=3, mode=mode, task_ids=0)
    assert res.mask.shape == (2, 3) and not res.mask.any() and (res.ids == -1).all()
    emptied = make(dedup_threshold=0.0)
    emptied.add(np.eye(5, dtype=F32), np.ones((5, 2), F32))
    emptied.evict(5)
    res = emptied.query(np.zeros((2, 5), F32), k=3, mode=mode)
    assert not res.mask.any() and res.values.shape == (2, 3, 2)


def test_utility_mode_respects_floor_and_returns_distinct_ids(rng):
    bank = make(dedup_threshold=0.0, utility_floor=0.0, candidate_factor=8)
    keys = rng.normal(size=(40, 4)).astype(F32)
    util = np.where(np.arange(40) % 3 == 0, -1.0, rng.uniform(0, 2, 40))
    ids = bank.add(keys, np.ones((40, 1), F32), utility=util).ids
    below = set(ids[util < 0].tolist())
    for _ in range(30):
        res = bank.query(rng.normal(size=(8, 4)).astype(F32), k=4, rng=rng)
        for r in range(8):
            got = res.ids[r][res.mask[r]].tolist()
            assert len(got) == len(set(got)) and not below & set(got)
        assert (res.utility[res.mask] >= 0).all()
    knn = bank.query(keys, k=6, mode="knn", record=False)
    assert not below & set(knn.ids[knn.mask].tolist())


def test_floor_above_everything_masks_all():
    bank = make(dedup_threshold=0.0, utility_floor=10.0)
    bank.add(np.eye(4, dtype=F32), np.ones((4, 1), F32), utility=[1, 2, 3, 4])
    for mode in ("knn", "utility", "random"):
        assert not bank.query(np.eye(4, dtype=F32), k=2, mode=mode).mask.any()


def test_utility_mode_prefers_high_utility():
    bank = make(dedup_threshold=0.0, diversity_penalty=0.0, temperature=1.0, candidate_factor=8)
    keys = np.random.default_rng(0).normal(scale=0.01, size=(8, 3)).astype(F32)
    util = np.array([2.0, 0.0] * 4)
    ids = bank.add(keys, np.ones((8, 1), F32), utility=util).ids
    high = set(ids[util == 2.0].tolist())
    res = bank.query(np.zeros((2000, 3), F32), k=1, record=False, rng=np.random.default_rng(7))
    share = np.mean([i in high for i in res.ids[:, 0].tolist()])
    assert share == pytest.approx(np.e**2 / (1 + np.e**2), abs=0.03)  # softmax(2, 0) = 0.881
    cold = bank.query(np.zeros((2000, 3), F32), k=1, record=False, temperature=100.0,
                      rng=np.random.default_rng(7))
    assert np.mean([i in high for i in cold.ids[:, 0].tolist()]) == pytest.approx(0.5, abs=0.05)


def test_utility_sampling_is_reproducible_with_seeded_rng(filled):
    q = np.zeros((4, 6), F32)
    a = filled.query(q, k=3, record=False, rng=np.random.default_rng(3))
    b = filled.query(q, k=3, record=False, rng=np.random.default_rng(3))
    np.testing.assert_array_equal(a.ids, b.ids)


@pytest.mark.parametrize("penalty", [0.0, 1.0])
def test_diversity_penalty_lowers_share_of_heavily_retrieved_entry(penalty):
    bank = make(dedup_threshold=0.0, diversity_penalty=penalty)
    hot, cold = bank.add(np.array([[0, 0], [0.01, 0]], F32), np.ones((2, 1), F32)).ids.tolist()
    for _ in range(50):
        assert bank.query(row(-1, 0), k=1, mode="knn").ids[0, 0] == hot
    res = bank.query(np.zeros((2000, 2), F32), k=1, record=False, rng=np.random.default_rng(1))
    share = np.mean(res.ids[:, 0] == hot)
    if penalty == 0:
        assert share == pytest.approx(0.5, abs=0.05)
    else:  # exp(-log 51) / (1 + exp(-log 51)) = 1/52
        assert share == pytest.approx(1 / 52, abs=0.02)


def test_random_mode_ignores_the_key(filled):
    a = filled.query(np.full((3, 6), 50.0, F32), k=5, mode="random", record=False,
                     rng=np.random.default_rng(11))
    b = filled.query(np.full((3, 6), -50.0, F32), k=5, mode="random", record=False,
                     rng=np.random.default_rng(11))
    np.testing.assert_array_equal(a.ids, b.ids)
    seen = set()
    for s in range(40):
        r = filled.query(np.zeros((1, 6), F32), k=5, mode="random", record=False,
                         rng=np.random.default_rng(s))
        seen |= set(r.ids[r.mask].tolist())
    assert len(seen) >= 35  # far entries come up too, not only the neighbours of the key


def test_record_false_leaves_counters_unchanged(filled):
    before = filled.entries()
    ticks = filled.stats()["queries"]
    for mode in ("knn", "utility", "random"):
        filled.query(np.zeros((3, 6), F32), k=4, mode=mode, record=False)
    assert_entries_equal(before, filled.entries())
    assert filled.stats()["queries"] == ticks
    res = filled.query(np.zeros((3, 6), F32), k=4, mode="knn")
    after = filled.entries()
    assert after["n_retrieved"].sum() == 12
    hit = np.isin(after["id"], res.ids[0])
    assert hit.sum() == 4 and (after["last_retrieved"][hit] == ticks).all()


def test_record_counts_repeated_hits_across_rows():
    bank = make(dedup_threshold=0.0)
    eid = int(bank.add(row(0, 0), row(1)).ids[0])
    bank.query(np.zeros((5, 2), F32), k=1, mode="knn")
    assert by_id(bank, eid)["n_retrieved"] == 5


def test_stats_utilisation_window():
    bank = make(dedup_threshold=0.0, utilisation_window=3)
    a, b, c, d = bank.add(np.eye(4, dtype=F32) * 10, np.ones((4, 1), F32)).ids.tolist()
    s = bank.stats()
    assert s["size"] == 4 and s["utilisation"] == 0.0 and s["queries"] == 0
    bank.query(row(10, 0, 0, 0), k=1, mode="knn")  # a
    bank.query(row(0, 10, 0, 0), k=1, mode="knn")  # b
    assert bank.stats()["utilisation"] == 0.5
    bank.query(row(0, 10, 0, 0), k=1, mode="knn")  # b
    bank.query(row(0, 10, 0, 0), k=1, mode="knn")  # b: a falls out of the last 3 queries
    s = bank.stats()
    assert s["utilisation"] == 0.25 and s["queries"] == 4
    assert s["max_retrieved"] == 3 and s["mean_retrieved"] == 1.0
    bank.update([c], [4.0], 0.0)
    s = bank.stats()
    assert s["max_utility"] == 4.0 and s["min_utility"] == 0.0 and s["mean_utility"] == 1.0


def test_stats_of_empty_bank():
    s = make().stats()
    assert s["size"] == 0 and s["utilisation"] == 0.0 and s["capacity"] == 64


def test_remove_and_contains():
    bank = make(dedup_threshold=0.0)
    ids = bank.add(np.eye(3, dtype=F32), np.ones((3, 1), F32)).ids.tolist()
    assert bank.remove([ids[0], ids[0], 999]) == 1
    assert ids[0] not in bank and ids[1] in bank and len(bank) == 2
    with pytest.raises(KeyError, match=str(ids[0])):
        bank.get([ids[0]])
    new = bank.add(row(5, 5, 5), row(1)).ids[0]
    assert new == 3  # ids are never reused


# ------------------------------------------------------------------ bad input
def _ok_add(bank, **kw):
    args = dict(keys=np.ones((2, 6), F32), values=np.ones((2, 3), F32))
    args.update(kw)
    return bank.add(**args)


BAD_CALLS = [
    ("keys", lambda b: _ok_add(b, keys=np.array([[np.nan] * 6, [0] * 6]))),
    ("keys", lambda b: _ok_add(b, keys=np.array([[np.inf] * 6, [0] * 6]))),
    ("keys", lambda b: _ok_add(b, keys=np.full((2, 6), 1e39))),  # finite, but inf in float32
    ("keys", lambda b: _ok_add(b, keys=np.ones((2, 5), F32))),
    ("keys", lambda b: _ok_add(b, keys=np.ones((2, 6, 1), F32))),
    ("keys", lambda b: _ok_add(b, keys=np.array([["a"] * 6] * 2))),
    ("keys", lambda b: _ok_add(b, keys=np.ones((2, 6), complex))),
    ("keys", lambda b: _ok_add(b, keys=np.ones((2, 6), bool))),
    ("keys", lambda b: _ok_add(b, keys=[[1.0, 2.0], [1.0]])),
    ("values", lambda b: _ok_add(b, values=np.ones((3, 3), F32))),
    ("values", lambda b: _ok_add(b, values=np.ones((2, 4), F32))),
    ("values", lambda b: _ok_add(b, values=np.full((2, 3), np.nan))),
    ("task_ids", lambda b: _ok_add(b, task_ids=[0, 1, 2])),
    ("task_ids", lambda b: _ok_add(b, task_ids=[0.5, 1])),
    ("task_ids", lambda b: _ok_add(b, task_ids=["a", "b"])),
    ("utility", lambda b: _ok_add(b, utility=[0.0, np.inf])),
    ("utility", lambda b: _ok_add(b, utility=[0.0])),
    ("context", lambda b: _ok_add(b, context=np.ones((3, 2), F32))),
    ("context", lambda b: _ok_add(b, context=np.ones((2, 5), F32))),
    ("context", lambda b: _ok_add(b, context=np.full((2, 2), 1e6))),  # inf in float16
    ("sample_logp", lambda b: _ok_add(b, sample_logp=[0.0, np.nan])),
    ("k", lambda b: b.query(np.ones(6, F32), k=0)),
    ("k", lambda b: b.query(np.ones(6, F32), k=-2)),
    ("k", lambda b: b.query(np.ones(6, F32), k=2.0)),
    ("mode", lambda b: b.query(np.ones(6, F32), k=2, mode="mmr")),
    ("temperature", lambda b: b.query(np.ones(6, F32), k=2, temperature=0.0)),
    ("keys", lambda b: b.query(np.full((1, 6), np.nan), k=2)),
    ("keys", lambda b: b.query(np.ones((1, 4), F32), k=2)),
    ("keys", lambda b: b.query(np.ones((1, 6), complex), k=2)),
    ("task_ids", lambda b: b.query(np.ones((2, 6), F32), k=2, task_ids=[0, 1, 1])),
    ("deltas", lambda b: b.update([0, 1], [1.0], 0.5)),
    ("deltas", lambda b: b.update([0, 1], [1.0, np.nan], 0.5)),
    ("ids", lambda b: b.update([0.5], [1.0], 0.5)),
    ("decay", lambda b: b.update([0], [1.0], 1.5)),
    ("decay", lambda b: b.update([0], [1.0], float("nan"))),
    ("n must be", lambda b: b.evict(-1)),
    ("n must be", lambda b: b.evict(1.5)),
    ("ids", lambda b: b.remove(["x"])),
    ("threshold", lambda b: b.merge(-0.1)),
]


@pytest.mark.parametrize(("arg", "call"), BAD_CALLS, ids=[f"{i}-{a}" for i, (a, _) in enumerate(BAD_CALLS)])
def test_bad_input_raises_naming_the_argument_and_changes_nothing(filled, arg, call):
    before = filled.entries()
    stats = filled.stats()
    with pytest.raises(ValueError, match=arg):
        call(filled)
    assert_entries_equal(before, filled.entries())
    assert filled.stats() == stats


def test_bad_first_add_leaves_bank_without_dims():
    bank = make()
    with pytest.raises(ValueError, match="values"):
        bank.add(np.ones((2, 3), F32), np.ones((3, 1), F32))
    with pytest.raises(ValueError, match="keys"):
        bank.add(np.ones((2, 0), F32), np.ones((2, 1), F32))
    assert bank.dims is None and len(bank) == 0
    bank.add(np.ones((2, 4), F32), np.ones((2, 1), F32))
    assert bank.dims["key_dim"] == 4


def test_zero_key_rejected_for_cosine():
    bank = make(space="cosine")
    with pytest.raises(ValueError, match="keys"):
        bank.add(np.zeros((1, 3), F32), np.ones((1, 1), F32))


def test_a_context_given_to_a_bank_without_contexts_names_it():
    bank = make(key_dim=2, value_dim=1, dedup_threshold=0.0)
    bank.add(row(0, 0), row(1))
    before = bank.entries()
    with pytest.raises(ValueError, match="context_dim=0"):
        bank.add(row(1, 1), row(2), context=[[1.0]])
    with pytest.raises(TypeError, match="prior"):  # removed with the action prior
        bank.add(row(1, 1), row(2), prior=[[1.0]])  # type: ignore[call-arg]
    assert_entries_equal(before, bank.entries())


def test_integer_keys_are_accepted():
    bank = make(dedup_threshold=0.0)
    bank.add(np.array([[1, 2], [3, 4]]), np.array([[1], [2]]))
    assert bank.entries()["key"].dtype == np.float32


# ---------------------------------------------------------------------- config
@pytest.mark.parametrize(("kwargs", "exc", "match"), [
    (dict(capacity=0), ValueError, "capacity"),
    (dict(capacity=-5), ValueError, "capacity"),
    (dict(capacity=2.5), TypeError, "capacity"),
    (dict(capacity=True), TypeError, "capacity"),
    (dict(space="hamming"), ValueError, "space"),
    (dict(M=0), ValueError, "M"),
    (dict(ef_search=0), ValueError, "ef_search"),
    (dict(ef_construction=-1), ValueError, "ef_construction"),
    (dict(dedup_threshold=-0.1), ValueError, "dedup_threshold"),
    (dict(dedup_threshold=float("inf")), ValueError, "dedup_threshold"),
    (dict(merge_threshold=float("nan")), ValueError, "merge_threshold"),
    (dict(merge_k=0), ValueError, "merge_k"),
    (dict(temperature=0.0), ValueError, "temperature"),
    (dict(diversity_penalty=-1.0), ValueError, "diversity_penalty"),
    (dict(utility_floor=float("nan")), ValueError, "utility_floor"),
    (dict(candidate_factor=0), ValueError, "candidate_factor"),
    (dict(initial_utility=float("inf")), ValueError, "initial_utility"),
    (dict(utilisation_window=0), ValueError, "utilisation_window"),
    (dict(seed=1.5), TypeError, "seed"),
])
def test_config_validation(kwargs, exc, match):
    with pytest.raises(exc, match=match):
        BankConfig(**kwargs)
    with pytest.raises(exc, match=match):
        ExperienceBank(**kwargs)


def test_config_round_trips_through_dict_and_bank_constructor_checks():
    cfg = BankConfig(capacity=7, space="cosine", seed=None)
    assert BankConfig(**cfg.to_dict()) == cfg
    with pytest.raises(TypeError, match="not both"):
        ExperienceBank(cfg, capacity=3)
    with pytest.raises(TypeError, match="BankConfig"):
        ExperienceBank({"capacity": 3})
    with pytest.raises(ValueError, match="key_dim"):
        ExperienceBank(key_dim=0, value_dim=2)
    with pytest.raises(ValueError, match="value_dim"):
        ExperienceBank(key_dim=2)
