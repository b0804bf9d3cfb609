"""The extractor's loss terms, as pure functions.

* :func:`cispo_loss`: the CISPO policy gradient on sampled experience vectors (a
  clipped, stop-gradient importance weight times advantage times log-probability).
* :func:`batch_advantages`: reward minus the batch mean (no division by the std,
  as in the paper).
* :func:`count_aware_weights`: the paper's reweighting of samples by how often
  they were already trained on.
* :func:`diversity_loss`, :func:`utility_loss`, :func:`steps_to_go_loss`,
  :func:`inverse_dynamics_loss`: the auxiliary terms.
"""

from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F

__all__ = [
    "EPS",
    "cispo_loss",
    "batch_advantages",
    "count_aware_weights",
    "diversity_loss",
    "utility_loss",
    "valid_mask",
    "steps_to_go_targets",
    "steps_to_go_loss",
    "inverse_dynamics_loss",
    "decoder_loss",
]

EPS = 1e-8


def _like(name: str, value: object, ref: torch.Tensor) -> torch.Tensor:
    t = torch.as_tensor(value, dtype=ref.dtype, device=ref.device)
    if t.shape != ref.shape:
        raise ValueError(f"{name} must have shape {tuple(ref.shape)}, got {tuple(t.shape)}")
    return t


def cispo_loss(
    logp_new: torch.Tensor,
    logp_old: torch.Tensor | np.ndarray,
    advantages: torch.Tensor | np.ndarray,
    weights: torch.Tensor | np.ndarray,
    clip: float = 0.1,
) -> torch.Tensor:
    """CISPO loss: ``-sum(weights * w * advantages * logp_new) / max(sum(weights), eps)``.

    ``w = clamp(exp(logp_new - logp_old), 1 - clip, 1 + clip)``, detached, so the
    gradient always flows through ``logp_new`` (unlike PPO's clipped surrogate, which
    drops clipped samples). All weights 0 gives a zero loss that still has a gradient
    graph (of zeros).

    Args:
        logp_new: ``(B,)`` log-probabilities under the current extractor (with grad).
        logp_old: ``(B,)`` log-probabilities when the samples were drawn.
        advantages: ``(B,)`` advantages.
        weights: ``(B,)`` non-negative sample weights.
        clip: clip range of the importance weight, in (0, 1).

    >>> lp = torch.tensor([0.0, 0.0], requires_grad=True)
    >>> loss = cispo_loss(lp, torch.zeros(2), torch.tensor([1.0, -1.0]), torch.ones(2))
    >>> loss.backward()
    >>> lp.grad
    tensor([-0.5000,  0.5000])
    """
    if not 0 < clip < 1:
        raise ValueError(f"clip must be in (0, 1), got {clip!r}")
    if logp_new.ndim != 1:
        raise ValueError(f"logp_new must be 1-D, got shape {tuple(logp_new.shape)}")
    old = _like("logp_old", logp_old, logp_new)
    adv = _like("advantages", advantages, logp_new)
    w_sample = _like("weights", weights, logp_new)
    ratio = torch.exp(logp_new - old)
    w = torch.clamp(ratio, 1.0 - clip, 1.0 + clip).detach()
    total = torch.clamp(w_sample.sum(), min=EPS)
    return -(w_sample * w * adv * logp_new).sum() / total


def batch_advantages(rewards: np.ndarray | torch.Tensor) -> np.ndarray | torch.Tensor:
    """Reward minus the batch mean (no division by the std). Tensor in, tensor out.

    >>> batch_advantages(np.array([1.0, 0.0, -1.0, 4.0]))
    array([ 0., -1., -2.,  3.], dtype=float32)
    """
    if isinstance(rewards, torch.Tensor):
        if rewards.ndim != 1:
            raise ValueError(f"rewards must be 1-D, got shape {tuple(rewards.shape)}")
        return rewards - rewards.mean()
    r = np.asarray(rewards, dtype=np.float32)
    if r.ndim != 1:
        raise ValueError(f"rewards must be 1-D, got shape {r.shape}")
    if r.size == 0:
        return r
    return r - r.mean(dtype=np.float64).astype(np.float32)


def count_aware_weights(n_trained: np.ndarray, trained_recently: np.ndarray) -> np.ndarray:
    """The paper's count-aware sample weights: 0 if trained on very recently, else ``(1 + n)^-0.5``.

    Args:
        n_trained: ``(B,)`` how many times each sample was already trained on (>= 0).
        trained_recently: ``(B,)`` bool, True for samples trained on very recently.

    Returns:
        ``(B,)`` float32 weights.

    >>> count_aware_weights(np.array([0, 3, 8]), np.array([False, False, True]))
    array([1. , 0.5, 0. ], dtype=float32)
    """
    n = np.asarray(n_trained, dtype=np.float64)
    recent = np.asarray(trained_recently)
    if n.ndim != 1:
        raise ValueError(f"n_trained must be 1-D, got shape {n.shape}")
    if recent.shape != n.shape:
        raise ValueError(
            f"trained_recently must have the shape of n_trained {n.shape}, got {recent.shape}"
        )
    if recent.dtype != np.bool_:
        raise ValueError(f"trained_recently must be a bool array, got dtype {recent.dtype}")
    if not np.all(np.isfinite(n)) or np.any(n < 0):
        raise ValueError(f"n_trained must be finite and >= 0, got {n_trained!r}")
    return np.where(recent, 0.0, (1.0 + n) ** -0.5).astype(np.float32)


def diversity_loss(means: torch.Tensor) -> torch.Tensor:
    """Mean pairwise cosine similarity of a batch of vectors, off the diagonal (0 for B < 2).

    Minimising it spreads experience vectors apart in direction.

    >>> round(float(diversity_loss(torch.tensor([[1.0, 0.0], [0.0, 2.0], [-1.0, 0.0]]))), 4)
    -0.3333
    """
    if means.ndim != 2:
        raise ValueError(f"means must be 2-D (batch, dim), got shape {tuple(means.shape)}")
    b = means.shape[0]
    if b < 2:
        return means.sum() * 0.0
    unit = F.normalize(means, dim=1, eps=EPS)
    sim = unit @ unit.T
    return (sim.sum() - sim.diagonal().sum()) / (b * (b - 1))


def utility_loss(
    pred: torch.Tensor,
    target: torch.Tensor | np.ndarray,
    weights: torch.Tensor | np.ndarray | None = None,
) -> torch.Tensor:
    """Weighted mean squared error ``sum(w * (pred - target)^2) / max(sum(w), eps)``.

    >>> float(utility_loss(torch.tensor([0.0, 2.0]), torch.tensor([1.0, 0.0])))
    2.5
    >>> float(utility_loss(torch.tensor([0.0, 2.0]), torch.tensor([1.0, 0.0]), torch.tensor([1.0, 0.0])))
    1.0
    """
    if pred.ndim != 1:
        raise ValueError(f"pred must be 1-D, got shape {tuple(pred.shape)}")
    tgt = _like("target", target, pred)
    w = torch.ones_like(pred) if weights is None else _like("weights", weights, pred)
    return (w * (pred - tgt) ** 2).sum() / torch.clamp(w.sum(), min=EPS)


def valid_mask(lengths: torch.Tensor, steps: int) -> torch.Tensor:
    """``(B, steps)`` bool mask, True where ``t < lengths[b]``.

    >>> valid_mask(torch.tensor([1, 3]), 3)
    tensor([[ True, False, False],
            [ True,  True,  True]])
    """
    t = torch.arange(steps, device=lengths.device)
    return t[None, :] < lengths[:, None]


def steps_to_go_targets(lengths: torch.Tensor, steps: int) -> torch.Tensor:
    """``log1p(rows remaining after t)`` per step, ``(B, steps)`` float32 (0 on padding).

    >>> steps_to_go_targets(torch.tensor([3]), 4).exp() - 1
    tensor([[2., 1., 0., 0.]])
    """
    t = torch.arange(steps, device=lengths.device)
    remaining = (lengths[:, None] - 1 - t[None, :]).clamp(min=0)
    return torch.log1p(remaining.to(torch.float32))


def steps_to_go_loss(pred: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
    """Masked MSE of ``pred`` ``(B, T)`` against :func:`steps_to_go_targets` on valid steps.

    Steps count the segment's (possibly subsampled) rows, not env steps.

    >>> lengths = torch.tensor([2, 1])
    >>> float(steps_to_go_loss(steps_to_go_targets(lengths, 3), lengths))
    0.0
    """
    if pred.ndim != 2 or lengths.shape != pred.shape[:1]:
        raise ValueError(
            f"pred must be (B, T) and lengths (B,), got {tuple(pred.shape)} and {tuple(lengths.shape)}"
        )
    mask = valid_mask(lengths, pred.shape[1]).to(pred.dtype)
    target = steps_to_go_targets(lengths, pred.shape[1]).to(pred.dtype)
    return (mask * (pred - target) ** 2).sum() / torch.clamp(mask.sum(), min=1.0)


def inverse_dynamics_loss(
    pred: torch.Tensor, actions: torch.Tensor, lengths: torch.Tensor, discrete: bool = True
) -> torch.Tensor:
    """Inverse-dynamics loss: predict the action row at ``t`` from steps ``t`` and ``t + 1``.

    Only pairs with ``t + 1 < lengths[b]`` count. With ``discrete`` the rows are one-hots
    and the loss is the cross-entropy against their argmax; else it is the MSE averaged
    over valid pairs and action components. Segments of one row give a zero loss
    (with a gradient graph).

    Args:
        pred: ``(B, T - 1, action_dim)`` logits (discrete) or predicted rows.
        actions: ``(B, T, action_dim)`` the encoded action rows of the segment.
        lengths: ``(B,)`` valid rows per segment.
        discrete: cross-entropy (True) or MSE (False).

    >>> acts = torch.eye(3)[None]                  # one segment of 3 steps, actions 0, 1, 2
    >>> logits = 20.0 * acts[:, :-1]               # confident and right on both pairs
    >>> float(inverse_dynamics_loss(logits, acts, torch.tensor([3]))) < 1e-6
    True
    """
    b, t, a = actions.shape
    if pred.shape != (b, max(t - 1, 0), a):
        raise ValueError(
            f"pred must have shape {(b, max(t - 1, 0), a)} for actions {tuple(actions.shape)}, "
            f"got {tuple(pred.shape)}"
        )
    if t < 2:
        return pred.sum() * 0.0
    mask = valid_mask(lengths - 1, t - 1)
    if not bool(mask.any()):
        return pred.sum() * 0.0
    target = actions[:, :-1]
    if discrete:
        ce = F.cross_entropy(pred[mask], target[mask].argmax(dim=-1), reduction="mean")
        return ce
    return ((pred[mask] - target[mask]) ** 2).mean()


def decoder_loss(decoded: torch.Tensor, inputs: torch.Tensor, lengths: torch.Tensor, state_dim: int,
                 action_dim: int, discrete: bool = True) -> torch.Tensor:
    """Read the segment back from its experience vector: first action, length, return-to-go.

    ``decoded`` is the decoder head's output on the experience mean, ``(B, action_dim + 2)``:
    the first action (cross-entropy against the first row's one-hot when ``discrete``,
    else MSE), ``log1p(length)`` and ``symlog`` of the first row's return-to-go (MSE each).
    Training it makes the vector that the actor sees carry what the segment did and how
    it ended (docs/concepts.md, "What an entry is").

    Args:
        decoded: ``(B, action_dim + 2)`` decoder output.
        inputs: ``(B, T, segment_dim)`` raw rows ``[state, action, reward, return-to-go]``.
        lengths: ``(B,)`` valid rows per segment.
        state_dim: columns of the state.
        action_dim: columns of the encoded action.
        discrete: whether actions are one-hot rows.

    >>> rows = torch.zeros(1, 2, 5); rows[0, 0, 1] = 1.0; rows[0, 0, 4] = 1.0  # state 1, action 0 of 2
    >>> good = torch.tensor([[20.0, -20.0, float(torch.log1p(torch.tensor(2.0))), 0.6931]])
    >>> float(decoder_loss(good, rows, torch.tensor([2]), 1, 2)) < 1e-3
    True
    """
    if decoded.shape != (inputs.shape[0], action_dim + 2):
        raise ValueError(f"decoded must have shape {(inputs.shape[0], action_dim + 2)}, got {tuple(decoded.shape)}")
    first = inputs[:, 0].to(decoded.dtype)
    action = first[:, state_dim : state_dim + action_dim]
    rtg = first[:, state_dim + action_dim + 1]
    target_len = torch.log1p(lengths.to(decoded.device, decoded.dtype))
    target_rtg = torch.sign(rtg) * torch.log1p(rtg.abs())
    if discrete:
        act_loss = F.cross_entropy(decoded[:, :action_dim], action.argmax(dim=-1))
    else:
        act_loss = ((decoded[:, :action_dim] - action) ** 2).mean()
    return act_loss + ((decoded[:, action_dim] - target_len) ** 2).mean() + (
        (decoded[:, action_dim + 1] - target_rtg) ** 2).mean()
