"""The action prior: a policy that adds the retrieved entries' action distribution as a bias."""

from __future__ import annotations

from typing import Any

import numpy as np
import torch as th
from gymnasium import spaces
from stable_baselines3.common.distributions import (
    CategoricalDistribution,
    DiagGaussianDistribution,
    Distribution,
)

from ..experience_policy import ExperiencePolicy
from .schedule import ExperimentalSchedule

__all__ = ["ActionPriorPolicy", "prior_mixture"]


def prior_mixture(obs: dict[str, th.Tensor], temperature: float = 1.0) -> tuple[th.Tensor, th.Tensor]:
    """Utility-weighted mixture of the shown entries' action priors, and which rows have any.

    Weights are ``softmax(utility / temperature)`` over the entries with mask 1 whose prior row
    is not all zero: a zero row is no advice (the action path's prior beyond its distance
    floor, or a row :func:`~experience_wrappers.wrappers.masks.mask_priors` emptied), so a row
    whose priors are all zero gets no bias and the policy acts alone.

    >>> obs = {"experience_mask": th.ones(2, 2), "experience_utility": th.zeros(2, 2),
    ...        "experience_action_prior": th.tensor([[[0.9, 0.1], [0.9, 0.1]], [[0.0, 0.0], [0.0, 0.0]]])}
    >>> mix, any_mask = prior_mixture(obs)
    >>> mix.double().round(decimals=3).tolist(), any_mask.squeeze(-1).tolist()
    ([[0.9, 0.1], [0.0, 0.0]], [True, False])
    """
    mask = (obs["experience_mask"] > 0.5) & (obs["experience_action_prior"] != 0).any(dim=-1)
    any_mask = mask.any(dim=-1, keepdim=True)
    scores = (obs["experience_utility"] / temperature).masked_fill(~mask, float("-inf"))
    w = th.softmax(scores.masked_fill(~any_mask, 0.0), dim=-1) * any_mask
    return (w.unsqueeze(-1) * obs["experience_action_prior"]).sum(dim=1), any_mask


class ActionPriorPolicy(ExperiencePolicy):
    """``MultiInputPolicy`` whose action distribution leans toward the retrieved actions.

    For Discrete actions the logits gain ``prior_weight * log(mixture)`` (the utility-weighted
    mixture of the shown entries' action distributions); for Box actions the mean moves
    ``prior_weight`` (in [0, 1]) of the way toward the mixture's mean action. Rows without
    experience are unchanged. ``prior_weight`` is the value set here, or, while the policy
    follows an :class:`~integrations.sb3.experimental.ExperimentalSchedule` (:meth:`follow_schedule`, which
    :class:`~integrations.sb3.experimental.ExperimentalCRLCallback` calls when given ``prior_weight``),
    the schedule's.
    It is used with ``PPO(ActionPriorPolicy, env)`` and an ``ExperienceWrapper(...,
    experimental={"action_prior": True})``; PPO itself is not changed.

    Args:
        prior_weight: strength of the bias.
        prior_temperature: temperature of the utility weighting.
    """

    def __init__(self, *args: Any, prior_weight: float = 1.0, prior_temperature: float = 1.0, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        obs_space = self.observation_space
        if not isinstance(obs_space, spaces.Dict) or "experience_action_prior" not in obs_space.spaces:
            raise ValueError("ActionPriorPolicy needs observations with 'experience_action_prior': "
                             "wrap the env with ExperienceWrapper(..., experimental={'action_prior': True})")
        if not isinstance(self.action_space, (spaces.Discrete, spaces.Box)):
            raise ValueError(f"the action prior supports Discrete and Box actions, got {self.action_space}")
        if not np.isfinite(prior_weight) or prior_weight < 0:
            raise ValueError(f"prior_weight must be finite and >= 0, got {prior_weight!r}")
        self._schedule: ExperimentalSchedule | None = None
        self.prior_weight = float(prior_weight)
        self.prior_temperature = float(prior_temperature)
        self._bias_obs: dict[str, th.Tensor] | None = None

    @property
    def prior_weight(self) -> float:
        """Strength of the bias: the followed schedule's prior weight, else the value set here."""
        if self._schedule is not None and self._schedule.prior_weight is not None:
            return self._schedule.prior_weight
        return self._prior_weight

    @prior_weight.setter
    def prior_weight(self, value: float) -> None:
        """Set the weight (and stop following a schedule)."""
        self._prior_weight = float(value)
        self._schedule = None

    def follow_schedule(self, schedule: ExperimentalSchedule | None) -> None:
        """Read ``prior_weight`` from ``schedule`` from now on (None: stop, keeping the current value)."""
        self._prior_weight = self.prior_weight
        self._schedule = schedule

    def _get_constructor_parameters(self) -> dict[str, Any]:
        data = super()._get_constructor_parameters()
        data.update(prior_weight=self.prior_weight, prior_temperature=self.prior_temperature)
        return data

    def _get_action_dist_from_latent(self, latent_pi: th.Tensor) -> Distribution:
        dist = super()._get_action_dist_from_latent(latent_pi)
        obs, self._bias_obs = self._bias_obs, None
        if obs is None or self.prior_weight == 0:
            return dist
        mix, any_mask = prior_mixture(obs, self.prior_temperature)
        if isinstance(dist, CategoricalDistribution):
            logits = dist.distribution.logits + self.prior_weight * th.log(mix.clamp_min(1e-6)) * any_mask
            return self.action_dist.proba_distribution(action_logits=logits)
        if isinstance(dist, DiagGaussianDistribution):
            assert isinstance(self.action_space, spaces.Box)
            n = self.action_space.shape[0]
            low = th.as_tensor(self.action_space.low, dtype=mix.dtype, device=mix.device)
            high = th.as_tensor(self.action_space.high, dtype=mix.dtype, device=mix.device)
            finite = th.isfinite(low) & th.isfinite(high)
            scaled = th.where(finite, low, 0) + (mix[:, :n].clamp(-1, 1) + 1) / 2 * th.where(finite, high - low, 0)
            prior_mean = th.where(finite, scaled, mix[:, :n])  # unbounded dims are stored raw
            mean = dist.distribution.mean
            w = min(self.prior_weight, 1.0) * any_mask
            return self.action_dist.proba_distribution(mean + w * (prior_mean - mean), self.log_std)
        return dist

    def forward(self, obs: Any, deterministic: bool = False) -> tuple[th.Tensor, th.Tensor, th.Tensor]:
        self._bias_obs = obs
        return super().forward(obs, deterministic)

    def evaluate_actions(self, obs: Any, actions: th.Tensor) -> tuple[th.Tensor, th.Tensor, th.Tensor | None]:
        self._bias_obs = obs
        return super().evaluate_actions(obs, actions)

    def get_distribution(self, obs: Any) -> Distribution:
        self._bias_obs = obs
        return super().get_distribution(obs)
