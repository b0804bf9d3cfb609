"""Exceptions raised by the library.

Bad arguments raise the built-in :class:`ValueError` (or :class:`TypeError`) with a
message that names the argument and the value received. Problems with files on disk
raise :class:`BankFileError`, the library's own type, so callers can tell "you passed
a bad array" from "this folder is not a bank I can trust".
"""

from __future__ import annotations

__all__ = ["ExperienceError", "BankFileError", "BankStateError"]


class ExperienceError(Exception):
    """Base class of the library's own errors."""


class BankFileError(ExperienceError):
    """A saved bank (or manager state) is missing, damaged, truncated, foreign or newer.

    Loading never runs code from the file: arrays are read with ``allow_pickle=False``
    and metadata is plain JSON, checked before anything is built from it.
    """


class BankStateError(ExperienceError):
    """A bank in memory is not consistent (its entries and its index disagree).

    The bank's operations are transactional, so this should never happen; if it does,
    :meth:`~experience_wrappers.ExperienceBank.save` raises it instead of writing a bank
    that could not be loaded, and the last good save stays as it was.
    """
