"""The checked arguments of :meth:`ExperienceBank.add` and :meth:`ExperienceBank.query`.

Each raises ``ValueError`` or ``TypeError`` naming the argument, before the bank changes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from ..validators import integral
from .config import MAX_DIM, MAX_K, MAX_UTILITY, MIN_TEMPERATURE
from .provenance import Provenance
from .reranking import MODES
from .results import AddResult, QueryResult
from .validation import (
    as_float_vector,
    as_int_vector,
    as_matrix,
    as_real,
    check_bounded,
    check_int64s,
    check_positive_int,
)

if TYPE_CHECKING:
    from .core import BankCore

__all__ = ["as_ids", "check_batch", "check_query", "check_widths", "empty_batch", "optional_column"]


def empty_batch(core: BankCore, keys: Any, values: Any) -> bool:
    """Whether ``keys`` hold no items (then ``values`` must hold none either); widths of 2-D empties checked."""
    try:
        rows = np.shape(keys)
    except ValueError:  # ragged: not empty, and check_batch says what is wrong
        return False
    if len(rows) not in (1, 2) or rows[0] != 0:
        return False
    dims = None if core.store is None else core.store.dims
    for name, x, width in (("keys", keys, None if dims is None else dims["key_dim"]),
                             ("values", values, None if dims is None else dims["value_dim"])):
        try:
            shape = np.shape(x)
        except ValueError as exc:
            raise ValueError(f"{name} must be an array of numbers, got {type(x).__name__}: {exc}") from exc
        if len(shape) not in (1, 2) or shape[0] != 0:
            raise ValueError(f"{name} must have 0 rows (keys has none), got shape {shape}")
        if len(shape) == 2:
            as_matrix(name, x, width)  # the dtype and, once the bank has them, the widths
    return True


def check_batch(core: BankCore, keys: Any, values: Any, task_ids: Any, utility: Any, prior: Any, context: Any,
                 sample_logp: Any, provenance: Provenance | int, step: Any,
                 extractor_version: Any) -> dict[str, Any]:
    """The arguments of :meth:`add`, checked, as per-item fields (``provenance`` is one value for
    the batch; ``created_step`` and ``extractor_version`` one value or one per item)."""
    keys_arr = as_matrix("keys", keys, None if core.store is None else core.store.dims["key_dim"])
    n = len(keys_arr)
    vals = as_matrix("values", values, None if core.store is None else core.store.dims["value_dim"])
    if len(vals) != n:
        raise ValueError(f"values must have {n} rows (one per key), got {len(vals)}")
    for name, arr in (("keys", keys_arr), ("values", vals)):
        if arr.shape[1] == 0:
            raise ValueError(f"{name} must have at least one column, got {arr.shape}")
    tasks = as_int_vector("task_ids", task_ids, n)
    util = as_float_vector("utility", core.config.initial_utility if utility is None else utility, n)
    check_bounded("utility", util, MAX_UTILITY)
    pri = optional_column(core, "prior", prior, n, np.float32)
    ctx = optional_column(core, "context", context, n, np.float16)
    logp = as_float_vector("sample_logp", 0.0 if sample_logp is None else sample_logp, n,
                           dtype=np.float32)
    try:
        if not integral(provenance, numpy=True):  # 1.7 or True must not become a demonstration
            raise TypeError("not an int")
        prov = Provenance(int(provenance))
    except (TypeError, ValueError) as exc:
        raise ValueError(f"provenance must be one of {[int(p) for p in Provenance]} (an int or a Provenance, "
                         f"e.g. Provenance.DEMO), got {provenance!r}") from exc
    step, extractor_version = check_int64s("step", step, n), check_int64s("extractor_version", extractor_version, n)
    if core.store is None:
        for name, width in (("keys", keys_arr.shape[1]), ("values", vals.shape[1]),
                            ("prior", pri.shape[1]), ("context", ctx.shape[1])):
            if width > MAX_DIM:
                raise ValueError(f"{name} must have at most {MAX_DIM} columns, got {width}")
    if core.config.space != "l2" and np.any(np.linalg.norm(keys_arr, axis=1) == 0):
        raise ValueError(f"keys must be non-zero for space {core.config.space!r}")
    return {"key": keys_arr, "value": vals, "task_id": tasks, "utility": util, "prior": pri, "context": ctx,
            "sample_logp": logp, "provenance": int(prov), "created_step": step,
            "extractor_version": extractor_version}


def optional_column(core: BankCore, name: str, x: Any, n: int, dtype: type) -> np.ndarray:
    if core.store is None:
        width = core.fixed_widths.get(f"{name}_dim") or None  # given at construction, else the batch's
    else:
        width = core.store.dims[f"{name}_dim"]
    if x is None:
        return np.zeros((n, width or 0), dtype=dtype)
    if width == 0:
        raise ValueError(f"this bank stores no {name} ({name}_dim=0), but {name} was given")
    arr = as_matrix(name, x, width, dtype=dtype)
    if len(arr) != n:
        raise ValueError(f"{name} must have {n} rows (one per key), got {len(arr)}")
    return arr.astype(dtype)


def check_query(core: BankCore, k: Any, mode: Any, temperature: Any, record: Any, rng: Any) -> tuple[int, float]:
    """The checked ``k`` and temperature of a :meth:`query` (ValueError/TypeError otherwise)."""
    if type(k) is int and 0 < k <= MAX_K and temperature is None and rng is None and type(record) is bool \
            and mode in MODES:
        return k, core.config.temperature  # the usual call: nothing else to check
    k = check_positive_int("k", k)
    if k > MAX_K:
        raise ValueError(f"k must be <= {MAX_K}, got {k}")
    if rng is not None and not isinstance(rng, np.random.Generator):
        raise TypeError(f"rng must be a numpy Generator or None, got {type(rng).__name__}")
    if not isinstance(record, (bool, np.bool_)):
        raise TypeError(f"record must be a bool, got {record!r}")
    if mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
    temp = core.config.temperature if temperature is None else as_real("temperature", temperature)
    if not (np.isfinite(temp) and temp >= MIN_TEMPERATURE):
        raise ValueError(f"temperature must be finite and >= {MIN_TEMPERATURE}, got {temperature!r}")
    return k, temp


def as_ids(ids: Any) -> np.ndarray:
    """Entry ids as a checked int64 vector (one id becomes a vector of one).

    >>> as_ids(AddResult(ids=np.array([3]), added=np.array([True]), evicted=np.array([], np.int64)))
    Traceback (most recent call last):
    ...
    TypeError: ids must be entry ids, got an AddResult: pass its .ids
    """
    if isinstance(ids, AddResult):
        raise TypeError("ids must be entry ids, got an AddResult: pass its .ids")
    if isinstance(ids, QueryResult):
        raise TypeError("ids must be entry ids, got a QueryResult: pass result.ids[result.mask]")
    ids_arr = np.atleast_1d(np.asarray(ids))
    return as_int_vector("ids", ids_arr, len(ids_arr))


def check_widths(dims: dict[str, int]) -> dict[str, int]:
    """``dims`` (name -> width), each at most :data:`~experience_wrappers.core.config.MAX_DIM` (else ``ValueError``)."""
    for name, width in dims.items():
        if width > MAX_DIM:
            raise ValueError(f"{name} must be <= {MAX_DIM}, got {width}")
    return dims
