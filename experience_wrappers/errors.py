"""Exceptions raised by the library.

Bad arguments raise the built-in :class:`ValueError` (or :class:`TypeError`) with a
message that names the argument and the value received. Problems with files on disk
raise a subclass of :class:`ExperienceFileError`, one per kind of file
(:class:`BankFileError`, :class:`ExtractorFileError`, :class:`ManagerFileError`,
:class:`DemonstrationFileError`, :class:`RunFileError`), so callers can tell "you passed a bad array" from
"this folder is not a bank I can trust", and which file it was.
"""

from __future__ import annotations

__all__ = ["ExperienceError", "ExperienceFileError", "BankFileError", "ExtractorFileError", "ManagerFileError",
           "DemonstrationFileError", "RunFileError", "BankStateError"]


class ExperienceError(Exception):
    """Base class of the library's own errors."""


class ExperienceFileError(ExperienceError):
    """A file or folder written by this library is missing, damaged, truncated, foreign or newer.

    Loading never runs code from the file: arrays are read with ``allow_pickle=False``
    and metadata is plain JSON, checked before anything is built from it. Catch this
    base class for any of the library's files; each kind of file has its own subclass.
    """

    #: what kind of file, for messages ("cannot load <what> from ...")
    what = "saved file"


class BankFileError(ExperienceFileError):
    """A saved experience bank folder cannot be trusted (or a folder refuses a bank save)."""

    what = "experience bank"


class ExtractorFileError(ExperienceFileError):
    """A saved extractor (trainer) file cannot be trusted."""

    what = "extractor"


class ManagerFileError(ExperienceFileError):
    """A saved manager state folder cannot be trusted (its bank part raises :class:`BankFileError`)."""

    what = "manager state"


class DemonstrationFileError(ExperienceFileError):
    """A demonstrations file cannot be trusted."""

    what = "demonstrations"


class RunFileError(ExperienceFileError):
    """A saved run folder (``save_crl``: model, experience, replay) cannot be trusted, or a
    folder refuses a run save."""

    what = "run"


class BankStateError(ExperienceError):
    """A bank in memory is not consistent (its entries and its index disagree).

    The bank's operations are transactional, so this should never happen; if it does,
    :meth:`~experience_wrappers.ExperienceBank.save` raises it instead of writing a bank
    that could not be loaded, and the last good save stays as it was.
    """
