"""Gymnasium wrappers that inject retrieved experience into observations."""

from .experience_wrapper import ExperienceWrapper
from .injector import ExperienceInjector
from .instances import ReplayInstances, guided_members, instance_seed, paired_env_fns
from .options import ExperienceOptions
from .retrieval import Retriever
from .spaces import BASE_KEY, EXPERIENCE_KEYS, base_keys, experience_space

__all__ = ["ExperienceWrapper", "ExperienceInjector", "ExperienceOptions", "Retriever", "experience_space",
           "base_keys", "BASE_KEY", "EXPERIENCE_KEYS", "ReplayInstances", "guided_members", "instance_seed",
           "paired_env_fns"]
