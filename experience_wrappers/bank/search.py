"""Search over the bank: nearest entries (task-filtered, with an exact fallback) and a query's steps.

:meth:`ExperienceBank.query <experience_wrappers.bank.ExperienceBank.query>` runs, under the
bank's locks: :func:`candidate_count`, then the nearest (or :func:`random_candidates`),
:func:`choose` among them, :func:`gather` the picks and :func:`record_hits`; the usual kNN
query (no task filter, no utility floor) takes :func:`knn_unfiltered` instead of the middle three.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

import numpy as np

from .config import BankConfig
from .distance import pairwise_distances
from .entries import EntryStore
from .index import HnswIndex
from .reranking import retrieval_scores, sample_without_replacement
from .results import QueryResult
from .task_members import TaskMembers

if TYPE_CHECKING:
    from .core import BankCore

__all__ = ["EXACT_SCOPE", "nearest", "brute_nearest", "random_candidates", "candidate_count", "choose", "gather",
           "knn_unfiltered", "record_hits", "empty_result", "run_query"]


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
                return index.search(keys, m)
            except RuntimeError:  # hnswlib could not fill m results: exact search instead
                return brute_nearest(store, keys, m, np.arange(store.size), space)
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
                lab, dis = index.search(keys[rows], mm, filter_fn=members.ids(store, task).__contains__)
            except RuntimeError:  # hnswlib could not fill mm results: exact search instead
                lab, dis = brute_nearest(store, keys[rows], mm, members.slots(store, task), space)
        ids[rows, :mm] = lab
        dists[rows, :mm] = dis
    return ids, dists


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


def choose(store: EntryStore, slots: np.ndarray, mode: str, k: int, temperature: float, config: BankConfig,
           rng: np.random.Generator) -> tuple[np.ndarray | None, np.ndarray]:
    """Pick up to ``k`` of the candidate ``slots`` per row (-1: none).

    Candidates under ``utility_floor`` are dropped. Mode ``"utility"`` samples with
    :func:`.reranking.retrieval_scores`; the others keep candidate order (nearest first,
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
        values, prior = store.cols["value"][chosen], store.cols["prior"][chosen]
        utility = store.cols["utility"][chosen]
    else:
        rows = np.arange(len(slots))[:, None]
        chosen = np.where(mask, slots[rows, cols], 0)
        out_ids = np.where(mask, store.cols["id"][chosen], -1)
        out_d = np.where(mask, dists[rows, cols], np.inf)
        values = np.where(mask[..., None], store.cols["value"][chosen], 0).astype(np.float32, copy=False)
        prior = np.where(mask[..., None], store.cols["prior"][chosen], 0).astype(np.float32, copy=False)
        utility = np.where(mask, store.cols["utility"][chosen], 0.0)
    return QueryResult(ids=out_ids, values=values, utility=utility, prior=prior, distances=out_d,
                       mask=mask), chosen


def knn_unfiltered(store: EntryStore, index: HnswIndex, keys: np.ndarray,
                   k: int) -> tuple[QueryResult, np.ndarray] | None:
    """Mode ``"knn"`` without a task filter or utility floor, ``k`` at most the bank's size: the
    ``k`` nearest entries of every row, and their slots; None when the general steps must answer.

    What :func:`nearest`, :func:`choose` and :func:`gather` return for such a query, in fewer
    steps: one HNSW search whose labels are the result's ids, one id -> slot lookup, and three
    column gathers; every pick is real. None (the general steps then run) when hnswlib cannot
    fill ``k`` results (they fall back to exact search), when an id is missing from the
    entries (never in a consistent bank), or for an empty batch.
    """
    n = len(keys)
    if n == 0:
        return None
    try:
        ids, dists = index.search(keys, k)
    except RuntimeError:
        return None
    slots = store.find(ids)
    if slots.min() < 0:
        return None
    cols = store.cols  # take: the same rows as fancy indexing, without its overhead on 2-D columns
    return QueryResult(ids=ids, values=cols["value"].take(slots, axis=0), utility=cols["utility"].take(slots),
                       prior=cols["prior"].take(slots, axis=0), distances=dists,
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


def empty_result(n: int, k: int, value_dim: int, prior_dim: int) -> QueryResult:
    """What a query of an empty bank returns: no picks."""
    return QueryResult(ids=np.full((n, k), -1, dtype=np.int64), values=np.zeros((n, k, value_dim), np.float32),
                       utility=np.zeros((n, k)), prior=np.zeros((n, k, prior_dim), np.float32),
                       distances=np.full((n, k), np.inf), mask=np.zeros((n, k), dtype=bool))


def run_query(core: BankCore, q: np.ndarray, k: int, mode: str, temp: float, tasks: np.ndarray | None,
              record: bool, rng: np.random.Generator | None, dims: dict[str, int] | None) -> QueryResult:
    """The steps of :meth:`ExperienceBank.query` under its read lock, its arguments checked."""
    n = len(q)
    with core.lock.read():
        store = core.store
        if dims is None or store is None or store.size == 0:
            return empty_result(n, k, 0 if dims is None else dims["value_dim"],
                                0 if dims is None else dims["prior_dim"])
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
