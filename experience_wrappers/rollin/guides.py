"""The roll-in guides: who acts for the first ``h`` steps (the bank's nearest successful entry, or a
demonstration replayed on its own instance), and how an entry's next action is read back.

Part of :mod:`experience_wrappers.rollin` (which exports them); the curriculum that sets ``h``
is :mod:`.curriculum`'s.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import attrs
import numpy as np
from gymnasium import spaces

from ..bank.provenance import CURATED
from ..validators import check_int, check_real

if TYPE_CHECKING:
    from ..manager import ExperienceSource

__all__ = ["BankGuide", "GuideResult", "ReplayGuide", "first_actions", "instance_seeds", "successful_provenances"]


def successful_provenances() -> tuple[int, ...]:
    """Provenances whose entries come from successful episodes: the bank's curated ones.

    The bank keeps demonstrations (and, where it marks them, the agent's own successes) as
    *curated* entries (:data:`~experience_wrappers.bank.provenance.CURATED`); the guide
    follows exactly those, so a provenance the bank learns to curate is followed too.

    >>> from experience_wrappers.bank.provenance import Provenance
    >>> int(Provenance.DEMO) in successful_provenances()
    True
    """
    return tuple(int(p) for p in CURATED)


def first_actions(contexts: np.ndarray, key_dim: int, action_dim: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The first action of each entry, for a ``Discrete`` action space, read from its context.

    An entry stores ``context``: its segment as rows ``[key (key_dim), encoded action
    (action_dim), reward, return-to-go]`` (float16, then a row count; see
    :func:`~experience_wrappers.extractor.segments.encode_segment`), whose first row is
    always the segment's first step (subsampling keeps it). The first row's action is a
    one-hot, exact in float16, so it gives the entry's next action *exactly* (``exact``; a
    merge keeps the survivor's context and a refresh takes the item's, so every entry the
    library writes reads so). A first row whose action part is not a one-hot (a context
    written by other code, say a mix of actions) gives the argmax of that part (``exact``
    False); a context of another width, or without a row, gives none (``readable`` False).

    Args:
        contexts: ``(n, context_dim)`` stored contexts.
        key_dim: width of the key rows (the key encoder's ``key_dim``).
        action_dim: the number of discrete actions.

    Returns:
        ``actions`` int64 ``(n,)`` (0 where unreadable), ``exact`` bool ``(n,)`` and
        ``readable`` bool ``(n,)``.

    >>> ctx = np.zeros((2, 2 * 7 + 1), np.float16); ctx[:, -1] = 2  # key 2, 3 actions, 2 rows
    >>> ctx[0, 2 + 2] = 1  # a one-hot of action 2
    >>> ctx[1, 2:5] = [0.25, 0.75, 0.0]  # not a one-hot: mostly action 1
    >>> first_actions(ctx, key_dim=2, action_dim=3)
    (array([2, 1]), array([ True, False]), array([ True,  True]))
    """
    ctx = np.asarray(contexts)
    n = len(ctx)
    actions = np.zeros(n, dtype=np.int64)
    exact = np.zeros(n, dtype=bool)
    readable = np.zeros(n, dtype=bool)
    row = key_dim + action_dim + 2
    if ctx.ndim == 2 and ctx.shape[1] >= row + 1 and (ctx.shape[1] - 1) % row == 0 and n:
        part = ctx[:, key_dim:key_dim + action_dim].astype(np.float32)
        count = ctx[:, -1].astype(np.float32)
        readable = (count >= 1) & np.all(np.isfinite(part) & (part >= 0), axis=1) & (part.sum(axis=1) > 0)
        actions[readable] = part[readable].argmax(axis=1)
        exact = readable & np.all((part == 0) | (part == 1), axis=1) & (part.sum(axis=1) == 1)
    return actions, exact, readable


@attrs.frozen
class GuideResult:
    """What the guide says for a batch of states.

    Attributes:
        actions: ``(n,)`` the guide's action (0 where ``found`` is False: ignore it).
        found: ``(n,)`` whether a successful entry lies within the distance floor.
        ids: ``(n,)`` the entry followed (-1 where none).
        distances: ``(n,)`` its distance to the query (inf where none).
        exact: ``(n,)`` whether the action was read from the entry's first context row.
    """

    actions: np.ndarray
    found: np.ndarray
    ids: np.ndarray
    distances: np.ndarray
    exact: np.ndarray


class BankGuide:
    """The next action of the nearest successful bank entry, or "hand over".

    For each state: its key (the manager's frozen key encoder, so the same keys as the
    bank's entries); a ``knn`` query of the ``candidates`` nearest entries (``record=False``:
    the guide's look-ups do not count as retrievals); among them, the nearest whose
    provenance is in ``provenances`` (default :func:`successful_provenances`:
    demonstrations, and the agent's successes where the bank marks them) and whose distance
    is at most ``max_distance`` and whose context gives a first action; that action
    (:func:`first_actions`). Where no such
    entry exists the guide has nothing to say (``found`` False) and the caller hands the
    episode over to the policy.

    Unsuccessful entries nearer than every successful one take candidate places: a bank
    crowded with the agent's own entries around a state needs a larger ``candidates``.
    A bank ``utility_floor`` drops entries below it here too.

    Args:
        manager: the manager of the bank, an :class:`~experience_wrappers.ExperienceManager` or a
            service's ``RemoteManager`` (its bank, key encoder, ``encode_keys`` and action space).
        max_distance: the distance floor, in the bank's units (``"l2"``: squared Euclidean;
            for the unit-norm MiniHack keys distances lie in ``[0, 4]``, and the nearest
            demonstrated state of held-out KeyRoom-S5 states lies at 0.09-0.7, median 0.22).
        candidates: entries examined per state, ``>= 1``.
        provenances: provenances followed (None: :func:`successful_provenances`).
        filter_by_task: look only at entries of the state's task.

    Raises:
        TypeError: the action space is not ``Discrete`` (a continuous guide would read the
            context's first action row; not built).
    """

    def __init__(self, manager: ExperienceSource, *, max_distance: float = 0.5, candidates: int = 32,
                 provenances: Sequence[int] | None = None, filter_by_task: bool = True) -> None:
        check_real("max_distance", max_distance, minimum=0)
        from ..bank.config import MAX_K

        self.candidates = check_int("candidates", candidates, minimum=1, maximum=MAX_K)
        if not isinstance(filter_by_task, bool):
            raise ValueError(f"filter_by_task must be a bool, got {filter_by_task!r}")
        space = manager.action_space
        if not isinstance(space, spaces.Discrete):
            raise TypeError(f"BankGuide needs a Discrete action space, got {space!r}")
        self.manager = manager
        self.max_distance = float(max_distance)
        self.filter_by_task = filter_by_task
        provs = successful_provenances() if provenances is None else tuple(int(p) for p in provenances)
        if not provs:
            raise ValueError("provenances must name at least one provenance, got none")
        self.provenances = np.asarray(provs, dtype=np.int64)
        self.action_dim = int(space.n)
        self.action_start = int(space.start)
        self.key_dim = int(manager.key_encoder.key_dim)

    def __repr__(self) -> str:
        return (f"BankGuide(max_distance={self.max_distance}, candidates={self.candidates}, "
                f"provenances={self.provenances.tolist()})")

    def act(self, observations: Any, task_ids: Any = 0) -> GuideResult:
        """The guide's actions for a batch of (base) observations, as the bank's keys see them.

        Args:
            observations: a batch of observations of the manager's observation space (not the
                experience-wrapped ones: pass the base keys).
            task_ids: an int, or ``(n,)`` ints.
        """
        mgr = self.manager
        first = observations if not isinstance(observations, dict) else next(iter(observations.values()))
        n = len(first)
        tasks = np.broadcast_to(np.asarray(task_ids, dtype=np.int64), (n,)).copy()
        actions = np.zeros(n, dtype=np.int64)
        found = np.zeros(n, dtype=bool)
        ids = np.full(n, -1, dtype=np.int64)
        dist = np.full(n, np.inf)
        exact = np.zeros(n, dtype=bool)
        if n == 0 or len(mgr.bank) == 0:
            return GuideResult(actions, found, ids, dist, exact)
        keys = mgr.encode_keys(observations, tasks)
        res = mgr.bank.query(keys, self.candidates, task_ids=tasks if self.filter_by_task else None,
                             mode="knn", record=False)
        ok = res.mask & (res.distances <= self.max_distance)
        cand = np.unique(res.ids[ok])
        if cand.size == 0:
            return GuideResult(actions, found, ids, dist, exact)
        entries = self._entries(cand)
        if not entries:
            return GuideResult(actions, found, ids, dist, exact)
        row_of = {int(i): r for r, i in enumerate(entries["id"].tolist())}
        first, first_exact, readable = first_actions(entries["context"], self.key_dim, self.action_dim)
        good = np.isin(entries["provenance"].astype(np.int64), self.provenances) & readable
        for q in range(n):
            for c in np.flatnonzero(ok[q]).tolist():  # nearest first
                r = row_of.get(int(res.ids[q, c]))
                if r is not None and good[r]:
                    ids[q], dist[q], found[q] = res.ids[q, c], res.distances[q, c], True
                    break
        if found.any():
            rows = np.array([row_of[int(i)] for i in ids[found].tolist()], dtype=np.int64)
            actions[found] = first[rows] + self.action_start
            exact[found] = first_exact[rows]
        return GuideResult(actions, found, ids, dist, exact)

    def _entries(self, ids: np.ndarray) -> dict[str, np.ndarray]:
        """The entries still in the bank (a background worker may evict between query and read)."""
        bank = self.manager.bank
        try:
            return bank.get(ids)
        except KeyError:
            present = [i for i in ids.tolist() if i in bank]
            if not present:
                return {}
            try:
                return bank.get(np.asarray(present, dtype=np.int64))
            except KeyError:
                return {}


class ReplayGuide:
    """The demonstration's own next action, replayed open-loop: the roll-in guide without a bank.

    It holds each demonstration's recorded actions, keyed by the reset seed of the instance
    it was recorded on (:func:`instance_seeds`). At step ``t`` of a roll-in episode reset
    onto instance seed ``s`` it returns action ``t`` of the demonstration of ``s``; past the
    demonstration's last action, or on an instance no demonstration was recorded on (seed
    ``-1``: the env's own draw), it has nothing to say (``found`` False) and the caller
    hands the episode over to the policy. No key encoder, no retrieval, no distance: on a
    deterministic task (MiniHack from the project's factory, for a given reset seed) this
    guides exactly as well as following the demonstration itself, so it is the control
    that tells whether a bank's state-keyed retrieval adds anything to roll-in.

    It has :class:`BankGuide`'s ``act`` and :class:`GuideResult`, plus the position of each
    episode (``seeds``, ``steps``), which :class:`~integrations.sb3.rollin_env.GuidedRollInVecEnv`
    passes to a ``ReplayGuide``. ``ids`` are demonstration indices, ``distances`` 0 where found.

    Args:
        seeds: the instance seed of each demonstration (distinct).
        actions: each demonstration's actions, in order (ints).

    >>> g = ReplayGuide([7, 9], [[2, 2, 5], [1]])
    >>> r = g.act(None, 0, seeds=[7, 9, 9, -1], steps=[2, 0, 1, 0])
    >>> r.actions.tolist(), r.found.tolist(), r.ids.tolist()
    ([5, 1, 0, 0], [True, True, False, False], [0, 1, -1, -1])
    >>> ReplayGuide([3, 3], [[0], [1]])
    Traceback (most recent call last):
    ...
    ValueError: seeds must be distinct (one demonstration per instance), got seed 3 twice
    """

    def __init__(self, seeds: Sequence[int], actions: Sequence[Sequence[int] | np.ndarray]) -> None:
        seeds = [check_int("a demonstration's seed", s, minimum=0, numpy=True) for s in seeds]
        actions = list(actions)
        if len(seeds) != len(actions):
            raise ValueError(f"seeds and actions must have one row per demonstration, got {len(seeds)} seeds "
                             f"and {len(actions)} action sequences")
        if not seeds:
            raise ValueError("ReplayGuide needs at least one demonstration, got none")
        self._row: dict[int, int] = {}
        for i, s in enumerate(seeds):
            if s in self._row:
                raise ValueError(f"seeds must be distinct (one demonstration per instance), got seed {s} twice")
            self._row[s] = i
        self.seeds = np.asarray(seeds, dtype=np.int64)
        self.actions = []
        for i, a in enumerate(actions):
            arr = np.asarray(a)
            if arr.ndim != 1 or (arr.size and not np.issubdtype(arr.dtype, np.integer)):
                raise ValueError(f"demonstration {i}'s actions must be a 1-d sequence of ints (a Discrete action "
                                 f"space), got shape {arr.shape} of {arr.dtype}")
            self.actions.append(arr.astype(np.int64))
        self.lengths = np.array([len(a) for a in self.actions], dtype=np.int64)

    @classmethod
    def from_demonstrations(cls, demonstrations: Sequence[Any], seeds: Sequence[int]) -> ReplayGuide:
        """The guide replaying ``demonstrations`` (anything with ``.actions``) on their instance ``seeds``."""
        return cls(seeds, [np.asarray(d.actions).reshape(len(d.actions), -1)[:, 0] for d in demonstrations])

    def __repr__(self) -> str:
        return f"ReplayGuide(demonstrations={len(self.actions)}, longest={int(self.lengths.max())})"

    def act(self, observations: Any = None, task_ids: Any = 0, *, seeds: Any = None,
            steps: Any = None) -> GuideResult:
        """The demonstrations' actions at ``steps`` on instances ``seeds`` (observations and task ids unused).

        Args:
            observations: ignored (the interface of :meth:`BankGuide.act`).
            task_ids: ignored.
            seeds: ``(n,)`` the instance seed of each episode (-1: not a demonstrated instance).
            steps: ``(n,)`` steps already taken in each episode (the index of the action asked for).
        """
        if seeds is None or steps is None:
            raise ValueError("ReplayGuide.act needs seeds= and steps= (each episode's instance and position)")
        seeds = np.asarray(seeds, dtype=np.int64).reshape(-1)
        steps = np.asarray(steps, dtype=np.int64).reshape(-1)
        if seeds.shape != steps.shape:
            raise ValueError(f"seeds and steps must have the same length, got {seeds.shape} and {steps.shape}")
        n = len(seeds)
        actions = np.zeros(n, dtype=np.int64)
        found = np.zeros(n, dtype=bool)
        ids = np.full(n, -1, dtype=np.int64)
        for q in range(n):
            r = self._row.get(int(seeds[q]))
            if r is not None and 0 <= steps[q] < self.lengths[r]:
                actions[q], found[q], ids[q] = self.actions[r][steps[q]], True, r
        return GuideResult(actions, found, ids, np.where(found, 0.0, np.inf), found.copy())


def instance_seeds(env: Any, demonstrations: Sequence[Any], first_seed: int, max_attempts: int | None = None) -> list[int]:
    """The reset seeds of the instances demonstrations were recorded on.

    :func:`~integrations.demos.record_demonstrations` resets attempt ``a`` with seed
    ``first_seed + a`` and keeps the successful attempts only, so a demonstration's seed is
    not its index. This resets ``env`` (one made like the recording env, with at least the
    demonstrations' observation keys) with ``first_seed, first_seed + 1, ...`` and matches
    first observations, in order.

    Raises:
        ValueError: a demonstration's first observation matches no seed tried
            (``max_attempts``, default ``10 * len(demonstrations)``).
    """
    first_seed = check_int("first_seed", first_seed, minimum=0, numpy=True)
    limit = max_attempts or 10 * max(1, len(demonstrations))
    seeds: list[int] = []
    attempt = 0
    for i, demo in enumerate(demonstrations):
        want = demo.observations
        while True:
            if attempt >= limit:
                raise ValueError(f"demonstration {i}'s first observation matches no reset seed in "
                                 f"[{first_seed}, {first_seed + limit}); was it recorded from seed {first_seed}?")
            obs, _ = env.reset(seed=first_seed + attempt)
            attempt += 1
            if isinstance(want, dict):
                same = all(np.array_equal(np.asarray(obs[k]), np.asarray(want[k][0])) for k in want if k in obs)
            else:
                same = np.array_equal(np.asarray(obs), np.asarray(want[0]))
            if same:
                seeds.append(first_seed + attempt - 1)
                break
    return seeds
