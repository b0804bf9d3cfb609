"""The advantage rules (plain numpy, any engine).

* :func:`regroup_advantages`: guided and free advantages normalised separately. Used by
  :class:`~integrations.sb3.CRLCallback` and by the RLlib adapter's Learner connector piece; a
  CleanRL-style loop calls it on its own advantage array.
* :func:`drop_guide_steps`: guided roll-in's rule: steps a guide acted carry no policy gradient
  (advantage 0), the policy's own are normalised over the rollout. Used by
  :class:`~integrations.sb3.rollin_callbacks.RollInCallback`.
"""

from __future__ import annotations

import numpy as np

__all__ = ["drop_guide_steps", "regroup_advantages"]


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


def drop_guide_steps(advantages: np.ndarray, guide_acted: np.ndarray, normalise: bool = True) -> np.ndarray:
    """Advantages with the guide-acted steps at 0 and, with ``normalise``, the policy-acted ones
    normalised over the rollout (mean 0, std 1; left as they are when fewer than two).

    A guide's action is not the policy's, so its step must not move the policy (PPO's clipped
    objective is flat at advantage 0). The normalisation happens here, before the zeros are
    written, because PPO's own per-minibatch one would turn the zeros into ``-mean / std``.
    Returns a new array; the values (critic) are untouched.

    >>> drop_guide_steps(np.array([5.0, 1.0, 3.0]), np.array([True, False, False])).round(6).tolist()
    [0.0, -1.0, 1.0]
    >>> drop_guide_steps(np.array([5.0, 1.0, 3.0]), np.array([True, False, False]), normalise=False).tolist()
    [0.0, 1.0, 3.0]
    """
    out = np.array(advantages, copy=True)
    mask = np.asarray(guide_acted, dtype=bool)
    if out.shape != mask.shape:
        raise ValueError(f"guide_acted must have the shape of advantages {out.shape}, got {mask.shape}")
    if normalise:
        free = ~mask
        if free.sum() > 1:
            vals = out[free]
            out[free] = (vals - vals.mean()) / (vals.std() + 1e-8)
    out[mask] = 0.0
    return out
