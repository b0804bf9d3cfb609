"""``ExperienceOptions``: the settings shared by ``ExperienceWrapper`` and ``ExperienceVecEnv``, checked once."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

import attrs
from gymnasium import spaces

from ..bank import ExperienceBank
from ..bank.config import MAX_K
from ..keys import KeyEncoder
from ..manager import ExperienceSource, resolve_manager
from ..validators import check_int, integral, is_bool, to_int

__all__ = ["ExperienceOptions", "TaskIdSource", "REMOVED_OPTIONS", "check_task_id", "TASK_ID_RANGE"]

TaskIdSource = int | Callable[[Any, dict], int]

QUERY_MODES = ("utility", "knn", "random")

#: options of removed parts (measured to tie or hurt: ``docs/what_to_use.md``), and the value each
#: had when off; a saved setting at that value still loads (it changed nothing), at the top level or
#: inside the removed ``experimental=`` dict, which held some of them
REMOVED_OPTIONS: dict[str, object] = {"action_prior": False, "prior_source": "nearest", "prior_k": 1,
                                      "prior_max_distance": 0.5, "value_baseline": False}

_PRIOR = ("was removed with the action prior, which hurt where it was measured (KeyRoom-S5 from 20 "
          "demonstrations: 0.74 sampled and 0.46 nearest, against the method's 0.92; docs/what_to_use.md); "
          "the observation channel and self-imitation carry retrieved experience instead")
_WHY = {"value_baseline": "was removed: the critic's V(s0) as a guided episode's baseline was no closer to the "
                          "paired baseline than the task's last 100 free episodes (Room-Monster r 0.35 against "
                          "0.46, Room-Ultimate 0.27 against 0.28; docs/what_to_use.md); guided episodes are "
                          "credited against the task's recent free episodes, or paired (paired=True)"}


def _removed(name: str, label: str | None = None) -> TypeError:
    return TypeError(f"{label or name} {_WHY.get(name, _PRIOR)}")


def _without_removed(settings: dict[str, Any], experimental: bool = False) -> dict[str, Any]:
    """``settings`` without the removed options set to their old "off" (an older save); one set
    otherwise is a ``TypeError`` that says why it went (``experimental``: they sat in ``experimental=``)."""
    for name, off in REMOVED_OPTIONS.items():
        if name in settings:
            if settings[name] != off or type(settings[name]) is not type(off):
                raise _removed(name, f"experimental[{name!r}]" if experimental else None)
            settings = {key: v for key, v in settings.items() if key != name}
    return settings


def _k(instance: object, attribute: attrs.Attribute, value: object) -> None:
    check_int("k", value, minimum=1, maximum=MAX_K)


def _retrieve_every(instance: object, attribute: attrs.Attribute, value: object) -> None:
    check_int("retrieve_every", value, minimum=0)


#: the task ids a bank stores (int64)
TASK_ID_RANGE = (-(2 ** 63), 2 ** 63 - 1)


def check_task_id(value: object, source: str = "task_id") -> int:
    """A task id as the bank stores it: an int (a numpy int passes) within int64, named by ``source``.

    >>> check_task_id(2 ** 70)
    Traceback (most recent call last):
    ...
    ValueError: task_id must be an int within int64 (the bank's task column), got 1180591620717411303424
    """
    if not integral(value, numpy=True):
        raise ValueError(f"{source} must be an int, got {value!r}")
    if not TASK_ID_RANGE[0] <= int(value) <= TASK_ID_RANGE[1]:  # type: ignore[call-overload]
        raise ValueError(f"{source} must be an int within int64 (the bank's task column), got {value!r}")
    return int(value)  # type: ignore[call-overload]


def _task_id(instance: object, attribute: attrs.Attribute, value: object) -> None:
    if callable(value):
        try:  # (one that cannot take (obs, info) is said here, not as a TypeError at the first reset)
            inspect.signature(value).bind(None, None)
        except TypeError as exc:
            raise TypeError(f"task_id's function is called as fn(obs, info) at each reset; {value!r} cannot take "
                            f"two arguments ({exc})") from None
        except ValueError:  # (no signature to read: a builtin; called as given)
            pass
        return
    if not integral(value, numpy=True):
        raise ValueError(f"task_id must be an int or a callable (obs, info) -> int, got {value!r}")
    check_task_id(value)


def _optional_bool(instance: object, attribute: attrs.Attribute, value: object) -> None:
    if value is not None:
        is_bool(instance, attribute, value, hint=" or None")


def _seed(instance: object, attribute: attrs.Attribute, value: object) -> None:
    check_int("seed", value, minimum=0, numpy=True, optional=True, type_error=TypeError)


def _query_mode(instance: object, attribute: attrs.Attribute, value: object) -> None:
    if value not in QUERY_MODES:
        raise ValueError(f"query_mode must be 'utility', 'knn' or 'random', got {value!r}")


@attrs.frozen(kw_only=True)
class ExperienceOptions:
    """What an experience wrapper shows and how it retrieves; the keyword arguments of
    :class:`~experience_wrappers.ExperienceWrapper` and :class:`~integrations.sb3.ExperienceVecEnv`.

    Every field is checked here, once, when the options are built (a ``ValueError`` names
    the field and the value; a value of the wrong type, such as ``learn="no"``, is a ``TypeError``). Pass the fields as keywords to a wrapper, or build the
    options once and pass ``options=`` to several wrappers (keywords given with it
    override its fields).

    Args:
        k: entries shown per step.
        retrieve_every: retrieve again every this many steps (0: only at reset).
        key_encoder: frozen key encoder of the (unwrapped) observations, for a new manager (or its
            class, built as ``cls(observation_space)``).
        task_id: fixed task id, or ``fn(obs, info) -> int`` evaluated at each reset.
        query_mode: ``"utility"`` (default), ``"knn"`` or ``"random"`` (ablation): the
            observation channel's query.
        filter_by_task: retrieve only entries of the episode's task.
        learn: hand episodes to the manager and count retrievals. None (the default): yes,
            unless another env trains this bank under :class:`~integrations.sb3.CRLCallback`
            (then this one is an evaluation env and learns nothing); True or False: always or never
            (anything else, ``"no"`` included, is a ``TypeError``).
        manager: an existing manager of this bank (an :class:`~experience_wrappers.ExperienceManager`
            or a service's ``RemoteManager``: an :class:`~experience_wrappers.manager.ExperienceSource`).
        manager_kwargs: :class:`~experience_wrappers.manager.ManagerConfig` fields for a new manager.
        seed: seed of the guided / free draws (an int >= 0, or None).
        paired: pair credit by replayed task instances (the paper's groups): every env must
            sit above a :class:`~experience_wrappers.wrappers.ReplayInstances` (build them
            with :func:`~experience_wrappers.wrappers.paired_env_fns`); member ``j`` of a group
            is guided on its ``n``-th episode when ``(j + n) % size < guided_members(ratio,
            size)`` (the guided ratio rounded per group, at least one guided and one free),
            and each guided episode is credited against the free episodes of its instance
            (:class:`~experience_wrappers.credit.PairedCredit`), by the steps each entry was
            shown. False (the default): a random draw per episode, credited against the
            task's recent free episodes. An env that does not replay instances (no
            ``ReplayInstances`` below it) is credited so too, said once in a ``UserWarning``.

    >>> ExperienceOptions(k=2, query_mode="knn").k
    2
    >>> ExperienceOptions.of(ExperienceOptions(k=2), retrieve_every=0).retrieve_every
    0
    >>> ExperienceOptions(k=0)
    Traceback (most recent call last):
    ...
    ValueError: k must be an int in [1, 65536], got 0
    >>> ExperienceOptions.of(experience_input="compact")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    TypeError: experience_input='compact' moved off the main path (it tied the full input): wrap the env ...
    >>> ExperienceOptions.of(experimental={"value_baseline": True})  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    TypeError: experimental['value_baseline'] was removed: the critic's V(s0) as a guided episode's baseline ...
    >>> ExperienceOptions.of(action_prior=True)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    TypeError: action_prior was removed with the action prior, which hurt where it was measured ...
    """

    k: int = attrs.field(default=4, converter=to_int, validator=_k)
    retrieve_every: int = attrs.field(default=8, converter=to_int, validator=_retrieve_every)
    key_encoder: KeyEncoder | type[KeyEncoder] | None = None
    task_id: TaskIdSource = attrs.field(default=0, converter=to_int, validator=_task_id)
    query_mode: str = attrs.field(default="utility", validator=_query_mode)
    filter_by_task: bool = attrs.field(default=True, validator=is_bool)
    learn: bool | None = attrs.field(default=None, validator=_optional_bool)
    manager: ExperienceSource | None = None
    manager_kwargs: dict[str, Any] | None = None
    seed: int | None = attrs.field(default=None, converter=to_int, validator=_seed)
    paired: bool = attrs.field(default=False, validator=is_bool)

    @classmethod
    def of(cls, options: ExperienceOptions | None = None, /, **kwargs: Any) -> ExperienceOptions:
        """``options`` with the keywords ``kwargs`` applied over it (over the defaults when None).

        Raises:
            TypeError: ``options`` is not an ``ExperienceOptions``, or a keyword is not one of its fields.
        """
        if options is not None and not isinstance(options, cls):
            raise TypeError(f"options must be an ExperienceOptions, got {type(options).__name__}")
        kwargs = _without_removed(kwargs)
        if "experimental" in kwargs:  # where the removed parts' options lived: an older save's "off" loads
            kwargs = dict(kwargs)
            experimental = kwargs.pop("experimental")
            if experimental is not None and not isinstance(experimental, dict):
                raise TypeError(f"experimental= was removed with the parts it held (none is left on the wrappers), "
                                f"got {experimental!r}")
            leftover = _without_removed(dict(experimental or {}), experimental=True) if experimental else {}
            if leftover:
                raise TypeError(f"unexpected experimental option(s) {sorted(leftover)}: experimental= was removed "
                                "with the parts it held")
        if "experience_input" in kwargs:  # the compact input moved to experience_wrappers.experimental
            kwargs = dict(kwargs)
            if kwargs.pop("experience_input") != "full":  # "full" (an older save's default) is what the wrappers show
                raise TypeError("experience_input='compact' moved off the main path (it tied the full input): wrap the "
                                "env in experience_wrappers.experimental.CompactExperience (an ExperienceWrapper) or "
                                "integrations.sb3.experimental.CompactExperienceVecEnv (an ExperienceVecEnv)")
        unknown = sorted(set(kwargs) - set(attrs.fields_dict(cls)))
        if unknown:
            raise TypeError(f"unexpected keyword argument(s) {unknown}; the experience options are "
                            f"{list(attrs.fields_dict(cls))}")
        return cls(**kwargs) if options is None else attrs.evolve(options, **kwargs)

    def resolve_manager(self, bank: ExperienceBank, observation_space: spaces.Space,
                        action_space: spaces.Space) -> ExperienceSource:
        """The manager that receives this wrapper's episodes: :attr:`manager` (which must serve
        ``bank``), else the bank's own, created on first use from :attr:`key_encoder` and
        :attr:`manager_kwargs`."""
        return resolve_manager(bank, observation_space, action_space, self.manager, self.key_encoder,
                               self.manager_kwargs)
