"""Configuration of an :class:`~experience_wrappers.bank.ExperienceBank`."""

from __future__ import annotations

import attrs

from ..validators import finite, is_bool, is_int, non_negative, positive

__all__ = ["BankConfig", "SPACES"]

SPACES = ("l2", "cosine", "ip")


@attrs.frozen(kw_only=True)
class BankConfig:
    """Every knob of the bank, validated when the config is built.

    Distances are in hnswlib's units for ``space``: squared Euclidean distance for
    ``"l2"``, ``1 - cosine similarity`` for ``"cosine"`` and ``1 - dot`` for ``"ip"``.
    The default key encoders return unit-norm keys, so with ``"l2"`` a distance of
    0.01 means a cosine similarity of about 0.995.

    Attributes:
        capacity: most entries held; beyond it the lowest-utility, then oldest, are evicted.
        space: hnswlib space, one of ``"l2"``, ``"cosine"``, ``"ip"``.
        M: hnswlib graph degree.
        ef_construction: hnswlib build-time beam width.
        ef_search: hnswlib query-time beam width (raised to the candidate count when smaller).
        dedup_threshold: a new entry closer than this to an entry of the same task
            updates that entry instead of being added (0 turns dedup off).
        merge_threshold: :meth:`ExperienceBank.merge` joins entries closer than this.
        merge_k: neighbours examined per entry when merging.
        temperature: utility sampling temperature (0.7-1.2 recommended).
        diversity_penalty: score penalty ``diversity_penalty * log(1 + times retrieved)``.
        utility_floor: entries with utility below this are never returned (None: no floor).
        candidate_factor: kNN oversampling before re-ranking (k * factor candidates).
        initial_utility: utility of a new entry when the caller gives none.
        utility_warmup: credit an entry's first deltas with step ``1 / (n_credited + 2)``
            instead of ``1 - decay`` (whichever is larger): its utility is then the mean of
            its initial utility and its deltas until the EMA's own weight takes over. Without
            it, an entry credited a few times keeps about ``n * (1 - decay)`` of its mean delta.
        utilisation_window: queries over which ``stats()["utilisation"]`` is measured.
        seed: seed of the bank's sampler (None: fresh entropy).

    >>> BankConfig(capacity=100).capacity
    100
    >>> BankConfig(space="hamming")
    Traceback (most recent call last):
    ...
    ValueError: space must be one of ('l2', 'cosine', 'ip'), got 'hamming'
    """

    capacity: int = attrs.field(default=4096, validator=[is_int, positive])
    space: str = attrs.field(default="l2")
    M: int = attrs.field(default=16, validator=[is_int, positive])
    ef_construction: int = attrs.field(default=200, validator=[is_int, positive])
    ef_search: int = attrs.field(default=64, validator=[is_int, positive])
    dedup_threshold: float = attrs.field(default=0.01, converter=float, validator=[non_negative, finite])
    merge_threshold: float = attrs.field(default=0.05, converter=float, validator=[non_negative, finite])
    merge_k: int = attrs.field(default=16, validator=[is_int, positive])
    temperature: float = attrs.field(default=1.0, converter=float, validator=[positive, finite])
    diversity_penalty: float = attrs.field(default=0.4, converter=float, validator=[non_negative, finite])
    utility_floor: float | None = attrs.field(default=None, validator=finite)
    candidate_factor: int = attrs.field(default=4, validator=[is_int, positive])
    initial_utility: float = attrs.field(default=0.0, converter=float, validator=finite)
    utility_warmup: bool = attrs.field(default=False, validator=is_bool)
    utilisation_window: int = attrs.field(default=1000, validator=[is_int, positive])
    seed: int | None = attrs.field(default=0)

    @space.validator
    def _check_space(self, attribute: attrs.Attribute, value: str) -> None:
        if value not in SPACES:
            raise ValueError(f"space must be one of {SPACES}, got {value!r}")

    @seed.validator
    def _check_seed(self, attribute: attrs.Attribute, value: int | None) -> None:
        if value is not None:
            is_int(self, attribute, value)

    def to_dict(self) -> dict:
        """A JSON-serialisable dict (the inverse of ``BankConfig(**d)``)."""
        return attrs.asdict(self)
