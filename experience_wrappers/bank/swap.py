"""Swapping two paths in one step (Linux ``renameat2(RENAME_EXCHANGE)``), for atomic saves."""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import sys
from collections.abc import Callable
from pathlib import Path

__all__ = ["exchange_paths"]

_AT_FDCWD = -100
_RENAME_EXCHANGE = 2


def _renameat2() -> Callable[..., int] | None:
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        fn = libc.renameat2
    except (OSError, AttributeError):  # no libc, or glibc older than 2.28
        return None
    fn.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    fn.restype = ctypes.c_int
    return fn


_FN = _renameat2()


def exchange_paths(a: Path, b: Path) -> bool:
    """Atomically swap the entries ``a`` and ``b`` (both must exist, on one filesystem).

    Returns True when swapped; False when this system cannot do it in one step (not Linux,
    an old glibc, a filesystem without ``RENAME_EXCHANGE``): then nothing was changed and
    the caller falls back to two renames. Other failures raise ``OSError``.
    """
    if _FN is None:
        return False
    if _FN(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE) == 0:
        return True
    err = ctypes.get_errno()
    if err in (22, 38, 95):  # EINVAL, ENOSYS, EOPNOTSUPP: not supported here
        return False
    raise OSError(err, os.strerror(err), str(a), None, str(b))
