"""The experimental callback's schedules: the action prior's weight and the distillation coefficient."""

from __future__ import annotations

import math
from numbers import Real

import attrs
import numpy as np

from experience_wrappers.schedule import Spec, as_spec, linear, spec_values
from experience_wrappers.validators import to_float

__all__ = ["ExperimentalSchedule"]


def _check_prior(instance: object, attribute: attrs.Attribute | None, value: object) -> None:
    if value is not None and not all(math.isfinite(v) for v in spec_values("prior_weight", value)):
        raise ValueError(f"prior_weight values must be finite, got {value!r}")


def _check_distill(instance: object, attribute: attrs.Attribute | None, value: object) -> None:
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (Real, np.integer, np.floating)):
        raise TypeError(f"distill_coef must be a number, got {value!r}")
    if not math.isfinite(float(value)) or float(value) < 0:
        raise ValueError(f"distill_coef must be finite and >= 0, got {value!r}")


@attrs.define(eq=False)
class ExperimentalSchedule:
    """The action prior's weight and the distillation coefficient over training.

    :class:`~integrations.sb3.experimental.ExperimentalCRLCallback` owns one and advances it
    with the managers' :class:`~experience_wrappers.schedule.Schedule` (the same progress);
    an :class:`~integrations.sb3.experimental.ActionPriorPolicy` follows its ``prior_weight``.

    Args:
        prior: an action prior policy's weight: a constant, ``(start, end)``, or None (the
            policy keeps its own).
        distill: distillation coefficient at progress 0; it anneals linearly to 0.
        progress: fraction of training done.

    >>> s = ExperimentalSchedule(prior=(1.0, 0.0), distill=0.2)
    >>> s.advance(0.5)
    >>> s.prior_weight, s.distill_coef
    (0.5, 0.1)
    >>> s.at(1.0).distill_coef, s.progress   # a read at another progress leaves the schedule as it is
    (0.0, 0.5)
    """

    prior: Spec | None = attrs.field(default=None, converter=as_spec, validator=_check_prior)
    distill: float = attrs.field(default=0.0, converter=to_float, validator=_check_distill)
    progress: float = attrs.field(default=0.0, converter=float)

    @property
    def prior_weight(self) -> float | None:
        """The action prior's weight now, or None where no prior schedule is set."""
        return None if self.prior is None else linear(self.prior, self.progress)

    @property
    def distill_coef(self) -> float:
        """The distillation coefficient now: ``distill * (1 - progress)``."""
        return self.distill * (1.0 - self.progress)

    def at(self, progress: float) -> ExperimentalSchedule:
        """A copy of this schedule at another ``progress`` (to read its values there)."""
        return attrs.evolve(self, progress=progress)

    def advance(self, progress: float) -> None:
        """Move to ``progress`` (the fraction of training done)."""
        progress = float(progress)
        if not math.isfinite(progress):
            raise ValueError(f"progress must be finite, got {progress!r}")
        self.progress = progress
