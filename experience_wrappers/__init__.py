"""Complementary RL for any PPO agent: an experience bank and a co-evolving experience extractor.

The core package knows nothing about Stable-Baselines3; see :mod:`integrations.sb3`. This front
door holds what a user imports first; the rest is public in the module that defines it:
:mod:`experience_wrappers.bank` (``Provenance``), :mod:`experience_wrappers.manager`
(``Episode``, ``ExperienceSource``), :mod:`experience_wrappers.keys` (the concrete key
encoders), :mod:`experience_wrappers.errors` (one file error per kind of file),
:mod:`experience_wrappers.schedule`, :mod:`experience_wrappers.rollin` and
:mod:`experience_wrappers.trials`.
"""

from .bank import BankConfig, ExperienceBank
from .errors import ExperienceError
from .keys import KeyEncoder
from .manager import ExperienceManager, ManagerConfig
from .replay import SuccessReplay
from .wrappers import ExperienceOptions, ExperienceWrapper

__version__ = "0.1.0"

__all__ = [
    "ExperienceBank",
    "BankConfig",
    "ExperienceWrapper",
    "ExperienceOptions",
    "ExperienceManager",
    "ManagerConfig",
    "SuccessReplay",
    "KeyEncoder",
    "ExperienceError",
    "__version__",
]
