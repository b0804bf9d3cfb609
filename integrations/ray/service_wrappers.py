"""The usual experience wrappers, on the service's bank and learner."""

from __future__ import annotations

from typing import Any

from experience_wrappers import ExperienceWrapper

from .remote import RemoteManager
from .remote_bank import RemoteBank

__all__ = ["ServiceExperienceWrapper", "service_vec_env"]


class ServiceExperienceWrapper(ExperienceWrapper):
    """An :class:`~experience_wrappers.ExperienceWrapper` whose ``close()`` hands its episodes to the service.

    Episodes go to the service without waiting; closing waits until the service has them,
    so an env in a subprocess loses none when its process exits.
    """

    def close(self) -> None:
        manager = self.manager
        try:
            if isinstance(manager, RemoteManager):
                manager.close()  # (handed over, not waited for the service's whole backlog)
        finally:
            super().close()


def service_vec_env(venv: Any, bank: RemoteBank, manager: RemoteManager, **kwargs: Any) -> Any:
    """``ExperienceVecEnv(venv, bank, manager=manager, ...)`` whose ``close()`` hands its episodes to the service."""
    from integrations.sb3 import ExperienceVecEnv

    wrapped = ExperienceVecEnv(venv, bank, manager=manager, **kwargs)
    close = wrapped.close

    def close_and_hand_over() -> None:
        try:
            manager.close()
        finally:
            close()

    wrapped.close = close_and_hand_over  # type: ignore[method-assign]
    return wrapped
