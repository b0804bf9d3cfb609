"""Exact distances in hnswlib's units, for dedup inside a batch and brute-force fallbacks."""

from __future__ import annotations

import numpy as np

__all__ = ["pairwise_distances"]


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
