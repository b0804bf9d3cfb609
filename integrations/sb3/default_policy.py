"""The policy ``ComplementaryRL`` builds when the user names none: one rule for the task scope."""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from typing import Any

import gymnasium as gym
from stable_baselines3.common.base_class import BaseAlgorithm
from stable_baselines3.common.policies import MultiInputActorCriticPolicy

from .env_families import Family
from .experience_features import crl_policy_kwargs
from .experience_policy import ExperiencePolicy

__all__ = ["default_policy"]


def default_policy(algorithm: type[BaseAlgorithm], family: Family, experience: bool, observation_space: gym.Space,
                   policy_kwargs: Mapping[str, Any] | None) -> tuple[Any, dict[str, Any]]:
    """``(policy, policy_kwargs)`` for ``algorithm`` on an env of ``family`` (the user's kwargs added last; their
    ``features_extractor_kwargs`` added to the reader's, which keep the family's base extractor).

    With experience: SB3's ``MultiInputPolicy`` with the experience reader on the family's base
    extractor (:class:`ExperiencePolicy` where the algorithm's alias is an actor-critic: it says so
    when given an observation without its experience); without: the family's network as
    ``MultiInputPolicy`` or ``MlpPolicy``. sb3-contrib's ``RecurrentPPO`` takes the ``Lstm`` form.
    """
    aliases = getattr(algorithm, "policy_aliases", {})
    policy: Any
    if experience:
        base_cls, base_kwargs = family.base_extractor or (None, None)
        ours = crl_policy_kwargs(base_extractor_class=base_cls, base_extractor_kwargs=base_kwargs)
        user = dict(policy_kwargs or {})
        theirs = user.get("features_extractor_class")
        if theirs is not None:  # the user's extractor in place of the reader: the reader's kwargs go
            ours.pop("features_extractor_kwargs")
            if theirs is not ours["features_extractor_class"]:
                warnings.warn(f"policy_kwargs' features_extractor_class {getattr(theirs, '__name__', theirs)} "
                              "replaces the experience reader (ExperienceFeaturesExtractor) and reads the experience "
                              "keys of the Dict observation itself; to keep the reader on your network, pass "
                              "policy_kwargs={'features_extractor_kwargs': {'base_extractor_class': YourExtractor}}",
                              UserWarning, stacklevel=3)
        if theirs is None and "features_extractor_kwargs" in user:  # the reader's: added to ours (the family's base
            user["features_extractor_kwargs"] = {**ours["features_extractor_kwargs"],  # extractor kept)
                                                 **dict(user["features_extractor_kwargs"] or {})}
        kwargs = {**ours, **user}
        policy = "MultiInputPolicy"
        if issubclass(aliases.get(policy, object), MultiInputActorCriticPolicy):
            policy = ExperiencePolicy
    else:
        kwargs = {**family.base_policy_kwargs, **dict(policy_kwargs or {})}
        policy = "MultiInputPolicy" if isinstance(observation_space, gym.spaces.Dict) else "MlpPolicy"
    if isinstance(policy, str) and policy not in aliases and policy.replace("Policy", "LstmPolicy") in aliases:
        policy = policy.replace("Policy", "LstmPolicy")  # RecurrentPPO
    return policy, kwargs
