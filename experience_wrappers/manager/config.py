"""Configuration of an :class:`~experience_wrappers.manager.ExperienceManager`."""

from __future__ import annotations

import attrs

__all__ = ["ManagerConfig"]

_pos = attrs.validators.gt(0)
_nonneg = attrs.validators.ge(0)


@attrs.frozen(kw_only=True)
class ManagerConfig:
    """How episodes become bank entries and how the extractor learns from their outcomes.

    Attributes:
        mode: ``"async"`` (a background worker distils and trains; the actor never waits)
            or ``"sync"`` (everything happens inside ``submit``: deterministic, for tests).
        segment_every: a new entry starts every this many steps of an episode
            (0: one entry per episode, at its start).
        prior_horizon: how many actions from a segment's start make its action prior.
        exp_dim: length of an experience vector (the bank's value).
        hidden: extractor LSTM size per direction.
        max_len: most steps the extractor reads per segment (longer ones are subsampled).
        lr: extractor learning rate.
        batch_size: credited samples per extractor update (the paper: 64).
        ssl_batch_size: fresh segments per self-supervised update.
        extractor_reward: ``"delta"`` (outcome delta against free episodes) or
            ``"direct"`` (the paper's +1 success / -1 failure).
        baseline_window: free episodes per task in the running baseline.
        skip_below: skip adding a segment whose predicted utility is below this (None: never).
        decay_start, decay_end: the utility EMA decay follows a cosine from start to end
            over training progress (set by the callback).
        extractor_per_task: one extractor per task id (each trained only on its task's
            episodes) instead of one shared by all tasks; the bank stays shared.
        train_extractor: False freezes the extractor (the "static" ablation): entries are
            still distilled and credited, but the extractor never updates.
        seed: seed of the extractor's weights and sampling.
    """

    mode: str = attrs.field(default="async", validator=attrs.validators.in_(("sync", "async")))
    segment_every: int = attrs.field(default=8, validator=_nonneg)
    prior_horizon: int = attrs.field(default=4, validator=_pos)
    exp_dim: int = attrs.field(default=16, validator=_pos)
    hidden: int = attrs.field(default=64, validator=_pos)
    max_len: int = attrs.field(default=16, validator=_pos)
    lr: float = attrs.field(default=3e-4, converter=float, validator=_pos)
    batch_size: int = attrs.field(default=64, validator=_pos)
    ssl_batch_size: int = attrs.field(default=64, validator=_pos)
    extractor_reward: str = attrs.field(default="delta", validator=attrs.validators.in_(("delta", "direct")))
    baseline_window: int = attrs.field(default=100, validator=_pos)
    skip_below: float | None = attrs.field(default=None)
    decay_start: float = attrs.field(default=0.99, converter=float, validator=[_nonneg, attrs.validators.le(1)])
    decay_end: float = attrs.field(default=0.95, converter=float, validator=[_nonneg, attrs.validators.le(1)])
    extractor_per_task: bool = attrs.field(default=False, validator=attrs.validators.instance_of(bool))
    train_extractor: bool = attrs.field(default=True, validator=attrs.validators.instance_of(bool))
    seed: int = attrs.field(default=0)

    def to_dict(self) -> dict:
        return attrs.asdict(self)
