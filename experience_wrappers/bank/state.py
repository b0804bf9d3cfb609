"""What a bank holds, as one value: the surface persistence saves from and loads into."""

from __future__ import annotations

import attrs
import numpy as np

from .config import BankConfig
from .entries import EntryStore
from .index import HnswIndex

__all__ = ["BankState"]


@attrs.frozen(eq=False)
class BankState:
    """A bank's whole state: config, counters, sampler, entries and index.

    :meth:`ExperienceBank.state() <experience_wrappers.bank.ExperienceBank.state>` returns the
    bank's own objects, not copies (take it under the bank's lock, as ``save`` does);
    :meth:`ExperienceBank.from_state` builds a bank around them.

    Attributes:
        config: the bank's :class:`BankConfig`.
        next_id: the id the next new entry gets.
        tick: how many recorded queries ran (the retrieval clock).
        rng: the sampler of utility and random queries.
        store: the entries (None before the first add).
        index: the HNSW index over their keys (None before the first add).
        save_id: the save this state was loaded from, None if it was not.
        fixed_widths: widths fixed before the first add (the constructor's ``context_dim``), kept
            while the bank is empty: a saved empty bank refuses, once loaded, what it refused before.
    """

    config: BankConfig
    next_id: int
    tick: int
    rng: np.random.Generator
    store: EntryStore | None = None
    index: HnswIndex | None = None
    save_id: str | None = None
    fixed_widths: dict[str, int] = attrs.field(factory=dict)
