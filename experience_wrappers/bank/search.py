"""The bank's retrieval path: nearest entries (task-filtered, with an exact fallback), re-ranking, and a query's steps.

:meth:`ExperienceBank.query <experience_wrappers.bank.ExperienceBank.query>` runs, under the
bank's locks: :func:`candidate_count`, then the nearest (or :func:`random_candidates`),
:func:`choose` among them, :func:`gather` the picks and :func:`record_hits`; the usual kNN
query (no task filter, no utility floor) takes :func:`knn_unfiltered` instead of the middle three.
What those steps use lives here too: exact distances in hnswlib's units
(:func:`pairwise_distances`, also dedup's :func:`near_duplicate_distances`), the task's
members (:class:`TaskMembers`) and the re-ranking of candidates (:func:`retrieval_scores`,
:func:`sample_without_replacement`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING

import numpy as np

from .config import BankConfig
from .entries import EntryStore
from .index import HnswIndex
from .results import QueryResult

if TYPE_CHECKING:
    from .core import BankCore

__all__ = ["EXACT_SCOPE", "MODES", "IP_CANDIDATES", "TaskMembers", "pairwise_distances", "near_duplicate_distances",
           "retrieval_scores", "sample_without_replacement", "nearest", "brute_nearest", "random_candidates",
           "candidate_count", "choose", "gather", "knn_unfiltered", "record_hits", "empty_result", "run_query"]

# -- exact distances ---------------------------------------------------------------------------

#: in ``"ip"`` space, how many of the index's nearest (by inner product) are re-measured by
#: :func:`near_duplicate_distances` to find a near duplicate
IP_CANDIDATES = 16


def pairwise_distances(a: np.ndarray, b: np.ndarray, space: str) -> np.ndarray:
    """``(len(a), len(b))`` distances as hnswlib reports them for ``space``.

    ``"l2"``: squared Euclidean; ``"ip"``: ``1 - a.b``; ``"cosine"``: ``1 - cos(a, b)``.

    >>> pairwise_distances(np.array([[0.0, 0.0]]), np.array([[3.0, 4.0]]), "l2").tolist()
    [[25.0]]
    """
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    if space == "l2":
        d = (a * a).sum(1)[:, None] + (b * b).sum(1)[None, :] - 2.0 * a @ b.T
        return np.maximum(d, 0.0)
    if space == "ip":
        return 1.0 - a @ b.T
    if space == "cosine":
        na = a / np.maximum(np.linalg.norm(a, axis=1, keepdims=True), 1e-30)
        nb = b / np.maximum(np.linalg.norm(b, axis=1, keepdims=True), 1e-30)
        return 1.0 - na @ nb.T
    raise ValueError(f"space must be 'l2', 'ip' or 'cosine', got {space!r}")


def near_duplicate_distances(a: np.ndarray, b: np.ndarray, space: str) -> np.ndarray:
    """``(len(a), len(b))`` distances by which dedup and merge find near duplicates.

    ``"l2"`` and ``"cosine"``: the space's own distance (:func:`pairwise_distances`).
    ``"ip"``: the squared Euclidean distance between the keys, as in ``"l2"``. The space's
    own ``1 - a.b`` is no measure of nearness: it is below any threshold for every pair
    with a large dot product (``[1, 0]`` and ``[10, 10]`` are at ``-9``), so near duplicates
    in ``"ip"`` are near-identical keys, whatever their norm.

    >>> near_duplicate_distances(np.array([[1.0, 0.0]]), np.array([[10.0, 10.0], [1.0, 0.1]]), "ip").round(6).tolist()
    [[181.0, 0.01]]
    """
    return pairwise_distances(a, b, "l2" if space == "ip" else space)


# -- which entries each task holds -------------------------------------------------------------
# worked out once per task after a write: the task-filtered search's input. A task-filtered
# query needs the task's entries: their slots, for the exact search that answers a task of at
# most EXACT_SCOPE entries, and their ids, for hnswlib's filter on a larger task. Both are
# found on first use and kept until the next change to the entries (TaskMembers.clear, called
# by every write and by a rollback).

class TaskMembers:
    """Per task: the slots and ids of its entries in one :class:`~.entries.EntryStore`, cached.

    >>> store = EntryStore({"key_dim": 2, "value_dim": 1, "context_dim": 0})
    >>> slots = store.append(3)
    >>> store.cols["id"][slots] = [10, 11, 12]
    >>> store.cols["task_id"][slots] = [5, 6, 5]
    >>> store.reindex(slots)
    >>> members = TaskMembers()
    >>> members.slots(store, 5).tolist(), sorted(members.ids(store, 5))
    ([0, 2], [10, 12])
    """

    def __init__(self) -> None:
        self._slots: dict[int, np.ndarray] = {}
        self._ids: dict[int, frozenset[int]] = {}

    def clear(self) -> None:
        """Forget every task's members: the entries changed."""
        self._slots.clear()
        self._ids.clear()

    def slots(self, store: EntryStore, task: int) -> np.ndarray:
        """The slots of ``task``'s entries, in slot order (read-only)."""
        s = self._slots.get(task)
        if s is None:
            s = np.flatnonzero(store.view("task_id") == task)
            s.flags.writeable = False
            self._slots[task] = s
        return s

    def ids(self, store: EntryStore, task: int) -> frozenset[int]:
        """The ids of ``task``'s entries (hnswlib's filter tests membership in it)."""
        s = self._ids.get(task)
        if s is None:
            s = frozenset(store.view("id")[self.slots(store, task)].tolist())
            self._ids[task] = s
        return s


# -- re-ranking of candidates: utility sampling, diversity penalty -------------------------------

MODES = ("utility", "knn", "random")


def retrieval_scores(utility: np.ndarray, n_retrieved: np.ndarray, temperature: float,
                     diversity_penalty: float) -> np.ndarray:
    """Sampling logits: ``utility / temperature - diversity_penalty * log(1 + n_retrieved)``.

    >>> retrieval_scores(np.array([1.0, 1.0]), np.array([0, 3]), 0.5, 0.4).round(3).tolist()
    [2.0, 1.445]
    """
    return utility / temperature - diversity_penalty * np.log1p(n_retrieved)


def sample_without_replacement(logits: np.ndarray, valid: np.ndarray, k: int,
                               rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Per row, draw up to ``k`` distinct columns with probabilities ``softmax(logits)`` over ``valid``.

    Uses the Gumbel top-k trick, which is exact sampling without replacement. Returns the
    chosen column indices ``(B, k)`` and a mask of which picks are real (rows with fewer
    than ``k`` valid columns are padded with mask ``False``).

    >>> rng = np.random.default_rng(0)
    >>> cols, ok = sample_without_replacement(np.zeros((1, 3)), np.array([[1, 0, 1]], bool), 4, rng)
    >>> sorted(cols[0][ok[0]].tolist()), ok.sum()
    ([0, 2], np.int64(2))
    """
    b, n = logits.shape
    gumbel = rng.gumbel(size=(b, n)) if n else np.zeros((b, 0))
    perturbed = np.where(valid, logits + gumbel, -np.inf)
    order = np.argsort(-perturbed, axis=1, kind="stable")[:, :k]
    picked = np.take_along_axis(perturbed, order, axis=1)
    mask = np.isfinite(picked)
    if order.shape[1] < k:
        pad = k - order.shape[1]
        order = np.pad(order, ((0, 0), (0, pad)))
        mask = np.pad(mask, ((0, 0), (0, pad)))
    return order, mask


# -- search ---------------------------------------------------------------------------------------

#: a task-filtered query whose task holds at most this many entries is answered by exact
#: search over them: exact, and cheaper than hnswlib's filtered search, whose filter is a Python
#: call per visited node; past it the exact search's cost (linear in the task's size) passes
#: the filtered search's (``python -m benchmarks.perf.bank_churn``: the ``exact_scope`` timings of
#: ``benchmarks/results/bank_churn.json``, tasks of 64 to 4,096 entries in a bank of 16,384)
EXACT_SCOPE = 2048


def only_task(task_counts: Mapping[int, int], tasks: np.ndarray) -> bool:
    """Whether every row asks for the bank's only task (a task filter that filters nothing)."""
    return len(task_counts) == 1 and bool((tasks == next(iter(task_counts))).all())


def nearest(store: EntryStore, index: HnswIndex, keys: np.ndarray, m: int, tasks: np.ndarray | None,
            task_counts: Mapping[int, int], members: TaskMembers,
            space: str) -> tuple[np.ndarray, np.ndarray]:
    """Up to ``m`` nearest ids per row (same task when ``tasks`` is given); -1 / inf padded.

    One unfiltered HNSW search when the tasks do not restrict anything, else one search per
    task: exact over the task's entries when it holds at most :data:`EXACT_SCOPE` of them,
    else hnswlib's search filtered by ``members``' ids. Where hnswlib cannot fill the results,
    an exact search (:func:`brute_nearest`) replaces it.
    """
    n = len(keys)
    if tasks is None or only_task(task_counts, tasks):
        if m <= store.size:  # the usual case: one unfiltered search fills every row
            try:
                lab, dis, unsure = index.search_checked(keys, m, store.size)
            except RuntimeError:  # hnswlib could not fill m results: exact search instead
                return brute_nearest(store, keys, m, np.arange(store.size), space)
            return exact_where(unsure, lab, dis, lambda rows: brute_nearest(store, keys[rows], m,
                                                                            np.arange(store.size), space))
        groups = [(np.arange(n), None, store.size)]
    else:
        groups = []
        for t in np.unique(tasks).tolist():
            rows = np.flatnonzero(tasks == t)
            count = task_counts.get(t, 0)
            if count:
                groups.append((rows, t, count))
    ids = np.full((n, m), -1, dtype=np.int64)
    dists = np.full((n, m), np.inf)
    for rows, task, count in groups:
        mm = min(m, count)
        if task is None or count <= EXACT_SCOPE:  # unfiltered here: every entry is among the m nearest
            scope = np.arange(store.size) if task is None else members.slots(store, task)
            lab, dis = brute_nearest(store, keys[rows], mm, scope, space)
        else:
            try:
                lab, dis, unsure = index.search_checked(keys[rows], mm, count,
                                                        filter_fn=members.ids(store, task).__contains__)
                lab, dis = exact_where(unsure, lab, dis, lambda sub, r=rows, t=task, c=mm: brute_nearest(
                    store, keys[r[sub]], c, members.slots(store, t), space))
            except RuntimeError:  # hnswlib could not fill mm results: exact search instead
                lab, dis = brute_nearest(store, keys[rows], mm, members.slots(store, task), space)
        ids[rows, :mm] = lab
        dists[rows, :mm] = dis
    return ids, dists


def exact_where(unsure: np.ndarray, labels: np.ndarray, dists: np.ndarray,
                exact: Callable[[np.ndarray], tuple[np.ndarray, np.ndarray]]) -> tuple[np.ndarray, np.ndarray]:
    """hnswlib's ``labels`` and ``dists``, with the ``unsure`` rows (a tie at the k-th distance,
    :meth:`~.index.HnswIndex.search_checked`) replaced by ``exact(rows)``'s answer for them."""
    if unsure.any():
        rows = np.flatnonzero(unsure)
        labels[rows], dists[rows] = exact(rows)
    return labels, dists


def brute_nearest(store: EntryStore, keys: np.ndarray, m: int, scope: np.ndarray,
                  space: str) -> tuple[np.ndarray, np.ndarray]:
    """Exact ``m`` nearest ids per row among the entries in slots ``scope``, and their distances
    (ties go to the lower slot)."""
    d = pairwise_distances(keys, store.view("key")[scope], space)
    order = np.argsort(d, axis=1, kind="stable")[:, :m]
    return store.view("id")[scope][order], np.take_along_axis(d, order, axis=1)


def random_candidates(store: EntryStore, n: int, k: int, tasks: np.ndarray | None, candidate_factor: int,
                      rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Mode ``"random"``: per row, up to ``candidate_factor * k`` ids drawn uniformly (same task
    when ``tasks`` is given), -1 padded; distances are NaN (the key plays no part)."""
    all_ids = store.view("id")
    m = store.size
    m = min(m, candidate_factor * max(1, k))
    ids = np.full((n, m), -1, dtype=np.int64)
    for r in range(n):
        pool = all_ids if tasks is None else all_ids[store.view("task_id") == tasks[r]]
        pick = rng.choice(pool, size=min(len(pool), m), replace=False) if len(pool) else pool
        ids[r, : len(pick)] = pick
    return ids, np.full((n, m), np.nan)


def candidate_count(mode: str, k: int, size: int, config: BankConfig) -> int:
    """How many nearest entries a ``"utility"`` or ``"knn"`` query considers."""
    m = min(size, k * config.candidate_factor)
    if mode == "knn" and config.utility_floor is None:
        m = k
    return m


def above_floor(store: EntryStore, keys: np.ndarray, cand_ids: np.ndarray, cand_d: np.ndarray, k: int,
                tasks: np.ndarray | None, config: BankConfig) -> tuple[np.ndarray, np.ndarray]:
    """A ``"knn"`` query's candidates where ``utility_floor`` is set: the ``k`` nearest at or above the
    floor. Where the nearest candidates hold fewer than ``k`` of them and the bank (the row's task)
    holds more, that row's candidates are the exact nearest among those entries.
    """
    floor = config.utility_floor
    slots = store.find(cand_ids)
    utility = store.cols["utility"]
    kept = ((slots >= 0) & (utility[np.maximum(slots, 0)] >= floor)).sum(axis=1)
    short = np.flatnonzero(kept < k)
    if not len(short):
        return cand_ids, cand_d
    above = utility[: store.size] >= floor
    task_of = store.view("task_id")
    for r in short.tolist():
        scope = np.flatnonzero(above if tasks is None else above & (task_of == tasks[r]))
        if len(scope) > kept[r]:
            m = min(cand_ids.shape[1], len(scope))
            lab, dis = brute_nearest(store, keys[r:r + 1], m, scope, config.space)
            cand_ids[r], cand_d[r] = -1, np.inf
            cand_ids[r, :m], cand_d[r, :m] = lab[0], dis[0]
    return cand_ids, cand_d


def choose(store: EntryStore, slots: np.ndarray, mode: str, k: int, temperature: float, config: BankConfig,
           rng: np.random.Generator) -> tuple[np.ndarray | None, np.ndarray]:
    """Pick up to ``k`` of the candidate ``slots`` per row (-1: none).

    Candidates under ``utility_floor`` are dropped. Mode ``"utility"`` samples with
    :func:`retrieval_scores`; the others keep candidate order (nearest first,
    or the random draw's).

    Returns:
        ``(cols, mask)``: the chosen candidate columns ``(n, k)`` and which picks are real;
        ``cols`` is None when the first ``k`` candidates are all picked.
    """
    n = len(slots)
    valid = slots >= 0
    floor = config.utility_floor
    if mode == "utility" or floor is not None:
        util = np.where(valid, store.cols["utility"][np.maximum(slots, 0)], -np.inf)
        if floor is not None:
            valid &= util >= floor
    if mode == "utility":
        scores = retrieval_scores(util, store.cols["n_retrieved"][np.maximum(slots, 0)],
                                  temperature, config.diversity_penalty)
        return sample_without_replacement(scores, valid, k, rng)
    if valid.shape[1] >= k and valid[:, :k].all():  # the usual case: the first k
        return None, np.ones((n, k), dtype=bool)
    cols = np.argsort(~valid, axis=1, kind="stable")[:, :k]  # nearest first / random order, among the valid
    mask = np.take_along_axis(valid, cols, axis=1)
    if cols.shape[1] < k:  # fewer candidates than k: pad (np.pad is slow, avoid it)
        cols = np.concatenate([cols, np.zeros((n, k - cols.shape[1]), np.int64)], axis=1)
        mask = np.concatenate([mask, np.zeros((n, k - mask.shape[1]), bool)], axis=1)
    return cols, mask


def gather(store: EntryStore, slots: np.ndarray, dists: np.ndarray, cols: np.ndarray | None, mask: np.ndarray,
           k: int) -> tuple[QueryResult, np.ndarray]:
    """The picked entries as a :class:`QueryResult`, and their slots (0 where a pick is missing)."""
    if cols is None:  # every pick is real: plain gathers, nothing to mask
        chosen = slots[:, :k]
        out_ids, out_d = store.cols["id"][chosen], dists[:, :k]
        values = store.cols["value"][chosen]
        utility = store.cols["utility"][chosen]
    else:
        rows = np.arange(len(slots))[:, None]
        chosen = np.where(mask, slots[rows, cols], 0)
        out_ids = np.where(mask, store.cols["id"][chosen], -1)
        out_d = np.where(mask, dists[rows, cols], np.inf)
        values = np.where(mask[..., None], store.cols["value"][chosen], 0).astype(np.float32, copy=False)
        utility = np.where(mask, store.cols["utility"][chosen], 0.0)
    return QueryResult(ids=out_ids, values=values, utility=utility, distances=out_d,
                       mask=mask), chosen


def knn_unfiltered(store: EntryStore, index: HnswIndex, keys: np.ndarray,
                   k: int) -> tuple[QueryResult, np.ndarray] | None:
    """Mode ``"knn"`` without a task filter or utility floor, ``k`` at most the bank's size: the
    ``k`` nearest entries of every row, and their slots; None when the general steps must answer.

    What :func:`nearest`, :func:`choose` and :func:`gather` return for such a query, in fewer
    steps: one HNSW search whose labels are the result's ids, one id -> slot lookup, and three
    column gathers; every pick is real. None (the general steps then run) when hnswlib cannot
    fill ``k`` results or a row's ``k``-th distance ties (they answer exactly), when an id is missing from the
    entries (never in a consistent bank), or for an empty batch.
    """
    n = len(keys)
    if n == 0:
        return None
    try:
        ids, dists, unsure = index.search_checked(keys, k, store.size)
    except RuntimeError:
        return None
    if unsure.any():  # a tie at the k-th distance: the general steps answer those rows exactly
        return None
    slots = store.find(ids)
    if slots.min() < 0:
        return None
    cols = store.cols  # take: the same rows as fancy indexing, without its overhead on 2-D columns
    return QueryResult(ids=ids, values=cols["value"].take(slots, axis=0), utility=cols["utility"].take(slots),
                       distances=dists,
                       mask=np.ones((n, k), dtype=bool)), slots


def record_hits(store: EntryStore, chosen: np.ndarray, mask: np.ndarray | None, tick: int) -> int:
    """Count a retrieval of the picked entries (``mask``; None: all) at query ``tick``; returns the next tick."""
    hit = chosen.ravel() if mask is None else chosen[mask]
    if len(chosen) == 1:  # one row's picks are distinct entries: a plain add counts each once
        store.cols["n_retrieved"][hit] += 1
    else:
        np.add.at(store.cols["n_retrieved"], hit, 1)
    store.cols["last_retrieved"][hit] = tick
    return tick + 1


def empty_result(n: int, k: int, value_dim: int) -> QueryResult:
    """What a query of an empty bank returns: no picks."""
    return QueryResult(ids=np.full((n, k), -1, dtype=np.int64), values=np.zeros((n, k, value_dim), np.float32),
                       utility=np.zeros((n, k)),
                       distances=np.full((n, k), np.inf), mask=np.zeros((n, k), dtype=bool))


def run_query(core: BankCore, q: np.ndarray, k: int, mode: str, temp: float, tasks: np.ndarray | None,
              record: bool, rng: np.random.Generator | None, dims: dict[str, int] | None) -> QueryResult:
    """The steps of :meth:`ExperienceBank.query` under its read lock, its arguments checked."""
    n = len(q)
    with core.lock.read():
        store = core.store
        if dims is None or store is None or store.size == 0:
            return empty_result(n, k, 0 if dims is None else dims["value_dim"])
        if mode == "knn" and core.config.utility_floor is None and k <= store.size and (
                tasks is None or only_task(core.task_counts, tasks)):
            assert core.index is not None  # set with the store
            fast = knn_unfiltered(store, core.index, q, k)  # the usual kNN query, fewer steps
            if fast is not None:
                result, chosen = fast
                if record:
                    with core.count_lock:
                        core.tick = record_hits(store, chosen, None, core.tick)
                return result
        if mode != "random":
            cand_ids, cand_d = core.nearest(q, candidate_count(mode, k, store.size, core.config), tasks)
            if mode == "knn" and core.config.utility_floor is not None:
                cand_ids, cand_d = above_floor(store, q, cand_ids, cand_d, k, tasks, core.config)
        with core.count_lock:
            generator = core.rng if rng is None else rng
            if mode == "random":
                cand_ids, cand_d = random_candidates(store, n, k, tasks, core.config.candidate_factor,
                                                     generator)
            slots = store.find(cand_ids)
            cols, mask = choose(store, slots, mode, k, temp, core.config, generator)
            result, chosen = gather(store, slots, cand_d, cols, mask, k)
            if record:
                core.tick = record_hits(store, chosen, mask, core.tick)
    return result
