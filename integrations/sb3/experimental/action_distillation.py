"""Experience distillation: an auxiliary supervised step toward the retrieved actions."""

from __future__ import annotations

from typing import cast

import numpy as np
import torch as th
from gymnasium import spaces
from stable_baselines3.common.on_policy_algorithm import OnPolicyAlgorithm
from stable_baselines3.common.utils import obs_as_tensor

from .policy import prior_mixture

__all__ = ["distillation_step"]


def distillation_step(model: OnPolicyAlgorithm, positions: np.ndarray, weights: np.ndarray,
                      coef: float, batch_size: int = 256) -> float:
    """One pass over the chosen rollout-buffer samples, pulling the policy toward the retrieved actions.

    The target is the utility-weighted mixture of the shown entries' action priors (see
    :func:`~integrations.sb3.experimental.prior_mixture`): cross-entropy for Discrete actions,
    the negative log-likelihood of the mixture's mean action for Box actions. Each sample
    weighs ``weights[i]`` (its episode's positive outcome delta); the loss is scaled by
    ``coef``. Returns the mean loss (0 when nothing is chosen).

    Args:
        model: the PPO model whose ``rollout_buffer`` holds the samples.
        positions: ``(n, 2)`` (step, env) indices into the buffer.
        weights: ``(n,)`` sample weights.
        coef: loss coefficient (annealed by the callback).
    """
    if len(positions) == 0 or coef <= 0:
        return 0.0
    buf = model.rollout_buffer
    obs_all = buf.observations
    if not isinstance(obs_all, dict) or "experience_action_prior" not in obs_all:
        raise ValueError("distillation needs ExperienceWrapper(..., experimental={'action_prior': True})")
    policy = model.policy
    space = model.action_space
    losses = []
    order = np.random.default_rng(0).permutation(len(positions))
    for start in range(0, len(order), batch_size):
        idx = positions[order[start : start + batch_size]]
        obs = {key: v[idx[:, 0], idx[:, 1]] for key, v in obs_all.items()}
        obs_t = cast(dict[str, th.Tensor], obs_as_tensor(obs, model.device))  # a dict in, a dict out
        w = th.as_tensor(weights[order[start : start + batch_size]], dtype=th.float32, device=model.device)
        mix, any_mask = prior_mixture(obs_t)
        dist = policy.get_distribution(obs_t)
        if isinstance(space, spaces.Discrete):
            logits = cast(th.distributions.Categorical, dist.distribution).logits  # a Discrete space's
            logp = th.log_softmax(logits, dim=-1)
            per = -(mix * logp).sum(-1)
        elif isinstance(space, spaces.Box):
            n = space.shape[0]
            low = th.as_tensor(space.low, dtype=th.float32, device=model.device)
            high = th.as_tensor(space.high, dtype=th.float32, device=model.device)
            finite = th.isfinite(low) & th.isfinite(high)
            target = th.where(finite, th.where(finite, low, 0)
                              + (mix[:, :n].clamp(-1, 1) + 1) / 2 * th.where(finite, high - low, 0), mix[:, :n])
            per = -dist.log_prob(target)
        else:
            raise ValueError(f"distillation supports Discrete and Box actions, got {space}")
        loss = coef * (w * per * any_mask.squeeze(-1)).sum() / w.sum().clamp_min(1e-8)
        policy.optimizer.zero_grad()
        loss.backward()
        th.nn.utils.clip_grad_norm_(policy.parameters(), model.max_grad_norm)
        policy.optimizer.step()
        losses.append(float(loss.detach()))
    return float(np.mean(losses))
