"""Stable-Baselines3 integration: the method in one object (:class:`ComplementaryRL`, both scopes:
``scope="task"`` and ``scope="run"``), the callbacks, VecEnv wrappers, policy pieces, evaluation,
persistence. The rest is public in the module that defines it: :mod:`.self_imitation`,
:mod:`.evaluation`, :mod:`.experience_features`, :mod:`.vec_env`, :mod:`.run_persistence`, :mod:`.checkpoint_files`,
:mod:`.rollin_callbacks`, :mod:`.env_families`, and the trials path's :mod:`.trials_method`,
:mod:`.trials_features`, :mod:`.trials_imitation`, :mod:`.trials_evaluation`. Parts measured to
tie or hurt live in :mod:`integrations.sb3.experimental`."""

from .callback import CRLCallback
from .checkpoint import CRLCheckpointCallback
from .discovery import find_experience
from .eval_callback import ExperienceEvalCallback
from .evaluation import evaluate_frozen, evaluate_with_and_without_experience
from .experience_features import crl_policy_kwargs
from .experience_policy import ExperiencePolicy
from .method import ComplementaryRL
from .rollin_callbacks import RollInCallback
from .rollin_env import GuidedRollInVecEnv
from .run_persistence import load_crl, save_crl
from .run_scope import RunScopeRL  # noqa: F401  (registers scope="run" with ComplementaryRL)
from .self_imitation import SelfImitationCallback
from .vec_env import ExperienceVecEnv

__all__ = [
    "ComplementaryRL",
    "CRLCallback",
    "CRLCheckpointCallback",
    "ExperienceEvalCallback",
    "ExperienceVecEnv",
    "ExperiencePolicy",
    "crl_policy_kwargs",
    "SelfImitationCallback",
    "evaluate_with_and_without_experience",
    "evaluate_frozen",
    "save_crl",
    "load_crl",
    "find_experience",
    "GuidedRollInVecEnv",
    "RollInCallback",
]
