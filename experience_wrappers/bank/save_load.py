"""Saving a bank to a folder and loading it back, with validation and no pickle.

Layout and commit protocol: see :mod:`.folder`. A save takes the folder's lock, refuses a
folder that is neither empty nor a bank folder, writes ``entries-<gen>.npz`` and
``index-<gen>.bin`` (each flushed to disk), replaces ``meta.json`` atomically, then removes
the previous save's data files and anything an interrupted save left. A crash at any
point leaves the previous save (or the new one) loadable, and nothing but the bank's own
files is ever removed.

A load reads ``meta.json`` and each file it lists once, checks the SHA-256 of those bytes,
and parses the same bytes (the index through an in-memory file where the OS has one), so
it returns one save's bank, whole, or raises :class:`BankFileError`. Format version 1
(fixed file names, written by earlier versions) still loads.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import re
import shutil
import sys
import tempfile
import uuid
import zipfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

import attrs
import numpy as np

from ..errors import BankFileError, ExperienceFileError
from .config import MAX_UTILITY, BankConfig
from .entries import COLUMNS, EntryStore
from .folder import (
    CHECKSUMMED,
    META,
    V1_FILES,
    _fail,
    check_folder_path,
    check_save_target,
    config_checksum,
    folder_lock,
    fsync_dir,
    is_own_name,
    read_consistent,
    remove_or_warn,
    remove_quietly,
    warn_and_log,
)
from .index import HnswIndex
from .loadcheck import (
    check_columns,
    check_counters,
    check_dims,
    check_fixed_widths,
    check_index,
    check_index_counts,
)
from .state import BankState
from .swap import exchange_paths

try:  # POSIX
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]

if TYPE_CHECKING:
    from .bank import ExperienceBank

__all__ = ["save_bank", "load_bank", "sha256_file", "atomic_folder", "replaced_folder", "bytes_as_file"]


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def atomic_folder(path: Path) -> tuple[Path, Callable[[], None]]:
    """A temporary sibling folder and a ``commit()`` that renames it to ``path``.

    Low level: :func:`replaced_folder` adds the checks, the lock and the clean-up that a
    save of a whole folder needs.
    """
    path = path.resolve()
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.parent / f".{path.name}.tmp-{uuid.uuid4().hex[:8]}"
    tmp.mkdir()

    def commit() -> None:
        if path.exists() and exchange_paths(tmp, path):  # one atomic step where the OS can
            shutil.rmtree(tmp, ignore_errors=True)  # tmp now holds the previous folder
            return
        old = None
        if path.exists():
            old = path.parent / f".{path.name}.old-{uuid.uuid4().hex[:8]}"
            os.replace(path, old)
        os.replace(tmp, path)
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)

    return tmp, commit


@contextmanager
def replaced_folder(path: Path, fmt: str, own: Callable[[str], bool],
                    error: type[ExperienceFileError] = BankFileError) -> Iterator[Path]:
    """Build a new folder inside the block; when the block succeeds it takes ``path``'s place.

    For folders saved whole (the manager's). ``path`` (through a symbolic link: the folder it
    points to) must not exist, be empty, or be a folder of format ``fmt`` (its ``meta.json``);
    any other folder is refused. Saves into one
    parent folder are serialised by a lock on it. The new folder is swapped in atomically
    (two renames where the OS cannot swap); files of the previous folder that ``own`` does
    not claim (the user's) are moved into the new one, never removed. A block that raises
    removes its temporary folder; temporary folders that a killed save left beside
    ``path`` are removed by the next save.

    Args:
        path: the folder to write.
        fmt: the ``format`` its ``meta.json`` declares.
        own: whether a top-level name in such a folder is one the save writes.
        error: the error a refused folder raises, the one of the folder's kind.
    """
    check_folder_path(Path(path), replaced=True)
    path = Path(os.path.realpath(path))  # through symbolic links: a link to a folder saves into that folder
    path.parent.mkdir(parents=True, exist_ok=True)
    with _dir_lock(path.parent):
        if path.is_dir() and any(path.iterdir()):
            try:
                meta = json.loads((path / META).read_bytes())
            except (OSError, ValueError, RecursionError):
                meta = None
            if not isinstance(meta, dict) or meta.get("format") != fmt:
                shown = ", ".join(sorted(repr(p.name) for p in path.iterdir())[:5])
                raise error(f"refusing to save into {str(path)!r}: the folder is not empty and is not a "
                            f"saved folder of format {fmt!r} (it holds {shown}); save into a new or "
                            "empty folder")
        for stale in path.parent.glob(f".{path.name}.tmp-*"):  # left by a killed save (we hold the lock)
            if stale.is_dir() and all(own(p.name) for p in stale.iterdir()):
                shutil.rmtree(stale, ignore_errors=True)
        tmp = path.parent / f".{path.name}.tmp-{uuid.uuid4().hex[:8]}"
        tmp.mkdir()
        tmp_inode = tmp.stat().st_ino
        old: Path | None
        try:
            yield tmp
            if path.exists() and exchange_paths(tmp, path):
                old = tmp  # the swap put the previous folder here
            else:
                old = path.parent / f".{path.name}.old-{uuid.uuid4().hex[:8]}" if path.exists() else None
                if old is not None:
                    os.replace(path, old)
                os.replace(tmp, path)
        except BaseException:
            if tmp.exists() and tmp.stat().st_ino == tmp_inode:  # still the new folder, never swapped in
                shutil.rmtree(tmp, ignore_errors=True)
            raise
        if old is not None:  # committed: what goes wrong from here warns, and never removes the user's files
            _empty_old_folder(old, path, own)
        fsync_dir(path.parent)


def _empty_old_folder(old: Path, path: Path, own: Callable[[str], bool]) -> None:
    """After a committed swap: move the user's files from the previous folder ``old`` into the new
    ``path``, then remove ``old``. Failures warn (the new folder is in place); a file that cannot be
    moved keeps ``old`` where it is, so nothing of the user's is removed."""
    stuck: list[str] = []
    try:
        for p in old.iterdir():
            if not own(p.name):  # not the save's: the user's, and it stays theirs
                try:
                    os.replace(p, path / p.name)
                except OSError as exc:
                    stuck.append(f"{p.name} ({exc.strerror or exc})")
    except OSError as exc:
        stuck.append(f"the folder's listing ({exc.strerror or exc})")
    if stuck:
        warn_and_log(f"the save into {str(path)!r} is complete, but the previous folder's files that are not the "
                     f"save's could not be moved into it: {', '.join(stuck)}; they are kept in {str(old)!r} "
                     f"(move them back by hand, then remove that folder)")
        return
    shutil.rmtree(old, ignore_errors=True)
    if old.exists():
        warn_and_log(f"the save into {str(path)!r} is complete, but the previous folder {str(old)!r} could not be "
                     "removed entirely; remove it by hand")


@contextmanager
def _dir_lock(folder: Path) -> Iterator[None]:
    """An exclusive ``flock`` on a folder itself (no file is created in it); unlocked where there is no flock."""
    if fcntl is None:  # pragma: no cover - Windows cannot open a folder as a file either
        yield
        return
    fd = os.open(folder, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def save_bank(state: BankState, path: Path, fmt: str, version: int, lineage: list[str] | None = None,
              overwrite: bool = False) -> Path:
    """Write a bank's ``state`` to the folder ``path`` in format ``fmt``, ``version`` (the caller holds the
    bank's read lock; see the module doc). ``lineage``: the save ids a loaded bank's content descends from
    (the save it was loaded from, then those it wrote); when it is not empty, a folder holding a save
    outside it is refused (a stale save) unless ``overwrite``; the new save's id is appended once committed.
    """
    check_folder_path(path)
    path.mkdir(parents=True, exist_ok=True)
    check_save_target(path, fmt)  # before the lock file: a refused folder gets nothing
    with folder_lock(path):
        old_meta = check_save_target(path, fmt)
        _check_not_stale(path, old_meta, None if overwrite else lineage)
        gen = uuid.uuid4().hex[:16]
        written: list[Path] = []
        try:
            store, index = state.store, state.index
            meta = {
                "format": fmt,
                "version": version,
                "config": state.config.to_dict(),
                "dims": None if store is None else store.dims,
                "fixed_widths": state.fixed_widths,
                "size": 0 if store is None else store.size,
                "next_id": state.next_id,
                "tick": state.tick,
                "rng_state": state.rng.bit_generator.state,
                "save_id": gen,
            }
            files: dict[str, str] = {}
            if store is not None and index is not None:
                buf = io.BytesIO()
                np.savez(buf, **store.snapshot())  # type: ignore[arg-type]  # numpy stub: **arrays matched to allow_pickle: bool
                entries_name, index_name = f"entries-{gen}.npz", f"index-{gen}.bin"
                written.append(path / entries_name)
                files[entries_name] = _write_new(path / entries_name, buf.getvalue())
                written.append(path / index_name)
                index.save(path / index_name)
                files[index_name] = _fsync_and_hash(path / index_name)
                meta["index"] = {"live": index.live, "deleted": index.deleted}
            meta["files"] = files
            meta["config_sha256"] = config_checksum(meta)
            tmp_meta = path / f".meta-{gen}.tmp"
            written.append(tmp_meta)
            _write_new(tmp_meta, json.dumps(meta, indent=1, default=_json_default).encode())
            os.replace(tmp_meta, path / META)  # the commit
        except BaseException:
            if not _committed(path, gen):  # else the save is complete: keep it
                # only what this save wrote (the previous save stays); a failure here warns, so the error that stopped the save is the one raised
                remove_or_warn(path, written, "that a failed save wrote")
            raise
        fsync_dir(path)
        if lineage:  # a loaded bank's lineage grows with its saves (a bank never loaded has none)
            lineage.append(gen)
        # committed: the previous save's files, and whatever an interrupted save left (all of them
        # ours); a failure to remove them warns, as the new save is in place
        try:
            stale = [p for p in path.iterdir() if is_own_name(p.name) and p.name not in files]
        except OSError as exc:
            warn_and_log(f"the save into {str(path)!r} is complete, but the folder could not be listed to remove "
                         f"the previous save's files ({exc.strerror or exc}); the next save tries again")
            stale = []
        if old_meta is not None and isinstance(old_meta.get("files"), dict):
            stale += [path / n for n in V1_FILES if n in old_meta["files"] and n not in files]
        remove_or_warn(path, stale, "after the save into it completed (files of the previous save)")
    _remove_old_temporary_folders(path)
    return path


def _check_not_stale(path: Path, old_meta: dict | None, lineage: list[str] | None) -> None:
    """Refuse to replace a save that the saving bank's content does not descend from."""
    current = None if old_meta is None else old_meta.get("save_id")
    if not lineage or not isinstance(current, str) or current in lineage:
        return
    raise BankFileError(
        f"refusing to save into {str(path)!r}: it holds save {current}, which this bank was not loaded from "
        f"and did not write (this bank's latest save: {lineage[-1]}; another bank saved into this folder, or "
        f"this one since this bank was loaded), so saving would drop the entries of save {current}. Load that "
        "save (ExperienceBank.load), add this bank's new entries to it and save that bank, save into a new "
        "folder, or replace it with save(path, overwrite=True)")


def _remove_old_temporary_folders(path: Path) -> None:
    """Remove ``.NAME.tmp-*`` folders that killed saves of earlier versions left beside ``path``.

    Earlier versions wrote a whole temporary folder beside the bank and swapped it in; a
    killed save left it behind (hundreds of MB for a large bank). Only folders holding
    nothing but a bank's files of that version are removed.
    """
    v1 = {META, *V1_FILES}
    for tmp in path.parent.glob(f".{path.name}.tmp-*"):
        try:
            if re.fullmatch(r"[0-9a-f]{8}", tmp.name.rsplit("-", 1)[-1]) and tmp.is_dir() and not tmp.is_symlink() \
                    and {p.name for p in tmp.iterdir()} <= v1:
                shutil.rmtree(tmp)
        except OSError:  # someone else's business after all (permissions, a race): leave it
            continue


def _committed(path: Path, gen: str) -> bool:
    """Whether the folder's ``meta.json`` is that of save ``gen`` (its commit happened)."""
    try:
        meta = json.loads((path / META).read_bytes())
    except (OSError, ValueError, RecursionError):
        return False
    return isinstance(meta, dict) and meta.get("save_id") == gen


def _write_new(path: Path, data: bytes) -> str:
    """Write ``data`` to a new file, flushed to disk; returns its SHA-256."""
    with open(path, "xb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    return hashlib.sha256(data).hexdigest()


def _fsync_and_hash(path: Path) -> str:
    with open(path, "rb+") as f:
        os.fsync(f.fileno())
    return sha256_file(path)


def _json_default(x: object) -> object:
    if isinstance(x, np.integer):
        return int(x)
    raise TypeError(f"cannot store {type(x).__name__} in bank metadata")


def load_bank(cls: type[ExperienceBank], path: Path) -> ExperienceBank:
    meta, blobs = read_consistent(path, cls.FORMAT, cls.VERSION)
    try:
        if not isinstance(meta.get("config"), dict):
            raise TypeError(f"config must be an object, got {meta.get('config')!r}")
        config = BankConfig(**meta["config"])
        dims = meta["dims"]
    except (KeyError, TypeError, ValueError) as exc:
        raise _fail(path, f"metadata is invalid ({exc})") from exc
    size, next_id, tick = check_counters(path, meta, config)  # types and ranges (see .loadcheck)
    rng = np.random.default_rng(config.seed)
    try:
        rng.bit_generator.state = meta["rng_state"]
    except (KeyError, TypeError, ValueError) as exc:
        raise _fail(path, f"sampler state is invalid ({exc})") from exc
    state = BankState(config=config, next_id=next_id, tick=tick, rng=rng, save_id=meta.get("save_id"),
                      fixed_widths=check_fixed_widths(path, meta) if dims is None else {})
    if dims is None:
        if size:
            raise _fail(path, "metadata says entries exist but gives no dims")
        _check_config_checksum(path, meta)
        return cls.from_state(state)
    if meta.get("version") in (1, 2, 3) and isinstance(dims, dict):  # an action prior column: left out
        dims = {name: width for name, width in dims.items() if name != "prior_dim"}
    dims = check_dims(path, dims)
    entries_name, index_name = _data_names(path, meta)
    try:
        with np.load(io.BytesIO(blobs[entries_name]), allow_pickle=False) as z:
            cols = {name: z[name] for name in COLUMNS}
    except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile) as exc:
        raise _fail(path, f"{entries_name} cannot be read ({exc})") from exc
    for name, (dtype, width) in COLUMNS.items():
        arr = cols[name]
        shape = (size,) if width is None else (size, dims[width])
        if arr.dtype != np.dtype(dtype) or arr.shape != shape:
            raise _fail(path, f"column {name!r} has {arr.dtype}{arr.shape}, expected {np.dtype(dtype)}{shape} "
                              f"(meta.json says size {size}, dims {dims})")
    ids = cols["id"]
    if len(np.unique(ids)) != size or (size and (ids.min() < 0 or ids.max() >= next_id)):
        raise _fail(path, "entry ids are duplicated or out of range")
    if size > config.capacity:
        raise _fail(path, f"{size} entries exceed the capacity {config.capacity}")
    bad = ~np.isfinite(cols["utility"]) | (np.abs(cols["utility"]) > MAX_UTILITY)
    if bad.any():
        raise _fail(path, f"{int(bad.sum())} entries have a NaN, infinite or out-of-range utility (ids "
                          f"{ids[bad][:5].tolist()}); earlier versions could store such utilities")
    for name in ("key", "value"):
        if not np.all(np.isfinite(cols[name])):
            raise _fail(path, f"column {name!r} holds NaN or inf")
    check_columns(path, cols, tick)
    live, deleted = check_index_counts(path, meta, size, config)
    store = EntryStore(dims)
    store.load_columns(cols)
    try:
        with bytes_as_file(blobs[index_name]) as index_path:
            index = HnswIndex.load(index_path, config.space, dims["key_dim"], config.capacity,
                                   config.M, config.ef_construction, config.ef_search,
                                   config.seed or 0, live, deleted)
    except (KeyError, TypeError, ValueError, RuntimeError) as exc:
        raise _fail(path, f"{index_name} does not match the entries ({exc})") from exc
    check_index(path, index, index_name, cols, config)
    _check_config_checksum(path, meta)
    return cls.from_state(attrs.evolve(state, store=store, index=index))


def _check_config_checksum(path: Path, meta: dict) -> None:
    """Refuse metadata whose ``config_sha256`` does not match its config and counters (none: an older save)."""
    if "config_sha256" not in meta:
        return
    if meta["config_sha256"] != config_checksum(meta):
        raise _fail(path, "meta.json's config or counters were changed after the save (config_sha256 does not "
                          f"match the fields {', '.join(CHECKSUMMED)}); restore the file, or delete config_sha256 "
                          "if the change was deliberate and checked")


def _data_names(path: Path, meta: dict) -> tuple[str, str]:
    """The entries and index file names a metadata lists (fixed names in version 1)."""
    files = meta["files"]
    found = []
    for stem, ext in (("entries", ".npz"), ("index", ".bin")):
        names = [n for n in files if n == f"{stem}{ext}" or (n.startswith(f"{stem}-") and n.endswith(ext))]
        if len(names) != 1:
            raise _fail(path, f"metadata lists no {stem}{ext}" if not names else f"metadata lists two {stem} files")
        found.append(names[0])
    return found[0], found[1]


@contextmanager
def bytes_as_file(data: bytes) -> Iterator[Path]:
    """A path whose content is ``data``, for hnswlib, which reads only paths.

    On Linux an anonymous in-memory file (``memfd``) that nobody else can change; elsewhere
    a private temporary file, removed afterwards.
    """
    if hasattr(os, "memfd_create") and sys.platform.startswith("linux") and os.path.isdir("/proc/self/fd"):
        fd = os.memfd_create("experience-bank-index")
        try:
            with os.fdopen(os.dup(fd), "wb") as f:
                f.write(data)
            yield Path(f"/proc/self/fd/{fd}")
        finally:
            os.close(fd)
        return
    fd, name = tempfile.mkstemp(suffix=".bin", prefix="experience-bank-index-")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        yield Path(name)
    finally:
        remove_quietly(Path(name))
