"""One manager per bank: every wrapper on a bank shares its manager, for spaces of one layout.

:func:`manager_for_bank` builds a bank's manager on first use and hands it to later wrappers;
:func:`resolve_manager` is what a wrapper calls; :func:`same_layout` says whether two spaces
lay observations out alike (what sharing one manager needs).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

from gymnasium import spaces

from ..bank import ExperienceBank
from ..keys import KeyEncoder
from .config import ManagerConfig, move_deprecated
from .layout import layout_of, same_layout
from .manager import ExperienceManager, refuse_service_bank
from .protocol import ExperienceSource

__all__ = ["manager_for_bank", "resolve_manager", "same_layout", "layout_of", "serves", "hold", "let_go",
           "released_if_refused"]


def manager_for_bank(bank: ExperienceBank, observation_space: spaces.Space, action_space: spaces.Space,
                     key_encoder: KeyEncoder | type[KeyEncoder] | None = None, **config: Any) -> ExperienceManager:
    """The manager that serves ``bank``, created on first use, so every wrapper on one bank shares it.

    Later wrappers must have spaces of the same layout (:func:`same_layout`: Box bounds may
    differ, as between the tasks of MT10); the manager keeps the first spaces it was given.
    """
    mgr = bank.manager
    if mgr is None:
        mgr = ExperienceManager(bank, observation_space, action_space, key_encoder=key_encoder,
                                config=ManagerConfig(**config))
        # the wrappers' bank takes the manager's widths now: a user's add of other widths is refused
        # where it is made, not at the next query inside SB3
        bank.fix_dims(**mgr.bank_dims)
        mgr.closes_with_wrappers = True  # built for the wrappers: the last one's close() closes it
        return mgr
    if not serves(mgr, observation_space, action_space):
        raise ValueError(
            "this bank is already served by a manager for spaces of another layout (kind, keys, shapes "
            "or dtypes; Box bounds may differ) "
            f"(observation {mgr.observation_space}, action {mgr.action_space}); got observation "
            f"{observation_space}, action {action_space}. Use one bank per env family."
        )
    if key_encoder is not None and key_encoder is not mgr.key_encoder and key_encoder is not type(mgr.key_encoder):
        raise ValueError("this bank's manager already has a different key_encoder; pass the same object (or the "
                         "class it was built from)")
    if config and not _agrees(mgr.config, config):
        raise ValueError(f"this bank's manager already has another config ({mgr.config}); got {config}")
    return mgr


def _agrees(config: ManagerConfig, asked: dict[str, Any]) -> bool:
    """Whether every setting ``asked`` names (an extractor setting included, in either spelling)
    has its value in ``config``."""
    asked = move_deprecated(asked)  # warns, as building the manager with them would have
    extractor = {**config.extractor, **asked.get("extractor", {})}
    return ManagerConfig(**{**config.to_dict(), **asked, "extractor": extractor}) == config


def resolve_manager(bank: ExperienceBank, observation_space: spaces.Space, action_space: spaces.Space,
                    manager: ExperienceSource | None = None, key_encoder: KeyEncoder | type[KeyEncoder] | None = None,
                    manager_kwargs: dict[str, Any] | None = None) -> ExperienceSource:
    """The manager a wrapper should use: the one given (an :class:`ExperienceManager` or a service's
    ``RemoteManager``, which must serve ``bank``), else the bank's own."""
    if not isinstance(bank, ExperienceBank):
        raise TypeError(f"bank must be an ExperienceBank, got {type(bank).__name__}")
    if manager is None:
        refuse_service_bank(bank)  # (before its manager is asked for: a service's bank has none here)
        return manager_for_bank(bank, observation_space, action_space, key_encoder=key_encoder,
                                **(manager_kwargs or {}))
    if manager.bank is not bank:
        raise ValueError("manager serves another bank than the one given")
    if not serves(manager, observation_space, action_space):
        raise ValueError(f"the manager given serves observation {manager.observation_space}, action "
                         f"{manager.action_space}; this env has observation {observation_space}, action "
                         f"{action_space}: build its manager for these spaces")
    return manager


def serves(manager: Any, observation_space: spaces.Space, action_space: spaces.Space) -> bool:
    """Whether ``manager`` serves spaces of the layout of these (:func:`same_layout`; a manager that
    names no spaces serves any): the rule every wrapper, and a service handle, shares a manager by."""
    obs_space, act_space = getattr(manager, "observation_space", None), getattr(manager, "action_space", None)
    return obs_space is None or act_space is None or (
        same_layout(obs_space, observation_space) and same_layout(act_space, action_space))


def hold(manager: ExperienceSource) -> ExperienceManager | None:
    """Count a wrapper among ``manager``'s holders (:attr:`ExperienceManager.holders`); returns what
    the wrapper gives :func:`let_go` at its ``close()`` (None: a service's manager, not counted here)."""
    if not isinstance(manager, ExperienceManager):
        return None
    manager.holders += 1
    return manager


def let_go(held: ExperienceManager | None) -> None:
    """A wrapper that :func:`hold` counted closed: the last one closes a manager built for the wrappers
    (:meth:`ExperienceManager.let_go`)."""
    if held is not None:
        held.let_go()


@contextlib.contextmanager
def released_if_refused(manager: ExperienceSource) -> Iterator[None]:
    """The rest of a wrapper's construction after its manager was resolved: where it raises (the env's
    space refused, say), a manager built for the wrappers that none holds is closed, so the bank is free
    for the next try (and no learner is left)."""
    try:
        yield
    except BaseException:
        let_go(hold(manager))
        raise
