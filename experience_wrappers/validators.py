"""attrs validators shared by the library's config classes; messages name the field and the value."""

from __future__ import annotations

import math
from collections.abc import Callable
from numbers import Real

import attrs

__all__ = ["is_int", "positive", "non_negative", "finite", "is_bool", "is_real", "to_float",
           "at_least", "at_most"]


def is_int(instance: object, attribute: attrs.Attribute, value: object) -> None:
    """A real int (bools are rejected)."""
    if isinstance(value, bool) or not isinstance(value, int):
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


def is_bool(instance: object, attribute: attrs.Attribute, value: object) -> None:
    if not isinstance(value, bool):
        raise TypeError(f"{attribute.name} must be a bool, got {value!r}")


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
