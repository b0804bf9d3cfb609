"""Dedup on add: which items of a batch refresh an existing entry or fold into an earlier item.

How a refreshed entry's fields change is the merge rule's (:func:`.merge.refresh_entry`);
this module only finds the near duplicates.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from .distance import IP_CANDIDATES, near_duplicate_distances

__all__ = ["dedup_targets", "plan_new_items"]

Nearest = Callable[[np.ndarray, int, np.ndarray], tuple[np.ndarray, np.ndarray]]
KeysOf = Callable[[np.ndarray], np.ndarray]


def dedup_targets(keys: np.ndarray, tasks: np.ndarray, threshold: float, space: str,
                  nearest: Nearest | None, keys_of: KeysOf | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Per item: the existing id it refreshes (or -1) and the earlier batch item it folds into (or -1).

    An item refreshes its nearest entry of the same task when closer than ``threshold``;
    it folds into the nearest earlier, not yet folded, batch item of its task when that
    one is closer still.

    The dedup rule: "closer" is :func:`.distance.near_duplicate_distances`. In ``"l2"`` and
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
        if space == "ip":
            if keys_of is None:
                raise ValueError("dedup in 'ip' space needs keys_of (the stored keys of entry ids)")
            cand, _ = nearest(keys, IP_CANDIDATES, tasks)
            found = cand >= 0
            stored = keys_of(cand)
            d_all = ((stored.astype(np.float64) - keys.astype(np.float64)[:, None, :]) ** 2).sum(-1)
            d_all[~found] = np.inf
            pick = np.argmin(d_all, axis=1)[:, None]
            ids, dists = np.take_along_axis(cand, pick, 1), np.take_along_axis(d_all, pick, 1)
        else:
            ids, dists = nearest(keys, 1, tasks)
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
