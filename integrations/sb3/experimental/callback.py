"""``ExperimentalCRLCallback``: :class:`~integrations.sb3.CRLCallback` plus the value baseline's ``V(s0)``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..callback import CRLCallback
from .value_baseline import StartValues

__all__ = ["ExperimentalCRLCallback"]


class ExperimentalCRLCallback(CRLCallback):
    """:class:`~integrations.sb3.CRLCallback` that also fills in the value baseline's ``V(s0)``.

    It trains as :class:`~integrations.sb3.CRLCallback` does, and fills in the critic's
    ``V(s0)`` (its first observation seen without experience) for the episodes credited
    against it: ``experimental={"value_baseline": True}`` on the wrapper, or ``paired=True`` on
    envs that cannot replay an instance. What was measured (it ties):
    :mod:`integrations.sb3.experimental`.

    Args:
        guided_ratio, merge_every, subgroup_advantages, flush_at_end, self_imitation, verbose:
            as :class:`~integrations.sb3.CRLCallback`'s.
    """

    def __init__(self, guided_ratio: tuple[float, float] | float = (0.5, 0.8), merge_every: int = 5,
                 subgroup_advantages: bool = True, flush_at_end: bool = True,
                 self_imitation: bool | Mapping[str, Any] = True, verbose: int = 0) -> None:
        super().__init__(guided_ratio=guided_ratio, merge_every=merge_every,
                         subgroup_advantages=subgroup_advantages, flush_at_end=flush_at_end,
                         self_imitation=self_imitation, verbose=verbose)

    def _setup_hook(self) -> None:
        """The value baseline's slots, one per env."""
        self.start_values = StartValues(self.injectors, self.training_env.num_envs)

    def _step_hook(self) -> None:
        """Fill in ``V(s0)`` where wanted."""
        self.start_values.fill(self.model)
