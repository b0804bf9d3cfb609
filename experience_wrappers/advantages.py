"""The advantage rule: guided and free advantages normalised separately (plain numpy, any engine).

Used by :class:`~integrations.sb3.CRLCallback` (re-exported as
``integrations.sb3.regroup_advantages``) and by the RLlib adapter's Learner connector piece;
a CleanRL-style loop calls it on its own advantage array.
"""

from __future__ import annotations

import numpy as np

__all__ = ["regroup_advantages"]


def regroup_advantages(advantages: np.ndarray, guided: np.ndarray, eps: float = 1e-8) -> np.ndarray:
    """Normalise advantages to mean 0, std 1 within the guided and the free subgroup separately.

    The paper found that one normalisation over both subgroups made training collapse:
    guided episodes do better, so a shared mean would push every free action down.
    A subgroup with fewer than two samples (its std is undefined) is normalised with the
    statistics of the whole batch instead; an all-constant batch only gets centred.

    Args:
        advantages: advantages of any shape (SB3: ``(n_steps, n_envs)``).
        guided: a bool array of the same shape, True for samples of guided episodes.

    >>> adv = np.array([1.0, 3.0, 10.0, 30.0]); g = np.array([True, True, False, False])
    >>> regroup_advantages(adv, g).round(6).tolist()
    [-1.0, 1.0, -1.0, 1.0]
    """
    adv = np.asarray(advantages, dtype=np.float64)
    g = np.asarray(guided, dtype=bool)
    if adv.shape != g.shape:
        raise ValueError(f"guided must have the shape of advantages {adv.shape}, got {g.shape}")
    out = np.empty_like(adv)
    all_mean, all_std = adv.mean(), adv.std()
    for sel in (g, ~g):
        if not sel.any():
            continue
        vals = adv[sel]
        mean, std = (vals.mean(), vals.std()) if vals.size >= 2 else (all_mean, all_std)
        out[sel] = (vals - mean) / (std + eps) if std > eps else vals - mean
    return out
