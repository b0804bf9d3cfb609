"""Evaluate an agent with experience and without it (the paper reports both); evaluation never learns."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import numpy as np
import torch as th
from stable_baselines3.common.base_class import BaseAlgorithm
from stable_baselines3.common.vec_env import VecEnv

from experience_wrappers.manager import outcome_of, success_from_info
from experience_wrappers.validators import check_bool, check_int

from .discovery import find_experience

__all__ = ["evaluate_with_and_without_experience", "run_episodes", "no_learning", "evaluate_frozen"]


@contextlib.contextmanager
def no_learning(env: VecEnv, guided: bool | None = None) -> Iterator[VecEnv]:
    """Within the block, ``env``'s experience wrappers hand no episode to the manager and
    count no retrieval; ``guided`` True / False forces every episode guided / free.

    Use it around anything that runs the policy for evaluation (SB3's ``evaluate_policy``,
    a video recorder, a hand-written loop). An evaluation env built with the default
    ``learn=None`` already learns nothing while another env trains the bank with
    :class:`~integrations.sb3.CRLCallback`; this makes it explicit and works on any env.

    >>> import gymnasium as gym
    >>> from stable_baselines3.common.env_util import make_vec_env
    >>> from experience_wrappers import ExperienceBank, ExperienceWrapper
    >>> venv = make_vec_env("CartPole-v1", n_envs=1, wrapper_class=ExperienceWrapper,
    ...                     wrapper_kwargs={"bank": ExperienceBank()})
    >>> with no_learning(venv):
    ...     _ = venv.reset()
    """
    if guided is not None:
        guided = check_bool("guided", bool(guided) if isinstance(guided, np.bool_) else guided, hint=" or None")
    _, injectors = find_experience(env)
    saved = [(inj.force_guided, inj.learn) for inj in injectors]
    for inj in injectors:
        inj.learn = False
        if guided is not None:
            inj.force_guided = guided
    try:
        yield env
    finally:
        for inj, (force, learn) in zip(injectors, saved, strict=True):
            inj.force_guided, inj.learn = force, learn


def evaluate_frozen(model: BaseAlgorithm, env: VecEnv, n_eval_episodes: int = 10, deterministic: bool = True,
                    guided: bool | None = None, **kwargs: Any) -> Any:
    """SB3's ``evaluate_policy`` on an experience-wrapped env, inside :func:`no_learning`.

    ``guided``: True / False evaluates with every episode guided / free (None: the
    manager's current guided ratio). Other arguments and the return value are SB3's.
    """
    from stable_baselines3.common.evaluation import evaluate_policy as sb3_evaluate_policy

    n_eval_episodes = check_int("n_eval_episodes", n_eval_episodes, minimum=1, numpy=True)
    with no_learning(env, guided):
        return sb3_evaluate_policy(model, env, n_eval_episodes=n_eval_episodes, deterministic=deterministic,
                                   **kwargs)


def run_episodes(model: BaseAlgorithm, env: VecEnv, n_episodes: int, deterministic: bool = True,
                 seed: int | None = None) -> dict[str, float]:
    """Run ``n_episodes`` (spread evenly over the envs, as SB3's ``evaluate_policy`` does).

    Returns mean return, mean length, success rate (NaN if the env reports no success)
    and mean outcome (success, else return). Recurrent policies (RecurrentPPO) carry their
    state across steps; maskable ones (MaskablePPO) get the env's action masks. ``seed``
    (an int >= 0): the envs' first resets are seeded ``seed + i`` (SB3's ``VecEnv.seed``; an
    ``ExperienceWrapper`` seeds its retrieval draws with it) and the policy's sampling too,
    in a torch RNG of its own (the global one is left as it was): the same weights, bank
    and seed give the same figures. None: as the envs and torch are.
    """
    n_episodes, seed = check_episodes(n_episodes, seed)
    if seed is None:
        return _run_episodes(model, env, n_episodes, deterministic)
    env.seed(seed)
    with th.random.fork_rng(devices=[]):
        th.manual_seed(seed)
        return _run_episodes(model, env, n_episodes, deterministic)


def check_episodes(n_episodes: object, seed: object = None) -> tuple[int, int | None]:
    """An evaluation's ``n_episodes`` (an int >= 1, else ValueError) and ``seed`` (None, or an int >= 0:
    TypeError / ValueError), checked before any env is touched (:func:`run_episodes` and its callers)."""
    return (check_int("n_episodes", n_episodes, minimum=1, numpy=True),
            None if seed is None else check_int("seed", seed, minimum=0, numpy=True, type_error=TypeError))


def _run_episodes(model: BaseAlgorithm, env: VecEnv, n_episodes: int, deterministic: bool) -> dict[str, float]:
    import inspect

    masked = "action_masks" in inspect.signature(model.predict).parameters and env.has_attr("action_masks")
    state = None
    n = env.num_envs
    targets = np.array([(n_episodes + i) // n for i in range(n)], dtype=int)
    counts = np.zeros(n, dtype=int)
    returns, lengths, successes, outcomes = [], [], [], []
    cur_ret, cur_len = np.zeros(n), np.zeros(n, dtype=int)
    obs = env.reset()
    starts = np.ones(n, dtype=bool)
    while (counts < targets).any():
        if masked:
            masks = np.stack(env.env_method("action_masks"))
            actions, state = model.predict(obs, deterministic=deterministic, action_masks=masks)  # type: ignore[call-arg, arg-type]  # sb3-contrib's MaskablePPO; SB3's VecEnvObs includes tuples, predict's annotation does not
        else:
            actions, state = model.predict(obs, state=state, episode_start=starts, deterministic=deterministic)  # type: ignore[arg-type]  # SB3's VecEnvObs includes tuples, predict's annotation does not
        obs, rewards, dones, infos = env.step(actions)
        starts = np.asarray(dones, dtype=bool)
        cur_ret += rewards
        cur_len += 1
        for i in np.flatnonzero(dones).tolist():
            if counts[i] < targets[i]:
                s = success_from_info(infos[i])
                returns.append(cur_ret[i])
                lengths.append(cur_len[i])
                outcomes.append(outcome_of(s, cur_ret[i]))
                if s is not None:
                    successes.append(float(s))
                counts[i] += 1
            cur_ret[i], cur_len[i] = 0.0, 0
    return {"return": float(np.mean(returns)), "length": float(np.mean(lengths)),
            "success": float(np.mean(successes)) if successes else float("nan"),
            "outcome": float(np.mean(outcomes)), "episodes": float(len(returns))}


def evaluate_with_and_without_experience(model: BaseAlgorithm, env: VecEnv | None = None, n_episodes: int = 20,
                                         deterministic: bool = True, seed: int | None = None) -> dict[str, Any]:
    """Evaluate twice on ``env`` (default: the model's env): every episode guided, then every one free
    (with ``seed``, both from the same seeded starts: :func:`run_episodes`).

    During evaluation nothing is learned: episodes are not handed to the manager and
    retrieval counters are left alone. Afterwards the schedule is restored and the env is
    reset (so no evaluation episode reaches the manager); when ``env`` is the model's own,
    the model's last observation is updated, so training can continue. A separate
    evaluation env on the same bank avoids touching the training env at all.

    Returns:
        ``{"with_experience": {...}, "without_experience": {...}}`` as :func:`run_episodes` gives.
    """
    n_episodes, seed = check_episodes(n_episodes, seed)  # (before the injectors and the env are touched)
    env = env or model.get_env()
    if env is None:
        raise ValueError("no env: pass one or give the model an env")
    _, injectors = find_experience(env)
    saved = [(inj.force_guided, inj.learn) for inj in injectors]
    out: dict[str, Any] = {}
    try:
        for name, guided in (("with_experience", True), ("without_experience", False)):
            for inj in injectors:
                inj.force_guided, inj.learn = guided, False
            out[name] = run_episodes(model, env, n_episodes, deterministic, seed)
    finally:
        for inj, (force, learn) in zip(injectors, saved, strict=True):
            inj.force_guided, inj.learn = force, learn
        # start fresh episodes under the training settings (the evaluation episodes in flight
        # are dropped, never handed to the manager) and keep the model's view of the env current
        obs = env.reset()
        if env is model.get_env():
            model._last_obs = obs  # type: ignore[assignment]  # SB3's VecEnvObs includes tuples, _last_obs's annotation does not
            model._last_episode_starts = np.ones((env.num_envs,), dtype=bool)
    return out
