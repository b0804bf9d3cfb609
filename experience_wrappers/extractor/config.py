"""Configuration of an :class:`~experience_wrappers.extractor.ExperienceExtractor`."""

from __future__ import annotations

import attrs

from ..validators import finite, is_bool, is_int, non_negative, positive, to_int
from .segments import context_size, segment_dim

__all__ = ["ExtractorConfig", "SHAPE_FIELDS"]

#: the settings that shape the extractor's network (a saved extractor loads only into their values);
#: the others are training knobs (and ``seed``, the initial weights' seed), which a restoring
#: manager takes from its own config
SHAPE_FIELDS = ("state_dim", "action_dim", "exp_dim", "hidden", "max_len", "discrete_actions")


@attrs.frozen(kw_only=True)
class ExtractorConfig:
    """Sizes and training knobs of the experience extractor, validated when built.

    Attributes:
        state_dim: length of the per-step state features in a segment.
        action_dim: length of an encoded action (:attr:`ActionCoder.dim`).
        exp_dim: length of an experience vector.
        hidden: LSTM hidden size per direction (and of the head MLP).
        max_len: most rows in a segment context.
        lr: Adam learning rate.
        clip: CISPO clip range of the importance weight (``1 - clip`` to ``1 + clip``).
        utility_coef: weight of the utility-regression loss.
        diversity_coef: weight of the batch diversity loss.
        ssl_coef: weight of the self-supervised losses (steps-to-go + inverse dynamics).
        init_log_std: initial log standard deviation of the experience distribution (-2.3: a
            standard deviation of about 0.1 beside means of unit root-mean-square).
        min_log_std: floor of the log standard deviation.
        max_grad_norm: gradient-norm clipping threshold.
        seed: seed of the network's initial weights.
        discrete_actions: True when action rows are one-hots of a single choice
            (:attr:`ActionCoder.discrete`): inverse dynamics then uses cross-entropy,
            else mean squared error.

    >>> cfg = ExtractorConfig(state_dim=4, action_dim=3, max_len=8)
    >>> cfg.segment_dim, cfg.context_size
    (9, 73)
    >>> ExtractorConfig(state_dim=4, action_dim=0)
    Traceback (most recent call last):
    ...
    ValueError: action_dim must be > 0, got 0
    """

    state_dim: int = attrs.field(converter=to_int, validator=[is_int, positive])
    action_dim: int = attrs.field(converter=to_int, validator=[is_int, positive])
    exp_dim: int = attrs.field(default=16, converter=to_int, validator=[is_int, positive])
    hidden: int = attrs.field(default=64, converter=to_int, validator=[is_int, positive])
    max_len: int = attrs.field(default=16, converter=to_int, validator=[is_int, positive])
    lr: float = attrs.field(default=3e-4, converter=float, validator=[finite, positive])
    clip: float = attrs.field(default=0.1, converter=float, validator=[finite, positive])
    utility_coef: float = attrs.field(
        default=0.5, converter=float, validator=[finite, non_negative]
    )
    diversity_coef: float = attrs.field(
        default=0.05, converter=float, validator=[finite, non_negative]
    )
    ssl_coef: float = attrs.field(default=0.5, converter=float, validator=[finite, non_negative])
    init_log_std: float = attrs.field(default=-2.3, converter=float, validator=finite)
    min_log_std: float = attrs.field(default=-3.0, converter=float, validator=finite)
    max_grad_norm: float = attrs.field(default=1.0, converter=float, validator=[finite, positive])
    seed: int = attrs.field(default=0, converter=to_int, validator=is_int)
    discrete_actions: bool = attrs.field(default=True, validator=is_bool)

    @clip.validator
    def _check_clip(self, attribute: attrs.Attribute, value: float) -> None:
        if not value < 1:
            raise ValueError(f"clip must be in (0, 1), got {value!r}")

    def __attrs_post_init__(self) -> None:
        if self.init_log_std < self.min_log_std:
            raise ValueError(
                f"init_log_std must be >= min_log_std ({self.min_log_std!r}), "
                f"got {self.init_log_std!r}"
            )

    def shape_differences(self, saved: dict) -> dict[str, tuple[object, object]]:
        """The :data:`SHAPE_FIELDS` in which ``saved`` (a config's ``to_dict()``) differs from this
        config, as ``{field: (saved value, this value)}``.

        >>> ExtractorConfig(state_dim=4, action_dim=3).shape_differences(
        ...     {"state_dim": 4, "action_dim": 3, "exp_dim": 8, "hidden": 64, "max_len": 16,
        ...      "discrete_actions": True, "seed": 5, "lr": 0.1})
        {'exp_dim': (8, 16)}
        """
        mine = self.to_dict()
        return {k: (saved.get(k), mine[k]) for k in SHAPE_FIELDS if saved.get(k) != mine[k]}

    @property
    def segment_dim(self) -> int:
        """Length of one segment row (see :func:`segment_dim`)."""
        return segment_dim(self.state_dim, self.action_dim)

    @property
    def context_size(self) -> int:
        """Length of a flat context (see :func:`context_size`)."""
        return context_size(self.state_dim, self.action_dim, self.max_len)

    def to_dict(self) -> dict:
        """A JSON-serialisable dict (the inverse of ``ExtractorConfig(**d)``).

        >>> d = ExtractorConfig(state_dim=2, action_dim=2).to_dict()
        >>> ExtractorConfig(**d) == ExtractorConfig(state_dim=2, action_dim=2)
        True
        """
        return attrs.asdict(self)
