"""Exact distances in hnswlib's units, for dedup inside a batch and brute-force fallbacks."""

from __future__ import annotations

import numpy as np

__all__ = ["pairwise_distances", "near_duplicate_distances", "IP_CANDIDATES"]

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
