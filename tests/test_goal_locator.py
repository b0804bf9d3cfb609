"""GoalLocator: where a run succeeds, learned by hindsight from its failed trials' keys and rewards."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from gymnasium import spaces

from experience_wrappers.trials import TrialMemory
from experience_wrappers.trials.goal_locator import GoalLocator
from experience_wrappers.trials.run_best import best_step, trial_rows

POS = spaces.Box(-1.0, 1.0, (2,), np.float32)
ACT = spaces.Discrete(4)


def _trial(goal: np.ndarray, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """A failed trial heading for a wrong place: its states and a reward falling with the distance to ``goal``."""
    start = rng.uniform(-0.9, -0.6, 2)
    aim = rng.uniform(-0.8, 0.8, 2)
    steps = np.linspace(0, 1, 30)[:, None]
    keys = (start + steps * (aim - start) + rng.normal(0, 0.01, (30, 2))).astype(np.float32)
    rewards = (1 / (1 + (np.linalg.norm(keys - goal, axis=1) / 0.4) ** 2)).astype(np.float32)
    return keys, rewards


def test_the_locator_places_held_out_goals_closer_than_the_best_reward_state() -> None:
    torch.set_num_threads(1)
    rng = np.random.default_rng(0)
    train_goals, held_goals = rng.uniform(-0.6, 0.6, (40, 2)), rng.uniform(-0.6, 0.6, (15, 2))
    loc = GoalLocator(2, hidden=32, updates_per_pair=4, seed=0)
    for _ in range(10):
        for g in train_goals:
            loc.add(*_trial(g, rng), g)
    assert loc.stats["locator_updates"] > 1000
    mine, best = [], []
    for g in held_goals:  # never trained on
        for _ in range(4):
            keys, rewards = _trial(g, rng)
            mine.append(np.linalg.norm(loc.locate(keys, rewards) - g))
            best.append(np.linalg.norm(keys[np.argmax(rewards)] - g))
    assert np.median(mine) < 0.5 * np.median(best), (np.median(mine), np.median(best))  # measured 0.16 against 0.64


def test_building_a_locator_leaves_the_callers_torch_generator_alone() -> None:
    torch.manual_seed(123)
    expected = torch.rand(3)
    torch.manual_seed(123)
    a, b = GoalLocator(2, seed=7), GoalLocator(2, seed=7)
    assert torch.equal(torch.rand(3), expected)
    rows = np.zeros((2, 2), np.float32), np.array([0.0, 1.0], np.float32)
    assert np.allclose(a.locate(*rows), b.locate(*rows))  # seeded: the same weights


def _memory(**kw) -> TrialMemory:
    return TrialMemory(POS, ACT, horizon=30, exp_dim=0, write_failures=True, dense_rewards=True,
                       **{"run_best": "located", **kw})


def test_located_shows_the_locators_guess_until_the_run_succeeds_and_learns_only_from_runs_that_did() -> None:
    mem = _memory()
    assert mem.locator is not None and _memory(run_best=True).locator is None
    s = mem.new_scope()
    obs = np.array([[0.0, 0.0], [0.2, 0.1], [0.4, 0.1]], np.float32)
    mem.write(s, obs, [0, 1, 1], [0.1, 0.3, 0.2], success=False, end_observation=np.array([0.5, 0.0]))
    keys, rewards, won = trial_rows(mem, mem.trials_of(s)[0], mem.ends_of(s)[0])
    assert not won and np.allclose(keys[-1], mem.keys(np.array([[0.5, 0.0]]))[0])
    got = best_step(mem, s)
    assert np.allclose(got[:2], mem.locator.locate(keys, rewards)) and got[2:].tolist() == [0.0, pytest.approx(0.3)]
    mem.retire(s, instance=3)  # no success in the run: nothing to learn from
    assert mem.stats.get("locator_pairs", 0) == 0
    s = mem.new_scope()
    mem.write(s, obs, [0, 1, 1], [0.1, 0.3, 0.2], success=False, end_observation=np.array([0.5, 0.0]))
    mem.write(s, obs[:2], [0, 1], [0.2, 5.0], success=True, end_observation=np.array([0.6, 0.6]))
    assert np.allclose(best_step(mem, s)[:3], [*mem.keys(np.array([[0.6, 0.6]]))[0], 1.0])  # a success: its end
    mem.retire(s, instance=3)
    assert mem.stats["locator_pairs"] == 1  # the failed trial, labelled with where the run succeeded
    frozen = _memory(train_extractor=False)  # an evaluation memory learns nothing
    s = frozen.new_scope()
    frozen.write(s, obs, [0, 1, 1], [0.1, 0.3, 0.2], success=False, end_observation=np.array([0.5, 0.0]))
    frozen.write(s, obs[:2], [0, 1], [0.2, 5.0], success=True, end_observation=np.array([0.6, 0.6]))
    frozen.retire(s, instance=3)
    assert frozen.locator.stats["locator_pairs"] == 0
    with pytest.raises(ValueError, match=r"run_best must be one of"):
        _memory(run_best="guessed")


def test_the_locator_saves_loads_and_is_copied_into_an_evaluation_memory(tmp_path) -> None:
    mem = _memory(seed=1)
    folder = mem.save(tmp_path / "mem")
    assert (folder / "locator.pt").exists()
    back = _memory(seed=2)
    rows = np.array([[0.0, 0.0], [0.3, 0.2]], np.float32), np.array([0.1, 0.4], np.float32)
    assert not np.allclose(back.locator.locate(*rows), mem.locator.locate(*rows))
    back.load(folder)
    assert np.allclose(back.locator.locate(*rows), mem.locator.locate(*rows))
    copy = _memory(seed=3, train_extractor=False)
    copy.load_weights_of(mem)
    assert np.allclose(copy.locator.locate(*rows), mem.locator.locate(*rows))
    with pytest.raises(ValueError, match=r"holds goal locator .*run_best=False"):
        TrialMemory(POS, ACT, horizon=30, exp_dim=0).load(folder)
    with pytest.raises(ValueError, match=r"has no goal locator .*run_best='located'"):
        _memory().load(TrialMemory(POS, ACT, horizon=30, exp_dim=0).save(tmp_path / "plain"))
    with pytest.raises(ValueError, match=r"reads keys 2 wide, this memory's are 3"):
        GoalLocator(3).load(folder / "locator.pt")
