"""Action priors: a decodable action distribution carried by each entry."""

from __future__ import annotations

import numpy as np
from gymnasium import spaces

__all__ = ["prior_dim", "segment_priors"]


def prior_dim(action_space: spaces.Space, action_dim: int) -> int:
    """Width of a prior: the encoded action width, twice it for Box (mean and std)."""
    return 2 * action_dim if isinstance(action_space, spaces.Box) else action_dim


def segment_priors(encoded_actions: np.ndarray, starts: np.ndarray, horizon: int, box: bool,
                   smoothing: float = 0.05) -> np.ndarray:
    """The action prior of each segment: what was done in its first ``horizon`` steps.

    Discrete-style rows (one-hots) give a smoothed, geometrically weighted action
    distribution (the first action weighs most); Box rows give ``[mean, std]``.

    >>> acts = np.eye(2, dtype=np.float32)[[0, 0, 1]]
    >>> segment_priors(acts, np.array([0, 2]), horizon=2, box=False).astype(float).round(3).tolist()
    [[0.975, 0.025], [0.025, 0.975]]
    """
    rows = []
    for s in starts.tolist():
        a = encoded_actions[s : s + horizon]
        if box:
            rows.append(np.concatenate([a.mean(0), a.std(0)]))
        else:
            w = 0.5 ** np.arange(len(a))
            p = (w[:, None] * a).sum(0) / w.sum()
            rows.append((1 - smoothing) * p + smoothing / a.shape[1])
    return np.asarray(rows, dtype=np.float32)
