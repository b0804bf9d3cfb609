"""Stable-Baselines3 integration: the method in one object (:class:`ComplementaryRL`), the
callback, VecEnv wrapper, policy pieces, evaluation, persistence. Parts measured to tie or
hurt live in :mod:`integrations.sb3.experimental`."""

from experience_wrappers.advantages import regroup_advantages

from .callback import CRLCallback
from .checkpoint import CRLCheckpointCallback
from .discovery import find_experience
from .env_families import Family, build_env, family_of
from .eval_callback import ExperienceEvalCallback
from .evaluation import (
    evaluate_frozen,
    evaluate_with_and_without_experience,
    no_learning,
    run_episodes,
)
from .experience_features import ExperienceFeaturesExtractor, crl_policy_kwargs
from .experience_policy import ExperiencePolicy
from .method import ComplementaryRL
from .rollin_callbacks import RollInCallback, RollInView
from .rollin_env import GuidedRollInVecEnv
from .run_persistence import load_crl, save_crl, save_experience
from .run_scope import RunScopeRL  # noqa: F401  (registers scope="run" with ComplementaryRL)
from .self_imitation import (
    SELF_IMITATION_DEFAULTS,
    SelfImitationCallback,
    add_demonstrations,
    demonstration_replay,
    self_imitation_step,
)
from .trials_evaluation import evaluate_trials, run_trials, trial_metrics
from .trials_features import TrialsFeaturesExtractor
from .trials_imitation import EntryImitationCallback
from .trials_method import TrialsRun, build_trials_method
from .vec_env import ExperienceVecEnv, norm_obs_keys

__all__ = [
    "ComplementaryRL",
    "CRLCallback",
    "CRLCheckpointCallback",
    "ExperienceEvalCallback",
    "ExperienceVecEnv",
    "SelfImitationCallback",
    "GuidedRollInVecEnv",
    "RollInCallback",
    "RollInView",
    "demonstration_replay",
    "add_demonstrations",
    "SELF_IMITATION_DEFAULTS",
    "self_imitation_step",
    "ExperiencePolicy",
    "ExperienceFeaturesExtractor",
    "crl_policy_kwargs",
    "regroup_advantages",
    "evaluate_with_and_without_experience",
    "run_episodes",
    "evaluate_frozen",
    "no_learning",
    "norm_obs_keys",
    "save_experience",
    "find_experience",
    "save_crl",
    "load_crl",
    "build_trials_method",
    "TrialsRun",
    "TrialsFeaturesExtractor",
    "EntryImitationCallback",
    "evaluate_trials",
    "run_trials",
    "trial_metrics",
    "Family",
    "family_of",
    "build_env",
]
