"""The experience manager: attribution, distillation, extractor training, merges."""

from ..credit import FreeBaseline, utility_decay
from .config import ManagerConfig
from .episode import Episode, Instance, SuccessReports, outcome_of, success_from_info
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
    "success_from_info",
    "SuccessReports",
    "utility_decay",
]
