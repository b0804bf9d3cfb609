"""Curated entries (demonstrations) are kept: no eviction while others remain, no refresh or
merge across curated and agent entries (DESIGN.md, bank maintenance)."""

from __future__ import annotations

import numpy as np
import pytest

from experience_wrappers import ExperienceBank
from experience_wrappers.bank.provenance import Provenance


def _bank(**kw) -> ExperienceBank:
    return ExperienceBank(**{"capacity": 6, "dedup_threshold": 0.5, "merge_threshold": 1.0, "seed": 0, **kw})


def test_eviction_takes_the_agents_entries_before_demonstrations_even_of_lower_utility() -> None:
    bank = _bank(dedup_threshold=0.0)
    demo = bank.add(np.eye(4) * 10, np.ones((4, 2)), utility=-5.0, provenance=Provenance.DEMO).ids
    bank.add(np.eye(4)[:2] * -10, np.ones((2, 2)), utility=5.0)
    res = bank.add(np.full((2, 4), 3.0) + np.arange(2)[:, None], np.ones((2, 2)), utility=1.0)
    assert len(res.evicted) == 2 and not np.isin(res.evicted, demo).any()
    assert np.isin(demo, bank.entries()["id"]).all()
    res = bank.add(np.full((5, 4), 50.0) + np.arange(5)[:, None] * 5, np.ones((5, 2)), utility=9.0)
    assert np.isin(res.evicted, demo).sum() == 3  # only when nothing else is left


def test_an_agent_item_beside_a_demonstration_is_a_new_entry_and_the_demonstration_keeps_its_content() -> None:
    bank = _bank()
    demo_id = int(bank.add(np.ones((1, 4)), np.full((1, 2), 7.0), context=np.array([[1.0, 0.0]]),
                           provenance=Provenance.DEMO).ids[0])
    res = bank.add(np.ones((1, 4)) + 0.01, np.zeros((1, 2)), context=np.array([[0.0, 1.0]]))
    assert res.added.all() and int(res.ids[0]) != demo_id and len(bank) == 2
    kept = bank.get([demo_id])
    assert kept["provenance"][0] == Provenance.DEMO
    np.testing.assert_array_equal(kept["value"][0], [7.0, 7.0])
    np.testing.assert_array_equal(kept["context"][0], [1.0, 0.0])
    # within a kind, dedup still refreshes
    res = bank.add(np.ones((1, 4)) - 0.01, np.full((1, 2), 3.0), provenance=Provenance.DEMO)
    assert not res.added.any() and len(bank) == 2


def test_merge_never_mixes_demonstrations_with_agent_entries() -> None:
    bank = _bank(dedup_threshold=0.0)
    d = bank.add(np.array([[1.0, 0, 0, 0], [1.1, 0, 0, 0]]), np.ones((2, 2)), provenance=Provenance.DEMO).ids
    a = bank.add(np.array([[1.05, 0, 0, 0], [1.15, 0, 0, 0]]), np.zeros((2, 2))).ids
    merged = bank.merge().merged
    groups = [{lead, *rest} for lead, rest in merged.items()]
    assert sorted(map(sorted, groups)) == sorted([sorted(map(int, d)), sorted(map(int, a))])
    prov = dict(zip(bank.entries()["id"].tolist(), bank.entries()["provenance"].tolist(), strict=True))
    lead_demo = next(iter(g for g in groups if g & set(map(int, d))))
    assert any(prov.get(i) == Provenance.DEMO for i in lead_demo)  # merged demonstrations stay demonstrations


@pytest.mark.parametrize("space", ["l2", "cosine", "ip"])
def test_an_agent_item_at_a_demonstrations_key_refreshes_the_agents_own_entry_there(space: str) -> None:
    """A demonstration at the same key as the agent's entry must not hide it from dedup: the bank
    held one entry per repeat before (6 after 5 adds of one key, probe 22)."""
    bank = _bank(capacity=50, dedup_threshold=0.01, space=space)
    key = np.array([[1.0, 0.0, 0.0, 0.0]])
    demo_id = int(bank.add(key, np.ones((1, 2)), provenance=Provenance.DEMO).ids[0])
    first = bank.add(key, np.zeros((1, 2)))
    assert first.added.all()
    for i in range(5):
        res = bank.add(key, np.full((1, 2), float(i)))
        assert not res.added.any() and int(res.ids[0]) == int(first.ids[0])
    assert len(bank) == 2
    np.testing.assert_array_equal(bank.get([int(first.ids[0])])["value"][0], [4.0, 4.0])
    np.testing.assert_array_equal(bank.get([demo_id])["value"][0], [1.0, 1.0])  # the demonstration untouched
    # a batch of copies of the key folds into that one entry too
    res = bank.add(np.repeat(key, 4, axis=0), np.ones((4, 2)))
    assert not res.added.any() and len(bank) == 2
