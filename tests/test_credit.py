"""The credit module: outcome deltas, per-entry rewards, distillation weights, outcome tracking."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from experience_wrappers.credit import (
    FreeBaseline,
    OutcomeTracker,
    PairedCredit,
    entry_reward,
    outcome_delta,
    paired_delta,
    shown_shares,
    utility_decay,
)
from experience_wrappers.credit.rules import credit_utilities


def test_outcome_delta_by_hand():
    assert outcome_delta(1.0, 0.25) == 0.75
    assert outcome_delta(0.0, 0.25) == -0.25
    assert outcome_delta(10.0, 4.0, free_spread=3.0) == 2.0   # (10 - 4) / 3
    assert outcome_delta(10.0, 4.0, free_spread=0.5) == 6.0   # spread below 1: not magnified
    assert outcome_delta(-2.0, 4.0, free_spread=2.0) == -3.0
    assert outcome_delta(1.0, None) is None
    assert outcome_delta(1.0, None, free_spread=2.0) is None


def test_free_baseline_scales_return_deltas_only():
    b = FreeBaseline(window=3)
    for x in (0.0, 4.0, 8.0, 12.0):  # the window keeps 4, 8, 12: mean 8, std sqrt(32 / 3)
        b.add(0, x)
    std = float(np.std([4.0, 8.0, 12.0]))
    assert b.delta(0, 10.0, is_success=True) == 2.0
    assert b.delta(0, 10.0, is_success=False) == pytest.approx(2.0 / std)
    assert b.delta(1, 10.0, is_success=False) is None  # another task has no free episode
    assert b.mean(0) == 8.0


def test_free_baseline_delta_is_outcome_delta_with_the_spread():
    b = FreeBaseline()
    for x in (1.0, 3.0, 8.0):
        b.add(2, x)
    mean, std = float(np.mean([1.0, 3.0, 8.0])), float(np.std([1.0, 3.0, 8.0]))
    assert b.delta(2, 7.0, is_success=False) == outcome_delta(7.0, mean, free_spread=std)
    assert b.delta(2, 7.0, is_success=True) == outcome_delta(7.0, mean)


def test_free_baseline_refuses_non_finite_outcomes():
    b = FreeBaseline()
    with pytest.raises(ValueError, match="finite"):
        b.add(0, float("nan"))
    b.add(0, 1.0)
    with pytest.raises(ValueError, match="finite"):
        b.delta(0, float("inf"), is_success=True)


@pytest.mark.parametrize(("delta", "success", "rule", "want"), [
    (0.3, True, "delta", 0.3), (-0.7, None, "delta", -0.7),
    (0.3, False, "direct", -1.0), (-0.3, True, "direct", 1.0),   # success decides where it is known
    (0.3, None, "direct", 1.0), (0.0, None, "direct", -1.0), (-0.3, None, "direct", -1.0),
])
def test_entry_reward(delta, success, rule, want):
    assert entry_reward(delta, success, rule) == want


def test_entry_reward_refuses_an_unknown_rule():
    with pytest.raises(ValueError, match="rule"):
        entry_reward(0.1, True, "median")


def test_utility_decay_ends_and_clips():
    assert utility_decay(0.0) == 0.99 and utility_decay(1.0) == 0.95
    assert utility_decay(-1.0) == utility_decay(0.0) and utility_decay(2.0) == utility_decay(1.0)
    assert utility_decay(0.5, start=1.0, end=0.0) == pytest.approx(0.5)


def test_outcome_tracker_windows():
    t = OutcomeTracker(window=2)
    assert t.means() == {"guided": None, "free": None, "delta": None}
    for x in (0.0, 1.0, 1.0):
        t.add(x, guided=True)
    t.add(3.0, guided=False)
    t.add_delta(-1.0)
    t.add_delta(0.5)
    t.add_delta(1.5)
    assert t.means() == {"guided": 1.0, "free": 3.0, "delta": 1.0}


def test_old_import_paths_still_work():
    from experience_wrappers.credit import FreeBaseline as core
    from experience_wrappers.manager import FreeBaseline as package
    from experience_wrappers.manager import utility_decay as decay

    assert core is package and decay is utility_decay


def test_core_rules_import_no_sb3():
    code = ("import sys, experience_wrappers.credit, experience_wrappers.schedule, experience_wrappers.advantages;"
            "bad = [m for m in sys.modules if m.startswith(('stable_baselines3', 'integrations'))];"
            "assert not bad, bad")
    subprocess.run([sys.executable, "-c", code], check=True)


# ------------------------------------------------------------------ the paired rule

def test_paired_delta_by_hand():
    assert paired_delta(1.0, [0.0, 1.0]) == 0.5          # guided success, one of two free members won
    assert paired_delta(1.0, [0.0, 0.0, 0.0]) == 1.0     # the only success of its instance
    assert paired_delta(0.0, [0.0, 0.0]) == 0.0          # all failed: no blame, no noise
    assert paired_delta(0.0, [1.0, 0.0]) == -0.5
    assert paired_delta(12.0, [4.0, 6.0], free_spread=2.0) == 3.5   # return outcomes: (12 - 5) / 2
    with pytest.raises(ValueError, match="at least one free outcome"):
        paired_delta(1.0, [])


def test_shown_shares_by_hand():
    np.testing.assert_array_equal(shown_shares(np.array([10, 5, 1]), 10), [1.0, 0.5, 0.1])
    assert shown_shares(None, 10) is None
    with pytest.raises(ValueError, match="shown steps"):
        shown_shares(np.array([11]), 10)


@pytest.mark.parametrize("order", [
    ("g", "f0", "f1"), ("f0", "g", "f1"), ("f0", "f1", "g"), ("f1", "f0", "g"),
])
def test_pending_guided_credit_resolves_when_the_free_episodes_arrive_in_any_order(order):
    table = PairedCredit()
    outcomes = {"g": 1.0, "f0": 0.0, "f1": 1.0}
    results = []
    for name in order:
        results.append(table.add(("s", 0, 3), outcomes[name], guided=name == "g", members=3, free=2,
                                 payload="g-entries" if name == "g" else None))
    # nothing before the last free outcome; then the guided one, with 1 - mean(0, 1)
    assert [len(r) for r in results[:-1]] == [0] * (len(order) - 1)
    (res,) = results[-1]
    assert (res.payload, res.delta, res.free_mean) == ("g-entries", 0.5, 0.5)
    assert table.pending == 0 and table.open_instances == 0 and table.credited == 1


def test_paired_credit_keeps_instances_apart():
    table = PairedCredit()
    table.add((0, 0), 1.0, guided=True, members=2, free=1, payload="a")
    table.add((0, 1), 0.0, guided=True, members=2, free=1, payload="b")
    (rb,) = table.add((0, 1), 1.0, guided=False, members=2, free=1)   # b's instance: its free member won
    (ra,) = table.add((0, 0), 0.0, guided=False, members=2, free=1)
    assert (ra.payload, ra.delta, rb.payload, rb.delta) == ("a", 1.0, "b", -1.0)


def test_several_guided_members_wait_and_resolve_together():
    table = PairedCredit()
    assert table.add(1, 1.0, guided=True, members=4, free=2, payload="a") == []
    assert table.add(1, 0.0, guided=True, members=4, free=2, payload="b") == []
    assert table.pending == 2
    assert table.add(1, 0.0, guided=False, members=4, free=2) == []
    res = table.add(1, 0.0, guided=False, members=4, free=2)
    assert [(r.payload, r.delta) for r in res] == [("a", 1.0), ("b", 0.0)]
    assert table.pending == 0 and table.open_instances == 0


def test_stale_pending_records_are_dropped_and_counted():
    table = PairedCredit(max_age=5)
    table.add("old", 1.0, guided=True, members=2, free=1, payload="never paired")
    for i in range(5):   # five episodes of other, complete instances
        table.add(("x", i), 0.0, guided=False, members=1, free=1)
    assert table.pending == 1            # age 5: kept
    table.add(("x", 5), 0.0, guided=False, members=1, free=1)
    assert table.pending == 0 and table.dropped == 1 and table.dropped_instances == 1
    assert table.add("old", 0.0, guided=False, members=2, free=1) == []   # too late: a new record, nothing waits
    assert table.stats()["paired_dropped"] == 1.0


def test_pending_table_is_bounded_in_size():
    table = PairedCredit(max_pending=3)
    for i in range(5):
        table.add(i, 1.0, guided=True, members=2, free=1, payload=i)
    assert table.open_instances == 3 and table.dropped == 2
    (res,) = table.add(4, 0.0, guided=False, members=2, free=1)
    assert res.payload == 4


@pytest.mark.parametrize(("kwargs", "match"), [
    ({"free": 0, "members": 2}, "free"), ({"free": 3, "members": 2}, "free"),
])
def test_paired_credit_refuses_bad_groups(kwargs, match):
    with pytest.raises(ValueError, match=match):
        PairedCredit().add(0, 1.0, guided=True, **kwargs)
    with pytest.raises(ValueError, match="max_age"):
        PairedCredit(max_age=0)


# ------------------------------------------------- the paired rule in the manager

def _instance(index: int, group: int = 0, members: int = 2, guided: int = 1):
    from experience_wrappers.manager import Instance

    return Instance(group=group, index=index, members=members, guided=guided)


def _spy_rewards(mgr) -> list[tuple[list[int], list[float]]]:
    """Record every (ids, rewards) the manager hands the extractor's learner."""
    calls: list[tuple[list[int], list[float]]] = []
    add = mgr.learner.add_credit

    def spy(ids, entries, reward):
        calls.append((ids.tolist(), np.broadcast_to(np.asarray(reward, float), (len(ids),)).tolist()))
        add(ids, entries, reward)
    mgr.learner.add_credit = spy
    return calls


def test_manager_credits_a_guided_episode_against_the_free_member_of_its_instance(rng):
    import attrs

    from tests.test_manager import make_episode, make_manager, seeded_bank

    mgr = make_manager(segment_every=4)
    ids = seeded_bank(mgr, rng, 2)
    calls = _spy_rewards(mgr)
    before = mgr.bank.get(ids)["n_credited"].copy()
    guided = attrs.evolve(make_episode(rng, 8, guided=True, success=True, injected=ids),
                          instance=_instance(0), shown_steps=np.array([8, 2]))
    mgr.submit(guided)                      # waits: its free member has not finished
    assert calls == [] and mgr.paired.pending == 1
    np.testing.assert_array_equal(mgr.bank.get(ids)["n_credited"], before)
    # a free episode of ANOTHER instance does not resolve it (the unpaired rule would have)
    mgr.submit(attrs.evolve(make_episode(rng, 8, success=True), instance=_instance(1)))
    assert calls == []
    mgr.submit(attrs.evolve(make_episode(rng, 8, success=False), instance=_instance(0)))
    # delta = 1 - mean(0) = 1, shared by shown steps: the entry shown on 8 of 8 steps gets 1, on 2 of 8 gets 0.25
    assert calls == [(sorted(ids.tolist()), [1.0, 0.25] if ids[0] < ids[1] else [0.25, 1.0])]
    np.testing.assert_array_equal(mgr.bank.get(ids)["n_credited"], before + 1)
    st = mgr.stats()
    assert (st["paired_credited"], st["paired_pending"], st["paired_dropped"]) == (1.0, 0.0, 0.0)
    assert st["delta"] == 1.0


def test_manager_without_instances_keeps_the_unpaired_rule_and_no_paired_stats(rng):
    from tests.test_manager import make_episode, make_manager, seeded_bank

    mgr = make_manager(segment_every=4)
    ids = seeded_bank(mgr, rng, 2)
    calls = _spy_rewards(mgr)
    mgr.submit(make_episode(rng, 8, success=False))
    mgr.submit(make_episode(rng, 8, success=True))
    mgr.submit(make_episode(rng, 8, guided=True, success=True, injected=ids))
    assert calls == [(sorted(ids.tolist()), [0.5, 0.5])]   # 1 - mean(0, 1), every entry alike
    assert not any(k.startswith("paired_") for k in mgr.stats())


def _sparse_run(paired: bool, rng: np.random.Generator) -> tuple[list[float], int]:
    """A sparse task: 2 groups of 4 envs (2 guided, 2 free), 40 episodes each, 10 steps an episode
    (3,200 steps); 3 guided episodes succeed (~1 %), the very first before any free episode ends.
    Returns the extractor rewards handed out and the guided successes credited."""
    import attrs

    from tests.test_manager import make_episode, make_manager, seeded_bank

    mgr = make_manager(segment_every=4, train_extractor=False)
    ids = seeded_bank(mgr, rng, 2)
    calls = _spy_rewards(mgr)
    wins = {(0, 0), (1, 17), (0, 31)}       # (group, index) where member 0 (guided) succeeds
    for index in range(40):
        for group in (0, 1):
            members = [(0, True), (1, True), (2, False), (3, False)]   # guided finish first (short wins)
            for member, guided in members:
                success = guided and member == 0 and (group, index) in wins
                ep = make_episode(rng, 10, guided=guided, success=success, injected=ids if guided else ())
                if paired:
                    ep = attrs.evolve(ep, instance=_instance(index, group, members=4, guided=2),
                                      shown_steps=np.array([10, 10]) if guided else None)
                mgr.submit(ep)
    rewards = [r for _, rs in calls for r in rs]
    return rewards, len([1 for _, rs in calls if rs[0] > 0])


def test_sparse_successes_reach_the_extractor_from_the_first_one_with_paired_credit():
    paired_rewards, paired_wins = _sparse_run(True, np.random.default_rng(0))
    unpaired_rewards, unpaired_wins = _sparse_run(False, np.random.default_rng(0))
    # paired: every guided success is credited (the first included, once its instance's free
    # members failed), with the full +1; every guided failure against failed free members gets 0
    assert paired_wins == 3
    assert sorted(set(paired_rewards)) == [0.0, 1.0] and paired_rewards.count(1.0) == 3 * 2  # 2 entries each
    # unpaired: the first success came before any free episode, so it is never credited
    assert unpaired_wins == 2


@settings(max_examples=300, deadline=None)
@given(slots=st.lists(st.integers(0, 9), max_size=12), data=st.data(), decay=st.floats(0.0, 1.0),
       warmup=st.booleans())
def test_credit_utilities_is_the_rule_applied_one_credit_at_a_time_in_order(slots, data, decay, warmup):
    # the credit rule for a whole credit at once (each entry once: one vector step; an entry credited
    # twice: in order) gives, to the last bit, what crediting one entry after another gives
    deltas = data.draw(st.lists(st.floats(-1e6, 1e6), min_size=len(slots), max_size=len(slots)))
    start = np.asarray(data.draw(st.lists(st.floats(-1e6, 1e6), min_size=10, max_size=10)))
    counts = np.asarray(data.draw(st.lists(st.integers(0, 50), min_size=10, max_size=10)), dtype=np.int64)
    u, n = start.copy(), counts.copy()
    credit_utilities(u, n, slots, deltas, decay, warmup)
    u1, n1 = start.copy(), counts.copy()
    for s, d in zip(slots, deltas, strict=True):
        credit_utilities(u1, n1, [s], [d], decay, warmup)
        step = max(1.0 - decay, 1.0 / (counts[s] + 2)) if warmup else 1.0 - decay
        counts[s] += 1
        start[s] += step * (d - start[s])  # the rule as written in its docstring
    assert np.array_equal(u, u1) and np.array_equal(n, n1)
    assert np.array_equal(u, start) and np.array_equal(n, counts)
