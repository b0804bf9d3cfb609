"""CRLCallback and the schedule: it advances each manager's schedule and writes no attribute onto others."""

from __future__ import annotations

import pytest
from stable_baselines3 import PPO
from stable_baselines3.common.env_util import make_vec_env

from experience_wrappers import ExperienceBank, ExperienceManager, ExperienceWrapper
from experience_wrappers.advantages import regroup_advantages
from experience_wrappers.advantages import regroup_advantages as core_regroup
from integrations.sb3 import CRLCallback, find_experience

FAST = {"mode": "sync", "batch_size": 16, "ssl_batch_size": 16}
PPO_KW = {"n_steps": 64, "batch_size": 64, "n_epochs": 1, "seed": 0, "device": "cpu",
          "policy_kwargs": {"net_arch": [32, 32]}}


def wrapped_vec(n_envs: int = 2, **wrapper_kwargs):
    kwargs = {"bank": ExperienceBank(), "manager_kwargs": FAST, **wrapper_kwargs}
    return make_vec_env("CartPole-v1", n_envs=n_envs, seed=0, wrapper_class=ExperienceWrapper, wrapper_kwargs=kwargs)


def test_the_advantage_rule_is_the_core_one():
    assert regroup_advantages is core_regroup


def _refuse(name: str):
    def setter(self, value):
        raise AssertionError(f"{name} written onto the manager from outside")
    return setter


def test_callback_advances_the_schedule_and_sets_no_manager_attribute(monkeypatch):
    for name in ("guided_ratio", "progress"):
        monkeypatch.setattr(ExperienceManager, name, getattr(ExperienceManager, name).setter(_refuse(name)))
    venv = wrapped_vec(2)
    mgr = find_experience(venv)[0][0]
    PPO("MultiInputPolicy", venv, **PPO_KW).learn(64 * 2 * 3, callback=CRLCallback(guided_ratio=(0.2, 0.6),
                                                                                 merge_every=2))
    s = mgr.schedule
    assert s.rollouts == mgr.rollouts == 3
    assert 0.0 < s.progress < 1.0 and s.guided == (0.2, 0.6)
    assert mgr.guided_ratio == s.guided_ratio == pytest.approx(0.2 + 0.4 * s.progress)


def test_the_logged_delta_is_its_two_logged_parts_apart():
    """crl/outcome_delta and its parts, read from SB3's logger after each rollout of a real run."""
    from stable_baselines3 import PPO
    from stable_baselines3.common.callbacks import BaseCallback, CallbackList

    seen: list[dict[str, float]] = []

    class Read(BaseCallback):  # after CRLCallback in the list: its figures are recorded by then
        def _on_step(self) -> bool:
            return True

        def _on_rollout_end(self) -> None:
            seen.append({k: v for k, v in self.logger.name_to_value.items() if k.startswith("crl/")})

    venv = wrapped_vec(2)
    model = PPO("MultiInputPolicy", venv, n_steps=128, batch_size=64, n_epochs=1, seed=0)
    model.learn(2048, callback=CallbackList([CRLCallback(self_imitation=False), Read()]))
    rows = [r for r in seen if "crl/outcome_delta" in r]
    assert rows, "no delta logged"
    for r in rows:
        assert r["crl/outcome_delta"] == pytest.approx(r["crl/delta_guided_return"] - r["crl/delta_baseline_return"])
    venv.close()
