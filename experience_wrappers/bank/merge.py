"""The merge rule: clusters of near-duplicate entries become one entry."""

from __future__ import annotations

import numpy as np

__all__ = ["plan_clusters", "merge_weights"]


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
