"""Configuration of an :class:`~experience_wrappers.manager.ExperienceManager`."""

from __future__ import annotations

import inspect
import os
import warnings
from collections.abc import Callable, Mapping
from typing import Any, ClassVar

import attrs

from ..bank.config import MAX_DIM, MAX_SEED
from ..extractor.config import ExtractorConfig
from ..validators import (
    at_least,
    at_most,
    check_int,
    finite,
    is_bool,
    is_int,
    is_real,
    non_negative,
    positive,
    to_float,
    to_int,
)
from .entry_layout import EntryLayout

__all__ = ["ManagerConfig", "MOVED_TO_EXTRACTOR", "REMOVED", "move_deprecated"]

#: most steps a segment reads, hidden units per direction (sane bounds before any allocation)
MAX_LEN, MAX_HIDDEN = 100_000, 8192

#: settings of removed parts -> why (``ManagerConfig(name=...)`` raises it; a saved one is dropped on load)
REMOVED = {
    "prior_horizon": "it belonged to the action prior, which hurt where it was measured (docs/what_to_use.md): "
                     "entries carry no action prior",
    "read_replica": "the wrappers' retrievals reading a copy of the bank gained no speed and cost learning "
                    "(MiniHack-Room-5x5, SB3's default policy: 0.68x PPO's steps/s with it, 0.79x without; the "
                    "keyroom-20 method: -0.06 [-0.08, -0.03] final success, 3 seeds; docs/benchmarks.md): "
                    "retrievals read the bank",
    "replica_swap": "it set when the removed read replica (read_replica) was swapped: retrievals read the bank",
}

_int = [is_int, positive]
_unit = [is_real, finite, at_least(0.0), at_most(1.0)]

#: the manager's own bounds on extractor settings, checked before :class:`ExtractorConfig`'s:
#: sizes within sane bounds before any allocation, a learning rate that is a number (not
#: ``"3e-4"``), a seed that ``torch.Generator().manual_seed`` takes
_BOUNDS: dict[str, list[Callable[[Any, attrs.Attribute, Any], None]]] = {
    "exp_dim": [*_int, at_most(MAX_DIM)],
    "hidden": [*_int, at_most(MAX_HIDDEN)],
    "max_len": [*_int, at_most(MAX_LEN)],
    "lr": [is_real, finite, positive],
    "seed": [is_int, at_least(0), at_most(MAX_SEED)],
}
#: the extractor settings that were the manager's own fields (``ManagerConfig(exp_dim=...)``)
#: before ``extractor`` held every one; those keywords still work, with a DeprecationWarning
MOVED_TO_EXTRACTOR = tuple(_BOUNDS)
#: the extractor's dims, which the manager takes from the spaces
_DERIVED = ("state_dim", "action_dim", "discrete_actions")
#: every setting ``extractor`` may hold, with :class:`ExtractorConfig`'s default
_DEFAULTS = {f.name: f.default for f in attrs.fields(ExtractorConfig) if f.name not in _DERIVED}
#: the library's own packages: a deprecation warning points at the first frame outside them
_LIBRARY = tuple(os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(__file__))), pkg) + os.sep
                 for pkg in ("experience_wrappers", "integrations"))


def move_deprecated(kwargs: Mapping[str, Any], *, warn: bool = True) -> dict[str, Any]:
    """``ManagerConfig`` keywords with the deprecated ones (:data:`MOVED_TO_EXTRACTOR`) moved into ``extractor``.

    ``warn``: say so in a ``DeprecationWarning`` that names the new spelling, pointed at the
    first caller outside this library (whether it built the config or passed ``manager_kwargs``
    to a wrapper). False: a dict read from a saved file, converted silently (a saved folder or
    run is not the caller's code, and it says what an older version wrote).

    Raises:
        ValueError: a setting given both ways with different values (``lr=1e-3`` and
            ``extractor={'lr': 3e-4}``).

    >>> move_deprecated({"mode": "sync", "lr": 1e-3, "extractor": {"clip": 0.2}}, warn=False)
    {'mode': 'sync', 'extractor': {'clip': 0.2, 'lr': 0.001}}
    """
    old = {name: kwargs[name] for name in MOVED_TO_EXTRACTOR if name in kwargs}
    if not old:
        return dict(kwargs)
    extractor = dict(kwargs.get("extractor", {}))
    for name, value in old.items():
        if name in extractor and extractor[name] != value:
            raise ValueError(f"{name} is given twice, as {name}={value!r} and as extractor={{{name!r}: "
                             f"{extractor[name]!r}}}: keep extractor={{{name!r}: ...}} alone "
                             f"({name}=... is deprecated)")
    if warn:
        keywords = ", ".join(f"{name}=..." for name in old)
        warnings.warn(f"ManagerConfig({keywords}) is deprecated: pass extractor={old!r} instead "
                      "(ManagerConfig.extractor holds every extractor setting)",
                      DeprecationWarning, stacklevel=_caller_outside_library())
    return {**{k: v for k, v in kwargs.items() if k not in old}, "extractor": {**extractor, **old}}


def _caller_outside_library() -> int:
    """The ``stacklevel``, for a ``warnings.warn`` in the function that calls this one, of the
    first frame outside :data:`_LIBRARY` (the user's code, however many library calls lie between)."""
    here = inspect.currentframe()
    frame, level = (here.f_back if here is not None else None), 1
    if frame is None:  # (an interpreter without frames: the caller's caller)
        return 2
    while frame.f_back is not None and frame.f_code.co_filename.startswith(_LIBRARY):
        frame, level = frame.f_back, level + 1
    return level


def _settings(value: Mapping[str, Any]) -> dict[str, Any]:
    """Converter of ``extractor``: a plain dict, numpy ints as ints, ``lr`` a float when it is a number (as
    the manager's own ``lr`` field was; a string is left for the check to refuse)."""
    settings = {name: to_int(v) for name, v in dict(value).items()}  # (a numpy int is an int)
    if "lr" in settings:
        settings["lr"] = to_float(settings["lr"])
    return settings


def _effective(settings: dict[str, Any]) -> dict[str, Any]:
    """Every extractor setting, ``settings``' value else :class:`ExtractorConfig`'s default: what
    ``extractor`` compares by, so that ``extractor={"exp_dim": 16}`` (the default) equals ``{}``."""
    return {**_DEFAULTS, **settings}


@attrs.frozen(kw_only=True, init=False)
class ManagerConfig:
    """How episodes become bank entries and how the extractor learns from their outcomes.

    Attributes:
        mode: ``"auto"`` (the default: ``"process"`` where a learner process can start,
            else ``"async"``; :func:`~experience_wrappers.manager.backend.resolve_mode`),
            ``"process"`` (a learner process distils and trains; credit stays in ``submit``,
            the bank in the actor's process: :mod:`experience_wrappers.manager.process`),
            ``"async"`` (a background thread distils and trains; the actor never waits for it,
            but shares the GIL with it) or ``"sync"`` (everything happens inside ``submit``:
            deterministic, for tests).
        segment_every: a new entry starts every this many steps of an episode
            (0: one entry per episode, at its start).
        batch_size: credited samples per extractor update (the paper: 64).
        ssl_batch_size: fresh segments per self-supervised update (0: no self-supervised step;
            run scope's memory sets it: with the step, a hidden-goal room's trials follow a run's
            first success 0.89 against 0.94 without, -0.05 [-0.09, -0.02], ``trials-darkroom``, 5 seeds).
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
        handover_every: ``process`` mode: credited episodes go to the learner process this
            many at a time (one message, and their entries come back as one bank write),
            or earlier when the actor polls (``poll()``, which the callback calls at every
            rollout's end; ``stats()``, ``flush()``, ``save()``, merges). 1: each episode at
            once. Batching saves the actor a message, a poll and a bank write per episode.
        extractor: every extractor setting, by :class:`~experience_wrappers.extractor.ExtractorConfig`
            field, with its meaning and default there: ``exp_dim`` (the bank's value width),
            ``hidden``, ``max_len`` (most steps read per segment; longer ones are subsampled),
            ``lr``, ``seed`` (also seeds the manager's sampling, in ``[0, 2**63 - 1]``),
            ``clip``, ``utility_coef``, ``diversity_coef``, ``ssl_coef``, ``init_log_std``,
            ``min_log_std``, ``max_grad_norm``. The dims (``state_dim``, ``action_dim``,
            ``discrete_actions``) come from the spaces. ``config.exp_dim``, ``.hidden``,
            ``.max_len``, ``.lr`` and ``.seed`` read the value in effect.
        limit_actor_threads: ``process`` mode: while the learner process runs, this process's
            torch threads and numpy's BLAS threads are lowered, where they and the learner's would
            outnumber the cores, to the cores left (2 cores: 1 thread), and restored when it stops
            (:mod:`~experience_wrappers.manager.threads`: on 2 cores the two-line form ran 1.5x
            faster so). False leaves both settings alone.
        layout: what an entry's value holds. None (the default): the extractor's vector alone
            (task scope). ``{"horizon": H, "step_reward": bool}``: run scope's entries, one per
            step (``segment_every`` must be 1), each holding its key, action, trial return, steps
            to go divided by ``H`` (and with ``step_reward`` its reward) before the vector
            (:class:`~experience_wrappers.manager.entry_layout.EntryLayout`; :meth:`entry_layout`).

    Deprecated: ``exp_dim``, ``hidden``, ``max_len``, ``lr`` and ``seed`` as keywords
    (``ManagerConfig(exp_dim=32)``) still work, with a ``DeprecationWarning``, and land in
    ``extractor``; one given both ways with different values is a ``ValueError``.
    :meth:`from_dict` reads a dict saved by an older version (those names at the top level)
    silently.

    Every field is checked here: numbers must be numbers (``"3e-4"`` is refused, not
    converted), ints ints, sizes within sane bounds, so a bad value fails at construction
    and not inside torch.

    >>> ManagerConfig(extractor={"exp_dim": 32, "clip": 0.2}).exp_dim
    32
    >>> ManagerConfig().lr
    0.0003
    >>> ManagerConfig(extractor={"lr": "3e-4"})
    Traceback (most recent call last):
    ...
    TypeError: lr must be a number, got '3e-4'
    """

    __signature__: ClassVar[inspect.Signature]  # the fields', for help() and the API page

    mode: str = attrs.field(default="auto", validator=attrs.validators.in_(("auto", "sync", "async", "process")))
    segment_every: int = attrs.field(default=8, converter=to_int, validator=[is_int, non_negative, at_most(MAX_LEN)])
    batch_size: int = attrs.field(default=64, converter=to_int, validator=[*_int, at_most(MAX_LEN)])
    ssl_batch_size: int = attrs.field(default=64, converter=to_int, validator=[is_int, non_negative, at_most(MAX_LEN)])
    extractor_reward: str = attrs.field(default="delta", validator=attrs.validators.in_(("delta", "direct")))
    baseline_window: int = attrs.field(default=100, converter=to_int, validator=[*_int, at_most(MAX_LEN)])
    skip_below: float | None = attrs.field(default=None, converter=to_float)
    decay_start: float = attrs.field(default=0.99, converter=to_float, validator=_unit)
    decay_end: float = attrs.field(default=0.95, converter=to_float, validator=_unit)
    extractor_per_task: bool = attrs.field(default=False, validator=is_bool)
    train_extractor: bool = attrs.field(default=True, validator=is_bool)
    handover_every: int = attrs.field(default=16, converter=to_int, validator=[*_int, at_most(MAX_LEN)])
    extractor: dict = attrs.field(factory=dict, converter=_settings, eq=_effective)
    limit_actor_threads: bool = attrs.field(default=True, validator=is_bool)
    layout: dict | None = attrs.field(default=None)

    def __init__(self, **kwargs: Any) -> None:
        """Every field by keyword; the deprecated extractor keywords go into ``extractor``
        (:func:`move_deprecated`), with a ``DeprecationWarning``."""
        fields = [f.name for f in attrs.fields(type(self))]
        for name in sorted(set(kwargs) & set(REMOVED)):
            raise TypeError(f"ManagerConfig({name}=...) was removed: {REMOVED[name]}")
        unknown = sorted(set(kwargs) - set(fields) - set(MOVED_TO_EXTRACTOR))
        if unknown:
            raise TypeError(f"ManagerConfig() got an unexpected keyword argument {unknown[0]!r}; "
                            f"its fields: {fields}")
        self.__attrs_init__(**move_deprecated(kwargs))

    @extractor.validator
    def _check_extractor(self, attribute: attrs.Attribute, value: dict) -> None:
        for name in value:
            if name in _DERIVED:
                raise ValueError(f"extractor={{{name!r}: ...}}: the manager sets {name} from the spaces "
                                 "(key encoder and action space); leave it out")
            if name not in _DEFAULTS:
                raise ValueError(f"extractor={{{name!r}: ...}}: not an extractor setting; "
                                 f"settable: {sorted(_DEFAULTS)}")
        for name, checks in _BOUNDS.items():
            if name in value:
                for check in checks:
                    check(self, attribute.evolve(name=name), value[name])
        ExtractorConfig(state_dim=1, action_dim=1, **value)  # each value checked now, not inside torch

    @layout.validator
    def _check_layout(self, attribute: attrs.Attribute, value: dict | None) -> None:
        if value is None:
            return
        if not isinstance(value, Mapping) or set(value) - {"horizon", "step_reward"} or "horizon" not in value:
            raise ValueError(f'layout must be None or {{"horizon": int, "step_reward": bool}}, got {value!r}')
        if self.segment_every != 1:
            raise ValueError(f"layout writes one entry per step: segment_every must be 1, got {self.segment_every}")
        check_int("layout['horizon']", value["horizon"], minimum=1, maximum=MAX_LEN, numpy=True, type_error=TypeError)
        self.entry_layout(1, 1)  # step_reward checked now

    def entry_layout(self, key_dim: int, action_dim: int) -> EntryLayout | None:
        """The :class:`~experience_wrappers.manager.entry_layout.EntryLayout` of :attr:`layout` for
        these widths (the vector ``exp_dim`` wide), or None for task scope's entries."""
        if self.layout is None:
            return None
        step_reward = self.layout.get("step_reward", False)
        is_bool(self, attrs.fields(type(self)).layout.evolve(name="layout['step_reward']"), step_reward)
        return EntryLayout(key_dim, action_dim, self.exp_dim, self.layout["horizon"], step_reward=step_reward)

    @skip_below.validator
    def _check_skip_below(self, attribute: attrs.Attribute, value: float | None) -> None:
        if value is not None:
            is_real(self, attribute, value)
            finite(self, attribute, value)

    def _setting(self, name: str) -> Any:
        """The extractor setting ``name`` in effect: ``extractor``'s, else ExtractorConfig's default."""
        return self.extractor.get(name, _DEFAULTS[name])

    @property
    def exp_dim(self) -> int:
        """Length of an experience vector (the bank's value): ``extractor["exp_dim"]`` in effect."""
        return self._setting("exp_dim")

    @property
    def hidden(self) -> int:
        """Extractor LSTM size per direction: ``extractor["hidden"]`` in effect."""
        return self._setting("hidden")

    @property
    def max_len(self) -> int:
        """Most steps the extractor reads per segment: ``extractor["max_len"]`` in effect."""
        return self._setting("max_len")

    @property
    def lr(self) -> float:
        """Extractor learning rate: ``extractor["lr"]`` in effect."""
        return self._setting("lr")

    @property
    def seed(self) -> int:
        """Seed of the extractor's weights and of the manager's sampling: ``extractor["seed"]`` in effect."""
        return self._setting("seed")

    def to_dict(self) -> dict:
        """A JSON-serialisable dict (the inverse of :meth:`from_dict`)."""
        return attrs.asdict(self)

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> ManagerConfig:
        """The config a :meth:`to_dict` dict describes, from this version or an older one.

        A dict saved before ``extractor`` held every extractor setting (``exp_dim``, ``hidden``,
        ``max_len``, ``lr``, ``seed`` at its top level) is converted silently: a saved file is
        not the caller's code, so it raises no ``DeprecationWarning``; a saved setting of a removed
        part (:data:`REMOVED`) is dropped.

        >>> ManagerConfig.from_dict({"mode": "sync", "exp_dim": 32}) == ManagerConfig(mode="sync", extractor={"exp_dim": 32})
        True
        """
        return cls(**move_deprecated({k: v for k, v in d.items() if k not in REMOVED}, warn=False))


def _public_signature() -> inspect.Signature:
    """``ManagerConfig``'s fields as its signature (its ``__init__`` takes ``**kwargs``)."""
    sig = inspect.signature(ManagerConfig.__attrs_init__)
    return sig.replace(parameters=list(sig.parameters.values())[1:])  # without self


ManagerConfig.__signature__ = _public_signature()
