"""The roll-in curriculum: how many steps ``h`` the guide acts at the start of a roll-in episode.

Part of :mod:`experience_wrappers.rollin` (which exports it); the guides are :mod:`.guides`'.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Iterable
from typing import Any

import attrs
import numpy as np

from ..validators import at_least, at_most, check_int, finite, is_int, is_real, to_float, to_int

__all__ = ["RollInCurriculum"]


# --------------------------------------------------------------------------- curriculum
@attrs.define(eq=False)
class RollInCurriculum:
    """How many steps ``h`` the guide acts at the start of a roll-in episode.

    Outcomes of roll-in episodes run at the current ``h`` are kept over a ``window``; once
    the window is full and its success rate reaches ``threshold``, ``h`` shrinks to
    ``max(min_h, floor(h * shrink_factor) - shrink_step)`` and the window starts afresh
    (outcomes at the old ``h`` say nothing about the new one). ``h`` never grows and never
    goes below ``min_h``; at ``min_h`` the curriculum is finished.

    Attributes:
        h: the current roll-in length (steps the guide acts), ``>= min_h``.
        threshold: success rate over the window that shrinks ``h``, in ``(0, 1]``.
        window: roll-in outcomes needed (and kept) at one ``h``, ``>= 1``.
        shrink_step: steps taken off ``h`` at each shrink (after the factor), ``>= 0``.
        shrink_factor: ``h`` is multiplied by this at each shrink, in ``(0, 1]``; with 1 the
            step alone shrinks. A factor of 1 with a step of 0 would never shrink: refused.
        min_h: the smallest ``h``, ``>= 0`` (0: the policy finally acts from the true start).

    >>> c = RollInCurriculum(h=10, threshold=0.5, window=2, shrink_step=3)
    >>> c.record(True), c.record(True), c.h
    (False, True, 7)
    >>> c.record(True, h=10)  # an episode begun at the old h: ignored
    False
    >>> RollInCurriculum(h=3, min_h=4)
    Traceback (most recent call last):
    ...
    ValueError: h must be >= min_h (4), got 3
    """

    h: int = attrs.field(converter=to_int, validator=[is_int, at_least(0)])
    threshold: float = attrs.field(default=0.5, converter=to_float,
                                   validator=[is_real, finite, at_most(1.0)])
    window: int = attrs.field(default=20, converter=to_int, validator=[is_int, at_least(1)])
    shrink_step: int = attrs.field(default=1, converter=to_int, validator=[is_int, at_least(0)])
    shrink_factor: float = attrs.field(default=1.0, converter=to_float, validator=[is_real, finite, at_most(1.0)])
    min_h: int = attrs.field(default=0, converter=to_int, validator=[is_int, at_least(0)])
    #: how many times ``h`` has shrunk
    shrinks: int = attrs.field(init=False, default=0)
    _outcomes: deque[float] = attrs.field(init=False, factory=deque, repr=False)

    def __attrs_post_init__(self) -> None:
        if not self.threshold > 0:
            raise ValueError(f"threshold must be > 0 (a rate in (0, 1]), got {self.threshold!r}")
        if not self.shrink_factor > 0:
            raise ValueError(f"shrink_factor must be > 0 (in (0, 1]), got {self.shrink_factor!r}")
        if self.shrink_step == 0 and self.shrink_factor == 1.0:
            raise ValueError("the curriculum never shrinks h with shrink_step=0 and shrink_factor=1.0; "
                             "give shrink_step >= 1 or shrink_factor < 1")
        if self.h < self.min_h:
            raise ValueError(f"h must be >= min_h ({self.min_h}), got {self.h}")
        self._outcomes = deque(maxlen=self.window)

    @classmethod
    def for_lengths(cls, lengths: Iterable[int], **kwargs: Any) -> RollInCurriculum:
        """A curriculum whose ``h`` starts at the longest demonstration's length.

        >>> RollInCurriculum.for_lengths([8, 11, 9]).h
        11
        """
        lengths = [check_int("a demonstration length", n, minimum=1, numpy=True) for n in lengths]
        if not lengths:
            raise ValueError("for_lengths needs at least one demonstration length, got none")
        return cls(h=int(max(lengths)), **kwargs)  # type: ignore[type-var]

    @property
    def finished(self) -> bool:
        """Whether ``h`` has reached ``min_h`` (the curriculum moves no more)."""
        return self.h <= self.min_h

    @property
    def success_rate(self) -> float | None:
        """Success rate of the outcomes kept at the current ``h`` (None: none yet)."""
        return float(np.mean(self._outcomes)) if self._outcomes else None

    @property
    def pending(self) -> int:
        """Outcomes kept at the current ``h``."""
        return len(self._outcomes)

    def next_h(self) -> int:
        """The ``h`` the next shrink gives."""
        return max(self.min_h, int(math.floor(self.h * self.shrink_factor)) - self.shrink_step)

    def record(self, success: bool, h: int | None = None) -> bool:
        """Add one roll-in episode's outcome; returns True when ``h`` shrank.

        Args:
            success: whether the episode succeeded.
            h: the ``h`` the episode was rolled in with (None: the current one). An outcome
                at another ``h`` (an episode begun before the last shrink) is ignored.
        """
        if h is not None and int(h) != self.h:
            return False
        self._outcomes.append(1.0 if success else 0.0)
        if self.finished or len(self._outcomes) < self.window or np.mean(self._outcomes) < self.threshold:
            return False
        self.h = self.next_h()
        self.shrinks += 1
        self._outcomes.clear()
        return True

    def state_dict(self) -> dict[str, Any]:
        """Where the curriculum stands (``h``, its shrinks and the outcomes kept at ``h``), for a save."""
        return {"h": self.h, "shrinks": self.shrinks, "outcomes": list(self._outcomes)}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Go on from a :meth:`state_dict` (a saved run's curriculum).

        Raises:
            ValueError: a state this curriculum could not have reached (``h`` below ``min_h``,
                a negative shrink count, more outcomes than the window or outcomes not 0 or 1).
        """
        h = check_int("the saved curriculum's h", state.get("h"), minimum=self.min_h)
        shrinks = check_int("the saved curriculum's shrinks", state.get("shrinks"), minimum=0)
        outcomes = state.get("outcomes")
        if not isinstance(outcomes, list) or len(outcomes) > self.window or any(o not in (0, 1) for o in outcomes):
            raise ValueError(f"the saved curriculum's outcomes must be a list of at most {self.window} values "
                             f"0 or 1, got {outcomes!r}")
        self.h, self.shrinks = h, shrinks
        self._outcomes = deque((float(o) for o in outcomes), maxlen=self.window)
