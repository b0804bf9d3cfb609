"""The local stand-in of the experience service's bank.

:class:`RemoteBank` is an :class:`~experience_wrappers.ExperienceBank` (so every wrapper
accepts it) whose methods are calls to the service.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from experience_wrappers import BankConfig, ExperienceBank
from experience_wrappers.bank import BankReplica
from experience_wrappers.bank.results import AddResult, MergeResult, QueryResult

if TYPE_CHECKING:
    from .service import ExperienceService

__all__ = ["RemoteBank"]


class RemoteBank(ExperienceBank):
    """The service's bank, seen as an :class:`~experience_wrappers.ExperienceBank`.

    Pass it wherever a bank is expected, with the service's learner as ``manager``
    (``ExperienceWrapper(env, service.bank, manager=service.manager(...))``, or simply
    ``service.wrap(env)``). Nothing is stored locally; every method is one call.
    ``ExperienceBank.load`` is not available on it (use ``service.load``).
    """

    #: its manager is the service's learner (``service.manager``), never one built here
    served_remotely = True

    def __init__(self, service: ExperienceService) -> None:  # no bank of its own: no super().__init__
        self.service = service

    def __reduce__(self) -> tuple[Any, tuple[Any, ...]]:
        return (_bank_of, (self.service,))

    def __repr__(self) -> str:
        return f"RemoteBank(service={self.service.name!r})"

    @property
    def config(self) -> BankConfig:  # type: ignore[override]  # read-only here: the service's bank holds the config
        return self.service.config

    @property
    def dims(self) -> dict[str, int] | None:
        return self.service.dims

    def __len__(self) -> int:
        return len(self.service)

    def __contains__(self, entry_id: object) -> bool:
        return entry_id in self.service

    def add(self, keys: Any, values: Any, **kwargs: Any) -> AddResult:  # type: ignore[override]
        return self.service.add(keys, values, **kwargs)

    def query(self, keys: Any, k: int = 4, **kwargs: Any) -> QueryResult:  # type: ignore[override]
        return self.service.query(keys, k, **kwargs)

    def update(self, ids: Any, deltas: Any, decay: float) -> np.ndarray:
        return self.service.update(ids, deltas, decay)

    def get(self, ids: Any) -> dict[str, np.ndarray]:
        return self.service.get(ids)

    def entries(self) -> dict[str, np.ndarray]:
        return self.service.entries()

    def stats(self) -> dict[str, float]:
        return self.service.stats()

    def merge(self, threshold: float | None = None) -> MergeResult:
        return self.service.merge(threshold)

    def evict(self, n: int) -> np.ndarray:
        return self.service.evict(n)

    def remove(self, ids: Any) -> int:
        return self.service.remove(ids)

    def save(self, path: str | Path, *, overwrite: bool = False) -> Path:
        return self.service.save(path, overwrite=overwrite)

    @property
    def version(self) -> int:
        return self.service.version

    def replica(self) -> BankReplica:
        """A read replica of the service's bank, in this process."""
        return self.service.replica()

    def record_retrievals(self, ids: Any) -> int:
        return self.service.record_retrievals(ids)

    @classmethod
    def load(cls, path: str | Path) -> ExperienceBank:
        raise TypeError("RemoteBank.load is not available: load a folder into the service with "
                        "service.load(path), or into this process with ExperienceBank.load(path)")


def _bank_of(service: ExperienceService) -> RemoteBank:
    return service.bank
