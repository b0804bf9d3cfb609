"""REGENT's mix in run scope: a continuous action pulled towards the nearest shown success's action.

REGENT (Sridhar et al., 2025, "REGENT: A Retrieval-Augmented Generalist Agent That Can Act
In-Context in New Environments") acts on a new task from a few demonstrations by mixing, for
continuous actions, the action of the nearest retrieved state ``a'`` with its network's output,
weighted by the distance ``d`` to that state::

    a = w * a' + (1 - w) * pi(s),    w = exp(-lambda * d)

so that it copies a demonstration where it is close to one (retrieve-and-play, its learning-free
baseline) and acts on its own where it is not. :class:`RetrievalMixPolicy` does this to the mean
of SB3's Gaussian policy in run scope: ``a'`` is the action of the nearest shown entry of a
successful trial or a demonstration (the entry :mod:`experience_wrappers.trials.nearest_success`
picks for entry imitation and retrieve-and-play), read from the rows the env shows
(``trial_entries``, ``trial_mask``), and ``w = exp(-d / scale)`` with ``d`` the row's distance
column (the memory's own distance between keys). Where no success is shown ``w = 0``: the
policy's own mean, as it is for the all-zero input of self-imitation's free view. The standard
deviation is the policy's; PPO's log-probabilities are those of the mixed Gaussian, so its
gradient reaches the network's mean scaled by ``1 - w``.

Experimental; nothing on the main path imports it. Measured on ML10's held-out tasks with one
demonstration (``crl-trials-imitate-nearest-strong-mix-bonus-inf``, seed 0, 300k steps): trial 1 0.37
sampling against 0.30 for the same arm without the mix, 0.56 on the policy's mean, below
retrieve-and-play's 0.68 (``benchmarks/reporting/analysis.md``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import torch as th
from gymnasium import spaces
from stable_baselines3.common.distributions import DiagGaussianDistribution, Distribution

from experience_wrappers.extractor import ActionCoder
from experience_wrappers.manager.entry_layout import EntryLayout
from experience_wrappers.trials.checks import ENTRIES_KEY, MASK_KEY
from experience_wrappers.validators import check_real

from ..experience_policy import ExperiencePolicy

__all__ = ["RetrievalMixPolicy", "nearest_success_action"]


def nearest_success_action(rows: th.Tensor, mask: th.Tensor, layout: EntryLayout
                           ) -> tuple[th.Tensor, th.Tensor]:
    """The action code and distance of the nearest shown success per row, in torch (as
    :func:`~experience_wrappers.trials.nearest_success.success_codes` picks it: among entries whose
    trial return is positive, the nearest, then the fewest steps to go).

    Returns ``(codes (n, action_dim), distance (n,))``; ``distance`` is ``inf`` where none is shown.
    """
    won = (mask > 0.5) & (rows[..., layout.row_return_col] > 0)
    inf = th.full_like(rows[..., 0], float("inf"))
    dist = th.where(won, rows[..., layout.row_distance_col], inf)
    nearest = dist.min(dim=-1, keepdim=True).values
    steps_to_go = th.where(won & (dist == nearest), rows[..., layout.steps_to_go_col + 2], inf)
    best = steps_to_go.argmin(dim=-1)
    codes = rows[..., layout.row_action_slice()]
    picked = codes.gather(1, best[:, None, None].expand(-1, 1, codes.shape[-1]))[:, 0]
    return picked, nearest[:, 0]


class RetrievalMixPolicy(ExperiencePolicy):
    """SB3's ``MultiInputPolicy`` for run scope whose Gaussian mean is REGENT's mix (module doc).

    Args:
        mix_layout: the memory's :class:`~experience_wrappers.manager.entry_layout.EntryLayout`, or its
            fields as a mapping (what ``policy_kwargs`` save: ``attrs.asdict(memory.layout)``).
        mix_scale: the distance at which the shown action's weight is ``1/e`` (``w = exp(-d / mix_scale)``).
        The other arguments are SB3's.

    Raises:
        ValueError: an action space that is not a Box, a distribution that is not SB3's diagonal
            Gaussian (gSDE), observations without the run scope's entries, a layout whose actions are
            not the action space's width, or a scale that is not positive.
    """

    _mix_bounded: th.Tensor  # (registered buffers: they move with the policy's device)
    _mix_low: th.Tensor
    _mix_span: th.Tensor

    def __init__(self, observation_space: spaces.Space, action_space: spaces.Space, lr_schedule: Any, *,
                 mix_layout: EntryLayout | Mapping[str, Any], mix_scale: float = 0.05, **kwargs: Any) -> None:
        if not isinstance(action_space, spaces.Box):
            raise ValueError(f"RetrievalMixPolicy mixes continuous actions: it needs a Box action space, got "
                             f"{action_space}")
        if not isinstance(observation_space, spaces.Dict) or not {ENTRIES_KEY, MASK_KEY} <= set(observation_space.spaces):
            raise ValueError(f"RetrievalMixPolicy reads the entries a run-scope env shows ({ENTRIES_KEY!r}, "
                             f"{MASK_KEY!r}); got {observation_space}")
        super().__init__(observation_space, action_space, lr_schedule, **kwargs)
        if not isinstance(self.action_dist, DiagGaussianDistribution):
            raise ValueError(f"RetrievalMixPolicy mixes a diagonal Gaussian's mean; got {type(self.action_dist).__name__}"
                             " (use_sde=False)")
        layout = mix_layout if isinstance(mix_layout, EntryLayout) else EntryLayout(**mix_layout)
        width = int(np.prod(action_space.shape))
        if layout.action_dim != width:
            raise ValueError(f"mix_layout's actions are {layout.action_dim} wide, the action space {action_space} "
                             f"has {width}: give the layout of the memory the envs read (memory.layout)")
        self.mix_layout = layout
        self.mix_scale = check_real("mix_scale", mix_scale, minimum=0)
        if self.mix_scale == 0:
            raise ValueError("mix_scale must be > 0 (the distance at which the shown action's weight is 1/e)")
        bounded, low, span = ActionCoder(action_space).box_scale  # the rule the entries' action codes were made by
        self.register_buffer("_mix_bounded", th.as_tensor(bounded))
        self.register_buffer("_mix_low", th.as_tensor(low, dtype=th.float32))
        self.register_buffer("_mix_span", th.as_tensor(span, dtype=th.float32))
        self._shown: tuple[th.Tensor, th.Tensor] | None = None  # (action, weight) of the call in flight

    def shown_action(self, obs: dict[str, th.Tensor]) -> tuple[th.Tensor, th.Tensor]:
        """The nearest shown success's action ``(n, action_dim)`` and its weight ``w`` ``(n,)`` (0: none shown)."""
        codes, dist = nearest_success_action(obs[ENTRIES_KEY].float(), obs[MASK_KEY].float(), self.mix_layout)
        # ActionCoder.decode's rule, in torch
        action = th.where(self._mix_bounded, self._mix_low + (codes.clamp(-1.0, 1.0) + 1.0) * 0.5 * self._mix_span,
                          codes)
        weight = th.exp(-dist.clamp(min=0.0) / self.mix_scale)  # exp(-inf) = 0 where none is shown
        return action, weight

    def _get_action_dist_from_latent(self, latent_pi: th.Tensor) -> Distribution:
        mean = self.action_net(latent_pi)
        if self._shown is not None:
            action, weight = self._shown
            mean = weight[:, None] * action + (1.0 - weight[:, None]) * mean
        return self.action_dist.proba_distribution(mean, self.log_std)  # type: ignore[union-attr]

    def _mixing(self, obs: Any) -> None:
        self._shown = self.shown_action(obs)

    def forward(self, obs: Any, deterministic: bool = False) -> tuple[th.Tensor, th.Tensor, th.Tensor]:
        self._mixing(obs)
        try:
            return super().forward(obs, deterministic)
        finally:
            self._shown = None

    def evaluate_actions(self, obs: Any, actions: th.Tensor) -> tuple[th.Tensor, th.Tensor, th.Tensor | None]:
        self._mixing(obs)
        try:
            return super().evaluate_actions(obs, actions)
        finally:
            self._shown = None

    def get_distribution(self, obs: Any) -> Distribution:
        self._mixing(obs)
        try:
            return super().get_distribution(obs)
        finally:
            self._shown = None
