"""Complementary RL for any PPO agent: an experience bank and a co-evolving experience extractor.

The core package knows nothing about Stable-Baselines3; see :mod:`integrations.sb3`.
"""

from .bank import BankConfig, ExperienceBank, Provenance
from .errors import (
    BankFileError,
    DemonstrationFileError,
    ExperienceError,
    ExperienceFileError,
    ExtractorFileError,
    ManagerFileError,
    RunFileError,
)
from .keys import CallableKeyEncoder, KeyEncoder, RandomProjectionKeyEncoder
from .manager import Episode, ExperienceManager, ExperienceSource, ManagerConfig
from .replay import SuccessReplay
from .rollin import BankGuide, RollInCurriculum
from .schedule import Schedule
from .wrappers import ExperienceOptions, ExperienceWrapper

__version__ = "0.1.0"

__all__ = [
    "ExperienceBank",
    "BankConfig",
    "Provenance",
    "SuccessReplay",
    "ExperienceWrapper",
    "ExperienceOptions",
    "ExperienceManager",
    "ExperienceSource",
    "ManagerConfig",
    "Episode",
    "Schedule",
    "RollInCurriculum",
    "BankGuide",
    "KeyEncoder",
    "RandomProjectionKeyEncoder",
    "CallableKeyEncoder",
    "BankFileError",
    "ExperienceFileError",
    "ExtractorFileError",
    "ManagerFileError",
    "DemonstrationFileError",
    "RunFileError",
    "ExperienceError",
    "__version__",
]
