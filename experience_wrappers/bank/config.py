"""Configuration of an :class:`~experience_wrappers.bank.ExperienceBank`."""

from __future__ import annotations

import warnings
from typing import Any

import attrs

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
    to_int,
)

__all__ = ["BankConfig", "resolve_config", "warn_if_sparse", "SPACES", "MAX_CAPACITY", "MAX_M", "RECALL_M", "MAX_EF", "MAX_DIM", "MAX_K", "MAX_UTILITY",
           "MIN_TEMPERATURE", "MAX_SEED"]

SPACES = ("l2", "cosine", "ip")

#: most entries a bank may hold (hnswlib labels and sizes stay well inside their C types)
MAX_CAPACITY = 2**31 - 1
#: hnswlib's graph degree: at least 2 (M = 1 breaks its level generator), at most this
MAX_M = 1024
#: the smallest M at which the documented recall (recall@8 >= 0.95 with the default ef, see
#: docs/benchmarks.md) holds on 64-dim keys; a smaller M warns (M 2 gives self-recall@1 of 0.2 to 0.8)
RECALL_M = 8
#: most hnswlib beam width (build or search)
MAX_EF = 2**31 - 1
#: most columns of a key, value or context (a sane bound before any allocation)
MAX_DIM = 65_536
#: most entries one query may ask for per key
MAX_K = 65_536
#: utilities, initial utilities and credited deltas stay within +-MAX_UTILITY, so every
#: utility is finite (an EMA of bounded values is bounded by them)
MAX_UTILITY = 1e12
#: the smallest retrieval temperature (utility / temperature must stay finite)
MIN_TEMPERATURE = 1e-6
#: the largest seed (hnswlib and numpy both take it)
MAX_SEED = 2**63 - 1

_int = [is_int, positive]


@attrs.frozen(kw_only=True)
class BankConfig:
    """Every knob of the bank, validated when the config is built.

    Distances are in hnswlib's units for ``space``: squared Euclidean distance for
    ``"l2"``, ``1 - cosine similarity`` for ``"cosine"`` and ``1 - dot`` for ``"ip"``.
    The default key encoders return unit-norm keys, so with ``"l2"`` a distance of
    0.01 means a cosine similarity of about 0.995. ``dedup_threshold`` and
    ``merge_threshold`` in ``"ip"`` space are squared Euclidean distances between keys
    (near duplicates are near-identical keys; :func:`.merge.dedup_targets`), looked for among
    the task's 16 entries of largest inner product (``search.IP_CANDIDATES``): a near-identical
    entry outside them is not found, and the item is added beside it.

    Attributes:
        capacity: most entries held; beyond it the lowest-utility, then oldest, are evicted.
        space: hnswlib space, one of ``"l2"``, ``"cosine"``, ``"ip"``.
        M: hnswlib graph degree, 2 to 1024.
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
        seed: seed of the bank's sampler and of hnswlib, in ``[0, 2**63 - 1]`` (None: fresh entropy).

    Every field is checked here, with the bound in the message: numbers must be numbers
    (``"0.1"`` is refused, not converted), ints ints, and sizes within the module's ``MAX_*``
    bounds, so a bad value fails at construction and never deep inside hnswlib or numpy.

    >>> BankConfig(capacity=100).capacity
    100
    >>> BankConfig(space="hamming")
    Traceback (most recent call last):
    ...
    ValueError: space must be one of ('l2', 'cosine', 'ip'), got 'hamming'
    >>> BankConfig(M=1)
    Traceback (most recent call last):
    ...
    ValueError: M must be >= 2, got 1
    """

    capacity: int = attrs.field(default=4096, converter=to_int, validator=[*_int, at_most(MAX_CAPACITY)])
    space: str = attrs.field(default="l2")
    M: int = attrs.field(default=16, converter=to_int, validator=[is_int, at_least(2), at_most(MAX_M)])
    ef_construction: int = attrs.field(default=200, converter=to_int, validator=[*_int, at_most(MAX_EF)])
    ef_search: int = attrs.field(default=64, converter=to_int, validator=[*_int, at_most(MAX_EF)])
    dedup_threshold: float = attrs.field(default=0.01, converter=to_float, validator=[is_real, non_negative, finite])
    merge_threshold: float = attrs.field(default=0.05, converter=to_float, validator=[is_real, non_negative, finite])
    merge_k: int = attrs.field(default=16, converter=to_int, validator=[*_int, at_most(MAX_K)])
    temperature: float = attrs.field(default=1.0, converter=to_float,
                                     validator=[is_real, finite, at_least(MIN_TEMPERATURE)])
    diversity_penalty: float = attrs.field(default=0.4, converter=to_float, validator=[is_real, non_negative, finite])
    utility_floor: float | None = attrs.field(default=None, converter=to_float)
    candidate_factor: int = attrs.field(default=4, converter=to_int, validator=[*_int, at_most(MAX_K)])
    initial_utility: float = attrs.field(default=0.0, converter=to_float,
                                         validator=[is_real, finite, at_least(-MAX_UTILITY), at_most(MAX_UTILITY)])
    utility_warmup: bool = attrs.field(default=False, validator=is_bool)
    utilisation_window: int = attrs.field(default=1000, converter=to_int, validator=[*_int, at_most(MAX_SEED)])
    seed: int | None = attrs.field(default=0, converter=to_int)

    @space.validator
    def _check_space(self, attribute: attrs.Attribute, value: str) -> None:
        if value not in SPACES:
            raise ValueError(f"space must be one of {SPACES}, got {value!r}")

    @seed.validator
    def _check_seed(self, attribute: attrs.Attribute, value: int | None) -> None:
        if value is not None:
            is_int(self, attribute, value)
            if not 0 <= value <= MAX_SEED:
                raise ValueError(f"seed must be None or an int in [0, 2**63 - 1], got {value!r}")

    @utility_floor.validator
    def _check_floor(self, attribute: attrs.Attribute, value: float | None) -> None:
        if value is not None:
            is_real(self, attribute, value)
            finite(self, attribute, value)

    def to_dict(self) -> dict:
        """A JSON-serialisable dict (the inverse of ``BankConfig(**d)``)."""
        return attrs.asdict(self)


def resolve_config(config: BankConfig | None, overrides: dict[str, Any]) -> BankConfig:
    """``config``, or a :class:`BankConfig` built from keyword ``overrides`` (not both).

    >>> resolve_config(None, {"capacity": 10}).capacity
    10
    """
    if config is None:
        config = BankConfig(**overrides)
    elif overrides:
        raise TypeError(f"give either a config or keyword overrides, not both: {sorted(overrides)}")
    if not isinstance(config, BankConfig):
        raise TypeError(f"config must be a BankConfig, got {type(config).__name__}")
    return config


def warn_if_sparse(M: int) -> None:
    """Warn (``UserWarning``, at the bank's constructor's caller) when ``M`` is below :data:`RECALL_M`."""
    if M < RECALL_M:
        warnings.warn(f"ExperienceBank(M={M}): M is below {RECALL_M}, and an HNSW graph this sparse "
                      "misses neighbours (with M=2 and the default ef, a key finds its own entry only 20-80% of "
                      f"the time on 8- to 64-dim keys), short of the documented recall (recall@8 >= 0.95, which "
                      f"needs M >= {RECALL_M}; the default is 16). Use M >= {RECALL_M}, or raise ef_search and "
                      "ef_construction", UserWarning, stacklevel=3)
