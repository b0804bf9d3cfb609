"""The credit's state over time: free-outcome windows per task, rolling figures, the paired table.

Part of :mod:`experience_wrappers.credit` (which exports them); the rules they apply are
:mod:`.rules`'.
"""

from __future__ import annotations

import logging
import math
import warnings
from collections import OrderedDict, defaultdict, deque
from collections.abc import Hashable
from typing import Any

import attrs
import numpy as np

from ..validators import check_int
from .rules import finite_number, outcome_delta, paired_delta

log = logging.getLogger(__name__)

__all__ = ["FreeBaseline", "OutcomeTracker", "PairedCredit", "PairedResult", "UNPAIRED_SAID"]

#: guided episodes, none credited, after which :class:`PairedCredit` warns (once) that the free members of
#: the groups do not step alongside the guided ones (in a working setup the first free episodes of the groups
#: in flight credit theirs: fewer guided episodes than the envs)
UNPAIRED_SAID = 256


class FreeBaseline:
    """Running outcome statistics of experience-free episodes, per task.

    The delta of a guided episode is its outcome minus the mean outcome of the last
    ``window`` experience-free episodes of the same task (:func:`outcome_delta`). When
    outcomes are returns (no success signal), deltas are divided by the spread of those
    returns so that utilities stay on a scale the retrieval temperature suits; success
    deltas are kept as they are (they already lie in [-1, 1]).

    >>> b = FreeBaseline(window=3)
    >>> b.delta(0, 1.0, is_success=True) is None   # no free episode yet
    True
    >>> b.add(0, 0.0); b.add(0, 1.0)
    >>> b.delta(0, 1.0, is_success=True)
    0.5

    Outcomes must be finite: a NaN or inf is refused where it arrives (``ValueError``), so
    it never enters the window, whose mean every later delta depends on.
    """

    def __init__(self, window: int = 100) -> None:
        if window <= 0:
            raise ValueError(f"window must be > 0, got {window!r}")
        self.window = window
        self._outcomes: dict[int, deque[float]] = defaultdict(lambda: deque(maxlen=window))

    def add(self, task_id: int, outcome: float) -> None:
        self._outcomes[int(task_id)].append(finite_number("outcome", outcome))

    def mean(self, task_id: int) -> float | None:
        q = self._outcomes.get(int(task_id))
        return float(np.mean(q)) if q else None

    def spread(self, task_id: int) -> float | None:
        """The standard deviation of the task's window, or None before any free episode of it."""
        q = self._outcomes.get(int(task_id))
        return float(np.std(q)) if q else None

    def delta(self, task_id: int, outcome: float, is_success: bool) -> float | None:
        """The delta of a guided outcome, or None before any free episode of the task."""
        outcome = finite_number("outcome", outcome)
        q = self._outcomes.get(int(task_id))
        if not q:
            return None
        return outcome_delta(outcome, float(np.mean(q)), free_spread=None if is_success else float(np.std(q)))

    def state_dict(self) -> dict[str, list[float]]:
        return {str(t): list(q) for t, q in self._outcomes.items()}

    def load_state_dict(self, state: dict[str, list[float]]) -> None:
        """Restore the windows; NaN or inf outcomes (saved by earlier versions) are dropped, with a warning."""
        outcomes: dict[int, list[float]] = {}
        dropped = 0
        for t, values in state.items():
            vals = [float(v) for v in values]
            kept = [v for v in vals if math.isfinite(v)]
            dropped += len(vals) - len(kept)
            outcomes[int(t)] = kept
        if dropped:
            log.warning("dropped %d NaN or inf outcomes from a saved free-episode baseline", dropped)
        self._outcomes.clear()
        for task, kept in outcomes.items():
            self._outcomes[task].extend(kept)


class OutcomeTracker:
    """Rolling outcomes of guided and of free episodes, and outcome deltas, over the last ``window``.

    The manager, :class:`~integrations.sb3.CRLCallback` and the benchmarks' curve tracker
    each keep one (each sees episodes at its own place in the loop).

    >>> t = OutcomeTracker(window=2)
    >>> t.add(1.0, guided=True); t.add(0.0, guided=False); t.add(0.5, guided=False); t.add(1.0, guided=False)
    >>> t.add_delta(0.25)
    >>> t.means()
    {'guided': 1.0, 'free': 0.75, 'delta': 0.25}
    """

    def __init__(self, window: int = 100) -> None:
        self.guided: deque[float] = deque(maxlen=window)
        self.free: deque[float] = deque(maxlen=window)
        self.delta: deque[float] = deque(maxlen=window)
        self._parts: deque[tuple[float, float]] = deque(maxlen=window)

    def add(self, outcome: float, guided: bool) -> None:
        """Record a finished episode's outcome, as guided or free."""
        (self.guided if guided else self.free).append(outcome)

    def add_delta(self, delta: float, outcome: float | None = None, baseline: float | None = None) -> None:
        """Record a guided episode's delta; with ``outcome`` and ``baseline`` (``delta = outcome -
        baseline``, unscaled) its two parts too, for :meth:`delta_parts`."""
        self.delta.append(delta)
        if outcome is not None and baseline is not None:
            self._parts.append((float(outcome), float(baseline)))

    def delta_parts(self) -> dict[str, float | None]:
        """Over the episodes whose parts were given: the mean outcome of those guided episodes
        and the mean baseline they were judged against (``guided - baseline`` is their mean
        delta); None before any.

        >>> t = OutcomeTracker()
        >>> t.add_delta(0.5, outcome=35.0, baseline=34.5); t.add_delta(-1.0, outcome=30.0, baseline=31.0)
        >>> t.delta_parts()
        {'guided': 32.5, 'baseline': 32.75}
        """
        if not self._parts:
            return {"guided": None, "baseline": None}
        outcomes, baselines = zip(*self._parts, strict=True)
        return {"guided": float(np.mean(outcomes)), "baseline": float(np.mean(baselines))}

    def means(self) -> dict[str, float | None]:
        """The mean of each window (``guided``, ``free``, ``delta``), None for an empty one."""
        return {name: float(np.mean(q)) if q else None
                for name, q in (("guided", self.guided), ("free", self.free), ("delta", self.delta))}


@attrs.frozen
class PairedResult:
    """A guided episode whose paired delta is known.

    Attributes:
        payload: what the caller handed in with the guided episode (the manager: its entries).
        delta: the guided outcome minus the mean free outcome of its instance (:func:`paired_delta`).
        free_mean: that mean.
    """

    payload: Any
    delta: float
    free_mean: float


@attrs.define
class _Instance:
    created: int                 # the table's clock when the instance's first episode arrived
    members: int                 # episodes the instance will get (guided + free)
    free_expected: int
    seen: int = 0
    free: list[float] = attrs.field(factory=list)
    waiting: list[tuple[Any, float, float | None]] = attrs.field(factory=list)


class PairedCredit:
    """The paired rule and its pending table: guided episodes wait for the free ones of their instance.

    A group of envs replays one task instance per episode index (``key``); ``free`` of its
    ``members`` episodes are experience-free. A guided episode's delta is its outcome minus
    the mean outcome of those free episodes (:func:`paired_delta`). Episodes finish in any
    order: a guided episode that arrives before all free ones waits here, and is resolved
    (returned by the :meth:`add` call that brings the last free outcome). An instance whose
    episodes are all in leaves the table.

    The table is bounded: an instance still incomplete ``max_age`` episodes (of any instance)
    after its first arrived is dropped, and so is the oldest when more than ``max_pending``
    are open; the guided episodes dropped unresolved are counted in :attr:`dropped`. (An
    instance whose free episode never finishes, e.g. cut by a full reset of the VecEnv,
    ends this way.)

    >>> table = PairedCredit()
    >>> key = (0, 7)                                   # (group, episode index), say
    >>> table.add(key, 1.0, guided=True, members=3, free=2, payload="entries of A")
    []
    >>> table.add(key, 0.0, guided=False, members=3, free=2)
    []
    >>> [(r.payload, r.delta) for r in table.add(key, 1.0, guided=False, members=3, free=2)]
    [('entries of A', 0.5)]
    >>> table.pending, table.credited, table.dropped
    (0, 1, 0)

    Args:
        max_age: episodes after which an incomplete instance is dropped.
        max_pending: the most instances kept open at once.
    """

    def __init__(self, max_age: int = 4096, max_pending: int = 4096) -> None:
        self.max_age = check_int("max_age", max_age, minimum=1, numpy=True)
        self.max_pending = check_int("max_pending", max_pending, minimum=1, numpy=True)
        self._open: OrderedDict[Hashable, _Instance] = OrderedDict()
        self._clock = 0
        #: guided episodes credited with a paired delta, and dropped before their free episodes came
        self.credited = 0
        self.dropped = 0
        #: instances dropped incomplete (with or without a guided episode waiting)
        self.dropped_instances = 0
        self._guided_seen, self._unpaired_said = 0, False

    @property
    def pending(self) -> int:
        """Guided episodes waiting for the free episodes of their instance."""
        return sum(len(rec.waiting) for rec in self._open.values())

    @property
    def open_instances(self) -> int:
        return len(self._open)

    def add(self, key: Hashable, outcome: float, *, guided: bool, members: int, free: int, payload: Any = None,
            free_spread: float | None = None) -> list[PairedResult]:
        """One finished episode of instance ``key``; returns the guided episodes it resolves.

        Args:
            key: the instance (hashable; the manager uses the env's seed base, group and episode index).
            outcome: the episode's outcome.
            guided: whether it was guided (it waits for its delta) or free (its outcome is the baseline).
            members: how many episodes the instance gets, guided and free.
            free: how many of them are free (>= 1).
            payload: what to hand back with a guided episode's delta.
            free_spread: the scale of :func:`paired_delta` for the guided episodes resolved now.

        Raises:
            ValueError: ``free`` is not in [1, members], or the outcome is NaN or inf.
        """
        outcome = finite_number("outcome", outcome)
        if isinstance(free, bool) or isinstance(members, bool) or not 1 <= int(free) <= int(members):
            raise ValueError(f"an instance needs 1 <= free <= members free episodes, got free={free!r} of "
                             f"members={members!r}")
        self._clock += 1
        rec = self._open.get(key)
        if rec is None:
            rec = self._open[key] = _Instance(created=self._clock, members=int(members), free_expected=int(free))
        rec.seen += 1
        if guided:
            rec.waiting.append((payload, outcome, free_spread))
        else:
            rec.free.append(outcome)
        out: list[PairedResult] = []
        if len(rec.free) >= rec.free_expected:
            mean = float(np.mean(rec.free))
            for item, guided_outcome, spread in rec.waiting:
                spread = free_spread if free_spread is not None else spread
                out.append(PairedResult(item, paired_delta(guided_outcome, rec.free, free_spread=spread), mean))
            self.credited += len(rec.waiting)
            rec.waiting.clear()
        if rec.seen >= rec.members:  # the instance is complete; guided episodes still waiting lack free ones
            del self._open[key]
            self.dropped += len(rec.waiting)
            self.dropped_instances += bool(rec.waiting)
        self._drop_stale()
        self._guided_seen += bool(guided)
        if self._guided_seen >= UNPAIRED_SAID and not self.credited and not self._unpaired_said:
            self._unpaired_said = True
            warnings.warn(f"{self._guided_seen} guided episodes and none credited: none met a free episode of its "
                          f"instance ({self.pending} waiting, {self.dropped} dropped). A group's free members (member "
                          ">= group_size - free_members) must step alongside its guided ones, on the same bank or "
                          "memory, each env with its own member index", UserWarning, stacklevel=2)
        return out

    def _drop_stale(self) -> None:
        while self._open:
            key, rec = next(iter(self._open.items()))  # oldest first (insertion order)
            if self._clock - rec.created <= self.max_age and len(self._open) <= self.max_pending:
                return
            del self._open[key]
            self.dropped += len(rec.waiting)
            self.dropped_instances += 1

    def stats(self) -> dict[str, float]:
        """``paired_credited``, ``paired_pending``, ``paired_dropped`` (guided episodes) and
        ``paired_dropped_instances``."""
        return {"paired_credited": float(self.credited), "paired_pending": float(self.pending),
                "paired_dropped": float(self.dropped), "paired_dropped_instances": float(self.dropped_instances)}
