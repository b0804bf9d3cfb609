"""Outcome attribution, kept importable from here; the rule lives in :mod:`experience_wrappers.credit`."""

from __future__ import annotations

from ..credit import FreeBaseline, utility_decay

__all__ = ["FreeBaseline", "utility_decay"]
