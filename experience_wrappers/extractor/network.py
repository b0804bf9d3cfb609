"""The experience extractor: a bidirectional LSTM from a trajectory segment to an experience.

The network reads the rows of a segment (see :mod:`.segments`) and returns a Gaussian
distribution over experience vectors (so it can be trained by policy gradient on the
outcome its vectors earn), a utility prediction, and two self-supervised heads that
give it a learning signal before outcome rewards exist.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import torch
from torch import nn
from torch.distributions import Independent, Normal
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

from .config import ExtractorConfig
from .segments import decode_contexts

__all__ = ["ExtractorOutput", "ExperienceExtractor", "symlog"]


def symlog(x: torch.Tensor) -> torch.Tensor:
    """``sign(x) * log1p(|x|)``: about the identity near 0, logarithmic for large values.

    >>> symlog(torch.tensor([-9.0, 0.0, 1.0])).exp().round()
    tensor([0., 1., 2.])
    """
    return torch.sign(x) * torch.log1p(torch.abs(x))


def normalise(mean: torch.Tensor, eps: float = 1e-6) -> torch.Tensor:
    """Scale each row to unit root-mean-square: the scale the actor sees, whatever the head's.

    The experience vector is what the actor reads; an untrained head's raw means are
    tiny (its last layer starts at gain 0.01) and were drowned by the exploration noise.
    After this, the noise (``exp(log_std)``, 0.1 by default) is small next to the signal.

    >>> round(normalise(torch.tensor([[3.0, 4.0]])).pow(2).mean().item(), 4)
    1.0
    """
    return mean * torch.rsqrt(mean.pow(2).mean(dim=-1, keepdim=True) + eps)


class ExtractorOutput(NamedTuple):
    """Everything :meth:`ExperienceExtractor.forward` computes.

    Attributes:
        mean: ``(B, exp_dim)`` mean of the experience distribution.
        log_std: ``(exp_dim,)`` its (state-independent, clamped) log standard deviation.
        utility: ``(B,)`` predicted utility (outcome delta) of the segment's experience.
        steps_to_go: ``(B, T)`` predicted ``log1p(rows remaining)`` per step.
        inverse: ``(B, T - 1, action_dim)`` predicted action row at ``t`` from steps
            ``t`` and ``t + 1`` (logits when actions are discrete).
        decoded: ``(B, action_dim + 2)`` what the decoder head reads back from the
            experience vector itself: the segment's first action (logits when discrete),
            ``log1p`` of its length, and ``symlog`` of its return-to-go.
    """

    mean: torch.Tensor
    log_std: torch.Tensor
    utility: torch.Tensor
    steps_to_go: torch.Tensor
    inverse: torch.Tensor
    decoded: torch.Tensor


class ExperienceExtractor(nn.Module):
    """Bidirectional LSTM from a segment's rows to a distribution over experience vectors.

    Architecture:

    * Input rows ``[state, action, reward, return-to-go]`` pass through :meth:`preprocess`
      (``symlog`` on the state, reward and return-to-go columns, so large returns or raw
      features do not saturate the LSTM; action columns are already in ``[-1, 1]``).
    * A single-layer bidirectional LSTM (``batch_first``, packed sequences, so padding is
      never read) runs over the valid rows.
    * Pooled summary: the concatenation of the forward direction's final state (after the
      last valid row) and the backward direction's state at the first row (after reading
      the whole segment backwards). Both have seen every valid row; the forward half ends
      at the outcome, the backward half ends at the segment's start state.
    * A ``tanh`` MLP on the summary gives the experience mean (``exp_dim``, scaled to unit
      root-mean-square by :func:`normalise`) and a scalar utility prediction. The log
      standard deviation is a learned, state-independent parameter clamped to
      ``>= min_log_std``; it starts small (``init_log_std``), so a stored vector is mostly
      its entry's signal.
    * A decoder head reads the experience mean itself back into the segment's first
      action, its length and its return-to-go, so the vector the actor sees carries them
      by construction.
    * Self-supervised heads on the per-step LSTM outputs: steps-to-go (``log1p`` of the
      rows remaining) and inverse dynamics (the action row at ``t`` from the outputs at
      ``t`` and ``t + 1``). The inverse-dynamics pass runs the same LSTM on the rows with
      their action columns zeroed: otherwise a bidirectional LSTM could copy the action
      from its own input and the task would teach nothing about states.

    Building the network seeds torch with ``config.seed`` inside
    :func:`torch.random.fork_rng`, so equal configs give equal weights and the global RNG
    state is left untouched.

    Args:
        config: sizes and knobs; see :class:`ExtractorConfig`.

    >>> from experience_wrappers.extractor.segments import encode_segment
    >>> cfg = ExtractorConfig(state_dim=2, action_dim=3, exp_dim=4, hidden=8, max_len=5)
    >>> net = ExperienceExtractor(cfg)
    >>> ctx = encode_segment(np.zeros((3, 2)), np.eye(3), np.array([0.0, 0.0, 1.0]), 5)
    >>> z, logp, utility = net.propose(np.stack([ctx, ctx]), torch.Generator().manual_seed(0))
    >>> z.shape, logp.shape, utility.shape, z.dtype
    ((2, 4), (2,), (2,), dtype('float32'))
    """

    _is_action: torch.Tensor  # a buffer (register_buffer in __init__)

    def __init__(self, config: ExtractorConfig) -> None:
        if not isinstance(config, ExtractorConfig):
            raise TypeError(f"config must be an ExtractorConfig, got {config!r}")
        super().__init__()
        self.config = config
        self.segment_dim = config.segment_dim  # a row's width, checked on every batch
        h = config.hidden
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(config.seed)
            self.lstm = nn.LSTM(
                input_size=config.segment_dim, hidden_size=h, batch_first=True, bidirectional=True
            )
            self.trunk = nn.Sequential(nn.Linear(2 * h, h), nn.Tanh())
            self.mean_head = nn.Linear(h, config.exp_dim)
            self.utility_head = nn.Linear(h, 1)
            self.steps_head = nn.Linear(2 * h, 1)
            self.decoder_head = nn.Linear(config.exp_dim, config.action_dim + 2)
            self.inverse_head = nn.Sequential(
                nn.Linear(4 * h, h), nn.Tanh(), nn.Linear(h, config.action_dim)
            )
            # Small output layers, as for SB3's policy heads: the first experiences are
            # near the origin and driven by the exploration noise.
            for head in (self.mean_head, self.utility_head):
                nn.init.orthogonal_(head.weight, gain=0.01)
                nn.init.zeros_(head.bias)
        self.log_std_param = nn.Parameter(torch.full((config.exp_dim,), config.init_log_std))
        is_action = torch.zeros(config.segment_dim, dtype=torch.bool)
        is_action[config.state_dim : config.state_dim + config.action_dim] = True
        self.register_buffer("_is_action", is_action, persistent=False)

    @property
    def device(self) -> torch.device:
        """The device of the network's parameters."""
        return self.log_std_param.device

    @property
    def log_std(self) -> torch.Tensor:
        """``(exp_dim,)`` log standard deviation, clamped to ``>= min_log_std``."""
        return torch.clamp(self.log_std_param, min=self.config.min_log_std)

    def preprocess(self, inputs: torch.Tensor) -> torch.Tensor:
        """``symlog`` on every column except the encoded action."""
        return torch.where(self._is_action, inputs, symlog(inputs))

    def _check(self, inputs: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        if inputs.ndim != 3 or inputs.shape[2] != self.segment_dim or inputs.shape[0] == 0:
            raise ValueError(
                f"inputs must have shape (batch >= 1, steps, {self.segment_dim}), "
                f"got {tuple(inputs.shape)}"
            )
        lengths = torch.as_tensor(lengths, dtype=torch.int64).cpu()
        if lengths.shape != inputs.shape[:1]:
            raise ValueError(
                f"lengths must have shape ({inputs.shape[0]},), got {tuple(lengths.shape)}"
            )
        if bool((lengths < 1).any()) or bool((lengths > inputs.shape[1]).any()):
            raise ValueError(f"lengths must lie in [1, {inputs.shape[1]}], got {lengths.tolist()}")
        return lengths

    def _run(self, x: torch.Tensor, lengths: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """LSTM over packed rows: per-step outputs ``(B, T, 2h)`` and the summary ``(B, 2h)``."""
        packed = pack_padded_sequence(x, lengths, batch_first=True, enforce_sorted=False)
        out, (h_n, _) = self.lstm(packed)
        outputs, _ = pad_packed_sequence(out, batch_first=True, total_length=x.shape[1])
        summary = torch.cat([h_n[0], h_n[1]], dim=-1)
        return outputs, summary

    def _heads(
        self, inputs: torch.Tensor, lengths: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Mean and utility from one LSTM pass (what sampling needs)."""
        x = self.preprocess(inputs.to(self.device, torch.float32))
        _, summary = self._run(x, lengths)
        h = self.trunk(summary)
        return normalise(self.mean_head(h)), self.utility_head(h).squeeze(-1)

    def forward(self, inputs: torch.Tensor, lengths: torch.Tensor) -> ExtractorOutput:
        """Run every head on decoded segments.

        Args:
            inputs: ``(B, T, segment_dim)`` rows (see :func:`decode_contexts`).
            lengths: ``(B,)`` valid rows per segment, in ``[1, T]``.
        """
        lengths = self._check(inputs, lengths)
        b = inputs.shape[0]
        x = self.preprocess(inputs.to(self.device, torch.float32))
        # One LSTM call over the rows and their action-masked copy (half the kernel calls).
        both = torch.cat([x, x.masked_fill(self._is_action, 0.0)], dim=0)
        outputs_both, summary_both = self._run(both, torch.cat([lengths, lengths]))
        outputs, out_m = outputs_both[:b], outputs_both[b:]
        h = self.trunk(summary_both[:b])
        mean, utility = normalise(self.mean_head(h)), self.utility_head(h).squeeze(-1)
        steps_to_go = self.steps_head(outputs).squeeze(-1)
        pairs = torch.cat([out_m[:, :-1], out_m[:, 1:]], dim=-1)
        inverse = self.inverse_head(pairs)
        return ExtractorOutput(mean, self.log_std, utility, steps_to_go, inverse, self.decoder_head(mean))

    def distribution(self, inputs: torch.Tensor, lengths: torch.Tensor) -> Independent:
        """The experience distribution ``Independent(Normal(mean, std), 1)`` per segment."""
        lengths = self._check(inputs, lengths)
        mean, _ = self._heads(inputs, lengths)
        return self.around(mean)

    def around(self, mean: torch.Tensor) -> Independent:
        """The Gaussian over entry vectors around ``mean`` (the extractor's ``log_std``): what CISPO's ratio reads."""
        return Independent(Normal(mean, self.log_std.exp().expand_as(mean)), 1)

    def decode(self, contexts: np.ndarray) -> tuple[torch.Tensor, torch.Tensor]:
        """Flat contexts ``(B, context_size)`` to ``(inputs, lengths)`` tensors on this device."""
        cfg = self.config
        inputs, lengths = decode_contexts(contexts, cfg.state_dim, cfg.action_dim, cfg.max_len)
        return torch.from_numpy(inputs).to(self.device), torch.from_numpy(lengths)

    @torch.no_grad()
    def propose(
        self, contexts: np.ndarray, generator: torch.Generator | None = None
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Sample experience vectors for flat contexts.

        Args:
            contexts: ``(B, context_size)`` flat contexts (see :func:`encode_segment`).
            generator: source of the sampling noise (the global RNG when None).

        Returns:
            ``z`` ``(B, exp_dim)``, its log-probability ``logp`` ``(B,)`` and the predicted
            ``utility`` ``(B,)``, all float32 numpy arrays.
        """
        inputs, lengths = self.decode(contexts)
        lengths = self._check(inputs, lengths)
        mean, utility = self._heads(inputs, lengths)
        noise_device = generator.device if generator is not None else self.device
        noise = torch.randn(mean.shape, generator=generator, device=noise_device).to(self.device)
        z = mean + self.log_std.exp() * noise
        logp = self.around(mean).log_prob(z)
        return (
            z.float().cpu().numpy(),
            logp.float().cpu().numpy(),
            utility.float().cpu().numpy(),
        )

    @torch.no_grad()
    def mean_embedding(self, contexts: np.ndarray) -> np.ndarray:
        """The distribution means ``(B, exp_dim)`` float32 for flat contexts (no sampling)."""
        inputs, lengths = self.decode(contexts)
        lengths = self._check(inputs, lengths)
        mean, _ = self._heads(inputs, lengths)
        return mean.float().cpu().numpy()
