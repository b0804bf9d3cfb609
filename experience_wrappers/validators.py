"""Validators shared by the library: attrs validators for the config classes, and `check_int` for plain arguments; messages name the field and the value."""

from __future__ import annotations

import inspect
import math
import reprlib
from collections.abc import Callable, Iterable, Mapping, Sequence
from numbers import Real
from typing import Any, Literal, TypeGuard, overload

import attrs
import numpy as np

__all__ = ["check_keywords", "is_int", "positive", "non_negative", "finite", "is_bool", "is_real", "to_float",
           "at_least", "at_most", "integral", "to_int", "check_int", "check_real", "check_bool", "success_flag",
           "check_instances", "check_timesteps", "MAX_ABS_REWARD"]


def is_int(instance: object, attribute: attrs.Attribute, value: object) -> None:
    """A real int (bools are rejected)."""
    if not integral(value):
        raise TypeError(f"{attribute.name} must be an int, got {value!r}")


def positive(instance: object, attribute: attrs.Attribute, value: object) -> None:
    if not value > 0:  # type: ignore[operator]
        raise ValueError(f"{attribute.name} must be > 0, got {value!r}")


def non_negative(instance: object, attribute: attrs.Attribute, value: object) -> None:
    if not value >= 0:  # type: ignore[operator]
        raise ValueError(f"{attribute.name} must be >= 0, got {value!r}")


def finite(instance: object, attribute: attrs.Attribute, value: float | None) -> None:
    """Finite, or None."""
    if value is not None and not math.isfinite(value):
        raise ValueError(f"{attribute.name} must be finite, got {value!r}")


def is_bool(instance: object, attribute: attrs.Attribute, value: object, *, hint: str = "") -> None:
    """A Python bool (``"no"``, ``0`` and ``None`` are refused: a str would read as True)."""
    check_bool(attribute.name, value, hint=hint)


def check_bool(name: str, value: object, *, hint: str = "", numpy: bool = False) -> bool:
    """Checks a bool argument (flags such as ``learn``) outside attrs classes; returns it.

    ``hint`` is appended to what it must be (``" or None"``). With ``numpy``, a numpy bool (what SB3's
    and numpy's own comparisons hand back) is taken too and returned as a plain bool.

    >>> check_bool("flush_at_end", "no")
    Traceback (most recent call last):
    ...
    TypeError: flush_at_end must be a bool, got 'no'
    >>> check_bool("deterministic", np.array([1]) > 0, numpy=True)
    Traceback (most recent call last):
    ...
    TypeError: deterministic must be a bool, got array([ True])
    >>> check_bool("deterministic", np.int64(3) > 2, numpy=True)
    True
    """
    if numpy and isinstance(value, np.bool_):
        return bool(value)
    if not isinstance(value, bool):
        raise TypeError(f"{name} must be a bool{hint}, got {value!r}")
    return value


#: the largest reward magnitude taken (by the wrappers' checks and the manager's): the extractor computes
#: in float32 (max 3.4e38), and returns of up to 10**8 steps of such rewards still fit there
MAX_ABS_REWARD = 1e30


def success_flag(name: str, value: object) -> bool:
    """A success flag as an env reports it: a bool, a numpy bool, or a number equal to 0 or 1
    (a one-element array of one passes too); returns it as a bool.

    A str is never read as a flag (``"False"`` is a non-empty string, hence true), and NaN,
    0.5 or several values are not a success or a failure.

    Raises:
        TypeError: ``value`` is not a number or bool (a str, bytes, an object).
        ValueError: ``value`` is a number other than 0 and 1 (NaN included), or holds several values.

    >>> success_flag("info['is_success']", np.float64(1.0)), success_flag("info['success']", np.bool_(False))
    (True, False)
    >>> success_flag("info['is_success']", "False")
    Traceback (most recent call last):
    ...
    TypeError: info['is_success'] must be a bool or 0/1 (the env's success flag), got 'False' (a str)
    """
    arr = None if isinstance(value, (str, bytes)) else np.asarray(value)
    if arr is None or arr.dtype.kind not in "biuf":
        raise TypeError(f"{name} must be a bool or 0/1 (the env's success flag), got {value!r} "
                        f"(a {type(value).__name__})")
    if arr.size != 1:
        raise ValueError(f"{name} must be a bool or 0/1 (the env's success flag, one value), got {value!r}")
    x = arr.item()
    if not (x == 0 or x == 1):  # NaN is neither
        raise ValueError(f"{name} must be a bool or 0/1 (the env's success flag), got {value!r}")
    return bool(x)


def is_real(instance: object, attribute: attrs.Attribute, value: object) -> None:
    """A real number (int or float; bools, strings and None are rejected)."""
    if isinstance(value, bool) or not isinstance(value, Real):
        raise TypeError(f"{attribute.name} must be a number, got {value!r}")


def to_float(value: object) -> object:
    """Converter: a real number becomes a float; anything else is left for :func:`is_real` to refuse.

    Unlike ``converter=float`` it never turns a string such as ``"0.1"`` into a number.

    >>> to_float(1), to_float("0.1")
    (1.0, '0.1')
    """
    if isinstance(value, Real) and not isinstance(value, bool):
        return float(value)
    return value


def to_int(value: object) -> object:
    """Converter: a numpy integer becomes a Python int; anything else is left for :func:`is_int` to check
    (so a float, a str or a numpy bool is still refused by name).

    >>> to_int(np.int64(2)), type(to_int(np.int64(2))).__name__, to_int(2.0), to_int(np.bool_(True))
    (2, 'int', 2.0, np.True_)
    """
    return int(value) if isinstance(value, np.integer) else value


def at_least(bound: float) -> Callable[[object, attrs.Attribute, object], None]:
    """A validator: ``value >= bound`` (None passes)."""
    def check(instance: object, attribute: attrs.Attribute, value: object) -> None:
        if value is not None and not value >= bound:  # type: ignore[operator]
            raise ValueError(f"{attribute.name} must be >= {_show(bound)}, got {value!r}")
    return check


def at_most(bound: float) -> Callable[[object, attrs.Attribute, object], None]:
    """A validator: ``value <= bound`` (None passes)."""
    def check(instance: object, attribute: attrs.Attribute, value: object) -> None:
        if value is not None and not value <= bound:  # type: ignore[operator]
            raise ValueError(f"{attribute.name} must be <= {_show(bound)}, got {value!r}")
    return check


def _show(bound: float) -> str:
    return f"{bound:g}" if isinstance(bound, float) else repr(bound)


@overload
def integral(value: object, *, numpy: Literal[False] = ...) -> TypeGuard[int]: ...
@overload
def integral(value: object, *, numpy: bool) -> TypeGuard[int | np.integer]: ...
def integral(value: object, *, numpy: bool = False) -> TypeGuard[int | np.integer]:
    """Whether ``value`` is an int: bools are not, numpy integers are with ``numpy=True``.

    >>> integral(3), integral(True), integral(3.0), integral(np.int64(3)), integral(np.int64(3), numpy=True)
    (True, False, False, False, True)
    """
    return not isinstance(value, bool) and isinstance(value, (int, np.integer) if numpy else int)


@overload
def check_int(name: str, value: object, *, minimum: int | None = ..., maximum: int | None = ...,
              numpy: bool = ..., optional: Literal[False] = ..., type_error: type[Exception] = ...,
              hint: str = ...) -> int: ...
@overload
def check_int(name: str, value: object, *, minimum: int | None = ..., maximum: int | None = ...,
              numpy: bool = ..., optional: bool, type_error: type[Exception] = ...,
              hint: str = ...) -> int | None: ...
def check_int(name: str, value: object, *, minimum: int | None = None, maximum: int | None = None,
              numpy: bool = True, optional: bool = False, type_error: type[Exception] = ValueError,
              hint: str = "") -> int | None:
    """Checks an int argument outside attrs classes; returns it as a Python int.

    Args:
        name: The argument's name, for the message.
        value: The value received.
        minimum: Smallest value allowed (``None``: no bound).
        maximum: Largest value allowed (``None``: no bound).
        numpy: Accept numpy integers too (the default: ``np.arange`` and numpy's arithmetic hand them
            out; they are returned as Python ints). False: a Python int only.
        optional: ``None`` passes (and is returned).
        type_error: Raised for a value that is not an int (``ValueError`` unless the caller
            has always raised ``TypeError`` there); a value out of bounds raises ``ValueError``.
        hint: Appended to the description, e.g. ``" (-1: forever)"``.

    Returns:
        ``int(value)``, or ``None`` for an optional ``None``.

    Raises:
        ValueError: The value is out of bounds (or not an int, by default); the message names
            the argument, what it must be and the value received.

    >>> check_int("n_envs", np.int64(4), minimum=1, numpy=True)
    4
    >>> check_int("n_envs", 0, minimum=1)
    Traceback (most recent call last):
    ...
    ValueError: n_envs must be a positive int, got 0
    >>> check_int("seed", True, minimum=0, optional=True, type_error=TypeError)
    Traceback (most recent call last):
    ...
    TypeError: seed must be an int >= 0 or None, got True
    """
    if value is None and optional:
        return None
    ok_type = integral(value, numpy=numpy)
    if ok_type and (minimum is None or value >= minimum) and (maximum is None or value <= maximum):  # type: ignore[operator]
        return int(value)  # type: ignore[call-overload]
    what = _what("an int", minimum, maximum, positive="a positive int")
    message = f"{name} must be {what}{hint}{' or None' if optional else ''}, got {value!r}"
    raise (ValueError if ok_type else type_error)(message)


@overload
def check_real(name: str, value: object, *, minimum: float | None = ..., maximum: float | None = ...,
               optional: Literal[False] = ...) -> float: ...
@overload
def check_real(name: str, value: object, *, minimum: float | None = ..., maximum: float | None = ...,
               optional: bool) -> float | None: ...
def check_real(name: str, value: object, *, minimum: float | None = None, maximum: float | None = None,
               optional: bool = False) -> float | None:
    """Checks a finite real-number argument outside attrs classes; returns it as a float.

    Bools, strings and non-finite values are refused with a ``ValueError`` naming the argument.

    >>> check_real("rollin_ratio", 1, minimum=0, maximum=1)
    1.0
    >>> check_real("max_distance", float("nan"), minimum=0)
    Traceback (most recent call last):
    ...
    ValueError: max_distance must be a finite number >= 0, got nan
    """
    if value is None and optional:
        return None
    ok = (not isinstance(value, bool) and isinstance(value, (Real, np.floating, np.integer))
          and math.isfinite(float(value))  # type: ignore[arg-type]
          and (minimum is None or float(value) >= minimum)  # type: ignore[arg-type]
          and (maximum is None or float(value) <= maximum))  # type: ignore[arg-type]
    if ok:
        return float(value)  # type: ignore[arg-type]
    what = _what("a finite number", minimum, maximum)
    raise ValueError(f"{name} must be {what}{' or None' if optional else ''}, got {value!r}")


def _what(noun: str, minimum: float | None, maximum: float | None, positive: str | None = None) -> str:
    """What a bounded argument must be, for the messages of :func:`check_int` and :func:`check_real`."""
    if minimum is not None and maximum is not None:
        return f"{noun} in [{_show(minimum)}, {_show(maximum)}]"
    if positive is not None and minimum == 1:
        return positive
    if minimum is not None:
        return f"{noun} >= {_show(minimum)}"
    if maximum is not None:
        return f"{noun} <= {_show(maximum)}"
    return noun


_short = reprlib.Repr()
_short.maxlist = _short.maxtuple = 8
_short.maxstring = 40
_short.maxother = 60


def check_instances(instances: object, name: str = "instances") -> list[int]:
    """The reset seeds that runs are drawn from, as Python ints; anything else is one error naming the value.

    ``instances`` must be a non-empty sequence (a list, tuple, range or 1-D array) of ints
    ``>= 0`` (a float that holds an int, ``3.0``, passes): a str is not a list of digits,
    ``1.7`` is not seed 1, and a bare int is not a list of one.

    Raises:
        TypeError: not a sequence (a bare int, a str, a set, a generator), or an item that is not a number.
        ValueError: empty, or an item that is negative, NaN, infinite or not whole.

    >>> check_instances(np.array([3, 5])), check_instances((2.0,))
    ([3, 5], [2])
    >>> check_instances("123")
    Traceback (most recent call last):
    ...
    TypeError: instances must be a non-empty sequence of reset seeds (ints >= 0), got '123' (a str)
    >>> check_instances([1.7])
    Traceback (most recent call last):
    ...
    ValueError: instances must be a non-empty sequence of reset seeds (ints >= 0), got [1.7]: item 0 is 1.7, not a whole number
    """
    shown = " ".join(_short.repr(instances).split())  # one line, whatever numpy prints
    what = f"{name} must be a non-empty sequence of reset seeds (ints >= 0), got {shown}"
    if isinstance(instances, np.ndarray):
        if instances.ndim != 1:
            raise ValueError(f"{what}: an array of shape {instances.shape}, not one axis")
        items = instances.tolist()
    elif isinstance(instances, Sequence) and not isinstance(instances, str | bytes):
        items = list(instances)
    else:
        raise TypeError(f"{what} (a {type(instances).__name__})")
    if not items:
        raise ValueError(f"{what}: it is empty")
    out = []
    for i, x in enumerate(items):
        if integral(x, numpy=True):
            value = int(x)
        elif isinstance(x, bool | np.bool_) or not isinstance(x, Real | np.floating):
            raise TypeError(f"{what}: item {i} is {_short.repr(x)} (a {type(x).__name__}), not an int")
        elif not math.isfinite(float(x)) or float(x) != round(float(x)):
            raise ValueError(f"{what}: item {i} is {x!r}, not a whole number")
        else:
            value = int(float(x))
        if value < 0:
            raise ValueError(f"{what}: item {i} is {value}, a reset seed must be >= 0")
        out.append(value)
    return out


def check_timesteps(value: object) -> int:
    """``learn(total_timesteps)``: an int >= 0, or a float that holds one (``1e5``, as SB3 and rl-zoo's
    hyperparameter files give it); a fraction, NaN, a str or None is refused by name.

    >>> check_timesteps(1e5), check_timesteps(64)
    (100000, 64)
    >>> check_timesteps(1.5)
    Traceback (most recent call last):
    ...
    ValueError: total_timesteps must be an int >= 0, got 1.5
    """
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    return check_int("total_timesteps", value, minimum=0, numpy=True)


def check_keywords(what: str, given: Mapping[str, Any], function: Callable[..., Any],
                   supplied: Iterable[str] = ()) -> None:
    """Refuse keyword arguments ``function`` does not take (or that its caller supplies itself,
    ``supplied``), naming them and the ones it takes: here rather than as a ``TypeError`` deep in
    the library that calls ``function`` later (SB3 building a policy's features extractor).

    >>> def f(self, observation_space, hidden=64): ...
    >>> check_keywords("features_kwargs", {"hiden": 8}, f, supplied=("observation_space",))
    Traceback (most recent call last):
    ...
    ValueError: features_kwargs: unknown argument(s) ['hiden']; it takes ['hidden']
    """
    accepted = set(inspect.signature(function).parameters) - {"self", *supplied}
    unknown = sorted(set(given) - accepted)
    if unknown:
        raise ValueError(f"{what}: unknown argument(s) {unknown}; it takes {sorted(accepted)}")
