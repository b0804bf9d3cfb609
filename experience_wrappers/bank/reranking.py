"""Re-ranking of kNN candidates: utility sampling, diversity penalty, confidence floor."""

from __future__ import annotations

import numpy as np

__all__ = ["retrieval_scores", "sample_without_replacement", "MODES"]

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
