"""Checks of a saved bank's metadata, columns and index before a bank is built from them.

The data files are checksummed (:func:`.folder.read_consistent`), but checksums only say that
the bytes are those a save listed: a hand-edited ``meta.json`` whose checksums were recomputed,
or a file written by a buggy version, passes them. So every value a loaded bank will use is
checked here, with the field, its value and its valid range in the message:

* counters (:func:`check_counters`): real ints (not bools, floats or strings), ``0 <= size``, ``size <= next_id < 2**62``, ``0 <= tick < 2**62``, index counts ``>= 0``;
* dims (:func:`check_dims`): ints, ``key_dim`` and ``value_dim`` >= 1, all ``<= MAX_DIM``;
* per-entry fields (:func:`check_columns`): provenance a known code, ``sample_logp`` not
  infinite (NaN is a merged entry's), counters ``>= 0``, ``last_retrieved`` in ``[-1, tick)``,
  contexts finite;
* the index against the entries (:func:`check_index`): its ``M`` and ``ef_construction`` are
  the config's, and for up to ``SPOT_CHECKS`` entries spread over the bank the index's stored
  vector for the entry's id is the entry's key (a key column permuted against the index, or an
  index of another key width, is refused).

The config itself is covered by ``config_sha256`` (:func:`.folder.config_checksum`), checked
after these, so an edit that no check can see (``space`` from ``"l2"`` to ``"ip"``) is refused
unless the checksum was forged as well.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from ..validators import integral
from .arguments import check_non_negative_int, check_widths
from .config import MAX_DIM, BankConfig
from .entries import DIM_NAMES
from .folder import _fail
from .index import INDEX_SLACK, HnswIndex
from .provenance import Provenance

__all__ = ["MAX_COUNTER", "SPOT_CHECKS", "check_counters", "check_dims", "check_columns", "check_index",
           "check_fixed_widths"]

#: ids and query ticks stay below this (far from int64's end, so counters never overflow)
MAX_COUNTER = 2**62
#: entries whose index vector is compared with their key at load
SPOT_CHECKS = 16


def _int_field(path: Path, name: str, value: Any, lo: int, hi: int, lo_text: str, hi_text: str) -> int:
    """``value`` as an int in ``[lo, hi)``, else a BankFileError naming the field, its range and value."""
    if not integral(value) or not lo <= value < hi:
        raise _fail(path, f"metadata is invalid: meta.json field {name} must be an int in [{lo_text}, {hi_text}), "
                          f"got {value!r}")
    return int(value)


def check_counters(path: Path, meta: dict, config: BankConfig) -> tuple[int, int, int]:
    """``size``, ``next_id`` and ``tick`` of ``meta``, checked (see the module doc)."""
    size = _int_field(path, "size", meta.get("size"), 0, MAX_COUNTER, "0", "2**62")
    next_id = _int_field(path, "next_id", meta.get("next_id"), size, MAX_COUNTER, f"size = {size}", "2**62")
    tick = _int_field(path, "tick", meta.get("tick"), 0, MAX_COUNTER, "0", "2**62")
    save_id = meta.get("save_id")
    if save_id is not None and not isinstance(save_id, str):
        raise _fail(path, f"meta.json field save_id must be a string or null, got {save_id!r}")
    return size, next_id, tick


def check_index_counts(path: Path, meta: dict, size: int, config: BankConfig) -> tuple[int, int]:
    """``index.live`` and ``index.deleted`` of ``meta``: ints, ``live == size``, ``live + deleted`` within
    the index's bound (``INDEX_SLACK * capacity``; a bank saved before the bound held at most ``capacity``)."""
    counts = meta.get("index")
    if not isinstance(counts, dict):
        raise _fail(path, f"meta.json field index must be an object with live and deleted counts, got {counts!r}")
    live = _int_field(path, "index.live", counts.get("live"), 0, MAX_COUNTER, "0", "2**62")
    most = INDEX_SLACK * config.capacity - live + 1
    deleted = _int_field(path, "index.deleted", counts.get("deleted"), 0, most, "0",
                         f"{INDEX_SLACK} * capacity - index.live + 1 = {most}")
    if live != size:
        raise _fail(path, f"meta.json says the index holds {live} live elements (index.live) but {size} "
                          "entries (size)")
    return live, deleted


def check_dims(path: Path, dims: Any) -> dict[str, int]:
    """The ``dims`` of ``meta``: the four widths as ints, ``key_dim``/``value_dim`` >= 1, all <= ``MAX_DIM``."""
    if not isinstance(dims, dict) or set(dims) != set(DIM_NAMES) or not all(
        integral(v) and (1 if k in ("key_dim", "value_dim") else 0) <= v <= MAX_DIM for k, v in dims.items()
    ):
        raise _fail(path, f"bad dims {dims!r}: meta.json field dims must give {list(DIM_NAMES)} as ints, "
                          f"key_dim and value_dim in [1, {MAX_DIM}], context_dim in [0, {MAX_DIM}]")
    return {k: int(v) for k, v in dims.items()}


def _refuse_rows(path: Path, name: str, bad: np.ndarray, col: np.ndarray, ids: np.ndarray, rule: str) -> None:
    if bad.any():
        first = int(np.argmax(bad))
        raise _fail(path, f"column {name!r} breaks its range ({rule}) in {int(bad.sum())} entries, e.g. id "
                          f"{int(ids[first])} with {name} {col[first].tolist()!r}")


def check_columns(path: Path, cols: dict[str, np.ndarray], tick: int) -> None:
    """Per-entry fields in their ranges (see the module doc); ``cols`` have the right dtypes and shapes."""
    ids = cols["id"]
    known = np.array([int(p) for p in Provenance])
    _refuse_rows(path, "provenance", ~np.isin(cols["provenance"], known), cols["provenance"], ids,
                 f"one of {known.tolist()}")
    _refuse_rows(path, "sample_logp", np.isinf(cols["sample_logp"]), cols["sample_logp"], ids,
                 "finite, or NaN for a merged entry")
    for name in ("n_retrieved", "n_credited"):
        _refuse_rows(path, name, cols[name] < 0, cols[name], ids, ">= 0")
    _refuse_rows(path, "last_retrieved", (cols["last_retrieved"] < -1) | (cols["last_retrieved"] >= max(tick, 0)),
                 cols["last_retrieved"], ids, f"-1 (never) or a query tick in [0, tick = {tick})")
    if cols["context"].size:
        _refuse_rows(path, "context", ~np.isfinite(cols["context"]).all(axis=1), cols["context"], ids, "finite")


def check_index(path: Path, index: HnswIndex, index_name: str, cols: dict[str, np.ndarray],
                config: BankConfig) -> None:
    """The index file agrees with the config and, on up to ``SPOT_CHECKS`` entries, with the key column."""
    raw = index.raw
    for name in ("M", "ef_construction"):
        built, said = int(getattr(raw, name)), getattr(config, name)
        if built != said:
            raise _fail(path, f"config field {name} is {said} in meta.json but the index was built with {name} "
                              f"{built} ({index_name}); meta.json was edited or belongs to another save")
    ids, keys = cols["id"], cols["key"]
    if not len(ids):
        return
    rows = np.unique(np.linspace(0, len(ids) - 1, min(SPOT_CHECKS, len(ids))).round().astype(np.int64))
    try:
        stored = np.asarray(raw.get_items(ids[rows].tolist(), return_type="numpy"), dtype=np.float32)
    except RuntimeError as exc:  # "Label not found": an entry the index does not hold
        raise _fail(path, f"{index_name} does not hold every entry of the entries file ({exc})") from exc
    expected = keys[rows].astype(np.float32)
    if config.space == "cosine":  # hnswlib keeps cosine vectors normalised
        expected = expected / (np.linalg.norm(expected, axis=1, keepdims=True) + np.float32(1e-30))
    close = np.isclose(stored, expected, rtol=1e-5, atol=1e-6).all(axis=1)
    if not close.all():
        r = int(rows[np.argmin(close)])
        raise _fail(path, f"the key of entry {int(ids[r])} (row {r} of the entries file) is not the vector the "
                          f"index {index_name} holds for that id: the key column and the index disagree "
                          "(permuted, or from different saves)")


def check_fixed_widths(path: Path, meta: dict[str, Any]) -> dict[str, int]:
    """An empty bank's widths fixed before its first add (``{"context_dim": w}``; saves from before
    they were kept have none), checked as the constructor checks them."""
    fixed = meta.get("fixed_widths") or {}
    try:
        if not isinstance(fixed, dict) or set(fixed) - {"context_dim"}:
            raise ValueError(f"expected {{'context_dim': width}}, got {fixed!r}")
        return check_widths({name: check_non_negative_int(name, w) for name, w in fixed.items()})
    except (TypeError, ValueError) as exc:
        raise _fail(path, f"metadata's fixed widths are invalid ({exc})") from exc
