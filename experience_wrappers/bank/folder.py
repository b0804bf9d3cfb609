"""The bank's folder on disk: which files are the bank's own, a save lock, and reads that never mix saves.

A saved folder (format versions 2 to 4) holds::

    meta.json            format name and version, config, counters, the SHA-256 of the config and
                         counters (``config_sha256``), and the name and SHA-256 of each data file
    entries-<gen>.npz    the data files of one save; ``<gen>`` is new at every save
    index-<gen>.bin
    .lock                taken (``flock``) by every save of this folder, so saves never overlap

A save writes new data files, then replaces ``meta.json`` in one atomic step (the commit),
then removes the data files of the previous save. Only names of these shapes are ever
removed; any other file in the folder is left alone. A save that has committed but cannot
remove the previous save's files warns (:func:`remove_or_warn`) instead of raising: the new
save is in place, and the next save removes what is left.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import time
import warnings
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path

from ..errors import BankFileError, ExperienceFileError

__all__ = ["META", "LOCK", "is_own_name", "folder_lock", "check_save_target", "check_folder_path", "check_scratch_name",
           "SCRATCH_EXTRA", "read_consistent",
           "fsync_dir", "remove_quietly", "remove_or_warn", "config_checksum", "CHECKSUMMED", "warn_and_log"]

log = logging.getLogger(__name__)

META, LOCK = "meta.json", ".lock"
#: names a save writes: a data file of some save, or a meta file before its commit
_OWN = re.compile(r"^(?:(?:entries|index)-[0-9a-f]{16}\.(?:npz|bin)|\.meta-[0-9a-f]{16}\.tmp)$")
#: data files of format version 1 (one fixed name each; the folder was swapped whole)
V1_FILES = ("entries.npz", "index.bin")
#: how often a load starts again when a save replaced the folder's files while it read them
READ_ATTEMPTS = 20
#: the fields of meta.json that ``config_sha256`` covers (what a loaded bank is built from besides the data)
CHECKSUMMED = ("config", "dims", "size", "next_id", "tick", "index")
#: what ``json.loads`` raises on bytes that are not (sane) JSON: RecursionError for deeply nested arrays
_JSON_ERRORS = (UnicodeDecodeError, json.JSONDecodeError, RecursionError)

try:  # POSIX
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]


def is_own_name(name: str) -> bool:
    """Whether ``name`` is a file that a bank save writes (and may later remove).

    >>> is_own_name("entries-0123456789abcdef.npz"), is_own_name("model.zip")
    (True, False)
    """
    return bool(_OWN.match(name))


@contextmanager
def folder_lock(folder: Path) -> Iterator[None]:
    """Hold the folder's save lock (an exclusive ``flock`` on ``folder/.lock``) inside the block.

    The lock file stays (removing it would let two savers lock two different files); the
    operating system releases the lock when its holder exits, however it exits. Where
    ``flock`` does not exist the block runs unlocked.
    """
    fd = os.open(folder / LOCK, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        if fcntl is not None:
            fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing releases the flock


#: what a whole-folder save adds to the folder's name for the new folder it builds beside it (``.NAME.tmp-1234abcd``)
SCRATCH_EXTRA = len(".") + len(".tmp-") + 8


def check_scratch_name(path: Path) -> None:
    """Refuse a folder name too long for the new folder a whole-folder save builds beside it
    (``.NAME.tmp-1234abcd``, :data:`SCRATCH_EXTRA` bytes more than the name) on its file system.

    >>> check_scratch_name(Path("runs") / ("r" * 250))
    Traceback (most recent call last):
    ...
    ValueError: cannot save into 'runs/rrrrrrrrrr...': its name is 250 bytes, and the save builds the new folder beside it as '.NAME.tmp-1234abcd', 14 bytes more, past the file system's limit of 255; give the folder a name of at most 241 bytes
    """
    limit = 255  # (NAME_MAX of ext4, xfs, tmpfs, APFS, NTFS)
    for above in path.absolute().parents:
        if above.exists():
            try:
                limit = os.pathconf(above, "PC_NAME_MAX")
            except (OSError, ValueError, AttributeError):  # (no pathconf: Windows; a limit it does not report)
                pass
            break
    size = len(os.fsencode(path.name))
    if size + SCRATCH_EXTRA > limit:
        shown = str(path) if len(str(path)) <= 60 else str(path)[: str(path).index(path.name) + 10] + "..."
        raise ValueError(f"cannot save into {shown!r}: its name is {size} bytes, and the save builds the new folder "
                         f"beside it as '.NAME.tmp-1234abcd', {SCRATCH_EXTRA} bytes more, past the file system's "
                         f"limit of {limit}; give the folder a name of at most {limit - SCRATCH_EXTRA} bytes")


def check_folder_path(path: Path, *, replaced: bool = False) -> None:
    """Refuse a save's folder path that cannot be a folder: a file, or a path under a file.

    ``replaced``: the save swaps a new folder in for the whole of ``path``; then ``path`` must not
    be the working directory or a folder above it either (the swap would leave this process, and
    every relative path it opens, in a removed folder).

    Raises:
        ValueError: naming the file, or the working directory.
    """
    if path.exists() and not path.is_dir():
        raise ValueError(f"a save is a folder, and {str(path)!r} is a file; give a folder path")
    for above in path.parents:
        if above.exists():
            if not above.is_dir():
                raise ValueError(f"cannot save into {str(path)!r}: {str(above)!r} is a file, so no folder can be "
                                 "made under it; give a folder path")
            break
    if replaced:
        check_scratch_name(Path(os.path.realpath(path)))  # (the folder a link points to is the one swapped)
        where, cwd = Path(os.path.realpath(path)), Path(os.path.realpath(os.getcwd()))
        if where == cwd or where in cwd.parents:
            what = "the working directory" if where == cwd else "a folder above the working directory"
            raise ValueError(f"cannot save into {str(path)!r}: it is {what} ({str(cwd)!r}), and this save "
                             "replaces its folder as a whole, which would leave this "
                             "process in a removed folder; save into a subfolder, e.g. "
                             f"{str(Path(path) / 'run')!r}")


def check_save_target(folder: Path, fmt: str) -> dict | None:
    """Refuse to save into ``folder`` unless it is empty or a folder of format ``fmt``.

    Returns the folder's current metadata (None when it holds no save yet).

    Raises:
        BankFileError: the folder holds other files, or a saved folder of another kind.
    """
    names = sorted(p.name for p in folder.iterdir())
    if META in names:
        try:
            meta = json.loads((folder / META).read_bytes())
        except (OSError, *_JSON_ERRORS) as exc:
            raise BankFileError(f"refusing to save an experience bank into {str(folder)!r}: its {META} cannot "
                                f"be read ({exc}), so it may not be a bank folder; save into a new or empty "
                                "folder") from exc
        if not isinstance(meta, dict) or meta.get("format") != fmt:
            got = meta.get("format") if isinstance(meta, dict) else type(meta).__name__
            raise BankFileError(f"refusing to save an experience bank into {str(folder)!r}: it holds a saved "
                                f"folder of format {got!r}, not {fmt!r}; save into a new or empty folder")
        return meta
    foreign = [n for n in names if n != LOCK and not is_own_name(n)]
    if foreign:
        shown = ", ".join(repr(n) for n in foreign[:5]) + (", ..." if len(foreign) > 5 else "")
        raise BankFileError(
            f"refusing to save an experience bank into {str(folder)!r}: the folder is not empty and is not a "
            f"bank folder (it holds {shown}), and a save must not mix its files with others or remove "
            f"them; save into a new or empty folder, e.g. {str(folder / 'bank')!r}")
    return None


def fsync_dir(folder: Path) -> None:
    """Make a rename inside ``folder`` durable (no-op where directories cannot be opened)."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:  # pragma: no cover - Windows
        return
    try:
        os.fsync(fd)
    except OSError:  # pragma: no cover - some filesystems refuse
        pass
    finally:
        os.close(fd)


def remove_quietly(path: Path) -> None:
    """Remove a file if it is there (a leftover removed by someone else is no error)."""
    try:
        path.unlink()
    except FileNotFoundError:
        pass


def warn_and_log(message: str) -> None:
    """A problem that must not fail the operation: a ``UserWarning`` and a log warning."""
    warnings.warn(message, UserWarning, stacklevel=3)
    log.warning(message)


def remove_or_warn(folder: Path, paths: Iterable[Path], why: str) -> None:
    """Remove files of ``folder`` (absent ones are no error); those that cannot be removed are named in one warning.

    For clean-up that must not fail what came before it (a committed save; an error being raised).
    """
    stuck = []
    for path in paths:
        try:
            remove_quietly(path)
        except OSError as exc:
            stuck.append(f"{path.name} ({exc.strerror or exc})")
    if stuck:
        warn_and_log(f"could not remove {len(stuck)} file(s) of {str(folder)!r} {why}: {', '.join(stuck)}; they "
                     "are left as they are (the next save tries again, or remove them by hand)")


def config_checksum(meta: dict) -> str:
    """SHA-256 of the ``CHECKSUMMED`` fields of a metadata dict (canonical JSON: sorted keys, no spaces).

    Saves write it as ``config_sha256``; a load whose metadata has one refuses a mismatch, so a
    hand-edited config or counter is refused even where no range check can see it. Metadata
    without it (earlier versions) still loads, after the range checks.

    >>> config_checksum({"size": 1}) == config_checksum({"size": 1, "files": {}})
    True
    """
    fields = {name: meta.get(name) for name in CHECKSUMMED}
    text = json.dumps(fields, sort_keys=True, separators=(",", ":"), default=_plain)
    return hashlib.sha256(text.encode()).hexdigest()


def _plain(x: object) -> object:
    if hasattr(x, "item"):  # numpy scalars
        return x.item()
    raise TypeError(f"cannot checksum {type(x).__name__} in bank metadata")


def _fail(path: Path, why: str, error: type[ExperienceFileError] = BankFileError) -> ExperienceFileError:
    return error(f"cannot load {error.what} from {str(path)!r}: {why}")


def read_consistent(path: Path, fmt: str, version: int,
                    error: type[ExperienceFileError] = BankFileError) -> tuple[dict, dict[str, bytes]]:
    """``meta.json`` and the bytes of every file it lists, all from one save, checksums verified.

    Each file is read once; its SHA-256 is checked on those bytes, which the caller then
    parses. A save that commits while this reads makes the previous save's files vanish
    (or, for a version-1 folder swapped whole, differ): then ``meta.json`` has changed and
    the read starts again, up to ``READ_ATTEMPTS`` times. So the result is one save's
    complete files, or an error; never files of two saves.

    Args:
        path: the folder.
        fmt: the ``format`` its ``meta.json`` must declare.
        version: the newest format version this library reads.
        error: the error raised, the one of the folder's kind.

    Raises:
        BankFileError: (or ``error``) not a folder of ``fmt``, a newer format, a missing or damaged file.
    """
    if not path.is_dir():
        leftovers = sorted(p.name for p in path.parent.glob(f".{path.name}.old-*")) if path.parent.is_dir() else []
        hint = f"; an interrupted save left {leftovers[0]!r} beside it (rename it to recover)" if leftovers else ""
        raise _fail(path, ("not a folder" if path.exists() else "no such folder") + hint, error)
    problem = ""
    for attempt in range(READ_ATTEMPTS):
        if attempt:
            time.sleep(min(0.001 * 2**attempt, 0.05))
        raw = _read_meta_bytes(path, error)
        meta = parse_meta(path, raw, fmt, version, error)
        blobs: dict[str, bytes] = {}
        problem = ""
        for name, digest in meta["files"].items():
            if not isinstance(name, str) or "/" in name or "\\" in name or name in ("", ".", ".."):
                raise _fail(path, f"metadata lists a bad file name {name!r}", error)
            try:
                data = (path / name).read_bytes()
            except FileNotFoundError:
                problem = f"{name} is missing"
                break
            except OSError as exc:  # a folder where the file should be, no permission, ...
                raise _fail(path, f"{name} cannot be read ({exc.strerror or exc}: {str(path / name)!r})",
                            error) from exc
            if hashlib.sha256(data).hexdigest() != digest:
                problem = f"{name} is damaged or truncated (checksum mismatch)"
                break
            blobs[name] = data
        if not problem:
            return meta, blobs
        try:
            changed = _read_meta_bytes(path, error) != raw
        except ExperienceFileError:
            changed = True
        if not changed:  # the files of a save that is still current: really missing or damaged
            raise _fail(path, problem, error)
    raise _fail(path, f"the folder kept changing while it was read (saves in progress?); last: {problem}", error)


def _read_meta_bytes(path: Path, error: type[ExperienceFileError]) -> bytes:
    try:
        return (path / META).read_bytes()
    except FileNotFoundError as exc:
        raise _fail(path, f"no {META}: not a saved folder of this library", error) from exc
    except OSError as exc:
        raise _fail(path, f"{META} cannot be read ({exc})", error) from exc


def parse_meta(path: Path, raw: bytes, fmt: str, version: int,
               error: type[ExperienceFileError] = BankFileError) -> dict:
    """Parse and check metadata bytes of format ``fmt``, versions 1 to ``version``."""
    try:
        meta = json.loads(raw)
    except RecursionError as exc:
        raise _fail(path, f"{META} is damaged (nested too deeply to be a bank's metadata)", error) from exc
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise _fail(path, f"{META} is damaged ({exc})", error) from exc
    if not isinstance(meta, dict) or meta.get("format") != fmt:
        got = meta.get("format") if isinstance(meta, dict) else type(meta).__name__
        raise _fail(path, f"format is {got!r}, expected {fmt!r}", error)
    v = meta.get("version")
    if not isinstance(v, int) or isinstance(v, bool) or v < 1:
        raise _fail(path, f"bad format version {v!r}", error)
    if v > version:
        raise _fail(path, f"written by a newer version of the format ({v} > {version}); upgrade the library", error)
    if not isinstance(meta.get("files"), dict):
        raise _fail(path, "metadata lists no files", error)
    return meta
