"""Policy features extractor that reads the experience channel with masked attention."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import torch as th
from stable_baselines3.common.torch_layers import BaseFeaturesExtractor, CombinedExtractor
from torch import nn

from experience_wrappers.wrappers.spaces import base_keys

__all__ = ["ExperienceFeaturesExtractor", "crl_policy_kwargs"]


def _box_shape(space: gym.spaces.Dict, key: str) -> tuple[int, ...]:
    shape = space[key].shape
    assert shape is not None  # the wrapper's experience channels are Boxes
    return shape


class ExperienceFeaturesExtractor(BaseFeaturesExtractor):
    """Encode the original observation, pool the ``k`` shown experiences with attention.

    The original observation (every key that is not an experience key) goes through a
    base extractor: ``base_extractor_class(sub_space, **base_extractor_kwargs)``, SB3's
    :class:`CombinedExtractor` by default (an MLP on vectors, a CNN on images); pass a
    domain encoder (e.g. :class:`integrations.minihack.GlyphCNNExtractor`) instead. Each
    experience token is ``[experience, utility]`` projected to
    ``attn_dim``; the base features make the query; padded tokens (mask 0) are ignored,
    and an episode with no experience pools to zeros. The output is
    ``[base features, pooled experience, guided flag]``.

    It needs the wrappers' three experience keys: the experimental compact input (one key, the
    entries' mean: :class:`~experience_wrappers.experimental.CompactExperience`) is for SB3's
    default policy, and is refused here with a ``ValueError`` that says so.

    Args:
        observation_space: the wrapped Dict observation space.
        base_extractor_class: features extractor for the original observation.
        base_extractor_kwargs: its keyword arguments.
        attn_dim: width of the attention and of the pooled experience.
    """

    def __init__(self, observation_space: gym.spaces.Dict, base_extractor_class: type[BaseFeaturesExtractor] | None = None,
                 base_extractor_kwargs: dict[str, Any] | None = None, attn_dim: int = 64) -> None:
        if not isinstance(observation_space, gym.spaces.Dict) or "experience" not in observation_space.spaces:
            raise ValueError("ExperienceFeaturesExtractor needs the Dict observation of an ExperienceWrapper, "
                             f"got {observation_space}")
        if "experience_mask" not in observation_space.spaces:
            raise ValueError(
                "ExperienceFeaturesExtractor attends over the k shown entries one by one, but the observation carries "
                f"the compact experience input (experience {observation_space['experience'].shape}: the entries' "
                "mean and the fraction shown; no experience_mask): drop the CompactExperience wrapper for this "
                "extractor, or keep it and use SB3's default policy (PPO('MultiInputPolicy', env) without "
                "crl_policy_kwargs)")
        keys = base_keys(observation_space)
        sub = gym.spaces.Dict({key: observation_space[key] for key in keys})
        base_cls = base_extractor_class or CombinedExtractor
        base = base_cls(sub, **(base_extractor_kwargs or {}))
        super().__init__(observation_space, features_dim=base.features_dim + attn_dim + 1)
        self.base = base
        self.base_keys = keys
        k, d = _box_shape(observation_space, "experience")
        self.token = nn.Sequential(nn.Linear(d + 1, attn_dim), nn.ReLU(), nn.Linear(attn_dim, 2 * attn_dim))
        self.query = nn.Linear(base.features_dim, attn_dim)
        self.attn_dim = attn_dim

    def forward(self, observations: dict[str, th.Tensor]) -> th.Tensor:
        base = self.base({key: observations[key] for key in self.base_keys})
        tokens = th.cat([observations["experience"], observations["experience_utility"].unsqueeze(-1)], dim=-1)
        keys, values = self.token(tokens).split(self.attn_dim, dim=-1)
        mask = observations["experience_mask"] > 0.5
        scores = (keys @ self.query(base).unsqueeze(-1)).squeeze(-1) / self.attn_dim**0.5
        scores = scores.masked_fill(~mask, float("-inf"))
        any_mask = mask.any(dim=-1, keepdim=True)
        weights = th.softmax(scores.masked_fill(~any_mask, 0.0), dim=-1) * any_mask
        pooled = (weights.unsqueeze(-1) * values).sum(dim=1)
        return th.cat([base, pooled, any_mask.float()], dim=-1)


def crl_policy_kwargs(base_extractor_class: type[BaseFeaturesExtractor] | None = None,
                      base_extractor_kwargs: dict[str, Any] | None = None, attn_dim: int = 64,
                      **policy_kwargs: Any) -> dict[str, Any]:
    """``policy_kwargs`` for ``PPO("MultiInputPolicy", ...)`` with :class:`ExperienceFeaturesExtractor`.

    >>> crl_policy_kwargs(attn_dim=32)["features_extractor_kwargs"]["attn_dim"]
    32
    """
    return {"features_extractor_class": ExperienceFeaturesExtractor,
            "features_extractor_kwargs": {"base_extractor_class": base_extractor_class,
                                          "base_extractor_kwargs": base_extractor_kwargs,
                                          "attn_dim": attn_dim},
            **policy_kwargs}
