"""What the bank holds during training, by provenance."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
from stable_baselines3 import PPO

from benchmarks.harness.bank_tracking import BankTracker, bank_snapshot
from experience_wrappers import ExperienceBank, ExperienceWrapper
from experience_wrappers.bank import Provenance
from integrations.sb3 import CRLCallback


def test_snapshot_counts_entries_and_utility_per_provenance():
    bank = ExperienceBank(dedup_threshold=0.0)
    keys = np.eye(4, dtype=np.float32)
    bank.add(keys[:3], np.ones((3, 2), np.float32), utility=[0.0, 0.5, 1.0], provenance=Provenance.DEMO)
    (ext,) = bank.add(keys[3:], np.ones((1, 2), np.float32)).ids.tolist()
    bank.update([ext], [1.0], 0.5)
    snap = bank_snapshot(bank)
    assert snap["size"] == 4
    assert snap["demo"] == {"n": 3, "credited": 0, "mean_utility": pytest.approx(0.5)}
    assert snap["extracted"] == {"n": 1, "credited": 1, "mean_utility": pytest.approx(0.5)}
    assert snap["merged"] == {"n": 0, "credited": 0, "mean_utility": None}


def test_tracker_records_every_few_rollouts_during_training():
    bank = ExperienceBank()
    env = ExperienceWrapper(gym.make("CartPole-v1"), bank, manager_kwargs={"mode": "sync"})
    tracker = BankTracker(bank, every=2)
    model = PPO("MultiInputPolicy", env, n_steps=64, batch_size=64, n_epochs=1, seed=0)
    model.learn(64 * 4, callback=[CRLCallback(), tracker])
    assert [h["steps"] for h in tracker.history] == [128, 256]
    assert tracker.history[-1]["size"] == len(bank) > 0
    env.manager.close()


def test_tracker_rejects_a_bad_period():
    with pytest.raises(ValueError, match="every"):
        BankTracker(ExperienceBank(), every=0)
