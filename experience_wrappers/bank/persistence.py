"""Saving a bank to a folder and loading it back, with validation and no pickle.

Layout of a bank folder::

    meta.json     format name and version, config, dims, counters, sampler state, checksums
    entries.npz   one array per column (read with allow_pickle=False)
    index.bin     the hnswlib index (only when the bank has dims)

Writes go to a temporary sibling folder that then takes the target's place: in one atomic
swap on Linux (``renameat2``), else by two renames, so a crash leaves the old folder or the
new one (with two renames, possibly under a ``.NAME.old-*`` name that loading points to).
Loading checks the format, the version, the SHA-256 of every file, and the shape and dtype
of every array before building anything.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import uuid
import zipfile
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from ..errors import BankFileError
from .config import BankConfig
from .entries import COLUMNS, DIM_NAMES, EntryStore
from .index import HnswIndex
from .swap import exchange_paths

if TYPE_CHECKING:
    from .bank import ExperienceBank

__all__ = ["save_bank", "load_bank", "sha256_file", "atomic_folder"]

META, ENTRIES, INDEX = "meta.json", "entries.npz", "index.bin"


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def atomic_folder(path: Path) -> tuple[Path, callable]:
    """A temporary sibling folder and a ``commit()`` that renames it to ``path``."""
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


def save_bank(bank: ExperienceBank, path: Path) -> Path:
    """Write ``bank`` to the folder ``path`` (caller holds the bank's read lock)."""
    if path.exists() and not path.is_dir():
        raise ValueError(f"path must be a folder (or not exist), got the file {str(path)!r}")
    tmp, commit = atomic_folder(path)
    try:
        files: dict[str, str] = {}
        store, index = bank._store, bank._index
        meta = {
            "format": bank.FORMAT,
            "version": bank.VERSION,
            "config": bank.config.to_dict(),
            "dims": None if store is None else store.dims,
            "size": len(bank),
            "next_id": bank._next_id,
            "tick": bank._tick,
            "rng_state": bank._rng.bit_generator.state,
        }
        if store is not None and index is not None:
            np.savez(tmp / ENTRIES, **store.snapshot())
            index.save(tmp / INDEX)
            meta["index"] = {"live": index.live, "deleted": index.deleted}
            for name in (ENTRIES, INDEX):
                files[name] = sha256_file(tmp / name)
        meta["files"] = files
        with open(tmp / META, "w") as f:
            json.dump(meta, f, indent=1, default=_json_default)
            f.flush()
            os.fsync(f.fileno())
        commit()
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return path


def _json_default(x: object) -> object:
    if isinstance(x, np.integer):
        return int(x)
    raise TypeError(f"cannot store {type(x).__name__} in bank metadata")


def _fail(path: Path, why: str) -> BankFileError:
    return BankFileError(f"cannot load experience bank from {str(path)!r}: {why}")


def read_meta(path: Path, fmt: str, version: int) -> dict:
    """Read and check ``meta.json`` of a folder written in format ``fmt``, up to ``version``."""
    if not path.is_dir():
        leftovers = sorted(p.name for p in path.parent.glob(f".{path.name}.old-*")) if path.parent.is_dir() else []
        hint = f"; an interrupted save left {leftovers[0]!r} beside it (rename it to recover)" if leftovers else ""
        raise _fail(path, ("not a folder" if path.exists() else "no such folder") + hint)
    meta_path = path / META
    if not meta_path.is_file():
        raise _fail(path, f"no {META}: not a saved folder of this library")
    try:
        meta = json.loads(meta_path.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise _fail(path, f"{META} is damaged ({exc})") from exc
    if not isinstance(meta, dict) or meta.get("format") != fmt:
        got = meta.get("format") if isinstance(meta, dict) else type(meta).__name__
        raise _fail(path, f"format is {got!r}, expected {fmt!r}")
    v = meta.get("version")
    if not isinstance(v, int) or v < 1:
        raise _fail(path, f"bad format version {v!r}")
    if v > version:
        raise _fail(path, f"written by a newer version of the format ({v} > {version}); upgrade the library")
    files = meta.get("files")
    if not isinstance(files, dict):
        raise _fail(path, "metadata lists no files")
    for name, digest in files.items():
        f = path / name
        if not f.is_file():
            raise _fail(path, f"{name} is missing")
        if sha256_file(f) != digest:
            raise _fail(path, f"{name} is damaged or truncated (checksum mismatch)")
    return meta


def load_bank(cls: type[ExperienceBank], path: Path) -> ExperienceBank:
    meta = read_meta(path, cls.FORMAT, cls.VERSION)
    try:
        config = BankConfig(**meta["config"])
        size, next_id, tick = int(meta["size"]), int(meta["next_id"]), int(meta["tick"])
        dims = meta["dims"]
    except (KeyError, TypeError, ValueError) as exc:
        raise _fail(path, f"metadata is invalid ({exc})") from exc
    bank = cls(config)
    bank._next_id, bank._tick = next_id, tick
    try:
        bank._rng.bit_generator.state = meta["rng_state"]
    except (KeyError, TypeError, ValueError) as exc:
        raise _fail(path, f"sampler state is invalid ({exc})") from exc
    if dims is None:
        if size:
            raise _fail(path, "metadata says entries exist but gives no dims")
        return bank
    if not isinstance(dims, dict) or set(dims) != set(DIM_NAMES) or not all(
        isinstance(v, int) and v >= 0 for v in dims.values()
    ):
        raise _fail(path, f"bad dims {dims!r}")
    for name in (ENTRIES, INDEX):
        if name not in meta["files"]:
            raise _fail(path, f"metadata lists no {name}")
    try:
        with np.load(path / ENTRIES, allow_pickle=False) as z:
            cols = {name: z[name] for name in COLUMNS}
    except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile) as exc:
        raise _fail(path, f"{ENTRIES} cannot be read ({exc})") from exc
    for name, (dtype, width) in COLUMNS.items():
        arr = cols[name]
        shape = (size,) if width is None else (size, dims[width])
        if arr.dtype != np.dtype(dtype) or arr.shape != shape:
            raise _fail(path, f"column {name!r} has {arr.dtype}{arr.shape}, expected {np.dtype(dtype)}{shape}")
    ids = cols["id"]
    if len(np.unique(ids)) != size or (size and (ids.min() < 0 or ids.max() >= next_id)):
        raise _fail(path, "entry ids are duplicated or out of range")
    if size > config.capacity:
        raise _fail(path, f"{size} entries exceed the capacity {config.capacity}")
    store = EntryStore(dims)
    store.load_columns(cols)
    try:
        live, deleted = int(meta["index"]["live"]), int(meta["index"]["deleted"])
        if live != size:
            raise ValueError(f"index holds {live} live elements, entries {size}")
        index = HnswIndex.load(path / INDEX, config.space, dims["key_dim"], config.capacity,
                               config.M, config.ef_construction, config.ef_search,
                               config.seed or 0, live, deleted)
    except (KeyError, TypeError, ValueError, RuntimeError) as exc:
        raise _fail(path, f"{INDEX} does not match the entries ({exc})") from exc
    bank._store, bank._index = store, index
    bank._task_counts = Counter(cols["task_id"].tolist())
    return bank
