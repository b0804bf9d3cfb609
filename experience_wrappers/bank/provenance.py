"""Where an entry came from."""

from __future__ import annotations

import enum

__all__ = ["Provenance", "CURATED"]


class Provenance(enum.IntEnum):
    """Origin of a bank entry, stored as a small int.

    >>> Provenance.DEMO.name.lower()
    'demo'
    """

    EXTRACTED = 0
    DEMO = 1
    MERGED = 2


#: Provenances the bank keeps: never refreshed by another provenance's item, never merged with
#: another provenance, evicted only when nothing else is left.
CURATED: tuple[int, ...] = (int(Provenance.DEMO),)
