"""One wrapper, two scopes: ``ExperienceWrapper(env, bank)`` and ``ExperienceWrapper(env, memory, scope="run")``.

The run scope's wrapper is a subclass registered for ``scope="run"``: the same name, the same
``manager`` and ``bank``, its own flow (runs of trials of one instance). A store of the other
scope, an unknown scope and the task scope's tools on a run-scope env are refused by name."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
from stable_baselines3 import PPO
from stable_baselines3.common.vec_env import DummyVecEnv

from experience_wrappers import ExperienceBank, ExperienceWrapper
from experience_wrappers.trials import TrialMemory
from experience_wrappers.trials.wrapper import TRIAL_INFO_KEY, RunScopeWrapper
from experience_wrappers.wrappers.experience_wrapper import SCOPES
from integrations.minihack.hidden_goal import HiddenGoalRoom
from integrations.sb3 import CRLCallback, ExperienceVecEnv, find_experience


def memory() -> TrialMemory:
    room = HiddenGoalRoom(5, 6)
    return TrialMemory(room.observation_space, room.action_space, horizon=6, k=4, exp_dim=4)


def run_env(mem: TrialMemory, **kw) -> RunScopeWrapper:
    return ExperienceWrapper(HiddenGoalRoom(5, 6), mem, scope="run", **{"instances": [3], "trials": 2, **kw})


def test_scope_run_builds_run_scopes_wrapper_on_the_memorys_manager() -> None:
    mem = memory()
    env = run_env(mem)
    assert type(env) is RunScopeWrapper and isinstance(env, ExperienceWrapper)
    assert env.scope == "run" and env.manager is mem.manager and env.bank is mem.bank
    task = ExperienceWrapper(gym.make("CartPole-v1"), ExperienceBank(), manager_kwargs={"mode": "sync"})
    assert type(task) is ExperienceWrapper and task.scope == "task"
    assert ExperienceWrapper(gym.make("CartPole-v1"), ExperienceBank(), scope="task",
                             manager_kwargs={"mode": "sync"}).scope == "task"
    assert SCOPES == ("task", "run")


def test_a_store_of_the_other_scope_or_an_unknown_scope_is_refused_by_name() -> None:
    mem = memory()
    with pytest.raises(TypeError, match='scope="run"'):
        ExperienceWrapper(HiddenGoalRoom(5, 6), mem)                       # a memory in task scope
    with pytest.raises(TypeError, match="a bank is task scope's"):
        ExperienceWrapper(HiddenGoalRoom(5, 6), ExperienceBank(), scope="run", instances=[3])
    with pytest.raises(ValueError, match="scope must be one of"):
        ExperienceWrapper(HiddenGoalRoom(5, 6), mem, scope="episode", instances=[3])
    with pytest.raises(ValueError, match="run scope's wrapper"):
        RunScopeWrapper(HiddenGoalRoom(5, 6), mem, scope="task", instances=[3])


def test_the_task_scopes_tools_refuse_a_run_scope_env_by_name() -> None:
    mem = memory()
    venv = DummyVecEnv([lambda: run_env(mem, group_size=1, free_members=0)])
    with pytest.raises(ValueError, match="run scope's ExperienceWrapper.*ComplementaryRL"):
        find_experience(venv)
    model = PPO("MultiInputPolicy", venv, n_steps=8, batch_size=8, n_epochs=1)
    with pytest.raises(ValueError, match="run scope's ExperienceWrapper"):
        model.learn(8, callback=CRLCallback())


def trial_infos(env: RunScopeWrapper, trials: int) -> list[dict]:
    """The trial info of each of the next ``trials`` trials (random actions to their ends)."""
    out = []
    for _ in range(trials):
        _, info = env.reset()
        out.append(info[TRIAL_INFO_KEY])
        done = False
        while not done:
            _, _, term, trunc, _ = env.step(env.action_space.sample())
            done = term or trunc
    return out


def test_forcing_guided_takes_effect_from_the_next_run_and_none_restores_the_members_role() -> None:
    env = run_env(memory(), group_size=2, member=1, free_members=1, learn=False)   # the group's free member
    env.action_space.seed(0)
    first = trial_infos(env, 1)
    env.set_force_guided(True)                           # asked mid-run: the run stays free to its end
    rest = trial_infos(env, 2)
    assert [t["guided"] for t in first + rest] == [False, False, True]
    assert [t["run"] for t in first + rest] == [0, 0, 1]
    assert env.run_scope != 0                            # the guided run has a scope in the memory
    env.set_force_guided(None)
    assert [t["guided"] for t in trial_infos(env, 2)] == [True, False]
    assert env.run_scope == 0                            # the member's own role again: a free run


def test_forcing_none_restores_the_guided_setting_the_wrapper_was_built_with() -> None:
    env = run_env(memory(), group_size=2, member=1, free_members=1, guided=True, learn=False)  # a free member, forced
    env.set_force_guided(False)
    env.set_force_guided(None)
    assert [t["guided"] for t in trial_infos(env, 2)] == [True, True]


class Rewarding(gym.Wrapper):
    """The hidden-goal room paying ``reward`` at step ``at`` of each trial."""

    def __init__(self, reward, at: int = 2) -> None:
        super().__init__(HiddenGoalRoom(5, 6))
        self.reward, self.at, self.t = reward, at, 0

    def reset(self, **kwargs):
        self.t = 0
        return self.env.reset(**kwargs)

    def step(self, action):
        obs, r, term, trunc, info = self.env.step(action)
        self.t += 1
        return obs, (self.reward if self.t == self.at else r), term, trunc, info


@pytest.mark.parametrize(("reward", "error", "said"), [
    (float("nan"), ValueError, "must be finite"), (float("inf"), ValueError, "must be finite"),
    (1e31, ValueError, "at most"), ("1", TypeError, "real numbers"), (np.array([1.0, 2.0]), ValueError, "one number"),
    (None, TypeError, "real numbers")])
def test_run_scope_checks_rewards_where_they_arrive_as_task_scope_does(reward, error, said) -> None:
    env = ExperienceWrapper(Rewarding(reward), memory(), scope="run", instances=[3], trials=2, guided=True, learn=False)
    env.reset()
    env.step(0)
    with pytest.raises(error, match=f"Rewarding's step\\(\\) returned .*{said}|step\\(\\) returned .*{said}"):
        env.step(0)


def test_run_scope_refuses_a_step_before_reset_and_after_a_trials_end() -> None:
    env = run_env(memory(), guided=True, learn=False)
    with pytest.raises(RuntimeError, match="call reset"):
        env.step(0)
    env.reset()
    done = False
    while not done:
        _, _, term, trunc, _ = env.step(env.action_space.sample())
        done = term or trunc
    with pytest.raises(RuntimeError, match="call reset"):
        env.step(0)


def test_a_bank_given_to_run_scope_is_named_before_its_missing_instances() -> None:
    with pytest.raises(TypeError, match="a bank is task scope's"):
        ExperienceWrapper(HiddenGoalRoom(5, 6), ExperienceBank(), scope="run")
    with pytest.raises(TypeError, match="run scope needs instances"):
        ExperienceWrapper(HiddenGoalRoom(5, 6), memory(), scope="run")


def test_an_env_is_experience_wrapped_once_in_one_scope() -> None:
    mem = memory()
    with pytest.raises(ValueError, match="already wrapped in run scope's ExperienceWrapper"):
        ExperienceWrapper(run_env(mem), ExperienceBank(), manager_kwargs={"mode": "sync"})
    task = ExperienceWrapper(HiddenGoalRoom(5, 6), ExperienceBank(), manager_kwargs={"mode": "sync"})
    with pytest.raises(ValueError, match="already wrapped in task scope's ExperienceWrapper"):
        ExperienceWrapper(task, mem, scope="run", instances=[3])
    with pytest.raises(ValueError, match="wrapped in ExperienceWrapper already"):
        ExperienceVecEnv(DummyVecEnv([lambda: run_env(mem, group_size=1, free_members=0)]), ExperienceBank())
    # probe 19: an ExperienceVecEnv over another said the observation's keys clash ("the ExperienceWrapper needs
    # them"), and the refused one had bound its bank
    bank = ExperienceBank()
    once = ExperienceVecEnv(DummyVecEnv([lambda: HiddenGoalRoom(5, 6)]), ExperienceBank(), manager_kwargs={"mode": "sync"})
    with pytest.raises(ValueError, match="is an ExperienceVecEnv already"):
        ExperienceVecEnv(once, bank)
    assert bank.manager is None
    once.close()


def test_the_spec_of_a_run_scope_env_rebuilds_one_instance_replay() -> None:
    base = gym.make("FrozenLake-v1")
    mem = TrialMemory(base.observation_space, base.action_space, horizon=100, k=2)
    env = ExperienceWrapper(base, mem, scope="run", instances=[1, 2], trials=3)
    assert [w.name for w in env.spec.additional_wrappers][-1] == "RunScopeWrapper"
    assert "ReplayInstances" not in [w.name for w in env.spec.additional_wrappers]
    again = gym.make(env.spec)
    assert type(again) is RunScopeWrapper and type(again.env).__name__ == "ReplayInstances"
    assert type(again.env.env).__name__ != "ReplayInstances" and again.memory is mem and again.instances == [1, 2]


def test_a_second_class_for_a_scope_is_refused() -> None:
    with pytest.raises(ValueError, match="scope 'run' is RunScopeWrapper's"):
        class Mine(ExperienceWrapper, scope="run"):  # noqa: F841
            pass
    with pytest.raises(ValueError, match="scope 'task' is ExperienceWrapper's"):
        class Other(ExperienceWrapper, scope="task"):  # noqa: F841
            pass
    assert ExperienceWrapper.scopes["run"] is RunScopeWrapper
