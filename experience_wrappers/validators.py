"""attrs validators shared by the library's config classes; messages name the field and the value."""

from __future__ import annotations

import math

import attrs

__all__ = ["is_int", "positive", "non_negative", "finite", "is_bool"]


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
