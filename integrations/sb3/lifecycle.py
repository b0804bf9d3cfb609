"""What :class:`CRLCallback` does at the start and end of ``learn`` so SB3's habits keep working.

* ``VecNormalize`` never normalises the experience keys (a normalised mask of 1 drifts below
  the 0.5 at which the attention extractor counts a slot);
* evaluation envs on the training bank never learn (only the env being trained hands
  episodes to the manager, see :attr:`ExperienceInjector.learning`);
* ``normalize_advantage``, which the callback turns off for PPO's updates, is what a saved
  model carries and what the model has again after training.
"""

from __future__ import annotations

import contextlib
import copy
import logging
import warnings
from collections.abc import Iterator

from gymnasium import spaces
from stable_baselines3.common.base_class import BaseAlgorithm
from stable_baselines3.common.vec_env import VecEnv, VecEnvWrapper, VecFrameStack, VecNormalize

from experience_wrappers.manager import ExperienceSource
from experience_wrappers.wrappers import EXPERIENCE_KEYS, ExperienceInjector
from experience_wrappers.wrappers.injector import mark_training

__all__ = ["start_training", "after_learn", "keep_experience_unnormalised", "take_statistics", "refuse_stacked_experience", "refuse_changed_experience",
           "remember_advantage_normalisation", "turn_off_advantage_normalisation",
           "restore_advantage_normalisation",
           "advantage_normalisation_as_configured"]

log = logging.getLogger(__name__)

#: the model's attribute that holds the user's ``normalize_advantage`` while a callback has it off
USER_SETTING = "_crl_user_normalize_advantage"


def start_training(model: BaseAlgorithm, venv: VecEnv, managers: list[ExperienceSource],
                   injectors: list[ExperienceInjector]) -> None:
    """Everything above, for the env that ``model`` is about to train on."""
    refuse_stacked_experience(venv)
    refuse_changed_experience(venv, injectors)
    keep_experience_unnormalised(venv, model)
    for m in managers:
        mark_training(m, [inj for inj in injectors if inj.manager is m])


def refuse_stacked_experience(venv: VecEnv) -> None:
    """Raise ValueError when a ``VecFrameStack`` sits above the experience wrappers (it would
    stack the experience keys too, and the policy's experience reader would get k * n slots)."""
    env: VecEnv = venv
    while isinstance(env, VecEnvWrapper):
        if isinstance(env, VecFrameStack):
            raise ValueError(
                "VecFrameStack above the experience wrappers stacks the experience keys too; stack the "
                "observation below them instead: ExperienceWrapper(gymnasium.wrappers.FrameStackObservation("
                "env, n), bank) for each env, or ExperienceVecEnv(VecFrameStack(venv, n), bank)")
        if type(env).__name__ == "ExperienceVecEnv":
            return
        env = env.venv


def refuse_changed_experience(venv: VecEnv, injectors: list[ExperienceInjector]) -> None:
    """Raise ValueError when a gymnasium wrapper above an ``ExperienceWrapper`` changed the
    experience keys the way no policy reader expects: stacked them (``FrameStackObservation``:
    a key of shape ``(n, *shape)``), or folded them into a flat observation
    (``FlattenObservation``: no Dict), where self-imitation's experience-free view cannot blank them.
    (A wrapper that re-encodes the keys on purpose, as the experimental compact input does, passes.)"""
    if not injectors:
        return
    inj = injectors[0]
    made = inj.retriever.observation_space(inj.observation_space).spaces
    seen = venv.observation_space
    problem, example = None, "FlattenObservation"
    if not isinstance(seen, spaces.Dict):
        problem = f"observes {_described(seen)}: the experience keys were folded into it"
    else:
        for key in EXPERIENCE_KEYS:
            got = seen.spaces.get(key)
            if key in made and got is not None and got.shape != made[key].shape \
                    and tuple(got.shape or ())[1:] == made[key].shape:
                problem = f"carries {key!r} with shape {got.shape} where the wrapper makes {made[key].shape}: stacked"
                example = "FrameStackObservation"
                break
    if problem is not None:
        call = f"{example}(env, n)" if example == "FrameStackObservation" else f"{example}(env)"
        raise ValueError(
            f"the training env {problem} by a wrapper above ExperienceWrapper; put observation wrappers below "
            f"it (ExperienceWrapper({call}, bank)), or the policy's experience reader "
            "and self-imitation cannot read the experience")


def _described(space: spaces.Space) -> str:
    if isinstance(space, spaces.Dict):
        return "a Dict of " + ", ".join(f"{k!r} {s.shape}" for k, s in space.spaces.items())
    return f"a {type(space).__name__} of shape {space.shape}"


def keep_experience_unnormalised(venv: VecEnv, model: BaseAlgorithm | None = None) -> list[str]:
    """Take the experience keys out of every ``VecNormalize`` in ``venv``'s wrapper chain.

    Warns when it had to (build ``VecNormalize(venv, norm_obs_keys=norm_obs_keys(venv))`` to
    avoid it). When ``venv`` is ``model``'s env, the model's last observation is normalised
    again without them. Returns the keys removed.
    """
    removed: list[str] = []
    env: VecEnv = venv
    while isinstance(env, VecEnvWrapper):
        if isinstance(env, VecNormalize) and env.norm_obs and env.norm_obs_keys:
            bad = [k for k in env.norm_obs_keys if k in EXPERIENCE_KEYS]
            if bad:
                env.norm_obs_keys = [k for k in env.norm_obs_keys if k not in EXPERIENCE_KEYS]
                if isinstance(env.obs_rms, dict):
                    for k in bad:
                        env.obs_rms.pop(k, None)
                removed += bad
                if model is not None and env is model.get_env() and getattr(env, "old_obs", None) is not None:
                    model._last_obs = env.normalize_obs(env.get_original_obs())  # type: ignore[assignment]
        env = env.venv
    if removed:
        warnings.warn(f"VecNormalize was normalising the experience keys {sorted(set(removed))}; they are now "
                      "left as they are (a normalised experience_mask stops counting as 1). Build it as "
                      "VecNormalize(venv, norm_obs_keys=integrations.sb3.vec_env.norm_obs_keys(venv)) to avoid this "
                      "warning.", UserWarning, stacklevel=3)
    return removed


def take_statistics(target: VecNormalize, source: VecNormalize, *, copied: bool) -> None:
    """``target`` takes ``source``'s statistics and the keys they cover (not the experience keys, which
    a ``VecNormalize`` built as for training names until :func:`keep_experience_unnormalised` takes them
    out; SB3's ``sync_envs_normalization`` copies the statistics only). ``copied``: deep copies (an eval
    env's), else the same objects (a loaded run's)."""
    obs_rms, ret_rms = source.obs_rms, source.ret_rms
    target.obs_rms, target.ret_rms = (copy.deepcopy(obs_rms), copy.deepcopy(ret_rms)) if copied else (obs_rms, ret_rms)
    if isinstance(obs_rms, dict) and source.norm_obs_keys is not None:
        target.norm_obs_keys = list(source.norm_obs_keys)


def remember_advantage_normalisation(model: BaseAlgorithm) -> None:
    """Record ``model.normalize_advantage`` before the callback turns it off (on the model
    itself, as :data:`USER_SETTING`; a save leaves it out)."""
    if hasattr(model, "normalize_advantage") and not hasattr(model, USER_SETTING):
        setattr(model, USER_SETTING, bool(model.normalize_advantage))


def turn_off_advantage_normalisation(model: BaseAlgorithm) -> bool:
    """Turn PPO's per-minibatch advantage normalisation off (for PPO's update: the callbacks call it at a rollout's
    end, and :func:`restore_advantage_normalisation` at the next rollout's start and at the end), remembering the
    user's value (given back by :func:`restore_advantage_normalisation`, and what a save
    writes). The one place that changes it: :class:`CRLCallback` (which normalises per
    subgroup) and :class:`RollInCallback` (which normalises the policy's own steps) both call
    it. Returns whether it was on (False for algorithms without the setting)."""
    if not getattr(model, "normalize_advantage", False):
        return False
    remember_advantage_normalisation(model)
    model.normalize_advantage = False  # type: ignore[attr-defined]
    return True


def restore_advantage_normalisation(model: BaseAlgorithm) -> None:
    """Give ``model`` its own ``normalize_advantage`` back (at a rollout's start, and at the end of training)."""
    if hasattr(model, USER_SETTING):
        model.normalize_advantage = getattr(model, USER_SETTING)  # type: ignore[attr-defined]
        delattr(model, USER_SETTING)


def after_learn(model: BaseAlgorithm, injectors: list[ExperienceInjector]) -> None:
    """What a ``learn()`` leaves when it ends, also when it raised (SB3 then calls no callback's end):
    the model's own ``normalize_advantage``, and no wrapper marked as inside ``learn()``."""
    for inj in injectors:
        inj.in_learn = False
    restore_advantage_normalisation(model)


@contextlib.contextmanager
def advantage_normalisation_as_configured(model: BaseAlgorithm) -> Iterator[None]:
    """Within the block (a save), ``model.normalize_advantage`` is the user's own value and the
    record of it is off the model, so the saved model carries the user's setting alone."""
    if not hasattr(model, USER_SETTING):
        yield
        return
    during = model.normalize_advantage  # type: ignore[attr-defined]
    user = getattr(model, USER_SETTING)
    delattr(model, USER_SETTING)
    model.normalize_advantage = user  # type: ignore[attr-defined]
    try:
        yield
    finally:
        model.normalize_advantage = during  # type: ignore[attr-defined]
        setattr(model, USER_SETTING, user)
