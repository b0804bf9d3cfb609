"""Schedules over training: the one object that says where training is and what follows from it.

A :class:`Schedule` holds the training progress and the rollout count, and the schedule of
the guided ratio (a constant, or ``(start, end)`` linear in the progress). The manager owns
one (``manager.schedule``); :class:`~integrations.sb3.CRLCallback` configures and advances it;
the injector (through ``manager.guided_ratio``) and the manager's utility decay read it.
Nothing else writes these values.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from numbers import Real
from typing import Any

import attrs
import numpy as np

from .validators import check_int, to_int

__all__ = ["Schedule", "check_fraction_schedule", "spec_values", "as_spec", "linear"]

#: a schedule: a constant, or ``(start, end)`` linear over training
Spec = float | tuple[float, float]

class _Keep:
    """The default of :meth:`Schedule.configure`'s arguments: keep the schedule as it is."""

    def __repr__(self) -> str:  # a stable name in signatures and docs/api.md (not an address)
        return "KEEP"


_KEEP: Any = _Keep()


def linear(schedule: Spec, progress: float) -> float:
    """A constant, or ``(start, end)`` interpolated linearly at ``progress`` (clipped to [0, 1]).

    >>> linear(0.3, 0.5), linear((1.0, 0.0), 0.25), linear((0.5, 0.8), 2.0)
    (0.3, 0.75, 0.8)
    """
    if isinstance(schedule, (int, float)):
        return float(schedule)
    start, end = schedule
    return float(start + (end - start) * min(max(progress, 0.0), 1.0))


def _number(x: object) -> bool:
    return not isinstance(x, (bool, np.bool_)) and isinstance(x, (Real, np.integer, np.floating))


def as_spec(schedule: object) -> object:
    """Converter: a schedule of real numbers as floats (a constant, or a ``(start, end)`` tuple);
    anything else is left as given for :func:`spec_values` to refuse (``"0.5"`` never becomes 0.5).

    >>> as_spec(np.float32(0.5)), as_spec([1, 0]), as_spec("0.5")
    (0.5, (1.0, 0.0), '0.5')
    """
    if _number(schedule):
        return float(schedule)  # type: ignore[arg-type]
    if isinstance(schedule, (tuple, list)) and len(schedule) == 2 and all(_number(v) for v in schedule):
        return (float(schedule[0]), float(schedule[1]))
    return schedule


def spec_values(name: str, schedule: object) -> tuple[float, ...]:
    """The values of a schedule: a number, or a pair ``(start, end)`` of numbers.

    Raises:
        TypeError: anything else (a str such as ``"0.5"``, a bool, three values), named ``name``.

    >>> spec_values("guided_ratio", (1, 0.0))
    (1.0, 0.0)
    >>> spec_values("guided_ratio", "x")
    Traceback (most recent call last):
    ...
    TypeError: guided_ratio must be a number or a pair of numbers (start, end), got 'x'
    """
    spec = as_spec(schedule)
    if isinstance(spec, float):
        return (spec,)
    if isinstance(spec, tuple) and len(spec) == 2 and all(isinstance(v, float) for v in spec):
        return spec
    raise TypeError(f"{name} must be a number or a pair of numbers (start, end), got {schedule!r}")


def check_fraction_schedule(name: str, schedule: Spec) -> None:
    """Raise unless ``schedule`` is a number or a ``(start, end)`` pair of numbers in [0, 1].

    Raises:
        TypeError: not a number or a pair of numbers (:func:`spec_values`).
        ValueError: a value outside [0, 1] (or NaN).

    >>> check_fraction_schedule("guided_ratio", (0.5, 0.8))
    >>> check_fraction_schedule("guided_ratio", 1.5)
    Traceback (most recent call last):
    ValueError: guided_ratio values must be in [0, 1], got 1.5
    """
    for v in spec_values(name, schedule):
        if not 0.0 <= v <= 1.0:
            raise ValueError(f"{name} values must be in [0, 1], got {schedule!r}")


@attrs.define(eq=False)
class Schedule:
    """Training progress, rollout count, and the guided ratio's schedule, which follows the progress.

    Args:
        guided: share of episodes drawn guided: a constant or ``(start, end)``.
        progress: fraction of training done, in [0, 1].
        rollouts: rollouts finished so far (over every ``learn`` call).
        on_change: called after each :meth:`advance` as ``on_change("guided_ratio", value)``
            then ``on_change("progress", value)`` (a remote manager forwards them to its
            service; it skips values that did not change).

    >>> s = Schedule(guided=(0.5, 0.8))
    >>> s.advance(0.5)
    >>> s.guided_ratio, s.end_rollout()
    (0.65, 1)
    >>> s.at(1.0).guided_ratio, s.progress   # a read at another progress leaves the schedule as it is
    (0.8, 0.5)
    """

    guided: Spec = attrs.field(default=0.5, converter=as_spec)
    progress: float = attrs.field(default=0.0, converter=float)
    rollouts: int = attrs.field(default=0, converter=to_int)
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

    def at(self, progress: float) -> Schedule:
        """A copy of this schedule at another ``progress`` (to read its values there; nothing is forwarded)."""
        return attrs.evolve(self, progress=progress, on_change=None)

    # ---------------------------------------------------------------- changes
    def configure(self, *, guided: Spec = _KEEP) -> None:
        """Set the schedules given (the others are kept); the progress is unchanged.

        Every value is checked (by its field) before any is set, so a bad one changes nothing.
        """
        given: dict[str, Any] = {name: value for name, value in (("guided", guided),) if value is not _KEEP}
        checked = attrs.evolve(self, on_change=None, **given)
        for name in given:
            setattr(self, name, getattr(checked, name))

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
