"""``ExperienceVecEnv`` over stacks of SB3 VecEnv wrappers: the env's reset infos reach it
(SB3's wrappers keep empty lists of their own), and its draws follow the VecEnv's seed."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
import pytest
from gymnasium import spaces
from stable_baselines3.common.vec_env import DummyVecEnv, VecFrameStack, VecMonitor, VecNormalize

from experience_wrappers import ExperienceBank
from integrations.sb3 import ExperienceVecEnv
from integrations.sb3.reset_infos import reset_infos_below


class _TaskInReset(gym.Env):
    """Three-step episodes whose reset info names a task: 1, 2, 0, 1, ..."""

    observation_space = spaces.Box(0, 1, (2,), np.float32)
    action_space = spaces.Discrete(2)

    def __init__(self) -> None:
        self.episodes = 0
        self.t = 0

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[np.ndarray, dict]:
        super().reset(seed=seed)
        self.episodes += 1
        self.t = 0
        return np.zeros(2, np.float32), {"task": self.episodes % 3}

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict]:
        self.t += 1
        return np.zeros(2, np.float32), 0.0, self.t >= 3, False, {}


def _task_ids(venv: ExperienceVecEnv, steps: int = 10) -> list[int]:
    venv.reset()
    out = []
    for _ in range(steps):
        *_, infos = venv.step(np.zeros(venv.num_envs, int))
        out.append(infos[0]["experience_task_id"])
    venv.close()
    return out


@pytest.mark.parametrize("below", [VecMonitor, lambda v: VecFrameStack(v, 2), VecNormalize])
def test_reset_infos_reach_the_wrapper_through_sb3_wrappers(below: Any) -> None:
    kwargs: dict[str, Any] = {"manager_kwargs": {"mode": "sync"}, "task_id": lambda obs, info: info.get("task", 99)}
    plain = _task_ids(ExperienceVecEnv(DummyVecEnv([_TaskInReset]), ExperienceBank(), **kwargs))
    assert plain == [1, 1, 1, 2, 2, 2, 0, 0, 0, 1]  # the episode's task is its reset's
    if below is VecNormalize:  # taken, and said: the experience would record normalised rewards and keys
        with pytest.warns(UserWarning, match="ExperienceVecEnv over a VecNormalize"):
            venv = ExperienceVecEnv(below(DummyVecEnv([_TaskInReset])), ExperienceBank(), **kwargs)
    else:
        venv = ExperienceVecEnv(below(DummyVecEnv([_TaskInReset])), ExperienceBank(), **kwargs)
    assert _task_ids(venv) == plain


def test_reset_infos_below_reads_the_nearest_layer_that_holds_them() -> None:
    base = DummyVecEnv([_TaskInReset, _TaskInReset])
    stack = VecMonitor(VecMonitor(base))
    stack.reset()
    assert stack.reset_infos == [{}, {}]  # SB3's own list, never filled
    assert reset_infos_below(stack) == [{"task": 1}, {"task": 1}]
    stack.venv.reset_infos = [{"task": 7}, {}]  # a layer that sets its own is read first
    assert reset_infos_below(stack) == [{"task": 7}, {}]
    assert reset_infos_below(DummyVecEnv([_TaskInReset])) == [{}]  # before any reset: empty, one per env


def _guided_draws(seed: int | None) -> list[tuple[bool, ...]]:
    venv = ExperienceVecEnv(DummyVecEnv([_TaskInReset, _TaskInReset]), ExperienceBank(),
                            manager_kwargs={"mode": "sync"}, learn=False)
    if seed is not None:
        venv.seed(seed)
    venv.reset()
    draws = []
    for _ in range(45):  # 15 episodes per env
        *_, infos = venv.step(np.zeros(2, int))
        draws.append(tuple(bool(i["experience_guided"]) for i in infos))
    venv.close()
    return draws


def test_seed_seeds_the_guided_draws() -> None:
    """``PPO(seed=...)`` seeds the VecEnv: the same seed gives the same guided / free episodes."""
    assert _guided_draws(3) == _guided_draws(3)
    assert _guided_draws(3) != _guided_draws(4)
    with pytest.raises(TypeError, match="seed"):
        _guided_draws("3")  # type: ignore[arg-type]


class _Endless(gym.Env):
    observation_space = spaces.Box(0, 1, (2,), np.float32)
    action_space = spaces.Discrete(2)

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[np.ndarray, dict]:
        return np.zeros(2, np.float32), {}

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict]:
        return np.zeros(2, np.float32), 0.0, False, False, {}


def test_an_episode_that_never_ends_is_said_once(monkeypatch) -> None:
    """Its steps are held in memory until it ends, and nothing reaches the bank before."""
    from experience_wrappers.wrappers import injector

    monkeypatch.setattr(injector, "LONG_EPISODE", 2_000)
    venv = ExperienceVecEnv(DummyVecEnv([_Endless]), ExperienceBank(), manager_kwargs={"mode": "sync"})
    venv.reset()
    with pytest.warns(UserWarning, match="without ending") as caught:
        for _ in range(5_000):
            venv.step(np.zeros(1, int))
    assert sum("without ending" in str(w.message) for w in caught) == 1
    venv.close()


def test_a_step_with_as_many_actions_as_envs_or_none_is_taken() -> None:
    """Three actions for two envs: DummyVecEnv stepped its envs first and the wrapper refused after (the envs had
    moved on, unrecorded); now refused before any env steps."""
    envs = [_TaskInReset() for _ in range(2)]
    venv = ExperienceVecEnv(DummyVecEnv([lambda e=e: e for e in envs]), ExperienceBank(),
                            manager_kwargs={"mode": "sync"})
    venv.reset()
    for bad in (np.zeros(3, int), np.zeros((1,), int), np.int64(0)):
        with pytest.raises(ValueError, match="one action per env: 2 envs"):
            venv.step(bad)
    assert [e.t for e in envs] == [0, 0]
    venv.step(np.zeros(2, int))
    assert [e.t for e in envs] == [1, 1]
    venv.close()
