"""Checks of caller input: the checked arguments of :meth:`ExperienceBank.add` and
:meth:`ExperienceBank.query`, and the checks of single values and arrays they are made of.

Each raises ``ValueError`` or ``TypeError`` naming the argument and showing the value
received, before the bank changes.
"""

from __future__ import annotations

from numbers import Real
from typing import TYPE_CHECKING, Any

import numpy as np

from ..validators import integral
from .config import MAX_DIM, MAX_K, MAX_UTILITY, MIN_TEMPERATURE
from .provenance import Provenance
from .results import AddResult, QueryResult
from .search import MODES

if TYPE_CHECKING:
    from .core import BankCore

__all__ = ["as_ids", "check_batch", "check_query", "check_widths", "empty_batch", "optional_column",
           "as_matrix", "as_int_vector", "as_float_vector", "check_positive_int", "check_non_negative_int",
           "check_unit", "check_int64", "check_int64s", "check_bounded", "as_real", "as_keys", "MAX_KEY",
           "MIN_COSINE_NORM"]

# -- checks of single values and arrays ---------------------------------------------------------------

_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1


def _describe(x: Any) -> str:
    arr = np.asarray(x) if not isinstance(x, np.ndarray) else x
    return f"array of shape {arr.shape} and dtype {arr.dtype}"


#: keys are within +-MAX_KEY: hnswlib's float32 distances (sums of squares) overflow past about 1.8e19
MAX_KEY = 1e15
#: a cosine key's norm is at least this: hnswlib normalises keys in float32, whose squares of
#: entries under about 1e-19 vanish (a key of norm 1e-22 got another key's distances)
MIN_COSINE_NORM = 1e-12


def as_keys(x: Any, dim: int | None, space: str) -> np.ndarray:
    """Keys as :func:`as_matrix` takes them, within ``+-MAX_KEY``, and of norm at least
    ``MIN_COSINE_NORM`` in the ``"cosine"`` space (a direction; ``"l2"`` and ``"ip"`` take zero keys).

    >>> as_keys([[2e15, 0.0]], 2, "l2")
    Traceback (most recent call last):
    ...
    ValueError: keys must be within +-1e+15 (hnswlib's float32 distances overflow past about 1.8e19), got 2e+15
    >>> as_keys([[0.0, 0.0]], 2, "cosine")
    Traceback (most recent call last):
    ...
    ValueError: keys must have a norm of at least 1e-12 for space 'cosine' (a direction), got 0 in row 0
    """
    keys = as_matrix("keys", x, dim, bound=MAX_KEY)
    if space == "cosine":
        norms = np.sqrt(np.einsum("ij,ij->i", keys, keys, dtype=np.float64))
        low = np.flatnonzero(norms < MIN_COSINE_NORM)
        if len(low):
            raise ValueError(f"keys must have a norm of at least {MIN_COSINE_NORM:g} for space 'cosine' (a "
                             f"direction), got {norms[low[0]]:g} in row {low[0]}")
    return keys


def as_matrix(name: str, x: Any, dim: int | None, dtype: type = np.float32, bound: float | None = None) -> np.ndarray:
    """A finite 2-D float matrix (a 1-D vector is taken as one row), within ``+-bound`` if given.

    >>> as_matrix("keys", [1.0, 2.0], 2).shape
    (1, 2)
    >>> as_matrix("keys", [[1.0, float("nan")]], 2)
    Traceback (most recent call last):
    ...
    ValueError: keys contains NaN or inf (array of shape (1, 2) and dtype float64)
    """
    if (type(x) is np.ndarray and x.dtype == dtype and x.ndim in (1, 2) and x.flags.c_contiguous
            and (dim is None or x.shape[-1] == dim)
            and (np.isfinite(x).all() if bound is None else (np.abs(x) <= bound).all())):
        return x if x.ndim == 2 else x[None, :]  # the usual query: checked without a copy
    try:
        arr = np.asarray(x)
    except Exception as exc:  # ragged lists and the like
        raise ValueError(f"{name} must be an array of numbers, got {type(x).__name__}: {exc}") from exc
    if arr.dtype.kind not in "fiu":
        raise ValueError(f"{name} must be a real numeric array, got {_describe(arr)}")
    if arr.ndim == 1:
        arr = arr[None, :]
    if arr.ndim != 2:
        raise ValueError(f"{name} must be 1-D or 2-D, got {_describe(arr)}")
    if dim is not None and arr.shape[1] != dim:
        raise ValueError(f"{name} must have {dim} columns, got {_describe(arr)}")
    if arr.dtype.kind == "f" and not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} contains NaN or inf ({_describe(arr)})")
    if bound is not None and arr.size and float(np.max(np.abs(arr))) > bound:
        raise ValueError(f"{name} must be within +-{bound:g} (hnswlib's float32 distances overflow past about "
                         f"1.8e19), got {float(arr.flat[np.argmax(np.abs(arr))]):g}")
    _check_range(name, arr, dtype)
    return np.ascontiguousarray(arr, dtype=dtype)


def _check_range(name: str, arr: np.ndarray, dtype: type) -> None:
    """Finite values too large for ``dtype`` would be stored as inf: refuse them."""
    if arr.dtype == dtype:
        return  # every value of a dtype fits in it
    limit = float(np.finfo(dtype).max)
    kind = arr.dtype.kind
    # a Python number on the right: numpy would cast the limit to a float16 arr's dtype (overflow warning)
    if float(np.finfo(arr.dtype).max if kind == "f" else np.iinfo(arr.dtype).max) <= limit:
        return  # every value of arr's dtype fits (the usual case: float32 in, float32 out)
    if arr.size and (float(arr.max()) > limit or float(arr.min()) < -limit):
        raise ValueError(f"{name} has values beyond the range of {np.dtype(dtype).name} "
                         f"(|x| > {float(limit):g}): {_describe(arr)}")


def as_int_vector(name: str, x: Any, n: int) -> np.ndarray:
    """An int64 vector of length ``n``; a scalar is broadcast.

    >>> as_int_vector("task_ids", 3, 2).tolist()
    [3, 3]
    >>> as_int_vector("task_ids", 2**70, 1)
    Traceback (most recent call last):
    ...
    ValueError: task_ids must fit in int64 ([-2**63, 2**63 - 1]), got 1180591620717411303424
    """
    arr = np.asarray(x)
    if arr.dtype == object:  # Python ints beyond int64 (2**70) arrive as objects
        flat = arr.ravel().tolist()
        if flat and all(integral(v, numpy=True) for v in flat):
            big = next((int(v) for v in flat if not _INT64_MIN <= int(v) <= _INT64_MAX), None)
            if big is not None:
                raise ValueError(f"{name} must fit in int64 ([-2**63, 2**63 - 1]), got {big}")
            arr = arr.astype(np.int64)
    if arr.dtype.kind not in "iu" and not (arr.dtype.kind == "f" and np.all(np.mod(arr, 1) == 0)):
        raise ValueError(f"{name} must be integers, got {_describe(arr)}")
    if arr.size and arr.dtype.kind in "uf" and (arr.max() >= 2.0**63 or arr.min() < -(2.0**63)):
        raise ValueError(f"{name} must fit in int64 ([-2**63, 2**63 - 1]), got {_describe(arr)} "
                         f"with values up to {arr.max()!r}")
    if arr.ndim == 0:
        arr = np.full(n, int(arr))
    if arr.shape != (n,):
        raise ValueError(f"{name} must be a scalar or have shape ({n},), got {_describe(arr)}")
    return arr.astype(np.int64)


def as_float_vector(name: str, x: Any, n: int, dtype: type = np.float64) -> np.ndarray:
    """A finite float64 vector of length ``n`` (representable in ``dtype``); a scalar is broadcast."""
    arr = np.asarray(x)
    if arr.dtype.kind not in "fiu":
        raise ValueError(f"{name} must be real numbers, got {_describe(arr)}")
    arr = arr.astype(np.float64)
    if arr.ndim == 0:
        arr = np.full(n, float(arr))
    if arr.shape != (n,):
        raise ValueError(f"{name} must be a scalar or have shape ({n},), got {_describe(arr)}")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} contains NaN or inf: {arr}")
    _check_range(name, arr, dtype)
    return arr


def check_positive_int(name: str, x: Any) -> int:
    if not integral(x, numpy=True) or x <= 0:
        raise ValueError(f"{name} must be a positive int, got {x!r}")
    return int(x)


def check_non_negative_int(name: str, x: Any) -> int:
    """An int >= 0 (bools are refused)."""
    if not integral(x, numpy=True) or x < 0:
        raise ValueError(f"{name} must be an int >= 0, got {x!r}")
    return int(x)


def check_int64(name: str, x: Any) -> int:
    """An int that fits in int64 (bools, floats and strings are refused).

    >>> check_int64("step", 2**63)
    Traceback (most recent call last):
    ...
    ValueError: step must be an int in [-2**63, 2**63 - 1], got 9223372036854775808
    """
    if not integral(x, numpy=True):
        raise ValueError(f"{name} must be an int, got {x!r}")
    if not _INT64_MIN <= int(x) <= _INT64_MAX:
        raise ValueError(f"{name} must be an int in [-2**63, 2**63 - 1], got {x!r}")
    return int(x)


def check_int64s(name: str, x: Any, n: int) -> int | np.ndarray:
    """One int for a batch of ``n`` items (as :func:`check_int64`), or an int64 vector of one per item.

    A vector must hold integers (not bools or floats) and have shape ``(n,)``.

    >>> check_int64s("step", 5, 2), check_int64s("step", np.array([1, 2]), 2).tolist()
    (5, [1, 2])
    >>> check_int64s("step", [1.0, 2.0], 2)
    Traceback (most recent call last):
    ...
    ValueError: step must be an int or one int per item, got array of shape (2,) and dtype float64
    """
    if np.ndim(x) == 0:
        return check_int64(name, x)
    arr = np.asarray(x)
    if arr.dtype.kind not in "iu" or (arr.dtype.kind == "u" and arr.size and int(arr.max()) > _INT64_MAX):
        raise ValueError(f"{name} must be an int or one int per item, got {_describe(arr)}")
    if arr.shape != (n,):
        raise ValueError(f"{name} must be an int or have shape ({n},) (one per item), got {_describe(arr)}")
    return arr.astype(np.int64)


def check_bounded(name: str, arr: np.ndarray, bound: float) -> None:
    """Refuse values beyond ``+-bound`` (utilities stay finite when every input is bounded)."""
    if arr.size and float(np.max(np.abs(arr))) > bound:
        raise ValueError(f"{name} must be within +-{bound:g}, got {float(arr[np.argmax(np.abs(arr))])!r}")


def as_real(name: str, x: Any) -> float:
    """A real number as a float (strings, bools and None are refused, not converted).

    >>> as_real("threshold", "0.5")
    Traceback (most recent call last):
    ...
    ValueError: threshold must be a number, got '0.5'
    """
    if isinstance(x, (bool, np.bool_)) or not isinstance(x, (Real, np.integer, np.floating)):
        raise ValueError(f"{name} must be a number, got {x!r}")
    return float(x)


def check_unit(name: str, x: Any) -> float:
    """A float in [0, 1]."""
    try:
        v = as_real(name, x)
    except ValueError as exc:
        raise ValueError(f"{name} must be a number in [0, 1], got {x!r}") from exc
    if not 0.0 <= v <= 1.0:
        raise ValueError(f"{name} must be in [0, 1], got {x!r}")
    return v


# -- the checked arguments of add and query ---------------------------------------------------------


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


def check_batch(core: BankCore, keys: Any, values: Any, task_ids: Any, utility: Any, context: Any,
                 sample_logp: Any, provenance: Provenance | int, step: Any,
                 extractor_version: Any) -> dict[str, Any]:
    """The arguments of :meth:`add`, checked, as per-item fields (``provenance`` is one value for
    the batch; ``created_step`` and ``extractor_version`` one value or one per item)."""
    keys_arr = as_keys(keys, None if core.store is None else core.store.dims["key_dim"], core.config.space)
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
                            ("context", ctx.shape[1])):
            if width > MAX_DIM:
                raise ValueError(f"{name} must have at most {MAX_DIM} columns, got {width}")
    return {"key": keys_arr, "value": vals, "task_id": tasks, "utility": util, "context": ctx,
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
    """``dims`` (name -> width), each at most :data:`~experience_wrappers.bank.config.MAX_DIM` (else ``ValueError``)."""
    for name, width in dims.items():
        if width > MAX_DIM:
            raise ValueError(f"{name} must be <= {MAX_DIM}, got {width}")
    return dims
