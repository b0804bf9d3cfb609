"""The experience extractor: trajectory segments to experience vectors, trained by RL.

* :mod:`.segments`: :class:`ActionCoder` and the flat segment contexts
  (:func:`encode_segment`, :func:`decode_contexts`).
* :mod:`.config`: :class:`ExtractorConfig`.
* :mod:`.network`: :class:`ExperienceExtractor` (bidirectional LSTM, Gaussian experience
  head, utility head, self-supervised heads).
* :mod:`.losses`: CISPO, advantages, count-aware weights and the auxiliary losses.
* :mod:`.trainer`: :class:`ExtractorTrainer` (one-step updates, save/load).

This package needs torch but never Stable-Baselines3.
"""

from .config import ExtractorConfig
from .losses import (
    batch_advantages,
    cispo_loss,
    count_aware_weights,
    diversity_loss,
    inverse_dynamics_loss,
    steps_to_go_loss,
    steps_to_go_targets,
    utility_loss,
    valid_mask,
)
from .network import ExperienceExtractor, ExtractorOutput, symlog
from .segments import (
    ActionCoder,
    context_size,
    decode_contexts,
    encode_segment,
    segment_dim,
    subsample_indices,
)
from .trainer import FILE_FORMAT, FILE_VERSION, ExtractorTrainer

__all__ = [
    "ActionCoder",
    "segment_dim",
    "context_size",
    "subsample_indices",
    "encode_segment",
    "decode_contexts",
    "ExtractorConfig",
    "ExperienceExtractor",
    "ExtractorOutput",
    "symlog",
    "cispo_loss",
    "batch_advantages",
    "count_aware_weights",
    "diversity_loss",
    "utility_loss",
    "valid_mask",
    "steps_to_go_targets",
    "steps_to_go_loss",
    "inverse_dynamics_loss",
    "ExtractorTrainer",
    "FILE_FORMAT",
    "FILE_VERSION",
]
