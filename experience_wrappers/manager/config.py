"""Configuration of an :class:`~experience_wrappers.manager.ExperienceManager`."""

from __future__ import annotations

import attrs

from ..bank.config import MAX_DIM, MAX_SEED
from ..validators import (
    at_least,
    at_most,
    finite,
    is_bool,
    is_int,
    is_real,
    non_negative,
    positive,
    to_float,
)

__all__ = ["ManagerConfig"]

#: most steps a segment reads, hidden units per direction (sane bounds before any allocation)
MAX_LEN, MAX_HIDDEN = 100_000, 8192

_int = [is_int, positive]
_unit = [is_real, finite, at_least(0.0), at_most(1.0)]


@attrs.frozen(kw_only=True)
class ManagerConfig:
    """How episodes become bank entries and how the extractor learns from their outcomes.

    Attributes:
        mode: ``"async"`` (a background thread distils and trains; the actor never waits
            for it, but shares the GIL with it), ``"process"`` (a learner process distils and
            trains; credit stays in ``submit``, the bank in the actor's process:
            :mod:`experience_wrappers.manager.process`) or ``"sync"`` (everything happens
            inside ``submit``: deterministic, for tests).
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
        seed: seed of the extractor's weights and sampling, in ``[0, 2**63 - 1]``.
        handover_every: ``process`` mode: credited episodes go to the learner process this
            many at a time (one message, and their entries come back as one bank write),
            or earlier when the actor polls (``poll()``, which the callback calls at every
            rollout's end; ``stats()``, ``flush()``, ``save()``, merges). 1: each episode at
            once. Batching saves the actor a message, a poll and a bank write per episode.
        extractor: the extractor's other settings, by :class:`~experience_wrappers.extractor.ExtractorConfig`
            field (``clip``, ``utility_coef``, ``diversity_coef``, ``ssl_coef``,
            ``init_log_std``, ``min_log_std``, ``max_grad_norm``); the fields above
            (``exp_dim``, ``hidden``, ``max_len``, ``lr``, ``seed``) are set here, and the
            dims come from the spaces.

    Every field is checked here: numbers must be numbers (``"3e-4"`` is refused, not
    converted), ints ints, sizes within sane bounds, so a bad value fails at construction
    and not inside torch.

    >>> ManagerConfig(lr="3e-4")
    Traceback (most recent call last):
    ...
    TypeError: lr must be a number, got '3e-4'
    """

    mode: str = attrs.field(default="async", validator=attrs.validators.in_(("sync", "async", "process")))
    segment_every: int = attrs.field(default=8, validator=[is_int, non_negative, at_most(MAX_LEN)])
    prior_horizon: int = attrs.field(default=4, validator=[*_int, at_most(MAX_LEN)])
    exp_dim: int = attrs.field(default=16, validator=[*_int, at_most(MAX_DIM)])
    hidden: int = attrs.field(default=64, validator=[*_int, at_most(MAX_HIDDEN)])
    max_len: int = attrs.field(default=16, validator=[*_int, at_most(MAX_LEN)])
    lr: float = attrs.field(default=3e-4, converter=to_float, validator=[is_real, finite, positive])
    batch_size: int = attrs.field(default=64, validator=[*_int, at_most(MAX_LEN)])
    ssl_batch_size: int = attrs.field(default=64, validator=[*_int, at_most(MAX_LEN)])
    extractor_reward: str = attrs.field(default="delta", validator=attrs.validators.in_(("delta", "direct")))
    baseline_window: int = attrs.field(default=100, validator=[*_int, at_most(MAX_LEN)])
    skip_below: float | None = attrs.field(default=None, converter=to_float)
    decay_start: float = attrs.field(default=0.99, converter=to_float, validator=_unit)
    decay_end: float = attrs.field(default=0.95, converter=to_float, validator=_unit)
    extractor_per_task: bool = attrs.field(default=False, validator=is_bool)
    train_extractor: bool = attrs.field(default=True, validator=is_bool)
    seed: int = attrs.field(default=0, validator=[is_int, at_least(0), at_most(MAX_SEED)])
    handover_every: int = attrs.field(default=16, validator=[*_int, at_most(MAX_LEN)])
    extractor: dict = attrs.field(factory=dict, converter=dict)

    @extractor.validator
    def _check_extractor(self, attribute: attrs.Attribute, value: dict) -> None:
        from ..extractor import ExtractorConfig

        fields = {f.name for f in attrs.fields(ExtractorConfig)}
        here = {"exp_dim", "hidden", "max_len", "lr", "seed"}
        derived = {"state_dim", "action_dim", "discrete_actions"}
        for name in value:
            if name in here:
                raise ValueError(f"extractor={{{name!r}: ...}}: set {name} as the manager's own field ({name}=...)")
            if name in derived or name not in fields:
                settable = sorted(fields - here - derived)
                raise ValueError(f"extractor={{{name!r}: ...}}: not an extractor setting; settable: {settable}")
        ExtractorConfig(state_dim=1, action_dim=1, **value)  # each value checked now, not inside torch

    @skip_below.validator
    def _check_skip_below(self, attribute: attrs.Attribute, value: float | None) -> None:
        if value is not None:
            is_real(self, attribute, value)
            finite(self, attribute, value)

    def to_dict(self) -> dict:
        return attrs.asdict(self)
