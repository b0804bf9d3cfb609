"""The parts measured to tie or hurt sit outside the main path: nothing there imports them, and
the main callback neither takes their arguments nor does their work."""

from __future__ import annotations

import subprocess
import sys
import warnings

import attrs
import gymnasium as gym
from stable_baselines3 import PPO
from stable_baselines3.common.vec_env import DummyVecEnv

from benchmarks.harness.run import _method_class
from benchmarks.suites.arms import ARMS
from experience_wrappers import ExperienceBank
from experience_wrappers.manager import Episode
from integrations.sb3 import ComplementaryRL, CRLCallback, ExperienceVecEnv
from integrations.sb3.experimental import ExperimentalComplementaryRL, ExperimentalCRLCallback


def test_the_main_path_imports_no_experimental_module():
    code = ("import sys, experience_wrappers, integrations.sb3\n"
            "bad = sorted(m for m in sys.modules if m.startswith(('integrations.sb3.experimental', "
            "'experience_wrappers.experimental')))\n"
            "assert not bad, bad\n")
    subprocess.run([sys.executable, "-c", code], check=True)


def test_the_experimental_parts_are_subclasses_of_the_main_ones():
    assert issubclass(ExperimentalCRLCallback, CRLCallback)
    assert issubclass(ExperimentalComplementaryRL, ComplementaryRL)
    assert ComplementaryRL.callback_class is CRLCallback


def test_benchmark_arms_that_use_experimental_parts_build_the_experimental_object():
    value_baseline = attrs.evolve(ARMS["crl-sil-obs-paired"], wrapper={"experimental": {"value_baseline": True}})
    assert _method_class(value_baseline) is ExperimentalComplementaryRL
    for name in ("crl", "crl-sil-obs", "crl-sil-obs-paired", "ppo", "crl-sil-obs-nbr"):
        assert _method_class(ARMS[name]) is ComplementaryRL, name


def _paired_run(callback: CRLCallback) -> list[Episode]:
    """CartPole with paired=True but no replayed instances: the episodes the manager receives."""
    venv = ExperienceVecEnv(DummyVecEnv([lambda: gym.make("CartPole-v1")] * 2), ExperienceBank(seed=0),
                            paired=True, manager_kwargs={"mode": "sync"})
    episodes: list[Episode] = []
    submit = venv.manager.submit

    def keep(ep: Episode) -> None:
        episodes.append(ep)
        submit(ep)
    venv.manager.submit = keep  # type: ignore[method-assign]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # paired=True without ReplayInstances: said once
        PPO("MultiInputPolicy", venv, n_steps=64, batch_size=64, n_epochs=1, seed=0).learn(256, callback=callback)
    venv.close()
    return episodes


def test_paired_without_replay_uses_the_unpaired_rule_under_the_main_callback_and_v_s0_under_the_experimental_one():
    main = _paired_run(CRLCallback(guided_ratio=0.5))
    assert main and all(ep.start_value is None for ep in main)
    experimental = _paired_run(ExperimentalCRLCallback(guided_ratio=0.5))
    assert any(ep.start_value is not None for ep in experimental if ep.guided and ep.length > 1)
