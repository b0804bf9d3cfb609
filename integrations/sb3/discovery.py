"""Finding the experience wrappers (and their managers) inside an SB3 VecEnv."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
from stable_baselines3.common.vec_env import DummyVecEnv, SubprocVecEnv, VecEnv, VecEnvWrapper

from experience_wrappers import ExperienceWrapper
from experience_wrappers.manager import ExperienceSource
from experience_wrappers.wrappers import ExperienceInjector

from .guards import check_vec_env
from .vec_env import ExperienceVecEnv

__all__ = ["find_experience", "one_manager"]


def find_experience(venv: VecEnv) -> tuple[list[ExperienceSource], list[ExperienceInjector]]:
    """Managers (deduplicated) and injectors of every experience wrapper in ``venv``.

    Raises:
        TypeError: ``venv`` is not a VecEnv (a single env given to ``load_crl``, say).
        ValueError: no experience wrapper is found, or per-env wrappers live in
            subprocesses (where the bank would be copied; use :class:`ExperienceVecEnv`).
    """
    check_vec_env(venv, "find_experience (behind save_crl, load_crl and CRLCallback)")
    env: VecEnv = venv
    while isinstance(env, VecEnvWrapper):
        if isinstance(env, ExperienceVecEnv):
            return [env.manager], [env.injector]
        env = env.venv
    injectors: list[ExperienceInjector] = []
    if isinstance(env, DummyVecEnv):
        for e in env.envs:
            w = e
            while isinstance(w, gym.Wrapper):
                if isinstance(w, ExperienceWrapper):
                    if w.scope != "task":
                        raise ValueError(
                            f"the env holds {w.scope} scope's ExperienceWrapper: CRLCallback and the "
                            "task scope's tools read task scope's wrappers; run scope trains with "
                            "ComplementaryRL(env, scope=\"run\", ...) (or integrations.sb3.trials_method's "
                            "callbacks)")
                    injectors.append(w.injector)
                    break
                w = w.env
    elif isinstance(env, SubprocVecEnv):
        raise ValueError(
            "CRLCallback cannot reach wrappers inside a SubprocVecEnv's workers (per-env ExperienceWrappers there "
            "would each hold a copy of the bank): wrap the SubprocVecEnv with integrations.sb3.ExperienceVecEnv(venv, "
            "bank) instead, or with service.vec_env(venv) for an experience service's bank")
    if not injectors:
        raise ValueError(
            "no experience wrapper found in the env (the training or the evaluation env): wrap each env with "
            "ExperienceWrapper(env, bank) or the VecEnv with ExperienceVecEnv(venv, bank)")
    managers: list[ExperienceSource] = []
    for inj in injectors:
        if all(inj.manager is not m for m in managers):
            managers.append(inj.manager)
    return managers, injectors


def one_manager(venv: VecEnv | None, caller: str) -> ExperienceSource:
    """The one manager of ``venv``'s experience wrappers, which a save or a load of ``caller`` reads.

    Raises:
        ValueError: no env, no experience wrapper (:func:`find_experience`'s message), or wrappers
            on several managers (banks).
    """
    if venv is None:
        raise ValueError("no env: pass the training env")
    managers, _ = find_experience(venv)
    if len(managers) != 1:
        raise ValueError(f"{caller} supports one manager per env, found {len(managers)}")
    return managers[0]


def empty_bank(manager: ExperienceSource) -> bool:
    """Whether ``manager``'s bank is known to hold no entry (a bank that cannot say counts as not empty)."""
    try:
        return len(manager.bank) == 0
    except (AttributeError, TypeError):
        return False


def never_fed(model: Any, managers: list[ExperienceSource], injectors: list[ExperienceInjector]) -> bool:
    """Whether ``model`` has trained steps while its envs never stepped and no episode reached their banks: a
    model loaded with ``PPO.load`` (or resumed from SB3's ``CheckpointCallback``) onto fresh envs, which saves
    the model only (early in training, or while a learner process has not written yet, the envs have stepped)."""
    return (model.num_timesteps > 0 and not any(inj.env_steps for inj in injectors)
            and all(getattr(m, "episodes_submitted", 1) == 0 and empty_bank(m) for m in managers))
