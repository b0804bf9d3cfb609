"""Run scope's measured reader, by the name its saved models refer to: :class:`TrialsFeaturesExtractor`."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
from stable_baselines3.common.torch_layers import BaseFeaturesExtractor

from experience_wrappers.trials.checks import ENTRIES_KEY
from experience_wrappers.validators import check_int

from .experience_features import ExperienceFeaturesExtractor

__all__ = ["TrialsFeaturesExtractor"]


class TrialsFeaturesExtractor(ExperienceFeaturesExtractor):
    """:class:`~integrations.sb3.experience_features.ExperienceFeaturesExtractor` as run scope measured it:
    ``attn_dim=hidden, base_width=hidden, max_pool=True``.

    An MLP of the env's observation (one ``hidden``-wide ReLU layer over the base extractor's
    features: the flattened keys by default, or ``base_extractor_class``'s, e.g.
    :class:`integrations.minihack.GlyphCNNExtractor` for images), and the ``k`` entry rows of a
    :class:`~experience_wrappers.trials.wrapper.RunScopeWrapper` pooled by attention and by max. A model
    saved before the two readers were one loads: its parameters' old names are read as the new.

    Args:
        observation_space: the Dict observation of a :class:`~experience_wrappers.trials.wrapper.RunScopeWrapper`.
        hidden: width of every layer.
        base_extractor_class: an SB3 features extractor for the env's own observation keys.
        base_extractor_kwargs: its keyword arguments.
    """

    def __init__(self, observation_space: gym.spaces.Dict, hidden: int = 64,
                 base_extractor_class: type[BaseFeaturesExtractor] | None = None,
                 base_extractor_kwargs: dict[str, Any] | None = None) -> None:
        if not isinstance(observation_space, gym.spaces.Dict) or ENTRIES_KEY not in observation_space.spaces:
            raise ValueError("TrialsFeaturesExtractor needs the Dict observation of run scope's "
                             f"ExperienceWrapper(..., scope=\"run\"), got {observation_space}")
        hidden = check_int("hidden", hidden, minimum=1, numpy=True)
        super().__init__(observation_space, base_extractor_class, base_extractor_kwargs, attn_dim=hidden,
                         base_width=hidden, max_pool=True)
        self._register_load_state_dict_pre_hook(_read_old_names)


def _read_old_names(state_dict: dict[str, Any], prefix: str, *args: Any) -> None:
    """Rename, in place, a state dict of the reader before it was one: its ``hidden``-wide layer was
    ``base.0`` (now ``project.0``) and its base extractor ``encoder`` (now ``base``)."""
    if f"{prefix}base.0.weight" not in state_dict or f"{prefix}project.0.weight" in state_dict:
        return
    for key in [k for k in state_dict if k.startswith(f"{prefix}base.0.")]:
        state_dict[f"{prefix}project.0.{key[len(prefix) + 7:]}"] = state_dict.pop(key)
    for key in [k for k in state_dict if k.startswith(f"{prefix}encoder.")]:
        state_dict[f"{prefix}base.{key[len(prefix) + 8:]}"] = state_dict.pop(key)
