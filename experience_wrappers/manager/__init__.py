"""The experience manager: attribution, distillation, extractor training, merges."""

from ..credit import FreeBaseline, utility_decay
from .config import ManagerConfig
from .episode import Episode, Instance, outcome_of, success_from_info
from .episode_entries import segment_priors
from .manager import ExperienceManager
from .protocol import ExperienceSource
from .sharing import manager_for_bank, resolve_manager

__all__ = [
    "ExperienceManager",
    "ExperienceSource",
    "ManagerConfig",
    "Episode",
    "FreeBaseline",
    "Instance",
    "manager_for_bank",
    "outcome_of",
    "resolve_manager",
    "segment_priors",
    "success_from_info",
    "utility_decay",
]
