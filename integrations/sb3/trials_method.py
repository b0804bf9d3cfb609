"""The trials method assembled in one call: memory, trial envs, PPO with the entry reader, and its callbacks."""

from __future__ import annotations

import warnings
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import attrs
import gymnasium as gym
import numpy as np
from gymnasium import spaces
from stable_baselines3 import PPO
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.monitor import Monitor
from stable_baselines3.common.vec_env import DummyVecEnv, VecEnv, VecNormalize

from experience_wrappers.replay import SuccessReplay
from experience_wrappers.trials import TrialMemory
from experience_wrappers.trials.checks import check_instances
from experience_wrappers.trials.wrapper import (
    ENTRIES_KEY,
    MASK_KEY,
    TRIAL_INDEX_KEY,
    DemoSource,
    trials_env_fns,
)
from experience_wrappers.validators import check_keywords

from .experience_policy import ExperiencePolicy
from .self_imitation import SelfImitationCallback
from .trials_features import TrialsFeaturesExtractor
from .trials_imitation import EntryImitationCallback

__all__ = ["TrialsRun", "build_trials_method", "method_parts", "check_groups", "checked_vec_normalize",
           "TRIALS_PPO_KWARGS"]

#: PPO's settings of the trials benchmarks (every arm, the recurrent peer included)
TRIALS_PPO_KWARGS: dict[str, Any] = {"n_steps": 128, "batch_size": 256, "n_epochs": 10, "learning_rate": 3e-4,
                                     "gamma": 0.99, "gae_lambda": 0.95, "ent_coef": 0.01, "clip_range": 0.2}


#: run scope's defaults of the novelty bonus and of the share of guided training runs given a demonstration
DEFAULT_NOVELTY_BONUS, DEFAULT_DEMO_RATIO = 0.02, 0.25


def method_parts(experience: bool, self_imitation: bool | None, imitate: bool | Mapping[str, Any] | None,
                 novelty_bonus: float | None, demo_ratio: float | None,
                 ) -> tuple[bool, bool | Mapping[str, Any], float, float]:
    """``ComplementaryRL(scope="run")``'s parts of the method: each None is its default (self-imitation
    and entry imitation on, :data:`DEFAULT_NOVELTY_BONUS`, :data:`DEFAULT_DEMO_RATIO`); with
    ``experience=False`` (the baseline) all are off, and a part asked for by name is warned of, not dropped
    in silence.

    >>> method_parts(True, None, None, None, 0.5)
    (True, True, 0.02, 0.5)
    >>> method_parts(False, None, None, None, None)
    (False, False, 0.0, 0.0)
    """
    if not experience:
        asked = {name: value for name, value in (("self_imitation", self_imitation), ("imitate", imitate),
                                                 ("novelty_bonus", novelty_bonus), ("demo_ratio", demo_ratio))
                 if value is not None and value is not False and value != 0}
        if asked:
            warnings.warn("experience=False is the baseline, PPO with the same network and nothing shown: "
                          f"{', '.join(f'{k}={v!r}' for k, v in asked.items())} not used", UserWarning, stacklevel=3)
        return False, False, 0.0, 0.0
    return (True if self_imitation is None else self_imitation, True if imitate is None else imitate,
            DEFAULT_NOVELTY_BONUS if novelty_bonus is None else novelty_bonus,
            DEFAULT_DEMO_RATIO if demo_ratio is None else demo_ratio)


def check_groups(experience: bool, group_size: int, free_members: int, trials: int, demonstrations: Any) -> None:
    """Refuse groups with no guided member (nothing would be shown), and warn where the method learns nothing
    from its own runs: no free member (no paired credit: the extractor is never trained), one trial and no
    demonstrations (a run has no earlier trial to read)."""
    if not experience:
        return
    if free_members >= group_size:
        raise ValueError(f"free_members={free_members} of groups of {group_size}: no member is guided, so no run "
                         "reads experience; keep free_members < group_size (or experience=False for the baseline)")
    if free_members == 0:
        warnings.warn("free_members=0: a guided trial has no free trial to be judged against, so the extractor is "
                      "never trained (its entries are written and read as they are)", UserWarning, stacklevel=3)
    if trials == 1 and demonstrations is None:
        warnings.warn("trials=1 without demonstrations: a run has no earlier trial to read, so experience never "
                      "reaches the policy; use trials >= 2 or give demonstrations", UserWarning, stacklevel=3)


def checked_vec_normalize(value: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """``vec_normalize`` as ``VecNormalize``'s keyword arguments (a mapping of the ones it takes, or None).

    Raises:
        TypeError: not a mapping (``True``: give ``{}`` for VecNormalize's defaults).
        ValueError: an argument ``VecNormalize`` does not take (or ``venv``, the method's own).
    """
    if value is None:
        return None
    if not isinstance(value, Mapping):
        raise TypeError(f"vec_normalize must be VecNormalize's keyword arguments (a dict; {{}} for its defaults) "
                        f"or None, got {value!r}")
    check_keywords("vec_normalize", value, VecNormalize.__init__, ("venv",))
    return dict(value)


@attrs.define
class TrialsRun:
    """What :func:`build_trials_method` made: train with ``model.learn(steps, callback=run.callbacks)``.

    Its parts alone: the object that trains, evaluates, saves and loads them is
    ``ComplementaryRL(env, scope="run", ...)`` (:class:`~integrations.sb3.run_scope.RunScopeRL`).

    Attributes:
        model: the PPO model (its policy reads the entries with :class:`TrialsFeaturesExtractor`).
        memory: the :class:`~experience_wrappers.trials.TrialMemory` every env shares.
        callbacks: self-imitation and entry imitation, as asked for (in this order).
    """

    model: PPO
    memory: TrialMemory
    callbacks: list[BaseCallback]


def build_trials_method(make_env: Callable[[], gym.Env], instances: Sequence[int], *, memory: TrialMemory,
                        n_envs: int = 8, group_size: int = 4, free_members: int = 1, trials: int = 4,
                        sil: bool = True, demonstrations: DemoSource | None = None, demo_ratio: float = DEFAULT_DEMO_RATIO,
                        imitate: bool | Mapping[str, Any] = True, novelty_bonus: float = DEFAULT_NOVELTY_BONUS,
                        novelty_until_success: bool = True,
                        ppo_kwargs: dict[str, Any] | None = None,
                        features_kwargs: dict[str, Any] | None = None,
                        vec_normalize: dict[str, Any] | None = None, seed: int = 0,
                        verbose: int = 0, policy: type[ExperiencePolicy] = ExperiencePolicy) -> TrialsRun:
    """The method measured on the trials suites, on ``instances`` of ``make_env``.

    ``n_envs`` envs in groups of ``group_size`` (``free_members`` of each free) run ``trials``
    trials per instance, sharing ``memory``; PPO (:data:`TRIALS_PPO_KWARGS`, overridden by
    ``ppo_kwargs``) with :class:`TrialsFeaturesExtractor`; self-imitation of successful trials
    as they were seen (``sil``: their entries in the input, so the policy learns to read
    them); ``demonstrations(instance)`` placed in ``demo_ratio`` of the guided runs;
    ``imitate``: :class:`EntryImitationCallback` (on by default, as measured: see below; a mapping:
    its arguments, e.g. ``{"max_distance": None}`` for continuous states); ``novelty_bonus``: the guided training steps
    exploration bonus for an observation new to their run, while the run has no success
    or demonstration unless ``novelty_until_success`` is False (:class:`~experience_wrappers.trials.novelty.NoveltyBonus`); its
    default, 0.02, is the measured one (``crl-trials-novelty`` on the hidden-goal room, 5 seeds:
    cumulative success by trial 4 0.53 against 0.35 without it; 0 gives the ``crl-trials`` arm).
    With a ``TrialMemory`` of its defaults (failed trials not written) this is the
    ``crl-trials-default-imitate`` arm, the best measured (5 seeds each): on the hidden key and
    door, following a run's success 0.91 and one demonstration 0.99 from the first trial,
    against 0.68 and 0.83 without the imitation loss (``imitate=False``: the
    ``crl-trials-novelty-successes`` arm), cumulative success by trial 4 0.45 against 0.51
    (the difference's CI spans zero); on the hidden-goal room following 0.94 and one
    demonstration 0.99-1.00 either way. ``features_kwargs`` go to the
    :class:`TrialsFeaturesExtractor` (``base_extractor_class`` for image observations).
    ``ppo_kwargs`` may hold ``policy_kwargs`` (``net_arch``, ``activation_fn``, ``log_std_init``):
    they override the method's ([64, 64]); the features extractor is the entry reader (a
    ``features_extractor_class`` or ``features_extractor_kwargs`` there is a ``ValueError``:
    ``features_kwargs`` are the reader's). The policy is :class:`~integrations.sb3.ExperiencePolicy`
    (SB3's ``MultiInputPolicy`` that names the remedy when given an env's own observation), or a subclass
    given as ``policy`` (its own arguments in ``ppo_kwargs["policy_kwargs"]``).
    ``vec_normalize``: ``VecNormalize``'s keyword arguments, the VecEnv wrapped in it (None, the
    default: not wrapped); ``norm_obs_keys`` defaults to the env's own float ``Box`` observation keys and
    ``run_best`` (an offset between keys, scaled as a visible goal would be: ML1's measured
    arms ran so), so that the entries, the mask and the trial index are never rescaled (the
    memory keys its entries on the raw observations below it). Evaluate such a model through its statistics
    (``model.get_env().normalize_obs``; frozen: ``training = False``).

    >>> from integrations.minihack.hidden_goal import HiddenGoalRoom
    >>> proto = HiddenGoalRoom()
    >>> mem = TrialMemory(proto.observation_space, proto.action_space, horizon=25, write_failures=True)
    >>> run = build_trials_method(HiddenGoalRoom, [5, 6], memory=mem, n_envs=4)
    >>> _ = run.model.learn(512, callback=run.callbacks)
    >>> run.memory.stats["trials_written"] > 0
    True
    """
    if not isinstance(memory, TrialMemory):
        raise TypeError(f"memory must be a TrialMemory, got {type(memory).__name__}")
    check_keywords("features_kwargs", features_kwargs or {}, TrialsFeaturesExtractor.__init__, ("observation_space",))
    if isinstance(imitate, Mapping):
        check_keywords("imitate", imitate, EntryImitationCallback.__init__, ("layout",))
    vec_normalize = checked_vec_normalize(vec_normalize)
    instances = check_instances(instances)
    fns = trials_env_fns(make_env, memory, n_envs, instances=instances, trials=trials, group_size=group_size,
                         free_members=free_members, seed=seed, wrapper=Monitor,
                         demonstrations=demonstrations if demo_ratio else None, demo_ratio=demo_ratio,
                         novelty_bonus=novelty_bonus, novelty_until_success=novelty_until_success)
    venv: VecEnv = DummyVecEnv(fns)
    if vec_normalize is not None:
        own = [key for key, sub in venv.observation_space.spaces.items()  # type: ignore[attr-defined]
               if key not in (ENTRIES_KEY, MASK_KEY, TRIAL_INDEX_KEY)
               and isinstance(sub, spaces.Box) and np.issubdtype(sub.dtype, np.floating)]  # (VecNormalize's: float Box)
        kept = sorted(set(vec_normalize.get("norm_obs_keys") or ()) - set(own))
        if kept:
            raise ValueError(f"vec_normalize's norm_obs_keys {kept}: not a float Box key of the env's own, or one "
                             f"the method keeps raw (the entries, their mask, the trial index); it may hold {own}")
        venv = VecNormalize(venv, **{"norm_obs_keys": own, **vec_normalize})
    kwargs = {**TRIALS_PPO_KWARGS, **(ppo_kwargs or {})}
    theirs = sorted({"features_extractor_class", "features_extractor_kwargs"} & set(kwargs.get("policy_kwargs", {})))
    if theirs:
        raise ValueError(f"policy_kwargs {theirs}: run scope's features extractor is the entry reader "
                         "(TrialsFeaturesExtractor); give what it reads the env's own observation with through "
                         "features_kwargs, e.g. features_kwargs={'base_extractor_class': MyCNN}")
    model = PPO(policy, venv, seed=seed, verbose=verbose,
                policy_kwargs={"net_arch": [64, 64], **kwargs.pop("policy_kwargs", {}),
                               "features_extractor_class": TrialsFeaturesExtractor,
                               **({"features_extractor_kwargs": features_kwargs} if features_kwargs else {})},
                **kwargs)
    callbacks: list[BaseCallback] = []
    if sil:
        callbacks.append(SelfImitationCallback(SuccessReplay(50_000), keep="successful", seed=seed))
    if imitate:
        callbacks.append(EntryImitationCallback(memory.layout, **{"seed": seed, **(
            dict(imitate) if isinstance(imitate, Mapping) else {})}))
    return TrialsRun(model, memory, callbacks)
