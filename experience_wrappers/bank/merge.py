"""The merge rule: how entries and their fields combine.

Three things fold one entry into another, and all of them follow this module:

* **dedup on add** (:func:`dedup_targets` finds which items of a batch refresh an entry or
  fold into an earlier item, :func:`refresh_entry` how the entry's fields change): an item
  closer than ``dedup_threshold`` to an entry of its task refreshes that entry;
* **merge** (:func:`plan_clusters`, :func:`combine_cluster`): clusters of near duplicates
  become one entry, their fields combined as :func:`combine_cluster` says;
* **the learner's pending samples** (:func:`fold_samples`): the rewards credited to an
  entry that was merged away join its survivor's.

Curated entries (demonstrations) and the agent's are never folded together
(:func:`same_kind`). A merged entry's sample log-prob becomes :data:`STALE_LOGP` (its
value is an average, no longer the one sampled), which tells a learner to recompute it
(:func:`is_stale`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from .provenance import CURATED, Provenance
from .search import IP_CANDIDATES, near_duplicate_distances

__all__ = ["dedup_targets", "plan_new_items", "plan_clusters", "merge_weights", "combine_cluster", "refresh_entry", "REFRESHED", "same_kind",
           "STALE_LOGP", "is_stale", "fold_samples"]

#: the fields an item's refresh (dedup on add) replaces; key, utility and counters stay
REFRESHED = ("value", "context", "sample_logp", "extractor_version")

#: the sample log-prob of a merged entry: no longer the sampled one, to be recomputed
STALE_LOGP = np.nan


def same_kind(provenance: Any, other: Any) -> np.ndarray:
    """Whether entries may fold together: both curated (demonstrations) or both the agent's.

    >>> same_kind(np.array([Provenance.DEMO, Provenance.EXTRACTED]), int(Provenance.MERGED)).tolist()
    [False, True]
    """
    return np.isin(provenance, CURATED) == np.isin(other, CURATED)


def is_stale(logp: np.ndarray) -> np.ndarray:
    """Which sample log-probs are :data:`STALE_LOGP` (merged entries): a learner recomputes them."""
    return ~np.isfinite(logp)


def refresh_entry(cols: dict[str, np.ndarray], slot: int, fields: Mapping[str, Any]) -> None:
    """Dedup on add: the item's :data:`REFRESHED` fields replace the entry's in ``slot``."""
    for name in REFRESHED:
        cols[name][slot] = fields[name]


def plan_clusters(order: np.ndarray, neighbours: np.ndarray, dists: np.ndarray,
                  same_task: np.ndarray, threshold: float) -> list[list[int]]:
    """Greedy leader clustering over slots.

    Slots are visited in ``order`` (highest utility first, then oldest); an unassigned
    slot becomes a leader and takes every unassigned neighbour (of the same task) closer
    than ``threshold``. Returns only clusters of two or more slots, leader first.

    Args:
        order: slots in visiting order.
        neighbours: ``(n, m)`` neighbour slots of each slot (-1 for none).
        dists: ``(n, m)`` distances to those neighbours.
        same_task: ``(n, m)`` whether each neighbour has the slot's task.
        threshold: merge distance.

    >>> nb = np.array([[1, 2], [0, 2], [1, 0]]); d = np.array([[.1, .9], [.1, .5], [.5, .9]])
    >>> plan_clusters(np.array([0, 1, 2]), nb, d, np.ones((3, 2), bool), 0.2)
    [[0, 1]]
    """
    assigned = np.zeros(len(neighbours), dtype=bool)
    clusters = []
    for leader in order.tolist():
        if assigned[leader]:
            continue
        assigned[leader] = True
        close = (dists[leader] < threshold) & same_task[leader] & (neighbours[leader] >= 0)
        members = [int(m) for m in neighbours[leader][close] if m != leader and not assigned[m]]
        if members:
            assigned[members] = True
            clusters.append([leader, *members])
    return clusters


def merge_weights(utility: np.ndarray, n_credited: np.ndarray) -> np.ndarray:
    """Weights of cluster members for averaging values: ``(1 + n_credited) * exp(u - max u)``.

    More credited and more useful entries weigh more; the result sums to 1.

    >>> merge_weights(np.array([0.0, 0.0]), np.array([0, 1])).tolist()
    [0.3333333333333333, 0.6666666666666666]
    """
    w = (1.0 + n_credited) * np.exp(utility - utility.max())
    return w / w.sum()


def combine_cluster(cols: dict[str, np.ndarray], slots: np.ndarray) -> None:
    """Fold the entries in ``slots`` into the first (the survivor), in place.

    The survivor keeps its id, key and context; its value becomes the members'
    average weighted by :func:`merge_weights`; its utility the credit-weighted mean
    (weights ``1 + n_credited``); counters are summed, ``last_*`` stamps and extractor
    version take the latest, creation step the earliest; provenance becomes ``MERGED``
    (demonstrations stay ``DEMO``); the sample log-prob becomes :data:`STALE_LOGP`.
    """
    c, s = cols, slots
    w = merge_weights(c["utility"][s], c["n_credited"][s])
    lead = s[0]
    credit_w = 1.0 + c["n_credited"][s]
    c["value"][lead] = (w[:, None] * c["value"][s]).sum(0)
    c["utility"][lead] = float((credit_w * c["utility"][s]).sum() / credit_w.sum())
    for name in ("n_retrieved", "n_credited"):
        c[name][lead] = c[name][s].sum()
    for name in ("last_retrieved", "extractor_version"):
        c[name][lead] = c[name][s].max()
    c["created_step"][lead] = c["created_step"][s].min()
    if c["provenance"][lead] not in CURATED:  # merged demonstrations stay demonstrations
        c["provenance"][lead] = int(Provenance.MERGED)
    c["sample_logp"][lead] = STALE_LOGP  # the value is no longer the sampled one


def fold_samples(samples: dict[int, Any], merged: Mapping[int, list[int]]) -> None:
    """The learner's pending samples after a merge: each merged-away entry's sample leaves
    ``samples``, and its rewards join the survivor's sample if the survivor has one.

    Args:
        samples: entry id -> pending sample (anything with a ``rewards`` list), changed in place.
        merged: survivor id -> ids merged into it (:attr:`MergeResult.merged`).

    >>> class S:
    ...     def __init__(self, r): self.rewards = r
    >>> pending = {1: S([1.0]), 2: S([3.0]), 5: S([7.0])}
    >>> fold_samples(pending, {1: [2], 4: [5]})
    >>> sorted(pending), pending[1].rewards
    ([1], [1.0, 3.0])
    """
    for survivor, gone in merged.items():
        for g in gone:
            s = samples.pop(g, None)
            if s is not None and survivor in samples:
                samples[survivor].rewards.extend(s.rewards)


# -- dedup on add: which items of a batch are near duplicates -----------------------------------

Nearest = Callable[[np.ndarray, int, np.ndarray], tuple[np.ndarray, np.ndarray]]
KeysOf = Callable[[np.ndarray], np.ndarray]
MayRefresh = Callable[[np.ndarray, np.ndarray], np.ndarray]


def dedup_targets(keys: np.ndarray, tasks: np.ndarray, threshold: float, space: str,
                  nearest: Nearest | None, keys_of: KeysOf | None = None,
                  may_refresh: MayRefresh | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Per item: the existing id it refreshes (or -1) and the earlier batch item it folds into (or -1).

    An item refreshes its nearest entry of the same task that it may refresh (``may_refresh``:
    one of its own kind, :func:`same_kind`) when closer than ``threshold``; it folds into the
    nearest earlier, not yet folded, batch item of its task when that one is closer still. An
    entry of the other kind nearer still (a demonstration's at the same key as the agent's
    entries) does not stop it: the nearest of its own kind is looked for among the
    ``IP_CANDIDATES`` nearest.

    The dedup rule: "closer" is :func:`.search.near_duplicate_distances`. In ``"l2"`` and
    ``"cosine"`` space that is the index's own distance (squared Euclidean, ``1 - cos``).
    In ``"ip"`` space it is the squared Euclidean distance between the keys, so only
    near-identical keys merge (``1 - dot`` would merge any two keys with a dot product
    above ``1 - threshold``); the entry is the nearest, by that distance, of the index's
    ``IP_CANDIDATES`` nearest by inner product.

    Args:
        keys: ``(n, key_dim)`` the items' keys.
        tasks: ``(n,)`` their task ids.
        threshold: the dedup distance (<= 0: no dedup).
        space: the distance space.
        nearest: ``nearest(keys, m, tasks)`` over the bank's entries (ids -1 padded), None for an empty bank.
        keys_of: ``(*ids.shape, key_dim)`` stored keys of entry ids (any key where an id is -1);
            needed in ``"ip"`` space.
        may_refresh: ``(rows, candidate ids) -> mask`` of the same shape as the ids: whether
            each row's item may refresh that entry (None: every entry found).

    >>> keys = np.array([[0.0, 0.0], [0.01, 0.0], [5.0, 0.0]])
    >>> [t.tolist() for t in dedup_targets(keys, np.zeros(3, np.int64), 0.1, "l2", None)]
    [[-1, -1, -1], [-1, 0, -1]]
    """
    n = len(keys)
    target = np.full(n, -1, dtype=np.int64)
    source = np.full(n, -1, dtype=np.int64)
    if threshold <= 0:
        return target, source
    best = np.full(n, np.inf)
    if nearest is not None:
        if space == "ip" and keys_of is None:
            raise ValueError("dedup in 'ip' space needs keys_of (the stored keys of entry ids)")
        rows = np.arange(n)
        if space == "ip":
            ids, dists = _nearest_eligible(keys, tasks, rows, IP_CANDIDATES, nearest, keys_of, may_refresh)
        else:
            ids, dists = nearest(keys, 1, tasks)
            if may_refresh is not None:  # the nearest may be of the other kind: look further for those rows
                other = np.flatnonzero((ids[:, 0] >= 0) & (dists[:, 0] < threshold)
                                       & ~may_refresh(rows[:, None], ids)[:, 0])
                ids[other, 0], dists[other, 0] = -1, np.inf
                if other.size:
                    found, d = _nearest_eligible(keys, tasks, other, IP_CANDIDATES, nearest, None, may_refresh)
                    ids[other, 0], dists[other, 0] = found[:, 0], d[:, 0]
        close = (ids[:, 0] >= 0) & (dists[:, 0] < threshold)
        target[close] = ids[close, 0]
        best[close] = dists[close, 0]
    if n > 1:
        for lo in range(0, n, 1024):  # chunks bound the pairwise matrix
            hi = min(n, lo + 1024)
            d = near_duplicate_distances(keys[lo:hi], keys[:hi], space)
            close = (d < threshold) & (tasks[lo:hi, None] == tasks[None, :hi])
            close &= np.arange(hi)[None, :] < np.arange(lo, hi)[:, None]
            for r in np.flatnonzero(close.any(axis=1)).tolist():
                i = lo + r
                earlier = np.flatnonzero(close[r] & (target[:hi] < 0) & (source[:hi] < 0))
                earlier = earlier[earlier < i]
                if earlier.size:
                    j = earlier[np.argmin(d[r, earlier])]
                    if d[r, j] < best[i]:
                        source[i], target[i] = j, -1
    return target, source


def _nearest_eligible(keys: np.ndarray, tasks: np.ndarray, rows: np.ndarray, m: int, nearest: Nearest,
                      keys_of: KeysOf | None, may_refresh: MayRefresh | None) -> tuple[np.ndarray, np.ndarray]:
    """``rows``' nearest entry that each may refresh among the index's ``m`` nearest, ``(len(rows), 1)``
    ids (-1: none) and distances; with ``keys_of`` measured again as squared Euclidean distances (``"ip"``)."""
    cand, d_all = nearest(keys[rows], m, tasks[rows])
    d_all = np.array(d_all, dtype=np.float64)
    if keys_of is not None:
        stored = keys_of(cand)
        d_all = ((stored.astype(np.float64) - keys[rows].astype(np.float64)[:, None, :]) ** 2).sum(-1)
    usable = cand >= 0
    if may_refresh is not None:
        usable &= may_refresh(rows[:, None], cand)
    d_all[~usable] = np.inf
    pick = np.argmin(d_all, axis=1)[:, None]
    ids, dists = np.take_along_axis(cand, pick, 1), np.take_along_axis(d_all, pick, 1)
    ids[~np.isfinite(dists)] = -1
    return ids, dists


def plan_new_items(target: np.ndarray, source: np.ndarray, capacity: int) -> tuple[np.ndarray, np.ndarray]:
    """The items that become new entries, and for each the item whose content it takes.

    A new item's content is that of the last batch item folded into it (a later item
    wins, as for refreshes); a batch larger than ``capacity`` keeps only its last
    ``capacity`` new items.

    Returns:
        ``(kept_items, kept_sources)``: item indices, aligned.

    >>> [a.tolist() for a in plan_new_items(np.array([-1, -1, -1]), np.array([-1, 0, 0]), 8)]
    [[0], [2]]
    """
    new_items = np.flatnonzero((target < 0) & (source < 0))
    final_src = new_items.copy()
    pos = {int(j): p for p, j in enumerate(new_items.tolist())}
    for i in np.flatnonzero(source >= 0).tolist():
        final_src[pos[int(source[i])]] = i
    keep_from = max(0, len(new_items) - capacity)
    return new_items[keep_from:], final_src[keep_from:]
