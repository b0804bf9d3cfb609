"""The bank's writes under its write lock: a batch's refreshes and new entries, evictions, removals, merges.

:class:`~experience_wrappers.bank.ExperienceBank` takes the lock and opens the transaction
(:mod:`.transaction`); these change its entries store, index and task counts together.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from .merge import (
    combine_cluster,
    dedup_targets,
    plan_clusters,
    plan_new_items,
    refresh_entry,
    same_kind,
)
from .provenance import CURATED
from .results import AddResult, MergeResult
from .transaction import Transaction, rebuild_index

if TYPE_CHECKING:
    from .core import BankCore

__all__ = ["add_locked", "append_locked", "batch_item", "evict_locked", "eviction_order", "merge_locked", "remove_locked"]


def add_locked(core: BankCore, items: dict[str, Any], txn: Transaction) -> AddResult:
    """Write a checked batch (:func:`.arguments.check_batch`) under the bank's write lock and ``txn``:
    refresh near duplicates, evict to make room, append the new entries, index their keys."""
    keys_arr, tasks, prov = items["key"], items["task_id"], items["provenance"]
    n = len(keys_arr)
    if core.store is None:
        core.init_dims({f"{name}_dim": items[name].shape[1] for name in ("key", "value", "context")})
    store, index = core.store, core.index
    assert store is not None and index is not None

    def may_refresh(rows: np.ndarray, ids: np.ndarray) -> np.ndarray:
        """A refresh never crosses between demonstrations and the agent's entries."""
        slots = store.find(ids)
        return (slots >= 0) & same_kind(store.cols["provenance"][np.maximum(slots, 0)],
                                        np.asarray(prov)[rows] if np.ndim(prov) else prov)

    target, source = dedup_targets(keys_arr, tasks, core.config.dedup_threshold, core.config.space,
                                   core.nearest if store.size > 0 else None, core.keys_of, may_refresh)
    result_ids = np.full(n, -1, dtype=np.int64)

    # refresh existing entries, in item order (a later item wins)
    refreshed = np.flatnonzero(target >= 0)
    slots = store.slots_of(target[refreshed])
    store.touch(slots)
    for i, slot in zip(refreshed.tolist(), slots.tolist(), strict=True):
        refresh_entry(store.cols, slot, batch_item(items, i))
        result_ids[i] = target[i]

    kept_items, kept_src = plan_new_items(target, source, core.config.capacity)
    excess = store.size + len(kept_items) - core.config.capacity
    store.reserve(store.size + len(kept_items))  # allocations first: they change nothing
    # (the entries this batch refreshed are evicted last: an item that refreshed one keeps its content)
    evicted = evict_locked(core, excess, keep=target[refreshed]) if excess > 0 else np.zeros(0, dtype=np.int64)
    new_ids = append_locked(core, items, kept_items, kept_src)
    if index.needs_rebuild(len(kept_items)):  # deleted elements fill the index: rebuild from the entries
        core.index = rebuild_index(core)  # the store holds the new entries already
    else:
        index.add(keys_arr[kept_items], new_ids)

    result_ids[kept_items] = new_ids
    id_of_item = dict(zip(kept_items.tolist(), new_ids.tolist(), strict=True))
    for i in np.flatnonzero(source >= 0).tolist():
        result_ids[i] = id_of_item.get(int(source[i]), -1)
    if len(evicted):  # an entry refreshed above may have been evicted to make room
        result_ids[np.isin(result_ids, evicted)] = -1
    added = np.zeros(n, dtype=bool)
    added[kept_items] = True
    return AddResult(ids=result_ids, added=added, evicted=evicted)


def append_locked(core: BankCore, items: dict[str, Any], kept: np.ndarray, src: np.ndarray) -> np.ndarray:
    """Write new entries: keys, tasks and utility of the ``kept`` items, content of their ``src``."""
    store = core.store
    assert store is not None
    new_ids = np.arange(core.next_id, core.next_id + len(kept), dtype=np.int64)
    core.next_id += len(kept)
    slots = store.append(len(kept))
    c = store.cols
    c["id"][slots] = new_ids
    c["key"][slots] = items["key"][kept]
    for name in ("value", "context", "sample_logp"):
        c[name][slots] = items[name][src]
    c["utility"][slots] = items["utility"][kept]
    c["last_retrieved"][slots] = -1
    c["task_id"][slots] = items["task_id"][kept]
    c["provenance"][slots] = items["provenance"]
    for name, rows in (("created_step", kept), ("extractor_version", src)):  # the version goes with the content
        c[name][slots] = items[name][rows] if isinstance(items[name], np.ndarray) else items[name]
    store.reindex(slots)
    core.task_counts.update(items["task_id"][kept].tolist())
    core.members.clear()
    return new_ids


def eviction_order(ids: np.ndarray, utility: np.ndarray, provenance: np.ndarray) -> np.ndarray:
    """Positions in eviction order: lowest utility first, then oldest (lowest id); curated
    entries (demonstrations) only after every other entry.

    >>> eviction_order(np.array([0, 1, 2]), np.array([0.5, 0.1, 0.1]), np.array([0, 1, 0])).tolist()
    [2, 0, 1]
    """
    return np.lexsort((ids, utility, np.isin(provenance, CURATED)))


def evict_locked(core: BankCore, n: int, keep: np.ndarray | None = None) -> np.ndarray:
    """Evict ``n`` entries in eviction order (the merge rule's), the ids in ``keep`` last; their ids."""
    store = core.store
    assert store is not None
    n = min(n, store.size)
    if n <= 0:
        return np.zeros(0, dtype=np.int64)
    order = eviction_order(store.view("id"), store.view("utility"), store.view("provenance"))
    if keep is not None and len(keep):
        kept = np.isin(store.view("id")[order], keep)
        order = np.concatenate([order[~kept], order[kept]])
    order = order[:n]
    victims = store.view("id")[order].copy()
    remove_locked(core, victims)
    return victims


def remove_locked(core: BankCore, ids: np.ndarray) -> None:
    store, index = core.store, core.index
    assert store is not None and index is not None
    core.task_counts.subtract(store.view("task_id")[store.slots_of(ids)].tolist())
    core.task_counts = +core.task_counts
    core.members.clear()
    store.remove_ids(ids)
    index.remove(ids)


def merge_locked(core: BankCore, thr: float) -> MergeResult:
    """:meth:`ExperienceBank.merge` under the bank's write lock and transaction, ``thr`` checked."""
    store = core.store
    if store is None or store.size < 2 or thr == 0:
        return MergeResult(merged={})
    keys = store.view("key").copy()
    m = min(store.size, core.config.merge_k + 1)
    nb_ids, nb_d = core.nearest(keys, m, None)
    nb_slots = store.find(nb_ids)
    nb = np.maximum(nb_slots, 0)
    if core.config.space == "ip":  # near duplicates are near-identical keys (see .merge.dedup_targets)
        nb_d = ((keys[nb].astype(np.float64) - keys.astype(np.float64)[:, None, :]) ** 2).sum(-1)
        nb_d[nb_slots < 0] = np.inf
    tasks, prov = store.view("task_id"), store.view("provenance")
    same = (nb_slots >= 0) & (tasks[nb] == tasks[:, None]) & same_kind(prov[nb], prov[:, None])
    order = np.lexsort((store.view("id"), -store.view("utility")))
    clusters = plan_clusters(order, nb_slots, nb_d, same, thr)
    merged: dict[int, list[int]] = {}
    store.touch([members[0] for members in clusters])
    for members in clusters:
        s = np.asarray(members)
        combine_cluster(store.cols, s)
        merged[int(store.cols["id"][s[0]])] = [int(i) for i in store.cols["id"][s[1:]]]
    gone = np.array([i for v in merged.values() for i in v], dtype=np.int64)
    if len(gone):
        remove_locked(core, gone)
    return MergeResult(merged=merged)


def batch_item(items: dict[str, Any], i: int) -> dict[str, Any]:
    """The fields of batch item ``i`` (per-item arrays indexed, batch-wide values as they are)."""
    return {name: v[i] if isinstance(v, np.ndarray) else v for name, v in items.items()}
