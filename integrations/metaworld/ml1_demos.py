"""Demonstrations of ML1 goals: Meta-World's scripted policy with the goal visible, recorded goal-hidden.

Meta-World's scripted policies (``metaworld.policies``) solve its tasks when they can see the
goal. :func:`scripted_demonstration` runs one on an instance of :class:`ML1Trials` with the
goal hidden, handing the policy the observation with the true goal written into ``obs[36:39]``,
and records what the hidden-goal env showed: the observations each action was taken from (goal
zeros), the actions and the rewards, up to the first success. It has the form of the other
families' demonstrations (``fn(instance) -> (observations, actions, rewards)``), for
:class:`~experience_wrappers.trials.wrapper.RunScopeWrapper`'s ``demonstrations``.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from experience_wrappers.validators import check_int
from integrations.metaworld.checks import check_task_name
from integrations.metaworld.ml1_trials import TRIAL_CAP, ML1Trials

__all__ = ["scripted_action", "scripted_demonstration", "ml1_demonstrations"]

GOAL_SLICE = slice(36, 39)


def scripted_action(policy: Any, obs: np.ndarray, goal: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
    """One step of a Meta-World scripted policy: ``(the observation as recorded, the action clipped to [-1, 1])``.

    ``goal`` (the hidden goal) is written into the policy's copy of ``obs``; None: ``obs`` shows the goal, and the
    observation is recorded with it zeroed, as the hidden-goal env shows it. The policy reads a copy of
    Meta-World's 39 values (without observed rewards): some scripted policies (door-close's) change it.
    """
    seen = np.array(obs[:GOAL_SLICE.stop], dtype=np.float64)
    if goal is not None:
        seen[GOAL_SLICE] = goal
    else:
        obs = np.array(obs, copy=True)
        obs[GOAL_SLICE] = 0.0
    return obs, np.clip(np.asarray(policy.get_action(seen), np.float32), -1.0, 1.0)


def scripted_demonstration(env: ML1Trials, instance: int, max_steps: int | None = None, settle: int = 0
                           ) -> tuple[np.ndarray, np.ndarray, np.ndarray, bool]:
    """Run the scripted policy of ``instance``'s task on ``instance`` of ``env`` with the goal handed to it.

    With the goal hidden (ML1) the policy is handed ``env.goal()``; with the goal visible (for tasks
    whose goal is not their task's ``rand_vec``, ML10's) it reads the goal the env shows, and the
    observations are recorded with the goal zeroed, which is what the hidden-goal env shows.
    Returns ``(observations (T, 39 or 41), actions (T, 4), rewards (T,), success)``: the hidden-goal
    observations each action was taken from, the actions, the env's rewards, and whether it
    reached the goal within ``max_steps`` (default: the env's cap; the demonstration stops at
    the first success). ``settle``: after a success, the policy goes on that many steps
    (:meth:`ML1Trials.step_on <integrations.metaworld.ml1_trials.ML1Trials.step_on>`), recorded too, so
    that the demonstration ends where the object settles rather than on the success radius's edge,
    where a trial's first success is (``benchmarks/studies/mark_offset.py``: 0.074 from the goal on
    pick-place's radius of 0.07, 0.043 after 20 steps more).
    """
    settle = check_int("settle", settle, minimum=0, numpy=True)
    from metaworld.policies import ENV_POLICY_MAP

    obs, _ = env.reset(seed=instance)
    policy_cls: Any = ENV_POLICY_MAP[env.env_name]
    policy = policy_cls()
    goal = None if env.goal_visible else env.goal()
    observations, actions, rewards = [], [], []
    success = False
    steps = env.cap if max_steps is None else check_int("max_steps", max_steps, minimum=1, numpy=True)
    for _ in range(steps):
        shown, action = scripted_action(policy, obs, goal)
        observations.append(shown)
        actions.append(action)
        obs, reward, terminated, truncated, info = env.step(action)
        rewards.append(float(reward))
        if info["success"]:
            success = True
            break
        if terminated or truncated:
            break
    for _ in range(settle if success else 0):  # on past the success, where the trial env has ended the trial
        shown, action = scripted_action(policy, obs, goal)
        observations.append(shown)
        actions.append(action)
        obs, reward = env.step_on(action)
        rewards.append(reward)
    return np.stack(observations), np.stack(actions), np.asarray(rewards), success


@functools.lru_cache(maxsize=4)
def _demo_env(task: str, cap: int, reward_observed: bool = False, reward_scale: float = 0.1,
              success_bonus: bool | str = True) -> ML1Trials:
    return ML1Trials(task, cap, reward_observed=reward_observed, reward_scale=reward_scale,
                     success_bonus=success_bonus)


def ml1_demonstrations(task: str = "reach-v3", cap: int = TRIAL_CAP, reward_observed: bool = False,
                       settle: int = 0, *, reward_scale: float = 0.1, success_bonus: bool | str = True) -> Any:
    """A ``demonstrations(instance)`` function for ``task``'s ML1 instances (cached per instance).

    It gives ``(observations, actions, rewards)`` of the scripted demonstration, or None where the
    scripted policy did not succeed within the cap (no such reach goal: 50 of 50 held-out goals
    succeed in 33-72 steps). The observations are the hidden-goal env's (the goal zeroed), for
    ``ML1Trials`` with the goal hidden: an ``ML1Trials(goal_visible=True)`` env shows the goal they
    lack. ``reward_observed``: the observations carry the last rewards, as an
    ``ML1Trials(reward_observed=True)`` env's do. ``settle``: steps recorded past the success
    (:func:`scripted_demonstration`). ``reward_scale`` and ``success_bonus``: the rewards recorded, as
    :class:`ML1Trials` computes them; give the trial env's own where the rewards are read (``dense_rewards``,
    a goal locator). The defaults are ``ML1Trials``' defaults, which the measured ML1 arms' demonstrations
    used also where their envs paid ``success_bonus="infinite"`` (a success's last reward 65.5 against 100
    on reach; kept so that those arms reproduce).

    >>> demo = ml1_demonstrations()(50)
    >>> len(demo), demo[0].shape[1], float(abs(demo[0][:, 36:]).max())
    (3, 39, 0.0)
    """

    check_task_name(task)
    cap = check_int("cap", cap, minimum=1, numpy=True)
    settle = check_int("settle", settle, minimum=0, numpy=True)
    _demo_env(task, cap, reward_observed, reward_scale, success_bonus)  # (checked now; the env is kept, cached)

    @functools.lru_cache(maxsize=256)
    def demonstrations(instance: int) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
        instance = check_int("instance", instance, minimum=0, numpy=True, type_error=TypeError)
        env = _demo_env(task, cap, reward_observed, reward_scale, success_bonus)
        obs, actions, rewards, success = scripted_demonstration(env, instance, settle=settle)
        return (obs, actions, rewards) if success else None

    return demonstrations
