"""The one reader of shown entries, in either scope: :class:`ExperienceFeaturesExtractor`."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import torch as th
from stable_baselines3.common.preprocessing import is_image_space, is_image_space_channels_first
from stable_baselines3.common.torch_layers import BaseFeaturesExtractor, CombinedExtractor
from torch import nn

from experience_wrappers.trials.checks import ENTRIES_KEY, MASK_KEY

__all__ = ["refuse_small_images", "ExperienceFeaturesExtractor", "crl_policy_kwargs", "ENTRY_LAYOUTS"]

#: the entry keys each scope's wrapper adds: (entries, mask, the entries' utility or None)
ENTRY_LAYOUTS: dict[str, tuple[str, str, str | None]] = {
    "task": ("experience", "experience_mask", "experience_utility"),  # ExperienceWrapper, ExperienceVecEnv
    # run scope's ExperienceWrapper: one row per entry (experience_wrappers.manager.entry_layout.EntryLayout)
    "run": (ENTRIES_KEY, MASK_KEY, None),
}


def entry_layout(space: gym.spaces.Space) -> str:
    """The scope whose entry keys ``space`` holds (a ``ValueError`` for a space without them)."""
    if isinstance(space, gym.spaces.Dict):
        for scope, (entries, mask, _) in ENTRY_LAYOUTS.items():
            if entries in space.spaces and mask in space.spaces:
                return scope
        if "experience" in space.spaces:
            raise ValueError(
                "ExperienceFeaturesExtractor attends over the k shown entries one by one, but the observation carries "
                f"the compact experience input (experience {space['experience'].shape}: the entries' "
                "mean and the fraction shown; no experience_mask): drop the CompactExperience wrapper for this "
                "extractor, or keep it and use SB3's default policy (PPO('MultiInputPolicy', env) without "
                "crl_policy_kwargs)")
    raise ValueError("ExperienceFeaturesExtractor needs the Dict observation of an experience wrapper "
                     "(ExperienceWrapper(env, bank), ExperienceVecEnv, or run scope's "
                     f"ExperienceWrapper(env, memory, scope=\"run\")), got {space}")


class ExperienceFeaturesExtractor(BaseFeaturesExtractor):
    """Encode the observation; pool the ``k`` shown entries with attention. Either scope's.

    The env's own observation (every key that is not an entry key) goes through a base
    extractor: ``base_extractor_class(sub_space, **base_extractor_kwargs)``, SB3's
    :class:`CombinedExtractor` by default (an MLP on vectors, a CNN on images); pass a domain
    encoder (e.g. :class:`integrations.minihack.GlyphCNNExtractor`) instead. ``sub_space`` is a
    Dict of those keys, as SB3's ``MultiInputPolicy`` gives its extractor; an env whose own
    observation is not a Dict shows it as the key ``"observation"`` (read
    ``observation_space["observation"]``, and ``observations["observation"]`` in ``forward``). Each shown entry
    becomes a token: in task scope (:class:`~experience_wrappers.ExperienceWrapper`'s keys)
    ``[experience, utility]``; in run scope (a :class:`~experience_wrappers.trials.wrapper.RunScopeWrapper`'s)
    its row (offset to the query, distance, same-instance flag, action, return, steps to go,
    the extractor's vector: :class:`~experience_wrappers.manager.entry_layout.EntryLayout`). A small MLP maps
    each token to a key and a value; the base features make the query; padded slots (mask 0)
    are ignored, and with nothing shown the pools are zeros. The output is ``[base features,
    attention pool, max pool (with max_pool), any-entry flag]``.

    Each scope's measured reader is a setting of this one: task scope's (``crl_policy_kwargs``)
    the defaults; run scope's (``ComplementaryRL(scope="run")``, :class:`~integrations.sb3.trials_features.TrialsFeaturesExtractor`)
    ``base_width=attn_dim, max_pool=True``.

    It needs the entries one by one: the experimental compact input (one key, the entries'
    mean: :class:`~experience_wrappers.experimental.CompactExperience`) is for SB3's default
    policy, and is refused here with a ``ValueError`` that says so.

    Args:
        observation_space: the wrapped Dict observation space.
        base_extractor_class: features extractor for the env's own observation.
        base_extractor_kwargs: its keyword arguments.
        attn_dim: width of the attention and of each pool.
        base_width: None (default): the base features as they come; an int: through one
            ReLU layer of this width first (run scope's reader).
        max_pool: also max-pool the entries' values, which then pass a ReLU (run scope's
            reader: a successful trial's rows stand out even among many of failed ones).
    """

    def __init__(self, observation_space: gym.spaces.Dict, base_extractor_class: type[BaseFeaturesExtractor] | None = None,
                 base_extractor_kwargs: dict[str, Any] | None = None, attn_dim: int = 64, *,
                 base_width: int | None = None, max_pool: bool = False) -> None:
        self.scope = entry_layout(observation_space)
        self.entries_key, self.mask_key, self.utility_key = ENTRY_LAYOUTS[self.scope]
        keys = [key for key in observation_space.spaces if key not in ENTRY_LAYOUTS[self.scope]]
        sub = gym.spaces.Dict({key: observation_space[key] for key in keys})
        if base_extractor_class is None:
            refuse_small_images(sub)
        try:
            base = (base_extractor_class or CombinedExtractor)(sub, **(base_extractor_kwargs or {}))
        except (TypeError, AttributeError, IndexError, KeyError) as exc:  # (one written for a Box: shape is None)
            if base_extractor_class is None:
                raise
            raise TypeError(f"base_extractor_class {base_extractor_class.__name__}(observation_space) raised "
                            f"{type(exc).__name__}: {exc}. It is given a Dict of the env's own keys ({list(sub.spaces)}: "
                            "an env whose observation is not a Dict shows it as 'observation'), as SB3's "
                            "MultiInputPolicy gives its extractor: read observation_space['observation'] "
                            "(observations['observation'] in forward)") from exc
        width = base.features_dim if base_width is None else int(base_width)
        super().__init__(observation_space, features_dim=width + (2 if max_pool else 1) * attn_dim + 1)
        self.base = base
        self.base_keys = keys
        self.project = None if base_width is None else nn.Sequential(nn.Linear(base.features_dim, width), nn.ReLU())
        entries_shape = observation_space[self.entries_key].shape
        assert entries_shape is not None  # the wrappers' entries are a Box
        d = entries_shape[-1] + (self.utility_key is not None)
        layers: list[nn.Module] = [nn.Linear(d, attn_dim), nn.ReLU(), nn.Linear(attn_dim, 2 * attn_dim)]
        self.token = nn.Sequential(*layers, *([nn.ReLU()] if max_pool else []))
        self.query = nn.Linear(width, attn_dim)
        self.attn_dim = attn_dim
        self.max_pool = bool(max_pool)

    def forward(self, observations: dict[str, th.Tensor]) -> th.Tensor:
        base = self.base({key: observations[key] for key in self.base_keys})
        if self.project is not None:
            base = self.project(base)
        tokens = observations[self.entries_key].float()
        if self.utility_key is not None:
            tokens = th.cat([tokens, observations[self.utility_key].unsqueeze(-1)], dim=-1)
        keys, values = self.token(tokens).split(self.attn_dim, dim=-1)
        mask = observations[self.mask_key].float() > 0.5
        scores = (keys * self.query(base).unsqueeze(1)).sum(-1) / self.attn_dim ** 0.5
        weights = th.softmax(scores.masked_fill(~mask, -1e9), dim=-1) * mask.float()
        parts = [base, (weights.unsqueeze(-1) * values).sum(1)]
        if self.max_pool:
            parts.append(values.masked_fill(~mask.unsqueeze(-1), 0.0).max(dim=1).values)
        parts.append(mask.any(dim=1, keepdim=True).float())
        return th.cat(parts, dim=1)


#: the smallest image side SB3's ``NatureCNN`` (what ``CombinedExtractor`` reads images with) takes
NATURE_CNN_MIN_SIDE = 36


def refuse_small_images(space: gym.spaces.Dict, remedy: str | None = None) -> None:
    """Refuse, naming the key and the remedy, an image SB3's ``CombinedExtractor`` would give a
    ``NatureCNN`` too small for it (a raw torch error at the first convolution otherwise).
    ``remedy``: what to give instead (None: the reader's ``base_extractor_class``)."""
    for key, sub in space.spaces.items():
        if isinstance(sub, gym.spaces.Box) and is_image_space(sub, check_channels=False):
            assert sub.shape is not None
            side = min(sub.shape[1:] if is_image_space_channels_first(sub) else sub.shape[:2])
            if side < NATURE_CNN_MIN_SIDE:
                raise ValueError(f"observation key {key!r} is an image of shape {sub.shape}: SB3's NatureCNN, which "
                                 f"reads images by default, needs sides of at least {NATURE_CNN_MIN_SIDE}; " + (
                                     remedy or "give a features extractor for small images as base_extractor_class "
                                     "(crl_policy_kwargs(MyCNN), or features_kwargs={'base_extractor_class': MyCNN} "
                                     f"in run scope); it is given a Dict of the env's own keys ({list(space.spaces)}), "
                                     "as SB3's MultiInputPolicy gives its extractor"))


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
