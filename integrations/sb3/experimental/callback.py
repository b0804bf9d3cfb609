"""``ExperimentalCRLCallback``: :class:`~integrations.sb3.CRLCallback` plus the parts measured to tie or hurt."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from experience_wrappers.credit import distill_weight

from ..callback import CRLCallback
from ..guards import on_policy
from .action_distillation import distillation_step
from .schedule import ExperimentalSchedule
from .value_baseline import StartValues

__all__ = ["ExperimentalCRLCallback"]


class ExperimentalCRLCallback(CRLCallback):
    """:class:`~integrations.sb3.CRLCallback` with the action prior's schedule, distillation and the value baseline.

    With its defaults it trains as :class:`~integrations.sb3.CRLCallback` does, and also fills
    in the critic's ``V(s0)`` (its first observation seen without experience) for the
    episodes credited against it: ``experimental={"value_baseline": True}`` on the wrapper, or
    ``paired=True`` on envs that cannot replay an instance. On top of that:

    * ``prior_weight``: the callback's :class:`ExperimentalSchedule` (``experimental_schedule``,
      advanced with the managers' schedules) carries the action prior's weight, which an
      :class:`~integrations.sb3.experimental.ActionPriorPolicy` follows;
    * ``distill_coef``: at each rollout's end, experience distillation
      (:func:`~integrations.sb3.experimental.distillation_step`) on the samples of guided
      episodes that beat the free baseline, weighted by
      :func:`~experience_wrappers.credit.distill_weight`; logged as ``crl/distill_loss`` and
      ``crl/distill_samples``. It needs ``ExperienceWrapper(..., experimental={"action_prior": True})``.

    What was measured (each ties or hurts): :mod:`integrations.sb3.experimental`.

    Args:
        guided_ratio, merge_every, subgroup_advantages, flush_at_end, self_imitation, verbose:
            as :class:`~integrations.sb3.CRLCallback`'s.
        distill_coef: weight of the distillation step (0: off), annealed linearly to 0.
        prior_weight: ``(start, end)`` schedule of an :class:`ActionPriorPolicy`'s weight
            (None: leave the policy's own value).

    Raises:
        TypeError: as :class:`~integrations.sb3.CRLCallback`, and a ``distill_coef`` or
            ``prior_weight`` that is not a number (or a pair of numbers).
        ValueError: as :class:`~integrations.sb3.CRLCallback`, and a negative
            ``distill_coef``, an infinite prior weight.
    """

    def __init__(self, guided_ratio: tuple[float, float] | float = (0.5, 0.8), merge_every: int = 5,
                 subgroup_advantages: bool = True, distill_coef: float = 0.0,
                 prior_weight: tuple[float, float] | float | None = None, flush_at_end: bool = True,
                 self_imitation: bool | Mapping[str, Any] = True, verbose: int = 0) -> None:
        super().__init__(guided_ratio=guided_ratio, merge_every=merge_every,
                         subgroup_advantages=subgroup_advantages, flush_at_end=flush_at_end,
                         self_imitation=self_imitation, verbose=verbose)
        #: the prior weight's and the distillation coefficient's schedules (checked here)
        self.experimental_schedule = ExperimentalSchedule(prior=prior_weight, distill=distill_coef)
        self.distill_coef = float(distill_coef)
        self.prior_weight = prior_weight

    def _setup_hook(self) -> None:
        """The prior policy follows the schedule, distillation's check, the value baseline's slots."""
        policy: Any = self.model.policy
        if hasattr(policy, "follow_schedule"):  # an ActionPriorPolicy: its weight follows
            # (stop following first, so that without a prior schedule the policy keeps its last weight)
            policy.follow_schedule(None)
            if self.prior_weight is not None:
                policy.follow_schedule(self.experimental_schedule)
        if self.distill_coef > 0 and "experience_action_prior" not in getattr(self.model.observation_space, "spaces", {}):
            raise ValueError("distill_coef > 0 needs ExperienceWrapper(..., experimental={'action_prior': True})")
        n_envs, n_steps = self.training_env.num_envs, getattr(self.model, "n_steps", 1)
        self._episode = np.zeros((n_steps, n_envs), dtype=np.int64)  # each sample's episode number
        self._ep_counter = np.arange(n_envs, dtype=np.int64)
        self._good: dict[int, float] = {}  # this rollout's episodes to distil, by number: their weight
        self.start_values = StartValues(self.injectors, n_envs)  # the value baseline's V(s0)

    def _advance_schedules(self) -> None:
        super()._advance_schedules()
        self.experimental_schedule.advance(self._progress())
        self._good = {}

    def _step_hook(self) -> None:
        """Fill in ``V(s0)`` where wanted; note each sample's episode (for distillation)."""
        self.start_values.fill(self.model)
        buf = getattr(self.model, "rollout_buffer", None)
        pos = buf.pos if buf is not None else 0
        n_envs = len(self.locals.get("infos", []))
        if pos < len(self._episode):
            self._episode[pos, :n_envs] = self._ep_counter[:n_envs]

    def _episode_end_hook(self, env: int, delta: float | None) -> None:
        """A guided episode that beat the free baseline is distilled at the rollout's end."""
        if delta is not None:
            weight = distill_weight(delta)
            if weight is not None:
                self._good[int(self._ep_counter[env])] = weight
        self._ep_counter[env] += len(self.locals.get("infos", []))

    def _rollout_end_hook(self, guided: np.ndarray) -> None:
        """Distillation on the guided samples of the episodes that beat the free baseline."""
        if self.distill_coef <= 0 or not self._good:
            return
        model = on_policy(self.model)
        buf = model.rollout_buffer
        ep = self._episode[: buf.buffer_size, : buf.n_envs]
        positions = np.argwhere(np.isin(ep, list(self._good)) & guided)
        weights = np.array([self._good[int(ep[s, e])] for s, e in positions], dtype=np.float32)
        coef = self.experimental_schedule.at(self._progress()).distill_coef  # at this rollout's end
        self.logger.record("crl/distill_loss", distillation_step(model, positions, weights, coef))
        self.logger.record("crl/distill_samples", len(positions))
