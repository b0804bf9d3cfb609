"""Whether a bank's entries, id map, index and task counts agree (checked before every save)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ..errors import BankStateError

if TYPE_CHECKING:
    from .core import BankCore

__all__ = ["check_consistency"]


def check_consistency(core: BankCore) -> None:
    """What :meth:`ExperienceBank.check_consistency` checks; raises :class:`BankStateError`."""
    store, index = core.store, core.index
    if store is None:
        if index is not None or core.task_counts:
            raise BankStateError("the bank has an index or task counts but no entries store")
        return
    problems = []
    if index is None:
        problems.append("the index is missing (a rollback could not rebuild it)")
    elif index.live != store.size:
        problems.append(f"{store.size} entries but {index.live} live index elements")
    elif index.live + index.deleted != index.element_count:
        problems.append(f"the index holds {index.element_count} elements, its counters say "
                        f"{index.live} live + {index.deleted} deleted")
    if store.id_count != store.size:
        problems.append(f"{store.size} entries but {store.id_count} ids in the id map")
    elif not np.array_equal(store.find(store.view("id")), np.arange(store.size)):
        problems.append("the sorted id lookup disagrees with the entries")
    ids = store.view("id")
    if len(np.unique(ids)) != store.size or (store.size and (ids.min() < 0 or ids.max() >= core.next_id)):
        problems.append("entry ids are duplicated or out of range")
    if sum(core.task_counts.values()) != store.size:
        problems.append(f"task counts sum to {sum(core.task_counts.values())}, not {store.size}")
    if not np.all(np.isfinite(store.view("utility"))):
        problems.append("some utilities are NaN or inf")
    if problems:
        raise BankStateError("the experience bank is inconsistent, so it is not saved (the folder is "
                             "left as it was): " + "; ".join(problems))
