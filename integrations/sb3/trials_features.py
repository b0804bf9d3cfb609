"""Policy features extractor that reads a trial's ``k`` retrieved entries with attention."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import torch as th
from stable_baselines3.common.torch_layers import BaseFeaturesExtractor
from torch import nn

from experience_wrappers.trials.wrapper import ENTRIES_KEY, MASK_KEY

__all__ = ["TrialsFeaturesExtractor"]


class TrialsFeaturesExtractor(BaseFeaturesExtractor):
    """An MLP of the env's observation, and the ``k`` entries pooled by attention and by max.

    Each entry row (offset to the query, distance, same-instance flag, action, return,
    steps to go, the extractor's vector; see :class:`~experience_wrappers.trials.layout.EntryLayout`)
    is encoded by a small MLP; the observation's features make the attention query;
    padded slots (mask 0) are ignored. The output is ``[observation features, attention
    pool, max pool, any-entry flag]``: with nothing retrieved the pools are zeros.

    Args:
        observation_space: the Dict observation of a :class:`~experience_wrappers.trials.TrialsWrapper`.
        hidden: width of every layer.
        base_extractor_class: an SB3 features extractor for the env's own observation keys (a
            Dict space of them), e.g. :class:`integrations.minihack.GlyphCNNExtractor` or SB3's
            ``CombinedExtractor`` for images; its output goes through one ``hidden``-wide layer.
            None (the default): one ``hidden``-wide ReLU layer on the flattened keys (for vector
            observations such as a position).
        base_extractor_kwargs: its keyword arguments.
    """

    def __init__(self, observation_space: gym.spaces.Dict, hidden: int = 64,
                 base_extractor_class: type[BaseFeaturesExtractor] | None = None,
                 base_extractor_kwargs: dict[str, Any] | None = None) -> None:
        if not isinstance(observation_space, gym.spaces.Dict) or ENTRIES_KEY not in observation_space.spaces:
            raise ValueError(f"TrialsFeaturesExtractor needs the Dict observation of a TrialsWrapper, got "
                             f"{observation_space}")
        self.base_keys = sorted(key for key in observation_space.spaces if key not in (ENTRIES_KEY, MASK_KEY))
        super().__init__(observation_space, features_dim=3 * hidden + 1)
        entries_shape = observation_space[ENTRIES_KEY].shape
        assert entries_shape is not None  # the TrialsWrapper's entries are a Box
        row_dim = entries_shape[-1]
        self.encoder: BaseFeaturesExtractor | None = None
        if base_extractor_class is None:
            base_dim = sum(gym.spaces.flatdim(observation_space[key]) for key in self.base_keys)
        else:
            sub = gym.spaces.Dict({key: observation_space[key] for key in self.base_keys})
            self.encoder = base_extractor_class(sub, **(base_extractor_kwargs or {}))
            base_dim = self.encoder.features_dim
        self.base = nn.Sequential(nn.Linear(base_dim, hidden), nn.ReLU())
        self.token = nn.Sequential(nn.Linear(row_dim, hidden), nn.ReLU(), nn.Linear(hidden, 2 * hidden), nn.ReLU())
        self.query = nn.Linear(hidden, hidden)
        self.hidden = hidden

    def forward(self, observations: dict[str, th.Tensor]) -> th.Tensor:
        if self.encoder is None:
            base_in = th.cat([observations[key].float().flatten(1) for key in self.base_keys], dim=1)
        else:
            base_in = self.encoder({key: observations[key] for key in self.base_keys})
        base = self.base(base_in)
        keys, values = self.token(observations[ENTRIES_KEY].float()).split(self.hidden, dim=-1)
        mask = observations[MASK_KEY].float() > 0.5
        scores = (keys * self.query(base).unsqueeze(1)).sum(-1) / self.hidden ** 0.5
        scores = scores.masked_fill(~mask, -1e9)
        weights = th.softmax(scores, dim=-1) * mask.float()
        pooled = (weights.unsqueeze(-1) * values).sum(1)
        maxed = values.masked_fill(~mask.unsqueeze(-1), 0.0).max(dim=1).values
        any_entry = mask.any(dim=1, keepdim=True).float()
        return th.cat([base, pooled, maxed, any_entry], dim=1)
