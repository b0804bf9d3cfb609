"""Schedules over training: the one object that says where training is and what follows from it.

A :class:`Schedule` holds the training progress and the rollout count, and the schedules of
the guided ratio, the action prior's weight and the distillation coefficient (each a
constant, or ``(start, end)`` linear in the progress). The manager owns one
(``manager.schedule``); :class:`~integrations.sb3.CRLCallback` configures and advances it; the
injector (through ``manager.guided_ratio``), the action prior policy and the manager's
utility decay read it. Nothing else writes these values.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import attrs
import numpy as np

from .validators import check_int

__all__ = ["Schedule", "check_fraction_schedule", "linear"]

#: a schedule: a constant, or ``(start, end)`` linear over training
Spec = float | tuple[float, float]

_KEEP: Any = object()


def linear(schedule: Spec, progress: float) -> float:
    """A constant, or ``(start, end)`` interpolated linearly at ``progress`` (clipped to [0, 1]).

    >>> linear(0.3, 0.5), linear((1.0, 0.0), 0.25), linear((0.5, 0.8), 2.0)
    (0.3, 0.75, 0.8)
    """
    if isinstance(schedule, (int, float)):
        return float(schedule)
    start, end = schedule
    return float(start + (end - start) * min(max(progress, 0.0), 1.0))


def check_fraction_schedule(name: str, schedule: Spec) -> None:
    """Raise ValueError unless every value of ``schedule`` lies in [0, 1].

    >>> check_fraction_schedule("guided_ratio", (0.5, 0.8))
    >>> check_fraction_schedule("guided_ratio", 1.5)
    Traceback (most recent call last):
    ValueError: guided_ratio values must be in [0, 1], got 1.5
    """
    for v in np.atleast_1d(np.asarray(schedule, dtype=float)):
        if not 0.0 <= v <= 1.0:
            raise ValueError(f"{name} values must be in [0, 1], got {schedule!r}")


def _check_distill(instance: object, attribute: attrs.Attribute, value: float) -> None:
    if not np.isfinite(value) or value < 0:
        raise ValueError(f"distill_coef must be finite and >= 0, got {value!r}")


@attrs.define(eq=False)
class Schedule:
    """Training progress, rollout count, and the schedules that follow the progress.

    Args:
        guided: share of episodes drawn guided: a constant or ``(start, end)``.
        prior: an action prior policy's weight: a constant, ``(start, end)``, or None (the
            policy keeps its own).
        distill: distillation coefficient at progress 0; it anneals linearly to 0.
        progress: fraction of training done, in [0, 1].
        rollouts: rollouts finished so far (over every ``learn`` call).
        on_change: called after each :meth:`advance` as ``on_change("guided_ratio", value)``
            then ``on_change("progress", value)`` (a remote manager forwards them to its
            service; it skips values that did not change).

    >>> s = Schedule(guided=(0.5, 0.8), prior=(1.0, 0.0), distill=0.2)
    >>> s.advance(0.5)
    >>> s.guided_ratio, s.prior_weight, s.distill_coef, s.end_rollout()
    (0.65, 0.5, 0.1, 1)
    >>> s.at(1.0).distill_coef, s.progress   # a read at another progress leaves the schedule as it is
    (0.0, 0.5)
    """

    guided: Spec = attrs.field(default=0.5)
    prior: Spec | None = attrs.field(default=None)
    distill: float = attrs.field(default=0.0, converter=float, validator=_check_distill)
    progress: float = attrs.field(default=0.0, converter=float)
    rollouts: int = attrs.field(default=0)
    on_change: Callable[[str, float], None] | None = attrs.field(default=None, repr=False)

    @guided.validator
    def _check_guided(self, attribute: attrs.Attribute, value: Spec) -> None:
        check_fraction_schedule("guided_ratio", value)

    @progress.validator
    def _check_progress(self, attribute: attrs.Attribute, value: float) -> None:
        if not math.isfinite(value):
            raise ValueError(f"progress must be finite, got {value!r}")

    @rollouts.validator
    def _check_rollouts(self, attribute: attrs.Attribute, value: int) -> None:
        check_int("rollouts", value, minimum=0)

    # ----------------------------------------------------------------- values
    @property
    def guided_ratio(self) -> float:
        """Share of episodes drawn guided, now."""
        return linear(self.guided, self.progress)

    @property
    def prior_weight(self) -> float | None:
        """The action prior's weight now, or None where no prior schedule is set."""
        return None if self.prior is None else linear(self.prior, self.progress)

    @property
    def distill_coef(self) -> float:
        """The distillation coefficient now: ``distill * (1 - progress)``."""
        return self.distill * (1.0 - self.progress)

    def at(self, progress: float) -> Schedule:
        """A copy of this schedule at another ``progress`` (to read its values there; nothing is forwarded)."""
        return attrs.evolve(self, progress=progress, on_change=None)

    # ---------------------------------------------------------------- changes
    def configure(self, *, guided: Spec = _KEEP, prior: Spec | None = _KEEP, distill: float = _KEEP) -> None:
        """Set the schedules given (the others are kept); the progress is unchanged."""
        if guided is not _KEEP:
            check_fraction_schedule("guided_ratio", guided)
            self.guided = guided
        if prior is not _KEEP:
            self.prior = prior
        if distill is not _KEEP:
            _check_distill(self, None, float(distill))  # type: ignore[arg-type]
            self.distill = float(distill)

    def advance(self, progress: float) -> None:
        """Move to ``progress`` (the fraction of training done)."""
        progress = float(progress)
        if not math.isfinite(progress):
            raise ValueError(f"progress must be finite, got {progress!r}")
        self.progress = progress
        if self.on_change is not None:
            self.on_change("guided_ratio", self.guided_ratio)
            self.on_change("progress", progress)

    def end_rollout(self) -> int:
        """Count a finished rollout; returns the count."""
        self.rollouts += 1
        return self.rollouts

    # ------------------------------------------------------------------ state
    def state_dict(self) -> dict[str, float | int]:
        """The values a manager saves (``guided_ratio``, ``progress``, ``rollouts``)."""
        return {"guided_ratio": self.guided_ratio, "progress": self.progress, "rollouts": self.rollouts}

    @staticmethod
    def parse_state(state: dict[str, Any]) -> dict[str, float | int]:
        """The schedule values of a saved manager state (KeyError, TypeError or ValueError if bad)."""
        values = {"guided_ratio": float(state["guided_ratio"]), "progress": float(state["progress"]),
                  "rollouts": int(state["rollouts"])}
        check_fraction_schedule("guided_ratio", values["guided_ratio"])
        return values

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore saved values: the guided ratio becomes a constant until the next :meth:`configure`."""
        values = self.parse_state(state)
        self.configure(guided=values["guided_ratio"])
        self.advance(values["progress"])
        self.rollouts = int(values["rollouts"])
