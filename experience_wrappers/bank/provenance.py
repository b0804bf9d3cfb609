"""Where an entry came from."""

from __future__ import annotations

import enum

__all__ = ["Provenance"]


class Provenance(enum.IntEnum):
    """Origin of a bank entry, stored as a small int.

    >>> Provenance.DEMO.name.lower()
    'demo'
    """

    EXTRACTED = 0
    DEMO = 1
    MERGED = 2
